/*
 * test_cacheview.c - the informer-backed admission view against the fake API server: objects
 * appear and the lookups answer, updates and deletes are reflected, decisions race updates
 * safely (run this suite under TSan too), and every golden admission case answers through a
 * cacheview loaded with the case's objects as it does through admit_memview.
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "admission_golden.h"
#include "api/api.h"
#include "testjson.h"

#include "base/buf.h"
#include "base/err.h"
#include "fake_manager.h"
#include "kube/manager.h"
#include "tenancy/landlordconfig.h"
#include "tenancy/landlordconfig_current.h"
#include "webhook/admission.h"
#include "webhook/cacheview.h"
#include "webhook/rules.h"

#define TENANTS    "tenants.landlord.dev"
#define PLANS      "plans.landlord.dev"
#define CONFIGS    "landlordconfigs.landlord.dev"
#define TEMPLATES  "templates.landlord.dev"
#define INGRESSES  "ingresses.networking.k8s.io"
#define HTTPROUTES "httproutes.gateway.networking.k8s.io"
#define SELF       "system:serviceaccount:landlord-system:landlord"
#define WAIT_TRIES 2000 /* of 5 ms */

struct env {
	struct fake_api *f;
	struct kc_client *client;
	struct mgr *m;
	struct cacheview *cv;
	pthread_t thread;
	bool compact; /* cacheview_opts.compact */
};

static void put(struct fake_api *f, const char *res, const char *text)
{
	json_error_t e;
	json_t *obj = json_loads(text, 0, &e);

	if (obj == NULL)
		fail_msg("bad test JSON: %s: %s", e.text, text);
	fake_api_put(f, res, obj);
	json_decref(obj);
}

static struct fake_api *new_fake(bool gateway)
{
	struct fake_api *f = fake_api_start();

	fake_api_add_gvr(f, &LL_TENANTS, true);
	fake_api_add_gvr(f, &LL_PLANS, true);
	fake_api_add_gvr(f, &LL_LANDLORDCONFIGS, true);
	fake_api_add_gvr(f, &LL_TEMPLATES, true);
	fake_api_add_resource(f, "networking.k8s.io", "v1", "ingresses", "Ingress", true, true);
	if (gateway)
		fake_api_add_resource(f, "gateway.networking.k8s.io", "v1", "httproutes",
		                      "HTTPRoute", true, true);
	return f;
}

static void *run(void *arg)
{
	mgr_run(arg);
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Start a manager with a view over @e->f, and wait until the view has synced. */
static void env_start(struct env *e)
{
	struct cacheview_opts vo = {.self_user = SELF, .compact = e->compact};
	struct mgr_opts o = {.probe_port = -1};
	struct ll_err err = {{0}};
	int i;

	mgr_block_signals();
	e->client = fake_client_new(e->f);
	o.client = e->client;
	e->m = mgr_new(&o);
	if (cacheview_new(e->m, &vo, &e->cv, &err) != 0)
		fail_msg("cacheview_new: %s", err.msg);
	assert_int_not_equal(pthread_create(&e->thread, NULL, run, e->m), -1);
	for (i = 0; i < WAIT_TRIES && !cacheview_synced(e->cv); i++)
		sleep_ms(5);
	assert_true(cacheview_synced(e->cv));
}

static void env_stop(struct env *e)
{
	mgr_request_stop(e->m);
	pthread_join(e->thread, NULL);
	cacheview_free(e->cv);
	mgr_free(e->m);
	kc_client_free(e->client);
	fake_api_stop(e->f);
	lcfg_current_reset();
}

/* ---- reading the view as a decision would: between hold and release ---- */

enum probe {
	P_TENANT,       /* arg: name -> name or NULL */
	P_NS_TENANT,    /* arg: namespace -> tenant name */
	P_NS_LABEL,     /* arg: namespace -> its landlord.dev/tenant label */
	P_IN_SET,       /* arg: tenant, arg2: namespace -> "yes" when in its set */
	P_MEMBER,       /* arg: kind, arg2: name */
	P_CLAIMANT,     /* arg: namespace, arg2: except */
	P_PLAN_EXISTS,  /* arg: plan -> "yes" */
	P_PLAN_USER,    /* arg: plan */
	P_HOST_USER,    /* arg: host, arg2: except -> "tenant other" */
	P_MODE_PODS,    /* -> "audit" or "deny" */
	P_HOSTS_POLICY, /* arg: tenant -> "policy" when it has one */
	P_NS_EXISTS,    /* arg: namespace -> "yes" */
	P_MODES,        /* -> "d" or "a" per family */
	P_TEMPLATE,     /* arg: Template name -> "yes" */
	P_NS_LABELS,    /* arg: namespace -> its cached labels, as JSON */
};

static void copy(char out[256], const char *s)
{
	snprintf(out, 256, "%s", s ? s : "(null)");
}

static void probe_in(const struct adm_view *v, enum probe p, const char *arg, const char *arg2,
                     char out[256])
{
	const struct adm_tenant *t;
	const char *other = NULL, *s;

	switch (p) {
	case P_TENANT:
		t = v->ops->tenant(v->ctx, arg);
		return copy(out, t ? t->name : NULL);
	case P_NS_TENANT:
		t = v->ops->tenant_of_namespace(v->ctx, arg);
		return copy(out, t ? t->name : NULL);
	case P_NS_LABEL:
		return copy(out, jval_label(v->ops->namespace_obj(v->ctx, arg), LABEL_TENANT));
	case P_IN_SET:
		t = v->ops->tenant(v->ctx, arg);
		return copy(out, t && json_object_get(t->namespaces, arg2) ? "yes" : NULL);
	case P_MEMBER:
		return copy(out, v->ops->member_tenant(v->ctx, arg, arg2));
	case P_CLAIMANT:
		return copy(out, v->ops->namespace_claimant(v->ctx, arg, arg2));
	case P_PLAN_EXISTS:
		return copy(out, v->ops->plan_exists(v->ctx, arg) ? "yes" : NULL);
	case P_PLAN_USER:
		return copy(out, v->ops->plan_user(v->ctx, arg));
	case P_HOST_USER:
		s = v->ops->host_user(v->ctx, arg, arg2, &other);
		snprintf(out, 256, "%s %s", s ? s : "(null)", s ? other : "");
		return;
	case P_MODE_PODS:
		return copy(out, v->ops->mode(v->ctx, ADM_PODS) == ADM_AUDIT ? "audit" : "deny");
	case P_HOSTS_POLICY:
		t = v->ops->tenant(v->ctx, arg);
		return copy(out, t && t->hosts && !t->hosts_error ? "policy" : NULL);
	case P_NS_EXISTS:
		return copy(out, jval_type(v->ops->namespace_obj(v->ctx, arg)) != JT_NONE ? "yes"
		                                                                          : NULL);
	case P_NS_LABELS: {
		json_t *labels = jval_to_json(
		        jval_path(v->ops->namespace_obj(v->ctx, arg), "metadata", "labels", NULL));
		char *text = labels ? json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

		copy(out, text);
		free(text);
		json_decref(labels);
		return;
	}
	case P_TEMPLATE:
		return copy(out, jval_type(v->ops->template_obj(v->ctx, arg)) == JT_OBJECT ? "yes"
		                                                                           : NULL);
	case P_MODES:
		for (int f = 0; f < ADM_FAMILY_N; f++)
			out[f] = v->ops->mode(v->ctx, f) == ADM_AUDIT ? 'a' : 'd';
		out[ADM_FAMILY_N] = '\0';
		return;
	}
}

static void probe(struct cacheview *cv, enum probe p, const char *arg, const char *arg2,
                  char out[256])
{
	const struct adm_view *v = cacheview_view(cv);

	v->ops->hold(v->ctx);
	probe_in(v, p, arg, arg2, out);
	v->ops->release(v->ctx);
}

/* Wait until probe @p answers @want ("(null)" for none). */
static void expect(struct cacheview *cv, enum probe p, const char *arg, const char *arg2,
                   const char *want)
{
	char got[256];

	for (int i = 0; i < WAIT_TRIES; i++) {
		probe(cv, p, arg, arg2, got);
		if (strcmp(got, want) == 0)
			return;
		sleep_ms(5);
	}
	fail_msg("probe %d(%s, %s): want \"%s\", got \"%s\"", p, arg, arg2 ? arg2 : "", want, got);
}

#define ACME                                                                                 \
	"{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\",\"accessControl\":{"  \
	"\"owners\":{\"users\":[\"alice\"],\"groups\":[\"acme-devs\"]}},\"namespaces\":{"    \
	"\"withTenantPrefix\":[\"dev\"],\"withoutTenantPrefix\":[\"legacy\"]},\"allowed\":{" \
	"\"hosts\":{\"names\":[\"app.acme.com\"],\"regex\":\"[a-z0-9-]+\\\\.acme\\\\.io\"}}}}"
#define GLOBEX                                                                                  \
	"{\"metadata\":{\"name\":\"globex\"},\"spec\":{\"plan\":\"silver\",\"accessControl\":{" \
	"\"owners\":{\"users\":[\"gina\"]}},\"namespaces\":{\"withTenantPrefix\":[\"web\"]}}}"
#define NS(name, tenant)                                                                           \
	"{\"metadata\":{\"name\":\"" name "\",\"labels\":{\"landlord.dev/tenant\":\"" tenant "\"}" \
	"}}"
#define INGRESS(ns, name, host)                                                               \
	"{\"metadata\":{\"namespace\":\"" ns "\",\"name\":\"" name "\"},\"spec\":{\"rules\":" \
	"[{\"host\":\"" host "\"}]}}"
#define ROUTE(ns, name, host)                                                       \
	"{\"metadata\":{\"namespace\":\"" ns "\",\"name\":\"" name "\"},\"spec\":{" \
	"\"hostnames\":[\"" host "\"]}}"

static void seed(struct fake_api *f, bool gateway)
{
	put(f, PLANS, "{\"metadata\":{\"name\":\"gold\"}}");
	put(f, PLANS, "{\"metadata\":{\"name\":\"silver\"}}");
	put(f, TENANTS, ACME);
	put(f, TENANTS, GLOBEX);
	put(f, "namespaces", NS("acme-dev", "acme"));
	put(f, "namespaces", NS("globex-web", "globex"));
	put(f, "namespaces", "{\"metadata\":{\"name\":\"other\"}}");
	put(f, INGRESSES, INGRESS("globex-web", "shop", "shop.acme.io"));
	if (gateway)
		put(f, HTTPROUTES, ROUTE("acme-dev", "app", "app.acme.com"));
}

static void test_cacheview__lookups_answer_from_the_caches(void **state)
{
	struct env e = {.f = new_fake(true)};

	(void)state;
	seed(e.f, true);
	env_start(&e);
	expect(e.cv, P_TENANT, "acme", NULL, "acme");
	expect(e.cv, P_TENANT, "nobody", NULL, "(null)");
	expect(e.cv, P_HOSTS_POLICY, "acme", NULL, "policy");
	expect(e.cv, P_NS_TENANT, "acme-dev", NULL, "acme");
	expect(e.cv, P_NS_TENANT, "other", NULL, "(null)");
	expect(e.cv, P_NS_LABEL, "globex-web", NULL, "globex");
	expect(e.cv, P_IN_SET, "acme", "acme-dev", "yes");
	expect(e.cv, P_MEMBER, "User", "alice", "acme");
	expect(e.cv, P_MEMBER, "Group", "acme-devs", "acme");
	expect(e.cv, P_MEMBER, "User", "mallory", "(null)");
	expect(e.cv, P_CLAIMANT, "acme-dev", "globex", "acme");
	expect(e.cv, P_CLAIMANT, "legacy", "globex", "acme");
	expect(e.cv, P_CLAIMANT, "acme-dev", "acme", "(null)");
	expect(e.cv, P_PLAN_EXISTS, "gold", NULL, "yes");
	expect(e.cv, P_PLAN_EXISTS, "bronze", NULL, "(null)");
	expect(e.cv, P_PLAN_USER, "silver", NULL, "globex");
	expect(e.cv, P_HOST_USER, "shop.acme.io", "acme", "globex shop.acme.io");
	expect(e.cv, P_HOST_USER, "shop.acme.io", "globex", "(null) ");
	expect(e.cv, P_HOST_USER, "*.acme.io", "acme", "globex shop.acme.io");
	expect(e.cv, P_HOST_USER, "app.acme.com", "globex", "acme app.acme.com");
	expect(e.cv, P_MODE_PODS, NULL, NULL, "deny");
	env_stop(&e);
}

static void test_cacheview__updates_and_deletes_are_reflected(void **state)
{
	struct env e = {.f = new_fake(true)};

	(void)state;
	seed(e.f, true);
	env_start(&e);
	expect(e.cv, P_NS_TENANT, "acme-dev", NULL, "acme");
	/* a wildcard Ingress in globex's namespace covers acme's host */
	put(e.f, INGRESSES, INGRESS("globex-web", "wild", "*.acme.com"));
	expect(e.cv, P_HOST_USER, "app.acme.com", "acme", "globex *.acme.com");
	fake_api_delete(e.f, INGRESSES, "globex-web", "wild");
	expect(e.cv, P_HOST_USER, "app.acme.com", "acme", "(null) ");
	/* a namespace leaves its tenant: its hosts go with it */
	put(e.f, "namespaces", "{\"metadata\":{\"name\":\"globex-web\"}}");
	expect(e.cv, P_NS_TENANT, "globex-web", NULL, "(null)");
	expect(e.cv, P_IN_SET, "globex", "globex-web", "(null)");
	expect(e.cv, P_HOST_USER, "shop.acme.io", "acme", "(null) ");
	/* audit mode from LandlordConfig "landlord" */
	put(e.f, CONFIGS,
	    "{\"metadata\":{\"name\":\"landlord\"},\"spec\":{\"admission\":{\"modes\":"
	    "{\"pods\":\"audit\"}}}}");
	expect(e.cv, P_MODE_PODS, NULL, NULL, "audit");
	fake_api_delete(e.f, CONFIGS, NULL, "landlord");
	expect(e.cv, P_MODE_PODS, NULL, NULL, "deny");
	/* a Tenant changes: its new claims, members and plan replace the old */
	put(e.f, TENANTS,
	    "{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"silver\",\"accessControl\":"
	    "{\"owners\":{\"users\":[\"bob\"]}},\"namespaces\":{\"withTenantPrefix\":[\"qa\"]}}}");
	expect(e.cv, P_MEMBER, "User", "bob", "acme");
	expect(e.cv, P_MEMBER, "User", "alice", "(null)");
	expect(e.cv, P_CLAIMANT, "acme-qa", "globex", "acme");
	expect(e.cv, P_CLAIMANT, "acme-dev", "globex", "(null)");
	expect(e.cv, P_PLAN_USER, "gold", NULL, "(null)");
	expect(e.cv, P_IN_SET, "acme", "acme-dev", "yes"); /* membership is by label */
	/* and goes */
	fake_api_delete(e.f, TENANTS, NULL, "acme");
	expect(e.cv, P_TENANT, "acme", NULL, "(null)");
	expect(e.cv, P_NS_TENANT, "acme-dev", NULL, "(null)");
	expect(e.cv, P_MEMBER, "User", "bob", "(null)");
	expect(e.cv, P_CLAIMANT, "acme-qa", "globex", "(null)");
	/* it comes back and finds its namespace */
	put(e.f, TENANTS, ACME);
	expect(e.cv, P_IN_SET, "acme", "acme-dev", "yes");
	fake_api_delete(e.f, "namespaces", NULL, "acme-dev");
	expect(e.cv, P_NS_LABEL, "acme-dev", NULL, "(null)");
	expect(e.cv, P_IN_SET, "acme", "acme-dev", "(null)");
	env_stop(&e);
}

static void test_cacheview__works_without_the_gateway_api(void **state)
{
	struct env e = {.f = new_fake(false)};

	(void)state;
	seed(e.f, false);
	env_start(&e);
	expect(e.cv, P_HOST_USER, "shop.acme.io", "acme", "globex shop.acme.io");
	expect(e.cv, P_NS_TENANT, "acme-dev", NULL, "acme");
	env_stop(&e);
}

/* `landlord webhook`: of a namespace's labels only landlord's are cached, all of them. */
static void test_cacheview__compact_keeps_every_landlord_label(void **state)
{
	struct env e = {.f = new_fake(true), .compact = true};

	(void)state;
	seed(e.f, true);
	put(e.f, "namespaces",
	    "{\"metadata\":{\"name\":\"acme-tiered\",\"labels\":{\"landlord.dev/tenant\":"
	    "\"acme\",\"landlord.dev/tier\":\"dev\",\"team\":\"web\",\"landlord.devx\":\"y\"}}}");
	put(e.f, TEMPLATES, "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"instantiableIn\":{}}}");
	env_start(&e);
	expect(e.cv, P_NS_LABELS, "acme-tiered", NULL,
	       "{\"landlord.dev/tenant\":\"acme\",\"landlord.dev/tier\":\"dev\"}");
	expect(e.cv, P_TEMPLATE, "web", NULL, "yes");
	env_stop(&e);
}

/* cacheview_free() takes its handlers off: later events reach nothing freed (ASan). */
static void test_cacheview__freed_while_informers_run(void **state)
{
	struct env e = {.f = new_fake(true)};
	struct cacheview_opts vo = {.self_user = SELF};
	struct cacheview *second = NULL;
	struct ll_err err = {{0}};

	(void)state;
	seed(e.f, true);
	env_start(&e);
	/* the informers are running (a second view only finds them: the manager's list of
	 * informers does not change): it gets the cached objects as adds */
	assert_int_equal(cacheview_new(e.m, &vo, &second, &err), 0);
	expect(second, P_NS_TENANT, "acme-dev", NULL, "acme");
	cacheview_free(second);
	put(e.f, TENANTS, GLOBEX);
	put(e.f, "namespaces", NS("globex-new", "globex"));
	put(e.f, INGRESSES, INGRESS("globex-web", "more", "more.acme.io"));
	expect(e.cv, P_HOST_USER, "more.acme.io", "acme", "globex more.acme.io");
	env_stop(&e);
}

/* Before the first lists are in, the webhook refuses: a partial cache admits too much. */
static void test_cacheview__unsynced_view_fails_closed(void **state)
{
	struct fake_api *f = new_fake(true);
	struct kc_client *c = fake_client_new(f);
	struct mgr_opts o = {.client = c, .probe_port = -1};
	struct mgr *m = mgr_new(&o);
	struct admission_verdict v = {.allowed = true};
	struct cacheview *cv = NULL;
	json_t *req = json_pack("{s:s,s:s,s:s,s:{s:s,s:s}}", "uid", "1", "operation", "CREATE",
	                        "namespace", "acme-dev", "resource", "group", "", "resource",
	                        "configmaps");

	(void)state;
	assert_int_equal(cacheview_new(m, NULL, &cv, NULL), 0);
	assert_false(cacheview_synced(cv)); /* never started */
	wh_tenancy_serve(req, &v, &(struct wh_tenancy){.cv = cv});
	assert_false(v.allowed);
	assert_int_equal(v.code, 503);
	assert_non_null(strstr(v.message, "still loading"));
	json_decref(req);
	cacheview_free(cv);
	mgr_free(m);
	kc_client_free(c);
	fake_api_stop(f);
}

/* ---- deciding while informers update ---- */

struct race {
	struct cacheview *cv;
	int stop;
	long decisions, denied;
};

#define INGRESS_REVIEW                                                                       \
	"{\"uid\":\"1\",\"operation\":\"CREATE\",\"namespace\":\"acme-dev\",\"name\":\"x\"," \
	"\"resource\":{\"group\":\"networking.k8s.io\",\"version\":\"v1\",\"resource\":"     \
	"\"ingresses\"},\"userInfo\":{\"username\":\"alice\"},\"object\":{\"metadata\":{"    \
	"\"name\":\"x\",\"namespace\":\"acme-dev\"},\"spec\":{\"rules\":[{\"host\":"         \
	"\"shop.acme.io\"},{\"host\":\"*.acme.io\"}]}}}"

static void *decide_loop(void *arg)
{
	struct race *r = arg;
	json_t *req = json_loads(INGRESS_REVIEW, 0, NULL);
	struct jdoc *doc = NULL;
	struct adm_request rq;
	struct adm_decision d;

	if (jdoc_from_json(req, NULL, &doc, NULL) != 0 ||
	    adm_request_read(jdoc_root(doc), &rq, NULL) != 0)
		abort();
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		adm_decide(&rq, cacheview_view(r->cv), &d);
		r->decisions++;
		r->denied += !d.allowed;
	}
	jdoc_unref(doc);
	json_decref(req);
	return NULL;
}

static void test_cacheview__decisions_race_updates_safely(void **state)
{
	struct env e = {.f = new_fake(true)};
	struct race r = {0};
	pthread_t t;
	char text[512];

	(void)state;
	seed(e.f, true);
	env_start(&e);
	r.cv = e.cv;
	assert_int_equal(pthread_create(&t, NULL, decide_loop, &r), 0);
	for (int i = 0; i < 150; i++) {
		snprintf(text, sizeof(text),
		         "{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"cordoned\":%s,\"allowed\":"
		         "{\"hosts\":{\"names\":[\"h%d.acme.io\"],\"regex\":\"[a-z]+\\\\.acme\\\\."
		         "io\"}},"
		         "\"accessControl\":{\"owners\":{\"users\":[\"u%d\"]}},\"namespaces\":"
		         "{\"withTenantPrefix\":[\"n%d\"]}}}",
		         i % 3 ? "false" : "true", i, i, i);
		put(e.f, TENANTS, text);
		put(e.f, "namespaces", i % 2 ? NS("acme-dev", "acme") : NS("acme-dev", "globex"));
		if (i % 5 == 0)
			fake_api_delete(e.f, INGRESSES, "globex-web", "shop");
		else
			put(e.f, INGRESSES, INGRESS("globex-web", "shop", "shop.acme.io"));
		if (i % 7 == 0)
			fake_api_delete(e.f, TENANTS, NULL, "globex");
		else if (i % 7 == 1)
			put(e.f, TENANTS, GLOBEX);
	}
	/* the last writes have arrived: the last Tenant version is in force */
	expect(e.cv, P_MEMBER, "User", "u149", "acme");
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	print_message("%ld decisions during updates, %ld denied\n", r.decisions, r.denied);
	assert_true(r.decisions > 0);
	env_stop(&e);
}

/* ---- the golden cases through a cacheview ---- */

static json_t *load(const char *dir, const char *name)
{
	char path[1024];
	json_error_t e;
	json_t *v;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		fail_msg("path too long: %s", dir);
	v = json_load_file(path, 0, &e);
	if (v == NULL)
		fail_msg("%s: %s (line %d)", path, e.text, e.line);
	return v;
}

static void put_json(struct fake_api *f, const char *res, const json_t *obj)
{
	fake_api_put(f, res, obj);
}

/* A namespace of @tenant in the view, or a new one labelled for it. */
static const char *host_namespace(struct fake_api *f, const json_t *view, const char *tenant,
                                  char buf[128])
{
	const json_t *ns;
	size_t i;

	json_array_foreach(json_object_get(view, "namespaces"), i, ns) {
		const json_t *labels = json_object_get(json_object_get(ns, "metadata"), "labels");
		const char *t = json_string_value(json_object_get(labels, LABEL_TENANT));

		if (t && strcmp(t, tenant) == 0)
			return json_string_value(
			        json_object_get(json_object_get(ns, "metadata"), "name"));
	}
	snprintf(buf, 128, "golden-hosts-%s", tenant);
	json_t *obj = json_pack("{s:{s:s,s:{s:s}}}", "metadata", "name", buf, "labels",
	                        LABEL_TENANT, tenant);
	put_json(f, "namespaces", obj);
	json_decref(obj);
	return buf;
}

/* view.json's "hosts": an Ingress each, in a namespace of the host's tenant. */
static void load_hosts(struct fake_api *f, const json_t *view)
{
	const json_t *h;
	char name[64], buf[128];
	size_t i;

	json_array_foreach(json_object_get(view, "hosts"), i, h) {
		const char *tenant = json_string_value(json_object_get(h, "tenant"));
		const char *ns = host_namespace(f, view, tenant, buf);
		json_t *ing;

		snprintf(name, sizeof(name), "golden-host-%zu", i);
		ing = json_pack("{s:{s:s,s:s},s:{s:[{s:O}]}}", "metadata", "name", name,
		                "namespace", ns, "spec", "rules", "host",
		                json_object_get(h, "host"));
		put_json(f, INGRESSES, ing);
		json_decref(ing);
	}
}

/* The LandlordConfig: in force (lcfg_install) and cached as "landlord" (for the modes). */
static void load_config(struct fake_api *f, const json_t *cfg)
{
	json_t *obj = json_deep_copy(cfg);
	struct lcfg *parsed = NULL;

	if (lcfg_parse(cfg, &parsed, NULL) != 0)
		fail_msg("golden config does not parse");
	lcfg_install(parsed);
	lcfg_unref(parsed);
	json_object_set_new(obj, "metadata", json_pack("{s:s}", "name", LANDLORD_CONFIG_NAME));
	put_json(f, CONFIGS, obj);
	json_decref(obj);
}

/* view.json (admit_memview.h's document) as API objects. */
static void load_view(struct fake_api *f, const json_t *view)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(view, "tenants"), i, v)
		put_json(f, TENANTS, v);
	json_array_foreach(json_object_get(view, "namespaces"), i, v)
		put_json(f, "namespaces", v);
	json_array_foreach(json_object_get(view, "plans"), i, v) {
		/* a name, or a whole Plan (admit_memview.h) */
		json_t *plan = json_is_string(v) ? json_pack("{s:{s:O}}", "metadata", "name", v)
		                                 : json_deep_copy(v);

		put_json(f, PLANS, plan);
		json_decref(plan);
	}
	json_array_foreach(json_object_get(view, "templates"), i, v)
		put_json(f, TEMPLATES, v);
	if (json_object_get(view, "config"))
		load_config(f, json_object_get(view, "config"));
	load_hosts(f, view);
}

/* Delete every object the view reads from the fake. */
static void reset(struct fake_api *f)
{
	static const char *const res[] = {INGRESSES, TENANTS,   PLANS,
	                                  CONFIGS,   TEMPLATES, "namespaces"};
	const json_t *o;
	json_t *all;
	size_t i;

	for (size_t r = 0; r < sizeof(res) / sizeof(res[0]); r++) {
		all = fake_api_list(f, res[r], NULL);
		json_array_foreach(all, i, o) {
			const json_t *md = json_object_get(o, "metadata");

			fake_api_delete(f, res[r],
			                json_string_value(json_object_get(md, "namespace")),
			                json_string_value(json_object_get(md, "name")));
		}
		json_decref(all);
	}
}

/* The modes P_MODES should show for view.json's config. */
static void want_modes(const json_t *view, char out[ADM_FAMILY_N + 1])
{
	const json_t *modes = json_object_get(
	        json_object_get(json_object_get(json_object_get(view, "config"), "spec"),
	                        "admission"),
	        "modes");
	const char *key;
	const json_t *m;

	memset(out, 'd', ADM_FAMILY_N);
	out[ADM_FAMILY_N] = '\0';
	json_object_foreach((json_t *)modes, key, m)
		if (adm_family_parse(key) >= 0 && json_is_string(m) &&
		    strcmp(json_string_value(m), "audit") == 0)
			out[adm_family_parse(key)] = 'a';
}

/*
 * Wait until the view has applied everything written so far: a Tenant, a Namespace of it, an
 * Ingress there and a Plan written last are seen (each informer applies its events in order),
 * then they go again. The modes are a function of the last LandlordConfig: waited for as such.
 */
static void barrier(struct env *e, int i, const char *modes)
{
	char t[64], ns[64], host[96], want[256], text[512];

	snprintf(t, sizeof(t), "zz-barrier-%d", i);
	snprintf(ns, sizeof(ns), "zz-barrier-%d-ns", i);
	snprintf(host, sizeof(host), "b%d.barrier.invalid", i);
	snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"%s\"}}", t);
	put(e->f, TENANTS, text);
	put(e->f, PLANS, text);
	put(e->f, TEMPLATES, text);
	snprintf(text, sizeof(text),
	         "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"landlord.dev/tenant\":\"%s\"}}}", ns,
	         t);
	put(e->f, "namespaces", text);
	snprintf(text, sizeof(text),
	         "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"b\"},\"spec\":{\"rules\":"
	         "[{\"host\":\"%s\"}]}}",
	         ns, host);
	put(e->f, INGRESSES, text);
	snprintf(want, sizeof(want), "%s %s", t, host);
	expect(e->cv, P_HOST_USER, host, "\x01", want);
	expect(e->cv, P_PLAN_EXISTS, t, NULL, "yes");
	expect(e->cv, P_TEMPLATE, t, NULL, "yes");
	expect(e->cv, P_MODES, NULL, NULL, modes);
	fake_api_delete(e->f, "namespaces", NULL, ns);
	fake_api_delete(e->f, TENANTS, NULL, t);
	fake_api_delete(e->f, PLANS, NULL, t);
	fake_api_delete(e->f, TEMPLATES, NULL, t);
	expect(e->cv, P_TENANT, t, NULL, "(null)");
	expect(e->cv, P_TEMPLATE, t, NULL, "(null)");
	expect(e->cv, P_NS_EXISTS, ns, NULL, "(null)");
	expect(e->cv, P_PLAN_EXISTS, t, NULL, "(null)");
}

/* One golden case on the running view @e: its objects replace the last case's. */
static json_t *run_case(struct env *e, const char *dir, int i)
{
	json_t *view = load(dir, "view.json"), *review = load(dir, "review.json"), *answer, *got;
	struct buf out = BUF_INIT(1 << 20);
	char *body = json_dumps(review, 0), modes[ADM_FAMILY_N + 1];
	struct admission_route *route;
	int status;
	struct admission_rule rules[] = {
	        /* the decisions alone, as through the memview: the served path's own checks
	         * (a synced view, the label /mutate adds) are tested apart */
	        {"tenancy", wh_tenancy_resources, ADMISSION_ANY_OP, wh_tenancy_validate,
	         (void *)cacheview_view(e->cv)},
	        {.name = NULL},
	};

	reset(e->f);
	lcfg_current_reset();
	load_view(e->f, view);
	want_modes(view, modes);
	barrier(e, i, modes);
	route = admission_route_new(NULL, "/validate", "golden", rules);
	status = admission_review(route, body, &out);
	if (status != 200)
		fail_msg("%s: HTTP %d", dir, status);
	answer = json_loadb(out.p, out.len, 0, NULL);
	assert_non_null(answer);
	got = admission_got(answer);
	json_decref(answer);
	answer = admission_mutation(
	        (struct admission_rule[]){{"label", wh_tenancy_mutate_resources,
	                                   ADMISSION_CREATE | ADMISSION_UPDATE, wh_tenancy_mutate,
	                                   &(struct wh_tenancy){.cv = e->cv}},
	                                  {.name = NULL}},
	        body);
	if (answer)
		json_object_set_new(got, "patch", answer);
	admission_route_free(route);
	buf_release(&out);
	free(body);
	json_decref(view);
	json_decref(review);
	return got;
}

static int check_case(struct env *e, const char *dir, int i)
{
	json_t *got = run_case(e, dir, i);

	return json_case_differs(dir, got, load(dir, "want.json"));
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void test_cacheview__golden_cases_answer_as_through_memview(void **state)
{
	const char *root = getenv("LANDLORD_TEST_GOLDEN");
	struct env e = {.f = new_fake(true)};
	struct dirent **names = NULL;
	char dir[1024];
	int n, bad = 0, ran = 0;

	(void)state;
	env_start(&e);
	snprintf(dir, sizeof(dir), "%s/admission", root ? root : "tests/unit/golden");
	n = scandir(dir, &names, NULL, by_name);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		char path[1400];

		if (names[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
			bad += check_case(&e, path, i);
			ran++;
		}
		free(names[i]);
	}
	free(names);
	env_stop(&e);
	print_message("%d golden cases through a cacheview, %d differ\n", ran, bad);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cacheview__lookups_answer_from_the_caches),
	        cmocka_unit_test(test_cacheview__updates_and_deletes_are_reflected),
	        cmocka_unit_test(test_cacheview__works_without_the_gateway_api),
	        cmocka_unit_test(test_cacheview__compact_keeps_every_landlord_label),
	        cmocka_unit_test(test_cacheview__freed_while_informers_run),
	        cmocka_unit_test(test_cacheview__unsynced_view_fails_closed),
	        cmocka_unit_test(test_cacheview__decisions_race_updates_safely),
	        cmocka_unit_test(test_cacheview__golden_cases_answer_as_through_memview),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
