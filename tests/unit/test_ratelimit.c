/* test_ratelimit.c - token bucket and monotonic clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/ratelimit.h"

#define MS 1000000LL

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * MS};

	nanosleep(&ts, NULL);
}

static void test_ratelimit__mono_ns_advances(void **state)
{
	int64_t a = clock_mono_ns(), b;

	sleep_ms(20);
	b = clock_mono_ns();
	assert_true(a > 0);
	assert_true(b - a >= 20 * MS);
	assert_true(b - a < 5000 * MS);
}

/* qps 100 means one token per 10 ms: after the burst, each reservation waits ~10 ms longer. */
static void test_ratelimit__burst_is_immediate_then_spaced(void **state)
{
	struct tbucket tb;
	int64_t w6, w7, w8;
	int i;

	tbucket_init(&tb, 100, 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(tbucket_reserve(&tb), 0);
	w6 = tbucket_reserve(&tb);
	w7 = tbucket_reserve(&tb);
	w8 = tbucket_reserve(&tb);
	/* Reservations queue up: the n-th one past the burst waits at most n * 10 ms ... */
	assert_true(w6 > 0 && w6 <= 10 * MS + 1);
	assert_true(w7 - w6 <= 10 * MS + 1);
	assert_true(w8 - w7 <= 10 * MS + 1);
	/* ... and, unless this loop stalled for 20 ms, close to it. */
	assert_true(w8 >= 10 * MS);
	tbucket_release(&tb);
}

static void test_ratelimit__refill_is_capped_at_burst(void **state)
{
	struct tbucket tb;

	tbucket_init(&tb, 1000, 2);
	assert_int_equal(tbucket_reserve(&tb), 0);
	assert_int_equal(tbucket_reserve(&tb), 0);
	assert_true(tbucket_reserve(&tb) > 0);
	sleep_ms(50); /* 50 tokens' worth of time, but only 2 fit */
	assert_int_equal(tbucket_reserve(&tb), 0);
	assert_int_equal(tbucket_reserve(&tb), 0);
	assert_true(tbucket_reserve(&tb) > 0);
	tbucket_release(&tb);
}

static void test_ratelimit__wait_sleeps_for_the_reservation(void **state)
{
	struct tbucket tb;
	int64_t t0;
	int i;

	tbucket_init(&tb, 200, 1);
	t0 = clock_mono_ns();
	for (i = 0; i < 11; i++)
		tbucket_wait(&tb);
	/* 1 immediate + 10 at 5 ms each. */
	assert_true(clock_mono_ns() - t0 >= 50 * MS);
	assert_true(clock_mono_ns() - t0 < 5000 * MS);
	tbucket_release(&tb);
}

static void test_ratelimit__nonpositive_qps_disables(void **state)
{
	struct tbucket tb;
	int64_t t0 = clock_mono_ns();
	int i;

	tbucket_init(&tb, 0, 1);
	for (i = 0; i < 1000; i++)
		assert_int_equal(tbucket_reserve(&tb), 0);
	tbucket_release(&tb);

	tbucket_init(&tb, -1, 0);
	for (i = 0; i < 1000; i++)
		tbucket_wait(&tb);
	assert_int_equal(tbucket_reserve(&tb), 0);
	tbucket_release(&tb);
	assert_true(clock_mono_ns() - t0 < 5000 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_ratelimit__mono_ns_advances),
	        cmocka_unit_test(test_ratelimit__burst_is_immediate_then_spaced),
	        cmocka_unit_test(test_ratelimit__refill_is_capped_at_burst),
	        cmocka_unit_test(test_ratelimit__wait_sleeps_for_the_reservation),
	        cmocka_unit_test(test_ratelimit__nonpositive_qps_disables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
