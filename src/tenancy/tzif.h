/*
 * tzif.h - IANA time zones, read from the system's TZif files by landlord, without TZ.
 *
 * Hibernation schedules run in the wall-clock time of an IANA zone ("Europe/Berlin", issue 15,
 * point 2). The zone comes from a zoneinfo directory (default /usr/share/zoneinfo, Debian's
 * tzdata) as a TZif file (RFC 8536) and is parsed here: landlord never sets TZ and never calls
 * localtime() or mktime(), so each schedule has its own zone and no call touches process state.
 *
 * A zone is a list of transitions, UTC instants at which the local time type (UTC offset, DST
 * or not) changes, and for the instants from the last transition on, the POSIX TZ string of the
 * file's footer ("CET-1CEST,M3.5.0,M10.5.0/3"): Debian's files may be "slim", with the rules of
 * today only in the footer. Before the first transition the zone has its first type.
 *
 * Instants are seconds since 1970-01-01T00:00:00Z without leap seconds, as time_t. A "local"
 * time is counted the same way on the zone's wall clock (local = utc + utoff), so a local time
 * can be skipped (a DST gap: clocks jump forward) or shown twice (clocks fall back).
 *
 * Supported: TZif versions 1 to 4 (the 64-bit data of version 2 and later, the 32-bit data of
 * version 1); footers with std/dst names alphabetic or <quoted>, signed offsets hh[:mm[:ss]],
 * rules Mm.w.d, Jn and n with transition times [+-]hh[:mm[:ss]] from -167 to 167 hours (RFC
 * 8536 §3.3.1, so also DST all year), and a dst without rules (the US rules, as tzcode does).
 * Version 3's footer extensions are accepted in version 2 files too. Not supported:
 * leap-second zones ("right/..."), refused; abbreviations and the standard/UT indicators are
 * checked but not kept; whether the footer agrees with the last transition is not checked (the
 * footer rules from it on, as RFC 8536 says); the footer rules are applied to the years 1 to
 * 9999 (TZ_TIME_MIN..TZ_TIME_MAX), the offset at either end holding beyond.
 *
 * Invariants:
 * - A struct tz_zone is immutable once made: any number of threads may query one at once.
 * - Every UTC offset of a zone is within +-TZ_UTOFF_MAX (25:59:59), larger ones are refused.
 * - The periods of a zone (tz_period_at()) partition all instants: never empty, each starts
 *   where the one before ends.
 * - Errors are one printable line in @err (denial.h's escaping); a zone is made whole or not.
 * - tz_parse() is pure (no I/O, no globals); tz_load() reads one file of at most TZ_FILE_MAX
 *   bytes.
 */
#ifndef LANDLORD_TZIF_H
#define LANDLORD_TZIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ll_err;
struct tz_zone;

#define TZ_ZONEINFO_DIR "/usr/share/zoneinfo" /* where tz_load() looks by default */
#define TZ_NAME_MAX     128                   /* bytes of a zone name */
#define TZ_FILE_MAX     (64 * 1024)           /* bytes of a TZif file (tzdata's are under 4 KiB) */
#define TZ_UTOFF_MAX    93599                 /* 25:59:59, the largest UTC offset, either sign */
#define TZ_TIME_MIN     (-62135596800LL)      /* 0001-01-01T00:00:00Z */
#define TZ_TIME_MAX     253402300799LL        /* 9999-12-31T23:59:59Z */

/* A stretch of time with one local time type: [start, end). */
struct tz_period {
	int64_t start; /* its first instant; INT64_MIN when it has none */
	int64_t end;   /* the instant after its last; INT64_MAX when none (it holds INT64_MAX) */
	int32_t utoff; /* local time minus UTC, in seconds */
	bool isdst;    /* daylight saving time */
};

/**
 * tz_parse() - make a zone from the TZif file @data (@len bytes, borrowed, not NUL-terminated).
 * @zone_out: OUT, on success a new zone (free it with tz_free()); NULL on error.
 * @err: may be NULL; the one-line reason on error ("TZif data is truncated", ...).
 * Return: 0; -EINVAL (not TZif, an unsupported version, truncated or inconsistent data,
 * transitions out of order, an offset over TZ_UTOFF_MAX, leap seconds, a footer that is not a
 * POSIX TZ string, bytes after it); -EMSGSIZE (over TZ_FILE_MAX bytes). Pure, thread-safe.
 */
int tz_parse(const void *data, size_t len, struct tz_zone **zone_out /* OUT */, struct ll_err *err);

/**
 * tz_load() - the zone named @name, from the TZif file @dir/@name.
 * @name: an IANA name such as "Europe/Berlin" (borrowed): at most TZ_NAME_MAX bytes of
 *        A-Z a-z 0-9 / _ + - ., relative, without empty parts or parts that start with '.'
 *        (so no ".." either). "UTC" is built in and needs no file.
 * @dir: the zoneinfo directory (borrowed); NULL for TZ_ZONEINFO_DIR. Tests give their own.
 * @zone_out: OUT, on success a new zone (free it with tz_free()); NULL on error.
 * @err: may be NULL; on error one line that names the zone (the caller prefixes the field):
 *       time zone "Mars/Base" is unknown: no such zone file (/usr/share/zoneinfo/Mars/Base)
 *       time zone "../x" is not an IANA name like Europe/Berlin: no part may start with . ...
 * Return: 0; -EINVAL (a bad name, or the file is not a valid TZif file); -ENOENT (no such
 * zone: no file, or a directory of zones such as "Europe"); -EMSGSIZE (file over
 * TZ_FILE_MAX); another -errno from reading the file. Thread-safe.
 */
int tz_load(const char *name, const char *dir, struct tz_zone **zone_out /* OUT */,
            struct ll_err *err);

/** tz_free() - free @zone (NULL is fine). */
void tz_free(struct tz_zone *zone);

/**
 * tz_period_at() - the period of @zone that holds the UTC instant @utc (any value): start <=
 * @utc < end (or end is INT64_MAX), with the offset and DST flag in force. Thread-safe, O(log
 * transitions).
 */
void tz_period_at(const struct tz_zone *zone, int64_t utc, struct tz_period *out /* OUT */);

/** tz_utoff_at() - the UTC offset of @zone at the UTC instant @utc, in seconds. */
int32_t tz_utoff_at(const struct tz_zone *zone, int64_t utc);

/**
 * tz_local_first() - the first UTC instant at which the wall clock of @zone shows @local or a
 * later time: min { t : t + utoff(t) >= @local }. For a local time shown once that is the one
 * instant showing it; for a local time shown twice (clocks fall back), the first; for a local
 * time skipped (clocks jump forward), the transition instant that ends the gap. Monotone: a
 * later @local never gives an earlier instant. @local is clamped to +-INT64_MAX / 2.
 */
int64_t tz_local_first(const struct tz_zone *zone, int64_t local);

/**
 * tz_local_reached() - the latest wall-clock time @zone has shown at or before the UTC instant
 * @utc: max { t + utoff(t) : t <= @utc }. Larger than @utc + its offset just after clocks fell
 * back, while the repeated hour is shown again. So tz_local_first(zone, L) > @utc exactly when
 * L > tz_local_reached(zone, @utc). @utc is clamped to +-INT64_MAX / 2.
 */
int64_t tz_local_reached(const struct tz_zone *zone, int64_t utc);

/* ===== the proleptic Gregorian calendar, for days since 1970-01-01 (negative before) ===== */

/** tz_days_from_civil() - the day number of @year-@month-@day (month 1-12, day 1-31). */
int64_t tz_days_from_civil(int64_t year, int month, int day);
/** tz_civil_from_days() - the date of day number @days (|days| < 2^50). */
void tz_civil_from_days(int64_t days, int64_t *year /* OUT */, int *month /* OUT */,
                        int *day /* OUT */);
/** tz_weekday() - the weekday of day number @days, 0 = Sunday to 6 = Saturday. */
int tz_weekday(int64_t days);
/** tz_month_days() - the days in @month (1-12) of @year: 28 to 31. */
int tz_month_days(int64_t year, int month);

#endif
