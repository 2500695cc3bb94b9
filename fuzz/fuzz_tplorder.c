/*
 * fuzz_tplorder.c - any list of rendered objects is ordered, or refused with one printable
 * line, without crashing and without changing the objects; an order is a permutation in which
 * every object named by an object's landlord.dev/depends-on comes before it, and objects with
 * no dependency between them keep the kind order; the same input gives the same order.
 * Input: the rendered objects as a JSON array.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"
#include "tenancy/tplorder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_message(const char *msg)
{
	if (msg[0] == '\0')
		abort();
	for (const char *p = msg; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			abort();
}

static const char *kind_of(const json_t *o)
{
	return json_string_value(json_object_get(o, "kind"));
}

static const char *name_of(const json_t *o)
{
	return json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
}

/* Does entry @e (@n bytes, trimmed) of an annotation name object @o? */
static bool names(const char *e, size_t n, const json_t *o)
{
	size_t k = strlen(kind_of(o)), m = strlen(name_of(o));

	return n == k + 1 + m && memcmp(e, kind_of(o), k) == 0 && e[k] == '/' &&
	       memcmp(e + k + 1, name_of(o), m) == 0;
}

/* Every object named by object @i's annotation is at a position before @pos[i]. */
static void check_deps(const json_t *objs, const size_t *pos, size_t i)
{
	const json_t *obj = json_array_get(objs, i);
	const char *s = json_string_value(json_object_get(
	        json_object_get(json_object_get(obj, "metadata"), "annotations"), TPL_DEPENDS_ON));

	while (s != NULL && *s != '\0') {
		const char *comma = strchr(s, ','), *end = comma != NULL ? comma : s + strlen(s);

		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		for (size_t j = 0; j < json_array_size(objs); j++)
			if (names(s, (size_t)(end - s), json_array_get(objs, j)) &&
			    pos[j] >= pos[i])
				abort();
		s = comma != NULL ? comma + 1 : NULL;
	}
}

static bool has_deps(const json_t *objs)
{
	const json_t *o;
	size_t i;

	json_array_foreach(objs, i, o)
		if (json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"),
		                    TPL_DEPENDS_ON) != NULL)
			return true;
	return false;
}

static unsigned rank(const char *kind)
{
	static const char *const ranked[] = {
	        "ServiceAccount", "Secret",      "ConfigMap",         "Role",
	        "ClusterRole",    "RoleBinding", "ClusterRoleBinding"};
	unsigned r = 0;

	while (r < 7 && strcmp(kind, ranked[r]) != 0)
		r++;
	return r;
}

static void check_order(const json_t *objs, const size_t *order)
{
	size_t n = json_array_size(objs), *pos = xmalloc(n * sizeof(*pos));
	bool plain = !has_deps(objs);

	for (size_t i = 0; i < n; i++)
		pos[i] = SIZE_MAX;
	for (size_t k = 0; k < n; k++) {
		if (order[k] >= n || pos[order[k]] != SIZE_MAX)
			abort();
		pos[order[k]] = k;
	}
	for (size_t i = 0; i < n; i++)
		check_deps(objs, pos, i);
	for (size_t k = 1; plain && k < n; k++) {
		unsigned a = rank(kind_of(json_array_get(objs, order[k - 1]))),
		         b = rank(kind_of(json_array_get(objs, order[k])));

		if (a > b || (a == b && order[k - 1] > order[k]))
			abort();
	}
	free(pos);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *objs = json_loadb((const char *)data, size, 0, NULL), *copy;
	size_t *order = NULL, *again = NULL;
	struct ll_err err;
	int rc;

	if (objs == NULL)
		return 0;
	copy = json_deep_copy(objs);
	rc = tpl_order(objs, &order, &err);
	if (!json_equal(objs, copy) || tpl_order(objs, &again, NULL) != rc)
		abort();
	if (rc != 0) {
		if (order != NULL || again != NULL)
			abort();
		check_message(err.msg);
	} else {
		check_order(objs, order);
		if (memcmp(order, again, json_array_size(objs) * sizeof(*order)) != 0)
			abort();
	}
	free(order);
	free(again);
	json_decref(copy);
	json_decref(objs);
	return 0;
}
