/*
 * test_apifilter_golden.c - the declarative cases of what the tenant proxy shows of the API
 * (src/proxy/apifilter.h): each folder of tests/unit/golden/apifilter/ holds
 *   case.json  {"filter": "discovery" | "openapi-v2" | "openapi-v3-index" | "openapi-v3" |
 *               "negotiate" | "visibility" | "openapi-v3-paths" | "class-allowed",
 *               "path": the /openapi/v3/<path> ("openapi-v3"),
 *               "sharedGroups": [...], "nodesReadOnly": bool (struct px_apifilter),
 *               "input": another case whose in.json this one reads instead of its own,
 *               "absent": [texts the output must not contain anywhere]};
 *   in.json    the document as upstream sends it, or the rows a table case asks about;
 *   want.json  the document filtered, or {"result": "not-found" | "invalid"}; for a table
 *              case, its rows with the answer added.
 * On top of want.json, every filtered OpenAPI document is checked to hold no "$ref" that does
 * not resolve inside it.
 *
 * The documents are real: the answers of the test control plane (tests/cluster, Kubernetes
 * v1.33.13 with --runtime-config=api/all=true, landlord's CRDs, the Gateway API's
 * gatewayclasses, gateways and httproutes, and a made-up namespaced widgets.example.com),
 * trimmed to stay small: a subset of the paths or groups, "description" removed, CRD schemas
 * cut below their top-level properties, definitions closed over "$ref" as upstream's are.
 * Adding a case needs no C. LANDLORD_GOLDEN_UPDATE=1 rewrites every want.json with what the
 * code gives (then read the diff: that is the review).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proxy/apifilter.h"

#define SHARED_MAX 16

static json_t *load(const char *dir, const char *name)
{
	char path[1024];
	json_error_t e;
	json_t *v;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	v = json_load_file(path, JSON_DECODE_ANY, &e);
	if (v == NULL)
		fail_msg("%s: %s (line %d)", path, e.text, e.line);
	return v;
}

struct opts {
	struct px_apifilter f;
	const char *shared[SHARED_MAX];
};

static void opts_of(const json_t *c, struct opts *o)
{
	const json_t *list = json_object_get(c, "sharedGroups");
	size_t i;
	const json_t *g;

	memset(o, 0, sizeof(*o));
	assert_true(json_array_size(list) <= SHARED_MAX);
	json_array_foreach(list, i, g) {
		o->shared[i] = json_string_value(g);
	}
	o->f.shared_groups = o->shared;
	o->f.n_shared_groups = json_array_size(list);
	o->f.nodes_readonly = json_is_true(json_object_get(c, "nodesReadOnly"));
}

static const char *const results[] = {"ok", "not-found", "invalid"};

static const char *form_name(enum px_form form)
{
	return form == PX_FORM_AGGREGATED ? "aggregated" : form == PX_FORM_JSON ? "json" : "406";
}

static const char *visibility_name(enum px_visibility v)
{
	static const char *const names[] = {"hidden", "shown", "read-only", "create-only",
	                                    "forbidden"};

	return names[v];
}

/* Each row of @in with @key set to what the code answers for it. */
static json_t *negotiate_rows(json_t *in)
{
	size_t i;
	json_t *row;

	json_array_foreach(in, i, row) {
		enum px_form form =
		        px_negotiate(json_string_value(json_object_get(row, "accept")),
		                     json_is_true(json_object_get(row, "aggregatable")));

		json_object_set_new(row, "form", json_string(form_name(form)));
	}
	return json_incref(in);
}

static json_t *visibility_rows(const struct px_apifilter *f, json_t *in)
{
	size_t i;
	json_t *row;

	json_array_foreach(in, i, row) {
		enum px_visibility v =
		        px_resource_visibility(f, json_string_value(json_object_get(row, "group")),
		                               json_string_value(json_object_get(row, "resource")),
		                               json_string_value(json_object_get(row, "sub")),
		                               json_is_true(json_object_get(row, "namespaced")));

		json_object_set_new(row, "visibility", json_string(visibility_name(v)));
	}
	return json_incref(in);
}

static json_t *v3_path_rows(const struct px_apifilter *f, const json_t *in)
{
	json_t *out = json_object();
	size_t i;
	const json_t *p;

	json_array_foreach(in, i, p) {
		json_object_set_new(
		        out, json_string_value(p),
		        json_boolean(px_openapi_v3_path_visible(f, json_string_value(p))));
	}
	return out;
}

static json_t *class_rows(const json_t *in)
{
	const json_t *allowed = json_object_get(in, "allowed");
	json_t *checks = json_object_get(in, "checks");
	size_t i;
	json_t *row;

	json_array_foreach(checks, i, row) {
		const char *g = json_string_value(json_object_get(row, "group"));
		const char *r = json_string_value(json_object_get(row, "resource"));
		const char *list = px_class_allowed_list(g, r);

		json_object_set_new(row, "list", list ? json_string(list) : json_null());
		json_object_set_new(
		        row, "allowed",
		        json_boolean(px_class_allowed(
		                allowed, g, r, json_string_value(json_object_get(row, "name")))));
	}
	return json_incref(checks);
}

static json_t *outcome(enum px_filter_result r, json_t *doc)
{
	if (r == PX_FILTER_OK)
		return json_incref(doc);
	return json_pack("{s:s}", "result", results[-r]);
}

/* What the case's filter makes of @in (a new reference). */
static json_t *run_filter(const json_t *c, const struct px_apifilter *f, json_t *in)
{
	const char *filter = json_string_value(json_object_get(c, "filter"));
	const char *path = json_string_value(json_object_get(c, "path"));

	assert_non_null(filter);
	if (strcmp(filter, "discovery") == 0)
		return outcome(px_filter_discovery(f, in), in);
	if (strcmp(filter, "openapi-v2") == 0)
		return outcome(px_filter_openapi_v2(f, in), in);
	if (strcmp(filter, "openapi-v3-index") == 0)
		return outcome(px_filter_openapi_v3_index(f, in), in);
	if (strcmp(filter, "openapi-v3") == 0)
		return outcome(px_filter_openapi_v3(f, path, in), in);
	if (strcmp(filter, "negotiate") == 0)
		return negotiate_rows(in);
	if (strcmp(filter, "visibility") == 0)
		return visibility_rows(f, in);
	if (strcmp(filter, "openapi-v3-paths") == 0)
		return v3_path_rows(f, in);
	if (strcmp(filter, "class-allowed") == 0)
		return class_rows(in);
	fail_msg("unknown filter %s", filter);
	return NULL;
}

/* ---------- every "$ref" resolves ---------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One pointer segment, percent- then ~-decoded, into @out. */
static void pointer_segment(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < size; i++) {
		if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			out[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else if (s[i] == '~' && i + 1 < n && (s[i + 1] == '0' || s[i + 1] == '1')) {
			out[o++] = s[i + 1] == '0' ? '~' : '/';
			i++;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
}

static bool resolves(const json_t *doc, const char *ref)
{
	const json_t *at = doc;
	const char *p;

	if (strncmp(ref, "#/", 2) != 0)
		return false;
	p = ref + 1;
	while (*p == '/' && at) {
		const char *next = strchr(p + 1, '/');
		size_t n = next ? (size_t)(next - p - 1) : strlen(p + 1);
		char seg[512];

		pointer_segment(p + 1, n, seg, sizeof(seg));
		at = json_object_get(at, seg);
		p += n + 1;
	}
	return at != NULL;
}

static void check_refs(const char *dir, const json_t *doc, const json_t *v)
{
	const char *key;
	size_t i;
	json_t *m;

	if (json_is_array(v)) {
		json_array_foreach(v, i, m) {
			check_refs(dir, doc, m);
		}
		return;
	}
	json_object_foreach((json_t *)v, key, m) {
		if (strcmp(key, "$ref") == 0 && json_is_string(m) &&
		    !resolves(doc, json_string_value(m)))
			fail_msg("%s: dangling $ref %s", dir, json_string_value(m));
		check_refs(dir, doc, m);
	}
}

static void check_absent(const char *dir, const json_t *c, const json_t *got)
{
	char *text = json_dumps(got, JSON_ENCODE_ANY);
	size_t i;
	const json_t *s;

	json_array_foreach(json_object_get(c, "absent"), i, s) {
		if (strstr(text, json_string_value(s)))
			fail_msg("%s: the output holds %s", dir, json_string_value(s));
	}
	free(text);
}

static json_t *input_of(const char *dir, const json_t *c)
{
	const char *other = json_string_value(json_object_get(c, "input"));
	char path[1024];

	if (!other)
		return load(dir, "in.json");
	if ((size_t)snprintf(path, sizeof(path), "%s/../%s", dir, other) >= sizeof(path))
		fail_msg("%s: path too long", dir);
	return load(path, "in.json");
}

static void run_case(const char *dir)
{
	json_t *c = load(dir, "case.json"), *in = input_of(dir, c), *got, *want;
	const char *filter = json_string_value(json_object_get(c, "filter"));
	struct opts o;
	char path[1024];

	opts_of(c, &o);
	got = run_filter(c, &o.f, in);
	check_absent(dir, c, got);
	if (strncmp(filter, "openapi-v", 9) == 0)
		check_refs(dir, got, got);
	if ((size_t)snprintf(path, sizeof(path), "%s/want.json", dir) >= sizeof(path))
		fail_msg("%s: path too long", dir);
	if (getenv("LANDLORD_GOLDEN_UPDATE")) {
		json_dump_file(got, path, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	} else {
		want = load(dir, "want.json");
		if (!json_equal(want, got)) {
			char *s = json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY);

			fail_msg("%s: got %s", dir, s);
		}
		json_decref(want);
	}
	json_decref(got);
	json_decref(in);
	json_decref(c);
}

static void test_apifilter__golden(void **state)
{
	const char *root = getenv("LANDLORD_TEST_GOLDEN");
	char dir[512];
	struct dirent *e;
	DIR *d;
	int n = 0;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/apifilter", root ? root : "tests/unit/golden");
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char sub[1024], c[1100];

		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		snprintf(c, sizeof(c), "%s/case.json", sub);
		if (e->d_name[0] == '.' || access(c, R_OK) != 0)
			continue;
		run_case(sub);
		n++;
	}
	closedir(d);
	assert_true(n >= 40);
}

/* The table's own promises, which no document shows. */
static void test_apifilter__groups(void **state)
{
	const struct px_apifilter none = {0};
	const char *const shared[] = {"landlord.dev", NULL};
	const struct px_apifilter some = {.shared_groups = shared, .n_shared_groups = 2};

	(void)state;
	assert_true(px_group_builtin(""));
	assert_true(px_group_builtin("storagemigration.k8s.io"));
	assert_false(px_group_builtin("landlord.dev"));
	assert_false(px_group_builtin(NULL));
	assert_true(px_group_visible(&none, ""));
	assert_false(px_group_visible(&none, "apiextensions.k8s.io"));
	assert_false(px_group_visible(&none, "landlord.dev"));
	assert_true(px_group_visible(&some, "landlord.dev"));
	assert_true(px_group_visible(&some, "")); /* a NULL entry is skipped */
	assert_false(px_group_visible(&some, "example.com"));
	assert_false(px_group_visible(&none, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_apifilter__golden),
	        cmocka_unit_test(test_apifilter__groups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
