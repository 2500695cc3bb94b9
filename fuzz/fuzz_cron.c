/*
 * fuzz_cron.c - any text is a schedule or refused with one printable line, without crashing;
 * a schedule's next firings, in UTC, in Europe/Berlin (the system's file, or its footer rule)
 * and in Lord Howe's footer rule (a 30-minute DST shift), from instants around DST switches,
 * are strictly after the instant and are firings (the wall clock first reaches a matching local
 * minute then), with no firing between (checked minute by minute over the first 36 hours).
 * Input: the schedule's text.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "tenancy/cron.h"
#include "tenancy/tzif.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECKED_MINUTES (36 * 60)

static void check_message(const char *msg)
{
	if (msg[0] == '\0')
		abort();
	for (const char *p = msg; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			abort();
}

/* A version 2 TZif file with no transitions and @footer, parsed. */
static struct tz_zone *footer_zone(const char *footer)
{
	uint8_t file[256];
	size_t len = 0, n = strlen(footer);
	struct tz_zone *z = NULL;

	for (int block = 0; block < 2; block++) {
		memset(file + len, 0, 44 + 7); /* a header, then one type (UTC) and its "" */
		memcpy(file + len, "TZif2", 5);
		file[len + 39] = 1; /* types */
		file[len + 43] = 1; /* abbreviation bytes */
		len += 44 + 7;
	}
	file[len++] = '\n';
	memcpy(file + len, footer, n);
	len += n;
	file[len++] = '\n';
	if (tz_parse(file, len, &z, NULL) != 0)
		abort();
	return z;
}

static struct tz_zone *zones[3];

static void init_zones(void)
{
	if (zones[1] != NULL)
		return;
	if (tz_load("Europe/Berlin", NULL, &zones[1], NULL) != 0)
		zones[1] = footer_zone("CET-1CEST,M3.5.0,M10.5.0/3");
	zones[2] = footer_zone("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
}

/* Local minute @local matches @c, read with gmtime rather than the module's calendar. */
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

static int64_t reached(const struct tz_zone *z, int64_t t)
{
	return z != NULL ? tz_local_reached(z, t) : t;
}

/* A local minute in (@from, @to] that matches, at most @max of them looked at. */
static bool any_match(const struct cron *c, int64_t from, int64_t to, int max)
{
	for (int64_t l = (from / 60 + 1) * 60; l <= to && max-- > 0; l += 60)
		if (matches(c, l))
			return true;
	return false;
}

static void check_next(const struct cron *c, const struct tz_zone *z, int64_t after, int64_t *next)
{
	struct ll_err err;
	int rc = cron_next(c, z, after, next, &err);
	int64_t from = reached(z, after), wall;

	if (rc == -ERANGE) {
		check_message(err.msg);
		if (any_match(c, from, from + CHECKED_MINUTES * 60, CHECKED_MINUTES))
			abort();
		*next = -1;
		return;
	}
	if (rc != 0 || *next <= after)
		abort();
	/* a firing: the wall clock first reaches a matching minute at *next */
	wall = *next + (z != NULL ? tz_utoff_at(z, *next) : 0);
	if (!any_match(c, reached(z, *next - 1), wall, 24 * 60))
		abort();
	/* none before it */
	if (any_match(c, from, reached(z, *next - 1), CHECKED_MINUTES))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* around DST switches of Berlin and Lord Howe, in 2026 and 2090 */
	static const int64_t starts[] = {1774740600, 1792884600, 1775311200,
	                                 1791039600, 3794169600, 3810466800};
	char expr[CRON_EXPR_MAX + 8];
	struct cron c, again;
	struct ll_err err;
	int rc;

	init_zones();
	if (size >= sizeof(expr))
		size = sizeof(expr) - 1;
	memcpy(expr, data, size);
	expr[size] = '\0';
	rc = cron_parse(expr, &c, &err);
	if (cron_parse(expr, &again, NULL) != rc || memcmp(&c, &again, sizeof(c)) != 0)
		abort();
	if (rc != 0) {
		check_message(err.msg);
		if (c.minutes != 0 || c.wdays != 0)
			abort();
		return 0;
	}
	if (c.minutes >> 60 != 0 || c.hours >> 24 != 0 || (c.mdays & 1) != 0 ||
	    (c.months & ~0x1ffe) != 0 || c.wdays >> 7 != 0)
		abort();
	for (size_t z = 0; z < 3; z++)
		for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
			int64_t t = starts[s] + (int64_t)(size % 7) * 600;

			for (int k = 0; k < 2 && t >= 0; k++)
				check_next(&c, zones[z], t, &t);
		}
	return 0;
}
