/*
 * test_hibernation.c - the three hibernation annotations: the override's five values, its
 * RFC 3339 times (either case of 'T' and 'Z', fractions truncated, offsets applied, each field's
 * range, the day against its month, no leap second, 1970 to 9999), their canonical text and
 * round trip, and HIB_OVERRIDE_PATTERN agreeing with the parser (PCRE2 as RE2 reads '$', and
 * POSIX ERE) on every value but the calendar's; the saved value (each field, its type and
 * range, null KEDA values, strictness: keys, duplicates, size); the quota reservation (order
 * kept, names, quantities, 64 resources, size); each refusal one line naming the annotation
 * and what is wrong, and each output struct zeroed on error.
 */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/err.h"
#include "tenancy/hibernation.h"
#include "testtime.h"

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

/* @err.msg contains each NULL-terminated word. */
static void assert_words(const char *msg, ...)
{
	const char *w;
	va_list ap;

	va_start(ap, msg);
	while ((w = va_arg(ap, const char *)) != NULL)
		if (strstr(msg, w) == NULL)
			fail_msg("\"%s\" lacks \"%s\"", msg, w);
	va_end(ap);
}

/* ===== the override ===== */

static struct hib_override override(const char *value)
{
	struct hib_override o;
	struct ll_err err;

	if (hib_override_parse(value, &o, &err) != 0)
		fail_msg("\"%s\" refused: %s", value, err.msg);
	return o;
}

static void assert_override_refused(const char *value, const char *msg)
{
	struct hib_override o;
	struct ll_err err;

	memset(&o, 0xff, sizeof(o));
	assert_int_equal(hib_override_parse(value, &o, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	assert_true(all_zero(&o, sizeof(o)));
	assert_int_equal(hib_override_parse(value, &o, NULL), -EINVAL);
}

static void test_hibernation__override_values(void **state)
{
	struct hib_override o;

	assert_int_equal(override("sleep").kind, HIB_OVERRIDE_SLEEP);
	assert_int_equal(override("wake").kind, HIB_OVERRIDE_WAKE);
	assert_int_equal(override("skip-next-sleep").kind, HIB_OVERRIDE_SKIP_NEXT_SLEEP);
	assert_int_equal(override("sleep").until, 0);

	o = override("sleep-until=2026-11-28T20:00:00Z");
	assert_int_equal(o.kind, HIB_OVERRIDE_SLEEP_UNTIL);
	assert_int_equal(o.until, at("2026-11-28T20:00:00Z"));
	o = override("wake-until=2026-11-28t20:00:00z");
	assert_int_equal(o.kind, HIB_OVERRIDE_WAKE_UNTIL);
	assert_int_equal(o.until, at("2026-11-28T20:00:00Z"));
	assert_int_equal(override("sleep-until=1970-01-01T00:00:00Z").until, 0);
	assert_int_equal(override("sleep-until=9999-12-31T23:59:59Z").until, HIB_TIME_MAX);
}

static void test_hibernation__override_refusals_name_the_annotation(void **state)
{
	static const char *const not_one_of[] = {
	        "slep",
	        "",
	        "Sleep",
	        " sleep",
	        "sleep ",
	        "sleep\n",
	        "sleep=",
	        "skip-next-wake",
	        "sleep-until",
	        "sleep_until=2026-11-28T20:00:00Z",
	        "until=2026-11-28T20:00:00Z",
	        "SLEEP-UNTIL=2026-11-28T20:00:00Z",
	};
	char msg[512];

	for (size_t i = 0; i < sizeof(not_one_of) / sizeof(not_one_of[0]); i++) {
		snprintf(msg, sizeof(msg),
		         "annotation landlord.dev/hibernation: \"%s\" is not one of sleep, wake, "
		         "skip-next-sleep, sleep-until=<RFC 3339 time>, wake-until=<RFC 3339 time>",
		         strcmp(not_one_of[i], "sleep\n") == 0 ? "sleep\\x0a" : not_one_of[i]);
		assert_override_refused(not_one_of[i], msg);
	}
	assert_override_refused("sleep-until=2026-13-01T00:00:00Z",
	                        "annotation landlord.dev/hibernation: \"2026-13-01T00:00:00Z\" is "
	                        "not an RFC 3339 time (month 13 is out of range 1-12)");
	assert_override_refused("wake-until=",
	                        "annotation landlord.dev/hibernation: \"\" is not an RFC 3339 time "
	                        "(expected YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM))");
	assert_override_refused(
	        "sleep-until=tomorrow",
	        "annotation landlord.dev/hibernation: \"tomorrow\" is not an RFC "
	        "3339 time (expected YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM))");
	assert_override_refused(NULL, "annotation landlord.dev/hibernation: \"\" is not one of "
	                              "sleep, wake, skip-next-sleep, sleep-until=<RFC 3339 time>, "
	                              "wake-until=<RFC 3339 time>");
}

static void test_hibernation__rfc3339_fraction_offsets_and_case(void **state)
{
	static const struct {
		const char *text, *utc;
	} good[] = {
	        {"2026-11-28T20:00:00Z", "2026-11-28T20:00:00Z"},
	        {"2026-11-28t20:00:00z", "2026-11-28T20:00:00Z"},
	        {"2026-11-28T20:00:00.999999999Z", "2026-11-28T20:00:00Z"},
	        {"2026-11-28T20:00:00.5+00:00", "2026-11-28T20:00:00Z"},
	        {"2026-11-28T20:00:00-00:00", "2026-11-28T20:00:00Z"},
	        {"2026-11-28T20:00:00+05:30", "2026-11-28T14:30:00Z"},
	        {"2026-11-28T20:00:00-08:00", "2026-11-29T04:00:00Z"},
	        {"2026-12-31T23:30:00-23:59", "2027-01-01T23:29:00Z"},
	        {"2028-02-29T12:00:00Z", "2028-02-29T12:00:00Z"},
	        {"2000-02-29T00:00:00Z", "2000-02-29T00:00:00Z"},
	        {"1970-01-01T01:00:00+01:00", "1970-01-01T00:00:00Z"},
	        {"9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"},
	        {"9999-12-31T22:59:59.9-01:00", "9999-12-31T23:59:59Z"},
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int64_t t = -1;
		struct ll_err err;
		int64_t want = at(good[i].utc);

		if (hib_parse_rfc3339(good[i].text, &t, &err) != 0)
			fail_msg("%s refused: %s", good[i].text, err.msg);
		if (t != want)
			fail_msg("%s: got %lld, want %lld", good[i].text, (long long)t,
			         (long long)want);
	}
}

static void test_hibernation__rfc3339_each_bad_field_is_named(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
	        {"1969-12-31T23:59:59Z", "year 1969 is out of range 1970-9999"},
	        {"0000-01-01T00:00:00Z", "year 0 is out of range 1970-9999"},
	        {"2026-00-01T00:00:00Z", "month 0 is out of range 1-12"},
	        {"2026-13-01T00:00:00Z", "month 13 is out of range 1-12"},
	        {"2026-01-00T00:00:00Z", "day 0 is out of range 1-31 for 2026-01"},
	        {"2026-01-32T00:00:00Z", "day 32 is out of range 1-31 for 2026-01"},
	        {"2026-04-31T00:00:00Z", "day 31 is out of range 1-30 for 2026-04"},
	        {"2026-02-29T00:00:00Z", "day 29 is out of range 1-28 for 2026-02"},
	        {"2100-02-29T00:00:00Z", "day 29 is out of range 1-28 for 2100-02"},
	        {"2028-02-30T00:00:00Z", "day 30 is out of range 1-29 for 2028-02"},
	        {"2026-01-01T24:00:00Z", "hour 24 is out of range 0-23"},
	        {"2026-01-01T00:60:00Z", "minute 60 is out of range 0-59"},
	        {"2026-12-31T23:59:60Z",
	         "second 60 is a leap second; leap seconds are not accepted"},
	        {"2026-12-31T23:59:61Z", "second 61 is out of range 0-59"},
	        {"2026-01-01T00:00:00+24:00", "offset hour 24 is out of range 0-23"},
	        {"2026-01-01T00:00:00-00:60", "offset minute 60 is out of range 0-59"},
	        {"1970-01-01T00:30:00+01:00", "its offset puts it before 1970-01-01T00:00:00Z"},
	        {"9999-12-31T23:30:00-01:00", "its offset puts it after 9999-12-31T23:59:59Z"},
	        {"2026-01-01T00:00:00.1234567890Z", "the fraction has more than 9 digits"},
	};
	static const char *const shapes[] = {
	        "2026-01-01T00:00:00",      "2026-01-01 00:00:00Z",     "2026-01-01T00:00Z",
	        "2026-1-01T00:00:00Z",      "2026-01-01T00:00:00.Z",    "2026-01-01T00:00:00+0100",
	        "2026-01-01T00:00:00+01",   "2026-01-01T00:00:00ZZ",    "2026-01-01T00:00:00Z ",
	        " 2026-01-01T00:00:00Z",    "+2026-01-01T00:00:00Z",    "20260101T000000Z",
	        "2026-01-01T00:00:00,5Z",   "2026-01-01T00:00:00UTC",   "2026-01-01X00:00:00Z",
	        "2026-01-01T00:00:00+1:00", "2026-01-01T00:00:00.5.5Z", "",
	};
	char msg[512];
	struct ll_err err;
	int64_t t = 42;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(msg, sizeof(msg), "\"%s\" is not an RFC 3339 time (%s)", bad[i].text,
		         bad[i].why);
		assert_int_equal(hib_parse_rfc3339(bad[i].text, &t, &err), -EINVAL);
		assert_string_equal(err.msg, msg);
	}
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		snprintf(msg, sizeof(msg),
		         "\"%s\" is not an RFC 3339 time (expected "
		         "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM))",
		         shapes[i]);
		assert_int_equal(hib_parse_rfc3339(shapes[i], &t, &err), -EINVAL);
		assert_string_equal(err.msg, msg);
	}
	assert_int_equal(t, 42); /* untouched on error */
	assert_int_equal(hib_parse_rfc3339(NULL, &t, NULL), -EINVAL);
	assert_int_equal(hib_parse_rfc3339("2026-01-01T00:00:00\x01Z", &t, &err), -EINVAL);
	assert_words(err.msg, "\\x01", NULL); /* escaped: one printable line */
}

static void assert_formats(const char *value, const char *canonical)
{
	struct hib_override o = override(value), again;
	char out[HIB_OVERRIDE_BUF];

	assert_int_equal(hib_override_format(&o, out, sizeof(out)), 0);
	assert_string_equal(out, canonical);
	again = override(out);
	assert_int_equal(again.kind, o.kind);
	assert_int_equal(again.until, o.until);
	/* exactly fits, one byte short */
	assert_int_equal(hib_override_format(&o, out, strlen(canonical) + 1), 0);
	assert_int_equal(hib_override_format(&o, out, strlen(canonical)), -EMSGSIZE);
	assert_string_equal(out, "");
}

static void test_hibernation__override_format_round_trip(void **state)
{
	struct hib_override bad[] = {
	        {0, 0},
	        {HIB_OVERRIDE_WAKE_UNTIL + 1, 0},
	        {HIB_OVERRIDE_SLEEP, 5},
	        {HIB_OVERRIDE_SLEEP_UNTIL, -1},
	        {HIB_OVERRIDE_WAKE_UNTIL, HIB_TIME_MAX + 1},
	};
	char out[HIB_OVERRIDE_BUF];

	assert_formats("sleep", "sleep");
	assert_formats("wake", "wake");
	assert_formats("skip-next-sleep", "skip-next-sleep");
	assert_formats("sleep-until=2026-11-28T20:00:00Z", "sleep-until=2026-11-28T20:00:00Z");
	assert_formats("wake-until=2026-11-28t21:30:00.75+01:30",
	               "wake-until=2026-11-28T20:00:00Z");
	assert_formats("sleep-until=1970-01-01T00:00:00Z", "sleep-until=1970-01-01T00:00:00Z");
	assert_formats("wake-until=9999-12-31T23:59:59Z", "wake-until=9999-12-31T23:59:59Z");
	assert_formats("sleep-until=2028-02-29T23:59:59-00:00", "sleep-until=2028-02-29T23:59:59Z");
	assert_true(strlen("sleep-until=9999-12-31T23:59:59Z") < HIB_OVERRIDE_BUF);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out[0] = 'x', out[1] = '\0';
		assert_int_equal(hib_override_format(&bad[i], out, sizeof(out)), -EINVAL);
		assert_string_equal(out, "");
	}
	/* every second of a few days, and the ends of months, come back the same */
	for (int64_t t = at("2027-12-30T00:00:00Z"); t < at("2028-03-02T00:00:00Z"); t += 3599) {
		struct hib_override o = {HIB_OVERRIDE_SLEEP_UNTIL, t}, again;

		assert_int_equal(hib_override_format(&o, out, sizeof(out)), 0);
		assert_int_equal(hib_override_parse(out, &again, NULL), 0);
		assert_int_equal(again.until, t);
	}
}

/* ===== the pattern ===== */

/* Whether HIB_OVERRIDE_PATTERN matches @value, by PCRE2 with '$' at the end only (as RE2). */
static bool pcre_matches(const char *value)
{
	static pcre2_code *re;
	pcre2_match_data *md;
	int errcode, rc;
	PCRE2_SIZE off;

	if (re == NULL)
		re = pcre2_compile((PCRE2_SPTR)HIB_OVERRIDE_PATTERN, PCRE2_ZERO_TERMINATED,
		                   PCRE2_DOLLAR_ENDONLY, &errcode, &off, NULL);
	assert_non_null(re);
	md = pcre2_match_data_create_from_pattern(re, NULL);
	rc = pcre2_match(re, (PCRE2_SPTR)value, strlen(value), 0, 0, md, NULL);
	pcre2_match_data_free(md);
	return rc >= 0;
}

/* Whether HIB_OVERRIDE_PATTERN matches @value as POSIX ERE. */
static bool ere_matches(const char *value)
{
	regex_t rx;
	bool m;

	assert_int_equal(regcomp(&rx, HIB_OVERRIDE_PATTERN, REG_EXTENDED | REG_NOSUB), 0);
	m = regexec(&rx, value, 0, NULL, 0) == 0;
	regfree(&rx);
	return m;
}

/* @value: parser and pattern (PCRE2 and ERE alike) accept it, or not, as @want says. */
static void assert_pattern(const char *value, bool parsed, bool matched)
{
	struct hib_override o;
	bool p = hib_override_parse(value, &o, NULL) == 0;
	bool pcre = pcre_matches(value), ere = ere_matches(value);

	if (pcre != ere)
		fail_msg("\"%s\": PCRE2 %d, ERE %d", value, pcre, ere);
	if (p != parsed || pcre != matched)
		fail_msg("\"%s\": parser %d, pattern %d", value, p, pcre);
}

static void test_hibernation__pattern_agrees_with_the_parser(void **state)
{
	static const char *const good[] = {
	        "sleep",
	        "wake",
	        "skip-next-sleep",
	        "sleep-until=2026-11-28T20:00:00Z",
	        "wake-until=2026-11-28t20:00:00z",
	        "sleep-until=2026-11-28T20:00:00.123456789+05:30",
	        "wake-until=1970-01-01T00:00:00Z",
	        "wake-until=9999-12-31T23:59:59-00:00",
	        "sleep-until=2028-02-29T00:00:00Z",
	        "sleep-until=2026-01-31T23:59:59+23:59",
	};
	static const char *const bad[] = {
	        "",
	        "slep",
	        "Sleep",
	        "sleep ",
	        " wake",
	        "sleep\n",
	        "wake\nwake",
	        "skip-next-sleep\n",
	        "sleep-until=",
	        "sleep-until",
	        "wake-until=now",
	        "sleep-until=2026-11-28T20:00:00Z\n",
	        "sleep-until=2026-11-28T20:00:00",
	        "sleep-until=2026-11-28 20:00:00Z",
	        "sleep-until=2026-11-28T20:00Z",
	        "sleep-until=1969-12-31T23:59:59Z",
	        "sleep-until=0999-01-01T00:00:00Z",
	        "sleep-until=2026-13-01T00:00:00Z",
	        "sleep-until=2026-00-01T00:00:00Z",
	        "sleep-until=2026-01-00T00:00:00Z",
	        "sleep-until=2026-01-32T00:00:00Z",
	        "sleep-until=2026-01-01T24:00:00Z",
	        "sleep-until=2026-01-01T00:60:00Z",
	        "sleep-until=2026-12-31T23:59:60Z",
	        "sleep-until=2026-01-01T00:00:00+24:00",
	        "sleep-until=2026-01-01T00:00:00+00:60",
	        "sleep-until=2026-01-01T00:00:00.Z",
	        "sleep-until=2026-01-01T00:00:00.1234567890Z",
	        "sleep-until=2026-01-01T00:00:00+0100",
	        "wake-until=2026-01-01T00:00:00ZZ",
	        "wake-until=+2026-01-01T00:00:00Z",
	        "wake-until=12026-01-01T00:00:00Z",
	        "sleep-until=2026-01-01T00:00:00UTC",
	        "wake-until=2026-01-01T00:00:00.5.5Z",
	};
	/* refused for what only a calendar knows: the pattern matches them */
	static const char *const calendar[] = {
	        "sleep-until=2026-04-31T00:00:00Z",      "sleep-until=2026-02-29T00:00:00Z",
	        "sleep-until=2100-02-29T00:00:00Z",      "sleep-until=2028-02-30T00:00:00Z",
	        "sleep-until=1970-01-01T00:30:00+01:00", "wake-until=9999-12-31T23:30:00-01:00",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_pattern(good[i], true, true);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_pattern(bad[i], false, false);
	for (size_t i = 0; i < sizeof(calendar) / sizeof(calendar[0]); i++)
		assert_pattern(calendar[i], false, true);
}

/* ===== the saved value ===== */

static struct hib_saved saved(const char *text)
{
	struct hib_saved s;
	struct ll_err err;

	if (hib_saved_parse(text, &s, &err) != 0)
		fail_msg("%s refused: %s", text, err.msg);
	return s;
}

/* @text parses, formats back to @canonical, and that parses to the same struct. */
static void assert_saved_round_trip(const char *text, const char *canonical)
{
	struct hib_saved s = saved(text), again;
	char *out = hib_saved_format(&s);

	assert_non_null(out);
	assert_string_equal(out, canonical);
	again = saved(out);
	assert_memory_equal(&s, &again, sizeof(s));
	free(out);
}

static void test_hibernation__saved_values_and_round_trip(void **state)
{
	struct hib_saved s = saved("{\"supervisor\":\"night\",\"field\":\"replicas\",\"value\":3}");

	assert_string_equal(s.supervisor, "night");
	assert_int_equal(s.field, HIB_SAVED_REPLICAS);
	assert_int_equal(s.replicas, 3);
	s = saved(" { \"value\" : true , \"field\" : \"suspend\", \"supervisor\": \"a.b-c\" }\n");
	assert_int_equal(s.field, HIB_SAVED_SUSPEND);
	assert_true(s.suspend);
	assert_string_equal(s.supervisor, "a.b-c");
	s = saved("{\"supervisor\":\"night\",\"field\":\"paused-replicas\",\"value\":null}");
	assert_int_equal(s.field, HIB_SAVED_PAUSED_REPLICAS);
	assert_false(s.has_string);
	s = saved("{\"supervisor\":\"night\",\"field\":\"paused\",\"value\":\"true\"}");
	assert_int_equal(s.field, HIB_SAVED_PAUSED);
	assert_true(s.has_string);
	assert_string_equal(s.string, "true");

	assert_saved_round_trip("{\"value\":0,\"field\":\"replicas\",\"supervisor\":\"n\"}",
	                        "{\"supervisor\":\"n\",\"field\":\"replicas\",\"value\":0}");
	assert_saved_round_trip(
	        "{\"supervisor\":\"n\",\"field\":\"replicas\",\"value\":2147483647}",
	        "{\"supervisor\":\"n\",\"field\":\"replicas\",\"value\":2147483647}");
	assert_saved_round_trip("{\"supervisor\":\"n\",\"field\":\"suspend\",\"value\":false}",
	                        "{\"supervisor\":\"n\",\"field\":\"suspend\",\"value\":false}");
	assert_saved_round_trip("{\"supervisor\":\"n\",\"field\":\"paused\",\"value\":null}",
	                        "{\"supervisor\":\"n\",\"field\":\"paused\",\"value\":null}");
	assert_saved_round_trip(
	        "{\"supervisor\":\"n\",\"field\":\"paused-replicas\",\"value\":\"\"}",
	        "{\"supervisor\":\"n\",\"field\":\"paused-replicas\",\"value\":\"\"}");
	assert_saved_round_trip(
	        "{\"supervisor\":\"n\",\"field\":\"paused\",\"value\":\"a\\\"\\u00e9\\n\"}",
	        "{\"supervisor\":\"n\",\"field\":\"paused\",\"value\":\"a\\\"\xc3\xa9\\n\"}");
	assert_string_equal(hib_saved_field_name(HIB_SAVED_PAUSED_REPLICAS), "paused-replicas");
	assert_null(hib_saved_field_name(0));
}

static void assert_saved_refused(const char *text, int code, const char *msg)
{
	struct hib_saved s;
	struct ll_err err;

	memset(&s, 0xff, sizeof(s));
	assert_int_equal(hib_saved_parse(text, &s, &err), code);
	if (msg != NULL)
		assert_string_equal(err.msg, msg);
	else
		assert_words(err.msg, "annotation landlord.dev/sleep-saved: ", NULL);
	assert_true(all_zero(&s, sizeof(s)));
	assert_int_equal(hib_saved_parse(text, &s, NULL), code);
}

#define SAVED_MSG(text) "annotation landlord.dev/sleep-saved: " text
#define SAVED_DOC(field, value) \
	"{\"supervisor\":\"night\",\"field\":\"" field "\",\"value\":" value "}"

static void test_hibernation__saved_refusals_name_the_annotation(void **state)
{
	struct ll_err err;
	struct hib_saved s;

	assert_saved_refused(SAVED_DOC("replicas", "\"abc\""), -EINVAL,
	                     SAVED_MSG("\"replicas\" must be a whole number 0-2147483647, not "
	                               "\"abc\""));
	assert_saved_refused(SAVED_DOC("replicas", "-1"), -EINVAL,
	                     SAVED_MSG("\"replicas\" must be a whole number 0-2147483647, not -1"));
	assert_saved_refused(SAVED_DOC("replicas", "2147483648"), -EINVAL,
	                     SAVED_MSG("\"replicas\" must be a whole number 0-2147483647, not "
	                               "2147483648"));
	assert_saved_refused(
	        SAVED_DOC("replicas", "3.0"), -EINVAL,
	        SAVED_MSG("\"replicas\" must be a whole number 0-2147483647, not 3.0"));
	assert_saved_refused(
	        SAVED_DOC("replicas", "null"), -EINVAL,
	        SAVED_MSG("\"replicas\" must be a whole number 0-2147483647, not null"));
	assert_saved_refused(SAVED_DOC("suspend", "1"), -EINVAL,
	                     SAVED_MSG("\"suspend\" must be true or false, not 1"));
	assert_saved_refused(SAVED_DOC("suspend", "\"true\""), -EINVAL,
	                     SAVED_MSG("\"suspend\" must be true or false, not \"true\""));
	assert_saved_refused(SAVED_DOC("paused", "0"), -EINVAL,
	                     SAVED_MSG("\"paused\" must be a string of at most 63 bytes or null, "
	                               "not 0"));
	assert_saved_refused(SAVED_DOC("paused-replicas", "[\"1\"]"), -EINVAL,
	                     SAVED_MSG("\"paused-replicas\" must be a string of at most 63 bytes "
	                               "or null, not [\"1\"]"));
	assert_saved_refused(SAVED_DOC("pods", "1"), -EINVAL,
	                     SAVED_MSG("\"field\" must be one of replicas, suspend, "
	                               "paused-replicas, paused, not \"pods\""));
	assert_saved_refused("{\"supervisor\":\"night\",\"field\":1,\"value\":1}", -EINVAL,
	                     SAVED_MSG("\"field\" must be one of replicas, suspend, "
	                               "paused-replicas, paused, not 1"));
	assert_saved_refused("{\"supervisor\":\"Night\",\"field\":\"replicas\",\"value\":1}",
	                     -EINVAL, NULL);
	hib_saved_parse("{\"supervisor\":\"Night\",\"field\":\"replicas\",\"value\":1}", &s, &err);
	assert_words(err.msg, "supervisor \"Night\" is not a ResourceSupervisor name", "lower case",
	             NULL);
	assert_saved_refused("{\"supervisor\":7,\"field\":\"replicas\",\"value\":1}", -EINVAL,
	                     SAVED_MSG("\"supervisor\" must be a string, not 7"));
	assert_saved_refused("{\"supervisor\":\"n\",\"field\":\"replicas\"}", -EINVAL,
	                     SAVED_MSG("the key \"value\" is missing; the keys are supervisor, "
	                               "field and value"));
	assert_saved_refused("{\"supervisor\":\"n\",\"field\":\"replicas\",\"value\":1,\"x\":1}",
	                     -EINVAL,
	                     SAVED_MSG("unknown key \"x\"; the keys are supervisor, field and "
	                               "value"));
	assert_saved_refused("{\"supervisor\":\"n\",\"field\":\"replicas\",\"value\":1,"
	                     "\"value\":2}",
	                     -EINVAL, NULL);
	hib_saved_parse("{\"supervisor\":\"n\",\"field\":\"replicas\",\"value\":1,\"value\":2}", &s,
	                &err);
	assert_words(err.msg, "invalid JSON", "duplicate", NULL);
	assert_saved_refused("[1]", -EINVAL,
	                     SAVED_MSG("must be a JSON object with the keys supervisor, field and "
	                               "value, not [1]"));
	assert_saved_refused("", -EINVAL, NULL);
	assert_saved_refused(NULL, -EINVAL, NULL);
	assert_saved_refused("3", -EINVAL, NULL);
	assert_saved_refused("{\"supervisor\":\"n\",\"field\":\"replicas\",\"value\":1} x", -EINVAL,
	                     NULL);
	assert_saved_refused(SAVED_DOC("paused", "\"a\\u0000b\""), -EINVAL, NULL);
	assert_saved_refused("{\"supervisor\":\"n\",\"field\":\"paused\",\"value\":\"\xff\"}",
	                     -EINVAL, NULL);
	/* a control character in the input stays escaped in the one line */
	assert_saved_refused(SAVED_DOC("paused", "\"\\n\x01\""), -EINVAL, NULL);
	hib_saved_parse(SAVED_DOC("paused", "\"\\n\x01\""), &s, &err);
	assert_null(strchr(err.msg, '\n'));
	assert_null(strchr(err.msg, '\x01'));
}

static void test_hibernation__saved_caps(void **state)
{
	char text[2 * HIB_SAVED_TEXT_MAX], value[80], name[300];
	struct hib_saved s;

	/* a KEDA value of 63 bytes is kept, one of 64 is refused */
	memset(value, 'v', 63);
	value[63] = '\0';
	snprintf(text, sizeof(text), SAVED_DOC("paused", "\"%s\""), value);
	s = saved(text);
	assert_string_equal(s.string, value);
	snprintf(text, sizeof(text), SAVED_DOC("paused", "\"%sv\""), value);
	assert_saved_refused(text, -EINVAL,
	                     SAVED_MSG("\"paused\" must be a string of at most 63 bytes or null, "
	                               "not \"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"
	                               "vvvvvvvvvvv\""));
	/* a supervisor of 253 bytes is a name, one of 254 is not */
	memset(name, 'a', 253);
	name[253] = '\0';
	for (int i = 63; i < 253; i += 64)
		name[i] = '.';
	snprintf(text, sizeof(text), "{\"supervisor\":\"%s\",\"field\":\"suspend\",\"value\":true}",
	         name);
	assert_string_equal(saved(text).supervisor, name);
	snprintf(text, sizeof(text),
	         "{\"supervisor\":\"%sa\",\"field\":\"suspend\",\"value\":true}", name);
	assert_saved_refused(text, -EINVAL, NULL);
	/* the text: 1 KiB at most, whatever is in it */
	memset(text, ' ', sizeof(text));
	memcpy(text, SAVED_DOC("replicas", "1"), strlen(SAVED_DOC("replicas", "1")));
	text[HIB_SAVED_TEXT_MAX] = '\0';
	assert_int_equal(saved(text).replicas, 1);
	text[HIB_SAVED_TEXT_MAX] = ' ';
	text[HIB_SAVED_TEXT_MAX + 1] = '\0';
	assert_saved_refused(text, -EMSGSIZE, SAVED_MSG("the value is longer than 1024 bytes"));
}

static void test_hibernation__saved_check_refuses_what_format_cannot_write(void **state)
{
	struct hib_saved ok = {.supervisor = "night",
	                       .field = HIB_SAVED_PAUSED,
	                       .has_string = true,
	                       .string = "2"};
	struct hib_saved s;
	struct ll_err err;
	char *text;

	assert_int_equal(hib_saved_check(&ok, &err), 0);
	text = hib_saved_format(&ok);
	assert_string_equal(text,
	                    "{\"supervisor\":\"night\",\"field\":\"paused\",\"value\":\"2\"}");
	free(text);

	s = ok, s.field = 0;
	assert_int_equal(hib_saved_check(&s, &err), -EINVAL);
	assert_words(err.msg, "field 0", NULL);
	s = ok, s.supervisor[0] = 'N';
	assert_int_equal(hib_saved_check(&s, &err), -EINVAL);
	assert_words(err.msg, "supervisor \"Night\"", NULL);
	s = ok, s.replicas = 1;
	assert_int_equal(hib_saved_check(&s, &err), -EINVAL);
	assert_words(err.msg, "replicas", "\"paused\"", NULL);
	s = ok, s.field = HIB_SAVED_REPLICAS, s.has_string = false, s.string[0] = '\0';
	s.replicas = -1;
	assert_int_equal(hib_saved_check(&s, &err), -EINVAL);
	assert_words(err.msg, "0-2147483647", "-1", NULL);
	s = ok, s.suspend = true;
	assert_int_equal(hib_saved_check(&s, &err), -EINVAL);
	s = ok, s.has_string = false;
	assert_int_equal(hib_saved_check(&s, &err), -EINVAL);
	s = ok, s.field = HIB_SAVED_SUSPEND;
	assert_int_equal(hib_saved_check(&s, &err), -EINVAL);
	s = ok, memset(s.string, 'x', sizeof(s.string));
	assert_int_equal(hib_saved_check(&s, &err), -EINVAL);
	assert_words(err.msg, "at most 63 bytes", NULL);
	s = ok, memcpy(s.string, "\xc3(", 3);
	assert_int_equal(hib_saved_check(&s, &err), -EINVAL);
	assert_words(err.msg, "UTF-8", NULL);
	s = ok, memcpy(s.string, "\xed\xa0\x80", 4); /* a surrogate */
	assert_int_equal(hib_saved_check(&s, NULL), -EINVAL);
	s = ok, memcpy(s.string, "\xc0\xaf", 3); /* overlong */
	assert_int_equal(hib_saved_check(&s, NULL), -EINVAL);
	assert_null(hib_saved_format(&s));
	s = ok, memcpy(s.string, "\xf0\x9f\x98\x80", 5); /* U+1F600 */
	assert_int_equal(hib_saved_check(&s, NULL), 0);
	s = ok, memset(s.supervisor, 'a', sizeof(s.supervisor));
	assert_int_equal(hib_saved_check(&s, &err), -EINVAL);
	assert_null(hib_saved_format(&s));
}

/* ===== the quota reservation ===== */

static struct hib_reserved *reserved(const char *text)
{
	static struct hib_reserved r;
	struct ll_err err;

	if (hib_reserved_parse(text, &r, &err) != 0)
		fail_msg("%s refused: %s", text, err.msg);
	return &r;
}

static void test_hibernation__reserved_values_and_round_trip(void **state)
{
	const char *text = "{\"supervisor\":\"night\",\"used\":{\"requests.cpu\":\"1500m\","
	                   "\"requests.memory\":\"2Gi\",\"count/deployments.apps\":\"3\","
	                   "\"requests.nvidia.com/gpu\":\"0\",\"limits.memory\":\"1.5Gi\"}}";
	struct hib_reserved *r = reserved(text), again;
	struct qty q;
	char *out;

	assert_string_equal(r->supervisor, "night");
	assert_int_equal(r->count, 5);
	assert_string_equal(r->used[0].resource, "requests.cpu");
	assert_string_equal(r->used[0].quantity, "1500m");
	assert_int_equal(qty_milli_ceil(&r->used[0].value), 1500);
	assert_string_equal(r->used[2].resource, "count/deployments.apps");
	assert_int_equal(qty_value_ceil(&r->used[4].value), 1536LL << 20);
	assert_int_equal(qty_parse("1.5Gi", &q), 0);
	assert_int_equal(qty_cmp(&q, &r->used[4].value), 0);

	out = hib_reserved_format(r);
	assert_string_equal(out, text); /* in the order written, quantities as written */
	assert_int_equal(hib_reserved_parse(out, &again, NULL), 0);
	assert_memory_equal(&again, r, sizeof(again));
	free(out);

	r = reserved("{\"used\":{},\"supervisor\":\"n\"}");
	assert_int_equal(r->count, 0);
	out = hib_reserved_format(r);
	assert_string_equal(out, "{\"supervisor\":\"n\",\"used\":{}}");
	free(out);
}

static void assert_reserved_refused(const char *text, int code, const char *msg)
{
	struct hib_reserved r;
	struct ll_err err;

	memset(&r, 0xff, sizeof(r));
	assert_int_equal(hib_reserved_parse(text, &r, &err), code);
	if (msg != NULL && strncmp(msg, "annotation ", 11) == 0)
		assert_string_equal(err.msg, msg);
	else
		assert_words(err.msg, "annotation landlord.dev/sleep-reserved: ", msg, NULL);
	assert_true(all_zero(&r, sizeof(r)));
	assert_int_equal(hib_reserved_parse(text, &r, NULL), code);
}

#define RESERVED_MSG(text) "annotation landlord.dev/sleep-reserved: " text
#define RESERVED_DOC(used) "{\"supervisor\":\"night\",\"used\":{" used "}}"

static void test_hibernation__reserved_refusals_name_the_annotation(void **state)
{
	assert_reserved_refused(RESERVED_DOC("\"requests.cpu\":\"lots\""), -EINVAL,
	                        RESERVED_MSG("quantity \"lots\" of \"requests.cpu\" is not a "
	                                     "Kubernetes quantity (e.g. \"500m\", \"2Gi\", "
	                                     "\"3\")"));
	assert_reserved_refused(RESERVED_DOC("\"requests.cpu\":5"), -EINVAL,
	                        RESERVED_MSG("the quantity of \"requests.cpu\" must be a string "
	                                     "like \"500m\" or \"2Gi\", not 5"));
	assert_reserved_refused(RESERVED_DOC("\"pods\":\"-1\""), -EINVAL,
	                        RESERVED_MSG("quantity \"-1\" of \"pods\" is negative"));
	assert_reserved_refused(RESERVED_DOC("\"pods\":\"1e40\""), -EINVAL,
	                        RESERVED_MSG("quantity \"1e40\" of \"pods\" is too large for a "
	                                     "Kubernetes quantity"));
	assert_reserved_refused(RESERVED_DOC("\"requests cpu\":\"1\""), -EINVAL,
	                        "resource name \"requests cpu\" is not a qualified name: name part "
	                        "must consist of alphanumeric characters");
	assert_reserved_refused(RESERVED_DOC("\"\":\"1\""), -EINVAL,
	                        "resource name \"\" is not a qualified name");
	assert_reserved_refused(RESERVED_DOC("\"pods\":\"1\",\"pods\":\"2\""), -EINVAL,
	                        "duplicate");
	assert_reserved_refused("{\"supervisor\":\"night\",\"used\":[]}", -EINVAL,
	                        RESERVED_MSG("\"used\" must be an object of resource names and "
	                                     "quantities, not []"));
	assert_reserved_refused("{\"supervisor\":\"night\"}", -EINVAL,
	                        RESERVED_MSG("the key \"used\" is missing; the keys are supervisor "
	                                     "and used"));
	assert_reserved_refused("{\"supervisor\":\"night\",\"used\":{},\"hard\":{}}", -EINVAL,
	                        RESERVED_MSG("unknown key \"hard\"; the keys are supervisor and "
	                                     "used"));
	assert_reserved_refused("{\"supervisor\":\"-night\",\"used\":{}}", -EINVAL,
	                        "supervisor \"-night\" is not a ResourceSupervisor name");
	assert_reserved_refused("{\"supervisor\":null,\"used\":{}}", -EINVAL,
	                        RESERVED_MSG("\"supervisor\" must be a string, not null"));
	assert_reserved_refused("{\"supervisor\":\"night\",\"used\":{}", -EINVAL, "invalid JSON");
	assert_reserved_refused("\"night\"", -EINVAL, "invalid JSON");
}

static void test_hibernation__reserved_caps(void **state)
{
	static char text[HIB_RESERVED_TEXT_MAX + 64];
	static struct hib_reserved r;
	char name[300], q[80];
	size_t len;

	/* 64 resources fit, 65 do not */
	len = (size_t)snprintf(text, sizeof(text), "{\"supervisor\":\"night\",\"used\":{");
	for (int i = 0; i < HIB_RESERVED_MAX; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\"count/r%d\":\"%d\"",
		                        i > 0 ? "," : "", i, i);
	snprintf(text + len, sizeof(text) - len, "}}");
	assert_int_equal(reserved(text)->count, HIB_RESERVED_MAX);
	snprintf(text + len, sizeof(text) - len, ",\"pods\":\"1\"}}");
	assert_reserved_refused(text, -EMSGSIZE,
	                        RESERVED_MSG("\"used\" has 65 resources, more than the 64 "
	                                     "allowed"));
	/* a name of 253 bytes fits, 254 do not */
	memset(name, 'a', sizeof(name));
	name[189] = '/';
	name[253] = '\0';
	snprintf(text, sizeof(text), RESERVED_DOC("\"%s\":\"1\""), name);
	assert_string_equal(reserved(text)->used[0].resource, name);
	name[188] = '.', name[189] = 'a', name[190] = '/', name[253] = 'a', name[254] = '\0';
	snprintf(text, sizeof(text), RESERVED_DOC("\"%s\":\"1\""), name);
	assert_reserved_refused(text, -EINVAL, "must be no more than 253 characters");
	/* a quantity of 63 bytes fits, 64 do not */
	memset(q, '0', 63);
	q[63] = '\0';
	snprintf(text, sizeof(text), RESERVED_DOC("\"pods\":\"%s\""), q);
	assert_string_equal(reserved(text)->used[0].quantity, q);
	snprintf(text, sizeof(text), RESERVED_DOC("\"pods\":\"%s0\""), q);
	assert_reserved_refused(text, -EINVAL, "is longer than 63 bytes");
	/* the text: HIB_RESERVED_TEXT_MAX at most */
	memset(text, ' ', sizeof(text));
	memcpy(text, RESERVED_DOC(""), strlen(RESERVED_DOC("")));
	text[HIB_RESERVED_TEXT_MAX] = '\0';
	assert_int_equal(reserved(text)->count, 0);
	text[HIB_RESERVED_TEXT_MAX] = ' ';
	text[HIB_RESERVED_TEXT_MAX + 1] = '\0';
	assert_reserved_refused(text, -EMSGSIZE,
	                        RESERVED_MSG("the value is longer than 32768 bytes"));
	/* the longest reservation formats within the cap */
	assert_int_equal(hib_reserved_init(&r, "night", NULL), 0);
	for (int i = 0; i < HIB_RESERVED_MAX; i++) {
		memset(name, 'a', 253);
		snprintf(name, sizeof(name), "%03d", i);
		name[3] = 'a';
		name[189] = '/';
		name[253] = '\0';
		assert_int_equal(hib_reserved_add(&r, name, q, NULL), 0);
	}
	{
		char *out = hib_reserved_format(&r);

		assert_non_null(out);
		assert_true(strlen(out) <= HIB_RESERVED_TEXT_MAX);
		assert_int_equal(hib_reserved_parse(out, &r, NULL), 0);
		free(out);
	}
}

static void test_hibernation__reserved_add_builds_what_format_writes(void **state)
{
	static struct hib_reserved r, again;
	struct ll_err err;
	char *out;

	assert_int_equal(hib_reserved_init(&r, "Night", &err), -EINVAL);
	assert_words(err.msg, "supervisor \"Night\" is not a ResourceSupervisor name", NULL);
	assert_true(all_zero(&r, sizeof(r)));
	assert_int_equal(hib_reserved_init(&r, NULL, &err), -EINVAL);
	assert_int_equal(hib_reserved_init(&r, "night", &err), 0);
	assert_int_equal(hib_reserved_add(&r, "requests.cpu", "250m", &err), 0);
	assert_int_equal(hib_reserved_add(&r, "pods", "2", &err), 0);
	assert_int_equal(hib_reserved_add(&r, "pods", "3", &err), -EINVAL);
	assert_string_equal(err.msg, "resource \"pods\" appears twice");
	assert_int_equal(hib_reserved_add(&r, "cpu", "x", &err), -EINVAL);
	assert_string_equal(err.msg, "quantity \"x\" of \"cpu\" is not a Kubernetes quantity "
	                             "(e.g. \"500m\", \"2Gi\", \"3\")");
	assert_int_equal(hib_reserved_add(&r, "a b", "1", NULL), -EINVAL);
	assert_int_equal(hib_reserved_add(&r, NULL, "1", NULL), -EINVAL);
	assert_int_equal(r.count, 2);

	out = hib_reserved_format(&r);
	assert_string_equal(out, "{\"supervisor\":\"night\",\"used\":{\"requests.cpu\":\"250m\","
	                         "\"pods\":\"2\"}}");
	assert_int_equal(hib_reserved_parse(out, &again, NULL), 0);
	assert_memory_equal(&again, &r, sizeof(r));
	free(out);

	for (int i = 2; i < HIB_RESERVED_MAX; i++) {
		char name[16];

		snprintf(name, sizeof(name), "count/r%d", i);
		assert_int_equal(hib_reserved_add(&r, name, "1", NULL), 0);
	}
	assert_int_equal(hib_reserved_add(&r, "more", "1", &err), -EMSGSIZE);
	assert_words(err.msg, "at most 64 resources", NULL);

	/* format refuses what add would not make */
	again = r, again.used[1].value.nano += 1;
	assert_null(hib_reserved_format(&again));
	again = r, again.used[1].quantity[0] = 'x';
	assert_null(hib_reserved_format(&again));
	again = r, memcpy(again.used[1].resource, "requests.cpu", 13);
	assert_null(hib_reserved_format(&again));
	again = r, again.count = HIB_RESERVED_MAX + 1;
	assert_null(hib_reserved_format(&again));
	again = r, again.supervisor[0] = '\0';
	assert_null(hib_reserved_format(&again));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_hibernation__override_values),
	        cmocka_unit_test(test_hibernation__override_refusals_name_the_annotation),
	        cmocka_unit_test(test_hibernation__rfc3339_fraction_offsets_and_case),
	        cmocka_unit_test(test_hibernation__rfc3339_each_bad_field_is_named),
	        cmocka_unit_test(test_hibernation__override_format_round_trip),
	        cmocka_unit_test(test_hibernation__pattern_agrees_with_the_parser),
	        cmocka_unit_test(test_hibernation__saved_values_and_round_trip),
	        cmocka_unit_test(test_hibernation__saved_refusals_name_the_annotation),
	        cmocka_unit_test(test_hibernation__saved_caps),
	        cmocka_unit_test(test_hibernation__saved_check_refuses_what_format_cannot_write),
	        cmocka_unit_test(test_hibernation__reserved_values_and_round_trip),
	        cmocka_unit_test(test_hibernation__reserved_refusals_name_the_annotation),
	        cmocka_unit_test(test_hibernation__reserved_caps),
	        cmocka_unit_test(test_hibernation__reserved_add_builds_what_format_writes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
