/*
 * test_tplstatus.c - an instance's bounded status: rows of counts (not ready first, then by
 * name), at most 2,000 with rowsOmitted and the builder's memory bounded at 100,000 namespaces,
 * at most 20 failing entries with failingOmitted, strings cut on a UTF-8 boundary, counts
 * clamped, the output independent of the order of the calls, and a TemplateGroupInstance over
 * 5,000 failing namespaces under 256 KiB.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/mem.h"
#include "tenancy/tplstatus.h"

static char *compact(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

	assert_non_null(s);
	return s;
}

#define assert_json(v, want)                       \
	do {                                       \
		char *got_ = compact(v);           \
		assert_string_equal(got_, (want)); \
		free(got_);                        \
	} while (0)

static const char *row_ns(const json_t *st, size_t i)
{
	return json_string_value(
	        json_object_get(json_array_get(json_object_get(st, "rows"), i), "namespace"));
}

static long long member(const json_t *st, const char *key)
{
	return json_integer_value(json_object_get(st, key));
}

static void test_tplstatus__an_empty_status(void **state)
{
	struct tpl_status *s = tpl_status_new();
	json_t *st = tpl_status_json(s);

	assert_json(st, "{\"failing\":[],\"failingOmitted\":0,\"namespaces\":{\"matched\":0,"
	                "\"ready\":0},\"rows\":[],\"rowsOmitted\":0}");
	json_decref(st);
	tpl_status_free(s);
	tpl_status_free(NULL);
}

static void test_tplstatus__rows_not_ready_first_then_by_name(void **state)
{
	struct tpl_status *s = tpl_status_new();
	struct tpl_row a = {.ns = "acme-b", .ready = true, .applied = 2, .rendered = 2};
	struct tpl_row b = {.ns = "acme-c",
	                    .applied = 1,
	                    .rendered = 3,
	                    .deployments = {0, 2},
	                    .daemon_sets = {1, 1},
	                    .pods = {.pending = 2, .unknown = 1}};
	struct tpl_row c = {.ns = "acme-a",
	                    .ready = true,
	                    .applied = 2,
	                    .rendered = 2,
	                    .stateful_sets = {1, 1},
	                    .pods = {.running = 1}};
	struct tpl_row d = {.ns = "acme-d",
	                    .applied = -5,
	                    .rendered = 1LL << 40,
	                    .pods = {.failed = 1, .succeeded = 3}};
	json_t *st;

	tpl_status_row(s, &a);
	tpl_status_row(s, &b);
	tpl_status_row(s, &c);
	tpl_status_row(s, &d);
	st = tpl_status_json(s);
	assert_json(json_object_get(st, "rows"),
	            "[{\"applied\":1,\"daemonSets\":{\"desired\":1,\"ready\":1},"
	            "\"deployments\":{\"desired\":2,\"ready\":0},\"namespace\":\"acme-c\","
	            "\"pods\":{\"pending\":2,\"unknown\":1},\"ready\":false,\"rendered\":3},"
	            "{\"applied\":0,\"namespace\":\"acme-d\",\"pods\":{\"failed\":1,"
	            "\"succeeded\":3},\"ready\":false,\"rendered\":2147483647},"
	            "{\"applied\":2,\"namespace\":\"acme-a\",\"pods\":{\"running\":1},"
	            "\"ready\":true,\"rendered\":2,\"statefulSets\":{\"desired\":1,\"ready\":1}},"
	            "{\"applied\":2,\"namespace\":\"acme-b\",\"ready\":true,\"rendered\":2}]");
	assert_json(json_object_get(st, "namespaces"), "{\"matched\":4,\"ready\":2}");
	assert_int_equal(member(st, "rowsOmitted"), 0);
	json_decref(st);
	tpl_status_free(s);
}

/* @n namespaces "ns-<i>", every @ready_every-th ready, given in a scrambled order. */
static struct tpl_status *many(size_t n, size_t ready_every)
{
	struct tpl_status *s = tpl_status_new();

	for (size_t k = 0; k < n; k++) {
		size_t i = (k * 7919) % n; /* 7919 is prime, n below it or coprime */
		char ns[32];
		struct tpl_row r = {
		        .ns = ns, .ready = i % ready_every == 0, .applied = 1, .rendered = 1};

		snprintf(ns, sizeof(ns), "ns-%06zu", i);
		tpl_status_row(s, &r);
	}
	return s;
}

static void test_tplstatus__a_rows_release_is_shown_when_there_is_one(void **state)
{
	struct tpl_status *s = tpl_status_new();
	struct tpl_row a = {.ns = "a",
	                    .release = "web",
	                    .release_status = "deployed",
	                    .chart_version = "1.2.3",
	                    .revision = 4};
	struct tpl_row b = {.ns = "b", .release = "web"}, c = {.ns = "c"};
	json_t *st, *rows;
	char *text;

	tpl_status_row(s, &a);
	tpl_status_row(s, &b);
	tpl_status_row(s, &c);
	st = tpl_status_json(s);
	rows = json_object_get(st, "rows");
	text = json_dumps(json_object_get(json_array_get(rows, 0), "release"), JSON_SORT_KEYS);
	assert_string_equal(text, "{\"chartVersion\": \"1.2.3\", \"name\": \"web\", "
	                          "\"revision\": 4, \"status\": \"deployed\"}");
	free(text);
	text = json_dumps(json_object_get(json_array_get(rows, 1), "release"), JSON_SORT_KEYS);
	assert_string_equal(text, "{\"name\": \"web\"}"); /* nothing known yet */
	free(text);
	assert_null(json_object_get(json_array_get(rows, 2), "release")); /* no chart */
	json_decref(st);
	tpl_status_free(s);
}

static void test_tplstatus__at_most_2000_rows_the_rest_counted(void **state)
{
	struct tpl_status *s = many(100000, 100), *small = many(TPL_ROWS_MAX, 100);
	json_t *st = tpl_status_json(s);
	const json_t *rows = json_object_get(st, "rows");

	assert_int_equal(json_array_size(rows), TPL_ROWS_MAX);
	assert_int_equal(member(st, "rowsOmitted"), 100000 - TPL_ROWS_MAX);
	assert_json(json_object_get(st, "namespaces"), "{\"matched\":100000,\"ready\":1000}");
	/* the first 2,000 not ready namespaces by name: ns-000001..ns-002020 less the ready */
	assert_string_equal(row_ns(st, 0), "ns-000001");
	assert_string_equal(row_ns(st, 98), "ns-000099");
	assert_string_equal(row_ns(st, 99), "ns-000101");
	assert_string_equal(row_ns(st, TPL_ROWS_MAX - 1), "ns-002020");
	for (size_t i = 0; i < TPL_ROWS_MAX; i++)
		assert_false(json_is_true(json_object_get(json_array_get(rows, i), "ready")));
	/* the builder holds the rows it prints, not the 100,000 */
	assert_int_equal(tpl_status_bytes(s), tpl_status_bytes(small));
	assert_true(tpl_status_bytes(s) < 300u << 10);
	json_decref(st);
	tpl_status_free(s);
	tpl_status_free(small);

	/* ready namespaces fill what the not ready leave */
	s = many(3000, 2);
	st = tpl_status_json(s);
	assert_string_equal(row_ns(st, 1499), "ns-002999");
	assert_string_equal(row_ns(st, 1500), "ns-000000");
	assert_string_equal(row_ns(st, 1999), "ns-000998");
	assert_int_equal(member(st, "rowsOmitted"), 1000);
	json_decref(st);
	tpl_status_free(s);
}

static void test_tplstatus__the_order_of_the_calls_does_not_matter(void **state)
{
	struct tpl_status *a = tpl_status_new(), *b = tpl_status_new();
	json_t *x, *y;

	for (int k = 0; k < 5000; k++) {
		char ns[16], obj[32];
		struct tpl_row r = {.ns = ns, .ready = k % 3 == 0, .applied = k % 5, .rendered = 5};

		snprintf(ns, sizeof(ns), "n%d", k);
		snprintf(obj, sizeof(obj), "ConfigMap/c%d", k % 7);
		tpl_status_row(a, &r);
		tpl_status_failing(a, ns, obj, "Forbidden", "no");
		snprintf(ns, sizeof(ns), "n%d", 4999 - k);
		snprintf(obj, sizeof(obj), "ConfigMap/c%d", (4999 - k) % 7);
		r.ready = (4999 - k) % 3 == 0;
		r.applied = (4999 - k) % 5;
		tpl_status_failing(b, ns, obj, "Forbidden", "no");
		tpl_status_row(b, &r);
	}
	x = tpl_status_json(a);
	y = tpl_status_json(b);
	assert_true(json_equal(x, y));
	json_decref(x);
	json_decref(y);
	tpl_status_free(a);
	tpl_status_free(b);
}

static void test_tplstatus__at_most_20_failing_entries(void **state)
{
	struct tpl_status *s = tpl_status_new();
	json_t *st, *f;

	for (int k = 29; k >= 0; k--) {
		char ns[16];

		snprintf(ns, sizeof(ns), "ns-%02d", k);
		tpl_status_failing(s, ns, k % 2 ? "Deployment/web" : NULL, "Forbidden",
		                   k == 0 ? NULL : "denied");
	}
	tpl_status_failing(s, "ns-00", "ConfigMap/a", "Conflict", "owned by landlord/ti/x/y");
	st = tpl_status_json(s);
	f = json_object_get(st, "failing");
	assert_int_equal(json_array_size(f), TPL_FAILING_MAX);
	assert_int_equal(member(st, "failingOmitted"), 11);
	assert_json(json_array_get(f, 0), "{\"message\":\"\",\"namespace\":\"ns-00\","
	                                  "\"object\":\"\",\"reason\":\"Forbidden\"}");
	assert_json(json_array_get(f, 1), "{\"message\":\"owned by landlord/ti/x/y\","
	                                  "\"namespace\":\"ns-00\",\"object\":\"ConfigMap/a\","
	                                  "\"reason\":\"Conflict\"}");
	assert_json(json_array_get(f, 2),
	            "{\"message\":\"denied\",\"namespace\":\"ns-01\","
	            "\"object\":\"Deployment/web\",\"reason\":\"Forbidden\"}");
	assert_string_equal(json_string_value(json_object_get(json_array_get(f, 19), "namespace")),
	                    "ns-18");
	json_decref(st);
	tpl_status_free(s);
}

static const char *message_of(const json_t *st)
{
	return json_string_value(
	        json_object_get(json_array_get(json_object_get(st, "failing"), 0), "message"));
}

/* The message kept of @msg. */
static char *kept(const char *msg)
{
	struct tpl_status *s = tpl_status_new();
	json_t *st;
	char *m;

	tpl_status_failing(s, "ns", "ConfigMap/a", "Forbidden", msg);
	st = tpl_status_json(s);
	assert_non_null(st);
	m = xstrdup(message_of(st));
	json_decref(st);
	tpl_status_free(s);
	return m;
}

static void test_tplstatus__strings_cut_on_a_utf8_boundary(void **state)
{
	char msg[1024], *m;
	json_t *j;
	size_t i;

	/* exactly 256 bytes: whole */
	memset(msg, 'a', 256);
	msg[256] = '\0';
	m = kept(msg);
	assert_string_equal(m, msg);
	free(m);
	/* 257: 253 bytes and "..." */
	memset(msg, 'a', 257);
	msg[257] = '\0';
	m = kept(msg);
	assert_int_equal(strlen(m), 256);
	assert_memory_equal(m, msg, 253);
	assert_string_equal(m + 253, "...");
	free(m);
	/* "é" (2 bytes) after 252 a's would end at 254: cut before it */
	for (size_t off = 0; off < 4; off++) {
		memset(msg, 'a', 250 + off);
		for (i = 250 + off; i < 600; i += 3)
			memcpy(msg + i, "\xe2\x82\xac", 3); /* € */
		msg[i] = '\0';
		m = kept(msg);
		assert_true(strlen(m) <= 256);
		assert_string_equal(m + strlen(m) - 3, "...");
		j = json_string(m); /* valid UTF-8 */
		assert_non_null(j);
		json_decref(j);
		assert_true(strlen(m) >= 251);
		free(m);
	}
	/* bytes that are not UTF-8 become '?': overlong, surrogate, lone continuation, cut */
	m = kept("a\xc0\xafz \xed\xa0\x80 \x80 \xf4\x90\x80\x80 \xe2\x82");
	assert_string_equal(m, "a??z ??? ? ???? ??");
	free(m);
	m = kept("\xf0\x9f\x98\x80 ok");
	assert_string_equal(m, "\xf0\x9f\x98\x80 ok");
	free(m);
}

static void test_tplstatus__every_field_fits_its_schema(void **state)
{
	struct tpl_status *s = tpl_status_new();
	char big[600];
	json_t *st, *f;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tpl_status_failing(s, big, big, big, big);
	tpl_status_row(s, &(struct tpl_row){.ns = big});
	st = tpl_status_json(s);
	f = json_array_get(json_object_get(st, "failing"), 0);
	assert_int_equal(json_string_length(json_object_get(f, "namespace")), TPL_NAMESPACE_MAX);
	assert_int_equal(json_string_length(json_object_get(f, "object")), TPL_OBJECT_MAX);
	assert_int_equal(json_string_length(json_object_get(f, "reason")), TPL_REASON_MAX);
	assert_int_equal(json_string_length(json_object_get(f, "message")), TPL_MESSAGE_MAX);
	assert_int_equal(strlen(row_ns(st, 0)), TPL_NAMESPACE_MAX);
	json_decref(st);
	tpl_status_free(s);
}

/* A TemplateGroupInstance over 5,000 namespaces, each failing with a long message. */
static void test_tplstatus__5000_failing_namespaces_under_256_kib(void **state)
{
	struct tpl_status *s = tpl_status_new();
	char msg[2048];
	json_t *st;
	char *text;

	memset(msg, 'm', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	for (int k = 0; k < 5000; k++) {
		char ns[64];
		struct tpl_row r = {.ns = ns,
		                    .applied = 2,
		                    .rendered = 5,
		                    .deployments = {0, 3},
		                    .stateful_sets = {1, 2},
		                    .daemon_sets = {0, 4},
		                    .pods = {1, 2, 0, 3, 1}};

		snprintf(ns, sizeof(ns), "tenant-%04d-a-rather-long-namespace-name-for-the-test",
		         k);
		tpl_status_row(s, &r);
		tpl_status_failing(s, ns, "Deployment/a-rather-long-deployment-name", "Forbidden",
		                   msg);
	}
	st = tpl_status_json(s);
	text = compact(st);
	assert_true(strlen(text) <= TPL_STATUS_BYTES_MAX);
	assert_true(strlen(text) < 256u << 10);
	assert_int_equal(member(st, "rowsOmitted") + json_array_size(json_object_get(st, "rows")),
	                 5000);
	assert_int_equal(member(st, "failingOmitted"), 5000 - TPL_FAILING_MAX);
	print_message("status of 5,000 failing namespaces: %zu bytes, %zu rows\n", strlen(text),
	              json_array_size(json_object_get(st, "rows")));
	free(text);
	json_decref(st);
	tpl_status_free(s);
}

/* Failing entries that JSON must escape byte by byte leave less room to rows, never more. */
static void test_tplstatus__escaped_failures_stay_within_the_budget(void **state)
{
	struct tpl_status *s = tpl_status_new();
	char ctl[800], ns[80];
	json_t *st;
	char *text;

	memset(ctl, 1, sizeof(ctl) - 1);
	ctl[sizeof(ctl) - 1] = '\0';
	for (int k = 0; k < 3000; k++) {
		snprintf(ns, sizeof(ns), "%.50s%04d", ctl, k);
		tpl_status_row(s, &(struct tpl_row){.ns = ns,
		                                    .applied = INT32_MAX,
		                                    .rendered = INT32_MAX,
		                                    .deployments = {INT32_MAX, INT32_MAX},
		                                    .stateful_sets = {INT32_MAX, INT32_MAX},
		                                    .daemon_sets = {INT32_MAX, INT32_MAX},
		                                    .pods = {INT32_MAX, INT32_MAX, INT32_MAX,
		                                             INT32_MAX, INT32_MAX}});
		tpl_status_failing(s, ns, ctl, ctl, ctl);
	}
	st = tpl_status_json(s);
	text = compact(st);
	assert_true(strlen(text) <= TPL_STATUS_BYTES_MAX);
	assert_int_equal(json_array_size(json_object_get(st, "failing")), TPL_FAILING_MAX);
	assert_true(json_array_size(json_object_get(st, "rows")) > 100);
	free(text);
	json_decref(st);
	tpl_status_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tplstatus__an_empty_status),
	        cmocka_unit_test(test_tplstatus__rows_not_ready_first_then_by_name),
	        cmocka_unit_test(test_tplstatus__a_rows_release_is_shown_when_there_is_one),
	        cmocka_unit_test(test_tplstatus__at_most_2000_rows_the_rest_counted),
	        cmocka_unit_test(test_tplstatus__the_order_of_the_calls_does_not_matter),
	        cmocka_unit_test(test_tplstatus__at_most_20_failing_entries),
	        cmocka_unit_test(test_tplstatus__strings_cut_on_a_utf8_boundary),
	        cmocka_unit_test(test_tplstatus__every_field_fits_its_schema),
	        cmocka_unit_test(test_tplstatus__5000_failing_namespaces_under_256_kib),
	        cmocka_unit_test(test_tplstatus__escaped_failures_stay_within_the_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
