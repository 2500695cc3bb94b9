/*
 * proxy_internal.h - what the proxy's files share: the role (serve.c), a request's job
 * (job.c: the upstream call and its conversions), the namespace collection (namespaces.c),
 * streams (watch.c) and tunnels (tunnel.c). Not for other modules: they include proxy/proxy.h.
 */
#ifndef LANDLORD_PROXY_INTERNAL_H
#define LANDLORD_PROXY_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "kube/kube.h"
#include "pki/pki.h"
#include "proxy/proxy.h"
#include "proxy/route.h"
#include "proxy/tokens.h"

struct http_server;
struct http_later;
struct disc;
struct px_view;
struct px_nsmap;
struct px_apifilter;

struct px {
	struct px_opts o;
	struct http_server *server;
	struct px_view *view;
	struct px_tokens *tokens;
	struct disc *disc;
	pthread_rwlock_t ca_lock; /* guards client_cas */
	char *client_cas;
	pthread_mutex_t mu; /* guards jobs and stopping */
	pthread_cond_t idle;
	int jobs; /* threads running a job */
	bool stopping;
};

/*
 * Who is calling, authenticated: a client certificate's CN and O, or a token's user and
 * groups. @impersonate_groups: the groups sent upstream (a ServiceAccount's are the API
 * server's to add, and system:authenticated always is).
 */
struct px_caller {
	char user[PX_TOKEN_NAME_MAX + 1];
	char groups[PX_TOKEN_GROUPS_MAX][PX_TOKEN_GROUP_MAX + 1];
	size_t n_groups;
	bool service_account;
};

/*
 * The headers of a request that asks to switch protocols (exec, attach, port-forward), copied
 * off the server thread by px_upgrade_take(). Only the first value of a header is kept (lib/http
 * gives one): clients list the version they prefer first (tunnel.c completes the remote command
 * versions).
 */
struct px_upgrade {
	bool asked;    /* Connection names "upgrade", and an Upgrade header came */
	bool too_long; /* a value longer than its field: refused (400) */
	char upgrade[64];
	char ws_key[64];
	char ws_version[16];
	char ws_protocol[512];
	char stream_version[128];
};

/* One request, copied off the server thread, and its answer to come. */
struct px_job {
	struct px *px;
	struct http_later *later;
	struct px_route route;
	char *method;
	char *query;        /* raw, percent-encoded; "" when none */
	char *content_type; /* or NULL */
	char *accept;       /* filtered to JSON forms (job.c) */
	struct buf body;
	char *peer_pem;     /* the client's certificate chain, or NULL */
	char *bearer;       /* the Authorization header's token, or NULL (wiped when freed) */
	bool impersonating; /* the client sent Impersonate-* headers */
	struct px_caller who;
	bool watch;        /* ?watch=true: a stream of events */
	bool follow;       /* a log followed: a stream of bytes */
	atomic_int cancel; /* the client went away, or the role stops */
	struct px_upgrade up;
};

/* serve.c: @resp's body a metav1.Status of @code, @reason and @msg (JSON). */
struct http_resp;
void px_write_status(struct http_resp *resp, int code, const char *reason, const char *msg);

/* auth.c: copy the request's credentials into @j (on the server thread). */
struct http_req;
void px_credentials_take(struct px_job *j, struct http_req *req);
/* auth.c: authenticate @j's caller and check membership of the URL's tenant, filling j->who.
 * Return: 0, or -1 with the answer (401, 403, 503) sent. */
int px_authorize(struct px_job *j);
/* auth.c: wipe and free what px_credentials_take() copied. */
void px_credentials_release(struct px_job *j);

/* job.c: run @j on the calling thread, answer, and free it. */
void px_job_run(struct px_job *j);
void px_job_free(struct px_job *j);

/* job.c: answer @j with a metav1.Status of @code, @reason and a message (printf-style). */
void px_job_status(struct px_job *j, int code, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/*
 * job.c: call upstream as the caller: @path (absolute, encoded), @query, @body; the answer
 * (converted with @map when JSON) is @j's. @as_self: as the proxy itself (the namespace list).
 */
struct px_call {
	const char *path;
	const char *query;
	const char *body;
	size_t body_len;
	const char *content_type;
	bool as_self;
	const struct px_nsmap *map; /* the answer's conversion */
	const char *resource;       /* for the conversion */
	const char *accept;         /* the Accept sent upstream; NULL: the client's, JSON only */
	const char *method;         /* NULL: the client's */
	/* a JSON answer's own rewrite, after the conversion (discovery's): 0, or the status to
	 * answer instead (404: not in the tenant's view; 502: not what was expected) */
	int (*fix)(const struct px_job *j, json_t *answer);
};
void px_job_forward(struct px_job *j, const struct px_call *c);
/* job.c: @j's body converted for upstream (upstream.c), then forwarded to @path, the answer
 * converted with @map for @resource. */
void px_forward_body(struct px_job *j, const struct px_nsmap *map, const char *path,
                     const char *resource);
/* job.c: the upstream headers impersonating @j's caller, into @h (PX_IMP_HEADERS_MAX). */
#define PX_IMP_HEADERS_MAX (1 + PX_TOKEN_GROUPS_MAX)
size_t px_job_impersonation(const struct px_job *j, struct kc_header *h);

/* watch.c: stream the upstream answer of @c to the client, each event converted. */
void px_watch_forward(struct px_job *j, const struct px_call *c);

/* tunnel.c: copy the request's upgrade headers into j->up (on the server thread). */
void px_upgrade_take(struct px_job *j, struct http_req *req);
/* tunnel.c: whether @j asks for a tunnel: pods' exec, attach or portforward, upgrading. */
bool px_tunnel_wanted(const struct px_job *j);
/*
 * tunnel.c: serve @j's tunnel: a SubjectAccessReview of create on the pod's subresource in
 * @full_ns (403 unless allowed), then the upgrade upstream to @path as the caller, and on a
 * 101 the bytes both ways until either side ends or the stream idle timeout; any other answer
 * is forwarded, converted with @map.
 */
void px_tunnel(struct px_job *j, const struct px_nsmap *map, const char *path, const char *full_ns);

/* apiview.c: discovery and OpenAPI, cut to the tenant's view (apifilter.h). */
void px_api_documents(struct px_job *j);
/* apiview.c: the configuration's filter (shared groups, nodes) for @j. */
const struct px_apifilter *px_job_filter(const struct px_job *j);

/* top.c: a path outside /namespaces/NS (an -A list, a self review, or hidden). */
void px_top(struct px_job *j, const struct px_nsmap *map);

/* namespaces.c: the namespace collection and namespace objects. */
void px_namespaces(struct px_job *j, struct px_nsmap *map);
void px_namespace(struct px_job *j, struct px_nsmap *map);

/*
 * upstream.c: the request body converted for upstream into @out. Return: 0; -1 with an answer
 * sent; PX_BODY_RMW: a JSON patch that moves, copies or tests a namespace field (rmw.c).
 */
#define PX_BODY_RMW 1
int px_body_upstream(struct px_job *j, const struct px_nsmap *map, struct buf *out);
/* rmw.c: @j's JSON patch applied in the tenant's view: GET, patch, PUT with the
 * resourceVersion, all as the caller. */
void px_patch_rmw(struct px_job *j, const struct px_nsmap *map, const char *path,
                  const char *resource);

#endif
