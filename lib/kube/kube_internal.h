/*
 * kube_internal.h - what the files of the Kubernetes client share (kube.c, kube_request.c,
 * kube_io.c, kube_status.c, kube_path.c, kube_auth.c, kube_list.c, kube_watch.c,
 * kube_upgrade.c), and the helpers its unit tests and fuzz targets call; not part of the public
 * API.
 *
 * Calling threads describe a request in a struct xfer and queue it; the client's I/O thread owns
 * the curl multi handle and every easy handle, so curl is only ever touched from that thread.
 * A transfer moves QUEUED -> ACTIVE -> DONE under c->lock; only the I/O thread makes it DONE, and
 * the calling thread frees it only once it is DONE. Commands from callers (unpause a watch,
 * cancel) are flags on the transfer plus a link in c->cmds, which finishing a transfer undoes.
 */
#ifndef LANDLORD_KUBE_INTERNAL_H
#define LANDLORD_KUBE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/ratelimit.h"
#include "kube/kube.h"

struct kcfg;
struct ll_err;

#ifndef LANDLORD_VERSION
#define LANDLORD_VERSION "dev"
#endif

#define WATCH_QUEUE_MAX    (KC_STREAM_PIECE_MAX / 2) /* stream bytes buffered before pausing */
#define WATCH_POLL_MS      200        /* how often a waiting watch checks cancel and idleness */
#define ERROR_BODY_MAX     (1u << 20) /* kept of a non-200 stream answer */
#define STREAM_IDLE_MS     660000L    /* kc_stream watchdog default: the longest watch + 60 s */
#define STATUS_MESSAGE_RAW 1024       /* bytes of a non-Status error body used as the message */
#define TOKEN_TTL_NS       (60 * CLOCK_NS_PER_SEC)
#define TOKEN_FILE_MAX     (64u << 10)
#define CONNECT_TIMEOUT_MS 10000L
#define IO_POLL_MS         1000

#define M_REQUESTS "landlord_api_requests_total"
#define M_DURATION "landlord_api_request_duration_seconds"

/* ---------- intrusive doubly-linked list ---------- */

struct link {
	struct link *prev, *next;
};

#define link_entry(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

static inline void link_init(struct link *l)
{
	l->prev = l;
	l->next = l;
}

static inline bool link_linked(const struct link *l)
{
	return l->next != l;
}

static inline void link_add_tail(struct link *head, struct link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static inline void link_del(struct link *l)
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
	bool stream;
	bool http1;
	long timeout_ms; /* non-stream transfers */

	/* I/O thread only until DONE, then the caller's. */
	CURL *easy;
	bool in_multi;
	bool overflow;
	char errbuf[CURL_ERROR_SIZE];
	struct buf rbody; /* non-stream response body */

	/* Shared, under c->lock. */
	enum xfer_state state;
	unsigned cmds;
	int rc; /* when DONE: 0 or a negative errno */
	long http_status;
	bool json;
	char content_type[KC_CONTENT_TYPE_MAX]; /* "" when none or too long */
	struct buf q;                           /* stream bytes the consumer has not taken yet */
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

/* What a calling thread asks for: a struct kc_request checked by kc__req_prepare(). */
struct req {
	const char *verb; /* metrics label, from a fixed set */
	const char *method;
	const char *path; /* the path and query as sent */
	const char *content_type;
	const char *body;
	size_t body_len;
	const char *accept;
	bool http1; /* on an HTTP/1.1 connection of its own (list pages, see kc_list) */
	const struct kc_header *headers;
	size_t n_headers;
	unsigned flags;  /* KC_REQ_* */
	long timeout_ms; /* 0: the client's */
};

/* ---------- kube_status.c ---------- */

/**
 * kc__parse_status() - fill @out from an answer: from @body when it is a metav1.Status (kind
 * "Status"), otherwise, for @http_status >= 400, code = @http_status, a reason named after the
 * code ("NotFound", "Conflict"...) and the first bytes of @raw as the message. Leaves @out zeroed
 * for a 2xx answer that is not a Status. @body and @raw may be NULL.
 */
void kc__parse_status(const json_t *body, long http_status, const char *raw, size_t raw_len,
                      struct kc_status *out /* OUT */);

/** kc__curl_errno() - the negative errno for a CURLcode (@overflow: the body cap was hit). */
int kc__curl_errno(int curl_code, int overflow);

/* kc__trim_end() - drop trailing CR, LF, space and tab. */
void kc__trim_end(char *s);

/* ---------- kube_path.c ---------- */

/*
 * kc__check_target() - -EINVAL with a message unless @path is absolute, printable ASCII without
 * '?', '#' or a "." / ".." segment (also percent-encoded), and @query (or NULL) printable ASCII
 * without '#'.
 */
int kc__check_target(const char *path, const char *query, struct ll_err *err);
/* kc__split_query() - cut @b's "path?query" at the '?': *@query is NULL when there is none. */
void kc__split_query(struct buf *b, const char **query /* OUT */);

/* kc__query() - append "?k=v" or "&k=v", @v percent-encoded; NULL or empty @v is skipped. */
int kc__query(struct buf *out, const char *k, const char *v);
int kc__query_long(struct buf *out, const char *k, long v);

/* ---------- kube_auth.c ---------- */

/* kc__header_safe() - no control characters, which could split a header line. */
bool kc__header_safe(const char *s);
/* kc__token_dup() - the bearer token to send now (caller frees), or NULL. */
char *kc__token_dup(struct kc_client *c);
int kc__check_tls(const struct kcfg *cfg, struct ll_err *err);
int kc__set_base(struct kc_client *c, const struct kcfg *cfg, struct ll_err *err);
void kc__blob_dup(struct curl_blob *b, const char *data, size_t len);

/* ---------- kube_io.c ---------- */

void kc__headers_add(struct curl_slist **list, const char *h);
struct xfer *kc__xfer_new(struct kc_client *c, const struct req *rq, bool watch);
void kc__xfer_free(struct xfer *x);
/* kc__submit() - queue @x for the I/O thread. Return: 0 or -ECANCELED (client closing). */
int kc__submit(struct kc_client *c, struct xfer *x);
void kc__wait_done(struct kc_client *c, struct xfer *x);
/* Caller holds c->lock; the transfer is not DONE. Wake the I/O thread after unlocking. */
void kc__post_locked(struct kc_client *c, struct xfer *x, unsigned cmd);
/* Stop a transfer early and wait until the I/O thread has let go of it. */
void kc__cancel_and_wait(struct kc_client *c, struct xfer *x);
int kc__start_io(struct kc_client *c, struct ll_err *err);

/* ---------- kube_request.c ---------- */

/*
 * kc__req_prepare() - check @kr (see struct kc_request) and describe it in @out, whose path is
 * built in @target. @verb is the metrics label when @kr has none. Return: 0 or -EINVAL.
 */
int kc__req_prepare(const struct kc_request *kr, const char *verb, struct buf *target,
                    struct req *out /* OUT */, struct ll_err *err);
/* kc__verb_label() - @verb when in the fixed set, else one from @method; never grows. */
const char *kc__verb_label(const char *verb, const char *method, const char *content_type);
/* kc__set_content_type() - copy @ct into resp->content_type ("" when too long or NULL). */
void kc__set_content_type(struct kc_resp *resp, const char *ct);

/* kc__enter() - count a caller in; -ECANCELED once the client is closing. */
int kc__enter(struct kc_client *c);
void kc__leave(struct kc_client *c);
/* kc__record() - metrics and the debug log line of one request (status 0: no answer). */
void kc__record(struct kc_client *c, const struct req *rq, long status, int64_t start_ns,
                int64_t end_ns);
/* An answer: parse the body; a 2xx answer whose JSON is malformed is no usable answer. */
int kc__fill_resp(long status, bool json, const struct buf *raw, struct kc_resp *resp,
                  struct ll_err *err);
int kc__transfer_error(const struct xfer *x, const struct req *rq, struct ll_err *err);
int kc__entered_request(struct kc_client *c, const struct req *rq, struct kc_resp *resp,
                        struct ll_err *err);
/* kc__path_error() - -EMSGSIZE for a path over the cap, @resp zeroed. */
int kc__path_error(struct kc_resp *resp, struct ll_err *err);

/* ---------- kube_list.c (and its tests) ---------- */

enum kc_scan {
	KC_SCAN_UNSURE, /* the raw text cannot tell cheaply: parse the page */
	KC_SCAN_LAST,   /* no continue token, or an empty one: the last page */
	KC_SCAN_NEXT,   /* a continue token */
};

/**
 * kc__scan_continue() - a list page's continue token read from its raw JSON without parsing it.
 * Only the top-level members before "items" are tokenised; "metadata" must be among them, and
 * its "continue" must be a string without escapes. Whenever the page parses with duplicate keys
 * rejected (jx_loads), LAST and NEXT agree with its metadata.continue. *@token (caller frees) is
 * set for NEXT only.
 */
enum kc_scan kc__scan_continue(const char *raw, size_t len, char **token /* OUT */);

/* ---------- kube.c ---------- */

/** kc__connects() - connections opened so far (sum of CURLINFO_NUM_CONNECTS). */
long kc__connects(struct kc_client *c);

#endif
