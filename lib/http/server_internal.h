/*
 * server_internal.h - what server.c (requests, routing, the daemon) and stream.c (streams and
 * the hang-up watcher) share. Not for users of the layer: they include http/server.h.
 *
 * Lock order: server mu, then a stream's mu, then libmicrohttpd's own locks (suspend and
 * resume take one). libmicrohttpd calls the stream reader with a lock of its own held that
 * nothing of ours takes, and calls no callback of ours while holding the resume lock.
 */
#ifndef LANDLORD_HTTP_SERVER_INTERNAL_H
#define LANDLORD_HTTP_SERVER_INTERNAL_H

#include <microhttpd.h>
#include <netinet/in.h>
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
	bool stopping;
	bool watcher_started;
	pthread_t watcher;
	int wake[2]; /* pipe: a stream went idle, or the watcher must stop */
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

/* tls.c: the MHD options that serve s->cert_pem (three items, END last; one END without TLS),
 * after checking the pair loads. Return: 0 or -EIO with the reason. */
int http__tls_options(struct http_server *s, struct MHD_OptionItem *opts, struct ll_err *err);

/* stream.c */
struct http_stream *http__stream_new(struct http_req *req, const struct http_stream_opts *o);
ssize_t http__stream_read(void *cls, uint64_t pos, char *out, size_t max);
void http__stream_response_freed(void *cls);
void http__stream_conn_ended(struct http_stream *st);
void http__stream_unref(struct http_stream *st);
void http__streams_cancel(struct http_server *s);
void http__watcher_stop(struct http_server *s);

#endif
