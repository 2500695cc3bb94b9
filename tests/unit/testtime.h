/*
 * testtime.h - instants and zones for the time suites (test_cron, test_tzif): at("2026-03-29T
 * 01:00:00Z") is that instant in seconds (a local wall-clock time is counted the same way),
 * iso() the reverse, load("Europe/Berlin") a zone from the system's zoneinfo that fails the test,
 * naming the zone and why, when it does not load. Header-only and static inline; include it
 * after cmocka.h.
 */
#ifndef LANDLORD_TESTS_TESTTIME_H
#define LANDLORD_TESTS_TESTTIME_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "base/err.h"
#include "tenancy/tzif.h"

static inline int64_t at(const char *iso)
{
	struct tm tm = {0};

	if (sscanf(iso, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
	           &tm.tm_min, &tm.tm_sec) != 6)
		fail_msg("bad time %s", iso);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm);
}

static inline const char *iso(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return out;
}

static inline struct tz_zone *load(const char *name)
{
	struct tz_zone *z = NULL;
	struct ll_err err;

	if (tz_load(name, NULL, &z, &err) != 0)
		fail_msg("%s: %s", name, err.msg);
	return z;
}

#endif
