/*
 * planstatus.h - a Plan's status summary, kept up to date one tenant at a time.
 *
 * A Plan's status must stay small however many tenants are on the plan, and must not be rebuilt
 * from every tenant whenever one of them changes. A struct ps_plan holds, per tenant on the plan,
 * what the tenant contributes (its namespace count, and its status.quota.used and .hard parsed
 * into exact nano-unit quantities) and keeps running sums and orders over them:
 *  - counts: tenants, namespaces;
 *  - totals: per resource, the sum of the tenants' used and of their hard values;
 *  - nearness: tenants ordered by how close they are to (or over) their limits;
 *  - tenants ordered by namespace count, for the maxNamespaces report.
 * ps_plan_put() replaces one tenant's contribution: its old amounts are subtracted from the sums
 * and its new ones added (exact integer arithmetic, so the sums never drift), and it is moved
 * within the two orders (binary search, then one memmove of pointers). The summary is read from
 * the sums and the first entries of the orders: its size does not depend on the number of
 * tenants. Whatever order tenants are put in, the same set of contributions gives the same
 * output, byte for byte.
 *
 * Nearness, usedPerMille. For each resource R in a tenant's status.quota.hard, with H its hard
 * value and U its used value (0 when absent), in exact nano-units:
 *  - H > 0:  U <= 0: 0;  0 < U <= H: floor(1000 * U / H);  U > H: ceil(1000 * U / H).
 *    Rounding away from 1000 makes the value tell the three cases apart: at most 999 is below
 *    the limit, exactly 1000 is at it, 1001 and more is over it.
 *  - H <= 0: PS_PER_MILLE_MAX when U > 0 (any use of a resource the plan forbids is over it),
 *    else 0 (a forbidden resource nobody uses is not a limit anyone is near).
 *  - never more than PS_PER_MILLE_MAX (a thousand times the limit).
 * A tenant's usedPerMille is the largest over its resources, and its resource the one that
 * gives it (the first by name on a tie); a tenant without hard values has 0 and no resource.
 * Tenants are ordered by usedPerMille, highest first, then by name (bytewise): over-limit
 * tenants come before those at their limit, which come before those below it.
 *
 * Input is the Tenants' own status, which landlord writes but anyone with access to the status
 * subresource could edit: a quantity that does not parse counts as absent, a negative namespace
 * count as 0, and magnitudes are clamped to PS_QTY_LIMIT nano-units (10^21 units: beyond any
 * real quantity) so that the sums of up to 10^8 tenants cannot overflow.
 *
 * Not thread-safe: one owner (the reconcile of the plan) serialises every call.
 */
#ifndef LANDLORD_PLANSTATUS_H
#define LANDLORD_PLANSTATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/jdoc.h"
#include "kube/quantity.h"

/* Most tenants listed in status.tenantsNearLimit. */
#define PS_NEAR_MAX 20
/* Most tenant names in the WithinLimits condition's message. */
#define PS_NAMES_MAX 20
/* Highest usedPerMille: a thousand times the limit. */
#define PS_PER_MILLE_MAX 1000000
/* Largest magnitude of one tenant's quantity that is summed: 10^30 nano-units (10^21 units). */
#define PS_QTY_LIMIT ((__int128)1000000000000000LL * 1000000000000000LL)

struct ps_plan;

/**
 * ps_used_per_mille() - how close @used is to @hard, in thousandths of @hard, rounded away from
 * 1000 (see the top of this file); both are clamped to +-PS_QTY_LIMIT first. Reentrant.
 */
long long ps_used_per_mille(const struct qty *used, const struct qty *hard);

/** ps_plan_new() - an empty summary (no tenants); ps_plan_free() it. Aborts on OOM. */
struct ps_plan *ps_plan_new(void);
/** ps_plan_free() - free @p and everything it holds. NULL is a no-op. */
void ps_plan_free(struct ps_plan *p);

/**
 * ps_plan_put() - add tenant @name (copied) to the plan, or replace what it contributes, from
 * @status: the Tenant's status (namespaceCount, quota.used, quota.hard), a view read only during
 * the call; a missing status contributes a tenant with no namespaces and no quota.
 */
void ps_plan_put(struct ps_plan *p, const char *name, struct jval status);
/** ps_plan_remove() - take tenant @name off the plan. Return: false when it was not on it. */
bool ps_plan_remove(struct ps_plan *p, const char *name);

/** ps_plan_tenants() - how many tenants are on the plan. */
size_t ps_plan_tenants(const struct ps_plan *p);
/** ps_plan_namespaces() - their namespaces, summed. */
long long ps_plan_namespaces(const struct ps_plan *p);

/**
 * ps_plan_status() - a new object (caller owns it):
 *   {"tenants": N, "namespaces": N,
 *    "quota": {"used": {resource: quantity}, "hard": {resource: quantity}},
 *    "tenantsNearLimit": [{"name", "namespaces", "resource", "used", "hard", "usedPerMille"}]}
 * quota holds the resources of @plan_hard (the Plan's spec.resourceQuota.hard, borrowed; NULL
 * or not an object: none), each summed over the tenants that report it ("0" when none do) and
 * written in the canonical form of the plan's value's suffix family (decimal SI when the plan's
 * value does not parse). A tenant may briefly report resources its plan no longer has (it moved,
 * or the plan changed); those are not shown. tenantsNearLimit lists at most PS_NEAR_MAX tenants
 * with a usedPerMille above 0, in nearness order, with the used and hard values of the resource
 * that sets it, as the tenant reports them (canonical form). Its size is bounded by the plan's
 * own spec, never by the number of tenants.
 */
json_t *ps_plan_status(const struct ps_plan *p, const json_t *plan_hard);

/**
 * ps_plan_over_namespaces() - the number of tenants with more than @max namespaces (none when
 * @max < 0). Appends to @names the first @limit of them, most namespaces first and then by
 * name, as "acme (5), globex (3)", followed by " and N more" when there are more; what does not
 * fit @names' cap is left out.
 */
size_t ps_plan_over_namespaces(const struct ps_plan *p, long long max, size_t limit,
                               struct buf *names);

/**
 * ps_plan_bytes() - heap bytes @p holds (its structures and the tenants' contributions, with
 * malloc's overhead), for measurements.
 */
size_t ps_plan_bytes(const struct ps_plan *p);

#endif
