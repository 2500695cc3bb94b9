/*
 * test_tenant.c - the Tenant controller (src/controllers/tenant.c) in the real manager against
 * the fake API server (tests/fake): what one Tenant becomes, in which order, and what it does
 * when the world disagrees. The end-to-end tests (tests/e2e/test_tenant_*.py) stay the judge of
 * behaviour against a real cluster; these pin the controller's own decisions without one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testjson.h"

#include "base/json.h"
#include "controllers/controllers.h"
#include "fake_manager.h"
#include "kube/conditions.h"
#include "tenancy/landlordconfig_current.h"

#define TENANTS "tenants.landlord.dev"
#define PLANS   "plans.landlord.dev"
#define RB      "rolebindings.rbac.authorization.k8s.io"
#define CR      "clusterroles.rbac.authorization.k8s.io"
#define CRB     "clusterrolebindings.rbac.authorization.k8s.io"
#define NP      "networkpolicies.networking.k8s.io"
#define RS      "resourcesupervisors.landlord.dev"

struct env {
	struct fake_api *f;
	struct fake_mgr *m;
};

static void put(struct fake_api *f, const char *res, const char *text)
{
	json_t *obj = js(text);

	fake_api_put(f, res, obj);
	json_decref(obj);
}

#define GOLD                                                                                   \
	"{\"metadata\":{\"name\":\"gold\"},\"spec\":{\"maxNamespaces\":10,\"resourceQuota\":{" \
	"\"hard\":{\"pods\":\"20\",\"requests.cpu\":\"4\"}},\"limitRange\":{\"limits\":[{"     \
	"\"type\":\"Container\",\"default\":{\"cpu\":\"200m\"}}]}}}"
#define ACME                                                                                  \
	"{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\",\"accessControl\":{"   \
	"\"owners\":{\"users\":[\"alice\"]},\"viewers\":{\"groups\":[\"auditors\"]}},"        \
	"\"namespaces\":{\"withTenantPrefix\":[\"dev\",\"prod\"],\"metadata\":{\"common\":{"  \
	"\"labels\":{\"team\":\"{{ TENANT.NAME }}\"},\"annotations\":{\"owner\":\"ops\"}}}}," \
	"\"networkIsolation\":true,\"podSecurity\":\"restricted\"}}"

static struct fake_api *new_fake(void)
{
	struct fake_api *f = fake_api_start();

	fake_api_add_gvr(f, &LL_TENANTS, true);
	fake_api_add_gvr(f, &LL_PLANS, true);
	fake_api_add_gvr(f, &LL_LANDLORDCONFIGS, true);
	fake_api_add_gvr(f, &LL_RESOURCESUPERVISORS, true);
	put(f, CR, "{\"metadata\":{\"name\":\"admin\"}}");
	put(f, CR, "{\"metadata\":{\"name\":\"edit\"}}");
	put(f, CR, "{\"metadata\":{\"name\":\"view\"}}");
	return f;
}

static struct fake_mgr *start(struct fake_api *f)
{
	struct controller_def def = tenant_controller_def();

	lcfg_current_reset(); /* defaults, and no subscription left by a stopped manager */

	return fake_mgr_start(f, &def, 1);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	e->f = new_fake();
	fake_api_set_write_hook(e->f, fake_api_quota_hook, NULL);
	e->m = start(e->f);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	fake_mgr_stop(e->m);
	fake_api_stop(e->f);
	free(e);
	return 0;
}

/* ---- conditions to wait for ---- */

struct cond_want {
	const char *tenant, *type, *status, *reason;
};

static bool has_cond(struct fake_api *f, void *ud)
{
	const struct cond_want *w = ud;
	json_t *t = fake_api_get(f, TENANTS, NULL, w->tenant);
	const json_t *c = cond_find(jx_get(t, "status", "conditions", NULL), w->type);
	bool ok = c && strcmp(jx_str(c, "status", NULL), w->status) == 0 &&
	          (w->reason == NULL || strcmp(jx_str(c, "reason", NULL), w->reason) == 0) &&
	          jx_generation(t) == jx_int(t, 0, "status", "observedGeneration", NULL);

	json_decref(t);
	return ok;
}

static void wait_cond(struct fake_api *f, const char *tenant, const char *type, const char *status,
                      const char *reason)
{
	struct cond_want w = {tenant, type, status, reason};

	if (!fake_api_wait(f, has_cond, &w)) {
		json_t *t = fake_api_get(f, TENANTS, NULL, tenant);
		char *s = t ? json_dumps(jx_get(t, "status", NULL), JSON_INDENT(1)) : NULL;

		fail_msg("Tenant %s: %s is not %s/%s; status: %s", tenant, type, status,
		         reason ? reason : "*", s ? s : "(no tenant)");
	}
}

/* ---- objects to wait for ---- */

struct obj_want {
	const char *res, *ns, *name;
	bool present;
	const char *label, *value; /* and, when set, this label with this value (NULL: absent) */
};

static bool obj_is(struct fake_api *f, void *ud)
{
	const struct obj_want *w = ud;
	json_t *o = fake_api_get(f, w->res, w->ns, w->name);
	bool ok = (o != NULL) == w->present;

	if (ok && o && w->label) {
		const char *v = jx_label(o, w->label);

		ok = w->value ? v && strcmp(v, w->value) == 0 : v == NULL;
	}
	json_decref(o);
	return ok;
}

static void wait_obj(struct fake_api *f, const char *res, const char *ns, const char *name,
                     bool present)
{
	struct obj_want w = {res, ns, name, present, NULL, NULL};

	if (!fake_api_wait(f, obj_is, &w))
		fail_msg("%s %s/%s is%s there", res, ns ? ns : "", name, present ? " not" : "");
}

static int count_events(struct fake_api *f, const char *reason, const char *type)
{
	json_t *evs = fake_api_list(f, "events", "default"), *ev;
	size_t i;
	int n = 0;

	json_array_foreach(evs, i, ev)
		n += strcmp(jx_str(ev, "reason", NULL), reason) == 0 &&
		     strcmp(jx_str(ev, "type", NULL), type) == 0 &&
		     strcmp(jx_str(ev, "involvedObject", "name", NULL), "acme") == 0;
	json_decref(evs);
	return n;
}

struct events_want {
	const char *reason, *type;
	int n;
};

static bool enough_events(struct fake_api *f, void *ud)
{
	const struct events_want *w = ud;

	return count_events(f, w->reason, w->type) >= w->n;
}

/* Events are recorded after the status that reports the change: wait for them. */
static void wait_events(struct fake_api *f, const char *reason, const char *type, int n)
{
	struct events_want w = {reason, type, n};

	if (!fake_api_wait(f, enough_events, &w))
		fail_msg("%d %s Event(s) %s wanted, %d seen", n, type, reason,
		         count_events(f, reason, type));
}

static const char *subject(const json_t *rb, size_t i, const char *key)
{
	return jx_str(json_array_get(jx_get(rb, "subjects", NULL), i), key, NULL);
}

static void provisioned(struct env *e)
{
	put(e->f, PLANS, GOLD);
	put(e->f, TENANTS, ACME);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");
}

/* ---- what one Tenant becomes ---- */

static void check_namespace(struct fake_api *f, const char *name)
{
	json_t *ns = fake_api_get(f, "namespaces", NULL, name);
	json_t *rq = fake_api_get(f, "resourcequotas", name, "landlord-quota");
	json_t *lr = fake_api_get(f, "limitranges", name, "landlord-limits");
	json_t *np = fake_api_get(f, NP, name, "landlord-isolation");

	assert_non_null(ns);
	assert_string_equal(jx_label(ns, "landlord.dev/tenant"), "acme");
	assert_string_equal(jx_label(ns, "landlord.dev/plan"), "gold");
	assert_string_equal(jx_label(ns, "team"), "acme"); /* templated */
	assert_string_equal(jx_label(ns, "pod-security.kubernetes.io/enforce"), "restricted");
	assert_string_equal(jx_annotation(ns, "owner"), "ops");
	assert_non_null(jx_annotation(ns, "landlord.dev/managed-metadata"));
	/* the plan's 20 pods and 4 CPUs split over two namespaces */
	assert_string_equal(jx_str(rq, "spec", "hard", "pods", NULL), "10");
	assert_string_equal(jx_str(rq, "spec", "hard", "requests.cpu", NULL), "2");
	assert_string_equal(jx_label(rq, "landlord.dev/tenant"), "acme");
	assert_string_equal(jx_str(json_array_get(jx_get(lr, "spec", "limits", NULL), 0), "default",
	                           "cpu", NULL),
	                    "200m");
	assert_non_null(np);
	json_decref(ns);
	json_decref(rq);
	json_decref(lr);
	json_decref(np);
}

static void test_tenant__becomes_namespaces_quota_policies_and_access(void **state)
{
	struct env *e = *state;
	json_t *owners, *viewers, *t, *role, *binding, *all;
	char *why = NULL;

	provisioned(e);
	check_namespace(e->f, "acme-dev");
	check_namespace(e->f, "acme-prod");
	all = fake_api_list(e->f, "namespaces", NULL);
	assert_int_equal(json_array_size(all), 2);
	json_decref(all);
	/* each new namespace's default ServiceAccount, as kube-controller-manager makes it */
	all = fake_api_list(e->f, "serviceaccounts", NULL);
	assert_int_equal(json_array_size(all), 2);
	for (size_t i = 0; i < 2; i++) {
		assert_string_equal(jx_name(json_array_get(all, i)), "default");
		assert_null(jx_get(json_array_get(all, i), "metadata", "labels", NULL));
	}
	json_decref(all);

	owners = fake_api_get(e->f, RB, "acme-prod", "landlord-owners-admin");
	viewers = fake_api_get(e->f, RB, "acme-prod", "landlord-viewers-view");
	assert_string_equal(jx_str(owners, "roleRef", "name", NULL), "admin");
	assert_string_equal(subject(owners, 0, "kind"), "User");
	assert_string_equal(subject(owners, 0, "name"), "alice");
	assert_string_equal(jx_str(viewers, "roleRef", "name", NULL), "view");
	assert_string_equal(subject(viewers, 0, "kind"), "Group");
	assert_string_equal(subject(viewers, 0, "name"), "auditors");

	role = fake_api_get(e->f, CR, NULL, "landlord:tenant:acme");
	assert_non_null(role);
	binding = fake_api_list(e->f, CRB, NULL); /* the members' and the owners' */
	assert_int_equal(json_array_size(binding), 2);
	assert_string_equal(jx_str(json_array_get(binding, 0), "roleRef", "name", NULL),
	                    "landlord:tenant:acme");
	assert_string_equal(jx_str(json_array_get(binding, 1), "roleRef", "name", NULL),
	                    "landlord:tenant:acme:owners");

	t = fake_api_get(e->f, TENANTS, NULL, "acme");
	assert_string_equal(
	        jx_str(json_array_get(jx_get(t, "metadata", "finalizers", NULL), 0), NULL),
	        "landlord.dev/finalizer");
	assert_int_equal(jx_int(t, 0, "status", "namespaceCount", NULL), 2);
	for (const char *const *c = (const char *const[]){"NamespacesReady", "QuotaReady",
	                                                  "PoliciesReady", "AccessReady", NULL};
	     *c; c++) {
		if (strcmp(jx_str(cond_find(jx_get(t, "status", "conditions", NULL), *c), "status",
		                  NULL),
		           "True") != 0)
			why = json_dumps(jx_get(t, "status", NULL), JSON_INDENT(1));
		assert_null(why);
	}
	assert_string_equal(jx_str(t, "status", "quota", "hard", "pods", NULL), "20");
	wait_events(e->f, "NamespaceCreated", "Normal", 1); /* one Event names both */
	json_decref(owners);
	json_decref(viewers);
	json_decref(role);
	json_decref(binding);
	json_decref(t);
}

/*
 * Access comes last: no RoleBinding before the namespace's quota is in force. landlord puts a new
 * quota in force itself (its status); while it cannot, and nobody else does, access waits.
 */
static void test_tenant__rolebindings_wait_until_quota_is_in_force(void **state)
{
	struct env *e = *state;
	json_t *rbs, *rq;
	int rule = fake_api_rule_add(e->f,
	                             &(struct fake_rule){.method = "PATCH",
	                                                 .path_contains = "/landlord-quota/status",
	                                                 .action = FAKE_ANSWER,
	                                                 .status = 500});

	fake_api_set_write_hook(e->f, NULL, NULL); /* no quota controller either */
	put(e->f, PLANS, GOLD);
	put(e->f, TENANTS, ACME);
	wait_cond(e->f, "acme", "AccessReady", "False", "WaitingForQuota");
	wait_obj(e->f, "resourcequotas", "acme-dev", "landlord-quota", true);
	wait_obj(e->f, "limitranges", "acme-dev", "landlord-limits", true);
	assert_true(fake_api_rule_hits(e->f, rule) >= 1);
	rbs = fake_api_list(e->f, RB, NULL);
	assert_int_equal(json_array_size(rbs), 0);
	json_decref(rbs);

	/* landlord's own status write goes through: in force, with nothing counted yet */
	fake_api_rule_remove(e->f, rule);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");
	rq = fake_api_get(e->f, "resourcequotas", "acme-dev", "landlord-quota");
	assert_string_equal(jx_str(rq, "status", "hard", "pods", NULL), "10");
	assert_string_equal(jx_str(rq, "status", "used", "pods", NULL), "0");
	json_decref(rq);
	rbs = fake_api_list(e->f, RB, NULL);
	assert_int_equal(json_array_size(rbs), 4);
	json_decref(rbs);
}

/* A restarted controller finds everything in place and writes nothing. */
/* Stop the manager, start it again and wait for its first pass: it must write nothing. */
static void assert_a_restart_writes_nothing(struct env *e)
{
	double before;
	int writes;

	fake_mgr_stop(e->m);
	writes = fake_api_writes(e->f);
	before = fake_mgr_reconciles("tenant");
	e->m = start(e->f);
	assert_true(fake_mgr_wait_reconciles(e->f, "tenant", before + 1));
	fake_mgr_stop(e->m); /* nothing in flight any more */
	e->m = NULL;
	assert_int_equal(fake_api_writes(e->f), writes);
}

static void test_tenant__a_restart_writes_nothing(void **state)
{
	struct env *e = *state;

	provisioned(e);
	assert_a_restart_writes_nothing(e);
}

static bool spec_hard_pods_is(struct fake_api *f, void *ud)
{
	json_t *rq = fake_api_get(f, "resourcequotas", "acme-dev", "landlord-quota");
	bool ok = rq && strcmp(jx_str(rq, "spec", "hard", "pods", NULL) ?: "", ud) == 0;

	json_decref(rq);
	return ok;
}

/* Deleted and edited children are put back (drift reaches the controller by watch). */
static void test_tenant__deleted_and_edited_children_are_put_back(void **state)
{
	struct env *e = *state;
	json_t *rq;
	struct obj_want plan = {"namespaces", NULL, "acme-prod", true, "landlord.dev/plan", "gold"};
	struct obj_want pss = {
	        "namespaces", NULL, "acme-prod", true, "pod-security.kubernetes.io/enforce",
	        "restricted"};
	json_t *ns, *labels;

	provisioned(e);
	assert_true(fake_api_delete(e->f, RB, "acme-dev", "landlord-owners-admin"));
	assert_true(fake_api_delete(e->f, NP, "acme-dev", "landlord-isolation"));
	rq = fake_api_get(e->f, "resourcequotas", "acme-dev", "landlord-quota");
	json_object_set_new((json_t *)jx_get(rq, "spec", "hard", NULL), "pods", json_string("999"));
	fake_api_put(e->f, "resourcequotas", rq);
	json_decref(rq);
	ns = fake_api_get(e->f, "namespaces", NULL, "acme-prod");
	labels = (json_t *)jx_get(ns, "metadata", "labels", NULL);
	json_object_del(labels, "landlord.dev/plan");
	json_object_set_new(labels, "pod-security.kubernetes.io/enforce",
	                    json_string("privileged"));
	fake_api_put(e->f, "namespaces", ns);
	json_decref(ns);

	wait_obj(e->f, RB, "acme-dev", "landlord-owners-admin", true);
	wait_obj(e->f, NP, "acme-dev", "landlord-isolation", true);
	assert_true(fake_api_wait(e->f, spec_hard_pods_is, "10"));
	assert_true(fake_api_wait(e->f, obj_is, &plan));
	assert_true(fake_api_wait(e->f, obj_is, &pss));
}

static bool absent_at(struct fake_api *f, const char *res, const char *name, const char *a,
                      const char *b)
{
	json_t *o = fake_api_get(f, res, "acme-dev", name);
	bool ok = o && jx_get(o, a, b, NULL) == NULL;

	json_decref(o);
	return ok;
}

static bool additions_gone(struct fake_api *f, void *ud)
{
	json_t *rb = fake_api_get(f, RB, "acme-dev", "landlord-owners-admin");
	bool one = rb && json_array_size(jx_get(rb, "subjects", NULL)) == 1;

	(void)ud;
	json_decref(rb);
	return one && absent_at(f, NP, "landlord-isolation", "spec", "egress") &&
	       absent_at(f, "resourcequotas", "landlord-quota", "spec", "scopeSelector") &&
	       absent_at(f, "limitranges", "landlord-limits", "spec", "extra");
}

/* What others add to landlord's objects is reverted, not only what landlord set. */
static void test_tenant__fields_others_add_are_reverted(void **state)
{
	struct env *e = *state;
	json_t *np, *rq, *rb, *lr;

	provisioned(e);
	np = fake_api_get(e->f, NP, "acme-dev", "landlord-isolation");
	json_object_set_new((json_t *)jx_get(np, "spec", NULL), "egress", js("[{\"to\":[]}]"));
	fake_api_put(e->f, NP, np);
	rq = fake_api_get(e->f, "resourcequotas", "acme-dev", "landlord-quota");
	json_object_set_new((json_t *)jx_get(rq, "spec", NULL), "scopeSelector",
	                    js("{\"matchExpressions\":[{\"scopeName\":\"PriorityClass\","
	                       "\"operator\":\"Exists\"}]}"));
	fake_api_put(e->f, "resourcequotas", rq);
	rb = fake_api_get(e->f, RB, "acme-dev", "landlord-owners-admin");
	json_array_append_new((json_t *)jx_get(rb, "subjects", NULL),
	                      js("{\"kind\":\"User\",\"name\":\"mallory\"}"));
	fake_api_put(e->f, RB, rb);
	lr = fake_api_get(e->f, "limitranges", "acme-dev", "landlord-limits");
	json_object_set_new((json_t *)jx_get(lr, "spec", NULL), "extra", json_true());
	fake_api_put(e->f, "limitranges", lr);
	assert_false(additions_gone(e->f, NULL));
	assert_true(fake_api_wait(e->f, additions_gone, NULL));
	/* and once reverted, nothing more is written */
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");
	assert_a_restart_writes_nothing(e);
	json_decref(np);
	json_decref(rq);
	json_decref(rb);
	json_decref(lr);
}

/* A failing write is retried, and reported as ApplyFailed until it succeeds. */
static void test_tenant__an_injected_500_is_retried_and_reported(void **state)
{
	struct env *e = *state;
	/* landlord creates its objects with POST (tc_ensure: it owns its names) */
	int rule = fake_api_rule_add(e->f, &(struct fake_rule){.method = "POST",
	                                                       .path_contains = "/networkpolicies",
	                                                       .action = FAKE_ANSWER,
	                                                       .status = 500});

	put(e->f, PLANS, GOLD);
	put(e->f, TENANTS, ACME);
	wait_cond(e->f, "acme", "Ready", "False", "ApplyFailed");
	assert_true(fake_api_rule_hits(e->f, rule) >= 1);
	wait_events(e->f, "ApplyFailed", "Warning", 1);
	assert_null(fake_api_get(e->f, NP, "acme-dev", "landlord-isolation"));

	fake_api_rule_remove(e->f, rule);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");
	wait_obj(e->f, NP, "acme-dev", "landlord-isolation", true);
}

/* A missing Plan grants nothing, and the Tenant recovers when the Plan arrives. */
static void test_tenant__a_missing_plan_grants_nothing_until_it_exists(void **state)
{
	struct env *e = *state;
	json_t *rbs, *rqs;

	put(e->f, TENANTS, ACME);
	wait_cond(e->f, "acme", "QuotaReady", "False", "PlanNotFound");
	wait_cond(e->f, "acme", "Ready", "False", NULL);
	rbs = fake_api_list(e->f, RB, NULL);
	rqs = fake_api_list(e->f, "resourcequotas", NULL);
	assert_int_equal(json_array_size(rbs), 0);
	/* an empty quota per namespace, which counts nothing, until the Plan says more */
	assert_int_equal(json_array_size(rqs), 2);
	assert_int_equal(json_object_size(jx_get(json_array_get(rqs, 0), "spec", "hard", NULL)), 0);
	json_decref(rbs);
	json_decref(rqs);

	put(e->f, PLANS, GOLD);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");
}

/* A namespace that exists already is a collision: reported, never labelled or touched. */
static void test_tenant__an_existing_namespace_is_a_collision(void **state)
{
	struct env *e = *state;
	json_t *ns, *rbs;

	put(e->f, "namespaces", "{\"metadata\":{\"name\":\"acme-dev\",\"labels\":{\"x\":\"y\"}}}");
	put(e->f, PLANS, GOLD);
	put(e->f, TENANTS, ACME);
	wait_cond(e->f, "acme", "NamespacesReady", "False", "Collision");
	wait_obj(e->f, "namespaces", NULL, "acme-prod", true);
	ns = fake_api_get(e->f, "namespaces", NULL, "acme-dev");
	assert_null(jx_label(ns, "landlord.dev/tenant"));
	assert_int_equal(json_object_size(jx_get(ns, "metadata", "labels", NULL)), 1);
	rbs = fake_api_list(e->f, RB, "acme-dev");
	assert_int_equal(json_array_size(rbs), 0);
	wait_events(e->f, "NamespaceCollision", "Warning", 1);
	json_decref(ns);
	json_decref(rbs);
}

/* Without onDeletePurge, deleting a Tenant releases its namespaces and then lets it go. */
static void test_tenant__deletion_releases_the_namespaces(void **state)
{
	struct env *e = *state;
	json_t *ns, *left;

	provisioned(e);
	assert_true(fake_api_delete(e->f, TENANTS, NULL, "acme"));
	wait_obj(e->f, TENANTS, NULL, "acme", false);
	ns = fake_api_get(e->f, "namespaces", NULL, "acme-dev");
	assert_non_null(ns);
	assert_null(jx_label(ns, "landlord.dev/tenant"));
	assert_string_equal(jx_annotation(ns, "landlord.dev/released-from"), "acme");
	for (const char *const *r =
	             (const char *const[]){RB, NP, "resourcequotas", "limitranges", NULL};
	     *r; r++) {
		left = fake_api_list(e->f, *r, NULL);
		assert_int_equal(json_array_size(left), 0);
		json_decref(left);
	}
	assert_null(fake_api_get(e->f, CR, NULL, "landlord:tenant:acme"));
	wait_events(e->f, "NamespaceReleased", "Normal", 2);
	json_decref(ns);
}

/* With onDeletePurge, the finalizer holds the Tenant until its namespaces are gone. */
static void test_tenant__deletion_with_purge_waits_for_the_namespaces(void **state)
{
	struct env *e = *state;
	json_t *t, *ns;

	put(e->f, PLANS, GOLD);
	t = js(ACME);
	json_object_set_new((json_t *)jx_get(t, "spec", "namespaces", NULL), "onDeletePurge",
	                    json_true());
	fake_api_put(e->f, TENANTS, t);
	json_decref(t);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");

	fake_api_hold_namespaces(e->f, true);
	assert_true(fake_api_delete(e->f, TENANTS, NULL, "acme"));
	wait_cond(e->f, "acme", "Ready", "False", "Terminating");
	ns = fake_api_get(e->f, "namespaces", NULL, "acme-dev");
	assert_non_null(jx_get(ns, "metadata", "deletionTimestamp", NULL));
	json_decref(ns);
	t = fake_api_get(e->f, TENANTS, NULL, "acme");
	assert_non_null(t); /* held by the finalizer */
	json_decref(t);

	fake_api_finish_namespace(e->f, "acme-dev");
	fake_api_finish_namespace(e->f, "acme-prod");
	wait_obj(e->f, TENANTS, NULL, "acme", false);
	wait_events(e->f, "NamespacePurged", "Normal", 2);
}

/* ---- what landlord trusts (docs/internals/trust.md) ---- */

struct subjects_want {
	const char *ns, *name;
	size_t n; /* subjects left; 0: the binding is gone */
};

static bool subjects_are(struct fake_api *f, void *ud)
{
	const struct subjects_want *w = ud;
	json_t *rb = fake_api_get(f, RB, w->ns, w->name);
	bool ok = w->n == 0 ? rb == NULL : json_array_size(jx_get(rb, "subjects", NULL)) == w->n;

	json_decref(rb);
	return ok;
}

static void wait_subjects(struct fake_api *f, const char *ns, const char *name, size_t n)
{
	struct subjects_want w = {ns, name, n};

	if (!fake_api_wait(f, subjects_are, &w))
		fail_msg("RoleBinding %s/%s does not have %zu subject(s)", ns, name, n);
}

#define STRANGER_RB(name, role, subjects)                                                      \
	"{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"acme-dev\"},\"roleRef\":{"       \
	"\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"" role \
	"\"},\"subjects\":[" subjects "]}"
#define USER(name) "{\"kind\":\"User\",\"name\":\"" name "\"}"

/* Others' bindings keep members only; one squatting landlord's name is replaced. */
static void test_tenant__outsiders_are_removed_and_squatters_replaced(void **state)
{
	struct env *e = *state;
	json_t *rb, *t;

	provisioned(e);
	put(e->f, RB, STRANGER_RB("mine", "view", USER("alice") "," USER("mallory")));
	wait_subjects(e->f, "acme-dev", "mine", 1);
	rb = fake_api_get(e->f, RB, "acme-dev", "mine");
	assert_string_equal(subject(rb, 0, "name"), "alice");
	json_decref(rb);
	wait_events(e->f, "SubjectRemoved", "Warning", 1);
	put(e->f, RB,
	    STRANGER_RB("everyone", "view",
	                "{\"kind\":\"Group\",\"name\":"
	                "\"system:authenticated\"}"));
	wait_subjects(e->f, "acme-dev", "everyone", 0);

	put(e->f, RB, STRANGER_RB("landlord-editors-edit", "admin", USER("alice")));
	t = fake_api_get(e->f, TENANTS, NULL, "acme");
	json_object_set_new(json_object_get(jx_get(t, "spec", NULL), "accessControl"), "editors",
	                    js("{\"users\":[\"bob\"]}"));
	fake_api_put(e->f, TENANTS, t);
	json_decref(t);
	wait_events(e->f, "ObjectReplaced", "Warning", 1);
	rb = fake_api_get(e->f, RB, "acme-dev", "landlord-editors-edit");
	assert_string_equal(jx_str(rb, "roleRef", "name", NULL), "edit");
	assert_string_equal(subject(rb, 0, "name"), "bob");
	assert_string_equal(jx_label(rb, "app.kubernetes.io/managed-by"), "landlord");
	json_decref(rb);
}

/* A binding landlord may not change (it cannot bind its role) is deleted instead. */
static void test_tenant__a_binding_landlord_may_not_change_is_deleted(void **state)
{
	struct env *e = *state;
	int rule =
	        fake_api_rule_add(e->f, &(struct fake_rule){.method = "PATCH",
	                                                    .path_contains = "/rolebindings/mixed",
	                                                    .action = FAKE_ANSWER,
	                                                    .status = 403});

	provisioned(e);
	put(e->f, RB, STRANGER_RB("mixed", "view", USER("alice") "," USER("mallory")));
	wait_subjects(e->f, "acme-dev", "mixed", 0);
	assert_true(fake_api_rule_hits(e->f, rule) >= 1);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");
}

static bool record_names_acme(struct fake_api *f, void *ud)
{
	json_t *ns = fake_api_get(f, "namespaces", NULL, "acme-dev");
	const char *a = jx_annotation(ns, "landlord.dev/managed-metadata");
	bool ok = a && strstr(a, "\"tenant\":\"acme\"");

	(void)ud;
	json_decref(ns);
	return ok;
}

/* The bookkeeping annotation naming another tenant is ignored, reported and rewritten. */
static void test_tenant__a_forged_bookkeeping_annotation_is_ignored(void **state)
{
	struct env *e = *state;
	json_t *ns;

	provisioned(e);
	ns = fake_api_get(e->f, "namespaces", NULL, "acme-dev");
	json_object_set_new(json_object_get(json_object_get(ns, "metadata"), "annotations"),
	                    "landlord.dev/managed-metadata",
	                    json_string("{\"tenant\":\"globex\",\"labels\":[\"landlord.dev/"
	                                "tenant\",\"pod-security.kubernetes.io/enforce\"]}"));
	fake_api_put(e->f, "namespaces", ns);
	json_decref(ns);
	wait_events(e->f, "ManagedMetadataIgnored", "Warning", 1);
	if (!fake_api_wait(e->f, record_names_acme, NULL))
		fail_msg("the bookkeeping annotation was not rewritten");
	ns = fake_api_get(e->f, "namespaces", NULL, "acme-dev");
	assert_string_equal(jx_label(ns, "landlord.dev/tenant"), "acme");
	assert_string_equal(jx_label(ns, "pod-security.kubernetes.io/enforce"), "restricted");
	json_decref(ns);
}

/* A released namespace loses every binding of a member; Pod Security stays. */
static void test_tenant__a_release_is_a_quarantine(void **state)
{
	struct env *e = *state;
	json_t *t, *ns;

	provisioned(e);
	put(e->f, RB, STRANGER_RB("alice-admin", "admin", USER("alice")));
	t = fake_api_get(e->f, TENANTS, NULL, "acme");
	json_object_set_new(json_object_get(json_object_get(t, "spec"), "namespaces"),
	                    "withTenantPrefix", js("[\"prod\"]"));
	fake_api_put(e->f, TENANTS, t);
	json_decref(t);
	wait_events(e->f, "NamespaceReleased", "Normal", 1);
	wait_subjects(e->f, "acme-dev", "alice-admin", 0);
	ns = fake_api_get(e->f, "namespaces", NULL, "acme-dev");
	assert_null(jx_label(ns, "landlord.dev/tenant"));
	assert_string_equal(jx_label(ns, "pod-security.kubernetes.io/enforce"), "restricted");
	assert_string_equal(jx_annotation(ns, "landlord.dev/released-from"), "acme");
	assert_null(jx_annotation(ns, "landlord.dev/source"));
	json_decref(ns);
	/* later: one for a member goes, one for somebody else stays */
	put(e->f, RB, STRANGER_RB("ops", "view", "{\"kind\":\"Group\",\"name\":\"ops\"}"));
	put(e->f, RB, STRANGER_RB("late", "admin", USER("alice")));
	wait_subjects(e->f, "acme-dev", "late", 0);
	ns = fake_api_get(e->f, RB, "acme-dev", "ops");
	assert_non_null(ns);
	json_decref(ns);
}

/* A namespace landlord must never write: claimed, or named in a forged annotation. */
static void test_tenant__system_namespaces_are_never_written(void **state)
{
	struct env *e = *state;
	json_t *ks;

	put(e->f, "namespaces",
	    "{\"metadata\":{\"name\":\"kube-system\",\"labels\":{\"probe\":\"x\"},"
	    "\"annotations\":{\"landlord.dev/managed-metadata\":\"{\\\"tenant\\\":\\\"acme\\\","
	    "\\\"labels\\\":[\\\"probe\\\"]}\"}}}");
	put(e->f, PLANS, GOLD);
	put(e->f, TENANTS,
	    "{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\","
	    "\"namespaces\":{\"withoutTenantPrefix\":[\"kube-system\",\"default\","
	    "\"landlord-system\",\"acme-ok\"]}}}");
	wait_cond(e->f, "acme", "NamespacesReady", "False", "Collision");
	wait_obj(e->f, "namespaces", NULL, "acme-ok", true);
	assert_null(fake_api_get(e->f, "namespaces", NULL, "default"));
	assert_null(fake_api_get(e->f, "namespaces", NULL, "landlord-system"));
	ks = fake_api_get(e->f, "namespaces", NULL, "kube-system");
	assert_string_equal(jx_label(ks, "probe"), "x");
	assert_null(jx_label(ks, "landlord.dev/tenant"));
	assert_null(jx_annotation(ks, "landlord.dev/released-from"));
	json_decref(ks);
}

/* Without any quota controller, landlord puts a new quota in force itself, counting what the
 * cluster's controllers put into a new namespace (the root CA ConfigMap) where the quota does. */
static void test_tenant__a_new_quota_is_put_in_force_by_landlord(void **state)
{
	struct env *e = *state;
	json_t *rq;

	fake_api_set_write_hook(e->f, NULL, NULL);
	for (const char *const *ns = (const char *const[]){"acme-dev", "acme-prod", NULL}; *ns;
	     ns++) {
		json_t *cm = json_pack("{s:{s:s,s:s}}", "metadata", "name", "kube-root-ca.crt",
		                       "namespace", *ns);

		fake_api_put(e->f, "configmaps", cm);
		json_decref(cm);
	}
	put(e->f, PLANS,
	    "{\"metadata\":{\"name\":\"gold\"},\"spec\":{\"resourceQuota\":{\"hard\":{"
	    "\"pods\":\"20\",\"count/configmaps\":\"10\"}}}}");
	put(e->f, TENANTS, ACME);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");
	rq = fake_api_get(e->f, "resourcequotas", "acme-dev", "landlord-quota");
	assert_string_equal(jx_str(rq, "status", "hard", "pods", NULL), "10");
	assert_string_equal(jx_str(rq, "status", "hard", "count/configmaps", NULL), "5");
	assert_string_equal(jx_str(rq, "status", "used", "pods", NULL), "0");
	assert_string_equal(jx_str(rq, "status", "used", "count/configmaps", NULL), "1");
	json_decref(rq);
	wait_obj(e->f, RB, "acme-dev", "landlord-owners-admin", true);
}

/* A Plan without quota still gets an (empty) quota in every namespace. */
static void test_tenant__a_plan_without_quota_gets_an_empty_quota(void **state)
{
	struct env *e = *state;
	json_t *rq;

	put(e->f, PLANS, "{\"metadata\":{\"name\":\"gold\"},\"spec\":{}}");
	put(e->f, TENANTS, ACME);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");
	rq = fake_api_get(e->f, "resourcequotas", "acme-dev", "landlord-quota");
	assert_non_null(rq);
	assert_int_equal(json_object_size(jx_get(rq, "spec", "hard", NULL)), 0);
	json_decref(rq);
}

/* A Plan's status is written about once a second; only its spec wakes its tenants. */
static void test_tenant__a_plans_status_wakes_no_tenant(void **state)
{
	struct env *e = *state;
	double before;
	json_t *plan;

	provisioned(e);
	fake_mgr_stop(e->m);
	before = fake_mgr_reconciles("tenant");
	e->m = start(e->f);
	assert_true(fake_mgr_wait_reconciles(e->f, "tenant", before + 1)); /* the start's pass */
	before = fake_mgr_reconciles("tenant");
	for (int i = 0; i < 3; i++) {
		plan = fake_api_get(e->f, PLANS, NULL, "gold");
		json_object_set_new(plan, "status", json_pack("{s:i}", "tenants", i));
		fake_api_put(e->f, PLANS, plan);
		json_decref(plan);
	}
	plan = fake_api_get(e->f, PLANS, NULL, "gold");
	json_object_set_new(json_object_get(plan, "spec"), "maxNamespaces", json_integer(11));
	fake_api_put(e->f, PLANS, plan);
	json_decref(plan);
	assert_true(fake_mgr_wait_reconciles(e->f, "tenant", before + 1));
	fake_mgr_stop(e->m);
	e->m = NULL;
	assert_true(fake_mgr_reconciles("tenant") == before + 1);
}

/* ---- spec.hibernation: the tenant's ResourceSupervisor ---- */

#define SLEEPY_HIB                                                                       \
	"{\"sleepSchedule\":\"0 20 * * *\",\"wakeSchedule\":\"0 8 * * *\",\"timezone\":" \
	"\"Europe/Berlin\",\"enforce\":true}"
#define WANT_RS_SPEC                                                                    \
	"{\"namespaces\":{\"labelSelector\":{\"matchLabels\":{\"landlord.dev/tenant\":" \
	"\"acme\"}}},\"schedule\":{\"sleepSchedule\":\"0 20 * * *\",\"wakeSchedule\":"  \
	"\"0 8 * * *\",\"timezone\":\"Europe/Berlin\"},\"enforce\":true,"               \
	"\"allowWorkloadExclusion\":false}"

/* ACME with spec.hibernation @hib (JSON text), or without it (NULL). */
static void put_sleepy(struct fake_api *f, const char *hib)
{
	json_t *t = js(ACME);

	if (hib)
		json_object_set_new((json_t *)jx_get(t, "spec", NULL), "hibernation", js(hib));
	fake_api_put(f, TENANTS, t);
	json_decref(t);
}

static bool rs_spec_is(struct fake_api *f, void *ud)
{
	json_t *rs = fake_api_get(f, RS, NULL, "acme"), *want = js(ud);
	bool ok = rs && json_equal(jx_get(rs, "spec", NULL), want);

	json_decref(want);
	json_decref(rs);
	return ok;
}

/* The number of rules of the owners' ClusterRole, and whether the last is the supervisor's. */
static size_t owner_rules(struct fake_api *f, bool *supervisor)
{
	json_t *cr = fake_api_get(f, CR, NULL, "landlord:tenant:acme:owners");
	const json_t *rules = jx_get(cr, "rules", NULL);
	const json_t *last = json_array_get(rules, json_array_size(rules) - 1);
	size_t n = json_array_size(rules);

	*supervisor =
	        last &&
	        strcmp(json_string_value(json_array_get(jx_get(last, "resources", NULL), 0)) ?: "",
	               "resourcesupervisors") == 0;
	json_decref(cr);
	return n;
}

struct rules_want {
	size_t n;
	bool supervisor;
};

static bool owner_rules_are(struct fake_api *f, void *ud)
{
	const struct rules_want *w = ud;
	bool supervisor;

	return owner_rules(f, &supervisor) == w->n && supervisor == w->supervisor;
}

static void wait_owner_rules(struct fake_api *f, size_t n, bool supervisor)
{
	struct rules_want w = {n, supervisor};
	bool has;

	if (!fake_api_wait(f, owner_rules_are, &w))
		fail_msg("the owners' role has %zu rules (supervisor's: %d), not %zu (%d)",
		         owner_rules(f, &has), has, n, supervisor);
}

static void sleepy_provisioned(struct env *e)
{
	put(e->f, PLANS, GOLD);
	put_sleepy(e->f, SLEEPY_HIB);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");
	wait_cond(e->f, "acme", "HibernationReady", "True", "Provisioned");
}

/* The supervisor is made for the tenant's namespaces, labelled and owned, and its owners may
 * change its override by name; drift in what landlord owns is repaired, and the owners'
 * override, others' labels and the supervisor controller's finalizer are left as they are. */
static void test_tenant__hibernation_makes_and_keeps_the_tenants_supervisor(void **state)
{
	struct env *e = *state;
	json_t *t, *rs, *ref;

	sleepy_provisioned(e);
	t = fake_api_get(e->f, TENANTS, NULL, "acme");
	rs = fake_api_get(e->f, RS, NULL, "acme");
	assert_non_null(rs);
	assert_true(rs_spec_is(e->f, WANT_RS_SPEC));
	assert_string_equal(jx_label(rs, "landlord.dev/tenant"), "acme");
	assert_string_equal(jx_label(rs, "app.kubernetes.io/managed-by"), "landlord");
	ref = json_array_get(jx_get(rs, "metadata", "ownerReferences", NULL), 0);
	assert_string_equal(jx_str(ref, "uid", NULL), jx_uid(t));
	assert_string_equal(jx_str(ref, "kind", NULL), "Tenant");
	assert_true(jx_bool(ref, 0, "controller", NULL));
	assert_null(jx_get(rs, "metadata", "annotations", NULL));
	wait_owner_rules(e->f, 4, true);
	wait_events(e->f, "HibernationCreated", "Normal", 1);

	/* an administrator's edit, the owners' override, the supervisor controller's finalizer */
	json_object_set_new((json_t *)jx_get(rs, "spec", "schedule", NULL), "sleepSchedule",
	                    json_string("0 1 * * *"));
	json_object_set_new((json_t *)jx_get(rs, "spec", "namespaces", NULL), "names",
	                    js("[\"kube-system\"]"));
	json_object_set_new((json_t *)jx_get(rs, "metadata", NULL), "annotations",
	                    js("{\"landlord.dev/hibernation\":\"wake\"}"));
	json_object_set_new((json_t *)jx_get(rs, "metadata", NULL), "finalizers",
	                    js("[\"landlord.dev/finalizer\"]"));
	json_object_del((json_t *)jx_get(rs, "metadata", "labels", NULL), "landlord.dev/tenant");
	json_object_set_new((json_t *)jx_get(rs, "metadata", "labels", NULL), "team",
	                    json_string("ops"));
	fake_api_put(e->f, RS, rs);
	json_decref(rs);
	assert_true(fake_api_wait(e->f, rs_spec_is, WANT_RS_SPEC));
	wait_obj(e->f, RS, NULL, "acme", true);
	rs = fake_api_get(e->f, RS, NULL, "acme");
	assert_string_equal(jx_annotation(rs, "landlord.dev/hibernation"), "wake");
	assert_int_equal(json_array_size(jx_get(rs, "metadata", "finalizers", NULL)), 1);
	assert_string_equal(
	        json_string_value(json_array_get(jx_get(rs, "metadata", "finalizers", NULL), 0)),
	        "landlord.dev/finalizer");
	assert_string_equal(jx_label(rs, "landlord.dev/tenant"), "acme");
	assert_string_equal(jx_label(rs, "team"), "ops");
	json_decref(rs);
	json_decref(t);
}

/* A supervisor of the tenant's name that is not the tenant's is reported and never written;
 * once it goes, the tenant's own is made. */
static void test_tenant__a_supervisor_of_the_tenants_name_is_never_taken_over(void **state)
{
	struct env *e = *state;
	const char *theirs = "{\"metadata\":{\"name\":\"acme\",\"labels\":{\"landlord.dev/"
	                     "tenant\":\"acme\",\"app.kubernetes.io/managed-by\":\"landlord\"}},"
	                     "\"spec\":{\"namespaces\":{\"names\":[\"other\"]}}}";
	json_t *before, *after, *t;
	const json_t *c;

	put(e->f, RS, theirs);
	before = fake_api_get(e->f, RS, NULL, "acme");
	put(e->f, PLANS, GOLD);
	put_sleepy(e->f, SLEEPY_HIB);
	wait_cond(e->f, "acme", "HibernationReady", "False", "HibernationConflict");
	wait_cond(e->f, "acme", "Ready", "False", "HibernationConflict");
	t = fake_api_get(e->f, TENANTS, NULL, "acme");
	c = cond_find(jx_get(t, "status", "conditions", NULL), "HibernationReady");
	assert_non_null(strstr(jx_str(c, "message", NULL), "ResourceSupervisor acme exists"));
	after = fake_api_get(e->f, RS, NULL, "acme");
	assert_true(json_equal(before, after)); /* not one write */
	wait_owner_rules(e->f, 3, false);       /* and no right to it for the owners */
	wait_events(e->f, "HibernationConflict", "Warning", 1);

	assert_true(fake_api_delete(e->f, RS, NULL, "acme"));
	wait_cond(e->f, "acme", "HibernationReady", "True", "Provisioned");
	assert_true(fake_api_wait(e->f, rs_spec_is, WANT_RS_SPEC));
	wait_owner_rules(e->f, 4, true);
	json_decref(t);
	json_decref(before);
	json_decref(after);
}

static bool no_hibernation_condition(struct fake_api *f, void *ud)
{
	json_t *t = fake_api_get(f, TENANTS, NULL, "acme");
	bool ok = t && jx_generation(t) == jx_int(t, 0, "status", "observedGeneration", NULL) &&
	          !cond_find(jx_get(t, "status", "conditions", NULL), "HibernationReady");

	(void)ud;
	json_decref(t);
	return ok;
}

/* Removing spec.hibernation deletes the supervisor (its finalizer wakes the namespaces). */
static void test_tenant__removing_hibernation_deletes_the_supervisor(void **state)
{
	struct env *e = *state;

	sleepy_provisioned(e);
	wait_owner_rules(e->f, 4, true);
	put_sleepy(e->f, NULL);
	wait_obj(e->f, RS, NULL, "acme", false);
	assert_true(fake_api_wait(e->f, no_hibernation_condition, NULL));
	wait_owner_rules(e->f, 3, false);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");
	wait_events(e->f, "HibernationRemoved", "Normal", 1);
}

static bool rs_deleting(struct fake_api *f, void *ud)
{
	json_t *rs = fake_api_get(f, RS, NULL, "acme");
	bool ok = rs && jx_get(rs, "metadata", "deletionTimestamp", NULL);

	(void)ud;
	json_decref(rs);
	return ok;
}

/* A deleted Tenant's supervisor goes first: its namespaces are released only once it is gone
 * (woken by its finalizer, here the test's). */
static void test_tenant__deletion_waits_until_the_supervisor_is_gone(void **state)
{
	struct env *e = *state;
	json_t *rs, *ns;

	sleepy_provisioned(e);
	rs = fake_api_get(e->f, RS, NULL, "acme"); /* as the supervisor controller holds it */
	json_object_set_new((json_t *)jx_get(rs, "metadata", NULL), "finalizers",
	                    js("[\"landlord.dev/finalizer\"]"));
	fake_api_put(e->f, RS, rs);
	assert_true(fake_api_delete(e->f, TENANTS, NULL, "acme"));
	assert_true(fake_api_wait(e->f, rs_deleting, NULL));
	wait_cond(e->f, "acme", "HibernationReady", "False", "Pending");
	ns = fake_api_get(e->f, "namespaces", NULL, "acme-dev");
	assert_string_equal(jx_label(ns, "landlord.dev/tenant"), "acme"); /* not released yet */
	json_decref(ns);
	json_decref(rs);

	rs = fake_api_get(e->f, RS, NULL, "acme"); /* everything woken: the finalizer goes */
	json_object_del((json_t *)jx_get(rs, "metadata", NULL), "finalizers");
	fake_api_put(e->f, RS, rs);
	wait_obj(e->f, TENANTS, NULL, "acme", false);
	wait_obj(e->f, RS, NULL, "acme", false);
	ns = fake_api_get(e->f, "namespaces", NULL, "acme-dev");
	assert_string_equal(jx_annotation(ns, "landlord.dev/released-from"), "acme");
	json_decref(ns);
	json_decref(rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(
	                test_tenant__becomes_namespaces_quota_policies_and_access, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__rolebindings_wait_until_quota_is_in_force, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_tenant__a_restart_writes_nothing, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__deleted_and_edited_children_are_put_back, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_tenant__fields_others_add_are_reverted, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__an_injected_500_is_retried_and_reported, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__a_missing_plan_grants_nothing_until_it_exists, setup,
	                teardown),
	        cmocka_unit_test_setup_teardown(test_tenant__an_existing_namespace_is_a_collision,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_tenant__deletion_releases_the_namespaces,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__deletion_with_purge_waits_for_the_namespaces, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__outsiders_are_removed_and_squatters_replaced, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__a_binding_landlord_may_not_change_is_deleted, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__a_forged_bookkeeping_annotation_is_ignored, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_tenant__a_release_is_a_quarantine, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_tenant__system_namespaces_are_never_written,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__a_new_quota_is_put_in_force_by_landlord, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__a_plan_without_quota_gets_an_empty_quota, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_tenant__a_plans_status_wakes_no_tenant, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__hibernation_makes_and_keeps_the_tenants_supervisor, setup,
	                teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__a_supervisor_of_the_tenants_name_is_never_taken_over, setup,
	                teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__removing_hibernation_deletes_the_supervisor, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tenant__deletion_waits_until_the_supervisor_is_gone, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
