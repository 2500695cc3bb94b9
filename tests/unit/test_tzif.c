/*
 * test_tzif.c - time zones from TZif files: UTC built in; Europe/Berlin and
 * Australia/Lord_Howe (a 30-minute shift) read from /usr/share/zoneinfo (Debian's tzdata), their
 * transitions, and the POSIX footer beyond the last transition (2090); footer-only ("slim")
 * files with M, J and day-of-year rules, negative and over-24-hour transition times, DST all
 * year, the US default; wall-clock times skipped and repeated; names refused before any file is
 * read; malformed files refused with one line; every zone of the system parses.
 */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "tenancy/tzif.h"
#include "testtime.h"

#define assert_time(got, want)                                               \
	do {                                                                 \
		char g_[32];                                                 \
		if ((got) != at(want))                                       \
			fail_msg("got %s, want %s", iso((got), g_), (want)); \
	} while (0)

/* ===== TZif data built by hand ===== */

static void put32(struct buf *b, uint32_t v)
{
	unsigned char p[4] = {v >> 24, v >> 16, v >> 8, v};

	buf_append(b, p, 4);
}

static void put64(struct buf *b, int64_t v)
{
	put32(b, (uint32_t)((uint64_t)v >> 32));
	put32(b, (uint32_t)v);
}

/* A header: version byte, then isut, isstd, leap, time, type and char counts. */
static void header(struct buf *b, char version, uint32_t leap, uint32_t times, uint32_t types,
                   uint32_t chars)
{
	buf_append(b, "TZif", 4);
	buf_append(b, &version, 1);
	buf_append(b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 15);
	put32(b, 0);
	put32(b, 0);
	put32(b, leap);
	put32(b, times);
	put32(b, types);
	put32(b, chars);
}

/* One local time type with @utoff and an abbreviation of one byte. */
static void one_type(struct buf *b, int32_t utoff)
{
	put32(b, (uint32_t)utoff);
	buf_append(b, "\0\0\0", 3); /* isdst 0, abbreviation 0, the abbreviation "" */
}

/* A version 2 file with no transitions and @footer: what a slim file is beyond its table. */
static struct buf footer_file(const char *footer)
{
	struct buf b = BUF_INIT(BUF_MAX_INTERNAL);

	header(&b, '2', 0, 0, 1, 1);
	one_type(&b, 0);
	header(&b, '2', 0, 0, 1, 1);
	one_type(&b, 0);
	buf_appendf(&b, "\n%s\n", footer);
	return b;
}

static struct tz_zone *footer_zone(const char *footer)
{
	struct buf b = footer_file(footer);
	struct tz_zone *z = NULL;
	struct ll_err err;

	if (tz_parse(b.p, b.len, &z, &err) != 0)
		fail_msg("%s: %s", footer, err.msg);
	buf_release(&b);
	return z;
}

/* tz_parse() of @b refused with @code and @msg; @b released. */
static void assert_refused(struct buf *b, int code, const char *msg)
{
	struct tz_zone *z = (struct tz_zone *)1;
	struct ll_err err;

	assert_int_equal(tz_parse(b->p, b->len, &z, &err), code);
	assert_null(z);
	assert_string_equal(err.msg, msg);
	z = (struct tz_zone *)1;
	assert_int_equal(tz_parse(b->p, b->len, &z, NULL), code);
	assert_null(z);
	buf_release(b);
}

/* ===== tests ===== */

static void test_tzif__utc_is_built_in_and_etc_utc_is_read(void **state)
{
	struct tz_zone *z = NULL;
	struct tz_period p;
	struct ll_err err;

	assert_int_equal(tz_load("UTC", "/nonexistent", &z, &err), 0);
	assert_int_equal(tz_utoff_at(z, 0), 0);
	assert_int_equal(tz_utoff_at(z, at("2090-07-01T00:00:00Z")), 0);
	tz_period_at(z, 12345, &p);
	assert_true(p.start == INT64_MIN && p.end == INT64_MAX && !p.isdst);
	assert_int_equal(tz_local_first(z, 777), 777);
	assert_int_equal(tz_local_reached(z, 777), 777);
	tz_free(z);

	z = load("Etc/UTC");
	assert_int_equal(tz_utoff_at(z, at("1950-01-01T00:00:00Z")), 0);
	assert_int_equal(tz_utoff_at(z, at("2090-07-01T00:00:00Z")), 0);
	tz_free(z);
	tz_free(NULL);
}

static void test_tzif__berlin_switches_at_one_utc(void **state)
{
	struct tz_zone *z = load("Europe/Berlin");
	struct tz_period p;

	assert_int_equal(tz_utoff_at(z, at("2026-03-29T00:59:59Z")), 3600);
	assert_int_equal(tz_utoff_at(z, at("2026-03-29T01:00:00Z")), 7200);
	assert_int_equal(tz_utoff_at(z, at("2026-10-25T00:59:59Z")), 7200);
	assert_int_equal(tz_utoff_at(z, at("2026-10-25T01:00:00Z")), 3600);
	tz_period_at(z, at("2026-07-01T00:00:00Z"), &p);
	assert_time(p.start, "2026-03-29T01:00:00Z");
	assert_time(p.end, "2026-10-25T01:00:00Z");
	assert_true(p.isdst);
	assert_int_equal(p.utoff, 7200);
	/* Before the first transition: local mean time, +0:53:28 */
	assert_int_equal(tz_utoff_at(z, at("1880-01-01T00:00:00Z")), 3208);
	tz_period_at(z, INT64_MIN, &p);
	assert_true(p.start == INT64_MIN && p.utoff == 3208);
	tz_free(z);
}

static void test_tzif__the_footer_rules_after_the_last_transition(void **state)
{
	struct tz_zone *berlin = load("Europe/Berlin"), *lhi = load("Australia/Lord_Howe");
	struct tz_period p;

	/* 2090 is past the table of every tzdata build: the footer's rules */
	assert_int_equal(tz_utoff_at(berlin, at("2090-03-26T00:59:59Z")), 3600);
	assert_int_equal(tz_utoff_at(berlin, at("2090-03-26T01:00:00Z")), 7200);
	tz_period_at(berlin, at("2090-07-01T00:00:00Z"), &p);
	assert_time(p.start, "2090-03-26T01:00:00Z");
	assert_time(p.end, "2090-10-29T01:00:00Z");
	assert_true(p.isdst);
	assert_int_equal(tz_utoff_at(lhi, at("2090-04-01T14:59:59Z")), 39600);
	assert_int_equal(tz_utoff_at(lhi, at("2090-04-01T15:00:00Z")), 37800);
	assert_int_equal(tz_utoff_at(lhi, at("2090-09-30T15:29:59Z")), 37800);
	assert_int_equal(tz_utoff_at(lhi, at("2090-09-30T15:30:00Z")), 39600);
	/* beyond the year 9999 the offset of its end holds (southern summer: DST) */
	tz_period_at(lhi, INT64_MAX, &p);
	assert_true(p.end == INT64_MAX && p.utoff == 39600 && p.isdst);
	tz_free(berlin);
	tz_free(lhi);
}

static void test_tzif__lord_howe_shifts_by_half_an_hour(void **state)
{
	struct tz_zone *z = load("Australia/Lord_Howe");

	assert_int_equal(tz_utoff_at(z, at("2026-04-04T14:59:59Z")), 11 * 3600);
	assert_int_equal(tz_utoff_at(z, at("2026-04-04T15:00:00Z")), 10 * 3600 + 1800);
	assert_int_equal(tz_utoff_at(z, at("2026-10-03T15:29:59Z")), 10 * 3600 + 1800);
	assert_int_equal(tz_utoff_at(z, at("2026-10-03T15:30:00Z")), 11 * 3600);
	tz_free(z);
}

static void test_tzif__wall_clock_gaps_and_repeats(void **state)
{
	struct tz_zone *berlin = load("Europe/Berlin"), *lhi = load("Australia/Lord_Howe");

	/* Berlin, 2026-03-29: 02:00 CET is 03:00 CEST, 02:00-02:59 never shown */
	assert_time(tz_local_first(berlin, at("2026-03-29T01:59:00Z")), "2026-03-29T00:59:00Z");
	assert_time(tz_local_first(berlin, at("2026-03-29T02:00:00Z")), "2026-03-29T01:00:00Z");
	assert_time(tz_local_first(berlin, at("2026-03-29T02:30:00Z")), "2026-03-29T01:00:00Z");
	assert_time(tz_local_first(berlin, at("2026-03-29T03:00:00Z")), "2026-03-29T01:00:00Z");
	assert_time(tz_local_first(berlin, at("2026-03-29T03:01:00Z")), "2026-03-29T01:01:00Z");
	/* 2026-10-25: 03:00 CEST is 02:00 CET, 02:00-02:59 shown twice: the first */
	assert_time(tz_local_first(berlin, at("2026-10-25T02:30:00Z")), "2026-10-25T00:30:00Z");
	assert_time(tz_local_first(berlin, at("2026-10-25T03:00:00Z")), "2026-10-25T02:00:00Z");
	/* in the second 02:30 the clock has shown up to 02:59:59 already */
	assert_time(tz_local_reached(berlin, at("2026-10-25T01:30:00Z")), "2026-10-25T02:59:59Z");
	assert_time(tz_local_reached(berlin, at("2026-10-25T02:00:00Z")), "2026-10-25T03:00:00Z");
	assert_time(tz_local_reached(berlin, at("2026-10-25T00:30:00Z")), "2026-10-25T02:30:00Z");
	assert_time(tz_local_reached(berlin, at("2026-03-29T01:00:00Z")), "2026-03-29T03:00:00Z");

	/* Lord Howe, 2026-10-04: 02:00 +10:30 is 02:30 +11 */
	assert_time(tz_local_first(lhi, at("2026-10-04T02:15:00Z")), "2026-10-03T15:30:00Z");
	assert_time(tz_local_first(lhi, at("2026-10-04T02:30:00Z")), "2026-10-03T15:30:00Z");
	assert_time(tz_local_first(lhi, at("2026-10-04T01:59:00Z")), "2026-10-03T15:29:00Z");
	/* 2026-04-05: 02:00 +11 is 01:30 +10:30, 01:30-01:59 shown twice */
	assert_time(tz_local_first(lhi, at("2026-04-05T01:45:00Z")), "2026-04-04T14:45:00Z");
	assert_time(tz_local_first(lhi, at("2026-04-05T02:00:00Z")), "2026-04-04T15:30:00Z");
	assert_time(tz_local_reached(lhi, at("2026-04-04T15:15:00Z")), "2026-04-05T01:59:59Z");
	tz_free(berlin);
	tz_free(lhi);
}

/* Around each start of a period of @a from 2030 to 2100, @b has the offsets of @a. */
static void assert_switches_like(const struct tz_zone *a, const struct tz_zone *b, const char *what)
{
	struct tz_period p;

	for (int64_t t = at("2030-01-01T00:00:00Z"); t < at("2100-01-01T00:00:00Z"); t = p.end) {
		tz_period_at(a, t, &p);
		if (tz_utoff_at(b, p.start) != p.utoff || tz_utoff_at(b, p.end - 1) != p.utoff)
			fail_msg("%s: the period at %lld differs", what, (long long)t);
	}
}

/* @footer as a footer-only file switches as the system's @name from 2030 to 2100. (A fat file
 * may split a period without a switch, at 2^31 - 1.) */
static void assert_footer_like(const char *footer, const char *name)
{
	struct tz_zone *slim = footer_zone(footer), *fat = load(name);

	assert_switches_like(slim, fat, footer);
	assert_switches_like(fat, slim, footer);
	for (int64_t t = at("2030-01-01T00:00:00Z"); t < at("2100-01-01T00:00:00Z"); t += 61603)
		if (tz_local_first(slim, t) != tz_local_first(fat, t) ||
		    tz_local_reached(slim, t) != tz_local_reached(fat, t))
			fail_msg("%s: local %lld differs", footer, (long long)t);
	tz_free(slim);
	tz_free(fat);
}

static void test_tzif__footer_only_files_follow_their_rules(void **state)
{
	struct tz_zone *z;
	struct tz_period p;

	assert_footer_like("CET-1CEST,M3.5.0,M10.5.0/3", "Europe/Berlin");
	assert_footer_like("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "Australia/Lord_Howe");
	assert_footer_like("<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "America/Nuuk");

	/* no transitions: the footer holds at every instant */
	z = footer_zone("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
	assert_int_equal(tz_utoff_at(z, at("1900-07-01T00:00:00Z")), 37800);
	tz_free(z);

	/* over 24 hours: the Thursday's 50:00 is Saturday 02:00 */
	z = footer_zone("EET-2EEST,M3.4.4/50,M10.4.4/50");
	tz_period_at(z, at("2090-06-01T00:00:00Z"), &p);
	assert_time(p.start, "2090-03-25T00:00:00Z");
	assert_time(p.end, "2090-10-27T23:00:00Z");
	tz_free(z);

	/* Jn does not count Feb 29, n does */
	z = footer_zone("XXX0YYY,J60,J305");
	tz_period_at(z, at("2028-06-01T00:00:00Z"), &p);
	assert_time(p.start, "2028-03-01T02:00:00Z");
	assert_time(p.end, "2028-11-01T01:00:00Z");
	tz_free(z);
	z = footer_zone("XXX0YYY-1:30,59/1:02:03,304/-0:30");
	tz_period_at(z, at("2027-06-01T00:00:00Z"), &p);
	assert_time(p.start, "2027-03-01T01:02:03Z");
	assert_time(p.end, "2027-10-31T22:00:00Z"); /* Nov 1 -0:30 is Oct 31 23:30 at +1:30 */
	assert_int_equal(p.utoff, 5400);
	tz_period_at(z, at("2028-06-01T00:00:00Z"), &p);
	assert_time(p.start, "2028-02-29T01:02:03Z");
	assert_time(p.end, "2028-10-30T22:00:00Z");
	tz_free(z);

	/* DST all year (RFC 8536 §3.3.1) */
	z = footer_zone("EST5EDT,0/0,J365/25");
	for (int64_t t = at("2029-12-31T00:00:00Z"); t < at("2032-01-02T00:00:00Z"); t += 3600)
		assert_int_equal(tz_utoff_at(z, t), -4 * 3600);
	tz_free(z);

	/* a dst without rules: the US ones */
	z = footer_zone("EST5EDT");
	tz_period_at(z, at("2030-06-01T00:00:00Z"), &p);
	assert_time(p.start, "2030-03-10T07:00:00Z");
	assert_time(p.end, "2030-11-03T06:00:00Z");
	tz_free(z);

	/* fixed offsets, signed, with seconds */
	z = footer_zone("<+0545>-5:45");
	assert_int_equal(tz_utoff_at(z, 0), 5 * 3600 + 45 * 60);
	tz_free(z);
	z = footer_zone("<-01>+1:00:30");
	assert_int_equal(tz_utoff_at(z, 0), -3630);
	tz_free(z);
}

static void test_tzif__version_2_data_is_64_bit_and_v1_data_is_skipped(void **state)
{
	struct buf b = BUF_INIT(BUF_MAX_INTERNAL);
	struct tz_zone *z = NULL;
	struct tz_period p;
	struct ll_err err;

	/* version 1 data that says +1 everywhere, to be skipped */
	header(&b, '3', 0, 0, 1, 1);
	one_type(&b, 3600);
	/* version 2 data: -2^59 to +2, 2^33 (year 2242) to -3, an empty footer */
	header(&b, '3', 0, 2, 2, 1);
	put64(&b, -(INT64_C(1) << 59));
	put64(&b, INT64_C(1) << 33);
	buf_append(&b, "\1\0", 2);
	put32(&b, (uint32_t)-10800);
	buf_append(&b, "\0\0", 2);
	one_type(&b, 7200);
	buf_append(&b, "\n\n", 2);
	assert_int_equal(tz_parse(b.p, b.len, &z, &err), 0);
	assert_int_equal(tz_utoff_at(z, INT64_MIN), -10800); /* type 0 before the first */
	assert_int_equal(tz_utoff_at(z, 0), 7200);
	assert_int_equal(tz_utoff_at(z, (INT64_C(1) << 33) - 1), 7200);
	assert_int_equal(tz_utoff_at(z, INT64_C(1) << 33), -10800);
	tz_period_at(z, INT64_MAX, &p);
	assert_true(p.start == INT64_C(1) << 33 && p.end == INT64_MAX);
	/* the first instant showing a local time is before the year 1 */
	assert_int_equal(tz_local_first(z, INT64_MIN), INT64_MIN / 2 + 10800);
	tz_free(z);
	buf_release(&b);
}

static void test_tzif__bad_files_are_refused_in_one_line(void **state)
{
	struct buf b = BUF_INIT(BUF_MAX_INTERNAL);

	buf_append_str(&b, "TZ");
	assert_refused(&b, -EINVAL, "not a TZif file (no \"TZif\" magic)");
	header(&b, '1', 0, 0, 1, 1);
	assert_refused(&b, -EINVAL, "TZif version 0x31 is not supported (1 to 4)");
	header(&b, '2', 0, 0, 0, 1);
	assert_refused(&b, -EINVAL,
	               "TZif data has 0 local time types and 1 abbreviation bytes; it needs 1-256 "
	               "and 1 or more");
	header(&b, 0, 0, 0, 1, 1);
	assert_refused(&b, -EINVAL, "TZif data is truncated");

	/* version 1: two transitions out of order */
	header(&b, 0, 0, 2, 1, 1);
	put32(&b, 100);
	put32(&b, 100);
	buf_append(&b, "\0\0", 2);
	one_type(&b, 0);
	assert_refused(&b, -EINVAL, "TZif transition 1 is not after the one before");
	header(&b, 0, 0, 1, 1, 1);
	put32(&b, 100);
	buf_append(&b, "\3", 1);
	one_type(&b, 0);
	assert_refused(&b, -EINVAL, "TZif transition 0 has local time type 3 of 1");
	header(&b, 0, 0, 0, 1, 1);
	one_type(&b, 26 * 3600);
	assert_refused(&b, -EINVAL, "TZif local time type 0 has UTC offset 93600 s, over 25:59:59");
	header(&b, 0, 1, 0, 1, 1);
	one_type(&b, 0);
	put32(&b, 78796800);
	put32(&b, 1);
	assert_refused(&b, -EINVAL,
	               "TZif data with leap seconds is not supported (a zone under right/)");
	header(&b, 0, 0, 0, 1, 1);
	one_type(&b, 3600);
	buf_append(&b, "x", 1);
	assert_refused(&b, -EINVAL, "TZif data has 1 bytes after its end");

	/* version 2+: the footer */
	b = footer_file("CET-1CEST,M3.5.0");
	assert_refused(&b, -EINVAL,
	               "TZif footer \"CET-1CEST,M3.5.0\" is not a POSIX TZ string (like "
	               "CET-1CEST,M3.5.0,M10.5.0/3)");
	b = footer_file("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0\n\t");
	assert_refused(&b, -EINVAL, "TZif data has 2 bytes after the footer");
	b = footer_file("UTC0");
	b.len--;
	assert_refused(&b, -EINVAL, "TZif footer is missing");
	static const char *const bad_footers[] = {
	        "CE-1",
	        "CET",
	        "CET26",
	        "CET-1CEST,M3.5.0,M10.5.0/168",
	        "CET-1CEST,M13.5.0,M10.5.0",
	        "CET-1CEST,M3.6.0,M10.5.0",
	        "CET-1CEST,M3.5.7,M10.5.0",
	        "X<+1>0",
	        "<+1>0",
	        "<+10>-1:60",
	        "CET-1CEST,J0,J365",
	        "CET-1CEST,366,1",
	        "CET-1CEST,M3.5.0,M10.5.0x",
	        "CET-1CEST-26",
	        "CET-1CEST,M3.5.0/-168,M10.5.0",
	        "CET-1\x01",
	};
	for (size_t i = 0; i < sizeof(bad_footers) / sizeof(bad_footers[0]); i++) {
		struct buf f = footer_file(bad_footers[i]);
		struct tz_zone *z = NULL;

		if (tz_parse(f.p, f.len, &z, NULL) != -EINVAL)
			fail_msg("footer %s accepted", bad_footers[i]);
		buf_release(&f);
	}
	b = footer_file("CET-1\x01");
	assert_refused(&b, -EINVAL,
	               "TZif footer \"CET-1\\x01\" is not a POSIX TZ string (like "
	               "CET-1CEST,M3.5.0,M10.5.0/3)");

	buf_init(&b, BUF_MAX_INTERNAL);
	for (int i = 0; i <= TZ_FILE_MAX; i++)
		buf_append(&b, "T", 1);
	assert_refused(&b, -EMSGSIZE, "TZif data has 65537 bytes; at most 65536 are read");
}

static void test_tzif__names_are_checked_before_any_file_is_read(void **state)
{
	static const struct {
		const char *name, *msg;
	} bad[] = {
	        {"", "time zone \"\" is not an IANA name like Europe/Berlin: it is empty"},
	        {"../etc/passwd", "time zone \"../etc/passwd\" is not an IANA name like "
	                          "Europe/Berlin: no part may start with . (so no ..)"},
	        {"Europe/../../etc/passwd", "time zone \"Europe/../../etc/passwd\" is not an IANA "
	                                    "name like Europe/Berlin: no part may start with . "
	                                    "(so no ..)"},
	        {"/etc/passwd", "time zone \"/etc/passwd\" is not an IANA name like Europe/Berlin: "
	                        "it must be relative, without a leading /"},
	        {"Europe//Berlin", "time zone \"Europe//Berlin\" is not an IANA name like "
	                           "Europe/Berlin: it has an empty part"},
	        {"Europe/", "time zone \"Europe/\" is not an IANA name like Europe/Berlin: it has "
	                    "an empty part"},
	        {"Europe/Berl\xc3\xadn", "time zone \"Europe/Berl\\xc3\\xadn\" is not an IANA name "
	                                 "like Europe/Berlin: only letters, digits and / _ + - . "
	                                 "may appear"},
	        {"Europe/Berlin ", "time zone \"Europe/Berlin \" is not an IANA name like "
	                           "Europe/Berlin: only letters, digits and / _ + - . may appear"},
	};
	char long_name[TZ_NAME_MAX + 2];
	struct tz_zone *z = NULL;
	struct ll_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(tz_load(bad[i].name, NULL, &z, &err), -EINVAL);
		assert_null(z);
		assert_string_equal(err.msg, bad[i].msg);
	}
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_int_equal(tz_load(long_name, NULL, &z, &err), -EINVAL);
	assert_non_null(strstr(err.msg, ": it is longer than 128 bytes"));
	long_name[TZ_NAME_MAX] = '\0';
	assert_int_equal(tz_load(long_name, NULL, &z, NULL), -ENOENT);

	/* good names that name no zone */
	assert_int_equal(tz_load("Mars/Olympus_Mons", NULL, &z, &err), -ENOENT);
	assert_string_equal(err.msg, "time zone \"Mars/Olympus_Mons\" is unknown: no such zone "
	                             "file (/usr/share/zoneinfo/Mars/Olympus_Mons)");
	assert_int_equal(tz_load("Europe", NULL, &z, &err), -ENOENT);
	assert_string_equal(err.msg, "time zone \"Europe\" is unknown: no such zone file "
	                             "(/usr/share/zoneinfo/Europe)");
	assert_int_equal(tz_load("zone.tab", NULL, &z, &err), -EINVAL);
	assert_string_equal(err.msg, "time zone \"zone.tab\": not a TZif file (no \"TZif\" magic) "
	                             "(/usr/share/zoneinfo/zone.tab)");
	if (access(TZ_ZONEINFO_DIR "/right/Europe/Berlin", R_OK) == 0) { /* not in every tzdata */
		assert_int_equal(tz_load("right/Europe/Berlin", NULL, &z, &err), -EINVAL);
		assert_string_equal(err.msg, "time zone \"right/Europe/Berlin\": TZif data with "
		                             "leap seconds is not supported (a zone under right/) "
		                             "(/usr/share/zoneinfo/right/Europe/Berlin)");
		assert_null(z);
	}

	/* another directory, and names with + - _ . */
	assert_int_equal(tz_load("Berlin", "/usr/share/zoneinfo/Europe", &z, &err), 0);
	assert_int_equal(tz_utoff_at(z, at("2026-07-01T00:00:00Z")), 7200);
	tz_free(z);
	assert_int_equal(tz_load("Etc/GMT+5", NULL, &z, &err), 0);
	assert_int_equal(tz_utoff_at(z, 0), -5 * 3600);
	tz_free(z);
	assert_int_equal(tz_load("America/Port-au-Prince", NULL, &z, &err), 0);
	tz_free(z);
	assert_int_equal(tz_load("America/Argentina/Buenos_Aires", NULL, &z, &err), 0);
	tz_free(z);
}

static void test_tzif__the_calendar(void **state)
{
	int64_t year;
	int month, day;

	for (int64_t d = -800000; d < 3000000; d += 13) {
		time_t t = (time_t)(d * 86400);
		struct tm tm;

		gmtime_r(&t, &tm);
		tz_civil_from_days(d, &year, &month, &day);
		if (year != tm.tm_year + 1900 || month != tm.tm_mon + 1 || day != tm.tm_mday ||
		    tz_weekday(d) != tm.tm_wday || tz_days_from_civil(year, month, day) != d)
			fail_msg("day %lld", (long long)d);
	}
	assert_int_equal(tz_days_from_civil(1970, 1, 1), 0);
	assert_int_equal(tz_days_from_civil(1, 1, 1), TZ_TIME_MIN / 86400);
	assert_int_equal(tz_days_from_civil(10000, 1, 1), (TZ_TIME_MAX + 1) / 86400);
	assert_int_equal(tz_month_days(2028, 2), 29);
	assert_int_equal(tz_month_days(2100, 2), 28);
	assert_int_equal(tz_month_days(2000, 2), 29);
	assert_int_equal(tz_month_days(2027, 4), 30);
}

static int zones_ok, zones_bad;

static int load_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *name = path + strlen(TZ_ZONEINFO_DIR) + 1;
	struct tz_zone *z = NULL;
	struct ll_err err;
	struct tz_period p;

	if (type != FTW_F || strncmp(name, "right/", 6) == 0 || strchr(name, '.') != NULL ||
	    strcmp(name, "leapseconds") == 0 || strcmp(name, "SECURITY") == 0)
		return 0;
	if (tz_load(name, NULL, &z, &err) != 0) {
		print_error("%s\n", err.msg);
		zones_bad++;
		return 0;
	}
	/* the periods of a century follow one another */
	tz_period_at(z, at("2000-01-01T00:00:00Z"), &p);
	while (p.end < at("2100-01-01T00:00:00Z")) {
		struct tz_period q;

		tz_period_at(z, p.end, &q);
		if (q.start != p.end)
			zones_bad++;
		p = q;
	}
	tz_free(z);
	zones_ok++;
	return 0;
}

static void test_tzif__every_zone_of_the_system_parses(void **state)
{
	assert_int_equal(nftw(TZ_ZONEINFO_DIR, load_one, 16, FTW_PHYS), 0);
	assert_int_equal(zones_bad, 0);
	assert_true(zones_ok > 400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tzif__utc_is_built_in_and_etc_utc_is_read),
	        cmocka_unit_test(test_tzif__berlin_switches_at_one_utc),
	        cmocka_unit_test(test_tzif__the_footer_rules_after_the_last_transition),
	        cmocka_unit_test(test_tzif__lord_howe_shifts_by_half_an_hour),
	        cmocka_unit_test(test_tzif__wall_clock_gaps_and_repeats),
	        cmocka_unit_test(test_tzif__footer_only_files_follow_their_rules),
	        cmocka_unit_test(test_tzif__version_2_data_is_64_bit_and_v1_data_is_skipped),
	        cmocka_unit_test(test_tzif__bad_files_are_refused_in_one_line),
	        cmocka_unit_test(test_tzif__names_are_checked_before_any_file_is_read),
	        cmocka_unit_test(test_tzif__the_calendar),
	        cmocka_unit_test(test_tzif__every_zone_of_the_system_parses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
