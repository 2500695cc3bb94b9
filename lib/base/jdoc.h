/*
 * jdoc.h - an immutable, reference-counted JSON document in one allocation.
 *
 * For caches that hold many small documents (the informer's objects): a jansson tree costs 6-12
 * bytes of heap per byte of JSON and one malloc per value; a jdoc is one block of 8-byte nodes
 * followed by a string pool, typically about as large as the compact JSON text itself. Bytes are
 * parsed straight into it with yajl's streaming parser (jdoc_parse(); jdoc_parse_items() makes
 * one document per item of a LIST page or watch event), or copied from a jansson tree
 * (jdoc_from_json()). A parse may keep or drop paths (struct jdoc_opts), so a cache holds only
 * what its readers use. Writers get a jansson copy (jval_to_json()); drift detection compares
 * without one (jval_has_subset(), jval_merge_patch()). docs/internals/informer.md
 * ("Representation") has the layout and the measurements.
 *
 * Reading: a struct jval is a view (document + node index), passed by value and never freed;
 * it is valid while the caller holds a reference to its document. Accessors accept any view,
 * including the missing one (JT_NONE: a key not found, an index out of range, a wrong type), so
 * chains like jval_str(jval_get(jval_get(root, "metadata"), "name")) need no checks in between:
 *
 *	struct jval rules = jd_get(doc, "spec", "rules", NULL), rule;
 *	size_t i;
 *	const char *name = jd_str(doc, "metadata", "name", NULL);
 *	jval_foreach(rules, i, rule)
 *		use(jval_str(jval_get(rule, "verb")));
 *
 * Invariants: a document never changes after it is built, so any number of threads may read
 * it without locks; jdoc_ref()/jdoc_unref() are atomic. Object members are sorted by key
 * (bytewise, shorter first on a common prefix) and unique, so jval_get() is a binary search and
 * iteration visits members in key order, not in the order of the input. Strings are
 * NUL-terminated in the pool and may also contain NUL bytes (jval_strlen() has the length).
 * Integers are signed 64-bit; a number with a fraction or exponent is a double (JT_REAL). A lone
 * UTF-16 surrogate escape ("\ud800") becomes "?" (yajl's choice; jansson refuses it).
 *
 * Input is untrusted: a document whose nodes and strings would exceed opts->max_bytes is refused
 * with -EMSGSIZE, one nested deeper than opts->max_depth or that is not valid JSON (including
 * invalid UTF-8, integers beyond 64 bits and duplicate keys) with -EINVAL.
 */
#ifndef LANDLORD_JDOC_H
#define LANDLORD_JDOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ll_err;
struct jdoc;

enum jtype { JT_NONE, JT_NULL, JT_BOOL, JT_INT, JT_REAL, JT_STRING, JT_ARRAY, JT_OBJECT };

struct jval {
	const struct jdoc *doc; /* NULL for the missing value */
	uint32_t idx;
};

#define JDOC_DEFAULT_MAX_BYTES (16u << 20)
#define JDOC_DEFAULT_MAX_DEPTH 64u
#define JDOC_MAX_DEPTH         256u

/*
 * Options of a parse; a NULL pointer or a zero field means the default.
 *
 * Projections: paths are dot-separated member names from the root ("metadata.labels"). With
 * @keep, only the members on those paths (and everything beneath them) survive, together with
 * the objects that lead to them; with @drop, the members on those paths are removed. Both may be
 * given: a dropped path inside a kept one is removed ("metadata" kept, "metadata.managedFields"
 * dropped). Paths end at the first array: members inside array elements cannot be named. A key
 * that itself contains a dot matches the path that spells it out. A @keep or @drop path ending
 * in '*' names every member whose path begins with the text before it
 * ("metadata.labels.app*": every label whose key begins "app").
 */
struct jdoc_opts {
	const char *const *keep; /* NULL-terminated; NULL keeps everything */
	const char *const *drop; /* NULL-terminated; NULL drops nothing */
	/* key, value, key, value, ..., NULL: string members the top-level object gets when it
	 * lacks them and the projection keeps them (a listed item's apiVersion and kind) */
	const char *const *defaults;
	size_t max_bytes;   /* nodes + strings; default JDOC_DEFAULT_MAX_BYTES */
	unsigned max_depth; /* default JDOC_DEFAULT_MAX_DEPTH, at most JDOC_MAX_DEPTH */
};

/**
 * jdoc_parse() - parse @len bytes of JSON (any value at the top) into a new document.
 * On success *@out (OUT) holds a new reference. Returns 0, -EINVAL (malformed, too deep, a
 * duplicate key, bad options) or -EMSGSIZE (over opts->max_bytes), with a line in @err.
 * Thread-safe.
 */
int jdoc_parse(const char *data, size_t len, const struct jdoc_opts *opts, struct jdoc **out,
               struct ll_err *err);
/**
 * jdoc_parse_items() - parse a LIST page or a watch event without building the whole: the value
 * of the top-level member @key ("items" of a list, "object" of a watch event) is handed to @fn
 * as documents of its own, built with @opts: each element, in order, when it is an array; the
 * value itself otherwise (a missing or null @key hands over nothing). @fn takes the reference
 * and returns 0, or a negative errno that stops the parse and is returned. *@rest (OUT; @rest
 * may be NULL) gets the rest of the top-level value (a list's metadata, an event's type), built
 * with the default limits. Errors as jdoc_parse(); items already handed over stay with @fn's
 * owner. Thread-safe.
 */
int jdoc_parse_items(const char *data, size_t len, const char *key, const struct jdoc_opts *opts,
                     int (*fn)(void *ctx, struct jdoc *take_item), void *ctx, struct jdoc **rest,
                     struct ll_err *err);
/**
 * jdoc_from_json() - the same document built from a jansson tree, which is only read.
 * Same options, errors and ownership as jdoc_parse() (non-finite reals are -EINVAL).
 */
int jdoc_from_json(const json_t *v, const struct jdoc_opts *opts, struct jdoc **out,
                   struct ll_err *err);
/** jdoc_ref() - a new reference to @d (NULL gives NULL); atomic. */
struct jdoc *jdoc_ref(const struct jdoc *d);
/** jdoc_unref() - drop a reference; the last one frees the block. NULL is fine; atomic. */
void jdoc_unref(const struct jdoc *d);
/** jdoc_root() - the view of the top-level value; JT_NONE when @d is NULL. */
struct jval jdoc_root(const struct jdoc *d);
/** jdoc_bytes() - heap bytes held by @d, including malloc's overhead (for measurements). */
size_t jdoc_bytes(const struct jdoc *d);

/** jval_type() - the type of @v; JT_NONE for the missing value. */
enum jtype jval_type(struct jval v);
/** jval_get() - the member @key of object @v, or the missing value. */
struct jval jval_get(struct jval v, const char *key);
/** jval_getn() - jval_get() for a key of @len bytes (may contain NUL). */
struct jval jval_getn(struct jval v, const char *key, size_t len);
/** jval_at() - element @i of array @v, or the missing value. */
struct jval jval_at(struct jval v, size_t i);
/** jval_size() - number of elements of an array or members of an object; 0 otherwise. */
size_t jval_size(struct jval v);
/** jval_key_at() - key of member @i of object @v (lent, NUL-terminated), or NULL. */
const char *jval_key_at(struct jval v, size_t i);
/** jval_value_at() - value of member @i of object @v, or the missing value. */
struct jval jval_value_at(struct jval v, size_t i);
/** jval_str() - the string (lent until the document's last unref), or NULL for non-strings. */
const char *jval_str(struct jval v);
/** jval_strlen() - length in bytes of a string value; 0 for non-strings. */
size_t jval_strlen(struct jval v);
/** jval_int() - the integer, or @dflt when @v is not an integer. */
long long jval_int(struct jval v, long long dflt);
/** jval_real() - the number (an integer converted), or @dflt when @v is not a number. */
double jval_real(struct jval v, double dflt);
/** jval_bool() - the boolean, or @dflt when @v is not a boolean. */
bool jval_bool(struct jval v, bool dflt);
/** jval_path() - follow object keys (NULL-terminated varargs) from @v. */
struct jval jval_path(struct jval v, ...) __attribute__((sentinel));
/** jval_has_string() - is @s (NULL: false) a string element of array @v? */
bool jval_has_string(struct jval v, const char *s);

/* Path shorthands from a document's root: jd_str(doc, "metadata", "name", NULL). */
struct jval jd_get(const struct jdoc *d, ...) __attribute__((sentinel));
const char *jd_str(const struct jdoc *d, ...) __attribute__((sentinel));
long long jd_int(const struct jdoc *d, long long dflt, ...) __attribute__((sentinel));
bool jd_bool(const struct jdoc *d, int dflt, ...) __attribute__((sentinel));

/* Iteration; @i is a size_t, @elem and @val struct jval, @key const char *. The container is
 * evaluated on every step: pass a variable, not a lookup. jval_foreach visits nothing unless @arr
 * is an array, jval_foreach_member nothing unless @obj is an object (never a NULL key). */
#define jval_foreach(arr, i, elem)                                          \
	for ((i) = 0; jval_type(arr) == JT_ARRAY && (i) < jval_size(arr) && \
	              ((elem) = jval_at((arr), (i)), true);                 \
	     (i)++)
#define jval_foreach_member(obj, i, key, val)                                                     \
	for ((i) = 0; jval_type(obj) == JT_OBJECT && (i) < jval_size(obj) &&                      \
	              ((key) = jval_key_at((obj), (i)), (val) = jval_value_at((obj), (i)), true); \
	     (i)++)

/*
 * Kubernetes object shorthands: metadata fields of an object document (NULL when absent or
 * not a string; lent for as long as the document is held).
 */
const char *jd_name(const struct jdoc *d);
const char *jd_namespace(const struct jdoc *d);
const char *jd_uid(const struct jdoc *d);
const char *jd_resource_version(const struct jdoc *d);
const char *jd_label(const struct jdoc *d, const char *key);
const char *jd_annotation(const struct jdoc *d, const char *key);
/* The same for an object anywhere (a document's root, an item inside one, the missing value). */
const char *jval_name(struct jval obj);
const char *jval_namespace(struct jval obj);
const char *jval_resource_version(struct jval obj);
const char *jval_label(struct jval obj, const char *key);
const char *jval_annotation(struct jval obj, const char *key);

/*
 * A small owned vector of document references, as cache readers hand them out: each of
 * items[0..n) is a reference the holder drops with jdoc_list_release() (which also frees items).
 */
struct jdoc_list {
	const struct jdoc **items;
	size_t n;
};
/** jdoc_list_release() - drop every reference and free the array; the list becomes empty. */
void jdoc_list_release(struct jdoc_list *l);

/** jval_to_json() - a new jansson copy of @v for writers (NULL for the missing value). */
json_t *jval_to_json(struct jval v);
/** jval_equal_json() - true when @v and @j are equal as json_equal() would say. */
bool jval_equal_json(struct jval v, const json_t *j);
/**
 * jval_has_subset() - true when every field of @want is present in @have with an equal value:
 * objects recursively, arrays element by element and of the same length, scalars exactly (as
 * jx_equal_subset()). Drift detection: false means a write is needed.
 */
bool jval_has_subset(struct jval have, const json_t *want);
/**
 * jval_merge_patch() - the RFC 7386 merge patch that turns @have into @want: members of @want
 * that differ, recursively for objects, and null for members of @have that @want lacks; a copy
 * of @want when either is not an object. When @have is an object, an empty patch means nothing
 * differs (an empty patch would turn a non-object into {}). A null member in @want means
 * "absent": a merge patch cannot set null. Caller owns the result.
 */
json_t *jval_merge_patch(struct jval have, const json_t *want);

/** jdoc__table_sorted() - the static string table is strictly sorted (unit test hook). */
bool jdoc__table_sorted(void);

#endif
