/*
 * proxy.h - the tenant API proxy role: what `landlord proxy` and `landlord run` serve on port
 * 8444 (docs/proxy.md).
 *
 * Each tenant has its own base URL, https://<proxy>/tenants/<tenant>, below which the
 * Kubernetes API is served as that tenant's view: its namespaces under their shown names
 * (nsmap.h), every namespace field converted both ways (convert.h), nothing of another tenant
 * reachable, and everything else hidden.
 *
 * A request goes through, in order:
 *  1. the route (route.h): a malformed path is 400, an unknown one 404;
 *  2. authentication (auth.h): a client certificate from the proxy's CA, whose OU must be
 *     the URL's tenant; anything else is 401 with the reason;
 *  3. membership (view.h): a caller who is not a member of the URL's tenant gets 403;
 *  4. the upstream call, made by a thread of its own while the server thread serves others
 *     (http/later.h), impersonating the caller (Impersonate-User and Impersonate-Group), so
 *     that RBAC and admission judge the caller exactly as if it called the API server itself.
 *     Clients' own Impersonate-*, X-Remote-* and Authorization headers are never forwarded.
 *
 * Invariants:
 *  - no request reaches upstream before steps 1 to 3 passed, and every upstream call carries
 *    the caller's identity: the proxy never acts on a tenant's behalf with its own rights,
 *    except to list the tenant's namespaces by their label (and then shows only those the
 *    caller may get);
 *  - a namespace outside the tenant's table is answered 404, never 403, and never reaches
 *    upstream;
 *  - the role holds no state of its own: replicas share nothing but the API server.
 */
#ifndef LANDLORD_PROXY_PROXY_H
#define LANDLORD_PROXY_PROXY_H

#include <stdint.h>

struct kc_client;
struct mgr;
struct ll_err;
struct px;

#define PX_DEFAULT_PORT       8444
#define PX_CONN_LIMIT         2048u
#define PX_BODY_MAX           (4u << 20) /* a request body; 413 above */
#define PX_STREAM_IDLE_MAX_S  (4 * 3600) /* --stream-idle-timeout's default */
#define PX_WATCH_QUEUE_MAX    (1u << 20) /* bytes a slow client's watch may queue */
#define PX_SLOW_CLIENT_WAIT_S 30         /* then the watch ends */

struct px_opts {
	struct kc_client *client; /* the proxy's own identity upstream; borrowed */
	struct mgr *mgr;          /* whose informers the view shares; borrowed */
	const char *addr;         /* an IP literal; NULL: 127.0.0.1 */
	int port;                 /* 0: a free one */
	const char *cert_pem;     /* the serving pair (PEM) */
	const char *key_pem;
	const char *client_ca_pem;     /* the CAs whose client certificates are accepted */
	int64_t stream_idle_timeout_s; /* 0: PX_STREAM_IDLE_MAX_S */
};

/**
 * px_new() - the role, with its view made on @o->mgr's informers: call before mgr_run().
 * Nothing listens yet. Return: 0; -ENOMEM; -EINVAL (no serving pair or client CA).
 */
int px_new(const struct px_opts *o, struct px **out /* OUT */, struct ll_err *err);
/**
 * px_start() - listen. Return: 0; -EADDRINUSE (the port is taken), -EINVAL (a bad address),
 * -EIO (TLS refused the pair), with one line in @err naming what and what to do.
 */
int px_start(struct px *p, struct ll_err *err);
/** px_port() - the bound port after px_start(). */
int px_port(const struct px *p);
/**
 * px_set_client_cas() - accept client certificates of the CAs in @bundle_pem from the next
 * request on (a CA rotation). Thread-safe. Return: 0 or -EINVAL (not a bundle).
 */
int px_set_client_cas(struct px *p, const char *bundle_pem, struct ll_err *err);
/**
 * px_set_serving() - serve @cert_pem and @key_pem from the next handshake on (a renewal),
 * without a failed handshake. Thread-safe. Return: 0 or -EINVAL (the pair does not load).
 */
int px_set_serving(struct px *p, const char *cert_pem, const char *key_pem, struct ll_err *err);
/**
 * px_free() - stop listening, end open streams, wait for the calls in flight, free. NULL ok.
 */
void px_free(struct px *p);

#endif
