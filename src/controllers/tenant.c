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
#include "kube/conditions.h"
#include "kube/events.h"
#include "kube/status.h"
#include "tenancy/landlordconfig_current.h"
#include "tenancy/quotaplan.h"
#include "tenancy/tenant_model.h"

#define IDX_TENANT     "tenant"      /* label landlord.dev/tenant */
#define IDX_MANAGED    "managed-for" /* namespaces: the tenant in managed-metadata */
#define IDX_CLAIMS     "claims"      /* tenants: the namespace names they claim */
#define IDX_RELEASED   "released"    /* namespaces: landlord.dev/released-from */
#define IDX_UNTENANTED "untenanted"  /* namespaces without a tenant label, under one value */
#define UNTENANTED     "-"
#define NOT_READY_POLL 30000 /* safety net while not Ready; drift comes by watch */

/* The kinds landlord stamps into tenant namespaces, in the order they are torn down. */
enum owned_kind { OWN_RB, OWN_NP, OWN_LR, OWN_RQ, N_OWNED };

struct rec;

/*
 * One row per owned kind. A kind with one object per namespace built from the tenant alone
 * (a policy) names its object and its builder, and sync_policies() applies it: adding such a
 * kind is a row here, its builder in src/tenancy/tenant_model.c, and its verbs in
 * deploy/rbac.yaml. RoleBindings and ResourceQuotas have steps of their own (access waits for
 * quota; quota is split in two phases).
 *
 * Each row also says what its informer caches (keep): what reconcile compares, and every field
 * that changes the object's meaning even where landlord sets nothing, so that drift repair
 * sees, and reverts, what others add (ensure()). Of the metadata, landlord reads the labels
 * (the tenant index, the event mapping, the comparison) and the uid (delete preconditions);
 * the informer adds the name, namespace, resourceVersion, apiVersion and kind itself.
 */
struct owned {
	const struct kc_gvr *gvr;
	const char *name;                                      /* the one object, or NULL */
	json_t *(*build)(const struct rec *r, const char *ns); /* NULL: not wanted here */
	bool (*delete_unwanted)(const struct rec *r);          /* delete it when not wanted? */
	const char *const *keep;                               /* the informer's projection */
};

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

static json_t *build_isolation(const struct rec *r, const char *ns);
static json_t *build_limits(const struct rec *r, const char *ns);
static bool always(const struct rec *r);
static bool plan_known(const struct rec *r);

static const struct owned OWNED[N_OWNED] = {
        [OWN_RB] = {&KC_ROLEBINDINGS, NULL, NULL, NULL, KEEP_RB},
        [OWN_NP] = {&KC_NETWORKPOLICIES, ISOLATION_NAME, build_isolation, always, KEEP_NP},
        [OWN_LR] = {&KC_LIMITRANGES, LIMITS_NAME, build_limits, plan_known, KEEP_LR},
        [OWN_RQ] = {&KC_RESOURCEQUOTAS, NULL, NULL, NULL, KEEP_RQ},
};

struct tenant_ctl {
	struct controller *c;
	struct inf *tenants, *plans, *namespaces, *owned[N_OWNED], *croles, *crbindings;
};

/* State of one reconcile. */
struct rec {
	struct tenant_ctl *t;
	struct kc_client *kc;
	const json_t *tenant;
	const struct jdoc
	        *doc; /* the cached Tenant (NULL when gone); claims' users point into it */
	const char *name;
	struct lcfg *cfg;
	const json_t *plan; /* NULL: missing */
	struct tm_claims claims;
	json_t *active;     /* ns name -> cached (or just created) namespace object */
	json_t *let_go;     /* ns name -> true: released or purged in this pass */
	json_t *created;    /* names of the namespaces created in this pass */
	json_t *collisions; /* [{name, reason}] */
	json_t *released;   /* names */
	json_t *privileged; /* sorted names of existing privileged namespaces */
	json_t *quota_used;
	bool ns_pending, quota_pending, access_pending, policies_pending, over_plan;
	bool failed;
	char fail_msg[512];
};

/* ---- reading the caches ---- */

/*
 * A jansson copy of a cached object, for the tenancy model's builders, which read jansson: the
 * reconcile's Tenant and Plan, and the tenant's own namespaces (metadata only). Nothing else
 * is copied out of a cache (docs/internals/informer.md).
 */
static json_t *copy_of(const struct jdoc *d)
{
	return jval_to_json(jdoc_root(d));
}

static json_t *cached_copy(struct inf *inf, const char *ns, const char *name)
{
	const struct jdoc *d = inf_get_ref(inf, ns, name);
	json_t *copy = copy_of(d);

	jdoc_unref(d);
	return copy;
}

static bool doc_deleting(const struct jdoc *d)
{
	return jval_type(jd_get(d, "metadata", "deletionTimestamp", NULL)) != JT_NONE;
}

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* ---- index and mapping functions ---- */

static void index_managed_for(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                              void *ud)
{
	const char *a = jd_annotation(obj, ANNOT_MANAGED_METADATA);
	json_t *m = a ? jx_loads(a, strlen(a), NULL) : NULL;
	const char *t = json_string_value(json_object_get(m, "tenant"));

	(void)ud;
	if (t)
		emit(t, ctx);
	json_decref(m);
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
	index_managed_for(obj, emit, ctx, ud);
	index_released(obj, emit, ctx, ud);
	/* a namespace someone claims appeared or went away */
	emit_all(inf_by_index_ref(t->tenants, IDX_CLAIMS, jd_name(obj)), emit, ctx);
	cfg = lcfg_current();
	if (jd_label(obj, LABEL_TENANT) == NULL && lcfg_is_privileged_namespace(cfg, jd_name(obj)))
		emit_all(inf_list_ref(t->tenants, NULL), emit, ctx); /* the isolation allow-list */
	lcfg_unref(cfg);
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

static struct inf *managed_informer(struct mgr *m, const struct kc_gvr *gvr,
                                    const char *const *keep)
{
	struct inf_opts o = {.gvr = *gvr,
	                     .label_selector =
	                             LABEL_MANAGED_BY "=" MANAGED_BY_VALUE ",landlord.dev/"
	                                              "tenant",
	                     .keep = keep};
	struct inf *inf = mgr_informer(m, &o);

	if (inf && add_index(inf, IDX_TENANT, inf_index_label, (void *)LABEL_TENANT) < 0)
		return NULL;
	return inf;
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
	int rc = 0;

	t->c = c;
	t->tenants = mgr_informer(m, &tenants);
	t->plans = mgr_informer(m, &plans);
	t->namespaces = mgr_informer(m, &namespaces);
	for (int k = 0; k < N_OWNED; k++)
		t->owned[k] = managed_informer(m, OWNED[k].gvr, OWNED[k].keep);
	t->croles = managed_informer(m, &KC_CLUSTERROLES, KEEP_CR);
	t->crbindings = managed_informer(m, &KC_CLUSTERROLEBINDINGS, KEEP_CRB);
	for (int k = 0; k < N_OWNED; k++)
		if (!t->owned[k])
			return -ENOMEM;
	if (!t->tenants || !t->plans || !t->namespaces || !t->croles || !t->crbindings)
		return -ENOMEM;
	rc = add_index(t->tenants, IDX_CLAIMS, index_claims, NULL);
	if (rc == 0)
		rc = add_index(t->tenants, TM_INDEX_PLAN, tm_index_plan, NULL);
	if (rc == 0)
		rc = add_index(t->namespaces, IDX_TENANT, inf_index_label, (void *)LABEL_TENANT);
	if (rc == 0)
		rc = add_index(t->namespaces, IDX_MANAGED, index_managed_for, NULL);
	if (rc == 0)
		rc = add_index(t->namespaces, IDX_RELEASED, index_released, NULL);
	if (rc == 0)
		rc = add_index(t->namespaces, IDX_UNTENANTED, index_untenanted, NULL);
	if (rc < 0)
		return rc;
	ctrl_watch_primary(c, t->tenants);
	ctrl_watch_mapped(c, t->tenants, map_rivals, t);
	ctrl_watch_mapped(c, t->plans, map_plan, t);
	ctrl_watch_mapped(c, t->namespaces, map_namespace, t);
	for (int k = 0; k < N_OWNED; k++)
		ctrl_watch_mapped(c, t->owned[k], map_by_label, t);
	ctrl_watch_mapped(c, t->croles, map_by_label, t);
	ctrl_watch_mapped(c, t->crbindings, map_by_label, t);
	return lcfg_subscribe(on_config_change, t);
}

/* ---- write helpers ---- */

static void failf(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(struct rec *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->failed) {
		va_start(ap, fmt);
		vsnprintf(r->fail_msg, sizeof(r->fail_msg), fmt, ap);
		va_end(ap);
	}
	r->failed = true;
}

/* Did a write succeed? A 404 counts as success when @missing_ok (deletes). */
static bool write_ok(struct rec *r, int rc, const struct kc_resp *resp, const struct ll_err *err,
                     const char *what, const char *ns, const char *name, bool missing_ok)
{
	if (rc == 0 && (kc_resp_ok(resp) || (missing_ok && resp->http_status == 404)))
		return true;
	if (rc < 0)
		failf(r, "%s %s%s%s: %s", what, ns ? ns : "", ns ? "/" : "", name, err->msg);
	else
		failf(r, "%s %s%s%s: %ld %s: %s", what, ns ? ns : "", ns ? "/" : "", name,
		      resp->http_status, resp->status.reason, resp->status.message);
	log_warn("tenant write failed", "{s:s,s:s,s:s}", "tenant", r->name, "action", what, "error",
	         r->fail_msg);
	return false;
}

/*
 * What others added: null for every member of @have (an object) that @want lacks, and for
 * such members of the objects both hold, recursively (spec.egress, spec.scopeSelector,
 * spec.podSelector.matchLabels, aggregationRule). Arrays are compared by jval_has_subset(),
 * which catches an added element; members added inside array elements are not looked at,
 * since the server defaults some (a LimitRange's default from its max). At the top, metadata
 * (others' labels stay), apiVersion, kind and status are not landlord's to compare. NULL when
 * nothing was added.
 */
static json_t *added_by_others(struct jval have, const json_t *want, bool top)
{
	static const char *const not_compared[] = {"metadata", "apiVersion", "kind", "status"};
	json_t *out = NULL, *sub;
	const char *key;
	struct jval v;
	size_t i;

	jval_foreach_member(have, i, key, v) {
		const json_t *w = json_object_get(want, key);
		bool skip = false;

		for (size_t k = 0; top && k < sizeof(not_compared) / sizeof(*not_compared); k++)
			skip |= strcmp(key, not_compared[k]) == 0;
		if (skip)
			continue;
		sub = w == NULL ? json_null()
		      : json_is_object(w) && jval_type(v) == JT_OBJECT
		              ? added_by_others(v, w, false)
		              : NULL;
		if (sub == NULL)
			continue;
		out = out ? out : json_object();
		json_object_set_new(out, key, sub);
	}
	return out;
}

static bool merge_patch(struct rec *r, const struct kc_gvr *gvr, const char *ns, const char *name,
                        const json_t *body)
{
	struct kc_resp resp = {0};
	struct ll_err err;
	bool ok;
	int rc = kc_patch(r->kc, gvr, ns, name, NULL, KC_PATCH_MERGE, body, LANDLORD_FIELD_MANAGER,
	                  &resp, &err);

	ok = write_ok(r, rc, &resp, &err, "patch", ns, name, false);
	kc_resp_release(&resp);
	return ok;
}

/*
 * Bring the object to @desired: server-side apply unless the cached object already holds
 * it, then a merge patch removing what others added that changes its meaning (apply never
 * touches fields landlord does not own).
 */
static bool ensure(struct rec *r, const struct kc_gvr *gvr, const json_t *desired,
                   const struct jdoc *cached)
{
	const char *ns = jx_namespace(desired), *name = jx_name(desired);
	json_t *added = cached ? added_by_others(jdoc_root(cached), desired, true) : NULL;
	struct kc_resp resp = {0};
	struct ll_err err;
	bool ok = true;
	int rc;

	if (!cached || !jval_has_subset(jdoc_root(cached), desired)) {
		rc = kc_apply(r->kc, gvr, ns, name, NULL, desired, LANDLORD_FIELD_MANAGER, true,
		              &resp, &err);
		ok = write_ok(r, rc, &resp, &err, "apply", ns, name, false);
		kc_resp_release(&resp);
	}
	if (ok && added) {
		log_info("reverting fields others added", "{s:s,s:s,s:s,s:O}", "tenant", r->name,
		         "namespace", ns ? ns : "", "name", name, "removed", added);
		ok = merge_patch(r, gvr, ns, name, added);
	}
	json_decref(added);
	return ok;
}

static bool delete_obj(struct rec *r, const struct kc_gvr *gvr, const struct jdoc *obj)
{
	struct kc_delete_opts o = {.precondition_uid = jd_uid(obj), .grace_seconds = -1};
	struct kc_resp resp = {0};
	struct ll_err err;
	bool ok;
	int rc;

	rc = kc_delete(r->kc, gvr, jd_namespace(obj), jd_name(obj), &o, &resp, &err);
	/* 409: the uid precondition failed, so it is a newer object; the next pass decides */
	ok = write_ok(r, rc, &resp, &err, "delete", jd_namespace(obj), jd_name(obj), true) ||
	     resp.http_status == 409;
	kc_resp_release(&resp);
	return ok;
}

static bool patch(struct rec *r, const struct kc_gvr *gvr, const char *ns, const char *name,
                  enum kc_patch_type type, const json_t *body, json_t **result /* OUT */)
{
	struct kc_resp resp = {0};
	struct ll_err err;
	bool ok;
	int rc = kc_patch(r->kc, gvr, ns, name, NULL, type, body, LANDLORD_FIELD_MANAGER, &resp,
	                  &err);

	ok = write_ok(r, rc, &resp, &err, "patch", ns, name, false);
	if (ok && result)
		*result = json_incref(resp.body);
	kc_resp_release(&resp);
	return ok;
}

/* ---- namespaces ---- */

static bool reported_before(const struct rec *r, const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(jx_get(r->tenant, "status", "collisions", NULL), i, c)
		if (jx_str(c, "name", NULL) && strcmp(jx_str(c, "name", NULL), name) == 0)
			return true;
	return false;
}

static void collision(struct rec *r, const char *name, const char *reason)
{
	json_t *c;
	size_t i;

	r->ns_pending = true;
	json_array_foreach(r->collisions, i, c)
		if (strcmp(jx_str(c, "name", NULL), name) == 0)
			return; /* status.collisions is a map keyed by name: one entry each */
	json_array_append_new(r->collisions,
	                      json_pack("{s:s,s:s}", "name", name, "reason", reason));
	if (!reported_before(r, name))
		event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_WARNING,
		             "NamespaceCollision", "namespace %s cannot be used: %s", name, reason);
}

static bool claimed_by_other_tenant(struct rec *r, const char *ns)
{
	struct jdoc_list claimants = inf_by_index_ref(r->t->tenants, IDX_CLAIMS, ns);
	bool other = false;

	for (size_t i = 0; i < claimants.n; i++)
		if (!str_eq(jd_name(claimants.items[i]), r->name) &&
		    !doc_deleting(claimants.items[i]))
			other = true;
	jdoc_list_release(&claimants);
	return other;
}

static json_t *create_namespace(struct rec *r, const struct tm_ns *claim)
{
	json_t *meta =
	        tm_namespace_metadata(r->tenant, r->cfg, jx_str(r->tenant, "spec", "plan", NULL),
	                              claim->name, claim, NULL);
	json_t *ns = json_pack("{s:s,s:s,s:{s:s,s:O,s:O}}", "apiVersion", "v1", "kind", "Namespace",
	                       "metadata", "name", claim->name, "labels",
	                       json_object_get(meta, "labels"), "annotations",
	                       json_object_get(meta, "annotations"));
	struct kc_resp resp = {0};
	struct ll_err err;
	json_t *created = NULL;
	int rc = kc_create(r->kc, &KC_NAMESPACES, NULL, ns, &resp, &err);

	if (rc == 0 && resp.http_status == 409) {
		/* someone else's, or our cache is behind: the namespace event settles it */
		r->ns_pending = true;
	} else if (write_ok(r, rc, &resp, &err, "create namespace", NULL, claim->name, false)) {
		created = json_incref(resp.body);
		json_array_append_new(r->created, json_string(claim->name));
	}
	kc_resp_release(&resp);
	json_decref(ns);
	json_decref(meta);
	return created;
}

/* Bring an owned namespace's metadata to what the tenant wants. Returns the namespace. */
static json_t *sync_metadata(struct rec *r, const json_t *ns, const struct tm_ns *claim)
{
	const char *kind = jx_label(ns, LABEL_KIND);
	json_t *want =
	        tm_namespace_metadata(r->tenant, r->cfg, jx_str(r->tenant, "spec", "plan", NULL),
	                              jx_name(ns), claim, kind ? kind : KIND_ADOPTED);
	json_t *body = NULL, *updated = NULL;
	json_t *prev = tm_managed_keys(ns);

	if (claim == NULL && prev == NULL) {
		/* adoption: guarded by a test of the tenant label, so it is never taken */
		json_t *labels = json_deep_copy(jx_get(ns, "metadata", "labels", NULL));
		json_t *annots = json_deep_copy(jx_get(ns, "metadata", "annotations", NULL));

		annots = annots ? annots : json_object();
		json_object_update(labels, json_object_get(want, "labels"));
		json_object_update(annots, json_object_get(want, "annotations"));
		body = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:o},{s:s,s:s,s:o}]", "op",
		                 "test", "path", "/metadata/labels/landlord.dev~1tenant", "value",
		                 r->name, "op", "test", "path", "/metadata/resourceVersion",
		                 "value", jx_resource_version(ns), "op", "add", "path",
		                 "/metadata/labels", "value", labels, "op", "add", "path",
		                 "/metadata/annotations", "value", annots);
		if (body &&
		    patch(r, &KC_NAMESPACES, NULL, jx_name(ns), KC_PATCH_JSON, body, &updated))
			event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_NORMAL,
			             "NamespaceAdopted", "adopted namespace %s", jx_name(ns));
	} else {
		body = tm_metadata_patch(ns, want);
		if (body)
			patch(r, &KC_NAMESPACES, NULL, jx_name(ns), KC_PATCH_MERGE, body, &updated);
	}
	json_decref(prev);
	json_decref(body);
	json_decref(want);
	if (updated)
		return updated;
	return body ? NULL : jx_ref(ns);
}

/* Delete landlord's objects labelled for this tenant in @ns (NULL: in every namespace). */
static void delete_owned_in(struct rec *r, const char *ns, const json_t *keep_active)
{
	for (int k = 0; k < N_OWNED; k++) {
		struct jdoc_list objs = inf_by_index_ref(r->t->owned[k], IDX_TENANT, r->name);

		for (size_t i = 0; i < objs.n; i++) {
			const char *in = jd_namespace(objs.items[i]);

			if (in == NULL)
				continue;
			if (ns ? strcmp(in, ns) == 0
			       : !json_object_get(keep_active, in) &&
			                    !json_object_get(r->let_go, in))
				delete_obj(r, OWNED[k].gvr, objs.items[i]);
		}
		jdoc_list_release(&objs);
	}
}

static bool purgeable(struct rec *r, const json_t *ns)
{
	const char *src = jx_annotation(ns, ANNOT_SOURCE);

	return jx_bool(r->tenant, 0, "spec", "namespaces", "onDeletePurge", NULL) && src &&
	       strcmp(src, SOURCE_SPEC) == 0 && jx_label(ns, LABEL_TENANT) &&
	       strcmp(jx_label(ns, LABEL_TENANT), r->name) == 0;
}

/* A namespace leaves the tenant: purge it, or strip what landlord put there. */
static void let_go(struct rec *r, const json_t *ns)
{
	const char *name = jx_name(ns);
	json_t *body;

	json_object_set_new(r->let_go, name, json_true());
	if (jx_get(ns, "metadata", "deletionTimestamp", NULL))
		return; /* purging already */
	if (purgeable(r, ns)) {
		struct kc_delete_opts o = {.precondition_uid = jx_uid(ns), .grace_seconds = -1};
		struct kc_resp resp = {0};
		struct ll_err err;
		int rc = kc_delete(r->kc, &KC_NAMESPACES, NULL, name, &o, &resp, &err);

		if (write_ok(r, rc, &resp, &err, "delete namespace", NULL, name, true))
			event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_NORMAL,
			             "NamespacePurged", "deleting namespace %s (onDeletePurge)",
			             name);
		kc_resp_release(&resp);
		return;
	}
	delete_owned_in(r, name, NULL);
	body = tm_release_patch(ns, r->name);
	if (patch(r, &KC_NAMESPACES, NULL, name, KC_PATCH_MERGE, body, NULL)) {
		json_array_append_new(r->released, json_string(name));
		event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_NORMAL,
		             "NamespaceReleased",
		             "released namespace %s: landlord's access, quota, policies and "
		             "labels were removed; the namespace and its contents stay",
		             name);
	}
	json_decref(body);
}

/* Namespaces that carry this tenant's label or landlord's bookkeeping for it. */
static json_t *owned_namespaces(struct rec *r)
{
	json_t *out = json_object();
	struct jdoc_list lists[2] = {inf_by_index_ref(r->t->namespaces, IDX_TENANT, r->name),
	                             inf_by_index_ref(r->t->namespaces, IDX_MANAGED, r->name)};

	for (int l = 0; l < 2; l++) {
		for (size_t i = 0; i < lists[l].n; i++) {
			const char *name = jd_name(lists[l].items[i]);

			if (name && !json_object_get(out, name))
				json_object_set_new(out, name, copy_of(lists[l].items[i]));
		}
		jdoc_list_release(&lists[l]);
	}
	return out;
}

static bool labelled_ours(struct rec *r, const json_t *ns)
{
	const char *l = jx_label(ns, LABEL_TENANT);

	return l && strcmp(l, r->name) == 0;
}

static void sync_claim(struct rec *r, const struct tm_ns *claim)
{
	json_t *ns = cached_copy(r->t->namespaces, NULL, claim->name);
	json_t *now = NULL;

	if (claim->collides) {
		collision(r, claim->name, "claimed twice by this tenant");
		/* bad input never costs what is already provisioned: keep it as it is */
		if (ns && labelled_ours(r, ns) &&
		    !jx_get(ns, "metadata", "deletionTimestamp", NULL))
			json_object_set_new(r->active, claim->name, jx_ref(ns));
	} else if (lcfg_is_privileged_namespace(r->cfg, claim->name)) {
		collision(r, claim->name, "a privileged namespace; landlord never touches it");
	} else if (ns && !labelled_ours(r, ns)) {
		collision(r, claim->name,
		          jx_label(ns, LABEL_TENANT) ? "exists and belongs to another tenant"
		                                     : "exists and does not belong to this tenant");
	} else if (ns == NULL && claimed_by_other_tenant(r, claim->name)) {
		collision(r, claim->name, "another tenant asks for the same name");
	} else if (ns && jx_get(ns, "metadata", "deletionTimestamp", NULL)) {
		r->ns_pending = true; /* wait until it is gone, then create it again */
	} else if (ns) {
		/* ours: even if the metadata update fails now, its contents stay managed */
		now = sync_metadata(r, ns, claim);
		json_object_set_new(r->active, claim->name, jx_ref(now ? now : ns));
	} else {
		now = create_namespace(r, claim);
		if (now == NULL)
			r->ns_pending = true;
		else
			json_object_set(r->active, claim->name, now);
	}
	json_decref(now);
	json_decref(ns);
}

/* One Event for all the namespaces a pass created (a new tenant creates several at once). */
static void record_created(struct rec *r)
{
	char list[768] = "";
	size_t i, len = 0;
	json_t *v;

	json_array_foreach(r->created, i, v) {
		int n = snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
		                 json_string_value(v));

		if (n < 0 || (size_t)n >= sizeof(list) - len)
			break;
		len += (size_t)n;
	}
	if (json_array_size(r->created) > 0)
		event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_NORMAL, "NamespaceCreated",
		             "created namespace%s %s", json_array_size(r->created) > 1 ? "s" : "",
		             list);
}

static void sync_namespaces(struct rec *r)
{
	json_t *owned = owned_namespaces(r), *ns;
	const char *name;

	for (size_t i = 0; i < r->claims.n; i++)
		sync_claim(r, &r->claims.ns[i]);
	json_object_foreach(owned, name, ns) {
		const char *src = jx_annotation(ns, ANNOT_SOURCE);
		bool adopted =
		        labelled_ours(r, ns) && (src == NULL || strcmp(src, SOURCE_SPEC) != 0);

		if (json_object_get(r->active, name) || tm_claims_find(&r->claims, name))
			continue;
		if (adopted && !jx_get(ns, "metadata", "deletionTimestamp", NULL) &&
		    !lcfg_is_privileged_namespace(r->cfg, name)) {
			json_t *now = sync_metadata(r, ns, NULL);

			json_object_set(r->active, name, now ? now : ns);
			json_decref(now);
			continue;
		}
		let_go(r, ns);
	}
	json_decref(owned);
	record_created(r);
}

/* ---- quota, policies, access ---- */

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
		ensure(r, &KC_RESOURCEQUOTAS, rq, cached);
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
		    str_eq(jd_name(rqs.items[i]), QUOTA_NAME))
			in[n++] = qp_in(in_ns, rqs.items[i], keep);
	}
	if (qp_compute(plan_hard, in, n, &res, &err) < 0) {
		failf(r, "cannot split the plan's quota: %s", err.msg);
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

static json_t *build_isolation(const struct rec *r, const char *ns)
{
	if (!tm_network_isolation(r->tenant, r->cfg))
		return NULL;
	return tm_networkpolicy(r->tenant, ns, r->privileged);
}

static json_t *build_limits(const struct rec *r, const char *ns)
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
	added = added_by_others(jdoc_root(cached), want, true);
	if (added) {
		log_info("reverting fields others added", "{s:s,s:s,s:s,s:O}", "tenant", r->name,
		         "namespace", ns, "name", QUOTA_NAME, "removed", added);
		merge_patch(r, &KC_RESOURCEQUOTAS, ns, QUOTA_NAME, added);
	}
	json_decref(added);
	json_decref(want);
	json_decref(hard);
}

static bool always(const struct rec *r)
{
	(void)r;
	return true;
}

/* Without its Plan landlord cannot tell what the limits should be: it leaves them be. */
static bool plan_known(const struct rec *r)
{
	return r->plan != NULL;
}

/* Every policy of OWNED in @ns; returns whether all are in place. */
static bool sync_policies(struct rec *r, const char *ns)
{
	bool ok = true;

	for (int k = 0; k < N_OWNED; k++) {
		const struct owned *kind = &OWNED[k];
		json_t *want;
		const struct jdoc *cached;

		if (kind->build == NULL)
			continue;
		want = kind->build(r, ns);
		cached = inf_get_ref(r->t->owned[k], ns, kind->name);
		if (want)
			ok &= ensure(r, kind->gvr, want, cached);
		else if (cached && kind->delete_unwanted(r))
			ok &= delete_obj(r, kind->gvr, cached);
		json_decref(want);
		jdoc_unref(cached);
	}
	return ok;
}

static void sync_access(struct rec *r, const char *ns_name, const json_t *ns, bool may_grant)
{
	const struct tm_ns *claim = tm_claims_find(&r->claims, ns_name);
	bool private_sb = jx_bool(r->tenant, 0, "spec", "namespaces", "sandboxes", "private", NULL);
	json_t *want = tm_rolebindings(r->tenant, r->cfg, ns_name,
	                               jx_get(ns, "metadata", "labels", NULL), claim, private_sb);
	struct jdoc_list have = inf_by_index_ref(r->t->owned[OWN_RB], IDX_TENANT, r->name);
	const char *name;
	json_t *rb;

	json_object_foreach(want, name, rb) {
		const struct jdoc *cached = inf_get_ref(r->t->owned[OWN_RB], ns_name, name);

		if (cached || may_grant)
			ensure(r, &KC_ROLEBINDINGS, rb, cached);
		else
			r->access_pending = true;
		jdoc_unref(cached);
	}
	for (size_t i = 0; i < have.n; i++) {
		const char *hname = jd_name(have.items[i]);

		/* a changed mapping or a removed role */
		if (str_eq(jd_namespace(have.items[i]), ns_name) && hname &&
		    !json_object_get(want, hname))
			delete_obj(r, &KC_ROLEBINDINGS, have.items[i]);
	}
	jdoc_list_release(&have);
	json_decref(want);
}

static void sync_inside(struct rec *r)
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
		sync_access(r, name, ns, quota_ok && policies_ok);
		jdoc_unref(rq);
	}
	/* objects left in namespaces that are no longer this tenant's */
	delete_owned_in(r, NULL, r->active);
}

static void sync_tenant_role(struct rec *r)
{
	char name[NAMES_BUF + 20];
	json_t *cr = tm_clusterrole(r->tenant), *crb = tm_clusterrolebinding(r->tenant);
	const struct jdoc *cr_cached, *crb_cached;

	tm_tenant_role_name(r->name, name);
	cr_cached = inf_get_ref(r->t->croles, NULL, name);
	crb_cached = inf_get_ref(r->t->crbindings, NULL, name);
	ensure(r, &KC_CLUSTERROLES, cr, cr_cached);
	if (crb)
		ensure(r, &KC_CLUSTERROLEBINDINGS, crb, crb_cached);
	else if (crb_cached)
		delete_obj(r, &KC_CLUSTERROLEBINDINGS, crb_cached);
	json_decref(cr);
	json_decref(crb);
	jdoc_unref(cr_cached);
	jdoc_unref(crb_cached);
}

static void delete_tenant_role(struct rec *r)
{
	struct jdoc_list objs = inf_by_index_ref(r->t->crbindings, IDX_TENANT, r->name);

	for (size_t i = 0; i < objs.n; i++)
		delete_obj(r, &KC_CLUSTERROLEBINDINGS, objs.items[i]);
	jdoc_list_release(&objs);
	objs = inf_by_index_ref(r->t->croles, IDX_TENANT, r->name);
	for (size_t i = 0; i < objs.n; i++)
		delete_obj(r, &KC_CLUSTERROLES, objs.items[i]);
	jdoc_list_release(&objs);
}

/* ---- finalizer ---- */

static int finalizer_index(const json_t *obj)
{
	json_t *v;
	size_t i;

	json_array_foreach(jx_get(obj, "metadata", "finalizers", NULL), i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), LANDLORD_FINALIZER) == 0)
			return (int)i;
	return -1;
}

/* Add or remove landlord's finalizer with a JSON patch that leaves other entries alone. */
static bool set_finalizer(struct rec *r, bool present)
{
	int idx = finalizer_index(r->tenant);
	char path[64];
	json_t *body;
	bool ok;

	if ((idx >= 0) == present)
		return true;
	if (present && jx_get(r->tenant, "metadata", "finalizers", NULL))
		body = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s}]", "op", "test", "path",
		                 "/metadata/resourceVersion", "value",
		                 jx_resource_version(r->tenant), "op", "add", "path",
		                 "/metadata/finalizers/-", "value", LANDLORD_FINALIZER);
	else if (present)
		body = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:[s]}]", "op", "test", "path",
		                 "/metadata/resourceVersion", "value",
		                 jx_resource_version(r->tenant), "op", "add", "path",
		                 "/metadata/finalizers", "value", LANDLORD_FINALIZER);
	else {
		snprintf(path, sizeof(path), "/metadata/finalizers/%d", idx);
		body = json_pack("[{s:s,s:s,s:s},{s:s,s:s}]", "op", "test", "path", path, "value",
		                 LANDLORD_FINALIZER, "op", "remove", "path", path);
	}
	ok = patch(r, &LL_TENANTS, NULL, r->name, KC_PATCH_JSON, body, NULL);
	json_decref(body);
	return ok;
}

/* ---- status ---- */

/* Released namespaces carry landlord.dev/released-from, so a stale cache loses none. */
static json_t *released_list(struct rec *r)
{
	struct jdoc_list marked = inf_by_index_ref(r->t->namespaces, IDX_RELEASED, r->name);
	json_t *set = json_object(), *v;
	size_t i;

	for (i = 0; i < marked.n; i++)
		if (jd_name(marked.items[i]))
			json_object_set_new(set, jd_name(marked.items[i]), json_true());
	json_array_foreach(r->released, i, v)
		json_object_set_new(set, json_string_value(v), json_true());
	for (i = 0; i < marked.n; i++)
		if (jd_name(marked.items[i]) &&
		    json_object_get(r->active, jd_name(marked.items[i])))
			json_object_del(set, jd_name(marked.items[i])); /* back in the tenant */
	v = tm_sorted_keys(set);
	json_decref(set);
	jdoc_list_release(&marked);
	return v;
}

static json_t *set_cond(json_t *conds, const char *type, bool ok, const char *reason,
                        const char *msg, long long gen)
{
	json_t *next = cond_set(conds, type, ok ? "True" : "False", reason, msg, gen);

	json_decref(conds);
	return next;
}

static json_t *namespaces_cond(struct rec *r, json_t *conds, bool ns_ok, long long gen)
{
	char msg[640];

	if (json_array_size(r->collisions)) {
		snprintf(msg, sizeof(msg), "%zu namespace name(s) cannot be used, first %s: %s",
		         json_array_size(r->collisions),
		         jx_str(json_array_get(r->collisions, 0), "name", NULL),
		         jx_str(json_array_get(r->collisions, 0), "reason", NULL));
		return set_cond(conds, "NamespacesReady", false, "Collision", msg, gen);
	}
	snprintf(msg, sizeof(msg), "%zu namespace(s)", json_object_size(r->active));
	return set_cond(conds, "NamespacesReady", ns_ok, ns_ok ? "Provisioned" : "Creating",
	                ns_ok ? msg : "waiting for namespaces to be created or deleted", gen);
}

static json_t *quota_cond(struct rec *r, json_t *conds, bool quota_ok, long long gen)
{
	char msg[640];
	const char *why;

	if (r->plan == NULL) {
		snprintf(msg, sizeof(msg),
		         "Plan %s does not exist; no quota, so nothing is granted",
		         jx_str(r->tenant, "spec", "plan", NULL));
		why = "PlanNotFound";
	} else if (r->over_plan) {
		snprintf(msg, sizeof(msg), "usage is above the plan; nothing new can be created");
		why = "OverPlan";
	} else {
		snprintf(msg, sizeof(msg),
		         quota_ok ? "quota in force in every namespace"
		                  : "waiting for ResourceQuotas to be in force");
		why = quota_ok ? "Provisioned" : "WaitingForQuota";
	}
	return set_cond(conds, "QuotaReady", quota_ok, why, msg, gen);
}

/* Ready when all are; otherwise the first condition that is not True says why. */
static json_t *ready_cond(struct rec *r, json_t *conds, bool all_ok, bool deleting, long long gen)
{
	const char *why = "Provisioning";
	char msg[640] = "";
	json_t *c;
	size_t i;

	if (deleting)
		return set_cond(conds, "Ready", false, "Terminating",
		                "releasing or purging the tenant's namespaces", gen);
	if (r->failed)
		return set_cond(conds, "Ready", false, "ApplyFailed", r->fail_msg, gen);
	if (all_ok)
		return set_cond(conds, "Ready", true, "Provisioned", "tenant provisioned", gen);
	json_array_foreach(conds, i, c) {
		if (strcmp(jx_str(c, "status", NULL), "True") == 0 ||
		    strcmp(jx_str(c, "type", NULL), "Ready") == 0)
			continue;
		why = jx_str(c, "reason", NULL);
		snprintf(msg, sizeof(msg), "%s: %s", jx_str(c, "type", NULL),
		         jx_str(c, "message", NULL));
		break;
	}
	return set_cond(conds, "Ready", false, why, msg, gen);
}

static json_t *conditions(struct rec *r, long long gen, bool deleting)
{
	json_t *conds = json_deep_copy(jx_get(r->tenant, "status", "conditions", NULL));
	bool ns_ok = !r->ns_pending && json_array_size(r->collisions) == 0;
	bool quota_ok = r->plan && !r->quota_pending && !r->over_plan;
	bool pol_ok = !r->policies_pending, acc_ok = !r->access_pending && !r->quota_pending;

	conds = conds ? conds : json_array();
	conds = namespaces_cond(r, conds, ns_ok, gen);
	conds = quota_cond(r, conds, quota_ok, gen);
	conds = set_cond(conds, "PoliciesReady", pol_ok, pol_ok ? "Provisioned" : "ApplyFailed",
	                 pol_ok ? "pod security, limits and isolation in place"
	                        : "some policies could not be applied",
	                 gen);
	conds = set_cond(conds, "AccessReady", acc_ok,
	                 acc_ok    ? "Provisioned"
	                 : r->plan ? "WaitingForQuota"
	                           : "PlanNotFound",
	                 acc_ok ? "role bindings in place"
	                        : "access is granted once quota and policies are in force",
	                 gen);
	return ready_cond(r, conds, ns_ok && quota_ok && pol_ok && acc_ok, deleting, gen);
}

static json_t *desired_status(struct rec *r, bool deleting)
{
	long long gen = jx_generation(r->tenant);
	json_t *sandboxes = json_object(), *names = tm_sorted_keys(r->active);
	json_t *hard =
	        tm_canonical_quantities(jx_get(r->plan, "spec", "resourceQuota", "hard", NULL));

	for (size_t i = 0; i < r->claims.n; i++)
		if (r->claims.ns[i].user && json_object_get(r->active, r->claims.ns[i].name))
			json_object_set_new(sandboxes, r->claims.ns[i].user,
			                    json_string(r->claims.ns[i].name));
	return json_pack("{s:I,s:I,s:o,s:o,s:o,s:O,s:{s:o,s:o},s:o}", "observedGeneration",
	                 (json_int_t)gen, "namespaceCount", (json_int_t)json_array_size(names),
	                 "namespaces", names, "sandboxes", sandboxes, "released", released_list(r),
	                 "collisions", r->collisions, "quota", "hard", hard, "used",
	                 r->quota_used ? json_incref(r->quota_used) : json_object(), "conditions",
	                 conditions(r, gen, deleting));
}

static void write_status(struct rec *r, json_t *status)
{
	const json_t *old = jx_get(r->tenant, "status", NULL);
	const json_t *old_ready, *new_ready;
	const char *old_reason, *new_reason = NULL;
	char why[512];

	if (json_equal(status, old))
		return;
	if (status_write(r->kc, &LL_TENANTS, r->name, status, STATUS_REPLACE,
	                 LANDLORD_FIELD_MANAGER, why, sizeof(why)) < 0)
		failf(r, "write status %s: %s", r->name, why);
	old_ready = cond_find(jx_get(old, "conditions", NULL), "Ready");
	new_ready = cond_find(json_object_get(status, "conditions"), "Ready");
	old_reason = jx_str(old_ready, "message", NULL);
	if (new_ready && strcmp(jx_str(new_ready, "status", NULL), "False") == 0)
		new_reason = jx_str(new_ready, "message", NULL);
	if (r->failed && new_reason && (!old_reason || strcmp(old_reason, new_reason) != 0))
		event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_WARNING, "ApplyFailed",
		             "%s", new_reason);
}

/* ---- reconcile ---- */

static bool all_released(struct rec *r)
{
	json_t *owned = owned_namespaces(r);
	bool done = json_object_size(owned) == 0;

	for (int k = 0; done && k < N_OWNED; k++) {
		struct jdoc_list objs = inf_by_index_ref(r->t->owned[k], IDX_TENANT, r->name);

		done = objs.n == 0;
		jdoc_list_release(&objs);
	}
	json_decref(owned);
	return done;
}

static struct ctrl_result teardown(struct rec *r)
{
	json_t *owned = owned_namespaces(r), *ns, *status;
	const char *name;
	bool done;

	json_object_foreach(owned, name, ns)
		let_go(r, ns);
	json_decref(owned);
	delete_owned_in(r, NULL, r->active);
	delete_tenant_role(r);
	done = !r->failed && all_released(r);
	if (done && set_finalizer(r, false)) {
		log_info("tenant released", "{s:s}", "tenant", r->name);
		return CTRL_RESULT_DONE;
	}
	r->ns_pending = true;
	status = desired_status(r, true);
	write_status(r, status);
	json_decref(status);
	return r->failed ? CTRL_RESULT_RETRY : CTRL_RESULT_AFTER(NOT_READY_POLL);
}

static struct ctrl_result provision(struct rec *r)
{
	json_t *status;
	bool ready;

	if (!set_finalizer(r, true))
		return CTRL_RESULT_RETRY;
	if (claims_of(r->doc, &r->claims) < 0) {
		failf(r, "cannot compute namespace names");
		return CTRL_RESULT_RETRY;
	}
	sync_namespaces(r);
	sync_inside(r);
	sync_tenant_role(r);
	status = desired_status(r, false);
	write_status(r, status);
	ready = !r->failed && !r->ns_pending && !r->quota_pending && !r->access_pending &&
	        !r->policies_pending && json_array_size(r->collisions) == 0;
	json_decref(status);
	if (r->failed)
		return CTRL_RESULT_RETRY;
	return ready ? CTRL_RESULT_DONE : CTRL_RESULT_AFTER(NOT_READY_POLL);
}

/* The Tenant is gone (its finalizer was removed by hand): clean what is left. */
static struct ctrl_result orphaned(struct rec *r)
{
	json_t *owned = owned_namespaces(r), *ns;
	const char *name;

	json_object_foreach(owned, name, ns)
		if (!jx_get(ns, "metadata", "deletionTimestamp", NULL))
			let_go(r, ns);
	json_decref(owned);
	delete_owned_in(r, NULL, r->active);
	delete_tenant_role(r);
	return r->failed ? CTRL_RESULT_RETRY : CTRL_RESULT_DONE;
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct tenant_ctl *t = ud;
	const struct jdoc *doc = inf_get_key_ref(t->tenants, key);
	json_t *tenant = copy_of(doc); /* the primary object, read by the model as jansson */
	const json_t *empty_tenant = NULL;
	struct rec r = {
	        .t = t,
	        .kc = mgr_client(ctrl_mgr(c)),
	        .name = key,
	        .cfg = lcfg_current(),
	        .active = json_object(),
	        .let_go = json_object(),
	        .created = json_array(),
	        .collisions = json_array(),
	        .released = json_array(),
	};
	struct ctrl_result res;

	if (tenant == NULL) {
		empty_tenant = json_pack("{s:{s:s}}", "metadata", "name", key);
		r.tenant = empty_tenant;
		res = orphaned(&r);
		goto out;
	}
	r.tenant = tenant;
	r.doc = doc;
	r.plan = cached_copy(t->plans, NULL, jx_str(tenant, "spec", "plan", NULL) ?: "");
	if (jx_get(tenant, "metadata", "deletionTimestamp", NULL))
		res = finalizer_index(tenant) >= 0 ? teardown(&r) : CTRL_RESULT_DONE;
	else
		res = provision(&r);
out:
	tm_claims_release(&r.claims);
	json_decref(r.active);
	json_decref(r.let_go);
	json_decref(r.created);
	json_decref(r.collisions);
	json_decref(r.released);
	json_decref(r.privileged);
	json_decref(r.quota_used);
	json_decref((json_t *)r.plan);
	json_decref((json_t *)empty_tenant);
	json_decref(tenant);
	jdoc_unref(doc);
	lcfg_unref(r.cfg);
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
