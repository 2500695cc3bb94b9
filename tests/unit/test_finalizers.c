/*
 * test_finalizers.c - one finalizer added or removed by a guarded JSON patch: added to an
 * existing list (test of the resourceVersion, add at "-"), as a new list, removed at its
 * index (test of the entry), nothing when already as wanted; other entries never touched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/jdoc.h"
#include "kube/finalizers.h"

#define MINE "example.com/mine"

static json_t *patch_of(const char *obj_text, bool present, int *index)
{
	struct jdoc *d = NULL;
	json_t *out;

	assert_int_equal(jdoc_parse(obj_text, strlen(obj_text), NULL, &d, NULL), 0);
	*index = kc_finalizer_index(jdoc_root(d), MINE);
	out = kc_finalizer_patch(jdoc_root(d), MINE, present);
	jdoc_unref(d);
	return out;
}

static void assert_patch(json_t *have, const char *want_text)
{
	json_t *want = json_loads(want_text, 0, NULL);

	assert_non_null(want);
	if (!json_equal(have, want)) {
		char *h = json_dumps(have, JSON_COMPACT);

		fail_msg("have %s, want %s", h, want_text);
	}
	json_decref(want);
	json_decref(have);
}

static void test_added_to_a_list_or_as_one(void **state)
{
	int idx;

	(void)state;
	assert_patch(patch_of("{\"metadata\":{\"resourceVersion\":\"7\",\"finalizers\":[\"x\"]}}",
	                      true, &idx),
	             "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"7\"},"
	             "{\"op\":\"add\",\"path\":\"/metadata/finalizers/-\",\"value\":\"" MINE
	             "\"}]");
	assert_int_equal(idx, -1);
	assert_patch(patch_of("{\"metadata\":{\"resourceVersion\":\"8\"}}", true, &idx),
	             "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"8\"},"
	             "{\"op\":\"add\",\"path\":\"/metadata/finalizers\",\"value\":[\"" MINE
	             "\"]}]");
}

static void test_removed_at_its_index(void **state)
{
	int idx;

	(void)state;
	assert_patch(
	        patch_of("{\"metadata\":{\"finalizers\":[\"x\",\"" MINE "\",\"y\"]}}", false, &idx),
	        "[{\"op\":\"test\",\"path\":\"/metadata/finalizers/1\",\"value\":\"" MINE "\"},"
	        "{\"op\":\"remove\",\"path\":\"/metadata/finalizers/1\"}]");
	assert_int_equal(idx, 1);
}

static void test_nothing_when_already_so(void **state)
{
	int idx;

	(void)state;
	assert_null(patch_of("{\"metadata\":{\"finalizers\":[\"" MINE "\"]}}", true, &idx));
	assert_int_equal(idx, 0);
	assert_null(patch_of("{\"metadata\":{\"finalizers\":[\"x\"]}}", false, &idx));
	assert_null(patch_of("{\"metadata\":{}}", false, &idx));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_added_to_a_list_or_as_one),
	        cmocka_unit_test(test_removed_at_its_index),
	        cmocka_unit_test(test_nothing_when_already_so),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
