/*
 * controllers.h - landlord's controllers and the API types they share.
 *
 * Each controller is one file exporting a struct controller_def builder; cmd/landlord wires
 * them into a manager. Controllers read only from informer caches on the hot path and write
 * only when the desired state differs from what the cache holds.
 */
#ifndef LANDLORD_CONTROLLERS_H
#define LANDLORD_CONTROLLERS_H

#include "landlord/kube.h"
#include "landlord/manager.h"

#define LANDLORD_GROUP         "landlord.dev"
#define LANDLORD_VERSION_V1A1  "v1alpha1"
#define LANDLORD_FIELD_MANAGER "landlord"

extern const struct kc_gvr LL_TENANTS;

/** tenant_controller_def() - the Tenant controller. */
struct controller_def tenant_controller_def(void);

#endif
