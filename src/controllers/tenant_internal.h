/*
 * tenant_internal.h - what the files of the Tenant controller share (not a public header).
 *
 * The controller is one reconcile split by responsibility:
 *   tenant.c             informers, indexes, event mapping, the finalizer and the reconcile itself
 *   tenant_write.c       every write: ensure (apply and revert others' additions), patch, delete
 *   tenant_namespaces.c  the namespaces a tenant claims: create, adopt, keep metadata, let go
 *   tenant_inside.c      what goes into each namespace, in order: quota, policies, then access
 *   tenant_quota.c       the plan split over the namespaces, each share put in force at once
 *   tenant_access.c      RoleBindings and the per-tenant ClusterRole
 *   tenant_hibernation.c spec.hibernation: the tenant's ResourceSupervisor
 *   tenant_status.c      status and conditions
 *
 * Invariants: a struct rec lives for one reconcile of one Tenant and is touched by one thread;
 * everything read comes from the informers in struct tenant_ctl as references to their
 * documents, read in place (struct jval), never copied; an object landlord writes is read back
 * from the answer as a document too (tc_doc_of()). What is built as jansson is what is sent.
 * Writes go through tenant_write.c, which records the first failure in the rec (r->failed,
 * r->fail_msg).
 */
#ifndef LANDLORD_TENANT_INTERNAL_H
#define LANDLORD_TENANT_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"
#include "base/jdoc.h"
#include "base/vec.h"
#include "controllers/controllers.h"
#include "kube/informer.h"
#include "tenancy/landlordconfig.h"
#include "tenancy/tenant_model.h"

#define IDX_TENANT             "tenant" /* label landlord.dev/tenant (owned kinds: landlord's only) */
#define IDX_HAD                "had"    /* tenants: the namespaces their status lists */
#define IDX_NAMESPACE          "namespace"  /* RoleBindings: their namespace */
#define IDX_CLAIMS             "claims"     /* tenants: the namespace names they claim */
#define IDX_RELEASED           "released"   /* namespaces: landlord.dev/released-from */
#define IDX_UNTENANTED         "untenanted" /* namespaces without a tenant label, under one value */
#define UNTENANTED             "-"
#define NOT_READY_POLL         30000     /* safety net while not Ready; drift comes by watch */
#define DEFAULT_SERVICEACCOUNT "default" /* what pods run as unless they say */

/* The kinds landlord stamps into tenant namespaces, in the order they are torn down. */
enum owned_kind { OWN_RB, OWN_NP, OWN_LR, OWN_RQ, N_OWNED };

struct rec;

/*
 * One row per owned kind (TC_OWNED, in tenant.c). A kind with one object per namespace built
 * from the tenant alone (a policy) names its object and its builder, and sync_policies() applies
 * it: adding such a kind is a row in TC_OWNED, its builder in src/tenancy/tenant_model.c, and its
 * verbs in deploy/rbac.yaml. RoleBindings and ResourceQuotas have steps of their own (access
 * waits for quota; quota is split in two phases).
 *
 * Each row also says what its informer caches (keep): what reconcile compares, and every field
 * that changes the object's meaning even where landlord sets nothing, so that drift repair
 * sees, and reverts, what others add (tc_ensure()). Of the metadata, landlord reads the labels
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

extern const struct owned TC_OWNED[N_OWNED];

struct tenant_ctl {
	struct controller *c;
	struct inf *tenants, *plans, *namespaces, *owned[N_OWNED], *croles, *crbindings;
	struct inf *supervisors; /* every ResourceSupervisor, whole (the supervisor controller's) */
};

/*
 * Documents by namespace name, sorted by name; each entry holds a reference to its document
 * (a namespace, or the namespace's ResourceQuota). Iterate over v[0..len).
 */
struct tc_doc_entry {
	char *name;
	const struct jdoc *doc; /* never NULL */
};
struct tc_docs VEC_BODY(struct tc_doc_entry);

/* The document of @name (lent while @m holds it), or NULL. */
const struct jdoc *tc_docs_get(const struct tc_docs *m, const char *name);
/* Set @name's document to @take (its reference is taken; NULL is ignored), replacing any. */
void tc_docs_put(struct tc_docs *m, const char *name, const struct jdoc *take);
void tc_docs_release(struct tc_docs *m);

/* State of one reconcile. */
struct rec {
	struct tenant_ctl *t;
	struct kc_client *kc;
	/* the Tenant, read in place: the cached document, or when it is gone a stand-in holding
	 * only its name (@doc holds it; the claims' users point into it) */
	struct jval tenant;
	const struct jdoc *doc;
	const char *name;
	struct lcfg *cfg;
	struct jval plan; /* the cached Plan; JT_NONE: missing (@plan_doc holds it) */
	const struct jdoc *plan_doc;
	struct tm_claims claims;
	struct tc_docs active; /* the namespaces active in this pass, as cached or just written */
	json_t *let_go;        /* ns name -> true: released or purged in this pass */
	json_t *created;       /* names of the namespaces created in this pass */
	json_t *collisions;    /* [{name, reason}] */
	json_t *released;      /* names */
	json_t *privileged;    /* sorted names of existing privileged namespaces */
	json_t *quota_used;
	struct tc_docs quota_now; /* ns name -> its ResourceQuota as last written or read now */
	bool quotas_read;         /* quota_now holds a live read of every quota of the tenant */
	bool ns_pending, quota_pending, access_pending, policies_pending, over_plan;
	/* spec.hibernation (tenant_hibernation.c): the HibernationReady condition's reason and
	 * message (reason NULL: no condition), and whether the supervisor is the tenant's and in
	 * place, so that its owners may change its override */
	const char *hib_reason;
	char hib_msg[320];
	bool hib_ours;
	bool failed;
	char fail_msg[512];
};

/* ---- reading the caches (tenant.c) ---- */

bool tc_doc_deleting(const struct jdoc *d);
/* Both set and equal. */
bool tc_str_eq(const char *a, const char *b);
/* @s is a string element of the array @list. */
bool tc_str_listed(const json_t *list, const char *s);
/* @obj (may be NULL) carries landlord's labels for this tenant (managed-by and tenant). */
bool tc_landlords(const struct rec *r, const struct jdoc *obj);

/* ---- writes (tenant_write.c); each returns whether it succeeded, and records a failure ---- */

void tc_failf(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* May landlord write this object? Never into (or to) a system or privileged namespace, for any
 * reason (tm_namespace_protected()); a refusal is logged. */
bool tc_may_write(struct rec *r, const struct kc_gvr *gvr, const char *ns, const char *name);
/* Did a write succeed? A 404 counts as success when @missing_ok (deletes). */
bool tc_write_ok(struct rec *r, int rc, const struct kc_resp *resp, const struct ll_err *err,
                 const char *what, const char *ns, const char *name, bool missing_ok);
/* An Event about the Tenant (the stand-in when it is gone). */
void tc_event(struct rec *r, const char *type, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* The object as the API server wrote it (@body, borrowed), as a new document without its
 * managedFields; NULL when @body is NULL or does not convert. */
struct jdoc *tc_doc_of(const json_t *body);
/* The merge patch removing what others added to @have beyond @want, or NULL (see the .c). */
json_t *tc_added_by_others(struct jval have, const json_t *want, bool top);
bool tc_merge_patch(struct rec *r, const struct kc_gvr *gvr, const char *ns, const char *name,
                    const json_t *body);
/*
 * Bring the object to @desired (@cached: what the informer holds, or NULL). When @written is
 * not NULL, the object as the API server last wrote it replaces *@written (a new document,
 * tc_doc_of(); left as it was when nothing had to be written).
 */
bool tc_ensure(struct rec *r, const struct kc_gvr *gvr, const json_t *desired,
               const struct jdoc *cached, const struct jdoc **written /* IN/OUT, or NULL */);
/* Delete @obj with its uid as precondition; gone already counts as done. */
bool tc_delete_obj(struct rec *r, const struct kc_gvr *gvr, const struct jdoc *obj);
/* A patch of @type; the object as written replaces *@result (a new document) when asked. */
bool tc_patch(struct rec *r, const struct kc_gvr *gvr, const char *ns, const char *name,
              enum kc_patch_type type, const json_t *body,
              const struct jdoc **result /* IN/OUT, or NULL */);

/* ---- namespaces (tenant_namespaces.c) ---- */

/* Create, adopt and update the claimed namespaces; let go of the ones no longer wanted. */
void tc_sync_namespaces(struct rec *r);
/* Every namespace this tenant labels or its status lists, as cached (references, into @out). */
void tc_owned_namespaces(struct rec *r, struct tc_docs *out /* OUT, released by the caller */);
/* A namespace leaves the tenant: purge it, or release it. */
void tc_let_go(struct rec *r, const struct jdoc *ns);
/* Delete landlord's objects of this tenant in @ns (NULL: in every namespace that was the
 * tenant's and is not in @keep_active). */
void tc_delete_owned_in(struct rec *r, const char *ns, const struct tc_docs *keep_active);
/* Was @ns this tenant's (label, released-from, or listed in its status)? */
bool tc_namespace_was_ours(struct rec *r, const char *ns);

/* ---- inside the namespaces (tenant_inside.c, tenant_access.c) ---- */

/* Quota, policies and access in every active namespace; objects elsewhere removed. */
void tc_sync_inside(struct rec *r);

/* ---- quota (tenant_quota.c) ---- */

/* Split the plan over the namespaces and put every share in force (lowered ones first). */
void tc_sync_quota(struct rec *r);
/* Revert what others added to landlord's ResourceQuota in @ns (@cached: the informer's). */
void tc_revert_quota_additions(struct rec *r, const char *ns, const struct jdoc *cached);
/* Is @ns's quota in force at least as strictly as its spec.hard (status.hard covers it, every
 * value no higher)? *@applied: exactly as spec.hard. Puts a pending spec.hard in force first. */
bool tc_quota_in_force(struct rec *r, const char *ns, bool *applied /* OUT */);
/* @rq's status.hard has every resource of spec.hard, none higher (NULL: false). */
bool tc_quota_covers(const struct jdoc *rq);
/* @rq's status.hard equals its spec.hard (NULL: false). */
bool tc_quota_applied(const struct jdoc *rq);
/* @ns's ResourceQuota: as written or read in this pass, else as cached (a new reference, or
 * NULL). */
const struct jdoc *tc_quota_now(struct rec *r, const char *ns);
/* TC_OWNED builders and deletion rules (tenant_inside.c). */
json_t *tc_build_isolation(const struct rec *r, const char *ns);
json_t *tc_build_limits(const struct rec *r, const char *ns);
bool tc_always(const struct rec *r);
/* Is the tenant's Plan known (cached)? */
bool tc_plan_known(const struct rec *r);
/* The RoleBindings of one namespace; granted only when @may_grant (quota and policies in force). */
void tc_sync_access(struct rec *r, const char *ns_name, const struct jdoc *ns, bool may_grant);
void tc_sync_tenant_role(struct rec *r);
/* Delete every RoleBinding in @ns that grants a member of the tenant (a released namespace). */
void tc_revoke_members(struct rec *r, const char *ns_name);
/* tc_revoke_members() again in every namespace released from the tenant (RoleBindings made
 * there later, by anyone). */
void tc_quarantine_released(struct rec *r);
void tc_delete_tenant_role(struct rec *r);

/* ---- hibernation (tenant_hibernation.c) ---- */

#define COND_HIBERNATION "HibernationReady"
#define HIB_PROVISIONED  "Provisioned"
/*
 * spec.hibernation: create the tenant's ResourceSupervisor (POST), repair its spec, labels and
 * ownerReferences (one JSON patch guarded by its resourceVersion, never touching its
 * annotations, finalizers or status), or delete it once spec.hibernation is gone. A supervisor
 * of the tenant's name without an ownerReference to its uid is reported (HibernationConflict)
 * and never written.
 */
void tc_sync_supervisor(struct rec *r);
/* Teardown: delete the tenant's supervisor (its finalizer wakes every namespace it put to
 * sleep); true once none of the tenant's is left, read from the API server. */
bool tc_supervisor_gone(struct rec *r);
/* Is the HibernationReady condition True, or absent (nothing asked)? */
bool tc_hibernation_ok(const struct rec *r);

/* ---- status (tenant_status.c) ---- */

json_t *tc_desired_status(struct rec *r, bool deleting);
/* Write @status if it differs from the Tenant's; an ApplyFailed Event when the failure is new. */
void tc_write_status(struct rec *r, json_t *status);

#endif
