/* test_probe.c - the probe HTTP server, exercised over loopback with libcurl. */
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
#include "http/probe.h"

struct reply {
	long status;
	char content_type[64];
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
	size_t body_len;
	char body[64];
};

static int echo(void *ud, const char *method, const char *query, const char *body, struct buf *out)
{
	struct seen *s = ud;

	s->calls++;
	snprintf(s->method, sizeof(s->method), "%s", method);
	snprintf(s->query, sizeof(s->query), "%s", query);
	s->body_len = strlen(body);
	snprintf(s->body, sizeof(s->body), "%s", body);
	buf_append_str(out, "{\"handled\":true}");
	return 418;
}

static int broken(void *ud, const char *method, const char *query, const char *body,
                  struct buf *out)
{
	return 42;
}

struct fixture {
	struct probe *p;
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

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	f->p = probe_new(NULL, 0);
	probe_handle(f->p, "/debug/echo", echo, &f->seen);
	probe_handle(f->p, "/debug/broken", broken, NULL);
	if (probe_start(f->p) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	probe_free(f->p);
	free(f);
	metrics_reset_for_tests();
	return 0;
}

static void test_probe__start_on_port_zero_reports_bound_port(void **state)
{
	struct fixture *f = *state;

	assert_true(probe_port(f->p) > 0);
	assert_int_equal(probe_start(f->p), -EALREADY);
}

static void test_probe__healthz_ok(void **state)
{
	struct fixture *f = *state;

	expect(probe_port(f->p), "GET", "/healthz", 200, "ok");
	expect(probe_port(f->p), "HEAD", "/healthz", 200, "");
}

static void test_probe__readyz_without_callback_is_ready(void **state)
{
	struct fixture *f = *state;

	expect(probe_port(f->p), "GET", "/readyz", 200, "ok");
}

static void test_probe__readyz_follows_callback_with_reason(void **state)
{
	struct fixture *f = *state;

	probe_set_ready(f->p, ready_cb, f);
	expect(probe_port(f->p), "GET", "/readyz", 503, "informer cache not synced");
	f->ready = true;
	expect(probe_port(f->p), "GET", "/readyz", 200, "ok");
}

static void test_probe__metrics_serves_registry(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	metrics_describe("probe_test_total", METRIC_COUNTER, "Probe test.", NULL, 0);
	metrics_add("probe_test_total", NULL, 7);
	assert_int_equal(http(probe_port(f->p), "GET", "/metrics", NULL, 0, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/plain; version=0.0.4");
	assert_non_null(strstr(buf_cstr(&r.body), "# HELP probe_test_total Probe test.\n"
	                                          "# TYPE probe_test_total counter\n"
	                                          "probe_test_total 7\n"));
	buf_release(&r.body);
}

static void test_probe__builtin_paths_reject_other_methods(void **state)
{
	struct fixture *f = *state;

	expect(probe_port(f->p), "POST", "/healthz", 405, NULL);
	expect(probe_port(f->p), "DELETE", "/metrics", 405, NULL);
}

static void test_probe__unknown_path_is_404(void **state)
{
	struct fixture *f = *state;

	expect(probe_port(f->p), "GET", "/nope", 404, NULL);
	expect(probe_port(f->p), "GET", "/debug/echo/sub", 404, NULL);
	assert_int_equal(f->seen.calls, 0);
}

static void test_probe__handler_gets_method_query_body(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	assert_int_equal(
	        http(probe_port(f->p), "POST", "/debug/echo?a=1&b=x%20y&flag", "hello", 5, &r),
	        CURLE_OK);
	assert_int_equal(r.status, 418);
	assert_string_equal(buf_cstr(&r.body), "{\"handled\":true}");
	assert_string_equal(r.content_type, "application/json");
	buf_release(&r.body);
	assert_int_equal(f->seen.calls, 1);
	assert_string_equal(f->seen.method, "POST");
	assert_string_equal(f->seen.query, "a=1&b=x%20y&flag");
	assert_string_equal(f->seen.body, "hello");

	expect(probe_port(f->p), "PUT", "/debug/echo", 418, NULL);
	assert_int_equal(f->seen.calls, 2);
	assert_string_equal(f->seen.method, "PUT");
	assert_string_equal(f->seen.query, "");
	assert_string_equal(f->seen.body, "");
}

static void test_probe__keepalive_requests_do_not_share_state(void **state)
{
	struct fixture *f = *state;
	CURL *h = curl_easy_init();
	long conns = -1;
	struct reply r;

	assert_int_equal(http_on(h, probe_port(f->p), "POST", "/debug/echo?x=1", "first", 5, &r),
	                 CURLE_OK);
	buf_release(&r.body);
	assert_int_equal(http_on(h, probe_port(f->p), "GET", "/debug/echo", NULL, 0, &r), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns);
	assert_int_equal(conns, 0); /* the second request reused the connection */
	assert_int_equal(r.status, 418);
	buf_release(&r.body);
	assert_int_equal(f->seen.calls, 2);
	assert_string_equal(f->seen.method, "GET");
	assert_string_equal(f->seen.query, "");
	assert_string_equal(f->seen.body, "");
	curl_easy_cleanup(h);
}

static void test_probe__handler_status_out_of_range_is_500(void **state)
{
	struct fixture *f = *state;

	expect(probe_port(f->p), "GET", "/debug/broken", 500, NULL);
}

static void test_probe__body_at_cap_accepted_over_cap_413(void **state)
{
	struct fixture *f = *state;
	char *big = xmalloc(PROBE_BODY_MAX + 1);
	struct reply r;

	memset(big, 'x', PROBE_BODY_MAX + 1);
	assert_int_equal(http(probe_port(f->p), "POST", "/debug/echo", big, PROBE_BODY_MAX, &r),
	                 CURLE_OK);
	assert_int_equal(r.status, 418);
	assert_int_equal(f->seen.body_len, PROBE_BODY_MAX);
	buf_release(&r.body);

	assert_int_equal(http(probe_port(f->p), "POST", "/debug/echo", big, PROBE_BODY_MAX + 1, &r),
	                 CURLE_OK);
	assert_int_equal(r.status, 413);
	assert_int_equal(f->seen.calls, 1);
	buf_release(&r.body);
	free(big);

	/* The server is still serving after a rejected upload. */
	expect(probe_port(f->p), "GET", "/healthz", 200, "ok");
}

static void test_probe__body_max_is_configurable(void **state)
{
	struct probe *p = probe_new(NULL, 0);
	struct seen seen = {0};
	char big[300];
	struct reply r;

	memset(big, 'y', sizeof(big));
	probe_set_body_max(p, 256);
	probe_handle(p, "/echo", echo, &seen);
	assert_int_equal(probe_start(p), 0);
	assert_int_equal(http(probe_port(p), "POST", "/echo", big, 256, &r), CURLE_OK);
	assert_int_equal(r.status, 418);
	buf_release(&r.body);
	assert_int_equal(http(probe_port(p), "POST", "/echo", big, 257, &r), CURLE_OK);
	assert_int_equal(r.status, 413);
	assert_int_equal(seen.calls, 1);
	buf_release(&r.body);
	probe_free(p);
}

static void test_probe__free_stops_server(void **state)
{
	struct probe *p = probe_new("127.0.0.1", 0);
	struct reply r;
	int port;

	assert_int_equal(probe_start(p), 0);
	port = probe_port(p);
	expect(port, "GET", "/healthz", 200, "ok");
	probe_free(p);
	assert_int_equal(http(port, "GET", "/healthz", NULL, 0, &r), CURLE_COULDNT_CONNECT);
	buf_release(&r.body);
}

static void test_probe__port_in_use_is_eaddrinuse(void **state)
{
	struct fixture *f = *state;
	struct probe *p = probe_new(NULL, probe_port(f->p));

	assert_int_equal(probe_start(p), -EADDRINUSE);
	probe_free(p);
}

static void test_probe__bad_address_is_einval(void **state)
{
	struct probe *p = probe_new("localhost", 0);

	assert_int_equal(probe_start(p), -EINVAL);
	probe_free(p);
	p = probe_new(NULL, 70000);
	assert_int_equal(probe_start(p), -EINVAL);
	probe_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_probe__start_on_port_zero_reports_bound_port,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probe__healthz_ok, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probe__readyz_without_callback_is_ready, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_probe__readyz_follows_callback_with_reason,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probe__metrics_serves_registry, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_probe__builtin_paths_reject_other_methods,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probe__unknown_path_is_404, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probe__handler_gets_method_query_body, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_probe__keepalive_requests_do_not_share_state,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probe__handler_status_out_of_range_is_500,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probe__body_at_cap_accepted_over_cap_413,
	                                        setup, teardown),
	        cmocka_unit_test(test_probe__body_max_is_configurable),
	        cmocka_unit_test(test_probe__free_stops_server),
	        cmocka_unit_test_setup_teardown(test_probe__port_in_use_is_eaddrinuse, setup,
	                                        teardown),
	        cmocka_unit_test(test_probe__bad_address_is_einval),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
