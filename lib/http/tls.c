/*
 * tls.c - the server's certificate, chosen per handshake so that it can change while the
 * server runs (http_server_set_cert(), see server.h).
 *
 * libmicrohttpd hands GnuTLS a retrieve function (MHD_OPTION_HTTPS_CERT_CALLBACK2) instead of a
 * fixed certificate. The function has no user pointer, so the connection-start notification
 * (which libmicrohttpd runs on the server thread after making the TLS session and before the
 * handshake's first byte) stores the server in the session (gnutls_session_set_ptr). Each
 * handshake then imports the current PEM pair under tls_mu into fresh GnuTLS objects that it
 * hands over with GNUTLS_CERT_RETR_DEINIT_ALL: GnuTLS frees them when the session is done, so a
 * swap never frees what a handshake in progress or an established session still uses.
 *
 * Client certificates: MHD_OPTION_HTTPS_MEM_TRUST. libmicrohttpd 0.9.75 loads the bundle into
 * its credentials at start (gnutls_certificate_set_x509_trust_mem(), next to the retrieve
 * function) and calls gnutls_certificate_server_set_request(GNUTLS_CERT_REQUEST) on every
 * session, so each handshake asks for a certificate and names those CAs. It sets no verify
 * callback, and GnuTLS verifies a client's chain during the handshake only through one
 * (_gnutls_run_verify_callback()): any certificate, or none, is let through. The handler reads
 * what came with http_req_peer_cert() (gnutls_certificate_get_peers(): DER, leaf first).
 */
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "http/server.h"
#include "http/server_internal.h"

#define CHAIN_MAX 8 /* certificates in a served chain */

static gnutls_datum_t datum(const char *pem)
{
	return (gnutls_datum_t){(unsigned char *)pem, (unsigned int)strlen(pem)};
}

static void chain_free(gnutls_pcert_st *chain, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		gnutls_pcert_deinit(&chain[i]);
	gnutls_free(chain);
}

/* The public key of @key, DER, into @out (gnutls_free it). */
static int key_public_der(gnutls_privkey_t key, gnutls_datum_t *out)
{
	gnutls_pubkey_t pub = NULL;
	int rc = gnutls_pubkey_init(&pub);

	if (rc == 0)
		rc = gnutls_pubkey_import_privkey(pub, key, 0, 0);
	if (rc == 0)
		rc = gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, out);
	gnutls_pubkey_deinit(pub);
	return rc;
}

static bool key_matches(gnutls_pcert_st *leaf, gnutls_privkey_t key)
{
	gnutls_datum_t a = {0}, b = {0};
	bool same = gnutls_pubkey_export2(leaf->pubkey, GNUTLS_X509_FMT_DER, &a) == 0 &&
	            key_public_der(key, &b) == 0 && a.size == b.size &&
	            memcmp(a.data, b.data, a.size) == 0;

	gnutls_free(a.data);
	gnutls_free(b.data);
	return same;
}

/* Import a PEM pair into new GnuTLS objects. Return: 0, or -EINVAL with the reason. */
static int import_pair(const char *cert_pem, const char *key_pem, gnutls_pcert_st **chain_out,
                       unsigned int *n_out, gnutls_privkey_t *key_out, struct ll_err *err)
{
	gnutls_pcert_st *chain = gnutls_calloc(CHAIN_MAX, sizeof(*chain));
	gnutls_datum_t c = datum(cert_pem), k = datum(key_pem);
	gnutls_privkey_t key = NULL;
	unsigned int n = CHAIN_MAX;
	int rc;

	if (chain == NULL)
		return ll_err_set(err, -ENOMEM, "out of memory for a certificate chain");
	rc = gnutls_pcert_list_import_x509_raw(chain, &n, &c, GNUTLS_X509_FMT_PEM, 0);
	if (rc < 0) {
		gnutls_free(chain);
		return ll_err_set(err, -EINVAL, "the TLS certificate chain does not load: %s",
		                  gnutls_strerror(rc));
	}
	rc = gnutls_privkey_init(&key);
	if (rc == 0)
		rc = gnutls_privkey_import_x509_raw(key, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (rc < 0)
		rc = ll_err_set(err, -EINVAL, "the TLS key does not load: %s", gnutls_strerror(rc));
	else if (!key_matches(&chain[0], key))
		rc = ll_err_set(err, -EINVAL, "the TLS key does not match the certificate");
	if (rc < 0) {
		gnutls_privkey_deinit(key);
		chain_free(chain, n);
		return rc;
	}
	*chain_out = chain;
	*n_out = n;
	*key_out = key;
	return 0;
}

/* GnuTLS asks, during a handshake, what to present: the pair current at this moment. */
static int retrieve(gnutls_session_t session, const struct gnutls_cert_retr_st *info,
                    gnutls_pcert_st **certs, unsigned int *n, gnutls_ocsp_data_st **ocsp,
                    unsigned int *ocsp_n, gnutls_privkey_t *key, unsigned int *flags)
{
	struct http_server *s = gnutls_session_get_ptr(session);
	int rc;

	*ocsp = NULL;
	*ocsp_n = 0;
	*flags = GNUTLS_CERT_RETR_DEINIT_ALL;
	if (s == NULL)
		return -1; /* a session the notification did not see: refuse it */
	pthread_mutex_lock(&s->tls_mu);
	rc = import_pair(s->cert_pem, s->key_pem, certs, n, key, NULL);
	pthread_mutex_unlock(&s->tls_mu);
	return rc < 0 ? -1 : 0;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *ci;

	if (code != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (ci && ci->tls_session)
		gnutls_session_set_ptr((gnutls_session_t)ci->tls_session, cls);
}

/* The client CA bundle loads and holds at least one certificate. Return: 0 or -EIO. */
static int check_client_ca(const struct http_server *s, struct ll_err *err)
{
	gnutls_datum_t pem = datum(s->client_ca_pem);
	gnutls_x509_crt_t *certs = NULL;
	unsigned int n = 0;
	int rc = gnutls_x509_crt_list_import2(&certs, &n, &pem, GNUTLS_X509_FMT_PEM, 0);

	for (unsigned int i = 0; rc >= 0 && i < n; i++)
		gnutls_x509_crt_deinit(certs[i]);
	gnutls_free(certs);
	if (rc < 0)
		return ll_err_set(err, -EIO, "the %s server's client CA bundle does not load: %s",
		                  s->name, gnutls_strerror(rc));
	if (n == 0)
		return ll_err_set(err, -EIO,
		                  "the %s server's client CA bundle holds no certificate", s->name);
	return 0;
}

int http__tls_options(struct http_server *s, struct MHD_OptionItem *opts, struct ll_err *err)
{
	gnutls_pcert_st *chain = NULL;
	gnutls_privkey_t key = NULL;
	unsigned int n = 0;
	int rc;

	if (s->cert_pem == NULL) {
		opts[0] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
		if (s->client_ca_pem)
			return ll_err_set(err, -EINVAL,
			                  "the %s server has a client CA bundle but no TLS pair",
			                  s->name);
		return 0;
	}
	rc = s->client_ca_pem ? check_client_ca(s, err) : 0;
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->tls_mu);
	rc = import_pair(s->cert_pem, s->key_pem, &chain, &n, &key, err);
	pthread_mutex_unlock(&s->tls_mu);
	if (rc < 0)
		return ll_err_set(err, -EIO, "the %s server's TLS pair is refused: %s", s->name,
		                  err ? err->msg : "");
	gnutls_privkey_deinit(key);
	chain_free(chain, n);
	if (MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK2) != MHD_YES)
		return ll_err_set(err, -EIO, "libmicrohttpd lacks MHD_OPTION_HTTPS_CERT_CALLBACK2");
	opts[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK2, 0, (void *)retrieve};
	opts[1] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s};
	n = 2;
	if (s->client_ca_pem) /* MHD keeps the pointer: s->client_ca_pem outlives the daemon */
		opts[n++] =
		        (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, s->client_ca_pem};
	opts[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	return 0;
}

int http_server_set_cert(struct http_server *s, const char *cert_pem, const char *key_pem,
                         struct ll_err *err)
{
	gnutls_pcert_st *chain = NULL;
	gnutls_privkey_t key = NULL;
	unsigned int n = 0;
	char *old_cert, *old_key;
	int rc;

	if (cert_pem == NULL || key_pem == NULL || !cert_pem[0] || !key_pem[0])
		return ll_err_set(err, -EINVAL, "a certificate and a key are both needed");
	if (s->d && s->cert_pem == NULL)
		return ll_err_set(err, -EINVAL, "the %s server was started without TLS", s->name);
	rc = import_pair(cert_pem, key_pem, &chain, &n, &key, err);
	if (rc < 0)
		return rc;
	gnutls_privkey_deinit(key);
	chain_free(chain, n);
	pthread_mutex_lock(&s->tls_mu);
	old_cert = s->cert_pem;
	old_key = s->key_pem;
	s->cert_pem = xstrdup(cert_pem);
	s->key_pem = xstrdup(key_pem);
	pthread_mutex_unlock(&s->tls_mu);
	free(old_cert);
	free(old_key);
	return 0;
}

/* The client's chain as PEM, leaf first, within the caps; NULL when there is none. */
static char *peer_chain_pem(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t session = ci ? (gnutls_session_t)ci->tls_session : NULL;
	const gnutls_datum_t *der;
	struct buf out = BUF_INIT(HTTP_PEER_PEM_MAX);
	unsigned int n = 0;

	if (session == NULL ||
	    gnutls_certificate_type_get2(session, GNUTLS_CTYPE_PEERS) != GNUTLS_CRT_X509)
		return NULL;
	der = gnutls_certificate_get_peers(session, &n);
	for (unsigned int i = 0; der && i < n && i < HTTP_PEER_CHAIN_MAX; i++) {
		gnutls_datum_t pem = {0};
		int rc = gnutls_pem_base64_encode2("CERTIFICATE", &der[i], &pem);

		if (rc == 0)
			rc = buf_append(&out, pem.data, pem.size);
		gnutls_free(pem.data);
		if (rc < 0)
			break; /* past the cap: the rest of the chain is left out */
	}
	if (out.len == 0) {
		buf_release(&out);
		return NULL;
	}
	return buf_detach(&out);
}

const char *http_req_peer_cert(const struct http_req *r)
{
	struct http_req *m = (struct http_req *)r; /* a cache filled on the first call */

	if (!m->peer_done) {
		m->peer_pem = peer_chain_pem(m->c);
		m->peer_done = true;
	}
	return m->peer_pem;
}
