/*
 * quotaplan.h - split a Plan's tenant-wide ResourceQuota among the tenant's namespaces.
 *
 * A Plan's spec.resourceQuota.hard limits a tenant as a whole, summed over its namespaces, but
 * Kubernetes enforces quota per namespace. landlord therefore writes one ResourceQuota per tenant
 * namespace, and this module decides each one's spec.hard. It is pure (state in, writes out, no
 * I/O); the caller plans again whenever a ResourceQuota, a tenant namespace or the Plan changes.
 *
 * Policy, per plan resource (resources are planned independently). P is the plan's value,
 * used_i the namespace's status.used (0 when absent; for a sleeping namespace, the larger of that
 * and its reservation, qp_ns.reserved, so that its share is not handed out while it sleeps), U the
 * sum of used_i, n the namespace count, spec_i the namespace's current spec.hard value, and a
 * granule is 1m for cpu, requests.cpu and limits.cpu and 1 for every other resource (bytes, counts,
 * devices).
 * - Over plan (U > P): every namespace is pinned at min(used_i, spec_i), spec_i 0 if absent,
 *   with used_i its status.used alone: a reservation does not hold a share the plan no longer
 *   has (the sleeping namespace's workloads are reported QuotaExceeded when they wake).
 *   Nothing is raised, so nothing new can be created anywhere until usage falls below the plan.
 *   Reported in qp_result.over_plan so that the controller can set a condition.
 * - Even split E: used_i plus an even share of the headroom H = P - U, in whole granules; leftover
 *   granules go one each to the first namespaces by name, and a sub-granule rest to the first.
 *   E sums to exactly P and no value is below its usage.
 * - When every namespace has a spec_i and they sum to at most P: if E lowers no one, E is taken
 *   (a raised plan, or the second half of a rebalance). Otherwise the current values are topped up:
 *   spec_i plus an even split of P - sum(spec_i), as above (nothing to add when they sum to P).
 *   That result is kept while every namespace's free room (value - used_i) is at least half an
 *   even share of the headroom, floor(floor(H / granule) / 2n) granules, but at least one
 *   granule while H holds one (a full namespace is never left full while the tenant has room
 *   elsewhere); this is the hysteresis: usage changes inside that band, and a steady state,
 *   cost no API writes.
 * - Otherwise (a namespace without a value, values above P, or a namespace short of free room)
 *   the resource is rebalanced to E.
 *
 * Safety. ResourceQuota admission enforces status.hard, which kube-controller-manager copies from
 * spec.hard later. So e_i = max(spec.hard, status.hard) (absent counts 0) bounds what namespace i
 * may consume, and the invariant is: per plan resource, the sum of e_i never exceeds P because of
 * a write landlord makes. Headroom therefore moves in two phases:
 * - phase 1: namespaces with a value to lower, with the map to write now: lowered values at their
 *   target, values to raise held at their current spec.hard. Applying it never increases an e_i.
 *   A namespace stays in phase 1 (with write = false once spec.hard holds the map) until its
 *   status.hard shows the lowered values.
 * - phase 2: namespaces whose spec.hard must change beyond that (raises, new ResourceQuotas,
 *   keys of resources the plan dropped), with the final map. Apply phase 2 only when phase 1 is
 *   empty: then every e_i equals its target, and the targets sum to at most P (not over plan) or
 *   are no higher than before (over plan).
 * Pass every namespace that still has a ResourceQuota, terminating ones included: one left out
 * counts 0, and its share is handed to the others at once.
 *
 * Inputs are read in place: the maps are struct jval views into documents (base/jdoc.h), the
 * cached Plan and ResourceQuotas or a document built from what landlord just wrote, held by the
 * caller for the call. Output is what landlord writes, as jansson values. It is deterministic:
 * entries sorted by namespace name, map keys by resource name, values in the canonical form of
 * the plan's suffix family (qty_format()). Thread-safety: reentrant.
 */
#ifndef LANDLORD_QUOTAPLAN_H
#define LANDLORD_QUOTAPLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/jdoc.h"

struct ll_err;

/*
 * One tenant namespace, as its ResourceQuota shows it. Maps are ResourceList objects, or the
 * missing value (JT_NONE) when absent.
 */
struct qp_ns {
	const char *name;        /* namespace name */
	struct jval used;        /* status.used; missing before the quota controller filled it */
	struct jval status_hard; /* status.hard in force; missing before it was filled */
	struct jval spec_hard;   /* spec.hard landlord last wrote; missing when no ResourceQuota */
	/* asleep (docs/hibernation.md): the "used" of its landlord.dev/sleep-reserved annotation,
	 * what it used when it went to sleep; its usage counts as the larger of the two per
	 * resource. Missing when awake. */
	struct jval reserved;
};

/* A spec.hard to write into one namespace's ResourceQuota. */
struct qp_write {
	char *ns;     /* namespace name (owned) */
	json_t *hard; /* the whole spec.hard, plan resources only (owned reference) */
	bool write; /* false: spec.hard already holds it; waiting for status.hard (phase 1 only) */
};

struct qp_result {
	struct qp_write *phase1; /* lower these first, sorted by namespace */
	size_t n_phase1;
	struct qp_write *phase2; /* then, once phase 1 is empty, write these */
	size_t n_phase2;
	json_t *used;           /* tenant-wide usage per plan resource (object, owned) */
	bool over_plan;         /* some resource's tenant-wide usage exceeds the plan */
	json_t *over_resources; /* sorted names of those resources (array, owned) */
};

/**
 * qp_compute() - plan the per-namespace spec.hard values for one tenant.
 * @plan_hard: the Plan's spec.resourceQuota.hard; the missing value is an empty plan. Values
 *             are quantity strings or integers.
 * @ns:        the tenant's namespaces in any order (borrowed; names must be unique).
 * @out:       OUT, filled on 0; zeroed on error. Release with qp_result_release().
 * Return: 0; -EINVAL for a map that is not an object, a plan or namespace value that is not a
 *         non-negative quantity, or a missing or duplicate name; -ERANGE when a sum does not fit.
 *         Values of resources outside the plan are ignored.
 */
int qp_compute(struct jval plan_hard, const struct qp_ns *ns, size_t n_ns,
               struct qp_result *out /* OUT */, struct ll_err *err);

/** qp_result_release() - free what @r holds and zero it; a zeroed result is fine. */
void qp_result_release(struct qp_result *r);

#endif
