/*
 * informer_internal.h - the informer's pure cache logic, exposed for unit tests.
 *
 * These functions never talk to the API server: they are what the reflector thread calls with
 * what it listed or watched. Callers other than lib/informer.c and its tests must not use them.
 */
#ifndef LANDLORD_INFORMER_INTERNAL_H
#define LANDLORD_INFORMER_INTERNAL_H

#include <jansson.h>

#include "kube/informer.h"

/**
 * inf__strip_managed_fields() - drop metadata.managedFields entries whose manager is not
 * @keep_manager, and the array itself when nothing is left. Modifies @obj in place.
 */
void inf__strip_managed_fields(json_t *obj, const char *keep_manager);
/** inf__prepare() - strip managedFields and run the informer's transform on @obj in place. */
void inf__prepare(struct inf *inf, json_t *obj);
/** inf__key() - the cache key of @ns/@name ("name" when @ns is NULL or ""); caller frees. */
char *inf__key(const char *ns, const char *name);

/**
 * inf__apply_event() - apply one ADDED/MODIFIED/DELETED object (already prepared) to the cache
 * and its indexes, then run the handlers. @obj is borrowed; the cache takes its own reference.
 * Return: 0, or -EINVAL when @obj has no name.
 */
int inf__apply_event(struct inf *inf, enum watch_event_type type, json_t *obj);
/**
 * inf__replace() - install @take_fresh (key -> object, as built by a list) as the cache:
 * objects missing from it are delivered as deletes, objects whose resourceVersion changed as
 * updates, new ones as adds; indexes are rebuilt. Takes ownership of @take_fresh.
 */
void inf__replace(struct inf *inf, json_t *take_fresh);

/**
 * inf__backoff_ms() - the delay after @fails consecutive failures: 0.5 s doubling per failure,
 * plus up to 50% random jitter, never above 30 s.
 */
long inf__backoff_ms(unsigned fails);

#endif
