/*
 * test_nsreserve.c - reservation slots: which expire, and what a prune keeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tenancy/nsreserve.h"

static void test_nsreserve__slots_expire_after_the_ttl(void **state)
{
	(void)state;
	assert_false(nsr_expired("1000", 1000));
	assert_false(nsr_expired("1000", 1000 + RESERVATION_TTL_S - 1));
	assert_true(nsr_expired("1000", 1000 + RESERVATION_TTL_S));
	/* not a time, or one from far ahead (a forged or skewed clock): expired */
	assert_true(nsr_expired("", 1000));
	assert_true(nsr_expired("soon", 1000));
	assert_true(nsr_expired("-5", 1000));
	assert_true(nsr_expired("1000x", 1000));
	assert_true(nsr_expired("99999999999999999999999", 1000));
	assert_true(nsr_expired("2000", 1000));
	assert_true(nsr_expired(NULL, 1000));
}

static void test_nsreserve__prune_keeps_live_slots_and_the_earliest_expiry(void **state)
{
	json_t *data = json_pack("{s:s,s:s,s:s,s:i}", "a", "1000", "b", "1030", "c", "900", "d", 5);
	int64_t next = -1;
	json_t *live = nsr_prune(data, 1040, &next);

	(void)state;
	assert_int_equal(json_object_size(live), 2);
	assert_non_null(json_object_get(live, "a"));
	assert_non_null(json_object_get(live, "b"));
	assert_int_equal(next, 1000 + RESERVATION_TTL_S);
	json_decref(live);
	live = nsr_prune(data, 5000, &next);
	assert_int_equal(json_object_size(live), 0);
	assert_int_equal(next, 0);
	json_decref(live);
	live = nsr_prune(NULL, 5000, &next);
	assert_int_equal(json_object_size(live), 0);
	json_decref(live);
	json_decref(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_nsreserve__slots_expire_after_the_ttl),
	        cmocka_unit_test(test_nsreserve__prune_keeps_live_slots_and_the_earliest_expiry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
