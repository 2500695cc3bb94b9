/* test_denial.c - one-line denial messages: quoting, escaping, cut values, lists, small arrays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tenancy/denial.h"

static void test_denial__values_are_quoted_and_escaped(void **state)
{
	char out[DENIAL_MSG_MAX];
	struct denial d;

	denial_init(&d, out, sizeof(out));
	denial_text(&d, "image ");
	denial_quote(&d, "a\"b\\c\n\r\t\x01\x7f\xc3\xa9\0z", 14);
	denial_text(&d, " for %s", "acme");
	assert_string_equal(out, "image \"a\\\"b\\\\c\\x0a\\x0d\\x09\\x01\\x7f\\xc3\\xa9\\x00z\" "
	                         "for acme");
	assert_int_equal(d.len, strlen(out));
	assert_false(d.full);
	/* landlord's own text is escaped too, but not quoted */
	denial_init(&d, out, sizeof(out));
	denial_text(&d, "a\"b\nc");
	assert_string_equal(out, "a\"b\\x0ac");
	denial_init(&d, out, sizeof(out));
	denial_quote(&d, NULL, 0);
	assert_string_equal(out, "\"\"");
}

static void test_denial__long_values_are_cut(void **state)
{
	char value[DENIAL_VALUE_SHOWN + 1], out[DENIAL_MSG_MAX];
	struct denial d;

	memset(value, 'v', sizeof(value));
	denial_init(&d, out, sizeof(out));
	denial_quote(&d, value, DENIAL_VALUE_SHOWN);
	assert_int_equal(strlen(out), DENIAL_VALUE_SHOWN + 2);
	denial_init(&d, out, sizeof(out));
	denial_quote(&d, value, DENIAL_VALUE_SHOWN + 1);
	assert_int_equal(strlen(out), DENIAL_VALUE_SHOWN + 5);
	assert_string_equal(out + DENIAL_VALUE_SHOWN, "v...\"");
}

static void test_denial__lists_show_the_first_few_and_count_the_rest(void **state)
{
	const char *const items[] = {"a", "b", "c", "d", "e", "f", "g"};
	char out[DENIAL_MSG_MAX];
	struct denial d;

	denial_init(&d, out, sizeof(out));
	for (size_t i = 0; i < 7; i++)
		denial_item(&d, i, items[i], 1, false);
	denial_list_end(&d, 7);
	assert_string_equal(out, "a, b, c, d, e and 2 more");
	denial_init(&d, out, sizeof(out));
	for (size_t i = 0; i < 5; i++)
		denial_item(&d, i, items[i], 1, i == 4);
	denial_list_end(&d, 5);
	assert_string_equal(out, "a, b, c, d, \"e\"");
	denial_init(&d, out, sizeof(out));
	denial_list_end(&d, 0);
	assert_string_equal(out, "none");
	denial_init(&d, out, sizeof(out));
	denial_item(&d, 0, "x\n", 2, false);
	denial_list_end(&d, 1);
	assert_string_equal(out, "x\\x0a");
}

static void test_denial__a_small_array_gets_a_cut_message(void **state)
{
	char out[8];
	struct denial d;

	denial_init(&d, out, sizeof(out));
	denial_text(&d, "0123456");
	assert_string_equal(out, "0123456");
	assert_false(d.full);
	denial_text(&d, "7");
	assert_string_equal(out, "0123...");
	assert_true(d.full);
	denial_quote(&d, "more", 4); /* nothing more is written */
	assert_string_equal(out, "0123...");
	/* arrays too small for "..." are cut plainly */
	denial_init(&d, out, 3);
	denial_text(&d, "abcdef");
	assert_string_equal(out, "ab");
	denial_init(&d, out, 1);
	denial_text(&d, "abc");
	assert_string_equal(out, "");
	/* an escape is never half written at the end */
	denial_init(&d, out, sizeof(out));
	denial_text(&d, "ab\n");
	assert_string_equal(out, "ab\\x0a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_denial__values_are_quoted_and_escaped),
	        cmocka_unit_test(test_denial__long_values_are_cut),
	        cmocka_unit_test(test_denial__lists_show_the_first_few_and_count_the_rest),
	        cmocka_unit_test(test_denial__a_small_array_gets_a_cut_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
