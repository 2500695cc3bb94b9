/* test_status.c - writing a status subresource (lib/kube/status.c) against the fake API server:
 * replace and merge, only status changes, a 404 is success, other failures say why. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "fake_manager.h"
#include "kube/status.h"

static const struct kc_gvr WIDGETS = {"example.com", "v1", "widgets", "Widget", false};

struct env {
	struct fake_api *f;
	struct kc_client *c;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	json_t *w = json_pack("{s:{s:s},s:{s:i},s:{s:s,s:s}}", "metadata", "name", "w", "spec",
	                      "size", 3, "status", "phase", "Old", "stale", "yes");

	e->f = fake_api_start();
	fake_api_add_gvr(e->f, &WIDGETS, true);
	fake_api_put(e->f, "widgets.example.com", w);
	e->c = fake_client_new(e->f);
	json_decref(w);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	kc_client_free(e->c);
	fake_api_stop(e->f);
	free(e);
	return 0;
}

static json_t *widget(struct env *e)
{
	return fake_api_get(e->f, "widgets.example.com", NULL, "w");
}

static void test_status__replace_drops_what_the_new_status_lacks(void **state)
{
	struct env *e = *state;
	json_t *st = json_pack("{s:s}", "phase", "New"), *w;
	char why[256] = "";

	assert_int_equal(
	        status_write(e->c, &WIDGETS, "w", st, STATUS_REPLACE, "unit", why, sizeof(why)), 0);
	w = widget(e);
	assert_true(json_equal(jx_get(w, "status", NULL), st));
	assert_int_equal(jx_int(w, 0, "spec", "size", NULL), 3);
	assert_int_equal(fake_api_requests(e->f, "PATCH", "/widgets/w/status"), 1);
	json_decref(w);
	json_decref(st);
}

static void test_status__merge_keeps_other_fields_and_null_removes(void **state)
{
	struct env *e = *state;
	json_t *st = json_pack("{s:s,s:n}", "phase", "New", "stale"), *w;
	char why[256] = "";

	assert_int_equal(
	        status_write(e->c, &WIDGETS, "w", st, STATUS_MERGE, "unit", why, sizeof(why)), 0);
	w = widget(e);
	assert_string_equal(jx_str(w, "status", "phase", NULL), "New");
	assert_null(jx_get(w, "status", "stale", NULL));
	json_decref(w);
	json_decref(st);
}

static void test_status__a_missing_object_is_success(void **state)
{
	struct env *e = *state;
	json_t *st = json_pack("{s:s}", "phase", "New");
	char why[256] = "";

	assert_int_equal(
	        status_write(e->c, &WIDGETS, "gone", st, STATUS_REPLACE, "unit", why, sizeof(why)),
	        0);
	json_decref(st);
}

static void test_status__a_refused_write_says_why(void **state)
{
	struct env *e = *state;
	json_t *st = json_pack("{s:s}", "phase", "New"), *w;
	char why[256] = "";

	fake_api_rule_add(e->f, &(struct fake_rule){.method = "PATCH",
	                                            .path_contains = "/status",
	                                            .action = FAKE_ANSWER,
	                                            .status = 409});
	assert_int_equal(
	        status_write(e->c, &WIDGETS, "w", st, STATUS_MERGE, "unit", why, sizeof(why)),
	        -EIO);
	assert_non_null(strstr(why, "409"));
	assert_non_null(strstr(why, "Conflict"));
	w = widget(e);
	assert_string_equal(jx_str(w, "status", "phase", NULL), "Old");
	json_decref(w);
	json_decref(st);
}

static void test_status__no_answer_says_why(void **state)
{
	struct env *e = *state;
	json_t *st = json_pack("{s:s}", "phase", "New");
	char why[256] = "";

	fake_api_rule_add(e->f, &(struct fake_rule){.method = "PATCH", .action = FAKE_CORRUPT});
	assert_int_equal(
	        status_write(e->c, &WIDGETS, "w", st, STATUS_MERGE, "unit", why, sizeof(why)),
	        -EIO);
	assert_true(strlen(why) > 0);
	json_decref(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(
	                test_status__replace_drops_what_the_new_status_lacks, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_status__merge_keeps_other_fields_and_null_removes, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_status__a_missing_object_is_success, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_status__a_refused_write_says_why, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_status__no_answer_says_why, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
