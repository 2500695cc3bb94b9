/*
 * bare_apply - the floors of the templates benchmark (bench/templates.py): what a bare client
 * that knows the answer does where landlord renders a TemplateGroupInstance.
 *
 *   bare_apply --kubeconfig K --mode floor|drift --objects FILE --name TGI
 *              [--ns-prefix P --namespaces N] [--threads T] [--prune] [--reverts R]
 *              [--timeout-seconds S]
 *
 * FILE is a JSON array of the objects one namespace renders (apiVersion, kind, metadata.name,
 * the rest; no namespace). Every object gets the labels landlord puts on a TGI's objects
 * (landlord.dev/tgi: TGI, app.kubernetes.io/managed-by: landlord) and is applied with
 * landlord's field manager for it, landlord/tgi/TGI, never forced.
 *
 * --mode floor: for each namespace P0 .. P<N-1>, what landlord's TGI reconcile sends there
 * (src/templates/apply.c tpl_apply): every object's dry run (dryRun=All), then every object's
 * apply, in FILE's order; with --prune, then one metadata-only LIST per kind by the TGI's label
 * (tpl_prune). T threads take namespaces in turn (landlord: one worker per TGI, so T = 1).
 * Prints one JSON line: seconds from the first request to the last answer, requests, failures.
 *
 * --mode drift: one watch per kind of FILE's objects, by the label landlord.dev/tgi=TGI across
 * namespaces; each DELETED event of one of FILE's objects is answered with that object's apply
 * in the event's namespace, at once, on the watch's thread. After R reverts (or S seconds) it
 * prints one JSON line with each revert's latency, from the event's arrival to the apply's
 * answer, in microseconds.
 *
 * Exit status 1 on any failure.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"

#define MAX_OBJECTS 64
#define MAX_THREADS 32
#define MAX_REVERTS 100000
#define RETRIES     8

static const struct kc_gvr ROLES = {"rbac.authorization.k8s.io", "v1", "roles", "Role", true};
static const struct kc_gvr SERVICES = {"", "v1", "services", "Service", true};

/* The kinds a benchmark's Template may render (the tool has no discovery). */
static const struct kc_gvr *const KINDS[] = {
        &KC_CONFIGMAPS,      &KC_SECRETS, &KC_SERVICEACCOUNTS, &KC_LIMITRANGES, &KC_ROLEBINDINGS,
        &KC_NETWORKPOLICIES, &ROLES,      &SERVICES,
};

struct tool {
	const char *kubeconfig, *mode, *objects_path, *name, *ns_prefix;
	int namespaces, threads, reverts, timeout_s;
	bool prune;
	json_t *objects;                         /* labelled, in FILE's order */
	const struct kc_gvr *gvr[MAX_OBJECTS];   /* of each object */
	const struct kc_gvr *kinds[MAX_OBJECTS]; /* distinct */
	size_t nobjects, nkinds;
	char manager[160], selector[160];
	struct kc_client *c;
	atomic_int next_ns;
	atomic_long requests, failures;
	atomic_int cancel;
	int64_t *lat_us; /* drift: per revert */
	int nlat;
};

static const struct kc_gvr *gvr_of(const json_t *obj)
{
	const char *kind = jx_str(obj, "kind", NULL);

	for (size_t i = 0; kind && i < sizeof(KINDS) / sizeof(KINDS[0]); i++)
		if (strcmp(KINDS[i]->kind, kind) == 0)
			return KINDS[i];
	return NULL;
}

static void fail(struct tool *t, const char *what, const char *ns, const char *name,
                 const struct kc_resp *r, const struct ll_err *err)
{
	atomic_fetch_add(&t->failures, 1);
	log_kv(LOG_ERROR, "bare_apply: failed", "{s:s,s:s,s:s,s:i,s:s}", "what", what, "namespace",
	       ns ? ns : "", "name", name ? name : "", "code", r ? (int)r->http_status : 0,
	       "message", r ? r->status.message : err->msg);
}

/* One apply (or dry run) of object @i in @ns, retried on 429, 5xx and timeouts. */
static int apply_obj(struct tool *t, size_t i, const char *ns, bool dry_run)
{
	const json_t *obj = json_array_get(t->objects, i);
	struct kc_apply_opts o = {.field_manager = t->manager, .dry_run = dry_run};
	struct kc_resp r = {0};
	struct ll_err err = {{0}};
	int rc = -EIO;

	for (int attempt = 0; attempt < RETRIES; attempt++) {
		kc_resp_release(&r);
		rc = kc_apply_with(t->c, t->gvr[i], ns, jx_str(obj, "metadata", "name", NULL), obj,
		                   &o, &r, &err);
		atomic_fetch_add(&t->requests, 1);
		if (rc == 0 && kc_resp_ok(&r))
			break;
		if (rc != -ETIMEDOUT &&
		    !(rc == 0 && (r.http_status == 429 || r.http_status >= 500)))
			break;
		usleep(100000u << (attempt < 4 ? attempt : 4));
	}
	if (rc != 0 || !kc_resp_ok(&r)) {
		fail(t, dry_run ? "dry run" : "apply", ns, jx_str(obj, "metadata", "name", NULL),
		     rc == 0 ? &r : NULL, &err);
		rc = -EIO;
	}
	kc_resp_release(&r);
	return rc;
}

static int count_item(json_t *item, void *ud)
{
	(void)item;
	(void)ud;
	return 0;
}

/* tpl_prune's reads: one metadata-only LIST of each kind in @ns by the TGI's label. */
static int prune_lists(struct tool *t, const char *ns)
{
	struct kc_list_opts lo = {.label_selector = t->selector, .accept = KC_ACCEPT_METADATA};

	for (size_t k = 0; k < t->nkinds; k++) {
		struct kc_resp r = {0};
		struct ll_err err = {{0}};
		int rc = kc_list(t->c, t->kinds[k], ns, &lo, count_item, NULL, NULL, &r, &err);

		atomic_fetch_add(&t->requests, 1);
		if (rc != 0 || !kc_resp_ok(&r))
			fail(t, "list", ns, t->kinds[k]->resource, rc == 0 ? &r : NULL, &err);
		kc_resp_release(&r);
	}
	return 0;
}

static void *floor_worker(void *ud)
{
	struct tool *t = ud;
	char ns[256];
	int i;

	while ((i = atomic_fetch_add(&t->next_ns, 1)) < t->namespaces) {
		snprintf(ns, sizeof(ns), "%s%d", t->ns_prefix, i);
		for (size_t k = 0; k < t->nobjects; k++)
			if (apply_obj(t, k, ns, true) != 0)
				goto next;
		for (size_t k = 0; k < t->nobjects; k++)
			if (apply_obj(t, k, ns, false) != 0)
				goto next;
		if (t->prune)
			prune_lists(t, ns);
	next:;
	}
	return NULL;
}

static int run_floor(struct tool *t)
{
	pthread_t th[MAX_THREADS];
	int64_t t0 = clock_mono_ns(), t1;

	for (int i = 0; i < t->threads; i++)
		pthread_create(&th[i], NULL, floor_worker, t);
	for (int i = 0; i < t->threads; i++)
		pthread_join(th[i], NULL);
	t1 = clock_mono_ns();
	printf("{\"mode\":\"floor\",\"namespaces\":%d,\"objects\":%zu,\"threads\":%d,"
	       "\"prune\":%s,\"seconds\":%.4f,\"requests\":%ld,\"failures\":%ld}\n",
	       t->namespaces, t->nobjects, t->threads, t->prune ? "true" : "false",
	       (double)(t1 - t0) / 1e9, atomic_load(&t->requests), atomic_load(&t->failures));
	return atomic_load(&t->failures) ? -EIO : 0;
}

/* ---------- drift ---------- */

static long index_of(const struct tool *t, const char *kind, const char *name)
{
	for (size_t i = 0; i < t->nobjects; i++) {
		const json_t *o = json_array_get(t->objects, i);
		const char *k = jx_str(o, "kind", NULL);

		if (k && strcmp(k, kind) == 0 &&
		    strcmp(jx_str(o, "metadata", "name", NULL), name) == 0)
			return (long)i;
	}
	return -1;
}

struct watch_ctx {
	struct tool *t;
	const struct kc_gvr *gvr;
	pthread_mutex_t *mu;
};

static int on_event(enum watch_event_type type, json_t *obj, void *ud)
{
	struct watch_ctx *w = ud;
	struct tool *t = w->t;
	int64_t t0 = clock_mono_ns();
	const char *ns = jx_str(obj, "metadata", "namespace", NULL),
	           *name = jx_str(obj, "metadata", "name", NULL);
	long i;

	if (type != WATCH_DELETED || ns == NULL || name == NULL)
		return 0;
	i = index_of(t, w->gvr->kind, name);
	if (i < 0 || apply_obj(t, (size_t)i, ns, false) != 0)
		return 0;
	pthread_mutex_lock(w->mu);
	if (t->nlat < MAX_REVERTS)
		t->lat_us[t->nlat++] = (clock_mono_ns() - t0) / 1000;
	if (t->nlat >= t->reverts)
		atomic_store(&t->cancel, 1);
	pthread_mutex_unlock(w->mu);
	return 0;
}

static void *watcher(void *ud)
{
	struct watch_ctx *w = ud;
	struct kc_watch_opts wo = {.label_selector = w->t->selector,
	                           .timeout_seconds = w->t->timeout_s + 60,
	                           .cancel = &w->t->cancel};
	struct kc_resp r = {0};
	struct ll_err err = {{0}};
	int rc = kc_watch(w->t->c, w->gvr, NULL, &wo, on_event, w, &r, &err);

	if (rc != -ECANCELED)
		fail(w->t, "watch", NULL, w->gvr->resource, rc == 0 ? &r : NULL, &err);
	kc_resp_release(&r);
	return NULL;
}

static void print_drift(const struct tool *t)
{
	printf("{\"mode\":\"drift\",\"reverts\":%d,\"failures\":%ld,\"latency_us\":[", t->nlat,
	       atomic_load(&t->failures));
	for (int i = 0; i < t->nlat; i++)
		printf("%s%lld", i ? "," : "", (long long)t->lat_us[i]);
	printf("]}\n");
}

static int run_drift(struct tool *t)
{
	pthread_t th[MAX_OBJECTS];
	struct watch_ctx w[MAX_OBJECTS];
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	int64_t deadline = clock_mono_ms() + (int64_t)t->timeout_s * 1000;

	t->lat_us = xcalloc(MAX_REVERTS, sizeof(*t->lat_us));
	for (size_t k = 0; k < t->nkinds; k++) {
		w[k] = (struct watch_ctx){.t = t, .gvr = t->kinds[k], .mu = &mu};
		pthread_create(&th[k], NULL, watcher, &w[k]);
	}
	printf("{\"mode\":\"drift\",\"watching\":%zu}\n", t->nkinds);
	fflush(stdout);
	while (!atomic_load(&t->cancel) && clock_mono_ms() < deadline)
		usleep(20000);
	atomic_store(&t->cancel, 1);
	for (size_t k = 0; k < t->nkinds; k++)
		pthread_join(th[k], NULL);
	print_drift(t);
	free(t->lat_us);
	return atomic_load(&t->failures) || t->nlat < t->reverts ? -EIO : 0;
}

/* ---------- setup ---------- */

static void add_kind(struct tool *t, const struct kc_gvr *g)
{
	for (size_t k = 0; k < t->nkinds; k++)
		if (t->kinds[k] == g)
			return;
	t->kinds[t->nkinds++] = g;
}

/* FILE's objects, labelled as landlord labels a TGI's; their kinds. */
static int load_objects(struct tool *t)
{
	json_error_t jerr;
	json_t *o;
	size_t i;

	t->objects = json_load_file(t->objects_path, 0, &jerr);
	if (!json_is_array(t->objects) || json_array_size(t->objects) == 0 ||
	    json_array_size(t->objects) > MAX_OBJECTS) {
		fprintf(stderr, "bare_apply: %s: not an array of 1 to %d objects\n",
		        t->objects_path, MAX_OBJECTS);
		return -EINVAL;
	}
	json_array_foreach(t->objects, i, o) {
		json_t *meta = json_object_get(o, "metadata"), *labels;

		t->gvr[i] = gvr_of(o);
		if (t->gvr[i] == NULL || !json_is_object(meta)) {
			fprintf(stderr, "bare_apply: object %zu: unknown kind or no metadata\n", i);
			return -EINVAL;
		}
		add_kind(t, t->gvr[i]);
		labels = json_object_get(meta, "labels");
		if (!json_is_object(labels)) {
			labels = json_object();
			json_object_set_new(meta, "labels", labels);
		}
		json_object_set_new(labels, "landlord.dev/tgi", json_string(t->name));
		json_object_set_new(labels, "app.kubernetes.io/managed-by",
		                    json_string("landlord"));
	}
	t->nobjects = json_array_size(t->objects);
	snprintf(t->manager, sizeof(t->manager), "landlord/tgi/%s", t->name);
	snprintf(t->selector, sizeof(t->selector), "landlord.dev/tgi=%s", t->name);
	return 0;
}

static int num(const char *s)
{
	return (int)strtol(s, NULL, 10);
}

static int parse_args(int argc, char **argv, struct tool *t)
{
	static const struct option opts[] = {{"kubeconfig", required_argument, 0, 'k'},
	                                     {"mode", required_argument, 0, 'm'},
	                                     {"objects", required_argument, 0, 'o'},
	                                     {"name", required_argument, 0, 'n'},
	                                     {"ns-prefix", required_argument, 0, 'p'},
	                                     {"namespaces", required_argument, 0, 'N'},
	                                     {"threads", required_argument, 0, 't'},
	                                     {"prune", no_argument, 0, 'P'},
	                                     {"reverts", required_argument, 0, 'r'},
	                                     {"timeout-seconds", required_argument, 0, 's'},
	                                     {0, 0, 0, 0}};
	int ch;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			t->kubeconfig = optarg;
			break;
		case 'm':
			t->mode = optarg;
			break;
		case 'o':
			t->objects_path = optarg;
			break;
		case 'n':
			t->name = optarg;
			break;
		case 'p':
			t->ns_prefix = optarg;
			break;
		case 'N':
			t->namespaces = num(optarg);
			break;
		case 't':
			t->threads = num(optarg);
			break;
		case 'P':
			t->prune = true;
			break;
		case 'r':
			t->reverts = num(optarg);
			break;
		case 's':
			t->timeout_s = num(optarg);
			break;
		default:
			return -EINVAL;
		}
	}
	if (!t->mode || !t->objects_path || !t->name || t->threads < 1 ||
	    t->threads > MAX_THREADS || (strcmp(t->mode, "floor") == 0 && !t->ns_prefix) ||
	    (strcmp(t->mode, "floor") != 0 && strcmp(t->mode, "drift") != 0)) {
		fprintf(stderr,
		        "usage: bare_apply --kubeconfig K --mode floor|drift --objects FILE "
		        "--name TGI [--ns-prefix P --namespaces N] [--threads T] [--prune] "
		        "[--reverts R] [--timeout-seconds S]\n");
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tool t = {.threads = 1, .reverts = 100, .timeout_s = 600};
	struct kcfg cfg = {0};
	struct ll_err err = {{0}};
	int rc = parse_args(argc, argv, &t);

	if (rc == 0)
		rc = load_objects(&t);
	if (rc < 0) {
		json_decref(t.objects);
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = kcfg_load_default(t.kubeconfig, NULL, &cfg, &err);
	if (rc == 0)
		rc = kc_client_new(&cfg, &(struct kc_opts){.qps = -1, .client_name = "bare"}, &t.c,
		                   &err);
	if (rc < 0)
		log_kv(LOG_ERROR, "bare_apply: cannot start", "{s:s}", "error", err.msg);
	else if (strcmp(t.mode, "floor") == 0)
		rc = run_floor(&t);
	else
		rc = run_drift(&t);
	kc_client_free(t.c);
	kcfg_release(&cfg);
	json_decref(t.objects);
	curl_global_cleanup();
	return rc < 0 ? 1 : 0;
}
