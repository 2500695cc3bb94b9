/*
 * informer.h - shared informer: a local cache of one resource kept current by list + watch.
 *
 * A reflector thread lists (paginated), then watches from the list's resourceVersion with
 * bookmarks, reconnecting with jittered exponential back-off (0.5 s .. 30 s). On 410 Gone (an
 * HTTP answer or an ERROR event inside a 200 stream), or an expired continue token, it relists
 * and reconciles the cache with the new list: objects that vanished meanwhile are emitted as
 * deletes, changed ones as updates, new ones as adds. 429/5xx answers back off and retry.
 *
 * Cache: keyed "namespace/name" (or "name"); values are immutable, atomically reference-counted
 * documents (struct jdoc, lib/base/jdoc.h) - readers get references, never copies. Each object
 * is projected when it is cached (opts.keep / opts.drop, as struct jdoc_opts paths; the
 * informer always drops metadata.managedFields), and listed items get the apiVersion and kind
 * that only the list carried (when gvr.kind is set; metadata-only objects carry neither). The
 * store is an open-addressing table of document pointers (kube/cache.h) whose keys are read
 * from the documents; secondary indexes map index values (e.g. a label value or an owner UID)
 * to sets of the same pointers. Handlers run on the reflector thread after the cache has
 * changed; they must be quick (enqueue keys, no API calls).
 *
 * Store-less mode (opts.no_store), for callers that keep a compact state of their own: the
 * reflector lists and watches alike, but nothing is cached. Handlers get each watch event as it
 * comes (an ADDED as an add, a MODIFIED as an update whose old_obj is NULL, a DELETED as a
 * delete of the event's own object), so an add may be of a known object and an update of an
 * unknown one. Every list (the first too) is delivered between the brackets of
 * inf_add_relist_handler(), each listed item as an add: the handler drops what it did not see
 * in between (deletes missed while the watch was down). The readers find nothing, inf_len() and
 * inf_bytes() are 0, and the objects and bytes gauges are left to the handler's owner.
 *
 * Metrics: landlord_informer_objects{resource}, landlord_informer_bytes{resource} (documents plus
 * the store's and indexes' own memory; a store-less informer sets neither),
 * landlord_informer_relists_total{resource}, landlord_watch_restarts_total{resource,reason},
 * landlord_informer_events_total{resource,type}.
 */
#ifndef LANDLORD_INFORMER_H
#define LANDLORD_INFORMER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/jdoc.h"
#include "kube/kube.h"

struct inf;

/** Index function: call @emit(value, ctx) once for each index value of @obj. */
typedef void (*inf_index_fn)(const struct jdoc *obj, void (*emit)(const char *value, void *ctx),
                             void *ctx, void *ud);

/* An index made with the informer (inf_add_index() before it can start). */
struct inf_index_def {
	const char *name; /* copied */
	inf_index_fn fn;
	void *ud;
};

struct inf_opts {
	struct kc_gvr gvr;          /* strings are copied */
	const char *ns;             /* NULL: all namespaces */
	const char *label_selector; /* or NULL */
	const char *field_selector; /* or NULL */
	bool metadata_only;         /* PartialObjectMetadata lists and watches */
	long page_size;             /* default 500 */
	/* What is cached of each object: jdoc_opts paths, NULL-terminated (copied). keep NULL:
	 * the whole object. metadata.managedFields is always dropped besides: about half of a
	 * small object, and reconcilers compare content, not field ownership. */
	const char *const *keep;
	const char *const *drop;
	const char *name; /* metrics/log label; default gvr.resource */
	/* indexes made by inf_new(), {NULL}-terminated, or NULL: for an informer that starts as
	 * it is made (mgr_informer_live()), where inf_add_index() would come too late; the
	 * manager shares an informer only between callers naming the same indexes */
	const struct inf_index_def *indexes;
	bool no_store; /* cache nothing: handlers keep their own state (see above) */
	/* a handler and list brackets added by inf_new(), or NULL: for a store-less informer
	 * that starts as it is made (its ud must outlive it); the manager shares an informer
	 * made with them only with callers giving the same */
	const struct inf_handler *handler;
	const struct inf_relist_handler *relist;
};

struct inf_handler {
	void (*on_add)(const struct jdoc *obj, void *ud);
	void (*on_update)(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud);
	/* @obj is the last state the cache held (possibly stale after a relist). */
	void (*on_delete)(const struct jdoc *obj, void *ud);
	void *ud;
};

/* Store-less informers: what runs around each list's adds (see above); either may be NULL. */
struct inf_relist_handler {
	void (*on_relist_begin)(void *ud);
	void (*on_relist_end)(void *ud);
	void *ud;
};

struct inf *inf_new(struct kc_client *c, const struct inf_opts *opts);
/** inf_free() - stop (if started) and free the cache. */
void inf_free(struct inf *inf);

/**
 * inf_add_handler() - before inf_start(), or later: then every cached object is first
 * delivered to the new handler as an add (on the caller's thread). A store-less informer has
 * nothing to replay: add its handlers before inf_start().
 */
void inf_add_handler(struct inf *inf, const struct inf_handler *h);
/**
 * inf_remove_handler() - remove the handler added with the same functions and ud (the first
 * such; none: a no-op). Once it returns, no call of it is in flight or will be made, so its
 * @ud may be freed. Not to be called from a handler.
 */
void inf_remove_handler(struct inf *inf, const struct inf_handler *h);
/**
 * inf_add_relist_handler() - a store-less informer's list brackets, before inf_start(). They
 * stay for the informer's life: @h->ud must outlive it.
 */
void inf_add_relist_handler(struct inf *inf, const struct inf_relist_handler *h);
/**
 * inf_add_index() - before inf_start() only. Return: 0, -EEXIST, -EBUSY (already started),
 * -EINVAL (a store-less informer: nothing to index).
 */
int inf_add_index(struct inf *inf, const char *name, inf_index_fn fn, void *ud);

/** inf_start() - start the reflector thread. */
int inf_start(struct inf *inf);
/**
 * inf_cancel() - ask the reflector thread to stop (its watch cancelled) without waiting for it:
 * a watch notices within WATCH_POLL_MS, so cancelling many informers before stopping each
 * makes their waits overlap. inf_stop() still joins.
 */
void inf_cancel(struct inf *inf);
/** inf_stop() - cancel the watch and join the reflector thread; the cache stays readable. */
void inf_stop(struct inf *inf);
/** inf_has_synced() - the first list has been fully applied to the cache. */
bool inf_has_synced(struct inf *inf);
/** inf_wait_synced() - wait up to @timeout_ms (<0: forever). Return: synced? */
bool inf_wait_synced(struct inf *inf, long timeout_ms);

/*
 * Reading the cache. Every reader ending in _ref hands over new references, which the caller
 * owns and drops with jdoc_unref() (one document) or jdoc_list_release() (a list); the
 * documents are the cache's own, immutable, and stay valid for as long as the reference is
 * held, whatever the cache does meanwhile. Lists are in no particular order.
 */
/** inf_get_ref() - the cached object @ns/@name (@ns NULL: cluster-scoped), or NULL. */
const struct jdoc *inf_get_ref(struct inf *inf, const char *ns, const char *name);
/** inf_get_key_ref() - the cached object of cache key "namespace/name" or "name", or NULL. */
const struct jdoc *inf_get_key_ref(struct inf *inf, const char *key);
/** inf_list_ref() - every cached object (in @ns if not NULL). */
struct jdoc_list inf_list_ref(struct inf *inf, const char *ns);
/** inf_by_index_ref() - the objects whose index @name has value @value. */
struct jdoc_list inf_by_index_ref(struct inf *inf, const char *name, const char *value);
size_t inf_len(struct inf *inf);
/** inf_bytes() - heap bytes of the cache: documents, store and indexes. */
size_t inf_bytes(struct inf *inf);
/** inf_resource_version() - last resourceVersion seen (list, event or bookmark); caller frees. */
char *inf_resource_version(struct inf *inf);
const struct kc_gvr *inf_gvr(const struct inf *inf);

struct inf_stats {
	uint64_t lists;          /* successful full lists, including the first */
	uint64_t relists;        /* lists after the first */
	uint64_t watch_restarts; /* watch requests after the first */
	uint64_t events;         /* watch events applied */
};
void inf_get_stats(struct inf *inf, struct inf_stats *out /* OUT */);

/**
 * inf_pause_watch() - test-only fault hook: while paused the reflector cancels its watch and
 * does not reconnect; on unpause it resumes from the last resourceVersion it saw (which may
 * by then be too old, forcing the 410 relist path). Once pausing returns, nothing changes the
 * cache until unpaused. Not to be called from a handler.
 */
void inf_pause_watch(struct inf *inf, bool paused);

/* Ready-made index functions. @ud is the label key (a const char *) for inf_index_label. */
void inf_index_label(const struct jdoc *obj, void (*emit)(const char *value, void *ctx), void *ctx,
                     void *ud);
void inf_index_owner_uid(const struct jdoc *obj, void (*emit)(const char *value, void *ctx),
                         void *ctx, void *ud);
void inf_index_namespace(const struct jdoc *obj, void (*emit)(const char *value, void *ctx),
                         void *ctx, void *ud);

#endif
