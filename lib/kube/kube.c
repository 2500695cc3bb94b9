/*
 * kube.c - untyped Kubernetes REST client (see kube.h and docs/internals/kube.md).
 *
 * Calling threads describe a request in a struct xfer and queue it; the client's I/O thread owns
 * the curl multi handle and every easy handle, so curl is only ever touched from that thread.
 * A transfer moves QUEUED -> ACTIVE -> DONE under c->lock; only the I/O thread makes it DONE, and
 * the calling thread frees it only once it is DONE. Commands from callers (unpause a watch,
 * cancel) are flags on the transfer plus a link in c->cmds, which finishing a transfer undoes.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "base/ratelimit.h"
#include "kube/kube.h"
#include "kube/kube_internal.h"
#include "kube/kubeconfig.h"
#include "kube/watchsplit.h"

#ifndef LANDLORD_VERSION
#define LANDLORD_VERSION "dev"
#endif

#define WATCH_QUEUE_MAX    (4u << 20) /* watch bytes buffered before the stream is paused */
#define WATCH_POLL_MS      200        /* how often a waiting watch checks cancel and idleness */
#define ERROR_BODY_MAX     (1u << 20) /* kept of a non-200 watch answer */
#define STATUS_MESSAGE_RAW 1024       /* bytes of a non-Status error body used as the message */
#define TOKEN_TTL_NS       (60 * CLOCK_NS_PER_SEC)
#define TOKEN_FILE_MAX     (64u << 10)
#define CONNECT_TIMEOUT_MS 10000L
#define IO_POLL_MS         1000

#define M_REQUESTS "landlord_api_requests_total"
#define M_DURATION "landlord_api_request_duration_seconds"

const struct kc_gvr KC_NAMESPACES = {"", "v1", "namespaces", "Namespace", false};
const struct kc_gvr KC_CONFIGMAPS = {"", "v1", "configmaps", "ConfigMap", true};
const struct kc_gvr KC_SECRETS = {"", "v1", "secrets", "Secret", true};
const struct kc_gvr KC_SERVICEACCOUNTS = {"", "v1", "serviceaccounts", "ServiceAccount", true};
const struct kc_gvr KC_PODS = {"", "v1", "pods", "Pod", true};
const struct kc_gvr KC_EVENTS = {"", "v1", "events", "Event", true};
const struct kc_gvr KC_RESOURCEQUOTAS = {"", "v1", "resourcequotas", "ResourceQuota", true};
const struct kc_gvr KC_LIMITRANGES = {"", "v1", "limitranges", "LimitRange", true};
const struct kc_gvr KC_PODTEMPLATES = {"", "v1", "podtemplates", "PodTemplate", true};
const struct kc_gvr KC_LEASES = {"coordination.k8s.io", "v1", "leases", "Lease", true};
const struct kc_gvr KC_ROLEBINDINGS = {"rbac.authorization.k8s.io", "v1", "rolebindings",
                                       "RoleBinding", true};
const struct kc_gvr KC_CLUSTERROLES = {"rbac.authorization.k8s.io", "v1", "clusterroles",
                                       "ClusterRole", false};
const struct kc_gvr KC_CLUSTERROLEBINDINGS = {"rbac.authorization.k8s.io", "v1",
                                              "clusterrolebindings", "ClusterRoleBinding", false};
const struct kc_gvr KC_NETWORKPOLICIES = {"networking.k8s.io", "v1", "networkpolicies",
                                          "NetworkPolicy", true};
const struct kc_gvr KC_CRDS = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                               "CustomResourceDefinition", false};

/* ---------- intrusive doubly-linked list ---------- */

struct link {
	struct link *prev, *next;
};

#define link_entry(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

static void link_init(struct link *l)
{
	l->prev = l;
	l->next = l;
}

static bool link_linked(const struct link *l)
{
	return l->next != l;
}

static void link_add_tail(struct link *head, struct link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static void link_del(struct link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	link_init(l);
}

/* ---------- types ---------- */

enum xfer_state { XFER_QUEUED, XFER_ACTIVE, XFER_DONE };

enum { CMD_UNPAUSE = 1, CMD_CANCEL = 2 };

struct xfer {
	struct kc_client *c;
	struct link node;     /* in c->incoming or c->active (c->lock) */
	struct link cmd_node; /* in c->cmds while a command waits (c->lock) */
	pthread_cond_t cond;  /* signalled on DONE and on new watch bytes */

	/* The request: set before submit(), read-only afterwards. */
	const char *method;
	char *url;
	struct curl_slist *headers;
	const char *body;
	size_t body_len;
	bool watch;
	bool http1;

	/* I/O thread only until DONE, then the caller's. */
	CURL *easy;
	bool in_multi;
	bool overflow;
	char errbuf[CURL_ERROR_SIZE];
	struct buf rbody; /* non-watch response body */

	/* Shared, under c->lock. */
	enum xfer_state state;
	unsigned cmds;
	int rc; /* when DONE: 0 or a negative errno */
	long http_status;
	bool json;
	struct buf q; /* watch bytes the consumer has not taken yet */
	bool paused;
	int64_t last_rx_ns;
	int64_t headers_ns;
	int64_t done_ns;
};

struct kc_client {
	char *server; /* as configured */
	char *base;   /* URL prefix requests use (tls-server-name applied) */
	struct curl_slist *connect_to;
	struct curl_blob ca, cert, key;
	bool insecure;
	char *user_agent;
	char *name;
	long timeout_ms;
	bool http1;
	struct tbucket rl;

	pthread_mutex_t token_lock;
	char *token;      /* static token */
	char *token_file; /* preferred when set */
	char *token_cached;
	int64_t token_read_ns;

	CURLM *multi;
	pthread_t thread;

	pthread_mutex_t lock;
	pthread_cond_t idle; /* callers reached 0 while stopping */
	struct link incoming, active, cmds;
	bool stopping;
	int callers;
	long connects;
};

/* What a calling thread asks for. */
struct req {
	const char *verb; /* metrics label */
	const char *method;
	const char *path;
	const char *content_type;
	const char *body;
	size_t body_len;
	const char *accept;
	bool http1; /* on an HTTP/1.1 connection of its own (list pages, see kc_list) */
};

/* ---------- errors and statuses ---------- */

/* libcurl's codes as errnos; a code not listed is -EIO. */
static const struct {
	CURLcode curl;
	int err;
} CURL_ERRNO[] = {
        {CURLE_OK, 0},
        {CURLE_COULDNT_CONNECT, -ECONNREFUSED},
        {CURLE_COULDNT_RESOLVE_HOST, -EHOSTUNREACH},
        {CURLE_COULDNT_RESOLVE_PROXY, -EHOSTUNREACH},
        {CURLE_OPERATION_TIMEDOUT, -ETIMEDOUT},
        {CURLE_SSL_CONNECT_ERROR, -EPROTO},
        {CURLE_PEER_FAILED_VERIFICATION, -EPROTO},
        {CURLE_SSL_CERTPROBLEM, -EPROTO},
        {CURLE_SSL_CIPHER, -EPROTO},
        {CURLE_SSL_CACERT_BADFILE, -EPROTO},
        {CURLE_SSL_ISSUER_ERROR, -EPROTO},
        {CURLE_SSL_PINNEDPUBKEYNOTMATCH, -EPROTO},
        {CURLE_SSL_INVALIDCERTSTATUS, -EPROTO},
        {CURLE_SSL_CRL_BADFILE, -EPROTO},
        {CURLE_SSL_SHUTDOWN_FAILED, -EPROTO},
        {CURLE_SSL_ENGINE_NOTFOUND, -EPROTO},
        {CURLE_SSL_ENGINE_SETFAILED, -EPROTO},
        {CURLE_SSL_ENGINE_INITFAILED, -EPROTO},
        {CURLE_USE_SSL_FAILED, -EPROTO},
        {CURLE_ABORTED_BY_CALLBACK, -ECANCELED},
        {CURLE_OUT_OF_MEMORY, -ENOMEM},
        {CURLE_SEND_ERROR, -ECONNRESET},
        {CURLE_RECV_ERROR, -ECONNRESET},
        {CURLE_GOT_NOTHING, -ECONNRESET},
        {CURLE_PARTIAL_FILE, -ECONNRESET},
        {CURLE_HTTP2, -ECONNRESET},
        {CURLE_HTTP2_STREAM, -ECONNRESET},
        {CURLE_URL_MALFORMAT, -EINVAL},
        {CURLE_UNSUPPORTED_PROTOCOL, -EINVAL},
        {CURLE_BAD_FUNCTION_ARGUMENT, -EINVAL},
};

int kc__curl_errno(int curl_code, int overflow)
{
	if (curl_code == CURLE_WRITE_ERROR)
		return overflow ? -EMSGSIZE : -EIO;
	for (size_t i = 0; i < sizeof(CURL_ERRNO) / sizeof(CURL_ERRNO[0]); i++)
		if ((int)CURL_ERRNO[i].curl == curl_code)
			return CURL_ERRNO[i].err;
	return -EIO;
}

/* The reasons client-go gives answers that carry no metav1.Status. */
static const char *reason_for(long code)
{
	switch (code) {
	case 400:
		return "BadRequest";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "NotFound";
	case 405:
		return "MethodNotAllowed";
	case 406:
		return "NotAcceptable";
	case 409:
		return "Conflict";
	case 410:
		return "Gone";
	case 413:
		return "RequestEntityTooLarge";
	case 415:
		return "UnsupportedMediaType";
	case 422:
		return "Invalid";
	case 429:
		return "TooManyRequests";
	case 500:
		return "InternalError";
	case 503:
		return "ServiceUnavailable";
	case 504:
		return "Timeout";
	default:
		return code >= 500 ? "InternalError" : "";
	}
}

static void copy_str(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

static void trim_end(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

void kc__parse_status(const json_t *body, long http_status, const char *raw, size_t raw_len,
                      struct kc_status *out)
{
	const char *s;

	memset(out, 0, sizeof(*out));
	s = jx_str(body, "kind", NULL);
	if (s && strcmp(s, "Status") == 0) {
		out->code = (int)jx_int(body, http_status, "code", NULL);
		s = jx_str(body, "reason", NULL);
		if (s == NULL || *s == '\0')
			s = reason_for(http_status);
		copy_str(out->reason, sizeof(out->reason), s, strlen(s));
		s = jx_str(body, "message", NULL);
		if (s)
			copy_str(out->message, sizeof(out->message), s, strlen(s));
		return;
	}
	if (http_status < 400)
		return;
	out->code = (int)http_status;
	s = reason_for(http_status);
	copy_str(out->reason, sizeof(out->reason), s, strlen(s));
	if (raw && raw_len)
		copy_str(out->message, sizeof(out->message), raw,
		         raw_len < STATUS_MESSAGE_RAW ? raw_len : STATUS_MESSAGE_RAW);
	trim_end(out->message);
	if (out->message[0] == '\0')
		snprintf(out->message, sizeof(out->message), "HTTP %ld", http_status);
}

void kc_resp_release(struct kc_resp *resp)
{
	json_decref(resp->body);
	memset(resp, 0, sizeof(*resp));
}

bool kc_resp_ok(const struct kc_resp *resp)
{
	return resp->http_status >= 200 && resp->http_status < 300;
}

/* ---------- paths ---------- */

static int seg(struct buf *out, const char *s)
{
	int rc = buf_append(out, "/", 1);

	return rc ? rc : buf_append_urlencoded(out, s);
}

int kc_path(struct buf *out, const struct kc_gvr *gvr, const char *ns, const char *name,
            const char *subresource)
{
	bool grouped = gvr->group && *gvr->group;
	int rc = buf_append_str(out, grouped ? "/apis" : "/api");

	if (rc == 0 && grouped)
		rc = seg(out, gvr->group);
	if (rc == 0)
		rc = seg(out, gvr->version);
	if (rc == 0 && gvr->namespaced && ns && *ns) {
		rc = seg(out, "namespaces");
		if (rc == 0)
			rc = seg(out, ns);
	}
	if (rc == 0)
		rc = seg(out, gvr->resource);
	if (rc == 0 && name && *name) {
		rc = seg(out, name);
		if (rc == 0 && subresource && *subresource)
			rc = seg(out, subresource);
	}
	return rc;
}

/* Append "?k=v" or "&k=v" with @v percent-encoded; NULL or empty values are skipped. */
static int query(struct buf *out, const char *k, const char *v)
{
	int rc;

	if (v == NULL || *v == '\0')
		return 0;
	rc = buf_append_str(out, strchr(buf_cstr(out), '?') ? "&" : "?");
	if (rc == 0)
		rc = buf_append_str(out, k);
	if (rc == 0)
		rc = buf_append(out, "=", 1);
	return rc ? rc : buf_append_urlencoded(out, v);
}

static int query_long(struct buf *out, const char *k, long v)
{
	char num[24];

	snprintf(num, sizeof(num), "%ld", v);
	return query(out, k, num);
}

/* ---------- bearer token ---------- */

static char *read_token_file(const char *path)
{
	struct buf b = BUF_INIT(TOKEN_FILE_MAX);
	char chunk[4096];
	FILE *f = fopen(path, "re");
	size_t n;
	int rc = 0;

	if (f == NULL)
		return NULL;
	while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		rc = buf_append(&b, chunk, n);
	if (rc || ferror(f)) {
		fclose(f);
		buf_release(&b);
		return NULL;
	}
	fclose(f);
	if (b.p)
		trim_end(b.p);
	return buf_detach(&b);
}

/* A token goes into a header line: no control characters, which could split the header. */
static bool header_safe(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	}
	return true;
}

/* The token to send now (caller frees), or NULL. A token file is re-read at most once a minute. */
static char *token_dup(struct kc_client *c)
{
	int64_t now;
	char *t;

	if (c->token_file == NULL)
		return xstrdup(c->token);
	pthread_mutex_lock(&c->token_lock);
	now = clock_mono_ns();
	if (c->token_cached == NULL || now - c->token_read_ns >= TOKEN_TTL_NS) {
		t = read_token_file(c->token_file);
		if (t && *t && header_safe(t)) {
			free(c->token_cached);
			c->token_cached = t;
		} else {
			free(t);
			log_warn("cannot read the bearer token file", "{s:s}", "path",
			         c->token_file);
		}
		c->token_read_ns = now;
	}
	t = xstrdup(c->token_cached ? c->token_cached : c->token);
	pthread_mutex_unlock(&c->token_lock);
	return t;
}

/* ---------- transfers ---------- */

static void headers_add(struct curl_slist **list, const char *h)
{
	struct curl_slist *n = curl_slist_append(*list, h);

	if (n == NULL) {
		log_error("out of memory", "{s:s}", "in", "curl_slist_append");
		abort();
	}
	*list = n;
}

static struct xfer *xfer_new(struct kc_client *c, const struct req *rq, bool watch)
{
	struct xfer *x = xcalloc(1, sizeof(*x));
	char *token = token_dup(c), *h;

	x->c = c;
	link_init(&x->node);
	link_init(&x->cmd_node);
	clock_cond_init(&x->cond);
	x->method = rq->method;
	x->url = xasprintf("%s%s", c->base, rq->path);
	x->body = rq->body;
	x->body_len = rq->body_len;
	x->watch = watch;
	x->http1 = rq->http1;
	buf_init(&x->rbody, KC_MAX_BODY);
	/* Any single write fits once the queue is empty, so appends never hit the cap. */
	buf_init(&x->q, 2 * (size_t)WATCH_QUEUE_MAX);

	h = xasprintf("Accept: %s", rq->accept ? rq->accept : "application/json");
	headers_add(&x->headers, h);
	free(h);
	if (rq->body) {
		h = xasprintf("Content-Type: %s",
		              rq->content_type ? rq->content_type : "application/json");
		headers_add(&x->headers, h);
		free(h);
	}
	if (token && *token) {
		h = xasprintf("Authorization: Bearer %s", token);
		headers_add(&x->headers, h);
		free(h);
	}
	free(token);
	headers_add(&x->headers, "Expect:");
	return x;
}

static void xfer_free(struct xfer *x)
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

static int submit(struct kc_client *c, struct xfer *x)
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

static void wait_done(struct kc_client *c, struct xfer *x)
{
	pthread_mutex_lock(&c->lock);
	while (x->state != XFER_DONE)
		pthread_cond_wait(&x->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

/* Caller holds c->lock; the transfer is not DONE. Wake the I/O thread after unlocking. */
static void post_locked(struct kc_client *c, struct xfer *x, unsigned cmd)
{
	x->cmds |= cmd;
	if (!link_linked(&x->cmd_node))
		link_add_tail(&c->cmds, &x->cmd_node);
}

/* Stop a transfer early and wait until the I/O thread has let go of it. */
static void cancel_and_wait(struct kc_client *c, struct xfer *x)
{
	bool posted = false;

	pthread_mutex_lock(&c->lock);
	if (x->state != XFER_DONE) {
		post_locked(c, x, CMD_CANCEL);
		posted = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (posted)
		curl_multi_wakeup(c->multi);
	wait_done(c, x);
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

	if (x->http_status == 0) {
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200)
			x->http_status = status;
	}
}

/* Watch headers: the consumer learns the status before any event arrives. */
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

static CURLcode tls_opts(struct kc_client *c, CURL *e)
{
	CURLcode rc = CURLE_OK;

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

	if (x->watch) {
		SETOPT(rc, e, CURLOPT_HEADERFUNCTION, watch_header);
		SETOPT(rc, e, CURLOPT_HEADERDATA, (void *)x);
		SETOPT(rc, e, CURLOPT_WRITEFUNCTION, watch_write);
	} else {
		SETOPT(rc, e, CURLOPT_WRITEFUNCTION, body_write);
		SETOPT(rc, e, CURLOPT_TIMEOUT_MS, c->timeout_ms);
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
	char *ct = NULL;
	bool json = false;

	if (x->easy) {
		if (x->in_multi)
			curl_multi_remove_handle(c->multi, x->easy);
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &connects);
		curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
		json = ct && strstr(ct, "json");
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

/* ---------- calls ---------- */

static int enter(struct kc_client *c)
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

static void leave(struct kc_client *c)
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

static void record(struct kc_client *c, const struct req *rq, long status, int64_t start_ns,
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
static int fill_resp(long status, bool json, const struct buf *raw, struct kc_resp *resp,
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

static int transfer_error(const struct xfer *x, const struct req *rq, struct ll_err *err)
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
	x = xfer_new(c, rq, false);
	rc = submit(c, x);
	if (rc) {
		ll_err_set(err, rc, "%s %s: client closed", rq->method, rq->path);
	} else {
		wait_done(c, x);
		if (x->rc)
			rc = transfer_error(x, rq, err);
		else
			rc = fill_resp(x->http_status, x->json, &x->rbody, resp, err);
	}
	record(c, rq, rc ? 0 : resp->http_status, start, clock_mono_ns());
	xfer_free(x);
	return rc;
}

static int entered_request(struct kc_client *c, const struct req *rq, struct kc_resp *resp,
                           struct ll_err *err)
{
	int rc = enter(c);

	if (rc) {
		memset(resp, 0, sizeof(*resp));
		return ll_err_set(err, rc, "%s %s: client closed", rq->method, rq->path);
	}
	rc = request(c, rq, resp, err);
	leave(c);
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
	return entered_request(c, &rq, resp, err);
}

/* A request on @gvr's path plus @query_buf's query; @obj (or NULL) is sent as the body. */
static int object_request(struct kc_client *c, const char *verb, const char *method,
                          const struct buf *path, const char *content_type, const json_t *obj,
                          struct kc_resp *resp, struct ll_err *err)
{
	char *body = obj ? jx_dumps(obj) : NULL;
	struct req rq = {verb, method, buf_cstr(path), content_type, body, body ? strlen(body) : 0,
	                 NULL, false};
	int rc = entered_request(c, &rq, resp, err);

	free(body);
	return rc;
}

static int path_error(struct kc_resp *resp, struct ll_err *err)
{
	memset(resp, 0, sizeof(*resp));
	return ll_err_set(err, -EMSGSIZE, "API path too long");
}

int kc_get(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
           struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc = kc_path(&path, gvr, ns, name, NULL);

	rc = rc ? path_error(resp, err)
	        : object_request(c, "GET", "GET", &path, NULL, NULL, resp, err);
	buf_release(&path);
	return rc;
}

int kc_create(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const json_t *obj,
              struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc = kc_path(&path, gvr, ns, NULL, NULL);

	rc = rc ? path_error(resp, err)
	        : object_request(c, "CREATE", "POST", &path, NULL, obj, resp, err);
	buf_release(&path);
	return rc;
}

int kc_replace(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
               const char *subresource, const json_t *obj, struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc = kc_path(&path, gvr, ns, name, subresource);

	rc = rc ? path_error(resp, err)
	        : object_request(c, "UPDATE", "PUT", &path, NULL, obj, resp, err);
	buf_release(&path);
	return rc;
}

int kc_apply(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
             const char *subresource, const json_t *obj, const char *field_manager, bool force,
             struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc = kc_path(&path, gvr, ns, name, subresource);

	if (rc == 0)
		rc = query(&path, "fieldManager", field_manager);
	if (rc == 0 && force)
		rc = query(&path, "force", "true");
	rc = rc ? path_error(resp, err)
	        : object_request(c, "APPLY", "PATCH", &path, "application/apply-patch+yaml", obj,
	                         resp, err);
	buf_release(&path);
	return rc;
}

int kc_patch(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
             const char *subresource, enum kc_patch_type type, const json_t *patch,
             const char *field_manager, struct kc_resp *resp, struct ll_err *err)
{
	static const char *const types[] = {
	        [KC_PATCH_MERGE] = "application/merge-patch+json",
	        [KC_PATCH_JSON] = "application/json-patch+json",
	        [KC_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
	};
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc;

	if ((unsigned)type >= sizeof(types) / sizeof(types[0])) {
		memset(resp, 0, sizeof(*resp));
		return ll_err_set(err, -EINVAL, "unknown patch type %d", (int)type);
	}
	rc = kc_path(&path, gvr, ns, name, subresource);
	if (rc == 0)
		rc = query(&path, "fieldManager", field_manager);
	rc = rc ? path_error(resp, err)
	        : object_request(c, "PATCH", "PATCH", &path, types[type], patch, resp, err);
	buf_release(&path);
	return rc;
}

static json_t *delete_options(const struct kc_delete_opts *o)
{
	json_t *body = json_pack("{s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
	json_t *pre;

	if (o == NULL)
		return body;
	if (o->precondition_uid || o->precondition_rv) {
		pre = json_object();
		if (o->precondition_uid)
			json_object_set_new(pre, "uid", json_string(o->precondition_uid));
		if (o->precondition_rv)
			json_object_set_new(pre, "resourceVersion",
			                    json_string(o->precondition_rv));
		json_object_set_new(body, "preconditions", pre);
	}
	if (o->propagation)
		json_object_set_new(body, "propagationPolicy", json_string(o->propagation));
	if (o->grace_seconds >= 0)
		json_object_set_new(body, "gracePeriodSeconds", json_integer(o->grace_seconds));
	return body;
}

int kc_delete(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
              const struct kc_delete_opts *opts, struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	json_t *body = delete_options(opts);
	int rc = kc_path(&path, gvr, ns, name, NULL);

	rc = rc ? path_error(resp, err)
	        : object_request(c, "DELETE", "DELETE", &path, NULL, body, resp, err);
	json_decref(body);
	buf_release(&path);
	return rc;
}

/* ---------- list ---------- */

static int list_page_path(struct buf *path, const struct kc_gvr *gvr, const char *ns,
                          const struct kc_list_opts *o, const char *cont)
{
	int rc = kc_path(path, gvr, ns, NULL, NULL);

	if (rc == 0)
		rc = query_long(path, "limit", o && o->limit > 0 ? o->limit : 500);
	if (rc == 0 && o)
		rc = query(path, "labelSelector", o->label_selector);
	if (rc == 0 && o)
		rc = query(path, "fieldSelector", o->field_selector);
	/* The server refuses a resourceVersion next to a continue token. */
	if (rc == 0 && o && cont == NULL)
		rc = query(path, "resourceVersion", o->resource_version);
	if (rc == 0)
		rc = query(path, "continue", cont);
	return rc;
}

/* Hand each item out, dropping the page's reference as we go so pages shrink while listed. */
static int list_items(json_t *page, kc_item_fn on_item, void *ud, struct ll_err *err)
{
	json_t *items = json_object_get(page, "items");
	int rc = 0;

	if (items == NULL || json_is_null(items))
		return 0;
	if (!json_is_array(items))
		return ll_err_set(err, -EPROTO, "list answer whose items is not an array");
	for (size_t i = 0; i < json_array_size(items) && rc == 0; i++) {
		rc = on_item(json_array_get(items, i), ud);
		json_array_set_new(items, i, json_null());
	}
	json_array_clear(items);
	return rc;
}

/*
 * The continue token from the raw page, so the next page can be requested before this one is
 * parsed. The API server writes kind, apiVersion and metadata before items; anything else makes
 * the scan unsure and the caller parses first.
 */
struct scan {
	const char *p, *end;
};

struct span {
	const char *p;
	size_t len;
	bool escaped;
};

static void scan_space(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool scan_char(struct scan *s, char ch)
{
	scan_space(s);
	if (s->p == s->end || *s->p != ch)
		return false;
	s->p++;
	return true;
}

static bool scan_string(struct scan *s, struct span *out)
{
	struct span sp = {NULL, 0, false};

	if (!scan_char(s, '"'))
		return false;
	sp.p = s->p;
	while (s->p < s->end && *s->p != '"') {
		if (*s->p == '\\') {
			sp.escaped = true;
			s->p++;
			if (s->p == s->end)
				return false;
		}
		s->p++;
	}
	if (s->p == s->end)
		return false;
	sp.len = (size_t)(s->p - sp.p);
	s->p++;
	if (out)
		*out = sp;
	return true;
}

static bool scalar_char(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || ch == '-' || ch == '+' ||
	       ch == '.' || ch == 'E';
}

/* Skip one value; brackets are counted, not matched (a page that parses has them matched). */
static bool scan_skip(struct scan *s)
{
	unsigned depth = 0;
	const char *start;

	do {
		scan_space(s);
		if (s->p == s->end)
			return false;
		switch (*s->p) {
		case '"':
			if (!scan_string(s, NULL))
				return false;
			break;
		case '{':
		case '[':
			depth++;
			s->p++;
			break;
		case '}':
		case ']':
			if (depth == 0)
				return false;
			depth--;
			s->p++;
			break;
		default:
			/* a scalar, or the separators and scalars inside a container */
			start = s->p;
			while (s->p < s->end &&
			       (depth ? !memchr("\"{}[]", *s->p, 5) : scalar_char(*s->p)))
				s->p++;
			if (s->p == start)
				return false;
			break;
		}
	} while (depth > 0);
	return true;
}

static bool span_is(const struct span *sp, const char *word)
{
	return !sp->escaped && sp->len == strlen(word) && memcmp(sp->p, word, sp->len) == 0;
}

/* The metadata object: its "continue" member, if any. */
static enum kc_scan scan_metadata(struct scan *s, struct span *token)
{
	enum kc_scan r = KC_SCAN_LAST;
	struct span key;

	if (!scan_char(s, '{'))
		return KC_SCAN_UNSURE;
	if (scan_char(s, '}'))
		return r;
	do {
		if (!scan_string(s, &key) || key.escaped || !scan_char(s, ':'))
			return KC_SCAN_UNSURE;
		if (span_is(&key, "continue")) {
			if (r != KC_SCAN_LAST || !scan_string(s, token) || token->escaped)
				return KC_SCAN_UNSURE;
			r = token->len ? KC_SCAN_NEXT : KC_SCAN_LAST;
		} else if (!scan_skip(s)) {
			return KC_SCAN_UNSURE;
		}
	} while (scan_char(s, ','));
	return scan_char(s, '}') ? r : KC_SCAN_UNSURE;
}

enum kc_scan kc__scan_continue(const char *raw, size_t len, char **token)
{
	struct scan s = {raw, raw + len};
	enum kc_scan r = KC_SCAN_UNSURE;
	struct span key, tok = {NULL, 0, false};
	bool meta = false;

	*token = NULL;
	if (raw == NULL || !scan_char(&s, '{'))
		return KC_SCAN_UNSURE;
	do {
		if (!scan_string(&s, &key) || key.escaped || !scan_char(&s, ':'))
			return KC_SCAN_UNSURE;
		if (span_is(&key, "items"))
			break;
		if (span_is(&key, "metadata")) {
			if (meta)
				return KC_SCAN_UNSURE;
			meta = true;
			r = scan_metadata(&s, &tok);
			if (r == KC_SCAN_UNSURE)
				return r;
		} else if (!scan_skip(&s)) {
			return KC_SCAN_UNSURE;
		}
	} while (scan_char(&s, ','));
	if (!meta || !span_is(&key, "items"))
		return KC_SCAN_UNSURE;
	if (r == KC_SCAN_NEXT)
		*token = xstrndup(tok.p, tok.len);
	return r;
}

/*
 * One page request. A page is prepared (path built, rate-limit slot taken), sent, then waited
 * for; a failure before sending is kept in @rc and reported when the page's turn comes, so
 * errors surface in the order a page-by-page list would meet them.
 */
struct page {
	struct buf path;
	struct req rq;
	bool prepared;
	bool waited;
	int rc; /* list_page_path() fails only with -EMSGSIZE, submit() only with -ECANCELED */
	int64_t not_before; /* the rate-limit slot */
	int64_t start_ns;
	struct xfer *x; /* sent and not yet released */
};

struct lister {
	struct kc_client *c;
	const struct kc_gvr *gvr;
	const char *ns;
	const struct kc_list_opts *o;
	struct page pages[2]; /* the page being handed out and the one requested ahead */
};

static void page_prepare(struct lister *ls, struct page *pg, const char *cont)
{
	buf_reset(&pg->path);
	pg->prepared = true;
	pg->rc = list_page_path(&pg->path, ls->gvr, ls->ns, ls->o, cont);
	pg->rq.path = buf_cstr(&pg->path);
	pg->not_before = clock_mono_ns() + tbucket_reserve(&ls->c->rl);
}

static bool page_due(const struct page *pg)
{
	return pg->not_before <= clock_mono_ns();
}

static void page_send(struct lister *ls, struct page *pg)
{
	if (pg->rc || pg->x)
		return;
	if (!page_due(pg))
		clock_sleep_until(pg->not_before);
	pg->start_ns = clock_mono_ns();
	pg->x = xfer_new(ls->c, &pg->rq, false);
	pg->rc = submit(ls->c, pg->x);
	if (pg->rc) {
		record(ls->c, &pg->rq, 0, pg->start_ns, clock_mono_ns());
		xfer_free(pg->x);
		pg->x = NULL;
	}
}

/* Wait for a sent page's answer. Return: 0 (pg->x is DONE with an answer) or why not. */
static int page_wait(struct lister *ls, struct page *pg, struct kc_resp *resp, struct ll_err *err)
{
	struct xfer *x = pg->x;

	if (pg->rc == -EMSGSIZE)
		return path_error(resp, err);
	if (pg->rc)
		return ll_err_set(err, pg->rc, "%s %s: client closed", pg->rq.method, pg->rq.path);
	wait_done(ls->c, x);
	pg->waited = true;
	record(ls->c, &pg->rq, x->rc ? 0 : x->http_status, pg->start_ns, x->done_ns);
	return x->rc ? transfer_error(x, &pg->rq, err) : 0;
}

/* Forget a page; one still in flight is cancelled first (and counted with what it got). */
static void page_release(struct lister *ls, struct page *pg)
{
	struct xfer *x = pg->x;

	if (x && !pg->waited) {
		cancel_and_wait(ls->c, x);
		record(ls->c, &pg->rq, x->rc ? 0 : x->http_status, pg->start_ns, x->done_ns);
	}
	xfer_free(x);
	pg->x = NULL;
	pg->rc = 0;
	pg->prepared = false;
	pg->waited = false;
}

/*
 * The answer of the page that has arrived: the next page is requested from its raw continue
 * token (when certain) before the page is parsed, so parsing overlaps the next transfer.
 * @cont receives the token to continue with (NULL: last page).
 */
static int page_answer(struct lister *ls, struct page *cur, struct page *next, char **cont,
                       struct kc_resp *resp, struct ll_err *err)
{
	struct xfer *x = cur->x;
	bool ok = x->http_status >= 200 && x->http_status < 300 && x->json;
	enum kc_scan scan = ok ? kc__scan_continue(x->rbody.p, x->rbody.len, cont) : KC_SCAN_UNSURE;
	int rc;

	if (scan == KC_SCAN_NEXT) {
		page_prepare(ls, next, *cont);
		if (page_due(next))
			page_send(ls, next);
	}
	rc = fill_resp(x->http_status, x->json, &x->rbody, resp, err);
	page_release(ls, cur);
	if (rc == 0 && scan == KC_SCAN_UNSURE && kc_resp_ok(resp)) {
		*cont = xstrdup(jx_str(resp->body, "metadata", "continue", NULL));
		if (*cont && **cont)
			page_prepare(ls, next, *cont);
	}
	return rc;
}

int kc_list(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
            const struct kc_list_opts *opts, kc_item_fn on_item, void *ud, char **list_rv,
            struct kc_resp *resp, struct ll_err *err)
{
	/*
	 * libcurl 7.88 sometimes stops delivering a multiplexed HTTP/2 stream (the transfer then
	 * times out) when other streams start on the connection while it streams; continuous list
	 * pages made that frequent, so they travel over HTTP/1.1 connections of their own.
	 */
	struct req rq = {"LIST", "GET", NULL, NULL, NULL, 0, opts ? opts->accept : NULL, true};
	struct lister ls = {.c = c, .gvr = gvr, .ns = ns, .o = opts};
	struct page *cur = &ls.pages[0], *next = &ls.pages[1], *tmp;
	char *cont = NULL;
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (list_rv)
		*list_rv = NULL;
	rc = enter(c);
	if (rc)
		return ll_err_set(err, rc, "LIST %s: client closed", gvr->resource);
	for (int i = 0; i < 2; i++)
		ls.pages[i] = (struct page){.path = BUF_INIT(BUF_MAX_INTERNAL), .rq = rq};
	page_prepare(&ls, cur, NULL);
	for (;;) {
		kc_resp_release(resp);
		page_send(&ls, cur);
		rc = page_wait(&ls, cur, resp, err);
		if (rc)
			break;
		rc = page_answer(&ls, cur, next, &cont, resp, err);
		if (rc || !kc_resp_ok(resp))
			break;
		rc = list_items(resp->body, on_item, ud, err);
		free(cont);
		cont = NULL;
		if (rc || !next->prepared)
			break;
		tmp = cur;
		cur = next;
		next = tmp;
	}
	if (rc == 0 && kc_resp_ok(resp) && list_rv)
		*list_rv = xstrdup(jx_str(resp->body, "metadata", "resourceVersion", NULL));
	free(cont);
	page_release(&ls, cur);
	page_release(&ls, next);
	buf_release(&cur->path);
	buf_release(&next->path);
	leave(c);
	return rc;
}

/* ---------- watch ---------- */

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
				post_locked(c, x, CMD_UNPAUSE);
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
		return fill_resp(x->http_status, true, &w->error_body, resp, w->err);
	if (x->rc)
		return transfer_error(x, rq, w->err);
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
		rc = query(path, "watch", "1");
	if (rc == 0 && o)
		rc = query(path, "resourceVersion", o->resource_version);
	if (rc == 0 && o && o->allow_bookmarks)
		rc = query(path, "allowWatchBookmarks", "true");
	if (rc == 0)
		rc = query_long(path, "timeoutSeconds", timeout_s);
	if (rc == 0 && o)
		rc = query(path, "labelSelector", o->label_selector);
	if (rc == 0 && o)
		rc = query(path, "fieldSelector", o->field_selector);
	return rc;
}

static int run_watch(struct watch *w, const struct req *rq, struct kc_resp *resp)
{
	int64_t start = clock_mono_ns();
	int rc;

	w->x = xfer_new(w->c, rq, true);
	rc = submit(w->c, w->x);
	if (rc) {
		ll_err_set(w->err, rc, "WATCH %s: client closed", rq->path);
	} else {
		rc = pump(w);
		if (rc)
			cancel_and_wait(w->c, w->x);
		else
			rc = watch_outcome(w, rq, resp);
	}
	/* A watch's latency is the time to its response headers. */
	record(w->c, rq, w->x->http_status, start,
	       w->x->headers_ns ? w->x->headers_ns : clock_mono_ns());
	xfer_free(w->x);
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
		return path_error(resp, err);
	}
	rc = enter(c);
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
	leave(c);
	return rc;
}

/* ---------- client ---------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static BIO *pem_bio(const char *pem, size_t len)
{
	return len > INT32_MAX ? NULL : BIO_new_mem_buf(pem, (int)len);
}

static int count_certs(const char *pem, size_t len)
{
	BIO *b = pem_bio(pem, len);
	X509 *x;
	int n = 0;

	while (b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		n++;
		X509_free(x);
	}
	BIO_free(b);
	ERR_clear_error();
	return n;
}

static int check_client_cert(const struct kcfg *cfg, struct ll_err *err)
{
	BIO *cb = pem_bio(cfg->cert_pem, cfg->cert_pem_len);
	BIO *kb = pem_bio(cfg->key_pem, cfg->key_pem_len);
	X509 *cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
	EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
	int rc = 0;

	if (cert == NULL)
		rc = ll_err_set(err, -EINVAL, "%s: client certificate is not a PEM certificate",
		                cfg->source ? cfg->source : "kubeconfig");
	else if (key == NULL)
		rc = ll_err_set(err, -EINVAL, "%s: client key is not a PEM private key",
		                cfg->source ? cfg->source : "kubeconfig");
	else if (X509_check_private_key(cert, key) != 1)
		rc = ll_err_set(err, -EINVAL, "%s: client key does not match the certificate",
		                cfg->source ? cfg->source : "kubeconfig");
	X509_free(cert);
	EVP_PKEY_free(key);
	BIO_free(cb);
	BIO_free(kb);
	ERR_clear_error();
	return rc;
}

static int check_tls(const struct kcfg *cfg, struct ll_err *err)
{
	const char *src = cfg->source ? cfg->source : "kubeconfig";

	if (cfg->ca_pem && count_certs(cfg->ca_pem, cfg->ca_pem_len) == 0)
		return ll_err_set(err, -EINVAL,
		                  "%s: certificate authority holds no PEM certificate", src);
	if (!cfg->cert_pem != !cfg->key_pem)
		return ll_err_set(err, -EINVAL, "%s: client certificate and key go together", src);
	return cfg->cert_pem ? check_client_cert(cfg, err) : 0;
}

/* c->base from the server URL; with a tls-server-name, connect to the server under that name. */
static int set_base(struct kc_client *c, const struct kcfg *cfg, struct ll_err *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *url = NULL;
	size_t len;
	int rc = -EINVAL;

	if (u == NULL || curl_url_set(u, CURLUPART_URL, cfg->server, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
		ll_err_set(err, rc, "invalid server URL \"%.200s\"", cfg->server);
		goto out;
	}
	if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0) {
		ll_err_set(err, rc, "server URL \"%.200s\" is not http(s)", cfg->server);
		goto out;
	}
	if (cfg->tls_server_name && *cfg->tls_server_name &&
	    strcmp(cfg->tls_server_name, host) != 0) {
		char *entry = xasprintf("%s:%s:%s:%s", cfg->tls_server_name, port, host, port);

		headers_add(&c->connect_to, entry);
		free(entry);
		if (curl_url_set(u, CURLUPART_HOST, cfg->tls_server_name, 0) ||
		    curl_url_get(u, CURLUPART_URL, &url, 0)) {
			ll_err_set(err, rc, "invalid tls-server-name \"%.200s\"",
			           cfg->tls_server_name);
			goto out;
		}
	}
	c->base = xstrdup(url ? url : cfg->server);
	len = strlen(c->base);
	while (len && c->base[len - 1] == '/')
		c->base[--len] = '\0';
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(url);
	curl_url_cleanup(u);
	return rc;
}

static void blob_dup(struct curl_blob *b, const char *data, size_t len)
{
	if (data == NULL)
		return;
	b->data = xmalloc(len ? len : 1);
	memcpy(b->data, data, len);
	b->len = len;
	b->flags = CURL_BLOB_NOCOPY; /* the client outlives every easy handle */
}

static void client_free_fields(struct kc_client *c)
{
	free(c->server);
	free(c->base);
	curl_slist_free_all(c->connect_to);
	free(c->ca.data);
	free(c->cert.data);
	if (c->key.data)
		OPENSSL_cleanse(c->key.data, c->key.len);
	free(c->key.data);
	free(c->user_agent);
	free(c->name);
	free(c->token);
	free(c->token_file);
	free(c->token_cached);
	free(c);
}

static void set_opts(struct kc_client *c, const struct kc_opts *o)
{
	double qps = o && o->qps ? o->qps : 50;
	int burst = o && o->burst > 0 ? o->burst : 100;

	tbucket_init(&c->rl, qps, burst);
	c->timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : 30000;
	c->user_agent =
	        o && o->user_agent ? xstrdup(o->user_agent) : xstrdup("landlord/" LANDLORD_VERSION);
	c->name = xstrdup(o && o->client_name ? o->client_name : "main");
	c->http1 = !(o && o->http2);
}

static void describe_metrics(void)
{
	metrics_describe(M_REQUESTS, METRIC_COUNTER,
	                 "Kubernetes API requests by client, verb and HTTP status code.", NULL, 0);
	metrics_describe(M_DURATION, METRIC_HISTOGRAM,
	                 "Kubernetes API request latency in seconds (watches: until the response "
	                 "headers), by client and verb.",
	                 NULL, 0);
}

static int start_io(struct kc_client *c, struct ll_err *err)
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

int kc_client_new(const struct kcfg *cfg, const struct kc_opts *opts, struct kc_client **out,
                  struct ll_err *err)
{
	struct kc_client *c;
	int rc;

	*out = NULL;
	if (cfg == NULL || cfg->server == NULL || *cfg->server == '\0')
		return ll_err_set(err, -EINVAL, "no API server URL");
	rc = check_tls(cfg, err);
	if (rc)
		return rc;
	if (cfg->token && !header_safe(cfg->token))
		return ll_err_set(err, -EINVAL, "%s: bearer token holds control characters",
		                  cfg->source ? cfg->source : "kubeconfig");
	pthread_once(&curl_once, curl_init_once);
	c = xcalloc(1, sizeof(*c));
	rc = set_base(c, cfg, err);
	if (rc) {
		client_free_fields(c);
		return rc;
	}
	c->server = xstrdup(cfg->server);
	blob_dup(&c->ca, cfg->ca_pem, cfg->ca_pem_len);
	blob_dup(&c->cert, cfg->cert_pem, cfg->cert_pem_len);
	blob_dup(&c->key, cfg->key_pem, cfg->key_pem_len);
	c->insecure = cfg->insecure;
	c->token = xstrdup(cfg->token);
	c->token_file = xstrdup(cfg->token_file);
	set_opts(c, opts);
	pthread_mutex_init(&c->token_lock, NULL);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	link_init(&c->incoming);
	link_init(&c->active);
	link_init(&c->cmds);
	describe_metrics();
	rc = start_io(c, err);
	if (rc) {
		pthread_cond_destroy(&c->idle);
		pthread_mutex_destroy(&c->lock);
		pthread_mutex_destroy(&c->token_lock);
		tbucket_release(&c->rl);
		client_free_fields(c);
		return rc;
	}
	*out = c;
	return 0;
}

void kc_client_free(struct kc_client *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_mutex_unlock(&c->lock);
	curl_multi_wakeup(c->multi);
	pthread_join(c->thread, NULL);
	/* Every transfer is DONE now; wait for their callers to return. */
	pthread_mutex_lock(&c->lock);
	while (c->callers > 0)
		pthread_cond_wait(&c->idle, &c->lock);
	pthread_mutex_unlock(&c->lock);
	curl_multi_cleanup(c->multi);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->token_lock);
	tbucket_release(&c->rl);
	client_free_fields(c);
}

const char *kc_server(const struct kc_client *c)
{
	return c->server;
}

long kc__connects(struct kc_client *c)
{
	long n;

	pthread_mutex_lock(&c->lock);
	n = c->connects;
	pthread_mutex_unlock(&c->lock);
	return n;
}
