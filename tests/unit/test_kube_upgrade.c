/*
 * test_kube_upgrade.c - kc_upgrade() and its tunnels (lib/kube/kube_upgrade.c): against
 * lib/http's own server over TLS (certificates made here with OpenSSL: a CA, a server
 * certificate for 127.0.0.1, a client certificate; and a CA nobody uses), whose tunnel a thread
 * of the test echoes; and against a raw loopback server (kube_rawsrv.h) that writes exactly
 * what a case needs: the request as sent, bytes right behind the head, a chunked refusal, a
 * head cut short or over the cap, no answer at all.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "http/server.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube_rawsrv.h"

#define WAIT_MAX_MS 20000 /* a guard against hanging, never an expectation */
#define BIG         (1u << 20)
#define WS_ACCEPT   "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
#define FORBIDDEN                                                                            \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\"," \
	"\"message\":\"pods \\\"p\\\" is forbidden\",\"reason\":\"Forbidden\",\"code\":403}"

/* ---------- certificates ---------- */

struct pem {
	char *cert, *key;
};

struct pki {
	struct pem ca, server, client, other;
};

static struct pki pki;

static char *bio_text(BIO *b)
{
	char *data, *s;
	long n = BIO_get_mem_data(b, &data);

	s = calloc(1, (size_t)n + 1);
	memcpy(s, data, (size_t)n);
	BIO_free(b);
	return s;
}

static void add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);

	assert_non_null(e);
	X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
}

/* A certificate for @cn: self-signed CA when @issuer is NULL, else signed by it. */
static struct pem issue(const char *cn, const struct pem *issuer, const char *san)
{
	static long serial = 1;
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"), *ik = k;
	X509 *x = X509_new(), *ix = x;
	BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem()), *b;
	X509V3_CTX ctx;
	struct pem p;

	if (issuer) {
		b = BIO_new_mem_buf(issuer->cert, -1);
		ix = PEM_read_bio_X509(b, NULL, NULL, NULL);
		BIO_free(b);
		b = BIO_new_mem_buf(issuer->key, -1);
		ik = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
		BIO_free(b);
	}
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	                           (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(ix));
	X509V3_set_ctx(&ctx, ix, x, NULL, NULL, 0);
	add_ext(x, &ctx, NID_basic_constraints, issuer ? "CA:FALSE" : "critical,CA:TRUE");
	if (!issuer)
		add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
	if (san)
		add_ext(x, &ctx, NID_subject_alt_name, san);
	assert_true(X509_sign(x, ik, EVP_sha256()) > 0);
	PEM_write_bio_X509(cb, x);
	PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0, NULL, NULL);
	p.cert = bio_text(cb);
	p.key = bio_text(kb);
	if (issuer) {
		X509_free(ix);
		EVP_PKEY_free(ik);
	}
	X509_free(x);
	EVP_PKEY_free(k);
	return p;
}

static void pem_free(struct pem *p)
{
	free(p->cert);
	free(p->key);
}

static int group_setup(void **state)
{
	pki.ca = issue("test-ca", NULL, NULL);
	pki.server = issue("server", &pki.ca, "IP:127.0.0.1");
	pki.client = issue("tester", &pki.ca, NULL);
	pki.other = issue("other-ca", NULL, NULL);
	return 0;
}

static int group_teardown(void **state)
{
	pem_free(&pki.ca);
	pem_free(&pki.server);
	pem_free(&pki.client);
	pem_free(&pki.other);
	return 0;
}

/* ---------- lib/http's server, whose tunnels echo ---------- */

struct srv {
	struct http_server *s;
	int port;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int upgrading; /* 101s answered whose on_upgraded() has not run yet */
	/* what the handler saw */
	char auth[128], query[128], stream_version[64], impersonate[64], upgrade[64];
	bool peer_cert;
	/* the tunnel */
	int fd;
	struct http_upgraded *u;
	pthread_t echo;
	bool echo_started;
};

static void copy_header(struct http_req *req, const char *name, char *out, size_t size)
{
	const char *v = http_req_header(req, name);

	snprintf(out, size, "%s", v ? v : "");
}

static bool echo_write(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		struct pollfd pf = {.fd = fd, .events = POLLOUT};

		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && errno == EAGAIN) {
			poll(&pf, 1, WAIT_MAX_MS);
		} else {
			return false;
		}
	}
	return true;
}

/* A greeting, then every byte back, until the end. */
static void *echo_main(void *arg)
{
	struct srv *f = arg;
	char chunk[16384];
	bool ok = echo_write(f->fd, "hello\n", 6);

	while (ok) {
		struct pollfd pf = {.fd = f->fd, .events = POLLIN};
		ssize_t n = recv(f->fd, chunk, sizeof(chunk), 0);

		if (n < 0 && errno == EAGAIN)
			ok = poll(&pf, 1, WAIT_MAX_MS) == 1;
		else
			ok = n > 0 && echo_write(f->fd, chunk, (size_t)n);
	}
	http_upgraded_close(f->u);
	return NULL;
}

static void on_upgraded(void *ud, int fd, struct http_upgraded *u)
{
	struct srv *f = ud;

	pthread_mutex_lock(&f->mu);
	f->fd = fd;
	f->u = u;
	if (fd >= 0)
		f->echo_started = pthread_create(&f->echo, NULL, echo_main, f) == 0;
	f->upgrading--;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

static int h_up(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct srv *f = ud;
	const char *up = http_req_header(req, "Upgrade");

	pthread_mutex_lock(&f->mu);
	copy_header(req, "Authorization", f->auth, sizeof(f->auth));
	copy_header(req, "X-Stream-Protocol-Version", f->stream_version, sizeof(f->stream_version));
	copy_header(req, "Impersonate-User", f->impersonate, sizeof(f->impersonate));
	copy_header(req, "Upgrade", f->upgrade, sizeof(f->upgrade));
	snprintf(f->query, sizeof(f->query), "%s", http_req_query(req));
	f->peer_cert = http_req_peer_cert(req) != NULL;
	pthread_mutex_unlock(&f->mu);
	if (up == NULL || http_resp_upgrade(resp, up, on_upgraded, f) != 0)
		return 400;
	pthread_mutex_lock(&f->mu);
	f->upgrading++;
	pthread_mutex_unlock(&f->mu);
	http_resp_header(resp, "Sec-WebSocket-Accept", WS_ACCEPT);
	http_resp_header(resp, "Sec-WebSocket-Protocol", "v5.channel.k8s.io");
	return 101;
}

static int h_forbidden(void *ud, struct http_req *req, struct http_resp *resp)
{
	http_resp_header(resp, "Content-Type", "application/json");
	buf_append_str(http_resp_body(resp), FORBIDDEN);
	return 403;
}

static void srv_start(struct srv *f)
{
	struct http_server_opts o = {.cert_pem = pki.server.cert,
	                             .key_pem = pki.server.key,
	                             .client_ca_pem = pki.ca.cert};
	struct http_route up = {.path = "/api/", .prefix = true, .fn = h_up, .ud = f};
	struct http_route no = {.path = "/forbidden", .fn = h_forbidden, .ud = f};
	struct ll_err err = {{0}};

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->s = http_server_new(&o);
	assert_int_equal(http_server_route(f->s, &up), 0);
	assert_int_equal(http_server_route(f->s, &no), 0);
	if (http_server_start(f->s, &err) != 0)
		fail_msg("http_server_start: %s", err.msg);
	f->port = http_server_port(f->s);
}

/*
 * The echo ends once the client has closed; the server is freed after its close. (A TLS tunnel
 * closed by its caller while http_server_free() runs can make libmicrohttpd 0.9.75 abort, "Failed
 * to remove FD from epoll set": lib/http's matter, not what this suite is about.)
 */
static void srv_stop(struct srv *f)
{
	bool echo;

	pthread_mutex_lock(&f->mu);
	/* on_upgraded() runs once the 101 is out: maybe after the client has read it */
	while (f->upgrading > 0)
		pthread_cond_wait(&f->cond, &f->mu);
	echo = f->echo_started;
	pthread_mutex_unlock(&f->mu);
	if (echo)
		pthread_join(f->echo, NULL);
	http_server_free(f->s);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->mu);
}

/* ---------- clients ---------- */

struct who {
	const char *host;     /* NULL: 127.0.0.1 */
	const struct pem *ca; /* NULL: none */
	bool client_cert;
	const char *token;
	bool insecure;
};

static struct kc_client *client(int port, const struct who *w, long timeout_ms)
{
	char url[128];
	struct kcfg cfg = {.server = url, .token = (char *)w->token, .insecure = w->insecure};
	struct kc_opts o = {.timeout_ms = timeout_ms, .qps = -1, .client_name = "unit"};
	struct kc_client *c = NULL;
	struct ll_err err = {{0}};

	snprintf(url, sizeof(url), "https://%s:%d", w->host ? w->host : "127.0.0.1", port);
	if (w->ca) {
		cfg.ca_pem = w->ca->cert;
		cfg.ca_pem_len = strlen(w->ca->cert);
	}
	if (w->client_cert) {
		cfg.cert_pem = pki.client.cert;
		cfg.cert_pem_len = strlen(pki.client.cert);
		cfg.key_pem = pki.client.key;
		cfg.key_pem_len = strlen(pki.client.key);
	}
	if (kc_client_new(&cfg, &o, &c, &err) != 0)
		fail_msg("kc_client_new: %s", err.msg);
	return c;
}

static const struct kc_header WS_HEADERS[] = {
        {"Upgrade", "websocket"},
        {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
        {"Sec-WebSocket-Version", "13"},
        {"Sec-WebSocket-Protocol", "v5.channel.k8s.io"},
        {"X-Stream-Protocol-Version", "v4.channel.k8s.io"},
        {"Impersonate-User", "alice"},
};

static struct kc_request ws_request(const char *path)
{
	return (struct kc_request){.method = "GET",
	                           .path = path,
	                           .query = "command=echo&command=hi&stdout=true",
	                           .headers = WS_HEADERS,
	                           .n_headers = sizeof(WS_HEADERS) / sizeof(WS_HEADERS[0])};
}

/* Write @n bytes of @out while reading into @in until @want bytes came back. */
static void pump(struct kc_tunnel *t, const char *out, size_t n, struct buf *in, size_t want)
{
	int64_t deadline = clock_mono_ms() + WAIT_MAX_MS;
	size_t sent = 0;
	char chunk[8192];

	while (in->len < want) {
		ssize_t w = sent < n ? kc_tunnel_write(t, out + sent, n - sent) : 0;
		ssize_t r = kc_tunnel_read(t, chunk, sizeof(chunk));
		struct pollfd pf = {.fd = kc_tunnel_fd(t)};

		if (w > 0)
			sent += (size_t)w;
		else if (w < 0)
			assert_int_equal(w, -EAGAIN);
		if (r > 0) {
			assert_int_equal(buf_append(in, chunk, (size_t)r), 0);
			continue;
		}
		assert_int_equal(r, -EAGAIN);
		if (w > 0)
			continue;
		pf.events = kc_tunnel_events(t, true, sent < n);
		assert_true(clock_mono_ms() < deadline);
		poll(&pf, 1, 1000);
	}
}

/* ---------- cases against lib/http's server ---------- */

static void test_kube_upgrade__101_over_tls_carries_bytes_both_ways(void **state)
{
	struct srv f;
	struct kc_client *c;
	struct kc_tunnel *t = NULL;
	struct kc_resp head;
	struct ll_err err = {{0}};
	struct kc_request rq = ws_request("/api/v1/namespaces/n/pods/p/exec");
	struct buf in = BUF_INIT(2 * BIG), expect = BUF_INIT(2 * BIG);
	char *big = malloc(BIG);

	srv_start(&f);
	c = client(f.port, &(struct who){.ca = &pki.ca, .client_cert = true}, 5000);
	if (kc_upgrade(c, &rq, &t, &head, &err) != 0)
		fail_msg("kc_upgrade: %s", err.msg);
	assert_int_equal(head.http_status, 101);
	assert_non_null(t);
	assert_string_equal(kc_tunnel_header(t, "upgrade"), "websocket");
	assert_string_equal(kc_tunnel_header(t, "Sec-WebSocket-Accept"), WS_ACCEPT);
	assert_string_equal(kc_tunnel_header(t, "Sec-WebSocket-Protocol"), "v5.channel.k8s.io");
	assert_null(kc_tunnel_header(t, "X-Absent"));
	pthread_mutex_lock(&f.mu);
	assert_true(f.peer_cert);
	assert_string_equal(f.auth, "");
	assert_string_equal(f.upgrade, "websocket");
	assert_string_equal(f.stream_version, "v4.channel.k8s.io");
	assert_string_equal(f.impersonate, "alice");
	assert_string_equal(f.query, "command=echo&command=hi&stdout=true");
	pthread_mutex_unlock(&f.mu);

	for (size_t i = 0; i < BIG; i++)
		big[i] = (char)('a' + i % 26);
	buf_append_str(&expect, "hello\n");
	buf_append(&expect, big, BIG);
	pump(t, big, BIG, &in, expect.len);
	assert_int_equal(in.len, expect.len);
	assert_memory_equal(in.p, expect.p, in.len);

	kc_tunnel_close(t);
	kc_resp_release(&head);
	kc_client_free(c);
	srv_stop(&f);
	buf_release(&in);
	buf_release(&expect);
	free(big);
}

static void test_kube_upgrade__bearer_token_without_a_certificate(void **state)
{
	struct srv f;
	struct kc_client *c;
	struct kc_tunnel *t = NULL;
	struct kc_resp head;
	struct kc_request rq = ws_request("/api/v1/namespaces/n/pods/p/attach");
	struct buf in = BUF_INIT(64);

	srv_start(&f);
	c = client(f.port, &(struct who){.ca = &pki.ca, .token = "tok-123"}, 5000);
	assert_int_equal(kc_upgrade(c, &rq, &t, &head, NULL), 0);
	assert_non_null(t);
	pthread_mutex_lock(&f.mu);
	assert_false(f.peer_cert);
	assert_string_equal(f.auth, "Bearer tok-123");
	pthread_mutex_unlock(&f.mu);
	pump(t, "ping", 4, &in, 10);
	assert_memory_equal(in.p, "hello\nping", 10);
	kc_tunnel_close(t);
	kc_client_free(c);
	srv_stop(&f);
	buf_release(&in);
}

static void test_kube_upgrade__a_refusal_comes_back_with_its_body(void **state)
{
	struct srv f;
	struct kc_client *c;
	struct kc_tunnel *t = (struct kc_tunnel *)1;
	struct kc_resp head;
	struct kc_request rq = ws_request("/forbidden");

	srv_start(&f);
	c = client(f.port, &(struct who){.ca = &pki.ca, .client_cert = true}, 5000);
	assert_int_equal(kc_upgrade(c, &rq, &t, &head, NULL), 0);
	assert_null(t);
	assert_int_equal(head.http_status, 403);
	assert_string_equal(head.content_type, "application/json");
	assert_int_equal(head.raw.len, strlen(FORBIDDEN));
	assert_memory_equal(head.raw.p, FORBIDDEN, head.raw.len);
	assert_string_equal(head.status.reason, "Forbidden");
	assert_int_equal(head.status.code, 403);
	kc_resp_release(&head);
	kc_client_free(c);
	srv_stop(&f);
}

static void expect_refused(int port, const struct who *w, int code, const char *detail)
{
	struct kc_client *c = client(port, w, 5000);
	struct kc_tunnel *t = NULL;
	struct kc_resp head;
	struct ll_err err = {{0}};
	struct kc_request rq = ws_request("/api/v1/namespaces/n/pods/p/exec");

	assert_int_equal(kc_upgrade(c, &rq, &t, &head, &err), code);
	assert_null(t);
	assert_int_equal(head.http_status, 0);
	assert_int_equal(head.raw.len, 0);
	if (strstr(err.msg, detail) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg, detail);
	kc_client_free(c);
}

static void test_kube_upgrade__the_server_must_verify(void **state)
{
	struct srv f;
	struct kc_client *c;
	struct kc_tunnel *t = NULL;
	struct kc_resp head;
	struct kc_request rq = ws_request("/api/v1/namespaces/n/pods/p/exec");

	srv_start(&f);
	/* a CA that did not sign the server's certificate */
	expect_refused(f.port, &(struct who){.ca = &pki.other}, -EPROTO, "certificate");
	/* the right CA, but a name the certificate does not hold (it has IP:127.0.0.1) */
	expect_refused(f.port, &(struct who){.host = "localhost", .ca = &pki.ca}, -EPROTO,
	               "certificate");
	/* insecure-skip-tls-verify: anything goes */
	c = client(f.port, &(struct who){.ca = &pki.other, .insecure = true}, 5000);
	assert_int_equal(kc_upgrade(c, &rq, &t, &head, NULL), 0);
	assert_int_equal(head.http_status, 101);
	kc_tunnel_close(t);
	kc_client_free(c);
	pthread_mutex_lock(&f.mu);
	assert_false(f.peer_cert);
	pthread_mutex_unlock(&f.mu);
	srv_stop(&f);
}

/* ---------- cases against a raw server ---------- */

/* A 101 with bytes right behind its head, then an echo. */
static void answer_101_early(struct rawsrv *s, int fd)
{
	char chunk[4096];
	ssize_t n;

	rawsrv_puts(fd, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\n"
	                "Connection: Upgrade\r\nX-Stream-Protocol-Version:  v4.channel.k8s.io \r\n"
	                "\r\nearly bytes|");
	while ((n = recv(fd, chunk, sizeof(chunk), 0)) > 0)
		rawsrv_write(fd, chunk, (size_t)n);
}

static struct kc_client *raw_client(const struct rawsrv *s, const char *token, long timeout_ms)
{
	char url[64];
	struct kcfg cfg = {.server = url, .token = (char *)token};
	struct kc_opts o = {.timeout_ms = timeout_ms, .qps = -1, .client_name = "unit"};
	struct kc_client *c = NULL;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
	assert_int_equal(kc_client_new(&cfg, &o, &c, NULL), 0);
	return c;
}

static void test_kube_upgrade__request_as_sent_and_bytes_behind_the_head(void **state)
{
	static const struct kc_header h[] = {
	        {"X-Stream-Protocol-Version", "v4.channel.k8s.io"},
	        {"Upgrade", "SPDY/3.1"},
	        {"X-Stream-Protocol-Version", "v3.channel.k8s.io"},
	        {"Impersonate-Group", "team-a"},
	};
	struct kc_request rq = {.method = "POST",
	                        .path = "/api/v1/namespaces/n/pods/p/exec",
	                        .query = "command=cat&stdin=true",
	                        .headers = h,
	                        .n_headers = 4};
	struct rawsrv s;
	struct kc_client *c;
	struct kc_tunnel *t = NULL;
	struct kc_resp head;
	struct buf in = BUF_INIT(64);
	char want[256];

	rawsrv_start(&s, answer_101_early, NULL);
	c = raw_client(&s, "secret-token", 5000);
	assert_int_equal(kc_upgrade(c, &rq, &t, &head, NULL), 0);
	assert_int_equal(head.http_status, 101);
	assert_string_equal(kc_tunnel_header(t, "X-Stream-Protocol-Version"), "v4.channel.k8s.io");
	pthread_mutex_lock(&s.lock);
	snprintf(want, sizeof(want),
	         "POST /api/v1/namespaces/n/pods/p/exec?command=cat&stdin=true HTTP/1.1\r\n"
	         "Host: 127.0.0.1:%d\r\n",
	         s.port);
	assert_memory_equal(s.req, want, strlen(want));
	assert_non_null(strstr(s.req, "\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"));
	assert_non_null(strstr(s.req, "\r\nAuthorization: Bearer secret-token\r\n"));
	assert_non_null(strstr(s.req, "\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
	                              "X-Stream-Protocol-Version: v3.channel.k8s.io\r\n"
	                              "Impersonate-Group: team-a\r\n\r\n"));
	assert_int_equal(s.req_len, s.head_len); /* no body */
	pthread_mutex_unlock(&s.lock);
	/* what came with the head is there before the socket says anything */
	assert_int_equal(kc_tunnel_pending(t), strlen("early bytes|"));
	pump(t, "ping", 4, &in, 16);
	assert_memory_equal(in.p, "early bytes|ping", 16);
	kc_tunnel_close(t);
	kc_client_free(c);
	rawsrv_stop(&s);
	buf_release(&in);
}

static void answer_chunked_403(struct rawsrv *s, int fd)
{
	rawsrv_chunked_head(fd, 403, "application/json");
	rawsrv_chunk(fd, FORBIDDEN, 20);
	rawsrv_chunk(fd, &FORBIDDEN[20], strlen(FORBIDDEN) - 20);
	rawsrv_chunk(fd, NULL, 0);
}

static void answer_cut_head(struct rawsrv *s, int fd)
{
	rawsrv_puts(fd, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\n");
}

static void answer_huge_head(struct rawsrv *s, int fd)
{
	char line[128];

	rawsrv_puts(fd, "HTTP/1.1 101 Switching Protocols\r\n");
	for (int i = 0; i < 300; i++) {
		snprintf(line, sizeof(line), "X-Pad-%d: %060d\r\n", i, i);
		if (!rawsrv_puts(fd, line))
			return;
	}
	rawsrv_puts(fd, "\r\n");
}

static void answer_not_http(struct rawsrv *s, int fd)
{
	rawsrv_puts(fd, "SSH-2.0-OpenSSH_9.2\r\n\r\n");
}

static int raw_upgrade(const struct rawsrv *s, long timeout_ms, atomic_int *cancel,
                       struct kc_tunnel **t, struct kc_resp *head, struct ll_err *err)
{
	static const struct kc_header h[] = {{"Upgrade", "SPDY/3.1"}};
	struct kc_request rq = {.method = "POST",
	                        .path = "/api/v1/namespaces/n/pods/p/portforward",
	                        .query = "ports=8080",
	                        .headers = h,
	                        .n_headers = 1,
	                        .cancel = cancel};
	struct kc_client *c = raw_client(s, NULL, timeout_ms);
	int rc = kc_upgrade(c, &rq, t, head, err);

	kc_client_free(c);
	return rc;
}

static void test_kube_upgrade__a_chunked_refusal_is_decoded(void **state)
{
	struct rawsrv s;
	struct kc_tunnel *t = NULL;
	struct kc_resp head;

	rawsrv_start(&s, answer_chunked_403, NULL);
	assert_int_equal(raw_upgrade(&s, 5000, NULL, &t, &head, NULL), 0);
	assert_null(t);
	assert_int_equal(head.http_status, 403);
	assert_int_equal(head.raw.len, strlen(FORBIDDEN));
	assert_memory_equal(head.raw.p, FORBIDDEN, head.raw.len);
	assert_string_equal(head.status.reason, "Forbidden");
	kc_resp_release(&head);
	rawsrv_stop(&s);
}

#define HUGE (2u << 20)

static void answer_huge_body(struct rawsrv *s, int fd)
{
	char *body = malloc(HUGE);

	memset(body, 'x', HUGE);
	if (s->ud) { /* chunked, in one chunk */
		rawsrv_chunked_head(fd, 500, "text/plain");
		rawsrv_chunk(fd, body, HUGE);
		rawsrv_chunk(fd, NULL, 0);
	} else {
		rawsrv_reply(fd, 500, "text/plain", body, HUGE);
	}
	free(body);
}

static void test_kube_upgrade__a_refusals_body_is_capped(void **state)
{
	for (int chunked = 0; chunked < 2; chunked++) {
		struct rawsrv s;
		struct kc_tunnel *t = NULL;
		struct kc_resp head;

		rawsrv_start(&s, answer_huge_body, chunked ? &s : NULL);
		assert_int_equal(raw_upgrade(&s, 5000, NULL, &t, &head, NULL), 0);
		assert_null(t);
		assert_int_equal(head.http_status, 500);
		assert_int_equal(head.raw.len, KC_UPGRADE_BODY_MAX);
		assert_int_equal(head.raw.p[0], 'x');
		assert_int_equal(head.raw.p[KC_UPGRADE_BODY_MAX - 1], 'x');
		kc_resp_release(&head);
		rawsrv_stop(&s);
	}
}

static void expect_raw_failure(rawsrv_answer_fn answer, long timeout_ms, atomic_int *cancel,
                               int code, const char *detail)
{
	struct rawsrv s;
	struct kc_tunnel *t = (struct kc_tunnel *)1;
	struct kc_resp head;
	struct ll_err err = {{0}};

	rawsrv_start(&s, answer, NULL);
	assert_int_equal(raw_upgrade(&s, timeout_ms, cancel, &t, &head, &err), code);
	assert_null(t);
	assert_int_equal(head.http_status, 0);
	assert_null(head.raw.p);
	if (strstr(err.msg, detail) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg, detail);
	rawsrv_stop(&s);
}

static void hold(struct rawsrv *s, int fd)
{
	char b[64];

	while (!atomic_load(&s->stop) && recv(fd, b, sizeof(b), MSG_DONTWAIT) != 0)
		usleep(10000);
}

static void test_kube_upgrade__broken_answers_are_errors(void **state)
{
	atomic_int cancel = 1;
	int64_t t0;

	expect_raw_failure(answer_cut_head, 5000, NULL, -EPROTO, "closed the connection");
	expect_raw_failure(answer_huge_head, 5000, NULL, -EMSGSIZE, "over");
	expect_raw_failure(answer_not_http, 5000, NULL, -EPROTO, "not HTTP/1.x");
	t0 = clock_mono_ms();
	expect_raw_failure(hold, 300, NULL, -ETIMEDOUT, "timed out");
	assert_true(clock_mono_ms() - t0 < 5000);
	expect_raw_failure(hold, 5000, &cancel, -ECANCELED, "");
}

static void test_kube_upgrade__bad_requests_send_nothing(void **state)
{
	static const struct kc_header no_upgrade[] = {{"X-Stream-Protocol-Version", "v4"}};
	static const struct kc_header two[] = {{"Upgrade", "SPDY/3.1"}, {"upgrade", "websocket"}};
	static const struct kc_header conn[] = {{"Upgrade", "SPDY/3.1"}, {"Connection", "close"}};
	static const struct kc_header crlf[] = {{"Upgrade", "SPDY/3.1\r\nX-Evil: 1"}};
	static const struct kc_header split[] = {{"Upgrade", "SPDY/3.1"}, {"X-A", "1\r\nX-B: 2"}};
	static const struct kc_header ok[] = {{"Upgrade", "SPDY/3.1"}};
	const struct {
		const struct kc_header *h;
		size_t n;
		const char *path, *body;
	} cases[] = {
	        {no_upgrade, 1, "/api", NULL}, {two, 2, "/api", NULL},   {conn, 2, "/api", NULL},
	        {crlf, 1, "/api", NULL},       {split, 2, "/api", NULL}, {ok, 1, "/a/../b", NULL},
	        {ok, 1, "/api", "{}"},         {NULL, 0, "/api", NULL},
	};
	struct rawsrv s;
	struct kc_client *c;

	rawsrv_start(&s, answer_101_early, NULL);
	c = raw_client(&s, NULL, 5000);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kc_request rq = {.method = "GET",
		                        .path = cases[i].path,
		                        .headers = cases[i].h,
		                        .n_headers = cases[i].n,
		                        .body = cases[i].body,
		                        .body_len = cases[i].body ? 2 : 0};
		struct kc_tunnel *t = (struct kc_tunnel *)1;
		struct kc_resp head;

		assert_int_equal(kc_upgrade(c, &rq, &t, &head, NULL), -EINVAL);
		assert_null(t);
	}
	usleep(50000);
	assert_int_equal(rawsrv_nreq(&s), 0);
	kc_client_free(c);
	rawsrv_stop(&s);
}

static void test_kube_upgrade__nobody_listening_is_refused(void **state)
{
	struct rawsrv s;
	struct kc_tunnel *t = NULL;
	struct kc_resp head;
	struct ll_err err = {{0}};
	int port;

	rawsrv_start(&s, NULL, NULL);
	port = s.port;
	rawsrv_stop(&s); /* the port is free again */
	s.port = port;
	assert_int_equal(raw_upgrade(&s, 5000, NULL, &t, &head, &err), -ECONNREFUSED);
	assert_null(t);
	assert_non_null(strstr(err.msg, "connect to 127.0.0.1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_kube_upgrade__101_over_tls_carries_bytes_both_ways),
	        cmocka_unit_test(test_kube_upgrade__bearer_token_without_a_certificate),
	        cmocka_unit_test(test_kube_upgrade__a_refusal_comes_back_with_its_body),
	        cmocka_unit_test(test_kube_upgrade__the_server_must_verify),
	        cmocka_unit_test(test_kube_upgrade__request_as_sent_and_bytes_behind_the_head),
	        cmocka_unit_test(test_kube_upgrade__a_chunked_refusal_is_decoded),
	        cmocka_unit_test(test_kube_upgrade__a_refusals_body_is_capped),
	        cmocka_unit_test(test_kube_upgrade__broken_answers_are_errors),
	        cmocka_unit_test(test_kube_upgrade__bad_requests_send_nothing),
	        cmocka_unit_test(test_kube_upgrade__nobody_listening_is_refused),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
