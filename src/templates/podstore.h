/*
 * podstore.h - the pods the template roll-up counts, kept compact: each pod's labels and phase,
 * nothing else.
 *
 * A store-less pod informer (kube/informer.h) feeds the store through podstore_watch(); the
 * roll-ups count with podstore_count(). A pod is one small entry {phase, label set, links}
 * under "namespace/name" in an open-addressing table (kube/cache.h), linked into its
 * namespace's list (a second table holds the namespaces that have pods). Label sets are
 * interned by their canonical text (pairs sorted by key) and reference-counted, so the pods of
 * one ReplicaSet share one. 160-180 B a pod where a cached document cost 536 B
 * (docs/benchmarks.md, Templates).
 *
 * Invariants: a pod is in the pod table iff it is in its namespace's list; a namespace is in
 * the namespace table iff it has pods; a label set is in the set table iff pods refer to it, and
 * its refs is their number; a pod with no labels has no set. What grows from the network is
 * capped: a key over CACHE_KEY_MAX is not kept (logged), and labels that would take a set past
 * PODSTORE_LABELS_MAX bytes or PODSTORE_LABELS_N pairs, or that are not strings or hold
 * control characters (never valid in a label), are left out of it (logged).
 *
 * Thread-safe: one writer (the informer's reflector thread) and any readers, under a rwlock.
 * Change listeners run on the writer's thread, with no lock held.
 *
 * Metrics (an informer's, under the name given to podstore_new()):
 * landlord_informer_objects{resource} (pods held), landlord_informer_bytes{resource} (the
 * store's heap: entries, namespaces, label sets and the three tables' slots).
 */
#ifndef LANDLORD_PODSTORE_H
#define LANDLORD_PODSTORE_H

#include <stddef.h>

#include "kube/informer.h"
#include "kube/selector.h"
#include "tenancy/tplstatus.h"

#define PODSTORE_LABELS_MAX 8192 /* bytes of one label set's canonical text */
#define PODSTORE_LABELS_N   256  /* pairs of one label set */

struct podstore;

/** A listener: the pods of namespace @ns changed (one added or deleted, a phase or labels). */
typedef void (*podstore_changed_fn)(const char *ns, void *ud);

/** podstore_new() - an empty store whose gauges say resource=@name (copied). */
struct podstore *podstore_new(const char *name);
/** podstore_free() - once nothing feeds or reads it (its informer stopped); NULL is a no-op. */
void podstore_free(struct podstore *ps);

/** podstore_listen() - call @fn on each change; before the feeding informer starts. */
void podstore_listen(struct podstore *ps, podstore_changed_fn fn, void *ud);
/**
 * podstore_watch() - feed @ps from @inf, a store-less informer of pods (opts.no_store, keeping
 * metadata.labels and status.phase), before it starts. @ps must outlive @inf.
 */
void podstore_watch(struct podstore *ps, struct inf *inf);
/** podstore_handler(), podstore_relist_handler() - what podstore_watch() adds (for tests). */
struct inf_handler podstore_handler(struct podstore *ps);
struct inf_relist_handler podstore_relist_handler(struct podstore *ps);

/**
 * podstore_count() - add the pods of @ns that one of the @n @selectors selects (NULL entries
 * select nothing) to @row->pods, by phase (no phase counts as Pending).
 */
void podstore_count(struct podstore *ps, const char *ns, struct sel *const *selectors, size_t n,
                    struct tpl_row *row);
/** podstore_len() - the pods held. */
size_t podstore_len(struct podstore *ps);
/** podstore_label_sets() - the distinct label sets held. */
size_t podstore_label_sets(struct podstore *ps);
/** podstore_bytes() - the store's heap bytes (what landlord_informer_bytes says). */
size_t podstore_bytes(struct podstore *ps);

#endif
