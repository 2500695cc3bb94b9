/*
 * test_plan.c - the Plan controller (src/controllers/plan.c) in the real manager against the
 * fake API server: Plan status summarises the Tenants on the plan as their own status reports
 * them (counts, quota totals, the tenants nearest their limits), kept up to date one changed
 * tenant at a time; maxNamespaces is reported, bad quantities make the Plan invalid, a restart
 * writes nothing, and 5,000 tenants keep the status small. Tenants are written directly with
 * the status the Tenant controller would give them.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/metrics.h"
#include "controllers/controllers.h"
#include "fake_manager.h"
#include "kube/conditions.h"

#define TENANTS "tenants.landlord.dev"
#define PLANS   "plans.landlord.dev"

/* What the controller wrote: plan status writes, seen by the fake's write hook. */
struct written {
	pthread_mutex_t lock;
	int writes;
	size_t max_status, max_object; /* compact JSON bytes */
};

struct env {
	struct fake_api *f;
	struct fake_mgr *m;
	struct written w;
};

static struct fake_mgr *start(struct fake_api *f)
{
	struct controller_def def = plan_controller_def();

	return fake_mgr_start(f, &def, 1);
}

static void on_write(const char *verb, const char *res, json_t *obj, void *ud)
{
	struct written *w = ud;
	char *status, *all;

	if (strcmp(res, PLANS) != 0 || strcmp(verb, "put") == 0)
		return;
	status = json_dumps(json_object_get(obj, "status"), JSON_COMPACT);
	all = json_dumps(obj, JSON_COMPACT);
	pthread_mutex_lock(&w->lock);
	w->writes++;
	w->max_status = strlen(status) > w->max_status ? strlen(status) : w->max_status;
	w->max_object = strlen(all) > w->max_object ? strlen(all) : w->max_object;
	pthread_mutex_unlock(&w->lock);
	free(status);
	free(all);
}

static int status_writes(struct env *e)
{
	int n;

	pthread_mutex_lock(&e->w.lock);
	n = e->w.writes;
	pthread_mutex_unlock(&e->w.lock);
	return n;
}

static int setup_fake(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	pthread_mutex_init(&e->w.lock, NULL);
	e->f = fake_api_start();
	fake_api_add_gvr(e->f, &LL_TENANTS, true);
	fake_api_add_gvr(e->f, &LL_PLANS, true);
	fake_api_set_write_hook(e->f, on_write, &e->w);
	*state = e;
	return 0;
}

static int setup(void **state)
{
	struct env *e;

	setup_fake(state);
	e = *state;
	e->m = start(e->f);
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	fake_mgr_stop(e->m);
	fake_api_stop(e->f);
	pthread_mutex_destroy(&e->w.lock);
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

/* A Tenant on @plan_name with @namespaces namespaces using @pods of 20 pods. */
static void tenant_using(struct fake_api *f, const char *name, const char *plan_name,
                         int namespaces, int pods)
{
	char used[16];
	json_t *t;

	snprintf(used, sizeof(used), "%d", pods);
	t = json_pack("{s:{s:s},s:{s:s},s:{s:i,s:{s:{s:s},s:{s:s}}}}", "metadata", "name", name,
	              "spec", "plan", plan_name, "status", "namespaceCount", namespaces, "quota",
	              "hard", "pods", "20", "used", "pods", used);
	fake_api_put(f, TENANTS, t);
	json_decref(t);
}

static void tenant(struct fake_api *f, const char *name, const char *plan_name, int namespaces)
{
	tenant_using(f, name, plan_name, namespaces, 3);
}

struct want {
	const char *plan;
	int tenants, namespaces;
	const char *cond, *status; /* and this condition with this status */
	const char *used_pods;     /* and status.quota.used.pods (NULL: any) */
};

static bool plan_says(struct fake_api *f, void *ud)
{
	const struct want *w = ud;
	json_t *p = fake_api_get(f, PLANS, NULL, w->plan);
	const json_t *c = cond_find(jx_get(p, "status", "conditions", NULL), w->cond);
	const char *used = jx_str(p, "status", "quota", "used", "pods", NULL);
	bool ok = p && jx_int(p, -1, "status", "tenants", NULL) == w->tenants &&
	          jx_int(p, -1, "status", "namespaces", NULL) == w->namespaces && c &&
	          strcmp(jx_str(c, "status", NULL), w->status) == 0 &&
	          (w->used_pods == NULL || (used && strcmp(used, w->used_pods) == 0));

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

/* Entry @i of the plan's status.tenantsNearLimit (borrowed from @p). */
static const json_t *near(const json_t *p, size_t i)
{
	return json_array_get(jx_get(p, "status", "tenantsNearLimit", NULL), i);
}

static void test_plan__status_counts_its_tenants_and_sums_their_quota(void **state)
{
	struct env *e = *state;
	json_t *p;

	plan(e->f, "gold", "20", 10);
	plan(e->f, "silver", "5", 10);
	tenant(e->f, "acme", "gold", 2);
	tenant(e->f, "globex", "gold", 3);
	tenant(e->f, "initech", "silver", 1);
	wait_plan(e->f, &(struct want){"gold", 2, 5, "Ready", "True", "6"});
	wait_plan(e->f, &(struct want){"silver", 1, 1, "WithinLimits", "True", "3"});
	p = fake_api_get(e->f, PLANS, NULL, "gold");
	assert_string_equal(jx_str(p, "status", "quota", "hard", "pods", NULL), "40");
	assert_int_equal(json_array_size(jx_get(p, "status", "tenantsNearLimit", NULL)), 2);
	/* both at 3 of 20 pods: 150 per mille, in name order */
	assert_string_equal(jx_str(near(p, 0), "name", NULL), "acme");
	assert_int_equal(jx_int(near(p, 0), 0, "namespaces", NULL), 2);
	assert_string_equal(jx_str(near(p, 0), "resource", NULL), "pods");
	assert_string_equal(jx_str(near(p, 0), "used", NULL), "3");
	assert_string_equal(jx_str(near(p, 0), "hard", NULL), "20");
	assert_int_equal(jx_int(near(p, 0), 0, "usedPerMille", NULL), 150);
	assert_string_equal(jx_str(near(p, 1), "name", NULL), "globex");
	assert_null(jx_get(p, "status", "perTenant", NULL));
	assert_int_equal(jx_int(p, 0, "status", "observedGeneration", NULL), 1);
	json_decref(p);

	/* a tenant moving to another plan leaves this one */
	tenant(e->f, "globex", "silver", 3);
	wait_plan(e->f, &(struct want){"gold", 1, 2, "Ready", "True", "3"});
	wait_plan(e->f, &(struct want){"silver", 2, 4, "Ready", "True", "6"});
}

static void test_plan__a_changed_tenant_changes_only_its_contribution(void **state)
{
	struct env *e = *state;
	json_t *p;

	plan(e->f, "gold", "20", 10);
	plan(e->f, "silver", "20", 10);
	tenant_using(e->f, "acme", "gold", 2, 3);
	tenant_using(e->f, "globex", "gold", 1, 5);
	tenant_using(e->f, "initech", "gold", 1, 19);
	wait_plan(e->f, &(struct want){"gold", 3, 4, "Ready", "True", "27"});

	/* globex goes over its limit: first, its usedPerMille over 1000 */
	tenant_using(e->f, "globex", "gold", 1, 25);
	wait_plan(e->f, &(struct want){"gold", 3, 4, "Ready", "True", "47"});
	p = fake_api_get(e->f, PLANS, NULL, "gold");
	assert_string_equal(jx_str(p, "status", "quota", "hard", "pods", NULL), "60");
	assert_string_equal(jx_str(near(p, 0), "name", NULL), "globex");
	assert_int_equal(jx_int(near(p, 0), 0, "usedPerMille", NULL), 1250);
	assert_string_equal(jx_str(near(p, 1), "name", NULL), "initech");
	assert_int_equal(jx_int(near(p, 1), 0, "usedPerMille", NULL), 950);
	assert_string_equal(jx_str(near(p, 2), "name", NULL), "acme");
	assert_int_equal(jx_int(near(p, 2), 0, "usedPerMille", NULL), 150);
	json_decref(p);

	/* deleted: it leaves the plan */
	assert_true(fake_api_delete(e->f, TENANTS, NULL, "initech"));
	wait_plan(e->f, &(struct want){"gold", 2, 3, "Ready", "True", "28"});
	/* moved: it leaves one plan and enters the other */
	tenant_using(e->f, "acme", "silver", 2, 3);
	wait_plan(e->f, &(struct want){"gold", 1, 1, "Ready", "True", "25"});
	wait_plan(e->f, &(struct want){"silver", 1, 2, "Ready", "True", "3"});
	p = fake_api_get(e->f, PLANS, NULL, "gold");
	assert_string_equal(jx_str(p, "status", "quota", "hard", "pods", NULL), "20");
	assert_int_equal(json_array_size(jx_get(p, "status", "tenantsNearLimit", NULL)), 1);
	json_decref(p);
}

static const char *limits_message(const json_t *p)
{
	return jx_str(cond_find(jx_get(p, "status", "conditions", NULL), "WithinLimits"), "message",
	              NULL);
}

static void test_plan__more_namespaces_than_allowed_is_reported(void **state)
{
	struct env *e = *state;
	json_t *p;

	plan(e->f, "small", "5", 2);
	tenant(e->f, "acme", "small", 3);
	tenant(e->f, "globex", "small", 2);
	wait_plan(e->f, &(struct want){"small", 2, 5, "WithinLimits", "False", NULL});
	p = fake_api_get(e->f, PLANS, NULL, "small");
	assert_string_equal(
	        jx_str(cond_find(jx_get(p, "status", "conditions", NULL), "WithinLimits"), "reason",
	               NULL),
	        "TooManyNamespaces");
	assert_string_equal(limits_message(p),
	                    "1 tenant has more namespaces than maxNamespaces (2): acme (3)");
	json_decref(p);
}

static void test_plan__bad_quantities_make_it_invalid(void **state)
{
	struct env *e = *state;
	json_t *p;

	plan(e->f, "broken", "lots", 2);
	wait_plan(e->f, &(struct want){"broken", 0, 0, "Ready", "False", NULL});
	p = fake_api_get(e->f, PLANS, NULL, "broken");
	assert_string_equal(
	        jx_str(cond_find(jx_get(p, "status", "conditions", NULL), "Ready"), "reason", NULL),
	        "Invalid");
	assert_non_null(strstr(jx_str(cond_find(jx_get(p, "status", "conditions", NULL), "Ready"),
	                              "message", NULL),
	                       "spec.resourceQuota.hard"));
	json_decref(p);
}

/* Stop, start again over the same objects, wait for every plan's reconcile, stop: no writes. */
static void assert_restart_writes_nothing(struct env *e, double plans)
{
	double before;
	int writes;

	fake_mgr_stop(e->m);
	writes = fake_api_writes(e->f);
	before = fake_mgr_reconciles("plan");
	e->m = start(e->f);
	assert_true(fake_mgr_wait_reconciles(e->f, "plan", before + plans));
	fake_mgr_stop(e->m);
	e->m = NULL;
	assert_int_equal(fake_api_writes(e->f), writes);
}

static void test_plan__a_restart_writes_nothing(void **state)
{
	struct env *e = *state;
	char name[32];

	plan(e->f, "gold", "20", 2);
	plan(e->f, "silver", "20", 2);
	/* 30 tenants, so that the order of tenantsNearLimit and the message must come out alike */
	for (int i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "t%02d", (i * 7) % 30);
		tenant_using(e->f, name, "gold", 1 + i % 4, i % 23);
	}
	tenant(e->f, "acme", "silver", 2);
	wait_plan(e->f, &(struct want){"gold", 30, 73, "WithinLimits", "False", "274"});
	wait_plan(e->f, &(struct want){"silver", 1, 2, "WithinLimits", "True", "3"});
	assert_restart_writes_nothing(e, 2);
}

static bool rule_held(struct fake_api *f, void *ud)
{
	return fake_api_rule_hits(f, *(int *)ud) > 0;
}

static double tenants_added(void)
{
	char labels[128];

	return metrics_get("landlord_informer_events_total",
	                   metrics_labels(labels, sizeof(labels), "resource", "tenants", "type",
	                                  "added", NULL));
}

/* The reflector counts an event before it dispatches it, and dispatches in order. */
static bool events_seen(struct fake_api *f, void *ud)
{
	(void)f;
	return tenants_added() >= *(double *)ud;
}

/* While the plan's reconcile is held in its status write, more tenants change than the plan
 * had: the notes are dropped and the next reconcile builds the summary afresh instead. */
static void test_plan__a_flood_of_changes_rebuilds_the_summary(void **state)
{
	struct env *e = *state;
	struct fake_rule hold = {.method = "PATCH",
	                         .path_contains = "/plans/flood/status",
	                         .action = FAKE_HOLD,
	                         .times = 1};
	double builds = metrics_get("landlord_plan_status_builds_total", NULL);
	double updates = metrics_get("landlord_plan_status_tenant_updates_total", NULL);
	char name[32];
	int rule = fake_api_rule_add(e->f, &hold);
	double added;

	plan(e->f, "flood", "20", 10);
	tenant(e->f, "acme", "flood", 1);
	assert_true(fake_api_wait(e->f, rule_held, &rule));
	added = tenants_added();
	for (int i = 0; i < 1100; i++) {
		snprintf(name, sizeof(name), "t%04d", i);
		tenant(e->f, name, "flood", 1);
	}
	/* a barrier: once the reflector counts this one, it has noted the 1100 before it */
	tenant(e->f, "sentinel", "elsewhere", 1);
	added += 1101;
	assert_true(fake_api_wait(e->f, events_seen, &added));
	fake_api_release(e->f, rule);
	wait_plan(e->f, &(struct want){"flood", 1101, 1101, "Ready", "True", "3303"});
	assert_true(metrics_get("landlord_plan_status_builds_total", NULL) >= builds + 2);
	assert_true(metrics_get("landlord_plan_status_tenant_updates_total", NULL) <
	            updates + 1100);
}

/* ---- scale ---- */

#define MANY         5000
#define STATUS_LIMIT (64 * 1024)

static void test_plan__five_thousand_tenants_keep_the_status_small(void **state)
{
	struct env *e = *state;
	long long t0, t1;
	double builds, updates;
	char name[32];
	int writes;
	json_t *p;

	/* straight into the fake's store, before the manager starts: its first list reads them */
	plan(e->f, "big", "20", 3);
	for (int i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "t%04d", i);
		tenant_using(e->f, name, "big", 1 + i % 4, i % 21); /* 1250 over maxNamespaces */
	}
	t0 = clock_mono_ms();
	e->m = start(e->f);
	wait_plan(e->f, &(struct want){"big", MANY, 12500, "WithinLimits", "False", "49981"});
	t1 = clock_mono_ms();
	p = fake_api_get(e->f, PLANS, NULL, "big");
	assert_int_equal(json_array_size(jx_get(p, "status", "tenantsNearLimit", NULL)), 20);
	assert_int_equal(jx_int(near(p, 0), 0, "usedPerMille", NULL), 1000);
	assert_string_equal(jx_str(near(p, 0), "name", NULL), "t0020");
	assert_non_null(strstr(limits_message(p), "1250 tenants have more namespaces than "
	                                          "maxNamespaces (3): t0003 (4), t0007 (4)"));
	assert_non_null(strstr(limits_message(p), " and 1230 more"));
	json_decref(p);
	writes = status_writes(e);
	assert_int_equal(writes, 1);
	assert_true(e->w.max_status < STATUS_LIMIT);
	assert_true(e->w.max_object < STATUS_LIMIT);
	print_message("5000 tenants: first status in %lld ms, %zu bytes of status (%zu with the "
	              "object), %d write(s)\n",
	              t1 - t0, e->w.max_status, e->w.max_object, writes);

	/* 500 tenants' usage changes while it runs: at most one write a second, and only those
	 * 500 are read again, one at a time (no plan is built afresh) */
	builds = metrics_get("landlord_plan_status_builds_total", NULL);
	updates = metrics_get("landlord_plan_status_tenant_updates_total", NULL);
	t0 = clock_mono_ms();
	for (int i = 0; i < MANY; i += 10) {
		snprintf(name, sizeof(name), "t%04d", i);
		tenant_using(e->f, name, "big", 1 + i % 4, i % 21 + 1);
	}
	wait_plan(e->f, &(struct want){"big", MANY, 12500, "WithinLimits", "False", "50481"});
	t1 = clock_mono_ms();
	writes = status_writes(e) - writes;
	print_message("500 changed tenants: status current after %lld ms, %d write(s)\n", t1 - t0,
	              writes);
	assert_true(writes >= 1 && writes <= (t1 - t0) / 1000 + 2);
	assert_true(metrics_get("landlord_plan_status_builds_total", NULL) == builds);
	/* one read per change, or two when a reconcile takes the notes between an update's old
	 * and new object (each names the plan) */
	updates = metrics_get("landlord_plan_status_tenant_updates_total", NULL) - updates;
	assert_true(updates >= MANY / 10 && updates <= 2 * MANY / 10);
	assert_true(e->w.max_status < STATUS_LIMIT);
	assert_restart_writes_nothing(e, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(
	                test_plan__status_counts_its_tenants_and_sums_their_quota, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_plan__a_changed_tenant_changes_only_its_contribution, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_plan__more_namespaces_than_allowed_is_reported,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_plan__bad_quantities_make_it_invalid, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_plan__a_restart_writes_nothing, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_plan__a_flood_of_changes_rebuilds_the_summary,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_plan__five_thousand_tenants_keep_the_status_small, setup_fake,
	                teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
