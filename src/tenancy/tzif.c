/* tzif.c - IANA time zones from TZif files and their POSIX TZ footers (see tzif.h). */
#include "tenancy/tzif.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "tenancy/denial.h"

#define DAY             86400
#define HOUR            3600
#define RULE_HOURS_MAX  167 /* transition times of footer rules, RFC 8536 §3.3.1 */
#define TZIF_HEADER_LEN 44
#define STR_(x)         #x
#define STR(x)          STR_(x)

struct tz_type {
	int32_t utoff;
	bool isdst;
};

/* A date of a footer rule, with the local time of day at which it switches. */
struct tz_date {
	char kind;    /* 'J': Jn, day n (1-365) not counting Feb 29; 'D': n (0-365); 'M': Mm.w.d */
	int n;        /* J, D */
	int m, w, d;  /* M: month 1-12, week 1-5 (5: the last), weekday 0-6 (0: Sunday) */
	int32_t time; /* seconds after local midnight, +-RULE_HOURS_MAX hours */
};

/* A footer: std, or std and dst with the dates that switch between them. */
struct tz_rule {
	struct tz_type std, dst;
	bool has_dst;
	struct tz_date start, end; /* to dst (a time in std), back to std (a time in dst) */
};

struct tz_zone {
	size_t n;              /* transitions */
	int64_t *at;           /* their instants, strictly ascending */
	uint8_t *type;         /* the type each starts, < ntypes */
	size_t ntypes;         /* at least one */
	struct tz_type *types; /* types[0] holds before the first transition */
	bool has_rule;         /* a footer that is not empty: it holds from at[n - 1] on */
	struct tz_rule rule;
};

/* ===== the calendar (Howard Hinnant's algorithms) ===== */

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t tz_days_from_civil(int64_t year, int month, int day)
{
	int64_t y = year - (month <= 2), era = floor_div(y, 400), yoe = y - era * 400;
	int64_t doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;

	return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

void tz_civil_from_days(int64_t days, int64_t *year, int *month, int *day)
{
	int64_t z = days + 719468, era = floor_div(z, 146097), doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;

	*day = (int)(doy - (153 * mp + 2) / 5 + 1);
	*month = (int)(mp < 10 ? mp + 3 : mp - 9);
	*year = yoe + era * 400 + (*month <= 2);
}

int tz_weekday(int64_t days)
{
	return (int)(days - floor_div(days + 4, 7) * 7 + 4); /* 1970-01-01 was a Thursday */
}

static bool is_leap(int64_t year)
{
	return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

int tz_month_days(int64_t year, int month)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return days[month - 1] + (month == 2 && is_leap(year));
}

/* ===== footer rules in force ===== */

/* The day number of rule date @dt in @year. */
static int64_t rule_day(const struct tz_date *dt, int64_t year)
{
	int64_t jan1 = tz_days_from_civil(year, 1, 1), first, day;

	if (dt->kind == 'J')
		return jan1 + dt->n - 1 + (is_leap(year) && dt->n >= 60);
	if (dt->kind == 'D')
		return jan1 + dt->n;
	first = tz_days_from_civil(year, dt->m, 1);
	day = first + (dt->d - tz_weekday(first) + 7) % 7 + (int64_t)(dt->w - 1) * 7;
	while (day >= first + tz_month_days(year, dt->m))
		day -= 7;
	return day;
}

struct switch_at {
	int64_t at;
	int64_t year;
	bool to_dst;
};

/* Rule switches of the years @year - 2 to @year + 2, in order: by instant, then year, then
 * start before end (so "DST all year", an end meeting next year's start, stays DST). */
static void rule_switches(const struct tz_rule *r, int64_t year, struct switch_at sw[10])
{
	size_t k = 0;

	for (int64_t y = year - 2; y <= year + 2; y++) {
		sw[k++] = (struct switch_at){
		        rule_day(&r->start, y) * DAY + r->start.time - r->std.utoff, y, true};
		sw[k++] = (struct switch_at){
		        rule_day(&r->end, y) * DAY + r->end.time - r->dst.utoff, y, false};
	}
	for (size_t i = 1; i < k; i++) {
		struct switch_at s = sw[i];
		size_t j = i;

		while (j > 0 && (sw[j - 1].at > s.at ||
		                 (sw[j - 1].at == s.at &&
		                  (sw[j - 1].year > s.year ||
		                   (sw[j - 1].year == s.year && !sw[j - 1].to_dst && s.to_dst))))) {
			sw[j] = sw[j - 1];
			j--;
		}
		sw[j] = s;
	}
}

/* The period of footer rule @r holding @t. Switches are those of the years 1 to 9999: the
 * period before the first starts at INT64_MIN, the one after the last ends at INT64_MAX. */
static void rule_period(const struct tz_rule *r, int64_t t, struct tz_period *out)
{
	int64_t tc = t < TZ_TIME_MIN ? TZ_TIME_MIN : t > TZ_TIME_MAX ? TZ_TIME_MAX : t, year;
	struct switch_at sw[10];
	const struct tz_type *type;
	size_t i = 0;
	int month, day;

	if (!r->has_dst) {
		*out = (struct tz_period){INT64_MIN, INT64_MAX, r->std.utoff, r->std.isdst};
		return;
	}
	tz_civil_from_days(floor_div(tc, DAY), &year, &month, &day);
	rule_switches(r, year, sw);
	/* sw[0] <= tc < sw[9]: offsets and rule times are bounded, each switch is within 9 days
	 * of its year */
	while (i + 1 < 10 && sw[i + 1].at <= tc)
		i++;
	type = sw[i].to_dst ? &r->dst : &r->std;
	*out = (struct tz_period){sw[i].at <= TZ_TIME_MIN ? INT64_MIN : sw[i].at,
	                          sw[i + 1].at > TZ_TIME_MAX ? INT64_MAX : sw[i + 1].at,
	                          type->utoff, type->isdst};
}

/* ===== queries ===== */

static void type_period(const struct tz_type *type, int64_t start, int64_t end,
                        struct tz_period *out)
{
	*out = (struct tz_period){start, end, type->utoff, type->isdst};
}

void tz_period_at(const struct tz_zone *z, int64_t utc, struct tz_period *out)
{
	size_t n = z->n, lo = 0, hi;
	int64_t last = n > 0 ? z->at[n - 1] : INT64_MIN;

	if (n > 0 && utc < z->at[0]) {
		type_period(&z->types[0], INT64_MIN, z->at[0], out);
		return;
	}
	if (n == 0 || utc >= last) {
		if (!z->has_rule) {
			type_period(&z->types[n > 0 ? z->type[n - 1] : 0], last, INT64_MAX, out);
			return;
		}
		rule_period(&z->rule, utc, out);
		if (out->start < last)
			out->start = last;
		return;
	}
	hi = n - 1; /* at[lo] <= utc < at[hi] */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->at[mid] <= utc)
			lo = mid;
		else
			hi = mid;
	}
	type_period(&z->types[z->type[lo]], z->at[lo], z->at[hi], out);
}

int32_t tz_utoff_at(const struct tz_zone *zone, int64_t utc)
{
	struct tz_period p;

	tz_period_at(zone, utc, &p);
	return p.utoff;
}

static int64_t clamp_half(int64_t t)
{
	return t < INT64_MIN / 2 ? INT64_MIN / 2 : t > INT64_MAX / 2 ? INT64_MAX / 2 : t;
}

int64_t tz_local_first(const struct tz_zone *zone, int64_t local)
{
	struct tz_period p;

	local = clamp_half(local);
	/* Before local - TZ_UTOFF_MAX no offset makes the wall clock reach local. */
	tz_period_at(zone, local - TZ_UTOFF_MAX, &p);
	for (;;) {
		int64_t t = local - p.utoff;

		if (t < p.start)
			t = p.start;
		if (t < p.end)
			return t;
		tz_period_at(zone, p.end, &p);
	}
}

int64_t tz_local_reached(const struct tz_zone *zone, int64_t utc)
{
	struct tz_period p, q;
	int64_t max, from;

	utc = clamp_half(utc);
	/* Before utc - 2 * TZ_UTOFF_MAX the wall clock showed less than utc + any offset. */
	from = utc - 2 * (int64_t)TZ_UTOFF_MAX;
	tz_period_at(zone, utc, &p);
	max = utc + p.utoff;
	while (p.start > from) {
		tz_period_at(zone, p.start - 1, &q);
		if (p.start - 1 + q.utoff > max)
			max = p.start - 1 + q.utoff;
		p = q;
	}
	return max;
}

/* ===== the POSIX TZ string of the footer ===== */

struct tzs {
	const char *p, *end;
};

static bool at_char(const struct tzs *s, char c)
{
	return s->p < s->end && *s->p == c;
}

/* Skip @c when it is next. */
static bool eat(struct tzs *s, char c)
{
	if (!at_char(s, c))
		return false;
	s->p++;
	return true;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* A decimal number from @lo to @hi. */
static bool tzs_num(struct tzs *s, int lo, int hi, int *out)
{
	int v = 0;

	if (s->p >= s->end || !is_digit(*s->p))
		return false;
	while (s->p < s->end && is_digit(*s->p)) {
		v = v * 10 + (*s->p++ - '0');
		if (v > hi)
			return false;
	}
	*out = v;
	return v >= lo;
}

/* A zone abbreviation: three or more letters, or <three or more of A-Z a-z 0-9 + ->. */
static bool tzs_name(struct tzs *s)
{
	const char *q = s->p;

	if (at_char(s, '<')) {
		for (q++; q < s->end && (is_alpha(*q) || is_digit(*q) || *q == '+' || *q == '-');)
			q++;
		if (q == s->end || *q != '>' || q - s->p - 1 < 3)
			return false;
		s->p = q + 1;
		return true;
	}
	while (q < s->end && is_alpha(*q))
		q++;
	if (q - s->p < 3)
		return false;
	s->p = q;
	return true;
}

/* [+-]hh[:mm[:ss]] with hh at most @max_hours, into seconds. */
static bool tzs_hms(struct tzs *s, int max_hours, int32_t *out)
{
	int sign = 1, h, m = 0, sec = 0;

	if (at_char(s, '+') || at_char(s, '-'))
		sign = *s->p++ == '-' ? -1 : 1;
	if (!tzs_num(s, 0, max_hours, &h))
		return false;
	if (eat(s, ':') && (!tzs_num(s, 0, 59, &m) || (eat(s, ':') && !tzs_num(s, 0, 59, &sec))))
		return false;
	*out = sign * (h * HOUR + m * 60 + sec);
	return true;
}

/* A POSIX offset (west of Greenwich positive) as a UTC offset within TZ_UTOFF_MAX. */
static bool tzs_offset(struct tzs *s, int32_t *utoff)
{
	int32_t west;

	if (!tzs_hms(s, 25, &west) || west > TZ_UTOFF_MAX || west < -TZ_UTOFF_MAX)
		return false;
	*utoff = -west;
	return true;
}

/* Jn, n or Mm.w.d, then [/time]. */
static bool tzs_date(struct tzs *s, struct tz_date *dt)
{
	bool ok;

	dt->time = 2 * HOUR;
	if (eat(s, 'J')) {
		dt->kind = 'J';
		ok = tzs_num(s, 1, 365, &dt->n);
	} else if (eat(s, 'M')) {
		dt->kind = 'M';
		ok = tzs_num(s, 1, 12, &dt->m) && eat(s, '.') && tzs_num(s, 1, 5, &dt->w) &&
		     eat(s, '.') && tzs_num(s, 0, 6, &dt->d);
	} else {
		dt->kind = 'D';
		ok = tzs_num(s, 0, 365, &dt->n);
	}
	if (ok && eat(s, '/'))
		ok = tzs_hms(s, RULE_HOURS_MAX, &dt->time);
	return ok;
}

/* std offset [dst [offset] [,start[/time],end[/time]]], the whole of @s. */
static bool parse_rule(struct tzs *s, struct tz_rule *r)
{
	static const char us_rules[] = ",M3.2.0,M11.1.0";
	struct tzs dflt = {us_rules, us_rules + sizeof(us_rules) - 1};

	if (!tzs_name(s) || !tzs_offset(s, &r->std.utoff))
		return false;
	if (s->p == s->end)
		return true;
	if (!tzs_name(s))
		return false;
	r->has_dst = true;
	r->dst = (struct tz_type){r->std.utoff + HOUR, true};
	if (s->p < s->end && !at_char(s, ',') && !tzs_offset(s, &r->dst.utoff))
		return false;
	if (r->dst.utoff > TZ_UTOFF_MAX)
		return false;
	if (s->p == s->end)
		s = &dflt; /* no rules: the US ones, as tzcode */
	return eat(s, ',') && tzs_date(s, &r->start) && eat(s, ',') && tzs_date(s, &r->end) &&
	       s->p == s->end;
}

/* ===== the TZif file ===== */

struct rd {
	const uint8_t *p;
	size_t len, pos;
	struct ll_err *err;
};

struct tzif_header {
	char version; /* 0 or '2'.. */
	uint32_t isut, isstd, leap, time, types, chars;
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* The next @n bytes of @r, or NULL when they are not there. */
static const uint8_t *take(struct rd *r, size_t n)
{
	const uint8_t *p = r->p + r->pos;

	if (n > r->len - r->pos)
		return NULL;
	r->pos += n;
	return p;
}

static int truncated(const struct rd *r)
{
	return ll_err_set(r->err, -EINVAL, "TZif data is truncated");
}

static int read_header(struct rd *r, struct tzif_header *h)
{
	const uint8_t *p = take(r, TZIF_HEADER_LEN);
	uint32_t *counts[] = {&h->isut, &h->isstd, &h->leap, &h->time, &h->types, &h->chars};

	if (p == NULL || memcmp(p, "TZif", 4) != 0)
		return ll_err_set(r->err, -EINVAL, "not a TZif file (no \"TZif\" magic)");
	h->version = (char)p[4];
	if (h->version != 0 && (h->version < '2' || h->version > '4'))
		return ll_err_set(r->err, -EINVAL, "TZif version 0x%02x is not supported (1 to 4)",
		                  p[4]);
	for (size_t i = 0; i < 6; i++)
		*counts[i] = be32(p + 20 + 4 * i);
	if (h->types == 0 || h->types > 256 || h->chars == 0)
		return ll_err_set(r->err, -EINVAL,
		                  "TZif data has %u local time types and %u "
		                  "abbreviation bytes; it needs 1-256 and 1 or more",
		                  h->types, h->chars);
	if ((h->isut != 0 && h->isut != h->types) || (h->isstd != 0 && h->isstd != h->types))
		return ll_err_set(r->err, -EINVAL,
		                  "TZif data has %u UT and %u standard indicators for %u types",
		                  h->isut, h->isstd, h->types);
	return 0;
}

/* The bytes of the data block described by @h, with @tsize-byte times. */
static size_t block_len(const struct tzif_header *h, size_t tsize)
{
	return (size_t)h->time * (tsize + 1) + (size_t)h->types * 6 + h->chars +
	       (size_t)h->leap * (tsize + 4) + h->isstd + h->isut;
}

static int read_types(struct rd *r, const struct tzif_header *h, struct tz_zone *z)
{
	const uint8_t *p = take(r, (size_t)h->types * 6);

	if (p == NULL)
		return truncated(r);
	z->ntypes = h->types;
	z->types = xcalloc(z->ntypes, sizeof(*z->types));
	for (size_t i = 0; i < z->ntypes; i++, p += 6) {
		int32_t utoff = (int32_t)be32(p);

		if (utoff > TZ_UTOFF_MAX || utoff < -TZ_UTOFF_MAX)
			return ll_err_set(
			        r->err, -EINVAL,
			        "TZif local time type %zu has UTC offset %d s, over 25:59:59", i,
			        utoff);
		if (p[4] > 1 || p[5] >= h->chars)
			return ll_err_set(
			        r->err, -EINVAL,
			        "TZif local time type %zu has a bad DST flag or abbreviation", i);
		z->types[i] = (struct tz_type){utoff, p[4] == 1};
	}
	return 0;
}

/* The data block of @h: transitions (@tsize-byte times), types; the rest is checked only. */
static int read_block(struct rd *r, const struct tzif_header *h, size_t tsize, struct tz_zone *z)
{
	const uint8_t *times = take(r, (size_t)h->time * tsize), *idx = take(r, h->time);
	int rc;

	if (times == NULL || idx == NULL)
		return truncated(r);
	if (h->leap != 0)
		return ll_err_set(r->err, -EINVAL,
		                  "TZif data with leap seconds is not supported "
		                  "(a zone under right/)");
	z->n = h->time;
	z->at = xcalloc(z->n > 0 ? z->n : 1, sizeof(*z->at));
	z->type = xcalloc(z->n > 0 ? z->n : 1, sizeof(*z->type));
	for (size_t i = 0; i < z->n; i++) {
		z->at[i] = tsize == 8 ? be64(times + 8 * i) : (int32_t)be32(times + 4 * i);
		z->type[i] = idx[i];
		if (i > 0 && z->at[i] <= z->at[i - 1])
			return ll_err_set(r->err, -EINVAL,
			                  "TZif transition %zu is not after the one before", i);
		if (idx[i] >= h->types)
			return ll_err_set(r->err, -EINVAL,
			                  "TZif transition %zu has local time type %u of %u", i,
			                  idx[i], h->types);
	}
	rc = read_types(r, h, z);
	if (rc == 0 && take(r, (size_t)h->chars + h->isstd + h->isut) == NULL)
		rc = truncated(r);
	for (uint32_t i = 0; rc == 0 && i < h->isstd + h->isut; i++)
		if (r->p[r->pos - 1 - i] > 1)
			rc = ll_err_set(r->err, -EINVAL,
			                "TZif data has an indicator that is not 0 or 1");
	return rc;
}

/* "\n<POSIX TZ string>\n" and the end of the data. */
static int read_footer(struct rd *r, struct tz_zone *z)
{
	const uint8_t *nl = NULL, *start = take(r, 1);
	struct tzs s;
	struct denial d;

	if (start != NULL && *start == '\n')
		nl = memchr(start + 1, '\n', r->len - r->pos);
	if (nl == NULL)
		return ll_err_set(r->err, -EINVAL, "TZif footer is missing");
	s = (struct tzs){(const char *)start + 1, (const char *)nl};
	r->pos = (size_t)(nl + 1 - r->p);
	if (r->pos != r->len)
		return ll_err_set(r->err, -EINVAL, "TZif data has %zu bytes after the footer",
		                  r->len - r->pos);
	if (s.p == s.end)
		return 0;
	z->has_rule = true;
	if (parse_rule(&s, &z->rule))
		return 0;
	denial_init(&d, r->err->msg, sizeof(r->err->msg));
	denial_text(&d, "TZif footer ");
	denial_quote(&d, (const char *)start + 1, (size_t)(nl - start - 1));
	denial_text(&d, " is not a POSIX TZ string (like CET-1CEST,M3.5.0,M10.5.0/3)");
	return -EINVAL;
}

static int read_tzif(struct rd *r, struct tz_zone *z)
{
	struct tzif_header h;
	int rc = read_header(r, &h);

	if (rc != 0)
		return rc;
	if (h.version == 0) {
		rc = read_block(r, &h, 4, z);
		if (rc == 0 && r->pos != r->len)
			rc = ll_err_set(r->err, -EINVAL, "TZif data has %zu bytes after its end",
			                r->len - r->pos);
		return rc;
	}
	if (take(r, block_len(&h, 4)) == NULL)
		return truncated(r);
	rc = read_header(r, &h);
	if (rc == 0)
		rc = read_block(r, &h, 8, z);
	if (rc == 0)
		rc = read_footer(r, z);
	return rc;
}

int tz_parse(const void *data, size_t len, struct tz_zone **zone_out, struct ll_err *err)
{
	struct ll_err local;
	struct rd r = {data, len, 0, err != NULL ? err : &local};
	struct tz_zone *z;
	int rc;

	*zone_out = NULL;
	if (len > TZ_FILE_MAX)
		return ll_err_set(r.err, -EMSGSIZE, "TZif data has %zu bytes; at most %d are read",
		                  len, TZ_FILE_MAX);
	z = xcalloc(1, sizeof(*z));
	rc = read_tzif(&r, z);
	if (rc != 0) {
		tz_free(z);
		return rc;
	}
	*zone_out = z;
	return 0;
}

void tz_free(struct tz_zone *zone)
{
	if (zone == NULL)
		return;
	free(zone->at);
	free(zone->type);
	free(zone->types);
	free(zone);
}

/* ===== zones by name ===== */

/* Why @name is not an IANA name tz_load() reads, or NULL when it is one. */
static const char *bad_name(const char *name, size_t len)
{
	static const char ok[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/_+-.";

	if (name == NULL || len == 0)
		return "it is empty";
	if (len > TZ_NAME_MAX)
		return "it is longer than " STR(TZ_NAME_MAX) " bytes";
	if (strspn(name, ok) != len)
		return "only letters, digits and / _ + - . may appear";
	if (name[0] == '/')
		return "it must be relative, without a leading /";
	if (name[len - 1] == '/' || strstr(name, "//") != NULL)
		return "it has an empty part";
	if (name[0] == '.' || strstr(name, "/.") != NULL)
		return "no part may start with . (so no ..)";
	return NULL;
}

static struct tz_zone *utc_zone(void)
{
	struct tz_zone *z = xcalloc(1, sizeof(*z));

	z->ntypes = 1;
	z->types = xcalloc(1, sizeof(*z->types));
	return z;
}

/* @rc (< 0) of reading the file of @name at @path, into @err. */
static int read_error(struct ll_err *err, int rc, const char *name, const char *path)
{
	struct denial d;

	denial_init(&d, err->msg, sizeof(err->msg));
	denial_text(&d, "time zone ");
	denial_quote(&d, name, strlen(name));
	if (rc == -ENOENT || rc == -ENOTDIR || rc == -EISDIR) {
		denial_text(&d, " is unknown: no such zone file");
		rc = -ENOENT;
	} else if (rc == -EMSGSIZE) {
		denial_text(&d, ": its file is larger than %d bytes", TZ_FILE_MAX);
	} else {
		denial_text(&d, ": cannot read the zone file: %s", strerror(-rc));
	}
	denial_text(&d, " (%s)", path);
	return rc;
}

int tz_load(const char *name, const char *dir, struct tz_zone **zone_out, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL), data = BUF_INIT(TZ_FILE_MAX);
	struct ll_err local, *e = err != NULL ? err : &local;
	size_t len = name != NULL ? strnlen(name, TZ_NAME_MAX + 1) : 0;
	const char *why = bad_name(name, len);
	struct denial d;
	int rc;

	*zone_out = NULL;
	if (why != NULL) {
		denial_init(&d, e->msg, sizeof(e->msg));
		denial_text(&d, "time zone ");
		denial_quote(&d, name, len);
		denial_text(&d, " is not an IANA name like Europe/Berlin: %s", why);
		return -EINVAL;
	}
	if (strcmp(name, "UTC") == 0) {
		*zone_out = utc_zone();
		return 0;
	}
	buf_appendf(&path, "%s/%s", dir != NULL ? dir : TZ_ZONEINFO_DIR, name);
	rc = buf_read_file(&data, buf_cstr(&path), false);
	if (rc != 0) {
		rc = read_error(e, rc, name, buf_cstr(&path));
		goto out;
	}
	rc = tz_parse(data.p, data.len, zone_out, e);
	if (rc != 0) {
		struct ll_err why_not = *e;

		denial_init(&d, e->msg, sizeof(e->msg));
		denial_text(&d, "time zone ");
		denial_quote(&d, name, strlen(name));
		denial_text(&d, ": %s (%s)", why_not.msg, buf_cstr(&path));
	}
out:
	buf_release(&path);
	buf_release(&data);
	return rc;
}
