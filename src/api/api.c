/* api.c - the landlord.dev resources (see api.h). */
#include "api/api.h"

const struct kc_gvr LL_TENANTS = {LANDLORD_GROUP, LANDLORD_VERSION_V1A1, "tenants", "Tenant",
                                  false};
const struct kc_gvr LL_PLANS = {LANDLORD_GROUP, LANDLORD_VERSION_V1A1, "plans", "Plan", false};
const struct kc_gvr LL_LANDLORDCONFIGS = {LANDLORD_GROUP, LANDLORD_VERSION_V1A1, "landlordconfigs",
                                          "LandlordConfig", false};
const struct kc_gvr LL_TEMPLATES = {LANDLORD_GROUP, LANDLORD_VERSION_V1A1, "templates", "Template",
                                    false};
const struct kc_gvr LL_TEMPLATEINSTANCES = {LANDLORD_GROUP, LANDLORD_VERSION_V1A1,
                                            "templateinstances", "TemplateInstance", true};
const struct kc_gvr LL_TEMPLATEGROUPINSTANCES = {LANDLORD_GROUP, LANDLORD_VERSION_V1A1,
                                                 "templategroupinstances", "TemplateGroupInstance",
                                                 false};
const struct kc_gvr LL_HELMLEDGERS = {LANDLORD_GROUP, LANDLORD_VERSION_V1A1, "helmledgers",
                                      "HelmLedger", false};
const struct kc_gvr LL_RESOURCESUPERVISORS = {LANDLORD_GROUP, LANDLORD_VERSION_V1A1,
                                              "resourcesupervisors", "ResourceSupervisor", false};
const struct kc_gvr LL_EXTENSIONS = {LANDLORD_GROUP, LANDLORD_VERSION_V1A1, "extensions",
                                     "Extension", false};
const struct kc_gvr ARGOCD_APPPROJECTS = {"argoproj.io", "v1alpha1", "appprojects", "AppProject",
                                          true};
