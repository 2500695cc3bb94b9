/*
 * test_later.c - answers sent later from another thread (lib/http/later.h): a body, headers and
 * a status set off the server thread; a stream opened later; many pending at once while the
 * server keeps serving others; a server freed with answers pending (503, and the holder's send
 * only frees).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "http/later.h"
#include "http/server.h"

struct held {
	struct http_later *l;
	char path[256]; /* copied by the handler: the request is not the holder's */
	int delay_ms;
	bool stream;
};

static void sleep_ms(int ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&t, NULL);
}

static void *answer_main(void *arg)
{
	struct held *h = arg;
	struct http_resp *resp = http_later_resp(h->l);

	sleep_ms(h->delay_ms);
	if (h->stream) {
		struct http_stream *st = http_resp_stream(resp, NULL);

		http_later_send(h->l, 200);
		http_stream_push(st, "one\n", 4);
		sleep_ms(20);
		http_stream_push(st, "two\n", 4);
		http_stream_end(st);
	} else {
		http_resp_header(resp, "X-Later", "yes");
		buf_appendf(http_resp_body(resp), "later %s", h->path);
		http_later_send(h->l, 201);
	}
	free(h);
	return NULL;
}

static int h_later(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct held *h = calloc(1, sizeof(*h));
	pthread_t t;

	(void)req;
	h->l = http_resp_defer(resp);
	h->delay_ms = ud ? *(int *)ud : 50;
	h->stream = strstr(http_req_path(req), "stream") != NULL;
	snprintf(h->path, sizeof(h->path), "%s", http_req_path(req));
	assert_int_equal(pthread_create(&t, NULL, answer_main, h), 0);
	pthread_detach(t);
	return 0; /* ignored */
}

static int h_now(void *ud, struct http_req *req, struct http_resp *resp)
{
	(void)ud;
	(void)req;
	buf_append_str(http_resp_body(resp), "now");
	return 200;
}

static struct http_server *start(int *delay_ms)
{
	struct http_server *s = http_server_new(NULL);
	struct http_route later = {
	        .path = "/later/", .prefix = true, .fn = h_later, .ud = delay_ms};
	struct http_route now = {.path = "/now", .fn = h_now};

	assert_int_equal(http_server_route(s, &later), 0);
	assert_int_equal(http_server_route(s, &now), 0);
	assert_int_equal(http_server_start(s, NULL), 0);
	return s;
}

static size_t on_write(char *data, size_t size, size_t n, void *ud)
{
	return buf_append(ud, data, size * n) == 0 ? size * n : 0;
}

static long get(int port, const char *path, struct buf *body, struct buf *headers)
{
	CURL *h = curl_easy_init();
	char url[256];
	long code = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, headers);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	return code;
}

static void test_later__answer_from_another_thread(void **state)
{
	struct http_server *s = start(NULL);
	struct buf body = BUF_INIT(1 << 16), headers = BUF_INIT(1 << 16);

	(void)state;
	assert_int_equal(get(http_server_port(s), "/later/x", &body, &headers), 201);
	assert_string_equal(buf_cstr(&body), "later /later/x");
	assert_non_null(strstr(buf_cstr(&headers), "X-Later: yes"));
	buf_release(&body);
	buf_release(&headers);
	http_server_free(s);
}

static void test_later__stream_opened_later(void **state)
{
	struct http_server *s = start(NULL);
	struct buf body = BUF_INIT(1 << 16), headers = BUF_INIT(1 << 16);

	(void)state;
	assert_int_equal(get(http_server_port(s), "/later/stream", &body, &headers), 200);
	assert_string_equal(buf_cstr(&body), "one\ntwo\n");
	buf_release(&body);
	buf_release(&headers);
	http_server_free(s);
}

struct client {
	int port;
	const char *path;
	long code;
	char body[64];
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct buf body = BUF_INIT(1 << 16), headers = BUF_INIT(1 << 16);

	c->code = get(c->port, c->path, &body, &headers);
	snprintf(c->body, sizeof(c->body), "%s", buf_cstr(&body));
	buf_release(&body);
	buf_release(&headers);
	return NULL;
}

/* 32 answers pending for 300 ms each: the server answers others meanwhile, and all of them. */
static void test_later__many_pending_do_not_block_the_server(void **state)
{
	enum { N = 32 };
	int delay = 300;
	struct http_server *s = start(&delay);
	struct client c[N];
	pthread_t t[N];
	struct buf body = BUF_INIT(1 << 16), headers = BUF_INIT(1 << 16);

	(void)state;
	for (int i = 0; i < N; i++) {
		c[i] = (struct client){.port = http_server_port(s), .path = "/later/many"};
		assert_int_equal(pthread_create(&t[i], NULL, client_main, &c[i]), 0);
	}
	sleep_ms(100);
	assert_int_equal(get(http_server_port(s), "/now", &body, &headers), 200);
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(c[i].code, 201);
		assert_string_equal(c[i].body, "later /later/many");
	}
	buf_release(&body);
	buf_release(&headers);
	http_server_free(s);
}

/* Freed with an answer pending: the client gets 503 and the holder's late send only frees. */
static void test_later__free_with_answers_pending(void **state)
{
	int delay = 500;
	struct http_server *s = start(&delay);
	struct client c = {.port = http_server_port(s), .path = "/later/slow"};
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, client_main, &c), 0);
	sleep_ms(150);
	http_server_free(s);
	pthread_join(t, NULL);
	assert_true(c.code == 503 || c.code == 0);
	sleep_ms(600); /* the holder sends after the server is gone: ASan watches */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_later__answer_from_another_thread),
	        cmocka_unit_test(test_later__stream_opened_later),
	        cmocka_unit_test(test_later__many_pending_do_not_block_the_server),
	        cmocka_unit_test(test_later__free_with_answers_pending),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
