/*
 * admit_memview.h - an adm_view (admit.h) over one JSON document: what the golden tests, the
 * fuzz target and the latency benchmark decide against.
 *
 * The document is the cache state in one object; every member is optional:
 *
 *	{
 *	  "self": "system:serviceaccount:landlord-system:landlord",
 *	  "config": { a LandlordConfig object; spec.admission.modes: {"pods": "audit", ...} },
 *	  "tenants": [ Tenant objects ],
 *	  "namespaces": [ Namespace objects: metadata.name and labels ],
 *	  "plans": [ "gold", or a Plan object: {"metadata": {"name": "silver"},
 *	             "spec": {"maxNamespaces": 3}}, ... ],
 *	  "hosts": [ {"host": "a.example.com", "tenant": "globex"}, ... ],
 *	  "templates": [ Template objects ]
 *	}
 *
 * A namespace belongs to the tenant its landlord.dev/tenant label names (when that Tenant is
 * listed). Claims are what tm_claims_build() computes for each Tenant. "hosts" stands for the
 * hosts of Ingresses and HTTPRoutes in the tenants' namespaces.
 *
 * Every answer is a few hash lookups (jansson objects), the overlap search too: a host is found
 * by its own name, the wildcards above it, and (for a wildcard) an index of the hosts in use by
 * every domain above them. That is how the informer-backed view should answer, with the indexes
 * kept up to date by event handlers rather than built once.
 *
 * Invariants: built once, then only read; any number of threads may use the view at once.
 */
#ifndef LANDLORD_ADMIT_MEMVIEW_H
#define LANDLORD_ADMIT_MEMVIEW_H

#include <jansson.h>

#include "tenancy/admit.h"

struct ll_err;
struct adm_memview;

/**
 * adm_memview_new() - build a view of @doc (borrowed; copied). Return: 0 and *@out (free with
 * adm_memview_free()); -EINVAL when @doc is not an object, a member has the wrong type, the
 * config is not a valid LandlordConfig or a mode is neither "deny" nor "audit" (@err says
 * which). A Tenant whose allowed.hosts does not compile is kept, with hosts_error set.
 */
int adm_memview_new(const json_t *doc, struct adm_memview **out /* OUT */, struct ll_err *err);

/** adm_memview_free() - NULL is a no-op. */
void adm_memview_free(struct adm_memview *v);

/** adm_memview_view() - the view of @v, valid while @v lives. */
struct adm_view adm_memview_view(const struct adm_memview *v);

#endif
