/*
 * admission_latency.c - benchmark: the admission decision (tenancy/admit.h) in process, on a view
 * of T tenants with N namespaces in all (default 1,000 and 10,000) and two hosts in use per
 * tenant, one of them a wildcard. Run by bench/admission_latency.py; never in CI.
 *
 *   bench_admission_latency [--tenants T] [--namespaces N] [--iterations I] [--seed X]
 *
 * Each tenant has the rules switched on: users, a group, registries, classes, pull policies, a
 * host policy of names and a regex, a denied ServiceAccount, a services policy. The requests,
 * one per kind and tenant, are built before timing: a Pod of three containers (allowed), a Pod
 * whose image is refused, a Deployment, a RoleBinding of four subjects, an Ingress of two hosts,
 * an HTTPRoute with a wildcard hostname (the overlap search scans every host in use), a NodePort
 * Service (refused), a ConfigMap (cordon check only), a Tenant update (claims checked, host
 * policy compiled). I iterations pick a kind and a tenant at random and time with the monotonic
 * clock (a) adm_decide() on the parsed request, and (b) the in-process path a review takes:
 * parsing the AdmissionReview body into a document, adm_request_read() and adm_decide().
 * Prints one JSON object on stdout: per kind and overall, p50, p99, p99.9 and max in
 * microseconds for (a) and (b), and the time to build the view.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/jdoc.h"
#include "base/mem.h"
#include "tenancy/admit.h"
#include "tenancy/admit_memview.h"

enum kind {
	K_POD,
	K_POD_DENIED,
	K_DEPLOYMENT,
	K_ROLEBINDING,
	K_INGRESS,
	K_HTTPROUTE_WILDCARD,
	K_SERVICE_DENIED,
	K_CONFIGMAP,
	K_TENANT_UPDATE,
	K_N,
};

static const char *const KIND_NAMES[K_N] = {
        [K_POD] = "pod",
        [K_POD_DENIED] = "pod_denied",
        [K_DEPLOYMENT] = "deployment",
        [K_ROLEBINDING] = "rolebinding",
        [K_INGRESS] = "ingress",
        [K_HTTPROUTE_WILDCARD] = "httproute_wildcard",
        [K_SERVICE_DENIED] = "service_denied",
        [K_CONFIGMAP] = "configmap",
        [K_TENANT_UPDATE] = "tenant_update",
};

struct opts {
	int tenants, namespaces;
	long iterations;
	uint64_t seed;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void tenant_json(struct buf *b, int t, int per_tenant)
{
	buf_appendf(b,
	            "{\"metadata\":{\"name\":\"t%04d\"},\"spec\":{\"plan\":\"gold\","
	            "\"accessControl\":{\"owners\":{\"users\":[\"t%04d-owner\",\"t%04d-ops\"],"
	            "\"groups\":[\"t%04d-devs\"]},\"editors\":{\"users\":[\"t%04d-dev\"]}},"
	            "\"namespaces\":{\"withTenantPrefix\":[",
	            t, t, t, t, t);
	for (int i = 0; i < per_tenant; i++)
		buf_appendf(b, "%s\"ns%d\"", i ? "," : "", i);
	buf_appendf(b,
	            "]},\"allowed\":{\"registries\":[\"ghcr.io/t%04d\",\"docker.io/library\","
	            "\"registry.local:5000/t%04d\"],\"storageClasses\":[\"fast\"],"
	            "\"ingressClasses\":[\"nginx\"],\"priorityClasses\":[\"low\",\"\"],"
	            "\"runtimeClasses\":[\"gvisor\"],\"imagePullPolicies\":[\"IfNotPresent\","
	            "\"Always\"],\"hosts\":{\"names\":[\"app.t%04d.example.com\","
	            "\"*.apps.t%04d.example.com\"],\"regex\":\"([a-z0-9-]+|\\\\*)\\\\.t%04d\\\\."
	            "example\\\\.com\"}},\"denied\":{\"serviceAccounts\":[\"builder\"]},"
	            "\"services\":{\"nodePort\":false,\"externalName\":false}}}",
	            t, t, t, t, t);
}

static json_t *view_doc(const struct opts *o)
{
	struct buf b = BUF_INIT(1u << 30);
	int per = o->namespaces / o->tenants;
	json_t *doc;

	buf_append_str(&b, "{\"self\":\"system:serviceaccount:landlord-system:landlord\","
	                   "\"config\":{\"spec\":{\"privileged\":{\"users\":[\"platform-admin\"],"
	                   "\"groups\":[\"platform-team\"]}}},\"plans\":[\"gold\"],\"tenants\":[");
	for (int t = 0; t < o->tenants; t++) {
		buf_append_str(&b, t ? "," : "");
		tenant_json(&b, t, per);
	}
	buf_append_str(&b, "],\"namespaces\":[");
	for (int t = 0; t < o->tenants; t++)
		for (int i = 0; i < per; i++)
			buf_appendf(&b,
			            "%s{\"metadata\":{\"name\":\"t%04d-ns%d\",\"labels\":{"
			            "\"landlord.dev/tenant\":\"t%04d\"}}}",
			            t || i ? "," : "", t, i, t);
	buf_append_str(&b, "],\"hosts\":[");
	for (int t = 0; t < o->tenants; t++)
		buf_appendf(&b,
		            "%s{\"host\":\"app.t%04d.example.com\",\"tenant\":\"t%04d\"},"
		            "{\"host\":\"*.apps.t%04d.example.com\",\"tenant\":\"t%04d\"}",
		            t ? "," : "", t, t, t, t);
	buf_append_str(&b, "]}");
	doc = json_loadb(b.p, b.len, 0, NULL);
	buf_release(&b);
	return doc;
}

#define POD_SPEC                                                                              \
	"{\"containers\":[{\"name\":\"api\",\"image\":\"ghcr.io/t%04d/api:1.4\","             \
	"\"imagePullPolicy\":\"IfNotPresent\"},{\"name\":\"proxy\",\"image\":\"nginx:1.25\"," \
	"\"imagePullPolicy\":\"IfNotPresent\"},{\"name\":\"log\",\"image\":"                  \
	"\"registry.local:5000/t%04d/log@sha256:"                                             \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","                 \
	"\"imagePullPolicy\":\"IfNotPresent\"}],\"initContainers\":[{\"name\":\"init\","      \
	"\"image\":\"ghcr.io/t%04d/init:2\",\"imagePullPolicy\":\"IfNotPresent\"}],"          \
	"\"priorityClassName\":\"low\",\"runtimeClassName\":\"gvisor\","                      \
	"\"serviceAccountName\":\"app\"}"

/* The request of @k for tenant @t: "op", "resource", then the rest of the request members. */
static void request_json(struct buf *b, enum kind k, int t)
{
	switch (k) {
	case K_POD:
	case K_POD_DENIED:
		buf_appendf(b,
		            "\"CREATE\",\"resource\":{\"group\":\"\",\"resource\":\"pods\"},"
		            "\"object\":{\"metadata\":{\"name\":\"p\"},\"spec\":" POD_SPEC "}",
		            k == K_POD ? t : (t + 1) % 10000, t, t);
		break;
	case K_DEPLOYMENT:
		buf_appendf(b,
		            "\"CREATE\",\"resource\":{\"group\":\"apps\",\"resource\":"
		            "\"deployments\"},\"object\":{\"metadata\":{\"name\":\"d\"},\"spec\":{"
		            "\"template\":{\"spec\":" POD_SPEC "}}}",
		            t, t, t);
		break;
	case K_ROLEBINDING:
		buf_appendf(b,
		            "\"CREATE\",\"resource\":{\"group\":\"rbac.authorization.k8s.io\","
		            "\"resource\":\"rolebindings\"},\"object\":{\"metadata\":{\"name\":"
		            "\"rb\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"t%04d-dev\"},"
		            "{\"kind\":\"Group\",\"name\":\"t%04d-devs\"},{\"kind\":"
		            "\"ServiceAccount\",\"name\":\"ci\"},{\"kind\":\"Group\",\"name\":"
		            "\"system:serviceaccounts:t%04d-ns1\"}]}",
		            t, t, t);
		break;
	case K_INGRESS:
		buf_appendf(b,
		            "\"CREATE\",\"resource\":{\"group\":\"networking.k8s.io\",\"resource\":"
		            "\"ingresses\"},\"object\":{\"metadata\":{\"name\":\"i\"},\"spec\":{"
		            "\"ingressClassName\":\"nginx\",\"rules\":[{\"host\":"
		            "\"api.t%04d.example.com\"},{\"host\":\"web.t%04d.example.com\"}],"
		            "\"tls\":[{\"hosts\":[\"api.t%04d.example.com\"]}]}}",
		            t, t, t);
		break;
	case K_HTTPROUTE_WILDCARD:
		buf_appendf(
		        b,
		        "\"CREATE\",\"resource\":{\"group\":\"gateway.networking.k8s.io\","
		        "\"resource\":\"httproutes\"},\"object\":{\"metadata\":{\"name\":\"r\"},"
		        "\"spec\":{\"hostnames\":[\"*.t%04d.example.com\"]}}",
		        t);
		break;
	case K_SERVICE_DENIED:
		buf_append_str(b,
		               "\"CREATE\",\"resource\":{\"group\":\"\",\"resource\":\"services\"},"
		               "\"object\":{\"metadata\":{\"name\":\"s\"},\"spec\":{\"type\":"
		               "\"NodePort\"}}");
		break;
	case K_CONFIGMAP:
		buf_append_str(b, "\"CREATE\",\"resource\":{\"group\":\"\",\"resource\":"
		                  "\"configmaps\"},\"object\":{\"metadata\":{\"name\":\"c\"}}");
		break;
	default:
		buf_append_str(b,
		               "\"UPDATE\",\"resource\":{\"group\":\"landlord.dev\",\"resource\":"
		               "\"tenants\"},\"object\":");
		tenant_json(b, t, 10);
		break;
	}
}

/* An AdmissionReview body for kind @k and tenant @t into @out (NUL-terminated). */
static void review_body(struct buf *out, enum kind k, int t)
{
	char ns[32] = "";

	if (k != K_TENANT_UPDATE)
		snprintf(ns, sizeof(ns), "t%04d-ns%d", t, (int)(rnd() % 10));
	buf_appendf(out,
	            "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	            "\"request\":{\"uid\":\"u\",\"namespace\":\"%s\",\"userInfo\":{"
	            "\"username\":\"t%04d-dev\",\"groups\":[\"t%04d-devs\","
	            "\"system:authenticated\"]},\"operation\":",
	            ns, t, t);
	request_json(out, k, t);
	buf_append_str(out, "}}");
}

/* One parsed review: its body and its document. */
struct review {
	char *body;
	size_t len;
	struct jdoc *doc;
	struct adm_request rq;
};

static int64_t decide_once(const struct review *r, const struct adm_view *view, bool parse,
                           bool *allowed)
{
	static struct adm_decision d;
	struct adm_request rq;
	struct jdoc *doc = NULL;
	int64_t t0 = clock_mono_ns();

	if (parse) {
		if (jdoc_parse(r->body, r->len, NULL, &doc, NULL) != 0 ||
		    adm_request_read(jval_get(jdoc_root(doc), "request"), &rq, NULL) != 0)
			abort();
		adm_decide(&rq, view, &d);
	} else {
		adm_decide(&r->rq, view, &d);
	}
	t0 = clock_mono_ns() - t0;
	jdoc_unref(doc);
	*allowed = d.allowed;
	return t0;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void report(const char *name, int64_t *ns, size_t n, bool comma)
{
	qsort(ns, n, sizeof(*ns), cmp64);
	printf("%s\"%s\":{\"n\":%zu,\"p50_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,"
	       "\"max_us\":%.2f}",
	       comma ? "," : "", name, n, n ? ns[n / 2] / 1e3 : 0, n ? ns[n * 99 / 100] / 1e3 : 0,
	       n ? ns[n * 999 / 1000] / 1e3 : 0, n ? ns[n - 1] / 1e3 : 0);
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option long_opts[] = {
	        {"tenants", required_argument, NULL, 't'},
	        {"namespaces", required_argument, NULL, 'n'},
	        {"iterations", required_argument, NULL, 'i'},
	        {"seed", required_argument, NULL, 's'},
	        {NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct opts){.tenants = 1000, .namespaces = 10000, .iterations = 200000};
	while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (c == 't')
			o->tenants = (int)strtol(optarg, NULL, 10);
		else if (c == 'n')
			o->namespaces = (int)strtol(optarg, NULL, 10);
		else if (c == 'i')
			o->iterations = strtol(optarg, NULL, 10);
		else if (c == 's')
			o->seed = strtoull(optarg, NULL, 0);
		else
			exit(2);
	}
	if (o->tenants < 1 || o->tenants > 9999 || o->namespaces < o->tenants || o->iterations < 1)
		exit(2);
	if (o->seed)
		rng_state = o->seed;
}

static struct review *build_reviews(const struct opts *o)
{
	struct review *all = xcalloc((size_t)o->tenants * K_N, sizeof(*all));

	for (int t = 0; t < o->tenants; t++)
		for (int k = 0; k < K_N; k++) {
			struct review *r = &all[(size_t)t * K_N + (size_t)k];
			struct buf b = BUF_INIT(1u << 20);

			review_body(&b, k, t);
			r->len = b.len;
			r->body = buf_detach(&b);
			if (jdoc_parse(r->body, r->len, NULL, &r->doc, NULL) != 0 ||
			    adm_request_read(jval_get(jdoc_root(r->doc), "request"), &r->rq,
			                     NULL) != 0)
				abort();
		}
	return all;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct adm_memview *mv = NULL;
	struct review *reviews;
	int64_t *by_kind[2][K_N], *all[2], t0, build_ns;
	size_t n_kind[K_N] = {0}, denied[K_N] = {0};
	struct adm_view view;
	json_t *doc;
	bool allowed;

	parse_opts(argc, argv, &o);
	doc = view_doc(&o);
	t0 = clock_mono_ns();
	if (doc == NULL || adm_memview_new(doc, &mv, NULL) != 0)
		abort();
	build_ns = clock_mono_ns() - t0;
	json_decref(doc);
	view = adm_memview_view(mv);
	reviews = build_reviews(&o);
	for (int p = 0; p < 2; p++) {
		all[p] = xcalloc((size_t)o.iterations, sizeof(int64_t));
		for (int k = 0; k < K_N; k++)
			by_kind[p][k] = xcalloc((size_t)o.iterations, sizeof(int64_t));
	}
	for (long i = 0; i < o.iterations; i++) {
		int k = (int)(rnd() % K_N), t = (int)(rnd() % (uint64_t)o.tenants);
		const struct review *r = &reviews[(size_t)t * K_N + (size_t)k];

		for (int p = 0; p < 2; p++) {
			int64_t ns = decide_once(r, &view, p == 1, &allowed);

			all[p][i] = ns;
			by_kind[p][k][n_kind[k]] = ns;
		}
		denied[k] += !allowed;
		n_kind[k]++;
	}
	printf("{\"tenants\":%d,\"namespaces\":%d,\"hosts\":%d,\"iterations\":%ld,"
	       "\"view_build_ms\":%.1f",
	       o.tenants, o.namespaces, 2 * o.tenants, o.iterations, build_ns / 1e6);
	for (int p = 0; p < 2; p++) {
		printf(",\"%s\":{", p ? "parse_and_decide" : "decide");
		report("all", all[p], (size_t)o.iterations, false);
		for (int k = 0; k < K_N; k++)
			report(KIND_NAMES[k], by_kind[p][k], n_kind[k], true);
		printf("}");
	}
	printf(",\"denied\":{");
	for (int k = 0; k < K_N; k++)
		printf("%s\"%s\":%zu", k ? "," : "", KIND_NAMES[k], denied[k]);
	printf("}}\n");
	for (size_t i = 0; i < (size_t)o.tenants * K_N; i++) {
		jdoc_unref(reviews[i].doc);
		free(reviews[i].body);
	}
	free(reviews);
	for (int p = 0; p < 2; p++) {
		free(all[p]);
		for (int k = 0; k < K_N; k++)
			free(by_kind[p][k]);
	}
	adm_memview_free(mv);
	return 0;
}
