/*
 * test_convert_golden.c - the declarative conversion cases of the tenant proxy
 * (src/proxy/convert.h): each folder of tests/unit/golden/convert/ holds
 *   case.json  {"tenant": "acme", "namespaces": [upstream names labelled with the tenant],
 *               "dir": "user" | "upstream", "resource": "pods" (optional)};
 *   in.json    the body as it arrives;
 *   want.json  the body converted, or {"error": "foreign" | "invalid" | "too-long",
 *              "field": "..."} when it must be refused.
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

#include <cmocka.h>

#include "proxy/convert.h"
#include "proxy/nsmap.h"

static json_t *load(const char *dir, const char *name)
{
	char path[1024];
	json_error_t e;
	json_t *v;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	v = json_load_file(path, 0, &e);
	if (v == NULL)
		fail_msg("%s: %s (line %d)", path, e.text, e.line);
	return v;
}

static struct px_nsmap *map_of(const json_t *c)
{
	const json_t *list = json_object_get(c, "namespaces");
	const char *names[64];
	size_t n = json_array_size(list);

	assert_true(n <= 64);
	for (size_t i = 0; i < n; i++)
		names[i] = json_string_value(json_array_get(list, i));
	return px_nsmap_new(json_string_value(json_object_get(c, "tenant")), names, n);
}

static json_t *outcome(enum px_conv_result r, const struct px_conv *conv, json_t *body)
{
	static const char *const names[] = {"ok", "foreign", "invalid", "too-long"};

	if (r == PX_CONV_OK)
		return json_incref(body);
	return json_pack("{s:s, s:s}", "error", names[-r], "field", conv->field);
}

static void run_case(const char *dir)
{
	json_t *c = load(dir, "case.json"), *in = load(dir, "in.json"), *got, *want;
	struct px_nsmap *map = map_of(c);
	const char *dirn = json_string_value(json_object_get(c, "dir"));
	struct px_conv conv = {
	        .map = map,
	        .dir = dirn && strcmp(dirn, "upstream") == 0 ? PX_TO_UPSTREAM : PX_TO_USER,
	        .resource = json_string_value(json_object_get(c, "resource")),
	};
	char path[1024];

	got = outcome(px_convert(&conv, in), &conv, in);
	if ((size_t)snprintf(path, sizeof(path), "%s/want.json", dir) >= sizeof(path))
		fail_msg("%s: path too long", dir);
	if (getenv("LANDLORD_GOLDEN_UPDATE")) {
		json_dump_file(got, path, JSON_INDENT(2) | JSON_SORT_KEYS);
	} else {
		want = load(dir, "want.json");
		if (!json_equal(want, got)) {
			char *s = json_dumps(got, JSON_SORT_KEYS);

			fail_msg("%s: got %s", dir, s);
		}
		json_decref(want);
	}
	json_decref(got);
	json_decref(in);
	json_decref(c);
	px_nsmap_free(map);
}

static void test_golden(void **state)
{
	const char *root = getenv("LANDLORD_TEST_GOLDEN");
	char dir[512];
	struct dirent *e;
	DIR *d;
	int n = 0;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/convert", root ? root : "tests/unit/golden");
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char sub[1024];

		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		run_case(sub);
		n++;
	}
	closedir(d);
	assert_true(n >= 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_golden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
