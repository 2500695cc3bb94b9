/*
 * server_internal.h - what server.c (requests, routing, the daemon) and stream.c (streams and
 * the hang-up watcher) share. Not for users of the layer: they include http/server.h.
 *
 * Lock order: server mu, then a stream's mu, then libmicrohttpd's own locks (suspend and
 * resume take one); server mu, then tunnel_mu, then a tunnel's mu. libmicrohttpd calls the
 * stream reader with a lock of its own held that nothing of ours takes. It calls the
 * completion callback of a tunnel's request with its resume lock held, so that path takes
 * only tunnel_mu and a tunnel's mu, and neither of those is ever held while calling
 * libmicrohttpd (upgrade.c).
 */
#ifndef LANDLORD_HTTP_SERVER_INTERNAL_H
#define LANDLORD_HTTP_SERVER_INTERNAL_H

#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/vec.h"
#include "http/server.h"

struct route {
	char *method; /* NULL: any */
	char *path;
	size_t path_len;
	bool prefix;
	size_t body_max;
	http_handler_fn fn;
	void *ud;
};

struct http_server {
	char *name;
	char *addr;
	int port;               /* requested; the bound one after start */
	pthread_mutex_t tls_mu; /* guards cert_pem and key_pem: tls.c swaps them while serving */
	char *cert_pem;
	char *key_pem;
	char *client_ca_pem; /* fixed once started: libmicrohttpd reads it at start */
	size_t body_max;
	unsigned int conn_limit;
	unsigned int timeout_s;
	unsigned int close_every; /* 0: never */
	atomic_uint answers;      /* answers sent, for close_every */
	VEC(struct route) routes; /* fixed once started: read by the server thread without a lock */
	struct MHD_Daemon *d;
	atomic_int in_flight; /* requests between their request line and their completion */
	atomic_bool draining; /* every answer says Connection: close */
	bool shut;            /* http_server_shutdown() stopped accepting */
	int quiesced_fd; /* the listening socket MHD gave back, closed after MHD stops; or -1 */

	pthread_mutex_t mu;                /* guards what follows */
	VEC(struct http_stream *) streams; /* open streams, for the watcher and for shutdown */
	VEC(struct http_later *) laters;   /* answers pending (later.c), for shutdown */
	bool stopping;
	bool watcher_started;
	pthread_t watcher;
	int wake[2]; /* pipe: a stream went idle, or the watcher must stop */

	pthread_mutex_t tunnel_mu;           /* guards what follows (see the lock order) */
	VEC(struct http_upgraded *) tunnels; /* open tunnels, for http_server_free() */
	bool tunnels_closed;                 /* http_server_free() has begun: no new tunnel */
};

/* One request: made by the URI callback, freed by the completion callback. */
struct http_req {
	struct http_server *s;
	struct MHD_Connection *c;
	const char *method; /* MHD's, during the access callback */
	const char *path;
	char *query;
	struct buf body;
	const struct route *route;
	int early; /* 0: call the route; otherwise the status to answer (404, 405, 413) */
	bool headers_seen;
	int64_t t0;
	char remote[INET6_ADDRSTRLEN];
	struct http_stream *stream; /* the request's reference, dropped at completion */
	char *peer_pem;             /* http_req_peer_cert(), once peer_done */
	bool peer_done;
	http_upgrade_fn up_fn; /* a 101 was queued and its callback has not run yet */
	void *up_ud;
	bool upgraded;                /* the 101 went out: no longer in flight */
	struct http_upgraded *tunnel; /* the connection's reference, dropped at completion */
	struct http_later *later;     /* an answer to come (later.c): the request's reference */
};

struct header {
	char *name;
	char *value;
};

struct http_resp {
	struct http_req *req;
	VEC(struct header) headers;
	struct buf body;
	struct http_stream *stream; /* borrowed: the request holds the reference */
	char *upgrade;              /* the Upgrade token of a 101, or NULL */
	http_upgrade_fn up_fn;
	void *up_ud;
	bool deferred; /* http_resp_defer(): the answer comes later, from the later's copy */
};

/*
 * A tunnel. The caller's reference lasts until http_upgraded_close(), the connection's until
 * the request's completion. urh is taken (set to NULL) by whoever ends libmicrohttpd's side:
 * the caller's close, which then calls MHD_upgrade_action() with busy set, or
 * http_server_free(), which waits for busy to clear and leaves the rest to MHD_stop_daemon().
 */
struct http_upgraded {
	pthread_mutex_t mu;
	pthread_cond_t idle; /* busy went false */
	int refs;
	struct http_server *s; /* used only while urh is held: http_server_free() takes urh first */
	struct MHD_UpgradeResponseHandle *urh;
	bool busy;         /* a thread is in MHD_upgrade_action(urh) */
	bool closed;       /* http_upgraded_close() was called */
	bool hung_up;      /* the watcher saw the client leave and shut down fd's write side */
	bool kicked;       /* the watcher woke the server thread for the close (upgrade.c) */
	int64_t closed_ns; /* TLS: when the caller closed; 0 before */
	int fd; /* the caller's: a duplicate of libmicrohttpd's, closed by http_upgraded_close() */
	/* TLS: the tunnel's own duplicate of the client's socket, for the watcher (polled for a
	 * hang-up, shut down to wake a close); closed with the tunnel or at server free; or -1 */
	int conn_fd;
	struct buf early;
};

struct http_stream {
	pthread_mutex_t mu;
	pthread_cond_t cb_done; /* a callback finished */
	int refs;
	struct http_server *s;
	struct MHD_Connection *c; /* NULL once the connection ended */
	int fd;
	struct buf q;
	struct http_stream_opts o;
	bool suspended; /* we suspended the connection and nobody resumed it yet */
	bool ended;     /* http_stream_end() was called */
	bool want_drain;
	bool close_ran;
	int closed; /* 0, or -EPIPE / -ECANCELED: nothing more goes out */
	int cb_depth;
	pthread_t cb_thread;
};

/* tls.c: the MHD options that serve s->cert_pem and request client certificates from
 * s->client_ca_pem (at most HTTP__TLS_OPTIONS items, END last; one END without TLS), after
 * checking that the pair and the bundle load. Return: 0, -EINVAL (a client CA bundle without
 * TLS) or -EIO, with the reason. */
#define HTTP__TLS_OPTIONS 4
int http__tls_options(struct http_server *s, struct MHD_OptionItem *opts, struct ll_err *err);

/* server.c: @s is an RFC 9110 token (one or more tchar). */
bool http__is_token(const char *s);

/* upgrade.c */
struct MHD_Response *http__upgrade_response(struct http_resp *resp);
void http__upgrade_drop(struct http_resp *resp, int reason);
void http__upgrade_completed(struct http_req *r);
void http__tunnels_close(struct http_server *s);
nfds_t http__tunnels_watch(struct http_server *s, struct pollfd *fds, nfds_t n, nfds_t max,
                           int *timeout_ms);
void http__tunnels_hung_up(struct http_server *s, int fd);
void http__tunnels_kick_due(struct http_server *s);

/* server.c: queue @resp with @status on its request's connection (the access callback only);
 * free what a response holds (not the struct). */
enum MHD_Result http__send_response(struct http_resp *resp, unsigned int status);
void http__resp_release(struct http_resp *resp);

/* later.c: the access callback's answer for a request with a later; a request done; stop. */
enum MHD_Result http__later_answer(struct http_req *r);
void http__later_request_done(struct http_req *r);
void http__laters_cancel(struct http_server *s);

/* stream.c */
struct http_stream *http__stream_new(struct http_req *req, const struct http_stream_opts *o);
ssize_t http__stream_read(void *cls, uint64_t pos, char *out, size_t max);
void http__stream_response_freed(void *cls);
void http__stream_conn_ended(struct http_stream *st);
void http__stream_unref(struct http_stream *st);
void http__streams_cancel(struct http_server *s);
void http__watcher_stop(struct http_server *s);
void http__watcher_kick(struct http_server *s);

#endif
