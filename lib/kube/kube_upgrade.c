/*
 * kube_upgrade.c - kc_upgrade() and its tunnels (kube.h): one request that switches protocols,
 * for exec, attach and port-forward, on a connection of its own.
 *
 * Debian's libcurl 7.88 has no WebSocket and hands no upgraded connection over, so this is a
 * small HTTP/1.1 client on OpenSSL 3 (c-style.md §2.3): connect (non-blocking, within
 * CONNECT_TIMEOUT_MS, TLS handshake included, as libcurl's connect timeout), TLS with the
 * client's own material (its CA or the system's, the host name or IP address verified, the
 * client certificate), the request, then the answer's head (at most KC_UPGRADE_HEAD_MAX bytes)
 * within the request's timeout. A 101 leaves the connection to the caller as a tunnel, with the
 * bytes read past the head served first; any other answer's body is read (Content-Length,
 * chunked, or to the end; at most KC_UPGRADE_BODY_MAX kept) and the connection closed.
 *
 * The socket sits under a BIO of our own that sends with MSG_NOSIGNAL: a peer gone is EPIPE,
 * never SIGPIPE (the process does not ignore it). An end of stream without close_notify is
 * the end (SSL_OP_IGNORE_UNEXPECTED_EOF): a tunnel's protocols frame their own endings. ALPN
 * offers http/1.1 alone, so a server that speaks HTTP/2 never picks it for an upgrade.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"
#include "kube/kube_internal.h"

#define ANSWER_HEADERS_MAX 100   /* headers of an answer kept; more are ignored */
#define READ_CHUNK         16384 /* bytes read at once */
#define WAIT_SLICE_MS      200   /* how often a wait looks at the cancel flag */

struct kc_tunnel {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;      /* NULL on plain HTTP */
	short rd_need; /* what the last read that returned -EAGAIN waits for */
	short wr_need; /* ... and the last write */
	struct buf in; /* what was read while waiting for the head */
	size_t off;    /* bytes of @in consumed: the head, then early bytes served */
	char *head;    /* the head, cut by NULs into the values below */
	const char *names[ANSWER_HEADERS_MAX];
	const char *values[ANSWER_HEADERS_MAX];
	size_t n_headers;
	int status;
};

/* Where the server is, and what its certificate must name. */
struct endpoint {
	bool tls;
	char host[256];      /* connect here: the server URL's host, without brackets */
	char port[8];        /* ... on this port */
	char name[256];      /* verified and sent as SNI: tls-server-name, else the host */
	char authority[300]; /* the Host header: the name, with the URL's port if it has one */
	char prefix[512];    /* the URL's own path, before the request's ("" for none) */
};

/* ---------- the socket BIO: send() with MSG_NOSIGNAL ---------- */

static BIO_METHOD *sock_method;
static pthread_once_t sock_once = PTHREAD_ONCE_INIT;

static int sock_fd(BIO *b)
{
	return (int)(intptr_t)BIO_get_data(b);
}

static bool retry_errno(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

static int sock_write(BIO *b, const char *data, size_t len, size_t *done)
{
	ssize_t n = send(sock_fd(b), data, len, MSG_NOSIGNAL);

	BIO_clear_retry_flags(b);
	if (n >= 0) {
		*done = (size_t)n;
		return 1;
	}
	if (retry_errno())
		BIO_set_retry_write(b);
	return 0;
}

static int sock_read(BIO *b, char *data, size_t len, size_t *done)
{
	ssize_t n = recv(sock_fd(b), data, len, 0);

	BIO_clear_retry_flags(b);
	if (n > 0) {
		*done = (size_t)n;
		return 1;
	}
	if (n == 0)
		BIO_set_flags(b, BIO_FLAGS_IN_EOF);
	else if (retry_errno())
		BIO_set_retry_read(b);
	return 0;
}

static long sock_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)num;
	(void)ptr;
	if (cmd == BIO_CTRL_FLUSH)
		return 1;
	if (cmd == BIO_CTRL_EOF)
		return BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0;
	return 0;
}

static int sock_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static void sock_method_init(void)
{
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "kc-socket");

	if (m && BIO_meth_set_write_ex(m, sock_write) && BIO_meth_set_read_ex(m, sock_read) &&
	    BIO_meth_set_ctrl(m, sock_ctrl) && BIO_meth_set_create(m, sock_create))
		sock_method = m;
	else
		BIO_meth_free(m);
}

/* ---------- the server's address ---------- */

static int url_part(CURLU *u, CURLUPart what, unsigned flags, char *out, size_t size)
{
	char *v = NULL;
	bool ok = curl_url_get(u, what, &v, flags) == CURLUE_OK && strlen(v) < size;

	if (ok)
		snprintf(out, size, "%s", v);
	curl_free(v);
	return ok ? 0 : -1;
}

static void unbracket(char *h)
{
	size_t n = strlen(h);

	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		memmove(h, h + 1, n - 2);
		h[n - 2] = '\0';
	}
}

/* The server URL (where to connect) and the client's base (tls-server-name applied). */
static int endpoint_parse(const struct kc_client *c, struct endpoint *ep, struct ll_err *err)
{
	CURLU *srv = curl_url(), *base = curl_url();
	char scheme[8], port[8] = "";
	int rc = -1;

	memset(ep, 0, sizeof(*ep));
	if (srv && base && curl_url_set(srv, CURLUPART_URL, c->server, 0) == CURLUE_OK &&
	    curl_url_set(base, CURLUPART_URL, c->base, 0) == CURLUE_OK &&
	    url_part(srv, CURLUPART_SCHEME, 0, scheme, sizeof(scheme)) == 0 &&
	    url_part(srv, CURLUPART_HOST, 0, ep->host, sizeof(ep->host)) == 0 &&
	    url_part(srv, CURLUPART_PORT, CURLU_DEFAULT_PORT, ep->port, sizeof(ep->port)) == 0 &&
	    url_part(base, CURLUPART_HOST, 0, ep->name, sizeof(ep->name)) == 0 &&
	    url_part(base, CURLUPART_PATH, 0, ep->prefix, sizeof(ep->prefix)) == 0)
		rc = 0;
	if (rc == 0) {
		url_part(base, CURLUPART_PORT, 0, port, sizeof(port)); /* none: the default */
		snprintf(ep->authority, sizeof(ep->authority), "%s%s%s", ep->name, *port ? ":" : "",
		         port);
		unbracket(ep->host);
		unbracket(ep->name);
		ep->prefix[strcspn(ep->prefix, "?")] = '\0';
		for (size_t n = strlen(ep->prefix); n && ep->prefix[n - 1] == '/'; n--)
			ep->prefix[n - 1] = '\0';
		ep->tls = strcmp(scheme, "https") == 0;
	}
	curl_url_cleanup(srv);
	curl_url_cleanup(base);
	return rc == 0 ? 0 : ll_err_set(err, -EINVAL, "invalid server URL \"%.200s\"", c->server);
}

/* ---------- waiting ---------- */

/* Until @fd is ready for @events: 0; -ETIMEDOUT past @deadline_ms; -ECANCELED. */
static int wait_fd(int fd, short events, int64_t deadline_ms, atomic_int *cancel)
{
	for (;;) {
		int64_t left = deadline_ms - clock_mono_ms();
		struct pollfd p = {.fd = fd, .events = events};
		int n;

		if (cancel && atomic_load(cancel))
			return -ECANCELED;
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)(left < WAIT_SLICE_MS ? left : WAIT_SLICE_MS));
		if (n > 0)
			return 0; /* an error or a hang-up too: the next call says which */
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static const char *wait_error(int rc)
{
	return rc == -ETIMEDOUT ? "timed out" : strerror(-rc);
}

/* ---------- TCP ---------- */

static int connect_one(const struct addrinfo *ai, int64_t deadline, atomic_int *cancel, int *fd)
{
	int s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
	               ai->ai_protocol);
	int rc = 0, e = 0, one = 1;
	socklen_t len = sizeof(e);

	if (s < 0)
		return -errno;
	if (connect(s, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
		rc = -errno;
	if (rc == 0)
		rc = wait_fd(s, POLLOUT, deadline, cancel);
	if (rc == 0 && getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &len) == 0 && e)
		rc = -e;
	if (rc < 0) {
		close(s);
		return rc;
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* keystrokes go at once */
	setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	*fd = s;
	return 0;
}

static int connect_tcp(const struct endpoint *ep, int64_t deadline, atomic_int *cancel, int *fd,
                       struct ll_err *err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = getaddrinfo(ep->host, ep->port, &hints, &res);

	if (rc != 0)
		return ll_err_set(err, -EHOSTUNREACH, "%s: %s", ep->host, gai_strerror(rc));
	rc = -EHOSTUNREACH;
	for (struct addrinfo *ai = res; ai && rc != -ETIMEDOUT && rc != -ECANCELED;
	     ai = ai->ai_next) {
		rc = connect_one(ai, deadline, cancel, fd);
		if (rc == 0)
			break;
	}
	freeaddrinfo(res);
	if (rc == -ENETUNREACH)
		rc = -EHOSTUNREACH;
	return rc ? ll_err_set(err, rc, "connect to %s port %s: %s", ep->host, ep->port,
	                       wait_error(rc))
	          : 0;
}

/* ---------- TLS ---------- */

static BIO *mem_bio(const struct curl_blob *b)
{
	return b->len > INT_MAX ? NULL : BIO_new_mem_buf(b->data, (int)b->len);
}

/* Every certificate of the PEM bundle @ca, trusted. 0, or -1 when none loads. */
static int load_ca(SSL_CTX *ctx, const struct curl_blob *ca)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	BIO *b = mem_bio(ca);
	X509 *x;
	int n = 0;

	while (b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		n += X509_STORE_add_cert(st, x) == 1;
		X509_free(x);
	}
	BIO_free(b);
	ERR_clear_error();
	return n > 0 ? 0 : -1;
}

/* The client certificate (leaf first, then its chain) and its key. 0 or -1. */
static int load_client_cert(SSL_CTX *ctx, const struct curl_blob *cert, const struct curl_blob *key)
{
	BIO *cb = mem_bio(cert), *kb = mem_bio(key);
	X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL, *more;
	EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
	bool ok = x && k && SSL_CTX_use_certificate(ctx, x) == 1 &&
	          SSL_CTX_use_PrivateKey(ctx, k) == 1;

	while (ok && (more = PEM_read_bio_X509(cb, NULL, NULL, NULL)) != NULL) {
		if (SSL_CTX_add0_chain_cert(ctx, more) != 1) {
			X509_free(more);
			ok = false;
		}
	}
	X509_free(x);
	EVP_PKEY_free(k);
	BIO_free(cb);
	BIO_free(kb);
	ERR_clear_error();
	return ok ? 0 : -1;
}

static bool ip_literal(const char *s)
{
	unsigned char a[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

static int new_ctx(struct kc_client *c, struct kc_tunnel *t, struct ll_err *err)
{
	t->ctx = SSL_CTX_new(TLS_client_method());
	if (t->ctx == NULL)
		return ll_err_set(err, -ENOMEM, "TLS: no context");
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	                                 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
	                                 SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_verify(t->ctx, c->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
	if (c->ca.data ? load_ca(t->ctx, &c->ca) < 0
	               : SSL_CTX_set_default_verify_paths(t->ctx) != 1)
		return ll_err_set(err, -EPROTO, "TLS: the certificate authority does not load");
	if (c->cert.data && load_client_cert(t->ctx, &c->cert, &c->key) < 0)
		return ll_err_set(err, -EPROTO, "TLS: the client certificate does not load");
	return 0;
}

static int new_ssl(struct kc_client *c, const struct endpoint *ep, struct kc_tunnel *t,
                   struct ll_err *err)
{
	static const unsigned char alpn[] = "\x08http/1.1";
	bool ip = ip_literal(ep->name);
	BIO *bio;

	pthread_once(&sock_once, sock_method_init);
	t->ssl = sock_method ? SSL_new(t->ctx) : NULL;
	bio = t->ssl ? BIO_new(sock_method) : NULL;
	if (bio == NULL)
		return ll_err_set(err, -ENOMEM, "TLS: no connection");
	BIO_set_data(bio, (void *)(intptr_t)t->fd);
	SSL_set_bio(t->ssl, bio, bio);
	if (SSL_set_alpn_protos(t->ssl, alpn, sizeof(alpn) - 1) != 0 ||
	    (!ip && SSL_set_tlsext_host_name(t->ssl, ep->name) != 1))
		return ll_err_set(err, -EPROTO, "TLS: cannot name the server \"%s\"", ep->name);
	if (!c->insecure && (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), ep->name)
	                        : SSL_set1_host(t->ssl, ep->name)) != 1)
		return ll_err_set(err, -EPROTO, "TLS: cannot verify the name \"%s\"", ep->name);
	return 0;
}

static int handshake_error(struct kc_tunnel *t, struct ll_err *err)
{
	long v = SSL_get_verify_result(t->ssl);
	unsigned long e = ERR_peek_error();
	char msg[256] = "the server ended the connection";

	if (v != X509_V_OK) {
		ERR_clear_error();
		return ll_err_set(err, -EPROTO, "TLS: the server's certificate was refused: %s",
		                  X509_verify_cert_error_string(v));
	}
	if (e)
		ERR_error_string_n(e, msg, sizeof(msg));
	ERR_clear_error();
	return ll_err_set(err, -EPROTO, "TLS handshake failed: %s", msg);
}

static int tls_open(struct kc_client *c, const struct endpoint *ep, struct kc_tunnel *t,
                    int64_t deadline, atomic_int *cancel, struct ll_err *err)
{
	int rc = new_ctx(c, t, err);

	if (rc == 0)
		rc = new_ssl(c, ep, t, err);
	while (rc == 0) {
		int r, e;

		ERR_clear_error();
		r = SSL_connect(t->ssl);
		if (r == 1)
			return 0;
		e = SSL_get_error(t->ssl, r);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
			return handshake_error(t, err);
		rc = wait_fd(t->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, cancel);
		if (rc < 0)
			ll_err_set(err, rc, "TLS handshake with %s: %s", ep->name, wait_error(rc));
	}
	return rc;
}

/* ---------- bytes ---------- */

/* What an SSL_read() or SSL_write() that returned @r <= 0 means. */
static ssize_t tls_result(struct kc_tunnel *t, int r, short *need)
{
	int e = SSL_get_error(t->ssl, r);
	int saved = errno;

	switch (e) {
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_WANT_READ:
		*need = POLLIN;
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		*need = POLLOUT;
		return -EAGAIN;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		return saved ? -saved : -ECONNRESET;
	default:
		ERR_clear_error();
		return -EPROTO;
	}
}

static ssize_t conn_read(struct kc_tunnel *t, void *b, size_t n)
{
	ssize_t k;
	int r;

	if (t->ssl == NULL) {
		k = recv(t->fd, b, n, 0);
		if (k >= 0)
			return k;
		if (!retry_errno())
			return -errno;
		t->rd_need = POLLIN;
		return -EAGAIN;
	}
	ERR_clear_error();
	errno = 0;
	r = SSL_read(t->ssl, b, n > INT_MAX ? INT_MAX : (int)n);
	return r > 0 ? r : tls_result(t, r, &t->rd_need);
}

static ssize_t conn_write(struct kc_tunnel *t, const void *b, size_t n)
{
	ssize_t k;
	int r;

	if (t->ssl == NULL) {
		k = send(t->fd, b, n, MSG_NOSIGNAL);
		if (k >= 0)
			return k;
		if (!retry_errno())
			return -errno;
		t->wr_need = POLLOUT;
		return -EAGAIN;
	}
	ERR_clear_error();
	errno = 0;
	r = SSL_write(t->ssl, b, n > INT_MAX ? INT_MAX : (int)n);
	return r > 0 ? r : tls_result(t, r, &t->wr_need);
}

static int send_all(struct kc_tunnel *t, const char *p, size_t n, int64_t deadline,
                    atomic_int *cancel)
{
	while (n) {
		ssize_t w = conn_write(t, p, n);
		int rc;

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w != -EAGAIN)
			return w ? (int)w : -EPIPE;
		rc = wait_fd(t->fd, t->wr_need, deadline, cancel);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static ssize_t read_wait(struct kc_tunnel *t, void *b, size_t n, int64_t deadline,
                         atomic_int *cancel)
{
	for (;;) {
		ssize_t r = conn_read(t, b, n);
		int rc;

		if (r != -EAGAIN)
			return r;
		rc = wait_fd(t->fd, t->rd_need, deadline, cancel);
		if (rc < 0)
			return rc;
	}
}

/* ---------- the exchange ---------- */

/* @rq's headers but its one Upgrade, into @rest; that header's value into *@upgrade. */
static int split_upgrade(const struct kc_request *rq, struct kc_header *rest, size_t *n_rest,
                         const char **upgrade, struct ll_err *err)
{
	*upgrade = NULL;
	*n_rest = 0;
	if (rq->n_headers > KC_MAX_HEADERS || (rq->n_headers && rq->headers == NULL))
		return ll_err_set(err, -EINVAL, "%zu headers, over %d or missing", rq->n_headers,
		                  KC_MAX_HEADERS);
	for (size_t i = 0; i < rq->n_headers; i++) {
		const struct kc_header *h = &rq->headers[i];

		if (h->name == NULL || strcasecmp(h->name, "Upgrade") != 0)
			rest[(*n_rest)++] = *h;
		else if (*upgrade)
			return ll_err_set(err, -EINVAL, "more than one Upgrade header");
		else
			*upgrade = h->value;
	}
	if (*upgrade == NULL || **upgrade == '\0' || !kc__header_safe(*upgrade) ||
	    strlen(*upgrade) > KC_MAX_HEADER_LINE)
		return ll_err_set(err, -EINVAL,
		                  "an upgrade needs one Upgrade header naming the protocols");
	return 0;
}

static int build_request(struct kc_client *c, const struct endpoint *ep, const struct req *rq,
                         const char *upgrade, struct buf *out)
{
	char *token = kc__token_dup(c);
	int rc = buf_appendf(out,
	                     "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n"
	                     "Connection: Upgrade\r\nUpgrade: %s\r\n",
	                     rq->method, ep->prefix, rq->path, ep->authority, c->user_agent,
	                     upgrade);

	if (rc == 0 && rq->accept)
		rc = buf_appendf(out, "Accept: %s\r\n", rq->accept);
	if (rc == 0 && token && *token)
		rc = buf_appendf(out, "Authorization: Bearer %s\r\n", token);
	for (size_t i = 0; rc == 0 && i < rq->n_headers; i++)
		rc = buf_appendf(out, "%s: %s\r\n", rq->headers[i].name, rq->headers[i].value);
	if (rc == 0)
		rc = buf_append_str(out, "\r\n");
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	return rc;
}

static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

static bool status_line(const char *l, int *status)
{
	for (int i = 9; i < 12; i++)
		if (l[i] < '0' || l[i] > '9')
			return false;
	if (strncmp(l, "HTTP/1.", 7) != 0 || l[7] < '0' || l[7] > '9' || l[8] != ' ' ||
	    (l[12] != ' ' && l[12] != '\0'))
		return false;
	*status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	return true;
}

/* The head's first @len bytes: the status, and the headers cut into t->names and t->values. */
static int parse_head(struct kc_tunnel *t, size_t len, struct ll_err *err)
{
	char *line, *next, *colon;

	t->head = xstrndup(t->in.p, len); /* a NUL in the head cuts it short: refused below */
	next = strstr(t->head, "\r\n");
	if (next)
		*next = '\0';
	if (next == NULL || strlen(t->head) < 12 || !status_line(t->head, &t->status))
		return ll_err_set(err, -EPROTO, "the answer is not HTTP/1.x: \"%.64s\"", t->head);
	for (line = next + 2; *line && (next = strstr(line, "\r\n")) != NULL; line = next + 2) {
		*next = '\0';
		colon = strchr(line, ':');
		if (colon == NULL || colon == line || t->n_headers == ANSWER_HEADERS_MAX)
			continue;
		*colon = '\0';
		t->names[t->n_headers] = line;
		t->values[t->n_headers++] = trim(colon + 1);
	}
	return 0;
}

/* Read until the head is complete; its length into *@len. */
static int read_head(struct kc_tunnel *t, int64_t deadline, atomic_int *cancel, size_t *len,
                     struct ll_err *err)
{
	char chunk[READ_CHUNK];

	for (;;) {
		const char *end = t->in.len ? memmem(t->in.p, t->in.len, "\r\n\r\n", 4) : NULL;
		ssize_t n;

		if (end && (size_t)(end - t->in.p) + 4 <= KC_UPGRADE_HEAD_MAX) {
			*len = (size_t)(end - t->in.p) + 4;
			return 0;
		}
		if (end || t->in.len >= KC_UPGRADE_HEAD_MAX)
			return ll_err_set(err, -EMSGSIZE, "the answer's head is over %u bytes",
			                  KC_UPGRADE_HEAD_MAX);
		n = read_wait(t, chunk, sizeof(chunk), deadline, cancel);
		if (n == 0)
			return ll_err_set(
			        err, -EPROTO,
			        "the server closed the connection before the answer's head");
		if (n < 0)
			return ll_err_set(err, (int)n, "reading the answer: %s",
			                  wait_error((int)n));
		buf_append(&t->in, chunk, (size_t)n); /* fits: the cap is the head's and a chunk */
	}
}

static int exchange(struct kc_client *c, const struct endpoint *ep, const struct req *rq,
                    const char *upgrade, struct kc_tunnel *t, int64_t deadline, atomic_int *cancel,
                    size_t *head_len, struct ll_err *err)
{
	struct buf text = BUF_INIT(BUF_MAX_INTERNAL);
	int rc = build_request(c, ep, rq, upgrade, &text);

	if (rc < 0)
		rc = ll_err_set(err, -EMSGSIZE, "the request is too large");
	else if ((rc = send_all(t, text.p, text.len, deadline, cancel)) < 0)
		ll_err_set(err, rc, "sending the request: %s", wait_error(rc));
	if (text.p)
		explicit_bzero(text.p, text.len); /* it holds the token */
	buf_release(&text);
	if (rc == 0)
		rc = read_head(t, deadline, cancel, head_len, err);
	return rc ? rc : parse_head(t, *head_len, err);
}

/* ---------- an answer other than 101 ---------- */

/* Append what fits of @n bytes under @out's cap. Return: the bytes appended. */
static size_t append_capped(struct buf *out, const char *p, size_t n)
{
	size_t room = out->max - out->len;

	if (n > room)
		n = room;
	return n && buf_append(out, p, n) == 0 ? n : 0;
}

/*
 * The chunked body @in decoded into @out (reset first, capped).
 * Return: 1 complete (or @out full), 0 incomplete, -1 malformed.
 */
static int dechunk(const char *in, size_t len, struct buf *out)
{
	size_t pos = 0;

	buf_reset(out);
	for (;;) {
		const char *eol = memmem(in + pos, len - pos, "\r\n", 2);
		char *stop;
		unsigned long size;

		if (eol == NULL)
			return 0;
		if (!isxdigit((unsigned char)in[pos]))
			return -1;
		errno = 0;
		size = strtoul(in + pos, &stop, 16);
		if (stop == in + pos || errno || (*stop != ';' && *stop != '\r' && *stop != ' '))
			return -1;
		pos = (size_t)(eol - in) + 2;
		if (size == 0)
			return 1;
		if (size > len - pos) { /* what came of it so far counts, should no more come */
			append_capped(out, in + pos, len - pos);
			return out->len == out->max;
		}
		if (append_capped(out, in + pos, size) < size)
			return 1;
		pos += size;
		if (len - pos < 2)
			return 0;
		pos += 2;
	}
}

/* Bytes of body to read: SIZE_MAX until the end, 0 for none. */
static size_t body_length(const struct kc_tunnel *t, bool chunked)
{
	const char *cl = kc_tunnel_header(t, "Content-Length");
	char *end;
	unsigned long long n;

	if (t->status < 200 || t->status == 204 || t->status == 304)
		return 0;
	if (chunked || cl == NULL)
		return SIZE_MAX;
	n = strtoull(cl, &end, 10);
	return end == cl || *end ? SIZE_MAX : n;
}

static void read_body(struct kc_tunnel *t, size_t head_len, int64_t deadline, atomic_int *cancel,
                      struct buf *out)
{
	const char *te = kc_tunnel_header(t, "Transfer-Encoding");
	bool chunked = te && strcasestr(te, "chunked");
	size_t want = body_length(t, chunked);
	struct buf in = BUF_INIT(KC_UPGRADE_BODY_MAX + READ_CHUNK);
	char chunk[READ_CHUNK];

	buf_init(out, KC_UPGRADE_BODY_MAX);
	buf_append(&in, t->in.p + head_len, t->in.len - head_len);
	while (want && in.len < KC_UPGRADE_BODY_MAX &&
	       (chunked ? dechunk(in.p, in.len, out) == 0 : in.len < want)) {
		ssize_t n = read_wait(t, chunk, sizeof(chunk), deadline, cancel);

		if (n <= 0 || buf_append(&in, chunk, (size_t)n) < 0)
			break; /* what came is what there is */
	}
	if (chunked)
		dechunk(in.p, in.len, out);
	else if (want)
		append_capped(out, in.p, in.len < want ? in.len : want);
	buf_release(&in);
}

static void fill_answer(const struct kc_tunnel *t, struct kc_resp *head)
{
	const char *ct = kc_tunnel_header(t, "Content-Type");
	json_t *body = NULL;

	head->http_status = t->status;
	kc__set_content_type(head, ct);
	if (t->status >= 400 && ct && strncasecmp(ct, "application/json", 16) == 0 && head->raw.len)
		body = jx_loads(head->raw.p, head->raw.len, NULL);
	kc__parse_status(body, t->status, head->raw.p, head->raw.len, &head->status);
	json_decref(body);
}

/* ---------- the call ---------- */

static struct kc_tunnel *tunnel_new(void)
{
	struct kc_tunnel *t = xcalloc(1, sizeof(*t));

	t->fd = -1;
	buf_init(&t->in, KC_UPGRADE_HEAD_MAX + READ_CHUNK);
	return t;
}

static int upgrade_entered(struct kc_client *c, const struct req *r, const char *upgrade,
                           const struct kc_request *rq, struct kc_tunnel **out,
                           struct kc_resp *head, struct ll_err *err)
{
	struct kc_tunnel *t = tunnel_new();
	int64_t start = clock_mono_ns(), connect_by = clock_mono_ms() + CONNECT_TIMEOUT_MS;
	long timeout_ms = rq->timeout_ms > 0 ? rq->timeout_ms : c->timeout_ms;
	struct endpoint ep;
	size_t head_len = 0;
	int rc = endpoint_parse(c, &ep, err);

	if (rc == 0)
		rc = connect_tcp(&ep, connect_by, rq->cancel, &t->fd, err);
	if (rc == 0 && ep.tls)
		rc = tls_open(c, &ep, t, connect_by, rq->cancel, err);
	if (rc == 0)
		rc = exchange(c, &ep, r, upgrade, t, clock_mono_ms() + timeout_ms, rq->cancel,
		              &head_len, err);
	if (rc == 0 && t->status != 101)
		read_body(t, head_len, clock_mono_ms() + timeout_ms, rq->cancel, &head->raw);
	if (rc == 0)
		fill_answer(t, head);
	kc__record(c, r, rc ? 0 : t->status, start, clock_mono_ns());
	if (rc == 0 && t->status == 101) {
		t->off = head_len;
		*out = t;
		return 0;
	}
	kc_tunnel_close(t);
	return rc;
}

int kc_upgrade(struct kc_client *c, const struct kc_request *rq, struct kc_tunnel **out,
               struct kc_resp *head, struct ll_err *err)
{
	struct kc_header rest[KC_MAX_HEADERS];
	struct buf target = BUF_INIT(BUF_MAX_INTERNAL);
	struct kc_request copy;
	const char *upgrade;
	struct req r;
	int rc;

	*out = NULL;
	memset(head, 0, sizeof(*head));
	if (c == NULL || rq == NULL)
		return ll_err_set(err, -EINVAL, "kc_upgrade: no client or no request");
	copy = *rq;
	copy.headers = rest;
	rc = split_upgrade(rq, rest, &copy.n_headers, &upgrade, err);
	if (rc == 0 && rq->body)
		rc = ll_err_set(err, -EINVAL, "an upgrade request carries no body");
	if (rc == 0)
		rc = kc__req_prepare(&copy, NULL, &target, &r, err);
	if (rc == 0 && kc__enter(c) < 0)
		rc = ll_err_set(err, -ECANCELED, "%s %s: client closed", r.method, r.path);
	else if (rc == 0) {
		rc = upgrade_entered(c, &r, upgrade, rq, out, head, err);
		kc__leave(c);
	}
	if (rc < 0)
		kc_resp_release(head);
	buf_release(&target);
	return rc;
}

/* ---------- the tunnel ---------- */

int kc_tunnel_fd(const struct kc_tunnel *t)
{
	return t->fd;
}

size_t kc_tunnel_pending(const struct kc_tunnel *t)
{
	size_t early = t->in.len - t->off;
	int tls = t->ssl ? SSL_pending(t->ssl) : 0;

	return early + (tls > 0 ? (size_t)tls : 0);
}

short kc_tunnel_events(const struct kc_tunnel *t, bool reading, bool writing)
{
	short ev = 0;

	if (reading)
		ev |= t->rd_need ? t->rd_need : POLLIN;
	if (writing)
		ev |= t->wr_need ? t->wr_need : POLLOUT;
	return ev;
}

ssize_t kc_tunnel_read(struct kc_tunnel *t, void *buf, size_t len)
{
	size_t early = t->in.len - t->off;

	if (len == 0)
		return -EINVAL;
	if (early) {
		if (len > early)
			len = early;
		memcpy(buf, t->in.p + t->off, len);
		t->off += len;
		if (t->off == t->in.len) {
			buf_release(&t->in);
			t->off = 0;
		}
		return (ssize_t)len;
	}
	return conn_read(t, buf, len);
}

ssize_t kc_tunnel_write(struct kc_tunnel *t, const void *buf, size_t len)
{
	ssize_t n;

	if (len == 0)
		return -EINVAL;
	n = conn_write(t, buf, len);
	return n == 0 ? -EPIPE : n;
}

const char *kc_tunnel_header(const struct kc_tunnel *t, const char *name)
{
	for (size_t i = 0; i < t->n_headers; i++)
		if (strcasecmp(t->names[i], name) == 0)
			return t->values[i];
	return NULL;
}

void kc_tunnel_close(struct kc_tunnel *t)
{
	if (t == NULL)
		return;
	if (t->ssl) {
		if (SSL_is_init_finished(t->ssl))
			SSL_shutdown(t->ssl); /* close_notify if it fits now; never waits */
		SSL_free(t->ssl);             /* and its BIO */
		ERR_clear_error();
	}
	SSL_CTX_free(t->ctx);
	if (t->fd >= 0)
		close(t->fd);
	buf_release(&t->in);
	free(t->head);
	free(t);
}
