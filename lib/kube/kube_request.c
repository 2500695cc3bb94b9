/*
 * kube_request.c - one request and its answer: entering the client, metrics, parsing.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
	buf_release(&resp->raw);
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
	/* an access review is a POST that stores nothing */
	bool write = strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0 &&
	             strcmp(rq->verb, "REVIEW") != 0;

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

/* ---------- validation ---------- */

/* RFC 9110 tchar. */
static bool token_char(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static bool http_token(const char *s, size_t max)
{
	size_t n = 0;

	for (; s && s[n]; n++) {
		if (n >= max || !token_char((unsigned char)s[n]))
			return false;
	}
	return n > 0;
}

/* Headers the client writes itself, or that would change how the request is framed. */
static const char *const OWNED_HEADERS[] = {
        "Authorization",
        "Host",
        "Content-Length",
        "Transfer-Encoding",
        "Content-Type",
        "Accept",
        "Connection",
        "Expect",
        "Keep-Alive",
        "Upgrade",
        "TE",
        "Trailer",
        "User-Agent",
        "Proxy-Authorization",
        "Proxy-Connection",
};

static bool owned_header(const char *name)
{
	for (size_t i = 0; i < sizeof(OWNED_HEADERS) / sizeof(OWNED_HEADERS[0]); i++)
		if (strcasecmp(name, OWNED_HEADERS[i]) == 0)
			return true;
	return false;
}

/* A value cannot end its line early: no control character but tab. */
static bool header_value_ok(const char *v)
{
	for (; *v; v++) {
		unsigned char ch = (unsigned char)*v;

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return false;
	}
	return true;
}

static int check_header(const struct kc_header *h, size_t i, struct ll_err *err)
{
	if (h->name == NULL || !http_token(h->name, KC_MAX_HEADER_LINE))
		return ll_err_set(err, -EINVAL, "header %zu: the name is not an HTTP token", i);
	if (owned_header(h->name))
		return ll_err_set(err, -EINVAL, "header %zu: %.64s is set by the client", i,
		                  h->name);
	if (h->value == NULL || !header_value_ok(h->value))
		return ll_err_set(err, -EINVAL,
		                  "header %zu (%.64s): the value holds a control character", i,
		                  h->name);
	if (strlen(h->name) + 2 + strlen(h->value) > KC_MAX_HEADER_LINE)
		return ll_err_set(err, -EINVAL, "header %zu (%.64s): over %u bytes", i, h->name,
		                  KC_MAX_HEADER_LINE);
	return 0;
}

static int check_headers(const struct kc_request *kr, struct ll_err *err)
{
	int rc = 0;

	if (kr->n_headers > KC_MAX_HEADERS)
		return ll_err_set(err, -EINVAL, "%zu headers, over %d", kr->n_headers,
		                  KC_MAX_HEADERS);
	if (kr->n_headers && kr->headers == NULL)
		return ll_err_set(err, -EINVAL, "n_headers without headers");
	for (size_t i = 0; i < kr->n_headers && rc == 0; i++)
		rc = check_header(&kr->headers[i], i, err);
	return rc;
}

/* The metrics labels a request may carry: anything else is OTHER. */
static const char *const VERB_LABELS[] = {"GET",   "LIST",  "WATCH",  "CREATE", "UPDATE",
                                          "PATCH", "APPLY", "DELETE", "HEAD",   "REVIEW"};

static const char *known_label(const char *s)
{
	for (size_t i = 0; s && i < sizeof(VERB_LABELS) / sizeof(VERB_LABELS[0]); i++)
		if (strcmp(s, VERB_LABELS[i]) == 0)
			return VERB_LABELS[i];
	return NULL;
}

const char *kc__verb_label(const char *verb, const char *method, const char *content_type)
{
	const char *label = known_label(verb);

	if (label)
		return label;
	if (strcmp(method, "POST") == 0)
		return "CREATE";
	if (strcmp(method, "PUT") == 0)
		return "UPDATE";
	if (strcmp(method, "PATCH") == 0 && content_type &&
	    strncmp(content_type, "application/apply-patch", 23) == 0)
		return "APPLY";
	if (strcmp(method, "LIST") == 0 || strcmp(method, "WATCH") == 0)
		return "OTHER"; /* not methods: a label only when asked for */
	label = known_label(method);
	return label ? label : "OTHER";
}

int kc__req_prepare(const struct kc_request *kr, const char *verb, struct buf *target,
                    struct req *out, struct ll_err *err)
{
	int rc;

	if (kr == NULL || !http_token(kr->method, 32))
		return ll_err_set(err, -EINVAL, "the method is not an HTTP token");
	rc = kc__check_target(kr->path, kr->query, err);
	if (rc == 0)
		rc = check_headers(kr, err);
	if (rc)
		return rc;
	buf_reset(target);
	rc = buf_append_str(target, kr->path);
	if (rc == 0 && kr->query && *kr->query)
		rc = buf_appendf(target, "?%s", kr->query);
	if (rc)
		return ll_err_set(err, -EMSGSIZE, "API path too long");
	*out = (struct req){
	        .verb = kc__verb_label(kr->verb ? kr->verb : verb, kr->method, kr->content_type),
	        .method = kr->method,
	        .path = buf_cstr(target),
	        .content_type = kr->content_type,
	        .body = kr->body,
	        .body_len = kr->body ? kr->body_len : 0,
	        .accept = kr->accept,
	        .http1 = (kr->flags & KC_REQ_HTTP1) != 0,
	        .headers = kr->headers,
	        .n_headers = kr->n_headers,
	        .flags = kr->flags,
	        .timeout_ms = kr->timeout_ms,
	};
	return 0;
}

/* ---------- the answer ---------- */

void kc__set_content_type(struct kc_resp *resp, const char *ct)
{
	size_t n = ct ? strlen(ct) : 0;

	if (n >= sizeof(resp->content_type))
		n = 0;
	memcpy(resp->content_type, ct ? ct : "", n);
	resp->content_type[n] = '\0';
}

/*
 * A KC_REQ_RAW answer: the bytes move to resp->raw; a JSON error answer is parsed only for its
 * Status.
 */
static void raw_answer(struct xfer *x, struct kc_resp *resp)
{
	json_t *body = NULL;

	if (x->http_status >= 400 && x->json && x->rbody.len)
		body = jx_loads(x->rbody.p, x->rbody.len, NULL);
	resp->http_status = x->http_status;
	kc__parse_status(body, x->http_status, x->rbody.p, x->rbody.len, &resp->status);
	json_decref(body);
	resp->raw = x->rbody;
	x->rbody = (struct buf)BUF_INIT(0);
}

/* One non-stream request; the caller has entered the client. */
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
		else if (rq->flags & KC_REQ_RAW)
			raw_answer(x, resp);
		else
			rc = kc__fill_resp(x->http_status, x->json, &x->rbody, resp, err);
		if (rc == 0)
			kc__set_content_type(resp, x->content_type);
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

int kc_do(struct kc_client *c, const struct kc_request *kr, struct kc_resp *resp,
          struct ll_err *err)
{
	struct buf target = BUF_INIT(BUF_MAX_INTERNAL);
	struct req rq;
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (c == NULL)
		return ll_err_set(err, -EINVAL, "kc_do: no client");
	rc = kc__req_prepare(kr, NULL, &target, &rq, err);
	if (rc == 0)
		rc = kc__entered_request(c, &rq, resp, err);
	buf_release(&target);
	return rc;
}

int kc_request(struct kc_client *c, const char *method, const char *path, const char *content_type,
               const char *body, size_t body_len, const char *accept, struct kc_resp *resp,
               struct ll_err *err)
{
	struct buf target = BUF_INIT(BUF_MAX_INTERNAL);
	struct kc_request kr = {.method = method,
	                        .content_type = content_type,
	                        .body = body,
	                        .body_len = body_len,
	                        .accept = accept};
	int rc;

	if (c == NULL || method == NULL || path == NULL || path[0] != '/') {
		memset(resp, 0, sizeof(*resp));
		return ll_err_set(err, -EINVAL, "kc_request: a method and an absolute path");
	}
	rc = buf_append_str(&target, path);
	if (rc) {
		rc = kc__path_error(resp, err);
	} else {
		kc__split_query(&target, &kr.query);
		kr.path = buf_cstr(&target);
		rc = kc_do(c, &kr, resp, err);
	}
	buf_release(&target);
	return rc;
}

int kc__path_error(struct kc_resp *resp, struct ll_err *err)
{
	memset(resp, 0, sizeof(*resp));
	return ll_err_set(err, -EMSGSIZE, "API path too long");
}
