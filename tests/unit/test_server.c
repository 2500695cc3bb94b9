/* test_server.c - the shared HTTP server, exercised over loopback with libcurl. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "http/server.h"

#define SERVER_BODY_MAX 1024
#define WAIT_MAX_MS     20000 /* a guard against hanging, never an expectation */
#define PUSHES          2000

extern char **environ;

/* ---- client side ---- */

struct reply {
	CURLcode rc;
	long status;
	char allow[128];
	char x_echo[64];
	char content_type[64];
	char connection[32];
	struct buf body;
};

static size_t on_write(char *data, size_t size, size_t n, void *ud)
{
	return buf_append(ud, data, size * n) == 0 ? size * n : 0;
}

static void header_value(CURL *h, const char *name, char *out, size_t len)
{
	struct curl_header *hdr;

	out[0] = '\0';
	if (curl_easy_header(h, name, 0, CURLH_HEADER, -1, &hdr) == CURLHE_OK)
		snprintf(out, len, "%s", hdr->value);
}

struct request {
	const char *method;
	const char *url; /* absolute */
	const char *body;
	size_t body_len;
	const char *header; /* one extra request header, or NULL */
	const char *ca;     /* CA file for https */
};

/* One request on @h (reused for keep-alive); fills @r (release r->body). */
static void perform(CURL *h, const struct request *q, struct reply *r)
{
	struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
	char *ct = NULL;

	memset(r, 0, sizeof(*r));
	buf_init(&r->body, 8u << 20);
	if (q->header)
		hdrs = curl_slist_append(hdrs, q->header);
	curl_easy_setopt(h, CURLOPT_URL, q->url);
	if (strcmp(q->method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r->body);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MAX_MS);
	if (q->ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, q->ca);
	if (q->body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body_len);
	}
	r->rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	header_value(h, "Allow", r->allow, sizeof(r->allow));
	header_value(h, "X-Echo", r->x_echo, sizeof(r->x_echo));
	header_value(h, "Connection", r->connection, sizeof(r->connection));
	if (curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(r->content_type, sizeof(r->content_type), "%s", ct);
	curl_slist_free_all(hdrs);
	curl_easy_reset(h);
}

static void fetch(int port, const char *method, const char *target, const char *body,
                  size_t body_len, struct reply *r)
{
	CURL *h = curl_easy_init();
	char url[256];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, target);
	perform(h, &(struct request){method, url, body, body_len, NULL, NULL}, r);
	curl_easy_cleanup(h);
}

/* @method @target answers @status (and @body when not NULL). */
static void expect(int port, const char *method, const char *target, long status, const char *body)
{
	struct reply r;

	fetch(port, method, target, NULL, 0, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, status);
	if (body)
		assert_string_equal(buf_cstr(&r.body), body);
	buf_release(&r.body);
}

/* A request performed on a thread of its own, for streams. */
struct client {
	pthread_t thread;
	struct request q;
	char url[256];
	struct reply r;
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	CURL *h = curl_easy_init();

	perform(h, &c->q, &c->r);
	curl_easy_cleanup(h);
	return NULL;
}

static void client_start(struct client *c, int port, const char *target)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->url, sizeof(c->url), "http://127.0.0.1:%d%s", port, target);
	c->q = (struct request){.method = "GET", .url = c->url};
	assert_int_equal(pthread_create(&c->thread, NULL, client_main, c), 0);
}

static void client_join(struct client *c)
{
	pthread_join(c->thread, NULL);
}

/* ---- server side ---- */

enum stream_mode {
	STREAM_IDLE,    /* hand the stream to the test, push nothing */
	STREAM_PUSHES,  /* a producer thread pushes PUSHES lines, then ends */
	STREAM_CAPPED,  /* fill a 64-byte queue in the handler; the test waits for on_drain */
	STREAM_ONE_END, /* push "done\n" and end in the handler */
};

struct fixture {
	struct http_server *s;
	int port;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int small_calls;
	int header_rc[3];
	enum stream_mode mode;
	struct http_stream *st; /* the producer's reference, for the test */
	pthread_t producer;
	bool producer_started;
	int capped_push_rc[2];
	int drains;
	int closes;
	int close_reason;
	int slow_entered;
};

static int text(struct http_resp *resp, const char *s, int status)
{
	buf_append_str(http_resp_body(resp), s);
	return status;
}

static int h_exact(void *ud, struct http_req *req, struct http_resp *resp)
{
	return text(resp, "exact", 200);
}

static int h_prefix_a(void *ud, struct http_req *req, struct http_resp *resp)
{
	return text(resp, "prefix-a", 200);
}

static int h_prefix_ab(void *ud, struct http_req *req, struct http_resp *resp)
{
	return text(resp, "prefix-ab", 200);
}

static int h_post_abc(void *ud, struct http_req *req, struct http_resp *resp)
{
	return text(resp, "post-abc", 201);
}

static int h_put_abc(void *ud, struct http_req *req, struct http_resp *resp)
{
	return text(resp, "put-abc", 200);
}

static int h_echo(void *ud, struct http_req *req, struct http_resp *resp)
{
	const char *arg = http_req_arg(req, "x"), *hdr = http_req_header(req, "x-test");
	size_t len;
	const char *body = http_req_body(req, &len);

	buf_appendf(http_resp_body(resp), "%s|%s|%s|%s|%s|%zu|%s|%s", http_req_method(req),
	            http_req_path(req), http_req_query(req), arg ? arg : "-", hdr ? hdr : "-", len,
	            body, http_req_remote_addr(req));
	http_resp_header(resp, "X-Echo", "yes");
	return 200;
}

static int h_small(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct fixture *f = ud;

	f->small_calls++;
	return text(resp, "small", 200);
}

static int h_status(void *ud, struct http_req *req, struct http_resp *resp)
{
	const char *code = http_req_arg(req, "code");

	return code ? (int)strtol(code, NULL, 10) : 200;
}

static int h_headers(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct fixture *f = ud;

	f->header_rc[0] = http_resp_header(resp, "X-Split", "a\r\nSet-Cookie: evil=1");
	f->header_rc[1] = http_resp_header(resp, "Bad Name", "v");
	f->header_rc[2] = http_resp_header(resp, "Content-Type", "application/json");
	return text(resp, "{}", 200);
}

static void on_drain(void *ud)
{
	struct fixture *f = ud;

	pthread_mutex_lock(&f->mu);
	f->drains++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

static void on_close(void *ud, int reason)
{
	struct fixture *f = ud;

	pthread_mutex_lock(&f->mu);
	f->closes++;
	f->close_reason = reason;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

/* Waits until *@counter > 0; false after WAIT_MAX_MS (the test then fails). */
static bool wait_for(struct fixture *f, const int *counter)
{
	int64_t until = clock_mono_ns() + (int64_t)WAIT_MAX_MS * 1000000;
	bool ok;

	pthread_mutex_lock(&f->mu);
	while (*counter == 0 && clock_cond_wait_until(&f->cond, &f->mu, until) == 0)
		;
	ok = *counter != 0;
	pthread_mutex_unlock(&f->mu);
	return ok;
}

/* The producer's wait: for a drain after a refused push, consuming it. */
static void wait_drain(struct fixture *f)
{
	wait_for(f, &f->drains);
	pthread_mutex_lock(&f->mu);
	f->drains = 0;
	pthread_mutex_unlock(&f->mu);
}

static void *producer_main(void *arg)
{
	struct fixture *f = arg;
	char line[32];

	for (int i = 0; i < PUSHES; i++) {
		int n = snprintf(line, sizeof(line), "line %d\n", i), rc;

		while ((rc = http_stream_push(f->st, line, (size_t)n)) == -EMSGSIZE)
			wait_drain(f);
		if (rc != 0)
			break;
	}
	http_stream_end(f->st);
	return NULL;
}

static int h_stream(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct fixture *f = ud;
	struct http_stream_opts o = {.on_drain = on_drain, .on_close = on_close, .ud = f};
	char fill[64];

	o.queue_max = f->mode == STREAM_CAPPED ? sizeof(fill) : f->mode == STREAM_PUSHES ? 4096 : 0;
	pthread_mutex_lock(&f->mu);
	f->st = http_resp_stream(resp, &o);
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	if (f->mode == STREAM_PUSHES)
		f->producer_started = pthread_create(&f->producer, NULL, producer_main, f) == 0;
	if (f->mode == STREAM_CAPPED) {
		memset(fill, 'x', sizeof(fill));
		f->capped_push_rc[0] = http_stream_push(f->st, fill, sizeof(fill));
		f->capped_push_rc[1] = http_stream_push(f->st, "y", 1);
	}
	if (f->mode == STREAM_ONE_END) {
		http_stream_push(f->st, "done\n", 5);
		http_stream_end(f->st);
		f->st = NULL;
	}
	http_resp_header(resp, "Content-Type", "application/json");
	return 200;
}

/* Answers after 300 ms, blocking the server thread: a request in flight for a while. */
static int h_slow(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct fixture *f = ud;

	pthread_mutex_lock(&f->mu);
	f->slow_entered++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
	return text(resp, "slow", 200);
}

static void add_routes(struct fixture *f)
{
	const struct http_route routes[] = {
	        {"GET", "/exact", false, 0, h_exact, f},
	        {NULL, "/a/", true, 0, h_prefix_a, f},
	        {NULL, "/a/b/", true, 0, h_prefix_ab, f},
	        {"POST", "/m/abc", false, 0, h_post_abc, f},
	        {"PUT", "/m/abc", false, 0, h_put_abc, f},
	        {"GET", "/m/", true, 0, h_exact, f},
	        {NULL, "/echo", false, 0, h_echo, f},
	        {"POST", "/small", false, 16, h_small, f},
	        {"POST", "/big", false, 4096, h_small, f},
	        {"GET", "/status", false, 0, h_status, f},
	        {"GET", "/headers", false, 0, h_headers, f},
	        {"GET", "/stream", false, 0, h_stream, f},
	        {NULL, "/slow", false, 0, h_slow, f},
	};

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		assert_int_equal(http_server_route(f->s, &routes[i]), 0);
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	pthread_mutex_init(&f->mu, NULL);
	clock_cond_init(&f->cond);
	f->s = http_server_new(
	        &(struct http_server_opts){.name = "test", .body_max = SERVER_BODY_MAX});
	add_routes(f);
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
	if (f->producer_started)
		pthread_join(f->producer, NULL);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->mu);
	free(f);
	metrics_reset_for_tests();
	return 0;
}

/* ---- tests ---- */

static void test_server__port_zero_reports_bound_port(void **state)
{
	struct fixture *f = *state;
	struct ll_err err;

	assert_true(f->port > 0);
	assert_int_equal(http_server_start(f->s, &err), -EALREADY);
	assert_int_equal(
	        http_server_route(f->s, &(struct http_route){.path = "/late", .fn = h_exact}),
	        -EALREADY);
}

static void test_server__route_registration_is_checked(void **state)
{
	struct http_server *s = http_server_new(NULL);

	assert_int_equal(http_server_route(s, &(struct http_route){.path = "x", .fn = h_exact}),
	                 -EINVAL);
	assert_int_equal(http_server_route(s, &(struct http_route){.path = "/x"}), -EINVAL);
	assert_int_equal(
	        http_server_route(s,
	                          &(struct http_route){.method = "", .path = "/x", .fn = h_exact}),
	        -EINVAL);
	assert_int_equal(http_server_route(s, &(struct http_route){.path = "/x", .fn = h_exact}),
	                 0);
	assert_int_equal(http_server_route(s, &(struct http_route){.path = "/x", .fn = h_exact}),
	                 -EEXIST);
	/* Same path, another kind or method: a different route. */
	assert_int_equal(
	        http_server_route(
	                s, &(struct http_route){.path = "/x", .prefix = true, .fn = h_exact}),
	        0);
	assert_int_equal(
	        http_server_route(
	                s, &(struct http_route){.method = "GET", .path = "/x", .fn = h_exact}),
	        0);
	http_server_free(s);
}

static void test_server__exact_beats_prefix_and_longest_prefix_wins(void **state)
{
	struct fixture *f = *state;

	expect(f->port, "GET", "/exact", 200, "exact");
	expect(f->port, "GET", "/a/", 200, "prefix-a");
	expect(f->port, "GET", "/a/x/y", 200, "prefix-a");
	expect(f->port, "DELETE", "/a/b/", 200, "prefix-ab");
	expect(f->port, "GET", "/a/b/c", 200, "prefix-ab");
	expect(f->port, "GET", "/a", 404, NULL);
	expect(f->port, "GET", "/exactly", 404, NULL);
	/* An exact route that does not take the method gives way to a prefix that does. */
	expect(f->port, "GET", "/m/abc", 200, "exact");
}

static void test_server__head_is_answered_by_get_route(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	fetch(f->port, "HEAD", "/exact", NULL, 0, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body.len, 0);
	buf_release(&r.body);
}

static void test_server__unknown_path_404_wrong_method_405_with_allow(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	expect(f->port, "GET", "/nope", 404, "not found\n");
	fetch(f->port, "POST", "/exact", "x", 1, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(r.allow, "GET, HEAD");
	buf_release(&r.body);
	fetch(f->port, "PATCH", "/status", NULL, 0, &r);
	assert_int_equal(r.status, 405);
	buf_release(&r.body);
	fetch(f->port, "POST", "/m/abc", "x", 1, &r);
	assert_int_equal(r.status, 201);
	buf_release(&r.body);
	/* /m/abc: POST and PUT exactly, GET through the /m/ prefix. */
	fetch(f->port, "DELETE", "/m/abc", NULL, 0, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(r.allow, "POST, PUT, GET, HEAD");
	buf_release(&r.body);
}

static void test_server__handler_sees_method_path_query_headers_body_peer(void **state)
{
	struct fixture *f = *state;
	CURL *h = curl_easy_init();
	char url[256];
	struct reply r;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo?x=a%%20b&flag", f->port);
	perform(h, &(struct request){"PUT", url, "hello", 5, "X-Test: value 1", NULL}, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_cstr(&r.body),
	                    "PUT|/echo|x=a%20b&flag|a b|value 1|5|hello|127.0.0.1");
	assert_string_equal(r.x_echo, "yes");
	assert_string_equal(r.content_type, "text/plain; charset=utf-8");
	buf_release(&r.body);
	curl_easy_cleanup(h);
}

static void test_server__keepalive_connection_carries_second_request(void **state)
{
	struct fixture *f = *state;
	CURL *h = curl_easy_init();
	long conns = -1;
	char url[256];
	struct reply r;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo?x=1", f->port);
	perform(h, &(struct request){"POST", url, "first", 5, NULL, NULL}, &r);
	assert_int_equal(r.status, 200);
	buf_release(&r.body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo", f->port);
	perform(h, &(struct request){"GET", url, NULL, 0, NULL, NULL}, &r);
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns);
	assert_int_equal(conns, 0); /* the second request reused the connection */
	/* Nothing of the first request leaks into the second. */
	assert_string_equal(buf_cstr(&r.body), "GET|/echo||-|-|0||127.0.0.1");
	buf_release(&r.body);
	curl_easy_cleanup(h);
}

static void test_server__body_caps_per_server_and_route_413_without_handler(void **state)
{
	struct fixture *f = *state;
	char big[SERVER_BODY_MAX + 1];
	struct reply r;

	memset(big, 'b', sizeof(big));
	fetch(f->port, "POST", "/echo", big, SERVER_BODY_MAX, &r);
	assert_int_equal(r.status, 200);
	buf_release(&r.body);
	fetch(f->port, "POST", "/echo", big, SERVER_BODY_MAX + 1, &r);
	assert_int_equal(r.status, 413);
	buf_release(&r.body);
	fetch(f->port, "POST", "/small", big, 16, &r);
	assert_int_equal(r.status, 200);
	buf_release(&r.body);
	fetch(f->port, "POST", "/small", big, 17, &r);
	assert_int_equal(r.status, 413);
	buf_release(&r.body);
	assert_int_equal(f->small_calls, 1);
	/* A route may also raise the cap above the server's. */
	fetch(f->port, "POST", "/big", big, SERVER_BODY_MAX + 1, &r);
	assert_int_equal(r.status, 200);
	buf_release(&r.body);
	assert_int_equal(f->small_calls, 2);
	expect(f->port, "GET", "/exact", 200, "exact"); /* still serving */
}

static void test_server__status_outside_range_is_500(void **state)
{
	struct fixture *f = *state;

	expect(f->port, "GET", "/status?code=204", 204, NULL);
	expect(f->port, "GET", "/status?code=42", 500, NULL);
	expect(f->port, "GET", "/status?code=-22", 500, NULL);
}

static void test_server__headers_with_crlf_or_bad_names_refused(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	fetch(f->port, "GET", "/headers", NULL, 0, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/json");
	buf_release(&r.body);
	assert_int_equal(f->header_rc[0], -EINVAL);
	assert_int_equal(f->header_rc[1], -EINVAL);
	assert_int_equal(f->header_rc[2], 0);
}

static void test_server__metrics_count_requests_by_code(void **state)
{
	struct fixture *f = *state;

	expect(f->port, "GET", "/exact", 200, NULL);
	expect(f->port, "GET", "/nope", 404, NULL);
	expect(f->port, "GET", "/nope", 404, NULL);
	assert_int_equal(
	        metrics_get("landlord_http_requests_total", "server=\"test\",code=\"200\""), 1);
	assert_int_equal(
	        metrics_get("landlord_http_requests_total", "server=\"test\",code=\"404\""), 2);
	assert_int_equal(metrics_get("landlord_http_request_duration_seconds", "server=\"test\""),
	                 3);
}

static void test_server__start_errors_are_reported(void **state)
{
	struct fixture *f = *state;
	struct http_server *s = http_server_new(&(struct http_server_opts){.port = f->port});
	char want[128];
	struct ll_err err;

	assert_int_equal(http_server_start(s, &err), -EADDRINUSE);
	snprintf(want, sizeof(want), "port %d on 127.0.0.1 is in use: ", f->port);
	assert_memory_equal(err.msg, want, strlen(want));
	http_server_free(s);

	s = http_server_new(&(struct http_server_opts){.addr = "localhost"});
	assert_int_equal(http_server_start(s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "localhost"));
	http_server_free(s);
	s = http_server_new(&(struct http_server_opts){.port = 70000});
	assert_int_equal(http_server_start(s, &err), -EINVAL);
	http_server_free(s);
	s = http_server_new(&(struct http_server_opts){.addr = "192.0.2.1"}); /* not ours */
	assert_int_equal(http_server_start(s, &err), -EINVAL);
	http_server_free(s);
	s = http_server_new(&(struct http_server_opts){.cert_pem = "not a certificate",
	                                               .key_pem = "nor a key"});
	assert_int_equal(http_server_start(s, &err), -EIO);
	http_server_free(s);
}

static void test_server__free_stops_serving(void **state)
{
	struct http_server *s = http_server_new(NULL);
	int port;
	struct reply r;

	assert_int_equal(http_server_route(s, &(struct http_route){.path = "/", .fn = h_exact}), 0);
	assert_int_equal(http_server_start(s, NULL), 0);
	port = http_server_port(s);
	expect(port, "GET", "/", 200, "exact");
	http_server_free(s);
	fetch(port, "GET", "/", NULL, 0, &r);
	assert_int_equal(r.rc, CURLE_COULDNT_CONNECT);
	buf_release(&r.body);
}

static bool have_ipv6_loopback(void)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

static void test_server__ipv6_literal(void **state)
{
	struct http_server *s;
	char url[128];
	CURL *h;
	struct reply r;

	if (!have_ipv6_loopback())
		skip();
	s = http_server_new(&(struct http_server_opts){.addr = "::1"});
	assert_int_equal(http_server_route(s, &(struct http_route){.path = "/echo", .fn = h_echo}),
	                 0);
	assert_int_equal(http_server_start(s, NULL), 0);
	assert_true(http_server_port(s) > 0);
	snprintf(url, sizeof(url), "http://[::1]:%d/echo", http_server_port(s));
	h = curl_easy_init();
	perform(h, &(struct request){"GET", url, NULL, 0, NULL, NULL}, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_cstr(&r.body), "GET|/echo||-|-|0||::1");
	buf_release(&r.body);
	curl_easy_cleanup(h);
	http_server_free(s);
}

/* A self-signed certificate for 127.0.0.1, made with the openssl CLI; 0 when made. */
static int make_cert(const char *dir, struct buf *cert, struct buf *key)
{
	char key_path[256], cert_path[256];
	char *argv[] = {"openssl",
	                "req",
	                "-x509",
	                "-newkey",
	                "ec",
	                "-pkeyopt",
	                "ec_paramgen_curve:prime256v1",
	                "-nodes",
	                "-days",
	                "1",
	                "-subj",
	                "/CN=127.0.0.1",
	                "-addext",
	                "subjectAltName=IP:127.0.0.1",
	                "-keyout",
	                key_path,
	                "-out",
	                cert_path,
	                NULL};
	int rc, status = -1;
	pid_t pid;

	snprintf(key_path, sizeof(key_path), "%s/key.pem", dir);
	snprintf(cert_path, sizeof(cert_path), "%s/cert.pem", dir);
	rc = posix_spawnp(&pid, "openssl", NULL, NULL, argv, environ);
	if (rc == 0 &&
	    (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
		rc = EIO;
	rc = rc ? -rc : buf_read_file(cert, cert_path, false);
	return rc ? rc : buf_read_file(key, key_path, false);
}

static void test_server__https_with_cert_and_key_in_memory(void **state)
{
	char dir[] = "/tmp/test_server_tls.XXXXXX", url[128], ca[256];
	struct buf cert = BUF_INIT(1 << 20), key = BUF_INIT(1 << 20);
	struct http_server *s;
	CURL *h;
	struct reply r;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(make_cert(dir, &cert, &key), 0);
	s = http_server_new(
	        &(struct http_server_opts){.cert_pem = buf_cstr(&cert), .key_pem = buf_cstr(&key)});
	assert_int_equal(http_server_route(s, &(struct http_route){.path = "/echo", .fn = h_echo}),
	                 0);
	assert_int_equal(http_server_start(s, NULL), 0);
	snprintf(ca, sizeof(ca), "%s/cert.pem", dir);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/echo?x=tls", http_server_port(s));
	h = curl_easy_init();
	perform(h, &(struct request){"GET", url, NULL, 0, NULL, ca}, &r);
	assert_int_equal(r.rc, CURLE_OK); /* the peer and its name were verified */
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_cstr(&r.body), "GET|/echo|x=tls|tls|-|0||127.0.0.1");
	buf_release(&r.body);
	/* Plain HTTP to a TLS port gets no answer. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo", http_server_port(s));
	perform(h, &(struct request){"GET", url, NULL, 0, NULL, NULL}, &r);
	assert_int_not_equal(r.status, 200);
	buf_release(&r.body);
	curl_easy_cleanup(h);
	http_server_free(s);
	buf_release(&cert);
	buf_release(&key);
	snprintf(url, sizeof(url), "%s/cert.pem", dir);
	unlink(url);
	snprintf(url, sizeof(url), "%s/key.pem", dir);
	unlink(url);
	rmdir(dir);
}

static void test_server__stream_delivers_pushes_from_another_thread_in_order(void **state)
{
	struct fixture *f = *state;
	struct buf want = BUF_INIT(1 << 20);
	struct client c;

	f->mode = STREAM_PUSHES;
	client_start(&c, f->port, "/stream");
	client_join(&c);
	assert_int_equal(c.r.rc, CURLE_OK);
	assert_int_equal(c.r.status, 200);
	assert_string_equal(c.r.content_type, "application/json");
	for (int i = 0; i < PUSHES; i++)
		buf_appendf(&want, "line %d\n", i);
	assert_int_equal(c.r.body.len, want.len);
	assert_string_equal(buf_cstr(&c.r.body), buf_cstr(&want));
	pthread_join(f->producer, NULL);
	f->producer_started = false;
	assert_int_equal(f->closes, 0); /* ended by the producer: no on_close */
	buf_release(&want);
	buf_release(&c.r.body);
}

static void test_server__stream_queue_cap_refuses_then_drains(void **state)
{
	struct fixture *f = *state;
	struct client c;

	f->mode = STREAM_CAPPED;
	client_start(&c, f->port, "/stream");
	assert_true(wait_for(f, &f->drains));
	assert_int_equal(f->capped_push_rc[0], 0);
	assert_int_equal(f->capped_push_rc[1], -EMSGSIZE);
	assert_int_equal(http_stream_push(f->st, "more", 4), 0);
	http_stream_end(f->st);
	client_join(&c);
	assert_int_equal(c.r.rc, CURLE_OK);
	assert_int_equal(c.r.body.len, 68);
	assert_string_equal(buf_cstr(&c.r.body) + 64, "more");
	assert_int_equal(f->drains, 1);
	assert_int_equal(f->closes, 0);
	buf_release(&c.r.body);
}

/* Connects with libcurl, sends a GET for @target and reads up to the end of the headers. */
static CURL *open_idle_stream(int port, const char *target)
{
	CURL *h = curl_easy_init();
	struct buf got = BUF_INIT(1 << 16);
	char url[128], req[256], chunk[512];
	curl_socket_t fd;
	size_t n;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &fd);
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", target);
	assert_int_equal(curl_easy_send(h, req, strlen(req), &n), CURLE_OK);
	assert_int_equal(n, strlen(req));
	while (strstr(buf_cstr(&got), "\r\n\r\n") == NULL) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		CURLcode rc;

		assert_true(poll(&p, 1, WAIT_MAX_MS) == 1);
		rc = curl_easy_recv(h, chunk, sizeof(chunk), &n);
		if (rc == CURLE_AGAIN)
			continue;
		assert_int_equal(rc, CURLE_OK);
		assert_true(n > 0);
		assert_int_equal(buf_append(&got, chunk, n), 0);
	}
	assert_memory_equal(buf_cstr(&got), "HTTP/1.1 200", 12);
	assert_non_null(strstr(buf_cstr(&got), "Transfer-Encoding: chunked"));
	buf_release(&got);
	return h;
}

static void test_server__client_hanging_up_on_idle_stream_is_noticed(void **state)
{
	struct fixture *f = *state;
	CURL *h;

	f->mode = STREAM_IDLE;
	h = open_idle_stream(f->port, "/stream");
	assert_non_null(f->st); /* the handler ran before the headers came back */
	curl_easy_cleanup(h);   /* hang up */
	assert_true(wait_for(f, &f->closes));
	assert_int_equal(f->close_reason, -EPIPE);
	assert_int_equal(http_stream_push(f->st, "late", 4), -EPIPE);
	http_stream_end(f->st);
	assert_int_equal(f->closes, 1);
	expect(f->port, "GET", "/exact", 200, "exact"); /* still serving */
}

static void test_server__free_closes_open_streams_with_ecanceled(void **state)
{
	struct fixture *f = *state;
	struct client c;

	f->mode = STREAM_IDLE;
	client_start(&c, f->port, "/stream");
	pthread_mutex_lock(&f->mu);
	while (f->st == NULL)
		pthread_cond_wait(&f->cond, &f->mu);
	pthread_mutex_unlock(&f->mu);
	http_server_free(f->s);
	f->s = NULL;
	assert_int_equal(f->closes, 1); /* before free returned */
	assert_int_equal(f->close_reason, -ECANCELED);
	assert_int_equal(http_stream_push(f->st, "late", 4), -ECANCELED);
	http_stream_end(f->st); /* the last reference: frees the stream */
	client_join(&c);
	assert_int_not_equal(c.r.rc, CURLE_OK); /* the body never ended */
	buf_release(&c.r.body);
}

static void test_server__ended_stream_never_closes_and_keeps_connection(void **state)
{
	struct fixture *f = *state;
	CURL *h = curl_easy_init();
	long conns = -1;
	char url[128];
	struct reply r;

	f->mode = STREAM_ONE_END;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/stream", f->port);
	perform(h, &(struct request){"GET", url, NULL, 0, NULL, NULL}, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_string_equal(buf_cstr(&r.body), "done\n");
	buf_release(&r.body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/exact", f->port);
	perform(h, &(struct request){"GET", url, NULL, 0, NULL, NULL}, &r);
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns);
	assert_int_equal(conns, 0);
	assert_string_equal(buf_cstr(&r.body), "exact");
	buf_release(&r.body);
	curl_easy_cleanup(h);
	http_server_free(f->s);
	f->s = NULL;
	assert_int_equal(f->closes, 0);
}

static void test_server__head_on_stream_route_closes_stream(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	f->mode = STREAM_IDLE;
	fetch(f->port, "HEAD", "/stream", NULL, 0, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 200);
	buf_release(&r.body);
	/* No body will ever be sent: the producer hears so and still ends once. */
	assert_true(wait_for(f, &f->closes));
	assert_int_equal(f->close_reason, -EPIPE);
	http_stream_end(f->st);
}

static void test_server__drain_closes_keepalive_connections_after_answering(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	fetch(f->port, "GET", "/exact", NULL, 0, &r);
	assert_string_equal(r.connection, "");
	buf_release(&r.body);
	http_server_drain(f->s);
	fetch(f->port, "GET", "/exact", NULL, 0, &r);
	assert_int_equal(r.status, 200); /* still accepted, and its connection closed after */
	assert_string_equal(r.connection, "close");
	buf_release(&r.body);
}

static void test_server__shutdown_answers_requests_in_flight_then_refuses(void **state)
{
	struct fixture *f = *state;
	struct client c;
	struct reply r;

	client_start(&c, f->port, "/slow");
	assert_true(wait_for(f, &f->slow_entered));
	assert_int_equal(http_server_shutdown(f->s, WAIT_MAX_MS), 0);
	client_join(&c);
	assert_int_equal(c.r.rc, CURLE_OK);
	assert_int_equal(c.r.status, 200);
	assert_string_equal(buf_cstr(&c.r.body), "slow");
	buf_release(&c.r.body);
	fetch(f->port, "GET", "/exact", NULL, 0, &r);
	assert_int_equal(r.rc, CURLE_COULDNT_CONNECT);
	buf_release(&r.body);
	assert_int_equal(http_server_shutdown(f->s, 0), 0); /* again: nothing left to wait for */
}

static void test_server__shutdown_gives_up_on_a_request_never_finished(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->port)};
	static const char get[] = "GET /exact HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char post[] = "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n";
	int fd = socket(AF_INET, SOCK_STREAM, 0), left = 0;
	int64_t until = clock_mono_ns() + (int64_t)WAIT_MAX_MS * 1000000;
	char answer[512];

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	/* One answered request: the server holds the connection before the test stops it. */
	assert_int_equal(write(fd, get, sizeof(get) - 1), (ssize_t)(sizeof(get) - 1));
	assert_true(read(fd, answer, sizeof(answer)) > 0);
	/* Then a body that never comes: the request stays in flight, and the wait is bounded. */
	assert_int_equal(write(fd, post, sizeof(post) - 1), (ssize_t)(sizeof(post) - 1));
	while (left == 0 && clock_mono_ns() < until)
		left = http_server_shutdown(f->s, 50);
	assert_int_equal(left, 1);
	close(fd);
}

static void test_server__every_nth_answer_closes_its_connection(void **state)
{
	struct http_server *s = http_server_new(&(struct http_server_opts){.close_every = 3});
	CURL *h = curl_easy_init();
	char url[256];
	struct reply r;

	assert_int_equal(http_server_route(s, &(struct http_route){.path = "/", .fn = h_exact}), 0);
	assert_int_equal(http_server_start(s, NULL), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", http_server_port(s));
	for (int i = 1; i <= 6; i++) {
		perform(h, &(struct request){"GET", url, NULL, 0, NULL, NULL}, &r);
		assert_int_equal(r.status, 200);
		assert_string_equal(r.connection, i % 3 == 0 ? "close" : "");
		buf_release(&r.body);
	}
	curl_easy_cleanup(h);
	http_server_free(s);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(test_server__##name, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(port_zero_reports_bound_port),
	        cmocka_unit_test(test_server__route_registration_is_checked),
	        T(exact_beats_prefix_and_longest_prefix_wins),
	        T(head_is_answered_by_get_route),
	        T(unknown_path_404_wrong_method_405_with_allow),
	        T(handler_sees_method_path_query_headers_body_peer),
	        T(keepalive_connection_carries_second_request),
	        T(body_caps_per_server_and_route_413_without_handler),
	        T(status_outside_range_is_500),
	        T(headers_with_crlf_or_bad_names_refused),
	        T(metrics_count_requests_by_code),
	        T(start_errors_are_reported),
	        cmocka_unit_test(test_server__free_stops_serving),
	        cmocka_unit_test(test_server__ipv6_literal),
	        cmocka_unit_test(test_server__https_with_cert_and_key_in_memory),
	        T(stream_delivers_pushes_from_another_thread_in_order),
	        T(stream_queue_cap_refuses_then_drains),
	        T(client_hanging_up_on_idle_stream_is_noticed),
	        T(free_closes_open_streams_with_ecanceled),
	        T(ended_stream_never_closes_and_keeps_connection),
	        T(head_on_stream_route_closes_stream),
	        T(drain_closes_keepalive_connections_after_answering),
	        cmocka_unit_test(test_server__every_nth_answer_closes_its_connection),
	        T(shutdown_answers_requests_in_flight_then_refuses),
	        T(shutdown_gives_up_on_a_request_never_finished),
	};
#undef T
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
