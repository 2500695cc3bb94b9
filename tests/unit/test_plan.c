/*
 * test_plan.c - the Plan controller (src/controllers/plan.c) in the real manager against the
 * fake API server: Plan status summarises the Tenants on the plan as their own status reports
 * them; maxNamespaces is reported, bad quantities make the Plan invalid. Tenants are written
 * directly with the status the Tenant controller would give them.
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
#include "kube/conditions.h"

#define TENANTS "tenants.landlord.dev"
#define PLANS   "plans.landlord.dev"

struct env {
	struct fake_api *f;
	struct fake_mgr *m;
};

static struct fake_mgr *start(struct fake_api *f)
{
	struct controller_def def = plan_controller_def();

	return fake_mgr_start(f, &def, 1);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	e->f = fake_api_start();
	fake_api_add_gvr(e->f, &LL_TENANTS, true);
	fake_api_add_gvr(e->f, &LL_PLANS, true);
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

static void plan(struct fake_api *f, const char *name, const char *pods, int max)
{
	json_t *p = json_pack("{s:{s:s},s:{s:i,s:{s:{s:s}}}}", "metadata", "name", name, "spec",
	                      "maxNamespaces", max, "resourceQuota", "hard", "pods", pods);

	fake_api_put(f, PLANS, p);
	json_decref(p);
}

static void tenant(struct fake_api *f, const char *name, const char *plan_name, int namespaces)
{
	json_t *t = json_pack("{s:{s:s},s:{s:s},s:{s:i,s:{s:{s:s},s:{s:s}}}}", "metadata", "name",
	                      name, "spec", "plan", plan_name, "status", "namespaceCount",
	                      namespaces, "quota", "hard", "pods", "20", "used", "pods", "3");

	fake_api_put(f, TENANTS, t);
	json_decref(t);
}

struct want {
	const char *plan;
	int tenants, namespaces;
	const char *cond, *status; /* and this condition with this status */
};

static bool plan_says(struct fake_api *f, void *ud)
{
	const struct want *w = ud;
	json_t *p = fake_api_get(f, PLANS, NULL, w->plan);
	const json_t *c = cond_find(jx_get(p, "status", "conditions", NULL), w->cond);
	bool ok = p && jx_int(p, -1, "status", "tenants", NULL) == w->tenants &&
	          jx_int(p, -1, "status", "namespaces", NULL) == w->namespaces && c &&
	          strcmp(jx_str(c, "status", NULL), w->status) == 0;

	json_decref(p);
	return ok;
}

static void wait_plan(struct fake_api *f, const struct want *w)
{
	if (!fake_api_wait(f, plan_says, (void *)w)) {
		json_t *p = fake_api_get(f, PLANS, NULL, w->plan);
		char *s = json_dumps(jx_get(p, "status", NULL), JSON_INDENT(1));

		fail_msg("Plan %s status: %s", w->plan, s ? s : "(none)");
	}
}

static void test_plan__status_counts_its_tenants_and_their_namespaces(void **state)
{
	struct env *e = *state;
	json_t *p;

	plan(e->f, "gold", "20", 10);
	plan(e->f, "silver", "5", 10);
	tenant(e->f, "acme", "gold", 2);
	tenant(e->f, "globex", "gold", 3);
	tenant(e->f, "initech", "silver", 1);
	wait_plan(e->f, &(struct want){"gold", 2, 5, "Ready", "True"});
	wait_plan(e->f, &(struct want){"silver", 1, 1, "WithinLimits", "True"});
	p = fake_api_get(e->f, PLANS, NULL, "gold");
	assert_int_equal(jx_int(p, 0, "status", "perTenant", "acme", "namespaces", NULL), 2);
	assert_string_equal(jx_str(p, "status", "perTenant", "globex", "used", "pods", NULL), "3");
	assert_string_equal(jx_str(p, "status", "perTenant", "globex", "hard", "pods", NULL), "20");
	assert_null(jx_get(p, "status", "perTenant", "initech", NULL));
	assert_int_equal(jx_int(p, 0, "status", "observedGeneration", NULL), 1);
	json_decref(p);

	/* a tenant moving to another plan leaves this one */
	tenant(e->f, "globex", "silver", 3);
	wait_plan(e->f, &(struct want){"gold", 1, 2, "Ready", "True"});
	wait_plan(e->f, &(struct want){"silver", 2, 4, "Ready", "True"});
}

static void test_plan__more_namespaces_than_allowed_is_reported(void **state)
{
	struct env *e = *state;
	json_t *p;

	plan(e->f, "small", "5", 2);
	tenant(e->f, "acme", "small", 3);
	tenant(e->f, "globex", "small", 2);
	wait_plan(e->f, &(struct want){"small", 2, 5, "WithinLimits", "False"});
	p = fake_api_get(e->f, PLANS, NULL, "small");
	assert_string_equal(
	        jx_str(cond_find(jx_get(p, "status", "conditions", NULL), "WithinLimits"), "reason",
	               NULL),
	        "TooManyNamespaces");
	assert_non_null(
	        strstr(jx_str(cond_find(jx_get(p, "status", "conditions", NULL), "WithinLimits"),
	                      "message", NULL),
	               "acme"));
	assert_null(
	        strstr(jx_str(cond_find(jx_get(p, "status", "conditions", NULL), "WithinLimits"),
	                      "message", NULL),
	               "globex"));
	json_decref(p);
}

static void test_plan__bad_quantities_make_it_invalid(void **state)
{
	struct env *e = *state;
	json_t *p;

	plan(e->f, "broken", "lots", 2);
	wait_plan(e->f, &(struct want){"broken", 0, 0, "Ready", "False"});
	p = fake_api_get(e->f, PLANS, NULL, "broken");
	assert_string_equal(
	        jx_str(cond_find(jx_get(p, "status", "conditions", NULL), "Ready"), "reason", NULL),
	        "Invalid");
	assert_non_null(strstr(jx_str(cond_find(jx_get(p, "status", "conditions", NULL), "Ready"),
	                              "message", NULL),
	                       "spec.resourceQuota.hard"));
	json_decref(p);
}

static void test_plan__a_restart_writes_nothing(void **state)
{
	struct env *e = *state;
	double before;
	int writes;

	plan(e->f, "gold", "20", 10);
	tenant(e->f, "acme", "gold", 2);
	wait_plan(e->f, &(struct want){"gold", 1, 2, "Ready", "True"});
	fake_mgr_stop(e->m);
	writes = fake_api_writes(e->f);
	before = fake_mgr_reconciles("plan");
	e->m = start(e->f);
	assert_true(fake_mgr_wait_reconciles(e->f, "plan", before + 1));
	fake_mgr_stop(e->m);
	e->m = NULL;
	assert_int_equal(fake_api_writes(e->f), writes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(
	                test_plan__status_counts_its_tenants_and_their_namespaces, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_plan__more_namespaces_than_allowed_is_reported,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_plan__bad_quantities_make_it_invalid, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_plan__a_restart_writes_nothing, setup,
	                                        teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
