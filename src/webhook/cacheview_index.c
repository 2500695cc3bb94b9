/*
 * cacheview_index.c - the admission view's indexes, kept by informer handlers (see
 * cacheview.h, cacheview_internal.h): Tenant versions built outside the lock and swapped in
 * under it, namespaces and their tenants' sets, claims, members, plan users, hosts and the
 * domains above them, the rule modes.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/log.h"
#include "base/mem.h"
#include "tenancy/hostmatch.h"
#include "tenancy/tenant_model.h"
#include "webhook/cacheview_internal.h"

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

const char *cv__node_val2(const struct cv_node *n)
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
		if (str_eq(n->val, val) && (val2 == NULL || str_eq(cv__node_val2(n), val2)))
			return n;
	return NULL;
}

static void count(struct cacheview *cv, size_t add, size_t sub)
{
	__atomic_add_fetch(&cv->bytes, add - sub, __ATOMIC_RELAXED);
}

const struct cv_tenant *cv__tenant(const struct cacheview *cv, const char *name)
{
	return name ? cache_get(&cv->tenant_tab, name) : NULL;
}

/* ---- tenants: built outside the lock, swapped in under it ---- */

static void tenant_entry(struct cv_tenant *t, enum cv_map map, const char *key)
{
	struct cv_node *n = node_new(key, t->t.name, false, NULL);

	t->size += node_size(n);
	vec_push(&t->entries, ((struct cv_entry){map, n}));
}

static void owner_entry(const char *key, void *ud)
{
	tenant_entry(ud, MAP_MEMBERS, key);
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
	adm_owner_keys(t->t.obj, owner_entry, t);
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

	if (set && json_object_size(set) == 0 && !cv__tenant(cv, tenant))
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

/* ---- set-up and tear-down ---- */

struct inf_handler cv__handler(struct cacheview *cv, struct inf *inf)
{
	if (inf == cv->tenants)
		return (struct inf_handler){on_tenant_add, on_tenant_update, on_tenant_delete, cv};
	if (inf == cv->namespaces)
		return (struct inf_handler){on_ns_add, on_ns_update, on_ns_delete, cv};
	if (inf == cv->configs)
		return (struct inf_handler){on_config_add, on_config_update, on_config_delete, cv};
	return (struct inf_handler){on_route_add, on_route_update, on_route_delete, cv};
}

void cv__indexes_init(struct cacheview *cv)
{
	cv->tenant_tab = CACHE_TABLE_INIT(tenant_match);
	cv->ns_tab = CACHE_TABLE_INIT(doc_match);
	for (int i = 0; i < MAP_N; i++)
		cv->maps[i] = CACHE_TABLE_INIT(node_match);
	cv->hosts = CACHE_TABLE_INIT(node_match);
	cv->under = CACHE_TABLE_INIT(node_match);
	cv->ns_sets = json_object();
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

void cv__indexes_release(struct cacheview *cv)
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
	json_decref(cv->ns_sets);
}
