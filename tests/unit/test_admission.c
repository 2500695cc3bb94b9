/* Unit tests for the admission webhook core (src/webhook/admission.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/metrics.h"
#include "http/probe.h"
#include "webhook/admission.h"

static const char *const review_ok =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
        "\"request\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"operation\":\"CREATE\","
        "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"ConfigMap\"},\"name\":\"cm\","
        "\"userInfo\":{\"username\":\"alice\"},\"object\":{\"metadata\":{\"name\":\"cm\"}}}}";

struct fixture {
	struct probe *server;
	struct admission_route *route;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->server = probe_new(NULL, 0);
	f->route = admission_route_new(f->server, "/validate", "test");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	probe_free(f->server);
	admission_route_free(f->route);
	free(f);
	metrics_reset_for_tests();
	return 0;
}

static json_t *answer(struct fixture *f, const char *body, int *status)
{
	struct buf out = BUF_INIT(1 << 20);
	json_t *doc;

	*status = admission_review(f->route, body, &out);
	doc = jx_loads(out.p, out.len, NULL);
	buf_release(&out);
	assert_non_null(doc);
	return doc;
}

static void deny_alice(const json_t *request, struct admission_verdict *v, void *ud)
{
	const char *user = jx_str(request, "userInfo", "username", NULL);

	if (user && strcmp(user, "alice") == 0) {
		v->allowed = false;
		snprintf(v->message, sizeof(v->message), "%s may not %s", user, (const char *)ud);
	}
}

static void allow(const json_t *request, struct admission_verdict *v, void *ud)
{
	(*(int *)ud)++;
}

static void test_admission__no_validators_allows_and_echoes_uid(void **state)
{
	int status;
	json_t *doc = answer(*state, review_ok, &status);

	assert_int_equal(status, 200);
	assert_string_equal(jx_str(doc, "apiVersion", NULL), "admission.k8s.io/v1");
	assert_string_equal(jx_str(doc, "kind", NULL), "AdmissionReview");
	assert_string_equal(jx_str(doc, "response", "uid", NULL),
	                    "705ab4f5-6393-11e8-b7cc-42010a800002");
	assert_true(jx_bool(doc, 0, "response", "allowed", NULL));
	assert_null(jx_get(doc, "response", "status", NULL));
	assert_int_equal(metrics_get("landlord_admission_requests_total",
	                             "webhook=\"test\",allowed=\"true\""),
	                 1);
	json_decref(doc);
}

static void test_admission__first_denial_wins_with_403_and_message(void **state)
{
	struct fixture *f = *state;
	int calls_after = 0, status;
	json_t *doc;

	admission_add_validator(f->route, deny_alice, "create this");
	admission_add_validator(f->route, allow, &calls_after);
	doc = answer(f, review_ok, &status);
	assert_int_equal(status, 200);
	assert_false(jx_bool(doc, 1, "response", "allowed", NULL));
	assert_int_equal(jx_int(doc, 0, "response", "status", "code", NULL), 403);
	assert_string_equal(jx_str(doc, "response", "status", "message", NULL),
	                    "alice may not create this");
	assert_int_equal(calls_after, 0);
	json_decref(doc);
}

static void test_admission__every_validator_runs_when_all_allow(void **state)
{
	struct fixture *f = *state;
	int calls = 0, status;
	json_t *doc;

	admission_add_validator(f->route, allow, &calls);
	admission_add_validator(f->route, allow, &calls);
	doc = answer(f, review_ok, &status);
	assert_true(jx_bool(doc, 0, "response", "allowed", NULL));
	assert_int_equal(calls, 2);
	json_decref(doc);
}

static void test_admission__malformed_reviews_are_400_not_allowed(void **state)
{
	static const char *const bad[] = {
	        "not json",
	        "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\","
	        "\"request\":{\"uid\":\"x\"}}",
	        "{\"apiVersion\":\"admission.k8s.io/"
	        "v1\",\"kind\":\"Other\",\"request\":{\"uid\":\"x\"}}",
	        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
	        "{\"apiVersion\":\"admission.k8s.io/"
	        "v1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
	        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	        "\"request\":{\"uid\":7}}",
	        "[]",
	        "",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int status;
		json_t *doc = answer(*state, bad[i], &status);

		assert_int_equal(status, 400);
		assert_null(jx_get(doc, "response", NULL));
		assert_int_equal(jx_int(doc, 0, "code", NULL), 400);
		json_decref(doc);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_admission__no_validators_allows_and_echoes_uid,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_admission__first_denial_wins_with_403_and_message, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_admission__every_validator_runs_when_all_allow,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_admission__malformed_reviews_are_400_not_allowed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
