/* test_quantity.c - resource.Quantity parsing, arithmetic and canonical formatting. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kube/quantity.h"

#define NANO ((__int128)1000000000)

static struct qty parse_ok(const char *s)
{
	struct qty q;
	int rc = qty_parse(s, &q);

	if (rc != 0)
		fail_msg("qty_parse(\"%s\") = %d", s, rc);
	return q;
}

static void assert_nano(const char *s, __int128 want)
{
	struct qty q = parse_ok(s);

	if (q.nano != want)
		fail_msg("\"%s\": got %lld nano (low 64 bits), want %lld", s, (long long)q.nano,
		         (long long)want);
}

static void assert_format(const char *in, const char *want)
{
	struct qty q = parse_ok(in);
	char out[QTY_STR_MAX];

	assert_string_equal(qty_format(&q, out), want);
}

static void test_quantity__parses_decimal_si(void **state)
{
	assert_nano("100m", NANO / 10);
	assert_nano("1", NANO);
	assert_nano("0.5", NANO / 2);
	assert_nano(".5", NANO / 2);
	assert_nano("5.", 5 * NANO);
	assert_nano("+1", NANO);
	assert_nano("-1", -NANO);
	assert_nano("1n", 1);
	assert_nano("7u", 7000);
	assert_nano("2k", 2000 * NANO);
	assert_nano("3M", 3000000 * NANO);
	assert_nano("1G", 1000000000 * NANO);
	assert_nano("1T", (__int128)1000000000000 * NANO);
	assert_nano("1P", (__int128)1000000000000000 * NANO);
	assert_nano("1E", (__int128)1000000000000000000 * NANO);
	assert_nano("000123", 123 * NANO);
	assert_nano("0", 0);
	assert_nano("-0", 0);
	assert_nano("0.000", 0);
	assert_int_equal(parse_ok("1k").format, QTY_DECIMAL_SI);
}

static void test_quantity__parses_binary_si(void **state)
{
	struct qty q = parse_ok("1.5Gi");

	assert_true(q.nano == (__int128)1610612736 * NANO);
	assert_int_equal(q.format, QTY_BINARY_SI);
	assert_nano("1Ki", 1024 * NANO);
	assert_nano("1Mi", 1048576 * NANO);
	assert_nano("2Ti", ((__int128)2 << 40) * NANO);
	assert_nano("1Pi", ((__int128)1 << 50) * NANO);
	assert_nano("1Ei", ((__int128)1 << 60) * NANO);
	assert_nano("0.5Ki", 512 * NANO);
	assert_nano("-1Gi", -((__int128)1 << 30) * NANO);
	/* A non-zero binary value below one unit switches to decimal, as apimachinery does. */
	q = parse_ok("0.0001Ki");
	assert_true(q.nano == 102400000);
	assert_int_equal(q.format, QTY_DECIMAL_SI);
}

static void test_quantity__parses_exponents(void **state)
{
	struct qty q = parse_ok("2e3");

	assert_true(q.nano == 2000 * NANO);
	assert_int_equal(q.format, QTY_DECIMAL_EXP);
	assert_nano("1E3", 1000 * NANO);
	assert_nano("1e+3", 1000 * NANO);
	assert_nano("15e-1", 1500000000);
	assert_nano("1e-9", 1);
	assert_nano("1.5e0", 1500000000);
	assert_nano("0e999999999999999999", 0);
	/* "E" alone is the exa suffix, not an exponent. */
	assert_int_equal(parse_ok("1E").format, QTY_DECIMAL_SI);
}

static void test_quantity__rounds_up_below_one_nano(void **state)
{
	assert_nano("1.0000000001", NANO + 1);
	assert_nano("-1.0000000001", -NANO - 1);
	assert_nano("0.1n", 1);
	assert_nano("1e-30", 1);
	assert_nano("0.000000001000", 1);
	assert_nano("0.0000000010000000000000000000000000000000000000000000001", 2);
	/* 1e-28 Ei = 0.1152921504606846976 n. */
	assert_nano("0.0000000000000000000000000001Ei", 1);
	/* 1e-19 Ei = 115292150.4606846976 n: the carry comes from far below the nano point. */
	assert_nano("0.0000000000000000001Ei", 115292151);
	/* 1e-18 Ei = 1152921504.606846976 n. */
	assert_nano("0.000000000000000001Ei", 1152921505);
	/* 2^-10 Ki = 1 unit exactly: no spurious rounding. */
	assert_nano("0.0009765625Ki", NANO);
}

static void test_quantity__rejects_malformed(void **state)
{
	static const char *const bad[] = {
	        "",     "1.2.3",  "Gi",  "1iG",  "1e",   " 1",   "1 ",  "+",      "-",
	        ".",    "1.5.Gi", "1Gb", "1KiB", "1K",   "aoeu", "1i",  "-3.01i", "1e+",
	        "1ee3", "1e3.5",  "--1", "1m3",  "1Mi3", "0x10", "1,5", "1e3Ki",
	};
	struct qty q;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (qty_parse(bad[i], &q) != -EINVAL)
			fail_msg("\"%s\" was accepted", bad[i]);
	}
	assert_int_equal(qty_parse(NULL, &q), -EINVAL);
	/* Embedded NUL and non-terminated input through qty_parse_n. */
	assert_int_equal(qty_parse_n("1\0"
	                             "0",
	                             3, &q),
	                 -EINVAL);
	assert_int_equal(qty_parse_n("12Mi-garbage", 4, &q), 0);
	assert_true(q.nano == 12 * ((__int128)1 << 20) * NANO);
}

static void test_quantity__overflow_is_erange(void **state)
{
	struct qty q;

	assert_int_equal(qty_parse("1e30", &q), -ERANGE);
	assert_int_equal(qty_parse("-1e30", &q), -ERANGE);
	assert_int_equal(qty_parse("200000000000000000000000000000", &q), -ERANGE);
	assert_int_equal(qty_parse("1e999999999999", &q), -ERANGE);
	assert_int_equal(qty_parse("1000000000000000000000000000000000000000000000000000n", &q),
	                 -ERANGE);
	/* The largest value that fits: 2^127-1 nano-units. */
	assert_int_equal(qty_parse("170141183460469231731687303715884105727n", &q), 0);
	assert_int_equal(qty_parse("170141183460469231731687303715884105728n", &q), -ERANGE);
	assert_int_equal(qty_parse("100000000000000000000000000000", &q), 0);
}

static void test_quantity__binary_is_capped_at_int64_max(void **state)
{
	struct qty q = parse_ok("8Ei");
	char out[QTY_STR_MAX];

	assert_true(q.nano == (__int128)INT64_MAX * NANO);
	assert_int_equal(q.format, QTY_BINARY_SI);
	assert_string_equal(qty_format(&q, out), "9223372036854775807");
	q = parse_ok("-99999999999999999999999999999999999999999999Ei");
	assert_true(q.nano == -(__int128)INT64_MAX * NANO);
	assert_true(parse_ok("7Ei").nano == ((__int128)7 << 60) * NANO);
}

static void test_quantity__formats_canonically(void **state)
{
	static const char *const same[] = {
	        "100m", "1",   "2e3",   "1Ki",  "1536Mi", "1n",   "-1",   "5G",    "1E",  "1Ei",
	        "123",  "12k", "1500m", "999n", "-100m",  "1e-9", "1e21", "15e-3", "7Pi", "1023Ki",
	};
	size_t i;

	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		assert_format(same[i], same[i]);
	assert_format("1.5Gi", "1536Mi");
	assert_format("0.1", "100m");
	assert_format("1000m", "1");
	assert_format("1024Ki", "1Mi");
	assert_format("0", "0");
	assert_format("-0.0Gi", "0");
	assert_format("+1", "1");
	assert_format("1000", "1k");
	assert_format("1.5", "1500m");
	assert_format("1.0000000001", "1000000001n");
	assert_format("1E3", "1e3");
	assert_format("1.5e3", "1500");
	assert_format("1500000e0", "1500e3");
	assert_format("0.1e0", "100e-3");
	assert_format("1000E", "1e21");
	assert_format("12e20", "1200e18");
	assert_format("1.5Ki", "1536");
	assert_format("0.5Ki", "512");
	assert_format("0.5Gi", "512Mi");
	assert_format("1.2Ki", "1228800m");
	assert_format("100000000000000000000000000000", "100e27");
	assert_format("-1.5Gi", "-1536Mi");
}

/* Binary values past Ei (reachable by arithmetic only) keep the Ei suffix. */
static void test_quantity__formats_beyond_ei(void **state)
{
	struct qty q = {((__int128)2048 << 60) * NANO, QTY_BINARY_SI};
	char out[QTY_STR_MAX];

	assert_string_equal(qty_format(&q, out), "2048Ei");
	q.nano = -q.nano;
	assert_string_equal(qty_format(&q, out), "-2048Ei");
	q.nano = ((__int128)1 << 126) + 1;
	assert_string_equal(qty_format(&q, out), "85070591730234615865843651857942052865n");
}

static void test_quantity__format_reparses_to_the_same_value(void **state)
{
	static const char *const in[] = {"1.2345",
	                                 "0.000001Ki",
	                                 "33.3333333333e7",
	                                 "-7.77777Mi",
	                                 "123456789012345678901234",
	                                 "1e-5",
	                                 "99999Ti",
	                                 "0.9n",
	                                 "3.14159265358979323846264338327950288"};
	char out[QTY_STR_MAX];
	struct qty a, b;
	size_t i;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		a = parse_ok(in[i]);
		b = parse_ok(qty_format(&a, out));
		if (qty_cmp(&a, &b) != 0)
			fail_msg("\"%s\" -> \"%s\" changed value", in[i], out);
	}
}

static void test_quantity__add_and_sub(void **state)
{
	struct qty a = parse_ok("1Gi"), b = parse_ok("512Mi"), r;
	struct qty zero = qty_from_int(0);
	struct qty big = {((__int128)1 << 126), QTY_DECIMAL_SI};
	char out[QTY_STR_MAX];

	assert_int_equal(qty_add(&a, &b, &r), 0);
	assert_string_equal(qty_format(&r, out), "1536Mi");
	assert_int_equal(qty_sub(&a, &b, &r), 0);
	assert_string_equal(qty_format(&r, out), "512Mi");
	assert_int_equal(qty_sub(&b, &a, &r), 0);
	assert_string_equal(qty_format(&r, out), "-512Mi");
	/* The left operand's format wins, unless it is zero. */
	assert_int_equal(qty_add(&zero, &a, &r), 0);
	assert_int_equal(r.format, QTY_BINARY_SI);
	assert_string_equal(qty_format(&r, out), "1Gi");
	assert_int_equal(qty_sub(&zero, &a, &r), 0);
	assert_string_equal(qty_format(&r, out), "-1Gi");
	a = parse_ok("100m");
	b = parse_ok("1Ki");
	assert_int_equal(qty_add(&a, &b, &r), 0);
	assert_int_equal(r.format, QTY_DECIMAL_SI);
	assert_string_equal(qty_format(&r, out), "1024100m");
	/* Overflow. */
	assert_int_equal(qty_add(&big, &big, &r), -ERANGE);
	big.nano = -big.nano;
	assert_int_equal(qty_sub(&big, &(struct qty){((__int128)1 << 126) + 1, QTY_DECIMAL_SI}, &r),
	                 -ERANGE);
}

static void test_quantity__mul_and_div(void **state)
{
	struct qty a = parse_ok("250m"), r;
	struct qty big = {((__int128)1 << 100), QTY_DECIMAL_SI};
	char out[QTY_STR_MAX];

	assert_int_equal(qty_mul_int(&a, 6, &r), 0);
	assert_string_equal(qty_format(&r, out), "1500m");
	assert_int_equal(qty_mul_int(&a, -4, &r), 0);
	assert_string_equal(qty_format(&r, out), "-1");
	assert_int_equal(qty_mul_int(&big, INT64_MAX, &r), -ERANGE);
	a = parse_ok("1Gi");
	assert_int_equal(qty_mul_int(&a, 3, &r), 0);
	assert_string_equal(qty_format(&r, out), "3Gi");

	a = parse_ok("1");
	assert_int_equal(qty_div_int_floor(&a, 3, &r), 0);
	assert_true(r.nano == 333333333);
	a = parse_ok("-1");
	assert_int_equal(qty_div_int_floor(&a, 3, &r), 0);
	assert_true(r.nano == -333333334);
	a = parse_ok("3Gi");
	assert_int_equal(qty_div_int_floor(&a, 3, &r), 0);
	assert_string_equal(qty_format(&r, out), "1Gi");
	assert_int_equal(qty_div_int_floor(&a, 0, &r), -EINVAL);
	assert_int_equal(qty_div_int_floor(&a, -2, &r), -EINVAL);
}

static void test_quantity__compare(void **state)
{
	struct qty a = parse_ok("1Ki"), b = parse_ok("1024"), c = parse_ok("1k"),
	           d = parse_ok("-1Ei");

	assert_int_equal(qty_cmp(&a, &b), 0);
	assert_int_equal(qty_cmp(&a, &c), 1);
	assert_int_equal(qty_cmp(&c, &a), -1);
	assert_int_equal(qty_cmp(&d, &c), -1);
	assert_true(qty_is_zero(&(struct qty){0, QTY_BINARY_SI}));
	assert_false(qty_is_zero(&(struct qty){1, QTY_DECIMAL_SI}));
}

static void test_quantity__value_and_milli_round_up(void **state)
{
	struct qty q = parse_ok("1.0000000001");
	struct qty huge = parse_ok("1e20");

	assert_int_equal(qty_value_ceil(&q), 2);
	assert_int_equal(qty_milli_ceil(&q), 1001);
	q = parse_ok("100m");
	assert_int_equal(qty_value_ceil(&q), 1);
	assert_int_equal(qty_milli_ceil(&q), 100);
	q = parse_ok("1n");
	assert_int_equal(qty_milli_ceil(&q), 1);
	q = parse_ok("2Ki");
	assert_int_equal(qty_value_ceil(&q), 2048);
	/* Negative values round away from zero, like Quantity.Value(). */
	q = parse_ok("-1.5");
	assert_int_equal(qty_value_ceil(&q), -2);
	assert_int_equal(qty_milli_ceil(&q), -1500);
	assert_int_equal(qty_value_ceil(&huge), INT64_MAX);
	assert_int_equal(qty_milli_ceil(&huge), INT64_MAX);
	huge.nano = -huge.nano;
	assert_int_equal(qty_value_ceil(&huge), INT64_MIN);
	q = parse_ok("-9223372036854775808");
	assert_int_equal(qty_value_ceil(&q), INT64_MIN);
	q = parse_ok("9223372036854775807");
	assert_int_equal(qty_value_ceil(&q), INT64_MAX);
	assert_int_equal(qty_milli_ceil(&q), INT64_MAX);
}

static void test_quantity__from_int_and_milli(void **state)
{
	struct qty a = qty_from_int(3), b = qty_from_milli(1500);
	char out[QTY_STR_MAX];

	assert_string_equal(qty_format(&a, out), "3");
	assert_string_equal(qty_format(&b, out), "1500m");
	assert_int_equal(a.format, QTY_DECIMAL_SI);
	a = qty_from_int(INT64_MIN);
	assert_string_equal(qty_format(&a, out), "-9223372036854775808");
	assert_int_equal(qty_value_ceil(&a), INT64_MIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_quantity__parses_decimal_si),
	        cmocka_unit_test(test_quantity__parses_binary_si),
	        cmocka_unit_test(test_quantity__parses_exponents),
	        cmocka_unit_test(test_quantity__rounds_up_below_one_nano),
	        cmocka_unit_test(test_quantity__rejects_malformed),
	        cmocka_unit_test(test_quantity__overflow_is_erange),
	        cmocka_unit_test(test_quantity__binary_is_capped_at_int64_max),
	        cmocka_unit_test(test_quantity__formats_canonically),
	        cmocka_unit_test(test_quantity__formats_beyond_ei),
	        cmocka_unit_test(test_quantity__format_reparses_to_the_same_value),
	        cmocka_unit_test(test_quantity__add_and_sub),
	        cmocka_unit_test(test_quantity__mul_and_div),
	        cmocka_unit_test(test_quantity__compare),
	        cmocka_unit_test(test_quantity__value_and_milli_round_up),
	        cmocka_unit_test(test_quantity__from_int_and_milli),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
