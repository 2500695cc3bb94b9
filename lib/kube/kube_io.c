/*
 * kube_io.c - transfers and the I/O thread, the only thread that touches curl
 * (see kube_internal.h for the transfer states and docs/internals/kube.md).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/ssl.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/kube_internal.h"

void kc__headers_add(struct curl_slist **list, const char *h)
{
	struct curl_slist *n = curl_slist_append(*list, h);

	if (n == NULL) {
		log_error("out of memory", "{s:s}", "in", "curl_slist_append");
		abort();
	}
	*list = n;
}

/* "Name: value", or "Name;" for an empty value (curl would drop "Name:"). */
static void extra_headers(struct xfer *x, const struct req *rq)
{
	char *h;

	for (size_t i = 0; i < rq->n_headers; i++) {
		const struct kc_header *kh = &rq->headers[i];

		h = *kh->value ? xasprintf("%s: %s", kh->name, kh->value)
		               : xasprintf("%s;", kh->name);
		kc__headers_add(&x->headers, h);
		free(h);
	}
}

struct xfer *kc__xfer_new(struct kc_client *c, const struct req *rq, bool stream)
{
	struct xfer *x = xcalloc(1, sizeof(*x));
	char *token = kc__token_dup(c), *h;

	x->c = c;
	link_init(&x->node);
	link_init(&x->cmd_node);
	clock_cond_init(&x->cond);
	x->method = rq->method;
	x->url = xasprintf("%s%s", c->base, rq->path);
	x->body = rq->body;
	x->body_len = rq->body_len;
	x->stream = stream;
	x->timeout_ms = rq->timeout_ms > 0 ? rq->timeout_ms : c->timeout_ms;
	x->http1 = rq->http1;
	buf_init(&x->rbody, KC_MAX_BODY);
	/* Any single write fits once the queue is empty, so appends never hit the cap. */
	buf_init(&x->q, 2 * (size_t)WATCH_QUEUE_MAX);

	h = xasprintf("Accept: %s", rq->accept ? rq->accept : "application/json");
	kc__headers_add(&x->headers, h);
	free(h);
	if (rq->body) {
		h = xasprintf("Content-Type: %s",
		              rq->content_type ? rq->content_type : "application/json");
		kc__headers_add(&x->headers, h);
		free(h);
	}
	if (token && *token) {
		h = xasprintf("Authorization: Bearer %s", token);
		kc__headers_add(&x->headers, h);
		free(h);
	}
	free(token);
	kc__headers_add(&x->headers, "Expect:");
	extra_headers(x, rq);
	return x;
}

void kc__xfer_free(struct xfer *x)
{
	if (x == NULL)
		return;
	curl_slist_free_all(x->headers);
	free(x->url);
	buf_release(&x->rbody);
	buf_release(&x->q);
	pthread_cond_destroy(&x->cond);
	free(x);
}

int kc__submit(struct kc_client *c, struct xfer *x)
{
	pthread_mutex_lock(&c->lock);
	if (c->stopping) {
		pthread_mutex_unlock(&c->lock);
		return -ECANCELED;
	}
	x->state = XFER_QUEUED;
	x->last_rx_ns = clock_mono_ns();
	link_add_tail(&c->incoming, &x->node);
	pthread_mutex_unlock(&c->lock);
	curl_multi_wakeup(c->multi);
	return 0;
}

void kc__wait_done(struct kc_client *c, struct xfer *x)
{
	pthread_mutex_lock(&c->lock);
	while (x->state != XFER_DONE)
		pthread_cond_wait(&x->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

/* Caller holds c->lock; the transfer is not DONE. Wake the I/O thread after unlocking. */
void kc__post_locked(struct kc_client *c, struct xfer *x, unsigned cmd)
{
	x->cmds |= cmd;
	if (!link_linked(&x->cmd_node))
		link_add_tail(&c->cmds, &x->cmd_node);
}

/* Stop a transfer early and wait until the I/O thread has let go of it. */
void kc__cancel_and_wait(struct kc_client *c, struct xfer *x)
{
	bool posted = false;

	pthread_mutex_lock(&c->lock);
	if (x->state != XFER_DONE) {
		kc__post_locked(c, x, CMD_CANCEL);
		posted = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (posted)
		curl_multi_wakeup(c->multi);
	kc__wait_done(c, x);
}

/* ---------- the I/O thread ---------- */

static size_t body_write(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;

	if (buf_append(&x->rbody, p, n)) {
		x->overflow = true;
		return 0;
	}
	return n;
}

static void note_status(struct xfer *x)
{
	long status = 0;

	char *ct = NULL;

	if (x->http_status == 0) {
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200) {
			x->http_status = status;
			curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
			if (ct && strlen(ct) < sizeof(x->content_type))
				snprintf(x->content_type, sizeof(x->content_type), "%s", ct);
		}
	}
}

/* Stream headers: the consumer learns the status and content type before any bytes arrive. */
static size_t watch_header(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	struct kc_client *c = x->c;

	if (n > 2 || (n && p[0] != '\r' && p[0] != '\n'))
		return n;
	pthread_mutex_lock(&c->lock);
	note_status(x);
	if (x->http_status) {
		x->headers_ns = clock_mono_ns();
		x->last_rx_ns = x->headers_ns;
		pthread_cond_signal(&x->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

static size_t watch_write(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	struct kc_client *c = x->c;
	size_t ret = n;

	pthread_mutex_lock(&c->lock);
	note_status(x);
	if (x->q.len && x->q.len + n > WATCH_QUEUE_MAX) {
		/* curl hands the same bytes again once the consumer unpauses the transfer */
		x->paused = true;
		ret = CURL_WRITEFUNC_PAUSE;
	} else if (buf_append(&x->q, p, n)) {
		x->overflow = true; /* a single write over twice the queue: curl never sends one */
		ret = 0;
	} else {
		x->last_rx_ns = clock_mono_ns();
		pthread_cond_signal(&x->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* TCP_KEEPCNT has no curl option in 7.88: with idle 30 s and interval 10 s, dead in 60 s. */
static int sockopt_cb(void *ud, curl_socket_t fd, curlsocktype purpose)
{
	int cnt = 3;

	if (purpose == CURLSOCKTYPE_IPCXN)
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	return CURL_SOCKOPT_OK;
}

#define SETOPT(rc, e, opt, val)                                     \
	do {                                                        \
		if ((rc) == CURLE_OK)                               \
			(rc) = curl_easy_setopt((e), (opt), (val)); \
	} while (0)

/*
 * An idle TLS connection keeps OpenSSL's 16 KiB read and write buffers unless told to release
 * them; landlord holds a connection per watch, idle most of the time (docs/benchmarks.md, "Idle
 * memory"). curl hands the SSL_CTX to this callback before the handshake.
 */
static CURLcode release_idle_buffers(CURL *e, void *ssl_ctx, void *ud)
{
	(void)e;
	(void)ud;
	SSL_CTX_set_mode((SSL_CTX *)ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
	return CURLE_OK;
}

static CURLcode tls_opts(struct kc_client *c, CURL *e)
{
	CURLcode rc = curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, release_idle_buffers);

	if (rc == CURLE_NOT_BUILT_IN || rc == CURLE_UNKNOWN_OPTION)
		rc = CURLE_OK; /* a TLS backend other than OpenSSL: nothing to release */

	if (c->ca.data)
		SETOPT(rc, e, CURLOPT_CAINFO_BLOB, &c->ca);
	if (c->cert.data) {
		SETOPT(rc, e, CURLOPT_SSLCERT_BLOB, &c->cert);
		SETOPT(rc, e, CURLOPT_SSLCERTTYPE, "PEM");
		SETOPT(rc, e, CURLOPT_SSLKEY_BLOB, &c->key);
		SETOPT(rc, e, CURLOPT_SSLKEYTYPE, "PEM");
	}
	SETOPT(rc, e, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
	SETOPT(rc, e, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
	if (c->connect_to)
		SETOPT(rc, e, CURLOPT_CONNECT_TO, c->connect_to);
	return rc;
}

static CURLcode common_opts(struct kc_client *c, struct xfer *x, CURL *e)
{
	CURLcode rc = CURLE_OK;

	SETOPT(rc, e, CURLOPT_URL, x->url);
	SETOPT(rc, e, CURLOPT_PRIVATE, (void *)x);
	SETOPT(rc, e, CURLOPT_ERRORBUFFER, x->errbuf);
	SETOPT(rc, e, CURLOPT_NOSIGNAL, 1L);
	SETOPT(rc, e, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(rc, e, CURLOPT_HTTPHEADER, x->headers);
	SETOPT(rc, e, CURLOPT_USERAGENT, c->user_agent);
	SETOPT(rc, e, CURLOPT_HTTP_VERSION,
	       c->http1 || x->http1 ? (long)CURL_HTTP_VERSION_1_1 : (long)CURL_HTTP_VERSION_2TLS);
	SETOPT(rc, e, CURLOPT_PIPEWAIT, 1L);
	/* Bodies go out from memory (POSTFIELDS), never through curl's upload buffer: keep that
	 * at its 16 KiB minimum instead of 64 KiB per handle (docs/benchmarks.md, "Idle memory").
	 */
	SETOPT(rc, e, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
	SETOPT(rc, e, CURLOPT_TCP_KEEPALIVE, 1L);
	SETOPT(rc, e, CURLOPT_TCP_KEEPIDLE, 30L);
	SETOPT(rc, e, CURLOPT_TCP_KEEPINTVL, 10L);
	SETOPT(rc, e, CURLOPT_SOCKOPTFUNCTION, sockopt_cb);
	SETOPT(rc, e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	/* POSTFIELDS alone would turn the request into a POST */
	if (strcmp(x->method, "GET") != 0 || x->body)
		SETOPT(rc, e, CURLOPT_CUSTOMREQUEST, x->method);
	if (x->body) {
		SETOPT(rc, e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
		SETOPT(rc, e, CURLOPT_POSTFIELDS, x->body);
	}
	return rc == CURLE_OK ? tls_opts(c, e) : rc;
}

static CURLcode io_opts(struct kc_client *c, struct xfer *x, CURL *e)
{
	CURLcode rc = CURLE_OK;

	if (x->stream) {
		SETOPT(rc, e, CURLOPT_HEADERFUNCTION, watch_header);
		SETOPT(rc, e, CURLOPT_HEADERDATA, (void *)x);
		SETOPT(rc, e, CURLOPT_WRITEFUNCTION, watch_write);
	} else {
		SETOPT(rc, e, CURLOPT_WRITEFUNCTION, body_write);
		SETOPT(rc, e, CURLOPT_TIMEOUT_MS, x->timeout_ms);
	}
	SETOPT(rc, e, CURLOPT_WRITEDATA, (void *)x);
	return rc;
}

/* Create the easy handle (CURLOPT_PRIVATE: the transfer) and add it to the multi handle. */
static int easy_start(struct kc_client *c, struct xfer *x)
{
	CURLcode rc;

	x->easy = curl_easy_init();
	if (x->easy == NULL)
		return -ENOMEM;
	rc = common_opts(c, x, x->easy);
	if (rc == CURLE_OK)
		rc = io_opts(c, x, x->easy);
	if (rc != CURLE_OK) {
		if (x->errbuf[0] == '\0')
			snprintf(x->errbuf, sizeof(x->errbuf), "%s", curl_easy_strerror(rc));
		return kc__curl_errno(rc, 0);
	}
	if (curl_multi_add_handle(c->multi, x->easy) != CURLM_OK) {
		snprintf(x->errbuf, sizeof(x->errbuf),
		         "cannot add the transfer to the multi handle");
		return -EIO;
	}
	x->in_multi = true;
	return 0;
}

/* Release the easy handle and hand the transfer back to its caller (DONE). */
static void finish(struct kc_client *c, struct xfer *x, int rc)
{
	long status = 0, connects = 0;
	char *ct = NULL, ctype[KC_CONTENT_TYPE_MAX] = "";
	bool json = false;

	if (x->easy) {
		if (x->in_multi)
			curl_multi_remove_handle(c->multi, x->easy);
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &connects);
		curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
		json = ct && strstr(ct, "json");
		if (ct && strlen(ct) < sizeof(ctype))
			snprintf(ctype, sizeof(ctype), "%s", ct);
		curl_easy_cleanup(x->easy);
		x->easy = NULL;
		x->in_multi = false;
	}
	pthread_mutex_lock(&c->lock);
	link_del(&x->node);
	if (link_linked(&x->cmd_node))
		link_del(&x->cmd_node);
	x->cmds = 0;
	x->rc = rc;
	if (status >= 200)
		x->http_status = status;
	x->json = json;
	if (x->content_type[0] == '\0')
		memcpy(x->content_type, ctype, sizeof(ctype));
	c->connects += connects;
	x->done_ns = clock_mono_ns();
	x->state = XFER_DONE;
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&c->lock);
}

static void finish_cancelled(struct kc_client *c, struct xfer *x, const char *why)
{
	snprintf(x->errbuf, sizeof(x->errbuf), "%s", why);
	finish(c, x, -ECANCELED);
}

/* Unlink the first transfer of c->incoming or c->active. */
static struct xfer *pop(struct kc_client *c, struct link *head)
{
	struct xfer *x = NULL;

	pthread_mutex_lock(&c->lock);
	if (link_linked(head)) {
		x = link_entry(head->next, struct xfer, node);
		link_del(&x->node);
	}
	pthread_mutex_unlock(&c->lock);
	return x;
}

static void start_incoming(struct kc_client *c)
{
	struct xfer *x;
	int rc;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		x = link_linked(&c->incoming) ? link_entry(c->incoming.next, struct xfer, node)
		                              : NULL;
		if (x) {
			link_del(&x->node);
			link_add_tail(&c->active, &x->node);
			x->state = XFER_ACTIVE;
		}
		pthread_mutex_unlock(&c->lock);
		if (x == NULL)
			return;
		rc = easy_start(c, x);
		if (rc)
			finish(c, x, rc);
	}
}

static void run_cmds(struct kc_client *c)
{
	struct xfer *x;
	enum xfer_state state;
	unsigned cmds;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		x = link_linked(&c->cmds) ? link_entry(c->cmds.next, struct xfer, cmd_node) : NULL;
		if (x) {
			link_del(&x->cmd_node);
			cmds = x->cmds;
			x->cmds = 0;
			state = x->state;
		}
		pthread_mutex_unlock(&c->lock);
		if (x == NULL)
			return;
		/* Only this thread finishes transfers, so @x is not DONE yet. */
		if (cmds & CMD_CANCEL)
			finish_cancelled(c, x,
			                 state == XFER_QUEUED ? "cancelled before start"
			                                      : "cancelled");
		else if ((cmds & CMD_UNPAUSE) && x->easy)
			curl_easy_pause(x->easy, CURLPAUSE_CONT);
	}
}

static void reap(struct kc_client *c)
{
	struct CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
		struct xfer *x = NULL;
		CURLcode res = m->data.result;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		if (res != CURLE_OK && x->errbuf[0] == '\0')
			snprintf(x->errbuf, sizeof(x->errbuf), "%s", curl_easy_strerror(res));
		finish(c, x, kc__curl_errno(res, x->overflow));
	}
}

static void cancel_all(struct kc_client *c)
{
	struct xfer *x;

	while ((x = pop(c, &c->incoming)) != NULL)
		finish_cancelled(c, x, "client closed");
	while ((x = pop(c, &c->active)) != NULL)
		finish_cancelled(c, x, "client closed");
}

static bool stopping(struct kc_client *c)
{
	bool stop;

	pthread_mutex_lock(&c->lock);
	stop = c->stopping;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

static void *io_main(void *arg)
{
	struct kc_client *c = arg;
	int running;
	CURLMcode mc;

	while (!stopping(c)) {
		start_incoming(c);
		run_cmds(c);
		curl_multi_perform(c->multi, &running);
		reap(c);
		mc = curl_multi_poll(c->multi, NULL, 0, IO_POLL_MS, NULL);
		if (mc != CURLM_OK) {
			log_error("curl_multi_poll failed", "{s:s}", "error",
			          curl_multi_strerror(mc));
			nanosleep(&(struct timespec){0, 10 * CLOCK_NS_PER_MS}, NULL);
		}
	}
	cancel_all(c);
	return NULL;
}
int kc__start_io(struct kc_client *c, struct ll_err *err)
{
	sigset_t all, old;
	int rc;

	c->multi = curl_multi_init();
	if (c->multi == NULL)
		return ll_err_set(err, -ENOMEM, "curl_multi_init failed");
	curl_multi_setopt(c->multi, CURLMOPT_PIPELINING,
	                  c->http1 ? (long)CURLPIPE_NOTHING : (long)CURLPIPE_MULTIPLEX);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_CONCURRENT_STREAMS, 1000L);
	/* The I/O thread takes no signals: the process handles them elsewhere. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&c->thread, NULL, io_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		curl_multi_cleanup(c->multi);
		return ll_err_set(err, rc, "cannot start the API client thread: %s", strerror(-rc));
	}
	return 0;
}
