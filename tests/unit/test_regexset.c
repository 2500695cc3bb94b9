/*
 * test_regexset.c - whole-string PCRE2 patterns: anchoring at both ends, compile errors with
 * their offset, the caps, subjects that are not UTF-8, and the match limits.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "tenancy/regexset.h"

static int match(const struct rxs *set, const char *subject)
{
	return rxs_match(set, subject, strlen(subject), NULL);
}

static struct rxs *set_of(const char *const *patterns, size_t n)
{
	struct ll_err err = {{0}};
	struct rxs *set = rxs_new();

	for (size_t i = 0; i < n; i++)
		if (rxs_add(set, patterns[i], strlen(patterns[i]), &err) != 0)
			fail_msg("\"%s\" refused: %s", patterns[i], err.msg);
	return set;
}

static void test_regexset__patterns_match_whole_subjects(void **state)
{
	const char *const p[] = {"acme\\.com", "a|b", "x.*"};
	struct rxs *set = set_of(p, 3);

	assert_int_equal(match(set, "acme.com"), 0);
	assert_int_equal(match(set, "yacme.com"), -1);
	assert_int_equal(match(set, "acme.comx"), -1);
	assert_int_equal(match(set, "acme.com\n"), -1); /* $ only at the very end */
	assert_int_equal(match(set, "acmexcom"), -1);
	/* an alternation is grouped as a whole: ^(?:a|b)$ */
	assert_int_equal(match(set, "a"), 1);
	assert_int_equal(match(set, "b"), 1);
	assert_int_equal(match(set, "ab"), -1);
	assert_int_equal(match(set, "x"), 2);
	assert_int_equal(match(set, "xyz"), 2);
	assert_int_equal(match(set, ""), -1);
	/* a length, not a NUL, ends the subject */
	assert_int_equal(rxs_match(set, "acme.com.evil", 8, NULL), 0);
	assert_int_equal(rxs_match(set, "a\0", 2, NULL), -1);
	assert_int_equal(rxs_count(set), 3);
	assert_string_equal(rxs_pattern(set, 1), "a|b");
	assert_null(rxs_pattern(set, 3));
	rxs_free(set);
}

static void test_regexset__an_empty_set_matches_nothing(void **state)
{
	struct rxs *set = rxs_new();
	bool limited = true;

	assert_int_equal(rxs_match(set, "", 0, &limited), -1);
	assert_false(limited);
	assert_int_equal(match(set, "anything"), -1);
	rxs_free(set);
	rxs_free(NULL);
}

static void test_regexset__bad_patterns_are_refused_and_leave_the_set_alone(void **state)
{
	char big[RXS_PATTERN_MAX + 1];
	struct ll_err err = {{0}};
	struct rxs *set = rxs_new();

	assert_int_equal(rxs_add(set, "a(b", 3, &err), -EINVAL);
	assert_string_equal(err.msg, "invalid regular expression at offset 3: missing closing "
	                             "parenthesis");
	assert_int_equal(rxs_add(set, "a\\Cb", 4, &err), -EINVAL);
	assert_int_equal(rxs_add(set, "a\0b", 3, &err), -EINVAL);
	assert_string_equal(err.msg, "regular expression holds a NUL byte");
	memset(big, 'a', sizeof(big));
	assert_int_equal(rxs_add(set, big, sizeof(big), &err), -EMSGSIZE);
	assert_int_equal(rxs_add(set, big, RXS_PATTERN_MAX, &err), 0);
	assert_int_equal(rxs_count(set), 1);
	for (size_t i = 1; i < RXS_SET_MAX; i++)
		assert_int_equal(rxs_add(set, "x", 1, NULL), 0);
	assert_int_equal(rxs_add(set, "y", 1, &err), -E2BIG);
	assert_int_equal(rxs_count(set), RXS_SET_MAX);
	assert_int_equal(match(set, "x"), 1);
	rxs_free(set);
}

static void test_regexset__subjects_that_are_not_utf8_or_too_long_match_nothing(void **state)
{
	const char *const p[] = {".*", "caf\xc3\xa9"};
	struct rxs *set = set_of(p, 2);
	static char big[RXS_SUBJECT_MAX + 1];

	assert_int_equal(match(set, "caf\xc3\xa9"), 0);
	assert_int_equal(match(set, "caf\xe9"), -1);
	assert_int_equal(match(set, "\xff"), -1);
	memset(big, 'a', sizeof(big));
	assert_int_equal(rxs_match(set, big, RXS_SUBJECT_MAX, NULL), 0);
	assert_int_equal(rxs_match(set, big, RXS_SUBJECT_MAX + 1, NULL), -1);
	rxs_free(set);
}

static void test_regexset__runaway_matches_hit_the_limit(void **state)
{
	const char *const p[] = {"(a|a)+b", "(?:a+)+c", "a+b.*"};
	struct rxs *set = set_of(p, 3);
	char subject[64];
	bool limited = false;

	/* both runaways backtrack 2^40 ways: stopped, counted as no match, reported */
	memset(subject, 'a', 40);
	memcpy(subject + 40, "bcx", 4);
	assert_int_equal(rxs_match(set, subject, 43, &limited), 2);
	assert_true(limited);
	assert_int_equal(rxs_match(set, "aab", 3, &limited), 0);
	assert_false(limited);
	rxs_free(set);
	/* a pattern may lower its limits, never raise them */
	set = set_of((const char *const[]){"(*LIMIT_MATCH=100000000)(a|a)+b"}, 1);
	assert_int_equal(rxs_match(set, subject, 43, &limited), -1);
	assert_true(limited);
	rxs_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_regexset__patterns_match_whole_subjects),
	        cmocka_unit_test(test_regexset__an_empty_set_matches_nothing),
	        cmocka_unit_test(test_regexset__bad_patterns_are_refused_and_leave_the_set_alone),
	        cmocka_unit_test(
	                test_regexset__subjects_that_are_not_utf8_or_too_long_match_nothing),
	        cmocka_unit_test(test_regexset__runaway_matches_hit_the_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
