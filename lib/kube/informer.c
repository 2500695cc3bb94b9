/* informer.c - list + watch reflector feeding a shared, indexed cache (see informer.h). */
#include <errno.h>
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
#include "kube/cache.h"
#include "kube/informer.h"
#include "kube/informer_internal.h"

#define DEFAULT_PAGE_SIZE 500
#define BACKOFF_MIN_MS    500
#define BACKOFF_MAX_MS    30000
#define SHORT_WATCH_MS    1000 /* a watch closed this fast without events counts as failed */
#define LABELS_MAX        512

#define M_OBJECTS  "landlord_informer_objects"
#define M_BYTES    "landlord_informer_bytes"
#define M_RELISTS  "landlord_informer_relists_total"
#define M_RESTARTS "landlord_watch_restarts_total"
#define M_EVENTS   "landlord_informer_events_total"

/* Positive values a watch callback returns to end the stream. */
#define END_GONE   1
#define END_ERROR  2
#define END_PAUSED 3

/* The objects of one index value: a set of the store's document pointers (no references). */
struct index_bucket {
	struct cache_table docs;
	char value[]; /* the index value */
};

struct inf_index {
	char *name;
	inf_index_fn fn;
	void *ud;
	struct cache_table buckets; /* value -> struct index_bucket */
	size_t bucket_bytes;        /* the buckets' own allocations */
};

struct inf {
	struct kc_client *c;
	struct kc_gvr gvr;
	char *ns, *label_selector, *field_selector, *name;
	char *api_version;       /* "group/version" or "version", for listed items */
	char **keep, **drop;     /* projection, NULL-terminated; drop always has managedFields */
	const char *defaults[5]; /* apiVersion and kind for listed items */
	struct jdoc_opts proj;   /* keep, drop and defaults, as parses take them */
	bool metadata_only;
	bool no_store; /* handlers only: nothing is cached (informer.h) */
	long page_size;
	char labels[LABELS_MAX]; /* resource="..." */

	/* The cache; readers take it shared. */
	pthread_rwlock_t lock;
	struct cache_table items; /* key -> document (one reference each) */
	size_t doc_bytes;         /* sum of jdoc_bytes() of the items */
	VEC(struct inf_index) indexes;

	/* Serialises cache changes with their dispatch, so a late handler misses nothing. */
	pthread_mutex_t dispatch_mu;
	VEC(struct inf_handler) handlers;
	VEC(struct inf_relist_handler) relist_handlers; /* store-less only */

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
	const struct jdoc *old_obj, *new_obj; /* references */
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
	metrics_describe(M_BYTES, METRIC_GAUGE,
	                 "Heap bytes of the informer's cache: documents, store and indexes.", NULL,
	                 0);
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

struct jdoc *inf__parse(struct inf *inf, const char *data, size_t len)
{
	struct ll_err err = {{0}};
	struct jdoc *d = NULL;

	if (jdoc_parse(data, len, &inf->proj, &d, &err) < 0)
		log_warn("object not cached", "{s:s,s:s}", "resource", inf->name, "error", err.msg);
	return d;
}

static bool bucket_match(const void *item, const char *key)
{
	return strcmp(((const struct index_bucket *)item)->value, key) == 0;
}

struct index_emit {
	struct inf_index *idx;
	const struct jdoc *doc;
	const char *key;
	bool add;
};

static void index_emit(const char *value, void *ctx)
{
	struct index_emit *e = ctx;
	struct index_bucket *b;
	size_t before;

	if (value == NULL)
		return;
	b = cache_get(&e->idx->buckets, value);
	if (e->add && b == NULL) {
		size_t len = strlen(value) + 1;

		b = xcalloc(1, sizeof(*b) + len);
		b->docs = CACHE_TABLE_INIT(cache_doc_match);
		memcpy(b->value, value, len);
		cache_put(&e->idx->buckets, b->value, b);
		e->idx->bucket_bytes += sizeof(*b) + len;
	}
	if (b == NULL)
		return;
	before = cache_bytes(&b->docs);
	if (e->add)
		cache_put(&b->docs, e->key, (void *)e->doc);
	else
		cache_del(&b->docs, e->key);
	e->idx->bucket_bytes += cache_bytes(&b->docs) - before;
	if (b->docs.n == 0) {
		cache_del(&e->idx->buckets, value);
		e->idx->bucket_bytes -= sizeof(*b) + strlen(value) + 1 + cache_bytes(&b->docs);
		cache_release(&b->docs);
		free(b);
	}
}

/* Caller holds the write lock. */
static void index_update(struct inf *inf, const char *key, const struct jdoc *doc, bool add)
{
	for (size_t i = 0; i < inf->indexes.len; i++) {
		struct index_emit e = {&inf->indexes.v[i], doc, key, add};

		inf->indexes.v[i].fn(doc, index_emit, &e, inf->indexes.v[i].ud);
	}
}

static void index_clear(struct inf_index *idx)
{
	for (size_t i = 0; i < idx->buckets.cap; i++) {
		struct index_bucket *b = idx->buckets.slots[i].item;

		if (b) {
			cache_release(&b->docs);
			free(b);
		}
	}
	cache_release(&idx->buckets);
	idx->bucket_bytes = 0;
}

/* Caller holds the write lock. */
static void index_rebuild(struct inf *inf)
{
	char key[CACHE_KEY_MAX];

	for (size_t i = 0; i < inf->indexes.len; i++)
		index_clear(&inf->indexes.v[i]);
	for (size_t i = 0; i < inf->items.cap; i++) {
		const struct jdoc *d = inf->items.slots[i].item;

		if (d && cache_doc_key(d, key))
			index_update(inf, key, d, true);
	}
}

/* Caller holds the lock. */
static size_t bytes_locked(struct inf *inf)
{
	size_t n = inf->doc_bytes + cache_bytes(&inf->items);

	for (size_t i = 0; i < inf->indexes.len; i++)
		n += cache_bytes(&inf->indexes.v[i].buckets) + inf->indexes.v[i].bucket_bytes;
	return n;
}

/* Caller holds the lock; the gauges are set after it is dropped. */
static void gauges(struct inf *inf, size_t n, size_t bytes)
{
	metrics_set(M_OBJECTS, inf->labels, (double)n);
	metrics_set(M_BYTES, inf->labels, (double)bytes);
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
	jdoc_unref(d->old_obj);
	jdoc_unref(d->new_obj);
}

/* Caller holds dispatch_mu; fills @d (references) and changes the cache. */
static void cache_apply(struct inf *inf, enum watch_event_type type, const char *key,
                        const struct jdoc *obj, struct delta *d)
{
	const struct jdoc *old;
	size_t n, bytes;

	if (inf->no_store) {
		/* the event as it came; a delete reports the event's own object */
		if (type == WATCH_DELETED)
			*d = (struct delta){type, jdoc_ref(obj), NULL};
		else
			*d = (struct delta){type, NULL, jdoc_ref(obj)};
		return;
	}
	pthread_rwlock_wrlock(&inf->lock);
	if (type == WATCH_DELETED)
		old = cache_del(&inf->items, key);
	else
		old = cache_put(&inf->items, key, jdoc_ref(obj));
	if (old) {
		index_update(inf, key, old, false);
		inf->doc_bytes -= jdoc_bytes(old);
	}
	if (type == WATCH_DELETED) {
		/* the store's reference moves to the delta */
		*d = (struct delta){old ? WATCH_DELETED : WATCH_BOOKMARK, old, NULL};
	} else {
		inf->doc_bytes += jdoc_bytes(obj);
		index_update(inf, key, obj, true);
		*d = (struct delta){old ? WATCH_MODIFIED : WATCH_ADDED, old, jdoc_ref(obj)};
	}
	n = inf->items.n;
	bytes = bytes_locked(inf);
	pthread_rwlock_unlock(&inf->lock);
	gauges(inf, n, bytes);
}

/* Caller holds dispatch_mu; @d receives references (delta_release() it). */
static int apply_locked(struct inf *inf, enum watch_event_type type, const struct jdoc *obj,
                        struct delta *d)
{
	char key[CACHE_KEY_MAX];

	if (!cache_doc_key(obj, key))
		return -EINVAL;
	cache_apply(inf, type, key, obj, d);
	dispatch(inf, d);
	return 0;
}

int inf__apply_event(struct inf *inf, enum watch_event_type type, const struct jdoc *obj)
{
	struct delta d = {WATCH_BOOKMARK, NULL, NULL};
	int rc;

	pthread_mutex_lock(&inf->dispatch_mu);
	rc = apply_locked(inf, type, obj, &d);
	pthread_mutex_unlock(&inf->dispatch_mu);
	delta_release(&d);
	return rc;
}

static bool same_version(const struct jdoc *a, const struct jdoc *b)
{
	const char *ra = jd_resource_version(a), *rb = jd_resource_version(b);

	if (ra && rb)
		return strcmp(ra, rb) == 0;
	return a == b;
}

struct delta_vec VEC_BODY(struct delta);

/* Caller holds the write lock; the deltas hold references. */
static void diff_tables(const struct cache_table *old_t, const struct cache_table *fresh,
                        struct delta_vec *ds)
{
	char key[CACHE_KEY_MAX];

	for (size_t i = 0; i < old_t->cap; i++) {
		const struct jdoc *old = old_t->slots[i].item;

		if (old && cache_doc_key(old, key) && cache_get(fresh, key) == NULL)
			vec_push(ds, ((struct delta){WATCH_DELETED, jdoc_ref(old), NULL}));
	}
	for (size_t i = 0; i < fresh->cap; i++) {
		const struct jdoc *obj = fresh->slots[i].item, *old;

		if (obj == NULL || !cache_doc_key(obj, key))
			continue;
		old = cache_get(old_t, key);
		if (old == NULL)
			vec_push(ds, ((struct delta){WATCH_ADDED, NULL, jdoc_ref(obj)}));
		else if (!same_version(old, obj))
			vec_push(ds,
			         ((struct delta){WATCH_MODIFIED, jdoc_ref(old), jdoc_ref(obj)}));
	}
}

/* Drop the table's references and free it. */
static void table_unref_all(struct cache_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		jdoc_unref(t->slots[i].item);
	cache_release(t);
}

/* A table of the list's documents (references moved from @take) and their bytes. */
static struct cache_table table_from_list(struct jdoc_list *take, size_t *bytes)
{
	struct cache_table t = CACHE_TABLE_INIT(cache_doc_match);
	char key[CACHE_KEY_MAX];

	*bytes = 0;
	for (size_t i = 0; i < take->n; i++) {
		const struct jdoc *d = take->items[i], *old = NULL;

		if (cache_doc_key(d, key))
			old = cache_put(&t, key, (void *)d);
		else
			old = d; /* no name: not cached */
		*bytes += jdoc_bytes(d) - (old ? jdoc_bytes(old) : 0);
		jdoc_unref(old);
		take->items[i] = NULL;
	}
	jdoc_list_release(take);
	return t;
}

/* Caller holds dispatch_mu. A store-less relist: each item an add, between the brackets. */
static void replace_streamed(struct inf *inf, struct jdoc_list *take)
{
	for (size_t i = 0; i < inf->relist_handlers.len; i++)
		if (inf->relist_handlers.v[i].on_relist_begin)
			inf->relist_handlers.v[i].on_relist_begin(inf->relist_handlers.v[i].ud);
	for (size_t i = 0; i < take->n; i++) {
		struct delta d = {WATCH_ADDED, NULL, take->items[i]};

		if (jd_name(d.new_obj))
			dispatch(inf, &d);
	}
	for (size_t i = 0; i < inf->relist_handlers.len; i++)
		if (inf->relist_handlers.v[i].on_relist_end)
			inf->relist_handlers.v[i].on_relist_end(inf->relist_handlers.v[i].ud);
	jdoc_list_release(take);
}

/* Caller holds dispatch_mu. */
static void replace_locked(struct inf *inf, struct jdoc_list *take)
{
	struct delta_vec ds = VEC_INIT;
	struct cache_table old_t;
	size_t len, doc_bytes, bytes;
	struct cache_table fresh = table_from_list(take, &doc_bytes);

	pthread_rwlock_wrlock(&inf->lock);
	diff_tables(&inf->items, &fresh, &ds);
	old_t = inf->items;
	inf->items = fresh;
	inf->doc_bytes = doc_bytes;
	index_rebuild(inf);
	len = inf->items.n;
	bytes = bytes_locked(inf);
	pthread_rwlock_unlock(&inf->lock);
	gauges(inf, len, bytes);
	for (size_t i = 0; i < ds.len; i++)
		dispatch(inf, &ds.v[i]);
	for (size_t i = 0; i < ds.len; i++)
		delta_release(&ds.v[i]);
	vec_release(&ds);
	table_unref_all(&old_t);
}

void inf__replace(struct inf *inf, struct jdoc_list *take)
{
	pthread_mutex_lock(&inf->dispatch_mu);
	if (inf->no_store)
		replace_streamed(inf, take);
	else
		replace_locked(inf, take);
	pthread_mutex_unlock(&inf->dispatch_mu);
}

/* ---- construction and reads ---- */

/* A NULL-terminated copy of @paths, with @extra appended when not NULL. */
/* A NULL-terminated copy of @paths followed by the @n_extra paths of @extra. */
static char **paths_dup(const char *const *paths, const char *const *extra, size_t n_extra)
{
	size_t n = 0, k = 0;
	char **out;

	while (paths && paths[n])
		n++;
	out = xcalloc(n + n_extra + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		out[k++] = xstrdup(paths[i]);
	for (size_t i = 0; i < n_extra; i++)
		out[k++] = xstrdup(extra[i]);
	return out;
}

/*
 * The parse options: what the caller keeps and drops, plus what the informer itself needs -
 * the key and resourceVersion kept, managedFields dropped, and apiVersion and kind kept and
 * added to listed items, which lack them (metadata-only objects are PartialObjectMetadata
 * whatever they are: both dropped).
 */
static void set_projection(struct inf *inf, const struct inf_opts *opts)
{
	static const char *const needed[] = {"metadata.name", "metadata.namespace",
	                                     "metadata.resourceVersion", "apiVersion", "kind"};
	static const char *const dropped[] = {"metadata.managedFields", "kind", "apiVersion"};

	inf->keep = opts->keep ? paths_dup(opts->keep, needed, opts->metadata_only ? 3 : 5) : NULL;
	inf->drop = paths_dup(opts->drop, dropped, opts->metadata_only ? 3 : 1);
	if (!opts->metadata_only && inf->gvr.kind && inf->api_version) {
		inf->defaults[0] = "apiVersion";
		inf->defaults[1] = inf->api_version;
		inf->defaults[2] = "kind";
		inf->defaults[3] = inf->gvr.kind;
	}
	inf->proj = (struct jdoc_opts){.keep = (const char *const *)inf->keep,
	                               .drop = (const char *const *)inf->drop,
	                               .defaults = inf->defaults};
}

static void paths_free(char **paths)
{
	for (size_t i = 0; paths && paths[i]; i++)
		free(paths[i]);
	free(paths);
}

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
	inf->no_store = opts->no_store;
	inf->page_size = opts->page_size > 0 ? opts->page_size : DEFAULT_PAGE_SIZE;
	set_projection(inf, opts);
	inf->name = xstrdup(opts->name ? opts->name : opts->gvr.resource);
	metrics_labels(inf->labels, sizeof(inf->labels), "resource", inf->name, NULL);
	inf->items = CACHE_TABLE_INIT(cache_doc_match);
	pthread_rwlock_init(&inf->lock, NULL);
	pthread_mutex_init(&inf->dispatch_mu, NULL);
	pthread_mutex_init(&inf->mu, NULL);
	clock_cond_init(&inf->cond);
	describe_metrics();
	for (size_t i = 0; opts->indexes && opts->indexes[i].name; i++)
		inf_add_index(inf, opts->indexes[i].name, opts->indexes[i].fn, opts->indexes[i].ud);
	if (opts->handler != NULL)
		inf_add_handler(inf, opts->handler);
	if (opts->relist != NULL)
		inf_add_relist_handler(inf, opts->relist);
	return inf;
}

void inf_free(struct inf *inf)
{
	if (inf == NULL)
		return;
	inf_stop(inf);
	for (size_t i = 0; i < inf->indexes.len; i++) {
		free(inf->indexes.v[i].name);
		index_clear(&inf->indexes.v[i]);
	}
	vec_release(&inf->indexes);
	vec_release(&inf->handlers);
	vec_release(&inf->relist_handlers);
	table_unref_all(&inf->items);
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
	paths_free(inf->keep);
	paths_free(inf->drop);
	free(inf->name);
	free(inf->rv);
	free(inf);
}

void inf_add_handler(struct inf *inf, const struct inf_handler *h)
{
	struct jdoc_list objs;

	pthread_mutex_lock(&inf->dispatch_mu);
	objs = inf_list_ref(inf, NULL);
	for (size_t i = 0; i < objs.n && h->on_add; i++)
		h->on_add(objs.items[i], h->ud);
	vec_push(&inf->handlers, *h);
	pthread_mutex_unlock(&inf->dispatch_mu);
	jdoc_list_release(&objs);
}

void inf_add_relist_handler(struct inf *inf, const struct inf_relist_handler *h)
{
	pthread_mutex_lock(&inf->dispatch_mu);
	vec_push(&inf->relist_handlers, *h);
	pthread_mutex_unlock(&inf->dispatch_mu);
}

static bool same_handler(const struct inf_handler *a, const struct inf_handler *b)
{
	return a->on_add == b->on_add && a->on_update == b->on_update &&
	       a->on_delete == b->on_delete && a->ud == b->ud;
}

void inf_remove_handler(struct inf *inf, const struct inf_handler *h)
{
	pthread_mutex_lock(&inf->dispatch_mu);
	for (size_t i = 0; i < inf->handlers.len; i++) {
		if (!same_handler(&inf->handlers.v[i], h))
			continue;
		memmove(&inf->handlers.v[i], &inf->handlers.v[i + 1],
		        (inf->handlers.len - i - 1) * sizeof(*inf->handlers.v));
		inf->handlers.len--;
		break;
	}
	pthread_mutex_unlock(&inf->dispatch_mu);
}

int inf_add_index(struct inf *inf, const char *name, inf_index_fn fn, void *ud)
{
	int rc = 0;

	pthread_mutex_lock(&inf->mu);
	if (inf->ever_started) {
		rc = -EBUSY;
		goto out;
	}
	if (inf->no_store) {
		rc = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < inf->indexes.len; i++) {
		if (strcmp(inf->indexes.v[i].name, name) == 0) {
			rc = -EEXIST;
			goto out;
		}
	}
	pthread_rwlock_wrlock(&inf->lock);
	vec_push(&inf->indexes,
	         ((struct inf_index){xstrdup(name), fn, ud, CACHE_TABLE_INIT(bucket_match), 0}));
	index_rebuild(inf);
	pthread_rwlock_unlock(&inf->lock);
out:
	pthread_mutex_unlock(&inf->mu);
	return rc;
}

const struct jdoc *inf_get_key_ref(struct inf *inf, const char *key)
{
	const struct jdoc *obj;

	pthread_rwlock_rdlock(&inf->lock);
	obj = jdoc_ref(cache_get(&inf->items, key));
	pthread_rwlock_unlock(&inf->lock);
	return obj;
}

const struct jdoc *inf_get_ref(struct inf *inf, const char *ns, const char *name)
{
	char *key = inf__key(ns, name);
	const struct jdoc *obj = inf_get_key_ref(inf, key);

	free(key);
	return obj;
}

/* References to the documents of @t (in namespace @ns if not NULL). Caller holds the lock. */
static struct jdoc_list list_table(const struct cache_table *t, const char *ns)
{
	struct jdoc_list out = {xcalloc(t->n ? t->n : 1, sizeof(*out.items)), 0};

	for (size_t i = 0; i < t->cap; i++) {
		const struct jdoc *d = t->slots[i].item;
		const char *ons;

		if (d == NULL)
			continue;
		ons = ns ? jd_namespace(d) : NULL;
		if (ns == NULL || (ons && strcmp(ons, ns) == 0))
			out.items[out.n++] = jdoc_ref(d);
	}
	return out;
}

struct jdoc_list inf_list_ref(struct inf *inf, const char *ns)
{
	struct jdoc_list out;

	pthread_rwlock_rdlock(&inf->lock);
	out = list_table(&inf->items, ns);
	pthread_rwlock_unlock(&inf->lock);
	return out;
}

struct jdoc_list inf_by_index_ref(struct inf *inf, const char *name, const char *value)
{
	static const struct cache_table empty = {NULL, 0, 0, cache_doc_match};
	const struct index_bucket *b = NULL;
	struct jdoc_list out;

	pthread_rwlock_rdlock(&inf->lock);
	for (size_t i = 0; i < inf->indexes.len; i++) {
		if (strcmp(inf->indexes.v[i].name, name) == 0) {
			b = cache_get(&inf->indexes.v[i].buckets, value);
			break;
		}
	}
	out = list_table(b ? &b->docs : &empty, NULL);
	pthread_rwlock_unlock(&inf->lock);
	return out;
}

size_t inf_len(struct inf *inf)
{
	size_t n;

	pthread_rwlock_rdlock(&inf->lock);
	n = inf->items.n;
	pthread_rwlock_unlock(&inf->lock);
	return n;
}

size_t inf_bytes(struct inf *inf)
{
	size_t n;

	pthread_rwlock_rdlock(&inf->lock);
	n = bytes_locked(inf);
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

void inf_index_label(const struct jdoc *obj, void (*emit)(const char *value, void *ctx), void *ctx,
                     void *ud)
{
	const char *v = jd_label(obj, ud);

	if (v)
		emit(v, ctx);
}

void inf_index_owner_uid(const struct jdoc *obj, void (*emit)(const char *value, void *ctx),
                         void *ctx, void *ud)
{
	struct jval refs = jd_get(obj, "metadata", "ownerReferences", NULL), ref;
	size_t i;

	jval_foreach(refs, i, ref) {
		const char *uid = jval_str(jval_get(ref, "uid"));

		if (uid)
			emit(uid, ctx);
	}
}

void inf_index_namespace(const struct jdoc *obj, void (*emit)(const char *value, void *ctx),
                         void *ctx, void *ud)
{
	const char *ns = jd_namespace(obj);

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
	VEC(const struct jdoc *) fresh; /* references */
};

static int on_list_item(struct jdoc *take_item, void *ud)
{
	struct list_ctx *lc = ud;

	if (is_stopping(lc->inf)) {
		jdoc_unref(take_item);
		return -ECANCELED;
	}
	vec_push(&lc->fresh, take_item);
	return 0;
}

static void list_ctx_release(struct list_ctx *lc)
{
	struct jdoc_list l = {lc->fresh.v, lc->fresh.len};

	jdoc_list_release(&l);
	lc->fresh.v = NULL;
	lc->fresh.len = lc->fresh.cap = 0;
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
	mem_trim(); /* hand the list's page buffers back to the kernel */
	log_info(first ? "informer synced" : "informer relisted", "{s:s,s:i,s:s?}", "resource",
	         inf->name, "objects", (int)n, "resourceVersion", rv);
}

/* Install a list unless paused meanwhile (then it is dropped and redone after the pause). */
static enum outcome apply_list(struct inf *inf, struct list_ctx *lc, const char *rv)
{
	struct jdoc_list take = {lc->fresh.v, lc->fresh.len};
	size_t n = 0;
	bool paused;

	pthread_mutex_lock(&inf->dispatch_mu);
	paused = is_paused(inf);
	if (!paused) {
		lc->fresh.v = NULL;
		lc->fresh.len = lc->fresh.cap = 0;
		n = take.n;
		if (inf->no_store) {
			replace_streamed(inf, &take);
		} else {
			replace_locked(inf, &take);
			n = inf_len(inf);
		}
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
	struct list_ctx lc = {inf, VEC_INIT};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	enum outcome o = OUT_ERROR;
	char *rv = NULL;
	int rc;

	rc = kc_list_docs(inf->c, &inf->gvr, inf->ns, &lo, &inf->proj, on_list_item, &lc, &rv,
	                  &resp, &err);
	if (rc == -ECANCELED) {
		o = OUT_CANCELED;
	} else if (rc == 0 && resp.http_status == 410) {
		log_failure(inf, "list expired, relisting", "gone", rc, &resp, &err);
		o = OUT_GONE;
	} else if (rc < 0 || !kc_resp_ok(&resp)) {
		log_failure(inf, "list failed", "error", rc, &resp, &err);
	} else {
		o = apply_list(inf, &lc, rv);
	}
	list_ctx_release(&lc);
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

static int on_error_event(struct watch_ctx *wc, const struct jdoc *status)
{
	wc->code = (int)jd_int(status, 0, "code", NULL);
	snprintf(wc->reason, sizeof(wc->reason), "%s", or_empty(jd_str(status, "reason", NULL)));
	snprintf(wc->message, sizeof(wc->message), "%s", or_empty(jd_str(status, "message", NULL)));
	return wc->code == 410 ? END_GONE : END_ERROR;
}

/* Checked under dispatch_mu, so that nothing is applied once inf_pause_watch() returns. */
static int on_watch_event(enum watch_event_type type, const struct jdoc *obj, void *ud)
{
	struct watch_ctx *wc = ud;
	struct inf *inf = wc->inf;
	struct delta d = {WATCH_BOOKMARK, NULL, NULL};
	int rc = 0;

	count_with(inf, M_EVENTS, "type", event_type_name(type));
	if (type == WATCH_ERROR)
		return on_error_event(wc, obj);
	wc->got_event = true;
	pthread_mutex_lock(&inf->dispatch_mu);
	if (is_paused(inf)) {
		rc = END_PAUSED;
	} else {
		if (type != WATCH_BOOKMARK && apply_locked(inf, type, obj, &d) == 0) {
			pthread_mutex_lock(&inf->mu);
			inf->stats.events++;
			pthread_mutex_unlock(&inf->mu);
		}
		set_rv(inf, jd_resource_version(obj));
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
	rc = kc_watch_docs(inf->c, &inf->gvr, inf->ns, &wo, &inf->proj, on_watch_event, &wc, &resp,
	                   &err);
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

void inf_cancel(struct inf *inf)
{
	pthread_mutex_lock(&inf->mu);
	inf->stopping = true;
	atomic_store(&inf->watch_cancel, 1);
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->mu);
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
