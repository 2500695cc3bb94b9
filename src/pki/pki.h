/*
 * pki.h - certificates for landlord's own TLS: a CA, serving certificates it signs, and the
 * PEM bundles that carry them, client certificates for the tenant proxy and what the proxy reads
 * back out of them (OpenSSL 3.0, non-deprecated API only).
 *
 * The webhook keeps its CA and serving certificate in a Secret (src/pki/certs.h); the tenant
 * proxy keeps its client CA in another (src/proxy/credentials.h) and issues tenant users'
 * certificates from it. Everything crosses this interface as PEM text, which is what Secrets,
 * caBundle fields, kubeconfigs and the HTTP server (GnuTLS) take: no OpenSSL type leaks out.
 *
 * What is made:
 *  - keys are EC P-256; signatures ECDSA with SHA-256;
 *  - serial numbers are 128 random bits (positive, never zero);
 *  - notBefore is backdated by PKI_BACKDATE_MAX_S or a tenth of the lifetime, whichever is less,
 *    to absorb clock skew between landlord and the API server without eating a short lifetime;
 *  - a CA: basicConstraints critical CA:TRUE, pathlen:0; keyUsage critical keyCertSign, cRLSign;
 *    subject key identifier;
 *  - a serving certificate: basicConstraints critical CA:FALSE; keyUsage critical
 *    digitalSignature (the only use of an ECDSA key in TLS); extendedKeyUsage serverAuth;
 *    subjectAltName with every DNS name and IP given (Go clients ignore the CN); authority key
 *    identifier; notAfter never later than its CA's.
 *  - a client certificate: basicConstraints critical CA:FALSE; keyUsage critical
 *    digitalSignature; extendedKeyUsage clientAuth only; subject O... (one RDN each, in the
 *    order given), OU, CN, as UTF8String; authority key identifier; notAfter never later than
 *    its CA's.
 *
 * Subject text (a client certificate's CN, O and OU, made or read): 1..PKI_ATTR_MAX bytes of
 * valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF) without C0 or C1
 * control characters or DEL; what is made and what is read are held to the same rule, so that
 * a value read back is always one that could have been issued.
 *
 * Limits on input that may come from the network or a Secret: one PEM text at most
 * PKI_PEM_MAX bytes, a bundle at most PKI_BUNDLE_MAX bytes and PKI_BUNDLE_CERTS_MAX
 * certificates. Over a limit is -EMSGSIZE, never unbounded work.
 *
 * Errors: 0 or a negative errno, and one line in the optional struct ll_err naming what was
 * wrong and, for OpenSSL failures, OpenSSL's own reason. Every function is thread-safe (the
 * OpenSSL error queue is per thread and is cleared before each call returns).
 */
#ifndef LANDLORD_PKI_H
#define LANDLORD_PKI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
struct ll_err;

#define PKI_PEM_MAX          (64u << 10) /* one certificate, key or pair of them */
#define PKI_BUNDLE_MAX       (1u << 20)  /* a bundle of certificates */
#define PKI_BUNDLE_CERTS_MAX 32u         /* certificates in a bundle */
#define PKI_NAMES_MAX        32u         /* DNS names plus IPs in one certificate */
#define PKI_BACKDATE_MAX_S   300         /* notBefore is at most this far in the past */
#define PKI_CN_MAX           64          /* an X.509 common name, as RFC 5280 caps it */
#define PKI_ATTR_MAX         64          /* an O or OU value (RFC 5280's bound, in bytes here) */
#define PKI_ORGS_MAX         32u         /* O values (groups) in one client certificate */

/** A certificate and its private key, both PEM; owned (pki_pair_release()). */
struct pki_pair {
	char *cert_pem;
	char *key_pem;
};

/** pki_pair_release() - free both strings and zero @p (a zeroed pair is fine). */
void pki_pair_release(struct pki_pair *p);

/**
 * pki_make_ca() - a new self-signed CA with a fresh key.
 * @cn:         the subject's common name (1..PKI_CN_MAX bytes), e.g. "landlord-webhook-ca";
 * @now:        the issuing time, Unix seconds (0: now);
 * @lifetime_s: seconds from @now to notAfter (> 0);
 * @out:        OUT, filled on 0 only.
 * Return: 0; -EINVAL (empty or long name, lifetime <= 0); -EIO (OpenSSL refused, in @err).
 */
int pki_make_ca(const char *cn, int64_t now, int64_t lifetime_s, struct pki_pair *out /* OUT */,
                struct ll_err *err);

/** What a serving certificate says. Strings and arrays are borrowed for the call. */
struct pki_serving_opts {
	const char *cn;               /* subject common name; NULL: the first DNS name */
	const char *const *dns_names; /* NULL-terminated, may be NULL */
	const char *const *ips;       /* NULL-terminated IPv4/IPv6 literals, may be NULL */
	int64_t now;                  /* Unix seconds; 0: now */
	int64_t lifetime_s;           /* > 0; cut to the CA's notAfter */
};

/**
 * pki_make_serving() - a serving certificate and fresh key, signed by @ca.
 * Return: 0; -EINVAL (no SAN at all, more than PKI_NAMES_MAX, a DNS name with a comma or
 * control character or over 253 bytes, an IP that is not a literal, lifetime <= 0, a CA pair
 * that does not parse, whose key does not match, or that is not a CA); -EMSGSIZE (CA PEM over
 * PKI_PEM_MAX); -EIO (OpenSSL refused).
 */
int pki_make_serving(const struct pki_pair *ca, const struct pki_serving_opts *o,
                     struct pki_pair *out /* OUT */, struct ll_err *err);

/** What a client certificate says. Strings and arrays are borrowed for the call. */
struct pki_client_opts {
	const char *cn;          /* the user: 1..PKI_CN_MAX bytes of subject text */
	const char *const *orgs; /* NULL-terminated O values (groups), at most PKI_ORGS_MAX; may
	                          * be NULL (none) */
	const char *ou;          /* the tenant; NULL: no OU */
	int64_t now;             /* Unix seconds; 0: now */
	int64_t lifetime_s;      /* > 0; cut to the CA's notAfter (then backdated by a tenth
	                          * of what is left, PKI_BACKDATE_MAX_S at most) */
};

/**
 * pki_make_client() - a TLS client certificate and fresh key for @o, signed by @ca. A client
 * certificate can only authenticate a client: it is no CA and no server (pki_verify_client()).
 * Return: 0; -EINVAL (a CN, O or OU that is not subject text, more than PKI_ORGS_MAX O values,
 * lifetime <= 0, a CA pair that does not parse, whose key does not match, that is not a CA, or
 * whose notAfter is not after @o->now: its reason in @err); -EMSGSIZE (CA PEM over
 * PKI_PEM_MAX); -EIO (OpenSSL refused).
 */
int pki_make_client(const struct pki_pair *ca, const struct pki_client_opts *o,
                    struct pki_pair *out /* OUT */, struct ll_err *err);

/** What pki_read_cert() reads out of a certificate. */
struct pki_cert_info {
	int64_t not_before; /* Unix seconds */
	int64_t not_after;
	bool is_ca; /* basicConstraints CA:TRUE */
	char cn[PKI_CN_MAX + 1];
	char serial_hex[2 * 20 + 1]; /* up to 20 bytes (RFC 5280), upper-case hex */
};

/**
 * pki_read_cert() - parse the first certificate of @pem (@len bytes, not necessarily
 * NUL-terminated).
 * Return: 0; -EMSGSIZE (@len over PKI_BUNDLE_MAX); -EINVAL (no certificate, or one that does
 * not parse).
 */
int pki_read_cert(const char *pem, size_t len, struct pki_cert_info *out /* OUT */,
                  struct ll_err *err);

/**
 * struct pki_subject - what the tenant proxy takes from a (verified) client certificate. Every
 * string is NUL-terminated subject text as pki.h defines it, never cut short; "" for an
 * attribute the subject does not carry.
 */
struct pki_subject {
	char cn[PKI_CN_MAX + 1];                   /* the user */
	char ou[PKI_ATTR_MAX + 1];                 /* the tenant */
	char orgs[PKI_ORGS_MAX][PKI_ATTR_MAX + 1]; /* the groups, in the subject's order */
	size_t n_orgs;
	char serial_hex[2 * 20 + 1];   /* upper-case hex, no sign, as pki_cert_info's */
	int64_t not_before, not_after; /* Unix seconds */
};

/**
 * pki_read_subject() - the subject, serial and validity of the first certificate of @pem (@len
 * bytes, not necessarily NUL-terminated). It does not verify anything: call
 * pki_verify_client() first. On error @out is zeroed.
 * Return: 0; -EMSGSIZE (@len over PKI_BUNDLE_MAX); -EINVAL (no certificate, one that does not
 * parse, a subject with more than one CN or more than one OU (ambiguous), more than
 * PKI_ORGS_MAX O values, a CN, O or OU that is empty, over its field, not UTF-8 or holding a
 * control character, a negative serial or one over 20 bytes; the reason in @err).
 */
int pki_read_subject(const char *pem, size_t len, struct pki_subject *out /* OUT */,
                     struct ll_err *err);

/**
 * pki_check_pair() - whether @p's key is the private half of its certificate's public key.
 * Return: 0; -EKEYREJECTED (they do not match); -EINVAL (either does not parse); -EMSGSIZE.
 */
int pki_check_pair(const struct pki_pair *p, struct ll_err *err);

/**
 * pki_cert_names() - whether the certificate @cert_pem has a subjectAltName for @name: an IP
 * literal as an IP address, anything else as a DNS name (as a TLS client checks it).
 * Return: 0; -ENOENT (it does not); -EINVAL (it does not parse).
 */
int pki_cert_names(const char *cert_pem, const char *name);

/**
 * pki_verify() - whether the certificate @cert_pem chains to one of the CAs in @ca_bundle_pem
 * at time @at (Unix seconds; 0: now), for TLS server use when @server is true. With @server
 * false no purpose is checked at all (a CA verifies against a bundle holding it, which the
 * webhook's rotation relies on): a client certificate is checked with pki_verify_client().
 * Return: 0; -EKEYREJECTED (it does not chain, has expired or is not yet valid: the reason in
 * @err); -EINVAL (either does not parse; an empty bundle); -EMSGSIZE (over a limit).
 */
int pki_verify(const char *cert_pem, const char *ca_bundle_pem, int64_t at, bool server,
               struct ll_err *err);

/**
 * pki_verify_client() - whether @cert_pem may authenticate a TLS client: it is no CA (no
 * basicConstraints CA:TRUE, no keyCertSign, not a self-signed v1 certificate), its
 * extendedKeyUsage is present and holds clientAuth, its keyUsage (when present) allows
 * digitalSignature, and it chains to a CA of @ca_bundle_pem at @at (0: now) for the TLS client
 * purpose. A serving certificate (serverAuth only) and a CA certificate are refused, whichever
 * CA signed them.
 * Return: 0; -EKEYREJECTED (not a client certificate, or it does not verify: the reason in
 * @err); -EINVAL (either does not parse; an empty bundle); -EMSGSIZE (over a limit).
 */
int pki_verify_client(const char *cert_pem, const char *ca_bundle_pem, int64_t at,
                      struct ll_err *err);

/**
 * struct pki_bundle - certificates as separate PEM blocks, each re-encoded by OpenSSL, so that
 * two blocks are the same certificate exactly when their strings are equal. At most
 * PKI_BUNDLE_CERTS_MAX. Owned: pki_bundle_release().
 */
struct pki_bundle {
	char *certs[PKI_BUNDLE_CERTS_MAX];
	size_t n;
};

/**
 * pki_bundle_split() - parse every certificate of @pem (@len bytes) into @out (which starts
 * empty). Text between PEM blocks is ignored, as OpenSSL and Go ignore it; blocks of another
 * type (keys) are refused; an empty or all-text input gives an empty bundle. A repeated
 * certificate is kept once.
 * Return: 0; -EMSGSIZE (@len over PKI_BUNDLE_MAX, or more than PKI_BUNDLE_CERTS_MAX
 * certificates); -EINVAL (a block that does not parse; @out is then empty).
 */
int pki_bundle_split(const char *pem, size_t len, struct pki_bundle *out /* OUT */,
                     struct ll_err *err);
/**
 * pki_bundle_add() - append a copy of the one certificate in @cert_pem unless the bundle has it.
 * Return: 0 (added or already there); -EMSGSIZE (full); -EINVAL (not one certificate).
 */
int pki_bundle_add(struct pki_bundle *b, const char *cert_pem, struct ll_err *err);
/** pki_bundle_has() - whether @b holds the certificate @cert_pem (in any PEM spelling). */
bool pki_bundle_has(const struct pki_bundle *b, const char *cert_pem);
/** pki_bundle_join() - the bundle as one PEM text, in order (owned; "" for none). */
char *pki_bundle_join(const struct pki_bundle *b);
void pki_bundle_release(struct pki_bundle *b);

/**
 * pki_random() - @n bytes from OpenSSL's CSPRNG (RAND_bytes) into @out.
 * Return: 0; -EIO (the generator is not seeded or failed; @out is then zeroed).
 */
int pki_random(void *out /* OUT */, size_t n);

/** pki_b64_encode() - standard base64 of @len bytes (owned, NUL-terminated). */
char *pki_b64_encode(const void *data, size_t len);
/**
 * pki_b64_decode() - decode standard base64 @s (padding required, no whitespace) and append
 * the bytes to @out (whose cap applies).
 * Return: 0; -EINVAL (not base64); -EMSGSIZE (over @out's cap).
 */
int pki_b64_decode(const char *s, struct buf *out);

#endif
