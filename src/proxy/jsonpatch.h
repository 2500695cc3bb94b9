/*
 * jsonpatch.h - RFC 6902 JSON Patch applied to a jansson document, with RFC 6901 pointers.
 *
 * The tenant proxy rewrites most patches on their way upstream (upstream.c); one that moves,
 * copies or tests a namespace field cannot be rewritten by path, so the proxy reads the object,
 * applies the patch here in the tenant's view, and writes the result back with its
 * resourceVersion (the API server's own optimistic concurrency decides a race).
 *
 * Operations: add, remove, replace, move, copy, test, as RFC 6902 section 4 defines them:
 * "add" to an array index inserts (and "-" appends), "remove" of an absent member fails, "move"
 * into one of its own children fails, "test" compares with JSON equality (jansson's json_equal:
 * numbers by value, objects without regard to member order). The patch is applied to a copy
 * and the document replaced only when every operation succeeded: it is all or nothing.
 *
 * Limits: at most JP_OPS_MAX operations, pointers of at most JP_POINTER_MAX bytes; array
 * indices are decimal without leading zeros.
 *
 * Invariants: pure (no I/O, no globals), thread-safe on distinct documents.
 */
#ifndef LANDLORD_PROXY_JSONPATCH_H
#define LANDLORD_PROXY_JSONPATCH_H

#include <jansson.h>
#include <stddef.h>

#define JP_OPS_MAX     10000
#define JP_POINTER_MAX 4096

/**
 * jp_apply() - apply the patch @ops (a JSON array) to *@doc (replaced on success; the old
 * tree's reference is dropped).
 * Return: 0; -EINVAL (not a patch, an unknown op, a malformed pointer: @why says which
 * operation); -ENOENT (a path or "from" that does not exist); -EPROTO (a "test" that failed);
 * -E2BIG (over a limit). On failure *@doc is unchanged.
 */
int jp_apply(json_t **doc, const json_t *ops, char *why, size_t why_size);

#endif
