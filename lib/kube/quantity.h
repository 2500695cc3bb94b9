/*
 * quantity.h - Kubernetes resource.Quantity: parse, compare, add, subtract, scale, format.
 *
 * A quantity is held exactly as a signed 128-bit count of nano-units, so "100m", "1.5Gi", "2e3",
 * "1Ei" and "1n" all fit without floating point (quota arithmetic must never round the wrong
 * way). Parsing follows apimachinery: sign, digits with an optional fraction, then one suffix
 * (binary Ki Mi Gi Ti Pi Ei, decimal n u m "" k M G T P E, or an exponent e/E<int>). Precision
 * below 1n is rounded up (away from zero), as the API server does, and binary values above
 * 2^63-1 units are capped there ("8Ei"), as apimachinery does. Unlike apimachinery, a mantissa
 * needs at least one digit ("Gi", "+" and "." are rejected). Formatting produces the canonical
 * form the API server would print (keeping the input's suffix family: binary, decimal or
 * exponent).
 */
#ifndef LANDLORD_QUANTITY_H
#define LANDLORD_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum qty_format {
	QTY_DECIMAL_SI = 0, /* 100m, 1k, 5G */
	QTY_BINARY_SI,      /* 1Ki, 1.5Gi */
	QTY_DECIMAL_EXP,    /* 2e3 */
};

struct qty {
	__int128 nano;
	enum qty_format format;
};

/* Longest canonical string qty_format() can produce, with NUL. */
#define QTY_STR_MAX 64

/**
 * qty_parse() - parse @s (NUL-terminated) into @out.
 * Return: 0; -EINVAL for a malformed string; -ERANGE when it does not fit (|value| > ~1.7e29).
 */
int qty_parse(const char *s, struct qty *out /* OUT */);
/** qty_parse_n() - as qty_parse() for @len bytes that need not be NUL-terminated. */
int qty_parse_n(const char *s, size_t len, struct qty *out /* OUT */);

/** qty_from_int() - @v whole units, decimal format. */
struct qty qty_from_int(int64_t v);
/** qty_from_milli() - @v thousandths, decimal format. */
struct qty qty_from_milli(int64_t v);

int qty_cmp(const struct qty *a, const struct qty *b);
bool qty_is_zero(const struct qty *q);
/**
 * qty_add()/qty_sub() - *out = a op b; -ERANGE on overflow. The format of @a is kept, or that of
 * @b when @a is zero (as apimachinery does, so a sum started from zero keeps "Gi").
 */
int qty_add(const struct qty *a, const struct qty *b, struct qty *out /* OUT */);
int qty_sub(const struct qty *a, const struct qty *b, struct qty *out /* OUT */);
/** qty_mul_int() - *out = a * k; -ERANGE on overflow. */
int qty_mul_int(const struct qty *a, int64_t k, struct qty *out /* OUT */);
/** qty_div_int_floor() - *out = floor(a / k) to whole nano-units; -EINVAL when k <= 0. */
int qty_div_int_floor(const struct qty *a, int64_t k, struct qty *out /* OUT */);

/**
 * qty_value_ceil() - whole units, rounded up in magnitude (away from zero, like
 * Quantity.Value()); saturates at INT64 bounds.
 */
int64_t qty_value_ceil(const struct qty *q);
/** qty_milli_ceil() - thousandths, rounded like qty_value_ceil() (Quantity.MilliValue()). */
int64_t qty_milli_ceil(const struct qty *q);

/**
 * qty_format() - canonical string into @out (at least QTY_STR_MAX bytes).
 * Examples: 0.1 cores -> "100m"; 1.5Gi -> "1536Mi"; 2e3 -> "2e3"; 1024 bytes binary -> "1Ki".
 * Values that the format cannot express exactly fall back to decimal SI (as apimachinery does).
 * A decimal SI exponent above E (10^18) is written in exponent form: "1000E" -> "1e21"
 * (apimachinery 1.33 drops that exponent and prints "1").
 * Return: @out.
 */
const char *qty_format(const struct qty *q, char out[QTY_STR_MAX]);

#endif
