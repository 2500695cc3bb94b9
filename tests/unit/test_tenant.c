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

#include "base/json.h"
#include "controllers/controllers.h"
#include "fake_manager.h"

#define TENANTS "tenants.landlord.dev"
#define PLANS   "plans.landlord.dev"
#define RB      "rolebindings.rbac.authorization.k8s.io"
#define CR      "clusterroles.rbac.authorization.k8s.io"
#define CRB     "clusterrolebindings.rbac.authorization.k8s.io"
#define NP      "networkpolicies.networking.k8s.io"

struct env {
	struct fake_api *f;
	struct fake_mgr *m;
};

static json_t *js(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);

	if (!v)
		fail_msg("bad test JSON %s: %s", text, e.text);
	return v;
}

static void put(struct fake_api *f, const char *res, const char *text)
{
	json_t *obj = js(text);

	fake_api_put(f, res, obj);
	json_decref(obj);
}

#define GOLD                                                                                     \
	"{\"metadata\":{\"name\":\"gold\"},\"spec\":{\"maxNamespaces\":10,\"resourceQuota\":{"   \
	"\"hard\":{\"pods\":\"20\",\"requests.cpu\":\"4\"}},\"limitRange\":{\"limits\":[{"       \
	"\"type\":\"Container\",\"default\":{\"cpu\":\"200m\"}}]}}}"
#define ACME                                                                                     \
	"{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\",\"accessControl\":{"      \
	"\"owners\":{\"users\":[\"alice\"]},\"viewers\":{\"groups\":[\"auditors\"]}},"           \
	"\"namespaces\":{\"withTenantPrefix\":[\"dev\",\"prod\"],\"metadata\":{\"common\":{"    \
	"\"labels\":{\"team\":\"{{ TENANT.NAME }}\"},\"annotations\":{\"owner\":\"ops\"}}}},"    \
	"\"networkIsolation\":true,\"podSecurity\":\"restricted\"}}"

static struct fake_api *new_fake(void)
{
	struct fake_api *f = fake_api_start();

	fake_api_add_gvr(f, &LL_TENANTS, true);
	fake_api_add_gvr(f, &LL_PLANS, true);
	fake_api_add_gvr(f, &LL_LANDLORDCONFIGS, true);
	put(f, CR, "{\"metadata\":{\"name\":\"admin\"}}");
	put(f, CR, "{\"metadata\":{\"name\":\"edit\"}}");
	put(f, CR, "{\"metadata\":{\"name\":\"view\"}}");
	return f;
}

static struct fake_mgr *start(struct fake_api *f)
{
	struct controller_def def = tenant_controller_def();

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

static const json_t *find_cond(const json_t *obj, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(jx_get(obj, "status", "conditions", NULL), i, c)
		if (strcmp(jx_str(c, "type", NULL), type) == 0)
			return c;
	return NULL;
}

static bool has_cond(struct fake_api *f, void *ud)
{
	const struct cond_want *w = ud;
	json_t *t = fake_api_get(f, TENANTS, NULL, w->tenant);
	const json_t *c = find_cond(t, w->type);
	bool ok = c && strcmp(jx_str(c, "status", NULL), w->status) == 0 &&
	          (w->reason == NULL || strcmp(jx_str(c, "reason", NULL), w->reason) == 0) &&
	          jx_generation(t) == json_integer_value(json_object_get(t ? json_object_get(t, "status") : NULL, "observedGeneration"));

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

static void test_tenant__becomes_namespaces_quota_policies_and_access(void **state)
{
	struct env *e = *state;
	json_t *ns, *rq, *lr, *np, *rbs;

	put(e->f, PLANS, GOLD);
	put(e->f, TENANTS, ACME);
	wait_cond(e->f, "acme", "Ready", "True", "Provisioned");

	ns = fake_api_get(e->f, "namespaces", NULL, "acme-dev");
	assert_non_null(ns);
	assert_string_equal(jx_label(ns, "landlord.dev/tenant"), "acme");
	assert_string_equal(jx_label(ns, "team"), "acme");
	assert_string_equal(jx_annotation(ns, "owner"), "ops");
	rq = fake_api_get(e->f, "resourcequotas", "acme-dev", "landlord-quota");
	assert_non_null(rq);
	lr = fake_api_get(e->f, "limitranges", "acme-dev", "landlord-limits");
	assert_non_null(lr);
	np = fake_api_get(e->f, NP, "acme-dev", "landlord-isolation");
	assert_non_null(np);
	rbs = fake_api_list(e->f, RB, "acme-dev");
	assert_true(json_array_size(rbs) >= 1);
	{
		char *s = json_dumps(rbs, JSON_INDENT(1));
		print_message("%s\n", s);
		free(s);
		s = json_dumps(rq, JSON_INDENT(1));
		print_message("%s\n", s);
		free(s);
	}
	json_decref(ns);
	json_decref(rq);
	json_decref(lr);
	json_decref(np);
	json_decref(rbs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(
	                test_tenant__becomes_namespaces_quota_policies_and_access, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
