/*
 * pki_internal.h - what the files of the pki module share (pki.c: CAs, serving certificates,
 * bundles; pki_client.c: client certificates). Not for use outside src/pki.
 *
 * Invariants, as in pki.h: OpenSSL objects never leave the module; every helper that fails
 * with an OpenSSL reason takes it off this thread's error queue (pki__ossl_fail()), so a later
 * call never reports an earlier call's error.
 */
#ifndef LANDLORD_PKI_INTERNAL_H
#define LANDLORD_PKI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "pki/pki.h"

/* Fail with @code, @what and OpenSSL's first queued reason; the queue is left empty. */
int pki__ossl_fail(struct ll_err *err, int code, const char *what);
/* @now, or the wall clock when it is 0. */
int64_t pki__now_or(int64_t now);
/* The first certificate of @pem (@len bytes), or NULL. */
X509 *pki__read_cert(const char *pem, size_t len);
/* -EINVAL for no @pem, -EMSGSIZE for one over @max bytes (@what names it), else 0. */
int pki__check_len(const char *pem, size_t max, const char *what, struct ll_err *err);
/* Add the extension @nid = @value (openssl.cnf syntax) to @x, issued by @issuer. 0 or -1. */
int pki__add_ext(X509 *x, X509 *issuer, int nid, const char *value);
/* A v3 certificate for @key named CN=@cn with a random serial, valid from @now backdated (pki.h)
 * for @life seconds but not after @not_after_max (0: no bound), issued by @issuer (NULL:
 * itself). Unsigned; NULL when OpenSSL refused. */
X509 *pki__new_cert(const char *cn, EVP_PKEY *key, X509 *issuer, int64_t now, int64_t life,
                    int64_t not_after_max);
/* Parse and check the CA pair a certificate is signed with: *@x and *@key are set (the
 * caller frees them, even on error). Return: 0, -EINVAL or -EMSGSIZE with the reason. */
int pki__load_ca(const struct pki_pair *ca, X509 **x, EVP_PKEY **key, struct ll_err *err);
/* @t as Unix seconds; 0 when it does not read. */
int64_t pki__asn1_unix(const ASN1_TIME *t);
/* @x and @key as PEM into @out (on error @out is empty and the reason, after @what, in @err:
 * -EIO). */
int pki__encode_pair(X509 *x, EVP_PKEY *key, struct pki_pair *out, const char *what,
                     struct ll_err *err);
/* Check the lengths of @cert_pem and @ca_bundle_pem and parse the certificate into *@x (NULL
 * on error). Return: 0, -EINVAL or -EMSGSIZE. */
int pki__read_leaf(const char *cert_pem, const char *ca_bundle_pem, X509 **x, struct ll_err *err);
/* Whether @x chains to a CA of @ca_bundle_pem at @at (0: now) for @purpose (an
 * X509_PURPOSE_*, or 0 for none). Return: 0, -EKEYREJECTED, -EINVAL (bundle), -EIO. */
int pki__verify_chain(X509 *x, const char *ca_bundle_pem, int64_t at, int purpose,
                      struct ll_err *err);

#endif
