/*
 * vec.h - a typed growable array.
 *
 *	VEC(struct route) routes = VEC_INIT;      (or a struct field: VEC(char *) names;)
 *	vec_push(&routes, r);                     (grows by doubling; aborts on OOM, as mem.h)
 *	for (size_t i = 0; i < routes.len; i++) use(&routes.v[i]);
 *	vec_release(&routes);                     (frees the array, not what elements point to)
 *
 * Invariants: len <= cap; v is NULL exactly when cap is 0; v[0..len) are the elements. The
 * vector owns its array and nothing else: elements that own memory are released by the caller
 * before vec_release(). A pointer into v is valid until the next push or reserve. To pass one
 * across functions, give its type a name: struct name_vec VEC_BODY(const char *);
 * Not thread-safe: the owner locks around it when threads share it.
 */
#ifndef LANDLORD_VEC_H
#define LANDLORD_VEC_H

#include <stddef.h>
#include <stdlib.h>

#define VEC_BODY(type)      \
	{                   \
		type *v;    \
		size_t len; \
		size_t cap; \
	}
#define VEC(type) struct VEC_BODY(type)
#define VEC_INIT           \
	{                  \
		NULL, 0, 0 \
	}

/**
 * vec__reserve() - room for @need elements of @elem bytes in @v (capacity *@cap, at least
 * doubled when it grows). Returns the (possibly moved) array. Aborts on OOM or size overflow.
 */
void *vec__reserve(void *v, size_t *cap, size_t need, size_t elem);

/** vec_reserve() - make room for @n elements in total. */
#define vec_reserve(vec, n) ((vec)->v = vec__reserve((vec)->v, &(vec)->cap, (n), sizeof(*(vec)->v)))
/** vec_push() - append @item (an expression of the element type). */
#define vec_push(vec, item) (vec_reserve((vec), (vec)->len + 1), (vec)->v[(vec)->len++] = (item))
/** vec_pop() - remove and return the last element; the vector must not be empty. */
#define vec_pop(vec) ((vec)->v[--(vec)->len])
/** vec_clear() - forget the elements, keep the array for reuse. */
#define vec_clear(vec) ((vec)->len = 0)
/** vec_release() - free the array and reset to VEC_INIT; a released vector can be reused. */
#define vec_release(vec) (free((vec)->v), (vec)->v = NULL, (vec)->len = 0, (vec)->cap = 0)

#endif
