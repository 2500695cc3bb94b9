/*
 * cacheview.h - the admission view (tenancy/admit.h) served from shared informer caches: what
 * the webhook's tenant rules decide against, with no API call on a decision.
 *
 * Sources, all informers of the process's manager (kube/manager.h), shared with the
 * controllers where they ask for the same thing: Tenants and Plans (whole, as the Tenant and
 * Plan controllers cache them), Namespaces (metadata only, as the Tenant controller), the
 * LandlordConfig objects (whole, as the LandlordConfig controller; only spec.admission.modes
 * of "landlord" is read), Ingresses (networking.k8s.io/v1) and HTTPRoutes
 * (gateway.networking.k8s.io/v1) projected to their hosts, and Templates (whole: the templates
 * rules render-check an instance's parameters against one). A resource that discovery does not
 * find when the view is made (no Gateway API CRDs) is left out, logged once: its hosts are
 * then unknown to host_user(). The LandlordConfig in force is lcfg_current(), read once per
 * decision, as the controllers read it once per reconcile.
 *
 * Informer handlers keep indexes of the view's own, so every lookup is a hash lookup or a
 * short walk along one key's entries:
 *   - tenants by name: each Tenant version is built once (its parsed allowed.hosts policy, its
 *     claims, members and plan) when its event arrives, never per request;
 *   - namespaces by name (the informer's own documents, referenced, not copied), a namespace's
 *     tenant through its landlord.dev/tenant label, and each tenant's set of namespaces;
 *   - claims (namespace -> tenants whose spec asks for it), members ("User/alice" -> tenants),
 *     plan users (plan -> tenants);
 *   - hosts: host -> namespaces of the Ingresses and HTTPRoutes using it, and every domain above
 *     a host -> (host, namespace) for a wildcard's overlaps, as admit_memview.h describes. A
 *     host belongs to the tenant of its namespace at the time of the lookup.
 *
 * Concurrency (the scheme): one read-write lock (writers preferred) guards the indexes.
 * adm_decide() holds it for reading from its first lookup to its last (the view's hold and
 * release operations), so any number of decisions run at once and everything lent - an
 * adm_tenant, a namespace's document, a tenant's or host's name - stays valid until
 * adm_decide() returns. Handlers build a Tenant's parsed state before taking the lock for
 * writing, swap it in, and free the replaced version after unlocking: no decision can still
 * see it then. Plan lookups go to the Plan informer directly (only a yes or no leaves it).
 *
 * Invariants: the indexes equal what the informers' caches hold, applied in each informer's
 * event order; lookups never block on the API server; a view made from a manager is freed
 * before the manager (cacheview_free() removes its handlers from the informers).
 */
#ifndef LANDLORD_WEBHOOK_CACHEVIEW_H
#define LANDLORD_WEBHOOK_CACHEVIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "tenancy/admit.h"

struct mgr;
struct ll_err;
struct cacheview;

struct cacheview_opts {
	/* landlord's own user name, as adm_view's self_user() answers it (copied) */
	const char *self_user;
	/*
	 * The process runs no controller (`landlord webhook`): cache only what the view reads -
	 * Namespaces' names and their landlord.dev/ labels (the tenant, the cordon, what a
	 * Template's instantiableIn selects on), Tenants' and Templates' spec, Plans' names and
	 * maxNamespaces - instead of sharing the controllers'
	 * informers (about half the memory; docs/internals/cacheview.md). In `landlord run` leave
	 * it false, or every informer would be held twice.
	 */
	bool compact;
	/* test hook: skip the Gateway API even when discovery finds it */
	bool no_httproutes;
};

/**
 * cacheview_new() - a view over @m's shared informers (created on first use), with its
 * handlers added. Call it before mgr_run() (which starts and syncs the informers), from the
 * thread that sets @m up, as a controller's setup() does; it makes one discovery call (is the
 * Gateway API served?). @m must outlive the view.
 * Return: 0 and *@out (free with cacheview_free()); -ENOMEM when an informer cannot be made,
 * or discovery's error other than "not served" (the API server did not answer: retry, or
 * exit and be restarted; @err says which).
 */
int cacheview_new(struct mgr *m, const struct cacheview_opts *opts,
                  struct cacheview **out /* OUT */, struct ll_err *err);

/* What the view keeps of an Ingress or HTTPRoute (its hosts), NULL-terminated: the informer's
 * projection, for measurements that build the same informer. */
extern const char *const cacheview_route_keep[];

/** cacheview_free() - remove the handlers and free the indexes (not the informers). NULL ok. */
void cacheview_free(struct cacheview *cv);

/**
 * cacheview_view() - the adm_view to decide against (lent; valid until cacheview_free()).
 * Thread-safe: any number of adm_decide() calls at once, while informers update it.
 */
const struct adm_view *cacheview_view(const struct cacheview *cv);

/**
 * cacheview_synced() - every informer of the view has applied its first list. Until then a
 * decision would answer from a partial cache (a tenant's namespace unknown is a namespace of
 * no tenant, which admits everything), so the webhook must not decide: wh_tenancy_serve()
 * (webhook/rules.h) refuses with 503 meanwhile. Thread-safe.
 */
bool cacheview_synced(const struct cacheview *cv);

/**
 * cacheview_bytes() - heap bytes of the view's own indexes and parsed tenants: the index
 * nodes, tables and Tenant structures (not the compiled host policies nor the namespace sets,
 * about 0.7 KB per tenant with a regex and 0.12 KB per namespace). Measurements only.
 */
size_t cacheview_bytes(const struct cacheview *cv);
/** cacheview_informer_bytes() - inf_bytes() of the view's informers, summed. */
size_t cacheview_informer_bytes(const struct cacheview *cv);

#endif
