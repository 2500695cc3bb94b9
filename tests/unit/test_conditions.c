/* test_conditions.c - condition lists (lib/kube/conditions.c): replace by type, keep the
 * transition time while the status stays, stamp observedGeneration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "kube/conditions.h"

static const char *field(const json_t *conds, size_t i, const char *key)
{
	return jx_str(json_array_get(conds, i), key, NULL);
}

static json_t *one(const char *type, const char *status, const char *since)
{
	return json_pack("[{s:s,s:s,s:s,s:s,s:s,s:i}]", "type", type, "status", status, "reason",
	                 "Old", "message", "old", "lastTransitionTime", since, "observedGeneration",
	                 1);
}

static void test_conditions__new_type_is_appended_with_now(void **state)
{
	json_t *cur = one("Ready", "True", "2000-01-01T00:00:00Z");
	json_t *out = cond_set(cur, "Synced", "False", "Waiting", "not yet", 7);

	(void)state;
	assert_int_equal(json_array_size(out), 2);
	assert_string_equal(field(out, 0, "type"), "Ready");
	assert_string_equal(field(out, 1, "type"), "Synced");
	assert_string_equal(field(out, 1, "status"), "False");
	assert_string_equal(field(out, 1, "reason"), "Waiting");
	assert_string_equal(field(out, 1, "message"), "not yet");
	assert_int_equal(jx_int(json_array_get(out, 1), 0, "observedGeneration", NULL), 7);
	assert_string_not_equal(field(out, 1, "lastTransitionTime"), "2000-01-01T00:00:00Z");
	assert_int_equal(strlen(field(out, 1, "lastTransitionTime")), 20); /* RFC 3339, seconds */
	json_decref(cur);
	json_decref(out);
}

static void test_conditions__same_status_keeps_the_transition_time(void **state)
{
	json_t *cur = one("Ready", "True", "2000-01-01T00:00:00Z");
	json_t *out = cond_set(cur, "Ready", "True", "StillFine", "new message", 3);

	(void)state;
	assert_int_equal(json_array_size(out), 1);
	assert_string_equal(field(out, 0, "lastTransitionTime"), "2000-01-01T00:00:00Z");
	assert_string_equal(field(out, 0, "reason"), "StillFine");
	assert_string_equal(field(out, 0, "message"), "new message");
	assert_int_equal(jx_int(json_array_get(out, 0), 0, "observedGeneration", NULL), 3);
	json_decref(cur);
	json_decref(out);
}

static void test_conditions__a_changed_status_moves_the_transition_time(void **state)
{
	json_t *cur = one("Ready", "True", "2000-01-01T00:00:00Z");
	json_t *out = cond_set(cur, "Ready", "False", "Broken", "why", 2);

	(void)state;
	assert_int_equal(json_array_size(out), 1);
	assert_string_equal(field(out, 0, "status"), "False");
	assert_string_not_equal(field(out, 0, "lastTransitionTime"), "2000-01-01T00:00:00Z");
	json_decref(cur);
	json_decref(out);
}

static void test_conditions__input_is_never_modified(void **state)
{
	json_t *cur = one("Ready", "True", "2000-01-01T00:00:00Z");
	json_t *copy = json_deep_copy(cur);
	json_t *out = cond_set(cur, "Ready", "False", "Broken", "why", 2);

	(void)state;
	assert_true(json_equal(cur, copy));
	json_decref(out);
	out = cond_set(NULL, "Ready", "True", "Fine", "ok", 1); /* no conditions yet */
	assert_int_equal(json_array_size(out), 1);
	json_decref(out);
	json_decref(cur);
	json_decref(copy);
}

static void test_conditions__find_by_type(void **state)
{
	json_t *conds = json_pack("[{s:s,s:s},{s:i},{s:s,s:s}]", "type", "Ready", "status", "True",
	                          "type", 3, "type", "QuotaReady", "status", "False");

	(void)state;
	assert_string_equal(jx_str(cond_find(conds, "QuotaReady"), "status", NULL), "False");
	assert_string_equal(jx_str(cond_find(conds, "Ready"), "status", NULL), "True");
	assert_null(cond_find(conds, "AccessReady"));
	assert_null(cond_find(NULL, "Ready"));
	json_decref(conds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_conditions__new_type_is_appended_with_now),
	        cmocka_unit_test(test_conditions__same_status_keeps_the_transition_time),
	        cmocka_unit_test(test_conditions__a_changed_status_moves_the_transition_time),
	        cmocka_unit_test(test_conditions__input_is_never_modified),
	        cmocka_unit_test(test_conditions__find_by_type),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
