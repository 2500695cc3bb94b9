/*
 * tenant_quota.c - a Tenant's quota: the Plan split over its namespaces (quotaplan.h), each share
 * put in force at once (see tenant_internal.h and docs/quota.md).
 *
 * Quota admission enforces a ResourceQuota's status.hard, which kube-controller-manager copies
 * from spec.hard when it gets to it. landlord does not wait: right after it writes a spec.hard it
 * writes status.hard (and, for a quota it has just created in a namespace nobody else can reach
 * yet, status.used) through the status subresource, guarded by the resourceVersion of its own
 * write. kube-controller-manager recomputes usage later and can only confirm or correct it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "controllers/tenant_internal.h"
#include "kube/quantity.h"
#include "tenancy/hibernation.h"
#include "tenancy/quotaplan.h"

#define FORCE_ATTEMPTS 3 /* a status write lost to quota admission's own: read and try again */
/* What the cluster's controllers put into every new namespace, as a quota counts it. */
#define ROOT_CA_CONFIGMAP "kube-root-ca.crt"

/* ---- in force or not ---- */

/* @a <= @b as quantities; false when either does not parse. */
static bool qty_le(const char *a, const char *b)
{
	struct qty qa, qb;

	return a && b && qty_parse(a, &qa) == 0 && qty_parse(b, &qb) == 0 && qty_cmp(&qa, &qb) <= 0;
}

bool tc_quota_covers(const struct jdoc *rq)
{
	struct jval status = jd_get(rq, "status", "hard", NULL),
	            spec = jd_get(rq, "spec", "hard", NULL);
	struct jval v;
	const char *k;
	size_t i;

	if (rq == NULL)
		return false;
	jval_foreach_member(spec, i, k, v)
		if (!qty_le(jval_str(jval_get(status, k)), jval_str(v)))
			return false;
	return true;
}

/* A ResourceList value as tm_canonical_quantities() writes it: canonical when it parses, else
 * as written (NULL for what is neither a string nor an integer). */
static const char *canonical(struct jval v, char buf[QTY_STR_MAX])
{
	struct qty q;

	if (jval_type(v) == JT_INT)
		q = qty_from_int(jval_int(v, 0));
	else if (jval_str(v) == NULL || qty_parse(jval_str(v), &q) != 0)
		return jval_str(v);
	return qty_format(&q, buf);
}

/* spec.hard and status.hard hold the same resources, each in the same canonical form. */
bool tc_quota_applied(const struct jdoc *rq)
{
	struct jval spec = jd_get(rq, "spec", "hard", NULL);
	struct jval status = jd_get(rq, "status", "hard", NULL), v;
	char a[QTY_STR_MAX], b[QTY_STR_MAX];
	const char *k;
	size_t i;

	if (rq == NULL || jval_type(spec) != JT_OBJECT || jval_type(status) != JT_OBJECT ||
	    jval_size(spec) != jval_size(status))
		return rq != NULL && jval_size(spec) == 0 && jval_size(status) == 0;
	jval_foreach_member(spec, i, k, v)
		if (!tc_str_eq(canonical(v, a), canonical(jval_get(status, k), b)))
			return false;
	return true;
}

const struct jdoc *tc_quota_now(struct rec *r, const char *ns)
{
	const struct jdoc *now = tc_docs_get(&r->quota_now, ns);

	return now ? jdoc_ref(now) : inf_get_ref(r->t->owned[OWN_RQ], ns, QUOTA_NAME);
}

/* ---- putting a spec.hard in force ---- */

/* 1: the object exists, 0: it does not (404), -1: cannot tell. */
static int exists(struct rec *r, const struct kc_gvr *gvr, const char *ns, const char *name)
{
	struct kc_resp resp = {0};
	struct ll_err err;
	int rc = kc_get(r->kc, gvr, ns, name, &resp, &err);
	int found = rc == 0 && kc_resp_ok(&resp) ? 1 : rc == 0 && resp.http_status == 404 ? 0 : -1;

	kc_resp_release(&resp);
	return found;
}

/*
 * What a quota of @hard counts in namespace @ns, which landlord created and nobody but landlord
 * and the cluster's controllers can reach yet: the root CA ConfigMap and the default
 * ServiceAccount where the quota counts them, nothing else. NULL when one cannot be told.
 */
static json_t *fresh_usage(struct rec *r, const char *ns, struct jval hard)
{
	json_t *used = json_object();
	int ca = -2, sa = -2, one; /* -2: not asked yet */
	const char *k;

	for (size_t i = 0; (k = jval_key_at(hard, i)) != NULL; i++) { /* NULL: past the end */
		one = 0;
		if (strcmp(k, "configmaps") == 0 || strcmp(k, "count/configmaps") == 0)
			one = ca = ca == -2 ? exists(r, &KC_CONFIGMAPS, ns, ROOT_CA_CONFIGMAP) : ca;
		else if (strcmp(k, "count/serviceaccounts") == 0)
			one = sa = sa == -2 ? exists(r, &KC_SERVICEACCOUNTS, ns,
			                             DEFAULT_SERVICEACCOUNT)
			                    : sa;
		if (one < 0) {
			json_decref(used);
			return NULL; /* kube-controller-manager will count it */
		}
		json_object_set_new(used, k, json_string(one ? "1" : "0"));
	}
	return used;
}

/*
 * The patch putting @rq's spec.hard in force: status.hard takes every resource of spec.hard
 * whose usage is known (status.used has it, or @fresh: counted here), status.used keeps what
 * quota admission counted. A resource without a known usage is left to kube-controller-manager,
 * which counts it first: a limit in force over an uncounted usage would admit too much. The
 * patch sets metadata.resourceVersion, so it fails (409) if the quota changed meanwhile; only
 * the status changes (a PUT of the status would also replace the labels). NULL: nothing known.
 */
static json_t *forced_status(struct rec *r, const struct jdoc *rq, bool fresh)
{
	struct jval spec = jd_get(rq, "spec", "hard", NULL), v;
	/* status.used as it is sent back: what quota admission counted */
	json_t *used = jval_to_json(jd_get(rq, "status", "used", NULL)), *hard;
	const char *k;
	size_t i;

	if (fresh) { /* what quota admission has counted stays; the rest is counted here */
		json_t *counted = fresh_usage(r, jd_namespace(rq), spec);

		used = used ? used : json_object();
		if (counted)
			json_object_update_missing(used, counted);
		json_decref(counted);
	}
	if (used == NULL || json_object_size(used) == 0) {
		json_decref(used);
		return NULL; /* usage unknown: kube-controller-manager counts it */
	}
	hard = json_object();
	jval_foreach_member(spec, i, k, v)
		if (json_object_get(used, k))
			json_object_set_new(hard, k, jval_to_json(v));
	return json_pack("[{s:s,s:s,s:s?},{s:s,s:s,s:{s:o,s:o}}]", "op", "replace", "path",
	                 "/metadata/resourceVersion", "value", jd_resource_version(rq), "op", "add",
	                 "path", "/status", "value", "hard", hard, "used", used);
}

/* Read the quota as the API server has it now (NULL: gone or unreadable). */
static const struct jdoc *reread(struct rec *r, const char *ns)
{
	struct kc_resp resp = {0};
	struct ll_err err;
	const struct jdoc *now = NULL;

	if (kc_get(r->kc, &KC_RESOURCEQUOTAS, ns, QUOTA_NAME, &resp, &err) == 0 &&
	    kc_resp_ok(&resp))
		now = tc_doc_of(resp.body);
	kc_resp_release(&resp);
	return now;
}

/*
 * Put @rq's spec.hard in force now (@rq: as landlord last wrote or cached it; consumed). A
 * conflict means quota admission or kube-controller-manager wrote the status meanwhile: read it,
 * and go on when status.hard matches spec.hard, else write again. The result is recorded in
 * r->quota_now. Returns whether spec.hard is in force.
 */
static bool force_quota(struct rec *r, const char *ns, const struct jdoc *rq, bool fresh)
{
	int attempt;

	for (attempt = 0; rq && !tc_quota_applied(rq) && attempt < FORCE_ATTEMPTS; attempt++) {
		bool conflict;
		json_t *body = forced_status(r, rq, fresh);
		struct kc_resp resp = {0};
		struct ll_err err;
		int rc;

		if (body == NULL || !tc_may_write(r, &KC_RESOURCEQUOTAS, ns, QUOTA_NAME)) {
			json_decref(body);
			break;
		}
		rc = kc_patch(r->kc, &KC_RESOURCEQUOTAS, ns, QUOTA_NAME, "status", KC_PATCH_JSON,
		              body, LANDLORD_FIELD_MANAGER, &resp, &err);
		conflict = rc == 0 && resp.http_status == 409;
		jdoc_unref(rq);
		rq = rc == 0 && kc_resp_ok(&resp) ? tc_doc_of(resp.body)
		     : conflict                   ? reread(r, ns)
		                                  : NULL;
		if (rq == NULL && !conflict)
			tc_write_ok(r, rc, &resp, &err, "write status of", ns, QUOTA_NAME, false);
		kc_resp_release(&resp);
		json_decref(body);
		if (!conflict)
			break; /* written (what is known is in force), or failed */
	}
	tc_docs_put(&r->quota_now, ns, rq);
	return tc_quota_applied(rq);
}

/*
 * Does @ns hold nothing a new quota would count but what the cluster's controllers put there?
 * True for a namespace landlord created (in this pass, or earlier from the spec) that has no
 * RoleBinding at all yet: nobody but landlord, administrators and the cluster's controllers can
 * have created anything in it. Anything else is counted by kube-controller-manager.
 */
static bool fresh_namespace(struct rec *r, const char *ns)
{
	struct jdoc_list rbs;
	bool none;

	if (tc_str_listed(r->created, ns))
		return true;
	if (!tc_str_eq(jd_annotation(tc_docs_get(&r->active, ns), ANNOT_SOURCE), SOURCE_SPEC))
		return false;
	rbs = inf_by_index_ref(r->t->owned[OWN_RB], IDX_NAMESPACE, ns);
	none = rbs.n == 0;
	jdoc_list_release(&rbs);
	return none;
}

/* Write each quota's spec.hard and put it in force; returns whether all of them are. */
static bool apply_quota_writes(struct rec *r, const struct qp_write *w, size_t n)
{
	bool all = true;

	for (size_t i = 0; i < n; i++) {
		const struct jdoc *cached, *written = NULL;
		json_t *rq;
		bool fresh;

		if (!w[i].write) { /* spec.hard holds it already: put it in force if it is not */
			all &= force_quota(r, w[i].ns, tc_quota_now(r, w[i].ns), false);
			continue;
		}
		rq = tm_resourcequota(r->tenant, w[i].ns, w[i].hard);
		log_info("writing a quota", "{s:s,s:s,s:O}", "tenant", r->name, "namespace",
		         w[i].ns, "hard", w[i].hard);
		cached = inf_get_ref(r->t->owned[OWN_RQ], w[i].ns, QUOTA_NAME);
		fresh = cached == NULL && fresh_namespace(r, w[i].ns);
		if (tc_ensure(r, &KC_RESOURCEQUOTAS, rq, cached, &written)) {
			all &= force_quota(r, w[i].ns, written ? written : tc_quota_now(r, w[i].ns),
			                   fresh);
		} else {
			all = false;
			jdoc_unref(written);
		}
		jdoc_unref(cached);
		json_decref(rq);
	}
	return all;
}

/* ---- the split ---- */

/* A sleeping namespace's reservation (docs/hibernation.md), parsed into *@keep; NULL if none. */
static struct jval reservation(const struct jdoc *ns_doc, struct jdoc **keep)
{
	const char *text = ns_doc ? jd_annotation(ns_doc, HIB_RESERVED_ANNOTATION) : NULL;

	*keep = NULL;
	if (text == NULL || jdoc_parse(text, strlen(text), NULL, keep, NULL) != 0)
		return (struct jval){0};
	return jval_get(jdoc_root(*keep), "used");
}

/* The quota model's view of one namespace's quota, read in place (@rq, held in *@keep until
 * planned; may be NULL), and of its reservation while it sleeps (held in *@held). */
static struct qp_ns qp_in(const char *ns, const struct jdoc *ns_doc, const struct jdoc *rq,
                          const struct jdoc **keep, struct jdoc **held)
{
	*keep = rq;
	return (struct qp_ns){ns, jd_get(rq, "status", "used", NULL),
	                      jd_get(rq, "status", "hard", NULL), jd_get(rq, "spec", "hard", NULL),
	                      reservation(ns_doc, held)};
}

/* One split of the plan over the namespaces' quotas as they are now. */
static int plan_split(struct rec *r, struct jval plan_hard, struct jdoc_list rqs,
                      struct qp_result *res)
{
	size_t n = 0, cap = r->active.len + rqs.n;
	struct qp_ns *in = xcalloc(cap ? cap : 1, sizeof(*in));
	const struct jdoc **keep = xcalloc(cap ? cap : 1, sizeof(*keep));
	struct jdoc **held = xcalloc(cap ? cap : 1, sizeof(*held));
	struct ll_err err;
	int rc;

	for (size_t i = 0; i < r->active.len; i++, n++)
		in[n] = qp_in(r->active.v[i].name, r->active.v[i].doc,
		              tc_quota_now(r, r->active.v[i].name), &keep[n], &held[n]);
	for (size_t i = 0; i < rqs.n; i++) {
		const char *in_ns = jd_namespace(rqs.items[i]);

		if (in_ns && !tc_docs_get(&r->active, in_ns) &&
		    tc_str_eq(jd_name(rqs.items[i]), QUOTA_NAME) &&
		    tc_namespace_was_ours(r, in_ns)) {
			in[n] = qp_in(in_ns, NULL, tc_quota_now(r, in_ns), &keep[n], &held[n]);
			n++;
		}
	}
	rc = qp_compute(plan_hard, in, n, res, &err);
	if (rc < 0)
		tc_failf(r, "cannot split the plan's quota: %s", err.msg);
	while (n > 0) {
		jdoc_unref(keep[--n]);
		jdoc_unref(held[n]);
	}
	free(held);
	free(keep);
	free(in);
	return rc;
}

struct fresh_ctx {
	struct rec *r;
};

static int keep_fresh(struct jdoc *take_item, void *ud)
{
	struct fresh_ctx *c = ud;
	const char *ns = jd_namespace(take_item);

	if (ns && tc_str_eq(jd_name(take_item), QUOTA_NAME) && !tc_docs_get(&c->r->quota_now, ns))
		tc_docs_put(&c->r->quota_now, ns, take_item);
	else
		jdoc_unref(take_item);
	return 0;
}

/*
 * Before writing, read the tenant's quotas as they are now, not as the cache last saw them: a
 * split planned on a cache that has not yet seen this controller's own last writes, or quota
 * admission's latest counts, would write shares from usage that is no longer true. Once a pass.
 */
static bool read_quotas_now(struct rec *r)
{
	char selector[NAMES_BUF + 96];
	static const char *const drop[] = {"metadata.managedFields", NULL};
	const struct jdoc_opts proj = {.drop = drop};
	struct kc_list_opts o = {.label_selector = selector};
	struct fresh_ctx c = {r};
	struct kc_resp resp = {0};
	struct ll_err err;
	int rc;

	snprintf(selector, sizeof(selector),
	         LABEL_MANAGED_BY "=" MANAGED_BY_VALUE "," LABEL_TENANT "=%s", r->name);
	rc = kc_list_docs(r->kc, &KC_RESOURCEQUOTAS, NULL, &o, &proj, keep_fresh, &c, NULL, &resp,
	                  &err);
	r->quotas_read = rc == 0 && kc_resp_ok(&resp);
	if (!r->quotas_read)
		tc_write_ok(r, rc, &resp, &err, "list", NULL, "resourcequotas", false);
	kc_resp_release(&resp);
	return r->quotas_read;
}

/* A Plan without quota still gets an empty landlord-quota everywhere: the admission policy
 * landlord-quota-in-force refuses what a quota counts in a tenant namespace without one. */
static void ensure_empty_quotas(struct rec *r)
{
	json_t *empty = json_object();

	for (size_t i = 0; i < r->active.len; i++) {
		const char *name = r->active.v[i].name;
		const struct jdoc *cached = inf_get_ref(r->t->owned[OWN_RQ], name, QUOTA_NAME);
		const struct jdoc *written = NULL;
		json_t *rq = cached ? NULL : tm_resourcequota(r->tenant, name, empty);

		if (rq && tc_ensure(r, &KC_RESOURCEQUOTAS, rq, NULL, &written))
			tc_docs_put(&r->quota_now, name, written);
		else
			jdoc_unref(written);
		jdoc_unref(cached);
		json_decref(rq);
	}
	json_decref(empty);
}

/*
 * Split the plan and write the shares: lowered ones first (phase 1), raises once those are in
 * force (phase 2). landlord puts its writes in force itself, so both phases usually happen in one
 * pass; otherwise the raises wait for the next (quota_pending). Without a Plan (or without quota
 * in it) every namespace lacking a quota gets an empty one, so that the admission policy
 * landlord-quota-in-force admits what no quota counts.
 */
/*
 * Nothing to read: the tenant has no quota in the cache and every namespace was created in this
 * pass, so none can have one (a brand-new tenant, the burst that matters).
 */
static bool nothing_to_read(const struct rec *r, struct jdoc_list rqs)
{
	if (rqs.n > 0 || json_array_size(r->created) != r->active.len)
		return false;
	for (size_t i = 0; i < r->active.len; i++)
		if (!tc_str_listed(r->created, r->active.v[i].name))
			return false;
	return true;
}

void tc_sync_quota(struct rec *r)
{
	struct jval plan_hard = jval_path(r->plan, "spec", "resourceQuota", "hard", NULL);
	struct jdoc_list rqs = inf_by_index_ref(r->t->owned[OWN_RQ], IDX_TENANT, r->name);
	struct qp_result res = {0};

	for (int round = 0; tc_plan_known(r) && round < 3; round++) {
		qp_result_release(&res);
		if (plan_split(r, plan_hard, rqs, &res) < 0)
			break;
		if ((res.n_phase1 > 0 || res.n_phase2 > 0) && !r->quotas_read &&
		    !nothing_to_read(r, rqs)) {
			if (!read_quotas_now(r))
				break;
			continue; /* plan again on what is true now */
		}
		r->over_plan = res.over_plan;
		json_decref(r->quota_used);
		r->quota_used = json_incref(res.used);
		if (res.n_phase1 == 0) {
			apply_quota_writes(r, res.phase2, res.n_phase2);
			break;
		}
		if (!apply_quota_writes(r, res.phase1, res.n_phase1)) {
			r->quota_pending =
			        true; /* raises wait until the lowered values are in force */
			break;
		}
	}
	if (!tc_plan_known(r) || jval_size(plan_hard) == 0)
		ensure_empty_quotas(r);
	qp_result_release(&res);
	jdoc_list_release(&rqs);
}

/*
 * The model writes spec.hard (apply_quota_writes()); what others add beside it (scopes, a
 * scopeSelector, a resource in hard the model ignores is the model's) is reverted here.
 */
void tc_revert_quota_additions(struct rec *r, const char *ns, const struct jdoc *cached)
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

bool tc_quota_in_force(struct rec *r, const char *ns, bool *applied /* OUT */)
{
	const struct jdoc *rq = tc_quota_now(r, ns);
	bool covers;

	if (rq && !tc_quota_applied(rq)) { /* written earlier, by a pass that did not finish */
		force_quota(r, ns, rq, fresh_namespace(r, ns));
		rq = tc_quota_now(r, ns);
	}
	covers = tc_quota_covers(rq);
	*applied = tc_quota_applied(rq);
	jdoc_unref(rq);
	return covers;
}
