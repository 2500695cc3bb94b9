/*
 * fuzz_hibernation.c - any text, read as each of the three hibernation annotations, is accepted
 * or refused with one printable line that names the annotation, and refused with its output
 * zeroed. An accepted value formats to a canonical text that parses back to the same struct
 * (the override, the saved value, the reservation), the JSON ones within their size caps.
 * The override agrees with HIB_OVERRIDE_PATTERN (PCRE2, '$' at the end only, as RE2): a value
 * the pattern refuses is refused; one it matches is accepted exactly when libc's timegm() finds
 * the date real and the instant, offset applied, within 1970..9999, and then at that instant.
 * Input: the annotation's text (cut at a NUL).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/err.h"
#include "tenancy/hibernation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INPUT_MAX (HIB_RESERVED_TEXT_MAX + 16)

/* One printable line starting with @prefix. */
static void check_message(const char *msg, const char *prefix)
{
	if (msg[0] == '\0' || strncmp(msg, prefix, strlen(prefix)) != 0)
		abort();
	for (const char *p = msg; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			abort();
}

/* Whether the @n bytes at @p are all zero (@n at most sizeof(struct hib_reserved)). */
static bool all_zero(const void *p, size_t n)
{
	static const struct hib_reserved zero;

	return memcmp(p, &zero, n) == 0;
}

static bool pattern_matches(const char *s)
{
	static pcre2_code *re;
	static pcre2_match_data *md;
	int errcode, rc;
	PCRE2_SIZE off;

	if (re == NULL) {
		re = pcre2_compile((PCRE2_SPTR)HIB_OVERRIDE_PATTERN, PCRE2_ZERO_TERMINATED,
		                   PCRE2_DOLLAR_ENDONLY, &errcode, &off, NULL);
		if (re == NULL)
			abort();
		md = pcre2_match_data_create_from_pattern(re, NULL);
	}
	rc = pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
	return rc >= 0;
}

/* The instant of @t, an RFC 3339 time the pattern matched, by libc; false when its date does
 * not exist. */
static bool libc_instant(const char *t, int64_t *out)
{
	struct tm tm = {0};
	int y, mo, d, h, mi, s, oh = 0, om = 0;
	const char *z = t + 19;
	time_t v;

	if (sscanf(t, "%4d-%2d-%2d%*1[Tt]%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s) != 6)
		abort();
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	v = timegm(&tm);
	if (tm.tm_mday != d || tm.tm_mon != mo - 1)
		return false; /* normalised into the next month */
	if (*z == '.')
		z += strspn(z + 1, "0123456789") + 1;
	if (*z == '+' || *z == '-')
		if (sscanf(z + 1, "%2d:%2d", &oh, &om) != 2)
			abort();
	*out = (int64_t)v - (*z == '-' ? -1 : 1) * (oh * 3600 + om * 60);
	return true;
}

static void fuzz_override(const char *text)
{
	struct hib_override o, again;
	struct ll_err err;
	char out[HIB_OVERRIDE_BUF];
	int rc = hib_override_parse(text, &o, &err);
	bool matched = pattern_matches(text);
	const char *t = strchr(text, '=');
	int64_t want = 0;
	bool expect = matched;

	if (matched && t != NULL)
		expect = libc_instant(t + 1, &want) && want >= HIB_TIME_MIN && want <= HIB_TIME_MAX;
	if ((rc == 0) != expect)
		abort();
	if (rc != 0) {
		check_message(err.msg, "annotation " HIB_OVERRIDE_ANNOTATION ": ");
		if (!all_zero(&o, sizeof(o)))
			abort();
		return;
	}
	if (o.until != want)
		abort();
	if (hib_override_format(&o, out, sizeof(out)) != 0)
		abort();
	if (hib_override_parse(out, &again, NULL) != 0 || again.kind != o.kind ||
	    again.until != o.until)
		abort();
	if (t == NULL && strcmp(out, text) != 0) /* sleep, wake, skip-next-sleep: as written */
		abort();
}

static void fuzz_time(const char *text)
{
	struct ll_err err;
	int64_t t = -1;
	int rc = hib_parse_rfc3339(text, &t, &err);

	if (rc != 0)
		check_message(err.msg, "\"");
	else if (t < HIB_TIME_MIN || t > HIB_TIME_MAX)
		abort();
}

static void fuzz_saved(const char *text)
{
	static struct hib_saved s, again;
	struct ll_err err;
	char *out;

	if (hib_saved_parse(text, &s, &err) != 0) {
		check_message(err.msg, "annotation " HIB_SAVED_ANNOTATION ": ");
		if (!all_zero(&s, sizeof(s)))
			abort();
		return;
	}
	if (hib_saved_check(&s, &err) != 0)
		abort();
	out = hib_saved_format(&s);
	if (out == NULL || strlen(out) > HIB_SAVED_TEXT_MAX)
		abort();
	if (hib_saved_parse(out, &again, NULL) != 0 || memcmp(&s, &again, sizeof(s)) != 0)
		abort();
	free(out);
}

static void fuzz_reserved(const char *text)
{
	static struct hib_reserved r, again;
	struct ll_err err;
	char *out;

	if (hib_reserved_parse(text, &r, &err) != 0) {
		check_message(err.msg, "annotation " HIB_RESERVED_ANNOTATION ": ");
		if (!all_zero(&r, sizeof(r)))
			abort();
		return;
	}
	if (r.count > HIB_RESERVED_MAX)
		abort();
	out = hib_reserved_format(&r);
	if (out == NULL || strlen(out) > HIB_RESERVED_TEXT_MAX)
		abort();
	if (hib_reserved_parse(out, &again, NULL) != 0 || memcmp(&r, &again, sizeof(r)) != 0)
		abort();
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[INPUT_MAX + 1];

	if (size > INPUT_MAX)
		size = INPUT_MAX;
	memcpy(text, data, size);
	text[size] = '\0';
	fuzz_override(text);
	fuzz_time(text);
	fuzz_saved(text);
	fuzz_reserved(text);
	return 0;
}
