/* test_probes.c - /healthz, /readyz, /metrics and /debug/ hooks, over loopback with libcurl. */
#include <curl/curl.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "http/probes.h"
#include "http/server.h"

struct reply {
	long status;
	char content_type[64];
	char allow[64];
	struct buf body;
};

static size_t on_write(char *data, size_t size, size_t n, void *ud)
{
	struct buf *b = ud;

	return buf_append(b, data, size * n) == 0 ? size * n : 0;
}

/* One request on @h; returns the CURLcode and fills @r (release r->body). */
static CURLcode http_on(CURL *h, int port, const char *method, const char *target, const char *body,
                        size_t body_len, struct reply *r)
{
	struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
	char url[256];
	struct curl_header *allow;
	char *ct = NULL;
	CURLcode rc;

	memset(r, 0, sizeof(*r));
	buf_init(&r->body, 1u << 20);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, target);
	curl_easy_setopt(h, CURLOPT_URL, url);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L); /* otherwise curl waits for a body */
	else
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r->body);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	if (curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(r->content_type, sizeof(r->content_type), "%s", ct);
	if (curl_easy_header(h, "Allow", 0, CURLH_HEADER, -1, &allow) == CURLHE_OK)
		snprintf(r->allow, sizeof(r->allow), "%s", allow->value);
	curl_slist_free_all(hdrs);
	curl_easy_reset(h);
	return rc;
}

static CURLcode http(int port, const char *method, const char *target, const char *body,
                     size_t body_len, struct reply *r)
{
	CURL *h = curl_easy_init();
	CURLcode rc = http_on(h, port, method, target, body, body_len, r);

	curl_easy_cleanup(h);
	return rc;
}
/* GET @target, assert the status and body, release. */
static void expect(int port, const char *method, const char *target, long status, const char *body)
{
	struct reply r;

	assert_int_equal(http(port, method, target, NULL, 0, &r), CURLE_OK);
	assert_int_equal(r.status, status);
	if (body)
		assert_string_equal(buf_cstr(&r.body), body);
	buf_release(&r.body);
}

struct seen {
	int calls;
	char method[16];
	char query[256];
	char resource[64];
};

static int hook(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct seen *s = ud;
	const char *resource = http_req_arg(req, "resource");

	s->calls++;
	snprintf(s->method, sizeof(s->method), "%s", http_req_method(req));
	snprintf(s->query, sizeof(s->query), "%s", http_req_query(req));
	snprintf(s->resource, sizeof(s->resource), "%s", resource ? resource : "");
	http_resp_header(resp, "Content-Type", "application/json");
	buf_append_str(http_resp_body(resp), "{\"handled\":true}");
	return 200;
}

struct fixture {
	struct http_server *s;
	struct probes *p;
	int port;
	struct seen seen;
	bool ready;
};

static bool ready_cb(void *ud, char *why, size_t why_len)
{
	struct fixture *f = ud;

	if (!f->ready)
		snprintf(why, why_len, "informer cache not synced");
	return f->ready;
}

static bool silent_cb(void *ud, char *why, size_t why_len)
{
	return false;
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	f->s = http_server_new(&(struct http_server_opts){.name = "probe"});
	f->p = probes_new(f->s);
	if (probes_add_hook(f->p, "/debug/echo", hook, &f->seen) != 0)
		return -1;
	if (http_server_start(f->s, NULL) != 0)
		return -1;
	f->port = http_server_port(f->s);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	http_server_free(f->s);
	probes_free(f->p);
	free(f);
	metrics_reset_for_tests();
	return 0;
}

static void test_probes__healthz_ok(void **state)
{
	struct fixture *f = *state;

	expect(f->port, "GET", "/healthz", 200, "ok");
	expect(f->port, "HEAD", "/healthz", 200, "");
}

static void test_probes__readyz_without_callback_is_ready(void **state)
{
	struct fixture *f = *state;

	expect(f->port, "GET", "/readyz", 200, "ok");
}

static void test_probes__readyz_follows_callback_with_reason(void **state)
{
	struct fixture *f = *state;

	probes_set_ready(f->p, ready_cb, f);
	expect(f->port, "GET", "/readyz", 503, "informer cache not synced");
	f->ready = true;
	expect(f->port, "GET", "/readyz", 200, "ok");
	probes_set_ready(f->p, silent_cb, NULL);
	expect(f->port, "GET", "/readyz", 503, "not ready");
}

static void test_probes__metrics_serves_registry(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	metrics_describe("probe_test_total", METRIC_COUNTER, "Probe test.", NULL, 0);
	metrics_add("probe_test_total", NULL, 7);
	assert_int_equal(http(f->port, "GET", "/metrics", NULL, 0, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/plain; version=0.0.4");
	assert_non_null(strstr(buf_cstr(&r.body), "# HELP probe_test_total Probe test.\n"
	                                          "# TYPE probe_test_total counter\n"
	                                          "probe_test_total 7\n"));
	buf_release(&r.body);
	/* The server counts what it answered, probes included. */
	assert_true(metrics_get("landlord_http_requests_total", "server=\"probe\",code=\"200\"") >=
	            1);
}

static void test_probes__other_methods_are_405(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	assert_int_equal(http(f->port, "POST", "/healthz", "x", 1, &r), CURLE_OK);
	assert_int_equal(r.status, 405);
	assert_string_equal(r.allow, "GET, HEAD");
	buf_release(&r.body);
	expect(f->port, "DELETE", "/metrics", 405, NULL);
	expect(f->port, "PUT", "/readyz", 405, NULL);
}

static void test_probes__unknown_path_is_404(void **state)
{
	struct fixture *f = *state;

	expect(f->port, "GET", "/nope", 404, NULL);
	expect(f->port, "GET", "/debug/echo/sub", 404, NULL);
	expect(f->port, "GET", "/debug/", 404, NULL);
	assert_int_equal(f->seen.calls, 0);
}

static void test_probes__hook_gets_method_query_and_args(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	assert_int_equal(
	        http(f->port, "POST", "/debug/echo?resource=v1%2Fpods&b=x%20y", "hi", 2, &r),
	        CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_cstr(&r.body), "{\"handled\":true}");
	assert_string_equal(r.content_type, "application/json");
	buf_release(&r.body);
	assert_int_equal(f->seen.calls, 1);
	assert_string_equal(f->seen.method, "POST");
	assert_string_equal(f->seen.query, "resource=v1%2Fpods&b=x%20y");
	assert_string_equal(f->seen.resource, "v1/pods");
	expect(f->port, "GET", "/debug/echo", 200, NULL);
	assert_int_equal(f->seen.calls, 2);
	assert_string_equal(f->seen.query, "");
}

static void test_probes__hooks_only_under_debug(void **state)
{
	struct http_server *s = http_server_new(NULL);
	struct probes *p = probes_new(s);
	struct seen seen = {0};

	assert_int_equal(probes_add_hook(p, "/healthz", hook, &seen), -EINVAL);
	assert_int_equal(probes_add_hook(p, "/debugger", hook, &seen), -EINVAL);
	assert_int_equal(probes_add_hook(p, "/debug/", hook, &seen), -EINVAL);
	assert_int_equal(probes_add_hook(p, "/debug/../metrics", hook, &seen), -EINVAL);
	assert_int_equal(probes_add_hook(p, "/debug/x", hook, &seen), 0);
	assert_int_equal(probes_add_hook(p, "/debug/x", hook, &seen), -EEXIST);
	http_server_free(s);
	probes_free(p);
}

static void test_probes__on_a_server_with_other_routes(void **state)
{
	struct http_server *s = http_server_new(NULL);
	struct probes *p = probes_new(s);
	struct seen seen = {0};

	assert_int_equal(http_server_route(s, &(struct http_route){.method = "POST",
	                                                           .path = "/validate",
	                                                           .fn = hook,
	                                                           .ud = &seen}),
	                 0);
	assert_int_equal(http_server_start(s, NULL), 0);
	expect(http_server_port(s), "GET", "/healthz", 200, "ok");
	expect(http_server_port(s), "POST", "/validate", 200, "{\"handled\":true}");
	assert_int_equal(seen.calls, 1);
	http_server_free(s);
	probes_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_probes__healthz_ok, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probes__readyz_without_callback_is_ready,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probes__readyz_follows_callback_with_reason,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probes__metrics_serves_registry, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_probes__other_methods_are_405, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_probes__unknown_path_is_404, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probes__hook_gets_method_query_and_args, setup,
	                                        teardown),
	        cmocka_unit_test(test_probes__hooks_only_under_debug),
	        cmocka_unit_test(test_probes__on_a_server_with_other_routes),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
