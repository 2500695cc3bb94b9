/*
 * view.h - what the tenant proxy knows without asking the API server: which Tenants exist,
 * who their members are, and which namespaces each has (shared informer caches).
 *
 * Sources: the Tenant informer (whole objects, as the Tenant controller caches them, so that
 * `landlord run` holds one) and the Namespace informer (metadata only, as the controllers)
 * with the index "tenant" on the label landlord.dev/tenant. A namespace belongs to a tenant
 * by that label alone: the label-protection policy keeps it writable only by landlord and
 * administrators.
 *
 * A member of tenant T is a user or group named in T's spec.accessControl (owners, editors,
 * viewers), a ServiceAccount named there, or a ServiceAccount of one of T's namespaces
 * ("system:serviceaccount:<ns>:<name>" with <ns> labelled T). Membership lets a caller reach
 * T's base URL; what it may do there is RBAC's to decide, upstream, as the caller.
 *
 * Invariants: lookups never call the API server; they read the informers' caches (thread-safe
 * references), so any number of requests look up at once.
 */
#ifndef LANDLORD_PROXY_VIEW_H
#define LANDLORD_PROXY_VIEW_H

#include <stdbool.h>
#include <stddef.h>

struct mgr;
struct ll_err;
struct px_view;
struct px_nsmap;

/* Who is calling, once authenticated. Strings borrowed. */
struct px_identity {
	const char *user;
	const char *const *groups;
	size_t n_groups;
};

/**
 * px_view_new() - the view over @m's shared informers (made on first use). Before mgr_run(),
 * from the thread that sets @m up. Return: 0; -ENOMEM (an informer or index could not be made).
 */
int px_view_new(struct mgr *m, struct px_view **out /* OUT */, struct ll_err *err);
/** px_view_free() - NULL is fine; the informers stay the manager's. */
void px_view_free(struct px_view *v);
/** px_view_synced() - both informers have applied their first list. */
bool px_view_synced(const struct px_view *v);

/** px_view_tenant_exists() - whether Tenant @tenant exists (and is not being deleted). */
bool px_view_tenant_exists(struct px_view *v, const char *tenant);
/** px_view_is_member() - whether @id is a member of Tenant @tenant (false if none). */
bool px_view_is_member(struct px_view *v, const char *tenant, const struct px_identity *id);
/** px_view_nsmap() - the namespaces of @tenant now (owned: px_nsmap_free()); never NULL. */
struct px_nsmap *px_view_nsmap(struct px_view *v, const char *tenant);

#endif
