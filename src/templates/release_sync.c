/*
 * release_sync.c - what a deployed release holds, and keeping it so (issue 14, point 6 and the
 * roll-up of point 7): Helm's record of the release read by landlord (never by running helm),
 * the objects of its manifest watched by kind, drift noted, and its workloads counted.
 *
 * A release's objects are "interesting": objkey "<apiVersion>/<Kind>/<namespace>/<name>" maps
 * to its release. Each kind has one store-less watch across the cluster (metadata only, the
 * replica counts for workloads) whose handlers look only at interesting objects. After each
 * run, a list of each (kind, namespace) sets every object's baseline: its generation (kinds
 * that have one), resourceVersion (kinds that do not) and labels and annotations. A deletion,
 * or a later event that differs from the baseline, is drift; landlord.dev/ignore-updates on
 * the object is honoured. An event older than the baseline (a resourceVersion not above it) is
 * the run's own and ignored.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/discovery.h"
#include "templates/releases_internal.h"

/* Annotations controllers write on a chart's objects: not drift. */
static const char *const CONTROLLER_ANNOTATIONS[] = {"deployment.kubernetes.io/revision", NULL};

struct sync_watch {
	struct tpl_helm *h;
	char kind[TPL_FAIL_OBJECT_MAX];
	bool workload;
	struct sync_watch *next;
};

/* ---------- the record ---------- */

json_t *rel_get_record(struct rel_rec *r, long revision)
{
	char name[128];
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	json_t *secret = NULL;

	snprintf(name, sizeof(name), "sh.helm.release.v1.%s.v%ld", r->release, revision);
	if (kc_get(r->t->kc, &KC_SECRETS, r->ns, name, &resp, &err) == 0 && kc_resp_ok(&resp))
		secret = json_incref(resp.body);
	else if (resp.http_status != 404)
		log_warn("cannot read a helm release record", "{s:s,s:s,s:s}", "namespace", r->ns,
		         "record", name, "error", err.msg[0] ? err.msg : resp.status.message);
	kc_resp_release(&resp);
	return secret;
}

json_t *rel_decode_record(const json_t *secret, const struct helm_record *rec)
{
	const json_t *meta = json_object_get(secret, "metadata");

	/* the record the ledger vouched for, not one put in its place since */
	if (rec == NULL || strcmp(jx_str(meta, "uid", NULL) ?: "", rec->uid) != 0 ||
	    strcmp(jx_str(meta, "resourceVersion", NULL) ?: "", rec->rv) != 0)
		return NULL;
	return helm_record_decode(jx_str(secret, "data", "release", NULL));
}

/* ---------- baselines and events ---------- */

/* SHA-256 (hex, 16 bytes' worth) of @obj's labels and annotations but controllers' own. */
static void meta_hash(struct jval meta, char out[33])
{
	json_t *labels = jval_to_json(jval_get(meta, "labels")),
	       *annotations = jval_to_json(jval_get(meta, "annotations"));
	unsigned char sum[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	json_t *both;
	char *text;

	for (size_t i = 0; CONTROLLER_ANNOTATIONS[i] != NULL; i++)
		json_object_del(annotations, CONTROLLER_ANNOTATIONS[i]);
	json_object_del(labels, LABEL_IGNORE_UPDATES);
	both = json_pack("[o?o?]", labels, annotations);
	text = json_dumps(both, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(both);
	EVP_Digest(text, strlen(text), sum, &n, EVP_sha256(), NULL);
	for (unsigned int i = 0; i < 16; i++)
		snprintf(out + i * 2, 3, "%02x", sum[i]);
	free(text);
}

/* The state of @obj an entry keeps: generation, resourceVersion, metadata hash, counts. */
static json_t *observe(const struct jdoc *obj, bool workload)
{
	struct jval root = jdoc_root(obj), meta = jval_get(root, "metadata");
	long long desired = jval_int(jval_path(root, "spec", "replicas", NULL), 1);
	char hash[33];
	json_t *o;

	meta_hash(meta, hash);
	o = json_pack("{s:I,s:s,s:s,s:b}", "g", jval_int(jval_get(meta, "generation"), 0), "rv",
	              jd_resource_version(obj) ?: "", "m", hash, "i",
	              jd_label(obj, LABEL_IGNORE_UPDATES) != NULL);
	if (workload) {
		if (jval_type(jval_path(root, "status", "desiredNumberScheduled", NULL)) != JT_NONE)
			desired = jval_int(
			        jval_path(root, "status", "desiredNumberScheduled", NULL), 0);
		json_object_set_new(o, "d", json_integer(desired));
		json_object_set_new(
		        o, "r",
		        json_integer(jval_int(jval_path(root, "status", "readyReplicas", NULL), 0) +
		                     jval_int(jval_path(root, "status", "numberReady", NULL), 0)));
	}
	return o;
}

/* Is @now, seen after the baseline @base, drift? */
static bool differs(const json_t *base, const json_t *now)
{
	unsigned long long b = strtoull(jx_str(base, "rv", NULL) ?: "0", NULL, 10),
	                   n = strtoull(jx_str(now, "rv", NULL) ?: "0", NULL, 10);
	long long g = json_integer_value(json_object_get(now, "g"));

	if (json_is_true(json_object_get(now, "i")) || (n != 0 && b != 0 && n <= b))
		return false; /* ignore-updates, or the run's own event */
	if (strcmp(jx_str(base, "m", NULL) ?: "", jx_str(now, "m", NULL) ?: "") != 0)
		return true;
	return g != 0 ? g != json_integer_value(json_object_get(base, "g"))
	              : strcmp(jx_str(base, "rv", NULL) ?: "", jx_str(now, "rv", NULL) ?: "") != 0;
}

/* An event of an object of @w's kind (@gone: deleted). Called on the watch's thread. */
static void on_event(struct sync_watch *w, const struct jdoc *obj, bool gone)
{
	struct tpl_helm *h = w->h;
	char objkey[1024];
	const char *relkey;
	json_t *entry, *now = gone ? NULL : observe(obj, w->workload);
	bool drift = false, counts = false;
	char key[400] = "";

	snprintf(objkey, sizeof(objkey), "%s/%s/%s", w->kind, jd_namespace(obj) ?: "",
	         jd_name(obj));
	pthread_mutex_lock(&h->lock);
	relkey = jx_str(h->objects, objkey, NULL);
	entry = relkey ? json_object_get(json_object_get(h->synced, relkey), objkey) : NULL;
	if (entry != NULL) {
		snprintf(key, sizeof(key), "%s", relkey);
		json_object_del(entry, "unseen"); /* a list's mark: it shows the object */
		drift = gone || (json_object_get(entry, "base") != NULL &&
		                 differs(json_object_get(entry, "base"), now));
		counts = w->workload && !gone && !json_equal(json_object_get(entry, "now"), now);
		if (now != NULL)
			json_object_set(entry, "now", now);
		if (drift)
			json_object_set_new(h->drifted, key, json_true());
	}
	pthread_mutex_unlock(&h->lock);
	json_decref(now);
	if (drift || counts)
		ctrl_enqueue(h->c, key);
}

static void on_add(const struct jdoc *obj, void *ud)
{
	on_event(ud, obj, false);
}

static void on_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	(void)old_obj;
	on_event(ud, new_obj, false);
}

static void on_delete(const struct jdoc *obj, void *ud)
{
	on_event(ud, obj, true);
}

/*
 * A list of @w's kind begins: the objects known now with a baseline are marked; one the list
 * does not show (its add clears the mark) was deleted meanwhile. Objects learned during the
 * list carry no mark: the list may have passed them.
 */
static void on_relist_begin(void *ud)
{
	struct sync_watch *w = ud;
	struct tpl_helm *h = w->h;
	size_t prefix = strlen(w->kind);
	const char *relkey, *objkey;
	json_t *objs, *entry;

	pthread_mutex_lock(&h->lock);
	json_object_foreach(h->synced, relkey, objs) {
		json_object_foreach(objs, objkey, entry) {
			if (strncmp(objkey, w->kind, prefix) == 0 && objkey[prefix] == '/' &&
			    json_object_get(entry, "base") != NULL)
				json_object_set_new(entry, "unseen", json_true());
		}
	}
	pthread_mutex_unlock(&h->lock);
}

static void on_relist_end(void *ud)
{
	struct sync_watch *w = ud;
	struct tpl_helm *h = w->h;
	const char *relkey, *objkey;
	json_t *objs, *entry, *gone = json_array(), *k;
	size_t i;

	pthread_mutex_lock(&h->lock);
	json_object_foreach(h->synced, relkey, objs) {
		json_object_foreach(objs, objkey, entry) {
			if (json_object_get(entry, "unseen") == NULL)
				continue;
			json_object_del(entry, "unseen");
			log_info("a helm release's object is gone (not in a list)", "{s:s,s:s}",
			         "release", relkey, "object", objkey);
			json_object_set_new(h->drifted, relkey, json_true());
			json_array_append_new(gone, json_string(relkey));
		}
	}
	pthread_mutex_unlock(&h->lock);
	json_array_foreach(gone, i, k)
		ctrl_enqueue(h->c, json_string_value(k));
	json_decref(gone);
}

/* ---------- the watches ---------- */

static bool is_workload(const char *kind)
{
	return strcmp(kind, "apps/v1/Deployment") == 0 ||
	       strcmp(kind, "apps/v1/StatefulSet") == 0 || strcmp(kind, "apps/v1/DaemonSet") == 0;
}

/* A store-less watch on @kind, once. Return: 0, or -ENOENT for a kind not served. */
static int watch_kind(struct templates *t, const char *kind)
{
	static const char *const keep[] = {"metadata.labels",
	                                   "metadata.annotations",
	                                   "metadata.generation",
	                                   "spec.replicas",
	                                   "status.readyReplicas",
	                                   "status.numberReady",
	                                   "status.desiredNumberScheduled",
	                                   NULL};
	struct tpl_helm *h = t->helm;
	const char *slash = strrchr(kind, '/');
	char api_version[TPL_FAIL_OBJECT_MAX], name[TPL_FAIL_OBJECT_MAX + 16];
	struct sync_watch *w;
	struct kc_gvr gvr;
	bool created, known;

	snprintf(api_version, sizeof(api_version), "%.*s", (int)(slash - kind), kind);
	if (disc_lookup_kind(t->disc, api_version, slash + 1, &gvr, NULL) != 0)
		return -ENOENT;
	/* one watch per kind, whatever the workers learning at once: its lists mark and clear */
	pthread_mutex_lock(&h->lock);
	known = json_object_get(h->watched, kind) != NULL;
	if (!known)
		json_object_set_new(h->watched, kind, json_true());
	pthread_mutex_unlock(&h->lock);
	if (known)
		return 0;
	w = xcalloc(1, sizeof(*w));
	w->h = h;
	w->workload = is_workload(kind);
	snprintf(w->kind, sizeof(w->kind), "%s", kind);
	snprintf(name, sizeof(name), "helm-sync:%s", kind);
	pthread_mutex_lock(&h->lock);
	w->next = h->watches;
	h->watches = w;
	pthread_mutex_unlock(&h->lock);
	mgr_informer_live(
	        ctrl_mgr(h->c),
	        &(struct inf_opts){
	                .gvr = gvr,
	                .metadata_only = !w->workload,
	                .keep = w->workload ? keep : NULL,
	                .no_store = true,
	                .name = name,
	                .handler = &(struct inf_handler){on_add, on_update, on_delete, w},
	                .relist = &(struct inf_relist_handler){on_relist_begin, on_relist_end, w}},
	        &created);
	return 0;
}

/* Managers that write a chart's objects besides Helm, and are not drift. */
static bool own_manager(const char *manager)
{
	return manager == NULL || strcmp(manager, "helm") == 0 ||
	       strncmp(manager, "kube-controller-manager", 23) == 0;
}

/*
 * Did another manager than Helm write @obj's fields (not a subresource) at or after @since
 * (seconds since the epoch)? An edit during the run, which the baseline would otherwise absorb.
 */
static bool foreign_edit_since(const json_t *obj, long long since)
{
	const json_t *entries = jx_get(obj, "metadata", "managedFields", NULL), *e;
	struct tm tm;
	size_t i;

	json_array_foreach(entries, i, e) {
		const char *when = jx_str(e, "time", NULL), *sub = jx_str(e, "subresource", NULL);

		memset(&tm, 0, sizeof(tm));
		if (own_manager(jx_str(e, "manager", NULL)) || (sub != NULL && *sub != '\0') ||
		    when == NULL || strptime(when, "%Y-%m-%dT%H:%M:%SZ", &tm) == NULL)
			continue;
		if ((long long)timegm(&tm) >= since)
			return true;
	}
	return false;
}

/*
 * The baseline of every object of @entries (objkey -> {kind}): one GET each. One another manager
 * wrote since @since is drift at once.
 */
static int take_baselines(struct rel_rec *r, json_t *entries, long long since, bool *drift)
{
	const char *objkey;
	json_t *entry;
	int rc = 0;

	json_object_foreach(entries, objkey, entry) {
		const char *kind = jx_str(entry, "kind", NULL), *slash = strrchr(kind, '/');
		char api_version[TPL_FAIL_OBJECT_MAX], ns[256], name[256];
		struct kc_resp resp = {0};
		struct kc_gvr gvr;

		snprintf(api_version, sizeof(api_version), "%.*s", (int)(slash - kind), kind);
		if (sscanf(objkey + strlen(kind) + 1, "%255[^/]/%255s", ns, name) != 2 ||
		    disc_lookup_kind(r->t->disc, api_version, slash + 1, &gvr, NULL) != 0)
			continue;
		if (kc_get(r->t->kc, &gvr, gvr.namespaced ? ns : NULL, name, &resp, NULL) == 0 &&
		    kc_resp_ok(&resp)) {
			struct jdoc *doc = NULL;

			if (jdoc_from_json(resp.body, NULL, &doc, NULL) != 0) {
				kc_resp_release(&resp);
				continue;
			}
			json_object_set_new(entry, "base", observe(doc, is_workload(kind)));
			if (foreign_edit_since(resp.body, since)) {
				log_info("a helm release's object was edited by another manager",
				         "{s:s,s:s}", "release", r->key, "object", objkey);
				*drift = true;
			}
			json_object_set(entry, "now", json_object_get(entry, "base"));
			jdoc_unref(doc);
		} else if (resp.http_status != 404) {
			rc = -EAGAIN;
		}
		kc_resp_release(&resp);
	}
	return rc;
}

int rel_sync_learn(struct rel_rec *r, const json_t *release, long long since)
{
	struct tpl_helm *h = r->h;
	bool drift = false;
	json_t *objs = helm_manifest_objects(jx_str(release, "manifest", NULL), r->ns), *entries,
	       *v;
	const char *objkey;
	int rc = 0;

	entries = json_object();
	json_object_foreach(objs, objkey, v) {
		if (watch_kind(r->t, json_string_value(v)) == 0)
			json_object_set_new(entries, objkey, json_pack("{s:O}", "kind", v));
	}
	json_decref(objs);
	rel_sync_forget(r);
	pthread_mutex_lock(&h->lock); /* interesting from now: events come before baselines */
	json_object_foreach(entries, objkey, v)
		json_object_set_new(h->objects, objkey, json_string(r->key));
	pthread_mutex_unlock(&h->lock);
	rc = take_baselines(r, entries, since, &drift);
	pthread_mutex_lock(&h->lock);
	json_object_set_new(h->synced, r->key, entries);
	if (drift)
		json_object_set_new(h->drifted, r->key, json_true());
	else
		json_object_del(h->drifted, r->key);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

void rel_sync_forget(struct rel_rec *r)
{
	struct tpl_helm *h = r->h;
	json_t *old;
	const char *objkey;
	json_t *v;

	pthread_mutex_lock(&h->lock);
	old = json_object_get(h->synced, r->key);
	json_object_foreach(old, objkey, v)
		json_object_del(h->objects, objkey);
	json_object_del(h->synced, r->key);
	json_object_del(h->drifted, r->key);
	pthread_mutex_unlock(&h->lock);
}

bool rel_sync_known(struct rel_rec *r)
{
	bool known;

	pthread_mutex_lock(&r->h->lock);
	known = json_object_get(r->h->synced, r->key) != NULL;
	pthread_mutex_unlock(&r->h->lock);
	return known;
}

bool rel_sync_drifted(struct rel_rec *r, long *wait_ms)
{
	struct tpl_helm *h = r->h;
	int64_t now = clock_mono_ms(), last;
	bool drifted;

	*wait_ms = 0;
	pthread_mutex_lock(&h->lock);
	drifted = json_is_true(json_object_get(h->drifted, r->key));
	last = json_integer_value(json_object_get(h->forced_ms, r->key));
	if (drifted && last != 0 && now - last < h->repair_every_ms) {
		*wait_ms = (long)(h->repair_every_ms - (now - last));
		drifted = false;
	} else if (drifted) {
		json_object_set_new(h->forced_ms, r->key, json_integer(now));
	}
	pthread_mutex_unlock(&h->lock);
	return drifted;
}

void rel_sync_counts(struct tpl_helm *h, const char *relkey, json_t *result)
{
	static const char *const kinds[] = {"apps/v1/Deployment", "apps/v1/StatefulSet",
	                                    "apps/v1/DaemonSet"};
	static const char *const fields[] = {"deployments", "statefulSets", "daemonSets"};
	long long ready[3] = {0}, desired[3] = {0};
	const char *objkey;
	json_t *entry;

	pthread_mutex_lock(&h->lock);
	json_object_foreach(json_object_get(h->synced, relkey), objkey, entry) {
		const char *kind = jx_str(entry, "kind", NULL);
		const json_t *now = json_object_get(entry, "now");

		for (size_t k = 0; k < 3; k++)
			if (kind != NULL && strcmp(kind, kinds[k]) == 0) {
				ready[k] += json_integer_value(json_object_get(now, "r"));
				desired[k] += json_integer_value(json_object_get(now, "d"));
			}
	}
	pthread_mutex_unlock(&h->lock);
	for (size_t k = 0; k < 3; k++)
		if (desired[k] != 0 || ready[k] != 0)
			json_object_set_new(
			        result, fields[k],
			        json_pack("{s:I,s:I}", "ready", ready[k], "desired", desired[k]));
}

void releases_sync_free(struct tpl_helm *h)
{
	while (h->watches != NULL) {
		struct sync_watch *next = h->watches->next;

		free(h->watches);
		h->watches = next;
	}
	json_decref(h->synced);
	json_decref(h->objects);
	json_decref(h->drifted);
	json_decref(h->forced_ms);
	json_decref(h->watched);
}
