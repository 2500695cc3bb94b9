/*
 * test_admission_golden.c - the declarative admission cases: each folder of
 * tests/unit/golden/admission/ holds
 *   review.json  an AdmissionReview, as the API server sends it;
 *   view.json    what landlord knows (admit_memview.h's document);
 *   want.json    {"allowed": bool, "code": 403, "message": "...", "warnings": [...],
 *                "patch": [...]}: code and message only when denied; warnings only when there
 *                are some; patch, /mutate's JSON Patch, only when it sends one.
 * Each review goes through admission_review() with the tenant rules (webhook/rules.h) on a view
 * built from view.json, and the answer must equal want.json exactly. Adding a case needs no C.
 *
 * LANDLORD_GOLDEN_UPDATE=1 rewrites every want.json with what the code answers (then read the
 * diff: that is the review).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admission_golden.h"
#include "testjson.h"

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "tenancy/admit_memview.h"
#include "webhook/admission.h"
#include "webhook/rules.h"

static char *golden_dir(void)
{
	const char *dir = getenv("LANDLORD_TEST_GOLDEN");
	char *path;

	if (dir == NULL)
		dir = "tests/unit/golden";
	if (asprintf(&path, "%s/admission", dir) < 0)
		fail();
	return path;
}

static json_t *load(const char *dir, const char *name)
{
	char path[1024];
	json_error_t e;
	json_t *v;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	v = json_load_file(path, 0, &e);
	if (v == NULL)
		fail_msg("%s: %s (line %d)", path, e.text, e.line);
	return v;
}

static json_t *run_case(const char *dir)
{
	json_t *view_doc = load(dir, "view.json"), *review = load(dir, "review.json"), *answer,
	       *got;
	struct adm_memview *mv = NULL;
	struct ll_err err = {{0}};
	struct adm_view view;
	struct admission_route *route;
	struct buf out = BUF_INIT(1 << 20);
	char *body = json_dumps(review, 0);
	int status;

	if (adm_memview_new(view_doc, &mv, &err) != 0)
		fail_msg("%s/view.json: %s", dir, err.msg);
	view = adm_memview_view(mv);
	struct admission_rule rules[] = {
	        {"tenancy", wh_tenancy_resources, ADMISSION_ANY_OP, wh_tenancy_validate, &view},
	        {.name = NULL},
	};
	route = admission_route_new(NULL, "/validate", "golden", rules);
	status = admission_review(route, body, &out);
	if (status != 200)
		fail_msg("%s: HTTP %d: %.*s", dir, status, (int)out.len, out.p);
	answer = json_loadb(out.p, out.len, 0, NULL);
	assert_non_null(answer);
	got = admission_got(answer);
	json_decref(answer);
	answer = admission_mutation((struct admission_rule[]){{"label", wh_tenancy_mutate_resources,
	                                                       ADMISSION_CREATE | ADMISSION_UPDATE,
	                                                       wh_tenancy_label, &view},
	                                                      {.name = NULL}},
	                            body);
	if (answer)
		json_object_set_new(got, "patch", answer);
	admission_route_free(route);
	buf_release(&out);
	free(body);
	adm_memview_free(mv);
	json_decref(view_doc);
	json_decref(review);
	return got;
}

static int check_case(const char *dir, bool update)
{
	json_t *got = run_case(dir);
	char path[1024];

	if (update) {
		if (snprintf(path, sizeof(path), "%s/want.json", dir) >= (int)sizeof(path))
			fail_msg("case path too long: %s", dir);
		json_dump_file(got, path, JSON_INDENT(2) | JSON_SORT_KEYS);
		json_decref(got);
		return 0;
	}
	return json_case_differs(dir, got, load(dir, "want.json"));
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void test_admission_golden__every_case_answers_as_recorded(void **state)
{
	char *root = golden_dir(), dir[1024];
	struct dirent **entries = NULL;
	bool update = getenv("LANDLORD_GOLDEN_UPDATE") != NULL;
	int n = scandir(root, &entries, NULL, by_name), failed = 0, cases = 0;

	if (n < 0)
		fail_msg("cannot read %s", root);
	for (int i = 0; i < n; i++) {
		if (entries[i]->d_name[0] != '.' && entries[i]->d_type == DT_DIR) {
			snprintf(dir, sizeof(dir), "%s/%s", root, entries[i]->d_name);
			failed += check_case(dir, update);
			cases++;
		}
		free(entries[i]);
	}
	free(entries);
	free(root);
	print_message("%d golden cases, %d failed\n", cases, failed);
	assert_true(cases >= 30);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_admission_golden__every_case_answers_as_recorded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
