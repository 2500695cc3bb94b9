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
 * Client certificates: with client_ca_pem on a TLS server every handshake requests (never
 * requires) a client certificate, naming those CAs as acceptable (MHD_OPTION_HTTPS_MEM_TRUST:
 * gnutls_certificate_set_x509_trust_mem() on the server's credentials and
 * gnutls_certificate_server_set_request(GNUTLS_CERT_REQUEST) on each session). Neither
 * libmicrohttpd nor GnuTLS judges what comes back: no verify callback is set, so a client with
 * no certificate, an expired one or one from another CA completes its handshake like any other
 * (GnuTLS still checks that the client holds the key of what it sent). http_req_peer_cert()
 * hands the chain to the handler as PEM; deciding whether it is good enough is the caller's.
 * The bundle is read at start: changing it needs a new server.
 *
 * Upgrades (HTTP 101): a handler that answers with http_resp_upgrade() gets, once the 101 is on
 * the wire, the connection's byte stream as a non-blocking file descriptor (under TLS, one end
 * of a socketpair that the server thread pumps through TLS; plain HTTP, the TCP socket itself),
 * and gives it back with http_upgraded_close(). A tunnel is a connection: it counts against
 * conn_limit, no timeout applies to it, and http_server_shutdown() does not wait for it. When
 * the client leaves, the caller reads what it sent and then the end of file, and its writes
 * fail with EPIPE; under TLS libmicrohttpd 0.9.75 would not pass the hang-up on while the
 * caller's side is open, so the server's watcher thread (the one that watches idle streams)
 * polls the client's socket and shuts down the write side of the caller's end for it. A client
 * that half-closes its side is taken as gone. http_server_free() with a tunnel open shuts the
 * caller's socket down (same end of file, same EPIPE), stops libmicrohttpd, which frees its
 * side, and returns; the caller's descriptor and struct http_upgraded stay valid until the
 * caller's http_upgraded_close(), which then only releases them.
 *
 * Connections and descriptors: the server polls with epoll, so nothing caps conn_limit below
 * what it is told (no FD_SETSIZE limit; libmicrohttpd takes MHD_OPTION_CONNECTION_LIMIT as
 * given). Each connection costs a descriptor; a tunnel adds the caller's descriptor, and under
 * TLS the socketpair's two ends and a duplicate of the client's socket for the watcher: up to
 * HTTP_FDS_PER_CONN each. The process must allow conn_limit * HTTP_FDS_PER_CONN descriptors
 * plus its own (RLIMIT_NOFILE: 2048 connections need more than 10240, well above the usual
 * soft limit of 1024; raise the soft
 * limit towards the hard one before starting). http_server_start() logs a warning when the
 * soft limit is lower. Past the limit, accept() fails and libmicrohttpd stops accepting until a
 * connection ends. Each connection also holds a 32 KiB buffer pool of libmicrohttpd's.
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
struct http_upgraded;

#define HTTP_BODY_MAX         (64u << 10) /* request body cap unless a route or server says */
#define HTTP_CONN_LIMIT       64u         /* connections at once, streams and tunnels included */
#define HTTP_TIMEOUT_S        30u         /* idle connections are closed after this */
#define HTTP_STREAM_QUEUE_MAX (1u << 20)  /* bytes a stream queues unless told */
#define HTTP_RESP_BODY_MAX    (64u << 20) /* a response body held in memory */
#define HTTP_FDS_PER_CONN     5u          /* descriptors a connection may hold (a TLS tunnel) */
#define HTTP_PEER_CHAIN_MAX   8u          /* certificates http_req_peer_cert() returns */
#define HTTP_PEER_PEM_MAX     (64u << 10) /* bytes of PEM http_req_peer_cert() returns */

struct http_server_opts {
	const char *name;     /* the metrics label server=; NULL: "http" */
	const char *addr;     /* an IPv4 or IPv6 literal; NULL: 127.0.0.1 */
	int port;             /* 0: a free port, see http_server_port() */
	const char *cert_pem; /* with key_pem: HTTPS (certificate chain, PEM; copied) */
	const char *key_pem;  /* PEM; copied */
	/* CA certificates (PEM bundle; copied) named in each handshake's certificate request, so
	 * that clients offer a certificate (see above); NULL: none requested. TLS servers only. */
	const char *client_ca_pem;
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
 * Return: 0, -EADDRINUSE (port taken), -EINVAL (not an IP literal, port outside 0..65535, an
 * address this host does not have, or client_ca_pem without TLS), -EALREADY (started), -EIO
 * (anything else, such as a certificate, key or client CA bundle that TLS refuses); with a
 * one-line reason in @err (may be NULL).
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
 * on_close(-ECANCELED) before this returns; connections are closed. Open tunnels are shut down
 * (see above): their descriptors and handles stay the callers' until http_upgraded_close().
 * From a thread other than the server's.
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
 * http_req_peer_cert() - the certificate chain the client sent in its TLS handshake, as PEM
 * ("-----BEGIN CERTIFICATE-----" blocks, leaf first), unverified: lib/http judges nothing.
 * At most HTTP_PEER_CHAIN_MAX certificates and HTTP_PEER_PEM_MAX bytes: the certificates past
 * either cap are left out (the leaf always comes first). Lent for the handler call; made on the
 * first call of a request and kept for the others.
 * Return: the PEM text; NULL when the client sent no certificate, on plain HTTP, or when the
 * leaf alone is over the cap.
 */
const char *http_req_peer_cert(const struct http_req *r);

/**
 * http_resp_header() - add a response header. Content-Type defaults to
 * "text/plain; charset=utf-8"; the server owns Content-Length and Transfer-Encoding.
 * Return: 0, or -EINVAL for an empty name, a name that is not an HTTP token, or a CR or LF in
 * the value (so no header can be split into two).
 */
int http_resp_header(struct http_resp *resp, const char *name, const char *value);
/** http_resp_body() - the body buffer to append to (capped at HTTP_RESP_BODY_MAX); lent. */
struct buf *http_resp_body(struct http_resp *resp);

/**
 * A tunnel's start, on the server thread; it must not block. Called exactly once for each
 * http_resp_upgrade() that returned 0:
 *
 *   - @fd >= 0 and @u: the 101 was sent and the tunnel is the caller's. @fd is non-blocking
 *     (poll it, write with MSG_NOSIGNAL); hand @fd and @u to the caller's own thread. Bytes the
 *     client sent after its request, before the 101, come first: http_upgraded_early(). The
 *     caller calls http_upgraded_close(@u) exactly once, from any thread, and never close(@fd);
 *     both stay valid until then, even past http_server_free().
 *   - @fd < 0 (a negative errno) and @u NULL: there is no tunnel and nothing to close.
 *     -ECANCELED: the handler returned a status other than 101, or the server is being freed;
 *     -ECONNABORTED: the 101 was not sent (the client left, the request was not HTTP/1.1,
 *     or the server stopped first);
 *     -EMFILE, -ENFILE: no descriptor was left for the tunnel.
 */
typedef void (*http_upgrade_fn)(void *ud, int fd, struct http_upgraded *u);

/**
 * http_resp_upgrade() - make the response a 101 Switching Protocols to @upgrade_token
 * ("websocket", "SPDY/3.1"; sent as the Upgrade header), then a tunnel: @on_upgraded runs with
 * the connection's bytes (see http_upgrade_fn). The handler adds the other headers it wants
 * (Sec-WebSocket-Accept, Sec-WebSocket-Protocol, X-Stream-Protocol-Version) with
 * http_resp_header() and returns 101. Connection ("Upgrade") is libmicrohttpd's: a Connection
 * or Upgrade header the handler adds is not sent, nor is Content-Type or a body. The handler
 * decides from the request's headers (http_req_header(r, "Upgrade"), "Connection") whether to
 * upgrade at all. At most once per response, not with http_resp_stream().
 * Return: 0; -EINVAL (@upgrade_token not a protocol name with an optional "/version", or no
 * @on_upgraded); -EALREADY (already an upgrade or a stream).
 */
int http_resp_upgrade(struct http_resp *resp, const char *upgrade_token,
                      http_upgrade_fn on_upgraded, void *ud);
/**
 * http_upgraded_early() - the bytes the client sent after its request head and before the 101,
 * which libmicrohttpd had already read: the tunnel's first bytes, before any read from the
 * descriptor. Valid until http_upgraded_close(). Return: them (never NULL), their length in
 * @len.
 */
const void *http_upgraded_early(const struct http_upgraded *u, size_t *len /* OUT */);
/**
 * http_upgraded_close() - the caller is done with the tunnel: its descriptor is closed (the
 * client sees the connection end) and @u is gone for the caller. Exactly once per tunnel, from
 * any thread, also after http_server_free() (it then only releases the descriptor and @u).
 */
void http_upgraded_close(struct http_upgraded *u);

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
