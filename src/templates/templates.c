/*
 * templates.c - what the template controllers share: discovery, the watches on rendered kinds
 * and the fingerprints of what each instance was last applied from.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "templates/templates_internal.h"

struct templates *templates_new(struct kc_client *kc)
{
	struct templates *t = xcalloc(1, sizeof(*t));

	t->kc = kc;
	t->disc = disc_new(kc);
	pthread_mutex_init(&t->lock, NULL);
	t->watched = json_object();
	t->fingerprints = json_object();
	t->written_ms = json_object();
	t->drifted = json_object();
	return t;
}

void templates_free(struct templates *t)
{
	if (t == NULL)
		return;
	disc_free(t->disc);
	podstore_free(t->pods);
	releases_free(t->helm);
	json_decref(t->watched);
	json_decref(t->fingerprints);
	json_decref(t->written_ms);
	json_decref(t->drifted);
	while (t->drift_watches) {
		struct drift_watch *next = t->drift_watches->next;

		free(t->drift_watches);
		t->drift_watches = next;
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* ---------- watches on rendered kinds ---------- */

/* "<namespace>/<instance>" of a labelled object, or false. */
static bool instance_key(const struct jdoc *obj, char *key, size_t cap)
{
	const char *ns = jd_namespace(obj), *name = jd_label(obj, LABEL_TI);

	if (ns == NULL || name == NULL || *name == '\0')
		return false;
	snprintf(key, cap, "%s/%s", ns, name);
	return true;
}

static void drifted(struct templates *t, const struct jdoc *obj)
{
	char key[512];

	if (jd_label(obj, LABEL_IGNORE_UPDATES) != NULL || !instance_key(obj, key, sizeof(key)))
		return;
	tpl_mark_drift(t, key); /* a reconcile applying now does not record its fingerprint */
	ctrl_enqueue(t->ti, key);
}

/*
 * A TemplateGroupInstance's object drifted (or, @added, appeared): noted for its namespace,
 * which alone is enqueued ("<tgi>/<namespace>"), so that only what drifted is applied again
 * and what appeared unrendered is pruned (tgi.c).
 */
static void note_group(struct drift_watch *w, const struct jdoc *obj, bool added)
{
	const char *ns = jd_namespace(obj), *name = jd_label(obj, LABEL_TGI);
	char key[600], object[TPL_FAIL_OBJECT_MAX + 256];

	if ((!added && jd_label(obj, LABEL_IGNORE_UPDATES) != NULL) || ns == NULL || name == NULL ||
	    *name == '\0' || w->t->tgi == NULL)
		return;
	tgi_fingerprint_key(name, ns, key, sizeof(key));
	snprintf(object, sizeof(object), "%s%s/%s", added ? TPL_NOTE_ADDED : "", w->kind,
	         jd_name(obj));
	tpl_drift_note(w->t, key, object);
	snprintf(key, sizeof(key), "%s/%s", name, ns);
	ctrl_enqueue(w->t->tgi, key);
}

static void on_add(const struct jdoc *obj, void *ud)
{
	(void)obj;
	(void)ud; /* what the instance applies itself needs no second look */
}

static bool same_map(const struct jdoc *a, const struct jdoc *b, const char *key)
{
	json_t *x = jval_to_json(jd_get(a, "metadata", key, NULL)),
	       *y = jval_to_json(jd_get(b, "metadata", key, NULL));
	bool same = json_equal(x, y) || (x == NULL && y == NULL);

	json_decref(x);
	json_decref(y);
	return same;
}

/*
 * A change of the spec (generation), of labels or annotations, or of a kind without a
 * generation (a ConfigMap's data) may be drift; a status write is not.
 */
static bool may_drift(const struct jdoc *old_obj, const struct jdoc *new_obj)
{
	long long gen_old = jd_int(old_obj, 0, "metadata", "generation", NULL),
	          gen_new = jd_int(new_obj, 0, "metadata", "generation", NULL);

	return gen_old != gen_new || gen_new == 0 || !same_map(old_obj, new_obj, "labels") ||
	       !same_map(old_obj, new_obj, "annotations");
}

static void on_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	if (may_drift(old_obj, new_obj))
		drifted(ud, new_obj);
}

static void on_delete(const struct jdoc *obj, void *ud)
{
	drifted(ud, obj);
}

/*
 * An object appeared after the first list (which the cache holds for prunes to see): one the
 * instance applied itself needs nothing, but one its render no longer holds, seen too late by
 * a prune that asked the cache, is pruned now.
 */
static void on_add_group(const struct jdoc *obj, void *ud)
{
	struct drift_watch *w = ud;

	if (w->inf && inf_has_synced(w->inf))
		note_group(w, obj, true);
}

static void on_update_group(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	if (may_drift(old_obj, new_obj))
		note_group(ud, new_obj, false);
}

/* The handler's context of one kind's watch for TemplateGroupInstances (freed with @t). */
static struct drift_watch *drift_watch_new(struct templates *t, const char *kind, struct inf *inf)
{
	struct drift_watch *w = xcalloc(1, sizeof(*w));

	w->t = t;
	w->inf = inf;
	snprintf(w->kind, sizeof(w->kind), "%s", kind);
	pthread_mutex_lock(&t->lock);
	w->next = t->drift_watches;
	t->drift_watches = w;
	pthread_mutex_unlock(&t->lock);
	return w;
}

static void on_delete_group(const struct jdoc *obj, void *ud)
{
	note_group(ud, obj, false);
}

/* The options of the watch on one rendered kind for @label: the same for every caller, so
 * that the manager hands back one informer. TGIs' have a namespace index (prunes ask it). */
static struct inf_opts kind_watch_opts(const struct kc_gvr *gvr, const char *label,
                                       const char *name)
{
	static const struct inf_index_def by_namespace[] = {
	        {TPL_IDX_NAMESPACE, inf_index_namespace, NULL}, {NULL, NULL, NULL}};

	return (struct inf_opts){.gvr = *gvr,
	                         .label_selector = label,
	                         .metadata_only = true,
	                         .name = name,
	                         .indexes = strcmp(label, LABEL_TGI) == 0 ? by_namespace : NULL};
}

void tgi_fingerprint_key(const char *tgi, const char *ns, char *out, size_t cap)
{
	snprintf(out, cap, "tgi/%s/%s", tgi, ns);
}

int tpl_watch_kind(struct templates *t, const json_t *obj, const char *label)
{
	bool group = strcmp(label, LABEL_TGI) == 0;
	char kind[TPL_FAIL_OBJECT_MAX], key[TPL_FAIL_OBJECT_MAX + 64];
	struct ll_err err = {{0}};
	struct inf_opts opts;
	struct kc_gvr gvr;
	struct inf *inf;
	bool created, first;
	int rc;

	tpl_kind_key(obj, kind);
	snprintf(key, sizeof(key), "%s:%s", group ? "tgi" : "ti", kind);
	pthread_mutex_lock(&t->lock);
	rc = json_object_get(t->watched, key) ? 1 : 0;
	pthread_mutex_unlock(&t->lock);
	if (rc == 1)
		return 0;
	rc = disc_lookup_kind(t->disc, jx_str(obj, "apiVersion", NULL), jx_str(obj, "kind", NULL),
	                      &gvr, &err);
	if (rc != 0)
		return rc;
	opts = kind_watch_opts(&gvr, label, key);
	inf = mgr_informer_live(ctrl_mgr(group ? t->tgi : t->ti), &opts, &created);
	pthread_mutex_lock(&t->lock);
	first = json_object_get(t->watched, key) == NULL;
	if (first)
		json_object_set_new(t->watched, key, json_true());
	pthread_mutex_unlock(&t->lock);
	/* outside the lock: the informer's handlers take it */
	if (first && group)
		inf_add_handler(inf, &(struct inf_handler){on_add_group, on_update_group,
		                                           on_delete_group,
		                                           drift_watch_new(t, kind, inf)});
	else if (first)
		inf_add_handler(inf, &(struct inf_handler){on_add, on_update, on_delete, t});
	return 0;
}

struct inf *tpl_kind_informer(struct templates *t, const char *kind, const char *label)
{
	bool group = strcmp(label, LABEL_TGI) == 0, watched, created;
	char key[TPL_FAIL_OBJECT_MAX + 64], api_version[TPL_FAIL_OBJECT_MAX];
	const char *slash = strrchr(kind, '/');
	struct inf_opts opts;
	struct kc_gvr gvr;
	struct inf *inf;

	snprintf(key, sizeof(key), "%s:%s", group ? "tgi" : "ti", kind);
	pthread_mutex_lock(&t->lock);
	watched = json_object_get(t->watched, key) != NULL;
	pthread_mutex_unlock(&t->lock);
	if (!watched || slash == NULL || (size_t)(slash - kind) >= sizeof(api_version))
		return NULL;
	snprintf(api_version, sizeof(api_version), "%.*s", (int)(slash - kind), kind);
	if (disc_lookup_kind(t->disc, api_version, slash + 1, &gvr, NULL) != 0)
		return NULL;
	opts = kind_watch_opts(&gvr, label, key);
	inf = mgr_informer_live(ctrl_mgr(group ? t->tgi : t->ti), &opts, &created);
	return inf_has_synced(inf) ? inf : NULL;
}

/* ---------- fingerprints ---------- */

void tpl_forget(struct templates *t, const char *key)
{
	pthread_mutex_lock(&t->lock);
	json_object_del(t->fingerprints, key);
	pthread_mutex_unlock(&t->lock);
}

void tpl_forget_prefix(struct templates *t, const char *prefix)
{
	size_t n = strlen(prefix);
	const char *k;
	json_t *v, *tmp;

	pthread_mutex_lock(&t->lock);
	json_object_foreach_safe(t->fingerprints, tmp, k, v) {
		if (strncmp(k, prefix, n) == 0)
			json_object_del(t->fingerprints, k);
	}
	json_object_foreach_safe(t->drifted, tmp, k, v) {
		if (strncmp(k, prefix, n) == 0)
			json_object_del(t->drifted, k);
	}
	pthread_mutex_unlock(&t->lock);
}

void tpl_drop(struct templates *t, const char *key)
{
	pthread_mutex_lock(&t->lock);
	json_object_del(t->fingerprints, key);
	json_object_del(t->written_ms, key);
	pthread_mutex_unlock(&t->lock);
}

#define STATUS_WRITE_INTERVAL_MS 1000

bool tpl_write_due(struct templates *t, const char *key, long *wait_ms)
{
	long long now = clock_mono_ms(), last;

	pthread_mutex_lock(&t->lock);
	last = json_integer_value(json_object_get(t->written_ms, key));
	pthread_mutex_unlock(&t->lock);
	*wait_ms = last && now - last < STATUS_WRITE_INTERVAL_MS
	                   ? (long)(STATUS_WRITE_INTERVAL_MS - (now - last))
	                   : 0;
	return *wait_ms == 0;
}

void tpl_written(struct templates *t, const char *key)
{
	pthread_mutex_lock(&t->lock);
	json_object_set_new(t->written_ms, key, json_integer(clock_mono_ms()));
	pthread_mutex_unlock(&t->lock);
}

bool tpl_fingerprint_is(struct templates *t, const char *key, const char *fp)
{
	bool same;

	pthread_mutex_lock(&t->lock);
	same = fp && json_string_value(json_object_get(t->fingerprints, key)) &&
	       strcmp(json_string_value(json_object_get(t->fingerprints, key)), fp) == 0;
	pthread_mutex_unlock(&t->lock);
	return same;
}

/* More drifted objects than this in one namespace: everything there is applied again. */
#define DRIFT_NOTES_MAX 256

void tpl_drift_note(struct templates *t, const char *key, const char *object)
{
	json_t *set;

	pthread_mutex_lock(&t->lock);
	set = json_object_get(t->drifted, key);
	if (set == NULL) {
		set = json_object();
		json_object_set_new(t->drifted, key, set);
	}
	if (json_object_size(set) < DRIFT_NOTES_MAX)
		json_object_set_new(set, object, json_true());
	else
		json_object_set_new(set, TPL_DRIFT_ALL, json_true());
	pthread_mutex_unlock(&t->lock);
}

json_t *tpl_drift_take(struct templates *t, const char *key)
{
	json_t *set;

	pthread_mutex_lock(&t->lock);
	set = json_incref(json_object_get(t->drifted, key));
	json_object_del(t->drifted, key);
	pthread_mutex_unlock(&t->lock);
	return set;
}

void tpl_mark_drift(struct templates *t, const char *key)
{
	char marker[64];

	pthread_mutex_lock(&t->lock);
	snprintf(marker, sizeof(marker), "drift:%llu", ++t->drifts);
	json_object_set_new(t->fingerprints, key, json_string(marker));
	pthread_mutex_unlock(&t->lock);
}

void tpl_fingerprint_get(struct templates *t, const char *key, char *out, size_t cap)
{
	pthread_mutex_lock(&t->lock);
	snprintf(out, cap, "%s", json_string_value(json_object_get(t->fingerprints, key)) ?: "");
	pthread_mutex_unlock(&t->lock);
}

bool tpl_fingerprint_swap(struct templates *t, const char *key, const char *before, const char *fp)
{
	const char *now;
	bool same;

	pthread_mutex_lock(&t->lock);
	now = json_string_value(json_object_get(t->fingerprints, key)) ?: "";
	same = strcmp(now, before) == 0;
	if (same)
		json_object_set_new(t->fingerprints, key, json_string(fp));
	pthread_mutex_unlock(&t->lock);
	return same;
}

/* ---------- what both controllers write the same way ---------- */

json_t *tpl_status_changes(struct jval obj, const json_t *want)
{
	json_t *changes = json_object(), *v;
	const char *k;

	json_object_foreach((json_t *)want, k, v) {
		if (!jval_equal_json(jval_path(obj, "status", k, NULL), v))
			json_object_set(changes, k, v);
	}
	return changes;
}

struct ctrl_result tpl_sooner(struct ctrl_result res, long wait_ms)
{
	if (res.outcome == CTRL_RETRY ||
	    (res.outcome == CTRL_REQUEUE_AFTER && res.after_ms <= wait_ms))
		return res;
	return CTRL_RESULT_AFTER(wait_ms);
}
