/*
 * test_cron.c - five-field schedules: values, names in any case, 7 = Sunday, ranges, steps
 * ("*" + "/n", a-b/n, a/n), lists and macros; Vixie cron's day rule (both day fields restricted:
 * either; one starting with "*": both); each bad field refused with one line naming it; the next
 * firing strictly after an instant in UTC, and in Europe/Berlin and Australia/Lord_Howe (a
 * 30-minute shift) across DST gaps (fires once, at the end of the gap) and repeats (fires once,
 * the first time), also in 2090 under the zone files' POSIX footers; a schedule that fires too
 * rarely is an error, not a hang; and agreement with a minute-by-minute search.
 */
#include <errno.h>
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

#include "base/err.h"
#include "tenancy/cron.h"
#include "tenancy/tzif.h"
#include "testtime.h"

static struct cron parse(const char *expr)
{
	struct cron c;
	struct ll_err err;

	if (cron_parse(expr, &c, &err) != 0)
		fail_msg("\"%s\" refused: %s", expr, err.msg);
	return c;
}

/* The firings of @expr in @zone after @after, @n of them chained, each checked against the
 * NULL-terminated @want. */
static void assert_firings(const char *expr, const struct tz_zone *zone, const char *after, ...)
{
	struct cron c = parse(expr);
	int64_t t = at(after), next;
	struct ll_err err;
	const char *want;
	va_list ap;

	va_start(ap, after);
	while ((want = va_arg(ap, const char *)) != NULL) {
		char got[32];

		if (cron_next(&c, zone, t, &next, &err) != 0)
			fail_msg("\"%s\" after %s: %s", expr, iso(t, got), err.msg);
		if (next != at(want))
			fail_msg("\"%s\" after %s: got %s, want %s", expr, iso(t, got),
			         iso(next, (char[32]){0}), want);
		t = next;
	}
	va_end(ap);
}

/* @expr refused with -EINVAL and @msg. */
static void assert_refused(const char *expr, const char *msg)
{
	struct cron c;
	struct ll_err err;

	memset(&c, 0xff, sizeof(c));
	assert_int_equal(cron_parse(expr, &c, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	assert_int_equal(c.minutes | c.hours | c.mdays | c.months | c.wdays, 0);
	assert_int_equal(cron_parse(expr, &c, NULL), -EINVAL);
}

static uint64_t bits(int first, ...)
{
	uint64_t mask = 0;
	va_list ap;

	va_start(ap, first);
	for (int v = first; v >= 0; v = va_arg(ap, int))
		mask |= UINT64_C(1) << v;
	va_end(ap);
	return mask;
}

/* ===== parsing ===== */

static void test_cron__values_ranges_steps_lists_and_names(void **state)
{
	struct cron c = parse("*/15 9-17/4 1,15,31 jan-MAR/2 Mon-fri");

	assert_true(c.minutes == bits(0, 15, 30, 45, -1));
	assert_true(c.hours == bits(9, 13, 17, -1));
	assert_true(c.mdays == bits(1, 15, 31, -1));
	assert_true(c.months == bits(1, 3, -1));
	assert_true(c.wdays == bits(1, 2, 3, 4, 5, -1));
	assert_false(c.mday_star || c.wday_star);

	c = parse("  5/20\t23 */10 DEC sun,sat\n");
	assert_true(c.minutes == bits(5, 25, 45, -1)); /* a/n: from a to the end */
	assert_true(c.hours == bits(23, -1));
	assert_true(c.mdays == bits(1, 11, 21, 31, -1));
	assert_true(c.months == bits(12, -1));
	assert_true(c.wdays == bits(0, 6, -1));
	assert_true(c.mday_star && !c.wday_star);

	c = parse("0-59 0-23 1-31 1-12 0-7");
	assert_true(c.minutes == (UINT64_C(1) << 60) - 1 && c.hours == (1u << 24) - 1);
	assert_true(c.mdays == 0xfffffffe && c.months == 0x1ffe && c.wdays == 0x7f);

	/* 7 is Sunday, like 0 */
	assert_true(parse("0 0 * * 7").wdays == bits(0, -1));
	assert_true(parse("0 0 * * 5-7").wdays == bits(0, 5, 6, -1));
	assert_true(parse("0 0 * * */7").wdays == bits(0, -1));
	assert_true(parse("0 0 * * sat/1").wdays == bits(0, 6, -1));
	assert_true(parse("0 0 * * 0,7").wdays == bits(0, -1));
	/* a step past the range fires once, at its start; single values and repeats */
	assert_true(parse("10-20/59 * * * *").minutes == bits(10, -1));
	assert_true(parse("7,7,3-4 * * * *").minutes == bits(3, 4, 7, -1));
	assert_true(parse("00 07 09 011 06").hours == bits(7, -1));
	assert_true(parse("* * * * *").wday_star && parse("* * */2 * *").mday_star);
}

static void test_cron__macros(void **state)
{
	static const struct {
		const char *macro, *expr;
	} m[] = {
	        {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
	        {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
	        {"@hourly", "0 * * * *"}, {" @Daily\n", "0 0 * * *"},
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		struct cron a = parse(m[i].macro), b = parse(m[i].expr);

		assert_memory_equal(&a, &b, sizeof(a));
	}
	assert_firings("@weekly", NULL, "2026-06-01T00:00:00Z", "2026-06-07T00:00:00Z",
	               "2026-06-14T00:00:00Z", NULL);
	assert_firings("@hourly", NULL, "2026-06-01T00:00:00Z", "2026-06-01T01:00:00Z", NULL);
}

static void test_cron__each_bad_field_is_named(void **state)
{
	static const struct {
		const char *expr, *msg;
	} bad[] = {
	        {"60 * * * *", "minute 60 is out of range 0-59"},
	        {"* 24 * * *", "hour 24 is out of range 0-23"},
	        {"* * 0 * *", "day-of-month 0 is out of range 1-31"},
	        {"* * 32 * *", "day-of-month 32 is out of range 1-31"},
	        {"* * * 0 *", "month 0 is out of range 1-12"},
	        {"* * * 13 *", "month 13 is out of range 1-12"},
	        {"* * * * 8", "day-of-week 8 is out of range 0-7"},
	        {"99999999999 * * * *", "minute 99999999999 is out of range 0-59"},
	        {"1-60 * * * *", "minute 60 is out of range 0-59"},
	        {"*/0 * * * *", "minute step 0 is out of range 1-59"},
	        {"*/60 * * * *", "minute step 60 is out of range 1-59"},
	        {"* */24 * * *", "hour step 24 is out of range 1-23"},
	        {"* * 1-31/31 * *", "day-of-month step 31 is out of range 1-30"},
	        {"* * * */12 *", "month step 12 is out of range 1-11"},
	        {"* * * * */8", "day-of-week step 8 is out of range 1-7"},
	        {"* * * * 1/0", "day-of-week step 0 is out of range 1-7"},
	        {"*/x * * * *", "minute step \"x\" is not a number"},
	        {"*/ * * * *", "minute \"*/\" has no step after \"/\""},
	        {"*/-1 * * * *", "minute \"*/-1\" has an unexpected \"-\""},
	        {"* 17-9 * * *", "hour range 17-9 is reversed: write the smaller value first"},
	        {"* * * * fri-mon",
	         "day-of-week range fri-mon is reversed: write the smaller value first"},
	        {"* * * dec-jan *",
	         "month range dec-jan is reversed: write the smaller value first"},
	        {"* * * foo *", "month \"foo\" is not a month (1-12 or jan-dec)"},
	        {"* * * january *", "month \"january\" is not a month (1-12 or jan-dec)"},
	        {"* * * * monday", "day-of-week \"monday\" is not a day (0-7 or sun-sat)"},
	        {"* * * * jan", "day-of-week \"jan\" is not a day (0-7 or sun-sat)"},
	        {"* * mon * *", "day-of-month \"mon\" is not a number"},
	        {"x * * * *", "minute \"x\" is not a number"},
	        {"5x * * * *", "minute \"5x\" is not a number"},
	        {"5# * * * *", "minute \"5#\" has an unexpected \"#\""},
	        {"1-2-3 * * * *", "minute \"1-2-3\" has an unexpected \"-\""},
	        {"*-5 * * * *", "minute \"*-5\" has an unexpected \"-\""},
	        {"-5 * * * *", "minute \"-5\" has an unexpected \"-\""},
	        {"** * * * *", "minute \"**\" has an unexpected \"*\""},
	        {"1-* * * * *", "minute \"1-*\" has an unexpected \"*\""},
	        {"5\x01 * * * *", "minute \"5\\x01\" has an unexpected \"\\x01\""},
	        {"* * * * 1\xc3\xa9", "day-of-week \"1\\xc3\\xa9\" has an unexpected \"\\xc3\""},
	        {"* * * * \"", "day-of-week \"\\\"\" has an unexpected \"\\\"\""},
	        {"1,,2 * * * *", "minute has an empty item in \"1,,2\""},
	        {"1, * * * *", "minute has an empty item in \"1,\""},
	        {"* * * ,jan *", "month has an empty item in \",jan\""},
	        {"* * * * *  *", "the schedule has 6 fields; it needs 5 (minute hour day-of-month "
	                         "month day-of-week) or a macro like @daily"},
	        {"* * * *", "the schedule has 4 fields; it needs 5 (minute hour day-of-month "
	                    "month day-of-week) or a macro like @daily"},
	        {"", "the schedule is empty; it needs 5 fields (minute hour day-of-month month "
	             "day-of-week) or a macro like @daily"},
	        {" \t\n",
	         "the schedule is empty; it needs 5 fields (minute hour day-of-month month "
	         "day-of-week) or a macro like @daily"},
	        {"@reboot", "unknown macro \"@reboot\": use @yearly, @annually, @monthly, @weekly, "
	                    "@daily, @midnight or @hourly"},
	        {"@", "unknown macro \"@\": use @yearly, @annually, @monthly, @weekly, @daily, "
	              "@midnight or @hourly"},
	        {"@dailyx", "unknown macro \"@dailyx\": use @yearly, @annually, @monthly, @weekly, "
	                    "@daily, @midnight or @hourly"},
	        {"@daily 5", "the macro \"@daily\" is the whole schedule: nothing may follow it"},
	        {"0 0 30 2 *", "day-of-month \"30\" never occurs in month \"2\""},
	        {"0 0 31 apr,jun,sep,nov *",
	         "day-of-month \"31\" never occurs in month \"apr,jun,sep,nov\""},
	        {"0 0 30-31 feb *", "day-of-month \"30-31\" never occurs in month \"feb\""},
	};
	char long_expr[CRON_EXPR_MAX + 2];
	struct cron c;
	struct ll_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_refused(bad[i].expr, bad[i].msg);
	/* Feb 30 with a day of the week: the days of February that are that day */
	parse("0 0 30 2 mon");
	parse("0 0 29 2 *");
	parse("0 0 31 1-2 *");

	memset(long_expr, ' ', sizeof(long_expr) - 1);
	long_expr[sizeof(long_expr) - 1] = '\0';
	memcpy(long_expr, "* * * * *", 9);
	assert_int_equal(cron_parse(long_expr, &c, &err), -E2BIG);
	assert_string_equal(err.msg, "the schedule is longer than 256 characters");
	long_expr[CRON_EXPR_MAX] = '\0';
	assert_int_equal(cron_parse(long_expr, &c, &err), 0);
}

/* ===== the next firing ===== */

static void test_cron__next_is_strictly_after(void **state)
{
	assert_firings("* * * * *", NULL, "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z",
	               "2026-01-01T00:02:00Z", NULL);
	assert_firings("* * * * *", NULL, "2026-01-01T00:00:59Z", "2026-01-01T00:01:00Z", NULL);
	assert_firings("30 9 * * *", NULL, "2026-01-01T09:30:00Z", "2026-01-02T09:30:00Z", NULL);
	assert_firings("0 0 1 1 *", NULL, "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z",
	               "2028-01-01T00:00:00Z", NULL);
	assert_firings("59 23 31 12 *", NULL, "2026-06-01T00:00:00Z", "2026-12-31T23:59:00Z", NULL);
	/* before 1970 */
	assert_firings("0 0 1 1 *", NULL, "1969-06-01T12:34:56Z", "1970-01-01T00:00:00Z", NULL);
	assert_firings("0 0 29 2 *", NULL, "2024-03-01T00:00:00Z", "2028-02-29T00:00:00Z", NULL);
	/* Feb 29 across 2100, which is not a leap year: 8 years */
	assert_firings("0 0 29 2 *", NULL, "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z", NULL);
}

static void test_cron__days_are_ored_when_both_are_restricted(void **state)
{
	/* 2026-06-01 is a Monday, 07-01 a Wednesday */
	assert_firings("0 0 1 * mon", NULL, "2026-06-01T00:00:00Z", "2026-06-08T00:00:00Z",
	               "2026-06-15T00:00:00Z", "2026-06-22T00:00:00Z", "2026-06-29T00:00:00Z",
	               "2026-07-01T00:00:00Z", "2026-07-06T00:00:00Z", NULL);
	assert_firings("0 0 13 * 5", NULL, "2026-02-01T00:00:00Z", "2026-02-06T00:00:00Z",
	               "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z", "2026-02-27T00:00:00Z",
	               "2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z", NULL);
	/* Feb 30 or a Monday of February */
	assert_firings("0 0 30 2 mon", NULL, "2026-01-01T00:00:00Z", "2026-02-02T00:00:00Z", NULL);
	/* one field "*": only the other restricts */
	assert_firings("0 0 * * mon", NULL, "2026-06-01T00:00:00Z", "2026-06-08T00:00:00Z", NULL);
	assert_firings("0 0 1,15 * *", NULL, "2026-06-01T00:00:00Z", "2026-06-15T00:00:00Z",
	               "2026-07-01T00:00:00Z", NULL);
	/* starting with "*" and a step, still unrestricted for the rule: both must match */
	assert_firings("0 0 */2 * mon", NULL, "2026-06-01T00:00:00Z", "2026-06-15T00:00:00Z",
	               "2026-06-29T00:00:00Z", "2026-07-13T00:00:00Z", "2026-07-27T00:00:00Z",
	               NULL);
	/* the 1st, when a Sunday, Tuesday, Thursday or Saturday */
	assert_firings("0 0 1 * */2", NULL, "2026-03-01T00:00:00Z", "2026-08-01T00:00:00Z",
	               "2026-09-01T00:00:00Z", NULL);
	/* 7 = Sunday */
	assert_firings("0 12 * * 7", NULL, "2026-06-01T00:00:00Z", "2026-06-07T12:00:00Z", NULL);
}

static void test_cron__berlin_gap_fires_once_after_it(void **state)
{
	struct tz_zone *z = load("Europe/Berlin");

	/* 2026-03-29 02:00 CET is 03:00 CEST (01:00Z) */
	assert_firings("30 2 * * *", z, "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z",
	               "2026-03-30T00:30:00Z", NULL);
	assert_firings("0 2 * * *", z, "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z", NULL);
	assert_firings("*/15 * * * *", z, "2026-03-29T00:45:00Z", "2026-03-29T01:00:00Z",
	               "2026-03-29T01:15:00Z", NULL);
	/* 02:00, 02:30 and 03:00 all are 01:00Z: once */
	assert_firings("0,30 2,3 * * *", z, "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z",
	               "2026-03-29T01:30:00Z", "2026-03-30T00:00:00Z", NULL);
	assert_firings("30 2 29 3 *", z, "2026-01-01T00:00:00Z", "2026-03-29T01:00:00Z",
	               "2027-03-29T00:30:00Z", NULL);
	tz_free(z);
}

static void test_cron__berlin_repeat_fires_once_the_first_time(void **state)
{
	struct tz_zone *z = load("Europe/Berlin");

	/* 2026-10-25 03:00 CEST is 02:00 CET (01:00Z): 02:00-02:59 is shown twice */
	assert_firings("30 2 * * *", z, "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z",
	               "2026-10-26T01:30:00Z", NULL);
	assert_firings("30 2 * * *", z, "2026-10-25T01:10:00Z", "2026-10-26T01:30:00Z", NULL);
	assert_firings("30 2 * * *", z, "2026-10-25T00:29:59Z", "2026-10-25T00:30:00Z", NULL);
	assert_firings("*/15 * * * *", z, "2026-10-25T00:30:00Z", "2026-10-25T00:45:00Z",
	               "2026-10-25T02:00:00Z", "2026-10-25T02:15:00Z", NULL);
	assert_firings("0 * * * *", z, "2026-10-24T23:30:00Z", "2026-10-25T00:00:00Z",
	               "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z", NULL);
	assert_firings("0 3 * * *", z, "2026-10-24T12:00:00Z", "2026-10-25T02:00:00Z", NULL);
	tz_free(z);
}

static void test_cron__lord_howe_half_hour_gap_and_repeat(void **state)
{
	struct tz_zone *z = load("Australia/Lord_Howe");

	/* 2026-10-04 02:00 +10:30 is 02:30 +11 (2026-10-03T15:30Z) */
	assert_firings("15 2 * * *", z, "2026-10-03T12:00:00Z", "2026-10-03T15:30:00Z",
	               "2026-10-04T15:15:00Z", NULL);
	assert_firings("0,15,30,45 2 * * *", z, "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z",
	               "2026-10-03T15:45:00Z", "2026-10-04T15:00:00Z", NULL);
	/* 2026-04-05 02:00 +11 is 01:30 +10:30 (2026-04-04T15:00Z): 01:30-01:59 twice */
	assert_firings("45 1 * * *", z, "2026-04-04T12:00:00Z", "2026-04-04T14:45:00Z",
	               "2026-04-05T15:15:00Z", NULL);
	assert_firings("*/10 * * * *", z, "2026-04-04T14:40:00Z", "2026-04-04T14:50:00Z",
	               "2026-04-04T15:30:00Z", "2026-04-04T15:40:00Z", NULL);
	assert_firings("30 1 5 4 *", z, "2026-01-01T00:00:00Z", "2026-04-04T14:30:00Z",
	               "2027-04-04T15:00:00Z", NULL); /* 2027-04-04 fell back already */
	tz_free(z);
}

static void test_cron__the_zone_footer_rules_in_2090(void **state)
{
	struct tz_zone *berlin = load("Europe/Berlin"), *lhi = load("Australia/Lord_Howe");

	assert_firings("30 2 * * *", berlin, "2090-03-25T12:00:00Z", "2090-03-26T01:00:00Z",
	               "2090-03-27T00:30:00Z", NULL);
	assert_firings("30 2 * * *", berlin, "2090-10-28T12:00:00Z", "2090-10-29T00:30:00Z",
	               "2090-10-30T01:30:00Z", NULL);
	assert_firings("15 2 1 10 *", lhi, "2090-01-01T00:00:00Z", "2090-09-30T15:30:00Z",
	               "2091-09-30T15:45:00Z", NULL); /* 2091: DST from Oct 7 */
	assert_firings("45 1 * * *", lhi, "2090-04-01T12:00:00Z", "2090-04-01T14:45:00Z",
	               "2090-04-02T15:15:00Z", NULL);
	tz_free(berlin);
	tz_free(lhi);
}

static void test_cron__rare_and_impossible_schedules_end(void **state)
{
	struct cron c = parse("0 0 29 2 */7"), zero;
	struct ll_err err;
	int64_t next = 0;

	/* Feb 29 only on a Sunday: 2032, then 2060 */
	assert_firings("0 0 29 2 */7", NULL, "2025-01-01T00:00:00Z", "2032-02-29T00:00:00Z", NULL);
	assert_int_equal(cron_next(&c, NULL, at("2033-01-01T00:00:00Z"), &next, &err), -ERANGE);
	assert_string_equal(err.msg,
	                    "the schedule does not fire within 8 years after 2033-01-01T00:00:00Z");
	assert_int_equal(next, 0);
	assert_int_equal(cron_next(&c, NULL, TZ_TIME_MAX + 1, &next, &err), -ERANGE);
	assert_string_equal(err.msg, "the instant 253402300800 is outside the years 1 to 9999");
	assert_int_equal(cron_next(&c, NULL, TZ_TIME_MIN - 1, &next, NULL), -ERANGE);
	memset(&zero, 0, sizeof(zero));
	assert_int_equal(cron_next(&zero, NULL, 0, &next, &err), -EINVAL);
	assert_string_equal(err.msg, "the schedule was not made by cron_parse()");
	/* the ends of the range */
	assert_firings("59 23 31 12 *", NULL, "9999-01-01T00:00:00Z", "9999-12-31T23:59:00Z", NULL);
	assert_firings("* * * * *", NULL, "0001-01-01T00:00:00Z", "0001-01-01T00:01:00Z", NULL);
}

/* ===== against a minute-by-minute search ===== */

/* Local minute @local matches @c (read with gmtime, not the module's calendar). */
static bool matches(const struct cron *c, int64_t local)
{
	time_t t = (time_t)local;
	struct tm tm;
	bool md, wd;

	gmtime_r(&t, &tm);
	md = c->mdays >> tm.tm_mday & 1;
	wd = c->wdays >> tm.tm_wday & 1;
	return (c->minutes >> tm.tm_min & 1) && (c->hours >> tm.tm_hour & 1) &&
	       (c->months >> (tm.tm_mon + 1) & 1) &&
	       (c->mday_star || c->wday_star ? md && wd : md || wd);
}

static int64_t utoff(const struct tz_zone *z, int64_t t)
{
	return z != NULL ? tz_utoff_at(z, t) : 0;
}

/* The first UTC minute after @after (>= 0) at which the wall clock first reaches a matching
 * local minute, stepping minute by minute for @days days; -1 when none. (The zones' modern
 * transitions are on whole minutes.) */
static int64_t brute_next(const struct cron *c, const struct tz_zone *z, int64_t after, int days)
{
	int64_t reached = z != NULL ? tz_local_reached(z, after) : after;

	for (int64_t t = (after / 60 + 1) * 60; t <= after + days * 86400LL; t += 60) {
		int64_t before = t - 1 + utoff(z, t - 1), now = t + utoff(z, t);

		if (before > reached)
			reached = before;
		for (int64_t l = (reached / 60 + 1) * 60; l <= now; l += 60)
			if (matches(c, l))
				return t;
		if (now > reached)
			reached = now;
	}
	return -1;
}

static void test_cron__agrees_with_a_minute_by_minute_search(void **state)
{
	static const char *const exprs[] = {
	        "*/7 * * * *",   "30 2 * * *",    "0 2-3 * * *",   "15,45 1,2 * * *",
	        "0 0 1 * mon",   "0 0 */2 * mon", "59 23 * * 0",   "*/20 2 * 3,4,10 *",
	        "0 */3 1-7 * 0", "5 0 * * 1-5",   "0 12 13 * fri", "30 1 */5 * *",
	};
	static const char *const starts[] = {
	        "2026-03-28T20:00:00Z", "2026-10-24T20:00:00Z", "2026-04-03T20:00:00Z",
	        "2026-10-02T20:00:00Z", "2090-03-25T20:00:00Z", "2090-09-29T20:00:00Z",
	};
	struct tz_zone *zones[] = {NULL, load("Europe/Berlin"), load("Australia/Lord_Howe")};
	int compared = 0;

	for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
		struct cron c;

		if (cron_parse(exprs[e], &c, NULL) != 0)
			continue;
		for (size_t z = 0; z < 3; z++)
			for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
				int64_t t = at(starts[s]);

				for (int k = 0; k < 4; k++) {
					int64_t want = brute_next(&c, zones[z], t, 10), got;

					assert_int_equal(cron_next(&c, zones[z], t, &got, NULL), 0);
					if (want < 0) {
						assert_true(got > t + 10 * 86400LL);
						break;
					}
					if (got != want)
						fail_msg("\"%s\" zone %zu after %lld: got %lld, "
						         "want %lld",
						         exprs[e], z, (long long)t, (long long)got,
						         (long long)want);
					compared++;
					t = got;
				}
			}
	}
	assert_true(compared > 500);
	tz_free(zones[1]);
	tz_free(zones[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cron__values_ranges_steps_lists_and_names),
	        cmocka_unit_test(test_cron__macros),
	        cmocka_unit_test(test_cron__each_bad_field_is_named),
	        cmocka_unit_test(test_cron__next_is_strictly_after),
	        cmocka_unit_test(test_cron__days_are_ored_when_both_are_restricted),
	        cmocka_unit_test(test_cron__berlin_gap_fires_once_after_it),
	        cmocka_unit_test(test_cron__berlin_repeat_fires_once_the_first_time),
	        cmocka_unit_test(test_cron__lord_howe_half_hour_gap_and_repeat),
	        cmocka_unit_test(test_cron__the_zone_footer_rules_in_2090),
	        cmocka_unit_test(test_cron__rare_and_impossible_schedules_end),
	        cmocka_unit_test(test_cron__agrees_with_a_minute_by_minute_search),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
