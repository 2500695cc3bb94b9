/* tenant_inside.c - quota and policies in a Tenant's namespaces (see tenant_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "controllers/tenant_internal.h"
#include "kube/conditions.h"
#include "kube/events.h"
#include "kube/status.h"
#include "tenancy/landlordconfig_current.h"
#include "tenancy/quotaplan.h"

static json_t *privileged_namespaces(struct rec *r)
{
	/* tenant namespaces are never privileged: only the others are matched */
	struct jdoc_list all = inf_by_index_ref(r->t->namespaces, IDX_UNTENANTED, UNTENANTED);
	json_t *set = json_object(), *out;

	for (size_t i = 0; i < all.n; i++) {
		const char *name = jd_name(all.items[i]);

		if (name && lcfg_is_privileged_namespace(r->cfg, name))
			json_object_set_new(set, name, json_true());
	}
	out = tm_sorted_keys(set); /* the allow-list must be stable */
	json_decref(set);
	jdoc_list_release(&all);
	return out;
}

/* Is the namespace's ResourceQuota in force (status.hard filled in and equal to spec.hard)? */
/* tm_canonical_quantities() of a cached ResourceList (a few quantities, copied to compare). */
static json_t *canonical_of(struct jval list)
{
	json_t *copy = jval_to_json(list), *out = tm_canonical_quantities(copy);

	json_decref(copy);
	return out;
}

static bool quota_in_force(const struct jdoc *rq)
{
	json_t *spec, *status;
	bool same;

	if (rq == NULL)
		return false;
	spec = canonical_of(jd_get(rq, "spec", "hard", NULL));
	status = canonical_of(jd_get(rq, "status", "hard", NULL));
	same = json_equal(spec, status);
	json_decref(spec);
	json_decref(status);
	return same;
}

static void apply_quota_writes(struct rec *r, const struct qp_write *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct jdoc *cached;
		json_t *rq;

		if (!w[i].write)
			continue;
		rq = tm_resourcequota(r->tenant, w[i].ns, w[i].hard);
		cached = inf_get_ref(r->t->owned[OWN_RQ], w[i].ns, QUOTA_NAME);
		tc_ensure(r, &KC_RESOURCEQUOTAS, rq, cached);
		jdoc_unref(cached);
		json_decref(rq);
	}
}

/* The quota model's view of one cached ResourceQuota: its three lists, copied into @keep. */
static struct qp_ns qp_in(const char *ns, const struct jdoc *rq, json_t *keep)
{
	struct jval lists[3] = {jd_get(rq, "status", "used", NULL),
	                        jd_get(rq, "status", "hard", NULL),
	                        jd_get(rq, "spec", "hard", NULL)};
	json_t *copies[3];

	for (int i = 0; i < 3; i++) {
		copies[i] = jval_to_json(lists[i]);
		if (copies[i])
			json_array_append_new(keep, copies[i]); /* alive until the end */
	}
	return (struct qp_ns){ns, copies[0], copies[1], copies[2]};
}

static void sync_quota(struct rec *r)
{
	const json_t *plan_hard = jx_get(r->plan, "spec", "resourceQuota", "hard", NULL);
	struct jdoc_list rqs = inf_by_index_ref(r->t->owned[OWN_RQ], IDX_TENANT, r->name);
	size_t n = 0, cap = json_object_size(r->active) + rqs.n;
	struct qp_ns *in = xcalloc(cap ? cap : 1, sizeof(*in));
	json_t *keep = json_array(), *ns;
	struct qp_result res = {0};
	struct ll_err err;
	const char *name;

	json_object_foreach(r->active, name, ns) {
		const struct jdoc *cached = inf_get_ref(r->t->owned[OWN_RQ], name, QUOTA_NAME);

		in[n++] = qp_in(name, cached, keep);
		jdoc_unref(cached);
	}
	for (size_t i = 0; i < rqs.n; i++) {
		const char *in_ns = jd_namespace(rqs.items[i]);

		if (in_ns && !json_object_get(r->active, in_ns) &&
		    tc_str_eq(jd_name(rqs.items[i]), QUOTA_NAME) && tc_namespace_was_ours(r, in_ns))
			in[n++] = qp_in(in_ns, rqs.items[i], keep);
	}
	if (qp_compute(plan_hard, in, n, &res, &err) < 0) {
		tc_failf(r, "cannot split the plan's quota: %s", err.msg);
		goto out;
	}
	r->over_plan = res.over_plan;
	r->quota_used = json_incref(res.used);
	if (res.n_phase1 > 0) {
		apply_quota_writes(r, res.phase1, res.n_phase1);
		r->quota_pending = true; /* raises wait until the lowered values are in force */
	} else {
		apply_quota_writes(r, res.phase2, res.n_phase2);
	}
out:
	qp_result_release(&res);
	free(in);
	json_decref(keep);
	jdoc_list_release(&rqs); /* after the model: @in borrows the namespace names */
}

json_t *tc_build_isolation(const struct rec *r, const char *ns)
{
	if (!tm_network_isolation(r->tenant, r->cfg))
		return NULL;
	return tm_networkpolicy(r->tenant, ns, r->privileged);
}

json_t *tc_build_limits(const struct rec *r, const char *ns)
{
	return tm_limitrange(r->tenant, r->plan, ns);
}

/*
 * The quota model writes spec.hard (apply_quota_writes()); what others add beside it (scopes, a
 * scopeSelector, a resource in hard the model ignores is the model's) is reverted here.
 */
static void revert_quota_additions(struct rec *r, const char *ns, const struct jdoc *cached)
{
	json_t *hard, *want, *added;

	if (cached == NULL)
		return;
	hard = jval_to_json(jd_get(cached, "spec", "hard", NULL));
	want = tm_resourcequota(r->tenant, ns, hard);
	added = tc_added_by_others(jdoc_root(cached), want, true);
	if (added) {
		log_info("reverting fields others added", "{s:s,s:s,s:s,s:O}", "tenant", r->name,
		         "namespace", ns, "name", QUOTA_NAME, "removed", added);
		tc_merge_patch(r, &KC_RESOURCEQUOTAS, ns, QUOTA_NAME, added);
	}
	json_decref(added);
	json_decref(want);
	json_decref(hard);
}

bool tc_always(const struct rec *r)
{
	(void)r;
	return true;
}

/* Without its Plan landlord cannot tell what the limits should be: it leaves them be. */
bool tc_plan_known(const struct rec *r)
{
	return r->plan != NULL;
}

/* Every policy of OWNED in @ns; returns whether all are in place. */
static bool sync_policies(struct rec *r, const char *ns)
{
	bool ok = true;

	for (int k = 0; k < N_OWNED; k++) {
		const struct owned *kind = &TC_OWNED[k];
		json_t *want;
		const struct jdoc *cached;

		if (kind->build == NULL)
			continue;
		want = kind->build(r, ns);
		cached = inf_get_ref(r->t->owned[k], ns, kind->name);
		if (want)
			ok &= tc_ensure(r, kind->gvr, want, cached);
		else if (cached && kind->delete_unwanted(r))
			ok &= tc_delete_obj(r, kind->gvr, cached);
		json_decref(want);
		jdoc_unref(cached);
	}
	return ok;
}

void tc_sync_inside(struct rec *r)
{
	const char *name;
	json_t *ns;

	r->privileged = privileged_namespaces(r);
	if (r->plan)
		sync_quota(r);
	else
		r->quota_pending = true;
	json_object_foreach(r->active, name, ns) {
		const struct jdoc *rq = inf_get_ref(r->t->owned[OWN_RQ], name, QUOTA_NAME);
		bool has_plan_quota = json_object_size(jx_get(r->plan, "spec", "resourceQuota",
		                                              "hard", NULL)) > 0;
		bool quota_ok = r->plan && (!has_plan_quota || quota_in_force(rq));
		bool policies_ok = sync_policies(r, name);

		revert_quota_additions(r, name, rq);
		if (!quota_ok)
			r->quota_pending = true;
		if (!policies_ok)
			r->policies_pending = true;
		tc_sync_access(r, name, ns, quota_ok && policies_ok);
		jdoc_unref(rq);
	}
	/* objects left in namespaces that are no longer this tenant's */
	tc_delete_owned_in(r, NULL, r->active);
}
