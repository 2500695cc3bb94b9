/*
 * kube_watch.c - streams and watches: kc_stream() hands an answer over piece by piece with
 * back-pressure, a watchdog and a cancel flag; kc_watch() is a kc_stream() split into events.
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
#include "base/jdoc.h"
#include "base/json.h"
#include "kube/kube_internal.h"
#include "kube/watchsplit.h"

/* ---------- streams ---------- */

struct stream {
	struct kc_client *c;
	struct xfer *x;
	const struct req *rq;
	atomic_int *cancel;
	int64_t idle_ns;
	kc_bytes_fn on_bytes;
	void *ud;
	struct kc_resp *resp;  /* the head handed to on_bytes, then the answer */
	struct buf error_body; /* a non-200 answer without KC_REQ_RAW */
	struct ll_err *err;
};

static bool cancelled(const struct stream *s)
{
	return s->cancel && atomic_load(s->cancel) != 0;
}

/* Bytes taken from the queue: handed over, or kept as a non-200 answer's body. */
static int take_bytes(struct stream *s, long status, const char *ctype, const struct buf *bytes)
{
	size_t room = ERROR_BODY_MAX - s->error_body.len;
	int rc;

	if (status != 200 && !(s->rq->flags & KC_REQ_RAW)) {
		buf_append(&s->error_body, bytes->p, bytes->len < room ? bytes->len : room);
		return 0;
	}
	if (s->resp->http_status == 0) {
		s->resp->http_status = status;
		kc__set_content_type(s->resp, ctype);
	}
	rc = s->on_bytes(s->resp, bytes->p, bytes->len, s->ud);
	if (rc == 0 && cancelled(s))
		rc = ll_err_set(s->err, -ECANCELED, "%s cancelled", s->rq->verb);
	return rc;
}

/* Swap the queued bytes into @batch and unpause the transfer; called and returns locked. */
static int take_queue(struct stream *s, struct buf *batch)
{
	struct kc_client *c = s->c;
	struct xfer *x = s->x;
	bool unpause = x->paused;
	long status = x->http_status;
	char ctype[KC_CONTENT_TYPE_MAX];
	struct buf tmp = x->q;
	int rc;

	memcpy(ctype, x->content_type, sizeof(ctype));
	x->q = *batch;
	*batch = tmp;
	if (unpause) {
		x->paused = false;
		kc__post_locked(c, x, CMD_UNPAUSE);
	}
	pthread_mutex_unlock(&c->lock);
	if (unpause)
		curl_multi_wakeup(c->multi);
	rc = take_bytes(s, status, ctype, batch);
	if (batch->cap > WATCH_QUEUE_MAX / 4)
		buf_release(batch);
	else
		buf_reset(batch);
	pthread_mutex_lock(&c->lock);
	/* time spent in callbacks says nothing about the connection */
	x->last_rx_ns = clock_mono_ns();
	return rc;
}

/*
 * Wait for bytes or the end of the transfer, handing bytes to take_bytes() outside the lock.
 * Return: 0 once the transfer is DONE and drained, or why the consumer stopped it.
 */
static int pump(struct stream *s)
{
	struct kc_client *c = s->c;
	struct xfer *x = s->x;
	struct buf batch = BUF_INIT(KC_STREAM_PIECE_MAX);
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	while (rc == 0) {
		if (x->state == XFER_DONE && x->rc == -ECANCELED)
			break; /* the client is closing: drop what is buffered */
		if (x->q.len) {
			rc = take_queue(s, &batch);
		} else if (x->state == XFER_DONE) {
			break;
		} else if (cancelled(s)) {
			rc = ll_err_set(s->err, -ECANCELED, "%s cancelled", s->rq->verb);
		} else if (clock_mono_ns() - x->last_rx_ns > s->idle_ns) {
			rc = ll_err_set(s->err, -ETIMEDOUT, "no %s data for %lld s", s->rq->verb,
			                (long long)(s->idle_ns / CLOCK_NS_PER_SEC));
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
static int stream_outcome(struct stream *s)
{
	struct xfer *x = s->x;
	int rc;

	if (x->http_status && x->http_status != 200 && !(s->rq->flags & KC_REQ_RAW)) {
		rc = kc__fill_resp(x->http_status, true, &s->error_body, s->resp, s->err);
		kc__set_content_type(s->resp, x->content_type);
		return rc;
	}
	if (x->rc)
		return kc__transfer_error(x, s->rq, s->err);
	s->resp->http_status = x->http_status;
	kc__set_content_type(s->resp, x->content_type);
	if (x->http_status >= 400)
		kc__parse_status(NULL, x->http_status, NULL, 0, &s->resp->status);
	return 0;
}

static int run_stream(struct stream *s)
{
	int64_t start = clock_mono_ns();
	int rc;

	s->x = kc__xfer_new(s->c, s->rq, true);
	rc = kc__submit(s->c, s->x);
	if (rc) {
		ll_err_set(s->err, rc, "%s %s: client closed", s->rq->verb, s->rq->path);
	} else {
		rc = pump(s);
		if (rc)
			kc__cancel_and_wait(s->c, s->x);
		else
			rc = stream_outcome(s);
	}
	/* A stream's latency is the time to its response headers. */
	kc__record(s->c, s->rq, s->x->http_status, start,
	           s->x->headers_ns ? s->x->headers_ns : clock_mono_ns());
	kc__xfer_free(s->x);
	return rc;
}

int kc_stream(struct kc_client *c, const struct kc_request *kr, kc_bytes_fn on_bytes, void *ud,
              struct kc_resp *resp, struct ll_err *err)
{
	struct stream s = {.c = c, .on_bytes = on_bytes, .ud = ud, .resp = resp, .err = err};
	struct buf target = BUF_INIT(BUF_MAX_INTERNAL);
	struct req rq;
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (c == NULL || on_bytes == NULL)
		return ll_err_set(err, -EINVAL, "kc_stream: a client and a bytes callback");
	rc = kc__req_prepare(kr, NULL, &target, &rq, err);
	if (rc == 0)
		rc = kc__enter(c);
	if (rc == -ECANCELED)
		ll_err_set(err, rc, "%s %s: client closed", rq.verb, rq.path);
	if (rc) {
		buf_release(&target);
		return rc;
	}
	s.rq = &rq;
	s.cancel = kr->cancel;
	s.idle_ns =
	        (kr->idle_timeout_ms > 0 ? kr->idle_timeout_ms : STREAM_IDLE_MS) * CLOCK_NS_PER_MS;
	buf_init(&s.error_body, ERROR_BODY_MAX);
	rc = run_stream(&s);
	buf_release(&s.error_body);
	buf_release(&target);
	kc__leave(c);
	return rc;
}

/* ---------- watches ---------- */

struct watch {
	const struct kc_watch_opts *o;
	kc_event_fn on_event;         /* jansson events, or */
	kc_doc_event_fn on_doc_event; /* documents built with @proj */
	const struct jdoc_opts *proj;
	void *ud;
	struct watchsplit ws;
	struct ll_err *err;
};

static int deliver(struct watch *w, const char *line, size_t len)
{
	enum watch_event_type type;
	struct jdoc *doc;
	json_t *obj;
	int rc;

	if (w->on_doc_event) {
		rc = watch_event_parse_doc(line, len, w->proj, &type, &doc, w->err);
		if (rc == 0)
			rc = w->on_doc_event(type, doc, w->ud);
		jdoc_unref(doc);
		return rc;
	}
	rc = watch_event_parse(line, len, &type, &obj, w->err);
	if (rc == 0)
		rc = w->on_event(type, obj, w->ud);
	json_decref(obj);
	return rc;
}

static int on_watch_line(const char *line, size_t len, void *ud)
{
	struct watch *w = ud;
	int rc = deliver(w, line, len);

	if (rc == 0 && w->o && w->o->cancel && atomic_load(w->o->cancel) != 0)
		rc = ll_err_set(w->err, -ECANCELED, "watch cancelled");
	return rc;
}

static int watch_bytes(const struct kc_resp *head, const char *bytes, size_t len, void *ud)
{
	struct watch *w = ud;
	int rc = watchsplit_feed(&w->ws, bytes, len, on_watch_line, w);

	(void)head;
	if (rc == -EMSGSIZE && w->ws.failed)
		ll_err_set(w->err, rc, "watch event over %zu bytes", w->ws.max_line);
	return rc;
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

static int run_watch(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
                     struct watch *wp, struct kc_resp *resp, struct ll_err *err)
{
	struct watch w = *wp;
	const struct kc_watch_opts *opts = w.o;
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	struct kc_request kr = {.method = "GET", .verb = "WATCH"};
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
	kc__split_query(&path, &kr.query);
	kr.path = buf_cstr(&path);
	kr.accept = opts ? opts->accept : NULL;
	kr.cancel = opts ? opts->cancel : NULL;
	kr.idle_timeout_ms = (long)idle_s * 1000;
	watchsplit_init(&w.ws, opts ? opts->max_event_bytes : 0);
	rc = kc_stream(c, &kr, watch_bytes, &w, resp, err);
	if (rc == 0 && resp->http_status == 200 && watchsplit_pending(&w.ws))
		rc = ll_err_set(err, -EPROTO, "watch stream ended inside an event");
	watchsplit_release(&w.ws);
	buf_release(&path);
	return rc;
}

int kc_watch(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
             const struct kc_watch_opts *opts, kc_event_fn on_event, void *ud, struct kc_resp *resp,
             struct ll_err *err)
{
	struct watch w = {.o = opts, .on_event = on_event, .ud = ud, .err = err};

	return run_watch(c, gvr, ns, &w, resp, err);
}

int kc_watch_docs(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
                  const struct kc_watch_opts *opts, const struct jdoc_opts *proj,
                  kc_doc_event_fn on_event, void *ud, struct kc_resp *resp, struct ll_err *err)
{
	struct watch w = {.o = opts, .on_doc_event = on_event, .proj = proj, .ud = ud, .err = err};

	return run_watch(c, gvr, ns, &w, resp, err);
}
