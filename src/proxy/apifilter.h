/*
 * apifilter.h - what the tenant proxy shows of the API itself: which groups, kinds and
 * subresources a tenant sees, and the discovery and OpenAPI documents cut down to them
 * (docs/proxy.md, "Discovery and OpenAPI").
 *
 * What a tenant sees:
 *  - groups: the built-in groups of Kubernetes 1.33 that hold a kind a tenant may use (the
 *    table below), and the shared groups the configuration names (CRD or aggregated groups the
 *    platform offers to every tenant, e.g. gateway.networking.k8s.io). Every other group is
 *    not there at all: absent from /apis and aggregated discovery, its /apis/G and
 *    /openapi/v3/apis/G/V 404, its paths and definitions absent from /openapi/v2. No group is
 *    shared by default, landlord.dev included: a platform whose tenants write
 *    TemplateInstances through the proxy lists "landlord.dev" (its cluster-scoped kinds stay
 *    hidden, as every cluster-scoped kind);
 *  - kinds (px_resource_visibility()): every namespaced kind of a seen group, and namespaces
 *    (the tenant's, as nsmap.h shows them); the class kinds read-only (get, list, watch;
 *    their objects filtered to the Tenant's spec.allowed list where it has one,
 *    px_class_allowed_list()); the self reviews create-only; nodes hidden or, by option,
 *    read-only; every other cluster-scoped kind hidden (404);
 *  - subresources: all of a shown kind's, except pods/proxy, services/proxy and nodes/proxy,
 *    which are refused (403) whatever else is decided; none of a read-only or create-only kind.
 *
 * The built-in groups (Kubernetes 1.33, every API enabled): "" (core), apps, batch,
 * autoscaling, policy, networking.k8s.io, rbac.authorization.k8s.io, authorization.k8s.io,
 * authentication.k8s.io, coordination.k8s.io, discovery.k8s.io, events.k8s.io,
 * storage.k8s.io, node.k8s.io, scheduling.k8s.io, resource.k8s.io, which tenants see, and
 * certificates.k8s.io, admissionregistration.k8s.io, apiextensions.k8s.io,
 * apiregistration.k8s.io, flowcontrol.apiserver.k8s.io, internal.apiserver.k8s.io and
 * storagemigration.k8s.io, which hold only cluster-scoped kinds and so are hidden whole.
 *
 * The class kinds: storageclasses, volumeattributesclasses (storage.k8s.io), ingressclasses
 * (networking.k8s.io), priorityclasses (scheduling.k8s.io), runtimeclasses (node.k8s.io),
 * deviceclasses (resource.k8s.io), and, when their group is shared, gatewayclasses
 * (gateway.networking.k8s.io) and volumesnapshotclasses (snapshot.storage.k8s.io).
 *
 * The documents, all JSON (jansson trees the caller owns, changed in place):
 *  - legacy discovery: APIVersions (/api), APIGroupList (/apis), APIGroup (/apis/G),
 *    APIResourceList (/api/v1, /apis/G/V); serverAddressByClientCIDRs, the upstream's own
 *    address, is removed;
 *  - aggregated discovery, apidiscovery.k8s.io/v2 APIGroupDiscoveryList (/api and /apis);
 *  - /openapi/v2 (Swagger 2.0) and /openapi/v3/<path> (OpenAPI 3.0): paths of what is not
 *    shown are removed (legacy /watch/ paths too: the proxy refuses them, route.h), read-only
 *    and create-only kinds keep only their get or post operations, and then every definition,
 *    parameter or component no kept path reaches through "$ref" (transitively) is removed;
 *    none that is reached is: no "$ref" is left dangling;
 *  - the /openapi/v3 index: entries of seen groups only. Their serverRelativeURL
 *    ("/openapi/v3/apis/G/V?hash=...") is kept: client-go resolves a URL rooted at /openapi/v3
 *    under its own base, the tenant's.
 * Other forms are not served: px_negotiate() tells which one to ask upstream for, or 406.
 *
 * Invariants: pure (no I/O, no globals written), thread-safe on distinct trees; work linear
 * in the document (the $ref closure visits each definition once).
 */
#ifndef LANDLORD_PROXY_APIFILTER_H
#define LANDLORD_PROXY_APIFILTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* What the configuration decides; borrowed, read-only. A zeroed struct is the default. */
struct px_apifilter {
	const char *const *shared_groups; /* groups beyond the built-in ones tenants see */
	size_t n_shared_groups;
	bool nodes_readonly; /* nodes read-only (get, list, watch) instead of hidden */
};

enum px_visibility {
	PX_HIDDEN,        /* 404: not in the tenant's view */
	PX_SHOWN,         /* served, every verb (RBAC decides, upstream, as the caller) */
	PX_READONLY,      /* get, list and watch only; no subresource */
	PX_CREATE_ONLY,   /* create only (the self reviews); no subresource */
	PX_FORBIDDEN_SUB, /* 403: pods/proxy, services/proxy, nodes/proxy */
};

enum px_filter_result {
	PX_FILTER_OK = 0,
	PX_FILTER_NOT_FOUND = -1, /* the document is of a group the tenant does not see: 404 */
	PX_FILTER_INVALID = -2,   /* not a document of that kind, or a "$ref" that cannot be
	                           * resolved inside it: not served (502) */
};

/* What to ask upstream for, from the client's Accept (px_negotiate()). */
enum px_form {
	PX_FORM_NONE,       /* 406: the client accepts no form the proxy serves */
	PX_FORM_JSON,       /* application/json: legacy discovery, OpenAPI */
	PX_FORM_AGGREGATED, /* aggregated discovery, PX_ACCEPT_AGGREGATED */
};

#define PX_ACCEPT_JSON       "application/json"
#define PX_ACCEPT_AGGREGATED "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

/** px_group_builtin() - whether @group ("" core) is a built-in group of Kubernetes 1.33. */
bool px_group_builtin(const char *group);
/** px_group_visible() - whether a tenant sees @group at all ("" core: always). */
bool px_group_visible(const struct px_apifilter *f, const char *group);
/**
 * px_resource_visibility() - what a tenant may do with @resource of @group ("" core), or with
 * its subresource @sub (NULL: the resource itself; "proxy/x" counts as "proxy"). @namespaced
 * is the resource's scope as discovery tells it.
 */
enum px_visibility px_resource_visibility(const struct px_apifilter *f, const char *group,
                                          const char *resource, const char *sub, bool namespaced);
/**
 * px_class_allowed_list() - the member of a Tenant's spec.allowed that lists the objects of
 * class kind @resource of @group a tenant sees ("storageClasses", "ingressClasses",
 * "priorityClasses", "runtimeClasses"), or NULL: not a class kind, or one without a list
 * (all its objects are shown).
 */
const char *px_class_allowed_list(const char *group, const char *resource);
/**
 * px_class_allowed() - whether a tenant whose spec.allowed is @allowed (NULL: none) sees the
 * object @name of class kind @resource of @group: true when the Tenant has no list for it,
 * or the list names it.
 */
bool px_class_allowed(const json_t *allowed, const char *group, const char *resource,
                      const char *name);

/**
 * px_filter_discovery() - cut @doc, a legacy or aggregated discovery document told apart by
 * its kind (APIVersions, APIGroupList, APIGroup, APIResourceList, APIGroupDiscoveryList), to
 * what a tenant sees. Return: PX_FILTER_OK; PX_FILTER_NOT_FOUND for an APIGroup or
 * APIResourceList of a group not seen; PX_FILTER_INVALID for anything else.
 */
enum px_filter_result px_filter_discovery(const struct px_apifilter *f, json_t *doc);
/** px_filter_openapi_v2() - @doc is /openapi/v2. Return: OK or INVALID. */
enum px_filter_result px_filter_openapi_v2(const struct px_apifilter *f, json_t *doc);
/** px_filter_openapi_v3_index() - @doc is /openapi/v3. Return: OK or INVALID. */
enum px_filter_result px_filter_openapi_v3_index(const struct px_apifilter *f, json_t *doc);
/**
 * px_openapi_v3_path_visible() - whether a tenant sees /openapi/v3/@path (@path as in the
 * index: "api/v1", "apis/apps/v1", "version").
 */
bool px_openapi_v3_path_visible(const struct px_apifilter *f, const char *path);
/**
 * px_filter_openapi_v3() - @doc is /openapi/v3/@path. Return: OK; NOT_FOUND when
 * !px_openapi_v3_path_visible(); INVALID.
 */
enum px_filter_result px_filter_openapi_v3(const struct px_apifilter *f, const char *path,
                                           json_t *doc);

/**
 * px_negotiate() - the form to ask upstream for, given the client's @accept (NULL or "":
 * anything). @aggregatable: the path is /api or /apis, which have an aggregated form. The
 * aggregated form is chosen when the client accepts apidiscovery.k8s.io/v2 in JSON at a
 * quality no lower than plain JSON's; other aggregated forms (v2beta1, protobuf) are never
 * served, so a client that accepts only them gets PX_FORM_NONE (406). Protobuf, YAML and the
 * OpenAPI protobuf forms are not served either.
 */
enum px_form px_negotiate(const char *accept, bool aggregatable);

#endif
