/*
 * controllers.h - landlord's controllers and the API types they share.
 *
 * Each controller is one file exporting a struct controller_def builder; cmd/landlord wires
 * them into a manager. Controllers read only from informer caches on the hot path and write
 * only when the desired state differs from what the cache holds.
 *
 * Controllers:
 *  - tenant (tenant.c): a Tenant becomes namespaces, access, quota and isolation.
 *  - plan (plan.c): Plan status (tenants, namespaces, quota totals, the tenants nearest their
 *    limits, the maxNamespaces report), kept one changed tenant at a time.
 *  - reservations (reservations.c): releases the webhook's maxNamespaces slots that no
 *    namespace used (tenancy/nsreserve.h).
 *  - landlordconfig (landlordconfig_ctl.c): validates the LandlordConfig singleton, puts the
 *    accepted configuration in force (config/current.h) and persists it.
 */
#ifndef LANDLORD_CONTROLLERS_H
#define LANDLORD_CONTROLLERS_H

#include "api/api.h"
#include "kube/manager.h"

/** tenant_controller_def() - the Tenant controller. */
struct controller_def tenant_controller_def(void);
/** plan_controller_def() - the Plan controller. */
struct controller_def plan_controller_def(void);
/** reservations_controller_def() - the reservations controller. */
struct controller_def reservations_controller_def(void);
/** landlordconfig_controller_def() - the LandlordConfig controller. */
struct controller_def landlordconfig_controller_def(void);

#endif
