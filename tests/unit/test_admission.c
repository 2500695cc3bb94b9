/* Unit tests for the admission webhook core (src/webhook/admission.c). */
#include <curl/curl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "http/server.h"
#include "webhook/admission.h"
#include "webhook/rules.h"

static const char *const review_ok =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
        "\"request\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"operation\":\"CREATE\","
        "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"ConfigMap\"},\"name\":\"cm\","
        "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"configmaps\"},"
        "\"userInfo\":{\"username\":\"alice\"},\"object\":{\"metadata\":{\"name\":\"cm\"}}}}";

struct fixture {
	struct admission_route *route;
	struct admission_rule rules[4];
	int calls_after;
	int calls;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->route = admission_route_new(NULL, "/validate", "test", f->rules);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	admission_route_free(f->route);
	free(f);
	metrics_reset_for_tests();
	return 0;
}

static const char *const every_resource[] = {"*", NULL};

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

	f->rules[0] = (struct admission_rule){"deny-alice", every_resource, ADMISSION_ANY_OP,
	                                      deny_alice, "create this"};
	f->rules[1] = (struct admission_rule){"count", every_resource, ADMISSION_ANY_OP, allow,
	                                      &calls_after};
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

	f->rules[0] =
	        (struct admission_rule){"one", every_resource, ADMISSION_ANY_OP, allow, &calls};
	f->rules[1] =
	        (struct admission_rule){"two", every_resource, ADMISSION_CREATE, allow, &calls};
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

static json_t *request_for(const char *group, const char *resource, const char *sub, const char *op)
{
	return json_pack("{s:s,s:{s:s,s:s,s:s},s:s?}", "operation", op, "resource", "group", group,
	                 "version", "v1", "resource", resource, "subResource", sub);
}

static void test_admission__rules_apply_by_resource_and_operation(void **state)
{
	static const char *const cm[] = {"configmaps", NULL};
	static const char *const apps[] = {"apps/deployments", "pods/exec", NULL};
	const struct admission_rule on_cm = {"cm", cm, ADMISSION_CREATE | ADMISSION_UPDATE, allow,
	                                     NULL};
	const struct admission_rule on_apps = {"apps", apps, ADMISSION_ANY_OP, allow, NULL};
	const struct admission_rule on_all = {"all", every_resource, ADMISSION_DELETE, allow, NULL};
	json_t *cm_create = request_for("", "configmaps", NULL, "CREATE");
	json_t *cm_delete = request_for("", "configmaps", NULL, "DELETE");
	json_t *deploy = request_for("apps", "deployments", NULL, "UPDATE");
	json_t *deploy_scale = request_for("apps", "deployments", "scale", "UPDATE");
	json_t *exec = request_for("", "pods", "exec", "CONNECT");
	json_t *bogus_op = request_for("", "configmaps", NULL, "PATCH");

	assert_true(admission_rule_applies(&on_cm, cm_create));
	assert_false(admission_rule_applies(&on_cm, cm_delete));
	assert_false(admission_rule_applies(&on_cm, deploy));
	assert_false(admission_rule_applies(&on_cm, bogus_op));
	assert_true(admission_rule_applies(&on_apps, deploy));
	assert_false(admission_rule_applies(&on_apps, deploy_scale));
	assert_true(admission_rule_applies(&on_apps, exec));
	assert_true(admission_rule_applies(&on_all, cm_delete));
	assert_false(admission_rule_applies(&on_all, cm_create));
	json_decref(cm_create);
	json_decref(cm_delete);
	json_decref(deploy);
	json_decref(deploy_scale);
	json_decref(exec);
	json_decref(bogus_op);
}

static void test_admission__rule_that_does_not_apply_is_not_run(void **state)
{
	static const char *const secrets[] = {"secrets", NULL};
	struct fixture *f = *state;
	int status;
	json_t *doc;

	f->rules[0] = (struct admission_rule){"secrets-only", secrets, ADMISSION_ANY_OP, deny_alice,
	                                      "touch secrets"};
	f->rules[1] = (struct admission_rule){"updates-only", every_resource, ADMISSION_UPDATE,
	                                      deny_alice, "update"};
	doc = answer(f, review_ok, &status);
	assert_int_equal(status, 200);
	assert_true(jx_bool(doc, 0, "response", "allowed", NULL));
	json_decref(doc);
}

static void test_admission__webhook_rules_table_is_well_formed(void **state)
{
	for (const struct admission_rule *r = webhook_rules; r->name; r++) {
		assert_non_null(r->validate);
		assert_non_null(r->resources);
		assert_non_null(r->resources[0]);
		assert_int_not_equal(r->operations & ADMISSION_ANY_OP, 0);
	}
}

static size_t sink(char *data, size_t size, size_t n, void *ud)
{
	return buf_append(ud, data, size * n) == 0 ? size * n : 0;
}

/* POST (or GET when @body is NULL) to the route; returns the status, the body in @out. */
static long post(int port, const char *body, size_t len, struct buf *out, char *allow)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
	struct curl_header *hdr;
	char url[128];
	long status = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/validate", port);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (allow && curl_easy_header(h, "Allow", 0, CURLH_HEADER, -1, &hdr) == CURLHE_OK)
		snprintf(allow, 64, "%s", hdr->value);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	return status;
}

static void test_admission__served_as_post_route_with_its_own_body_cap(void **state)
{
	struct http_server *s = http_server_new(NULL);
	struct admission_route *r = admission_route_new(s, "/validate", "served", webhook_rules);
	struct buf out = BUF_INIT(1 << 20);
	char allow[64] = "";
	size_t big_len = ADMISSION_BODY_MAX + 1;
	char *big = xmalloc(big_len);
	json_t *doc;

	assert_non_null(r);
	assert_null(admission_route_new(s, "/validate", "again", webhook_rules));
	assert_int_equal(http_server_start(s, NULL), 0);
	assert_int_equal(post(http_server_port(s), review_ok, strlen(review_ok), &out, NULL), 200);
	doc = jx_loads(out.p, out.len, NULL);
	assert_true(jx_bool(doc, 0, "response", "allowed", NULL));
	json_decref(doc);
	buf_reset(&out);
	/* Bigger than the server's default cap, within the route's. */
	memset(big, ' ', big_len);
	memcpy(big, review_ok, strlen(review_ok));
	assert_int_equal(post(http_server_port(s), big, 200000, &out, NULL), 200);
	buf_reset(&out);
	assert_int_equal(post(http_server_port(s), big, big_len, &out, NULL), 413);
	buf_reset(&out);
	assert_int_equal(post(http_server_port(s), NULL, 0, &out, allow), 405);
	assert_string_equal(allow, "POST");
	http_server_free(s);
	admission_route_free(r);
	buf_release(&out);
	free(big);
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
	        cmocka_unit_test(test_admission__rules_apply_by_resource_and_operation),
	        cmocka_unit_test_setup_teardown(test_admission__rule_that_does_not_apply_is_not_run,
	                                        setup, teardown),
	        cmocka_unit_test(test_admission__webhook_rules_table_is_well_formed),
	        cmocka_unit_test(test_admission__served_as_post_route_with_its_own_body_cap),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
