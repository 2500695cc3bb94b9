/* cacheview.c - the admission view served from informer caches (see cacheview.h). */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/vec.h"
#include "kube/cache.h"
#include "kube/discovery.h"
#include "kube/informer.h"
#include "kube/manager.h"
#include "tenancy/landlordconfig_current.h"
#include "tenancy/tenant_model.h"
#include "webhook/cacheview.h"
#include "webhook/rules.h"

/*
 * A multimap of strings: the entries of one key are a chain of nodes, oldest first, whose head
 * is the item of a cache_table (kube/cache.h) under that key. A node's strings follow it in one
 * allocation; val may instead be borrowed (a tenant's name, which outlives the node).
 */
struct cv_node {
	struct cv_node *next; /* the next entry of the same key */
	struct cv_node *tail; /* in the head: the last entry */
	const char *val;
	char key[]; /* then val when copied, then val2 when given (node_val2()) */
};

/* The maps a tenant has entries in. */
enum cv_map { MAP_CLAIMS, MAP_MEMBERS, MAP_PLANS, MAP_N };

struct cv_entry {
	enum cv_map map;
	struct cv_node *node;
};

/* One Tenant version, built when its event arrives. */
struct cv_tenant {
	struct adm_tenant t; /* what the view lends; t.name points into doc */
	const struct jdoc *doc;
	struct hm_policy *hosts;
	VEC(struct cv_entry) entries;
	size_t size;
};

struct cacheview {
	struct adm_view view;
	pthread_rwlock_t *lock; /* its own allocation: taken through a const view */
	struct inf *tenants, *plans, *namespaces, *configs, *ingresses, *httproutes;
	struct cache_table tenant_tab; /* name -> struct cv_tenant */
	struct cache_table ns_tab;     /* name -> the Namespace's document (a reference) */
	struct cache_table maps[MAP_N];
	struct cache_table hosts; /* host -> (namespace) */
	struct cache_table under; /* domain -> (host, namespace): hosts below it */
	json_t *ns_sets;          /* tenant -> {namespace: true}: its labelled namespaces */
	enum adm_mode modes[ADM_FAMILY_N];
	struct lcfg *defaults;
	char *self;
	size_t bytes; /* nodes and tenants (atomic) */
};

/* The configuration of the decision this thread is in (hold() to release()). */
static _Thread_local struct lcfg *decision_cfg;

/* ---- multimap ---- */

static bool node_match(const void *item, const char *key)
{
	return strcmp(((const struct cv_node *)item)->key, key) == 0;
}

/* A node for @key; @val is borrowed, or with @copy copied in, as @val2 (may be NULL) always. */
static struct cv_node *node_new(const char *key, const char *val, bool copy, const char *val2)
{
	size_t klen = strlen(key) + 1, vlen = copy ? strlen(val) + 1 : 0;
	size_t v2len = val2 ? strlen(val2) + 1 : 0;
	struct cv_node *n = xmalloc(sizeof(struct cv_node) + klen + vlen + v2len);
	char *p = n->key;

	n->next = NULL;
	memcpy(p, key, klen);
	p += klen;
	n->val = val;
	if (copy) {
		memcpy(p, val, vlen);
		n->val = p;
		p += vlen;
	}
	if (val2)
		memcpy(p, val2, v2len);
	return n;
}

/* The second value of a node made with one (the host index's namespaces). */
static const char *node_val2(const struct cv_node *n)
{
	return n->val + strlen(n->val) + 1;
}

static size_t node_size(const struct cv_node *n)
{
	return malloc_usable_size((void *)n);
}

/* Append @n to its key's chain: O(1). */
static void mm_add(struct cache_table *t, struct cv_node *n)
{
	struct cv_node *head = cache_get(t, n->key);

	n->next = NULL;
	n->tail = n;
	if (head == NULL) {
		cache_put(t, n->key, n);
		return;
	}
	head->tail->next = n;
	head->tail = n;
}

/* Unlink @n from its key's chain: O(entries before it). */
static void mm_del(struct cache_table *t, struct cv_node *n)
{
	struct cv_node *head = cache_get(t, n->key), *prev;

	if (head == n) {
		if (n->next) {
			n->next->tail = n->tail;
			cache_put(t, n->key, n->next);
		} else {
			cache_del(t, n->key);
		}
		return;
	}
	for (prev = head; prev && prev->next != n; prev = prev->next)
		;
	if (prev == NULL)
		return;
	prev->next = n->next;
	if (head->tail == n)
		head->tail = prev;
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* The entry of @key whose values are @val and (when not NULL) @val2, or NULL. */
static struct cv_node *mm_find(const struct cache_table *t, const char *key, const char *val,
                               const char *val2)
{
	struct cv_node *n;

	for (n = cache_get(t, key); n; n = n->next)
		if (str_eq(n->val, val) && (val2 == NULL || str_eq(node_val2(n), val2)))
			return n;
	return NULL;
}

static void count(struct cacheview *cv, size_t add, size_t sub)
{
	__atomic_add_fetch(&cv->bytes, add - sub, __ATOMIC_RELAXED);
}

/* ---- lookups (under hold()) ---- */

static const struct cv_tenant *find_tenant(const struct cacheview *cv, const char *name)
{
	return name ? cache_get(&cv->tenant_tab, name) : NULL;
}

static const struct adm_tenant *op_tenant(const void *ctx, const char *name)
{
	const struct cv_tenant *t = find_tenant(ctx, name);

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

/* A host of another tenant among the entries of @key of the host index. */
static const char *host_entry(const struct cacheview *cv, const char *key, const char *except,
                              const char **other)
{
	const struct cv_node *n;
	const char *t;

	for (n = cache_get(&cv->hosts, key); n; n = n->next) {
		if ((t = other_tenant(cv, n->val, except)) != NULL) {
			*other = n->key;
			return t;
		}
	}
	return NULL;
}

/* A wildcard's overlaps: the hosts in use below its domain (admit_memview.c's below()). */
static const char *below(const struct cacheview *cv, const char *host, const char *except,
                         const char **other)
{
	const struct cv_node *n;
	const char *t;

	for (n = cache_get(&cv->under, host + 2); n; n = n->next) {
		t = other_tenant(cv, node_val2(n), except);
		if (t && hm_overlap(host, strlen(host), n->val, strlen(n->val), HM_ANY_LABELS)) {
			*other = n->val;
			return t;
		}
	}
	return NULL;
}

static const char *op_host_user(const void *ctx, const char *host, const char *except,
                                const char **other)
{
	const struct cacheview *cv = ctx;
	char wildcard[HM_HOST_MAX + 2];
	const char *t, *p;

	if ((t = host_entry(cv, host, except, other)) != NULL)
		return t;
	for (p = strchr(host, '.'); p; p = strchr(p + 1, '.')) {
		snprintf(wildcard, sizeof(wildcard), "*%s", p);
		if ((t = host_entry(cv, wildcard, except, other)) != NULL)
			return t;
	}
	return hm_is_wildcard(host, strlen(host)) ? below(cv, host, except, other) : NULL;
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

static const char *op_plan_user(const void *ctx, const char *plan)
{
	const struct cacheview *cv = ctx;

	return least(&cv->maps[MAP_PLANS], plan);
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
        .plan_user = op_plan_user,
        .config = op_config,
        .mode = op_mode,
        .self_user = op_self_user,
        .hold = op_hold,
        .release = op_release,
};

/* ---- tenants: built outside the lock, swapped in under it ---- */

static void tenant_entry(struct cv_tenant *t, enum cv_map map, const char *key)
{
	struct cv_node *n = node_new(key, t->t.name, false, NULL);

	t->size += node_size(n);
	vec_push(&t->entries, ((struct cv_entry){map, n}));
}

static void tenant_members(struct cv_tenant *t)
{
	static const char *const roles[] = {"owners", "editors", "viewers"};
	static const char *const kinds[][2] = {{"users", "User"}, {"groups", "Group"}};
	struct jval list, s;
	char key[600];
	size_t r, k, i;

	for (r = 0; r < 3; r++)
		for (k = 0; k < 2; k++) {
			list = jval_path(t->t.obj, "spec", "accessControl", roles[r], kinds[k][0],
			                 NULL);
			jval_foreach(list, i, s) {
				snprintf(key, sizeof(key), "%s/%s", kinds[k][1],
				         jval_str(s) ? jval_str(s) : "");
				tenant_entry(t, MAP_MEMBERS, key);
			}
		}
}

static void tenant_claims(struct cv_tenant *t)
{
	struct tm_claims claims = {0};

	if (tm_claims_build(t->t.obj, &claims) != 0)
		return;
	for (size_t i = 0; i < claims.n; i++)
		tenant_entry(t, MAP_CLAIMS, claims.ns[i].name);
	tm_claims_release(&claims);
}

static struct cv_tenant *tenant_build(const struct jdoc *doc)
{
	struct cv_tenant *t = NULL;
	const char *plan;
	json_t *hosts;

	if (jd_name(doc) == NULL)
		return NULL;
	t = xcalloc(1, sizeof(*t));
	t->doc = jdoc_ref(doc);
	t->size = sizeof(*t);
	t->t.name = jd_name(doc);
	t->t.obj = jdoc_root(doc);
	hosts = jval_to_json(jd_get(doc, "spec", "allowed", "hosts", NULL));
	t->t.hosts_error = hm_policy_from_json(hosts, &t->hosts, NULL);
	t->t.hosts = t->hosts;
	json_decref(hosts);
	if ((plan = jd_str(doc, "spec", "plan", NULL)) != NULL)
		tenant_entry(t, MAP_PLANS, plan);
	tenant_members(t);
	tenant_claims(t);
	return t;
}

static void tenant_free(struct cacheview *cv, struct cv_tenant *t)
{
	if (t == NULL)
		return;
	count(cv, 0, t->size);
	for (size_t i = 0; i < t->entries.len; i++)
		free(t->entries.v[i].node);
	vec_release(&t->entries);
	hm_policy_free(t->hosts);
	jdoc_unref(t->doc);
	free(t);
}

/* The set of @tenant's namespaces; created when @create. Under the write lock. */
static json_t *ns_set(struct cacheview *cv, const char *tenant, bool create)
{
	json_t *set = json_object_get(cv->ns_sets, tenant);

	if (set == NULL && create) {
		set = json_object();
		json_object_set_new(cv->ns_sets, tenant, set);
	}
	return set;
}

/* Drop @tenant's set when it is empty and no Tenant lends it. Under the write lock. */
static void ns_set_trim(struct cacheview *cv, const char *tenant)
{
	json_t *set = json_object_get(cv->ns_sets, tenant);

	if (set && json_object_size(set) == 0 && !find_tenant(cv, tenant))
		json_object_del(cv->ns_sets, tenant);
}

static void tenant_unlink(struct cacheview *cv, struct cv_tenant *t)
{
	for (size_t i = 0; i < t->entries.len; i++)
		mm_del(&cv->maps[t->entries.v[i].map], t->entries.v[i].node);
}

static void tenant_link(struct cacheview *cv, struct cv_tenant *t)
{
	for (size_t i = 0; i < t->entries.len; i++)
		mm_add(&cv->maps[t->entries.v[i].map], t->entries.v[i].node);
	t->t.namespaces = ns_set(cv, t->t.name, true);
}

/* Put @doc's Tenant in force (NULL @doc: remove the Tenant named @name). */
static void tenant_apply(struct cacheview *cv, const char *name, const struct jdoc *doc)
{
	struct cv_tenant *t = doc ? tenant_build(doc) : NULL, *old;

	if (t)
		count(cv, t->size, 0);
	pthread_rwlock_wrlock(cv->lock);
	old = t ? cache_put(&cv->tenant_tab, name, t) : cache_del(&cv->tenant_tab, name);
	if (old)
		tenant_unlink(cv, old);
	if (t)
		tenant_link(cv, t);
	else
		ns_set_trim(cv, name);
	pthread_rwlock_unlock(cv->lock);
	tenant_free(cv, old);
}

static void on_tenant_add(const struct jdoc *obj, void *ud)
{
	if (jd_name(obj))
		tenant_apply(ud, jd_name(obj), obj);
}

static void on_tenant_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	(void)old_obj;
	on_tenant_add(new_obj, ud);
}

static void on_tenant_delete(const struct jdoc *obj, void *ud)
{
	if (jd_name(obj))
		tenant_apply(ud, jd_name(obj), NULL);
}

/* ---- namespaces ---- */

static bool doc_match(const void *item, const char *key)
{
	return cache_doc_match(item, key);
}

static bool tenant_match(const void *item, const char *key)
{
	return strcmp(((const struct cv_tenant *)item)->t.name, key) == 0;
}

/* Cache @doc as namespace @name (NULL: forget it), and move it between tenants' sets. */
static void ns_apply(struct cacheview *cv, const char *name, const struct jdoc *doc)
{
	const struct jdoc *prev;
	const char *was, *is;
	json_t *set;

	pthread_rwlock_wrlock(cv->lock);
	prev = doc ? cache_put(&cv->ns_tab, name, jdoc_ref(doc)) : cache_del(&cv->ns_tab, name);
	was = prev ? jd_label(prev, LABEL_TENANT) : NULL;
	is = doc ? jd_label(doc, LABEL_TENANT) : NULL;
	if (was && !str_eq(was, is) && (set = ns_set(cv, was, false)) != NULL) {
		json_object_del(set, name);
		ns_set_trim(cv, was);
	}
	if (is)
		json_object_set_new(ns_set(cv, is, true), name, json_true());
	pthread_rwlock_unlock(cv->lock);
	jdoc_unref(prev);
}

static void on_ns_add(const struct jdoc *obj, void *ud)
{
	if (jd_name(obj))
		ns_apply(ud, jd_name(obj), obj);
}

static void on_ns_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	(void)old_obj;
	on_ns_add(new_obj, ud);
}

static void on_ns_delete(const struct jdoc *obj, void *ud)
{
	if (jd_name(obj))
		ns_apply(ud, jd_name(obj), NULL);
}

/* ---- hosts of Ingresses and HTTPRoutes ---- */

/* Call @fn for each host @obj names: Ingress rules and TLS, HTTPRoute hostnames. */
static void each_host(const struct jdoc *obj,
                      void (*fn)(struct cacheview *, const char *host, const char *ns),
                      struct cacheview *cv)
{
	struct jval rules = jd_get(obj, "spec", "rules", NULL),
	            tls = jd_get(obj, "spec", "tls", NULL);
	struct jval names = jd_get(obj, "spec", "hostnames", NULL), r, h;
	const char *ns = obj ? jd_namespace(obj) : NULL, *host;
	size_t i, j;

	if (ns == NULL)
		return;
	jval_foreach(rules, i, r)
		if ((host = jval_str(jval_get(r, "host"))) != NULL && *host)
			fn(cv, host, ns);
	jval_foreach(tls, i, r) {
		struct jval hosts = jval_get(r, "hosts");

		jval_foreach(hosts, j, h)
			if ((host = jval_str(h)) != NULL && *host)
				fn(cv, host, ns);
	}
	jval_foreach(names, i, h)
		if ((host = jval_str(h)) != NULL && *host)
			fn(cv, host, ns);
}

static void host_add(struct cacheview *cv, const char *host, const char *ns)
{
	struct cv_node *n = node_new(host, ns, true, NULL);

	count(cv, node_size(n), 0);
	mm_add(&cv->hosts, n);
	for (const char *p = strchr(host, '.'); p; p = strchr(p + 1, '.')) {
		n = node_new(p + 1, host, true, ns);
		count(cv, node_size(n), 0);
		mm_add(&cv->under, n);
	}
}

static void node_drop(struct cacheview *cv, struct cache_table *t, struct cv_node *n)
{
	if (n == NULL)
		return;
	mm_del(t, n);
	count(cv, 0, node_size(n));
	free(n);
}

static void host_del(struct cacheview *cv, const char *host, const char *ns)
{
	node_drop(cv, &cv->hosts, mm_find(&cv->hosts, host, ns, NULL));
	for (const char *p = strchr(host, '.'); p; p = strchr(p + 1, '.'))
		node_drop(cv, &cv->under, mm_find(&cv->under, p + 1, host, ns));
}

static void hosts_apply(struct cacheview *cv, const struct jdoc *old, const struct jdoc *new)
{
	pthread_rwlock_wrlock(cv->lock);
	each_host(old, host_del, cv);
	each_host(new, host_add, cv);
	pthread_rwlock_unlock(cv->lock);
}

static void on_route_add(const struct jdoc *obj, void *ud)
{
	hosts_apply(ud, NULL, obj);
}

static void on_route_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	hosts_apply(ud, old_obj, new_obj);
}

static void on_route_delete(const struct jdoc *obj, void *ud)
{
	hosts_apply(ud, obj, NULL);
}

/* ---- LandlordConfig: the rule modes of "landlord" ---- */

static void modes_read(const struct jdoc *cfg, enum adm_mode modes[ADM_FAMILY_N])
{
	struct jval list = jd_get(cfg, "spec", "admission", "modes", NULL), m;
	const char *key, *s;
	size_t i;
	int f;

	for (f = 0; f < ADM_FAMILY_N; f++)
		modes[f] = ADM_DENY;
	jval_foreach_member(list, i, key, m) {
		f = adm_family_parse(key);
		s = jval_str(m);
		if (f >= 0 && str_eq(s, "audit"))
			modes[f] = ADM_AUDIT;
		else if (f < 0 || !str_eq(s, "deny"))
			log_warn("LandlordConfig: admission mode ignored (that family denies)",
			         "family=%s", key);
	}
}

/* The modes of @cfg when it is "landlord"; @gone: it was deleted (every family denies). */
static void config_apply(struct cacheview *cv, const struct jdoc *cfg, bool gone)
{
	enum adm_mode modes[ADM_FAMILY_N];

	if (!str_eq(jd_name(cfg), LANDLORD_CONFIG_NAME))
		return;
	modes_read(gone ? NULL : cfg, modes);
	pthread_rwlock_wrlock(cv->lock);
	memcpy(cv->modes, modes, sizeof(modes));
	pthread_rwlock_unlock(cv->lock);
}

static void on_config_add(const struct jdoc *obj, void *ud)
{
	config_apply(ud, obj, false);
}

static void on_config_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	(void)old_obj;
	config_apply(ud, new_obj, false);
}

static void on_config_delete(const struct jdoc *obj, void *ud)
{
	config_apply(ud, obj, true);
}

/* ---- life cycle ---- */

static struct inf_handler handler_of(struct cacheview *cv, struct inf *inf)
{
	if (inf == cv->tenants)
		return (struct inf_handler){on_tenant_add, on_tenant_update, on_tenant_delete, cv};
	if (inf == cv->namespaces)
		return (struct inf_handler){on_ns_add, on_ns_update, on_ns_delete, cv};
	if (inf == cv->configs)
		return (struct inf_handler){on_config_add, on_config_update, on_config_delete, cv};
	return (struct inf_handler){on_route_add, on_route_update, on_route_delete, cv};
}

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

/*
 * A namespaced resource's informer, projected to its hosts, into *@out when discovery finds it
 * served; NULL there (logged once) when it is not. Return: 0, or discovery's error.
 */
static int route_informer(struct mgr *m, struct disc *d, const char *api_version, const char *kind,
                          struct inf **out, struct ll_err *err)
{
	static const char *const keep[] = {"metadata.name",
	                                   "metadata.namespace",
	                                   "metadata.resourceVersion",
	                                   "spec.rules",
	                                   "spec.tls",
	                                   "spec.hostnames",
	                                   NULL};
	struct inf_opts o = {.keep = keep};
	int rc = disc_lookup_kind(d, api_version, kind, &o.gvr, err);

	*out = NULL;
	if (rc == -ENOENT) {
		log_info("admission view: not served, its hosts are not indexed", "kind=%s", kind);
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
	cv->tenant_tab = CACHE_TABLE_INIT(tenant_match);
	cv->ns_tab = CACHE_TABLE_INIT(doc_match);
	for (int i = 0; i < MAP_N; i++)
		cv->maps[i] = CACHE_TABLE_INIT(node_match);
	cv->hosts = CACHE_TABLE_INIT(node_match);
	cv->under = CACHE_TABLE_INIT(node_match);
	cv->ns_sets = json_object();
	cv->defaults = lcfg_defaults();
	cv->self = xstrdup(opts && opts->self_user ? opts->self_user : "");
	cv->view = (struct adm_view){.ops = &OPS, .ctx = cv};
	return cv;
}

/* What the view reads, for cacheview_opts.compact (jdoc_opts paths). */
static const char *const KEEP_NS[] = {"metadata.name", "metadata.resourceVersion",
                                      "metadata.labels", NULL};
static const char *const KEEP_TENANT[] = {"metadata.name", "metadata.resourceVersion", "spec",
                                          NULL};
static const char *const KEEP_NAME[] = {"metadata.name", "metadata.resourceVersion", NULL};
static const char *const KEEP_CONFIG[] = {"metadata.name", "metadata.resourceVersion",
                                          "spec.admission", NULL};

static int make_informers(struct cacheview *cv, struct mgr *m, const struct cacheview_opts *opts,
                          struct ll_err *err)
{
	bool compact = opts && opts->compact;
	struct inf_opts tenants = {.gvr = LL_TENANTS, .keep = compact ? KEEP_TENANT : NULL};
	struct inf_opts plans = {.gvr = LL_PLANS, .keep = compact ? KEEP_NAME : NULL};
	struct inf_opts namespaces = {
	        .gvr = KC_NAMESPACES, .metadata_only = true, .keep = compact ? KEEP_NS : NULL};
	struct inf_opts configs = {.gvr = LL_LANDLORDCONFIGS, .keep = compact ? KEEP_CONFIG : NULL};
	struct disc *d = disc_new(mgr_client(m));
	int rc;

	cv->tenants = mgr_informer(m, &tenants);
	cv->plans = mgr_informer(m, &plans);
	cv->namespaces = mgr_informer(m, &namespaces);
	cv->configs = mgr_informer(m, &configs);
	rc = route_informer(m, d, "networking.k8s.io/v1", "Ingress", &cv->ingresses, err);
	if (rc == 0 && !(opts && opts->no_httproutes))
		rc = route_informer(m, d, "gateway.networking.k8s.io/v1", "HTTPRoute",
		                    &cv->httproutes, err);
	disc_free(d);
	if (rc == 0 && (!cv->tenants || !cv->plans || !cv->namespaces || !cv->configs))
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
		h = handler_of(cv, infs[i]);
		inf_add_handler(infs[i], &h);
	}
	*out = cv;
	return 0;
fail:
	cacheview_free(cv);
	return rc;
}

static void free_chains(struct cache_table *t)
{
	struct cv_node *n, *next;

	for (size_t i = 0; i < t->cap; i++)
		for (n = t->slots[i].item; n; n = next) {
			next = n->next;
			free(n);
		}
	cache_release(t);
}

static void free_indexes(struct cacheview *cv)
{
	for (size_t i = 0; i < cv->tenant_tab.cap; i++)
		if (cv->tenant_tab.slots[i].item)
			tenant_free(cv, cv->tenant_tab.slots[i].item);
	cache_release(&cv->tenant_tab);
	for (size_t i = 0; i < cv->ns_tab.cap; i++)
		jdoc_unref(cv->ns_tab.slots[i].item);
	cache_release(&cv->ns_tab);
	for (int i = 0; i < MAP_N; i++)
		cache_release(&cv->maps[i]); /* their nodes are the tenants' */
	free_chains(&cv->hosts);
	free_chains(&cv->under);
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
		h = handler_of(cv, infs[i]);
		inf_remove_handler(infs[i], &h);
	}
	free_indexes(cv);
	json_decref(cv->ns_sets);
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
	struct inf *infs[] = {cv->tenants, cv->plans,     cv->namespaces,
	                      cv->configs, cv->ingresses, cv->httproutes};

	for (size_t i = 0; i < sizeof(infs) / sizeof(infs[0]); i++)
		if (infs[i] && !inf_has_synced(infs[i]))
			return false;
	return true;
}

void cacheview_validate(const json_t *request, struct admission_verdict *v, void *ud)
{
	struct cacheview *cv = ud;

	if (!cacheview_synced(cv)) {
		v->allowed = false;
		v->code = 503;
		snprintf(v->message, sizeof(v->message),
		         "landlord's caches are still loading (Tenants, Namespaces, Plans, hosts): "
		         "the tenant rules cannot be decided yet; retry in a few seconds");
		return;
	}
	wh_tenancy_validate(request, v, &cv->view);
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
	struct inf *infs[] = {cv->tenants, cv->plans,     cv->namespaces,
	                      cv->configs, cv->ingresses, cv->httproutes};
	size_t n = 0;

	for (size_t i = 0; i < sizeof(infs) / sizeof(infs[0]); i++)
		n += infs[i] ? inf_bytes(infs[i]) : 0;
	return n;
}
