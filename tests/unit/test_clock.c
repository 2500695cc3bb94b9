/* Unit tests for the clock (lib/base/clock.c): UTC formats and monotonic deadlines. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/clock.h"

static void test_clock__utc_formats_seconds_millis_and_micros(void **state)
{
	char out[CLOCK_UTC_MAX];
	struct timespec epoch = {0, 0}, one_us = {1700000000, 1000}, last = {1700000000, 999999999};
	struct timespec padded = {946782245, 42000};

	assert_string_equal(clock_format_utc(&epoch, 6, out), "1970-01-01T00:00:00.000000Z");
	assert_string_equal(clock_format_utc(&one_us, 6, out), "2023-11-14T22:13:20.000001Z");
	/* Truncated, never rounded up into the next second. */
	assert_string_equal(clock_format_utc(&last, 6, out), "2023-11-14T22:13:20.999999Z");
	assert_string_equal(clock_format_utc(&last, 3, out), "2023-11-14T22:13:20.999Z");
	assert_string_equal(clock_format_utc(&last, 0, out), "2023-11-14T22:13:20Z");
	assert_string_equal(clock_format_utc(&padded, 6, out), "2000-01-02T03:04:05.000042Z");
}

static void test_clock__utc_ignores_an_out_of_range_fraction(void **state)
{
	char out[CLOCK_UTC_MAX];
	struct timespec bad = {0, -5};

	assert_string_equal(clock_format_utc(&bad, 3, out), "1970-01-01T00:00:00.000Z");
}

static void test_clock__monotonic_units_agree(void **state)
{
	int64_t ns = clock_mono_ns(), ms = clock_mono_ms(), ns2 = clock_mono_ns();

	assert_true(ns > 0);
	assert_true(ms >= ns / CLOCK_NS_PER_MS);
	assert_true(ms <= ns2 / CLOCK_NS_PER_MS);
}

static void test_clock__wait_until_a_past_deadline_times_out_at_once(void **state)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cond;

	clock_cond_init(&cond);
	pthread_mutex_lock(&mu);
	assert_int_equal(clock_cond_wait_until(&cond, &mu, clock_mono_ns() - 1), ETIMEDOUT);
	assert_int_equal(clock_cond_wait_until(&cond, &mu, 0), ETIMEDOUT);
	pthread_mutex_unlock(&mu);
	pthread_cond_destroy(&cond);
}

static void test_clock__wait_until_returns_after_its_deadline(void **state)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cond;
	int64_t deadline = clock_mono_ns() + 20 * CLOCK_NS_PER_MS;
	int rc = 0;

	clock_cond_init(&cond);
	pthread_mutex_lock(&mu);
	while (rc != ETIMEDOUT)
		rc = clock_cond_wait_until(&cond, &mu, deadline);
	pthread_mutex_unlock(&mu);
	assert_true(clock_mono_ns() >= deadline);
	pthread_cond_destroy(&cond);
}

static void test_clock__sleep_until_reaches_the_deadline(void **state)
{
	int64_t deadline = clock_mono_ns() + 5 * CLOCK_NS_PER_MS;

	clock_sleep_until(deadline);
	assert_true(clock_mono_ns() >= deadline);
	clock_sleep_until(0); /* in the past: returns */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_clock__utc_formats_seconds_millis_and_micros),
	        cmocka_unit_test(test_clock__utc_ignores_an_out_of_range_fraction),
	        cmocka_unit_test(test_clock__monotonic_units_agree),
	        cmocka_unit_test(test_clock__wait_until_a_past_deadline_times_out_at_once),
	        cmocka_unit_test(test_clock__wait_until_returns_after_its_deadline),
	        cmocka_unit_test(test_clock__sleep_until_reaches_the_deadline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
