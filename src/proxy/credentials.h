/*
 * credentials.h - the tenant proxy's signing material, and the credentials and kubeconfigs it
 * gives tenant users.
 *
 * Tenant users authenticate to `landlord proxy` with client certificates from the proxy's own
 * CA: CN = the user, O = the groups, OU = the tenant (pki.h, pki_make_client()). That CA is
 * trusted by the proxy alone, never by kube-apiserver: a certificate it signs is worth nothing
 * against the API server, so a leaked tenant credential reaches only what the proxy shows its
 * tenant. The proxy's *serving* certificate is another matter (pki/certs.h machinery, another
 * Secret); callers pass its CA bundle to pxcreds_kubeconfig().
 *
 * The material lives in ONE Secret, PXCREDS_SECRET (type Opaque, labelled
 * app.kubernetes.io/managed-by: landlord) in landlord's namespace, with base64 data keys:
 *   ca.crt    the client CA (EC P-256, PXCREDS_CA_LIFETIME_S): exactly one certificate;
 *   ca.key    its key;
 *   hmac.key  PXCREDS_HMAC_LEN random bytes (OpenSSL RAND_bytes) for what the proxy signs.
 * A CA rotation (next-ca.crt, next-ca.key, trusted beside ca.crt for an overlap) comes later:
 * pxcreds_trust_bundle() is where the next CA will join.
 *
 * Invariants, whoever runs and crashes when:
 *  - one Secret, one CA: it is created once with POST; a 409 means another replica or admin
 *    won, and theirs is read and used. A loader that finds the Secret never mints a CA of its
 *    own, and every loader ends up with the same CA and HMAC key.
 *  - a Secret that exists but is malformed (a key missing or not base64, a ca.crt that is not
 *    one CA certificate, a ca.key that does not match it, an hmac.key of another length) is an
 *    error with one actionable line, and is never overwritten: replacing it would silently void
 *    every credential issued so far. Deleting it is the operator's decision.
 *  - who may create it: both `landlord proxy` and `landlord kubeconfig` load with create = true,
 *    so whichever comes first makes the CA and the other reads it (an admin can issue
 *    kubeconfigs before the proxy has ever run). create = false is for callers that must never
 *    write (a read-only check, a caller without the create right): a missing Secret is -ENOENT.
 *  - issued certificates last PXCREDS_TTL_DEFAULT_S unless asked, never more than
 *    PXCREDS_TTL_MAX_S: nothing revokes a client certificate, so its lifetime is the bound on
 *    a leaked one.
 *
 * A struct pxcreds is immutable once loaded: any number of threads read and issue from it.
 */
#ifndef LANDLORD_PROXY_CREDENTIALS_H
#define LANDLORD_PROXY_CREDENTIALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pki/pki.h"

struct buf;
struct kc_client;
struct ll_err;
struct pxcreds;

#define PXCREDS_SECRET "landlord-proxy-ca"
/*
 * Two years. Nothing revokes a client certificate and the CA key sits in a Secret, so the CA's
 * lifetime bounds how long a leaked ca.key mints credentials the proxy accepts; five years is
 * longer than anyone keeps a key in a cluster. One year would force the rotation (not written
 * yet: until then an expired CA is a full outage of the proxy) before it exists; two years
 * leaves room for it, and rotating at two thirds (16 months) overlaps old and new CAs by months,
 * far more than the longest credential (PXCREDS_TTL_MAX_S) needs.
 */
#define PXCREDS_CA_LIFETIME_S  (2LL * 365 * 86400)
#define PXCREDS_TTL_DEFAULT_S  (24LL * 3600)
#define PXCREDS_TTL_MAX_S      (30LL * 86400)
#define PXCREDS_HMAC_LEN       32u
#define PXCREDS_KUBECONFIG_MAX (256u << 10) /* a rendered kubeconfig, bytes */

/**
 * pxcreds_load() - read the Secret PXCREDS_SECRET in @ns (NULL: LANDLORD_SYSTEM_NAMESPACE)
 * through @c, creating it with a new CA and HMAC key when it does not exist and @create is
 * true (a lost race, 409, reads the winner's). Blocks on the API server (a few requests).
 * Return: 0 with *@out set (pxcreds_free() it); -ENOENT (no Secret and @create is false);
 * -EINVAL (the Secret is malformed: what is wrong and what to do in @err; it is left as it is);
 * -EIO (the API server refused or could not be reached: the status in @err); -EAGAIN (the
 * Secret kept appearing and vanishing under a few attempts).
 * Thread-safety: any number of loads at once, in any number of processes.
 */
int pxcreds_load(struct kc_client *c, const char *ns, bool create, struct pxcreds **out /* OUT */,
                 struct ll_err *err);

/** pxcreds_free() - free @pc, wiping its keys first. NULL is fine. */
void pxcreds_free(struct pxcreds *pc);

/** pxcreds_ca() - the client CA pair (PEM), lent until pxcreds_free(). */
const struct pki_pair *pxcreds_ca(const struct pxcreds *pc);

/**
 * pxcreds_trust_bundle() - the CAs whose client certificates the proxy accepts (PEM, for
 * pki_verify_client() or the TLS server's client CA list), lent until pxcreds_free(). Today
 * ca.crt alone; during a CA rotation, next-ca.crt too.
 */
const char *pxcreds_trust_bundle(const struct pxcreds *pc);

/** pxcreds_hmac_key() - the HMAC key (PXCREDS_HMAC_LEN bytes into *@len), lent until
 * pxcreds_free(). */
const unsigned char *pxcreds_hmac_key(const struct pxcreds *pc, size_t *len /* OUT */);

/**
 * pxcreds_issue() - a client certificate and key for @user of @tenant in @groups, from the
 * proxy CA: CN = @user, O = @groups (NULL-terminated, may be NULL), OU = @tenant. @ttl_s 0 is
 * PXCREDS_TTL_DEFAULT_S; the certificate never outlives the CA (it is cut to its notAfter).
 * Strings are borrowed for the call; @out is filled on 0 only (pki_pair_release() it).
 * Return: 0; -EINVAL (@ttl_s negative or over PXCREDS_TTL_MAX_S, a tenant that is not a DNS
 * label, a user or group that is not subject text as pki.h says, more than PKI_ORGS_MAX
 * groups, a group in Kubernetes' reserved "system:" space; the reason in @err, naming --ttl
 * for a TTL); -EKEYEXPIRED (the CA has expired: what to do in @err); -EIO (OpenSSL refused).
 * Thread-safe.
 */
int pxcreds_issue(const struct pxcreds *pc, const char *tenant, const char *user,
                  const char *const *groups, int64_t ttl_s, struct pki_pair *out /* OUT */,
                  struct ll_err *err);

/**
 * pxcreds_kubeconfig() - append to @out a kubeconfig (YAML) for @user of @tenant through the
 * proxy at @server_base (an https:// URL without a path, e.g. https://127.0.0.1:8444; a
 * trailing '/' is dropped): one cluster, one user and one context, each named
 * "landlord-<tenant>", the current context; server <server_base>/tenants/<tenant>;
 * certificate-authority-data the proxy's serving CA bundle @server_ca_pem;
 * client-certificate-data and client-key-data @client's PEM. Every scalar is double-quoted and
 * escaped, the data fields base64, so any user name gives valid YAML; @user is named only in
 * the leading comment (the certificate's CN is what the proxy trusts). Pure, thread-safe.
 * Return: 0; -EINVAL (a tenant that is not a DNS label, a base that is not https:// or holds
 * a control character, a user that is not UTF-8, a missing or empty PEM, a CA bundle without a
 * certificate); -EMSGSIZE (over @out's cap). On error @out is as it was.
 */
int pxcreds_kubeconfig(struct buf *out, const char *server_base, const char *tenant,
                       const char *user, const char *server_ca_pem, const struct pki_pair *client);

#endif
