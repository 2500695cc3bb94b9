/* Unit tests for structured logging (lib/base/log.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/log.h"

/* Capture records through a pipe and return them as a JSON array. */
static json_t *capture(void (*emit)(void))
{
	int fds[2];
	char data[8192];
	ssize_t n;
	json_t *all = json_array();
	char *line, *save = NULL;

	assert_int_equal(pipe(fds), 0);
	log_set_fd(fds[1]);
	emit();
	log_set_fd(2);
	close(fds[1]);
	n = read(fds[0], data, sizeof(data) - 1);
	close(fds[0]);
	data[n > 0 ? n : 0] = '\0';
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		json_array_append_new(all, jx_loads(line, strlen(line), NULL));
	return all;
}

static void emit_levels(void)
{
	log_set_verbosity(0);
	log_error("boom", "{s:s,s:i}", "tenant", "a\"b\n", "n", 3);
	log_info("plain", NULL);
	log_debug("hidden", NULL);
	log_set_verbosity(4);
	log_debug("shown", "{s:b}", "flag", 1);
	log_set_verbosity(0);
}

static void emit_bad_format(void)
{
	log_warn("odd", "{s:s}", "key", (const char *)NULL);
}

static void test_log__one_json_record_per_line_with_escaped_fields(void **state)
{
	json_t *recs = capture(emit_levels), *r;

	assert_int_equal(json_array_size(recs), 3);
	r = json_array_get(recs, 0);
	assert_string_equal(jx_str(r, "level", NULL), "error");
	assert_string_equal(jx_str(r, "msg", NULL), "boom");
	assert_string_equal(jx_str(r, "tenant", NULL), "a\"b\n");
	assert_int_equal(jx_int(r, 0, "n", NULL), 3);
	assert_non_null(strchr(jx_str(r, "ts", NULL), 'T'));
	assert_string_equal(jx_str(json_array_get(recs, 1), "msg", NULL), "plain");
	assert_string_equal(jx_str(json_array_get(recs, 2), "msg", NULL), "shown");
	assert_string_equal(jx_str(json_array_get(recs, 2), "level", NULL), "debug");
	json_decref(recs);
}

static void test_log__bad_field_format_still_logs_message(void **state)
{
	json_t *recs = capture(emit_bad_format), *r = json_array_get(recs, 0);

	assert_int_equal(json_array_size(recs), 1);
	assert_string_equal(jx_str(r, "msg", NULL), "odd");
	assert_non_null(jx_str(r, "log_error", NULL));
	json_decref(recs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_log__one_json_record_per_line_with_escaped_fields),
	        cmocka_unit_test(test_log__bad_field_format_still_logs_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
