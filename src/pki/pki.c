/*
 * pki.c - CA and serving certificates, verification, PEM bundles, base64 (see pki.h); client
 * certificates are pki_client.c's, with the helpers of pki_internal.h.
 *
 * OpenSSL objects live only inside one function each: made, used and freed on one exit path.
 * Every failure takes OpenSSL's reason off this thread's error queue into the ll_err and clears
 * the queue, so a later call never reports an earlier call's error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "pki/pki.h"
#include "pki/pki_internal.h"

#define SERIAL_BYTES 16
#define DNS_NAME_MAX 253

/* Fail with @code, @what and OpenSSL's first queued reason; the queue is left empty. */
int pki__ossl_fail(struct ll_err *err, int code, const char *what)
{
	unsigned long e = ERR_get_error();
	char reason[256] = "no reason given";

	if (e)
		ERR_error_string_n(e, reason, sizeof(reason));
	ERR_clear_error();
	return ll_err_set(err, code, "%s: %s", what, reason);
}

void pki_pair_release(struct pki_pair *p)
{
	if (p == NULL)
		return;
	free(p->cert_pem);
	free(p->key_pem);
	p->cert_pem = p->key_pem = NULL;
}

int64_t pki__now_or(int64_t now)
{
	return now ? now : (int64_t)time(NULL);
}

/* ---- reading and writing PEM ---- */

X509 *pki__read_cert(const char *pem, size_t len)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;

	BIO_free(bio);
	return x;
}

static EVP_PKEY *read_key(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)strlen(pem));
	EVP_PKEY *k = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;

	BIO_free(bio);
	return k;
}

/* The contents of a memory BIO as an owned string, or NULL when @ok is false. */
static char *bio_string(BIO *bio, int ok)
{
	char *data = NULL;
	long n = ok > 0 ? BIO_get_mem_data(bio, &data) : 0;
	char *s = n > 0 ? xstrndup(data, (size_t)n) : NULL;

	BIO_free(bio);
	return s;
}

static char *cert_pem(X509 *x)
{
	BIO *bio = BIO_new(BIO_s_mem());

	return bio ? bio_string(bio, PEM_write_bio_X509(bio, x)) : NULL;
}

static char *key_pem(EVP_PKEY *k)
{
	BIO *bio = BIO_new(BIO_s_mem());

	return bio ? bio_string(bio, PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL))
	           : NULL;
}

int pki__encode_pair(X509 *x, EVP_PKEY *key, struct pki_pair *out, const char *what,
                     struct ll_err *err)
{
	out->cert_pem = cert_pem(x);
	out->key_pem = key_pem(key);
	if (out->cert_pem && out->key_pem)
		return 0;
	pki_pair_release(out);
	return pki__ossl_fail(err, -EIO, what);
}

int pki__check_len(const char *pem, size_t max, const char *what, struct ll_err *err)
{
	if (pem == NULL || pem[0] == '\0')
		return ll_err_set(err, -EINVAL, "no %s given", what);
	if (strnlen(pem, max + 1) > max)
		return ll_err_set(err, -EMSGSIZE, "the %s is over %zu bytes", what, max);
	return 0;
}

/* ---- making certificates ---- */

static int set_serial(X509 *x)
{
	unsigned char b[SERIAL_BYTES];
	BIGNUM *bn = NULL;
	int ok = RAND_bytes(b, sizeof(b)) == 1;

	b[0] &= 0x7f;                      /* positive */
	b[sizeof(b) - 1] |= ok ? 0x01 : 0; /* never zero */
	if (ok)
		bn = BN_bin2bn(b, sizeof(b), NULL);
	ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

int pki_random(void *out, size_t n)
{
	if (n <= INT_MAX && RAND_bytes(out, (int)n) == 1)
		return 0;
	memset(out, 0, n);
	ERR_clear_error();
	return -EIO;
}

static int set_times(X509 *x, int64_t now, int64_t lifetime_s, int64_t not_after_max)
{
	int64_t back = lifetime_s / 10 < PKI_BACKDATE_MAX_S ? lifetime_s / 10 : PKI_BACKDATE_MAX_S;
	int64_t end = now + lifetime_s;

	if (not_after_max && end > not_after_max)
		end = not_after_max;
	if (ASN1_TIME_set(X509_getm_notBefore(x), (time_t)(now - back)) == NULL)
		return -1;
	return ASN1_TIME_set(X509_getm_notAfter(x), (time_t)end) ? 0 : -1;
}

int pki__add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ex;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (ex == NULL)
		return -1;
	ok = X509_add_ext(x, ex, -1);
	X509_EXTENSION_free(ex);
	return ok ? 0 : -1;
}

/* A certificate for @key named @cn, to be signed by @issuer (NULL: itself). */
X509 *pki__new_cert(const char *cn, EVP_PKEY *key, X509 *issuer, int64_t now, int64_t life,
                    int64_t not_after_max)
{
	X509 *x = X509_new();
	X509_NAME *name = x ? X509_get_subject_name(x) : NULL;
	int ok = x != NULL && X509_set_version(x, X509_VERSION_3) && set_serial(x) == 0 &&
	         set_times(x, now, life, not_after_max) == 0 && X509_set_pubkey(x, key) &&
	         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn,
	                                    -1, -1, 0) &&
	         X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);

	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static int check_cn(const char *cn, struct ll_err *err)
{
	if (cn == NULL || cn[0] == '\0' || strlen(cn) > PKI_CN_MAX)
		return ll_err_set(err, -EINVAL, "a common name is 1..%d bytes", PKI_CN_MAX);
	return 0;
}

int pki_make_ca(const char *cn, int64_t now, int64_t lifetime_s, struct pki_pair *out,
                struct ll_err *err)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	int rc = check_cn(cn, err);

	if (rc)
		return rc;
	if (lifetime_s <= 0)
		return ll_err_set(err, -EINVAL, "a CA's lifetime must be positive");
	key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	x = key ? pki__new_cert(cn, key, NULL, pki__now_or(now), lifetime_s, 0) : NULL;
	if (x == NULL || pki__add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
	    pki__add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") ||
	    pki__add_ext(x, x, NID_subject_key_identifier, "hash") ||
	    !X509_sign(x, key, EVP_sha256())) {
		rc = pki__ossl_fail(err, -EIO, "cannot make a CA certificate");
		goto out;
	}
	out->cert_pem = cert_pem(x);
	out->key_pem = key_pem(key);
	if (out->cert_pem == NULL || out->key_pem == NULL) {
		pki_pair_release(out);
		rc = pki__ossl_fail(err, -EIO, "cannot encode the CA as PEM");
	}
out:
	ERR_clear_error();
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

/* One SAN entry, checked, appended to "DNS:a,IP:b". */
static int add_san(struct buf *san, const char *kind, const char *v, struct ll_err *err)
{
	unsigned char addr[sizeof(struct in6_addr)];

	if (strcmp(kind, "IP") == 0 && inet_pton(AF_INET, v, addr) != 1 &&
	    inet_pton(AF_INET6, v, addr) != 1)
		return ll_err_set(err, -EINVAL, "\"%s\" is not an IPv4 or IPv6 literal", v);
	if (strcmp(kind, "DNS") == 0) {
		size_t n = strlen(v);

		if (n == 0 || n > DNS_NAME_MAX)
			return ll_err_set(err, -EINVAL, "a DNS name is 1..%d bytes", DNS_NAME_MAX);
		for (size_t i = 0; i < n; i++)
			if (v[i] == ',' || (unsigned char)v[i] <= ' ' || v[i] == 0x7f)
				return ll_err_set(err, -EINVAL,
				                  "DNS name \"%s\" holds a comma, space or control "
				                  "character",
				                  v);
	}
	if (buf_appendf(san, "%s%s:%s", san->len ? "," : "", kind, v) < 0)
		return ll_err_set(err, -EMSGSIZE, "the subjectAltName list is too long");
	return 0;
}

static int build_san(const struct pki_serving_opts *o, struct buf *san, struct ll_err *err)
{
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; rc == 0 && o->dns_names && o->dns_names[i]; i++, n++)
		rc = add_san(san, "DNS", o->dns_names[i], err);
	for (size_t i = 0; rc == 0 && o->ips && o->ips[i]; i++, n++)
		rc = add_san(san, "IP", o->ips[i], err);
	if (rc == 0 && n == 0)
		rc = ll_err_set(err, -EINVAL, "a serving certificate needs a DNS name or an IP");
	if (rc == 0 && n > PKI_NAMES_MAX)
		rc = ll_err_set(err, -EINVAL, "more than %u names for one certificate",
		                PKI_NAMES_MAX);
	return rc;
}

/* Parse and check the CA pair a serving or client certificate is signed with. */
int pki__load_ca(const struct pki_pair *ca, X509 **x, EVP_PKEY **key, struct ll_err *err)
{
	int rc = pki__check_len(ca->cert_pem, PKI_PEM_MAX, "CA certificate", err);

	if (rc == 0)
		rc = pki__check_len(ca->key_pem, PKI_PEM_MAX, "CA key", err);
	if (rc)
		return rc;
	*x = pki__read_cert(ca->cert_pem, strlen(ca->cert_pem));
	*key = read_key(ca->key_pem);
	if (*x == NULL || *key == NULL)
		return pki__ossl_fail(err, -EINVAL, "the CA certificate or key does not parse");
	if (X509_check_ca(*x) != 1 && X509_check_ca(*x) != 3) /* 3: no keyUsage, still a CA */
		return ll_err_set(err, -EINVAL, "the CA certificate is not a CA");
	if (EVP_PKEY_eq(X509_get0_pubkey(*x), *key) != 1) {
		ERR_clear_error();
		return ll_err_set(err, -EINVAL, "the CA key does not match the CA certificate");
	}
	return 0;
}

int64_t pki__asn1_unix(const ASN1_TIME *t)
{
	struct tm tm = {0};

	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
		return 0;
	return (int64_t)timegm(&tm);
}

static int sign_serving(X509 *x, X509 *ca, EVP_PKEY *ca_key, const char *san)
{
	if (pki__add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") ||
	    pki__add_ext(x, ca, NID_key_usage, "critical,digitalSignature") ||
	    pki__add_ext(x, ca, NID_ext_key_usage, "serverAuth") ||
	    pki__add_ext(x, ca, NID_subject_alt_name, san) ||
	    pki__add_ext(x, ca, NID_authority_key_identifier, "keyid:always"))
		return -1;
	return X509_sign(x, ca_key, EVP_sha256()) ? 0 : -1;
}

int pki_make_serving(const struct pki_pair *ca, const struct pki_serving_opts *o,
                     struct pki_pair *out, struct ll_err *err)
{
	struct buf san = BUF_INIT(16u << 10);
	X509 *cax = NULL, *x = NULL;
	EVP_PKEY *ca_key = NULL, *key = NULL;
	const char *cn = o->cn ? o->cn : (o->dns_names ? o->dns_names[0] : NULL);
	int rc = build_san(o, &san, err);

	if (rc == 0 && o->lifetime_s <= 0)
		rc = ll_err_set(err, -EINVAL, "a serving certificate's lifetime must be positive");
	if (rc == 0)
		rc = check_cn(cn ? cn : o->ips[0], err);
	if (rc == 0)
		rc = pki__load_ca(ca, &cax, &ca_key, err);
	if (rc)
		goto out;
	key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	x = key ? pki__new_cert(cn ? cn : o->ips[0], key, cax, pki__now_or(o->now), o->lifetime_s,
	                        pki__asn1_unix(X509_get0_notAfter(cax)))
	        : NULL;
	if (x == NULL || sign_serving(x, cax, ca_key, buf_cstr(&san))) {
		rc = pki__ossl_fail(err, -EIO, "cannot make a serving certificate");
		goto out;
	}
	out->cert_pem = cert_pem(x);
	out->key_pem = key_pem(key);
	if (out->cert_pem == NULL || out->key_pem == NULL) {
		pki_pair_release(out);
		rc = pki__ossl_fail(err, -EIO, "cannot encode the serving certificate as PEM");
	}
out:
	ERR_clear_error();
	buf_release(&san);
	X509_free(cax);
	X509_free(x);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	return rc;
}

/* ---- reading certificates ---- */

static void read_info(X509 *x, struct pki_cert_info *out)
{
	const ASN1_INTEGER *serial = X509_get0_serialNumber(x);
	BIGNUM *bn = ASN1_INTEGER_to_BN(serial, NULL);
	char *hex = bn ? BN_bn2hex(bn) : NULL;

	memset(out, 0, sizeof(*out));
	out->not_before = pki__asn1_unix(X509_get0_notBefore(x));
	out->not_after = pki__asn1_unix(X509_get0_notAfter(x));
	out->is_ca = X509_check_ca(x) != 0;
	X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, out->cn,
	                          sizeof(out->cn));
	if (hex)
		snprintf(out->serial_hex, sizeof(out->serial_hex), "%s", hex);
	OPENSSL_free(hex);
	BN_free(bn);
	ERR_clear_error();
}

int pki_read_cert(const char *pem, size_t len, struct pki_cert_info *out, struct ll_err *err)
{
	X509 *x;

	if (len > PKI_BUNDLE_MAX)
		return ll_err_set(err, -EMSGSIZE, "a certificate text over %u bytes",
		                  PKI_BUNDLE_MAX);
	if (pem == NULL || len == 0)
		return ll_err_set(err, -EINVAL, "no certificate given");
	x = pki__read_cert(pem, len);
	if (x == NULL)
		return pki__ossl_fail(err, -EINVAL, "no certificate could be read");
	read_info(x, out);
	X509_free(x);
	return 0;
}

int pki_check_pair(const struct pki_pair *p, struct ll_err *err)
{
	X509 *x = NULL;
	EVP_PKEY *key = NULL;
	int rc = pki__check_len(p->cert_pem, PKI_PEM_MAX, "certificate", err);

	if (rc == 0)
		rc = pki__check_len(p->key_pem, PKI_PEM_MAX, "key", err);
	if (rc)
		return rc;
	x = pki__read_cert(p->cert_pem, strlen(p->cert_pem));
	key = read_key(p->key_pem);
	if (x == NULL || key == NULL)
		rc = pki__ossl_fail(err, -EINVAL, "the certificate or key does not parse");
	else if (EVP_PKEY_eq(X509_get0_pubkey(x), key) != 1)
		rc = ll_err_set(err, -EKEYREJECTED, "the key does not match the certificate");
	ERR_clear_error();
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

int pki_cert_names(const char *cert_pem, const char *name)
{
	X509 *x = cert_pem ? pki__read_cert(cert_pem, strlen(cert_pem)) : NULL;
	int rc = -EINVAL;

	if (x != NULL) {
		/* an IP literal is checked as an IP SAN, anything else as a DNS name */
		int ip = X509_check_ip_asc(x, name, 0);

		rc = (ip == -2 ? X509_check_host(x, name, 0, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS,
		                                 NULL)
		               : ip) == 1
		             ? 0
		             : -ENOENT;
	}
	ERR_clear_error();
	X509_free(x);
	return rc;
}

static int load_store(X509_STORE *store, const char *bundle_pem, struct ll_err *err)
{
	struct pki_bundle b = {0};
	int rc = pki_bundle_split(bundle_pem, strlen(bundle_pem), &b, err);

	if (rc == 0 && b.n == 0)
		rc = ll_err_set(err, -EINVAL, "the CA bundle holds no certificate");
	for (size_t i = 0; rc == 0 && i < b.n; i++) {
		X509 *ca = pki__read_cert(b.certs[i], strlen(b.certs[i]));

		if (ca == NULL || X509_STORE_add_cert(store, ca) != 1)
			rc = pki__ossl_fail(err, -EIO, "cannot load the CA bundle");
		X509_free(ca);
	}
	pki_bundle_release(&b);
	return rc;
}

int pki__read_leaf(const char *cert_pem, const char *ca_bundle_pem, X509 **x, struct ll_err *err)
{
	int rc = pki__check_len(cert_pem, PKI_PEM_MAX, "certificate", err);

	*x = NULL;
	if (rc == 0)
		rc = pki__check_len(ca_bundle_pem, PKI_BUNDLE_MAX, "CA bundle", err);
	if (rc)
		return rc;
	*x = pki__read_cert(cert_pem, strlen(cert_pem));
	return *x ? 0 : pki__ossl_fail(err, -EINVAL, "the certificate does not parse");
}

int pki__verify_chain(X509 *x, const char *ca_bundle_pem, int64_t at, int purpose,
                      struct ll_err *err)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int rc = 0;

	if (store == NULL || ctx == NULL) {
		rc = pki__ossl_fail(err, -EIO, "cannot make a certificate store");
		goto out;
	}
	rc = load_store(store, ca_bundle_pem, err);
	if (rc)
		goto out;
	if (X509_STORE_CTX_init(ctx, store, x, NULL) != 1) {
		rc = pki__ossl_fail(err, -EIO, "cannot start a verification");
		goto out;
	}
	X509_STORE_CTX_set_time(ctx, 0, (time_t)pki__now_or(at));
	if (purpose)
		X509_STORE_CTX_set_purpose(ctx, purpose);
	if (X509_verify_cert(ctx) != 1)
		rc = ll_err_set(err, -EKEYREJECTED, "the certificate does not verify: %s",
		                X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
out:
	ERR_clear_error();
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return rc;
}

int pki_verify(const char *cert_pem, const char *ca_bundle_pem, int64_t at, bool server,
               struct ll_err *err)
{
	X509 *x = NULL;
	int rc = pki__read_leaf(cert_pem, ca_bundle_pem, &x, err);

	if (rc == 0)
		rc = pki__verify_chain(x, ca_bundle_pem, at, server ? X509_PURPOSE_SSL_SERVER : 0,
		                       err);
	X509_free(x);
	return rc;
}

/* ---- bundles ---- */

void pki_bundle_release(struct pki_bundle *b)
{
	if (b == NULL)
		return;
	for (size_t i = 0; i < b->n; i++)
		free(b->certs[i]);
	b->n = 0;
}

static bool has_exact(const struct pki_bundle *b, const char *pem)
{
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->certs[i], pem) == 0)
			return true;
	return false;
}

/* Keep one more block: @name and @der as PEM_read_bio() gave them. */
static int take_block(struct pki_bundle *b, const char *name, const unsigned char *der, long n,
                      struct ll_err *err)
{
	const unsigned char *p = der;
	X509 *x;
	char *pem;

	if (strcmp(name, PEM_STRING_X509) != 0)
		return ll_err_set(err, -EINVAL,
		                  "a \"%.40s\" block where certificates were expected", name);
	x = d2i_X509(NULL, &p, n);
	if (x == NULL || p != der + n) {
		X509_free(x);
		return pki__ossl_fail(err, -EINVAL, "a certificate in the bundle does not parse");
	}
	pem = cert_pem(x);
	X509_free(x);
	if (pem == NULL)
		return pki__ossl_fail(err, -EIO, "cannot encode a certificate as PEM");
	if (has_exact(b, pem)) {
		free(pem);
		return 0;
	}
	if (b->n == PKI_BUNDLE_CERTS_MAX) {
		free(pem);
		return ll_err_set(err, -EMSGSIZE, "more than %u certificates in a bundle",
		                  PKI_BUNDLE_CERTS_MAX);
	}
	b->certs[b->n++] = pem;
	return 0;
}

/* One PEM block from @bio into @b: 1 when one was read, 0 at the end, or a negative errno. */
static int next_block(BIO *bio, struct pki_bundle *b, struct ll_err *err)
{
	char *name = NULL, *header = NULL;
	unsigned char *der = NULL;
	long n = 0;
	int rc;

	if (PEM_read_bio(bio, &name, &header, &der, &n) != 1) {
		unsigned long e = ERR_peek_last_error();

		if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
			ERR_clear_error();
			return 0;
		}
		return pki__ossl_fail(err, -EINVAL, "a PEM block in the bundle is malformed");
	}
	rc = take_block(b, name, der, n, err);
	OPENSSL_free(name);
	OPENSSL_free(header);
	OPENSSL_free(der);
	return rc < 0 ? rc : 1;
}

int pki_bundle_split(const char *pem, size_t len, struct pki_bundle *out, struct ll_err *err)
{
	BIO *bio;
	int rc;

	out->n = 0;
	if (len > PKI_BUNDLE_MAX)
		return ll_err_set(err, -EMSGSIZE, "a bundle over %u bytes", PKI_BUNDLE_MAX);
	if (len == 0)
		return 0;
	bio = BIO_new_mem_buf(pem, (int)len);
	if (bio == NULL)
		return pki__ossl_fail(err, -EIO, "cannot read the bundle");
	while ((rc = next_block(bio, out, err)) > 0)
		;
	BIO_free(bio);
	if (rc < 0)
		pki_bundle_release(out);
	return rc;
}

int pki_bundle_add(struct pki_bundle *b, const char *cert_pem, struct ll_err *err)
{
	struct pki_bundle one = {0};
	int rc = pki__check_len(cert_pem, PKI_PEM_MAX, "certificate", err);

	if (rc == 0)
		rc = pki_bundle_split(cert_pem, strlen(cert_pem), &one, err);
	if (rc == 0 && one.n != 1)
		rc = ll_err_set(err, -EINVAL, "%zu certificates where one was expected", one.n);
	if (rc == 0 && !has_exact(b, one.certs[0])) {
		if (b->n == PKI_BUNDLE_CERTS_MAX) {
			rc = ll_err_set(err, -EMSGSIZE, "more than %u certificates in a bundle",
			                PKI_BUNDLE_CERTS_MAX);
		} else {
			b->certs[b->n++] = one.certs[0];
			one.n = 0;
		}
	}
	pki_bundle_release(&one);
	return rc;
}

bool pki_bundle_has(const struct pki_bundle *b, const char *cert_pem)
{
	struct pki_bundle one = {0};
	bool has = false;

	if (cert_pem &&
	    pki_bundle_split(cert_pem, strnlen(cert_pem, PKI_PEM_MAX + 1), &one, NULL) == 0 &&
	    one.n == 1)
		has = has_exact(b, one.certs[0]);
	pki_bundle_release(&one);
	return has;
}

char *pki_bundle_join(const struct pki_bundle *b)
{
	struct buf out = BUF_INIT(BUF_MAX_INTERNAL);

	for (size_t i = 0; i < b->n; i++)
		buf_append_str(&out, b->certs[i]);
	return buf_detach(&out);
}

/* ---- base64 ---- */

char *pki_b64_encode(const void *data, size_t len)
{
	size_t n = 4 * ((len + 2) / 3);
	char *out = xmalloc(n + 1);

	/* EVP_EncodeBlock takes an int: encode in chunks that are whole groups of three. */
	for (size_t i = 0, o = 0; i < len; i += 3u << 20, o += 4u << 20) {
		size_t part = len - i < (3u << 20) ? len - i : (3u << 20);

		EVP_EncodeBlock((unsigned char *)out + o, (const unsigned char *)data + i,
		                (int)part);
	}
	out[n] = '\0';
	return out;
}

static bool b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

int pki_b64_decode(const char *s, struct buf *out)
{
	size_t n = strnlen(s, out->max / 3 * 4 + 5), pad = 0;
	unsigned char *bytes;
	int got;

	if (n > out->max / 3 * 4 + 4 || n > INT_MAX)
		return -EMSGSIZE;
	if (n % 4 != 0)
		return -EINVAL;
	while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < n - pad; i++)
		if (!b64_char(s[i]))
			return -EINVAL;
	if (n == 0)
		return 0;
	bytes = xmalloc(n / 4 * 3);
	got = EVP_DecodeBlock(bytes, (const unsigned char *)s, (int)n);
	got = got < 0 ? -EINVAL : buf_append(out, bytes, (size_t)got - pad);
	free(bytes);
	return got;
}
