/* quantity.c - Kubernetes resource.Quantity as an exact nano-unit count (see quantity.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kube/quantity.h"

#define NANO     1000000000
#define U128_MAX (~(unsigned __int128)0)
#define QTY_MAX  ((unsigned __int128)(U128_MAX >> 1))
/* apimachinery silently caps binary-suffixed quantities at 2^63-1 units when parsing. */
#define BINARY_CAP ((unsigned __int128)INT64_MAX * NANO)
/* Beyond this, an exponent either overflows or rounds to 1n; saturating keeps int maths safe. */
#define EXP_SATURATE 100000

struct suffix {
	const char *name;
	int exp10;
	unsigned shift; /* power of two for binary suffixes */
	enum qty_format format;
};

static const struct suffix suffixes[] = {
        {"", 0, 0, QTY_DECIMAL_SI},   {"n", -9, 0, QTY_DECIMAL_SI}, {"u", -6, 0, QTY_DECIMAL_SI},
        {"m", -3, 0, QTY_DECIMAL_SI}, {"k", 3, 0, QTY_DECIMAL_SI},  {"M", 6, 0, QTY_DECIMAL_SI},
        {"G", 9, 0, QTY_DECIMAL_SI},  {"T", 12, 0, QTY_DECIMAL_SI}, {"P", 15, 0, QTY_DECIMAL_SI},
        {"E", 18, 0, QTY_DECIMAL_SI}, {"Ki", 0, 10, QTY_BINARY_SI}, {"Mi", 0, 20, QTY_BINARY_SI},
        {"Gi", 0, 30, QTY_BINARY_SI}, {"Ti", 0, 40, QTY_BINARY_SI}, {"Pi", 0, 50, QTY_BINARY_SI},
        {"Ei", 0, 60, QTY_BINARY_SI},
};

static const char *const dec_suffix[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
static const char *const bin_suffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

/* The mantissa split into its parts; the digits are slices of the input. */
struct mantissa {
	bool neg;
	const char *ip, *fp; /* integer and fraction digits */
	size_t ilen, flen;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static size_t span_digits(const char *s, size_t len, size_t i)
{
	while (i < len && is_digit(s[i]))
		i++;
	return i;
}

/* Sign, digits, optional fraction; at least one digit. Returns where the suffix starts. */
static int split_mantissa(const char *s, size_t len, struct mantissa *m, size_t *suffix_at)
{
	size_t i = 0, end;

	memset(m, 0, sizeof(*m));
	if (i < len && (s[i] == '+' || s[i] == '-'))
		m->neg = s[i++] == '-';
	end = span_digits(s, len, i);
	m->ip = s + i;
	m->ilen = end - i;
	i = end;
	if (i < len && s[i] == '.') {
		end = span_digits(s, len, ++i);
		m->fp = s + i;
		m->flen = end - i;
		i = end;
	}
	if (m->ilen + m->flen == 0)
		return -EINVAL;
	*suffix_at = i;
	return 0;
}

/* e/E, optional sign, digits; the value saturates at +-EXP_SATURATE. */
static int parse_exponent(const char *s, size_t len, int *exp10)
{
	size_t i = 1;
	bool neg = false;
	int v = 0;

	if (len < 2 || (s[0] != 'e' && s[0] != 'E'))
		return -EINVAL;
	if (s[i] == '+' || s[i] == '-')
		neg = s[i++] == '-';
	if (i == len || span_digits(s, len, i) != len)
		return -EINVAL;
	for (; i < len; i++)
		v = v >= EXP_SATURATE ? EXP_SATURATE : v * 10 + (s[i] - '0');
	*exp10 = neg ? -v : v;
	return 0;
}

static int parse_suffix(const char *s, size_t len, struct suffix *out)
{
	size_t i;

	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		if (strlen(suffixes[i].name) == len && memcmp(suffixes[i].name, s, len) == 0) {
			*out = suffixes[i];
			return 0;
		}
	}
	*out = (struct suffix){"", 0, 0, QTY_DECIMAL_EXP};
	return parse_exponent(s, len, &out->exp10);
}

static char mantissa_digit(const struct mantissa *m, long long j)
{
	return (size_t)j < m->ilen ? m->ip[j] : m->fp[(size_t)j - m->ilen];
}

static bool mul_small(unsigned __int128 *v, unsigned k)
{
	if (*v > U128_MAX / k)
		return false;
	*v *= k;
	return true;
}

static bool add_small(unsigned __int128 *v, uint64_t k)
{
	if (*v > U128_MAX - k)
		return false;
	*v += k;
	return true;
}

/*
 * The fraction below 1n is 0.<lead zeros><digits from..n>. Multiplying it by 2^shift (shift <= 60)
 * right to left keeps every step within 64 bits; *carry gets the whole nano-units it adds and
 * *inexact whether anything below 1n is left over (which rounds the magnitude up).
 */
static void fraction_times_pow2(const struct mantissa *m, long long from, long long lead,
                                unsigned shift, uint64_t *carry, bool *inexact)
{
	long long n = (long long)(m->ilen + m->flen), j;
	uint64_t c = 0, v;

	*inexact = false;
	for (j = n - 1; j >= from; j--) {
		v = ((uint64_t)(mantissa_digit(m, j) - '0') << shift) + c;
		c = v / 10;
		*inexact |= v % 10 != 0;
	}
	/* c < 2^60 < 10^19, so twenty leading zeros shift it out entirely. */
	for (j = 0; j < lead && j < 20; j++) {
		*inexact |= c % 10 != 0;
		c /= 10;
	}
	*carry = c;
}

/* |value| in nano-units, rounded up; false when it does not fit in 128 bits. */
static bool magnitude(const struct mantissa *m, const struct suffix *suf, unsigned __int128 *out)
{
	long long n = (long long)(m->ilen + m->flen);
	long long split = (long long)m->ilen + suf->exp10 + 9; /* digits left of the nano point */
	long long j, whole = split < n ? split : n;
	unsigned __int128 q = 0;
	uint64_t carry;
	bool inexact;

	for (j = 0; j < whole; j++) {
		if (!mul_small(&q, 10) || !add_small(&q, (uint64_t)(mantissa_digit(m, j) - '0')))
			return false;
	}
	for (j = n; j < split && q != 0; j++) {
		if (!mul_small(&q, 10))
			return false;
	}
	if (suf->shift && q > (U128_MAX >> suf->shift))
		return false;
	q <<= suf->shift;
	fraction_times_pow2(m, split > 0 ? split : 0, split < 0 ? -split : 0, suf->shift, &carry,
	                    &inexact);
	if (!add_small(&q, carry) || !add_small(&q, inexact))
		return false;
	*out = q;
	return true;
}

int qty_parse_n(const char *s, size_t len, struct qty *out)
{
	struct mantissa m;
	struct suffix suf;
	unsigned __int128 mag;
	size_t at;
	bool fits;
	int rc;

	if (s == NULL)
		return -EINVAL;
	rc = split_mantissa(s, len, &m, &at);
	if (rc == 0)
		rc = parse_suffix(s + at, len - at, &suf);
	if (rc)
		return rc;
	fits = magnitude(&m, &suf, &mag) && mag <= QTY_MAX;
	if (suf.format == QTY_BINARY_SI && (!fits || mag > BINARY_CAP)) {
		mag = BINARY_CAP;
		fits = true;
	}
	if (!fits)
		return -ERANGE;
	if (suf.format == QTY_BINARY_SI && mag > 0 && mag < NANO)
		suf.format = QTY_DECIMAL_SI;
	out->nano = m.neg ? -(__int128)mag : (__int128)mag;
	out->format = suf.format;
	return 0;
}

int qty_parse(const char *s, struct qty *out)
{
	return s ? qty_parse_n(s, strlen(s), out) : -EINVAL;
}

struct qty qty_from_int(int64_t v)
{
	return (struct qty){(__int128)v * NANO, QTY_DECIMAL_SI};
}

struct qty qty_from_milli(int64_t v)
{
	return (struct qty){(__int128)v * (NANO / 1000), QTY_DECIMAL_SI};
}

int qty_cmp(const struct qty *a, const struct qty *b)
{
	return (a->nano > b->nano) - (a->nano < b->nano);
}

bool qty_is_zero(const struct qty *q)
{
	return q->nano == 0;
}

/* Like apimachinery, a zero left operand takes the right one's format. */
static enum qty_format result_format(const struct qty *a, const struct qty *b)
{
	return a->nano == 0 ? b->format : a->format;
}

int qty_add(const struct qty *a, const struct qty *b, struct qty *out)
{
	__int128 r;

	if (__builtin_add_overflow(a->nano, b->nano, &r))
		return -ERANGE;
	out->format = result_format(a, b);
	out->nano = r;
	return 0;
}

int qty_sub(const struct qty *a, const struct qty *b, struct qty *out)
{
	__int128 r;

	if (__builtin_sub_overflow(a->nano, b->nano, &r))
		return -ERANGE;
	out->format = result_format(a, b);
	out->nano = r;
	return 0;
}

int qty_mul_int(const struct qty *a, int64_t k, struct qty *out)
{
	__int128 r;

	if (__builtin_mul_overflow(a->nano, (__int128)k, &r))
		return -ERANGE;
	out->format = a->format;
	out->nano = r;
	return 0;
}

int qty_div_int_floor(const struct qty *a, int64_t k, struct qty *out)
{
	__int128 r;

	if (k <= 0)
		return -EINVAL;
	r = a->nano / k;
	if (a->nano % k != 0 && a->nano < 0)
		r--;
	out->format = a->format;
	out->nano = r;
	return 0;
}

/* ceil(|nano| / per) with the sign put back, saturating at the int64 bounds. */
static int64_t scaled_away_from_zero(__int128 nano, unsigned per)
{
	unsigned __int128 mag = nano < 0 ? -(unsigned __int128)nano : (unsigned __int128)nano;
	unsigned __int128 v = mag / per + (mag % per != 0);

	if (nano >= 0)
		return v > INT64_MAX ? INT64_MAX : (int64_t)v;
	if (v > (unsigned __int128)INT64_MAX)
		return INT64_MIN;
	return -(int64_t)v;
}

int64_t qty_value_ceil(const struct qty *q)
{
	return scaled_away_from_zero(q->nano, NANO);
}

int64_t qty_milli_ceil(const struct qty *q)
{
	return scaled_away_from_zero(q->nano, NANO / 1000);
}

/* Writes the decimal digits of @v at the start of @out (at least 40 bytes), NUL-terminated. */
static size_t u128_to_dec(unsigned __int128 v, char *out)
{
	char tmp[40];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
	return n;
}

/* Largest 1024 power (up to Ei) that divides the whole units. */
static void format_binary(unsigned __int128 units, bool neg, char *out)
{
	size_t k = 0, n;

	while (k + 1 < sizeof(bin_suffix) / sizeof(bin_suffix[0]) && units % 1024 == 0) {
		units /= 1024;
		k++;
	}
	out[0] = '-';
	n = u128_to_dec(units, out + neg) + neg;
	snprintf(out + n, QTY_STR_MAX - n, "%s", bin_suffix[k]);
}

/* Mantissa times 10^e with e a multiple of three, as large as the value allows. */
static void format_decimal(unsigned __int128 mag, bool neg, enum qty_format f, char *out)
{
	int e = -9;
	size_t n;

	while (mag % 10 == 0) {
		mag /= 10;
		e++;
	}
	while (e % 3 != 0) {
		mag *= 10;
		e--;
	}
	out[0] = '-';
	n = u128_to_dec(mag, out + neg) + neg;
	if (f == QTY_DECIMAL_SI && e <= 18)
		snprintf(out + n, QTY_STR_MAX - n, "%s", dec_suffix[(e + 9) / 3]);
	else if (e != 0)
		snprintf(out + n, QTY_STR_MAX - n, "e%d", e);
}

const char *qty_format(const struct qty *q, char out[QTY_STR_MAX])
{
	bool neg = q->nano < 0;
	unsigned __int128 mag = neg ? -(unsigned __int128)q->nano : (unsigned __int128)q->nano;

	if (mag == 0)
		snprintf(out, QTY_STR_MAX, "0");
	else if (q->format == QTY_BINARY_SI && mag >= (unsigned __int128)1024 * NANO &&
	         mag % NANO == 0)
		format_binary(mag / NANO, neg, out);
	else
		format_decimal(mag, neg,
		               q->format == QTY_DECIMAL_EXP ? QTY_DECIMAL_EXP : QTY_DECIMAL_SI,
		               out);
	return out;
}
