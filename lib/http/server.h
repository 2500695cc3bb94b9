/*
 * server.h - the HTTP server every role shares (libmicrohttpd, HTTP/1.1, optional TLS).
 *
 * One server is one listening socket on an IPv4 or IPv6 literal (127.0.0.1 by default) and one
 * polling thread. Routes are registered before http_server_start() and fixed afterwards:
 *
 *   - a route has a path, exact or prefix (a byte prefix: end it with '/' to match whole
 *     segments), and a method or NULL for any method; HEAD is answered by the GET route;
 *   - the most specific route that accepts the method wins: an exact route beats a prefix one,
 *     and the longest prefix beats a shorter one;
 *   - no route for the path: 404; routes for the path but none for the method: 405 with Allow;
 *   - a request body larger than the route's cap (or the server's) is read, dropped and
 *     answered 413 without calling the handler.
 *
 * A handler runs on the server thread, one at a time: it must not block. It fills the response
 * and returns its status (outside 100..599: 500). A response is either a body held in memory or
 * a stream (http_resp_stream()) that another thread feeds.
 *
 * Streams (chunked transfer encoding): the producer pushes bytes into a queue capped at
 * queue_max; a push that does not fit returns -EMSGSIZE at once (it never blocks), and on_drain
 * runs when the queue has emptied. The stream is reference-counted: the producer holds one
 * reference until its one http_stream_end(), the server holds its own until the connection
 * ends; whoever lets go last frees it. on_close(-EPIPE) (the client went away, noticed even while
 * the stream is idle) or on_close(-ECANCELED) (the server is being freed) runs at most once, and
 * never after http_stream_end() returned; after it, pushes fail with the same code.
 *
 * TLS: a server given a certificate and key serves HTTPS (GnuTLS inside libmicrohttpd, fed PEM
 * text only). The pair can be replaced while the server runs, with http_server_set_cert(), and
 * no handshake fails for it: the server presents, in each handshake, the pair current when the
 * handshake asks for it (MHD_OPTION_HTTPS_CERT_CALLBACK2, a GnuTLS retrieve function that
 * imports the PEM pair under a mutex into objects GnuTLS frees with the session). Connections
 * already established keep the certificate they were given. Handing over the listening socket
 * to a second daemon (MHD_quiesce_daemon) was the other way; it was not taken because stopping
 * the old daemon closes its keep-alive connections and would end open streams.
 *
 * Graceful stop: http_server_drain() (answers close their connections), then
 * http_server_shutdown() (stop accepting, wait for the requests in flight with a bound), then
 * http_server_free().
 *
 * Metrics: landlord_http_requests_total{server,code} and
 * landlord_http_request_duration_seconds{server} (from the request line to the queued answer;
 * for a stream, to its headers).
 */
#ifndef LANDLORD_HTTP_SERVER_H
#define LANDLORD_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct buf;
struct ll_err;
struct http_server;
struct http_req;
struct http_resp;
struct http_stream;

#define HTTP_BODY_MAX         (64u << 10) /* request body cap unless a route or server says */
#define HTTP_CONN_LIMIT       64u         /* connections at once, streams included */
#define HTTP_TIMEOUT_S        30u         /* idle connections are closed after this */
#define HTTP_STREAM_QUEUE_MAX (1u << 20)  /* bytes a stream queues unless told */
#define HTTP_RESP_BODY_MAX    (64u << 20) /* a response body held in memory */

struct http_server_opts {
	const char *name;        /* the metrics label server=; NULL: "http" */
	const char *addr;        /* an IPv4 or IPv6 literal; NULL: 127.0.0.1 */
	int port;                /* 0: a free port, see http_server_port() */
	const char *cert_pem;    /* with key_pem: HTTPS (certificate chain, PEM; copied) */
	const char *key_pem;     /* PEM; copied */
	size_t body_max;         /* 0: HTTP_BODY_MAX */
	unsigned int conn_limit; /* 0: HTTP_CONN_LIMIT */
	unsigned int timeout_s;  /* 0: HTTP_TIMEOUT_S */
	/* 0: never. Every close_every-th answer closes its connection ("Connection: close"), so
	 * keep-alive connections do not live for ever: clients reconnect, and a server that joins
	 * a balanced set (a Service's endpoints) gets its share of them. */
	unsigned int close_every;
};

/**
 * A handler: read @req, fill @resp, return the HTTP status. Both are lent for the call only;
 * a stream taken from @resp outlives it.
 */
typedef int (*http_handler_fn)(void *ud, struct http_req *req, struct http_resp *resp);

struct http_route {
	const char *method; /* "GET", "POST", ...; NULL: any method */
	const char *path;   /* starts with '/' */
	bool prefix;        /* match every path that starts with @path */
	size_t body_max;    /* 0: the server's */
	http_handler_fn fn;
	void *ud; /* lent: must outlive the server */
};

/** http_server_new() - a stopped server; @o is copied (NULL: all defaults). Never NULL. */
struct http_server *http_server_new(const struct http_server_opts *o);
/**
 * http_server_route() - add a route (strings copied). Before http_server_start() only.
 * Return: 0, -EINVAL (no handler, path not starting with '/', empty method), -EEXIST (same
 * method, path and kind already routed), -EALREADY (started).
 */
int http_server_route(struct http_server *s, const struct http_route *r);
/**
 * http_server_start() - bind and serve on a background thread.
 * Return: 0, -EADDRINUSE (port taken), -EINVAL (not an IP literal, port outside 0..65535, or
 * an address this host does not have), -EALREADY (started), -EIO (anything else, such as a
 * certificate or key that TLS refuses); with a one-line reason in @err (may be NULL).
 */
int http_server_start(struct http_server *s, struct ll_err *err);
/**
 * http_server_set_cert() - serve @cert_pem (a chain, leaf first) with @key_pem from the next
 * handshake on; both are copied. Before http_server_start() it turns TLS on. Thread-safe, and
 * never blocks a handshake for longer than one PEM import.
 * Return: 0; -EINVAL (a chain or key that does not load, a key that is not the leaf's, or a
 * server started without TLS) with the reason in @err; the pair served before stays.
 */
int http_server_set_cert(struct http_server *s, const char *cert_pem, const char *key_pem,
                         struct ll_err *err);
/**
 * http_server_drain() - from now on every answer carries "Connection: close", so each
 * keep-alive connection ends after the request it carries (its client reconnects, elsewhere
 * when a Service no longer lists this server). New connections are still accepted. Thread-safe.
 */
void http_server_drain(struct http_server *s);
/**
 * http_server_shutdown() - stop accepting (the listening socket is closed: a new connection is
 * refused) and wait, at most @wait_ms, for the requests in flight (request line received,
 * answer not yet sent) to be answered; implies http_server_drain(). Idle keep-alive connections
 * stay open until http_server_free(). From a thread other than the server's; a second call
 * only waits again. Return: the requests still in flight when it gave up (0: all answered).
 */
int http_server_shutdown(struct http_server *s, int wait_ms);
/** http_server_port() - the bound port after start; the requested one before. */
int http_server_port(const struct http_server *s);
/**
 * http_server_free() - stop serving and free (NULL is fine). Every open stream gets
 * on_close(-ECANCELED) before this returns; connections are closed.
 */
void http_server_free(struct http_server *s);

/* Request accessors: lent strings, valid during the handler call. */
const char *http_req_method(const struct http_req *r);
/** http_req_path() - the path, percent-decoded, without the query. */
const char *http_req_path(const struct http_req *r);
/** http_req_query() - the raw query string after '?', still percent-encoded; "" if none. */
const char *http_req_query(const struct http_req *r);
/** http_req_arg() - one query argument, decoded; NULL when absent or given without a value. */
const char *http_req_arg(const struct http_req *r, const char *name);
/** http_req_header() - a request header (case-insensitive name); NULL when absent. */
const char *http_req_header(const struct http_req *r, const char *name);
/** http_req_body() - the body, NUL-terminated ("" when none); its length in @len if not NULL. */
const char *http_req_body(const struct http_req *r, size_t *len /* OUT */);
/** http_req_remote_addr() - the peer's IP address as text ("127.0.0.1", "::1"). */
const char *http_req_remote_addr(const struct http_req *r);

/**
 * http_resp_header() - add a response header. Content-Type defaults to
 * "text/plain; charset=utf-8"; the server owns Content-Length and Transfer-Encoding.
 * Return: 0, or -EINVAL for an empty name, a name that is not an HTTP token, or a CR or LF in
 * the value (so no header can be split into two).
 */
int http_resp_header(struct http_resp *resp, const char *name, const char *value);
/** http_resp_body() - the body buffer to append to (capped at HTTP_RESP_BODY_MAX); lent. */
struct buf *http_resp_body(struct http_resp *resp);

struct http_stream_opts {
	size_t queue_max; /* bytes queued and not yet sent; 0: HTTP_STREAM_QUEUE_MAX */
	/* The queue emptied after a push was refused; on the server thread. Optional. */
	void (*on_drain)(void *ud);
	/* The stream will send nothing more: -EPIPE or -ECANCELED (see above). Optional. */
	void (*on_close)(void *ud, int reason);
	void *ud;
};

/**
 * http_resp_stream() - make the response a chunked stream sent as the producer pushes. What
 * was appended to the body before is dropped. Call at most once per response, in the handler.
 * Return: the producer's reference (never NULL); the producer calls http_stream_end() on it
 * exactly once, from any thread.
 */
struct http_stream *http_resp_stream(struct http_resp *resp, const struct http_stream_opts *o);
/**
 * http_stream_push() - queue @len bytes (copied) to send. Thread-safe; never blocks.
 * Return: 0; -EMSGSIZE when they do not fit the queue now (on_drain follows once it empties;
 * a push larger than queue_max never fits); -EPIPE or -ECANCELED once the stream is closed.
 */
int http_stream_push(struct http_stream *st, const void *data, size_t len);
/**
 * http_stream_end() - the producer is done: what is queued is sent, then the end of the
 * body. Drops the producer's reference, so @st is gone for the caller. Waits for a callback
 * running on another thread, so that none runs after it returns.
 */
void http_stream_end(struct http_stream *st);

#endif
