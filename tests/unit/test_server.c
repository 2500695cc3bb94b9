/*
 * test_server.c - the shared HTTP server, exercised over loopback with libcurl: routing,
 * bodies, streams, shutdown; client certificates handed to handlers (certificates from the
 * openssl CLI: this suite links the http layer only, not src/pki); 101 upgrades into tunnels
 * that a thread of the test echoes, over TLS and plain HTTP: the client leaving, the caller
 * closing, the server freed while a tunnel is open.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
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
	/* upgrades (/exec) */
	int up_answer; /* what h_exec returns; 0: 101 */
	int up_rc[6];  /* http_resp_upgrade() on bad arguments, then twice on good ones */
	int up_calls;  /* on_upgraded() calls */
	int up_fd;     /* its fd (or -errno) */
	struct http_upgraded *u;
	pthread_t echo; /* echoes the tunnel, then closes it */
	bool echo_started;
	bool hold_close;     /* the echo thread waits for this to clear before closing */
	struct buf received; /* what the echo read (not the early bytes) */
	bool quit_on_quit;   /* the echo ends after echoing "quit" */
	int echo_done;       /* the echo loop ended */
	bool echo_eof;       /* ... on end of file, not an error */
	int tunnel_closes;
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

/* Occurrences of @needle in @hay, case aside. */
static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strcasestr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static int h_peer(void *ud, struct http_req *req, struct http_resp *resp)
{
	const char *pem = http_req_peer_cert(req);

	if (pem && http_req_peer_cert(req) != pem)
		return text(resp, "made twice", 500);
	return text(resp, pem ? pem : "none", 200);
}

/* Writes all of @len bytes to the non-blocking @fd; false on an error. */
static bool echo_write(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		struct pollfd w = {.fd = fd, .events = POLLOUT};

		if (n < 0 && errno == EAGAIN && poll(&w, 1, WAIT_MAX_MS) == 1)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* Reads what comes into f->received, echoing it while the way back is open; 0 at the end. */
static ssize_t echo_loop(struct fixture *f)
{
	char chunk[4096];
	bool echo = true;
	ssize_t n = -1;

	for (;;) {
		struct pollfd p = {.fd = f->up_fd, .events = POLLIN};

		if (poll(&p, 1, WAIT_MAX_MS) != 1)
			return -1;
		n = read(f->up_fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EAGAIN)
			continue;
		if (n <= 0)
			return n;
		pthread_mutex_lock(&f->mu);
		buf_append(&f->received, chunk, (size_t)n);
		pthread_mutex_unlock(&f->mu);
		echo = echo && echo_write(f->up_fd, chunk, (size_t)n);
		if (f->quit_on_quit && memmem(chunk, (size_t)n, "quit", 4))
			return 0; /* the caller ends the tunnel itself */
	}
}

/* The caller's side of a tunnel: echo what comes, the early bytes first, until the end. */
static void *echo_main(void *arg)
{
	struct fixture *f = arg;
	size_t early_len;
	const char *early = http_upgraded_early(f->u, &early_len);
	ssize_t n = echo_write(f->up_fd, early, early_len) ? echo_loop(f) : -1;

	pthread_mutex_lock(&f->mu);
	f->echo_eof = n == 0;
	f->echo_done++;
	pthread_cond_broadcast(&f->cond);
	while (f->hold_close)
		pthread_cond_wait(&f->cond, &f->mu);
	pthread_mutex_unlock(&f->mu);
	http_upgraded_close(f->u);
	pthread_mutex_lock(&f->mu);
	f->tunnel_closes++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* On the server thread: must not block, so the echo gets a thread of its own. */
static void on_upgraded(void *ud, int fd, struct http_upgraded *u)
{
	struct fixture *f = ud;

	pthread_mutex_lock(&f->mu);
	f->up_calls++;
	f->up_fd = fd;
	f->u = u;
	if (fd >= 0)
		f->echo_started = pthread_create(&f->echo, NULL, echo_main, f) == 0;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

/* kubectl's exec: SPDY/3.1 asked for with Connection: Upgrade, and a stream protocol. */
static int h_exec(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct fixture *f = ud;
	const char *up = http_req_header(req, "Upgrade"),
	           *conn = http_req_header(req, "Connection");

	if (up == NULL || strcasecmp(up, "SPDY/3.1") != 0 || conn == NULL ||
	    strcasestr(conn, "upgrade") == NULL)
		return text(resp, "upgrade to SPDY/3.1 expected\n", 400);
	f->up_rc[0] = http_resp_upgrade(resp, "", on_upgraded, f);
	f->up_rc[1] = http_resp_upgrade(resp, "SPDY /3.1", on_upgraded, f);
	f->up_rc[2] = http_resp_upgrade(resp, "SPDY/", on_upgraded, f);
	f->up_rc[3] = http_resp_upgrade(resp, "SPDY/3.1", NULL, f);
	f->up_rc[4] = http_resp_upgrade(resp, "SPDY/3.1", on_upgraded, f);
	f->up_rc[5] = http_resp_upgrade(resp, "websocket", on_upgraded, f);
	http_resp_header(resp, "X-Stream-Protocol-Version", "v4.channel.k8s.io");
	http_resp_header(resp, "Connection", "Upgrade"); /* libmicrohttpd's: not sent twice */
	buf_append_str(http_resp_body(resp), "a 101 has no body");
	return f->up_answer ? f->up_answer : 101;
}

static int h_bad101(void *ud, struct http_req *req, struct http_resp *resp)
{
	return 101; /* without http_resp_upgrade() */
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
	        {"GET", "/peer", false, 0, h_peer, f},
	        {"GET", "/exec", false, 0, h_exec, f},
	        {"GET", "/bad101", false, 0, h_bad101, f},
	};

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		assert_int_equal(http_server_route(f->s, &routes[i]), 0);
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	pthread_mutex_init(&f->mu, NULL);
	clock_cond_init(&f->cond);
	f->received = (struct buf)BUF_INIT(1 << 16);
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
	pthread_mutex_lock(&f->mu);
	f->hold_close = false;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	if (f->echo_started)
		pthread_join(f->echo, NULL);
	buf_release(&f->received);
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

/* ---- client certificates ---- */

/*
 * ca1 signs the server's two pairs (s1, s2, for 127.0.0.1), alice's client certificate and an
 * expired one (old); ca2, which the server does not know, signs mallory's. alice-chain.pem is
 * alice's certificate followed by ca1's, as a client sends a chain; alice-long.pem repeats ca1
 * nine times, a chain of ten.
 */
static const char MAKE_PKI[] =
        "set -e; cd \"$0\"; k='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';"
        " printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > srv.ext;"
        " printf 'extendedKeyUsage=clientAuth\\n' > cli.ext;"
        " for ca in ca1 ca2; do"
        "  openssl req -x509 $k -days 2 -subj /CN=$ca -keyout $ca.key -out $ca.pem 2>/dev/null;"
        " done;"
        " issue() { openssl req $k -subj /CN=$1 -keyout $1.key -out $1.csr 2>/dev/null;"
        "  openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -days $3"
        "  -extfile $4 -out $1.pem 2>/dev/null; };"
        " issue s1 ca1 1 srv.ext; issue s2 ca1 1 srv.ext; issue alice ca1 1 cli.ext;"
        " issue old ca1 -1 cli.ext; issue mallory ca2 1 cli.ext;"
        " cat alice.pem ca1.pem > alice-chain.pem;"
        " cat alice.pem ca1.pem ca1.pem ca1.pem ca1.pem ca1.pem ca1.pem ca1.pem ca1.pem ca1.pem"
        " > alice-long.pem";

static char pki_dir[64]; /* made once, by the first test that needs it; removed by main() */

/* Runs @script with $0 = @arg; true when it exits 0. */
static bool run_sh(const char *script, const char *arg)
{
	char *argv[] = {"sh", "-c", (char *)script, (char *)arg, NULL};
	int status = -1;
	pid_t pid;

	return posix_spawnp(&pid, "sh", NULL, NULL, argv, environ) == 0 &&
	       waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void pki_path(char *out, size_t len, const char *name)
{
	if (pki_dir[0] == '\0') {
		snprintf(pki_dir, sizeof(pki_dir), "/tmp/test_server_pki.XXXXXX");
		assert_non_null(mkdtemp(pki_dir));
		assert_true(run_sh(MAKE_PKI, pki_dir));
	}
	snprintf(out, len, "%s/%s", pki_dir, name);
}

static void pki_read(struct buf *b, const char *name)
{
	char path[128];

	pki_path(path, sizeof(path), name);
	*b = (struct buf)BUF_INIT(1 << 16);
	assert_int_equal(buf_read_file(b, path, false), 0);
}

/* A TLS server (s1) with the fixture's routes; ca1 names acceptable client CAs if @client_ca. */
static void start_tls(struct fixture *f, bool client_ca)
{
	struct buf cert, key, ca;

	pki_read(&cert, "s1.pem");
	pki_read(&key, "s1.key");
	pki_read(&ca, "ca1.pem");
	f->s = http_server_new(&(struct http_server_opts){
	        .name = "tls",
	        .cert_pem = buf_cstr(&cert),
	        .key_pem = buf_cstr(&key),
	        .client_ca_pem = client_ca ? buf_cstr(&ca) : NULL,
	});
	add_routes(f);
	assert_int_equal(http_server_start(f->s, NULL), 0);
	f->port = http_server_port(f->s);
	buf_release(&cert);
	buf_release(&key);
	buf_release(&ca);
}

static int setup_tls(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	pthread_mutex_init(&f->mu, NULL);
	clock_cond_init(&f->cond);
	f->received = (struct buf)BUF_INIT(1 << 16);
	start_tls(f, true);
	*state = f;
	return 0;
}

/* GET @target over TLS (ca1 trusted), presenting @cert and @key (files of the pki; NULL: none). */
static void fetch_tls(int port, const char *target, const char *cert, const char *key,
                      struct reply *r)
{
	char url[128], ca[128], cert_path[128], key_path[128];
	CURL *h = curl_easy_init();

	snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, target);
	pki_path(ca, sizeof(ca), "ca1.pem");
	if (cert) {
		pki_path(cert_path, sizeof(cert_path), cert);
		pki_path(key_path, sizeof(key_path), key);
		curl_easy_setopt(h, CURLOPT_SSLCERT, cert_path);
		curl_easy_setopt(h, CURLOPT_SSLKEY, key_path);
	}
	perform(h, &(struct request){"GET", url, NULL, 0, NULL, ca}, r);
	curl_easy_cleanup(h);
}

/*
 * /peer over TLS with @cert answers 200 with @want (a PEM file of the pki, or "none"), or with
 * text that starts with it unless @whole: an OpenSSL client sends its certificate's issuer too
 * when its trust store holds it (alice's, not mallory's).
 */
static void expect_peer(int port, const char *cert, const char *key, const char *want, bool whole)
{
	struct buf pem = BUF_INIT(1 << 16);
	struct reply r;

	if (strcmp(want, "none") == 0)
		buf_append_str(&pem, want);
	else
		pki_read(&pem, want);
	fetch_tls(port, "/peer", cert, key, &r);
	assert_int_equal(r.rc, CURLE_OK); /* the handshake succeeded, whatever was presented */
	assert_int_equal(r.status, 200);
	if (whole)
		assert_int_equal(r.body.len, pem.len);
	assert_true(r.body.len >= pem.len);
	assert_memory_equal(buf_cstr(&r.body), buf_cstr(&pem), pem.len); /* the leaf first */
	buf_release(&r.body);
	buf_release(&pem);
}

/* A chain of ten: the handler gets the first HTTP_PEER_CHAIN_MAX, alice's first. */
static void expect_peer_chain_capped(int port)
{
	struct buf leaf;
	struct reply r;

	pki_read(&leaf, "alice.pem");
	fetch_tls(port, "/peer", "alice-long.pem", "alice.key", &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_int_equal(count(buf_cstr(&r.body), "-----BEGIN CERTIFICATE-----"),
	                 HTTP_PEER_CHAIN_MAX);
	assert_memory_equal(buf_cstr(&r.body), buf_cstr(&leaf), leaf.len);
	buf_release(&r.body);
	buf_release(&leaf);
}

static void test_server__client_certificate_reaches_handler_as_pem(void **state)
{
	struct fixture *f = *state;
	struct buf cert, key;

	expect_peer(f->port, "alice.pem", "alice.key", "alice.pem", false);
	expect_peer(f->port, "alice-chain.pem", "alice.key", "alice-chain.pem",
	            true); /* leaf first */
	expect_peer(f->port, NULL, NULL, "none", true);
	/* Not judged: another CA's certificate and an expired one get through the handshake. */
	expect_peer(f->port, "mallory.pem", "mallory.key", "mallory.pem", true);
	expect_peer(f->port, "old.pem", "old.key", "old.pem", false);
	expect_peer_chain_capped(f->port);
	/* The served pair swapped by the certificate callback: client certificates still come. */
	pki_read(&cert, "s2.pem");
	pki_read(&key, "s2.key");
	assert_int_equal(http_server_set_cert(f->s, buf_cstr(&cert), buf_cstr(&key), NULL), 0);
	expect_peer(f->port, "alice.pem", "alice.key", "alice.pem", false);
	expect_peer(f->port, NULL, NULL, "none", true);
	buf_release(&cert);
	buf_release(&key);
}

static void test_server__no_client_certificate_without_client_ca_or_tls(void **state)
{
	struct fixture *f = *state;

	expect(f->port, "GET", "/peer", 200, "none"); /* plain HTTP */
	http_server_free(f->s);
	start_tls(f, false); /* no certificate requested: the client sends none */
	expect_peer(f->port, "alice.pem", "alice.key", "none", true);
}

static void test_server__client_ca_needs_tls_and_must_load(void **state)
{
	struct buf cert, key, ca;
	struct http_server *s;
	struct ll_err err;

	pki_read(&cert, "s1.pem");
	pki_read(&key, "s1.key");
	pki_read(&ca, "ca1.pem");
	s = http_server_new(&(struct http_server_opts){.client_ca_pem = buf_cstr(&ca)});
	assert_int_equal(http_server_start(s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no TLS pair"));
	http_server_free(s);
	s = http_server_new(&(struct http_server_opts){.cert_pem = buf_cstr(&cert),
	                                               .key_pem = buf_cstr(&key),
	                                               .client_ca_pem = "not a bundle"});
	assert_int_equal(http_server_start(s, &err), -EIO);
	assert_non_null(strstr(err.msg, "client CA bundle"));
	http_server_free(s);
	buf_release(&cert);
	buf_release(&key);
	buf_release(&ca);
}

/* ---- upgrades ---- */

/* A raw connection (TLS trusting ca1, or plain) through libcurl, for bytes after a 101. */
static CURL *raw_open(int port, bool tls)
{
	CURL *h = curl_easy_init();
	char url[128], ca[128];

	snprintf(url, sizeof(url), "%s://127.0.0.1:%d", tls ? "https" : "http", port);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	if (tls) {
		pki_path(ca, sizeof(ca), "ca1.pem");
		curl_easy_setopt(h, CURLOPT_CAINFO, ca);
	}
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	return h;
}

static void raw_send(CURL *h, const char *data)
{
	size_t len = strlen(data), n;

	while (len > 0) {
		CURLcode rc = curl_easy_send(h, data, len, &n);

		if (rc == CURLE_AGAIN)
			continue;
		assert_int_equal(rc, CURLE_OK);
		data += n;
		len -= n;
	}
}

/* Appends what comes to @got until it holds @needle; false at the end of the stream. */
static bool raw_recv_until(CURL *h, struct buf *got, const char *needle)
{
	curl_socket_t fd;
	char chunk[4096];
	size_t n;

	curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &fd);
	while (strstr(buf_cstr(got), needle) == NULL) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		CURLcode rc = curl_easy_recv(h, chunk, sizeof(chunk), &n);

		if (rc == CURLE_AGAIN) {
			assert_true(poll(&p, 1, WAIT_MAX_MS) == 1);
			continue;
		}
		if (rc != CURLE_OK || n == 0)
			return false;
		assert_int_equal(buf_append(got, chunk, n), 0);
	}
	return true;
}

/* Upgrades /exec to SPDY/3.1 with "early!" right behind the request; checks the 101. */
static CURL *open_tunnel(struct fixture *f, bool tls)
{
	static const char req[] = "GET /exec HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
	                          "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: "
	                          "v4.channel.k8s.io\r\n\r\nearly!";
	struct buf got = BUF_INIT(1 << 16);
	CURL *h = raw_open(f->port, tls);
	const char *head;

	raw_send(h, req);
	assert_true(raw_recv_until(h, &got, "\r\n\r\n"));
	head = buf_cstr(&got);
	assert_memory_equal(head, "HTTP/1.1 101 ", 13);
	assert_non_null(strstr(head, "\r\nUpgrade: SPDY/3.1\r\n"));
	assert_non_null(strstr(head, "\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"));
	assert_int_equal(count(head, "\r\nConnection:"), 1);
	assert_non_null(
	        strcasestr(head, "\r\nConnection: Upgrade\r\n")); /* not "Upgrade, Upgrade" */
	assert_null(strcasestr(head, "Content-Type"));
	assert_null(strstr(head, "a 101 has no body"));
	assert_true(raw_recv_until(h, &got, "\r\n\r\nearly!")); /* the early bytes, echoed */
	assert_true(wait_for(f, &f->up_calls));
	assert_true(f->up_fd >= 0);
	assert_int_equal(f->up_rc[0], -EINVAL);
	assert_int_equal(f->up_rc[1], -EINVAL);
	assert_int_equal(f->up_rc[2], -EINVAL);
	assert_int_equal(f->up_rc[3], -EINVAL);
	assert_int_equal(f->up_rc[4], 0);
	assert_int_equal(f->up_rc[5], -EALREADY);
	buf_release(&got);
	return h;
}

static void echo_round_trip(CURL *h, const char *msg)
{
	struct buf got = BUF_INIT(1 << 16);

	raw_send(h, msg);
	assert_true(raw_recv_until(h, &got, msg));
	assert_string_equal(buf_cstr(&got), msg);
	buf_release(&got);
}

static void tunnel_echoes_then_closes(struct fixture *f, bool tls)
{
	CURL *h = open_tunnel(f, tls);
	struct reply r;

	echo_round_trip(h, "hello tunnel");
	echo_round_trip(h, "and again");
	curl_easy_cleanup(h); /* the client leaves: the echo reads the end and closes */
	assert_true(wait_for(f, &f->tunnel_closes));
	assert_true(f->echo_eof);
	if (tls) { /* still serving, with client certificates */
		expect_peer(f->port, "alice.pem", "alice.key", "alice.pem", false);
		return;
	}
	fetch(f->port, "GET", "/exact", NULL, 0, &r);
	assert_int_equal(r.status, 200);
	buf_release(&r.body);
}

static void test_server__upgrade_tunnels_bytes_over_tls(void **state)
{
	tunnel_echoes_then_closes(*state, true);
}

/*
 * A TLS client that sends and leaves at once: libmicrohttpd alone would never tell the caller
 * (the watcher does), and what the client sent last still reaches the caller before the end.
 */
static void test_server__tls_client_leaving_is_seen_after_its_last_bytes(void **state)
{
	struct fixture *f = *state;
	CURL *h = open_tunnel(f, true);

	raw_send(h, "last words");
	curl_easy_cleanup(h);
	assert_true(wait_for(f, &f->tunnel_closes));
	assert_true(f->echo_eof);
	assert_string_equal(buf_cstr(&f->received), "last words");
}

static void test_server__upgrade_tunnels_bytes_over_plain_http(void **state)
{
	tunnel_echoes_then_closes(*state, false);
}

/* The caller closes first: what it wrote reaches the client, then the connection ends. */
static void caller_closes_tunnel(struct fixture *f, bool tls)
{
	struct buf got = BUF_INIT(1 << 16);
	CURL *h;

	f->quit_on_quit = true;
	h = open_tunnel(f, tls);
	raw_send(h, "quit");
	assert_false(raw_recv_until(h, &got, "never"));
	assert_string_equal(buf_cstr(&got), "quit");
	assert_true(wait_for(f, &f->tunnel_closes));
	curl_easy_cleanup(h);
	buf_release(&got);
}

static void test_server__caller_closing_tunnel_ends_connection_over_tls(void **state)
{
	caller_closes_tunnel(*state, true);
}

static void test_server__caller_closing_tunnel_ends_connection_over_plain_http(void **state)
{
	caller_closes_tunnel(*state, false);
}

/*
 * Freed with a tunnel open: the caller's thread reads the end of its stream, and its
 * descriptor and handle stay its own until its http_upgraded_close(), after the server is gone.
 */
static void free_with_open_tunnel(struct fixture *f, bool tls)
{
	struct buf got = BUF_INIT(1 << 16);
	CURL *h;

	f->hold_close = true;
	h = open_tunnel(f, tls);
	echo_round_trip(h, "ping");
	assert_int_equal(http_server_shutdown(f->s, 0), 0); /* a tunnel is not in flight */
	http_server_free(f->s);
	f->s = NULL;
	assert_true(wait_for(f, &f->echo_done));
	assert_true(f->echo_eof);
	assert_int_equal(f->tunnel_closes,
	                 0); /* free returned with the tunnel still the caller's */
	assert_false(raw_recv_until(h, &got, "never")); /* the client sees the end too */
	pthread_mutex_lock(&f->mu);
	f->hold_close = false;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	assert_true(wait_for(f, &f->tunnel_closes));
	curl_easy_cleanup(h);
	buf_release(&got);
}

static void test_server__free_with_open_tunnel_over_tls(void **state)
{
	free_with_open_tunnel(*state, true);
}

static void test_server__free_with_open_tunnel_over_plain_http(void **state)
{
	free_with_open_tunnel(*state, false);
}

static void test_server__upgrade_dropped_by_status_or_never_sent(void **state)
{
	static const char req11[] = "GET /exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
	                            "Upgrade: SPDY/3.1\r\n\r\n";
	static const char req10[] = "GET /exec HTTP/1.0\r\nConnection: Upgrade\r\n"
	                            "Upgrade: SPDY/3.1\r\n\r\n";
	struct fixture *f = *state;
	struct buf got = BUF_INIT(1 << 16);
	CURL *h;

	/* The handler asked for an upgrade, then answered 403: no tunnel, -ECANCELED at once. */
	f->up_answer = 403;
	h = raw_open(f->port, false);
	raw_send(h, req11);
	assert_true(raw_recv_until(h, &got, "a 101 has no body"));
	assert_memory_equal(buf_cstr(&got), "HTTP/1.1 403 ", 13);
	assert_int_equal(f->up_calls, 1); /* before the answer was sent */
	assert_int_equal(f->up_fd, -ECANCELED);
	curl_easy_cleanup(h);
	/* HTTP/1.0 cannot upgrade: libmicrohttpd refuses the 101 and the callback hears so. */
	f->up_answer = 0;
	f->up_calls = 0;
	buf_reset(&got);
	h = raw_open(f->port, false);
	raw_send(h, req10);
	assert_false(raw_recv_until(h, &got, "HTTP/"));
	assert_true(wait_for(f, &f->up_calls));
	assert_int_equal(f->up_fd, -ECONNABORTED);
	curl_easy_cleanup(h);
	expect(f->port, "GET", "/bad101", 500, NULL); /* a 101 without http_resp_upgrade() */
	buf_release(&got);
}

int main(void)
{
#define T(name)   cmocka_unit_test_setup_teardown(test_server__##name, setup, teardown)
#define TLS(name) cmocka_unit_test_setup_teardown(test_server__##name, setup_tls, teardown)
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
	        TLS(client_certificate_reaches_handler_as_pem),
	        T(no_client_certificate_without_client_ca_or_tls),
	        cmocka_unit_test(test_server__client_ca_needs_tls_and_must_load),
	        TLS(upgrade_tunnels_bytes_over_tls),
	        TLS(tls_client_leaving_is_seen_after_its_last_bytes),
	        T(upgrade_tunnels_bytes_over_plain_http),
	        TLS(caller_closing_tunnel_ends_connection_over_tls),
	        T(caller_closing_tunnel_ends_connection_over_plain_http),
	        TLS(free_with_open_tunnel_over_tls),
	        T(free_with_open_tunnel_over_plain_http),
	        T(upgrade_dropped_by_status_or_never_sent),
	};
#undef T
#undef TLS
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	if (pki_dir[0])
		run_sh("rm -rf \"$0\"", pki_dir);
	return rc;
}
