/*
 * test_kube.c - the Kubernetes REST client: paths, statuses, error mapping and the transport's
 * failure modes against local sockets; list paging against the fake API server (tests/fake); with
 * LANDLORD_TEST_KUBECONFIG, the verbs, pagination, watches, cancellation and multiplexing against a
 * real API server.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_apiserver.h"
#include "kube_rawsrv.h"
#include "live.h"
#include <curl/curl.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/jdoc.h"
#include "base/json.h"
#include "base/metrics.h"
#include "kube/kube.h"
#include "kube/kube_internal.h"
#include "kube/kubeconfig.h"

extern char **environ;

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* ---------- kc_path ---------- */

static void expect_path(const struct kc_gvr *gvr, const char *ns, const char *name, const char *sub,
                        const char *want)
{
	struct buf b = BUF_INIT(4096);

	assert_int_equal(kc_path(&b, gvr, ns, name, sub), 0);
	assert_string_equal(buf_cstr(&b), want);
	buf_release(&b);
}

static void test_kube__path_core_and_grouped(void **state)
{
	expect_path(&KC_CONFIGMAPS, "ns1", "cm", NULL, "/api/v1/namespaces/ns1/configmaps/cm");
	expect_path(&KC_CONFIGMAPS, "ns1", NULL, NULL, "/api/v1/namespaces/ns1/configmaps");
	expect_path(&KC_CONFIGMAPS, NULL, NULL, NULL, "/api/v1/configmaps");
	expect_path(&KC_CONFIGMAPS, "", "", "", "/api/v1/configmaps");
	expect_path(&KC_ROLEBINDINGS, "t1", "rb", NULL,
	            "/apis/rbac.authorization.k8s.io/v1/namespaces/t1/rolebindings/rb");
	expect_path(&KC_LEASES, "kube-system", NULL, NULL,
	            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases");
}

static void test_kube__path_cluster_scoped_ignores_namespace(void **state)
{
	expect_path(&KC_NAMESPACES, "ignored", "default", NULL, "/api/v1/namespaces/default");
	expect_path(&KC_NAMESPACES, NULL, "t1", "finalize", "/api/v1/namespaces/t1/finalize");
	expect_path(&KC_CLUSTERROLES, "x", "admin", NULL,
	            "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin");
	expect_path(&KC_CRDS, NULL, "tenants.landlord.dev", "status",
	            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
	            "tenants.landlord.dev/status");
}

static void test_kube__path_subresource_needs_a_name(void **state)
{
	expect_path(&KC_PODS, "a", "p", "status", "/api/v1/namespaces/a/pods/p/status");
	expect_path(&KC_PODS, "a", NULL, "status", "/api/v1/namespaces/a/pods");
}

static void test_kube__path_segments_are_escaped(void **state)
{
	expect_path(&KC_CLUSTERROLEBINDINGS, NULL, "system:node proxier/x?y#z%", NULL,
	            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/"
	            "system%3Anode%20proxier%2Fx%3Fy%23z%25");
	expect_path(&KC_SECRETS, "a/b", "c.d-e_f~g", NULL,
	            "/api/v1/namespaces/a%2Fb/secrets/c.d-e_f~g");
}

static void test_kube__path_over_cap_is_emsgsize(void **state)
{
	struct buf b = BUF_INIT(20);

	assert_int_equal(kc_path(&b, &KC_CONFIGMAPS, "namespace", "name", NULL), -EMSGSIZE);
	buf_release(&b);
}

/* ---------- statuses and errors ---------- */

static void test_kube__status_from_a_status_body(void **state)
{
	const char *raw = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
	                  "\"message\":\"configmaps \\\"x\\\" not found\",\"reason\":\"NotFound\","
	                  "\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},\"code\":404}";
	json_t *body = json_loads(raw, 0, NULL);
	struct kc_status st;

	kc__parse_status(body, 404, raw, strlen(raw), &st);
	assert_int_equal(st.code, 404);
	assert_string_equal(st.reason, "NotFound");
	assert_string_equal(st.message, "configmaps \"x\" not found");
	json_decref(body);
}

static void test_kube__status_without_reason_or_code_uses_http(void **state)
{
	json_t *body = json_pack("{s:s,s:s}", "kind", "Status", "message", "boom");
	struct kc_status st;

	kc__parse_status(body, 503, NULL, 0, &st);
	assert_int_equal(st.code, 503);
	assert_string_equal(st.reason, "ServiceUnavailable");
	assert_string_equal(st.message, "boom");
	json_decref(body);

	/* A successful delete may answer with a Status too. */
	body = json_pack("{s:s,s:s,s:i}", "kind", "Status", "status", "Success", "code", 200);
	kc__parse_status(body, 200, NULL, 0, &st);
	assert_int_equal(st.code, 200);
	assert_string_equal(st.reason, "");
	json_decref(body);
}

static void test_kube__status_from_a_plain_error_body(void **state)
{
	char raw[3000];
	struct kc_status st;

	kc__parse_status(NULL, 404, "404 page not found\n", 19, &st);
	assert_int_equal(st.code, 404);
	assert_string_equal(st.reason, "NotFound");
	assert_string_equal(st.message, "404 page not found");

	memset(raw, 'x', sizeof(raw));
	kc__parse_status(NULL, 502, raw, sizeof(raw), &st);
	assert_int_equal(st.code, 502);
	assert_string_equal(st.reason, "InternalError");
	assert_int_equal(strlen(st.message), sizeof(st.message) - 1);

	kc__parse_status(NULL, 429, "", 0, &st);
	assert_string_equal(st.reason, "TooManyRequests");
	assert_string_equal(st.message, "HTTP 429");

	/* A JSON error body that is not a Status is still reported by its HTTP code. */
	json_t *body = json_pack("{s:s}", "error", "nope");
	kc__parse_status(body, 409, "{\"error\":\"nope\"}", 16, &st);
	assert_int_equal(st.code, 409);
	assert_string_equal(st.reason, "Conflict");
	assert_string_equal(st.message, "{\"error\":\"nope\"}");
	json_decref(body);
}

static void test_kube__status_left_empty_for_success(void **state)
{
	json_t *body = json_pack("{s:s}", "kind", "ConfigMap");
	struct kc_status st;

	memset(&st, 0x55, sizeof(st));
	kc__parse_status(body, 200, "{}", 2, &st);
	assert_int_equal(st.code, 0);
	assert_string_equal(st.reason, "");
	assert_string_equal(st.message, "");
	json_decref(body);
}

static void test_kube__curl_errors_map_to_errno(void **state)
{
	assert_int_equal(kc__curl_errno(CURLE_OK, 0), 0);
	assert_int_equal(kc__curl_errno(CURLE_COULDNT_CONNECT, 0), -ECONNREFUSED);
	assert_int_equal(kc__curl_errno(CURLE_COULDNT_RESOLVE_HOST, 0), -EHOSTUNREACH);
	assert_int_equal(kc__curl_errno(CURLE_OPERATION_TIMEDOUT, 0), -ETIMEDOUT);
	assert_int_equal(kc__curl_errno(CURLE_PEER_FAILED_VERIFICATION, 0), -EPROTO);
	assert_int_equal(kc__curl_errno(CURLE_SSL_CONNECT_ERROR, 0), -EPROTO);
	assert_int_equal(kc__curl_errno(CURLE_SSL_CERTPROBLEM, 0), -EPROTO);
	assert_int_equal(kc__curl_errno(CURLE_WRITE_ERROR, 1), -EMSGSIZE);
	assert_int_equal(kc__curl_errno(CURLE_WRITE_ERROR, 0), -EIO);
	assert_int_equal(kc__curl_errno(CURLE_ABORTED_BY_CALLBACK, 0), -ECANCELED);
	assert_int_equal(kc__curl_errno(CURLE_OUT_OF_MEMORY, 0), -ENOMEM);
	assert_int_equal(kc__curl_errno(CURLE_RECV_ERROR, 0), -ECONNRESET);
	assert_int_equal(kc__curl_errno(CURLE_HTTP2_STREAM, 0), -ECONNRESET);
}

/* The raw server's answer: @ud is the body of a 201 (a 403 Status when it starts with "403"). */
static void answer_token(struct rawsrv *s, int fd)
{
	const char *body = s->ud;

	if (strncmp(body, "403", 3) == 0)
		rawsrv_reply(fd, 403, "application/json", body + 3, strlen(body + 3));
	else
		rawsrv_reply(fd, 201, "application/json", body, strlen(body));
}

/* kc_token_request() against the raw server answering @body: its return, token and request. */
static int token_request(const char *body, char **token, struct kc_resp *resp, char **req)
{
	struct rawsrv srv;
	struct kc_client *c;
	int rc;

	rawsrv_start(&srv, answer_token, (void *)body);
	c = rawsrv_client(&srv, 5000);
	assert_non_null(c);
	rc = kc_token_request(c, "landlord-system", "ti.a.editor", 600, token, resp, NULL);
	kc_client_free(c);
	*req = strdup(srv.req);
	rawsrv_stop(&srv);
	return rc;
}

static void test_kube__token_request_posts_and_returns_the_token(void **state)
{
	char *token, *req;
	struct kc_resp resp = {0};

	assert_int_equal(token_request("{\"kind\":\"TokenRequest\",\"status\":{\"token\":"
	                               "\"tok.en\",\"expirationTimestamp\":\"x\"}}",
	                               &token, &resp, &req),
	                 0);
	assert_string_equal(token, "tok.en");
	assert_memory_equal(req,
	                    "POST /api/v1/namespaces/landlord-system/serviceaccounts/"
	                    "ti.a.editor/token ",
	                    74);
	assert_non_null(strstr(req, "\"spec\":{\"expirationSeconds\":600}"));
	/* the copy in the answer is overwritten */
	assert_memory_equal(jx_str(resp.body, "status", "token", NULL), "\0\0\0\0\0\0", 6);
	kc_resp_release(&resp);
	free(token);
	free(req);
	assert_int_equal(token_request("{\"status\":{}}", &token, &resp, &req), -EPROTO);
	assert_null(token);
	kc_resp_release(&resp);
	free(req);
	assert_int_equal(token_request("403{\"kind\":\"Status\",\"reason\":\"Forbidden\","
	                               "\"message\":\"no\",\"code\":403}",
	                               &token, &resp, &req),
	                 0);
	assert_null(token);
	assert_int_equal(resp.http_status, 403);
	assert_string_equal(resp.status.reason, "Forbidden");
	kc_resp_release(&resp);
	free(req);
}

static void test_kube__resp_release_accepts_zeroed(void **state)
{
	struct kc_resp resp = {0};

	kc_resp_release(&resp);
	assert_false(kc_resp_ok(&resp));
	resp.http_status = 201;
	resp.body = json_object();
	assert_true(kc_resp_ok(&resp));
	kc_resp_release(&resp);
	assert_null(resp.body);
	assert_int_equal(resp.http_status, 0);
}

/* ---------- client creation ---------- */

struct pem_pair {
	char *cert, *key;
	size_t cert_len, key_len;
};

static char *bio_string(BIO *b, size_t *len)
{
	char *data;
	long n = BIO_get_mem_data(b, &data);
	char *s = malloc((size_t)n + 1);

	memcpy(s, data, (size_t)n);
	s[n] = '\0';
	*len = (size_t)n;
	BIO_free(b);
	return s;
}

/* A throwaway self-signed EC certificate and its key, as PEM. */
static struct pem_pair make_pem(void)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = X509_new();
	BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
	struct pem_pair p;

	assert_non_null(k);
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	                           (const unsigned char *)"test", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	PEM_write_bio_X509(cb, x);
	PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0, NULL, NULL);
	p.cert = bio_string(cb, &p.cert_len);
	p.key = bio_string(kb, &p.key_len);
	X509_free(x);
	EVP_PKEY_free(k);
	return p;
}

static void expect_new_fails(const struct kcfg *cfg, const char *detail)
{
	struct kc_client *c = (struct kc_client *)1;
	struct ll_err err = {{0}};

	assert_int_equal(kc_client_new(cfg, NULL, &c, &err), -EINVAL);
	assert_null(c);
	if (strstr(err.msg, detail) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg, detail);
}

static void test_kube__client_new_rejects_bad_config(void **state)
{
	struct pem_pair a = make_pem(), b = make_pem();
	struct kcfg cfg = {.server = "https://127.0.0.1:6443"};
	struct kc_client *c = NULL;

	expect_new_fails(&(struct kcfg){.server = NULL}, "no API server");
	expect_new_fails(&(struct kcfg){.server = "::not a url"}, "invalid server URL");
	expect_new_fails(&(struct kcfg){.server = "ftp://127.0.0.1"}, "not http");

	cfg.ca_pem = "not a certificate";
	cfg.ca_pem_len = strlen(cfg.ca_pem);
	expect_new_fails(&cfg, "certificate authority");
	cfg.ca_pem = a.cert;
	cfg.ca_pem_len = a.cert_len;
	cfg.cert_pem = a.cert;
	cfg.cert_pem_len = a.cert_len;
	expect_new_fails(&cfg, "go together");
	cfg.key_pem = b.key;
	cfg.key_pem_len = b.key_len;
	expect_new_fails(&cfg, "does not match");
	cfg.key_pem = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
	cfg.key_pem_len = strlen(cfg.key_pem);
	expect_new_fails(&cfg, "not a PEM private key");

	cfg.key_pem = a.key;
	cfg.key_pem_len = a.key_len;
	cfg.token = "abc\r\nX-Injected: 1";
	expect_new_fails(&cfg, "control characters");
	cfg.token = NULL;
	cfg.server = "https://127.0.0.1:6443/";
	assert_int_equal(kc_client_new(&cfg, NULL, &c, NULL), 0);
	assert_string_equal(kc_server(c), "https://127.0.0.1:6443/");
	kc_client_free(c);
	free(a.cert);
	free(a.key);
	free(b.cert);
	free(b.key);
}

/* ---------- transport failures against local sockets ---------- */

/* A listening socket that never accepts: connections complete in the backlog, nothing answers. */
static int silent_listener(int *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A loopback port with nobody listening (bound, then closed). */
static int closed_port(void)
{
	int port, fd = silent_listener(&port);

	close(fd);
	return port;
}

static struct kc_client *local_client(int port, long timeout_ms)
{
	char url[64];
	struct kcfg cfg = {.server = url};
	struct kc_opts o = {.timeout_ms = timeout_ms, .qps = -1, .client_name = "unit"};
	struct kc_client *c = NULL;
	struct ll_err err = {{0}};

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	if (kc_client_new(&cfg, &o, &c, &err) != 0)
		fail_msg("kc_client_new: %s", err.msg);
	return c;
}

static void test_kube__connection_refused_is_econnrefused(void **state)
{
	struct kc_client *c = local_client(closed_port(), 5000);
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	char labels[128];
	double before = metrics_get("landlord_api_requests_total",
	                            metrics_labels(labels, sizeof(labels), "client", "unit", "verb",
	                                           "GET", "code", "<error>", NULL));
	char dlabels[128];
	double timed = metrics_get(
	        "landlord_api_request_duration_seconds",
	        metrics_labels(dlabels, sizeof(dlabels), "client", "unit", "verb", "GET", NULL));

	assert_int_equal(kc_get(c, &KC_NAMESPACES, NULL, "default", &resp, &err), -ECONNREFUSED);
	assert_int_equal(resp.http_status, 0);
	assert_null(resp.body);
	assert_non_null(strstr(err.msg, "GET /api/v1/namespaces/default"));
	assert_true(metrics_get("landlord_api_requests_total", labels) == before + 1);
	assert_true(metrics_get("landlord_api_request_duration_seconds", dlabels) == timed + 1);
	kc_client_free(c);
}

static void test_kube__request_timeout_is_etimedout(void **state)
{
	int port, fd = silent_listener(&port);
	struct kc_client *c = local_client(port, 300);
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	long long t0 = clock_mono_ms();

	assert_int_equal(kc_request(c, "GET", "/version", NULL, NULL, 0, NULL, &resp, &err),
	                 -ETIMEDOUT);
	/* generous: the point is that it does not wait for the silent peer forever */
	assert_true(clock_mono_ms() - t0 < 10000);
	assert_true(err.msg[0] != '\0');
	kc_client_free(c);
	close(fd);
}

static void test_kube__bad_arguments_are_einval(void **state)
{
	struct kc_client *c = local_client(closed_port(), 1000);
	struct kc_resp resp = {.http_status = 7};

	assert_int_equal(kc_request(c, "GET", "no-slash", NULL, NULL, 0, NULL, &resp, NULL),
	                 -EINVAL);
	assert_int_equal(resp.http_status, 0);
	assert_int_equal(kc_patch(c, &KC_CONFIGMAPS, "a", "b", NULL, (enum kc_patch_type)9, NULL,
	                          NULL, &resp, NULL),
	                 -EINVAL);
	kc_client_free(c);
}

struct call {
	struct kc_client *c;
	int rc;
	bool watch;
	atomic_int *cancel;
	int idle_timeout;
	int events;
};

static int count_event(enum watch_event_type type, json_t *obj, void *ud)
{
	struct call *k = ud;

	k->events++;
	return 0;
}

static void *call_thread(void *arg)
{
	struct call *k = arg;
	struct kc_resp resp = {0};
	struct kc_watch_opts wo = {.cancel = k->cancel, .idle_timeout_seconds = k->idle_timeout};

	if (k->watch)
		k->rc = kc_watch(k->c, &KC_CONFIGMAPS, "x", &wo, count_event, k, &resp, NULL);
	else
		k->rc = kc_get(k->c, &KC_NAMESPACES, NULL, "default", &resp, NULL);
	kc_resp_release(&resp);
	return NULL;
}

static void test_kube__free_cancels_blocked_calls(void **state)
{
	int port, fd = silent_listener(&port);
	struct kc_client *c = local_client(port, 60000);
	struct call calls[3] = {{.c = c}, {.c = c}, {.c = c, .watch = true}};
	pthread_t t[3];

	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, call_thread, &calls[i]);
	sleep_ms(300);
	kc_client_free(c);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(calls[i].rc, -ECANCELED);
	}
	close(fd);
}

static void test_kube__watch_cancel_flag_ends_the_watch(void **state)
{
	int port, fd = silent_listener(&port);
	struct kc_client *c = local_client(port, 60000);
	atomic_int cancel = 0;
	struct call k = {.c = c, .watch = true, .cancel = &cancel};
	pthread_t t;
	long long t0;

	pthread_create(&t, NULL, call_thread, &k);
	sleep_ms(300);
	t0 = clock_mono_ms();
	atomic_store(&cancel, 1);
	pthread_join(t, NULL);
	assert_int_equal(k.rc, -ECANCELED);
	assert_true(clock_mono_ms() - t0 < 5000);
	/* the client still works after a cancelled watch: this one times out */
	k.cancel = NULL;
	k.idle_timeout = 1;
	call_thread(&k);
	assert_int_equal(k.rc, -ETIMEDOUT);
	kc_client_free(c);
	close(fd);
}

/* ---------- the continue-token scan ---------- */

static void expect_scan(const char *raw, enum kc_scan want, const char *want_token)
{
	char *token = (char *)1;
	enum kc_scan got = kc__scan_continue(raw, strlen(raw), &token);

	if (got != want)
		fail_msg("scan of %s: %d, want %d", raw, (int)got, (int)want);
	if (want_token)
		assert_string_equal(token, want_token);
	else
		assert_null(token);
	free(token);
}

static void test_kube__scan_continue_reads_the_list_metadata(void **state)
{
	expect_scan("{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{"
	            "\"resourceVersion\":\"6213\",\"continue\":\"eyJ2IjoibWV0YS\","
	            "\"remainingItemCount\":1502},\"items\":[{\"metadata\":{\"name\":\"a\"}}]}",
	            KC_SCAN_NEXT, "eyJ2IjoibWV0YS");
	/* pretty-printed (the API server indents for curl) */
	expect_scan("{\n  \"kind\": \"List\",\n  \"metadata\" : {\n    \"continue\" : \"t\"\n  },\n"
	            "  \"items\": []\n}",
	            KC_SCAN_NEXT, "t");
	expect_scan("{\"kind\":\"L\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[]}",
	            KC_SCAN_LAST, NULL);
	expect_scan("{\"metadata\":{\"continue\":\"\"},\"items\":[]}", KC_SCAN_LAST, NULL);
	expect_scan("{\"metadata\":{},\"items\":null}", KC_SCAN_LAST, NULL);
	/* nested values, numbers, literals and look-alikes inside strings are skipped */
	expect_scan("{\"apiVersion\":\"v1\",\"x\":[1,-2.5e3,true,null,{\"continue\":\"no\"}],"
	            "\"metadata\":{\"selfLink\":\"\\\"continue\\\":\\\"no\\\"\",\"n\":{\"a\":[{}]},"
	            "\"continue\":\"yes\",\"f\":false},\"items\":[]}",
	            KC_SCAN_NEXT, "yes");
}

static void test_kube__scan_continue_never_looks_into_items(void **state)
{
	expect_scan("{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{\"metadata\":"
	            "{\"continue\":\"decoy\"}}]}",
	            KC_SCAN_LAST, NULL);
	/* metadata after items: only a parse can tell */
	expect_scan("{\"items\":[{\"metadata\":{\"continue\":\"decoy\"}}],\"metadata\":{}}",
	            KC_SCAN_UNSURE, NULL);
}

static void test_kube__scan_continue_unsure_falls_back(void **state)
{
	static const char *const unsure[] = {
	        "",
	        "[]",
	        "{}",
	        "{\"metadata\":{\"continue\":\"a\"}}",                    /* no items */
	        "{\"metadata\":{\"continue\":\"a\\/b\"},\"items\":[]}",   /* escape */
	        "{\"metadata\":{\"con\\u0074inue\":\"a\"},\"items\":[]}", /* escaped key */
	        "{\"meta\\u0064ata\":{\"continue\":\"a\"},\"items\":[]}", /* escaped key */
	        "{\"metadata\":{\"continue\":null},\"items\":[]}",        /* not a string */
	        "{\"metadata\":{\"continue\":\"a\",\"continue\":\"b\"},\"items\":[]}",
	        "{\"metadata\":{},\"metadata\":{\"continue\":\"a\"},\"items\":[]}",
	        "{\"metadata\":{\"continue\":\"ab", /* truncated */
	        "{\"metadata\":{\"continue\":\"ab\"",
	        "{\"metadata\":{\"continue\":\"ab\"},",
	        "{\"metadata\":{\"x\":[1,2},\"items\":[]}",
	        "{\"metadata\":[],\"items\":[]}",
	};

	for (size_t i = 0; i < sizeof(unsure) / sizeof(unsure[0]); i++)
		expect_scan(unsure[i], KC_SCAN_UNSURE, NULL);
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static const char *pick(uint64_t *rng, const char *const *from, size_t n)
{
	return from[next_rand(rng) % n];
}

#define PICK(rng, arr) pick((rng), (arr), sizeof(arr) / sizeof((arr)[0]))

/* A list page in one of the shapes a server (or a broken one) might send. */
static void random_page(struct buf *b, uint64_t *rng)
{
	static const char *const ws[] = {"", "", " ", "\n  ", "\t"};
	static const char *const tokens[] = {
	        "\"abc\"", "\"\"", "\"eyJ2Ijo=\"", "\"a\\\"b\"", "\"a\\/b\"", "null", "7", "\"p\""};
	static const char *const other[] = {
	        "\"resourceVersion\":\"12\"", "\"remainingItemCount\":3",
	        "\"selfLink\":\"\\\"continue\\\":\\\"x\\\"\"", "\"n\":{\"continue\":[\"x\",{}]}",
	        "\"b\":[true,false,null,-1.5E+2]"};
	static const char *const items[] = {"[]", "null",
	                                    "[{\"metadata\":{\"continue\":\"decoy\"}}]",
	                                    "[{\"a\":\"]}\"},{\"metadata\":{\"name\":\"x\"}}]"};
	int order = (int)(next_rand(rng) % 4);

	buf_append_str(b, "{");
	buf_appendf(b, "%s\"kind\"%s:%s\"ConfigMapList\",", PICK(rng, ws), PICK(rng, ws),
	            PICK(rng, ws));
	if (order == 3)
		buf_appendf(b, "\"items\":%s,", PICK(rng, items));
	buf_appendf(b, "%s\"metadata\"%s:%s{", PICK(rng, ws), PICK(rng, ws), PICK(rng, ws));
	for (int i = 0, n = (int)(next_rand(rng) % 4); i < n; i++)
		buf_appendf(b, "%s%s,", PICK(rng, other), PICK(rng, ws));
	if (order != 0)
		buf_appendf(b, "\"continue\"%s:%s%s", PICK(rng, ws), PICK(rng, ws),
		            PICK(rng, tokens));
	else
		buf_append_str(b, "\"resourceVersion\":\"1\"");
	buf_appendf(b, "%s}%s", PICK(rng, ws), PICK(rng, ws));
	if (order != 3)
		buf_appendf(b, ",\"items\"%s:%s%s", PICK(rng, ws), PICK(rng, ws), PICK(rng, items));
	buf_appendf(b, "%s}", PICK(rng, ws));
}

/* Whenever the scan is sure and the page parses, both give the same token. */
static void check_scan_agrees(const char *raw, size_t len, int *sure)
{
	char *token = NULL;
	enum kc_scan got = kc__scan_continue(raw, len, &token);
	json_t *page;
	const char *want;

	if (got == KC_SCAN_UNSURE) {
		assert_null(token);
		return;
	}
	page = jx_loads(raw, len, NULL);
	if (page) {
		want = jx_str(page, "metadata", "continue", NULL);
		if (got == KC_SCAN_LAST && want && *want)
			fail_msg("scan says last page, parse says \"%s\": %.*s", want, (int)len,
			         raw);
		if (got == KC_SCAN_NEXT && (want == NULL || strcmp(want, token) != 0))
			fail_msg("scan says \"%s\", parse says \"%s\": %.*s", token,
			         want ? want : "(none)", (int)len, raw);
		++*sure;
	}
	json_decref(page);
	free(token);
}

static void test_kube__scan_continue_agrees_with_the_parser(void **state)
{
	static const char mutations[] = "\"{}[],:\\ xe0";
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	struct buf b = BUF_INIT(BUF_MAX_INTERNAL), m = BUF_INIT(BUF_MAX_INTERNAL);
	int sure = 0, pages = 3000;

	for (int i = 0; i < pages; i++) {
		buf_reset(&b);
		random_page(&b, &rng);
		check_scan_agrees(b.p, b.len, &sure);
		/* a truncation and a one-byte change of the same page */
		check_scan_agrees(b.p, next_rand(&rng) % b.len, &sure);
		buf_reset(&m);
		buf_append(&m, b.p, b.len);
		m.p[next_rand(&rng) % m.len] = mutations[next_rand(&rng) % (sizeof(mutations) - 1)];
		check_scan_agrees(m.p, m.len, &sure);
	}
	/* most well-formed pages are decided by the scan alone */
	assert_true(sure > pages / 2);
	buf_release(&b);
	buf_release(&m);
}

/* ---------- kc_list against the fake API server (tests/fake) ---------- */

/*
 * ConfigMaps item-000... in "default", with decoy "continue" keys in their metadata and data.
 * The fake's continue token names the last item of the page before, so page k (1-based) of
 * @limit items is asked for with a query holding "default/item-<(k-1)*limit-1>".
 */
static struct fake_api *paging_fake(int items)
{
	struct fake_api *f = fake_api_start();
	char name[16];

	for (int i = 0; i < items; i++) {
		json_t *cm;

		snprintf(name, sizeof(name), "item-%03d", i);
		cm = json_pack("{s:{s:s,s:s,s:s},s:{s:s}}", "metadata", "name", name, "namespace",
		               "default", "continue", "decoy", "data", "k",
		               "\"continue\":\"decoy\"");
		fake_api_put(f, "configmaps", cm);
		json_decref(cm);
	}
	return f;
}

/* The query substring of page @page's request. */
static const char *page_query(int page, int limit, char *out, size_t len)
{
	snprintf(out, len, "default/item-%03d", (page - 1) * limit - 1);
	return out;
}

/* A rule acting on page @page (> 1) only. */
static int page_rule(struct fake_api *f, int page, int limit, enum fake_action action, int status)
{
	char q[32];

	return fake_api_rule_add(
	        f, &(struct fake_rule){.method = "GET",
	                               .query_contains = page_query(page, limit, q, sizeof(q)),
	                               .action = action,
	                               .status = status});
}

static int list_requests(struct fake_api *f)
{
	return fake_api_requests(f, "GET", "/configmaps");
}

/* Requests answered 400: a continue token the fake never issued. */
static int unknown_tokens(struct fake_api *f)
{
	json_t *log = fake_api_log(f), *e;
	size_t i;
	int n = 0;

	json_array_foreach(log, i, e)
		n += jx_int(e, 0, "status", NULL) == 400;
	json_decref(log);
	return n;
}

struct paged {
	struct fake_api *f;
	int limit, items;
	int n;
	int out_of_order;
	bool await_next; /* at each page's first item, wait for the next page's request */
	int stop_at;     /* stop with 7 after this many items */
	int missed;      /* pages handed out before the next one was requested */
};

struct want_requests {
	int n;
};

static bool enough_requests(struct fake_api *f, void *ud)
{
	return list_requests(f) >= ((struct want_requests *)ud)->n;
}

static int on_paged_item(json_t *item, void *ud)
{
	struct paged *p = ud;
	char want[32];
	int page = p->n / p->limit + 1, pages = (p->items + p->limit - 1) / p->limit;

	snprintf(want, sizeof(want), "item-%03d", p->n);
	if (jx_name(item) == NULL || strcmp(jx_name(item), want) != 0)
		p->out_of_order++;
	if (p->await_next && p->n % p->limit == 0 && page < pages &&
	    !fake_api_wait(p->f, enough_requests, &(struct want_requests){page + 1}))
		p->missed++;
	p->n++;
	return p->stop_at && p->n == p->stop_at ? 7 : 0;
}

static double unit_lists(const char *code)
{
	char labels[128];

	return metrics_get("landlord_api_requests_total",
	                   metrics_labels(labels, sizeof(labels), "client", "unit", "verb", "LIST",
	                                  "code", code, NULL));
}

/* kc_list() of the fake's configmaps, @p->limit a page; returns kc_list()'s value. */
static int fake_list(struct fake_api *f, struct paged *p, char **rv, struct kc_resp *resp,
                     struct ll_err *err)
{
	struct kc_client *c = local_client(fake_api_port(f), 20000);
	struct kc_list_opts o = {.limit = p->limit};
	int rc;

	p->f = f;
	rc = kc_list(c, &KC_CONFIGMAPS, NULL, &o, on_paged_item, p, rv, resp, err);
	kc_client_free(c);
	return rc;
}

/* The access hook of test_kube__self_review_*: keeps the spec it was asked, allows "view". */
static bool keep_spec(const json_t *spec, void *ud)
{
	json_t **seen = ud;

	json_decref(*seen);
	*seen = json_deep_copy(spec);
	return strcmp(jx_str(spec, "resourceAttributes", "name", NULL), "view") == 0;
}

static double unit_reviews(const char *code)
{
	char labels[128];

	return metrics_get("landlord_api_requests_total",
	                   metrics_labels(labels, sizeof(labels), "client", "unit", "verb",
	                                  "REVIEW", "code", code, NULL));
}

static void test_kube__self_review_asks_about_its_attributes_and_counts_as_review(void **state)
{
	struct fake_api *f = fake_api_start();
	struct kc_client *c = local_client(fake_api_port(f), 20000);
	struct kc_access a = {.verb = "bind",
	                      .group = "rbac.authorization.k8s.io",
	                      .resource = "clusterroles",
	                      .subresource = "",
	                      .name = "view"};
	json_t *seen = NULL, *want;
	struct kc_resp resp = {0};
	double before = unit_reviews("201");
	bool allowed = false;

	fake_api_set_access_hook(f, keep_spec, &seen);
	assert_int_equal(kc_self_review(c, &a, &allowed, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 201);
	assert_true(allowed);
	kc_resp_release(&resp);
	/* "" and NULL attributes are left out */
	want = json_pack("{s:{s:s,s:s,s:s,s:s}}", "resourceAttributes", "verb", "bind", "group",
	                 "rbac.authorization.k8s.io", "resource", "clusterroles", "name", "view");
	assert_true(json_equal(seen, want));
	json_decref(want);
	a.name = "cluster-admin";
	a.ns = "team-a";
	allowed = true;
	assert_int_equal(kc_self_review(c, &a, &allowed, &resp, NULL), 0);
	assert_false(allowed);
	assert_string_equal(jx_str(seen, "resourceAttributes", "namespace", NULL), "team-a");
	kc_resp_release(&resp);
	assert_true(unit_reviews("201") == before + 2);
	assert_int_equal(fake_api_writes(f), 0);
	json_decref(seen);
	kc_client_free(c);
	fake_api_stop(f);
}

static void test_kube__list_requests_the_next_page_ahead(void **state)
{
	struct fake_api *f = paging_fake(23);
	struct paged p = {.limit = 5, .items = 23, .await_next = true};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	double ok = unit_lists("200");
	char *rv = NULL, want_rv[32];

	snprintf(want_rv, sizeof(want_rv), "%lld", fake_api_resource_version(f));
	assert_int_equal(fake_list(f, &p, &rv, &resp, &err), 0);
	assert_int_equal(resp.http_status, 200);
	assert_int_equal(p.n, 23);
	assert_int_equal(p.out_of_order, 0);
	/* each page was handed out while the next one was already requested */
	assert_int_equal(p.missed, 0);
	assert_int_equal(list_requests(f), 5);
	assert_int_equal(unknown_tokens(f), 0);
	assert_true(unit_lists("200") == ok + 5);
	assert_string_equal(rv, want_rv);
	/* resp holds the last page, items handed out */
	assert_int_equal(json_array_size(json_object_get(resp.body, "items")), 0);
	free(rv);
	kc_resp_release(&resp);
	fake_api_stop(f);
}

/* A version to be not older than goes with its match; a match alone is not sent (the server
 * refuses it). */
static void test_kube__list_sends_a_resource_version_match_with_its_version(void **state)
{
	struct fake_api *f = paging_fake(3);
	struct kc_client *c = local_client(fake_api_port(f), 20000);
	struct paged p = {.limit = 500, .items = 3, .f = f};
	struct kc_list_opts o = {.resource_version = "1", .resource_version_match = "NotOlderThan"};
	struct kc_resp resp = {0};
	json_t *log;

	(void)state;
	assert_int_equal(kc_list(c, &KC_CONFIGMAPS, NULL, &o, on_paged_item, &p, NULL, &resp, NULL),
	                 0);
	kc_resp_release(&resp);
	o.resource_version = NULL;
	p.n = 0;
	assert_int_equal(kc_list(c, &KC_CONFIGMAPS, NULL, &o, on_paged_item, &p, NULL, &resp, NULL),
	                 0);
	kc_resp_release(&resp);
	log = fake_api_log(f);
	assert_int_equal(json_array_size(log), 2);
	assert_string_equal(jx_str(json_array_get(log, 0), "query", NULL),
	                    "resourceVersion=1&resourceVersionMatch=NotOlderThan&limit=500");
	assert_string_equal(jx_str(json_array_get(log, 1), "query", NULL), "limit=500");
	json_decref(log);
	kc_client_free(c);
	fake_api_stop(f);
}

static void test_kube__list_parses_first_when_the_scan_is_unsure(void **state)
{
	for (int layout = FAKE_LIST_ITEMS_FIRST; layout <= FAKE_LIST_ESCAPED; layout++) {
		struct fake_api *f = paging_fake(12);
		struct paged p = {.limit = 4, .items = 12};
		struct kc_resp resp = {0};
		struct ll_err err = {{0}};

		fake_api_set_list_layout(f, layout);
		assert_int_equal(fake_list(f, &p, NULL, &resp, &err), 0);
		assert_int_equal(resp.http_status, 200);
		assert_int_equal(p.n, 12);
		assert_int_equal(p.out_of_order, 0);
		assert_int_equal(list_requests(f), 3);
		assert_int_equal(unknown_tokens(f), 0);
		kc_resp_release(&resp);
		fake_api_stop(f);
	}
}

struct doc_paged {
	struct paged p;
	int with_kind, with_data;
};

static int on_paged_doc(struct jdoc *take_item, void *ud)
{
	struct doc_paged *d = ud;
	json_t *meta = jval_to_json(jdoc_root(take_item));
	int rc;

	d->with_kind += jd_str(take_item, "kind", NULL) &&
	                !strcmp(jd_str(take_item, "kind", NULL), "ConfigMap");
	d->with_data += jval_type(jd_get(take_item, "data", NULL)) != JT_NONE;
	rc = on_paged_item(meta, &d->p); /* the same order and page checks as kc_list() */
	json_decref(meta);
	jdoc_unref(take_item);
	return rc;
}

/* kc_list_docs(): every layout and stop of kc_list(), items parsed with the projection given. */
static void test_kube__list_docs_pages_into_documents(void **state)
{
	static const char *const keep[] = {"metadata", "kind", NULL};
	static const char *const defaults[] = {"kind", "ConfigMap", NULL};
	struct jdoc_opts proj = {.keep = keep, .defaults = defaults};

	for (int layout = FAKE_LIST_USUAL; layout <= FAKE_LIST_ESCAPED; layout++) {
		struct fake_api *f = paging_fake(12);
		struct doc_paged d = {.p = {.f = f, .limit = 4, .items = 12, .stop_at = 9}};
		struct kc_client *c = local_client(fake_api_port(f), 20000);
		struct kc_list_opts o = {.limit = 4};
		struct kc_resp resp = {0};
		char *rv = (char *)"unset";

		fake_api_set_list_layout(f, layout);
		/* a stop ends the list with the callback's value, items so far handed over */
		assert_int_equal(kc_list_docs(c, &KC_CONFIGMAPS, NULL, &o, &proj, on_paged_doc, &d,
		                              &rv, &resp, NULL),
		                 7);
		assert_null(rv);
		assert_int_equal(d.p.n, 9);
		kc_resp_release(&resp);
		d = (struct doc_paged){.p = {.f = f, .limit = 4, .items = 12}};
		assert_int_equal(kc_list_docs(c, &KC_CONFIGMAPS, NULL, &o, &proj, on_paged_doc, &d,
		                              &rv, &resp, NULL),
		                 0);
		assert_int_equal(resp.http_status, 200);
		assert_int_equal(d.p.n, 12);
		assert_int_equal(d.p.out_of_order, 0);
		assert_int_equal(d.with_kind, 12); /* the root default */
		assert_int_equal(d.with_data, 0);  /* the projection */
		assert_non_null(rv);
		/* resp holds the rest of the last page */
		assert_null(json_object_get(resp.body, "items"));
		assert_non_null(jx_str(resp.body, "metadata", "resourceVersion", NULL));
		free(rv);
		kc_resp_release(&resp);
		kc_client_free(c);
		fake_api_stop(f);
	}
}

static void test_kube__list_stop_cancels_the_page_in_flight(void **state)
{
	struct fake_api *f = paging_fake(15);
	/* stop at page 2's first item, once page 3 has been requested (and is held) */
	struct paged p = {.limit = 5, .items = 15, .await_next = true, .stop_at = 6};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	double ok = unit_lists("200"), failed = unit_lists("<error>");
	char *rv = (char *)1, want_token[64];
	long long t0 = clock_mono_ms();
	int hold = page_rule(f, 3, 5, FAKE_HOLD, 0);

	snprintf(want_token, sizeof(want_token), "fake1:%lld:default/item-009",
	         fake_api_resource_version(f));
	assert_int_equal(fake_list(f, &p, &rv, &resp, &err), 7);
	/* it did not wait for the held page */
	assert_true(clock_mono_ms() - t0 < 5000);
	assert_int_equal(p.n, 6);
	assert_int_equal(p.missed, 0);
	assert_int_equal(list_requests(f), 3);
	assert_int_equal(fake_api_rule_hits(f, hold), 1);
	assert_null(rv);
	/* resp holds page 2, not the cancelled page 3 */
	assert_int_equal(resp.http_status, 200);
	assert_string_equal(jx_str(resp.body, "metadata", "continue", NULL), want_token);
	assert_true(unit_lists("200") == ok + 2);
	assert_true(unit_lists("<error>") == failed + 1);
	kc_resp_release(&resp);
	fake_api_stop(f);
}

static void test_kube__list_gone_page_is_the_answer(void **state)
{
	struct fake_api *f = paging_fake(15);
	struct paged p = {.limit = 5, .items = 15};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	char *rv = (char *)1;

	page_rule(f, 3, 5, FAKE_ANSWER, 410);
	assert_int_equal(fake_list(f, &p, &rv, &resp, &err), 0);
	assert_int_equal(resp.http_status, 410);
	assert_string_equal(resp.status.reason, "Expired");
	assert_int_equal(p.n, 10);
	assert_int_equal(p.out_of_order, 0);
	assert_null(rv);
	kc_resp_release(&resp);
	fake_api_stop(f);
}

static void test_kube__list_malformed_page_cancels_the_page_in_flight(void **state)
{
	struct fake_api *f = paging_fake(15);
	struct paged p = {.limit = 5, .items = 15};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	long long t0 = clock_mono_ms();

	/* page 2's metadata (with page 3's token) reads, its items do not; page 3 is held */
	page_rule(f, 2, 5, FAKE_CORRUPT, 0);
	page_rule(f, 3, 5, FAKE_HOLD, 0);
	assert_int_equal(fake_list(f, &p, NULL, &resp, &err), -EPROTO);
	assert_true(clock_mono_ms() - t0 < 5000);
	assert_int_equal(p.n, 5);
	assert_non_null(strstr(err.msg, "malformed JSON"));
	kc_resp_release(&resp);
	fake_api_stop(f);
}

static void test_kube__list_pages_stay_rate_limited(void **state)
{
	struct fake_api *f = paging_fake(8);
	struct kc_opts ko = {.qps = 10, .burst = 1, .client_name = "unit"};
	struct kcfg cfg = {.server = (char *)fake_api_url(f)};
	struct kc_list_opts o = {.limit = 2};
	struct paged p = {.f = f, .limit = 2, .items = 8};
	struct kc_resp resp = {0};
	struct kc_client *c = NULL;
	long long t0;

	assert_int_equal(kc_client_new(&cfg, &ko, &c, NULL), 0);
	t0 = clock_mono_ms();
	assert_int_equal(kc_list(c, &KC_CONFIGMAPS, NULL, &o, on_paged_item, &p, NULL, &resp, NULL),
	                 0);
	/* 4 pages at 10 per second from a burst of 1: three waits of 100 ms */
	assert_true(clock_mono_ms() - t0 >= 250);
	assert_int_equal(p.n, 8);
	assert_int_equal(p.out_of_order, 0);
	kc_resp_release(&resp);
	kc_client_free(c);
	fake_api_stop(f);
}

/* ---------- live tests (LANDLORD_TEST_KUBECONFIG) ---------- */

struct live {
	struct kc_client *c;
	struct kcfg cfg;
	char ns[64];
	char state_dir[512];
};

static int live_setup(void **state)
{
	const char *path = getenv("LANDLORD_TEST_KUBECONFIG");
	struct live *l;
	struct ll_err err = {{0}};
	struct kc_resp resp = {0};
	char sfx[16];
	json_t *ns;
	int rc;

	*state = NULL;
	if (path == NULL || *path == '\0')
		return 0;
	l = calloc(1, sizeof(*l));
	if (kcfg_load_file(path, NULL, &l->cfg, &err) != 0 ||
	    kc_client_new(&l->cfg, NULL, &l->c, &err) != 0) {
		fprintf(stderr, "live setup: %s\n", err.msg);
		return -1;
	}
	live_state_dir(path, getenv("LANDLORD_TEST_STATE_DIR"), l->state_dir, sizeof(l->state_dir));
	live_rand_suffix(sfx, sizeof(sfx));
	snprintf(l->ns, sizeof(l->ns), "kc-test-%s", sfx);
	ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
	               "name", l->ns);
	rc = kc_create(l->c, &KC_NAMESPACES, NULL, ns, &resp, &err);
	json_decref(ns);
	if (rc || resp.http_status != 201) {
		fprintf(stderr, "live setup: create namespace: %s %s\n", err.msg,
		        resp.status.message);
		kc_resp_release(&resp);
		return -1;
	}
	kc_resp_release(&resp);
	*state = l;
	return 0;
}

static int live_teardown(void **state)
{
	struct live *l = *state;
	struct kc_resp resp = {0};

	if (l == NULL)
		return 0;
	kc_delete(l->c, &KC_NAMESPACES, NULL, l->ns, NULL, &resp, NULL);
	kc_resp_release(&resp);
	kc_client_free(l->c);
	kcfg_release(&l->cfg);
	free(l);
	return 0;
}

static struct live *live_or_skip(void **state)
{
	struct live *l = *state;

	if (l == NULL)
		skip();
	return l;
}

static json_t *configmap(const char *name, const char *key, const char *value)
{
	return json_pack("{s:s,s:s,s:{s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
	                 "metadata", "name", name, "data", key, value);
}

/*
 * An answer is expected: rc 0 and the given HTTP status. The macro declares `struct ll_err e_`,
 * which @call passes as its error argument so a failure shows the client's detail.
 */
#define expect_answer(call, resp, want)                                                       \
	do {                                                                                  \
		struct ll_err e_ = {{0}};                                                     \
		int rc_ = (call);                                                             \
		if (rc_ != 0)                                                                 \
			fail_msg("%s: rc %d: %s", #call, rc_, e_.msg);                        \
		if ((resp)->http_status != (want))                                            \
			fail_msg("%s: HTTP %ld (want %d): %s %s", #call, (resp)->http_status, \
			         (want), (resp)->status.reason, (resp)->status.message);      \
	} while (0)

static void test_kube__live_get_default_namespace(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_resp resp = {0};

	expect_answer(kc_get(l->c, &KC_NAMESPACES, NULL, "default", &resp, &e_), &resp, 200);
	assert_string_equal(jx_name(resp.body), "default");
	assert_string_equal(jx_str(resp.body, "kind", NULL), "Namespace");
	assert_int_equal(resp.status.code, 0);
	kc_resp_release(&resp);

	expect_answer(kc_get(l->c, &KC_NAMESPACES, NULL, "no-such-ns-kc", &resp, &e_), &resp, 404);
	assert_int_equal(resp.status.code, 404);
	assert_string_equal(resp.status.reason, "NotFound");
	assert_non_null(strstr(resp.status.message, "no-such-ns-kc"));
	kc_resp_release(&resp);

	expect_answer(kc_request(l->c, "GET", "/version", NULL, NULL, 0, NULL, &resp, &e_), &resp,
	              200);
	assert_non_null(jx_str(resp.body, "gitVersion", NULL));
	kc_resp_release(&resp);
}

static void test_kube__live_create_get_replace_patch(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_resp resp = {0};
	json_t *cm = configmap("crud", "a", "1"), *obj, *patch;
	char *rv;

	expect_answer(kc_create(l->c, &KC_CONFIGMAPS, l->ns, cm, &resp, &e_), &resp, 201);
	kc_resp_release(&resp);
	expect_answer(kc_create(l->c, &KC_CONFIGMAPS, l->ns, cm, &resp, &e_), &resp, 409);
	assert_string_equal(resp.status.reason, "AlreadyExists");
	kc_resp_release(&resp);

	expect_answer(kc_get(l->c, &KC_CONFIGMAPS, l->ns, "crud", &resp, &e_), &resp, 200);
	assert_string_equal(jx_str(resp.body, "data", "a", NULL), "1");
	obj = json_deep_copy(resp.body);
	rv = strdup(jx_resource_version(obj));
	kc_resp_release(&resp);

	json_object_set_new(json_object_get(obj, "data"), "a", json_string("2"));
	expect_answer(kc_replace(l->c, &KC_CONFIGMAPS, l->ns, "crud", NULL, obj, &resp, &e_), &resp,
	              200);
	assert_string_equal(jx_str(resp.body, "data", "a", NULL), "2");
	assert_string_not_equal(jx_resource_version(resp.body), rv);
	kc_resp_release(&resp);
	/* the same resourceVersion again is stale now: optimistic concurrency */
	expect_answer(kc_replace(l->c, &KC_CONFIGMAPS, l->ns, "crud", NULL, obj, &resp, &e_), &resp,
	              409);
	assert_string_equal(resp.status.reason, "Conflict");
	kc_resp_release(&resp);

	patch = json_pack("{s:{s:s,s:n}}", "data", "b", "3", "a");
	expect_answer(kc_patch(l->c, &KC_CONFIGMAPS, l->ns, "crud", NULL, KC_PATCH_MERGE, patch,
	                       NULL, &resp, &e_),
	              &resp, 200);
	assert_null(jx_str(resp.body, "data", "a", NULL));
	assert_string_equal(jx_str(resp.body, "data", "b", NULL), "3");
	kc_resp_release(&resp);
	json_decref(patch);

	patch = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s}]", "op", "test", "path", "/data/b", "value",
	                  "3", "op", "add", "path", "/data/c", "value", "4");
	expect_answer(kc_patch(l->c, &KC_CONFIGMAPS, l->ns, "crud", NULL, KC_PATCH_JSON, patch,
	                       "kc-test", &resp, &e_),
	              &resp, 200);
	assert_string_equal(jx_str(resp.body, "data", "c", NULL), "4");
	kc_resp_release(&resp);
	json_decref(patch);

	patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "s", "1");
	expect_answer(kc_patch(l->c, &KC_CONFIGMAPS, l->ns, "crud", NULL, KC_PATCH_STRATEGIC, patch,
	                       NULL, &resp, &e_),
	              &resp, 200);
	assert_string_equal(jx_label(resp.body, "s"), "1");
	kc_resp_release(&resp);
	json_decref(patch);
	free(rv);
	json_decref(obj);
	json_decref(cm);
}

static void test_kube__live_json_patch_failed_test_is_an_answer(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_resp resp = {0};
	json_t *cm = configmap("guarded", "owner", "a"), *patch;
	struct ll_err err = {{0}};

	expect_answer(kc_create(l->c, &KC_CONFIGMAPS, l->ns, cm, &resp, &e_), &resp, 201);
	kc_resp_release(&resp);
	patch = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s}]", "op", "test", "path", "/data/owner",
	                  "value", "b", "op", "replace", "path", "/data/owner", "value", "c");
	assert_int_equal(kc_patch(l->c, &KC_CONFIGMAPS, l->ns, "guarded", NULL, KC_PATCH_JSON,
	                          patch, NULL, &resp, &err),
	                 0);
	if (resp.http_status != 422 && resp.http_status != 409)
		fail_msg("failed test op: HTTP %ld %s", resp.http_status, resp.status.message);
	assert_int_equal(resp.status.code, resp.http_status);
	assert_true(resp.status.message[0] != '\0');
	kc_resp_release(&resp);
	expect_answer(kc_get(l->c, &KC_CONFIGMAPS, l->ns, "guarded", &resp, &e_), &resp, 200);
	assert_string_equal(jx_str(resp.body, "data", "owner", NULL), "a");
	kc_resp_release(&resp);
	json_decref(patch);
	json_decref(cm);
}

static void test_kube__live_apply_is_idempotent(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_resp resp = {0};
	json_t *cm = configmap("applied", "k", "v");
	char *rv;

	expect_answer(kc_apply(l->c, &KC_CONFIGMAPS, l->ns, "applied", NULL, cm, "kc-test", true,
	                       &resp, &e_),
	              &resp, 201);
	rv = strdup(jx_resource_version(resp.body));
	kc_resp_release(&resp);
	expect_answer(kc_apply(l->c, &KC_CONFIGMAPS, l->ns, "applied", NULL, cm, "kc-test", true,
	                       &resp, &e_),
	              &resp, 200);
	assert_string_equal(jx_resource_version(resp.body), rv);
	kc_resp_release(&resp);
	free(rv);
	json_decref(cm);
}

static void test_kube__live_apply_conflict_names_the_manager(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_resp resp = {0};
	json_t *a = configmap("contested", "k", "from-a"),
	       *b = configmap("contested", "k", "from-b");

	expect_answer(kc_apply(l->c, &KC_CONFIGMAPS, l->ns, "contested", NULL, a, "manager-a",
	                       false, &resp, &e_),
	              &resp, 201);
	kc_resp_release(&resp);
	expect_answer(kc_apply(l->c, &KC_CONFIGMAPS, l->ns, "contested", NULL, b, "manager-b",
	                       false, &resp, &e_),
	              &resp, 409);
	assert_string_equal(resp.status.reason, "Conflict");
	if (strstr(resp.status.message, "manager-a") == NULL)
		fail_msg("conflict message does not name manager-a: %s", resp.status.message);
	kc_resp_release(&resp);
	expect_answer(kc_apply(l->c, &KC_CONFIGMAPS, l->ns, "contested", NULL, b, "manager-b", true,
	                       &resp, &e_),
	              &resp, 200);
	assert_string_equal(jx_str(resp.body, "data", "k", NULL), "from-b");
	kc_resp_release(&resp);
	json_decref(a);
	json_decref(b);
}

static void test_kube__live_apply_dry_run_and_as_another_user(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_resp resp = {0};
	json_t *cm = configmap("dry", "k", "v");
	struct kc_apply_opts dry = {.field_manager = "kc-test", .dry_run = true};
	struct kc_apply_opts as = {.field_manager = "kc-test", .as_user = "kc-test-nobody"};

	/* a dry run answers as if it applied and stores nothing */
	expect_answer(kc_apply_with(l->c, &KC_CONFIGMAPS, l->ns, "dry", cm, &dry, &resp, &e_),
	              &resp, 201);
	assert_string_equal(jx_str(resp.body, "data", "k", NULL), "v");
	kc_resp_release(&resp);
	expect_answer(kc_get(l->c, &KC_CONFIGMAPS, l->ns, "dry", &resp, &e_), &resp, 404);
	kc_resp_release(&resp);
	/* as a user with no rights: RBAC judges that user, not the client */
	expect_answer(kc_apply_with(l->c, &KC_CONFIGMAPS, l->ns, "dry", cm, &as, &resp, &e_), &resp,
	              403);
	if (strstr(resp.status.message, "kc-test-nobody") == NULL)
		fail_msg("the refusal does not name the impersonated user: %s",
		         resp.status.message);
	kc_resp_release(&resp);
	json_decref(cm);
}

static void test_kube__live_delete_preconditions(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_resp resp = {0};
	json_t *cm = configmap("doomed", "k", "v");
	struct kc_delete_opts o = {.precondition_uid = "00000000-0000-0000-0000-000000000000",
	                           .grace_seconds = -1};
	char *uid;

	expect_answer(kc_create(l->c, &KC_CONFIGMAPS, l->ns, cm, &resp, &e_), &resp, 201);
	uid = strdup(jx_uid(resp.body));
	kc_resp_release(&resp);
	expect_answer(kc_delete(l->c, &KC_CONFIGMAPS, l->ns, "doomed", &o, &resp, &e_), &resp, 409);
	assert_string_equal(resp.status.reason, "Conflict");
	assert_non_null(strstr(resp.status.message, "recondition"));
	kc_resp_release(&resp);
	o.precondition_uid = uid;
	o.propagation = "Background";
	expect_answer(kc_delete(l->c, &KC_CONFIGMAPS, l->ns, "doomed", &o, &resp, &e_), &resp, 200);
	kc_resp_release(&resp);
	expect_answer(kc_delete(l->c, &KC_CONFIGMAPS, l->ns, "doomed", NULL, &resp, &e_), &resp,
	              404);
	assert_string_equal(resp.status.reason, "NotFound");
	kc_resp_release(&resp);
	free(uid);
	json_decref(cm);
}

/* Callbacks record what they saw and never assert: a longjmp out of the client would wedge it. */
struct items {
	int n;
	int nameless;
	int stop_at;
	json_t *kept;
};

static int count_item(json_t *item, void *ud)
{
	struct items *it = ud;

	if (jx_name(item) == NULL)
		it->nameless++;
	if (it->n++ == 0)
		it->kept = json_incref(item);
	return it->stop_at && it->n >= it->stop_at ? 42 : 0;
}

static void create_labelled(struct live *l, const struct kc_gvr *gvr, const char *prefix, int n,
                            const char *label)
{
	struct kc_resp resp = {0};
	char name[64];

	for (int i = 0; i < n; i++) {
		json_t *obj;

		snprintf(name, sizeof(name), "%s-%02d", prefix, i);
		obj = json_pack("{s:s,s:s,s:{s:s,s:{s:s}}}", "apiVersion", "v1", "kind", gvr->kind,
		                "metadata", "name", name, "labels", "set", label);
		if (gvr == &KC_PODTEMPLATES)
			json_object_set_new(obj, "template",
			                    json_pack("{s:{s:[{s:s,s:s}]}}", "spec", "containers",
			                              "name", "c", "image", "busybox"));
		expect_answer(kc_create(l->c, gvr, l->ns, obj, &resp, &e_), &resp, 201);
		kc_resp_release(&resp);
		json_decref(obj);
	}
}

static double list_pages(void)
{
	char labels[128];

	return metrics_get("landlord_api_requests_total",
	                   metrics_labels(labels, sizeof(labels), "client", "main", "verb", "LIST",
	                                  "code", "200", NULL));
}

static void test_kube__live_list_paginates(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_list_opts o = {.label_selector = "set=page", .limit = 10};
	struct kc_resp resp = {0};
	struct items it = {0};
	char *rv = NULL;
	double pages;

	create_labelled(l, &KC_CONFIGMAPS, "page", 25, "page");
	pages = list_pages();
	expect_answer(kc_list(l->c, &KC_CONFIGMAPS, l->ns, &o, count_item, &it, &rv, &resp, &e_),
	              &resp, 200);
	assert_int_equal(it.n, 25);
	assert_int_equal(it.nameless, 0);
	assert_true(list_pages() == pages + 3);
	assert_non_null(rv);
	assert_true(strtoull(rv, NULL, 10) > 0);
	/* an item kept with json_incref() outlives the page */
	assert_string_equal(jx_name(it.kept), "page-00");
	json_decref(it.kept);
	kc_resp_release(&resp);
	free(rv);

	/* the callback's value stops the listing */
	it = (struct items){.stop_at = 12};
	rv = (char *)1;
	assert_int_equal(
	        kc_list(l->c, &KC_CONFIGMAPS, l->ns, &o, count_item, &it, &rv, &resp, NULL), 42);
	assert_int_equal(it.n, 12);
	assert_null(rv);
	json_decref(it.kept);
	kc_resp_release(&resp);

	/* metadata-only */
	it = (struct items){0};
	o.accept = KC_ACCEPT_METADATA;
	o.limit = 0;
	expect_answer(kc_list(l->c, &KC_CONFIGMAPS, l->ns, &o, count_item, &it, NULL, &resp, &e_),
	              &resp, 200);
	assert_int_equal(it.n, 25);
	assert_string_equal(jx_str(it.kept, "kind", NULL), "PartialObjectMetadata");
	assert_null(json_object_get(it.kept, "data"));
	json_decref(it.kept);
	kc_resp_release(&resp);
}

/*
 * tests/cluster/etcd-compact.sh: next to $LANDLORD_TEST_DATA (tests/data), this source file or
 * the executable (build/<dir>/test_kube), else relative to the working directory.
 */
static bool find_compact_script(char *out, size_t len)
{
	const char *data = getenv("LANDLORD_TEST_DATA");
	const char *file = __FILE__, *slash = strrchr(file, '/');
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *exe_slash;

	if (data && *data) {
		snprintf(out, len, "%s/../cluster/etcd-compact.sh", data);
		if (access(out, R_OK) == 0)
			return true;
	}
	if (slash && file[0] == '/') {
		snprintf(out, len, "%.*s/../cluster/etcd-compact.sh", (int)(slash - file), file);
		if (access(out, R_OK) == 0)
			return true;
	}
	exe[n > 0 ? n : 0] = '\0';
	exe_slash = strrchr(exe, '/');
	if (exe_slash) {
		*exe_slash = '\0';
		snprintf(out, len, "%s/../../tests/cluster/etcd-compact.sh", exe);
		if (access(out, R_OK) == 0)
			return true;
	}
	snprintf(out, len, "tests/cluster/etcd-compact.sh");
	return access(out, R_OK) == 0;
}

/* Compact etcd to its current revision, so older resourceVersions are gone (410). */
static int compact_etcd(const char *state_dir)
{
	char script[1024], *argv[] = {"bash", script, (char *)state_dir, NULL};
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, rc;

	if (!find_compact_script(script, sizeof(script)))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0); /* it prints the rev */
	rc = posix_spawnp(&pid, "bash", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return -1;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return 0;
}

struct compact_ctx {
	struct live *l;
	int n;
	int failed; /* no asserts inside a callback: a longjmp out of kc_list() would wedge it */
};

/* After the first page: write something, then compact away the list's revision. */
static int compact_after_first(json_t *item, void *ud)
{
	struct compact_ctx *cc = ud;
	struct kc_resp resp = {0};
	json_t *cm;

	if (cc->n++ != 0)
		return 0;
	cm = configmap("bump", "k", "v");
	if (kc_create(cc->l->c, &KC_CONFIGMAPS, cc->l->ns, cm, &resp, NULL) != 0 ||
	    resp.http_status != 201)
		cc->failed = 1;
	kc_resp_release(&resp);
	json_decref(cm);
	if (compact_etcd(cc->l->state_dir) != 0)
		cc->failed = 2;
	return 0;
}

/*
 * Page 2 is requested before page 1 is handed out, so it may still be served from before the
 * compaction; page 3 is requested afterwards and is refused.
 */
static void test_kube__live_expired_continue_is_a_410_answer(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_list_opts o = {.label_selector = "set=cont", .limit = 1};
	struct compact_ctx cc = {.l = l};
	struct kc_resp resp = {0};
	char *rv = (char *)1;

	if (l->state_dir[0] == '\0')
		skip();
	create_labelled(l, &KC_PODTEMPLATES, "cont", 4, "cont");
	expect_answer(kc_list(l->c, &KC_PODTEMPLATES, l->ns, &o, compact_after_first, &cc, &rv,
	                      &resp, &e_),
	              &resp, 410);
	assert_int_equal(cc.failed, 0);
	assert_in_range(cc.n, 1, 2);
	assert_null(rv);
	assert_string_equal(resp.status.reason, "Expired");
	kc_resp_release(&resp);
}

static double live_lists(void)
{
	char labels[128];

	return list_pages() + metrics_get("landlord_api_requests_total",
	                                  metrics_labels(labels, sizeof(labels), "client", "main",
	                                                 "verb", "LIST", "code", "<error>", NULL));
}

struct ordered {
	int n;
	int out_of_order;
	int stop_at;
};

static int on_ordered_item(json_t *item, void *ud)
{
	struct ordered *o = ud;
	char want[32];

	snprintf(want, sizeof(want), "pipe-%02d", o->n++);
	if (jx_name(item) == NULL || strcmp(jx_name(item), want) != 0)
		o->out_of_order++;
	return o->stop_at && o->n == o->stop_at ? 9 : 0;
}

static void test_kube__live_list_pipelined_pages_in_order(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_list_opts lo = {.label_selector = "set=pipe", .limit = 7};
	struct kc_resp resp = {0};
	struct ordered o = {0};
	char *rv = NULL;
	double pages;

	create_labelled(l, &KC_CONFIGMAPS, "pipe", 50, "pipe");
	pages = list_pages();
	expect_answer(
	        kc_list(l->c, &KC_CONFIGMAPS, l->ns, &lo, on_ordered_item, &o, &rv, &resp, &e_),
	        &resp, 200);
	/* every item exactly once, in the server's (name) order, over 8 pages */
	assert_int_equal(o.n, 50);
	assert_int_equal(o.out_of_order, 0);
	assert_true(list_pages() == pages + 8);
	assert_non_null(rv);
	free(rv);
	kc_resp_release(&resp);
}

/* With HTTP/2, list pages travel on an HTTP/1.1 connection of their own, reused page after page. */
static void test_kube__live_list_pages_use_their_own_connection(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_list_opts lo = {.label_selector = "set=pipe", .limit = 7};
	struct kc_resp resp = {0};
	struct ordered o = {0};
	struct kc_client *c = NULL;
	struct ll_err err = {{0}};

	if (kc_client_new(&l->cfg, &(struct kc_opts){.qps = -1, .http2 = true}, &c, &err) != 0)
		fail_msg("kc_client_new: %s", err.msg);
	expect_answer(kc_get(c, &KC_NAMESPACES, NULL, l->ns, &resp, &e_), &resp, 200);
	kc_resp_release(&resp);
	assert_int_equal(kc__connects(c), 1);
	expect_answer(kc_list(c, &KC_CONFIGMAPS, l->ns, &lo, on_ordered_item, &o, NULL, &resp, &e_),
	              &resp, 200);
	kc_resp_release(&resp);
	assert_int_equal(o.n, 50);
	assert_int_equal(kc__connects(c), 2);
	/* other requests stay on the multiplexed connection */
	expect_answer(kc_get(c, &KC_NAMESPACES, NULL, l->ns, &resp, &e_), &resp, 200);
	kc_resp_release(&resp);
	assert_int_equal(kc__connects(c), 2);
	kc_client_free(c);
}

static void test_kube__live_list_stop_on_page_two_cancels_page_three(void **state)
{
	struct live *l = live_or_skip(state);
	struct kc_list_opts lo = {.label_selector = "set=pipe", .limit = 7};
	struct kc_resp resp = {0};
	struct ordered o = {.stop_at = 8}; /* the first item of page 2 */
	struct kc_client *c = NULL;
	struct ll_err err = {{0}};
	char *rv = (char *)1;
	double lists;

	/* no rate limit, so page 3 is never held back for a token */
	if (kc_client_new(&l->cfg, &(struct kc_opts){.qps = -1}, &c, &err) != 0)
		fail_msg("kc_client_new: %s", err.msg);
	lists = live_lists();
	assert_int_equal(
	        kc_list(c, &KC_CONFIGMAPS, l->ns, &lo, on_ordered_item, &o, &rv, &resp, NULL), 9);
	assert_int_equal(o.n, 8);
	assert_int_equal(o.out_of_order, 0);
	assert_null(rv);
	/* page 3 was requested before page 2 was handed out, then cancelled or dropped */
	assert_true(live_lists() == lists + 3);
	assert_int_equal(resp.http_status, 200);
	assert_int_equal(json_array_size(json_object_get(resp.body, "items")), 0);
	kc_resp_release(&resp);
	/* the client is still usable */
	expect_answer(kc_get(c, &KC_NAMESPACES, NULL, l->ns, &resp, &e_), &resp, 200);
	kc_resp_release(&resp);
	kc_client_free(c);
}

struct seen {
	pthread_mutex_t lock;
	int added, modified, deleted, bookmarks, errors;
	int error_code;
	bool gated; /* the first event waits until the gate opens (back-pressure) */
	bool gate_open;
	pthread_cond_t gate;
	struct kc_client *c;
	const char *ns;
	const struct kc_gvr *gvr;
	struct kc_watch_opts o;
	struct kc_resp resp;
	struct ll_err err;
	int rc;
};

static int on_seen(enum watch_event_type type, json_t *obj, void *ud)
{
	struct seen *s = ud;
	bool wait = false;

	pthread_mutex_lock(&s->lock);
	switch (type) {
	case WATCH_ADDED:
		s->added++;
		break;
	case WATCH_MODIFIED:
		s->modified++;
		break;
	case WATCH_DELETED:
		s->deleted++;
		break;
	case WATCH_BOOKMARK:
		s->bookmarks += jx_resource_version(obj) != NULL;
		break;
	case WATCH_ERROR:
		s->errors++;
		s->error_code = (int)jx_int(obj, 0, "code", NULL);
		break;
	}
	if (s->added + s->modified + s->deleted == 1) {
		wait = s->gated;
	}
	/* bounded, so a broken test cannot hang forever */
	for (int i = 0; wait && !s->gate_open && i < 600; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->gate, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static void *watch_thread(void *arg)
{
	struct seen *s = arg;

	s->rc = kc_watch(s->c, s->gvr, s->ns, &s->o, on_seen, s, &s->resp, &s->err);
	return NULL;
}

static int seen_get(struct seen *s, const int *field)
{
	int v;

	pthread_mutex_lock(&s->lock);
	v = *field;
	pthread_mutex_unlock(&s->lock);
	return v;
}

static bool wait_for(struct seen *s, const int *field, int want, long long ms)
{
	long long end = clock_mono_ms() + ms;

	while (seen_get(s, field) < want && clock_mono_ms() < end)
		sleep_ms(20);
	return seen_get(s, field) >= want;
}

static char *list_rv(struct live *l, const struct kc_gvr *gvr)
{
	struct kc_resp resp = {0};
	struct items it = {0};
	char *rv = NULL;

	expect_answer(kc_list(l->c, gvr, l->ns, NULL, count_item, &it, &rv, &resp, &e_), &resp,
	              200);
	json_decref(it.kept);
	kc_resp_release(&resp);
	return rv;
}

static void test_kube__live_watch_sees_every_event_type(void **state)
{
	struct live *l = live_or_skip(state);
	struct seen s = {.c = l->c, .ns = l->ns, .gvr = &KC_CONFIGMAPS};
	struct kc_resp resp = {0};
	json_t *cm = configmap("watched", "k", "1"), *patch;
	char *rv = list_rv(l, &KC_CONFIGMAPS);
	pthread_t t;

	pthread_mutex_init(&s.lock, NULL);
	s.o = (struct kc_watch_opts){.resource_version = rv,
	                             .allow_bookmarks = true,
	                             .timeout_seconds = 6,
	                             .label_selector = "w=1"};
	pthread_create(&t, NULL, watch_thread, &s);
	json_object_set_new(json_object_get(cm, "metadata"), "labels",
	                    json_pack("{s:s}", "w", "1"));
	expect_answer(kc_create(l->c, &KC_CONFIGMAPS, l->ns, cm, &resp, &e_), &resp, 201);
	kc_resp_release(&resp);
	patch = json_pack("{s:{s:s}}", "data", "k", "2");
	expect_answer(kc_patch(l->c, &KC_CONFIGMAPS, l->ns, "watched", NULL, KC_PATCH_MERGE, patch,
	                       NULL, &resp, &e_),
	              &resp, 200);
	kc_resp_release(&resp);
	expect_answer(kc_delete(l->c, &KC_CONFIGMAPS, l->ns, "watched", NULL, &resp, &e_), &resp,
	              200);
	kc_resp_release(&resp);
	/* the server ends the watch after timeoutSeconds; a bookmark comes shortly before */
	pthread_join(t, NULL);
	if (s.rc != 0)
		fail_msg("watch: rc %d: %s", s.rc, s.err.msg);
	assert_int_equal(s.resp.http_status, 200);
	assert_int_equal(s.added, 1);
	assert_int_equal(s.modified, 1);
	assert_int_equal(s.deleted, 1);
	assert_true(s.bookmarks >= 1);
	assert_int_equal(s.errors, 0);
	kc_resp_release(&s.resp);
	json_decref(patch);
	json_decref(cm);
	free(rv);
	pthread_mutex_destroy(&s.lock);
}

static void test_kube__live_watch_from_compacted_rv_is_410(void **state)
{
	struct live *l = live_or_skip(state);
	struct seen s = {.c = l->c, .ns = l->ns, .gvr = &KC_PODTEMPLATES};
	struct kc_resp resp = {0};
	char *rv;

	if (l->state_dir[0] == '\0')
		skip();
	pthread_mutex_init(&s.lock, NULL);
	rv = list_rv(l, &KC_PODTEMPLATES);
	create_labelled(l, &KC_PODTEMPLATES, "old", 2, "old");
	assert_int_equal(compact_etcd(l->state_dir), 0);
	s.o = (struct kc_watch_opts){.resource_version = rv, .timeout_seconds = 20};
	watch_thread(&s);
	if (s.rc != 0)
		fail_msg("watch: rc %d: %s", s.rc, s.err.msg);
	/* either form of "too old": an answer, or an ERROR event in a 200 stream */
	if (s.resp.http_status == 410) {
		assert_int_equal(s.resp.status.code, 410);
		assert_int_equal(s.errors, 0);
	} else {
		assert_int_equal(s.resp.http_status, 200);
		assert_int_equal(s.errors, 1);
		assert_int_equal(s.error_code, 410);
	}
	assert_int_equal(s.added, 0);
	kc_resp_release(&s.resp);
	kc_resp_release(&resp);
	free(rv);
	pthread_mutex_destroy(&s.lock);
}

static void test_kube__live_watch_error_answer_has_no_events(void **state)
{
	struct live *l = live_or_skip(state);
	const struct kc_gvr nothing = {"example.invalid", "v1", "nothings", "Nothing", true};
	struct seen s = {.c = l->c, .ns = l->ns, .gvr = &nothing};

	pthread_mutex_init(&s.lock, NULL);
	s.o = (struct kc_watch_opts){.timeout_seconds = 10};
	watch_thread(&s);
	if (s.rc != 0)
		fail_msg("watch: rc %d: %s", s.rc, s.err.msg);
	assert_int_equal(s.resp.http_status, 404);
	assert_int_equal(s.resp.status.code, 404);
	assert_string_equal(s.resp.status.reason, "NotFound");
	kc_resp_release(&s.resp);

	s.gvr = &KC_CONFIGMAPS;
	s.o.label_selector = "a b c";
	watch_thread(&s);
	if (s.rc != 0)
		fail_msg("watch: rc %d: %s", s.rc, s.err.msg);
	assert_int_equal(s.resp.http_status, 400);
	assert_string_equal(s.resp.status.reason, "BadRequest");
	assert_non_null(strstr(s.resp.status.message, "unable to parse requirement"));
	assert_non_null(s.resp.body);
	assert_int_equal(s.added + s.modified + s.deleted + s.bookmarks + s.errors, 0);
	kc_resp_release(&s.resp);
	pthread_mutex_destroy(&s.lock);
}

static void test_kube__live_watch_cancel_and_event_cap(void **state)
{
	struct live *l = live_or_skip(state);
	struct seen s = {.c = l->c, .ns = l->ns, .gvr = &KC_CONFIGMAPS};
	struct kc_resp resp = {0};
	atomic_int cancel = 0;
	char big[4096];
	json_t *cm;
	pthread_t t;
	long long t0;

	pthread_mutex_init(&s.lock, NULL);
	s.o = (struct kc_watch_opts){.cancel = &cancel, .timeout_seconds = 60};
	pthread_create(&t, NULL, watch_thread, &s);
	sleep_ms(300);
	t0 = clock_mono_ms();
	atomic_store(&cancel, 1);
	pthread_join(t, NULL);
	assert_int_equal(s.rc, -ECANCELED);
	assert_true(clock_mono_ms() - t0 < 5000);
	kc_resp_release(&s.resp);

	/* an event over max_event_bytes ends the watch with -EMSGSIZE */
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cm = configmap("big", "k", big);
	s.o = (struct kc_watch_opts){.timeout_seconds = 60, .max_event_bytes = 1024};
	pthread_create(&t, NULL, watch_thread, &s);
	sleep_ms(300);
	expect_answer(kc_create(l->c, &KC_CONFIGMAPS, l->ns, cm, &resp, &e_), &resp, 201);
	kc_resp_release(&resp);
	pthread_join(t, NULL);
	assert_int_equal(s.rc, -EMSGSIZE);
	kc_resp_release(&s.resp);
	json_decref(cm);
	pthread_mutex_destroy(&s.lock);
}

/* A watch whose consumer stalls must not stall the connection's other streams. */
static void test_kube__live_stalled_watch_does_not_block_requests(void **state)
{
	struct live *l = live_or_skip(state);
	struct seen s = {.c = l->c, .ns = l->ns, .gvr = &KC_CONFIGMAPS};
	struct kc_resp resp = {0};
	atomic_int cancel = 0;
	enum { N = 30, SIZE = 400 << 10 };
	char *big = malloc(SIZE + 1), name[32];
	pthread_t t;

	memset(big, 'p', SIZE);
	big[SIZE] = '\0';
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.gate, NULL);
	s.gated = true;
	s.o = (struct kc_watch_opts){
	        .cancel = &cancel, .timeout_seconds = 120, .label_selector = "set=bp"};
	pthread_create(&t, NULL, watch_thread, &s);
	for (int i = 0; i < N; i++) {
		json_t *cm;

		snprintf(name, sizeof(name), "bp-%02d", i);
		cm = configmap(name, "k", big);
		json_object_set_new(json_object_get(cm, "metadata"), "labels",
		                    json_pack("{s:s}", "set", "bp"));
		expect_answer(kc_create(l->c, &KC_CONFIGMAPS, l->ns, cm, &resp, &e_), &resp, 201);
		kc_resp_release(&resp);
		json_decref(cm);
	}
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "bp-%02d", i);
		expect_answer(kc_get(l->c, &KC_CONFIGMAPS, l->ns, name, &resp, &e_), &resp, 200);
		kc_resp_release(&resp);
	}
	/* all that happened while the watch's consumer was stuck in its first event */
	assert_true(wait_for(&s, &s.added, 1, 30000));
	assert_int_equal(seen_get(&s, &s.added), 1);
	pthread_mutex_lock(&s.lock);
	s.gate_open = true;
	pthread_cond_signal(&s.gate);
	pthread_mutex_unlock(&s.lock);
	/* once it goes on, every event arrives */
	if (!wait_for(&s, &s.added, N, 60000))
		fail_msg("only %d of %d events after the stall", seen_get(&s, &s.added), N);
	atomic_store(&cancel, 1);
	pthread_join(t, NULL);
	assert_int_equal(s.rc, -ECANCELED);
	kc_resp_release(&s.resp);
	free(big);
	pthread_cond_destroy(&s.gate);
	pthread_mutex_destroy(&s.lock);
}

struct hammer {
	struct kc_client *c;
	int ok;
};

static void *hammer_thread(void *arg)
{
	struct hammer *h = arg;

	for (int i = 0; i < 25; i++) {
		struct kc_resp resp = {0};

		if (kc_get(h->c, &KC_NAMESPACES, NULL, "default", &resp, NULL) == 0 &&
		    resp.http_status == 200)
			h->ok++;
		kc_resp_release(&resp);
	}
	return NULL;
}

static long hammer(struct live *l, bool http2)
{
	struct kc_opts o = {.qps = -1, .http2 = http2, .client_name = "hammer"};
	struct hammer h[8];
	pthread_t t[8];
	struct kc_client *c;
	long connects;

	assert_int_equal(kc_client_new(&l->cfg, &o, &c, NULL), 0);
	for (int i = 0; i < 8; i++) {
		h[i] = (struct hammer){.c = c};
		pthread_create(&t[i], NULL, hammer_thread, &h[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(h[i].ok, 25);
	}
	connects = kc__connects(c);
	kc_client_free(c);
	return connects;
}

static void test_kube__live_concurrent_requests_share_one_connection(void **state)
{
	struct live *l = live_or_skip(state);

	assert_int_equal(hammer(l, true), 1);
	/* without multiplexing (the default), 8 busy threads need more than one connection */
	assert_true(hammer(l, false) > 1);
}

static void test_kube__live_free_cancels_a_running_watch(void **state)
{
	struct live *l = live_or_skip(state);
	struct seen s = {.ns = l->ns, .gvr = &KC_CONFIGMAPS};
	pthread_t t;

	assert_int_equal(kc_client_new(&l->cfg, NULL, &s.c, NULL), 0);
	pthread_mutex_init(&s.lock, NULL);
	s.o = (struct kc_watch_opts){.timeout_seconds = 60};
	pthread_create(&t, NULL, watch_thread, &s);
	sleep_ms(500);
	kc_client_free(s.c);
	pthread_join(t, NULL);
	assert_int_equal(s.rc, -ECANCELED);
	kc_resp_release(&s.resp);
	pthread_mutex_destroy(&s.lock);
}

static void test_kube__live_bearer_token_file(void **state)
{
	struct live *l = live_or_skip(state);
	char path[] = "/tmp/kc-token-XXXXXX";
	struct kcfg cfg = {.server = l->cfg.server,
	                   .ca_pem = l->cfg.ca_pem,
	                   .ca_pem_len = l->cfg.ca_pem_len,
	                   .token_file = path};
	struct kc_resp resp = {0};
	struct kc_client *c;
	int fd;

	if (l->state_dir[0] == '\0')
		skip(); /* the token is the test cluster's */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "admin-token-0123456789\n", 23), 23);
	close(fd);
	assert_int_equal(kc_client_new(&cfg, NULL, &c, NULL), 0);
	expect_answer(kc_get(c, &KC_NAMESPACES, NULL, "default", &resp, &e_), &resp, 200);
	kc_resp_release(&resp);
	kc_client_free(c);
	/* a wrong token is an answer too */
	cfg.token_file = NULL;
	cfg.token = "wrong-token";
	assert_int_equal(kc_client_new(&cfg, NULL, &c, NULL), 0);
	expect_answer(kc_get(c, &KC_NAMESPACES, NULL, "default", &resp, &e_), &resp, 401);
	assert_string_equal(resp.status.reason, "Unauthorized");
	kc_resp_release(&resp);
	kc_client_free(c);
	unlink(path);
}

static int tls_get(const struct kcfg *cfg, struct kc_resp *resp, struct ll_err *err)
{
	struct kc_client *c;
	int rc;

	assert_int_equal(kc_client_new(cfg, NULL, &c, err), 0);
	rc = kc_get(c, &KC_NAMESPACES, NULL, "default", resp, err);
	kc_client_free(c);
	return rc;
}

static void test_kube__live_tls_verification(void **state)
{
	struct live *l = live_or_skip(state);
	struct kcfg cfg = l->cfg;
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};

	if (l->state_dir[0] == '\0')
		skip(); /* the names are those of the test cluster's serving certificate */
	/* the server is verified under tls-server-name: a name in its certificate works... */
	cfg.tls_server_name = "localhost";
	expect_answer(tls_get(&cfg, &resp, &e_), &resp, 200);
	kc_resp_release(&resp);
	/* ...and a name that is not in it fails verification */
	cfg.tls_server_name = "not-the-apiserver.example";
	assert_int_equal(tls_get(&cfg, &resp, &err), -EPROTO);
	assert_int_equal(resp.http_status, 0);
	/* without the cluster's CA the server is not trusted, unless verification is off */
	cfg.tls_server_name = NULL;
	cfg.ca_pem = NULL;
	cfg.ca_pem_len = 0;
	assert_int_equal(tls_get(&cfg, &resp, &err), -EPROTO);
	cfg.insecure = true;
	expect_answer(tls_get(&cfg, &resp, &e_), &resp, 200);
	kc_resp_release(&resp);
}

int main(void)
{
	const struct CMUnitTest unit[] = {
	        cmocka_unit_test(test_kube__path_core_and_grouped),
	        cmocka_unit_test(test_kube__path_cluster_scoped_ignores_namespace),
	        cmocka_unit_test(test_kube__path_subresource_needs_a_name),
	        cmocka_unit_test(test_kube__path_segments_are_escaped),
	        cmocka_unit_test(test_kube__path_over_cap_is_emsgsize),
	        cmocka_unit_test(test_kube__status_from_a_status_body),
	        cmocka_unit_test(test_kube__status_without_reason_or_code_uses_http),
	        cmocka_unit_test(test_kube__status_from_a_plain_error_body),
	        cmocka_unit_test(test_kube__status_left_empty_for_success),
	        cmocka_unit_test(test_kube__curl_errors_map_to_errno),
	        cmocka_unit_test(test_kube__resp_release_accepts_zeroed),
	        cmocka_unit_test(test_kube__token_request_posts_and_returns_the_token),
	        cmocka_unit_test(test_kube__client_new_rejects_bad_config),
	        cmocka_unit_test(test_kube__connection_refused_is_econnrefused),
	        cmocka_unit_test(test_kube__request_timeout_is_etimedout),
	        cmocka_unit_test(test_kube__bad_arguments_are_einval),
	        cmocka_unit_test(test_kube__free_cancels_blocked_calls),
	        cmocka_unit_test(test_kube__watch_cancel_flag_ends_the_watch),
	        cmocka_unit_test(test_kube__scan_continue_reads_the_list_metadata),
	        cmocka_unit_test(test_kube__scan_continue_never_looks_into_items),
	        cmocka_unit_test(test_kube__scan_continue_unsure_falls_back),
	        cmocka_unit_test(test_kube__scan_continue_agrees_with_the_parser),
	        cmocka_unit_test(test_kube__list_requests_the_next_page_ahead),
	        cmocka_unit_test(
	                test_kube__self_review_asks_about_its_attributes_and_counts_as_review),
	        cmocka_unit_test(test_kube__list_sends_a_resource_version_match_with_its_version),
	        cmocka_unit_test(test_kube__list_parses_first_when_the_scan_is_unsure),
	        cmocka_unit_test(test_kube__list_docs_pages_into_documents),
	        cmocka_unit_test(test_kube__list_stop_cancels_the_page_in_flight),
	        cmocka_unit_test(test_kube__list_gone_page_is_the_answer),
	        cmocka_unit_test(test_kube__list_malformed_page_cancels_the_page_in_flight),
	        cmocka_unit_test(test_kube__list_pages_stay_rate_limited),
	};
	const struct CMUnitTest live[] = {
	        cmocka_unit_test(test_kube__live_get_default_namespace),
	        cmocka_unit_test(test_kube__live_create_get_replace_patch),
	        cmocka_unit_test(test_kube__live_json_patch_failed_test_is_an_answer),
	        cmocka_unit_test(test_kube__live_apply_is_idempotent),
	        cmocka_unit_test(test_kube__live_apply_conflict_names_the_manager),
	        cmocka_unit_test(test_kube__live_apply_dry_run_and_as_another_user),
	        cmocka_unit_test(test_kube__live_delete_preconditions),
	        cmocka_unit_test(test_kube__live_list_paginates),
	        cmocka_unit_test(test_kube__live_expired_continue_is_a_410_answer),
	        cmocka_unit_test(test_kube__live_list_pipelined_pages_in_order),
	        cmocka_unit_test(test_kube__live_list_stop_on_page_two_cancels_page_three),
	        cmocka_unit_test(test_kube__live_list_pages_use_their_own_connection),
	        cmocka_unit_test(test_kube__live_watch_sees_every_event_type),
	        cmocka_unit_test(test_kube__live_watch_from_compacted_rv_is_410),
	        cmocka_unit_test(test_kube__live_watch_error_answer_has_no_events),
	        cmocka_unit_test(test_kube__live_watch_cancel_and_event_cap),
	        cmocka_unit_test(test_kube__live_stalled_watch_does_not_block_requests),
	        cmocka_unit_test(test_kube__live_concurrent_requests_share_one_connection),
	        cmocka_unit_test(test_kube__live_free_cancels_a_running_watch),
	        cmocka_unit_test(test_kube__live_bearer_token_file),
	        cmocka_unit_test(test_kube__live_tls_verification),
	};
	int failed = cmocka_run_group_tests_name("kube", unit, NULL, NULL);

	return failed + cmocka_run_group_tests_name("kube_live", live, live_setup, live_teardown);
}
