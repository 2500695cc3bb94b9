/*
 * route.h - what a request to the tenant proxy asks for: its tenant and where it goes in the
 * Kubernetes API, read from the path alone (docs/proxy.md, "Routes").
 *
 * Every tenant has its own base, /tenants/<tenant>; below it the path is the Kubernetes API's:
 *
 *   /version, /api, /api/v1, /apis, /apis/G, /apis/G/V          discovery (PX_DISCOVERY)
 *   /openapi/...                                                 OpenAPI (PX_OPENAPI)
 *   /api/v1/namespaces                                           PX_NAMESPACES
 *   /api/v1/namespaces/NS[/status|/finalize]                     PX_NAMESPACE
 *   /api/v1/namespaces/NS/R[/NAME[/SUB...]], /apis/G/V/...       PX_NAMESPACED
 *   /api/v1/R[/NAME[/SUB...]], /apis/G/V/R[...]                  PX_TOP: a cluster-scoped kind,
 *                                                                or a namespaced one across
 *                                                                every namespace (the caller
 *                                                                tells them apart by discovery)
 *   /kubeconfig                                                  PX_KUBECONFIG
 *
 * The path given is the percent-decoded one (lib/http decodes it). It is split on '/', and
 * every segment the route keeps is one segment upstream: the forwarder re-encodes each, so a
 * "%2F" in a name can never become a path separator there. What the proxy authorises is thus
 * exactly what it sends.
 *
 * Refused (PX_BAD, with a reason): an empty segment (a doubled or trailing '/', except the
 * base's own trailing '/'), a "." or ".." segment, a segment with a byte below 0x21 or 0x7f,
 * a tenant or namespace that is not a DNS label, the legacy /api/v1/watch/... and
 * /apis/G/V/watch/... paths (clients use ?watch=true since 1.11; one form is one rule to get
 * right), and anything longer than PX_PATH_MAX or with more than PX_SEGMENTS_MAX segments.
 *
 * Invariants: pure (no I/O, no allocation: the route points into a copy of the path held in
 * the route itself, so a route must not be copied: parse it where it will stay), thread-safe,
 * bounded work.
 */
#ifndef LANDLORD_PROXY_ROUTE_H
#define LANDLORD_PROXY_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#define PX_PATH_MAX     4096
#define PX_SEGMENTS_MAX 16

enum px_kind {
	PX_BAD,        /* refused: see why */
	PX_NOT_FOUND,  /* well formed, but nothing the proxy serves (404) */
	PX_DISCOVERY,  /* /version, /api, /api/v1, /apis, /apis/G, /apis/G/V */
	PX_OPENAPI,    /* /openapi/v2, /openapi/v3[/...] */
	PX_NAMESPACES, /* the namespace collection */
	PX_NAMESPACE,  /* one namespace (sub: "status", "finalize" or NULL) */
	PX_NAMESPACED, /* a collection or object inside one namespace */
	PX_TOP,        /* a collection or object outside /namespaces/NS */
	PX_KUBECONFIG, /* POST /tenants/T/kubeconfig */
};

/*
 * A parsed route. Strings point into @buf (NULL when absent); @group is "" for the core group.
 * @sub is every segment after the name joined with '/' ("log", "exec", "status", "proxy/x/y").
 */
struct px_route {
	enum px_kind kind;
	const char *why; /* PX_BAD: a static reason */
	const char *tenant;
	const char *rest; /* the path after the tenant's base ("/api/v1/..."), for PX_DISCOVERY
	                   * and PX_OPENAPI */
	const char *group;
	const char *version;
	const char *ns;
	const char *resource;
	const char *name;
	const char *sub;
	char buf[PX_PATH_MAX + 2];
	char rest_buf[PX_PATH_MAX + 1];
};

/**
 * px_route_parse() - read @path (percent-decoded, without the query) into @out.
 * Return: @out->kind; never fails otherwise (PX_BAD says why).
 */
enum px_kind px_route_parse(const char *path, struct px_route *out /* OUT */);

/** px_route_is_core() - whether the route is in the core group (/api/v1). */
bool px_route_is_core(const struct px_route *r);

#endif
