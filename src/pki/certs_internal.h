/*
 * certs_internal.h - what certs.c (the Secret and the rotation) and certs_publish.c (the
 * bundle in landlord's webhook configurations) share. Users include pki/certs.h.
 */
#ifndef LANDLORD_CERTS_INTERNAL_H
#define LANDLORD_CERTS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "pki/certs.h"
#include "pki/pki.h"

/* What the Secret says, decoded. */
struct certs_state {
	struct pki_pair ca;      /* ca.crt, ca.key */
	struct pki_pair next;    /* next-ca.crt, next-ca.key; NULLs when no rotation is on */
	struct pki_pair serving; /* tls.crt, tls.key; may be unusable (then re-minted) */
	struct pki_bundle bundle;
	long long gen;       /* ANNOT_CA_BUNDLE_GEN */
	long long pub_gen;   /* ANNOT_CA_BUNDLE_PUBLISH: generation... */
	long long pub_at;    /* ...and when */
	long long old_until; /* ANNOT_OLD_CAS_UNTIL; 0: none */
};

/*
 * certs__publish() - write @st's bundle into every owned configuration that does not carry its
 * generation yet. *@all: every owned configuration that exists carries it now.
 * Return: 0 (conflicts are not errors: *@all is then false), or -EIO with the reason.
 */
int certs__publish(struct kc_client *kc, const char *const *validating, const char *const *mutating,
                   const struct certs_state *st, bool *all, struct ll_err *err);

#endif
