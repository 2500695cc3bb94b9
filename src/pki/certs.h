/*
 * certs.h - the webhook's CA and serving certificate, kept in one Secret that every replica
 * agrees through, with rotation that never fails an admission call (issue 12, point 2).
 *
 * The Secret (type kubernetes.io/tls, default name WEBHOOK_TLS_SECRET in landlord's namespace):
 *   tls.crt, tls.key         the serving certificate every replica serves, and its key;
 *   ca.crt, ca.key           the CA that signed tls.crt;
 *   next-ca.crt, next-ca.key a CA being introduced (present only during a CA rotation);
 *   ca-bundle.crt            the CAs in force: what goes into caBundle;
 * annotations: ANNOT_CA_BUNDLE_GEN (the bundle's generation, raised at each change),
 * ANNOT_CA_BUNDLE_PUBLISH ("<generation> <unix time>": when every owned configuration was seen
 * carrying that generation), ANNOT_OLD_CAS_UNTIL (unix time after which CAs other than ca.crt
 * and next-ca.crt leave the bundle).
 *
 * Invariants, whoever runs and crashes when:
 *  - one Secret, one history: it is created with POST (a 409 means another replica won: its
 *    Secret is read and used) and changed with PUT guarded by resourceVersion (a 409 means
 *    another replica wrote first: the pass starts again from a fresh read). A replica that
 *    finds the Secret never mints a CA of its own beside it.
 *  - the served certificate always chains to a CA in the bundle every owned configuration
 *    carries: a new CA enters the bundle first (old and new overlap); the bundle is written into
 *    landlord's own ValidatingWebhookConfigurations and MutatingWebhookConfigurations (those
 *    named in the options, nothing else), each write a JSON patch guarded by the
 *    configuration's resourceVersion and stamped with the bundle's generation, so that a
 *    replica with an older view can never put back an older bundle; only when every owned
 *    configuration that exists carries it, and publish_grace_s more has passed (the API
 *    server's own informer lag), is a serving certificate from the new CA minted and served;
 *    the old CA leaves the bundle drain_s later (every replica has re-read the Secret by then),
 *    or when the last certificate it signed has expired, whichever is sooner.
 *  - renewal at two thirds of a lifetime: the serving certificate (default 90 days) from the
 *    same CA, the CA (default 365 days) by the sequence above.
 *  - a replica serves what the Secret says: each pass ends by handing the Secret's pair to
 *    on_pair when it differs from the pair last handed over (http_server_set_cert() swaps it
 *    without a failed handshake).
 *
 * Passes run on the caller's thread (certs_sync()) or on a thread of the module's own every
 * period (certs_start()): a GET of the Secret and of each owned configuration, and writes only
 * when something is due. docs/internals/pki.md has the state machine.
 */
#ifndef LANDLORD_CERTS_H
#define LANDLORD_CERTS_H

#include <stdint.h>

#include "pki/pki.h"

struct kc_client;
struct ll_err;
struct certs;

#define CERTS_CA_LIFETIME_S      (365LL * 86400)
#define CERTS_SERVING_LIFETIME_S (90LL * 86400)
#define CERTS_PUBLISH_GRACE_S    60LL
#define CERTS_DRAIN_S            600LL
#define CERTS_PERIOD_MS          30000LL

struct certs_opts {
	struct kc_client *client;      /* borrowed: outlives the certs */
	const char *ns;                /* the Secret's namespace (landlord's) */
	const char *secret_name;       /* NULL: WEBHOOK_TLS_SECRET */
	const char *const *dns_names;  /* the serving certificate's names, NULL-terminated */
	const char *const *ips;        /* and IP literals, NULL-terminated; one of them non-empty */
	const char *const *validating; /* landlord's ValidatingWebhookConfigurations, or NULL */
	const char *const *mutating;   /* landlord's MutatingWebhookConfigurations, or NULL */
	int64_t ca_lifetime_s;         /* 0: CERTS_CA_LIFETIME_S */
	int64_t serving_lifetime_s;    /* 0: CERTS_SERVING_LIFETIME_S */
	int64_t publish_grace_s;       /* 0: CERTS_PUBLISH_GRACE_S; <0: none */
	int64_t drain_s;               /* 0: CERTS_DRAIN_S; more than a period of every replica */
	int64_t (*now)(void *ud);      /* Unix seconds (tests); NULL: the wall clock */
	/* The pair to serve changed; on the thread of the pass. Strings lent for the call. */
	void (*on_pair)(void *ud, const char *cert_pem, const char *key_pem);
	void *ud;
};

/** certs_new() - the lifecycle for @o (copied; strings and arrays too). Nothing runs yet. */
struct certs *certs_new(const struct certs_opts *o);
/**
 * certs_sync() - one pass: read (or create) the Secret, rotate what is due, write the bundle
 * into the owned configurations, and hand a changed pair to on_pair. A pass that loses a race
 * to another replica starts again from a fresh read (a few times at most).
 * Return: 0 when a pair is being served; -EIO (the API server refused or could not be
 * reached; the reason in @err), -EAGAIN (lost every race), -EINVAL (bad options).
 * Thread-safety: one pass at a time per certs (they are serialised).
 */
int certs_sync(struct certs *c, struct ll_err *err);
/**
 * certs_served() - a copy of the pair last handed to on_pair (pki_pair_release() it).
 * Return: 0, or -ENOENT before the first successful pass.
 */
int certs_served(struct certs *c, struct pki_pair *out /* OUT */);
/**
 * certs_bundle() - a copy of the CA bundle (PEM, free() it) the last successful pass found in
 * the Secret, and its generation (what a configuration carrying it is annotated with).
 * Return: 0, or -ENOENT before the first successful pass.
 */
int certs_bundle(struct certs *c, char **bundle_pem /* OUT */, long long *gen /* OUT */);
/**
 * certs_start() - run a pass every @period_ms (0: CERTS_PERIOD_MS) on a thread of its own,
 * until certs_free(). A failed pass is logged and the next one comes a quarter period later.
 */
int certs_start(struct certs *c, int64_t period_ms);
/** certs_free() - stop the thread (the pass in flight finishes) and free; NULL is fine. */
void certs_free(struct certs *c);

#endif
