/*
 * json.h - small helpers over jansson for Kubernetes objects.
 *
 * Objects are jansson trees. Cached objects are shared and immutable (convention: never modify a
 * json_t you did not create; json_deep_copy() it first). Path getters take a NULL-terminated list
 * of keys, because Kubernetes keys contain dots and slashes ("app.kubernetes.io/name"), and return
 * borrowed pointers valid as long as the root is alive.
 */
#ifndef LANDLORD_JSON_H
#define LANDLORD_JSON_H

#include <jansson.h>
#include <stdbool.h>

/**
 * jx_get() - the value at the key path (NULL-terminated varargs), or NULL. Borrowed from @root
 * and read-only: it may be part of a shared cached object.
 */
const json_t *jx_get(const json_t *root, ...) __attribute__((sentinel));
/**
 * jx_ref() - a new reference to the read-only @v (NULL gives NULL), e.g. to place a cached
 * subtree into a document being built: json_object_set_new(doc, "spec", jx_ref(spec)). The
 * document then shares @v, so nothing may modify that part of it either.
 */
json_t *jx_ref(const json_t *v);
/** jx_unref() - drop a reference to a read-only value (NULL is fine). */
void jx_unref(const json_t *v);
/** jx_str() - string at the key path, or NULL when missing or not a string. */
const char *jx_str(const json_t *root, ...) __attribute__((sentinel));
/** jx_int() - integer at the key path, or @dflt. */
long long jx_int(const json_t *root, long long dflt, ...) __attribute__((sentinel));
/** jx_bool() - boolean at the key path, or @dflt (an int: varargs follow it). */
bool jx_bool(const json_t *root, int dflt, ...) __attribute__((sentinel));

/* Shorthands for metadata; all borrowed, NULL when absent. */
const char *jx_name(const json_t *obj);
const char *jx_namespace(const json_t *obj);
const char *jx_uid(const json_t *obj);
const char *jx_resource_version(const json_t *obj);
long long jx_generation(const json_t *obj);
const char *jx_label(const json_t *obj, const char *key);
const char *jx_annotation(const json_t *obj, const char *key);

/**
 * jx_object_key() - "namespace/name" or "name" for cluster-scoped objects; caller frees.
 * Returns NULL when the object has no metadata.name.
 */
char *jx_object_key(const json_t *obj);

/**
 * jx_loads() - parse @len bytes into a tree, rejecting duplicate keys.
 * Return: new reference, or NULL with the position and reason in @err (may be NULL).
 */
struct ll_err;
json_t *jx_loads(const char *data, size_t len, struct ll_err *err);

/** jx_dumps() - compact serialisation; caller frees. */
char *jx_dumps(const json_t *v);

/**
 * jx_equal_subset() - true when every field present in @want has an equal value in @have
 * (objects recursively; arrays element by element and of the same length, so that fields the
 * API server defaults inside list items do not count; scalars exactly). Used to skip writes
 * whose desired state the cache already holds.
 */
bool jx_equal_subset(const json_t *want, const json_t *have);

/*
 * Keys may hold NUL bytes (JSON allows "\u0000"; the API server stores them in unvalidated
 * fields). jansson's json_deep_copy() cuts such keys at the NUL and its json_equal() never finds
 * them, so trees that came from the network are copied and compared with these instead.
 */
/** jx_deep_copy() - a new tree equal to @v, keys kept whole; NULL gives NULL. */
json_t *jx_deep_copy(const json_t *v);
/** jx_equal() - whether @a and @b are equal JSON, keys compared whole (NULL equals only NULL). */
bool jx_equal(const json_t *a, const json_t *b);

#endif
