/*
 * fuzz_quotaplan.c - quotaplan under a simulated tenant.
 *
 * The input bytes drive a world of up to SIM_NS_MAX namespaces: usage changes (only up to what
 * status.hard admits, as ResourceQuota admission does), Plan changes, namespaces added and
 * removed, landlord reconciles (write phase 1; write phase 2 only when phase 1 is empty) and
 * kube-controller-manager copying spec.hard into status.hard. Checked after every reconcile: a
 * phase-1 write never raises what a namespace may consume, and no write takes the in-force sum
 * (max(spec.hard, status.hard) over namespaces) above the plan. Once the world goes quiet, it
 * converges to a fixed point that plans no writes. quotaplan reads its maps in place, as views
 * into documents (the simulation's maps are converted, as the informer caches them). An input
 * starting with '{' is instead one JSON document {"plan": {...}, "namespaces": [{"name", "used",
 * "status", "spec"}...]}, parsed into a document and given to qp_compute() as is.
 * tests/unit/test_quotaplan.c runs sim_run() over seeded random inputs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/jdoc.h"
#include "kube/quantity.h"
#include "tenancy/quotaplan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SIM_RES    3
#define SIM_NS_MAX 6
#define SIM_QUIET  8 /* rounds of reconcile + confirm that must reach the fixed point */

static const char *const sim_res[SIM_RES] = {"limits.memory", "pods", "requests.cpu"};
/* One generated step, in nano-units: 64Mi, 1 pod, 100m. */
static const __int128 sim_step[SIM_RES] = {(__int128)64 * 1048576 * 1000000000,
                                           (__int128)1000000000, (__int128)100000000};
static const enum qty_format sim_fmt[SIM_RES] = {QTY_BINARY_SI, QTY_DECIMAL_SI, QTY_DECIMAL_SI};

struct sim_ns {
	char name[8];
	json_t *spec;   /* NULL: no ResourceQuota yet */
	json_t *status; /* NULL: not filled by the quota controller yet */
	__int128 used[SIM_RES];
};

struct sim {
	const uint8_t *data;
	size_t size, at;
	json_t *plan;
	struct sim_ns ns[SIM_NS_MAX];
	size_t n;
	const char *fail; /* first violated property */
};

static unsigned sim_byte(struct sim *s)
{
	return s->at < s->size ? s->data[s->at++] : 0;
}

static json_t *sim_qty_json(size_t r, __int128 nano)
{
	struct qty q = {.nano = nano, .format = sim_fmt[r]};
	char buf[QTY_STR_MAX];

	return json_string(qty_format(&q, buf));
}

/* A value of a map that quotaplan or the simulation wrote; 0 when absent. */
static __int128 sim_value(struct sim *s, const json_t *map, size_t r)
{
	const json_t *v = map ? json_object_get(map, sim_res[r]) : NULL;
	struct qty q;

	if (!v)
		return 0;
	if (!json_is_string(v) || qty_parse(json_string_value(v), &q) != 0) {
		s->fail = "a planned value does not parse back";
		return 0;
	}
	return q.nano;
}

static __int128 sim_in_force(struct sim *s, const struct sim_ns *ns, size_t r)
{
	__int128 spec = sim_value(s, ns->spec, r), status = sim_value(s, ns->status, r);

	return spec > status ? spec : status;
}

static __int128 sim_in_force_sum(struct sim *s, size_t r)
{
	__int128 sum = 0;
	size_t i;

	for (i = 0; i < s->n; i++)
		sum += sim_in_force(s, &s->ns[i], r);
	return sum;
}

static void sim_usage(struct sim *s)
{
	struct sim_ns *ns = &s->ns[sim_byte(s) % s->n];
	size_t r = sim_byte(s) % SIM_RES;
	__int128 enforced = ns->status ? sim_value(s, ns->status, r) : 0;
	__int128 limit = ns->used[r] > enforced ? ns->used[r] : enforced;

	/* Usage may fall freely but only grow up to status.hard. */
	ns->used[r] = limit * sim_byte(s) / 255;
}

static void sim_plan_change(struct sim *s)
{
	size_t r = sim_byte(s) % SIM_RES;

	json_object_set_new(s->plan, sim_res[r], sim_qty_json(r, sim_step[r] * sim_byte(s)));
}

static void sim_add(struct sim *s)
{
	struct sim_ns *ns;
	char name[8];
	size_t i;

	snprintf(name, sizeof(name), "n%02x", sim_byte(s));
	for (i = 0; i < s->n; i++)
		if (strcmp(s->ns[i].name, name) == 0)
			return;
	ns = &s->ns[s->n++];
	memset(ns, 0, sizeof(*ns));
	memcpy(ns->name, name, sizeof(name));
}

static void sim_remove(struct sim *s)
{
	size_t i = sim_byte(s) % s->n;

	json_decref(s->ns[i].spec);
	json_decref(s->ns[i].status);
	memmove(&s->ns[i], &s->ns[i + 1], (s->n - i - 1) * sizeof(s->ns[0]));
	s->n--;
}

static void sim_confirm_ns(struct sim_ns *ns)
{
	json_decref(ns->status);
	ns->status = ns->spec ? json_deep_copy(ns->spec) : NULL;
}

static json_t *sim_used_json(const struct sim_ns *ns)
{
	json_t *used = json_object();
	size_t r;

	/* The quota controller reports only the resources in status.hard. */
	for (r = 0; r < SIM_RES; r++)
		if (ns->status && json_object_get(ns->status, sim_res[r]))
			json_object_set_new(used, sim_res[r], sim_qty_json(r, ns->used[r]));
	return used;
}

/* @j as a document, the way the informer caches it (in @docs); NULL: the missing value. */
static struct jval sim_view(const json_t *j, struct jdoc **docs, size_t *n)
{
	struct jdoc *d = NULL;

	if (j == NULL || jdoc_from_json(j, NULL, &d, NULL) != 0)
		return jdoc_root(NULL);
	docs[(*n)++] = d;
	return jdoc_root(d);
}

static int sim_compute(struct sim *s, struct qp_result *res)
{
	struct qp_ns in[SIM_NS_MAX];
	struct jdoc *docs[1 + 3 * SIM_NS_MAX];
	size_t i, nd = 0;
	int rc;

	for (i = 0; i < s->n; i++) {
		json_t *used = s->ns[i].status ? sim_used_json(&s->ns[i]) : NULL;

		in[i] = (struct qp_ns){s->ns[i].name, sim_view(used, docs, &nd),
		                       sim_view(s->ns[i].status, docs, &nd),
		                       sim_view(s->ns[i].spec, docs, &nd), jdoc_root(NULL)};
		json_decref(used);
	}
	rc = qp_compute(sim_view(s->plan, docs, &nd), in, s->n, res, NULL);
	while (nd > 0)
		jdoc_unref(docs[--nd]);
	if (rc != 0)
		s->fail = "qp_compute() failed on a well-formed world";
	return rc;
}

static struct sim_ns *sim_find(struct sim *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->ns[i].name, name) == 0)
			return &s->ns[i];
	s->fail = "a write names an unknown namespace";
	return NULL;
}

static void sim_write(struct sim *s, const struct qp_write *w, bool phase1)
{
	struct sim_ns *ns = sim_find(s, w->ns);
	__int128 before[SIM_RES];
	size_t r;

	if (!ns || !w->write)
		return;
	for (r = 0; r < SIM_RES; r++)
		before[r] = sim_in_force(s, ns, r);
	json_decref(ns->spec);
	ns->spec = json_deep_copy(w->hard);
	for (r = 0; phase1 && r < SIM_RES; r++)
		if (sim_in_force(s, ns, r) > before[r])
			s->fail = "a phase-1 write raised a namespace's in-force hard";
}

static bool sim_over(const struct qp_result *res, size_t r)
{
	size_t k;

	for (k = 0; k < json_array_size(res->over_resources); k++)
		if (strcmp(json_string_value(json_array_get(res->over_resources, k)), sim_res[r]) ==
		    0)
			return true;
	return false;
}

/* One landlord reconcile; returns the number of writes made. */
static size_t sim_reconcile(struct sim *s)
{
	struct qp_result res;
	__int128 before[SIM_RES], after, plan;
	size_t r, k, writes = 0;

	if (sim_compute(s, &res) != 0)
		return 0;
	for (r = 0; r < SIM_RES; r++)
		before[r] = sim_in_force_sum(s, r);
	for (k = 0; k < res.n_phase1; k++) {
		writes += res.phase1[k].write;
		sim_write(s, &res.phase1[k], true);
	}
	for (k = 0; res.n_phase1 == 0 && k < res.n_phase2; k++) {
		writes++;
		sim_write(s, &res.phase2[k], false);
	}
	for (r = 0; r < SIM_RES; r++) {
		after = sim_in_force_sum(s, r);
		plan = sim_value(s, s->plan, r);
		if (after > plan && after > before[r])
			s->fail = "a write raised the in-force sum above the plan";
		if (res.n_phase1 == 0 && !sim_over(&res, r) && after > plan)
			s->fail = "after phase 2 the in-force sum exceeds the plan";
	}
	qp_result_release(&res);
	return writes;
}

/* The fixed point: no writes planned; shares sum to the plan and cover usage, or are pinned. */
static void sim_check_fixed_point(struct sim *s)
{
	struct qp_result res;
	__int128 sum, used, plan, spec;
	size_t r, i;

	if (sim_compute(s, &res) != 0)
		return;
	if (res.n_phase1 || res.n_phase2)
		s->fail = "a quiet world still plans writes";
	for (r = 0; r < SIM_RES && s->n; r++) {
		plan = sim_value(s, s->plan, r);
		sum = used = 0;
		for (i = 0; i < s->n; i++) {
			spec = sim_value(s, s->ns[i].spec, r);
			sum += spec;
			used += s->ns[i].used[r];
			if (sim_over(&res, r) ? spec > s->ns[i].used[r] : spec < s->ns[i].used[r])
				s->fail = "a settled share is below usage, or above it when over "
				          "plan";
		}
		if (sim_over(&res, r) != (used > plan))
			s->fail = "over_plan disagrees with usage";
		if (!sim_over(&res, r) && sum != plan)
			s->fail = "settled shares do not add up to the plan";
	}
	qp_result_release(&res);
}

static void sim_step_once(struct sim *s)
{
	unsigned op = sim_byte(s) % 6;

	if (op == 2 && s->n < SIM_NS_MAX)
		sim_add(s);
	else if (op == 1)
		sim_plan_change(s);
	else if (op == 4)
		sim_reconcile(s);
	else if (s->n && op == 0)
		sim_usage(s);
	else if (s->n && op == 3)
		sim_remove(s);
	else if (s->n && op == 5)
		sim_confirm_ns(&s->ns[sim_byte(s) % s->n]);
}

/* Runs the world the bytes describe; NULL, or the first property it violated. */
static const char *sim_run(const uint8_t *data, size_t size)
{
	struct sim s = {.data = data, .size = size};
	size_t r, i, round;

	s.plan = json_object();
	for (r = 0; r < SIM_RES; r++)
		json_object_set_new(s.plan, sim_res[r], sim_qty_json(r, sim_step[r] * 20));
	while (s.at < s.size && !s.fail)
		sim_step_once(&s);
	for (round = 0; round < SIM_QUIET && !s.fail; round++) {
		sim_reconcile(&s);
		for (i = 0; i < s.n; i++)
			sim_confirm_ns(&s.ns[i]);
	}
	if (!s.fail)
		sim_check_fixed_point(&s);
	for (i = 0; i < s.n; i++) {
		json_decref(s.ns[i].spec);
		json_decref(s.ns[i].status);
	}
	json_decref(s.plan);
	return s.fail;
}

/* Arbitrary JSON input: no crash, no leak, and the same answer twice. */
static void json_mode(const uint8_t *data, size_t size)
{
	struct jdoc *doc = NULL;
	struct qp_ns in[16];
	struct qp_result a, b;
	struct jval nss, plan;
	size_t n = 0, k;

	if (jdoc_parse((const char *)data, size, NULL, &doc, NULL) != 0)
		return;
	nss = jd_get(doc, "namespaces", NULL);
	plan = jd_get(doc, "plan", NULL);
	for (k = 0; k < jval_size(nss) && n < 16; k++) {
		struct jval o = jval_at(nss, k);

		in[n++] = (struct qp_ns){jval_str(jval_get(o, "name")), jval_get(o, "used"),
		                         jval_get(o, "status"), jval_get(o, "spec"),
		                         jval_get(o, "reserved")};
	}
	if (qp_compute(plan, in, n, &a, NULL) == 0) {
		if (qp_compute(plan, in, n, &b, NULL) != 0 || a.n_phase1 != b.n_phase1 ||
		    a.n_phase2 != b.n_phase2 || !json_equal(a.used, b.used))
			abort();
		for (k = 0; k < a.n_phase2; k++)
			if (strcmp(a.phase2[k].ns, b.phase2[k].ns) != 0 ||
			    !json_equal(a.phase2[k].hard, b.phase2[k].hard))
				abort();
		qp_result_release(&a);
		qp_result_release(&b);
	}
	jdoc_unref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *fail;

	if (size && data[0] == '{') {
		json_mode(data, size);
		return 0;
	}
	fail = sim_run(data, size);
	if (fail) {
		fprintf(stderr, "quotaplan: %s\n", fail);
		abort();
	}
	return 0;
}
