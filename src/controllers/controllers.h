/*
 * controllers.h - landlord's controllers and the API types they share.
 *
 * Each controller is one file exporting a struct controller_def builder; cmd/landlord wires
 * them into a manager. Controllers read only from informer caches on the hot path and write
 * only when the desired state differs from what the cache holds.
 *
 * Controllers:
 *  - tenant (tenant.c): a Tenant becomes namespaces, access, quota and isolation.
 *  - plan (plan.c): Plan status (tenants, namespaces, per-tenant used/hard).
 *  - landlordconfig (landlordconfig_ctl.c): validates the LandlordConfig singleton, puts the
 *    accepted configuration in force (config/current.h) and persists it.
 */
#ifndef LANDLORD_CONTROLLERS_H
#define LANDLORD_CONTROLLERS_H

#include "landlord/kube.h"
#include "landlord/manager.h"

#define LANDLORD_GROUP         "landlord.dev"
#define LANDLORD_VERSION_V1A1  "v1alpha1"
#define LANDLORD_API_VERSION   "landlord.dev/v1alpha1"
#define LANDLORD_FIELD_MANAGER "landlord"
#define LANDLORD_FINALIZER     "landlord.dev/finalizer"

/* Labels and annotations (DESIGN.md, "API"). */
#define LABEL_TENANT     "landlord.dev/tenant"
#define LABEL_KIND       "landlord.dev/kind"
#define LABEL_PLAN       "landlord.dev/plan"
#define LABEL_USERNAME   "landlord.dev/username"
#define LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define MANAGED_BY_VALUE "landlord"

/* Where landlord keeps what outlives a process. */
#define LANDLORD_SYSTEM_NAMESPACE "landlord-system"
#define LANDLORD_CONFIG_NAME      "landlord"
#define ACCEPTED_CONFIG_CONFIGMAP "landlord-config-accepted"

extern const struct kc_gvr LL_TENANTS;
extern const struct kc_gvr LL_PLANS;
extern const struct kc_gvr LL_LANDLORDCONFIGS;

/** tenant_controller_def() - the Tenant controller. */
struct controller_def tenant_controller_def(void);
/** plan_controller_def() - the Plan controller. */
struct controller_def plan_controller_def(void);
/** landlordconfig_controller_def() - the LandlordConfig controller. */
struct controller_def landlordconfig_controller_def(void);

#endif
