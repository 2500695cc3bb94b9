/*
 * api.h - the landlord.dev API in one place: group, version, kinds and their resources, and the
 * labels, annotations, finalizer and object names landlord reads and writes on other objects.
 *
 * Everything landlord-specific that crosses a process boundary (what is stored in the API server,
 * what users and tests see) is named here, so a rename is one edit and a reader finds every name
 * landlord owns in one file. lib/ knows none of these names. The user-facing description of each
 * is in docs/tenants.md and docs/config.md.
 */
#ifndef LANDLORD_API_H
#define LANDLORD_API_H

#include "kube/kube.h"

#define LANDLORD_GROUP        "landlord.dev"
#define LANDLORD_VERSION_V1A1 "v1alpha1"
#define LANDLORD_API_VERSION  "landlord.dev/v1alpha1"
/* The prefix of every label and annotation key landlord owns. */
#define LANDLORD_KEY_PREFIX "landlord.dev/"

/* The kinds of the group (cluster-scoped). */
extern const struct kc_gvr LL_TENANTS;
extern const struct kc_gvr LL_PLANS;
extern const struct kc_gvr LL_LANDLORDCONFIGS;
/* Templates (docs/templates.md): Templates and TemplateGroupInstances are cluster-scoped,
 * TemplateInstances namespaced. */
extern const struct kc_gvr LL_TEMPLATES;
extern const struct kc_gvr LL_TEMPLATEINSTANCES;
extern const struct kc_gvr LL_TEMPLATEGROUPINSTANCES;
/* landlord's ledgers of the Helm releases it installs (cluster-scoped; docs/helm.md). */
extern const struct kc_gvr LL_HELMLEDGERS;
/* Namespaces put to sleep and woken on a schedule (cluster-scoped; docs/hibernation.md). */
extern const struct kc_gvr LL_RESOURCESUPERVISORS;
/* A tenant's Argo CD AppProject (cluster-scoped; docs/argocd.md). */
extern const struct kc_gvr LL_EXTENSIONS;
/* Argo CD's AppProject (argoproj.io/v1alpha1, namespaced), served only once its CRD is. */
extern const struct kc_gvr ARGOCD_APPPROJECTS;

/*
 * The groups every admission policy in deploy/policies and the chart's webhook.exempt treat as
 * privileged whatever the LandlordConfig says: cluster administrators and landlord's operators.
 */
#define GROUP_MASTERS    "system:masters"
#define GROUP_PRIVILEGED "landlord:privileged"

/* Who landlord is to the API server: field manager, Event source, user agent. */
#define LANDLORD_FIELD_MANAGER "landlord"
#define LANDLORD_COMPONENT     "landlord"
#define LANDLORD_FINALIZER     "landlord.dev/finalizer"

/* Labels (docs/tenants.md, "What goes into every tenant namespace"). */
#define LABEL_TENANT   "landlord.dev/tenant"
#define LABEL_KIND     "landlord.dev/kind"
#define LABEL_PLAN     "landlord.dev/plan"
#define LABEL_USERNAME "landlord.dev/username"
/* "true": the namespace is cordoned (its own, or its tenant's spec.cordoned, which landlord
 * stamps on each namespace so that the webhook's configuration can select them). */
#define LABEL_CORDONED   "landlord.dev/cordoned"
#define LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define MANAGED_BY_VALUE "landlord"
/* Pod Security Admission's namespace labels (enforce, warn, audit and their -version). */
#define PSA_LABEL_PREFIX "pod-security.kubernetes.io/"

/* Annotations landlord writes on tenant namespaces, and their values. */
#define ANNOT_MANAGED_METADATA "landlord.dev/managed-metadata"
#define ANNOT_USERNAME_RAW     "landlord.dev/username-raw"
#define ANNOT_SOURCE           "landlord.dev/source"
#define ANNOT_RELEASED_FROM    "landlord.dev/released-from"
#define SOURCE_SPEC            "spec"
#define SOURCE_ADOPTED         "adopted"
/* landlord.dev/kind values that are not a name from the Tenant's spec. */
#define KIND_SANDBOX "sandbox"
#define KIND_ADOPTED "adopted"

/* Objects landlord keeps in every tenant namespace. */
#define QUOTA_NAME     "landlord-quota"
#define LIMITS_NAME    "landlord-limits"
#define ISOLATION_NAME "landlord-isolation"
/* RoleBindings are "landlord-<role>-<clusterrole>"; the per-tenant ClusterRoles and their
 * bindings are "landlord:tenant:<tenant>" (every member) and "landlord:tenant:<tenant>:owners"
 * (a tenant name has no ':', so no tenant's names can be another's). */
#define ROLEBINDING_PREFIX     "landlord-"
#define TENANT_CLUSTERROLE_FMT "landlord:tenant:%s"
#define TENANT_OWNERS_ROLE_FMT "landlord:tenant:%s:owners"
/* The custom verb an owner holds on its Tenant: the namespace-metadata policy lets a requester
 * label a new namespace with the tenants it may "own" (authorizer check). */
#define VERB_OWN                  "own"
#define TENANT_CLUSTERROLE_PREFIX "landlord:tenant:"
/* The ClusterRole deploy/rbac.yaml grants landlord: its bind rule lists the roles landlord may
 * hand out (scripts/render-rbac.py), so a change to it re-checks the LandlordConfig. */
#define LANDLORD_CLUSTERROLE "landlord"

/* Templates (docs/templates.md). Every object an instance applies carries the label
 * landlord.dev/ti=<instance> (in the instance's namespace) or landlord.dev/tgi=<instance>; the
 * field managers are landlord/ti/<namespace>/<name> and landlord/tgi/<name>. A TemplateInstance
 * applies as a ServiceAccount of landlord-system, ti.<namespace>.editor or .owner (by the
 * annotation landlord.dev/last-writer, which the mutating webhook sets on every CREATE and UPDATE
 * and the policy landlord-last-writer keeps honest), bound in the namespace by the
 * RoleBinding landlord-ti-editor or landlord-ti-owner. */
#define LABEL_TI             "landlord.dev/ti"
#define LABEL_TGI            "landlord.dev/tgi"
#define LABEL_IGNORE_UPDATES "landlord.dev/ignore-updates"
#define ANNOT_LAST_WRITER    "landlord.dev/last-writer"
#define ANNOT_DEPENDS_ON     "landlord.dev/depends-on"
#define ANNOT_MAPPED_FROM    "landlord.dev/mapped-from" /* a copy's source: <ns>/<name> */
/* On a namespace, one per Helm release landlord installs there (value: its owner instance):
 * the landlord-helm-records policy lets only landlord's accounts write the release's records. */
#define ANNOT_HELM_RELEASE_PREFIX "landlord.dev/helm."
#define WRITER_EDITOR             "editor"
#define WRITER_OWNER              "owner"
#define WRITER_PRIVILEGED         "privileged"
#define TI_MANAGER_PREFIX         "landlord/ti/"
#define TGI_MANAGER_PREFIX        "landlord/tgi/"
#define TI_ACCOUNT_FMT            "ti.%s.%s" /* namespace, writer role */
#define TGI_ACCOUNT_FMT           "tgi.%s" /* namespace: a TemplateGroupInstance's chart account */
#define TI_ROLEBINDING_PREFIX     "landlord-ti-"
#define LABEL_TI_ACCOUNT          "landlord.dev/ti-account" /* editor or owner */

/* Argo CD (docs/argocd.md): in each namespace of a tenant with an Extension, the ServiceAccount
 * Argo CD impersonates to sync there and its RoleBinding (the tenant's editor role), both named
 * landlord-argocd and labelled landlord.dev/argocd=<tenant> (not landlord.dev/tenant: the Tenant
 * controller prunes its own bindings by that label); the tenant's users are the key
 * policy.landlord-<tenant>.csv of argocd-rbac-cm, written by the field manager
 * landlord-argocd-<tenant>. */
#define ARGOCD_ACCOUNT       "landlord-argocd"
#define LABEL_ARGOCD         "landlord.dev/argocd"
#define ARGOCD_CM            "argocd-cm"
#define ARGOCD_RBAC_CM       "argocd-rbac-cm"
#define ARGOCD_IMPERSONATION "application.sync.impersonation.enabled"
#define ARGOCD_RBAC_KEY_FMT  "policy.landlord-%s.csv"
#define ARGOCD_MANAGER_FMT   "landlord-argocd-%s"
#define ARGOCD_SERVER        "https://kubernetes.default.svc"

/* Where landlord keeps what outlives a process. */
#define LANDLORD_SYSTEM_NAMESPACE "landlord-system"
/* The identity landlord runs as, which the policies and the webhook exempt. */
#define LANDLORD_USERNAME         "system:serviceaccount:" LANDLORD_SYSTEM_NAMESPACE ":landlord"
#define LANDLORD_LEASE_NAME       "landlord"
#define LANDLORD_CONFIG_NAME      "landlord"
#define ACCEPTED_CONFIG_CONFIGMAP "landlord-config-accepted"

/* The webhook's certificates (src/pki/certs.h): the Secret, and the annotations that carry
 * the rotation's state on it and on landlord's webhook configurations. */
#define WEBHOOK_TLS_SECRET      "landlord-webhook-tls"
#define PROXY_TLS_SECRET        "landlord-proxy-tls" /* the proxy's serving pair, same layout */
#define ANNOT_CA_BUNDLE_GEN     "landlord.dev/ca-bundle-generation"
#define ANNOT_CA_BUNDLE_PUBLISH "landlord.dev/ca-bundle-published"
#define ANNOT_OLD_CAS_UNTIL     "landlord.dev/old-cas-until"

#endif
