/*
 * hostmatch.h - the hosts of Ingresses and HTTPRoutes against a tenant's allowed.hosts, and
 * whether two hosts overlap.
 *
 * The admission webhook admits an Ingress or HTTPRoute host only when the tenant's
 * allowed.hosts {names, regex, denyWildcards} allows it, and refuses a host that overlaps one
 * another tenant uses (issue 12, point 7). This module decides both; the webhook reads the
 * objects and the caches.
 *
 * Hosts:
 * H1. A host is a DNS name as Kubernetes validates an Ingress host: lowercase labels
 *     [a-z0-9]([-a-z0-9]*[a-z0-9])? joined by '.', at most 253 bytes in all, no trailing dot;
 *     each label at most 63 bytes (RFC 1123; apimachinery bounds only the whole).
 * H2. A wildcard host is "*." and such a name ("*.example.com"); '*' appears nowhere else.
 * H3. What a wildcard serves: for an Ingress exactly one more label ("*.example.com" serves
 *     "a.example.com", not "a.b.example.com" nor "example.com"; networking.k8s.io/v1
 *     IngressRule), HM_ONE_LABEL; for a Gateway API HTTPRoute one or more labels (a suffix:
 *     "a.b.example.com" too), HM_ANY_LABELS.
 *
 * allowed.hosts:
 * A1. No allowed.hosts, or one with neither names nor regex: every valid host is allowed (the
 *     CRD: an absent list means no restriction), wildcards subject to A2.
 * A2. denyWildcards refuses every wildcard host, whatever would allow it.
 * A3. With names or regex: a host is allowed when it equals a listed name byte for byte, or a
 *     regex matches the whole host as written (regexset.h: anchored at both ends, bounded).
 *     A listed "*.example.com" allows the host "*.example.com" and no other (the CRD compares
 *     wildcard entries literally), so a wildcard host is allowed only when the wildcard itself
 *     is listed or matched. A regex sees the '*': ".*\.acme\.com" matches "*.acme.com",
 *     "[a-z0-9-]+\.acme\.com" does not.
 * A4. A host that is not valid by H1/H2 is refused; a listed name that is not valid allows
 *     nothing (it equals no valid host), and a regex that does not compile fails the policy.
 *
 * Overlap:
 * O1. Two valid hosts overlap when some name is served by both: the same host; a wildcard and a
 *     host it serves (H3); with HM_ANY_LABELS two wildcards one of which serves the other's
 *     names ("*.example.com" and "*.a.example.com"). Symmetric. Invalid hosts overlap nothing.
 *     Across an Ingress and an HTTPRoute use HM_ANY_LABELS: it finds every overlap
 *     HM_ONE_LABEL finds, and more.
 *
 * A struct hm_policy is built once (per Tenant) and then only read: any thread may use it. The
 * other functions are pure and allocate nothing.
 */
#ifndef LANDLORD_HOSTMATCH_H
#define LANDLORD_HOSTMATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct ll_err;

#define HM_HOST_MAX  253
#define HM_LABEL_MAX 63
/* Most names in allowed.hosts.names (the CRD's maxItems). */
#define HM_NAMES_MAX 256

enum hm_wildcard {
	HM_ONE_LABEL,  /* Ingress */
	HM_ANY_LABELS, /* Gateway API */
};

enum hm_verdict {
	HM_ALLOWED,
	HM_INVALID,         /* not a host (H1, H2) */
	HM_WILDCARD_DENIED, /* A2 */
	HM_NOT_ALLOWED,     /* A3 */
};

/** hm_host_problem() - NULL when @host (@len bytes) is a host by H1/H2, else why not. */
const char *hm_host_problem(const char *host, size_t len);

/** hm_is_wildcard() - does @host (@len bytes) start with "*."? */
bool hm_is_wildcard(const char *host, size_t len);

/* A tenant's allowed.hosts, as the caller read it; every pointer is borrowed. */
struct hm_allowed {
	const char *const *names; /* NULL: no names list; a list may be empty */
	size_t n_names;
	const char *const *regex; /* NULL: no regex (the CRD has one string) */
	size_t n_regex;
	bool deny_wildcards;
};

struct hm_policy;

/**
 * hm_policy_new() - build the policy of @spec (NULL: no allowed.hosts, A1). Copies what it
 * keeps. Return: 0 and *@out (free with hm_policy_free()); -EINVAL when a regex does not
 * compile, -EMSGSIZE or -E2BIG past RXS_PATTERN_MAX or the list caps (HM_NAMES_MAX, RXS_SET_MAX);
 * then *@out is NULL and @err (may be NULL) says which ("allowed.hosts.regex: invalid regular
 * expression at offset 3: ...").
 */
int hm_policy_new(const struct hm_allowed *spec, struct hm_policy **out /* OUT */,
                  struct ll_err *err);

/**
 * hm_policy_from_json() - hm_policy_new() of a Tenant's spec.allowed.hosts object (NULL or JSON
 * null: none). "regex" may be one string (the CRD) or an array of strings. A name holding a NUL
 * is kept as allowing nothing. Wrong types are -EINVAL.
 */
int hm_policy_from_json(const json_t *hosts, struct hm_policy **out /* OUT */, struct ll_err *err);

/** hm_policy_free() - NULL is a no-op. */
void hm_policy_free(struct hm_policy *p);

/**
 * hm_check() - decide @host (@len bytes) by A1..A4 under @p (NULL: no allowed.hosts).
 * @limited: OUT, may be NULL: a regex hit its match limit (counted as no match; log it).
 */
enum hm_verdict hm_check(const struct hm_policy *p, const char *host, size_t len,
                         bool *limited /* OUT */);

/**
 * hm_denial() - the one-line message for verdict @v (not HM_ALLOWED) of @host for @tenant,
 * into @msg (@size bytes; DENIAL_MSG_MAX holds any):
 *   host "x.evil.com" is not allowed for tenant "acme" (allowed: a.acme.com; hosts matching
 *   "[a-z]+\.acme\.io")
 *   wildcard host "*.acme.com" is not allowed for tenant "acme" (wildcard hosts are denied)
 *   host "Foo.com" is not a valid host name: a lowercase RFC 1123 subdomain must ...
 */
void hm_denial(const struct hm_policy *p, enum hm_verdict v, const char *tenant, const char *host,
               size_t len, char *msg /* OUT */, size_t size);

/** hm_overlap() - do hosts @a and @b overlap (O1) when wildcards serve as @mode says? */
bool hm_overlap(const char *a, size_t alen, const char *b, size_t blen, enum hm_wildcard mode);

/*
 * How a host index answers "who else uses a host overlapping @host" (adm_view's host_user):
 * the index's own lookups, asked in one order by hm_find_overlap().
 */
struct hm_index_ops {
	/* An owner of exact key @key (a host or "*.<domain>") other than the one the caller
	 * excludes, or NULL; *@host (OUT) is the host as the index stores it. */
	const char *(*exact)(const void *ud, const char *key, const char **host);
	/* For wildcard @wildcard: an owner of a host below its domain that hm_overlap() with
	 * HM_ANY_LABELS says overlaps, or NULL; *@host (OUT) is that host. */
	const char *(*below)(const void *ud, const char *wildcard, const char **host);
};

/**
 * hm_find_overlap() - @host itself, then each wildcard above it ("*.b.c", "*.c" for "a.b.c"),
 * then, for a wildcard, the hosts below its domain: the first owner @ops finds, or NULL.
 * *@other (OUT) is the host that owner uses.
 */
const char *hm_find_overlap(const struct hm_index_ops *ops, const void *ud, const char *host,
                            const char **other);

/**
 * hm_conflict() - the message refusing @host because it overlaps @other, a host of tenant
 * @other_tenant, into @msg (@size bytes):
 *   host "a.example.com" overlaps "*.example.com", a host of tenant "globex"
 */
void hm_conflict(const char *host, size_t len, const char *other, size_t other_len,
                 const char *other_tenant, char *msg /* OUT */, size_t size);

#endif
