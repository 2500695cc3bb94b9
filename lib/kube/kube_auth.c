/*
 * kube_auth.c - the bearer token, the TLS material and the server address.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/kube_internal.h"
#include "kube/kubeconfig.h"

static char *read_token_file(const char *path)
{
	struct buf b = BUF_INIT(TOKEN_FILE_MAX);
	char chunk[4096];
	FILE *f = fopen(path, "re");
	size_t n;
	int rc = 0;

	if (f == NULL)
		return NULL;
	while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		rc = buf_append(&b, chunk, n);
	if (rc || ferror(f)) {
		fclose(f);
		buf_release(&b);
		return NULL;
	}
	fclose(f);
	if (b.p)
		kc__trim_end(b.p);
	return buf_detach(&b);
}

/* A token goes into a header line: no control characters, which could split the header. */
bool kc__header_safe(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	}
	return true;
}

/* The token to send now (caller frees), or NULL. A token file is re-read at most once a minute. */
char *kc__token_dup(struct kc_client *c)
{
	int64_t now;
	char *t;

	if (c->token_file == NULL)
		return xstrdup(c->token);
	pthread_mutex_lock(&c->token_lock);
	now = clock_mono_ns();
	if (c->token_cached == NULL || now - c->token_read_ns >= TOKEN_TTL_NS) {
		t = read_token_file(c->token_file);
		if (t && *t && kc__header_safe(t)) {
			free(c->token_cached);
			c->token_cached = t;
		} else {
			free(t);
			log_warn("cannot read the bearer token file", "{s:s}", "path",
			         c->token_file);
		}
		c->token_read_ns = now;
	}
	t = xstrdup(c->token_cached ? c->token_cached : c->token);
	pthread_mutex_unlock(&c->token_lock);
	return t;
}
static BIO *pem_bio(const char *pem, size_t len)
{
	return len > INT32_MAX ? NULL : BIO_new_mem_buf(pem, (int)len);
}

static int count_certs(const char *pem, size_t len)
{
	BIO *b = pem_bio(pem, len);
	X509 *x;
	int n = 0;

	while (b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		n++;
		X509_free(x);
	}
	BIO_free(b);
	ERR_clear_error();
	return n;
}

static int check_client_cert(const struct kcfg *cfg, struct ll_err *err)
{
	BIO *cb = pem_bio(cfg->cert_pem, cfg->cert_pem_len);
	BIO *kb = pem_bio(cfg->key_pem, cfg->key_pem_len);
	X509 *cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
	EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
	int rc = 0;

	if (cert == NULL)
		rc = ll_err_set(err, -EINVAL, "%s: client certificate is not a PEM certificate",
		                cfg->source ? cfg->source : "kubeconfig");
	else if (key == NULL)
		rc = ll_err_set(err, -EINVAL, "%s: client key is not a PEM private key",
		                cfg->source ? cfg->source : "kubeconfig");
	else if (X509_check_private_key(cert, key) != 1)
		rc = ll_err_set(err, -EINVAL, "%s: client key does not match the certificate",
		                cfg->source ? cfg->source : "kubeconfig");
	X509_free(cert);
	EVP_PKEY_free(key);
	BIO_free(cb);
	BIO_free(kb);
	ERR_clear_error();
	return rc;
}

int kc__check_tls(const struct kcfg *cfg, struct ll_err *err)
{
	const char *src = cfg->source ? cfg->source : "kubeconfig";

	if (cfg->ca_pem && count_certs(cfg->ca_pem, cfg->ca_pem_len) == 0)
		return ll_err_set(err, -EINVAL,
		                  "%s: certificate authority holds no PEM certificate", src);
	if (!cfg->cert_pem != !cfg->key_pem)
		return ll_err_set(err, -EINVAL, "%s: client certificate and key go together", src);
	return cfg->cert_pem ? check_client_cert(cfg, err) : 0;
}

/* c->base from the server URL; with a tls-server-name, connect to the server under that name. */
int kc__set_base(struct kc_client *c, const struct kcfg *cfg, struct ll_err *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *url = NULL;
	size_t len;
	int rc = -EINVAL;

	if (u == NULL || curl_url_set(u, CURLUPART_URL, cfg->server, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
		ll_err_set(err, rc, "invalid server URL \"%.200s\"", cfg->server);
		goto out;
	}
	if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0) {
		ll_err_set(err, rc, "server URL \"%.200s\" is not http(s)", cfg->server);
		goto out;
	}
	if (cfg->tls_server_name && *cfg->tls_server_name &&
	    strcmp(cfg->tls_server_name, host) != 0) {
		char *entry = xasprintf("%s:%s:%s:%s", cfg->tls_server_name, port, host, port);

		kc__headers_add(&c->connect_to, entry);
		free(entry);
		if (curl_url_set(u, CURLUPART_HOST, cfg->tls_server_name, 0) ||
		    curl_url_get(u, CURLUPART_URL, &url, 0)) {
			ll_err_set(err, rc, "invalid tls-server-name \"%.200s\"",
			           cfg->tls_server_name);
			goto out;
		}
	}
	c->base = xstrdup(url ? url : cfg->server);
	len = strlen(c->base);
	while (len && c->base[len - 1] == '/')
		c->base[--len] = '\0';
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(url);
	curl_url_cleanup(u);
	return rc;
}

void kc__blob_dup(struct curl_blob *b, const char *data, size_t len)
{
	if (data == NULL)
		return;
	b->data = xmalloc(len ? len : 1);
	memcpy(b->data, data, len);
	b->len = len;
	b->flags = CURL_BLOB_NOCOPY; /* the client outlives every easy handle */
}
