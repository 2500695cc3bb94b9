/*
 * fuzz_apifilter.c - what the tenant proxy shows of the API (src/proxy/apifilter.h), on
 * arbitrary documents. The first byte picks the options (bit 0: nodes read-only; bit 1:
 * gateway.networking.k8s.io shared; bit 2: example.com shared; bits 3-5: the /openapi/v3
 * path), the rest is the document, given to every filter. Checked:
 *  - a filter that accepts a document accepts its own output and leaves it as it is;
 *  - a filtered OpenAPI document holds no "$ref" to an entry it does not have;
 *  - filtered discovery names no group, and lists no resource, a tenant does not see;
 *  - px_negotiate() on the same bytes as an Accept header picks the aggregated form only
 *    where there is one, and plain JSON the same way whether there is or not.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "proxy/apifilter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const v3_paths[] = {
        "api/v1",
        "apis/apps/v1",
        "apis/example.com/v1",
        "apis/gateway.networking.k8s.io/v1",
        "apis",
        "version",
        "apis/apiextensions.k8s.io/v1",
        "logs",
};

typedef enum px_filter_result (*filter_fn)(const struct px_apifilter *f, const char *path,
                                           json_t *doc);

static enum px_filter_result discovery(const struct px_apifilter *f, const char *path, json_t *doc)
{
	(void)path;
	return px_filter_discovery(f, doc);
}

static enum px_filter_result v2(const struct px_apifilter *f, const char *path, json_t *doc)
{
	(void)path;
	return px_filter_openapi_v2(f, doc);
}

static enum px_filter_result v3_index(const struct px_apifilter *f, const char *path, json_t *doc)
{
	(void)path;
	return px_filter_openapi_v3_index(f, doc);
}

/* An entry "#/<at...>/<key>" of @doc, decoded as a JSON pointer in a URI fragment. */
static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static size_t decode(const char *s, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
			out[o++] = (char)(hex(s[i + 1]) * 16 + hex(s[i + 2]));
			i += 2;
		} else if (s[i] == '~' && i + 1 < n && (s[i + 1] == '0' || s[i + 1] == '1')) {
			out[o++] = s[++i] == '0' ? '~' : '/';
		} else {
			out[o++] = s[i];
		}
	}
	return o;
}

/* Whether "$ref" @ref (@n bytes) names an entry present in @doc (one or two keys deep). */
static int ref_resolves(const json_t *doc, const char *ref, size_t n, int depth)
{
	const json_t *at = doc;
	size_t i = 1;
	char *seg = malloc(n + 1);

	if (n < 2 || ref[0] != '#' || ref[1] != '/') {
		free(seg);
		return 0;
	}
	for (int d = 0; d <= depth && at && i < n; d++) {
		size_t start = i + 1, end = start;

		while (end < n && ref[end] != '/')
			end++;
		at = json_object_getn(at, seg, decode(ref + start, end - start, seg));
		i = end;
	}
	free(seg);
	return at != NULL;
}

static void check_refs(const json_t *doc, const json_t *v, int v3)
{
	const char *key;
	size_t klen, i;
	json_t *m;

	if (json_is_array(v)) {
		json_array_foreach(v, i, m) {
			check_refs(doc, m, v3);
		}
		return;
	}
	json_object_keylen_foreach((json_t *)v, key, klen, m) {
		if (klen == 4 && memcmp(key, "$ref", 4) == 0 && json_is_string(m)) {
			if (!ref_resolves(doc, json_string_value(m), json_string_length(m),
			                  v3 ? 2 : 1))
				abort();
		} else {
			check_refs(doc, m, v3);
		}
	}
}

static void check_discovery(const struct px_apifilter *f, const json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	size_t i;
	json_t *v;

	if (kind && strcmp(kind, "APIGroupList") == 0) {
		json_array_foreach(json_object_get(doc, "groups"), i, v) {
			if (!px_group_visible(f, json_string_value(json_object_get(v, "name"))))
				abort();
		}
	} else if (kind && strcmp(kind, "APIGroupDiscoveryList") == 0) {
		json_array_foreach(json_object_get(doc, "items"), i, v) {
			const json_t *name =
			        json_object_get(json_object_get(v, "metadata"), "name");

			if (!px_group_visible(f, name ? json_string_value(name) : ""))
				abort();
		}
	}
}

static void run(const struct px_apifilter *f, filter_fn fn, const char *path, const json_t *in,
                int kind)
{
	json_t *once = jx_deep_copy(in), *twice;
	enum px_filter_result r = fn(f, path, once);

	if (r != PX_FILTER_OK) {
		json_decref(once);
		return;
	}
	twice = jx_deep_copy(once);
	if (fn(f, path, twice) != PX_FILTER_OK || !jx_equal(once, twice))
		abort();
	if (kind == 0)
		check_discovery(f, once);
	else if (kind != 2)
		check_refs(once, once, kind == 3);
	json_decref(twice);
	json_decref(once);
}

static void negotiate(const uint8_t *data, size_t size)
{
	char *accept = malloc(size + 1);
	enum px_form plain, agg;

	memcpy(accept, data, size);
	accept[size] = '\0';
	plain = px_negotiate(accept, false);
	agg = px_negotiate(accept, true);
	if (plain == PX_FORM_AGGREGATED || (plain == PX_FORM_NONE && agg == PX_FORM_JSON) ||
	    (plain == PX_FORM_JSON && agg == PX_FORM_NONE))
		abort();
	(void)px_openapi_v3_path_visible(&(struct px_apifilter){0}, accept);
	free(accept);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *shared[2];
	struct px_apifilter f = {.shared_groups = shared};
	const char *path;
	json_t *doc;

	if (size < 1)
		return 0;
	f.nodes_readonly = data[0] & 1;
	if (data[0] & 2)
		shared[f.n_shared_groups++] = "gateway.networking.k8s.io";
	if (data[0] & 4)
		shared[f.n_shared_groups++] = "example.com";
	path = v3_paths[(data[0] >> 3) & 7];
	negotiate(data + 1, size - 1);
	doc = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!doc)
		return 0;
	run(&f, discovery, NULL, doc, 0);
	run(&f, v2, NULL, doc, 1);
	run(&f, v3_index, NULL, doc, 2);
	run(&f, px_filter_openapi_v3, path, doc, 3);
	json_decref(doc);
	return 0;
}
