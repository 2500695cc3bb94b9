/* test_watchsplit.c - line splitting of watch bodies and watch event parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/jdoc.h"
#include "kube/watchsplit.h"

/* Collects lines joined by '|' so a test can compare the whole sequence at once. */
struct sink {
	struct buf lines;
	int count;
	int stop_after; /* return 7 from the callback once this many lines arrived; 0: never */
};

static int collect(const char *line, size_t len, void *ud)
{
	struct sink *s = ud;

	assert_null(memchr(line, '\n', len));
	if (s->count++)
		assert_int_equal(buf_append(&s->lines, "|", 1), 0);
	assert_int_equal(buf_append(&s->lines, line, len), 0);
	return s->stop_after && s->count >= s->stop_after ? 7 : 0;
}

static void sink_init(struct sink *s)
{
	memset(s, 0, sizeof(*s));
	buf_init(&s->lines, 1u << 20);
}

static void feed_in_chunks(const char *text, size_t chunk, const char *want)
{
	struct watchsplit ws;
	struct sink s;
	size_t len = strlen(text);

	sink_init(&s);
	watchsplit_init(&ws, 0);
	for (size_t off = 0; off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;

		assert_int_equal(watchsplit_feed(&ws, text + off, n, collect, &s), 0);
	}
	assert_string_equal(buf_cstr(&s.lines), want);
	watchsplit_release(&ws);
	buf_release(&s.lines);
}

static void test_watchsplit__every_chunk_size_gives_the_same_lines(void **state)
{
	const char *text = "{\"a\":1}\n{\"b\":22}\n\n{\"c\":333}\n{\"d\":\"x\\ny\"}\npartial";

	for (size_t chunk = 1; chunk <= strlen(text); chunk++)
		feed_in_chunks(text, chunk, "{\"a\":1}|{\"b\":22}|{\"c\":333}|{\"d\":\"x\\ny\"}");
}

static void test_watchsplit__blank_lines_are_skipped(void **state)
{
	feed_in_chunks("\n\n  \n\r\n{}\n \t\n[]\n", 3, "{}|[]");
	feed_in_chunks("\n\n  \n\r\n{}\n \t\n[]\n", 1, "{}|[]");
}

static void test_watchsplit__pending_counts_the_partial_line(void **state)
{
	struct watchsplit ws;
	struct sink s;

	sink_init(&s);
	watchsplit_init(&ws, 0);
	assert_int_equal(watchsplit_pending(&ws), 0);
	assert_int_equal(watchsplit_feed(&ws, "abc", 3, collect, &s), 0);
	assert_int_equal(watchsplit_pending(&ws), 3);
	assert_int_equal(watchsplit_feed(&ws, "de\nfg", 5, collect, &s), 0);
	assert_string_equal(buf_cstr(&s.lines), "abcde");
	assert_int_equal(watchsplit_pending(&ws), 2);
	assert_int_equal(watchsplit_feed(&ws, "\n", 1, collect, &s), 0);
	assert_int_equal(watchsplit_pending(&ws), 0);
	assert_string_equal(buf_cstr(&s.lines), "abcde|fg");
	watchsplit_release(&ws);
	buf_release(&s.lines);
}

static void test_watchsplit__callback_value_stops_and_keeps_the_rest(void **state)
{
	struct watchsplit ws;
	struct sink s;
	const char *text = "one\ntwo\nthree\nfou";

	sink_init(&s);
	s.stop_after = 2;
	watchsplit_init(&ws, 0);
	assert_int_equal(watchsplit_feed(&ws, text, strlen(text), collect, &s), 7);
	assert_string_equal(buf_cstr(&s.lines), "one|two");
	assert_int_equal(watchsplit_pending(&ws), strlen("three\nfou"));
	/* The next feed first delivers what the stop left behind. */
	s.stop_after = 0;
	assert_int_equal(watchsplit_feed(&ws, "r\nfive\n", 7, collect, &s), 0);
	assert_string_equal(buf_cstr(&s.lines), "one|two|three|four|five");
	assert_int_equal(watchsplit_pending(&ws), 0);
	watchsplit_release(&ws);
	buf_release(&s.lines);
}

static void test_watchsplit__stop_while_completing_a_partial_line(void **state)
{
	struct watchsplit ws;
	struct sink s;

	sink_init(&s);
	s.stop_after = 1;
	watchsplit_init(&ws, 0);
	assert_int_equal(watchsplit_feed(&ws, "ab", 2, collect, &s), 0);
	assert_int_equal(watchsplit_feed(&ws, "c\nd\ne", 5, collect, &s), 7);
	assert_string_equal(buf_cstr(&s.lines), "abc");
	assert_int_equal(watchsplit_pending(&ws), 3);
	s.stop_after = 2; /* stops again on "d", still pending in the splitter */
	assert_int_equal(watchsplit_feed(&ws, "\n", 1, collect, &s), 7);
	assert_string_equal(buf_cstr(&s.lines), "abc|d");
	s.stop_after = 0;
	assert_int_equal(watchsplit_feed(&ws, NULL, 0, collect, &s), 0);
	assert_string_equal(buf_cstr(&s.lines), "abc|d|e");
	watchsplit_release(&ws);
	buf_release(&s.lines);
}

static void test_watchsplit__long_line_fails_and_stays_failed(void **state)
{
	struct watchsplit ws;
	struct sink s;

	sink_init(&s);
	watchsplit_init(&ws, 8);
	assert_int_equal(watchsplit_feed(&ws, "12345678\n", 9, collect, &s), 0);
	assert_int_equal(watchsplit_feed(&ws, "12345", 5, collect, &s), 0);
	assert_int_equal(watchsplit_feed(&ws, "6789", 4, collect, &s), -EMSGSIZE);
	assert_int_equal(watchsplit_pending(&ws), 0);
	assert_int_equal(watchsplit_feed(&ws, "\nok\n", 4, collect, &s), -EMSGSIZE);
	assert_string_equal(buf_cstr(&s.lines), "12345678");
	watchsplit_release(&ws);

	/* A complete over-long line inside one chunk, and an over-long unterminated tail. */
	watchsplit_init(&ws, 8);
	assert_int_equal(watchsplit_feed(&ws, "a\n123456789\nb\n", 14, collect, &s), -EMSGSIZE);
	watchsplit_release(&ws);
	watchsplit_init(&ws, 8);
	assert_int_equal(watchsplit_feed(&ws, "a\n123456789", 11, collect, &s), -EMSGSIZE);
	watchsplit_release(&ws);
	assert_string_equal(buf_cstr(&s.lines), "12345678|a|a");
	buf_release(&s.lines);
}

static void test_watchsplit__long_line_one_byte_at_a_time(void **state)
{
	struct watchsplit ws;
	struct sink s;
	int rc = 0;
	size_t i;

	sink_init(&s);
	watchsplit_init(&ws, 100);
	for (i = 0; i < 1000 && rc == 0; i++)
		rc = watchsplit_feed(&ws, "x", 1, collect, &s);
	assert_int_equal(rc, -EMSGSIZE);
	assert_int_equal(i, 101);
	assert_int_equal(s.count, 0);
	watchsplit_release(&ws);
	buf_release(&s.lines);
}

static void test_watchsplit__leftover_after_stop_still_capped(void **state)
{
	struct watchsplit ws;
	struct sink s;

	sink_init(&s);
	s.stop_after = 1;
	watchsplit_init(&ws, 4);
	assert_int_equal(watchsplit_feed(&ws, "a\nbbbbbbbbbb", 12, collect, &s), 7);
	s.stop_after = 0;
	assert_int_equal(watchsplit_feed(&ws, "", 0, collect, &s), -EMSGSIZE);
	watchsplit_release(&ws);
	buf_release(&s.lines);
}

static void expect_event(const char *line, enum watch_event_type want, const char *name)
{
	enum watch_event_type type;
	json_t *obj = NULL;
	struct ll_err err = {{0}};

	assert_int_equal(watch_event_parse(line, strlen(line), &type, &obj, &err), 0);
	assert_int_equal(type, want);
	assert_non_null(obj);
	if (name)
		assert_string_equal(json_string_value(json_object_get(obj, "name")), name);
	json_decref(obj);
}

static void test_watchsplit__parses_every_event_type(void **state)
{
	expect_event("{\"type\":\"ADDED\",\"object\":{\"name\":\"a\"}}", WATCH_ADDED, "a");
	expect_event("{\"type\":\"MODIFIED\",\"object\":{\"name\":\"b\"}}", WATCH_MODIFIED, "b");
	expect_event("{\"type\":\"DELETED\",\"object\":{\"name\":\"c\"}}", WATCH_DELETED, "c");
	expect_event(
	        "{\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"resourceVersion\":\"12\"}},"
	        "\"type\":\"BOOKMARK\"}",
	        WATCH_BOOKMARK, NULL);
}

static void test_watchsplit__error_event_carries_a_status(void **state)
{
	const char *line =
	        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
	        "\"status\":\"Failure\",\"message\":\"too old resource version: 1 (5)\","
	        "\"reason\":\"Expired\",\"code\":410}}";
	enum watch_event_type type;
	json_t *obj = NULL;

	assert_int_equal(watch_event_parse(line, strlen(line), &type, &obj, NULL), 0);
	assert_int_equal(type, WATCH_ERROR);
	assert_int_equal(json_integer_value(json_object_get(obj, "code")), 410);
	assert_string_equal(json_string_value(json_object_get(obj, "reason")), "Expired");
	json_decref(obj);
}

static void expect_malformed(const char *line, const char *detail)
{
	enum watch_event_type type;
	json_t *obj = (json_t *)1;
	struct ll_err err = {{0}};

	assert_int_equal(watch_event_parse(line, strlen(line), &type, &obj, &err), -EPROTO);
	assert_null(obj);
	if (strstr(err.msg, detail) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg, detail);
}

static void test_watchsplit__malformed_events_are_eproto(void **state)
{
	expect_malformed("{\"type\":\"ADDED\",\"object\":{}", "invalid JSON");
	expect_malformed("[1,2]", "without a type");
	expect_malformed("{\"object\":{}}", "without a type");
	expect_malformed("{\"type\":7,\"object\":{}}", "without a type");
	expect_malformed("{\"type\":\"RENAMED\",\"object\":{}}", "unknown watch event type");
	expect_malformed("{\"type\":\"ADDED\"}", "without an object");
	expect_malformed("{\"type\":\"ADDED\",\"object\":\"x\"}", "without an object");
	expect_malformed("{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}", "invalid JSON");
	expect_malformed("", "invalid JSON");
}

/* Straight into documents: projected objects, whole Statuses, the same verdicts on bad lines. */
static void test_watchsplit__events_parse_into_documents(void **state)
{
	static const char *const keep[] = {"metadata.name", NULL};
	struct jdoc_opts o = {.keep = keep};
	const char *added = "{\"object\":{\"metadata\":{\"name\":\"a\",\"uid\":\"u\"},\"data\":{}},"
	                    "\"type\":\"MODIFIED\"}";
	const char *error = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}";
	const char *bad[] = {"{\"type\":\"ADDED\",\"object\":{}",
	                     "[1,2]",
	                     "{\"object\":{}}",
	                     "{\"type\":\"RENAMED\",\"object\":{}}",
	                     "{\"type\":\"ADDED\"}",
	                     "{\"type\":\"ADDED\",\"object\":\"x\"}",
	                     "{\"type\":\"ADDED\",\"object\":[{},{}]}",
	                     "{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}",
	                     ""};
	enum watch_event_type type;
	struct jdoc *obj = NULL;

	/* the type may come after the object */
	assert_int_equal(watch_event_parse_doc(added, strlen(added), &o, &type, &obj, NULL), 0);
	assert_int_equal(type, WATCH_MODIFIED);
	assert_string_equal(jd_name(obj), "a");
	assert_int_equal(jval_type(jd_get(obj, "data", NULL)), JT_NONE);
	assert_null(jd_uid(obj));
	jdoc_unref(obj);
	/* the Status of an ERROR event is whole whatever the projection */
	assert_int_equal(watch_event_parse_doc(error, strlen(error), &o, &type, &obj, NULL), 0);
	assert_int_equal(type, WATCH_ERROR);
	assert_int_equal(jd_int(obj, 0, "code", NULL), 410);
	jdoc_unref(obj);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		obj = (struct jdoc *)1;
		assert_int_equal(
		        watch_event_parse_doc(bad[i], strlen(bad[i]), NULL, &type, &obj, NULL),
		        -EPROTO);
		assert_null(obj);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_watchsplit__every_chunk_size_gives_the_same_lines),
	        cmocka_unit_test(test_watchsplit__blank_lines_are_skipped),
	        cmocka_unit_test(test_watchsplit__pending_counts_the_partial_line),
	        cmocka_unit_test(test_watchsplit__callback_value_stops_and_keeps_the_rest),
	        cmocka_unit_test(test_watchsplit__stop_while_completing_a_partial_line),
	        cmocka_unit_test(test_watchsplit__long_line_fails_and_stays_failed),
	        cmocka_unit_test(test_watchsplit__long_line_one_byte_at_a_time),
	        cmocka_unit_test(test_watchsplit__leftover_after_stop_still_capped),
	        cmocka_unit_test(test_watchsplit__parses_every_event_type),
	        cmocka_unit_test(test_watchsplit__error_event_carries_a_status),
	        cmocka_unit_test(test_watchsplit__malformed_events_are_eproto),
	        cmocka_unit_test(test_watchsplit__events_parse_into_documents),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
