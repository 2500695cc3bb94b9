/*
 * extension.h - the Extension controller: a tenant's Argo CD AppProject (docs/argocd.md).
 *
 * With spec.integrations.argocd.namespace in the LandlordConfig, each Extension (cluster-scoped,
 * written by administrators) gets the AppProject named as its tenant in that namespace:
 * sourceRepos from the Extension; the LandlordConfig's clusterResourceWhitelist and
 * namespaceResourceBlacklist unless the Extension gives its own; destinations exactly the
 * tenant's namespaces (labelled landlord.dev/tenant=<tenant>), each with
 * destinationServiceAccounts' defaultServiceAccount landlord-argocd, the account Argo CD
 * impersonates to sync there (bound to the tenant's editor role in that namespace); roles owner,
 * editor (full) and viewer (read-only) whose groups are the Tenant's groups. The Tenant's users
 * go into argocd-rbac-cm, key policy.landlord-<tenant>.csv.
 *
 * Invariants:
 *  - An AppProject of the tenant's name without landlord's labels for that tenant is never
 *    written (AppProjectConflict); an account landlord-argocd that landlord did not make is
 *    never adopted (AccountConflict: that namespace gets no destination).
 *  - landlord writes only the fields it owns, by server-side apply (field manager landlord),
 *    and only when they differ from the cache: never spec.syncWindows or annotations, which the
 *    ResourceSupervisor controller keeps; each tenant's rbac key under its own field manager
 *    (landlord-argocd-<tenant>), so no tenant's apply removes another's key.
 *  - Argo CD syncs as landlord-argocd or not at all: without application.sync.impersonation
 *    .enabled "true" in argocd-cm the AppProject has no destinations (ImpersonationDisabled).
 *  - A name with a comma, quote or control character never reaches Argo CD's casbin policy: it
 *    is left out and reported (NamesRefused, naming the field).
 *  - Without the AppProject CRD the Extension is ArgoCDUnavailable and landlord runs on; the
 *    CRD installed later is picked up (CRD informer, discovery) without a restart.
 *  - The status is a function of the world, written only when it differs from the cached one:
 *    the status write wakes the Extension once, and that reconcile writes nothing.
 */
#ifndef LANDLORD_EXTENSION_H
#define LANDLORD_EXTENSION_H

#include "kube/manager.h"

struct ext;

/** ext_new() - the controller's state (ext_free()). */
struct ext *ext_new(void);
void ext_free(struct ext *e);
/** ext_controller_def() - the controller "extension" (@e borrowed). */
struct controller_def ext_controller_def(struct ext *e);

#endif
