/* Unit tests for the jansson helpers (lib/base/json.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/json.h"

static json_t *obj(const char *text)
{
	json_t *v = jx_loads(text, strlen(text), NULL);

	assert_non_null(v);
	return v;
}

static void test_json__path_getters_follow_keys_with_dots_and_slashes(void **state)
{
	json_t *o = obj("{\"metadata\":{\"name\":\"n\",\"namespace\":\"ns\",\"uid\":\"u\","
	                "\"resourceVersion\":\"7\",\"generation\":3,"
	                "\"labels\":{\"landlord.dev/tenant\":\"acme\"},"
	                "\"annotations\":{\"a.b/c\":\"d\"}},\"spec\":{\"on\":true,\"n\":5}}");

	assert_string_equal(jx_name(o), "n");
	assert_string_equal(jx_namespace(o), "ns");
	assert_string_equal(jx_uid(o), "u");
	assert_string_equal(jx_resource_version(o), "7");
	assert_int_equal(jx_generation(o), 3);
	assert_string_equal(jx_label(o, "landlord.dev/tenant"), "acme");
	assert_string_equal(jx_annotation(o, "a.b/c"), "d");
	assert_true(jx_bool(o, 0, "spec", "on", NULL));
	assert_false(jx_bool(o, 0, "spec", "missing", NULL));
	assert_int_equal(jx_int(o, -1, "spec", "n", NULL), 5);
	assert_int_equal(jx_int(o, -1, "spec", "on", NULL), -1);
	assert_null(jx_str(o, "spec", "n", NULL));
	assert_null(jx_get(o, "metadata", "name", "deeper", NULL));
	assert_null(jx_label(NULL, "x"));
	json_decref(o);
}

static void test_json__object_key_is_ns_slash_name_or_name(void **state)
{
	json_t *a = obj("{\"metadata\":{\"name\":\"n\",\"namespace\":\"ns\"}}");
	json_t *b = obj("{\"metadata\":{\"name\":\"cluster-wide\"}}");
	json_t *c = obj("{\"metadata\":{}}");
	char *ka = jx_object_key(a), *kb = jx_object_key(b);

	assert_string_equal(ka, "ns/n");
	assert_string_equal(kb, "cluster-wide");
	assert_null(jx_object_key(c));
	free(ka);
	free(kb);
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

static void test_json__loads_rejects_duplicates_and_reports_position(void **state)
{
	struct ll_err err = {{0}};
	const char *dup = "{\"a\":1,\"a\":2}";

	assert_null(jx_loads(dup, strlen(dup), &err));
	assert_non_null(strstr(err.msg, "line 1"));
	assert_null(jx_loads("{", 1, &err));
	assert_non_null(strstr(err.msg, "invalid JSON"));
}

static void test_json__equal_subset_ignores_extra_fields_only(void **state)
{
	json_t *have = obj("{\"a\":1,\"b\":{\"c\":[1,2],\"d\":\"x\"},\"e\":null}");
	json_t *want_same = obj("{\"b\":{\"c\":[1,2]}}");
	json_t *want_diff = obj("{\"b\":{\"c\":[2,1]}}");
	json_t *want_missing = obj("{\"z\":1}");
	json_t *want_null = obj("{\"e\":null}");

	assert_true(jx_equal_subset(want_same, have));
	assert_false(jx_equal_subset(want_diff, have));
	assert_false(jx_equal_subset(want_missing, have));
	assert_true(jx_equal_subset(want_null, have));
	assert_false(jx_equal_subset(want_same, NULL));
	json_decref(have);
	/* list items are compared as subsets too, but a list must keep its length */
	have = obj("{\"items\":[{\"type\":\"Container\",\"max\":{\"cpu\":\"1\"},"
	           "\"default\":{\"cpu\":\"1\"}}]}");
	json_decref(want_same);
	want_same = obj("{\"items\":[{\"type\":\"Container\",\"max\":{\"cpu\":\"1\"}}]}");
	assert_true(jx_equal_subset(want_same, have));
	json_decref(want_diff);
	want_diff = obj("{\"items\":[{\"type\":\"Container\"},{\"type\":\"Pod\"}]}");
	assert_false(jx_equal_subset(want_diff, have));
	json_decref(have);
	json_decref(want_same);
	json_decref(want_diff);
	json_decref(want_missing);
	json_decref(want_null);
}

static void test_json__dumps_is_compact(void **state)
{
	json_t *o = obj("{ \"a\" : [ 1 , 2 ] }");
	char *s = jx_dumps(o);

	assert_string_equal(s, "{\"a\":[1,2]}");
	free(s);
	json_decref(o);
}

/* Keys with NUL bytes (JSON "\u0000") survive a copy whole and count in comparisons. */
static void test_json__copy_and_equal_keep_keys_with_nul_bytes(void **state)
{
	json_t *a = json_object(), *b = json_object(), *copy;

	(void)state;
	json_object_setn_new_nocheck(a, "pa\0xy", 5, json_pack("{s:[i]}", "n", 1));
	json_object_setn_new_nocheck(b, "pa\0zz", 5, json_pack("{s:[i]}", "n", 1));
	copy = jx_deep_copy(a);
	assert_non_null(json_object_getn(copy, "pa\0xy", 5));
	assert_null(json_object_getn(copy, "pa", 2));
	assert_true(jx_equal(a, copy));
	assert_false(jx_equal(a, b));
	json_array_append_new(json_object_get(json_object_getn(copy, "pa\0xy", 5), "n"),
	                      json_integer(2));
	assert_false(jx_equal(a, copy));
	assert_true(jx_equal(NULL, NULL));
	assert_false(jx_equal(a, NULL));
	json_decref(copy);
	json_decref(b);
	json_decref(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_json__path_getters_follow_keys_with_dots_and_slashes),
	        cmocka_unit_test(test_json__object_key_is_ns_slash_name_or_name),
	        cmocka_unit_test(test_json__loads_rejects_duplicates_and_reports_position),
	        cmocka_unit_test(test_json__equal_subset_ignores_extra_fields_only),
	        cmocka_unit_test(test_json__dumps_is_compact),
	        cmocka_unit_test(test_json__copy_and_equal_keep_keys_with_nul_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
