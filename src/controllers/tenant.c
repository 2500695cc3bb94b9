/*
 * tenant.c - the Tenant controller: a Tenant becomes namespaces, access, quota and isolation.
 *
 * One reconcile reads the Tenant, its Plan, the namespaces and every object landlord manages
 * from informer caches, asks tenant_model.c for the desired state, and writes only what differs:
 * namespaces with POST (never taken over), their metadata with merge patches carrying the
 * resourceVersion (adoption with a JSON-patch test), everything inside them with server-side
 * apply. The order within a namespace is quota and policies first, access last (docs/tenants.md).
 * Every step is idempotent, so a crash at any point converges on the next run; drift reaches us
 * through the watches on everything landlord creates.
 *
 * This file holds the informers, indexes and event mapping, the finalizer and the reconcile;
 * tenant_internal.h lists the files that do each step.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "controllers/controllers.h"
#include "controllers/tenant_internal.h"
#include "kube/conditions.h"
#include "kube/events.h"
#include "kube/finalizers.h"
#include "kube/status.h"
#include "tenancy/landlordconfig_current.h"
#include "tenancy/quotaplan.h"
#include "tenancy/tenant_model.h"

/* RoleBindings: who is bound (subjects) to what (roleRef) is all a binding means. */
static const char *const KEEP_RB[] = {"metadata.labels", "metadata.uid", "subjects", "roleRef",
                                      NULL};
/* NetworkPolicies: the whole spec - a selector, a policy type or an egress rule landlord never
 * wrote changes what the isolation allows. */
static const char *const KEEP_NP[] = {"metadata.labels", "metadata.uid", "spec", NULL};
/* LimitRanges: the whole spec (the limits landlord writes, and any others). */
static const char *const KEEP_LR[] = {"metadata.labels", "metadata.uid", "spec", NULL};
/* ResourceQuotas: the whole spec (hard, and the scopes and scopeSelector that narrow what it
 * counts), and status.hard / status.used, which the quota split reads. */
static const char *const KEEP_RQ[] = {"metadata.labels", "metadata.uid", "spec",
                                      "status.hard",     "status.used",  NULL};
/* The tenant's ClusterRole: its rules, and an aggregationRule that would replace them. */
static const char *const KEEP_CR[] = {"metadata.labels", "metadata.uid", "rules", "aggregationRule",
                                      NULL};
/* The tenant's ClusterRoleBinding: like a RoleBinding. */
#define KEEP_CRB KEEP_RB

const struct owned TC_OWNED[N_OWNED] = {
        [OWN_RB] = {&KC_ROLEBINDINGS, NULL, NULL, NULL, KEEP_RB},
        [OWN_NP] = {&KC_NETWORKPOLICIES, ISOLATION_NAME, tc_build_isolation, tc_always, KEEP_NP},
        [OWN_LR] = {&KC_LIMITRANGES, LIMITS_NAME, tc_build_limits, tc_plan_known, KEEP_LR},
        [OWN_RQ] = {&KC_RESOURCEQUOTAS, NULL, NULL, NULL, KEEP_RQ},
};

/* ---- reading the caches ---- */

/* The first entry of @m not before @name. */
static size_t docs_lower_bound(const struct tc_docs *m, const char *name)
{
	size_t lo = 0, hi = m->len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(m->v[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct jdoc *tc_docs_get(const struct tc_docs *m, const char *name)
{
	size_t i = docs_lower_bound(m, name);

	return i < m->len && strcmp(m->v[i].name, name) == 0 ? m->v[i].doc : NULL;
}

void tc_docs_put(struct tc_docs *m, const char *name, const struct jdoc *take)
{
	size_t i = docs_lower_bound(m, name);

	if (take == NULL)
		return;
	if (i < m->len && strcmp(m->v[i].name, name) == 0) {
		jdoc_unref(m->v[i].doc);
		m->v[i].doc = take;
		return;
	}
	vec_reserve(m, m->len + 1);
	memmove(&m->v[i + 1], &m->v[i], (m->len - i) * sizeof(m->v[0]));
	m->v[i] = (struct tc_doc_entry){xstrdup(name), take};
	m->len++;
}

void tc_docs_release(struct tc_docs *m)
{
	for (size_t i = 0; i < m->len; i++) {
		free(m->v[i].name);
		jdoc_unref(m->v[i].doc);
	}
	vec_release(m);
}

bool tc_doc_deleting(const struct jdoc *d)
{
	return jval_type(jd_get(d, "metadata", "deletionTimestamp", NULL)) != JT_NONE;
}

bool tc_str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

bool tc_str_listed(const json_t *list, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(list, i, v)
		if (tc_str_eq(json_string_value(v), s))
			return true;
	return false;
}

bool tc_landlords(const struct rec *r, const struct jdoc *obj)
{
	return obj && tc_str_eq(jd_label(obj, LABEL_TENANT), r->name) &&
	       tc_str_eq(jd_label(obj, LABEL_MANAGED_BY), MANAGED_BY_VALUE);
}

/* ---- index and mapping functions ---- */

/*
 * Tenants: the namespaces their status lists. The status is written by landlord alone, so this
 * is how a namespace someone else detached from a tenant (its label removed or changed by an
 * administrator) is still found and let go; nothing a tenant can write decides it.
 */
static void index_had(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                      void *ud)
{
	struct jval v;
	size_t i;

	(void)ud;
	jval_foreach(jd_get(obj, "status", "namespaces", NULL), i, v)
		if (jval_str(v))
			emit(jval_str(v), ctx);
}

/* Owned kinds: the tenant of an object landlord made (both labels; others are not indexed). */
static void index_landlords(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                            void *ud)
{
	const char *tenant = jd_label(obj, LABEL_TENANT);

	(void)ud;
	if (tenant && tc_str_eq(jd_label(obj, LABEL_MANAGED_BY), MANAGED_BY_VALUE))
		emit(tenant, ctx);
}

static void index_released(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                           void *ud)
{
	const char *t = jd_annotation(obj, ANNOT_RELEASED_FROM);

	(void)ud;
	if (t)
		emit(t, ctx);
}

static void index_untenanted(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                             void *ud)
{
	(void)ud;
	if (jd_label(obj, LABEL_TENANT) == NULL)
		emit(UNTENANTED, ctx);
}

/* The names a tenant claims, read from its cached document. */
static int claims_of(const struct jdoc *tenant, struct tm_claims *c)
{
	return tm_claims_build(jdoc_root(tenant), c);
}

static void index_claims(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                         void *ud)
{
	struct tm_claims c;

	(void)ud;
	if (claims_of(obj, &c) < 0)
		return;
	for (size_t i = 0; i < c.n; i++)
		emit(c.ns[i].name, ctx);
	tm_claims_release(&c);
}

static void emit_all(struct jdoc_list objs, void (*emit)(const char *, void *), void *ctx)
{
	for (size_t i = 0; i < objs.n; i++)
		if (jd_name(objs.items[i]))
			emit(jd_name(objs.items[i]), ctx);
	jdoc_list_release(&objs);
}

/* A tenant changed: the tenants claiming the same names may now get (or lose) them. */
static void map_rivals(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                       void *ud)
{
	struct tenant_ctl *t = ud;
	struct tm_claims c;

	if (claims_of(obj, &c) < 0)
		return;
	for (size_t i = 0; i < c.n; i++)
		emit_all(inf_by_index_ref(t->tenants, IDX_CLAIMS, c.ns[i].name), emit, ctx);
	tm_claims_release(&c);
}

static void map_plan(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                     void *ud)
{
	struct tenant_ctl *t = ud;

	if (jd_name(obj))
		emit_all(inf_by_index_ref(t->tenants, TM_INDEX_PLAN, jd_name(obj)), emit, ctx);
}

static void map_by_label(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                         void *ud)
{
	const char *tenant = jd_label(obj, LABEL_TENANT);

	(void)ud;
	if (tenant)
		emit(tenant, ctx);
}

static void map_namespace(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                          void *ud)
{
	struct tenant_ctl *t = ud;
	struct lcfg *cfg;

	if (jd_name(obj) == NULL)
		return;
	map_by_label(obj, emit, ctx, ud);
	index_released(obj, emit, ctx, ud);
	/* a namespace someone claims, or a tenant had, appeared, changed or went away */
	emit_all(inf_by_index_ref(t->tenants, IDX_CLAIMS, jd_name(obj)), emit, ctx);
	emit_all(inf_by_index_ref(t->tenants, IDX_HAD, jd_name(obj)), emit, ctx);
	cfg = lcfg_current();
	if (jd_label(obj, LABEL_TENANT) == NULL && lcfg_is_privileged_namespace(cfg, jd_name(obj)))
		emit_all(inf_list_ref(t->tenants, NULL), emit, ctx); /* the isolation allow-list */
	lcfg_unref(cfg);
}

/*
 * RoleBindings: landlord's go to their tenant; anyone else's to the tenant whose namespace holds
 * it, or that released it (the membership rule and the quarantine, tenant_access.c).
 */
static void map_rolebinding(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                            void *ud)
{
	struct tenant_ctl *t = ud;
	const struct jdoc *ns;

	index_landlords(obj, emit, ctx, ud);
	if (jd_namespace(obj) == NULL)
		return;
	ns = inf_get_ref(t->namespaces, NULL, jd_namespace(obj));
	if (ns) {
		map_by_label(ns, emit, ctx, ud);
		index_released(ns, emit, ctx, ud);
	}
	jdoc_unref(ns);
}

/*
 * ResourceSupervisors: the one named as a tenant is that tenant's concern, its own (drift,
 * deletion) or one in its way (a conflict that may clear).
 */
static void map_supervisor(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                           void *ud)
{
	struct tenant_ctl *t = ud;
	const struct jdoc *tenant =
	        jd_name(obj) ? inf_get_ref(t->tenants, NULL, jd_name(obj)) : NULL;

	if (tenant)
		emit(jd_name(obj), ctx);
	jdoc_unref(tenant);
}

static void on_config_change(void *ud)
{
	struct tenant_ctl *t = ud;
	struct jdoc_list all = inf_list_ref(t->tenants, NULL);

	for (size_t i = 0; i < all.n; i++)
		if (jd_name(all.items[i]))
			ctrl_enqueue(t->c, jd_name(all.items[i]));
	jdoc_list_release(&all);
}

static int add_index(struct inf *inf, const char *name, inf_index_fn fn, void *ud)
{
	int rc = inf_add_index(inf, name, fn, ud);

	return rc == -EEXIST ? 0 : rc; /* another controller shares the informer */
}

/* An informer of a kind landlord writes: only its own objects (@all: every object). */
static struct inf *owned_informer(struct mgr *m, const struct kc_gvr *gvr, const char *const *keep,
                                  bool all)
{
	struct inf_opts o = {.gvr = *gvr,
	                     .label_selector = all ? NULL
	                                           : LABEL_MANAGED_BY "=" MANAGED_BY_VALUE
	                                                              "," LABEL_TENANT,
	                     .keep = keep};
	struct inf *inf = mgr_informer(m, &o);

	if (inf && add_index(inf, IDX_TENANT, index_landlords, NULL) < 0)
		return NULL;
	return inf;
}

static int add_indexes(struct tenant_ctl *t)
{
	int rc = add_index(t->tenants, IDX_CLAIMS, index_claims, NULL);

	if (rc == 0)
		rc = add_index(t->tenants, IDX_HAD, index_had, NULL);
	if (rc == 0)
		rc = add_index(t->tenants, TM_INDEX_PLAN, tm_index_plan, NULL);
	if (rc == 0)
		rc = add_index(t->namespaces, IDX_TENANT, inf_index_label, (void *)LABEL_TENANT);
	if (rc == 0)
		rc = add_index(t->namespaces, IDX_RELEASED, index_released, NULL);
	if (rc == 0)
		rc = add_index(t->namespaces, IDX_UNTENANTED, index_untenanted, NULL);
	if (rc == 0)
		rc = add_index(t->owned[OWN_RB], IDX_NAMESPACE, inf_index_namespace, NULL);
	return rc;
}

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct tenant_ctl *t = ud;
	/* Tenants and Plans: whole. The Tenant's spec drives everything and its status and
	 * finalizers are compared before writing; the Plan's spec is the quota and the limits.
	 * The Plan controller shares both informers (the same projection). */
	struct inf_opts tenants = {.gvr = LL_TENANTS}, plans = {.gvr = LL_PLANS};
	/* Namespaces: metadata only (PartialObjectMetadata): labels and annotations are all
	 * landlord reads or writes of a namespace. */
	struct inf_opts namespaces = {.gvr = KC_NAMESPACES, .metadata_only = true};
	/* ResourceSupervisors: whole, as the supervisor controller asks (one shared informer); a
	 * conflicting one carries none of landlord's labels, so none is filtered out */
	struct inf_opts supervisors = {.gvr = LL_RESOURCESUPERVISORS};
	int rc = 0;

	t->c = c;
	t->tenants = mgr_informer(m, &tenants);
	t->plans = mgr_informer(m, &plans);
	t->namespaces = mgr_informer(m, &namespaces);
	/* every RoleBinding: in tenant namespaces, others' too are judged (tenant_access.c) */
	for (int k = 0; k < N_OWNED; k++)
		t->owned[k] = owned_informer(m, TC_OWNED[k].gvr, TC_OWNED[k].keep, k == OWN_RB);
	t->croles = owned_informer(m, &KC_CLUSTERROLES, KEEP_CR, false);
	t->crbindings = owned_informer(m, &KC_CLUSTERROLEBINDINGS, KEEP_CRB, false);
	t->supervisors = mgr_informer(m, &supervisors);
	for (int k = 0; k < N_OWNED; k++)
		if (!t->owned[k])
			return -ENOMEM;
	if (!t->tenants || !t->plans || !t->namespaces || !t->croles || !t->crbindings ||
	    !t->supervisors)
		return -ENOMEM;
	rc = add_indexes(t);
	if (rc < 0)
		return rc;
	ctrl_watch_primary(c, t->tenants);
	ctrl_watch_mapped(c, t->tenants, map_rivals, t);
	/* a Plan's status is written once a second; only its spec concerns its tenants */
	ctrl_watch_mapped_spec(c, t->plans, map_plan, t);
	ctrl_watch_mapped(c, t->namespaces, map_namespace, t);
	ctrl_watch_mapped(c, t->owned[OWN_RB], map_rolebinding, t);
	for (int k = 0; k < N_OWNED; k++)
		if (k != OWN_RB)
			ctrl_watch_mapped(c, t->owned[k], index_landlords, t);
	ctrl_watch_mapped(c, t->croles, map_by_label, t);
	ctrl_watch_mapped(c, t->crbindings, map_by_label, t);
	ctrl_watch_mapped(c, t->supervisors, map_supervisor, t);
	return lcfg_subscribe(on_config_change, t);
}

/* ---- finalizer ---- */

/* Add or remove landlord's finalizer with a JSON patch that leaves other entries alone. */
static bool set_finalizer(struct rec *r, bool present)
{
	json_t *body = kc_finalizer_patch(r->tenant, LANDLORD_FINALIZER, present);
	bool ok =
	        body == NULL || tc_patch(r, &LL_TENANTS, NULL, r->name, KC_PATCH_JSON, body, NULL);

	json_decref(body);
	return ok;
}

/* ---- reconcile ---- */

/*
 * Nothing is left: no namespace carries the tenant's label, and no object of landlord's for it
 * remains in a namespace that was the tenant's (objects labelled so elsewhere are not landlord's
 * and must not hold the finalizer).
 */
static bool all_released(struct rec *r)
{
	struct jdoc_list labelled = inf_by_index_ref(r->t->namespaces, IDX_TENANT, r->name);
	bool done = labelled.n == 0;

	jdoc_list_release(&labelled);
	for (int k = 0; done && k < N_OWNED; k++) {
		struct jdoc_list objs = inf_by_index_ref(r->t->owned[k], IDX_TENANT, r->name);

		for (size_t i = 0; done && i < objs.n; i++)
			done = jd_namespace(objs.items[i]) == NULL ||
			       !tc_namespace_was_ours(r, jd_namespace(objs.items[i]));
		jdoc_list_release(&objs);
	}
	return done;
}

struct left_ctx {
	struct rec *r;
	bool left;
};

static int note_left(json_t *item, void *ud)
{
	struct left_ctx *ctx = ud;
	const char *ns = jx_str(item, "metadata", "namespace", NULL);

	ctx->left = ns != NULL && tc_namespace_was_ours(ctx->r, ns);
	return ctx->left; /* one is enough */
}

/*
 * all_released() asked the API server: the cache may not show yet what landlord itself wrote
 * just before the Tenant was deleted, and a finalizer removed over it would leave it behind.
 */
static bool none_left(struct rec *r)
{
	char selector[320];
	struct left_ctx ctx = {.r = r};
	int rc = 0;

	snprintf(selector, sizeof(selector), "%s=%s,%s=%s", LABEL_TENANT, r->name, LABEL_MANAGED_BY,
	         MANAGED_BY_VALUE);
	for (int k = 0; rc == 0 && !ctx.left && k < N_OWNED; k++) {
		struct kc_resp resp = {0};
		struct ll_err err = {{0}};

		rc = kc_list(r->kc, TC_OWNED[k].gvr, NULL,
		             &(struct kc_list_opts){.label_selector = selector, .limit = 100},
		             note_left, &ctx, NULL, &resp, &err);
		if (rc == 0 && !ctx.left && !kc_resp_ok(&resp))
			rc = -EAGAIN;
		kc_resp_release(&resp);
	}
	return rc == 0 && !ctx.left;
}

/* The teardown's status while it waits; retried on failure, else looked at again later. */
static struct ctrl_result teardown_pending(struct rec *r)
{
	json_t *status;

	r->ns_pending = true;
	status = tc_desired_status(r, true);
	tc_write_status(r, status);
	json_decref(status);
	return r->failed ? CTRL_RESULT_RETRY : CTRL_RESULT_AFTER(NOT_READY_POLL);
}

/*
 * The supervisor goes first and the namespaces wait until it is gone: its finalizer wakes every
 * workload it put to sleep, so nothing is released or purged asleep. Its deletion comes back
 * by watch.
 */
static struct ctrl_result teardown(struct rec *r)
{
	struct tc_docs owned = {0};
	bool done;

	if (!tc_supervisor_gone(r))
		return teardown_pending(r);
	tc_owned_namespaces(r, &owned);
	for (size_t i = 0; i < owned.len; i++)
		tc_let_go(r, owned.v[i].doc);
	tc_docs_release(&owned);
	tc_delete_owned_in(r, NULL, &r->active);
	tc_delete_tenant_role(r);
	done = !r->failed && all_released(r) && none_left(r);
	if (done && set_finalizer(r, false)) {
		log_info("tenant released", "{s:s}", "tenant", r->name);
		return CTRL_RESULT_DONE;
	}
	return teardown_pending(r);
}

static struct ctrl_result provision(struct rec *r)
{
	json_t *status;
	bool ready;

	if (!set_finalizer(r, true))
		return CTRL_RESULT_RETRY;
	if (claims_of(r->doc, &r->claims) < 0) {
		tc_failf(r, "cannot compute namespace names");
		return CTRL_RESULT_RETRY;
	}
	tc_sync_namespaces(r);
	tc_sync_inside(r);
	tc_quarantine_released(r);
	tc_sync_supervisor(r); /* before the owners' role, which follows the supervisor */
	tc_sync_tenant_role(r);
	status = tc_desired_status(r, false);
	tc_write_status(r, status);
	ready = !r->failed && !r->ns_pending && !r->quota_pending && !r->access_pending &&
	        !r->policies_pending && tc_hibernation_ok(r) && json_array_size(r->collisions) == 0;
	json_decref(status);
	if (r->failed)
		return CTRL_RESULT_RETRY;
	return ready ? CTRL_RESULT_DONE : CTRL_RESULT_AFTER(NOT_READY_POLL);
}

/* The Tenant is gone (its finalizer was removed by hand): clean what is left. Its supervisor
 * goes with it through its ownerReference (the garbage collector). */
static struct ctrl_result orphaned(struct rec *r)
{
	struct tc_docs owned = {0};

	tc_owned_namespaces(r, &owned);
	for (size_t i = 0; i < owned.len; i++)
		if (!tc_doc_deleting(owned.v[i].doc))
			tc_let_go(r, owned.v[i].doc);
	tc_docs_release(&owned);
	tc_delete_owned_in(r, NULL, &r->active);
	tc_delete_tenant_role(r);
	return r->failed ? CTRL_RESULT_RETRY : CTRL_RESULT_DONE;
}

/* A stand-in for a Tenant that is gone: its name, so that its leftovers can still be found. */
static struct jdoc *stand_in(const char *name)
{
	json_t *obj = json_pack("{s:{s:s}}", "metadata", "name", name);
	struct jdoc *d = NULL;

	if (jdoc_from_json(obj, NULL, &d, NULL) < 0)
		d = NULL;
	json_decref(obj);
	return d;
}

static void rec_release(struct rec *r)
{
	tm_claims_release(&r->claims);
	tc_docs_release(&r->active);
	tc_docs_release(&r->quota_now);
	json_decref(r->let_go);
	json_decref(r->created);
	json_decref(r->collisions);
	json_decref(r->released);
	json_decref(r->privileged);
	json_decref(r->quota_used);
	jdoc_unref(r->plan_doc);
	jdoc_unref(r->doc);
	lcfg_unref(r->cfg);
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct tenant_ctl *t = ud;
	const struct jdoc *doc = inf_get_key_ref(t->tenants, key); /* read in place, never copied */
	struct rec r = {
	        .t = t,
	        .kc = mgr_client(ctrl_mgr(c)),
	        .name = key,
	        .cfg = lcfg_current(),
	        .let_go = json_object(),
	        .created = json_array(),
	        .collisions = json_array(),
	        .released = json_array(),
	};
	struct ctrl_result res;

	r.doc = doc ? doc : stand_in(key);
	r.tenant = jdoc_root(r.doc);
	if (doc == NULL) {
		res = r.doc ? orphaned(&r) : CTRL_RESULT_RETRY;
		goto out;
	}
	r.plan_doc = inf_get_ref(t->plans, NULL, jd_str(doc, "spec", "plan", NULL) ?: "");
	r.plan = jdoc_root(r.plan_doc);
	if (tc_doc_deleting(doc))
		res = kc_finalizer_index(r.tenant, LANDLORD_FINALIZER) >= 0 ? teardown(&r)
		                                                            : CTRL_RESULT_DONE;
	else
		res = provision(&r);
out:
	rec_release(&r);
	return res;
}

struct controller_def tenant_controller_def(void)
{
	static struct tenant_ctl ctl;

	return (struct controller_def){
	        .name = "tenant",
	        .workers = 16, /* reconciles wait on the API server, not on CPU */
	        .setup = setup,
	        .reconcile = reconcile,
	        .ud = &ctl,
	};
}
