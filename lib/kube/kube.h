/*
 * kube.h - untyped Kubernetes REST client on libcurl + jansson.
 *
 * One struct kc_client talks to one API server. It owns one I/O thread driving a libcurl multi
 * handle. By default every request and watch in flight has an HTTP/1.1 keep-alive connection of
 * its own, reused from a pool. With kc_opts.http2, requests and watches are multiplexed as
 * HTTP/2 streams over one TLS connection instead (CURLOPT_PIPEWAIT), except LIST pages, which
 * stay on HTTP/1.1; libcurl 7.88's HTTP/2 multiplexing was measured to stall streams, lists
 * first and then ordinary requests beside a dozen watches (docs/internals/kube.md), which is
 * why it is not the default. Calls block the calling thread until their answer is
 * complete; watch events are delivered on the thread that called kc_watch(). Components that
 * must not share fate with the main connection (the leader-election Lease) use their own client.
 *
 * Two kinds of failure are never mixed (docs/conventions.md §3): a call that got an HTTP answer
 * returns 0, whatever the status; resp->http_status and resp->status (the parsed metav1.Status:
 * reason, message, code) say what the server thought. A negative errno means no usable answer:
 * -ECONNREFUSED / -EHOSTUNREACH (cannot connect), -ETIMEDOUT, -EPROTO (TLS or malformed body),
 * -EMSGSIZE (a body over the cap), -ECANCELED, -ENOMEM, -EINVAL (bad arguments).
 *
 * Client-side limits: a token bucket (qps/burst) delays every request except streams
 * (watches); each non-stream request has a timeout; response bodies are capped (KC_MAX_BODY).
 * Every request is counted in landlord_api_requests_total{client,verb,code} and timed in
 * landlord_api_request_duration_seconds{client,verb}; the verb label comes from a fixed set, so
 * forwarded methods cannot grow the label sets.
 *
 * Two calls carry every request: kc_do() (an answer read whole) and kc_stream() (an answer
 * handed over piece by piece as it arrives). Each takes a struct kc_request: any method, path
 * and query, extra headers (e.g. Impersonate-User), a body sent byte for byte. The verbs below
 * (kc_get, kc_create, kc_list, kc_watch, kc_request...) are wrappers over them.
 * All functions are thread-safe.
 */
#ifndef LANDLORD_KUBE_H
#define LANDLORD_KUBE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/buf.h"
#include "kube/watchsplit.h"

struct kcfg;
struct ll_err;
struct kc_client;

#define KC_MAX_BODY         (256u << 20) /* largest non-stream response body accepted */
#define KC_MAX_HEADERS      64           /* extra headers of one request */
#define KC_MAX_HEADER_LINE  (8u << 10)   /* "Name: value" of one extra header */
#define KC_CONTENT_TYPE_MAX 256          /* kc_resp.content_type, NUL included */
#define KC_STREAM_PIECE_MAX (8u << 20)   /* largest piece kc_stream() hands over at once */

/** A resource: group ("" for core), version, plural resource, kind, scope. Strings borrowed. */
struct kc_gvr {
	const char *group;
	const char *version;
	const char *resource;
	const char *kind;
	bool namespaced;
};

extern const struct kc_gvr KC_NAMESPACES;
extern const struct kc_gvr KC_CONFIGMAPS;
extern const struct kc_gvr KC_SECRETS;
extern const struct kc_gvr KC_SERVICEACCOUNTS;
extern const struct kc_gvr KC_PODS;
extern const struct kc_gvr KC_EVENTS;
extern const struct kc_gvr KC_RESOURCEQUOTAS;
extern const struct kc_gvr KC_LIMITRANGES;
extern const struct kc_gvr KC_PODTEMPLATES;
extern const struct kc_gvr KC_LEASES;
extern const struct kc_gvr KC_ROLEBINDINGS;
extern const struct kc_gvr KC_CLUSTERROLES;
extern const struct kc_gvr KC_CLUSTERROLEBINDINGS;
extern const struct kc_gvr KC_NETWORKPOLICIES;
extern const struct kc_gvr KC_CRDS;
extern const struct kc_gvr KC_SELFSUBJECTACCESSREVIEWS;

struct kc_opts {
	double qps;              /* default 50; <0 disables the limit */
	int burst;               /* default 100 */
	long timeout_ms;         /* per non-watch request; default 30000 */
	const char *user_agent;  /* default "landlord/<version>" */
	const char *client_name; /* metrics label; default "main" */
	bool http2; /* default false: HTTP/1.1; true: one multiplexed HTTP/2 connection */
};

/** metav1.Status as returned on errors (and by some deletes). */
struct kc_status {
	int code;        /* Status.code, or the HTTP status when the body was not a Status */
	char reason[64]; /* "NotFound", "AlreadyExists", "Conflict", "Expired", "Invalid"... */
	char message[1024];
};

struct kc_resp {
	long http_status;        /* 0 when there was no answer */
	json_t *body;            /* parsed JSON body (new reference) or NULL */
	struct kc_status status; /* filled when http_status >= 400 or the body is a Status */
	struct buf raw;          /* KC_REQ_RAW: the body's bytes as received (capped); else empty */
	char content_type[KC_CONTENT_TYPE_MAX]; /* the answer's Content-Type, "" when none or
	                                         * longer than the field */
};

/** kc_resp_release() - drop the body and raw bytes; the struct can be reused. Accepts a zeroed
 * struct. */
void kc_resp_release(struct kc_resp *resp);
/** kc_resp_ok() - 2xx. */
bool kc_resp_ok(const struct kc_resp *resp);

/**
 * kc_client_new() - connect nothing yet; validate the TLS material and start the I/O thread.
 * Return: 0 or -EINVAL (bad PEM, bad server URL) with @err set.
 */
int kc_client_new(const struct kcfg *cfg, const struct kc_opts *opts /* NULL: defaults */,
                  struct kc_client **out /* OUT, kc_client_free() */, struct ll_err *err);
/**
 * kc_client_free() - cancel outstanding calls (they return -ECANCELED), stop the thread, and
 * wait until every call has returned. Not from a callback (kc_item_fn, kc_event_fn) of @c.
 */
void kc_client_free(struct kc_client *c);
/** kc_server() - the server URL (borrowed). */
const char *kc_server(const struct kc_client *c);

/**
 * kc_path() - append the API path of a resource to @out:
 * /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]] or /apis/G/V/... . @ns is ignored for
 * cluster-scoped resources; segments are percent-encoded. Return: 0 or -EMSGSIZE.
 */
int kc_path(struct buf *out, const struct kc_gvr *gvr, const char *ns, const char *name,
            const char *subresource);

/** An extra request header. Both strings are borrowed for the call. */
struct kc_header {
	const char *name;  /* an HTTP token; not one of the headers the client owns */
	const char *value; /* no CR, LF or other control character (tab is fine); may be "" */
};

enum {
	KC_REQ_RAW = 1u << 0,   /* kc_do: keep the body as bytes in resp->raw, do not parse it;
	                         * kc_stream: hand over the body of every answer, whatever its
	                         * status (a proxy forwards errors as they are) */
	KC_REQ_HTTP1 = 1u << 1, /* on an HTTP/1.1 connection even when the client multiplexes */
};

/**
 * struct kc_request - one request as given. Everything is borrowed for the call.
 *
 * Refused with -EINVAL, a message in the ll_err and nothing sent: a method that is not an HTTP
 * token; a path that is not absolute, holds bytes outside printable ASCII, '?', '#', or a "."
 * or ".." segment (also as %2e: curl would resolve it); a query with such bytes or '#'; more
 * than KC_MAX_HEADERS headers; a header whose name is not a token, whose value holds CR, LF or
 * another control character (tab aside), whose line is over KC_MAX_HEADER_LINE, or which the
 * client owns: Authorization, Host, Content-Length, Transfer-Encoding, Content-Type, Accept,
 * Connection, Expect, Keep-Alive, Upgrade, TE, Trailer, User-Agent, Proxy-Authorization,
 * Proxy-Connection. Extra headers are sent after the client's own, in order; a name may repeat
 * (several Impersonate-Group).
 */
struct kc_request {
	const char *method;              /* "GET", "POST", ... */
	const char *path;                /* absolute, percent-encoded, without the query */
	const char *query;               /* without the '?', percent-encoded; NULL or "": none */
	const struct kc_header *headers; /* or NULL */
	size_t n_headers;
	const void *body; /* sent byte for byte; NULL: no body */
	size_t body_len;
	const char *content_type; /* of @body; NULL: application/json */
	const char *accept;       /* NULL: application/json */
	unsigned flags;           /* KC_REQ_* */
	atomic_int *cancel;       /* kc_stream: optional, ends it with -ECANCELED */
	const char *verb;         /* metrics label among GET LIST WATCH CREATE UPDATE
	                           * PATCH APPLY DELETE HEAD REVIEW (a POST that stores
	                           * nothing); NULL or another: derived
	                           * from the method, OTHER for unusual methods */
	long timeout_ms;          /* kc_do: 0 is kc_opts.timeout_ms */
	long idle_timeout_ms;     /* kc_stream's watchdog: no bytes for this long ends
	                           * it with -ETIMEDOUT; 0: 660 s */
};

/**
 * kc_do() - one request, its answer read whole (at most KC_MAX_BODY bytes, else -EMSGSIZE).
 * A JSON answer is parsed into resp->body unless KC_REQ_RAW, which keeps the bytes in
 * resp->raw instead; resp->status and resp->content_type are filled either way.
 */
int kc_do(struct kc_client *c, const struct kc_request *rq, struct kc_resp *resp /* OUT */,
          struct ll_err *err);

/**
 * Bytes callback for kc_stream(): runs on the thread that called kc_stream(), with @head's
 * http_status and content_type already set (so a proxy can send its own head first) and at
 * most KC_STREAM_PIECE_MAX bytes. Return non-zero to end the stream with that value.
 */
typedef int (*kc_bytes_fn)(const struct kc_resp *head, const char *bytes, size_t len, void *ud);

/**
 * kc_stream() - one request whose answer is handed to @on_bytes as it arrives, until the server
 * ends it (0), @on_bytes returns non-zero (that value), the cancel flag is set (-ECANCELED), the
 * watchdog fires (-ETIMEDOUT) or the connection fails (negative errno). No rate limit and no
 * overall timeout. A slow @on_bytes applies back-pressure: the transfer is paused, nothing is
 * lost, and at most KC_STREAM_PIECE_MAX bytes are buffered. Without KC_REQ_RAW, an answer
 * other than 200 is not streamed: its body (up to 1 MiB) is parsed into @resp, which returns 0.
 * With it, resp->status of an error answer is named after its code. An answer without a body
 * never calls @on_bytes: on return, @resp holds its status and content type all the same.
 */
int kc_stream(struct kc_client *c, const struct kc_request *rq, kc_bytes_fn on_bytes, void *ud,
              struct kc_resp *resp /* OUT */, struct ll_err *err);

/**
 * kc_request() - one raw request. @path includes any query string. @body may be NULL.
 * @accept NULL means application/json. The response body, if JSON, is parsed into resp->body.
 */
int kc_request(struct kc_client *c, const char *method, const char *path, const char *content_type,
               const char *body, size_t body_len, const char *accept,
               struct kc_resp *resp /* OUT */, struct ll_err *err);

int kc_get(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
           struct kc_resp *resp /* OUT */, struct ll_err *err);
/** kc_create() - POST. Namespaces are always created this way, never applied. */
int kc_create(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const json_t *obj,
              struct kc_resp *resp /* OUT */, struct ll_err *err);
/** kc_replace() - PUT (optimistic concurrency through metadata.resourceVersion in @obj). */
int kc_replace(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
               const char *subresource, const json_t *obj, struct kc_resp *resp /* OUT */,
               struct ll_err *err);
/**
 * kc_apply() - server-side apply: PATCH application/apply-patch+yaml (the body is JSON, which
 * is YAML) with ?fieldManager=@field_manager and force=true when @force. A conflict is an answer
 * (409, reason "Conflict") whose message names the conflicting managers and fields.
 */
int kc_apply(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
             const char *subresource, const json_t *obj, const char *field_manager, bool force,
             struct kc_resp *resp /* OUT */, struct ll_err *err);

/** How kc_apply_with() applies. Strings borrowed for the call. */
struct kc_apply_opts {
	const char *field_manager; /* required */
	bool force;                /* take conflicting fields from their managers */
	bool dry_run;              /* dryRun=All: RBAC and admission judge it, nothing is stored
	                            * (metrics verb REVIEW: it writes nothing) */
	const char *as_user;       /* Impersonate-User; NULL: the client's own identity */
	const char *subresource;   /* or NULL */
};
/**
 * kc_apply_with() - kc_apply() with options: a dry run, or as another user (the client's
 * identity needs `impersonate` on that user; RBAC and admission then judge the impersonated
 * user alone).
 */
int kc_apply_with(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
                  const json_t *obj, const struct kc_apply_opts *opts,
                  struct kc_resp *resp /* OUT */, struct ll_err *err);

/**
 * struct kc_access - what a SelfSubjectAccessReview asks: its spec.resourceAttributes. Strings
 * are borrowed; NULL or "" leaves the attribute out (@ns: cluster-wide, or every namespace;
 * @name: every object).
 */
struct kc_access {
	const char *verb;     /* "get", "bind", "create"... */
	const char *group;    /* "" or NULL for the core group */
	const char *resource; /* plural, e.g. "clusterroles" */
	const char *subresource;
	const char *name;
	const char *ns;
};

/**
 * kc_self_review() - may this client's own identity do @a? One SelfSubjectAccessReview
 * (authorization.k8s.io/v1): a POST that stores nothing, so its metrics verb is REVIEW and
 * kc_test_crash_after_writes() does not count it. Kubernetes lets every authenticated user create
 * one (the ClusterRole system:basic-user).
 * Return: 0 when the server answered: @resp holds the answer and *@allowed is true only when it
 * is a 2xx review whose status.allowed is true (use kc_resp_ok(@resp) to tell a denial from a
 * refused review, e.g. 403); or a negative errno as kc_do() (then *@allowed is false).
 */
int kc_self_review(struct kc_client *c, const struct kc_access *a, bool *allowed /* OUT */,
                   struct kc_resp *resp /* OUT */, struct ll_err *err);

/* The longest token kc_token_request() accepts (a JWT is a few KiB). */
#define KC_TOKEN_MAX (16u << 10)
/**
 * kc_token_request() - a bound token for the ServiceAccount @ns/@sa: one TokenRequest
 * (authentication.k8s.io/v1, POST serviceaccounts/<sa>/token) valid @expiration_seconds (the
 * API server's minimum is 600). Stores nothing, so its metrics verb is REVIEW.
 * The token is a secret: *@token is the caller's to zero (explicit_bzero) and free; the copy in
 * @resp's body is already overwritten. Never log it.
 * Return: 0 when the server answered (*@token set only on a 2xx with a token; see @resp else);
 * -EPROTO for a 2xx without a usable token; a negative errno as kc_do().
 */
int kc_token_request(struct kc_client *c, const char *ns, const char *sa, long expiration_seconds,
                     char **token /* OUT */, struct kc_resp *resp /* OUT */, struct ll_err *err);

enum kc_patch_type {
	KC_PATCH_MERGE,     /* application/merge-patch+json */
	KC_PATCH_JSON,      /* application/json-patch+json (supports "test" guards) */
	KC_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (built-in kinds only) */
};
/*
 * The message of the API server's 422 answer to a JSON patch that does not apply (a "test"
 * that does not hold, a path that is not there); the detail is only in the Status's causes.
 * A validation failure's message names the object instead.
 */
#define KC_JSON_PATCH_NOT_APPLIED "the server rejected our request due to an error in our request"
int kc_patch(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
             const char *subresource, enum kc_patch_type type, const json_t *patch,
             const char *field_manager /* or NULL */, struct kc_resp *resp /* OUT */,
             struct ll_err *err);

struct kc_delete_opts {
	const char *precondition_uid; /* or NULL */
	const char *precondition_rv;  /* or NULL */
	const char *propagation;      /* "Foreground", "Background", "Orphan" or NULL */
	long grace_seconds;           /* <0: server default */
	const char *as_user;          /* Impersonate-User; NULL: the client's own identity */
};
/** kc_delete() - DELETE with a DeleteOptions body. A 404 is an answer, not an error. */
int kc_delete(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
              const struct kc_delete_opts *opts /* or NULL */, struct kc_resp *resp /* OUT */,
              struct ll_err *err);

struct kc_list_opts {
	const char *label_selector;   /* or NULL */
	const char *field_selector;   /* or NULL */
	long limit;                   /* page size; default 500; 0 keeps the default */
	const char *resource_version; /* or NULL (a consistent read) */
	/*
	 * With resource_version: "NotOlderThan" is served from the API server's watch cache once
	 * it has seen that version. A consistent read (no version) waits for the cache to catch up
	 * with etcd, up to ~100 ms while other kinds are written: pass the version of a write or
	 * GET of one's own instead when that is fresh enough.
	 */
	const char *resource_version_match;
	const char *accept; /* e.g. metadata-only; NULL: application/json */
};

/**
 * Item callback for kc_list(): @item is borrowed, nobody else holds it, and it may be modified
 * in place or kept with json_incref(). Return non-zero to stop listing with that value.
 */
typedef int (*kc_item_fn)(json_t *item, void *ud);

/**
 * kc_list() - paginated LIST (limit/continue), calling @on_item for each item of each page.
 * *list_rv receives the list's resourceVersion (caller frees). An expired continue token
 * surfaces as a 410 answer in @resp (return 0, resp->http_status 410): the caller relists.
 * On a non-2xx page, the listing stops there and @resp holds that answer.
 */
int kc_list(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
            const struct kc_list_opts *opts, kc_item_fn on_item, void *ud,
            char **list_rv /* OUT, or NULL */, struct kc_resp *resp /* OUT */, struct ll_err *err);

struct jdoc;
struct jdoc_opts;
/** Item callback for kc_list_docs(): takes the reference to @take_item; non-zero stops. */
typedef int (*kc_doc_fn)(struct jdoc *take_item, void *ud);
/**
 * kc_list_docs() - kc_list() whose pages are parsed straight into one document per item, built
 * with @proj (jdoc.h: a projection, root defaults such as the apiVersion and kind listed items
 * lack, limits); no jansson tree is built for the items. resp->body holds the rest of each page
 * (kind, apiVersion, metadata). A page whose items do not parse fails with -EPROTO.
 */
int kc_list_docs(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
                 const struct kc_list_opts *opts, const struct jdoc_opts *proj, kc_doc_fn on_item,
                 void *ud, char **list_rv /* OUT, or NULL */, struct kc_resp *resp /* OUT */,
                 struct ll_err *err);

struct kc_watch_opts {
	const char *resource_version; /* start after this RV; NULL/"" = server's choice */
	const char *label_selector;
	const char *field_selector;
	bool allow_bookmarks;
	int timeout_seconds;      /* server-side timeout; 0: a random 300..600 */
	int idle_timeout_seconds; /* watchdog: no bytes for this long ends the watch with
	                           * -ETIMEDOUT; 0: timeout_seconds + 60 */
	size_t max_event_bytes;   /* 0: WATCHSPLIT_DEFAULT_MAX_LINE */
	const char *accept;       /* NULL: application/json */
	atomic_int *cancel;       /* optional: the watch ends with -ECANCELED once non-zero */
};

/**
 * Event callback for kc_watch(): runs on the thread that called kc_watch(). @obj is borrowed,
 * nobody else holds it, it may be modified or kept with json_incref(). For WATCH_ERROR, @obj is
 * a metav1.Status (a 410 here means "relist"). Return non-zero to end the watch with that value.
 */
typedef int (*kc_event_fn)(enum watch_event_type type, json_t *obj, void *ud);

/**
 * kc_watch() - one watch request (?watch=1), running until the server ends the stream (0),
 * @on_event returns non-zero (that value), the cancel flag is set (-ECANCELED), the watchdog
 * fires (-ETIMEDOUT), an event exceeds the cap (-EMSGSIZE) or is malformed (-EPROTO), or the
 * connection fails (negative errno). A non-200 answer (e.g. 410 Gone, 429, 5xx) returns 0 with
 * resp->http_status and resp->status set and no events. Slow consumers apply back-pressure to
 * the stream (the transfer is paused); at most a bounded number of bytes is buffered per watch.
 */
int kc_watch(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
             const struct kc_watch_opts *opts, kc_event_fn on_event, void *ud,
             struct kc_resp *resp /* OUT */, struct ll_err *err);

/**
 * Event callback for kc_watch_docs(): @obj is lent for the call (jdoc_ref() keeps it). For
 * WATCH_ERROR it is the whole metav1.Status, never projected.
 */
typedef int (*kc_doc_event_fn)(enum watch_event_type type, const struct jdoc *obj, void *ud);
/** kc_watch_docs() - kc_watch() with each event's object parsed straight into a document. */
int kc_watch_docs(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
                  const struct kc_watch_opts *opts, const struct jdoc_opts *proj,
                  kc_doc_event_fn on_event, void *ud, struct kc_resp *resp /* OUT */,
                  struct ll_err *err);

/*
 * kc_test_crash_after_writes() - test-only fault hook: when @n > 0, the process exits at once
 * (status KC_TEST_CRASH_EXIT, no cleanup) right after the @n-th successful POST, PUT, PATCH or
 * DELETE of any client, before the caller sees the answer: a crash between a write and
 * whatever would have followed it. 0 turns it off.
 */
#define KC_TEST_CRASH_EXIT 86
void kc_test_crash_after_writes(long n);

/** Accept header for metadata-only (PartialObjectMetadata) lists. */
#define KC_ACCEPT_METADATA                                                  \
	"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," \
	"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
/*
 * ... and for watches: the API server takes the first acceptable type, and a watch's events are
 * single objects, so offering the List type first makes it fail on the first event.
 */
#define KC_ACCEPT_METADATA_WATCH \
	"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

/* ---------- upgrades: exec, attach, port-forward ---------- */

struct kc_tunnel;

#define KC_UPGRADE_HEAD_MAX (16u << 10) /* an answer's head (status line and headers) */
#define KC_UPGRADE_BODY_MAX (1u << 20)  /* kept of an answer other than 101 */

/**
 * kc_upgrade() - one request that asks to switch protocols (HTTP 101: WebSocket, SPDY/3.1), on a
 * TCP and TLS connection of its own, never one of the client's pooled ones (Debian's libcurl
 * upgrades nothing). The server is verified as libcurl verifies it: against the kubeconfig's
 * CA (else the system's), by host name or IP address (tls-server-name when set), unless
 * insecure-skip-tls-verify; the client certificate is presented when the kubeconfig has one,
 * and the bearer token, when there is one, is sent as for every other call.
 *
 * @rq as for kc_do(), with these differences: its headers must hold one "Upgrade" (the
 * protocols asked for); the client sends "Connection: Upgrade" itself (a Connection header is
 * refused as in kc_do()); no body (-EINVAL); @rq->accept is sent only when set; @rq->cancel,
 * when set, ends the wait for the connection or the answer with -ECANCELED; @rq->timeout_ms
 * bounds the wait for the answer's head once connected (0: kc_opts.timeout_ms). The headers are
 * checked as kc_do() checks them, and sent in order (a name may repeat).
 *
 * On a 101, *@out is the tunnel (kc_tunnel_close() it) and @head holds the status and
 * Content-Type; the other headers of the answer are read with kc_tunnel_header(). On any other
 * answer *@out is NULL, the connection is closed, and @head holds the status, Content-Type, the
 * body as received (at most KC_UPGRADE_BODY_MAX bytes, in head->raw, chunked encoding undone)
 * and, for an error, the parsed metav1.Status (head->status), so that a proxy can forward it.
 * The tunnel does not refer to @c: it may outlive the client.
 *
 * Return: 0 when the server answered (whatever the status, as kc_do()); -EINVAL (bad request,
 * nothing sent); -ECONNREFUSED, -EHOSTUNREACH (cannot connect); -ETIMEDOUT (connecting took over
 * 10 s, or the head did not come in time); -EPROTO (TLS failed, the server could not be
 * verified, or the answer is not HTTP/1.x, or ended before its head was complete);
 * -EMSGSIZE (a head over KC_UPGRADE_HEAD_MAX); -ECANCELED. @head is zeroed on failure.
 * Thread-safe; blocks the calling thread until the answer's head (and body) came.
 */
int kc_upgrade(struct kc_client *c, const struct kc_request *rq, struct kc_tunnel **out /* OUT */,
               struct kc_resp *head /* OUT */, struct ll_err *err);

/**
 * kc_tunnel_fd() - the connection's socket, non-blocking, to poll(). Never read or write it
 * directly (TLS), never close it. Before polling for input, read while kc_tunnel_pending() is
 * not 0: bytes already received and decrypted do not make the socket readable again.
 */
int kc_tunnel_fd(const struct kc_tunnel *t);
/** kc_tunnel_pending() - bytes kc_tunnel_read() returns without waiting. */
size_t kc_tunnel_pending(const struct kc_tunnel *t);
/**
 * kc_tunnel_events() - the poll() events to wait for on kc_tunnel_fd() before reading again
 * (@reading) and writing again (@writing): POLLIN for a read and POLLOUT for a write, unless
 * the last one that returned -EAGAIN needs the other (TLS may read to write, and write to
 * read).
 */
short kc_tunnel_events(const struct kc_tunnel *t, bool reading, bool writing);
/**
 * kc_tunnel_read() - up to @len bytes from the server: first those received with the head,
 * then the connection's. Never blocks. Return: the count (> 0); 0 at the end of the stream;
 * -EAGAIN (nothing now: poll for kc_tunnel_events(t, true, false)); -EPROTO (TLS failed) or
 * another negative errno (the connection failed).
 */
ssize_t kc_tunnel_read(struct kc_tunnel *t, void *buf, size_t len);
/**
 * kc_tunnel_write() - send up to @len bytes. Never blocks. After -EAGAIN, call again with the
 * same bytes (at least those): TLS may have taken them in part. Return: the count sent (> 0, may
 * be less than @len); -EAGAIN (poll for kc_tunnel_events(t, false, true)); -EPIPE or another
 * negative errno (the connection ended).
 */
ssize_t kc_tunnel_write(struct kc_tunnel *t, const void *buf, size_t len);
/**
 * kc_tunnel_header() - the value of the 101 answer's first header named @name
 * (case-insensitive: "Upgrade", "Sec-WebSocket-Accept", "Sec-WebSocket-Protocol",
 * "X-Stream-Protocol-Version"), trimmed; NULL when absent. Valid until kc_tunnel_close().
 */
const char *kc_tunnel_header(const struct kc_tunnel *t, const char *name);
/** kc_tunnel_close() - close the connection (TLS close_notify, best effort) and free. NULL ok. */
void kc_tunnel_close(struct kc_tunnel *t);

#endif
