/*
 * cache.h - a small open-addressing hash table of pointers, keyed by strings the items hold.
 *
 * The informer's store: a cached object costs one 16-byte slot (hash, pointer) at a load of
 * at most 3/4, and its key ("namespace/name") is read from the object itself instead of being
 * stored again. Items are opaque; the table's match() says whether an item has a given key.
 * cache_doc_match() is the matcher for object documents keyed by cache_doc_key().
 *
 * Invariants: cap is 0 or a power of two and n < cap; linear probing with backward-shift
 * deletion, so there are no tombstones; a key is present at most once. The table owns its slot
 * array only (items belong to the caller). Not thread-safe: the owner locks around it.
 */
#ifndef LANDLORD_CACHE_H
#define LANDLORD_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jdoc;

struct cache_slot {
	uint64_t hash;
	void *item; /* NULL: empty */
};

struct cache_table {
	struct cache_slot *slots;
	size_t cap, n;
	bool (*match)(const void *item, const char *key);
};

#define CACHE_TABLE_INIT(matchfn) ((struct cache_table){NULL, 0, 0, (matchfn)})
/* Longest cache key: a namespace (63) + '/' + a name (253), with room to spare. */
#define CACHE_KEY_MAX 512

/** cache_get() - the item with @key, or NULL. */
void *cache_get(const struct cache_table *t, const char *key);
/** cache_put() - insert or replace the item with @key; returns the replaced item or NULL. */
void *cache_put(struct cache_table *t, const char *key, void *item);
/** cache_del() - remove the item with @key; returns it, or NULL when absent. */
void *cache_del(struct cache_table *t, const char *key);
/** cache_release() - free the slot array (not the items); the table becomes empty. */
void cache_release(struct cache_table *t);
/** cache_bytes() - heap bytes of the slot array. */
size_t cache_bytes(const struct cache_table *t);

/* Iteration over the items: for (i = 0; i < t.cap; i++) if (t.slots[i].item) ... */

/**
 * cache_doc_key() - the key "namespace/name" (or "name") of object document @d into @buf.
 * Returns false when @d has no name or the key does not fit CACHE_KEY_MAX.
 */
bool cache_doc_key(const struct jdoc *d, char buf[CACHE_KEY_MAX]);
/** cache_doc_match() - matcher for tables of object documents. */
bool cache_doc_match(const void *doc, const char *key);

#endif
