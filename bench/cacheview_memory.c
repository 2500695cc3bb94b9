/*
 * cacheview_memory.c - benchmark: what the informer-backed admission view (webhook/cacheview.h)
 * costs in memory with T tenants and N namespaces cached (default 1,000 and 10,000; target
 * issue 12: the webhook at <= 20 MiB RSS), and what a decision through it costs. Never in CI.
 *
 *   bench_cacheview_memory [--tenants T] [--namespaces N] [--decisions D]
 *
 * The fake API server runs in a child process (forked before any thread), seeded with T
 * Tenants (the rules switched on, a status), N Namespaces labelled for them, two Ingresses per
 * tenant (a host and a wildcard), a Plan and the LandlordConfig. This process is then what
 * `landlord webhook` is: a client, a manager running the view's informers with no controller,
 * and the view. Printed as one JSON object: RSS (VmRSS, after malloc_trim) before the
 * informers and once the view is synced, the heap in use (mallinfo2), each informer's
 * inf_bytes(), cacheview_bytes(), the time to sync, and the mean and p99 of D adm_decide()
 * calls on an Ingress CREATE (two hosts: the regex, the exact and wildcard host lookups).
 */
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/mem.h"
#include "fake_apiserver.h"
#include "kube/informer.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/manager.h"
#include "webhook/cacheview.h"

struct opts {
	int tenants, namespaces;
	long decisions;
	bool informers_only; /* the same informers without the view: the view's own share */
	bool compact;        /* cacheview_opts.compact: `landlord webhook` alone */
};

static void put_text(struct fake_api *f, const char *res, struct buf *b)
{
	json_error_t e;
	json_t *obj = json_loadb(b->p, b->len, 0, &e);

	if (obj == NULL) {
		fprintf(stderr, "bad JSON: %s: %.*s\n", e.text, (int)b->len, b->p);
		exit(2);
	}
	fake_api_put(f, res, obj);
	json_decref(obj);
	buf_reset(b);
}

static void seed_tenant(struct fake_api *f, struct buf *b, int t, int per)
{
	buf_appendf(b,
	            "{\"apiVersion\":\"landlord.dev/v1alpha1\",\"kind\":\"Tenant\",\"metadata\":{"
	            "\"name\":\"t%04d\",\"finalizers\":[\"landlord.dev/finalizer\"]},\"spec\":{"
	            "\"plan\":\"gold\",\"accessControl\":{\"owners\":{\"users\":[\"t%04d-owner\","
	            "\"t%04d-ops\"],\"groups\":[\"t%04d-devs\"]},\"editors\":{\"users\":["
	            "\"t%04d-dev\"]}},\"namespaces\":{\"withTenantPrefix\":[",
	            t, t, t, t, t);
	for (int i = 0; i < per; i++)
		buf_appendf(b, "%s\"ns%d\"", i ? "," : "", i);
	buf_appendf(b,
	            "]},\"allowed\":{\"registries\":[\"ghcr.io/t%04d\",\"docker.io/library\"],"
	            "\"storageClasses\":[\"fast\"],\"ingressClasses\":[\"nginx\"],"
	            "\"hosts\":{\"names\":[\"app.t%04d.example.com\",\"*.apps.t%04d.example.com\"],"
	            "\"regex\":\"([a-z0-9-]+|\\\\*)\\\\.t%04d\\\\.example\\\\.com\"}},"
	            "\"denied\":{\"serviceAccounts\":[\"builder\"]},\"services\":{\"nodePort\":"
	            "false}},\"status\":{\"observedGeneration\":1,\"conditions\":[{\"type\":"
	            "\"Ready\",\"status\":\"True\",\"reason\":\"Provisioned\",\"message\":"
	            "\"all namespaces provisioned\",\"lastTransitionTime\":"
	            "\"2026-11-01T00:00:00Z\"}],\"namespaces\":[",
	            t, t, t, t);
	for (int i = 0; i < per; i++)
		buf_appendf(b, "%s\"t%04d-ns%d\"", i ? "," : "", t, i);
	buf_append_str(b, "]}}");
	put_text(f, "tenants.landlord.dev", b);
}

static void seed_namespaces(struct fake_api *f, struct buf *b, int t, int per)
{
	for (int i = 0; i < per; i++) {
		buf_appendf(
		        b,
		        "{\"metadata\":{\"name\":\"t%04d-ns%d\",\"labels\":{"
		        "\"kubernetes.io/metadata.name\":\"t%04d-ns%d\",\"landlord.dev/tenant\":"
		        "\"t%04d\",\"landlord.dev/kind\":\"ns%d\",\"landlord.dev/managed-by\":"
		        "\"landlord\",\"pod-security.kubernetes.io/enforce\":\"restricted\"},"
		        "\"annotations\":{\"landlord.dev/managed-keys\":\"team\"}},\"spec\":{"
		        "\"finalizers\":[\"kubernetes\"]},\"status\":{\"phase\":\"Active\"}}",
		        t, i, t, i, t, i);
		put_text(f, "namespaces", b);
	}
}

static void seed_ingresses(struct fake_api *f, struct buf *b, int t)
{
	char host[128];

	for (int i = 0; i < 2; i++) {
		snprintf(host, sizeof(host), "%st%04d.example.com", i ? "*.apps." : "app.", t);
		buf_appendf(b,
		            "{\"metadata\":{\"namespace\":\"t%04d-ns0\",\"name\":\"web%d\"},"
		            "\"spec\":{\"ingressClassName\":\"nginx\",\"rules\":[{\"host\":\"%s\","
		            "\"http\":{\"paths\":[{\"path\":\"/\",\"pathType\":\"Prefix\","
		            "\"backend\":{\"service\":{\"name\":\"web\",\"port\":{\"number\":80}}}}"
		            "]}}],\"tls\":[{\"hosts\":[\"%s\"],\"secretName\":\"web-tls\"}]}}",
		            t, i, host, host);
		put_text(f, "ingresses.networking.k8s.io", b);
	}
}

/* Templates cached (whole) by the view: a small catalogue. */
#define BENCH_TEMPLATES 20

static void seed(struct fake_api *f, const struct opts *o)
{
	struct buf b = BUF_INIT(1u << 20);
	int per = o->namespaces / o->tenants;

	fake_api_add_resource(f, "landlord.dev", "v1alpha1", "tenants", "Tenant", false, true);
	fake_api_add_resource(f, "landlord.dev", "v1alpha1", "plans", "Plan", false, true);
	fake_api_add_resource(f, "landlord.dev", "v1alpha1", "landlordconfigs", "LandlordConfig",
	                      false, true);
	fake_api_add_resource(f, "networking.k8s.io", "v1", "ingresses", "Ingress", true, true);
	fake_api_add_resource(f, "landlord.dev", "v1alpha1", "templates", "Template", false, true);
	for (int i = 0; i < BENCH_TEMPLATES; i++) {
		buf_appendf(&b,
		            "{\"metadata\":{\"name\":\"tpl%d\"},\"spec\":{\"instantiableIn\":"
		            "{\"matchLabels\":{\"landlord.dev/kind\":\"ns%d\"}},\"parameters\":"
		            "[{\"name\":\"TEAM\",\"value\":\"web\",\"validation\":\"^[a-z]+$\"}],"
		            "\"resources\":{\"manifests\":[{\"apiVersion\":\"v1\",\"kind\":"
		            "\"ConfigMap\",\"metadata\":{\"name\":\"${{TEAM}}\"},\"data\":"
		            "{\"ns\":\"${namespace}\"}}]}}}",
		            i, i);
		put_text(f, "templates.landlord.dev", &b);
	}
	buf_append_str(&b, "{\"metadata\":{\"name\":\"gold\"},\"spec\":{\"maxNamespaces\":20}}");
	put_text(f, "plans.landlord.dev", &b);
	buf_append_str(&b, "{\"metadata\":{\"name\":\"landlord\"},\"spec\":{\"admission\":"
	                   "{\"modes\":{\"pods\":\"audit\"}}}}");
	put_text(f, "landlordconfigs.landlord.dev", &b);
	for (int t = 0; t < o->tenants; t++) {
		seed_tenant(f, &b, t, per);
		seed_namespaces(f, &b, t, per);
		seed_ingresses(f, &b, t);
	}
	buf_release(&b);
}

/* The child: serve the seeded fake until the parent closes @done. */
static void serve(const struct opts *o, int port_fd, int done_fd)
{
	struct fake_api *f = fake_api_start();
	int port;
	char c;

	seed(f, o);
	port = fake_api_port(f);
	if (write(port_fd, &port, sizeof(port)) != (ssize_t)sizeof(port))
		exit(2);
	while (read(done_fd, &c, 1) > 0)
		;
	fake_api_stop(f);
	exit(0);
}

/* A line of /proc/self/status in KiB: "VmRSS:", "RssAnon:" (private: the heap, stacks). */
static long status_kib(const char *field)
{
	size_t n = strlen(field);
	char line[256];
	long kib = -1;
	FILE *fp = fopen("/proc/self/status", "r");

	while (fp && fgets(line, sizeof(line), fp))
		if (strncmp(line, field, n) == 0)
			kib = strtol(line + n, NULL, 10);
	if (fp)
		fclose(fp);
	return kib;
}

static long rss_kib(void)
{
	return status_kib("VmRSS:");
}

static void *run(void *m)
{
	mgr_run(m);
	return NULL;
}

static struct kc_client *client_for(int port)
{
	char url[64];
	struct kcfg cfg = {.server = url};
	struct kc_opts ko = {.timeout_ms = 60000, .qps = -1, .client_name = "bench"};
	struct kc_client *c = NULL;
	struct ll_err err = {{0}};

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	if (kc_client_new(&cfg, &ko, &c, &err) != 0) {
		fprintf(stderr, "client: %s\n", err.msg);
		exit(2);
	}
	return c;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* D decisions of an Ingress CREATE in a random tenant's namespace: mean and p99 in ns. */
static void decide_bench(struct cacheview *cv, const struct opts *o, double *mean, long long *p99)
{
	long long *ns = xcalloc((size_t)o->decisions, sizeof(*ns)), sum = 0;
	struct adm_decision d;

	for (long i = 0; i < o->decisions; i++) {
		int t = (int)(i * 7919 % o->tenants);
		char text[1024];
		struct jdoc *doc = NULL;
		struct adm_request rq;
		long long t0;

		snprintf(
		        text, sizeof(text),
		        "{\"uid\":\"u\",\"operation\":\"CREATE\",\"namespace\":\"t%04d-ns1\","
		        "\"resource\":{\"group\":\"networking.k8s.io\",\"resource\":\"ingresses\"},"
		        "\"userInfo\":{\"username\":\"t%04d-dev\"},\"object\":{\"metadata\":{"
		        "\"name\":\"i\"},\"spec\":{\"ingressClassName\":\"nginx\",\"rules\":[{"
		        "\"host\":\"api.t%04d.example.com\"},{\"host\":\"*.x.t%04d.example.com\"}"
		        "]}}}",
		        t, t, t, t);
		if (jdoc_parse(text, strlen(text), NULL, &doc, NULL) != 0 ||
		    adm_request_read(jdoc_root(doc), &rq, NULL) != 0)
			exit(2);
		t0 = clock_mono_ns();
		adm_decide(&rq, cacheview_view(cv), &d);
		ns[i] = clock_mono_ns() - t0;
		sum += ns[i];
		jdoc_unref(doc);
	}
	qsort(ns, (size_t)o->decisions, sizeof(*ns), cmp_ll);
	*mean = (double)sum / (double)o->decisions;
	*p99 = ns[o->decisions * 99 / 100];
	free(ns);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {{"tenants", required_argument, NULL, 't'},
	                                      {"namespaces", required_argument, NULL, 'n'},
	                                      {"decisions", required_argument, NULL, 'd'},
	                                      {"informers-only", no_argument, NULL, 'i'},
	                                      {"compact", no_argument, NULL, 'c'},
	                                      {NULL, 0, NULL, 0}};
	int c;

	*o = (struct opts){1000, 10000, 100000, false, false};
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c == 't')
			o->tenants = (int)strtol(optarg, NULL, 10);
		else if (c == 'n')
			o->namespaces = (int)strtol(optarg, NULL, 10);
		else if (c == 'd')
			o->decisions = strtol(optarg, NULL, 10);
		else if (c == 'i')
			o->informers_only = true;
		else if (c == 'c')
			o->compact = true;
		else
			exit(2);
	}
	if (o->tenants <= 0 || o->namespaces < o->tenants || o->decisions <= 0)
		exit(2);
}

/* --informers-only: what the view's informers cost alone (the view's projections). */
static void informers_only(struct mgr *m, struct kc_client *c)
{
	const struct kc_gvr ing = {"networking.k8s.io", "v1", "ingresses", "Ingress", true};
	struct inf_opts io[] = {{.gvr = LL_TENANTS},
	                        {.gvr = LL_PLANS},
	                        {.gvr = KC_NAMESPACES, .metadata_only = true},
	                        {.gvr = LL_LANDLORDCONFIGS},
	                        {.gvr = ing, .keep = cacheview_route_keep}};
	struct inf *infs[5];
	pthread_t th;

	for (int i = 0; i < 5; i++)
		infs[i] = mgr_informer(m, &io[i]);
	pthread_create(&th, NULL, run, m);
	for (int i = 0; i < 5; i++)
		inf_wait_synced(infs[i], -1);
	malloc_trim(0);
	printf("{\"informers_only\":true,\"rss_kib_synced\":%ld,\"rss_anon_kib_synced\":%ld,"
	       "\"heap_in_use_kib\":%zu}\n",
	       rss_kib(), status_kib("RssAnon:"), mallinfo2().uordblks / 1024);
	mgr_request_stop(m);
	pthread_join(th, NULL);
	mgr_free(m);
	kc_client_free(c);
}

int main(int argc, char **argv)
{
	struct cacheview_opts vo = {.self_user = "system:serviceaccount:landlord-system:landlord"};
	int port_pipe[2], done_pipe[2], port = 0;
	struct mgr_opts mo = {.probe_port = -1};
	struct ll_err err = {{0}};
	struct cacheview *cv = NULL;
	long long t0, p99;
	long rss0, rss1;
	struct opts o;
	pthread_t th;
	double mean;
	pid_t child;

	parse_args(argc, argv, &o);
	vo.compact = o.compact;
	if (pipe(port_pipe) != 0 || pipe(done_pipe) != 0)
		return 2;
	child = fork();
	if (child == 0) {
		close(done_pipe[1]);
		serve(&o, port_pipe[1], done_pipe[0]);
	}
	close(done_pipe[0]);
	if (read(port_pipe[0], &port, sizeof(port)) != (ssize_t)sizeof(port))
		return 2;
	mgr_block_signals();
	mo.client = client_for(port);
	struct mgr *m = mgr_new(&mo);
	malloc_trim(0);
	rss0 = rss_kib();
	long anon0 = status_kib("RssAnon:");
	size_t heap0 = mallinfo2().uordblks;
	if (o.informers_only) {
		informers_only(m, mo.client);
		close(done_pipe[1]);
		waitpid(child, NULL, 0);
		return 0;
	}
	if (cacheview_new(m, &vo, &cv, &err) != 0) {
		fprintf(stderr, "cacheview_new: %s\n", err.msg);
		return 2;
	}
	t0 = clock_mono_ns();
	pthread_create(&th, NULL, run, m);
	while (!cacheview_synced(cv))
		clock_sleep_until(clock_mono_ns() + 10000000);
	double sync_s = (double)(clock_mono_ns() - t0) / 1e9;
	malloc_trim(0);
	rss1 = rss_kib();
	struct mallinfo2 mi = mallinfo2();
	printf("{\"compact\":%s,\"tenants\":%d,\"namespaces\":%d,\"ingresses\":%d,\"sync_s\":%.2f,"
	       "\"rss_kib_before\":%ld,\"rss_kib_synced\":%ld,\"rss_anon_kib_before\":%ld,"
	       "\"rss_anon_kib_synced\":%ld,\"heap_in_use_kib\":%zu,"
	       "\"informer_bytes\":%zu,"
	       "\"cacheview_bytes\":%zu,\"heap_before_kib\":%zu,",
	       o.compact ? "true" : "false", o.tenants, o.namespaces, 2 * o.tenants, sync_s, rss0,
	       rss1, anon0, status_kib("RssAnon:"), mi.uordblks / 1024,
	       cacheview_informer_bytes(cv), cacheview_bytes(cv), heap0 / 1024);
	decide_bench(cv, &o, &mean, &p99);
	malloc_trim(0);
	printf("\"decide_mean_us\":%.2f,\"decide_p99_us\":%.2f,\"rss_kib_after_decisions\":%ld}\n",
	       mean / 1000, (double)p99 / 1000, rss_kib());
	mgr_request_stop(m);
	pthread_join(th, NULL);
	cacheview_free(cv);
	mgr_free(m);
	kc_client_free(mo.client);
	close(done_pipe[1]);
	waitpid(child, NULL, 0);
	return 0;
}
