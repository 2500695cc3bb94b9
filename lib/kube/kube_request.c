/*
 * kube_request.c - one request and its answer: entering the client, metrics, parsing.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/ratelimit.h"
#include "kube/kube_internal.h"

void kc_resp_release(struct kc_resp *resp)
{
	json_decref(resp->body);
	memset(resp, 0, sizeof(*resp));
}

bool kc_resp_ok(const struct kc_resp *resp)
{
	return resp->http_status >= 200 && resp->http_status < 300;
}

/* ---------- calls ---------- */

int kc__enter(struct kc_client *c)
{
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (c->stopping)
		rc = -ECANCELED;
	else
		c->callers++;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void kc__leave(struct kc_client *c)
{
	pthread_mutex_lock(&c->lock);
	if (--c->callers == 0 && c->stopping)
		pthread_cond_signal(&c->idle);
	pthread_mutex_unlock(&c->lock);
}

static atomic_long crash_countdown; /* writes left before the test hook exits; 0: off */

void kc_test_crash_after_writes(long n)
{
	atomic_store(&crash_countdown, n);
}

static void maybe_crash_after_write(const struct req *rq, long status)
{
	bool write = strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0;

	if (!write || status < 200 || status > 299 || atomic_load(&crash_countdown) <= 0)
		return;
	if (atomic_fetch_sub(&crash_countdown, 1) == 1) {
		log_warn("test hook: exiting right after a write", "{s:s,s:s,s:i}", "method",
		         rq->method, "path", rq->path, "status", (int)status);
		_exit(KC_TEST_CRASH_EXIT);
	}
}

void kc__record(struct kc_client *c, const struct req *rq, long status, int64_t start_ns,
                int64_t end_ns)
{
	char labels[256], code[24];

	if (status)
		snprintf(code, sizeof(code), "%ld", status);
	else
		snprintf(code, sizeof(code), "<error>");
	metrics_add(M_REQUESTS,
	            metrics_labels(labels, sizeof(labels), "client", c->name, "verb", rq->verb,
	                           "code", code, NULL),
	            1);
	metrics_observe(
	        M_DURATION,
	        metrics_labels(labels, sizeof(labels), "client", c->name, "verb", rq->verb, NULL),
	        (double)(end_ns - start_ns) / CLOCK_NS_PER_SEC);
	log_debug("api request", "{s:s,s:s,s:s,s:i,s:I}", "client", c->name, "method", rq->method,
	          "path", rq->path, "status", (int)status, "ms",
	          (json_int_t)((end_ns - start_ns) / CLOCK_NS_PER_MS));
	maybe_crash_after_write(rq, status);
}

/* An answer: parse the body; a 2xx answer whose JSON is malformed is no usable answer. */
int kc__fill_resp(long status, bool json, const struct buf *raw, struct kc_resp *resp,
                  struct ll_err *err)
{
	struct ll_err jerr;
	json_t *body = NULL;

	if (raw->len && json) {
		body = jx_loads(raw->p, raw->len, &jerr);
		if (body == NULL && status >= 200 && status < 300)
			return ll_err_set(err, -EPROTO, "malformed JSON in an HTTP %ld answer: %s",
			                  status, jerr.msg);
	}
	resp->http_status = status;
	resp->body = body;
	kc__parse_status(body, status, raw->p, raw->len, &resp->status);
	return 0;
}

int kc__transfer_error(const struct xfer *x, const struct req *rq, struct ll_err *err)
{
	return ll_err_set(err, x->rc, "%s %s: %s", rq->method, rq->path,
	                  x->errbuf[0] ? x->errbuf : strerror(-x->rc));
}

/* One non-watch request; the caller has entered the client. */
static int request(struct kc_client *c, const struct req *rq, struct kc_resp *resp,
                   struct ll_err *err)
{
	struct xfer *x;
	int64_t start;
	int rc;

	memset(resp, 0, sizeof(*resp));
	tbucket_wait(&c->rl);
	start = clock_mono_ns();
	x = kc__xfer_new(c, rq, false);
	rc = kc__submit(c, x);
	if (rc) {
		ll_err_set(err, rc, "%s %s: client closed", rq->method, rq->path);
	} else {
		kc__wait_done(c, x);
		if (x->rc)
			rc = kc__transfer_error(x, rq, err);
		else
			rc = kc__fill_resp(x->http_status, x->json, &x->rbody, resp, err);
	}
	kc__record(c, rq, rc ? 0 : resp->http_status, start, clock_mono_ns());
	kc__xfer_free(x);
	return rc;
}

int kc__entered_request(struct kc_client *c, const struct req *rq, struct kc_resp *resp,
                        struct ll_err *err)
{
	int rc = kc__enter(c);

	if (rc) {
		memset(resp, 0, sizeof(*resp));
		return ll_err_set(err, rc, "%s %s: client closed", rq->method, rq->path);
	}
	rc = request(c, rq, resp, err);
	kc__leave(c);
	return rc;
}

static const char *verb_of(const char *method, const char *content_type)
{
	if (strcmp(method, "POST") == 0)
		return "CREATE";
	if (strcmp(method, "PUT") == 0)
		return "UPDATE";
	if (strcmp(method, "PATCH") == 0 && content_type &&
	    strncmp(content_type, "application/apply-patch", 23) == 0)
		return "APPLY";
	return method;
}

int kc_request(struct kc_client *c, const char *method, const char *path, const char *content_type,
               const char *body, size_t body_len, const char *accept, struct kc_resp *resp,
               struct ll_err *err)
{
	struct req rq = {NULL, method, path, content_type, body, body_len, accept, false};

	if (c == NULL || method == NULL || path == NULL || path[0] != '/') {
		memset(resp, 0, sizeof(*resp));
		return ll_err_set(err, -EINVAL, "kc_request: a method and an absolute path");
	}
	rq.verb = verb_of(method, content_type);
	return kc__entered_request(c, &rq, resp, err);
}

/* A request on @gvr's path plus @query_buf's query; @obj (or NULL) is sent as the body. */
int kc__path_error(struct kc_resp *resp, struct ll_err *err)
{
	memset(resp, 0, sizeof(*resp));
	return ll_err_set(err, -EMSGSIZE, "API path too long");
}
