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
 * inf__parse() - the document the cache holds for the object in @data, parsed as lists and
 * watches parse: projected, with the listed-only apiVersion and kind added (both dropped for
 * metadata-only objects). Returns a new reference, or NULL when it does not parse (logged).
 */
struct jdoc *inf__parse(struct inf *inf, const char *data, size_t len);
/** inf__key() - the cache key of @ns/@name ("name" when @ns is NULL or ""); caller frees. */
char *inf__key(const char *ns, const char *name);

/**
 * inf__apply_event() - apply one ADDED/MODIFIED/DELETED object (already prepared) to the cache
 * and its indexes, then run the handlers. @obj is borrowed; the cache takes its own reference.
 * Return: 0, or -EINVAL when @obj has no name.
 */
int inf__apply_event(struct inf *inf, enum watch_event_type type, const struct jdoc *obj);
/**
 * inf__replace() - install the objects of @take (as a list built them; the list is emptied)
 * as the cache: objects missing from it are delivered as deletes, objects whose
 * resourceVersion changed as updates, new ones as adds; indexes are rebuilt. A later object
 * with the key of an earlier one replaces it. A store-less informer delivers each object as
 * an add, in list order, between its relist handlers' brackets.
 */
void inf__replace(struct inf *inf, struct jdoc_list *take);

/**
 * inf__backoff_ms() - the delay after @fails consecutive failures: 0.5 s doubling per failure,
 * plus up to 50% random jitter, never above 30 s.
 */
long inf__backoff_ms(unsigned fails);

#endif
