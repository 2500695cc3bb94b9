/*
 * reserve.h - maxNamespaces under concurrent creates (issue 12, point 6): before admitting a
 * Namespace CREATE that joins a tenant whose Plan sets maxNamespaces, the webhook reserves a
 * slot on a per-tenant object, with a write guarded by resourceVersion, so that two replicas
 * deciding at once cannot both admit the last slot.
 *
 * The object is the ConfigMap RESERVATIONS_PREFIX<tenant> in landlord's namespace
 * (tenancy/nsreserve.h says its shape). A slot counts until the namespace is in this replica's
 * caches (it then counts as a namespace of the tenant) or it is released: the reservations
 * controller (controllers/reservations.c) releases a slot once its namespace exists and has
 * settled, and any slot after RESERVATION_TTL_S (the create failed after admission: another
 * webhook, a policy or a name already taken refused it); the webhook drops expired slots when
 * it writes.
 *
 * Invariants: the only API calls on an admission's path are here, and only for a Namespace
 * CREATE under a limit; every failure to reserve refuses the namespace (fail closed), with a
 * message saying why; thread-safe (any number of admissions at once).
 */
#ifndef LANDLORD_WEBHOOK_RESERVE_H
#define LANDLORD_WEBHOOK_RESERVE_H

#include <stddef.h>

#include "tenancy/admit.h"

struct kc_client;

/**
 * ns_reserve_slot() - reserve namespace @ns's slot for @tenant, whose Plan allows @max
 * namespaces (adm_decision.ns), through @c: the tenant's namespaces in @view's caches, its
 * spec's claims and the live slots count, each name once (adm_namespace_usage()).
 * Return: 0 (reserved, or reserved before), 1 (no slot is left: @why says how many are taken),
 * -EIO (the API server refused or did not answer) or -EAGAIN (every attempt met another
 * writer); on failure @why names the ConfigMap and the error.
 */
int ns_reserve_slot(struct kc_client *c, const struct adm_view *view, const char *tenant,
                    const char *ns, long long max, char *why, size_t why_size);

#endif
