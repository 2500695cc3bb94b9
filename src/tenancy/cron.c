/* cron.c - five-field cron schedules and their next firing (see cron.h). */
#include "tenancy/cron.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "tenancy/denial.h"
#include "tenancy/tzif.h"

#define DAY    86400
#define FIELDS 5

/* One of the five fields. */
struct field {
	const char *name;
	int lo, hi;
	const char *const *names; /* three-letter names of name_base, name_base + 1, ... */
	int nnames, name_base;
	const char *what; /* what a value is, for "is not ..." */
};

static const char *const MONTH_NAMES[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const DAY_NAMES[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

static const struct field FIELD[FIELDS] = {
        {"minute", 0, 59, NULL, 0, 0, "a number"},
        {"hour", 0, 23, NULL, 0, 0, "a number"},
        {"day-of-month", 1, 31, NULL, 0, 0, "a number"},
        {"month", 1, 12, MONTH_NAMES, 12, 1, "a month (1-12 or jan-dec)"},
        {"day-of-week", 0, 7, DAY_NAMES, 7, 0, "a day (0-7 or sun-sat)"},
};

static const struct {
	const char *name, *expr;
} MACROS[] = {
        {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
        {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
        {"@hourly", "0 * * * *"},
};

/* One item of a field's list, being parsed. */
struct item {
	const struct field *f;
	const char *s;
	size_t len, pos;
	struct ll_err *err;
};

/* ===== messages ===== */

/* "<field><pre><value><post...>", @value quoted or not; returns -EINVAL. */
static int field_error(struct ll_err *err, const struct field *f, const char *pre,
                       const char *value, size_t len, bool quoted, const char *post, ...)
        __attribute__((format(printf, 7, 8)));

static int field_error(struct ll_err *err, const struct field *f, const char *pre,
                       const char *value, size_t len, bool quoted, const char *post, ...)
{
	char text[128];
	struct denial d;
	va_list ap;

	va_start(ap, post);
	vsnprintf(text, sizeof(text), post, ap);
	va_end(ap);
	denial_init(&d, err->msg, sizeof(err->msg));
	denial_text(&d, "%s%s", f->name, pre);
	denial_item(&d, 0, value, len, quoted);
	denial_text(&d, "%s", text);
	return -EINVAL;
}

/* minute "5#" has an unexpected "#" */
static int unexpected(const struct item *it)
{
	struct denial d;

	denial_init(&d, it->err->msg, sizeof(it->err->msg));
	denial_text(&d, "%s ", it->f->name);
	denial_quote(&d, it->s, it->len);
	denial_text(&d, " has an unexpected ");
	denial_quote(&d, it->s + it->pos, 1);
	return -EINVAL;
}

/* ===== fields ===== */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alnum(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool at(const struct item *it, char c)
{
	return it->pos < it->len && it->s[it->pos] == c;
}

/* The letters and digits at it->pos, skipped: how many. */
static size_t word(struct item *it, const char **start)
{
	size_t n = 0;

	*start = it->s + it->pos;
	while (it->pos < it->len && is_alnum(it->s[it->pos]))
		it->pos++, n++;
	return n;
}

/* The number @s (@n bytes), or -1 when it is not all digits; numbers over 9999 are 9999. */
static int number(const char *s, size_t n)
{
	int v = 0;

	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		v = v < 1000 ? v * 10 + (s[i] - '0') : 9999;
	}
	return v;
}

/* The value of name @s (@n bytes) in @f, or -1. */
static int name_value(const struct field *f, const char *s, size_t n)
{
	for (int i = 0; n == 3 && i < f->nnames; i++) {
		size_t k = 0;

		while (k < 3 && lower(s[k]) == f->names[i][k])
			k++;
		if (k == 3)
			return f->name_base + i;
	}
	return -1;
}

/* A number or a name at it->pos, within the field's range. */
static int value(struct item *it, int *out)
{
	const char *s;
	size_t n = word(it, &s);
	int v = number(s, n);

	if (n == 0)
		return unexpected(it);
	if (v < 0)
		v = name_value(it->f, s, n);
	if (v < 0)
		return field_error(it->err, it->f, " ", s, n, true, " is not %s", it->f->what);
	if (v < it->f->lo || v > it->f->hi)
		return field_error(it->err, it->f, " ", s, n, false, " is out of range %d-%d",
		                   it->f->lo, it->f->hi);
	*out = v;
	return 0;
}

/* The step after a '/' at it->pos: 1 to the field's span. */
static int step(struct item *it, int *out)
{
	const char *s;
	size_t n = word(it, &s);
	int v = number(s, n), span = it->f->hi - it->f->lo;

	if (n == 0 && it->pos == it->len)
		return field_error(it->err, it->f, " ", it->s, it->len, true,
		                   " has no step after \"/\"");
	if (n == 0)
		return unexpected(it);
	if (v < 0)
		return field_error(it->err, it->f, " step ", s, n, true, " is not a number");
	if (v < 1 || v > span)
		return field_error(it->err, it->f, " step ", s, n, false, " is out of range 1-%d",
		                   span);
	*out = v;
	return 0;
}

/* "*", "a", "a-b", each with "/n" or not, into @mask. */
static int parse_item(struct item *it, uint64_t *mask)
{
	int lo = it->f->lo, hi = it->f->hi, by = 1, rc = 0;
	bool single = false;

	if (at(it, '*')) {
		it->pos++;
	} else {
		rc = value(it, &lo);
		hi = lo;
		single = true;
		if (rc == 0 && at(it, '-')) {
			it->pos++;
			single = false;
			rc = value(it, &hi);
			if (rc == 0 && hi < lo)
				return field_error(it->err, it->f, " range ", it->s, it->pos, false,
				                   " is reversed: write the smaller value first");
		}
	}
	if (rc == 0 && at(it, '/')) {
		it->pos++;
		rc = step(it, &by);
		if (single)
			hi = it->f->hi; /* "a/n": from a to the end */
	}
	if (rc == 0 && it->pos != it->len)
		rc = unexpected(it);
	for (int v = lo; rc == 0 && v <= hi; v += by)
		*mask |= UINT64_C(1) << v;
	return rc;
}

/* A comma-separated list of items, into @mask. */
static int parse_field(const struct field *f, const char *s, size_t len, uint64_t *mask,
                       struct ll_err *err)
{
	size_t start = 0;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i <= len; i++) {
		struct item it = {f, s + start, i - start, 0, err};

		if (i < len && s[i] != ',')
			continue;
		if (i == start)
			return field_error(err, f, " has an empty item in ", s, len, true, "%s",
			                   "");
		rc = parse_item(&it, mask);
		start = i + 1;
	}
	return rc;
}

/* ===== schedules ===== */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The blank-separated words of @s: their count, the first FIELDS + 1 into @w and @n. */
static size_t split(const char *s, const char *w[FIELDS + 1], size_t n[FIELDS + 1])
{
	size_t count = 0;

	while (*s != '\0') {
		const char *start;

		while (is_blank(*s))
			s++;
		if (*s == '\0')
			break;
		start = s;
		while (*s != '\0' && !is_blank(*s))
			s++;
		if (count <= FIELDS) {
			w[count] = start;
			n[count] = (size_t)(s - start);
		}
		count++;
	}
	return count;
}

/* Day-of-month restricted, day-of-week not: some month of the schedule must have one of its
 * days, or it never fires. */
static int check_days(const struct cron *c, const char *w[], const size_t n[], struct ll_err *err)
{
	struct denial d;

	if (c->mday_star || !c->wday_star)
		return 0;
	for (int m = 1; m <= 12; m++)
		if ((c->months >> m & 1) &&
		    (c->mdays & ((UINT32_C(2) << tz_month_days(2000, m)) - 1)))
			return 0;
	denial_init(&d, err->msg, sizeof(err->msg));
	denial_text(&d, "day-of-month ");
	denial_quote(&d, w[2], n[2]);
	denial_text(&d, " never occurs in month ");
	denial_quote(&d, w[3], n[3]);
	return -EINVAL;
}

static int parse_fields(const char *w[], const size_t n[], struct cron *out, struct ll_err *err)
{
	uint64_t mask[FIELDS] = {0};
	int rc = 0;

	for (int i = 0; rc == 0 && i < FIELDS; i++)
		rc = parse_field(&FIELD[i], w[i], n[i], &mask[i], err);
	if (rc != 0)
		return rc;
	*out = (struct cron){
	        .minutes = mask[0],
	        .hours = (uint32_t)mask[1],
	        .mdays = (uint32_t)mask[2],
	        .months = (uint16_t)mask[3],
	        .wdays = (uint8_t)((mask[4] | mask[4] >> 7) & 0x7f),
	        .mday_star = w[2][0] == '*',
	        .wday_star = w[4][0] == '*',
	};
	return check_days(out, w, n, err);
}

/* @w (@n bytes) is the first of @count words and starts with '@'. */
static int parse_macro(const char *w, size_t n, size_t count, struct cron *out, struct ll_err *err)
{
	struct denial d;

	denial_init(&d, err->msg, sizeof(err->msg));
	for (size_t i = 0; i < sizeof(MACROS) / sizeof(MACROS[0]); i++) {
		size_t k = 0;

		while (k < n && MACROS[i].name[k] != '\0' && lower(w[k]) == MACROS[i].name[k])
			k++;
		if (k < n || MACROS[i].name[k] != '\0')
			continue;
		if (count == 1)
			return cron_parse(MACROS[i].expr, out, err);
		denial_text(&d, "the macro ");
		denial_quote(&d, w, n);
		denial_text(&d, " is the whole schedule: nothing may follow it");
		return -EINVAL;
	}
	denial_text(&d, "unknown macro ");
	denial_quote(&d, w, n);
	denial_text(&d,
	            ": use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly");
	return -EINVAL;
}

int cron_parse(const char *expr, struct cron *out, struct ll_err *err)
{
	struct ll_err local;
	const char *w[FIELDS + 1];
	size_t n[FIELDS + 1], count;
	int rc;

	if (err == NULL)
		err = &local;
	if (expr == NULL)
		expr = "";
	memset(out, 0, sizeof(*out));
	if (strnlen(expr, CRON_EXPR_MAX + 1) > CRON_EXPR_MAX)
		return ll_err_set(err, -E2BIG, "the schedule is longer than %d characters",
		                  CRON_EXPR_MAX);
	count = split(expr, w, n);
	if (count > 0 && w[0][0] == '@')
		rc = parse_macro(w[0], n[0], count, out, err);
	else if (count == 0)
		rc = ll_err_set(err, -EINVAL,
		                "the schedule is empty; it needs 5 fields (minute hour "
		                "day-of-month month day-of-week) or a macro like @daily");
	else if (count != FIELDS)
		rc = ll_err_set(err, -EINVAL,
		                "the schedule has %zu fields; it needs 5 (minute hour day-of-month "
		                "month day-of-week) or a macro like @daily",
		                count);
	else
		rc = parse_fields(w, n, out, err);
	if (rc != 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* ===== the next firing ===== */

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The lowest bit of @mask at @from or above, or -1 (@from <= 63). */
static int next_bit(uint64_t mask, int from)
{
	mask &= ~UINT64_C(0) << from;
	return mask != 0 ? __builtin_ctzll(mask) : -1;
}

/* Vixie cron: both day fields restricted, either; otherwise both. */
static bool day_matches(const struct cron *c, int64_t day, int mday)
{
	bool md = c->mdays >> mday & 1, wd = c->wdays >> tz_weekday(day) & 1;

	return c->mday_star || c->wday_star ? md && wd : md || wd;
}

/* The first time of the day at or after *hour:*minute, into them; false when none is left. */
static bool time_of_day(const struct cron *c, int *hour, int *minute)
{
	for (int h = next_bit(c->hours, *hour); h >= 0;
	     h = h < 23 ? next_bit(c->hours, h + 1) : -1) {
		int m = next_bit(c->minutes, h == *hour ? *minute : 0);

		if (m >= 0) {
			*hour = h;
			*minute = m;
			return true;
		}
	}
	return false;
}

/* The first local minute matching @c at or after the local minute @from, within
 * CRON_SEARCH_YEARS years; false when there is none. */
static bool next_local(const struct cron *c, int64_t from, int64_t *out)
{
	int64_t day = floor_div(from, DAY), last = day + CRON_SEARCH_YEARS * 366, year;
	int sec = (int)(from - day * DAY), hour = sec / 3600, minute = sec % 3600 / 60, month, mday;

	while (day <= last) {
		tz_civil_from_days(day, &year, &month, &mday);
		if (!(c->months >> month & 1)) {
			day = tz_days_from_civil(year + (month == 12), month % 12 + 1, 1);
		} else if (day_matches(c, day, mday) && time_of_day(c, &hour, &minute)) {
			*out = day * DAY + hour * 3600 + minute * 60;
			return true;
		} else {
			day++;
		}
		hour = minute = 0;
	}
	return false;
}

static bool valid(const struct cron *c)
{
	return c->minutes != 0 && c->minutes >> 60 == 0 && c->hours != 0 && c->hours >> 24 == 0 &&
	       c->mdays != 0 && (c->mdays & 1) == 0 && c->months != 0 &&
	       (c->months & ~UINT16_C(0x1ffe)) == 0 && c->wdays != 0 && c->wdays >> 7 == 0;
}

int cron_next(const struct cron *cron, const struct tz_zone *zone, int64_t after_utc,
              int64_t *next_utc, struct ll_err *err)
{
	struct ll_err local;
	int64_t reached, found, year;
	int month, day, sec;

	if (err == NULL)
		err = &local;
	if (!valid(cron))
		return ll_err_set(err, -EINVAL, "the schedule was not made by cron_parse()");
	if (after_utc < TZ_TIME_MIN || after_utc > TZ_TIME_MAX)
		return ll_err_set(err, -ERANGE, "the instant %lld is outside the years 1 to 9999",
		                  (long long)after_utc);
	/* The first local minute after every wall-clock time shown up to after_utc. */
	reached = zone != NULL ? tz_local_reached(zone, after_utc) : after_utc;
	if (next_local(cron, (floor_div(reached, 60) + 1) * 60, &found)) {
		*next_utc = zone != NULL ? tz_local_first(zone, found) : found;
		return 0;
	}
	tz_civil_from_days(floor_div(after_utc, DAY), &year, &month, &day);
	sec = (int)(after_utc - floor_div(after_utc, DAY) * DAY);
	return ll_err_set(err, -ERANGE,
	                  "the schedule does not fire within %d years after "
	                  "%04lld-%02d-%02dT%02d:%02d:%02dZ",
	                  CRON_SEARCH_YEARS, (long long)year, month, day, sec / 3600,
	                  sec % 3600 / 60, sec % 60);
}
