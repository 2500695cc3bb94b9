/*
 * watch.c - streamed answers: watch events converted one by one as they arrive, and followed
 * logs passed through as bytes (proxy_internal.h).
 *
 * The answer's head goes to the client once the API server's has come (same status and
 * content type). Back-pressure: the client's queue holds PX_WATCH_QUEUE_MAX bytes; when an
 * event does not fit, the thread stops reading upstream (libcurl pauses the transfer) and
 * waits for the queue to drain; after PX_SLOW_CLIENT_WAIT_S without room the stream ends. A
 * client that goes away, or the role stopping, cancels the upstream call.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/log.h"
#include "http/later.h"
#include "http/server.h"
#include "kube/watchsplit.h"
#include "proxy/convert.h"
#include "proxy/proxy_internal.h"

struct flow {
	struct px_job *j;
	const struct px_call *c;
	struct http_stream *st; /* NULL until the head is sent */
	struct watchsplit split;
	pthread_mutex_t mu;
	pthread_cond_t room;
	bool drained, closed;
	int status;
};

static void on_drain(void *ud)
{
	struct flow *f = ud;

	pthread_mutex_lock(&f->mu);
	f->drained = true;
	pthread_cond_broadcast(&f->room);
	pthread_mutex_unlock(&f->mu);
}

static void on_close(void *ud, int reason)
{
	struct flow *f = ud;

	(void)reason;
	atomic_store(&f->j->cancel, 1);
	pthread_mutex_lock(&f->mu);
	f->closed = true;
	pthread_cond_broadcast(&f->room);
	pthread_mutex_unlock(&f->mu);
}

/* Push @len bytes, waiting for room. 0, or non-zero to end the stream. */
static int push(struct flow *f, const char *data, size_t len)
{
	struct timespec until;
	int rc;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += PX_SLOW_CLIENT_WAIT_S;
	for (;;) {
		pthread_mutex_lock(&f->mu);
		f->drained = false;
		pthread_mutex_unlock(&f->mu);
		rc = http_stream_push(f->st, data, len);
		if (rc != -EMSGSIZE)
			return rc;
		pthread_mutex_lock(&f->mu);
		rc = 0;
		while (!f->drained && !f->closed && rc == 0)
			rc = pthread_cond_timedwait(&f->room, &f->mu, &until);
		pthread_mutex_unlock(&f->mu);
		if (rc != 0 || f->closed)
			return -ETIMEDOUT;
	}
}

static int on_line(const char *line, size_t len, void *ud)
{
	struct flow *f = ud;
	struct px_conv conv = {.map = f->c->map, .dir = PX_TO_USER, .resource = f->c->resource};
	json_t *ev = json_loadb(line, len, 0, NULL);
	char *text = NULL;
	int rc;

	if (!ev || (f->c->map && px_convert(&conv, ev) != PX_CONV_OK)) {
		log_warn("a watch event could not be converted; the watch ends", "{s:s}", "field",
		         conv.field);
		json_decref(ev);
		return -EPROTO; /* never pass an unconverted event on */
	}
	text = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	if (!text)
		return -ENOMEM;
	rc = push(f, text, strlen(text));
	if (rc == 0)
		rc = push(f, "\n", 1);
	free(text);
	return rc;
}

static void send_head(struct flow *f, const struct kc_resp *head)
{
	struct http_resp *resp = http_later_resp(f->j->later);
	struct http_stream_opts so = {.queue_max = PX_WATCH_QUEUE_MAX,
	                              .on_drain = on_drain,
	                              .on_close = on_close,
	                              .ud = f};

	if (head->content_type[0])
		http_resp_header(resp, "Content-Type", head->content_type);
	f->st = http_resp_stream(resp, &so);
	http_later_send(f->j->later, (int)head->http_status);
	f->j->later = NULL;
}

static int on_bytes(const struct kc_resp *head, const char *bytes, size_t len, void *ud)
{
	struct flow *f = ud;

	if (!f->st)
		send_head(f, head);
	if (f->j->watch && head->http_status == 200)
		return watchsplit_feed(&f->split, bytes, len, on_line, f);
	return push(f, bytes, len);
}

void px_watch_forward(struct px_job *j, const struct px_call *c)
{
	struct kc_header h[PX_IMP_HEADERS_MAX];
	struct kc_resp up = {0};
	struct ll_err err = {{0}};
	struct flow f = {.j = j, .c = c};
	struct kc_request rq = {.method = j->method,
	                        .path = c->path,
	                        .query = c->query,
	                        .headers = h,
	                        .n_headers = c->as_self ? 0 : px_job_impersonation(j, h),
	                        .accept = j->watch ? "application/json" : "*/*",
	                        .flags = KC_REQ_RAW,
	                        .cancel = &j->cancel,
	                        .idle_timeout_ms = (j->px->o.stream_idle_timeout_s
	                                                    ? j->px->o.stream_idle_timeout_s
	                                                    : PX_STREAM_IDLE_MAX_S) *
	                                           1000L};
	int rc;

	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.room, NULL);
	watchsplit_init(&f.split, 0);
	rc = kc_stream(j->px->o.client, &rq, on_bytes, &f, &up, &err);
	if (!f.st && rc < 0 && j->later)
		px_job_status(j, 502, "InternalError", "the API server did not answer: %s",
		              err.msg);
	else if (!f.st && j->later) /* an answer with no body */
		send_head(&f, &up);
	if (f.st)
		http_stream_end(f.st);
	watchsplit_release(&f.split);
	kc_resp_release(&up);
	pthread_cond_destroy(&f.room);
	pthread_mutex_destroy(&f.mu);
}
