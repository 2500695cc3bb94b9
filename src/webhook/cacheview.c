/*
 * cacheview.c - the admission view served from informer caches (see cacheview.h): its lookups,
 * the lock a decision holds, its informers and life cycle. The indexes are cacheview_index.c's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/discovery.h"
#include "kube/informer.h"
#include "kube/manager.h"
#include "tenancy/landlordconfig_current.h"
#include "webhook/cacheview.h"
#include "webhook/cacheview_internal.h"

/* The configuration of the decision this thread is in (hold() to release()). */
static _Thread_local struct lcfg *decision_cfg;
/* The Template the decision this thread is in looked up last (a reference, until release()). */
static _Thread_local const struct jdoc *decision_tmpl;

/* ---- lookups (under hold()) ---- */

static const struct adm_tenant *op_tenant(const void *ctx, const char *name)
{
	const struct cv_tenant *t = cv__tenant(ctx, name);

	return t ? &t->t : NULL;
}

static const struct adm_tenant *op_tenant_of_namespace(const void *ctx, const char *ns)
{
	const struct cacheview *cv = ctx;
	const struct jdoc *doc = cache_get(&cv->ns_tab, ns);

	return doc ? op_tenant(ctx, jd_label(doc, LABEL_TENANT)) : NULL;
}

static struct jval op_namespace_obj(const void *ctx, const char *ns)
{
	const struct cacheview *cv = ctx;

	return jdoc_root(cache_get(&cv->ns_tab, ns));
}

/* The least value of @key's entries: answers do not depend on the order of events. */
static const char *least(const struct cache_table *t, const char *key)
{
	const struct cv_node *n;
	const char *v = NULL;

	for (n = cache_get(t, key); n; n = n->next)
		if (v == NULL || strcmp(n->val, v) < 0)
			v = n->val;
	return v;
}

static const char *op_member_tenant(const void *ctx, const char *kind, const char *name)
{
	const struct cacheview *cv = ctx;
	char key[600];

	snprintf(key, sizeof(key), "%s/%s", kind, name);
	return least(&cv->maps[MAP_MEMBERS], key);
}

/* The tenant of namespace @ns when it is not @except, or NULL. */
static const char *other_tenant(const struct cacheview *cv, const char *ns, const char *except)
{
	const struct adm_tenant *t = op_tenant_of_namespace(cv, ns);

	return t && strcmp(t->name, except) != 0 ? t->name : NULL;
}

/* A host lookup that skips tenant @except. */
struct host_query {
	const struct cacheview *cv;
	const char *except;
};

/* A host of another tenant among the entries of @key of the host index. */
static const char *host_entry(const void *ud, const char *key, const char **host)
{
	const struct host_query *q = ud;
	const struct cv_node *n;
	const char *t;

	for (n = cache_get(&q->cv->hosts, key); n; n = n->next) {
		if ((t = other_tenant(q->cv, n->val, q->except)) != NULL) {
			*host = n->key;
			return t;
		}
	}
	return NULL;
}

/* A wildcard's overlaps: the hosts in use below its domain (admit_memview.c's below()). */
static const char *below(const void *ud, const char *wildcard, const char **host)
{
	const struct host_query *q = ud;
	const struct cv_node *n;
	const char *t;

	for (n = cache_get(&q->cv->under, wildcard + 2); n; n = n->next) {
		t = other_tenant(q->cv, cv__node_val2(n), q->except);
		if (t &&
		    hm_overlap(wildcard, strlen(wildcard), n->val, strlen(n->val), HM_ANY_LABELS)) {
			*host = n->val;
			return t;
		}
	}
	return NULL;
}

static const char *op_host_user(const void *ctx, const char *host, const char *except,
                                const char **other)
{
	static const struct hm_index_ops index = {.exact = host_entry, .below = below};

	return hm_find_overlap(&index, &(struct host_query){ctx, except}, host, other);
}

static const char *op_namespace_claimant(const void *ctx, const char *ns, const char *except)
{
	const struct cacheview *cv = ctx;
	const struct cv_node *n;

	for (n = cache_get(&cv->maps[MAP_CLAIMS], ns); n; n = n->next)
		if (strcmp(n->val, except) != 0)
			return n->val;
	return NULL;
}

static bool op_plan_exists(const void *ctx, const char *plan)
{
	const struct cacheview *cv = ctx;
	const struct jdoc *doc = inf_get_ref(cv->plans, NULL, plan);

	jdoc_unref(doc);
	return doc != NULL;
}

static long long op_plan_max_namespaces(const void *ctx, const char *plan)
{
	const struct cacheview *cv = ctx;
	const struct jdoc *doc = inf_get_ref(cv->plans, NULL, plan);
	long long max = jval_int(jd_get(doc, "spec", "maxNamespaces", NULL), -1);

	jdoc_unref(doc);
	return max;
}

static const char *op_plan_user(const void *ctx, const char *plan)
{
	const struct cacheview *cv = ctx;

	return least(&cv->maps[MAP_PLANS], plan);
}

/* A decision asks for one Template at most; an earlier answer is dropped on the next. */
static struct jval op_template_obj(const void *ctx, const char *name)
{
	const struct cacheview *cv = ctx;

	jdoc_unref(decision_tmpl);
	decision_tmpl = cv->templates ? inf_get_ref(cv->templates, NULL, name) : NULL;
	return jdoc_root(decision_tmpl);
}

static const struct lcfg *op_config(const void *ctx)
{
	const struct cacheview *cv = ctx;

	return decision_cfg ? decision_cfg : cv->defaults;
}

static enum adm_mode op_mode(const void *ctx, enum adm_family f)
{
	return ((const struct cacheview *)ctx)->modes[f];
}

static const char *op_self_user(const void *ctx)
{
	return ((const struct cacheview *)ctx)->self;
}

static void op_hold(const void *ctx)
{
	const struct cacheview *cv = ctx;

	pthread_rwlock_rdlock(cv->lock);
	decision_cfg = lcfg_current();
}

static void op_release(const void *ctx)
{
	const struct cacheview *cv = ctx;

	lcfg_unref(decision_cfg);
	decision_cfg = NULL;
	jdoc_unref(decision_tmpl);
	decision_tmpl = NULL;
	pthread_rwlock_unlock(cv->lock);
}

static const struct adm_view_ops OPS = {
        .tenant = op_tenant,
        .tenant_of_namespace = op_tenant_of_namespace,
        .namespace_obj = op_namespace_obj,
        .member_tenant = op_member_tenant,
        .host_user = op_host_user,
        .namespace_claimant = op_namespace_claimant,
        .plan_exists = op_plan_exists,
        .plan_max_namespaces = op_plan_max_namespaces,
        .plan_user = op_plan_user,
        .template_obj = op_template_obj,
        .config = op_config,
        .mode = op_mode,
        .self_user = op_self_user,
        .hold = op_hold,
        .release = op_release,
};

/* ---- life cycle ---- */

/* The view's informers with handlers, in a fixed order; NULLs for those it does not have. */
#define N_HANDLED 5
static void handled(struct cacheview *cv, struct inf *out[N_HANDLED])
{
	out[0] = cv->configs;
	out[1] = cv->tenants;
	out[2] = cv->namespaces;
	out[3] = cv->ingresses;
	out[4] = cv->httproutes;
}

const char *const cacheview_route_keep[] = {"metadata.name",
                                            "metadata.namespace",
                                            "metadata.resourceVersion",
                                            "spec.rules",
                                            "spec.tls",
                                            "spec.hostnames",
                                            NULL};

/*
 * A namespaced resource's informer, projected to its hosts, into *@out when discovery finds it
 * served; NULL there (logged once) when it is not. Return: 0, or discovery's error.
 */
static int route_informer(struct mgr *m, struct disc *d, const char *api_version, const char *kind,
                          struct inf **out, struct ll_err *err)
{
	struct inf_opts o = {.keep = cacheview_route_keep};
	int rc = disc_lookup_kind(d, api_version, kind, &o.gvr, err);

	*out = NULL;
	if (rc == -ENOENT) {
		log_info("admission view: not served, its hosts are not indexed", "{s:s}", "kind",
		         kind);
		return 0;
	}
	if (rc != 0)
		return rc;
	*out = mgr_informer(m, &o);
	return *out ? 0 : -ENOMEM;
}

static struct cacheview *alloc_view(const struct cacheview_opts *opts)
{
	struct cacheview *cv = xcalloc(1, sizeof(*cv));
	pthread_rwlockattr_t attr;

	cv->lock = xmalloc(sizeof(*cv->lock));
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(cv->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	cv__indexes_init(cv);
	cv->defaults = lcfg_defaults();
	cv->self = xstrdup(opts && opts->self_user ? opts->self_user : "");
	cv->view = (struct adm_view){.ops = &OPS, .ctx = cv};
	return cv;
}

/*
 * What the view reads, for cacheview_opts.compact (jdoc_opts paths). Of a namespace's labels,
 * landlord's own: the tenant, the cordon, and those a Template's instantiableIn selects on
 * (docs/templates.md tells administrators to select on landlord.dev/ labels, which tenants
 * cannot set).
 */
static const char *const KEEP_NS[] = {"metadata.name", "metadata.resourceVersion",
                                      "metadata.labels." LANDLORD_KEY_PREFIX "*", NULL};
static const char *const KEEP_TEMPLATE[] = {"metadata.name", "metadata.resourceVersion", "spec",
                                            NULL};
static const char *const KEEP_TENANT[] = {"metadata.name", "metadata.resourceVersion", "spec",
                                          NULL};
static const char *const KEEP_PLAN[] = {"metadata.name", "metadata.resourceVersion",
                                        "spec.maxNamespaces", NULL};
static const char *const KEEP_CONFIG[] = {"metadata.name", "metadata.resourceVersion",
                                          "spec.admission", NULL};

static int make_informers(struct cacheview *cv, struct mgr *m, const struct cacheview_opts *opts,
                          struct ll_err *err)
{
	bool compact = opts && opts->compact;
	struct inf_opts tenants = {.gvr = LL_TENANTS, .keep = compact ? KEEP_TENANT : NULL};
	struct inf_opts plans = {.gvr = LL_PLANS, .keep = compact ? KEEP_PLAN : NULL};
	struct inf_opts namespaces = {
	        .gvr = KC_NAMESPACES, .metadata_only = true, .keep = compact ? KEEP_NS : NULL};
	struct inf_opts configs = {.gvr = LL_LANDLORDCONFIGS, .keep = compact ? KEEP_CONFIG : NULL};
	struct inf_opts templates = {.gvr = LL_TEMPLATES, .keep = compact ? KEEP_TEMPLATE : NULL};
	struct disc *d = disc_new(mgr_client(m));
	int rc;

	cv->tenants = mgr_informer(m, &tenants);
	cv->plans = mgr_informer(m, &plans);
	cv->namespaces = mgr_informer(m, &namespaces);
	cv->configs = mgr_informer(m, &configs);
	cv->templates = mgr_informer(m, &templates);
	rc = route_informer(m, d, "networking.k8s.io/v1", "Ingress", &cv->ingresses, err);
	if (rc == 0 && !(opts && opts->no_httproutes))
		rc = route_informer(m, d, "gateway.networking.k8s.io/v1", "HTTPRoute",
		                    &cv->httproutes, err);
	disc_free(d);
	if (rc == 0 &&
	    (!cv->tenants || !cv->plans || !cv->namespaces || !cv->configs || !cv->templates))
		rc = ll_err_set(err, -ENOMEM, "admission view: an informer could not be made");
	return rc;
}

int cacheview_new(struct mgr *m, const struct cacheview_opts *opts, struct cacheview **out,
                  struct ll_err *err)
{
	struct cacheview *cv = alloc_view(opts);
	struct inf *infs[N_HANDLED];
	struct inf_handler h;
	int rc;

	*out = NULL;
	rc = make_informers(cv, m, opts, err);
	if (rc != 0)
		goto fail;
	handled(cv, infs);
	for (int i = 0; i < N_HANDLED; i++) {
		if (infs[i] == NULL)
			continue;
		h = cv__handler(cv, infs[i]);
		inf_add_handler(infs[i], &h);
	}
	*out = cv;
	return 0;
fail:
	cacheview_free(cv);
	return rc;
}

void cacheview_free(struct cacheview *cv)
{
	struct inf *infs[N_HANDLED];
	struct inf_handler h;

	if (cv == NULL)
		return;
	handled(cv, infs);
	for (int i = 0; i < N_HANDLED; i++) {
		if (infs[i] == NULL)
			continue;
		h = cv__handler(cv, infs[i]);
		inf_remove_handler(infs[i], &h);
	}
	cv__indexes_release(cv);
	lcfg_unref(cv->defaults);
	free(cv->self);
	pthread_rwlock_destroy(cv->lock);
	free(cv->lock);
	free(cv);
}

const struct adm_view *cacheview_view(const struct cacheview *cv)
{
	return &cv->view;
}

bool cacheview_synced(const struct cacheview *cv)
{
	struct inf *infs[] = {cv->tenants,   cv->plans,      cv->namespaces, cv->configs,
	                      cv->ingresses, cv->httproutes, cv->templates};

	for (size_t i = 0; i < sizeof(infs) / sizeof(infs[0]); i++)
		if (infs[i] && !inf_has_synced(infs[i]))
			return false;
	return true;
}

size_t cacheview_bytes(const struct cacheview *cv)
{
	size_t n = __atomic_load_n(&cv->bytes, __ATOMIC_RELAXED);

	pthread_rwlock_rdlock(cv->lock);
	n += cache_bytes(&cv->tenant_tab) + cache_bytes(&cv->ns_tab) + cache_bytes(&cv->hosts) +
	     cache_bytes(&cv->under);
	for (int i = 0; i < MAP_N; i++)
		n += cache_bytes(&cv->maps[i]);
	pthread_rwlock_unlock(cv->lock);
	return n;
}

size_t cacheview_informer_bytes(const struct cacheview *cv)
{
	struct inf *infs[] = {cv->tenants,   cv->plans,      cv->namespaces, cv->configs,
	                      cv->ingresses, cv->httproutes, cv->templates};
	size_t n = 0;

	for (size_t i = 0; i < sizeof(infs) / sizeof(infs[0]); i++)
		n += infs[i] ? inf_bytes(infs[i]) : 0;
	return n;
}
