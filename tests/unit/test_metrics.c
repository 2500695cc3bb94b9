/* test_metrics.c - the Prometheus registry and its text exposition. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/metrics.h"

static char *render(void)
{
	struct buf b = BUF_INIT(BUF_MAX_INTERNAL);

	assert_int_equal(metrics_render(&b), 0);
	return buf_detach(&b);
}

static void assert_rendered(const char *want)
{
	char *got = render();

	assert_string_equal(got, want);
	free(got);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static int teardown(void **state)
{
	metrics_reset_for_tests();
	return 0;
}

static void test_metrics__counter_renders_integer_without_exponent(void **state)
{
	metrics_describe("jobs_total", METRIC_COUNTER, "Jobs done.", NULL, 0);
	metrics_add("jobs_total", NULL, 1);
	metrics_add("jobs_total", "", 2);
	metrics_add("big_total", NULL, 1e17);
	assert_rendered("# HELP jobs_total Jobs done.\n"
	                "# TYPE jobs_total counter\n"
	                "jobs_total 3\n"
	                "# TYPE big_total counter\n"
	                "big_total 100000000000000000\n");
	assert_true(metrics_get("jobs_total", NULL) == 3);
}

static void test_metrics__counter_ignores_negative_add_and_set(void **state)
{
	metrics_describe("c_total", METRIC_COUNTER, "C.", NULL, 0);
	metrics_add("c_total", "k=\"v\"", 5);
	metrics_add("c_total", "k=\"v\"", -1);
	metrics_set("c_total", "k=\"v\"", 1);
	assert_true(metrics_get("c_total", "k=\"v\"") == 5);
}

static void test_metrics__gauge_set_add_and_fractions(void **state)
{
	metrics_describe("temp", METRIC_GAUGE, "Temperature.", NULL, 0);
	metrics_set("temp", "room=\"a\"", 0.5);
	metrics_add("temp", "room=\"a\"", 0.25);
	metrics_set("temp", "room=\"b\"", 0.1);
	metrics_set("temp", "room=\"c\"", -2);
	metrics_add("temp", "room=\"c\"", -1);
	assert_rendered("# HELP temp Temperature.\n"
	                "# TYPE temp gauge\n"
	                "temp{room=\"a\"} 0.75\n"
	                "temp{room=\"b\"} 0.1\n"
	                "temp{room=\"c\"} -3\n");
	assert_true(metrics_get("temp", "room=\"c\"") == -3);
	assert_true(metrics_get("temp", "room=\"zz\"") == 0);
	assert_true(metrics_get("absent", NULL) == 0);
}

static void test_metrics__histogram_buckets_sum_count_exact(void **state)
{
	static const double bounds[] = {0.1, 1, 5};

	metrics_describe("lat_seconds", METRIC_HISTOGRAM, "Latency.", bounds, 3);
	metrics_observe("lat_seconds", "path=\"/a\"", 0.0625);
	metrics_observe("lat_seconds", "path=\"/a\"", 0.5);
	metrics_observe("lat_seconds", "path=\"/a\"", 1);
	metrics_observe("lat_seconds", "path=\"/a\"", 10);
	metrics_observe("lat_seconds", NULL, 2);
	assert_rendered("# HELP lat_seconds Latency.\n"
	                "# TYPE lat_seconds histogram\n"
	                "lat_seconds_bucket{path=\"/a\",le=\"0.1\"} 1\n"
	                "lat_seconds_bucket{path=\"/a\",le=\"1\"} 3\n"
	                "lat_seconds_bucket{path=\"/a\",le=\"5\"} 3\n"
	                "lat_seconds_bucket{path=\"/a\",le=\"+Inf\"} 4\n"
	                "lat_seconds_sum{path=\"/a\"} 11.5625\n"
	                "lat_seconds_count{path=\"/a\"} 4\n"
	                "lat_seconds_bucket{le=\"0.1\"} 0\n"
	                "lat_seconds_bucket{le=\"1\"} 0\n"
	                "lat_seconds_bucket{le=\"5\"} 1\n"
	                "lat_seconds_bucket{le=\"+Inf\"} 1\n"
	                "lat_seconds_sum 2\n"
	                "lat_seconds_count 1\n");
	assert_true(metrics_get("lat_seconds", "path=\"/a\"") == 4);
}

static void test_metrics__histogram_default_buckets(void **state)
{
	char *got;

	metrics_observe("undeclared_seconds", NULL, 0.002);
	got = render();
	assert_non_null(strstr(got, "undeclared_seconds_bucket{le=\"0.001\"} 0\n"));
	assert_non_null(strstr(got, "undeclared_seconds_bucket{le=\"0.0025\"} 1\n"));
	assert_non_null(strstr(got, "undeclared_seconds_bucket{le=\"60\"} 1\n"));
	assert_non_null(strstr(got, "undeclared_seconds_bucket{le=\"+Inf\"} 1\n"));
	assert_int_equal(count_of(got, "_bucket{"), 16);
	free(got);
}

static void test_metrics__histogram_explicit_inf_bound_not_duplicated(void **state)
{
	const double bounds[] = {1, HUGE_VAL};
	char *got;

	metrics_describe("h", METRIC_HISTOGRAM, "H.", bounds, 2);
	metrics_observe("h", NULL, 3);
	got = render();
	assert_int_equal(count_of(got, "le=\"+Inf\""), 1);
	assert_non_null(strstr(got, "h_bucket{le=\"1\"} 0\n"));
	free(got);
}

static void test_metrics__labels_escape_quote_backslash_newline(void **state)
{
	char labels[128];

	metrics_labels(labels, sizeof(labels), "a", "q\"b\\s\nn", "b", "x", "c", NULL, NULL);
	assert_string_equal(labels, "a=\"q\\\"b\\\\s\\nn\",b=\"x\",c=\"\"");
	metrics_add("esc_total", labels, 1);
	assert_rendered("# TYPE esc_total counter\n"
	                "esc_total{a=\"q\\\"b\\\\s\\nn\",b=\"x\",c=\"\"} 1\n");
}

static void test_metrics__labels_truncate_at_whole_pairs(void **state)
{
	char labels[16];

	/* `a="1",b="2"` is 11 bytes; the third pair would overflow 15. */
	metrics_labels(labels, sizeof(labels), "a", "1", "b", "2", "c", "3", NULL);
	assert_string_equal(labels, "a=\"1\",b=\"2\"");
	metrics_labels(labels, sizeof(labels), "long", "\"\"\"\"\"\"", NULL);
	assert_string_equal(labels, "");
}

static void test_metrics__help_and_type_once_per_family(void **state)
{
	char *got;

	metrics_describe("req_total", METRIC_COUNTER, "Requests.", NULL, 0);
	metrics_describe("req_total", METRIC_GAUGE, "Other help.", NULL, 0);
	for (int i = 0; i < 5; i++) {
		char labels[32];

		snprintf(labels, sizeof(labels), "code=\"%d\"", 200 + i);
		metrics_add("req_total", labels, 1);
	}
	got = render();
	assert_int_equal(count_of(got, "# HELP req_total"), 1);
	assert_int_equal(count_of(got, "# TYPE req_total"), 1);
	assert_non_null(strstr(got, "# HELP req_total Requests.\n# TYPE req_total counter\n"));
	assert_int_equal(count_of(got, "\nreq_total{code="), 5);
	free(got);
}

static void test_metrics__empty_family_renders_help_escaped(void **state)
{
	metrics_describe("empty", METRIC_GAUGE, "Line one\nback\\slash.", NULL, 0);
	assert_rendered("# HELP empty Line one\\nback\\\\slash.\n"
	                "# TYPE empty gauge\n");
}

static void test_metrics__implicit_family_adopts_later_description(void **state)
{
	metrics_set("up", NULL, 1);
	metrics_describe("up", METRIC_GAUGE, "Up.", NULL, 0);
	assert_rendered("# HELP up Up.\n# TYPE up gauge\nup 1\n");
}

static void test_metrics__type_mismatch_is_ignored(void **state)
{
	metrics_describe("hist", METRIC_HISTOGRAM, "H.", NULL, 0);
	metrics_add("hist", NULL, 1);
	metrics_set("hist", NULL, 1);
	assert_true(metrics_get("hist", NULL) == 0);
	metrics_add("cnt_total", NULL, 1);
	metrics_observe("cnt_total", NULL, 1);
	assert_true(metrics_get("cnt_total", NULL) == 1);
}

static void test_metrics__series_per_family_are_capped(void **state)
{
	char labels[32];

	for (int i = 0; i <= METRICS_MAX_SERIES; i++) {
		snprintf(labels, sizeof(labels), "i=\"%d\"", i);
		metrics_add("many_total", labels, 1);
	}
	snprintf(labels, sizeof(labels), "i=\"%d\"", METRICS_MAX_SERIES - 1);
	assert_true(metrics_get("many_total", labels) == 1);
	snprintf(labels, sizeof(labels), "i=\"%d\"", METRICS_MAX_SERIES);
	assert_true(metrics_get("many_total", labels) == 0);
}

static void test_metrics__render_reports_full_buffer(void **state)
{
	struct buf b = BUF_INIT(16);

	metrics_describe("a_rather_long_metric_name", METRIC_COUNTER, "Long.", NULL, 0);
	assert_int_equal(metrics_render(&b), -EMSGSIZE);
	buf_release(&b);
}

#define THREADS    4
#define PER_THREAD 50000

static void *hammer(void *arg)
{
	for (int i = 0; i < PER_THREAD; i++) {
		metrics_add("conc_total", "k=\"v\"", 1);
		metrics_observe("conc_seconds", NULL, 0.01);
	}
	return NULL;
}

static void test_metrics__concurrent_increments_add_up(void **state)
{
	pthread_t t[THREADS];
	char *got;

	metrics_describe("conc_total", METRIC_COUNTER, "C.", NULL, 0);
	metrics_describe("conc_seconds", METRIC_HISTOGRAM, "S.", NULL, 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_true(metrics_get("conc_total", "k=\"v\"") == THREADS * PER_THREAD);
	got = render();
	assert_non_null(strstr(got, "conc_total{k=\"v\"} 200000\n"));
	assert_non_null(strstr(got, "conc_seconds_count 200000\n"));
	assert_non_null(strstr(got, "conc_seconds_bucket{le=\"0.01\"} 200000\n"));
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_metrics__counter_renders_integer_without_exponent,
	                                  teardown),
	        cmocka_unit_test_teardown(test_metrics__counter_ignores_negative_add_and_set,
	                                  teardown),
	        cmocka_unit_test_teardown(test_metrics__gauge_set_add_and_fractions, teardown),
	        cmocka_unit_test_teardown(test_metrics__histogram_buckets_sum_count_exact,
	                                  teardown),
	        cmocka_unit_test_teardown(test_metrics__histogram_default_buckets, teardown),
	        cmocka_unit_test_teardown(test_metrics__histogram_explicit_inf_bound_not_duplicated,
	                                  teardown),
	        cmocka_unit_test_teardown(test_metrics__labels_escape_quote_backslash_newline,
	                                  teardown),
	        cmocka_unit_test_teardown(test_metrics__labels_truncate_at_whole_pairs, teardown),
	        cmocka_unit_test_teardown(test_metrics__help_and_type_once_per_family, teardown),
	        cmocka_unit_test_teardown(test_metrics__empty_family_renders_help_escaped,
	                                  teardown),
	        cmocka_unit_test_teardown(test_metrics__implicit_family_adopts_later_description,
	                                  teardown),
	        cmocka_unit_test_teardown(test_metrics__type_mismatch_is_ignored, teardown),
	        cmocka_unit_test_teardown(test_metrics__series_per_family_are_capped, teardown),
	        cmocka_unit_test_teardown(test_metrics__render_reports_full_buffer, teardown),
	        cmocka_unit_test_teardown(test_metrics__concurrent_increments_add_up, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
