/*
 * test_tls.c - the HTTP server's certificate swapped while it serves (lib/http/tls.c): TLS
 * clients handshaking in a loop never fail across swaps and see the new certificate; a
 * connection made before a swap keeps working; pairs that do not load or match are refused and
 * the pair in force stays. Certificates come from the openssl CLI: two CAs, one serving
 * certificate for 127.0.0.1 from each.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "http/server.h"

#define SWAPS 40

extern char **environ;

static const char MAKE_CERTS[] =
        "set -e; cd \"$0\"; printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n'"
        " > ext; for n in 1 2; do"
        " openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
        " -subj /CN=ca$n -keyout ca$n.key -out ca$n.pem 2>/dev/null;"
        " openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=s$n"
        " -keyout s$n.key -out s$n.csr 2>/dev/null;"
        " openssl x509 -req -in s$n.csr -CA ca$n.pem -CAkey ca$n.key -CAcreateserial -days 1"
        " -extfile ext -out s$n.pem 2>/dev/null; done; cat ca1.pem ca2.pem > bundle.pem";

struct fixture {
	char dir[64];
	char bundle[128];
	struct buf cert[2], key[2];
	struct http_server *s;
	char url[128];
};

static int h_ping(void *ud, struct http_req *req, struct http_resp *resp)
{
	buf_append_str(http_resp_body(resp), "ok");
	return 200;
}

static void read_pair(struct fixture *f, int i)
{
	char path[128];

	f->cert[i] = (struct buf)BUF_INIT(1 << 16);
	f->key[i] = (struct buf)BUF_INIT(1 << 16);
	snprintf(path, sizeof(path), "%s/s%d.pem", f->dir, i + 1);
	assert_int_equal(buf_read_file(&f->cert[i], path, false), 0);
	snprintf(path, sizeof(path), "%s/s%d.key", f->dir, i + 1);
	assert_int_equal(buf_read_file(&f->key[i], path, false), 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char *argv[] = {"sh", "-c", (char *)MAKE_CERTS, f->dir, NULL};
	int status = -1;
	pid_t pid;

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_tls.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(posix_spawnp(&pid, "sh", NULL, NULL, argv, environ), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(f->bundle, sizeof(f->bundle), "%s/bundle.pem", f->dir);
	read_pair(f, 0);
	read_pair(f, 1);
	f->s = http_server_new(&(struct http_server_opts){.cert_pem = buf_cstr(&f->cert[0]),
	                                                  .key_pem = buf_cstr(&f->key[0])});
	assert_int_equal(http_server_route(f->s, &(struct http_route){.path = "/", .fn = h_ping}),
	                 0);
	assert_int_equal(http_server_start(f->s, NULL), 0);
	snprintf(f->url, sizeof(f->url), "https://127.0.0.1:%d/", http_server_port(f->s));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char *argv[] = {"rm", "-rf", f->dir, NULL};
	pid_t pid;

	http_server_free(f->s);
	for (int i = 0; i < 2; i++) {
		buf_release(&f->cert[i]);
		buf_release(&f->key[i]);
	}
	if (posix_spawnp(&pid, "rm", NULL, NULL, argv, environ) == 0)
		waitpid(pid, NULL, 0);
	free(f);
	return 0;
}

static size_t sink(char *data, size_t size, size_t n, void *ud)
{
	return size * n;
}

/* One request on @h; the issuer's CN ("ca1", "ca2") into @issuer. Return: curl's code. */
static CURLcode get(CURL *h, const struct fixture *f, char *issuer, size_t len)
{
	struct curl_certinfo *ci = NULL;
	long status = 0;
	CURLcode rc;

	curl_easy_setopt(h, CURLOPT_URL, f->url);
	curl_easy_setopt(h, CURLOPT_CAINFO, f->bundle);
	curl_easy_setopt(h, CURLOPT_CERTINFO, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (rc == CURLE_OK && status != 200)
		rc = CURLE_HTTP_RETURNED_ERROR;
	issuer[0] = '\0';
	if (rc == CURLE_OK && curl_easy_getinfo(h, CURLINFO_CERTINFO, &ci) == CURLE_OK && ci &&
	    ci->num_of_certs > 0)
		for (struct curl_slist *l = ci->certinfo[0]; l; l = l->next)
			if (strncmp(l->data, "Issuer:", 7) == 0 && strstr(l->data, "CN = ca"))
				snprintf(issuer, len, "%s", strstr(l->data, "CN = ca") + 5);
	return rc;
}

struct loop {
	const struct fixture *f;
	atomic_bool stop;
	atomic_int ok, failed, seen[2];
};

/* Handshake after handshake, each on a new connection, until told to stop. */
static void *client_loop(void *arg)
{
	struct loop *l = arg;
	char issuer[16];
	CURL *h = curl_easy_init();

	curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
	while (!atomic_load(&l->stop)) {
		if (get(h, l->f, issuer, sizeof(issuer)) != CURLE_OK) {
			atomic_fetch_add(&l->failed, 1);
			continue;
		}
		atomic_fetch_add(&l->ok, 1);
		if (strcmp(issuer, "ca1") == 0 || strcmp(issuer, "ca2") == 0)
			atomic_fetch_add(&l->seen[issuer[2] - '1'], 1);
	}
	curl_easy_cleanup(h);
	return NULL;
}

static void test_tls__handshakes_never_fail_across_certificate_swaps(void **state)
{
	struct fixture *f = *state;
	struct loop l = {.f = f};
	pthread_t t[2];
	struct ll_err err = {{0}};

	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, client_loop, &l), 0);
	for (int i = 0; i < SWAPS; i++) {
		int n = atomic_load(&l.ok);
		const struct buf *c = &f->cert[(i + 1) % 2], *k = &f->key[(i + 1) % 2];

		assert_int_equal(http_server_set_cert(f->s, buf_cstr(c), buf_cstr(k), &err), 0);
		/* let a few handshakes through before the next swap (a guard, not a timing) */
		for (int w = 0; w < 2000 && atomic_load(&l.ok) < n + 3; w++)
			nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	atomic_store(&l.stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&l.failed), 0);
	assert_true(atomic_load(&l.ok) >= SWAPS);
	assert_true(atomic_load(&l.seen[0]) > 0);
	assert_true(atomic_load(&l.seen[1]) > 0);
}

static void test_tls__a_connection_made_before_a_swap_keeps_working(void **state)
{
	struct fixture *f = *state;
	char issuer[16];
	CURL *kept = curl_easy_init(), *fresh = curl_easy_init();
	long conns = 0;

	assert_int_equal(get(kept, f, issuer, sizeof(issuer)), CURLE_OK);
	assert_string_equal(issuer, "ca1");
	assert_int_equal(
	        http_server_set_cert(f->s, buf_cstr(&f->cert[1]), buf_cstr(&f->key[1]), NULL), 0);
	/* the kept-alive connection: same connection, same certificate */
	assert_int_equal(get(kept, f, issuer, sizeof(issuer)), CURLE_OK);
	curl_easy_getinfo(kept, CURLINFO_NUM_CONNECTS, &conns);
	assert_int_equal(conns, 0);
	/* a new connection: the new certificate */
	assert_int_equal(get(fresh, f, issuer, sizeof(issuer)), CURLE_OK);
	assert_string_equal(issuer, "ca2");
	curl_easy_cleanup(kept);
	curl_easy_cleanup(fresh);
}

static void test_tls__pairs_that_do_not_load_or_match_are_refused(void **state)
{
	struct fixture *f = *state;
	struct ll_err err = {{0}};
	char issuer[16];
	CURL *h = curl_easy_init();
	struct http_server *plain;

	assert_int_equal(
	        http_server_set_cert(f->s, buf_cstr(&f->cert[1]), buf_cstr(&f->key[0]), &err),
	        -EINVAL);
	assert_string_equal(err.msg, "the TLS key does not match the certificate");
	assert_int_equal(http_server_set_cert(f->s, "not a cert", buf_cstr(&f->key[0]), &err),
	                 -EINVAL);
	assert_non_null(strstr(err.msg, "the TLS certificate chain does not load: "));
	assert_int_equal(http_server_set_cert(f->s, buf_cstr(&f->cert[1]), "nor a key", &err),
	                 -EINVAL);
	assert_non_null(strstr(err.msg, "the TLS key does not load: "));
	assert_int_equal(http_server_set_cert(f->s, "", "", &err), -EINVAL);
	/* what was served is still served */
	curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
	assert_int_equal(get(h, f, issuer, sizeof(issuer)), CURLE_OK);
	assert_string_equal(issuer, "ca1");
	curl_easy_cleanup(h);
	/* a plain server cannot turn TLS on once started */
	plain = http_server_new(NULL);
	assert_int_equal(http_server_start(plain, NULL), 0);
	assert_int_equal(
	        http_server_set_cert(plain, buf_cstr(&f->cert[0]), buf_cstr(&f->key[0]), &err),
	        -EINVAL);
	assert_non_null(strstr(err.msg, "started without TLS"));
	http_server_free(plain);
}

static void test_tls__a_pair_set_before_start_turns_tls_on(void **state)
{
	struct fixture *f = *state;
	struct http_server *s = http_server_new(NULL);
	struct fixture g = *f;
	char issuer[16];
	CURL *h = curl_easy_init();

	assert_int_equal(http_server_route(s, &(struct http_route){.path = "/", .fn = h_ping}), 0);
	assert_int_equal(http_server_set_cert(s, buf_cstr(&f->cert[1]), buf_cstr(&f->key[1]), NULL),
	                 0);
	assert_int_equal(http_server_start(s, NULL), 0);
	snprintf(g.url, sizeof(g.url), "https://127.0.0.1:%d/", http_server_port(s));
	assert_int_equal(get(h, &g, issuer, sizeof(issuer)), CURLE_OK);
	assert_string_equal(issuer, "ca2");
	curl_easy_cleanup(h);
	http_server_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(
	                test_tls__handshakes_never_fail_across_certificate_swaps, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tls__a_connection_made_before_a_swap_keeps_working, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_tls__pairs_that_do_not_load_or_match_are_refused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_tls__a_pair_set_before_start_turns_tls_on,
	                                        setup, teardown),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
