/*
 * cacheview_internal.h - what cacheview.c (the view's lookups and life cycle) and
 * cacheview_index.c (the indexes the informer handlers keep) share. See cacheview.h for the
 * scheme: every index below is guarded by cv->lock; lookups run under it for reading (a
 * decision's hold()), handlers change it under it for writing.
 */
#ifndef LANDLORD_WEBHOOK_CACHEVIEW_INTERNAL_H
#define LANDLORD_WEBHOOK_CACHEVIEW_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

#include "base/vec.h"
#include "kube/cache.h"
#include "kube/informer.h"
#include "tenancy/admit.h"

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
	struct inf *tenants, *plans, *namespaces, *configs, *ingresses, *httproutes, *templates;
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

/** cv__node_val2() - the second value of a node made with one (the domain index's namespace). */
const char *cv__node_val2(const struct cv_node *n);
/** cv__tenant() - the Tenant named @name (NULL: none), under the lock. */
const struct cv_tenant *cv__tenant(const struct cacheview *cv, const char *name);
/** cv__indexes_init() - empty indexes and tables of @cv. */
void cv__indexes_init(struct cacheview *cv);
/** cv__indexes_release() - free every index of @cv (no handler may run any more). */
void cv__indexes_release(struct cacheview *cv);
/** cv__handler() - the handler that keeps @cv's indexes from informer @inf, one of @cv's. */
struct inf_handler cv__handler(struct cacheview *cv, struct inf *inf);

#endif
