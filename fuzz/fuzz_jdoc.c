/*
 * fuzz_jdoc.c - compact documents from the network: jdoc_parse() on arbitrary bytes, plain and
 * projected. A parsed document must equal its jansson copy (and jansson's own parse when both
 * accept the input), rebuild from that copy unchanged, and contain every projection of itself.
 * An input of two documents split by a newline checks the merge patch from the first to the
 * second: applied to the first, it gives the second. Split at "items", a document hands over
 * each element of its items as a document equal to it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jdoc.h"
#include "base/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* RFC 7386 on a jansson tree: the reference the merge patch is checked against. */
static json_t *apply_patch(json_t *target, const json_t *patch)
{
	const char *key;
	size_t klen;
	json_t *v;

	if (!json_is_object(patch)) {
		json_decref(target);
		return jx_deep_copy(patch);
	}
	if (!json_is_object(target)) {
		json_decref(target);
		target = json_object();
	}
	json_object_keylen_foreach((json_t *)patch, key, klen, v) {
		json_t *cur = json_object_getn(target, key, klen);

		if (json_is_null(v))
			json_object_deln(target, key, klen);
		else
			json_object_setn_new_nocheck(target, key, klen,
			                             apply_patch(json_incref(cur), v));
	}
	return target;
}

static void check_copy(const struct jdoc *d, const char *p, size_t size)
{
	json_t *j = jval_to_json(jdoc_root(d));
	json_t *ref = json_loadb(p, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	                         NULL);
	struct jdoc *e = NULL;

	if (j == NULL || !jval_equal_json(jdoc_root(d), j) || !jval_has_subset(jdoc_root(d), j))
		abort();
	if (ref && !json_equal(ref, j))
		abort();
	if (jdoc_from_json(j, NULL, &e, NULL) != 0 || !jval_equal_json(jdoc_root(e), j))
		abort();
	json_decref(ref);
	json_decref(j);
	jdoc_unref(e);
}

static void check_projection(const struct jdoc *d, const char *p, size_t size)
{
	static const char *const keep[] = {"metadata", "spec.a", "a.b.c", NULL};
	static const char *const drop[] = {"metadata.managedFields", "a.b.c.d", NULL};
	struct jdoc_opts o = {.keep = keep, .drop = drop};
	struct jdoc *proj = NULL;
	json_t *pj;

	if (jdoc_parse(p, size, &o, &proj, NULL) != 0)
		abort(); /* the whole document parsed */
	pj = jval_to_json(jdoc_root(proj));
	if (!jval_has_subset(jdoc_root(d), pj))
		abort();
	json_decref(pj);
	jdoc_unref(proj);
}

static void check_patch(const char *p, size_t size)
{
	const char *nl = memchr(p, '\n', size);
	struct jdoc *have = NULL, *want_doc = NULL;
	json_t *want, *patch, *got, *clean;

	if (nl == NULL || jdoc_parse(p, (size_t)(nl - p), NULL, &have, NULL) != 0)
		return;
	if (jdoc_parse(nl + 1, size - (size_t)(nl - p) - 1, NULL, &want_doc, NULL) != 0) {
		jdoc_unref(have);
		return;
	}
	want = jval_to_json(jdoc_root(want_doc));
	patch = jval_merge_patch(jdoc_root(have), want);
	got = apply_patch(jval_to_json(jdoc_root(have)), patch);
	clean = json_is_object(want) ? apply_patch(json_object(), want) : json_incref(want);
	if (!jx_equal(got, clean))
		abort();
	/* no patch: the cache holds the desired value (nulls in it meaning "absent") */
	if (json_object_size(patch) == 0 && json_is_object(want) &&
	    jval_type(jdoc_root(have)) == JT_OBJECT && !jval_has_subset(jdoc_root(have), clean))
		abort();
	json_decref(clean);
	json_decref(got);
	json_decref(patch);
	json_decref(want);
	jdoc_unref(want_doc);
	jdoc_unref(have);
}

struct items {
	const struct jdoc *whole;
	struct jval arr;
	size_t n;
};

static int check_item(void *ctx, struct jdoc *take_item)
{
	struct items *it = ctx;
	json_t *want = jval_to_json(jval_at(it->arr, it->n++));

	if (want == NULL || !jval_equal_json(jdoc_root(take_item), want))
		abort();
	json_decref(want);
	jdoc_unref(take_item);
	return 0;
}

/* Split at "items", a document hands over exactly its items' elements, and keeps the rest. */
static void check_split(const struct jdoc *d, const char *p, size_t size)
{
	struct items it = {.whole = d, .arr = jd_get(d, "items", NULL)};
	struct jdoc *rest = NULL;
	json_t *all, *rj;

	if (jval_type(jdoc_root(d)) != JT_OBJECT || jval_type(it.arr) != JT_ARRAY)
		return;
	if (jdoc_parse_items(p, size, "items", NULL, check_item, &it, &rest, NULL) != 0)
		abort();
	if (it.n != jval_size(it.arr))
		abort();
	all = jval_to_json(jdoc_root(d));
	json_object_del(all, "items");
	rj = jval_to_json(jdoc_root(rest));
	if (!jx_equal(all, rj))
		abort();
	json_decref(rj);
	json_decref(all);
	jdoc_unref(rest);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	struct jdoc *d = NULL;

	check_patch(p, size);
	if (jdoc_parse(p, size, NULL, &d, NULL) != 0)
		return 0;
	check_copy(d, p, size);
	check_projection(d, p, size);
	check_split(d, p, size);
	jdoc_unref(d);
	return 0;
}
