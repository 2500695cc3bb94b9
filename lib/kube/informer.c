/* informer.c - list + watch reflector feeding a shared, indexed cache (see informer.h). */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "base/vec.h"
#include "kube/informer.h"
#include "kube/informer_internal.h"

#define DEFAULT_PAGE_SIZE 500
#define BACKOFF_MIN_MS    500
#define BACKOFF_MAX_MS    30000
#define SHORT_WATCH_MS    1000 /* a watch closed this fast without events counts as failed */
#define LABELS_MAX        512

#define M_OBJECTS  "landlord_informer_objects"
#define M_RELISTS  "landlord_informer_relists_total"
#define M_RESTARTS "landlord_watch_restarts_total"
#define M_EVENTS   "landlord_informer_events_total"

/* Positive values a watch callback returns to end the stream. */
#define END_GONE   1
#define END_ERROR  2
#define END_PAUSED 3

struct inf_index {
	char *name;
	inf_index_fn fn;
	void *ud;
	json_t *map; /* value -> {key: true} */
};

struct inf {
	struct kc_client *c;
	struct kc_gvr gvr;
	char *ns, *label_selector, *field_selector, *keep_manager, *name;
	char *api_version; /* "group/version" or "version", for listed items */
	bool metadata_only;
	long page_size;
	void (*transform)(json_t *obj, void *ud);
	void *transform_ud;
	char labels[LABELS_MAX]; /* resource="..." */

	/* The cache; readers take it shared. */
	pthread_rwlock_t lock;
	json_t *items; /* key -> object */
	VEC(struct inf_index) indexes;

	/* Serialises cache changes with their dispatch, so a late handler misses nothing. */
	pthread_mutex_t dispatch_mu;
	VEC(struct inf_handler) handlers;

	/* Reflector state. */
	pthread_mutex_t mu;
	pthread_cond_t cond; /* synced, stop, unpause */
	char *rv;
	bool synced, running, ever_started, stopping, paused;
	struct inf_stats stats;
	atomic_int watch_cancel; /* set by stop and pause */
	pthread_t thread;
};

enum outcome {
	OUT_LISTED,   /* a full list was applied */
	OUT_CLOSED,   /* the server ended the watch normally */
	OUT_GONE,     /* 410: relist */
	OUT_ERROR,    /* back off, then retry */
	OUT_CANCELED, /* stop or pause */
};

struct delta {
	enum watch_event_type type;
	json_t *old_obj, *new_obj; /* references */
};

/* ---- small helpers ---- */

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static const char *event_type_name(enum watch_event_type type)
{
	switch (type) {
	case WATCH_ADDED:
		return "added";
	case WATCH_MODIFIED:
		return "modified";
	case WATCH_DELETED:
		return "deleted";
	case WATCH_BOOKMARK:
		return "bookmark";
	case WATCH_ERROR:
		break;
	}
	return "error";
}

static void describe_metrics(void)
{
	metrics_describe(M_OBJECTS, METRIC_GAUGE, "Objects held in the informer's cache.", NULL, 0);
	metrics_describe(M_RELISTS, METRIC_COUNTER, "Full lists after the informer's first one.",
	                 NULL, 0);
	metrics_describe(M_RESTARTS, METRIC_COUNTER, "Watches ended, by the reason they ended.",
	                 NULL, 0);
	metrics_describe(M_EVENTS, METRIC_COUNTER, "Watch events received, by type.", NULL, 0);
}

static void count_with(struct inf *inf, const char *metric, const char *label, const char *value)
{
	char labels[LABELS_MAX];

	metrics_labels(labels, sizeof(labels), "resource", inf->name, label, value, NULL);
	metrics_add(metric, labels, 1);
}

static void set_rv(struct inf *inf, const char *rv)
{
	if (rv == NULL || *rv == '\0')
		return;
	pthread_mutex_lock(&inf->mu);
	free(inf->rv);
	inf->rv = xstrdup(rv);
	pthread_mutex_unlock(&inf->mu);
}

/* ---- pure cache logic ---- */

char *inf__key(const char *ns, const char *name)
{
	if (ns && *ns)
		return xasprintf("%s/%s", ns, name);
	return xstrdup(name);
}

void inf__strip_managed_fields(json_t *obj, const char *keep_manager)
{
	json_t *meta = json_object_get(obj, "metadata");
	json_t *mf = json_object_get(meta, "managedFields");
	size_t i = 0;

	if (!json_is_array(mf))
		return;
	while (i < json_array_size(mf)) {
		const char *mgr = jx_str(json_array_get(mf, i), "manager", NULL);

		if (mgr && keep_manager && strcmp(mgr, keep_manager) == 0)
			i++;
		else
			json_array_remove(mf, i);
	}
	if (json_array_size(mf) == 0)
		json_object_del(meta, "managedFields");
}

void inf__prepare(struct inf *inf, json_t *obj)
{
	inf__strip_managed_fields(obj, inf->keep_manager);
	if (inf->metadata_only) {
		/* Always PartialObjectMetadata, meta.k8s.io/v1: the informer's GVR says more. */
		json_object_del(obj, "kind");
		json_object_del(obj, "apiVersion");
	} else if (inf->gvr.kind) {
		/* Items of a list carry no apiVersion or kind (the list does); watch events do.
		 * Cached objects look the same whichever way they arrived. */
		if (!json_object_get(obj, "apiVersion") && inf->api_version)
			json_object_set_new(obj, "apiVersion", json_string(inf->api_version));
		if (!json_object_get(obj, "kind"))
			json_object_set_new(obj, "kind", json_string(inf->gvr.kind));
	}
	if (inf->transform)
		inf->transform(obj, inf->transform_ud);
}

struct index_emit {
	json_t *map;
	const char *key;
	bool add;
};

static void index_emit(const char *value, void *ctx)
{
	struct index_emit *e = ctx;
	json_t *set;

	if (value == NULL)
		return;
	set = json_object_get(e->map, value);
	if (e->add) {
		if (set == NULL) {
			set = json_object();
			json_object_set_new(e->map, value, set);
		}
		json_object_set_new(set, e->key, json_true());
		return;
	}
	if (set == NULL)
		return;
	json_object_del(set, e->key);
	if (json_object_size(set) == 0)
		json_object_del(e->map, value);
}

/* Caller holds the write lock. */
static void index_update(struct inf *inf, const char *key, const json_t *obj, bool add)
{
	for (size_t i = 0; i < inf->indexes.len; i++) {
		struct index_emit e = {inf->indexes.v[i].map, key, add};

		inf->indexes.v[i].fn(obj, index_emit, &e, inf->indexes.v[i].ud);
	}
}

/* Caller holds the write lock. */
static void index_rebuild(struct inf *inf)
{
	const char *key;
	json_t *obj;

	for (size_t i = 0; i < inf->indexes.len; i++)
		json_object_clear(inf->indexes.v[i].map);
	json_object_foreach(inf->items, key, obj) {
		index_update(inf, key, obj, true);
	}
}

static void objects_gauge(struct inf *inf, size_t n)
{
	metrics_set(M_OBJECTS, inf->labels, (double)n);
}

/* Caller holds dispatch_mu. */
static void dispatch(struct inf *inf, const struct delta *d)
{
	for (size_t i = 0; i < inf->handlers.len; i++) {
		const struct inf_handler *h = &inf->handlers.v[i];

		if (d->type == WATCH_ADDED && h->on_add)
			h->on_add(d->new_obj, h->ud);
		else if (d->type == WATCH_MODIFIED && h->on_update)
			h->on_update(d->old_obj, d->new_obj, h->ud);
		else if (d->type == WATCH_DELETED && h->on_delete)
			h->on_delete(d->old_obj, h->ud);
	}
}

static void delta_release(struct delta *d)
{
	json_decref(d->old_obj);
	json_decref(d->new_obj);
}

/* Caller holds dispatch_mu; fills @d (references) and changes the cache. */
static void cache_apply(struct inf *inf, enum watch_event_type type, const char *key, json_t *obj,
                        struct delta *d)
{
	json_t *old;
	size_t n;

	pthread_rwlock_wrlock(&inf->lock);
	old = json_incref(json_object_get(inf->items, key));
	if (old)
		index_update(inf, key, old, false);
	if (type == WATCH_DELETED) {
		json_object_del(inf->items, key);
		*d = (struct delta){WATCH_DELETED, old, NULL};
		if (old == NULL)
			d->type = WATCH_BOOKMARK; /* nothing to tell */
	} else {
		json_object_set(inf->items, key, obj);
		index_update(inf, key, obj, true);
		*d = (struct delta){old ? WATCH_MODIFIED : WATCH_ADDED, old, json_incref(obj)};
	}
	n = json_object_size(inf->items);
	pthread_rwlock_unlock(&inf->lock);
	objects_gauge(inf, n);
}

/* Caller holds dispatch_mu; @d receives references (delta_release() it). */
static int apply_locked(struct inf *inf, enum watch_event_type type, json_t *obj, struct delta *d)
{
	char *key = jx_object_key(obj);

	if (key == NULL)
		return -EINVAL;
	cache_apply(inf, type, key, obj, d);
	dispatch(inf, d);
	free(key);
	return 0;
}

int inf__apply_event(struct inf *inf, enum watch_event_type type, json_t *obj)
{
	struct delta d = {WATCH_BOOKMARK, NULL, NULL};
	int rc;

	pthread_mutex_lock(&inf->dispatch_mu);
	rc = apply_locked(inf, type, obj, &d);
	pthread_mutex_unlock(&inf->dispatch_mu);
	delta_release(&d);
	return rc;
}

static bool same_version(const json_t *a, const json_t *b)
{
	const char *ra = jx_resource_version(a), *rb = jx_resource_version(b);

	if (ra && rb)
		return strcmp(ra, rb) == 0;
	return json_equal((json_t *)a, (json_t *)b);
}

struct delta_vec VEC_BODY(struct delta);

/* Caller holds the write lock; the deltas hold references. */
static void diff_maps(json_t *old_map, json_t *fresh, struct delta_vec *ds)
{
	const char *key;
	json_t *obj, *old;

	json_object_foreach(old_map, key, old) {
		if (json_object_get(fresh, key) == NULL)
			vec_push(ds, ((struct delta){WATCH_DELETED, json_incref(old), NULL}));
	}
	json_object_foreach(fresh, key, obj) {
		old = json_object_get(old_map, key);
		if (old == NULL)
			vec_push(ds, ((struct delta){WATCH_ADDED, NULL, json_incref(obj)}));
		else if (!same_version(old, obj))
			vec_push(ds, ((struct delta){WATCH_MODIFIED, json_incref(old),
			                             json_incref(obj)}));
	}
}

/* Caller holds dispatch_mu. */
static void replace_locked(struct inf *inf, json_t *take_fresh)
{
	struct delta_vec ds = VEC_INIT;
	json_t *old_map;
	size_t len;

	pthread_rwlock_wrlock(&inf->lock);
	diff_maps(inf->items, take_fresh, &ds);
	old_map = inf->items;
	inf->items = take_fresh;
	index_rebuild(inf);
	len = json_object_size(inf->items);
	pthread_rwlock_unlock(&inf->lock);
	objects_gauge(inf, len);
	for (size_t i = 0; i < ds.len; i++)
		dispatch(inf, &ds.v[i]);
	for (size_t i = 0; i < ds.len; i++)
		delta_release(&ds.v[i]);
	vec_release(&ds);
	json_decref(old_map);
}

void inf__replace(struct inf *inf, json_t *take_fresh)
{
	pthread_mutex_lock(&inf->dispatch_mu);
	replace_locked(inf, take_fresh);
	pthread_mutex_unlock(&inf->dispatch_mu);
}

/* ---- construction and reads ---- */

struct inf *inf_new(struct kc_client *c, const struct inf_opts *opts)
{
	struct inf *inf = xcalloc(1, sizeof(*inf));

	inf->c = c;
	inf->gvr = (struct kc_gvr){xstrdup(opts->gvr.group ? opts->gvr.group : ""),
	                           xstrdup(opts->gvr.version), xstrdup(opts->gvr.resource),
	                           xstrdup(opts->gvr.kind), opts->gvr.namespaced};
	if (inf->gvr.version && inf->gvr.group[0])
		inf->api_version = xasprintf("%s/%s", inf->gvr.group, inf->gvr.version);
	else
		inf->api_version = xstrdup(inf->gvr.version);
	inf->ns = xstrdup(opts->ns);
	inf->label_selector = xstrdup(opts->label_selector);
	inf->field_selector = xstrdup(opts->field_selector);
	inf->metadata_only = opts->metadata_only;
	inf->page_size = opts->page_size > 0 ? opts->page_size : DEFAULT_PAGE_SIZE;
	inf->keep_manager = opts->keep_manager ? xstrdup(opts->keep_manager) : NULL;
	inf->transform = opts->transform;
	inf->transform_ud = opts->transform_ud;
	inf->name = xstrdup(opts->name ? opts->name : opts->gvr.resource);
	metrics_labels(inf->labels, sizeof(inf->labels), "resource", inf->name, NULL);
	inf->items = json_object();
	pthread_rwlock_init(&inf->lock, NULL);
	pthread_mutex_init(&inf->dispatch_mu, NULL);
	pthread_mutex_init(&inf->mu, NULL);
	clock_cond_init(&inf->cond);
	describe_metrics();
	return inf;
}

void inf_free(struct inf *inf)
{
	if (inf == NULL)
		return;
	inf_stop(inf);
	for (size_t i = 0; i < inf->indexes.len; i++) {
		free(inf->indexes.v[i].name);
		json_decref(inf->indexes.v[i].map);
	}
	vec_release(&inf->indexes);
	vec_release(&inf->handlers);
	json_decref(inf->items);
	pthread_rwlock_destroy(&inf->lock);
	pthread_mutex_destroy(&inf->dispatch_mu);
	pthread_mutex_destroy(&inf->mu);
	pthread_cond_destroy(&inf->cond);
	free((char *)inf->gvr.group);
	free((char *)inf->gvr.version);
	free((char *)inf->gvr.resource);
	free((char *)inf->gvr.kind);
	free(inf->api_version);
	free(inf->ns);
	free(inf->label_selector);
	free(inf->field_selector);
	free(inf->keep_manager);
	free(inf->name);
	free(inf->rv);
	free(inf);
}

void inf_add_handler(struct inf *inf, const struct inf_handler *h)
{
	json_t *objs, *obj;
	size_t i;

	pthread_mutex_lock(&inf->dispatch_mu);
	objs = inf_list_ref(inf, NULL);
	json_array_foreach(objs, i, obj) {
		if (h->on_add)
			h->on_add(obj, h->ud);
	}
	vec_push(&inf->handlers, *h);
	pthread_mutex_unlock(&inf->dispatch_mu);
	json_decref(objs);
}

int inf_add_index(struct inf *inf, const char *name, inf_index_fn fn, void *ud)
{
	int rc = 0;

	pthread_mutex_lock(&inf->mu);
	if (inf->ever_started) {
		rc = -EBUSY;
		goto out;
	}
	for (size_t i = 0; i < inf->indexes.len; i++) {
		if (strcmp(inf->indexes.v[i].name, name) == 0) {
			rc = -EEXIST;
			goto out;
		}
	}
	pthread_rwlock_wrlock(&inf->lock);
	vec_push(&inf->indexes, ((struct inf_index){xstrdup(name), fn, ud, json_object()}));
	index_rebuild(inf);
	pthread_rwlock_unlock(&inf->lock);
out:
	pthread_mutex_unlock(&inf->mu);
	return rc;
}

const json_t *inf_get_key_ref(struct inf *inf, const char *key)
{
	const json_t *obj;

	pthread_rwlock_rdlock(&inf->lock);
	obj = json_incref(json_object_get(inf->items, key));
	pthread_rwlock_unlock(&inf->lock);
	return obj;
}

const json_t *inf_get_ref(struct inf *inf, const char *ns, const char *name)
{
	char *key = inf__key(ns, name);
	const json_t *obj = inf_get_key_ref(inf, key);

	free(key);
	return obj;
}

json_t *inf_list_ref(struct inf *inf, const char *ns)
{
	json_t *out = json_array(), *obj;
	const char *key, *ons;

	pthread_rwlock_rdlock(&inf->lock);
	json_object_foreach(inf->items, key, obj) {
		ons = jx_namespace(obj);
		if (ns == NULL || (ons && strcmp(ons, ns) == 0))
			json_array_append(out, obj);
	}
	pthread_rwlock_unlock(&inf->lock);
	return out;
}

json_t *inf_by_index_ref(struct inf *inf, const char *name, const char *value)
{
	json_t *out = json_array(), *set = NULL, *v;
	const char *key;

	pthread_rwlock_rdlock(&inf->lock);
	for (size_t i = 0; i < inf->indexes.len && set == NULL; i++) {
		if (strcmp(inf->indexes.v[i].name, name) == 0)
			set = json_object_get(inf->indexes.v[i].map, value);
	}
	json_object_foreach(set, key, v) {
		json_t *obj = json_object_get(inf->items, key);

		if (obj)
			json_array_append(out, obj);
	}
	pthread_rwlock_unlock(&inf->lock);
	return out;
}

size_t inf_len(struct inf *inf)
{
	size_t n;

	pthread_rwlock_rdlock(&inf->lock);
	n = json_object_size(inf->items);
	pthread_rwlock_unlock(&inf->lock);
	return n;
}

char *inf_resource_version(struct inf *inf)
{
	char *rv;

	pthread_mutex_lock(&inf->mu);
	rv = xstrdup(inf->rv);
	pthread_mutex_unlock(&inf->mu);
	return rv;
}

const struct kc_gvr *inf_gvr(const struct inf *inf)
{
	return &inf->gvr;
}

void inf_get_stats(struct inf *inf, struct inf_stats *out)
{
	pthread_mutex_lock(&inf->mu);
	*out = inf->stats;
	pthread_mutex_unlock(&inf->mu);
}

bool inf_has_synced(struct inf *inf)
{
	bool synced;

	pthread_mutex_lock(&inf->mu);
	synced = inf->synced;
	pthread_mutex_unlock(&inf->mu);
	return synced;
}

bool inf_wait_synced(struct inf *inf, long timeout_ms)
{
	int64_t deadline = clock_mono_ns() + (int64_t)timeout_ms * CLOCK_NS_PER_MS;
	bool synced;
	int rc = 0;

	pthread_mutex_lock(&inf->mu);
	while (!inf->synced && rc != ETIMEDOUT) {
		if (timeout_ms < 0)
			pthread_cond_wait(&inf->cond, &inf->mu);
		else
			rc = clock_cond_wait_until(&inf->cond, &inf->mu, deadline);
	}
	synced = inf->synced;
	pthread_mutex_unlock(&inf->mu);
	return synced;
}

/* ---- index functions ---- */

void inf_index_label(const json_t *obj, void (*emit)(const char *value, void *ctx), void *ctx,
                     void *ud)
{
	const char *v = jx_label(obj, ud);

	if (v)
		emit(v, ctx);
}

void inf_index_owner_uid(const json_t *obj, void (*emit)(const char *value, void *ctx), void *ctx,
                         void *ud)
{
	const json_t *refs = jx_get(obj, "metadata", "ownerReferences", NULL);
	json_t *ref;
	size_t i;

	json_array_foreach(refs, i, ref) {
		const char *uid = jx_str(ref, "uid", NULL);

		if (uid)
			emit(uid, ctx);
	}
}

void inf_index_namespace(const json_t *obj, void (*emit)(const char *value, void *ctx), void *ctx,
                         void *ud)
{
	const char *ns = jx_namespace(obj);

	if (ns && *ns)
		emit(ns, ctx);
}

/* ---- reflector ---- */

static bool is_paused(struct inf *inf)
{
	bool p;

	pthread_mutex_lock(&inf->mu);
	p = inf->paused;
	pthread_mutex_unlock(&inf->mu);
	return p;
}

static bool is_stopping(struct inf *inf)
{
	bool s;

	pthread_mutex_lock(&inf->mu);
	s = inf->stopping;
	pthread_mutex_unlock(&inf->mu);
	return s;
}

static void log_failure(struct inf *inf, const char *what, const char *reason, int rc,
                        const struct kc_resp *resp, const struct ll_err *err)
{
	if (resp->http_status)
		log_warn(what, "{s:s,s:s,s:i,s:s,s:s}", "resource", inf->name, "reason", reason,
		         "code", (int)resp->http_status, "status_reason", resp->status.reason,
		         "message", resp->status.message);
	else
		log_warn(what, "{s:s,s:s,s:i,s:s}", "resource", inf->name, "reason", reason,
		         "errno", -rc, "message", err->msg[0] ? err->msg : strerror(-rc));
}

struct list_ctx {
	struct inf *inf;
	json_t *fresh;
};

static int on_list_item(json_t *item, void *ud)
{
	struct list_ctx *lc = ud;
	char *key;

	if (is_stopping(lc->inf))
		return -ECANCELED;
	inf__prepare(lc->inf, item);
	key = jx_object_key(item);
	if (key)
		json_object_set(lc->fresh, key, item);
	free(key);
	return 0;
}

static void note_listed(struct inf *inf, const char *rv, size_t n)
{
	bool first;

	pthread_mutex_lock(&inf->mu);
	free(inf->rv);
	inf->rv = xstrdup(rv);
	first = inf->stats.lists++ == 0;
	if (!first)
		inf->stats.relists++;
	inf->synced = true;
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->mu);
	if (!first)
		metrics_add(M_RELISTS, inf->labels, 1);
	malloc_trim(0); /* hand the list's page buffers back to the kernel */
	log_info(first ? "informer synced" : "informer relisted", "{s:s,s:i,s:s?}", "resource",
	         inf->name, "objects", (int)n, "resourceVersion", rv);
}

/* Install a list unless paused meanwhile (then it is dropped and redone after the pause). */
static enum outcome apply_list(struct inf *inf, json_t **take_fresh, const char *rv)
{
	size_t n = json_object_size(*take_fresh);
	bool paused;

	pthread_mutex_lock(&inf->dispatch_mu);
	paused = is_paused(inf);
	if (!paused) {
		replace_locked(inf, *take_fresh);
		*take_fresh = NULL;
	}
	pthread_mutex_unlock(&inf->dispatch_mu);
	if (paused)
		return OUT_CANCELED;
	note_listed(inf, rv, n);
	return OUT_LISTED;
}

static enum outcome list_once(struct inf *inf)
{
	struct kc_list_opts lo = {
	        .label_selector = inf->label_selector,
	        .field_selector = inf->field_selector,
	        .limit = inf->page_size,
	        .resource_version = NULL, /* "0" would ignore limit */
	        .accept = inf->metadata_only ? KC_ACCEPT_METADATA : NULL,
	};
	struct list_ctx lc = {inf, json_object()};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	enum outcome o = OUT_ERROR;
	char *rv = NULL;
	int rc;

	rc = kc_list(inf->c, &inf->gvr, inf->ns, &lo, on_list_item, &lc, &rv, &resp, &err);
	if (rc == -ECANCELED) {
		o = OUT_CANCELED;
	} else if (rc == 0 && resp.http_status == 410) {
		log_failure(inf, "list expired, relisting", "gone", rc, &resp, &err);
		o = OUT_GONE;
	} else if (rc < 0 || !kc_resp_ok(&resp)) {
		log_failure(inf, "list failed", "error", rc, &resp, &err);
	} else {
		o = apply_list(inf, &lc.fresh, rv);
	}
	json_decref(lc.fresh);
	kc_resp_release(&resp);
	free(rv);
	return o;
}

struct watch_ctx {
	struct inf *inf;
	bool got_event; /* other than ERROR */
	int code;       /* Status.code of an ERROR event */
	char reason[64];
	char message[512];
};

static int on_error_event(struct watch_ctx *wc, const json_t *status)
{
	wc->code = (int)jx_int(status, 0, "code", NULL);
	snprintf(wc->reason, sizeof(wc->reason), "%s", or_empty(jx_str(status, "reason", NULL)));
	snprintf(wc->message, sizeof(wc->message), "%s", or_empty(jx_str(status, "message", NULL)));
	return wc->code == 410 ? END_GONE : END_ERROR;
}

/* Checked under dispatch_mu, so that nothing is applied once inf_pause_watch() returns. */
static int on_watch_event(enum watch_event_type type, json_t *obj, void *ud)
{
	struct watch_ctx *wc = ud;
	struct inf *inf = wc->inf;
	struct delta d = {WATCH_BOOKMARK, NULL, NULL};
	int rc = 0;

	count_with(inf, M_EVENTS, "type", event_type_name(type));
	if (type == WATCH_ERROR)
		return on_error_event(wc, obj);
	wc->got_event = true;
	if (type != WATCH_BOOKMARK)
		inf__prepare(inf, obj);
	pthread_mutex_lock(&inf->dispatch_mu);
	if (is_paused(inf)) {
		rc = END_PAUSED;
	} else {
		if (type != WATCH_BOOKMARK && apply_locked(inf, type, obj, &d) == 0) {
			pthread_mutex_lock(&inf->mu);
			inf->stats.events++;
			pthread_mutex_unlock(&inf->mu);
		}
		set_rv(inf, jx_resource_version(obj));
	}
	pthread_mutex_unlock(&inf->dispatch_mu);
	delta_release(&d);
	return rc;
}

static void log_watch_error_event(struct inf *inf, const struct watch_ctx *wc, const char *reason)
{
	log_warn("watch error event", "{s:s,s:s,s:i,s:s,s:s}", "resource", inf->name, "reason",
	         reason, "code", wc->code, "status_reason", wc->reason, "message", wc->message);
}

/* Classify how a watch ended; @reason gets the restart label. */
static enum outcome watch_outcome(struct inf *inf, int rc, const struct watch_ctx *wc,
                                  const struct kc_resp *resp, const struct ll_err *err,
                                  long long elapsed_ms, const char **reason)
{
	if (rc == END_GONE || (rc == 0 && resp->http_status == 410)) {
		*reason = "gone";
		if (rc == END_GONE)
			log_watch_error_event(inf, wc, *reason);
		else
			log_failure(inf, "watch expired, relisting", *reason, rc, resp, err);
		return OUT_GONE;
	}
	if (rc == END_ERROR) {
		*reason = "error";
		log_watch_error_event(inf, wc, *reason);
		return OUT_ERROR;
	}
	if (rc == -ECANCELED || rc == END_PAUSED) {
		*reason = "canceled";
		return OUT_CANCELED;
	}
	if (rc == -ETIMEDOUT) {
		*reason = "timeout";
		log_failure(inf, "watch stalled", *reason, rc, resp, err);
		return OUT_ERROR;
	}
	if (rc == 0 && kc_resp_ok(resp)) {
		*reason = "closed";
		if (wc->got_event || elapsed_ms >= SHORT_WATCH_MS)
			return OUT_CLOSED;
		log_warn("watch closed at once", "{s:s}", "resource", inf->name);
		return OUT_ERROR;
	}
	*reason = "error";
	log_failure(inf, "watch failed", *reason, rc, resp, err);
	return OUT_ERROR;
}

/* *@progressed: the watch delivered at least one event. */
static enum outcome watch_once(struct inf *inf, bool *progressed)
{
	struct watch_ctx wc = {.inf = inf};
	struct kc_watch_opts wo = {
	        .label_selector = inf->label_selector,
	        .field_selector = inf->field_selector,
	        .allow_bookmarks = true,
	        .accept = inf->metadata_only ? KC_ACCEPT_METADATA_WATCH : NULL,
	        .cancel = &inf->watch_cancel,
	};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	const char *reason = "error";
	enum outcome o;
	long long start = clock_mono_ms();
	char *rv = inf_resource_version(inf);
	int rc;

	wo.resource_version = rv;
	rc = kc_watch(inf->c, &inf->gvr, inf->ns, &wo, on_watch_event, &wc, &resp, &err);
	o = watch_outcome(inf, rc, &wc, &resp, &err, clock_mono_ms() - start, &reason);
	if (!(o == OUT_CANCELED && is_stopping(inf)))
		count_with(inf, M_RESTARTS, "reason", reason);
	*progressed = wc.got_event;
	kc_resp_release(&resp);
	free(rv);
	return o;
}

long inf__backoff_ms(unsigned fails)
{
	long base = (long)BACKOFF_MIN_MS << (fails < 6 ? fails : 6);
	unsigned int r = 0;

	if (base > BACKOFF_MAX_MS)
		base = BACKOFF_MAX_MS;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (unsigned int)clock_mono_ms();
	base += (long)(r % (unsigned int)(base / 2 + 1));
	return base > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : base;
}

/* Sleep unless stopped first. */
static void backoff_sleep(struct inf *inf, unsigned fails)
{
	long ms = inf__backoff_ms(fails);
	int64_t deadline = clock_mono_ns() + ms * CLOCK_NS_PER_MS;
	int rc = 0;

	log_info("informer backing off", "{s:s,s:i}", "resource", inf->name, "delay_ms", (int)ms);
	pthread_mutex_lock(&inf->mu);
	while (!inf->stopping && rc != ETIMEDOUT)
		rc = clock_cond_wait_until(&inf->cond, &inf->mu, deadline);
	pthread_mutex_unlock(&inf->mu);
}

/* Wait while paused; re-arm the watch's cancel flag. Return: false once stopping. */
static bool ready_to_run(struct inf *inf)
{
	bool go;

	pthread_mutex_lock(&inf->mu);
	while (inf->paused && !inf->stopping)
		pthread_cond_wait(&inf->cond, &inf->mu);
	go = !inf->stopping;
	if (go)
		atomic_store(&inf->watch_cancel, 0);
	pthread_mutex_unlock(&inf->mu);
	return go;
}

static bool canceled_by_us(struct inf *inf)
{
	bool ours;

	pthread_mutex_lock(&inf->mu);
	ours = inf->stopping || inf->paused;
	pthread_mutex_unlock(&inf->mu);
	return ours;
}

static void note_watch_start(struct inf *inf, bool *watched_before)
{
	if (*watched_before) {
		pthread_mutex_lock(&inf->mu);
		inf->stats.watch_restarts++;
		pthread_mutex_unlock(&inf->mu);
	}
	*watched_before = true;
}

static void *reflector_main(void *arg)
{
	struct inf *inf = arg;
	bool need_list = true, watched_before = false, progressed = false;
	unsigned fails = 0;
	enum outcome o;

	while (ready_to_run(inf)) {
		if (need_list) {
			o = list_once(inf);
		} else {
			note_watch_start(inf, &watched_before);
			o = watch_once(inf, &progressed);
			if (progressed)
				fails = 0; /* a watch that worked a while restarts the back-off */
		}
		switch (o) {
		case OUT_LISTED:
			need_list = false;
			fails = 0;
			break;
		case OUT_CLOSED:
			fails = 0;
			break;
		case OUT_GONE:
			need_list = true;
			break;
		case OUT_ERROR:
			backoff_sleep(inf, fails++);
			break;
		case OUT_CANCELED:
			/* not by stop or pause: the client is going away */
			if (!canceled_by_us(inf))
				backoff_sleep(inf, fails++);
			break;
		}
	}
	return NULL;
}

int inf_start(struct inf *inf)
{
	int rc = 0;

	pthread_mutex_lock(&inf->mu);
	if (inf->running) {
		rc = -EBUSY;
		goto out;
	}
	inf->stopping = false;
	inf->ever_started = true;
	rc = -pthread_create(&inf->thread, NULL, reflector_main, inf);
	inf->running = rc == 0;
out:
	pthread_mutex_unlock(&inf->mu);
	return rc;
}

void inf_stop(struct inf *inf)
{
	pthread_t thread;
	bool join;

	pthread_mutex_lock(&inf->mu);
	join = inf->running; /* only one caller joins */
	thread = inf->thread;
	inf->running = false;
	inf->stopping = true;
	atomic_store(&inf->watch_cancel, 1);
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->mu);
	if (join)
		pthread_join(thread, NULL);
}

void inf_pause_watch(struct inf *inf, bool paused)
{
	pthread_mutex_lock(&inf->mu);
	inf->paused = paused;
	if (paused)
		atomic_store(&inf->watch_cancel, 1);
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->mu);
	/* barrier: an event being applied now finishes; later ones see the flag */
	if (paused) {
		pthread_mutex_lock(&inf->dispatch_mu);
		pthread_mutex_unlock(&inf->dispatch_mu);
	}
}
