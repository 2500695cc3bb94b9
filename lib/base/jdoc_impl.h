/*
 * jdoc_impl.h - the layout of a jdoc, shared by its builder (jdoc.c) and its readers
 * (jdoc_read.c). No other module includes it: everyone else reads through jdoc.h.
 *
 * A node is 8 bytes: a = type (low 4 bits) | length or count (high 28 bits), b = a
 * pool offset, a table index, an inline int32, or the index of a container's first child.
 * The children of a container are contiguous (objects: key node, value node, sorted by key), so
 * jval_at() is O(1) and jval_get() a binary search. Blocks are written in post-order while
 * parsing; the root is the last node. Strings live in the pool after the nodes, each followed
 * by a NUL; common keys and values are indexes into jdoc__table instead.
 */
#ifndef LANDLORD_JDOC_IMPL_H
#define LANDLORD_JDOC_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum ntype { N_NULL, N_FALSE, N_TRUE, N_INT32, N_INT64, N_REAL, N_STR, N_TSTR, N_ARRAY, N_OBJ };

struct jnode {
	uint32_t a;
	uint32_t b;
};

struct jdoc {
	atomic_uint refs;
	uint32_t nnodes;
	uint32_t root;
	uint32_t pool_len;
	struct jnode nodes[];
};

#define NTYPE(n)     ((enum ntype)((n).a & 0xfu))
#define NLEN(n)      ((n).a >> 4)
#define MKNODE(t, l) ((uint32_t)(t) | ((uint32_t)(l) << 4))
#define LEN_MAX      ((1u << 28) - 1)

/* Kubernetes' most common keys and short values, sorted bytewise (jdoc_table.c). */
extern const char *const jdoc__table[];
/** jdoc__table_find() - index of the @len bytes at @s in jdoc__table, or -1. */
int jdoc__table_find(const char *s, size_t len);

static inline int jdoc__bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* Bytes of a string node; @pool is the pool the node points into. */
static inline const char *jdoc__node_str(const char *pool, struct jnode n, size_t *len)
{
	if (NTYPE(n) == N_TSTR) {
		*len = strlen(jdoc__table[n.b]);
		return jdoc__table[n.b];
	}
	*len = NLEN(n);
	return pool + n.b;
}

#endif
