/*
 * bare_sleep - the floor of the hibernation benchmark (bench/hibernation.py): a bare client that
 * knows the answer sends the writes landlord sends to put namespaces to sleep and wake them.
 *
 *   bare_sleep --kubeconfig K --ns-prefix P --namespaces N --deployments D --name SUP
 *              [--replicas R] [--qps Q --burst B] [--parallel J]
 *
 * Namespaces P0 .. P<N-1> each hold Deployments d0 .. d<D-1> at R replicas (default 1), without
 * annotations. Sleep, for each namespace in turn: one merge patch of the namespace (the label
 * landlord.dev/sleeping and the annotation landlord.dev/sleep-reserved, as landlord's mark),
 * then for each Deployment one JSON patch: a test of replicas, the annotations map with
 * landlord.dev/sleep-saved, replicas 0. Wake, for each namespace: for each Deployment one JSON
 * patch (a test of replicas 0 and of the saved value, its removal, replicas R), then one merge
 * patch removing the namespace's mark. J namespaces at a time (default 1; landlord's reconcile of
 * one supervisor handles 4 at once), each one's requests one after another, through the same
 * client library at the same client-side rate limit (landlord's defaults: 500 QPS, burst 1000).
 *
 * Prints one JSON line: {"sleep_seconds", "wake_seconds", "requests", "failures"}. Exit status 1
 * on any failure.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"

static const struct kc_gvr DEPLOYMENTS = {"apps", "v1", "deployments", "Deployment", true};

struct tool {
	const char *kubeconfig, *prefix, *name;
	int namespaces, deployments, replicas;
	double qps;
	int burst, parallel;
	struct kc_client *c;
	atomic_long requests, failures;
	atomic_int next; /* the next namespace to take */
	bool sleep;      /* what this pass does */
};

static void patch(struct tool *t, const struct kc_gvr *gvr, const char *ns, const char *name,
                  enum kc_patch_type type, json_t *take_body)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = kc_patch(t->c, gvr, ns, name, NULL, type, take_body, "landlord", &resp, &err);

	t->requests++;
	if (rc < 0 || !kc_resp_ok(&resp)) {
		t->failures++;
		log_kv(LOG_ERROR, "bare_sleep: a patch failed", "{s:s?,s:s,s:i,s:s}", "namespace",
		       ns, "name", name, "code", (int)resp.http_status, "error",
		       rc < 0 ? err.msg : resp.status.message);
	}
	kc_resp_release(&resp);
	json_decref(take_body);
}

static char *saved_text(const struct tool *t)
{
	char *text = NULL;

	if (asprintf(&text, "{\"supervisor\":\"%s\",\"field\":\"replicas\",\"value\":%d}", t->name,
	             t->replicas) < 0)
		abort();
	return text;
}

static void mark(struct tool *t, const char *ns, bool on)
{
	char reserved[512];

	snprintf(reserved, sizeof(reserved), "{\"supervisor\":\"%s\",\"used\":{}}", t->name);
	patch(t, &KC_NAMESPACES, NULL, ns, KC_PATCH_MERGE,
	      on ? json_pack("{s:{s:{s:s},s:{s:s}}}", "metadata", "labels", "landlord.dev/sleeping",
	                     "advisory", "annotations", "landlord.dev/sleep-reserved", reserved)
	         : json_pack("{s:{s:{s:n},s:{s:n}}}", "metadata", "labels", "landlord.dev/sleeping",
	                     "annotations", "landlord.dev/sleep-reserved"));
}

static void run_namespace(struct tool *t, int i, const char *text)
{
	static const char path[] = "/metadata/annotations/landlord.dev~1sleep-saved";
	char ns[256], name[64];

	snprintf(ns, sizeof(ns), "%s%d", t->prefix, i);
	if (t->sleep)
		mark(t, ns, true);
	for (int d = 0; d < t->deployments; d++) {
		snprintf(name, sizeof(name), "d%d", d);
		patch(t, &DEPLOYMENTS, ns, name, KC_PATCH_JSON,
		      t->sleep ? json_pack("[{s:s,s:s,s:i},{s:s,s:s,s:{s:s}},{s:s,s:s,s:i}]", "op",
		                           "test", "path", "/spec/replicas", "value", t->replicas,
		                           "op", "add", "path", "/metadata/annotations", "value",
		                           "landlord.dev/sleep-saved", text, "op", "replace",
		                           "path", "/spec/replicas", "value", 0)
		               : json_pack("[{s:s,s:s,s:s},{s:s,s:s},{s:s,s:s,s:i},"
		                           "{s:s,s:s,s:i}]",
		                           "op", "test", "path", path, "value", text, "op",
		                           "remove", "path", path, "op", "test", "path",
		                           "/spec/replicas", "value", 0, "op", "replace", "path",
		                           "/spec/replicas", "value", t->replicas));
	}
	if (!t->sleep)
		mark(t, ns, false);
}

static void *run_thread(void *arg)
{
	struct tool *t = arg;
	char *text = saved_text(t);
	int i;

	while ((i = atomic_fetch_add(&t->next, 1)) < t->namespaces)
		run_namespace(t, i, text);
	free(text);
	return NULL;
}

/* One pass over every namespace, t->parallel at a time. */
static void run(struct tool *t, bool sleep)
{
	pthread_t threads[64];
	int started = 0;

	t->sleep = sleep;
	atomic_store(&t->next, 0);
	while (started < t->parallel - 1 &&
	       pthread_create(&threads[started], NULL, run_thread, t) == 0)
		started++;
	run_thread(t);
	while (started > 0)
		pthread_join(threads[--started], NULL);
}

static int num(const char *s)
{
	return (int)strtol(s, NULL, 10);
}

static int parse_args(int argc, char **argv, struct tool *t)
{
	static const struct option opts[] = {{"kubeconfig", required_argument, NULL, 'k'},
	                                     {"ns-prefix", required_argument, NULL, 'p'},
	                                     {"namespaces", required_argument, NULL, 'n'},
	                                     {"deployments", required_argument, NULL, 'd'},
	                                     {"name", required_argument, NULL, 's'},
	                                     {"replicas", required_argument, NULL, 'r'},
	                                     {"qps", required_argument, NULL, 'q'},
	                                     {"burst", required_argument, NULL, 'b'},
	                                     {"parallel", required_argument, NULL, 'j'},
	                                     {NULL, 0, NULL, 0}};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			t->kubeconfig = optarg;
			break;
		case 'p':
			t->prefix = optarg;
			break;
		case 'n':
			t->namespaces = num(optarg);
			break;
		case 'd':
			t->deployments = num(optarg);
			break;
		case 's':
			t->name = optarg;
			break;
		case 'r':
			t->replicas = num(optarg);
			break;
		case 'q':
			t->qps = atof(optarg);
			break;
		case 'b':
			t->burst = num(optarg);
			break;
		case 'j':
			t->parallel = num(optarg);
			break;
		default:
			return -1;
		}
	}
	if (!t->kubeconfig || !t->prefix || !t->name || t->namespaces <= 0 || t->deployments <= 0 ||
	    t->parallel < 1 || t->parallel > 64) {
		fprintf(stderr, "usage: bare_sleep --kubeconfig K --ns-prefix P --namespaces N "
		                "--deployments D --name SUP [--replicas R] [--qps Q --burst B] "
		                "[--parallel 1-64]\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tool t = {.replicas = 1, .qps = 500, .burst = 1000, .parallel = 1};
	struct kcfg cfg = {0};
	struct ll_err err = {{0}};
	int64_t t0, t1, t2;
	int rc = parse_args(argc, argv, &t);

	if (rc < 0)
		return 1;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = kcfg_load_default(t.kubeconfig, NULL, &cfg, &err);
	if (rc == 0)
		rc = kc_client_new(
		        &cfg,
		        &(struct kc_opts){.qps = t.qps, .burst = t.burst, .client_name = "bare"},
		        &t.c, &err);
	if (rc < 0) {
		log_kv(LOG_ERROR, "bare_sleep: cannot start", "{s:s}", "error", err.msg);
	} else {
		t0 = clock_mono_ns();
		run(&t, true);
		t1 = clock_mono_ns();
		run(&t, false);
		t2 = clock_mono_ns();
		printf("{\"sleep_seconds\":%.4f,\"wake_seconds\":%.4f,\"requests\":%ld,"
		       "\"failures\":%ld}\n",
		       (double)(t1 - t0) / 1e9, (double)(t2 - t1) / 1e9, atomic_load(&t.requests),
		       atomic_load(&t.failures));
	}
	kc_client_free(t.c);
	kcfg_release(&cfg);
	curl_global_cleanup();
	return rc < 0 || atomic_load(&t.failures) ? 1 : 0;
}
