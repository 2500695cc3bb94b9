/*
 * pki_client.c - client certificates for the tenant proxy (see pki.h): made with the user as
 * CN, the groups as O and the tenant as OU; read back only when every value is subject text
 * that fits its field; verified for the TLS client purpose only.
 *
 * OpenSSL objects live inside one function each, as in pki.c; every failure clears this
 * thread's error queue.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/err.h"
#include "pki/pki.h"
#include "pki/pki_internal.h"

#define SERIAL_MAX_BYTES 20 /* RFC 5280 */

/* ---- subject text ---- */

/*
 * The length of the UTF-8 sequence at @s (@n bytes left), or 0 when it is none: a stray
 * continuation byte, an overlong form, a surrogate, a code point past U+10FFFF, or cut short.
 */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80                    ? 1
	             : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
	             : s[0] >= 0xe0 && s[0] <= 0xef ? 3
	             : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
	                                            : 0;
	/* the second byte's range: narrower after E0 (overlong), ED (surrogates), F0 (overlong)
	 * and F4 (past U+10FFFF) */
	unsigned char lo = s[0] == 0xe0 ? 0xa0 : s[0] == 0xf0 ? 0x90 : 0x80;
	unsigned char hi = s[0] == 0xed ? 0x9f : s[0] == 0xf4 ? 0x8f : 0xbf;

	if (len == 0 || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			return 0;
	return len;
}

/* A C0 control character, DEL, or a C1 control character (U+0080..U+009F). */
static bool is_control(const unsigned char *s, size_t len)
{
	return (len == 1 && (s[0] < 0x20 || s[0] == 0x7f)) ||
	       (len == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

/* Whether @s (@n bytes) is subject text of at most @max bytes; why not (@what names it). */
static int check_text(const char *what, const char *s, size_t n, size_t max, struct ll_err *err)
{
	if (n == 0 || n > max)
		return ll_err_set(err, -EINVAL, "%s is 1..%zu bytes, not %zu", what, max, n);
	for (size_t i = 0, k; i < n; i += k) {
		k = utf8_seq((const unsigned char *)s + i, n - i);
		if (k == 0)
			return ll_err_set(err, -EINVAL, "%s is not valid UTF-8 (byte %zu)", what,
			                  i + 1);
		if (is_control((const unsigned char *)s + i, k))
			return ll_err_set(err, -EINVAL, "%s holds a control character (byte %zu)",
			                  what, i + 1);
	}
	return 0;
}

static int check_str(const char *what, const char *s, size_t max, struct ll_err *err)
{
	return check_text(what, s, strnlen(s, max + 1), max, err);
}

static int check_client_opts(const struct pki_client_opts *o, struct ll_err *err)
{
	char what[32];
	int rc = o->cn ? check_str("the common name", o->cn, PKI_CN_MAX, err)
	               : ll_err_set(err, -EINVAL, "a client certificate needs a common name");

	if (rc == 0 && o->ou)
		rc = check_str("the OU", o->ou, PKI_ATTR_MAX, err);
	for (size_t i = 0; rc == 0 && o->orgs && o->orgs[i]; i++) {
		if (i == PKI_ORGS_MAX)
			return ll_err_set(err, -EINVAL, "more than %u O values (groups)",
			                  PKI_ORGS_MAX);
		snprintf(what, sizeof(what), "O value %zu", i + 1);
		rc = check_str(what, o->orgs[i], PKI_ATTR_MAX, err);
	}
	if (rc == 0 && o->lifetime_s <= 0)
		rc = ll_err_set(err, -EINVAL, "a client certificate's lifetime must be positive");
	return rc;
}

/* ---- making ---- */

/* The O values, in order, then the OU, ahead of the CN pki__new_cert() put in the subject. */
static int add_client_names(X509 *x, const struct pki_client_opts *o)
{
	X509_NAME *name = X509_get_subject_name(x);
	int loc = 0;

	for (size_t i = 0; o->orgs && o->orgs[i]; i++, loc++)
		if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
		                                (const unsigned char *)o->orgs[i], -1, loc, 0))
			return -1;
	if (o->ou && !X509_NAME_add_entry_by_txt(name, "OU", MBSTRING_UTF8,
	                                         (const unsigned char *)o->ou, -1, loc, 0))
		return -1;
	return 0;
}

static int sign_client(X509 *x, X509 *ca, EVP_PKEY *ca_key)
{
	if (pki__add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") ||
	    pki__add_ext(x, ca, NID_key_usage, "critical,digitalSignature") ||
	    pki__add_ext(x, ca, NID_ext_key_usage, "clientAuth") ||
	    pki__add_ext(x, ca, NID_authority_key_identifier, "keyid:always"))
		return -1;
	return X509_sign(x, ca_key, EVP_sha256()) ? 0 : -1;
}

/* The CA's notAfter into *@end; -EINVAL when it is not after @now. */
static int ca_end(X509 *ca, int64_t now, int64_t *end, struct ll_err *err)
{
	*end = pki__asn1_unix(X509_get0_notAfter(ca));
	if (*end <= now)
		return ll_err_set(err, -EINVAL, "the CA expired at %lld (Unix seconds)",
		                  (long long)*end);
	return 0;
}

int pki_make_client(const struct pki_pair *ca, const struct pki_client_opts *o,
                    struct pki_pair *out, struct ll_err *err)
{
	X509 *cax = NULL, *x = NULL;
	EVP_PKEY *ca_key = NULL, *key = NULL;
	int64_t now = pki__now_or(o->now), end = 0, life;
	int rc = check_client_opts(o, err);

	if (rc == 0)
		rc = pki__load_ca(ca, &cax, &ca_key, err);
	if (rc == 0)
		rc = ca_end(cax, now, &end, err);
	if (rc)
		goto out;
	/* cut to the CA here, so that now + life cannot overflow */
	life = o->lifetime_s < end - now ? o->lifetime_s : end - now;
	key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	x = key ? pki__new_cert(o->cn, key, cax, now, life, end) : NULL;
	if (x == NULL || add_client_names(x, o) || sign_client(x, cax, ca_key)) {
		rc = pki__ossl_fail(err, -EIO, "cannot make a client certificate");
		goto out;
	}
	rc = pki__encode_pair(x, key, out, "cannot encode the client certificate as PEM", err);
out:
	ERR_clear_error();
	X509_free(cax);
	X509_free(x);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	return rc;
}

/* ---- reading ---- */

/* One attribute's value, as UTF-8, into @dst (@cap bytes with the NUL) if it is subject text. */
static int attr_text(const X509_NAME_ENTRY *e, const char *what, char *dst, size_t cap,
                     struct ll_err *err)
{
	unsigned char *utf8 = NULL;
	int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(e));
	int rc = n < 0 ? pki__ossl_fail(err, -EINVAL, "an attribute is no readable string")
	               : check_text(what, (const char *)utf8, (size_t)n, cap - 1, err);

	if (rc == 0) {
		memcpy(dst, utf8, (size_t)n);
		dst[n] = '\0';
	}
	OPENSSL_free(utf8);
	return rc;
}

/* One subject attribute into @out: CN, OU (each once) and O; others are not the proxy's. */
static int take_entry(const X509_NAME_ENTRY *e, struct pki_subject *out, struct ll_err *err)
{
	int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(e));
	char what[32];
	int rc;

	if (nid == NID_commonName)
		return out->cn[0] ? ll_err_set(err, -EINVAL, "the subject has more than one CN")
		                  : attr_text(e, "the CN", out->cn, sizeof(out->cn), err);
	if (nid == NID_organizationalUnitName)
		return out->ou[0] ? ll_err_set(err, -EINVAL, "the subject has more than one OU")
		                  : attr_text(e, "the OU", out->ou, sizeof(out->ou), err);
	if (nid != NID_organizationName)
		return 0;
	if (out->n_orgs == PKI_ORGS_MAX)
		return ll_err_set(err, -EINVAL, "the subject has more than %u O values",
		                  PKI_ORGS_MAX);
	snprintf(what, sizeof(what), "O value %zu", out->n_orgs + 1);
	rc = attr_text(e, what, out->orgs[out->n_orgs], sizeof(out->orgs[0]), err);
	if (rc == 0)
		out->n_orgs++;
	return rc;
}

static int read_serial(X509 *x, char *dst, size_t cap, struct ll_err *err)
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *hex = bn && !BN_is_negative(bn) && BN_num_bytes(bn) <= SERIAL_MAX_BYTES
	                    ? BN_bn2hex(bn)
	                    : NULL;
	int rc = hex && strlen(hex) < cap ? 0
	                                  : ll_err_set(err, -EINVAL,
	                                               "the serial number is negative, over %d "
	                                               "bytes or unreadable",
	                                               SERIAL_MAX_BYTES);

	if (rc == 0)
		snprintf(dst, cap, "%s", hex);
	OPENSSL_free(hex);
	BN_free(bn);
	return rc;
}

static int read_time(const ASN1_TIME *t, int64_t *out, struct ll_err *err)
{
	struct tm tm = {0};

	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
		return ll_err_set(err, -EINVAL, "the certificate's validity does not read");
	*out = (int64_t)timegm(&tm);
	return 0;
}

static int read_subject(X509 *x, struct pki_subject *out, struct ll_err *err)
{
	const X509_NAME *name = X509_get_subject_name(x);
	int rc = 0;

	for (int i = 0; rc == 0 && i < X509_NAME_entry_count(name); i++)
		rc = take_entry(X509_NAME_get_entry(name, i), out, err);
	if (rc == 0)
		rc = read_serial(x, out->serial_hex, sizeof(out->serial_hex), err);
	if (rc == 0)
		rc = read_time(X509_get0_notBefore(x), &out->not_before, err);
	if (rc == 0)
		rc = read_time(X509_get0_notAfter(x), &out->not_after, err);
	return rc;
}

int pki_read_subject(const char *pem, size_t len, struct pki_subject *out, struct ll_err *err)
{
	X509 *x = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > PKI_BUNDLE_MAX)
		return ll_err_set(err, -EMSGSIZE, "a certificate text over %u bytes",
		                  PKI_BUNDLE_MAX);
	if (pem == NULL || len == 0)
		return ll_err_set(err, -EINVAL, "no certificate given");
	x = pki__read_cert(pem, len);
	rc = x ? read_subject(x, out, err)
	       : pki__ossl_fail(err, -EINVAL, "no certificate could be read");
	if (rc)
		memset(out, 0, sizeof(*out));
	ERR_clear_error();
	X509_free(x);
	return rc;
}

/* ---- verifying ---- */

/* What makes @x a client certificate, whoever signed it. */
static int check_client_leaf(X509 *x, struct ll_err *err)
{
	uint32_t flags = X509_get_extension_flags(x);

	if (flags & EXFLAG_INVALID)
		return ll_err_set(err, -EKEYREJECTED, "the certificate's extensions are invalid");
	if ((flags & EXFLAG_CA) || X509_check_ca(x) != 0)
		return ll_err_set(err, -EKEYREJECTED,
		                  "a CA certificate is not a client certificate");
	if (!(flags & EXFLAG_XKUSAGE) || !(X509_get_extended_key_usage(x) & XKU_SSL_CLIENT))
		return ll_err_set(
		        err, -EKEYREJECTED,
		        "not a client certificate: its extendedKeyUsage lacks clientAuth");
	if ((flags & EXFLAG_KUSAGE) && !(X509_get_key_usage(x) & KU_DIGITAL_SIGNATURE))
		return ll_err_set(err, -EKEYREJECTED,
		                  "not a client certificate: its keyUsage lacks digitalSignature");
	return 0;
}

int pki_verify_client(const char *cert_pem, const char *ca_bundle_pem, int64_t at,
                      struct ll_err *err)
{
	X509 *x = NULL;
	int rc = pki__read_leaf(cert_pem, ca_bundle_pem, &x, err);

	if (rc == 0)
		rc = check_client_leaf(x, err);
	if (rc == 0)
		rc = pki__verify_chain(x, ca_bundle_pem, at, X509_PURPOSE_SSL_CLIENT, err);
	ERR_clear_error();
	X509_free(x);
	return rc;
}
