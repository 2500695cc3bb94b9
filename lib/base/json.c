/* json.c - helpers over jansson for Kubernetes objects (see json.h). */
#include <stdarg.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"

static json_t *vget(const json_t *root, va_list ap)
{
	const char *key;
	json_t *cur = (json_t *)root;

	while (cur && (key = va_arg(ap, const char *)) != NULL)
		cur = json_is_object(cur) ? json_object_get(cur, key) : NULL;
	return cur;
}

const json_t *jx_get(const json_t *root, ...)
{
	va_list ap;
	const json_t *v;

	va_start(ap, root);
	v = vget(root, ap);
	va_end(ap);
	return v;
}

json_t *jx_ref(const json_t *v)
{
	return json_incref((json_t *)v);
}

void jx_unref(const json_t *v)
{
	json_decref((json_t *)v);
}

const char *jx_str(const json_t *root, ...)
{
	va_list ap;
	json_t *v;

	va_start(ap, root);
	v = vget(root, ap);
	va_end(ap);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

long long jx_int(const json_t *root, long long dflt, ...)
{
	va_list ap;
	json_t *v;

	va_start(ap, dflt);
	v = vget(root, ap);
	va_end(ap);
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

bool jx_bool(const json_t *root, int dflt, ...)
{
	va_list ap;
	json_t *v;

	va_start(ap, dflt);
	v = vget(root, ap);
	va_end(ap);
	return json_is_boolean(v) ? json_is_true(v) : dflt;
}

const char *jx_name(const json_t *obj)
{
	return jx_str(obj, "metadata", "name", NULL);
}

const char *jx_namespace(const json_t *obj)
{
	return jx_str(obj, "metadata", "namespace", NULL);
}

const char *jx_uid(const json_t *obj)
{
	return jx_str(obj, "metadata", "uid", NULL);
}

const char *jx_resource_version(const json_t *obj)
{
	return jx_str(obj, "metadata", "resourceVersion", NULL);
}

long long jx_generation(const json_t *obj)
{
	return jx_int(obj, 0, "metadata", "generation", NULL);
}

const char *jx_label(const json_t *obj, const char *key)
{
	return jx_str(obj, "metadata", "labels", key, NULL);
}

const char *jx_annotation(const json_t *obj, const char *key)
{
	return jx_str(obj, "metadata", "annotations", key, NULL);
}

char *jx_object_key(const json_t *obj)
{
	const char *name = jx_name(obj), *ns = jx_namespace(obj);

	if (name == NULL)
		return NULL;
	if (ns && *ns)
		return xasprintf("%s/%s", ns, name);
	return xstrdup(name);
}

json_t *jx_loads(const char *data, size_t len, struct ll_err *err)
{
	json_error_t je;
	json_t *v = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);

	if (v == NULL)
		ll_err_set(err, -1, "invalid JSON at line %d column %d: %s", je.line, je.column,
		           je.text);
	return v;
}

char *jx_dumps(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	return s ? s : xstrdup("null");
}

bool jx_equal_subset(const json_t *want, const json_t *have)
{
	const char *key;
	size_t klen;
	json_t *value;

	if (json_is_object(want)) {
		if (!json_is_object(have))
			return false;
		json_object_keylen_foreach((json_t *)want, key, klen, value) {
			if (!jx_equal_subset(value, json_object_getn(have, key, klen)))
				return false;
		}
		return true;
	}
	if (json_is_array(want)) {
		if (!json_is_array(have) || json_array_size(want) != json_array_size(have))
			return false;
		for (size_t i = 0; i < json_array_size(want); i++)
			if (!jx_equal_subset(json_array_get(want, i), json_array_get(have, i)))
				return false;
		return true;
	}
	return have != NULL && json_equal((json_t *)want, (json_t *)have);
}

json_t *jx_deep_copy(const json_t *v)
{
	const char *key;
	size_t klen;
	json_t *value, *copy;

	if (json_is_object(v)) {
		copy = json_object();
		json_object_keylen_foreach((json_t *)v, key, klen, value)
			json_object_setn_new_nocheck(copy, key, klen, jx_deep_copy(value));
		return copy;
	}
	if (json_is_array(v)) {
		copy = json_array();
		for (size_t i = 0; i < json_array_size(v); i++)
			json_array_append_new(copy, jx_deep_copy(json_array_get(v, i)));
		return copy;
	}
	return v ? json_deep_copy(v) : NULL;
}

bool jx_equal(const json_t *a, const json_t *b)
{
	const char *key;
	size_t klen;
	json_t *value;

	if (json_is_object(a) && json_is_object(b)) {
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_keylen_foreach((json_t *)a, key, klen, value) {
			if (!jx_equal(value, json_object_getn(b, key, klen)))
				return false;
		}
		return true;
	}
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!jx_equal(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	return a == b || (a && b && json_equal((json_t *)a, (json_t *)b));
}
