/* test_quotaplan.c - splitting a tenant-wide quota among namespaces, in two safe phases. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testjson.h"

#include "base/err.h"
#include "kube/quantity.h"
#include "tenancy/quotaplan.h"

/* The simulation the fuzzer runs; the property test below feeds it seeded random bytes. */
#include "../../fuzz/fuzz_quotaplan.c"

#define MAX_NS 8

/* A test tenant: its Plan and, per namespace, what its ResourceQuota shows. */
struct tenant {
	json_t *plan;
	struct qp_ns ns[MAX_NS];
	json_t *used[MAX_NS], *status[MAX_NS], *spec[MAX_NS], *reserved[MAX_NS];
	size_t n;
	struct qp_result res;
};

static void set_json(json_t **slot, json_t *take)
{
	json_decref(*slot);
	*slot = take;
}

/* Adds a namespace; NULL maps are absent (a new namespace has none). */
static size_t add_ns(struct tenant *t, const char *name, const char *used, const char *status,
                     const char *spec)
{
	size_t i = t->n++;

	assert_true(i < MAX_NS);
	t->ns[i].name = name;
	t->used[i] = js(used);
	t->status[i] = js(status);
	t->spec[i] = js(spec);
	return i;
}

/* A namespace whose spec.hard is confirmed in status.hard. */
static size_t add_settled(struct tenant *t, const char *name, const char *used, const char *hard)
{
	return add_ns(t, name, used, hard, hard);
}

static size_t ns_index(const struct tenant *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->ns[i].name, name) == 0)
			return i;
	fail_msg("no namespace %s", name);
	return 0;
}

/* A view of @j in a new document kept in @docs (the caller's cache holds its documents so);
 * NULL is the missing value. */
static struct jval view(const json_t *j, struct jdoc **docs, size_t *n)
{
	struct jdoc *d = NULL;

	if (j == NULL)
		return jdoc_root(NULL);
	assert_int_equal(jdoc_from_json(j, NULL, &d, NULL), 0);
	docs[(*n)++] = d;
	return jdoc_root(d);
}

/* qp_compute() over the first @n namespaces, each map read in place from a document. */
static int compute(struct tenant *t, size_t n, struct ll_err *err)
{
	struct jdoc *docs[1 + 4 * MAX_NS];
	size_t nd = 0, i;
	int rc;

	for (i = 0; i < n; i++) {
		t->ns[i].used = view(t->used[i], docs, &nd);
		t->ns[i].status_hard = view(t->status[i], docs, &nd);
		t->ns[i].spec_hard = view(t->spec[i], docs, &nd);
		t->ns[i].reserved = view(t->reserved[i], docs, &nd);
	}
	rc = qp_compute(view(t->plan, docs, &nd), t->ns, n, &t->res, err);
	while (nd > 0)
		jdoc_unref(docs[--nd]);
	return rc;
}

static void plan_now(struct tenant *t)
{
	struct ll_err err = {{0}};

	qp_result_release(&t->res);
	if (compute(t, t->n, &err) != 0)
		fail_msg("qp_compute: %s", err.msg);
}

static void tenant_release(struct tenant *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		json_decref(t->used[i]);
		json_decref(t->status[i]);
		json_decref(t->spec[i]);
		json_decref(t->reserved[i]);
	}
	json_decref(t->plan);
	qp_result_release(&t->res);
}

static void assert_json(const json_t *have, const char *want_text)
{
	json_t *want = js(want_text);

	if (!json_equal(have, want)) {
		char *h = json_dumps(have, JSON_SORT_KEYS);

		fail_msg("have %s, want %s", h, want_text);
	}
	json_decref(want);
}

static void assert_write(const struct qp_write *w, const char *ns, bool write, const char *hard)
{
	assert_string_equal(w->ns, ns);
	assert_int_equal(w->write, write);
	assert_json(w->hard, hard);
}

/* What the controller does: write phase 1, and phase 2 only once phase 1 is empty. */
static void apply(struct tenant *t)
{
	size_t k;

	for (k = 0; k < t->res.n_phase1; k++)
		set_json(&t->spec[ns_index(t, t->res.phase1[k].ns)],
		         json_deep_copy(t->res.phase1[k].hard));
	for (k = 0; t->res.n_phase1 == 0 && k < t->res.n_phase2; k++)
		set_json(&t->spec[ns_index(t, t->res.phase2[k].ns)],
		         json_deep_copy(t->res.phase2[k].hard));
}

/* What kube-controller-manager does: status.hard := spec.hard. */
static void confirm(struct tenant *t, const char *name)
{
	size_t i = ns_index(t, name);

	set_json(&t->status[i], json_deep_copy(t->spec[i]));
}

/* Sum over namespaces of max(spec.hard, status.hard) for @res, in nano-units. */
static __int128 in_force(const struct tenant *t, const char *res)
{
	__int128 sum = 0, a, b;
	struct qty q;
	size_t i;

	for (i = 0; i < t->n; i++) {
		const char *s =
		        t->spec[i] ? json_string_value(json_object_get(t->spec[i], res)) : NULL;
		const char *u =
		        t->status[i] ? json_string_value(json_object_get(t->status[i], res)) : NULL;

		a = s && qty_parse(s, &q) == 0 ? q.nano : 0;
		b = u && qty_parse(u, &q) == 0 ? q.nano : 0;
		sum += a > b ? a : b;
	}
	return sum;
}

#define UNITS(x) ((__int128)(x)*1000000000)

static void test_quotaplan__new_tenant_gets_the_plan_split(void **state)
{
	struct tenant t = {.plan = js("{\"requests.cpu\": \"2\", \"limits.memory\": \"4Gi\","
	                              " \"pods\": \"10\", \"count/configmaps\": 25}")};

	add_ns(&t, "team-b", NULL, NULL, NULL);
	add_ns(&t, "team-a", NULL, NULL, NULL);
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 0);
	assert_int_equal(t.res.n_phase2, 2);
	/* Sorted by name; the odd configmap goes to the first. */
	assert_write(&t.res.phase2[0], "team-a", true,
	             "{\"count/configmaps\": \"13\", \"limits.memory\": \"2Gi\", \"pods\": \"5\","
	             " \"requests.cpu\": \"1\"}");
	assert_write(&t.res.phase2[1], "team-b", true,
	             "{\"count/configmaps\": \"12\", \"limits.memory\": \"2Gi\", \"pods\": \"5\","
	             " \"requests.cpu\": \"1\"}");
	assert_false(t.res.over_plan);
	assert_int_equal(json_array_size(t.res.over_resources), 0);
	assert_json(t.res.used, "{\"count/configmaps\": \"0\", \"limits.memory\": \"0\","
	                        " \"pods\": \"0\", \"requests.cpu\": \"0\"}");
	tenant_release(&t);
}

static void test_quotaplan__units_and_remainders_are_exact(void **state)
{
	struct tenant t = {.plan = js("{\"requests.cpu\": \"1\", \"limits.cpu\": \"2500m\","
	                              " \"limits.memory\": \"1Gi\", \"pods\": \"5\"}")};

	add_ns(&t, "c", NULL, NULL, NULL);
	add_ns(&t, "a", NULL, NULL, NULL);
	add_ns(&t, "b", NULL, NULL, NULL);
	plan_now(&t);
	assert_int_equal(t.res.n_phase2, 3);
	/*
	 * cpu in whole millicores, memory in whole bytes (1Gi / 3 is no binary value, so it is
	 * written in decimal), pods in whole pods; leftovers one each to the first by name.
	 */
	assert_write(&t.res.phase2[0], "a", true,
	             "{\"requests.cpu\": \"334m\", \"limits.cpu\": \"834m\","
	             " \"limits.memory\": \"357913942\", \"pods\": \"2\"}");
	assert_write(&t.res.phase2[1], "b", true,
	             "{\"requests.cpu\": \"333m\", \"limits.cpu\": \"833m\","
	             " \"limits.memory\": \"357913941\", \"pods\": \"2\"}");
	assert_write(&t.res.phase2[2], "c", true,
	             "{\"requests.cpu\": \"333m\", \"limits.cpu\": \"833m\","
	             " \"limits.memory\": \"357913941\", \"pods\": \"1\"}");
	tenant_release(&t);
}

static void test_quotaplan__a_sub_granule_rest_goes_to_the_first(void **state)
{
	struct tenant t = {.plan = js("{\"requests.cpu\": \"1000500u\", \"pods\": \"2500m\"}")};

	add_ns(&t, "b", NULL, NULL, NULL);
	add_ns(&t, "a", NULL, NULL, NULL);
	plan_now(&t);
	assert_write(&t.res.phase2[0], "a", true,
	             "{\"requests.cpu\": \"500500u\", \"pods\": \"1500m\"}");
	assert_write(&t.res.phase2[1], "b", true, "{\"requests.cpu\": \"500m\", \"pods\": \"1\"}");
	tenant_release(&t);
}

static void test_quotaplan__steady_state_writes_nothing(void **state)
{
	struct tenant t = {.plan = js("{\"limits.memory\": \"4Gi\", \"pods\": \"10\"}")};

	add_ns(&t, "b", NULL, NULL, NULL);
	add_ns(&t, "a", NULL, NULL, NULL);
	plan_now(&t);
	apply(&t);
	confirm(&t, "a");
	confirm(&t, "b");
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 0);
	assert_int_equal(t.res.n_phase2, 0);
	/* The same values spelled differently are the same values. */
	set_json(&t.spec[0], js("{\"limits.memory\": \"2048Mi\", \"pods\": \"5000m\"}"));
	set_json(&t.status[0], js("{\"limits.memory\": \"2147483648\", \"pods\": \"5\"}"));
	plan_now(&t);
	assert_int_equal(t.res.n_phase1 + t.res.n_phase2, 0);
	/* A raise written but not yet confirmed is not written again. */
	set_json(&t.status[0], js("{\"limits.memory\": \"1Gi\", \"pods\": \"4\"}"));
	plan_now(&t);
	assert_int_equal(t.res.n_phase1 + t.res.n_phase2, 0);
	tenant_release(&t);
}

static void test_quotaplan__small_usage_changes_write_nothing(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"20\"}")};

	add_settled(&t, "a", "{\"pods\": \"6\"}", "{\"pods\": \"10\"}");
	add_settled(&t, "b", "{\"pods\": \"1\"}", "{\"pods\": \"10\"}");
	/* a's free room, 4 pods, is not below half an even share of the 13 left (3 pods). */
	plan_now(&t);
	assert_int_equal(t.res.n_phase1 + t.res.n_phase2, 0);
	assert_json(t.res.used, "{\"pods\": \"7\"}");
	tenant_release(&t);
}

static void test_quotaplan__usage_growth_moves_headroom_toward_it(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"20\"}")};

	add_settled(&t, "a", "{\"pods\": \"8\"}", "{\"pods\": \"10\"}");
	add_settled(&t, "b", "{\"pods\": \"0\"}", "{\"pods\": \"10\"}");
	/* a has 2 free, below half an even share of 12 (3): b gives up room first. */
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 1);
	assert_write(&t.res.phase1[0], "b", true, "{\"pods\": \"6\"}");
	assert_int_equal(t.res.n_phase2, 1);
	assert_write(&t.res.phase2[0], "a", true, "{\"pods\": \"14\"}");
	apply(&t);
	assert_true(in_force(&t, "pods") <= UNITS(20));
	confirm(&t, "b");
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 0);
	assert_int_equal(t.res.n_phase2, 1);
	assert_write(&t.res.phase2[0], "a", true, "{\"pods\": \"14\"}");
	apply(&t);
	assert_true(in_force(&t, "pods") == UNITS(20));
	tenant_release(&t);
}

static void test_quotaplan__the_last_unit_moves_to_a_full_namespace(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"6\"}")};
	const char *two = "{\"pods\": \"2\"}";

	/* one unit of headroom left, in c: an even share is below one unit, but a and b are full */
	add_settled(&t, "a", two, two);
	add_settled(&t, "b", two, two);
	add_settled(&t, "c", "{\"pods\": \"1\"}", two);
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 1);
	assert_write(&t.res.phase1[0], "c", true, "{\"pods\": \"1\"}");
	assert_int_equal(t.res.n_phase2, 1);
	assert_write(&t.res.phase2[0], "a", true, "{\"pods\": \"3\"}");
	apply(&t);
	confirm(&t, "c");
	plan_now(&t);
	apply(&t);
	confirm(&t, "a");
	/* then it stays: b is full too, but moving the unit again would give it to a again */
	plan_now(&t);
	assert_int_equal(t.res.n_phase1 + t.res.n_phase2, 0);
	tenant_release(&t);
}

static void test_quotaplan__adding_a_namespace_lowers_the_others_first(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"10\", \"requests.cpu\": \"2\"}")};
	const char *hard = "{\"pods\": \"5\", \"requests.cpu\": \"1\"}";

	add_settled(&t, "a", "{\"pods\": \"1\", \"requests.cpu\": \"0\"}", hard);
	add_settled(&t, "b", "{\"pods\": \"0\", \"requests.cpu\": \"500m\"}", hard);
	plan_now(&t);
	assert_int_equal(t.res.n_phase1 + t.res.n_phase2, 0);

	add_ns(&t, "c", NULL, NULL, NULL);
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 2);
	assert_write(&t.res.phase1[0], "a", true, "{\"pods\": \"4\", \"requests.cpu\": \"500m\"}");
	assert_write(&t.res.phase1[1], "b", true, "{\"pods\": \"3\", \"requests.cpu\": \"1\"}");
	assert_int_equal(t.res.n_phase2, 1);
	assert_write(&t.res.phase2[0], "c", true, "{\"pods\": \"3\", \"requests.cpu\": \"500m\"}");
	apply(&t);
	assert_null(t.spec[2]);

	/* Written but not confirmed: nothing to write, still waiting. */
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 2);
	assert_false(t.res.phase1[0].write);
	assert_false(t.res.phase1[1].write);
	assert_int_equal(t.res.n_phase2, 1);
	confirm(&t, "a");
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 1);
	assert_write(&t.res.phase1[0], "b", false, "{\"pods\": \"3\", \"requests.cpu\": \"1\"}");
	apply(&t);
	assert_null(t.spec[2]);

	confirm(&t, "b");
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 0);
	assert_int_equal(t.res.n_phase2, 1);
	assert_write(&t.res.phase2[0], "c", true, "{\"pods\": \"3\", \"requests.cpu\": \"500m\"}");
	apply(&t);
	assert_true(in_force(&t, "pods") == UNITS(10));
	assert_true(in_force(&t, "requests.cpu") == UNITS(2));
	confirm(&t, "c");
	plan_now(&t);
	assert_int_equal(t.res.n_phase1 + t.res.n_phase2, 0);
	tenant_release(&t);
}

static void test_quotaplan__a_write_that_lowers_and_raises_holds_the_raise(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"10\", \"services\": \"10\"}")};

	add_settled(&t, "a", "{\"pods\": \"0\", \"services\": \"5\"}",
	            "{\"pods\": \"5\", \"services\": \"5\"}");
	add_settled(&t, "b", "{\"pods\": \"5\", \"services\": \"0\"}",
	            "{\"pods\": \"5\", \"services\": \"5\"}");
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 2);
	assert_write(&t.res.phase1[0], "a", true, "{\"pods\": \"3\", \"services\": \"5\"}");
	assert_write(&t.res.phase1[1], "b", true, "{\"pods\": \"5\", \"services\": \"2\"}");
	assert_int_equal(t.res.n_phase2, 2);
	assert_write(&t.res.phase2[0], "a", true, "{\"pods\": \"3\", \"services\": \"8\"}");
	assert_write(&t.res.phase2[1], "b", true, "{\"pods\": \"7\", \"services\": \"2\"}");
	tenant_release(&t);
}

static void test_quotaplan__plan_below_usage_pins_and_reports(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"10\", \"requests.cpu\": \"4\"}")};
	const char *hard = "{\"pods\": \"10\", \"requests.cpu\": \"2\"}";

	add_settled(&t, "a", "{\"pods\": \"8\", \"requests.cpu\": \"1\"}", hard);
	add_settled(&t, "b", "{\"pods\": \"4\", \"requests.cpu\": \"0\"}", hard);
	plan_now(&t);
	assert_true(t.res.over_plan);
	assert_json(t.res.over_resources, "[\"pods\"]");
	assert_json(t.res.used, "{\"pods\": \"12\", \"requests.cpu\": \"1\"}");
	/* Pinned at usage; cpu, within its plan, is untouched. */
	assert_int_equal(t.res.n_phase1, 2);
	assert_write(&t.res.phase1[0], "a", true, "{\"pods\": \"8\", \"requests.cpu\": \"2\"}");
	assert_write(&t.res.phase1[1], "b", true, "{\"pods\": \"4\", \"requests.cpu\": \"2\"}");
	assert_int_equal(t.res.n_phase2, 0);
	apply(&t);
	confirm(&t, "a");
	confirm(&t, "b");
	plan_now(&t);
	assert_true(t.res.over_plan);
	assert_int_equal(t.res.n_phase1 + t.res.n_phase2, 0);

	/* Usage falls within the plan: the headroom (1 pod) goes to the first by name. */
	set_json(&t.used[0], js("{\"pods\": \"5\", \"requests.cpu\": \"1\"}"));
	plan_now(&t);
	assert_false(t.res.over_plan);
	assert_int_equal(t.res.n_phase1, 1);
	assert_write(&t.res.phase1[0], "a", true, "{\"pods\": \"6\", \"requests.cpu\": \"2\"}");
	assert_int_equal(t.res.n_phase2, 0);
	tenant_release(&t);
}

static void test_quotaplan__over_plan_never_raises(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"4\"}")};

	/* a uses more than its own quota allows (the quota was lowered after the pods ran). */
	add_settled(&t, "a", "{\"pods\": \"9\"}", "{\"pods\": \"3\"}");
	add_settled(&t, "b", "{\"pods\": \"0\"}", "{\"pods\": \"1\"}");
	add_ns(&t, "c", NULL, NULL, NULL);
	plan_now(&t);
	assert_true(t.res.over_plan);
	assert_int_equal(t.res.n_phase1, 1);
	assert_write(&t.res.phase1[0], "b", true, "{\"pods\": \"0\"}");
	/* The new namespace's quota is created at zero, after the lowering. */
	assert_int_equal(t.res.n_phase2, 1);
	assert_write(&t.res.phase2[0], "c", true, "{\"pods\": \"0\"}");
	tenant_release(&t);
}

static void test_quotaplan__a_raised_plan_needs_no_lowering(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"30\", \"limits.memory\": \"8Gi\"}")};
	const char *hard = "{\"pods\": \"10\", \"limits.memory\": \"2Gi\"}";

	add_settled(&t, "a", "{\"pods\": \"2\", \"limits.memory\": \"1Gi\"}", hard);
	add_settled(&t, "b", "{\"pods\": \"0\", \"limits.memory\": \"0\"}", hard);
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 0);
	assert_int_equal(t.res.n_phase2, 2);
	assert_write(&t.res.phase2[0], "a", true,
	             "{\"pods\": \"16\", \"limits.memory\": \"4608Mi\"}");
	assert_write(&t.res.phase2[1], "b", true,
	             "{\"pods\": \"14\", \"limits.memory\": \"3584Mi\"}");
	tenant_release(&t);
}

static void test_quotaplan__a_raised_plan_tops_up_a_skewed_split(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"22\"}")};

	/* An even split would lower a (u 2 + 10 < 16): the extra 2 pods go on top instead. */
	add_settled(&t, "a", "{\"pods\": \"2\"}", "{\"pods\": \"16\"}");
	add_settled(&t, "b", "{\"pods\": \"0\"}", "{\"pods\": \"4\"}");
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 0);
	assert_int_equal(t.res.n_phase2, 2);
	assert_write(&t.res.phase2[0], "a", true, "{\"pods\": \"17\"}");
	assert_write(&t.res.phase2[1], "b", true, "{\"pods\": \"5\"}");
	tenant_release(&t);
}

static void test_quotaplan__a_removed_namespace_returns_its_share(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"9\"}")};

	add_settled(&t, "a", "{\"pods\": \"1\"}", "{\"pods\": \"3\"}");
	add_settled(&t, "b", "{\"pods\": \"0\"}", "{\"pods\": \"3\"}");
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 0);
	assert_int_equal(t.res.n_phase2, 2);
	assert_write(&t.res.phase2[0], "a", true, "{\"pods\": \"5\"}");
	assert_write(&t.res.phase2[1], "b", true, "{\"pods\": \"4\"}");
	tenant_release(&t);
}

static void test_quotaplan__a_sleeping_namespace_keeps_its_share(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"8\", \"requests.cpu\": \"2\"}")};
	size_t a;

	/* a sleeps (its pods gone) with what it used reserved; b would take the headroom */
	a = add_settled(&t, "a", "{\"pods\": \"0\", \"requests.cpu\": \"0\"}",
	                "{\"pods\": \"4\", \"requests.cpu\": \"1\"}");
	t.reserved[a] = js("{\"pods\": \"3\", \"requests.cpu\": \"800m\", \"secrets\": \"x\"}");
	add_settled(&t, "b", "{\"pods\": \"4\", \"requests.cpu\": \"1\"}",
	            "{\"pods\": \"4\", \"requests.cpu\": \"1\"}");
	plan_now(&t);
	/* a counts 3 pods and 800m: the tenant has 1 pod and 200m of headroom left, split evenly
	 * (the pod to a, first by name); without the reservation a would count 0 and be cut to
	 * 2 pods and 500m, b given 6 and 1500m */
	assert_int_equal(t.res.n_phase1, 1);
	assert_write(&t.res.phase1[0], "a", true, "{\"pods\": \"4\", \"requests.cpu\": \"900m\"}");
	assert_json(t.res.used, "{\"pods\": \"7\", \"requests.cpu\": \"1800m\"}");
	tenant_release(&t);
}

static void test_quotaplan__a_lowered_plan_does_not_hold_a_reservation(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"4\"}")};
	size_t a;

	/* over plan (3 reserved + 3 used > 4): a is pinned at what it really uses */
	a = add_settled(&t, "a", "{\"pods\": \"0\"}", "{\"pods\": \"3\"}");
	t.reserved[a] = js("{\"pods\": \"3\"}");
	add_settled(&t, "b", "{\"pods\": \"3\"}", "{\"pods\": \"3\"}");
	plan_now(&t);
	assert_true(t.res.over_plan);
	assert_int_equal(t.res.n_phase1, 1);
	assert_write(&t.res.phase1[0], "a", true, "{\"pods\": \"0\"}");
	tenant_release(&t);
}

static void test_quotaplan__plan_resources_added_and_dropped(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"4\", \"services\": \"2\"}")};

	/* services is new to the plan; secrets was dropped from it. */
	add_settled(&t, "a", "{\"pods\": \"1\", \"secrets\": \"3\"}",
	            "{\"pods\": \"2\", \"secrets\": \"5\"}");
	add_settled(&t, "b", "{\"pods\": \"0\"}", "{\"pods\": \"2\"}");
	plan_now(&t);
	assert_int_equal(t.res.n_phase1, 0);
	assert_int_equal(t.res.n_phase2, 2);
	assert_write(&t.res.phase2[0], "a", true, "{\"pods\": \"2\", \"services\": \"1\"}");
	assert_write(&t.res.phase2[1], "b", true, "{\"pods\": \"2\", \"services\": \"1\"}");
	assert_json(t.res.used, "{\"pods\": \"1\", \"services\": \"0\"}");
	tenant_release(&t);
}

static void test_quotaplan__order_of_input_does_not_matter(void **state)
{
	struct tenant x = {.plan = js("{\"pods\": \"7\", \"requests.cpu\": \"3\"}")};
	struct tenant y = {.plan = js("{\"requests.cpu\": \"3\", \"pods\": \"7\"}")};
	const char *names[] = {"z", "m", "a"};
	size_t k;

	for (k = 0; k < 3; k++) {
		add_ns(&x, names[k], NULL, NULL, NULL);
		add_ns(&y, names[2 - k], NULL, NULL, NULL);
	}
	plan_now(&x);
	plan_now(&y);
	assert_int_equal(x.res.n_phase2, 3);
	for (k = 0; k < 3; k++) {
		char *a = json_dumps(x.res.phase2[k].hard, 0);
		char *b = json_dumps(y.res.phase2[k].hard, 0);

		assert_string_equal(x.res.phase2[k].ns, y.res.phase2[k].ns);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
	assert_string_equal(x.res.phase2[0].ns, "a");
	tenant_release(&x);
	tenant_release(&y);
}

static void expect_einval(const char *plan, const char *used, const char *spec, const char *msg)
{
	struct tenant t = {.plan = js(plan)};
	struct ll_err err = {{0}};

	add_ns(&t, "a", used, NULL, spec);
	assert_int_equal(compute(&t, t.n, &err), -EINVAL);
	assert_non_null(strstr(err.msg, msg));
	assert_null(t.res.phase2);
	assert_null(t.res.used);
	tenant_release(&t);
}

static void test_quotaplan__rejects_malformed_input(void **state)
{
	struct tenant t = {.plan = js("{\"pods\": \"1\"}")};
	struct ll_err err = {{0}};

	expect_einval("{\"pods\": \"lots\"}", NULL, NULL, "plan hard[pods]");
	expect_einval("{\"pods\": \"-1\"}", NULL, NULL, "plan hard[pods]");
	expect_einval("{\"pods\": 1.5}", NULL, NULL, "plan hard[pods]");
	expect_einval("[]", NULL, NULL, "plan hard is not an object");
	expect_einval("{\"pods\": \"1\"}", "{\"pods\": \"x\"}", NULL, "a: status.used[pods]");
	expect_einval("{\"pods\": \"1\"}", NULL, "[1]", "a: spec.hard is not an object");
	/* Values of resources outside the plan are not read. */
	add_ns(&t, "a", "{\"secrets\": \"x\"}", NULL, NULL);
	add_ns(&t, "a", NULL, NULL, NULL);
	assert_int_equal(compute(&t, 1, &err), 0);
	qp_result_release(&t.res);
	assert_int_equal(compute(&t, 2, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "listed twice"));
	tenant_release(&t);
}

static void test_quotaplan__an_empty_tenant_or_plan_writes_nothing(void **state)
{
	struct tenant t = {.plan = NULL};

	plan_now(&t);
	assert_int_equal(t.res.n_phase1 + t.res.n_phase2, 0);
	assert_json(t.res.used, "{}");
	add_ns(&t, "a", NULL, NULL, NULL);
	plan_now(&t);
	assert_int_equal(t.res.n_phase1 + t.res.n_phase2, 0);
	tenant_release(&t);
}

/* splitmix64: a fixed seed gives the same inputs on every run. */
static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void test_quotaplan__random_worlds_keep_the_invariant(void **state)
{
	uint64_t seed = 20240517;
	uint8_t bytes[400];
	size_t run, k;

	for (run = 0; run < 400; run++) {
		const char *fail;

		for (k = 0; k < sizeof(bytes); k++)
			bytes[k] = (uint8_t)next_random(&seed);
		if (bytes[0] == '{')
			bytes[0] = 0;
		fail = sim_run(bytes, sizeof(bytes));
		if (fail)
			fail_msg("run %zu: %s", run, fail);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_quotaplan__new_tenant_gets_the_plan_split),
	        cmocka_unit_test(test_quotaplan__units_and_remainders_are_exact),
	        cmocka_unit_test(test_quotaplan__a_sub_granule_rest_goes_to_the_first),
	        cmocka_unit_test(test_quotaplan__steady_state_writes_nothing),
	        cmocka_unit_test(test_quotaplan__small_usage_changes_write_nothing),
	        cmocka_unit_test(test_quotaplan__usage_growth_moves_headroom_toward_it),
	        cmocka_unit_test(test_quotaplan__the_last_unit_moves_to_a_full_namespace),
	        cmocka_unit_test(test_quotaplan__adding_a_namespace_lowers_the_others_first),
	        cmocka_unit_test(test_quotaplan__a_write_that_lowers_and_raises_holds_the_raise),
	        cmocka_unit_test(test_quotaplan__plan_below_usage_pins_and_reports),
	        cmocka_unit_test(test_quotaplan__over_plan_never_raises),
	        cmocka_unit_test(test_quotaplan__a_raised_plan_needs_no_lowering),
	        cmocka_unit_test(test_quotaplan__a_raised_plan_tops_up_a_skewed_split),
	        cmocka_unit_test(test_quotaplan__a_removed_namespace_returns_its_share),
	        cmocka_unit_test(test_quotaplan__a_sleeping_namespace_keeps_its_share),
	        cmocka_unit_test(test_quotaplan__a_lowered_plan_does_not_hold_a_reservation),
	        cmocka_unit_test(test_quotaplan__plan_resources_added_and_dropped),
	        cmocka_unit_test(test_quotaplan__order_of_input_does_not_matter),
	        cmocka_unit_test(test_quotaplan__rejects_malformed_input),
	        cmocka_unit_test(test_quotaplan__an_empty_tenant_or_plan_writes_nothing),
	        cmocka_unit_test(test_quotaplan__random_worlds_keep_the_invariant),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
