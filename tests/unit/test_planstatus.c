/*
 * test_planstatus.c - a Plan's status summary kept per tenant (src/tenancy/planstatus.c): exact
 * totals in the plan's format, nearness and its order, the maxNamespaces report, replacing and
 * removing one tenant's contribution, and (property) that any sequence of changes gives the
 * same summary as building it afresh from the end state.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testjson.h"

#include "base/buf.h"
#include "base/jdoc.h"
#include "base/json.h"
#include "tenancy/planstatus.h"

/* Put tenant @name with this status: @used and @hard are ResourceList JSON texts or NULL. */
static void put(struct ps_plan *p, const char *name, long long namespaces, const char *used,
                const char *hard)
{
	json_t *st = json_pack("{s:I,s:{}}", "namespaceCount", (json_int_t)namespaces, "quota");
	struct jdoc *d = NULL;

	if (used)
		json_object_set_new(json_object_get(st, "quota"), "used", js(used));
	if (hard)
		json_object_set_new(json_object_get(st, "quota"), "hard", js(hard));
	assert_int_equal(jdoc_from_json(st, NULL, &d, NULL), 0);
	ps_plan_put(p, name, jdoc_root(d));
	jdoc_unref(d);
	json_decref(st);
}

static long long pm(const char *used, const char *hard)
{
	struct qty u, h;

	assert_int_equal(qty_parse(used, &u), 0);
	assert_int_equal(qty_parse(hard, &h), 0);
	return ps_used_per_mille(&u, &h);
}

static void test_planstatus__per_mille_rounds_away_from_the_limit(void **state)
{
	(void)state;
	assert_int_equal(pm("3", "20"), 150);
	assert_int_equal(pm("100m", "1"), 100);
	assert_int_equal(pm("999", "1000"), 999);
	assert_int_equal(pm("999999", "1000000"), 999);   /* 999.999: below is at most 999 */
	assert_int_equal(pm("1000", "1000"), 1000);       /* at the limit: exactly 1000 */
	assert_int_equal(pm("1000001", "1000000"), 1001); /* 1000.001: over is 1001 or more */
	assert_int_equal(pm("3Gi", "2Gi"), 1500);
	assert_int_equal(pm("0", "10"), 0);
	assert_int_equal(pm("-1", "10"), 0);
	assert_int_equal(pm("1n", "0"), PS_PER_MILLE_MAX); /* the plan forbids it: over */
	assert_int_equal(pm("0", "0"), 0);
	assert_int_equal(pm("5000", "1"), PS_PER_MILLE_MAX);
	assert_int_equal(pm("1E", "1n"), PS_PER_MILLE_MAX);
	assert_int_equal(pm("1e20", "2e20"), 500); /* 10^32 nano-units on the way: no overflow */
	assert_int_equal(pm("1e28", "1"), PS_PER_MILLE_MAX);
}

static void test_planstatus__totals_are_exact_sums_in_the_plans_format(void **state)
{
	struct ps_plan *p = ps_plan_new();
	json_t *plan = js("{\"limits.cpu\": \"2\", \"limits.memory\": \"4Gi\", \"pods\": 20, "
	                  "\"services\": \"5\", \"count/secrets\": \"lots\"}");
	json_t *st;

	(void)state;
	put(p, "acme", 2, "{\"limits.cpu\": \"500m\", \"limits.memory\": \"1Gi\", \"pods\": \"3\"}",
	    "{\"limits.cpu\": \"2\", \"limits.memory\": \"4Gi\", \"pods\": \"20\"}");
	put(p, "globex", 3,
	    "{\"limits.cpu\": \"1500m\", \"limits.memory\": \"512Mi\", \"configmaps\": \"9\"}",
	    "{\"limits.cpu\": \"2\", \"limits.memory\": \"4Gi\", \"pods\": \"20\", "
	    "\"configmaps\": \"10\"}");
	st = ps_plan_status(p, plan);
	assert_int_equal(jx_int(st, 0, "tenants", NULL), 2);
	assert_int_equal(jx_int(st, 0, "namespaces", NULL), 5);
	assert_string_equal(jx_str(st, "quota", "used", "limits.cpu", NULL), "2");
	assert_string_equal(jx_str(st, "quota", "used", "limits.memory", NULL), "1536Mi");
	assert_string_equal(jx_str(st, "quota", "used", "pods", NULL), "3");
	assert_string_equal(jx_str(st, "quota", "used", "services", NULL), "0");
	assert_string_equal(jx_str(st, "quota", "used", "count/secrets", NULL), "0");
	assert_string_equal(jx_str(st, "quota", "hard", "limits.cpu", NULL), "4");
	assert_string_equal(jx_str(st, "quota", "hard", "limits.memory", NULL), "8Gi");
	assert_string_equal(jx_str(st, "quota", "hard", "pods", NULL), "40");
	/* configmaps is not (or no longer) in the plan: not shown */
	assert_null(jx_get(st, "quota", "used", "configmaps", NULL));
	assert_int_equal(json_object_size(jx_get(st, "quota", "hard", NULL)), 5);
	json_decref(st);

	/* without a plan quota, no totals, counts still */
	st = ps_plan_status(p, NULL);
	assert_int_equal(json_object_size(jx_get(st, "quota", "used", NULL)), 0);
	assert_int_equal(jx_int(st, 0, "tenants", NULL), 2);
	json_decref(st);
	json_decref(plan);
	ps_plan_free(p);
}

static void test_planstatus__near_limit_lists_twenty_over_first_ties_by_name(void **state)
{
	struct ps_plan *p = ps_plan_new();
	char name[32], used[64];
	json_t *st, *near;

	(void)state;
	/* t00..t24 use 0..24 pods of 20; five are over, t20 at the limit */
	for (int i = 0; i < 25; i++) {
		snprintf(name, sizeof(name), "t%02d", i);
		snprintf(used, sizeof(used), "{\"pods\": \"%d\", \"cpu\": \"1\"}", i);
		put(p, name, 1, used, "{\"pods\": \"20\", \"cpu\": \"100\"}");
	}
	put(p, "a-tie", 4, "{\"pods\": \"19\"}", "{\"pods\": \"20\"}");       /* ties t19 */
	put(p, "idle", 1, "{\"pods\": \"0\"}", "{\"pods\": \"20\"}");         /* 0: not listed */
	put(p, "z-mem", 1, "{\"memory\": \"3Gi\"}", "{\"memory\": \"1Gi\"}"); /* 3000 */
	st = ps_plan_status(p, NULL);
	near = json_object_get(st, "tenantsNearLimit");
	assert_int_equal(json_array_size(near), PS_NEAR_MAX);
	assert_string_equal(jx_str(json_array_get(near, 0), "name", NULL), "z-mem");
	assert_int_equal(jx_int(json_array_get(near, 0), 0, "usedPerMille", NULL), 3000);
	assert_string_equal(jx_str(json_array_get(near, 0), "resource", NULL), "memory");
	assert_string_equal(jx_str(json_array_get(near, 0), "used", NULL), "3Gi");
	assert_string_equal(jx_str(json_array_get(near, 0), "hard", NULL), "1Gi");
	assert_string_equal(jx_str(json_array_get(near, 1), "name", NULL), "t24");
	assert_int_equal(jx_int(json_array_get(near, 1), 0, "usedPerMille", NULL), 1200);
	assert_string_equal(jx_str(json_array_get(near, 1), "resource", NULL), "pods");
	assert_string_equal(jx_str(json_array_get(near, 5), "name", NULL), "t20");
	assert_int_equal(jx_int(json_array_get(near, 5), 0, "usedPerMille", NULL), 1000);
	/* 950: a-tie before t19 (by name) */
	assert_string_equal(jx_str(json_array_get(near, 6), "name", NULL), "a-tie");
	assert_int_equal(jx_int(json_array_get(near, 6), 0, "namespaces", NULL), 4);
	assert_string_equal(jx_str(json_array_get(near, 7), "name", NULL), "t19");
	assert_string_equal(jx_str(json_array_get(near, 19), "name", NULL), "t07");
	json_decref(st);
	ps_plan_free(p);
}

static void test_planstatus__put_replaces_only_that_tenants_contribution(void **state)
{
	struct ps_plan *p = ps_plan_new();
	json_t *plan = js("{\"pods\": \"20\", \"requests.memory\": \"1Gi\"}"), *before, *after;

	(void)state;
	put(p, "acme", 2, "{\"pods\": \"3\", \"requests.memory\": \"100Mi\"}",
	    "{\"pods\": \"20\", \"requests.memory\": \"1Gi\"}");
	put(p, "globex", 1, "{\"pods\": \"5\"}", "{\"pods\": \"20\"}");
	before = ps_plan_status(p, plan);
	put(p, "globex", 4, "{\"pods\": \"19\"}", "{\"pods\": \"20\"}");
	after = ps_plan_status(p, plan);
	assert_string_equal(jx_str(after, "quota", "used", "pods", NULL), "22");
	assert_string_equal(jx_str(after, "quota", "used", "requests.memory", NULL), "100Mi");
	assert_string_equal(jx_str(after, "quota", "hard", "pods", NULL), "40");
	assert_int_equal(jx_int(after, 0, "namespaces", NULL), 6);
	assert_string_equal(
	        jx_str(json_array_get(json_object_get(after, "tenantsNearLimit"), 0), "name", NULL),
	        "globex");
	json_decref(after);

	/* putting it back as it was gives the summary before, exactly */
	put(p, "globex", 1, "{\"pods\": \"5\"}", "{\"pods\": \"20\"}");
	after = ps_plan_status(p, plan);
	assert_true(json_equal(before, after));
	json_decref(after);

	assert_true(ps_plan_remove(p, "acme"));
	assert_false(ps_plan_remove(p, "acme"));
	after = ps_plan_status(p, plan);
	assert_int_equal(jx_int(after, 0, "tenants", NULL), 1);
	assert_int_equal(jx_int(after, 0, "namespaces", NULL), 1);
	assert_string_equal(jx_str(after, "quota", "used", "pods", NULL), "5");
	assert_string_equal(jx_str(after, "quota", "used", "requests.memory", NULL), "0");
	assert_string_equal(jx_str(after, "quota", "hard", "requests.memory", NULL), "0");
	json_decref(after);
	assert_true(ps_plan_remove(p, "globex"));
	assert_int_equal(ps_plan_tenants(p), 0);
	assert_int_equal(ps_plan_namespaces(p), 0);
	json_decref(before);
	json_decref(plan);
	ps_plan_free(p);
}

static void test_planstatus__over_namespaces_names_twenty_most_first(void **state)
{
	struct ps_plan *p = ps_plan_new();
	struct buf names = BUF_INIT(1 << 16);
	char name[32];

	(void)state;
	for (int i = 0; i < 25; i++) {
		snprintf(name, sizeof(name), "t%02d", i);
		put(p, name, 3 + (i == 7) * 5, NULL, NULL);
	}
	put(p, "small", 2, NULL, NULL);
	assert_int_equal(ps_plan_over_namespaces(p, 2, PS_NAMES_MAX, &names), 25);
	assert_true(strncmp(buf_cstr(&names), "t07 (8), t00 (3), t01 (3), ", 27) == 0);
	assert_non_null(strstr(buf_cstr(&names), ", t19 (3) and 5 more"));
	assert_null(strstr(buf_cstr(&names), "t20"));
	assert_null(strstr(buf_cstr(&names), "small"));
	buf_reset(&names);
	assert_int_equal(ps_plan_over_namespaces(p, 3, PS_NAMES_MAX, &names), 1);
	assert_string_equal(buf_cstr(&names), "t07 (8)");
	buf_reset(&names);
	assert_int_equal(ps_plan_over_namespaces(p, 8, PS_NAMES_MAX, &names), 0);
	assert_int_equal(ps_plan_over_namespaces(p, -1, PS_NAMES_MAX, &names), 0);
	assert_string_equal(buf_cstr(&names), "");
	buf_release(&names);
	ps_plan_free(p);
}

static void test_planstatus__bad_input_counts_as_absent(void **state)
{
	struct ps_plan *p = ps_plan_new();
	json_t *plan = js("{\"pods\": \"20\"}"), *st;
	struct jdoc *d = NULL;

	(void)state;
	put(p, "acme", -4, "{\"pods\": \"lots\"}", "{\"pods\": \"20\"}");
	put(p, "globex", 2, "{\"pods\": 7}", "{\"pods\": [1]}");
	/* a tenant the Tenant controller has not reported on yet */
	assert_int_equal(jdoc_from_json(json_null(), NULL, &d, NULL), 0);
	ps_plan_put(p, "initech", (struct jval){NULL, 0});
	ps_plan_put(p, "hooli", jdoc_root(d));
	jdoc_unref(d);
	st = ps_plan_status(p, plan);
	assert_int_equal(jx_int(st, -1, "tenants", NULL), 4);
	assert_int_equal(jx_int(st, -1, "namespaces", NULL), 2);
	assert_string_equal(jx_str(st, "quota", "used", "pods", NULL), "7");
	assert_string_equal(jx_str(st, "quota", "hard", "pods", NULL), "20");
	assert_int_equal(json_array_size(json_object_get(st, "tenantsNearLimit")), 0);
	json_decref(st);
	json_decref(plan);
	ps_plan_free(p);
}

/* ---- property: incremental == rebuilt ---- */

#define PROP_TENANTS 60
#define PROP_STEPS   3000

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct truth {
	bool on;
	int namespaces;
	char used[160], hard[160];
};

static void random_tenant(uint64_t *s, struct truth *t)
{
	static const char *const res[] = {"cpu", "memory", "pods", "count/secrets"};
	static const char *const suffix[] = {"m", "", "", "k"};
	size_t u = 0, h = 0;

	t->on = true;
	t->namespaces = (int)(next(s) % 6);
	u += (size_t)snprintf(t->used, sizeof(t->used), "{");
	h += (size_t)snprintf(t->hard, sizeof(t->hard), "{");
	for (size_t i = 0; i < 4; i++) {
		if (next(s) % 3 == 0)
			continue;
		u += (size_t)snprintf(t->used + u, sizeof(t->used) - u, "%s\"%s\": \"",
		                      u > 1 ? "," : "", res[i]);
		u += (size_t)snprintf(t->used + u, sizeof(t->used) - u, "%llu%s",
		                      (unsigned long long)(next(s) % 40), suffix[next(s) % 4]);
		u += (size_t)snprintf(t->used + u, sizeof(t->used) - u, "\"");
		if (next(s) % 4 == 0)
			continue;
		h += (size_t)snprintf(t->hard + h, sizeof(t->hard) - h, "%s\"%s\": \"%llu\"",
		                      h > 1 ? "," : "", res[i], (unsigned long long)(next(s) % 30));
	}
	snprintf(t->used + u, sizeof(t->used) - u, "}");
	snprintf(t->hard + h, sizeof(t->hard) - h, "}");
}

/* A fresh summary of @truth, tenants put in reverse order. */
static struct ps_plan *rebuild(const struct truth *truth)
{
	struct ps_plan *p = ps_plan_new();
	char name[16];

	for (int i = PROP_TENANTS - 1; i >= 0; i--) {
		snprintf(name, sizeof(name), "t%d", i);
		if (truth[i].on)
			put(p, name, truth[i].namespaces, truth[i].used, truth[i].hard);
	}
	return p;
}

static void assert_same(const struct ps_plan *a, const struct ps_plan *b, const json_t *plan)
{
	json_t *sa = ps_plan_status(a, plan), *sb = ps_plan_status(b, plan);
	struct buf na = BUF_INIT(1 << 16), nb = BUF_INIT(1 << 16);
	char *da = json_dumps(sa, JSON_SORT_KEYS), *db = json_dumps(sb, JSON_SORT_KEYS);

	assert_string_equal(da, db);
	for (long long max = 0; max < 6; max++) {
		assert_int_equal(ps_plan_over_namespaces(a, max, PS_NAMES_MAX, &na),
		                 ps_plan_over_namespaces(b, max, PS_NAMES_MAX, &nb));
		assert_string_equal(buf_cstr(&na), buf_cstr(&nb));
	}
	free(da);
	free(db);
	buf_release(&na);
	buf_release(&nb);
	json_decref(sa);
	json_decref(sb);
}

static void test_planstatus__any_changes_give_the_summary_built_afresh(void **state)
{
	struct truth truth[PROP_TENANTS] = {0};
	json_t *plan = js("{\"cpu\": \"4\", \"memory\": \"1Gi\", \"pods\": \"20\", "
	                  "\"count/secrets\": \"9k\"}");
	struct ps_plan *p = ps_plan_new(), *fresh;
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	char name[16];

	(void)state;
	for (int step = 0; step < PROP_STEPS; step++) {
		int i = (int)(next(&s) % PROP_TENANTS);

		snprintf(name, sizeof(name), "t%d", i);
		if (next(&s) % 4 == 0) {
			assert_int_equal(ps_plan_remove(p, name), truth[i].on);
			truth[i].on = false;
		} else {
			random_tenant(&s, &truth[i]);
			put(p, name, truth[i].namespaces, truth[i].used, truth[i].hard);
		}
		if (step % 100 == 99) {
			fresh = rebuild(truth);
			assert_same(p, fresh, plan);
			ps_plan_free(fresh);
		}
	}
	json_decref(plan);
	ps_plan_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_planstatus__per_mille_rounds_away_from_the_limit),
	        cmocka_unit_test(test_planstatus__totals_are_exact_sums_in_the_plans_format),
	        cmocka_unit_test(test_planstatus__near_limit_lists_twenty_over_first_ties_by_name),
	        cmocka_unit_test(test_planstatus__put_replaces_only_that_tenants_contribution),
	        cmocka_unit_test(test_planstatus__over_namespaces_names_twenty_most_first),
	        cmocka_unit_test(test_planstatus__bad_input_counts_as_absent),
	        cmocka_unit_test(test_planstatus__any_changes_give_the_summary_built_afresh),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
