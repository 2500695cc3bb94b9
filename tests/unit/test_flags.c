/* Unit tests for flags and their environment variables (lib/base/flags.c). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/flags.h"

struct opts {
	const char *name;
	bool on, sw;
	long n, ms;
	char host[FLAGS_HOST_MAX];
	int port;
	const char *groups[FLAGS_LIST_MAX + 1];
	size_t n_groups;
};

#define AT(f) offsetof(struct opts, f)

static const struct flag TABLE[] = {
        {.name = "name",
         .env = "T_NAME",
         .type = FLAG_STRING,
         .arg = "S",
         .dflt = "none",
         .help = "a string",
         .offset = AT(name)},
        {.name = "on",
         .env = "T_ON",
         .type = FLAG_BOOL,
         .arg = "BOOL",
         .dflt = "false",
         .offset = AT(on)},
        {.name = "switch", .env = "T_SWITCH", .type = FLAG_SWITCH, .offset = AT(sw)},
        {.name = "n",
         .env = "T_N",
         .type = FLAG_INT,
         .arg = "N",
         .dflt = "5",
         .offset = AT(n),
         .min = 1,
         .max = 10},
        {.name = "wait",
         .env = "T_WAIT",
         .type = FLAG_DURATION,
         .arg = "D",
         .dflt = "2s",
         .offset = AT(ms)},
        {.name = "addr",
         .env = "T_ADDR",
         .type = FLAG_HOSTPORT,
         .arg = "HOST:PORT",
         .dflt = "127.0.0.1:8081",
         .offset = AT(host),
         .offset2 = AT(port)},
        {.name = "group",
         .type = FLAG_LIST,
         .arg = "G",
         .offset = AT(groups),
         .offset2 = AT(n_groups)},
};

#define N (sizeof(TABLE) / sizeof(TABLE[0]))

static int parse(struct opts *o, struct ll_err *err, ...)
{
	char *argv[16] = {"prog", "cmd"};
	int argc = 2;
	va_list ap;
	char *a;

	va_start(ap, err);
	while ((a = va_arg(ap, char *)) != NULL && argc < 15)
		argv[argc++] = a;
	va_end(ap);
	memset(o, 0, sizeof(*o));
	return flags_parse(TABLE, N, argc, argv, 2, o, err);
}

static int teardown_env(void **state)
{
	unsetenv("T_NAME");
	unsetenv("T_N");
	unsetenv("T_SWITCH");
	unsetenv("T_WAIT");
	return 0;
}

static void test_flags__defaults_apply(void **state)
{
	struct opts o;

	assert_int_equal(parse(&o, NULL, NULL), 0);
	assert_string_equal(o.name, "none");
	assert_false(o.on);
	assert_false(o.sw);
	assert_int_equal(o.n, 5);
	assert_int_equal(o.ms, 2000);
	assert_string_equal(o.host, "127.0.0.1");
	assert_int_equal(o.port, 8081);
}

static void test_flags__every_type_from_the_command_line(void **state)
{
	struct opts o;

	assert_int_equal(parse(&o, NULL, "--name", "x", "-on", "true", "--switch", "--n=10",
	                       "--wait", "500ms", "--addr", ":0", NULL),
	                 0);
	assert_string_equal(o.name, "x");
	assert_true(o.on);
	assert_true(o.sw);
	assert_int_equal(o.n, 10);
	assert_int_equal(o.ms, 500);
	assert_string_equal(o.host, "127.0.0.1"); /* an empty host is loopback */
	assert_int_equal(o.port, 0);
	assert_int_equal(parse(&o, NULL, "--addr", "0.0.0.0:9", "--switch=false", NULL), 0);
	assert_string_equal(o.host, "0.0.0.0");
	assert_false(o.sw);
}

static void test_flags__the_command_line_beats_the_environment(void **state)
{
	struct opts o;

	setenv("T_NAME", "from-env", 1);
	setenv("T_N", "7", 1);
	setenv("T_SWITCH", "true", 1);
	assert_int_equal(parse(&o, NULL, "--n", "3", NULL), 0);
	assert_string_equal(o.name, "from-env");
	assert_int_equal(o.n, 3);
	assert_true(o.sw);
}

static void expect_error(const char *want, ...)
{
	char *argv[8] = {"prog", "cmd"};
	struct ll_err err = {{0}};
	struct opts o = {0};
	int argc = 2;
	va_list ap;
	char *a;

	va_start(ap, want);
	while ((a = va_arg(ap, char *)) != NULL)
		argv[argc++] = a;
	va_end(ap);
	assert_int_equal(flags_parse(TABLE, N, argc, argv, 2, &o, &err), -EINVAL);
	if (strstr(err.msg, want) == NULL)
		fail_msg("\"%s\" lacks \"%s\"", err.msg, want);
}

static void test_flags__bad_input_names_the_flag(void **state)
{
	struct ll_err err = {{0}};
	struct opts o;

	expect_error("unknown flag \"--nope\"", "--nope", NULL);
	expect_error("flag --name needs a value", "--name", NULL);
	expect_error("invalid value for --n: \"11\": expected an integer from 1 to 10", "--n", "11",
	             NULL);
	expect_error("invalid value for --n: \"0x3\"", "--n", "0x3", NULL);
	expect_error("invalid value for --on: \"yes\": expected true or false", "--on", "yes",
	             NULL);
	expect_error("invalid value for --addr: \"nohost\"", "--addr", "nohost", NULL);
	expect_error("invalid value for --addr: \"h:70000\"", "--addr", "h:70000", NULL);
	expect_error("unexpected argument \"stray\"", "stray", NULL);
	setenv("T_WAIT", "soon", 1);
	assert_int_equal(parse(&o, &err, NULL), -EINVAL);
	assert_string_equal(err.msg, "invalid value T_WAIT=\"soon\": expected a duration such as "
	                             "500ms, 15s, 1.5m or 1h");
}

static void test_flags__help_is_asked_for(void **state)
{
	struct opts o;

	assert_int_equal(parse(&o, NULL, "--help", NULL), 1);
	assert_int_equal(parse(&o, NULL, "-h", NULL), 1);
}

static void expect_ms(const char *s, long want)
{
	long ms = -1;

	if (flags_parse_duration_ms(s, &ms) != 0 || ms != want)
		fail_msg("%s: got %ld, want %ld", s, ms, want);
}

static void expect_bad_duration(const char *s, int want)
{
	long ms = 12345;

	assert_int_equal(flags_parse_duration_ms(s, &ms), want);
	assert_int_equal(ms, 12345); /* untouched */
}

static void test_flags__durations(void **state)
{
	expect_ms("15", 15000);
	expect_ms("15s", 15000);
	expect_ms("1.5s", 1500);
	expect_ms("500ms", 500);
	expect_ms("2m", 120000);
	expect_ms("1h", 3600000);
	expect_ms("0", 0);
	expect_ms("0.0001s", 0);            /* below a millisecond */
	expect_ms("1.123456789123s", 1123); /* digits past nine are ignored */
	expect_bad_duration("nan", -EINVAL);
	expect_bad_duration("inf", -EINVAL);
	expect_bad_duration("-1s", -EINVAL);
	expect_bad_duration("+1s", -EINVAL);
	expect_bad_duration("1e300", -EINVAL);
	expect_bad_duration(".5s", -EINVAL);
	expect_bad_duration("5.s", -EINVAL);
	expect_bad_duration("1d", -EINVAL);
	expect_bad_duration("", -EINVAL);
	expect_bad_duration("99999999999999999999", -ERANGE);
	expect_bad_duration("9223372036854775807h", -ERANGE);
}

/* A list flag collects every occurrence, in order, up to its cap. */
static void test_flags__lists_collect_each_value(void **state)
{
	static char *argv[FLAGS_LIST_MAX * 2 + 6] = {"prog", "cmd"};
	struct ll_err err = {{0}};
	struct opts o;
	int argc = 2;

	(void)state;
	assert_int_equal(parse(&o, &err, NULL), 0);
	assert_int_equal(o.n_groups, 0);
	assert_null(o.groups[0]);
	assert_int_equal(parse(&o, &err, "--group", "a", "--n", "3", "--group=b c", NULL), 0);
	assert_int_equal(o.n_groups, 2);
	assert_string_equal(o.groups[0], "a");
	assert_string_equal(o.groups[1], "b c");
	assert_null(o.groups[2]);
	for (int i = 0; i <= FLAGS_LIST_MAX; i++) {
		argv[argc++] = "--group";
		argv[argc++] = "g";
	}
	memset(&o, 0, sizeof(o));
	assert_int_equal(flags_parse(TABLE, N, argc, argv, 2, &o, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "group"));
}

static void test_flags__usage_lists_flags_variables_and_defaults(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	flags_usage(TABLE, N, f);
	fclose(f);
	assert_non_null(strstr(text, "  --name S                    a string [T_NAME] (none)\n"));
	assert_non_null(strstr(text, "--wait D"));
	assert_non_null(strstr(text, "[T_ADDR] (127.0.0.1:8081)"));
	assert_non_null(strstr(text, "  --switch "));
	for (char *line = text; *line; line = strchr(line, '\n') + 1)
		assert_true(strcspn(line, "\n") <= 100);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_flags__defaults_apply),
	        cmocka_unit_test(test_flags__every_type_from_the_command_line),
	        cmocka_unit_test_teardown(test_flags__the_command_line_beats_the_environment,
	                                  teardown_env),
	        cmocka_unit_test_teardown(test_flags__bad_input_names_the_flag, teardown_env),
	        cmocka_unit_test(test_flags__help_is_asked_for),
	        cmocka_unit_test(test_flags__durations),
	        cmocka_unit_test(test_flags__lists_collect_each_value),
	        cmocka_unit_test(test_flags__usage_lists_flags_variables_and_defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
