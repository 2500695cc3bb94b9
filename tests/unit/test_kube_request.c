/*
 * test_kube_request.c - the client's request API (kc_do and the wrappers over it): header
 * validation and refusals (nothing is sent), extra headers in order, bodies byte for byte, raw
 * answers, path checks, metrics labels; against a loopback server that keeps each request's
 * bytes. With LANDLORD_TEST_KUBECONFIG: impersonation, SelfSubjectReview, YAML POST, merge and
 * apply PATCH against a real API server.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube_rawsrv.h"
#include "live.h"

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "base/metrics.h"
#include "kube/kube.h"
#include "kube/kube_internal.h"
#include "kube/kubeconfig.h"

/* ---------- offline ---------- */

struct fixture {
	struct rawsrv srv;
	struct kc_client *c;
	int status;
	const char *ctype;
	const char *body;
};

static void answer_fixed(struct rawsrv *s, int fd)
{
	struct fixture *f = s->ud;

	rawsrv_reply(fd, f->status, f->ctype, f->body, strlen(f->body));
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->status = 200;
	f->ctype = "application/json";
	f->body = "{\"kind\":\"Thing\"}";
	rawsrv_start(&f->srv, answer_fixed, f);
	f->c = rawsrv_client(&f->srv, 5000);
	*state = f;
	return f->c ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	kc_client_free(f->c);
	rawsrv_stop(&f->srv);
	free(f);
	return 0;
}

/* kc_do with @h; asserts -EINVAL, a message naming @why, and that nothing reached the server. */
static void expect_refused(struct fixture *f, const struct kc_request *rq, const char *why)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int before = rawsrv_nreq(&f->srv);

	assert_int_equal(kc_do(f->c, rq, &resp, &err), -EINVAL);
	assert_int_equal(resp.http_status, 0);
	if (strstr(err.msg, why) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg, why);
	/* a request that did go out would be in by now: a GET after it is answered in order */
	{
		struct kc_request ok = {.method = "GET", .path = "/version"};

		assert_int_equal(kc_do(f->c, &ok, &resp, NULL), 0);
		kc_resp_release(&resp);
	}
	assert_int_equal(rawsrv_nreq(&f->srv), before + 1);
}

static void test_kube_request__header_injection_refused(void **state)
{
	struct fixture *f = *state;
	static const char *const bad[] = {"a\r\nX-Evil: 1", "a\nb",  "a\rb",
	                                  "a\x01",          "a\x7f", "\x1b"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kc_header h = {"Impersonate-User", bad[i]};
		struct kc_request rq = {
		        .method = "GET", .path = "/x", .headers = &h, .n_headers = 1};

		expect_refused(f, &rq, "control character");
	}
}

static void test_kube_request__bad_header_names_refused(void **state)
{
	struct fixture *f = *state;
	static const char *const bad[] = {"",           "Bad Name", "X:Y", "X\r\nY",
	                                  ":authority", "X(",       NULL};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kc_header h = {bad[i], "v"};
		struct kc_request rq = {
		        .method = "GET", .path = "/x", .headers = &h, .n_headers = 1};

		expect_refused(f, &rq, "not an HTTP token");
	}
}

static void test_kube_request__owned_headers_refused(void **state)
{
	struct fixture *f = *state;
	static const char *const owned[] = {
	        "Authorization", "host",   "Content-Length", "TRANSFER-ENCODING",
	        "Content-Type",  "Accept", "Connection",     "Expect",
	        "User-Agent",    "Upgrade"};

	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
		struct kc_header h = {owned[i], "x"};
		struct kc_request rq = {
		        .method = "GET", .path = "/x", .headers = &h, .n_headers = 1};

		expect_refused(f, &rq, "set by the client");
	}
}

static void test_kube_request__header_limits(void **state)
{
	struct fixture *f = *state;
	struct kc_header hs[KC_MAX_HEADERS + 1];
	char *big = malloc(KC_MAX_HEADER_LINE + 1);
	struct kc_request rq = {.method = "GET", .path = "/x", .headers = hs};
	struct kc_resp resp = {0};

	for (size_t i = 0; i < KC_MAX_HEADERS + 1; i++)
		hs[i] = (struct kc_header){"X-N", "1"};
	rq.n_headers = KC_MAX_HEADERS + 1;
	expect_refused(f, &rq, "headers");
	rq.n_headers = KC_MAX_HEADERS;
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 200);
	kc_resp_release(&resp);
	/* "X-N: " + value: exactly at the limit passes, one more byte does not */
	memset(big, 'v', KC_MAX_HEADER_LINE);
	big[KC_MAX_HEADER_LINE - 5] = '\0';
	hs[0] = (struct kc_header){"X-N", big};
	rq.n_headers = 1;
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	kc_resp_release(&resp);
	big[KC_MAX_HEADER_LINE - 5] = 'v';
	big[KC_MAX_HEADER_LINE - 4] = '\0';
	expect_refused(f, &rq, "over");
	free(big);
}

static const char *find_line(const char *req, const char *line, const char *from)
{
	const char *p = strstr(from ? from : req, line);

	if (p == NULL)
		fail_msg("request lacks \"%s\":\n%s", line, req);
	return p;
}

static void test_kube_request__extra_headers_go_out_in_order(void **state)
{
	struct fixture *f = *state;
	const struct kc_header hs[] = {
	        {"Impersonate-User", "alice"},
	        {"Impersonate-Group", "team-a"},
	        {"Impersonate-Group", "team-b"},
	        {"Impersonate-Extra-scopes", "view\tedit"},
	        {"X-Empty", ""},
	};
	struct kc_request rq = {.method = "GET",
	                        .path = "/api/v1/namespaces",
	                        .query = "limit=1",
	                        .headers = hs,
	                        .n_headers = 5};
	struct kc_resp resp = {0};
	const char *p;

	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 200);
	pthread_mutex_lock(&f->srv.lock);
	find_line(f->srv.req, "GET /api/v1/namespaces?limit=1 HTTP/1.1\r\n", NULL);
	p = find_line(f->srv.req, "\r\nAccept: application/json\r\n", NULL);
	p = find_line(f->srv.req, "\r\nImpersonate-User: alice\r\n", p);
	p = find_line(f->srv.req, "\r\nImpersonate-Group: team-a\r\n", p);
	p = find_line(f->srv.req, "\r\nImpersonate-Group: team-b\r\n", p);
	p = find_line(f->srv.req, "\r\nImpersonate-Extra-scopes: view\tedit\r\n", p);
	find_line(f->srv.req, "\r\nX-Empty:", p);
	assert_null(strstr(f->srv.req, "Content-Type"));
	pthread_mutex_unlock(&f->srv.lock);
	kc_resp_release(&resp);
}

static void test_kube_request__body_bytes_sent_exactly(void **state)
{
	struct fixture *f = *state;
	static const char body[] = "a: 1\r\n\0b: \"\xff\"\n\r\n\r\nend";
	struct kc_request rq = {.method = "POST",
	                        .path = "/api/v1/namespaces/x/configmaps",
	                        .body = body,
	                        .body_len = sizeof(body) - 1,
	                        .content_type = "application/yaml",
	                        .accept = "application/yaml"};
	struct kc_resp resp = {0};

	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	pthread_mutex_lock(&f->srv.lock);
	find_line(f->srv.req, "POST /api/v1/namespaces/x/configmaps HTTP/1.1\r\n", NULL);
	find_line(f->srv.req, "\r\nContent-Type: application/yaml\r\n", NULL);
	find_line(f->srv.req, "\r\nAccept: application/yaml\r\n", NULL);
	assert_int_equal(f->srv.req_len - f->srv.head_len, sizeof(body) - 1);
	assert_memory_equal(f->srv.req + f->srv.head_len, body, sizeof(body) - 1);
	pthread_mutex_unlock(&f->srv.lock);
	kc_resp_release(&resp);

	/* an empty body is a body: the content type still goes out, with Content-Length: 0 */
	rq.method = "PATCH";
	rq.body = "";
	rq.body_len = 0;
	rq.content_type = "application/merge-patch+json";
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	pthread_mutex_lock(&f->srv.lock);
	find_line(f->srv.req, "PATCH /api/v1/namespaces/x/configmaps HTTP/1.1\r\n", NULL);
	find_line(f->srv.req, "\r\nContent-Type: application/merge-patch+json\r\n", NULL);
	assert_int_equal(f->srv.req_len, f->srv.head_len);
	pthread_mutex_unlock(&f->srv.lock);
	kc_resp_release(&resp);
}

static void test_kube_request__raw_answer_keeps_bytes_and_type(void **state)
{
	struct fixture *f = *state;
	struct kc_request rq = {.method = "GET", .path = "/x", .flags = KC_REQ_RAW};
	struct kc_resp resp = {0};

	f->ctype = "application/yaml; charset=utf-8";
	f->body = "kind: Thing\n";
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 200);
	assert_string_equal(resp.content_type, "application/yaml; charset=utf-8");
	assert_int_equal(resp.raw.len, strlen(f->body));
	assert_memory_equal(resp.raw.p, f->body, resp.raw.len);
	assert_null(resp.body);
	kc_resp_release(&resp);
	assert_null(resp.raw.p);

	/* JSON is not parsed either, not even when malformed */
	f->ctype = "application/json";
	f->body = "{\"kind\": ";
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	assert_null(resp.body);
	assert_int_equal(resp.raw.len, strlen(f->body));
	kc_resp_release(&resp);

	/* an error answer still yields its Status */
	f->status = 403;
	f->body = "{\"kind\":\"Status\",\"code\":403,\"reason\":\"Forbidden\",\"message\":\"no\"}";
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 403);
	assert_string_equal(resp.status.reason, "Forbidden");
	assert_string_equal(resp.status.message, "no");
	assert_null(resp.body);
	assert_int_equal(resp.raw.len, strlen(f->body));
	kc_resp_release(&resp);
}

static void test_kube_request__parsed_answer_has_type_no_raw(void **state)
{
	struct fixture *f = *state;
	struct kc_resp resp = {0};

	assert_int_equal(kc_request(f->c, "GET", "/version?x=1", NULL, NULL, 0, NULL, &resp, NULL),
	                 0);
	assert_string_equal(jx_str(resp.body, "kind", NULL), "Thing");
	assert_string_equal(resp.content_type, "application/json");
	assert_int_equal(resp.raw.len, 0);
	pthread_mutex_lock(&f->srv.lock);
	find_line(f->srv.req, "GET /version?x=1 HTTP/1.1\r\n", NULL);
	pthread_mutex_unlock(&f->srv.lock);
	kc_resp_release(&resp);
}

static void test_kube_request__content_type_over_field_is_empty(void **state)
{
	struct fixture *f = *state;
	char ct[KC_CONTENT_TYPE_MAX + 16];
	struct kc_request rq = {.method = "GET", .path = "/x", .flags = KC_REQ_RAW};
	struct kc_resp resp = {0};

	memset(ct, 'a', sizeof(ct) - 1);
	ct[sizeof(ct) - 1] = '\0';
	memcpy(ct, "text/", 5);
	f->ctype = ct;
	f->body = "x";
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	assert_string_equal(resp.content_type, "");
	assert_int_equal(resp.raw.len, 1);
	kc_resp_release(&resp);
}

static void test_kube_request__dot_segments_refused(void **state)
{
	struct fixture *f = *state;
	static const char *const bad[] = {
	        "/api/v1/namespaces/a/../../secrets",
	        "/api/./v1",
	        "/api/v1/..",
	        "/..",
	        "/api/%2e%2E/x",
	        "/api/.%2e",
	        "/api/%2E",
	        "/api/%2e.",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kc_request rq = {.method = "GET", .path = bad[i]};

		expect_refused(f, &rq, "segment");
	}
}

static void test_kube_request__other_path_and_query_refusals(void **state)
{
	struct fixture *f = *state;
	struct kc_request rq = {.method = "GET", .path = "relative"};

	expect_refused(f, &rq, "absolute");
	rq.path = "/a b";
	expect_refused(f, &rq, "percent-encoded");
	rq.path = "/a?b=1";
	expect_refused(f, &rq, "percent-encoded");
	rq.path = "/a\r\nX: y";
	expect_refused(f, &rq, "percent-encoded");
	rq.path = "/a";
	rq.query = "b=1#frag";
	expect_refused(f, &rq, "query");
	rq.query = "b=\n";
	expect_refused(f, &rq, "query");
	rq.query = NULL;
	rq.method = "GE T";
	expect_refused(f, &rq, "method");
	rq.method = "";
	expect_refused(f, &rq, "method");
}

static void test_kube_request__dot_like_segments_pass(void **state)
{
	struct fixture *f = *state;
	static const char *const ok[] = {"/api/...",       "/api/.x",   "/api/x.",
	                                 "/api/%2e%2e%2e", "/api/%2ex", "/api/v1/"};
	struct kc_resp resp = {0};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct kc_request rq = {.method = "GET", .path = ok[i]};

		assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
		kc_resp_release(&resp);
	}
}

static void test_kube_request__verbs_refuse_dot_names(void **state)
{
	struct fixture *f = *state;
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int before = rawsrv_nreq(&f->srv);

	assert_int_equal(kc_get(f->c, &KC_CONFIGMAPS, "ns", "..", &resp, &err), -EINVAL);
	assert_int_equal(kc_get(f->c, &KC_CONFIGMAPS, "..", "x", &resp, &err), -EINVAL);
	assert_int_equal(kc_list(f->c, &KC_CONFIGMAPS, ".", NULL, NULL, NULL, NULL, &resp, &err),
	                 -EINVAL);
	assert_int_equal(rawsrv_nreq(&f->srv), before);
}

static double count(const char *verb)
{
	char labels[160];

	return metrics_get("landlord_api_requests_total",
	                   metrics_labels(labels, sizeof(labels), "client", "rawsrv", "verb", verb,
	                                  "code", "200", NULL));
}

static void test_kube_request__unusual_methods_count_as_other(void **state)
{
	struct fixture *f = *state;
	struct kc_request rq = {.method = "PROPFIND", .path = "/x"};
	struct kc_resp resp = {0};
	double other = count("OTHER"), get = count("GET"), list = count("LIST");

	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	kc_resp_release(&resp);
	rq.method = "X-CUSTOM-1";
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	kc_resp_release(&resp);
	rq.method = "GET";
	rq.verb = "EVIL";
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	kc_resp_release(&resp);
	rq.verb = "LIST";
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	kc_resp_release(&resp);
	rq.verb = NULL;
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	kc_resp_release(&resp);
	/* PROPFIND, X-CUSTOM-1: OTHER; EVIL falls back to the method's label */
	assert_true(count("OTHER") == other + 2);
	assert_true(count("LIST") == list + 1);
	assert_true(count("GET") == get + 2);
	assert_true(count("PROPFIND") == 0);
	assert_true(count("EVIL") == 0);
}

static void test_kube_request__verb_labels(void **state)
{
	(void)state;
	assert_string_equal(kc__verb_label(NULL, "POST", NULL), "CREATE");
	assert_string_equal(kc__verb_label(NULL, "PUT", NULL), "UPDATE");
	assert_string_equal(kc__verb_label(NULL, "PATCH", "application/apply-patch+yaml"), "APPLY");
	assert_string_equal(kc__verb_label(NULL, "PATCH", "application/merge-patch+json"), "PATCH");
	assert_string_equal(kc__verb_label(NULL, "DELETE", NULL), "DELETE");
	assert_string_equal(kc__verb_label(NULL, "HEAD", NULL), "HEAD");
	assert_string_equal(kc__verb_label(NULL, "LIST", NULL), "OTHER");
	assert_string_equal(kc__verb_label(NULL, "get", NULL), "OTHER");
	assert_string_equal(kc__verb_label("WATCH", "GET", NULL), "WATCH");
	assert_string_equal(kc__verb_label("REVIEW", "POST", NULL), "REVIEW");
}

static void test_kube_request__zeroed_resp_reused(void **state)
{
	struct fixture *f = *state;
	struct kc_request rq = {.method = "GET", .path = "/x", .flags = KC_REQ_RAW};
	struct kc_resp resp = {0};

	kc_resp_release(&resp);
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	assert_true(resp.raw.len > 0);
	kc_resp_release(&resp);
	rq.flags = 0;
	assert_int_equal(kc_do(f->c, &rq, &resp, NULL), 0);
	assert_non_null(resp.body);
	assert_int_equal(resp.raw.len, 0);
	kc_resp_release(&resp);
	kc_resp_release(&resp);
}

/* ---------- live ---------- */

static int live_setup(void **state)
{
	return live_ns_setup(state, "kcreq");
}

static long live_status(struct live_ns *l, const char *method, const char *path,
                        const struct kc_header *hs, size_t n)
{
	struct kc_request rq = {.method = method, .path = path, .headers = hs, .n_headers = n};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	long status;

	if (kc_do(l->c, &rq, &resp, &err) != 0)
		fail_msg("%s %s: %s", method, path, err.msg);
	status = resp.http_status;
	kc_resp_release(&resp);
	return status;
}

static void live_post(struct live_ns *l, const char *path, const char *ctype, const char *body)
{
	struct kc_request rq = {.method = "POST",
	                        .path = path,
	                        .body = body,
	                        .body_len = strlen(body),
	                        .content_type = ctype};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};

	assert_int_equal(kc_do(l->c, &rq, &resp, &err), 0);
	if (resp.http_status != 201)
		fail_msg("POST %s: HTTP %ld %s", path, resp.http_status, resp.status.message);
	kc_resp_release(&resp);
}

/* A Role that reads configmaps, bound to the group kcreq-readers, in the suite's namespace. */
static void live_reader_role(struct live_ns *l)
{
	char path[160], body[1024];

	snprintf(path, sizeof(path), "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
	         l->ns);
	live_post(l, path, "application/yaml",
	          "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n"
	          "  name: cm-reader\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n"
	          "  verbs: [get, list]\n");
	snprintf(path, sizeof(path),
	         "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings", l->ns);
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\","
	         "\"metadata\":{\"name\":\"cm-reader\"},\"roleRef\":{\"apiGroup\":"
	         "\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"cm-reader\"},"
	         "\"subjects\":[{\"kind\":\"Group\",\"apiGroup\":\"rbac.authorization.k8s.io\","
	         "\"name\":\"kcreq-readers\"}]}");
	live_post(l, path, NULL, body);
}

static bool live_cm_readable(void *arg)
{
	struct live_ns *l = arg;
	const struct kc_header hs[] = {{"Impersonate-User", "alice"},
	                               {"Impersonate-Group", "kcreq-readers"}};
	char path[160];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", l->ns);
	return live_status(l, "GET", path, hs, 2) == 200;
}

static void test_kube_request__live_impersonation(void **state)
{
	struct live_ns *l = *state;
	const struct kc_header alice[] = {{"Impersonate-User", "alice"},
	                                  {"Impersonate-Group", "kcreq-other"},
	                                  {"Impersonate-Group", "kcreq-readers"}};
	char cms[160], secrets[160];

	if (l == NULL)
		skip();
	live_reader_role(l);
	snprintf(cms, sizeof(cms), "/api/v1/namespaces/%s/configmaps", l->ns);
	snprintf(secrets, sizeof(secrets), "/api/v1/namespaces/%s/secrets", l->ns);
	/* RBAC caches settle quickly but not at once */
	assert_true(live_wait(live_cm_readable, l, 10000));
	assert_int_equal(live_status(l, "GET", cms, alice, 3), 200);
	assert_int_equal(live_status(l, "GET", secrets, alice, 3), 403);
	assert_int_equal(live_status(l, "GET", cms, alice, 1), 403);
	assert_int_equal(live_status(l, "GET", cms, NULL, 0), 200);
}

static void test_kube_request__live_self_subject_review_shows_groups(void **state)
{
	struct live_ns *l = *state;
	const struct kc_header hs[] = {{"Impersonate-User", "alice"},
	                               {"Impersonate-Group", "kcreq-a"},
	                               {"Impersonate-Group", "kcreq-b"},
	                               {"Impersonate-Extra-scopes", "view"}};
	static const char body[] = "{\"apiVersion\":\"authentication.k8s.io/v1\","
	                           "\"kind\":\"SelfSubjectReview\"}";
	struct kc_request rq = {.method = "POST",
	                        .path = "/apis/authentication.k8s.io/v1/selfsubjectreviews",
	                        .headers = hs,
	                        .n_headers = 4,
	                        .body = body,
	                        .body_len = sizeof(body) - 1};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	json_t *groups, *g;
	size_t i;
	bool a = false, b = false;

	if (l == NULL)
		skip();
	assert_int_equal(kc_do(l->c, &rq, &resp, &err), 0);
	assert_int_equal(resp.http_status, 201);
	assert_string_equal(jx_str(resp.body, "status", "userInfo", "username", NULL), "alice");
	groups = json_object_get(json_object_get(json_object_get(resp.body, "status"), "userInfo"),
	                         "groups");
	json_array_foreach(groups, i, g) {
		a = a || strcmp(json_string_value(g), "kcreq-a") == 0;
		b = b || strcmp(json_string_value(g), "kcreq-b") == 0;
	}
	assert_true(a && b);
	g = json_object_get(
	        json_object_get(json_object_get(json_object_get(resp.body, "status"), "userInfo"),
	                        "extra"),
	        "scopes");
	assert_string_equal(json_string_value(json_array_get(g, 0)), "view");
	kc_resp_release(&resp);
}

static void test_kube_request__live_yaml_post_merge_and_apply_patch(void **state)
{
	struct live_ns *l = *state;
	char path[160], item[200];
	static const char merge[] = "{\"data\":{\"b\":\"2\"}}";
	static const char apply[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\n"
	                            "data:\n  c: \"3\"\n";
	struct kc_request rq = {.method = "PATCH", .path = item};
	struct kc_resp resp = {0};

	if (l == NULL)
		skip();
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", l->ns);
	snprintf(item, sizeof(item), "%s/yml", path);
	live_post(l, path, "application/yaml",
	          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  a: \"1\"\n");
	rq.body = merge;
	rq.body_len = sizeof(merge) - 1;
	rq.content_type = "application/merge-patch+json";
	assert_int_equal(kc_do(l->c, &rq, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 200);
	assert_string_equal(jx_str(resp.body, "data", "a", NULL), "1");
	assert_string_equal(jx_str(resp.body, "data", "b", NULL), "2");
	kc_resp_release(&resp);
	rq.body = apply;
	rq.body_len = sizeof(apply) - 1;
	rq.content_type = "application/apply-patch+yaml";
	rq.query = "fieldManager=kcreq&force=true";
	assert_int_equal(kc_do(l->c, &rq, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 200);
	assert_string_equal(jx_str(resp.body, "data", "c", NULL), "3");
	kc_resp_release(&resp);
	/* read back as YAML, raw */
	rq = (struct kc_request){
	        .method = "GET", .path = item, .accept = "application/yaml", .flags = KC_REQ_RAW};
	assert_int_equal(kc_do(l->c, &rq, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 200);
	assert_string_equal(resp.content_type, "application/yaml");
	assert_non_null(strstr(buf_cstr(&resp.raw), "name: yml"));
	assert_null(resp.body);
	kc_resp_release(&resp);
	assert_int_equal(live_status(l, "DELETE", item, NULL, 0), 200);
}

int main(void)
{
	const struct CMUnitTest unit[] = {
	        cmocka_unit_test_setup_teardown(test_kube_request__header_injection_refused, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__bad_header_names_refused, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__owned_headers_refused, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__header_limits, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__extra_headers_go_out_in_order,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__body_bytes_sent_exactly, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__raw_answer_keeps_bytes_and_type,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__parsed_answer_has_type_no_raw,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__content_type_over_field_is_empty,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__dot_segments_refused, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__other_path_and_query_refusals,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__dot_like_segments_pass, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__verbs_refuse_dot_names, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_kube_request__unusual_methods_count_as_other,
	                                        setup, teardown),
	        cmocka_unit_test(test_kube_request__verb_labels),
	        cmocka_unit_test_setup_teardown(test_kube_request__zeroed_resp_reused, setup,
	                                        teardown),
	};
	const struct CMUnitTest live[] = {
	        cmocka_unit_test(test_kube_request__live_impersonation),
	        cmocka_unit_test(test_kube_request__live_self_subject_review_shows_groups),
	        cmocka_unit_test(test_kube_request__live_yaml_post_merge_and_apply_patch),
	};
	int failed = cmocka_run_group_tests_name("kube_request", unit, NULL, NULL);

	return failed +
	       cmocka_run_group_tests_name("kube_request_live", live, live_setup, live_ns_teardown);
}
