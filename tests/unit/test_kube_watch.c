/*
 * test_kube_watch.c - streams and watches (kc_stream, kc_watch over it): the head before the
 * first bytes, back-pressure without losing data, pieces under KC_STREAM_PIECE_MAX, non-200
 * answers with and without KC_REQ_RAW, the cancel flag, the watchdog, a callback's stop; against
 * a loopback server. With LANDLORD_TEST_KUBECONFIG: a raw watch receives the ADDED bytes.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube_rawsrv.h"
#include "live.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"

/* ---------- offline ---------- */

#define BIG_TOTAL  (24u << 20) /* three times what a stream buffers before pausing */
#define BIG_CHUNK  (96u << 10)
#define SLOW_CALLS 6

struct sink {
	long first_status;
	char first_ctype[KC_CONTENT_TYPE_MAX];
	size_t calls, total, max_piece;
	bool pattern_ok;
	struct buf bytes; /* small answers only */
	atomic_int *cancel_after_first;
	int stop_with;
};

static int on_bytes(const struct kc_resp *head, const char *p, size_t n, void *ud)
{
	struct sink *s = ud;

	if (s->calls++ == 0) {
		s->first_status = head->http_status;
		snprintf(s->first_ctype, sizeof(s->first_ctype), "%s", head->content_type);
		s->pattern_ok = true;
	}
	for (size_t i = 0; i < n && s->pattern_ok && s->bytes.max == 0; i++)
		s->pattern_ok = (unsigned char)p[i] == (unsigned char)((s->total + i) % 251);
	if (s->bytes.max)
		assert_int_equal(buf_append(&s->bytes, p, n), 0);
	s->total += n;
	if (n > s->max_piece)
		s->max_piece = n;
	/* a slow consumer at first: the server runs ahead and the transfer is paused */
	if (s->calls <= SLOW_CALLS)
		clock_sleep_until(clock_mono_ns() + 100 * CLOCK_NS_PER_MS);
	if (s->cancel_after_first)
		atomic_store(s->cancel_after_first, 1);
	return s->stop_with;
}

/* The answer of each test: what the loopback server writes. */
static void answer_big(struct rawsrv *srv, int fd)
{
	char *chunk = malloc(BIG_CHUNK);

	(void)srv;
	rawsrv_chunked_head(fd, 200, "application/octet-stream");
	for (size_t off = 0; off < BIG_TOTAL; off += BIG_CHUNK) {
		for (size_t i = 0; i < BIG_CHUNK; i++)
			chunk[i] = (char)((off + i) % 251);
		if (!rawsrv_chunk(fd, chunk, BIG_CHUNK))
			break;
	}
	rawsrv_chunk(fd, NULL, 0);
	free(chunk);
}

static void answer_gone(struct rawsrv *srv, int fd)
{
	static const char body[] =
	        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
	        "\"message\":\"too old resource version\",\"reason\":\"Expired\","
	        "\"code\":410}";
	(void)srv;
	rawsrv_reply(fd, 410, "application/json", body, sizeof(body) - 1);
}

/* A head and one piece, then silence until the client goes away. */
static void answer_hold(struct rawsrv *srv, int fd)
{
	rawsrv_chunked_head(fd, 200, "text/plain");
	rawsrv_chunk(fd, "first", 5);
	while (!atomic_load(&srv->stop)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		char b[64];

		if (poll(&p, 1, 50) > 0 && recv(fd, b, sizeof(b), 0) <= 0)
			return;
	}
}

static void answer_events(struct rawsrv *srv, int fd)
{
	static const char events[] =
	        "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	        "\"a\"}}}\n"
	        "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	        "\"a\"}}}\n{\"type\":\"DELETED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":"
	        "{\"name\":\"a\"}}}\n";
	size_t n = sizeof(events) - 1, cuts[] = {0, 7, 60, 61, 130, n};

	(void)srv;
	rawsrv_chunked_head(fd, 200, "application/json");
	for (size_t i = 0; i + 1 < sizeof(cuts) / sizeof(cuts[0]); i++)
		rawsrv_chunk(fd, events + cuts[i], cuts[i + 1] - cuts[i]);
	rawsrv_chunk(fd, NULL, 0);
}

static void answer_empty_403(struct rawsrv *srv, int fd)
{
	(void)srv;
	rawsrv_reply(fd, 403, "text/plain", "", 0);
}

struct fixture {
	struct rawsrv srv;
	struct kc_client *c;
};

static struct fixture *start(rawsrv_answer_fn answer)
{
	struct fixture *f = calloc(1, sizeof(*f));

	rawsrv_start(&f->srv, answer, f);
	f->c = rawsrv_client(&f->srv, 5000);
	assert_non_null(f->c);
	return f;
}

static void stop(struct fixture *f)
{
	kc_client_free(f->c);
	rawsrv_stop(&f->srv);
	free(f);
}

static void test_kube_watch__stream_backpressure_loses_nothing(void **state)
{
	struct fixture *f = start(answer_big);
	struct kc_request rq = {.method = "GET", .path = "/logs", .query = "follow=true"};
	struct kc_resp resp = {0};
	struct sink s = {0};
	struct ll_err err = {{0}};

	(void)state;
	assert_int_equal(kc_stream(f->c, &rq, on_bytes, &s, &resp, &err), 0);
	assert_int_equal(resp.http_status, 200);
	assert_string_equal(resp.content_type, "application/octet-stream");
	assert_int_equal(s.first_status, 200);
	assert_string_equal(s.first_ctype, "application/octet-stream");
	assert_int_equal(s.total, BIG_TOTAL);
	assert_true(s.pattern_ok);
	assert_true(s.max_piece <= KC_STREAM_PIECE_MAX);
	kc_resp_release(&resp);
	stop(f);
}

static void test_kube_watch__non_200_stream_is_an_answer(void **state)
{
	struct fixture *f = start(answer_gone);
	struct kc_request rq = {.method = "GET", .path = "/api/v1/pods", .query = "watch=1"};
	struct kc_resp resp = {0};
	struct sink s = {.bytes = BUF_INIT(1 << 20)};

	(void)state;
	assert_int_equal(kc_stream(f->c, &rq, on_bytes, &s, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 410);
	assert_string_equal(resp.status.reason, "Expired");
	assert_string_equal(resp.status.message, "too old resource version");
	assert_string_equal(resp.content_type, "application/json");
	assert_int_equal(s.calls, 0);
	kc_resp_release(&resp);

	/* raw: the error's bytes are handed over as they are, after its head */
	rq.flags = KC_REQ_RAW;
	assert_int_equal(kc_stream(f->c, &rq, on_bytes, &s, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 410);
	assert_int_equal(s.first_status, 410);
	assert_string_equal(s.first_ctype, "application/json");
	assert_non_null(strstr(buf_cstr(&s.bytes), "\"reason\":\"Expired\""));
	assert_string_equal(resp.status.reason, "Gone");
	kc_resp_release(&resp);
	buf_release(&s.bytes);
	stop(f);
}

static void test_kube_watch__raw_answer_without_body_has_its_head(void **state)
{
	struct fixture *f = start(answer_empty_403);
	struct kc_request rq = {.method = "GET", .path = "/x", .flags = KC_REQ_RAW};
	struct kc_resp resp = {0};
	struct sink s = {.bytes = BUF_INIT(1 << 20)};

	(void)state;
	assert_int_equal(kc_stream(f->c, &rq, on_bytes, &s, &resp, NULL), 0);
	assert_int_equal(s.calls, 0);
	assert_int_equal(resp.http_status, 403);
	assert_string_equal(resp.content_type, "text/plain");
	assert_string_equal(resp.status.reason, "Forbidden");
	kc_resp_release(&resp);
	buf_release(&s.bytes);
	stop(f);
}

static void test_kube_watch__cancel_flag_from_the_callback(void **state)
{
	struct fixture *f = start(answer_hold);
	atomic_int cancel = 0;
	struct kc_request rq = {.method = "GET", .path = "/x", .cancel = &cancel};
	struct kc_resp resp = {0};
	struct sink s = {.bytes = BUF_INIT(1 << 20), .cancel_after_first = &cancel};
	struct ll_err err = {{0}};

	(void)state;
	assert_int_equal(kc_stream(f->c, &rq, on_bytes, &s, &resp, &err), -ECANCELED);
	assert_string_equal(buf_cstr(&s.bytes), "first");
	buf_release(&s.bytes);
	kc_resp_release(&resp);
	stop(f);
}

struct later {
	atomic_int *flag;
};

static void *set_later(void *arg)
{
	struct later *l = arg;

	clock_sleep_until(clock_mono_ns() + 300 * CLOCK_NS_PER_MS);
	atomic_store(l->flag, 1);
	return NULL;
}

static void test_kube_watch__cancel_flag_from_another_thread(void **state)
{
	struct fixture *f = start(answer_hold);
	atomic_int cancel = 0;
	struct later l = {&cancel};
	struct kc_request rq = {.method = "GET", .path = "/x", .cancel = &cancel};
	struct kc_resp resp = {0};
	struct sink s = {.bytes = BUF_INIT(1 << 20)};
	pthread_t t;

	(void)state;
	pthread_create(&t, NULL, set_later, &l);
	assert_int_equal(kc_stream(f->c, &rq, on_bytes, &s, &resp, NULL), -ECANCELED);
	pthread_join(t, NULL);
	assert_string_equal(buf_cstr(&s.bytes), "first");
	buf_release(&s.bytes);
	stop(f);
}

static void test_kube_watch__watchdog_ends_a_silent_stream(void **state)
{
	struct fixture *f = start(answer_hold);
	struct kc_request rq = {.method = "GET", .path = "/x", .idle_timeout_ms = 300};
	struct kc_resp resp = {0};
	struct sink s = {.bytes = BUF_INIT(1 << 20)};
	struct ll_err err = {{0}};

	(void)state;
	assert_int_equal(kc_stream(f->c, &rq, on_bytes, &s, &resp, &err), -ETIMEDOUT);
	assert_non_null(strstr(err.msg, "no GET data"));
	buf_release(&s.bytes);
	stop(f);
}

static void test_kube_watch__callback_stop_value_returned(void **state)
{
	struct fixture *f = start(answer_hold);
	struct kc_request rq = {.method = "GET", .path = "/x"};
	struct kc_resp resp = {0};
	struct sink s = {.bytes = BUF_INIT(1 << 20), .stop_with = 7};

	(void)state;
	assert_int_equal(kc_stream(f->c, &rq, on_bytes, &s, &resp, NULL), 7);
	assert_int_equal(s.calls, 1);
	buf_release(&s.bytes);
	stop(f);
}

static void test_kube_watch__stream_refuses_bad_requests(void **state)
{
	struct fixture *f = start(answer_hold);
	const struct kc_header h = {"Host", "evil"};
	struct kc_request rq = {.method = "GET", .path = "/x", .headers = &h, .n_headers = 1};
	struct kc_resp resp = {0};
	struct sink s = {0};
	struct ll_err err = {{0}};

	(void)state;
	assert_int_equal(kc_stream(f->c, &rq, on_bytes, &s, &resp, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "set by the client"));
	rq.n_headers = 0;
	rq.path = "/api/v1/namespaces/%2e%2e";
	assert_int_equal(kc_stream(f->c, &rq, on_bytes, &s, &resp, &err), -EINVAL);
	assert_int_equal(kc_stream(f->c, &rq, NULL, &s, &resp, &err), -EINVAL);
	assert_int_equal(rawsrv_nreq(&f->srv), 0);
	assert_int_equal(s.calls, 0);
	stop(f);
}

struct seen {
	enum watch_event_type types[8];
	int n;
};

static int on_event(enum watch_event_type type, json_t *obj, void *ud)
{
	struct seen *s = ud;

	assert_string_equal(jx_name(obj), "a");
	if (s->n < 8)
		s->types[s->n++] = type;
	return 0;
}

static void test_kube_watch__watch_splits_the_stream_into_events(void **state)
{
	struct fixture *f = start(answer_events);
	struct kc_watch_opts o = {.timeout_seconds = 30, .resource_version = "5"};
	struct kc_resp resp = {0};
	struct seen s = {0};

	(void)state;
	assert_int_equal(kc_watch(f->c, &KC_CONFIGMAPS, "ns", &o, on_event, &s, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 200);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.types[0], WATCH_ADDED);
	assert_int_equal(s.types[1], WATCH_MODIFIED);
	assert_int_equal(s.types[2], WATCH_DELETED);
	pthread_mutex_lock(&f->srv.lock);
	assert_non_null(strstr(f->srv.req, "GET /api/v1/namespaces/ns/configmaps?watch=1&"
	                                   "resourceVersion=5&timeoutSeconds=30 HTTP/1.1\r\n"));
	pthread_mutex_unlock(&f->srv.lock);
	stop(f);
}

static void test_kube_watch__watch_non_200_has_no_events(void **state)
{
	struct fixture *f = start(answer_gone);
	struct kc_resp resp = {0};
	struct seen s = {0};

	(void)state;
	assert_int_equal(kc_watch(f->c, &KC_CONFIGMAPS, "ns", NULL, on_event, &s, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 410);
	assert_string_equal(resp.status.reason, "Expired");
	assert_int_equal(s.n, 0);
	kc_resp_release(&resp);
	stop(f);
}

/* ---------- live ---------- */

static int live_setup(void **state)
{
	return live_ns_setup(state, "kcwatch");
}

struct grep {
	struct buf got;
};

/* Stop (1) once the ADDED event of "seen-me" has arrived. */
static int on_watch_bytes(const struct kc_resp *head, const char *p, size_t n, void *ud)
{
	struct grep *g = ud;
	const char *t;

	assert_int_equal(head->http_status, 200);
	assert_int_equal(buf_append(&g->got, p, n), 0);
	t = strstr(buf_cstr(&g->got), "\"type\":\"ADDED\"");
	return t && strstr(t, "\"name\":\"seen-me\"") ? 1 : 0;
}

static void test_kube_watch__live_raw_watch_receives_added_bytes(void **state)
{
	struct live_ns *l = *state;
	struct grep g = {.got = BUF_INIT(4u << 20)};
	char path[160];
	struct kc_request rq = {.method = "GET",
	                        .path = path,
	                        .query = "watch=1&timeoutSeconds=30",
	                        .verb = "WATCH",
	                        .flags = KC_REQ_RAW,
	                        .idle_timeout_ms = 60000};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	json_t *cm;

	if (l == NULL)
		skip();
	cm = json_pack("{s:s,s:s,s:{s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
	               "metadata", "name", "seen-me", "data", "k", "v");
	assert_int_equal(kc_create(l->c, &KC_CONFIGMAPS, l->ns, cm, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 201);
	kc_resp_release(&resp);
	json_decref(cm);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", l->ns);
	assert_int_equal(kc_stream(l->c, &rq, on_watch_bytes, &g, &resp, &err), 1);
	assert_int_equal(resp.http_status, 200);
	assert_string_equal(resp.content_type, "application/json");
	buf_release(&g.got);
	kc_resp_release(&resp);
	kc_delete(l->c, &KC_CONFIGMAPS, l->ns, "seen-me", NULL, &resp, NULL);
	kc_resp_release(&resp);
}

int main(void)
{
	const struct CMUnitTest unit[] = {
	        cmocka_unit_test(test_kube_watch__stream_backpressure_loses_nothing),
	        cmocka_unit_test(test_kube_watch__non_200_stream_is_an_answer),
	        cmocka_unit_test(test_kube_watch__raw_answer_without_body_has_its_head),
	        cmocka_unit_test(test_kube_watch__cancel_flag_from_the_callback),
	        cmocka_unit_test(test_kube_watch__cancel_flag_from_another_thread),
	        cmocka_unit_test(test_kube_watch__watchdog_ends_a_silent_stream),
	        cmocka_unit_test(test_kube_watch__callback_stop_value_returned),
	        cmocka_unit_test(test_kube_watch__stream_refuses_bad_requests),
	        cmocka_unit_test(test_kube_watch__watch_splits_the_stream_into_events),
	        cmocka_unit_test(test_kube_watch__watch_non_200_has_no_events),
	};
	const struct CMUnitTest live[] = {
	        cmocka_unit_test(test_kube_watch__live_raw_watch_receives_added_bytes),
	};
	int failed = cmocka_run_group_tests_name("kube_watch", unit, NULL, NULL);

	return failed +
	       cmocka_run_group_tests_name("kube_watch_live", live, live_setup, live_ns_teardown);
}
