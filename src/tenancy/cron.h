/*
 * cron.h - five-field cron schedules and their next firing in an IANA time zone, without I/O.
 *
 * A ResourceSupervisor sleeps and wakes on cron schedules read in the wall-clock time of its
 * zone (issue 15, point 2). A schedule is five fields, separated by blanks:
 *
 *   minute (0-59)  hour (0-23)  day-of-month (1-31)  month (1-12, jan-dec)  day-of-week (0-7,
 *   sun-sat; 0 and 7 are Sunday)
 *
 * each a comma-separated list of items: a value, "*" (the whole range), a range "a-b", each
 * optionally stepped "/n" ("*" + "/n" is every n from the start, "a-b/n" every n in a-b), or
 * "a/n" (every n from a to the end). Names are three letters, in any case. Instead of the
 * fields, one macro: @yearly and @annually (0 0 1 1 *), @monthly (0 0 1 * *), @weekly
 * (0 0 * * 0), @daily and @midnight (0 0 * * *), @hourly (0 * * * *).
 *
 * Days are Vixie cron's: when day-of-month and day-of-week are both restricted, a day matches
 * when either matches (OR); a field that starts with "*", even "*" + "/2", is unrestricted, and
 * then a day must match both (AND). "0 0 1,15 * mon" is the 1st, the 15th and every Monday;
 * with "*" + "/2" for day-of-month instead, it is every Monday that is an odd day of the month.
 *
 * Firing is in local time (tzif.h), with DST:
 * - a local time skipped by clocks jumping forward fires once, right after the gap, at the
 *   transition instant (02:30 on the day Berlin jumps from 02:00 to 03:00 fires at 03:00 CEST;
 *   02:15 on the day Lord Howe jumps from 02:00 to 02:30 fires at 02:30);
 * - a local time shown twice as clocks fall back fires once, at its first occurrence: while the
 *   repeated hour is shown again nothing fires, not even every 15 minutes;
 * - formally, the firings are tz_local_first(zone, L) for each local minute L that matches,
 *   and several L with the same instant fire once.
 *
 * Invariants:
 * - A struct cron is a plain value: cron_parse() fills it whole or fails; the caller owns it.
 * - Errors are one printable line naming the field and the problem, for the caller to prefix
 *   with the field path, e.g. "spec.schedule.wakeSchedule: day-of-week 8 is out of range 0-7".
 * - Pure: no globals, no I/O, no allocation, thread-safe. cron_next() looks at most
 *   CRON_SEARCH_YEARS years ahead, skipping by month, day, hour and minute (a few thousand
 *   steps at worst), and never loops forever.
 */
#ifndef LANDLORD_CRON_H
#define LANDLORD_CRON_H

#include <stdbool.h>
#include <stdint.h>

struct ll_err;
struct tz_zone;

#define CRON_EXPR_MAX     256 /* bytes of a schedule */
#define CRON_SEARCH_YEARS 8   /* cron_next()'s horizon: Feb 29 fires even across 2100 */

/* A parsed schedule: bit i of each set means value i matches. */
struct cron {
	uint64_t minutes; /* bits 0-59 */
	uint32_t hours;   /* bits 0-23 */
	uint32_t mdays;   /* bits 1-31 */
	uint16_t months;  /* bits 1-12 */
	uint8_t wdays;    /* bits 0-6, 0 = Sunday (a 7 is folded into 0) */
	bool mday_star;   /* the day-of-month field started with '*' */
	bool wday_star;   /* the day-of-week field started with '*' */
};

/**
 * cron_parse() - parse the schedule @expr (a NUL-terminated string, borrowed; NULL is empty;
 * blanks around it and between fields are spaces, tabs or newlines).
 * @out: OUT, the schedule on success; zeroed on error.
 * @err: may be NULL; on error one line naming the field and the problem:
 *       "day-of-week 8 is out of range 0-7", "hour range 17-9 is reversed ...",
 *       "minute step 0 is out of range 1-59", "month \"foo\" is not a month (1-12 or jan-dec)",
 *       "minute has an empty item in \"1,,2\"", "minute \"5#\" has an unexpected \"#\"",
 *       "the schedule has 6 fields; ...", "unknown macro \"@reboot\": ...",
 *       "day-of-month \"30\" never occurs in month \"feb\"".
 * Return: 0; -EINVAL (any of those); -E2BIG (over CRON_EXPR_MAX bytes). Thread-safe.
 */
int cron_parse(const char *expr, struct cron *out /* OUT */, struct ll_err *err);

/**
 * cron_next() - the first firing of @cron strictly after the UTC instant @after_utc, in the
 * wall-clock time of @zone (NULL: UTC), as a UTC instant (seconds; a firing is on a local
 * minute, or on a transition instant after a DST gap).
 * @next_utc: OUT, set on success only.
 * @err: may be NULL; the one-line reason on error.
 * Return: 0; -ERANGE (no firing within CRON_SEARCH_YEARS years of local time after
 * @after_utc, as for Feb 29 only on a Sunday, every 28 years or more; or @after_utc outside
 * TZ_TIME_MIN..TZ_TIME_MAX); -EINVAL (@cron is not one cron_parse() made). Thread-safe.
 */
int cron_next(const struct cron *cron, const struct tz_zone *zone, int64_t after_utc,
              int64_t *next_utc /* OUT */, struct ll_err *err);

#endif
