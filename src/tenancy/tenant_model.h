/*
 * tenant_model.h - what a Tenant should become, computed without I/O.
 *
 * The Tenant controller reads a Tenant, its Plan and the LandlordConfig in force from caches and
 * asks this module for the desired state: which namespaces the tenant claims, the metadata of each
 * namespace, and the objects landlord stamps into it (RoleBindings, LimitRange, NetworkPolicy) or
 * keeps cluster-wide (the per-tenant ClusterRole and ClusterRoleBinding). docs/tenants.md is the
 * user-facing description of the same rules.
 *
 * Inputs are read in place: the Tenant, its Plan and a namespace are struct jval views into
 * documents (base/jdoc.h) - the informers' cached objects, or a document built from what landlord
 * just wrote - so a reconcile copies nothing out of its caches. What this module returns is what
 * landlord sends (desired objects, patches), built as jansson values and dropped once sent.
 *
 * Invariants:
 *  - Pure and deterministic: the same inputs give the same JSON (keys sorted by jansson's dump,
 *    arrays in a documented order), so "desired equals cached" checks are stable and a steady
 *    state costs no writes.
 *  - Inputs are borrowed and never modified; a view must stay valid (its document held) for the
 *    call, and the claims' users for as long as the claims are used; every returned json_t is a
 *    new reference.
 *  - Quantities in the objects built here are in the API server's canonical form (quantity.h), so
 *    they compare equal to what the API server returns.
 */
#ifndef LANDLORD_TENANT_MODEL_H
#define LANDLORD_TENANT_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"
#include "base/jdoc.h"
#include "tenancy/landlordconfig.h"
#include "tenancy/names.h"

/* Longest metadata value after {{ TENANT.* }} substitution: the API server's limit on all of an
 * object's annotations together, so nothing longer could be stored anyway. */
#define TM_METADATA_VALUE_MAX (256u << 10)

/* One namespace a tenant asks for. */
struct tm_ns {
	char name[NAMES_BUF];
	char kind[NAMES_BUF]; /* landlord.dev/kind: the name given, or "sandbox" */
	const char *user; /* sandboxes: the raw user (lent by the Tenant's document); else NULL */
	bool collides;    /* with another claim of this tenant (names_claims_check) */
};

struct tm_claims {
	struct tm_ns *ns; /* in spec order: withTenantPrefix, withoutTenantPrefix, sandboxes */
	size_t n;
};

/**
 * tm_claims_build() - the namespaces @tenant asks for, with collisions among them marked.
 * Sandboxes exist for the users (not groups) among owners and editors, once per user, when
 * spec.namespaces.sandboxes.enabled. @tenant is read in place (a cached document: index
 * functions call this on every Tenant event); the claims' users point into it, so the caller
 * holds the document while it uses them. Return: 0, -EINVAL (no name) or -EIO (hashing failed).
 */
int tm_claims_build(struct jval tenant, struct tm_claims *out /* OUT */);
void tm_claims_release(struct tm_claims *c);
/** tm_claims_find() - the claim for namespace @name, or NULL. */
const struct tm_ns *tm_claims_find(const struct tm_claims *c, const char *name);

/**
 * tm_namespace_metadata() - the labels and annotations landlord sets on a tenant namespace.
 * @ns: the claim, or NULL for an adopted namespace (then @adopted_kind is the kind label to set).
 * Returns {"labels": {...}, "annotations": {...}} where annotations include
 * landlord.dev/managed-metadata: {"tenant":T,"labels":[keys],"annotations":[keys]} naming every
 * key set here except that annotation itself.
 */
json_t *tm_namespace_metadata(struct jval tenant, const struct lcfg *cfg, const char *plan,
                              const char *ns_name, const struct tm_ns *ns,
                              const char *adopted_kind);

/**
 * tm_managed_keys() - parse the landlord.dev/managed-metadata annotation of @namespace_obj.
 * Return: {"tenant":T,"labels":[...],"annotations":[...]} (new reference) or NULL when absent,
 * malformed, or naming a tenant other than the namespace's landlord.dev/tenant label: only the
 * record of the tenant the protected label names is landlord's (docs/internals/trust.md).
 */
json_t *tm_managed_keys(struct jval namespace_obj);
/** tm_managed_metadata_ignored() - the annotation is there, but tm_managed_keys() refuses it. */
bool tm_managed_metadata_ignored(struct jval namespace_obj);

/**
 * tm_namespace_protected() - a namespace landlord never provisions, labels, releases or writes
 * into, for any reason: kube-*, default, landlord's own (landlord-system) and the LandlordConfig's
 * privileged namespaces.
 */
bool tm_namespace_protected(const struct lcfg *cfg, const char *name);

/**
 * tm_metadata_patch() - a merge patch turning @current (the namespace as cached) into one
 * carrying @desired ({labels, annotations}, or NULL to remove everything landlord set): keys
 * landlord set earlier and no longer wants become null. Returns NULL when nothing changes.
 * The patch carries metadata.resourceVersion, so it fails with 409 if the namespace changed.
 * A namespace that joins a tenant loses its landlord.dev/released-from annotation.
 */
json_t *tm_metadata_patch(struct jval current, const json_t *desired);

/**
 * tm_release_patch() - what releasing @current from @tenant removes: every landlord.dev/ label
 * and annotation, and the keys landlord's record for @tenant lists (the record counts when it
 * names @tenant and the tenant label, if still there, does too), except the Pod Security labels,
 * which stay at the tenant's level until an administrator changes them. It sets
 * landlord.dev/released-from: @tenant, which is how the tenant's status.released is known (it
 * survives restarts and stale caches). Never NULL.
 */
json_t *tm_release_patch(struct jval current, const char *tenant);

/** The subjects of a role ("owners", "editors", "viewers") as RBAC subjects, sorted. */
json_t *tm_subjects(struct jval tenant, const char *role);

/**
 * tm_rolebindings() - the RoleBindings for namespace @ns_name: an object mapping binding name
 * ("landlord-owners-admin") to the RoleBinding. @ns_labels are the namespace's labels as landlord
 * sets them (for the custom role mapping). @claim is NULL for adopted namespaces.
 */
json_t *tm_rolebindings(struct jval tenant, const struct lcfg *cfg, const char *ns_name,
                        const json_t *ns_labels, const struct tm_ns *claim, bool private_sandbox);

/** tm_limitrange() - LimitRange landlord-limits from @plan, or NULL when it has none. */
json_t *tm_limitrange(struct jval tenant, struct jval plan, const char *ns_name);

/**
 * tm_networkpolicy() - NetworkPolicy landlord-isolation: ingress from the tenant's namespaces
 * and from @privileged (sorted namespace names, may be empty).
 */
json_t *tm_networkpolicy(struct jval tenant, const char *ns_name, const json_t *privileged);

/**
 * tm_resourcequota() - ResourceQuota landlord-quota with spec.hard @hard (borrowed: the split
 * landlord computed, quotaplan.h), its quantities in canonical form.
 */
json_t *tm_resourcequota(struct jval tenant, const char *ns_name, const json_t *hard);

/* The cluster-wide roles landlord gives a tenant's people, each a ClusterRole and a binding. */
enum tm_tenant_role {
	TM_ROLE_MEMBERS, /* landlord:tenant:<t>: every member may get and watch the Tenant */
	TM_ROLE_OWNERS,  /* landlord:tenant:<t>:owners: "own" on it, self-service namespaces */
	TM_TENANT_ROLES
};

/**
 * tm_clusterrole() - the ClusterRole @which for @tenant. The owners' role also lets them create
 * namespaces (the webhook admits only their tenants' names) and delete the tenant's
 * @namespaces (an object whose keys are its namespaces; NULL or empty: none).
 */
json_t *tm_clusterrole(struct jval tenant, enum tm_tenant_role which, const json_t *namespaces);
/** tm_clusterrolebinding() - its binding; NULL when nobody holds the role. */
json_t *tm_clusterrolebinding(struct jval tenant, enum tm_tenant_role which);
/* Room for "landlord:tenant:<tenant>:owners" and its NUL. */
#define TM_ROLE_NAME_BUF (NAMES_BUF + sizeof("landlord:tenant::owners"))

/** tm_tenant_role_name() - the name of role @which of @tenant into @out. */
void tm_tenant_role_name(const char *tenant, enum tm_tenant_role which, char out[TM_ROLE_NAME_BUF]);

/* ---- spec.hibernation: the tenant's ResourceSupervisor (docs/tenants.md#hibernation) ---- */

#define TM_SUPERVISORS     "resourcesupervisors" /* the resource, in RBAC rules */
#define TM_SUPERVISOR_KIND "ResourceSupervisor"
#define TM_DEFAULT_TZ      "UTC" /* the CRDs' default timezone */

/* A Tenant's spec.hibernation, read in place: the strings are lent by the Tenant's document. */
struct tm_hibernation {
	bool set;                      /* spec.hibernation is an object; the rest holds only then */
	const char *sleep;             /* sleepSchedule, or NULL (absent or empty) */
	const char *wake;              /* wakeSchedule, or NULL (absent or empty) */
	const char *timezone;          /* never NULL once set: TM_DEFAULT_TZ when absent or empty */
	bool enforce, allow_exclusion; /* absent: false */
};

/** tm_hibernation_parse() - @tenant's spec.hibernation into @out (zeroed when it is absent). */
void tm_hibernation_parse(struct jval tenant, struct tm_hibernation *out /* OUT */);

/**
 * tm_resourcesupervisor() - the ResourceSupervisor landlord makes for @tenant's
 * spec.hibernation: named as the tenant, labelled with landlord's labels for it, owned by it
 * (ownerReference with its uid, controller: true), selecting the namespaces labelled
 * landlord.dev/tenant=<tenant>, with the Tenant's schedule (timezone defaulted), enforce and
 * allowWorkloadExclusion. Everything landlord owns of it: spec, labels and ownerReferences;
 * never annotations (the owners' override), finalizers or status. Every field the CRD would
 * default is written, so the object as stored compares equal. NULL when spec.hibernation is
 * absent, or the Tenant has no name or uid (a stand-in for a deleted one). With @argocd (the
 * LandlordConfig names an Argo CD namespace), the AppProject named as the tenant (its
 * Extension's, docs/argocd.md) gets the deny sync window while asleep: spec.argocd.appProjects.
 */
json_t *tm_resourcesupervisor(struct jval tenant, bool argocd);

/** tm_supervisor_owned_by() - does @supervisor carry an ownerReference to the Tenant whose uid
 * is @tenant_uid (NULL: false)? Only such a supervisor is the tenant's: others are never
 * taken over. */
bool tm_supervisor_owned_by(struct jval supervisor, const char *tenant_uid);

/**
 * tm_supervisor_owner_rule() - the rule of the owners' ClusterRole (TM_ROLE_OWNERS) that lets
 * them change their supervisor's override: get, patch and update on resourcesupervisors by
 * resourceNames [<tenant>] (the landlord-hibernation policy refuses any other change). Added by
 * the controller only while the supervisor of that name is the tenant's.
 */
json_t *tm_supervisor_owner_rule(struct jval tenant);

/** tm_pod_security() - spec.podSecurity or the configured default (static string). */
const char *tm_pod_security(struct jval tenant, const struct lcfg *cfg);
bool tm_network_isolation(struct jval tenant, const struct lcfg *cfg);

/**
 * tm_canonical_quantities() - a new object: the ResourceList (or LimitRange map) @list with every
 * quantity in canonical form; values that do not parse are kept as written. Not an object: {}.
 */
json_t *tm_canonical_quantities(struct jval list);

/** tm_sorted_keys() - a new array of the keys of object @obj, sorted (byte order). */
json_t *tm_sorted_keys(const json_t *obj);

/* Tenants informer index: the Plan a Tenant names (shared by the Tenant and Plan controllers). */
#define TM_INDEX_PLAN "plan"
void tm_index_plan(const struct jdoc *tenant, void (*emit)(const char *value, void *ctx), void *ctx,
                   void *ud);

#endif
