/* jdoc_read.c - reading jdoc documents, and their bridge to jansson (see jdoc.h). */
#include <stdarg.h>
#include <string.h>

#include "base/jdoc.h"
#include "base/jdoc_impl.h"
#include "base/json.h"

static const struct jval none = {NULL, 0};

static struct jnode node(struct jval v)
{
	return v.doc->nodes[v.idx];
}

static const char *pool_of(const struct jdoc *d)
{
	return (const char *)(d->nodes + d->nnodes);
}

enum jtype jval_type(struct jval v)
{
	static const enum jtype types[] = {
	        [N_NULL] = JT_NULL,  [N_FALSE] = JT_BOOL,  [N_TRUE] = JT_BOOL,
	        [N_INT32] = JT_INT,  [N_INT64] = JT_INT,   [N_REAL] = JT_REAL,
	        [N_STR] = JT_STRING, [N_TSTR] = JT_STRING, [N_ARRAY] = JT_ARRAY,
	        [N_OBJ] = JT_OBJECT,
	};

	return v.doc ? types[NTYPE(node(v))] : JT_NONE;
}

struct jval jval_getn(struct jval v, const char *key, size_t len)
{
	struct jnode n;
	size_t lo = 0, hi;

	if (jval_type(v) != JT_OBJECT || key == NULL)
		return none;
	n = node(v);
	hi = NLEN(n);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, klen;
		const char *k = jdoc__node_str(pool_of(v.doc), v.doc->nodes[n.b + 2 * mid], &klen);
		int c = jdoc__bytes_cmp(key, len, k, klen);

		if (c == 0)
			return (struct jval){v.doc, (uint32_t)(n.b + 2 * mid + 1)};
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return none;
}

struct jval jval_get(struct jval v, const char *key)
{
	return key ? jval_getn(v, key, strlen(key)) : none;
}

struct jval jval_at(struct jval v, size_t i)
{
	if (jval_type(v) != JT_ARRAY || i >= NLEN(node(v)))
		return none;
	return (struct jval){v.doc, (uint32_t)(node(v).b + i)};
}

size_t jval_size(struct jval v)
{
	enum jtype t = jval_type(v);

	return t == JT_ARRAY || t == JT_OBJECT ? NLEN(node(v)) : 0;
}

const char *jval_key_at(struct jval v, size_t i)
{
	size_t len;

	if (jval_type(v) != JT_OBJECT || i >= NLEN(node(v)))
		return NULL;
	return jdoc__node_str(pool_of(v.doc), v.doc->nodes[node(v).b + 2 * i], &len);
}

struct jval jval_value_at(struct jval v, size_t i)
{
	if (jval_type(v) != JT_OBJECT || i >= NLEN(node(v)))
		return none;
	return (struct jval){v.doc, (uint32_t)(node(v).b + 2 * i + 1)};
}

const char *jval_str(struct jval v)
{
	size_t len;

	return jval_type(v) == JT_STRING ? jdoc__node_str(pool_of(v.doc), node(v), &len) : NULL;
}

bool jval_has_string(struct jval v, const char *s)
{
	for (size_t i = 0; s && jval_type(v) == JT_ARRAY && i < jval_size(v); i++) {
		const char *e = jval_str(jval_at(v, i));

		if (e && strcmp(e, s) == 0)
			return true;
	}
	return false;
}

size_t jval_strlen(struct jval v)
{
	size_t len = 0;

	if (jval_type(v) == JT_STRING)
		jdoc__node_str(pool_of(v.doc), node(v), &len);
	return len;
}

long long jval_int(struct jval v, long long dflt)
{
	int64_t w;

	if (jval_type(v) != JT_INT)
		return dflt;
	if (NTYPE(node(v)) == N_INT32)
		return (int32_t)node(v).b;
	memcpy(&w, pool_of(v.doc) + node(v).b, sizeof(w));
	return w;
}

double jval_real(struct jval v, double dflt)
{
	double d;

	if (jval_type(v) == JT_INT)
		return (double)jval_int(v, 0);
	if (jval_type(v) != JT_REAL)
		return dflt;
	memcpy(&d, pool_of(v.doc) + node(v).b, sizeof(d));
	return d;
}

bool jval_bool(struct jval v, bool dflt)
{
	return jval_type(v) == JT_BOOL ? NTYPE(node(v)) == N_TRUE : dflt;
}

static struct jval vpath(struct jval v, va_list ap)
{
	const char *key;

	while (v.doc && (key = va_arg(ap, const char *)) != NULL)
		v = jval_get(v, key);
	return v;
}

struct jval jval_path(struct jval v, ...)
{
	va_list ap;

	va_start(ap, v);
	v = vpath(v, ap);
	va_end(ap);
	return v;
}

struct jval jd_get(const struct jdoc *d, ...)
{
	va_list ap;
	struct jval v;

	va_start(ap, d);
	v = vpath(jdoc_root(d), ap);
	va_end(ap);
	return v;
}

const char *jd_str(const struct jdoc *d, ...)
{
	va_list ap;
	struct jval v;

	va_start(ap, d);
	v = vpath(jdoc_root(d), ap);
	va_end(ap);
	return jval_str(v);
}

long long jd_int(const struct jdoc *d, long long dflt, ...)
{
	va_list ap;
	struct jval v;

	va_start(ap, dflt);
	v = vpath(jdoc_root(d), ap);
	va_end(ap);
	return jval_int(v, dflt);
}

bool jd_bool(const struct jdoc *d, int dflt, ...)
{
	va_list ap;
	struct jval v;

	va_start(ap, dflt);
	v = vpath(jdoc_root(d), ap);
	va_end(ap);
	return jval_bool(v, dflt);
}

static json_t *container_to_json(struct jval v)
{
	json_t *j = jval_type(v) == JT_OBJECT ? json_object() : json_array();
	size_t n = jval_size(v);

	for (size_t i = 0; i < n; i++) {
		if (jval_type(v) == JT_ARRAY) {
			json_array_append_new(j, jval_to_json(jval_at(v, i)));
		} else {
			const char *k = jval_key_at(v, i);
			size_t klen;

			jdoc__node_str(pool_of(v.doc), v.doc->nodes[node(v).b + 2 * i], &klen);
			json_object_setn_new_nocheck(j, k, klen, jval_to_json(jval_value_at(v, i)));
		}
	}
	return j;
}

json_t *jval_to_json(struct jval v)
{
	switch (jval_type(v)) {
	case JT_NULL:
		return json_null();
	case JT_BOOL:
		return json_boolean(jval_bool(v, false));
	case JT_INT:
		return json_integer(jval_int(v, 0));
	case JT_REAL:
		return json_real(jval_real(v, 0));
	case JT_STRING:
		return json_stringn_nocheck(jval_str(v), jval_strlen(v));
	case JT_ARRAY:
	case JT_OBJECT:
		return container_to_json(v);
	default:
		return NULL;
	}
}

static bool object_equal_json(struct jval v, const json_t *j, bool subset)
{
	const char *key;
	size_t klen;
	json_t *m;

	if (jval_type(v) != JT_OBJECT || (!subset && jval_size(v) != json_object_size(j)))
		return false;
	json_object_keylen_foreach((json_t *)j, key, klen, m) {
		struct jval mv = jval_getn(v, key, klen);

		if (subset ? !jval_has_subset(mv, m) : !jval_equal_json(mv, m))
			return false;
	}
	return true;
}

static bool array_equal_json(struct jval v, const json_t *j, bool subset)
{
	size_t n = json_array_size(j);

	if (jval_type(v) != JT_ARRAY || jval_size(v) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct jval e = jval_at(v, i);
		const json_t *je = json_array_get(j, i);

		if (subset ? !jval_has_subset(e, je) : !jval_equal_json(e, je))
			return false;
	}
	return true;
}

bool jval_equal_json(struct jval v, const json_t *j)
{
	switch (j ? json_typeof(j) : (json_type)-1) {
	case JSON_OBJECT:
		return object_equal_json(v, j, false);
	case JSON_ARRAY:
		return array_equal_json(v, j, false);
	case JSON_STRING:
		return jval_type(v) == JT_STRING && jval_strlen(v) == json_string_length(j) &&
		       memcmp(jval_str(v), json_string_value(j), jval_strlen(v)) == 0;
	case JSON_INTEGER:
		return jval_type(v) == JT_INT && jval_int(v, 0) == json_integer_value(j);
	case JSON_REAL:
		return jval_type(v) == JT_REAL && jval_real(v, 0) == json_real_value(j);
	case JSON_TRUE:
	case JSON_FALSE:
		return jval_type(v) == JT_BOOL && jval_bool(v, false) == json_is_true(j);
	case JSON_NULL:
		return jval_type(v) == JT_NULL;
	default:
		return false;
	}
}

bool jval_has_subset(struct jval have, const json_t *want)
{
	if (json_is_object(want))
		return object_equal_json(have, want, true);
	if (json_is_array(want))
		return array_equal_json(have, want, true);
	return jval_equal_json(have, want);
}

json_t *jval_merge_patch(struct jval have, const json_t *want)
{
	json_t *patch, *m;
	const char *key;
	size_t klen;

	if (!json_is_object(want) || jval_type(have) != JT_OBJECT)
		return jx_deep_copy(want);
	patch = json_object();
	json_object_keylen_foreach((json_t *)want, key, klen, m) {
		struct jval hv = jval_getn(have, key, klen);

		if (json_is_null(m)) {
			if (jval_type(hv) != JT_NONE)
				json_object_setn_new_nocheck(patch, key, klen, json_null());
		} else if (json_is_object(m) && jval_type(hv) == JT_OBJECT) {
			json_t *sub = jval_merge_patch(hv, m);

			if (json_object_size(sub))
				json_object_setn_new_nocheck(patch, key, klen, sub);
			else
				json_decref(sub);
		} else if (!jval_equal_json(hv, m)) {
			json_object_setn_new_nocheck(patch, key, klen, jx_deep_copy(m));
		}
	}
	for (size_t i = 0; i < jval_size(have); i++) {
		size_t len;
		const char *k = jdoc__node_str(pool_of(have.doc),
		                               have.doc->nodes[node(have).b + 2 * i], &len);

		if (json_object_getn(want, k, len) == NULL)
			json_object_setn_new_nocheck(patch, k, len, json_null());
	}
	return patch;
}
