/* cache.c - open-addressing pointer table keyed by strings the items hold (see cache.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jdoc.h"
#include "base/mem.h"
#include "kube/cache.h"

#define MIN_CAP 8

/* FNV-1a, 64 bits. */
static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Slot of @key, or of the empty slot where it would go. */
static size_t find(const struct cache_table *t, uint64_t h, const char *key)
{
	size_t mask = t->cap - 1, i = (size_t)h & mask;

	while (t->slots[i].item && !(t->slots[i].hash == h && t->match(t->slots[i].item, key)))
		i = (i + 1) & mask;
	return i;
}

static void grow(struct cache_table *t)
{
	struct cache_slot *old = t->slots;
	size_t old_cap = t->cap;

	t->cap = old_cap ? old_cap * 2 : MIN_CAP;
	t->slots = xcalloc(t->cap, sizeof(*t->slots));
	for (size_t i = 0; i < old_cap; i++) {
		size_t j;

		if (old[i].item == NULL)
			continue;
		j = (size_t)old[i].hash & (t->cap - 1);
		while (t->slots[j].item)
			j = (j + 1) & (t->cap - 1);
		t->slots[j] = old[i];
	}
	free(old);
}

void *cache_get(const struct cache_table *t, const char *key)
{
	if (t->n == 0)
		return NULL;
	return t->slots[find(t, hash_str(key), key)].item;
}

void *cache_put(struct cache_table *t, const char *key, void *item)
{
	uint64_t h = hash_str(key);
	size_t i;
	void *old;

	if ((t->n + 1) * 4 > t->cap * 3)
		grow(t);
	i = find(t, h, key);
	old = t->slots[i].item;
	t->slots[i] = (struct cache_slot){h, item};
	if (old == NULL)
		t->n++;
	return old;
}

/* Backward-shift deletion: pull later members of the probe run into the hole. */
static void close_hole(struct cache_table *t, size_t hole)
{
	size_t mask = t->cap - 1, j = hole;

	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (t->slots[j].item == NULL)
			break;
		home = (size_t)t->slots[j].hash & mask;
		/* move j into the hole unless its home lies cyclically in (hole, j] */
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			t->slots[hole] = t->slots[j];
			hole = j;
		}
	}
	t->slots[hole] = (struct cache_slot){0, NULL};
}

void *cache_del(struct cache_table *t, const char *key)
{
	size_t i;
	void *old;

	if (t->n == 0)
		return NULL;
	i = find(t, hash_str(key), key);
	old = t->slots[i].item;
	if (old) {
		close_hole(t, i);
		t->n--;
	}
	return old;
}

void cache_release(struct cache_table *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = 0;
	t->n = 0;
}

size_t cache_bytes(const struct cache_table *t)
{
	return t->cap * sizeof(*t->slots);
}

bool cache_doc_key(const struct jdoc *d, char buf[CACHE_KEY_MAX])
{
	const char *ns = jd_namespace(d), *name = jd_name(d);
	int n;

	if (name == NULL)
		return false;
	if (ns && *ns)
		n = snprintf(buf, CACHE_KEY_MAX, "%s/%s", ns, name);
	else
		n = snprintf(buf, CACHE_KEY_MAX, "%s", name);
	return n >= 0 && n < CACHE_KEY_MAX;
}

bool cache_doc_match(const void *doc, const char *key)
{
	const char *ns = jd_namespace(doc), *name = jd_name(doc);
	size_t len;

	if (name == NULL)
		return false;
	if (ns && *ns) {
		len = strlen(ns);
		if (strncmp(key, ns, len) != 0 || key[len] != '/')
			return false;
		key += len + 1;
	}
	return strcmp(key, name) == 0;
}
