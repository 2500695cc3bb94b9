/* Unit tests for the tenant rules as an admission validator (src/webhook/rule_tenancy.c): the
 * verdict, the warnings in the AdmissionReview response, the audit metric, unreadable requests.
 * The rules themselves are in the test_admit* suites and the golden cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "admit_testing.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/metrics.h"
#include "webhook/admission.h"
#include "webhook/rules.h"

struct fixture {
	struct adm_memview *mv;
	struct adm_view view;
	struct admission_rule rules[2];
	struct admission_route *route;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->mv = at_view("{\"config\":{\"spec\":{\"admission\":{\"modes\":{\"services\":"
	                "\"audit\"}}}}}");
	f->view = adm_memview_view(f->mv);
	f->rules[0] = (struct admission_rule){"tenancy", wh_tenancy_resources, ADMISSION_ANY_OP,
	                                      wh_tenancy_validate, &f->view};
	f->route = admission_route_new(NULL, "/validate", "test", f->rules);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	admission_route_free(f->route);
	adm_memview_free(f->mv);
	free(f);
	metrics_reset_for_tests();
	return 0;
}

static json_t *review(struct fixture *f, const char *request)
{
	struct buf out = BUF_INIT(1 << 20);
	char body[2048];
	json_t *answer;

	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	         "\"request\":{\"uid\":\"u1\",%s}}",
	         request);
	assert_int_equal(admission_review(f->route, body, &out), 200);
	answer = jx_loads(out.p, out.len, NULL);
	buf_release(&out);
	assert_non_null(answer);
	return answer;
}

static void test_rule_tenancy__a_denial_is_403_with_the_message(void **state)
{
	json_t *a = review(*state,
	                   "\"operation\":\"CREATE\",\"namespace\":\"acme-dev\","
	                   "\"resource\":{\"group\":\"\",\"resource\":\"persistentvolumeclaims\"},"
	                   "\"userInfo\":{\"username\":\"alice\"},\"object\":{\"metadata\":"
	                   "{\"name\":\"d\"},\"spec\":{\"storageClassName\":\"gold\"}}");

	assert_false(jx_bool(a, 1, "response", "allowed", NULL));
	assert_int_equal(jx_int(a, 0, "response", "status", "code", NULL), 403);
	assert_string_equal(jx_str(a, "response", "status", "message", NULL),
	                    "storage class \"gold\" of PersistentVolumeClaim \"d\" is not allowed "
	                    "for tenant \"acme\" (allowed: fast)");
	assert_null(jx_get(a, "response", "warnings", NULL));
	json_decref(a);
}

static void test_rule_tenancy__an_audit_is_a_warning_and_a_metric(void **state)
{
	json_t *a = review(*state, "\"operation\":\"CREATE\",\"namespace\":\"acme-dev\","
	                           "\"resource\":{\"group\":\"\",\"resource\":\"services\"},"
	                           "\"userInfo\":{\"username\":\"alice\"},\"object\":{\"metadata\":"
	                           "{\"name\":\"s\"},\"spec\":{\"type\":\"NodePort\"}}");

	assert_true(jx_bool(a, 0, "response", "allowed", NULL));
	assert_null(jx_get(a, "response", "status", NULL));
	assert_string_equal(
	        json_string_value(json_array_get(jx_get(a, "response", "warnings", NULL), 0)),
	        "audit: Service \"s\" of type NodePort is not allowed for tenant "
	        "\"acme\" (allowed types: ClusterIP, LoadBalancer)");
	assert_int_equal(metrics_get("landlord_admission_audit_total", "family=\"services\""), 1);
	json_decref(a);
}

static void test_rule_tenancy__an_unreadable_request_is_refused_with_400(void **state)
{
	json_t *a = review(*state, "\"operation\":\"CREATE\",\"namespace\":7,\"resource\":{"
	                           "\"resource\":\"pods\"}");

	assert_false(jx_bool(a, 1, "response", "allowed", NULL));
	assert_int_equal(jx_int(a, 0, "response", "status", "code", NULL), 400);
	assert_string_equal(jx_str(a, "response", "status", "message", NULL),
	                    "malformed AdmissionRequest: request: subResource, namespace, name and "
	                    "userInfo.username must be strings");
	json_decref(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_rule_tenancy__a_denial_is_403_with_the_message,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_rule_tenancy__an_audit_is_a_warning_and_a_metric, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_rule_tenancy__an_unreadable_request_is_refused_with_400, setup,
	                teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
