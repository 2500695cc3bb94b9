/*
 * kube_watch.c - watches: a stream of events with back-pressure, a watchdog and a cancel flag.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "kube/kube_internal.h"
#include "kube/watchsplit.h"

struct watch {
	struct kc_client *c;
	struct xfer *x;
	const struct kc_watch_opts *o;
	int64_t idle_ns;
	kc_event_fn on_event;
	void *ud;
	struct watchsplit ws;
	struct buf error_body; /* a non-200 answer */
	struct ll_err *err;
};

static bool cancelled(const struct watch *w)
{
	return w->o && w->o->cancel && atomic_load(w->o->cancel) != 0;
}

static int on_watch_line(const char *line, size_t len, void *ud)
{
	struct watch *w = ud;
	enum watch_event_type type;
	json_t *obj;
	int rc = watch_event_parse(line, len, &type, &obj, w->err);

	if (rc)
		return rc;
	rc = w->on_event(type, obj, w->ud);
	json_decref(obj);
	if (rc == 0 && cancelled(w))
		rc = ll_err_set(w->err, -ECANCELED, "watch cancelled");
	return rc;
}

/* Bytes taken from the queue: events on a 200 stream, the answer otherwise. */
static int take_bytes(struct watch *w, long status, const struct buf *bytes)
{
	size_t room = ERROR_BODY_MAX - w->error_body.len;
	int rc;

	if (status != 200) {
		buf_append(&w->error_body, bytes->p, bytes->len < room ? bytes->len : room);
		return 0;
	}
	rc = watchsplit_feed(&w->ws, bytes->p, bytes->len, on_watch_line, w);
	if (rc == -EMSGSIZE && w->ws.failed)
		ll_err_set(w->err, rc, "watch event over %zu bytes", w->ws.max_line);
	return rc;
}

/*
 * Wait for bytes or the end of the transfer, handing bytes to take_bytes() outside the lock.
 * Return: 0 once the transfer is DONE and drained, or why the consumer stopped it.
 */
static int pump(struct watch *w)
{
	struct kc_client *c = w->c;
	struct xfer *x = w->x;
	struct buf batch = BUF_INIT(2 * (size_t)WATCH_QUEUE_MAX), tmp;
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	while (rc == 0) {
		if (x->state == XFER_DONE && x->rc == -ECANCELED)
			break; /* the client is closing: drop what is buffered */
		if (x->q.len) {
			bool unpause = x->paused;
			long status = x->http_status;

			tmp = x->q;
			x->q = batch;
			batch = tmp;
			if (unpause) {
				x->paused = false;
				kc__post_locked(c, x, CMD_UNPAUSE);
			}
			pthread_mutex_unlock(&c->lock);
			if (unpause)
				curl_multi_wakeup(c->multi);
			rc = take_bytes(w, status, &batch);
			if (batch.cap > WATCH_QUEUE_MAX / 4)
				buf_release(&batch);
			else
				buf_reset(&batch);
			pthread_mutex_lock(&c->lock);
			/* time spent in callbacks says nothing about the connection */
			x->last_rx_ns = clock_mono_ns();
			continue;
		}
		if (x->state == XFER_DONE)
			break;
		if (cancelled(w)) {
			rc = ll_err_set(w->err, -ECANCELED, "watch cancelled");
		} else if (clock_mono_ns() - x->last_rx_ns > w->idle_ns) {
			rc = ll_err_set(w->err, -ETIMEDOUT, "no watch data for %lld s",
			                (long long)(w->idle_ns / CLOCK_NS_PER_SEC));
		} else {
			clock_cond_wait_until(&x->cond, &c->lock,
			                      clock_mono_ns() + WATCH_POLL_MS * CLOCK_NS_PER_MS);
		}
	}
	pthread_mutex_unlock(&c->lock);
	buf_release(&batch);
	return rc;
}

/* After pump() returned 0: the outcome of a transfer that ended by itself. */
static int watch_outcome(struct watch *w, const struct req *rq, struct kc_resp *resp)
{
	struct xfer *x = w->x;

	if (x->http_status && x->http_status != 200)
		return kc__fill_resp(x->http_status, true, &w->error_body, resp, w->err);
	if (x->rc)
		return kc__transfer_error(x, rq, w->err);
	resp->http_status = x->http_status;
	if (watchsplit_pending(&w->ws))
		return ll_err_set(w->err, -EPROTO, "watch stream ended inside an event");
	return 0;
}

static int random_timeout(void)
{
	uint32_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint32_t)clock_mono_ns();
	return 300 + (int)(r % 301);
}

static int watch_path(struct buf *path, const struct kc_gvr *gvr, const char *ns,
                      const struct kc_watch_opts *o, int timeout_s)
{
	int rc = kc_path(path, gvr, ns, NULL, NULL);

	if (rc == 0)
		rc = kc__query(path, "watch", "1");
	if (rc == 0 && o)
		rc = kc__query(path, "resourceVersion", o->resource_version);
	if (rc == 0 && o && o->allow_bookmarks)
		rc = kc__query(path, "allowWatchBookmarks", "true");
	if (rc == 0)
		rc = kc__query_long(path, "timeoutSeconds", timeout_s);
	if (rc == 0 && o)
		rc = kc__query(path, "labelSelector", o->label_selector);
	if (rc == 0 && o)
		rc = kc__query(path, "fieldSelector", o->field_selector);
	return rc;
}

static int run_watch(struct watch *w, const struct req *rq, struct kc_resp *resp)
{
	int64_t start = clock_mono_ns();
	int rc;

	w->x = kc__xfer_new(w->c, rq, true);
	rc = kc__submit(w->c, w->x);
	if (rc) {
		ll_err_set(w->err, rc, "WATCH %s: client closed", rq->path);
	} else {
		rc = pump(w);
		if (rc)
			kc__cancel_and_wait(w->c, w->x);
		else
			rc = watch_outcome(w, rq, resp);
	}
	/* A watch's latency is the time to its response headers. */
	kc__record(w->c, rq, w->x->http_status, start,
	           w->x->headers_ns ? w->x->headers_ns : clock_mono_ns());
	kc__xfer_free(w->x);
	return rc;
}

int kc_watch(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
             const struct kc_watch_opts *opts, kc_event_fn on_event, void *ud, struct kc_resp *resp,
             struct ll_err *err)
{
	struct watch w = {.c = c, .o = opts, .on_event = on_event, .ud = ud, .err = err};
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	struct req rq = {"WATCH", "GET", NULL, NULL, NULL, 0, opts ? opts->accept : NULL, false};
	int timeout_s =
	        opts && opts->timeout_seconds > 0 ? opts->timeout_seconds : random_timeout();
	int idle_s = opts && opts->idle_timeout_seconds > 0 ? opts->idle_timeout_seconds
	                                                    : timeout_s + 60;
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (watch_path(&path, gvr, ns, opts, timeout_s)) {
		buf_release(&path);
		return kc__path_error(resp, err);
	}
	rc = kc__enter(c);
	if (rc) {
		ll_err_set(err, rc, "WATCH %s: client closed", buf_cstr(&path));
		buf_release(&path);
		return rc;
	}
	rq.path = buf_cstr(&path);
	w.idle_ns = (int64_t)idle_s * CLOCK_NS_PER_SEC;
	watchsplit_init(&w.ws, opts ? opts->max_event_bytes : 0);
	buf_init(&w.error_body, ERROR_BODY_MAX);
	rc = run_watch(&w, &rq, resp);
	watchsplit_release(&w.ws);
	buf_release(&w.error_body);
	buf_release(&path);
	kc__leave(c);
	return rc;
}
