/*
 * names.h - turn arbitrary user and tenant strings into Kubernetes names and label values.
 *
 * Tenants become namespaces ("<tenant>-<name>", "<tenant>-<user>-sandbox"), and users such as
 * "a@b.com" or "system:serviceaccount:ns:sa" appear in names and labels. Those must be RFC 1123
 * DNS labels (a-z 0-9 '-', alphanumeric at both ends, <= 63) or label values (A-Z a-z 0-9 '.' '_'
 * '-', alphanumeric at both ends, <= 63, or empty). This module maps any byte string (UTF-8 or
 * not) onto them.
 *
 * Invariants:
 * - Every output is valid, and the same input always gives the same output (no state, no
 *   randomness; safe from any thread).
 * - An input that is already valid and fits is returned unchanged, without a hash.
 * - Otherwise the output is the sanitised input (ASCII letters lowercased for DNS labels; each
 *   run of other characters becomes one '-'; ends trimmed), cut to fit, followed by "-" and
 *   NAMES_HASH_LEN lowercase hex digits of SHA-256 over the raw input. An input with nothing
 *   usable ("", "@@@", "日本") becomes the hash alone. So two different raw strings practically
 *   never share an output, and callers keep the raw value in an annotation.
 * - Nothing is renamed behind the caller's back to avoid a clash: names_claims_check() finds
 *   claims that end up with the same name (tenant "a" + "b-c" and tenant "a-b" + "c" both give
 *   "a-b-c") and reports them; deciding what to do is the caller's job.
 *
 * Outputs go into caller-owned char[NAMES_BUF] arrays; only names_claims_check() allocates, and
 * only temporarily.
 */
#ifndef LANDLORD_NAMES_H
#define LANDLORD_NAMES_H

#include <stddef.h>
#include <stdint.h>

struct ll_err;

/* Longest DNS label and label value Kubernetes accepts. */
#define NAMES_MAX 63
/* Size of every output array: NAMES_MAX characters and the NUL. */
#define NAMES_BUF (NAMES_MAX + 1)
/* Hex digits of the hash appended to changed names. */
#define NAMES_HASH_LEN 8
/* Smallest @max names_dns_label() accepts: one character, '-', the hash. */
#define NAMES_MIN_MAX (NAMES_HASH_LEN + 2)
/* names_claim.collides_with when the claim collides with nothing. */
#define NAMES_NO_COLLISION SIZE_MAX

/**
 * names_dns_label() - map @raw to an RFC 1123 DNS label of at most @max characters.
 * @raw: any NUL-terminated byte string (borrowed).
 * @max: NAMES_MIN_MAX..NAMES_MAX; less than NAMES_MAX leaves room for a caller's own prefix.
 * @out: receives the label (caller-owned).
 * Examples: "alice" -> "alice"; "Alice" -> "alice-<hash>"; "a@b.com" -> "a-b-com-<hash>";
 * "" -> "<hash>"; a 300-character name -> its first @max - 9 sanitised characters + "-<hash>".
 * Return: 0; -EINVAL when @raw is NULL or @max is out of range; -EIO when OpenSSL cannot hash.
 * @out is an empty string on error.
 */
int names_dns_label(const char *raw, size_t max, char out[NAMES_BUF] /* OUT */);

/**
 * names_label_value() - map @raw to a label value (at most NAMES_MAX characters).
 * @raw: any NUL-terminated byte string (borrowed).
 * @out: receives the value (caller-owned); "" only when @raw is "".
 * Case is kept. A lone '.', '_' or '-' between alphanumerics is kept; any other run of
 * characters outside [A-Za-z0-9] becomes one '-'. Example: "First.Last@x.io" ->
 * "First.Last-x.io-<hash>"; "system:serviceaccount:ns:sa" -> "system-serviceaccount-ns-sa-<hash>".
 * Return: 0; -EINVAL when @raw is NULL; -EIO when OpenSSL cannot hash. @out is "" on error.
 */
int names_label_value(const char *raw, char out[NAMES_BUF] /* OUT */);

/**
 * names_join() - build the DNS label "<a>-<b>" or "<a>-<b>-<suffix>".
 * @a, @b: NUL-terminated byte strings (borrowed), e.g. tenant and user.
 * @suffix: fixed last part such as "sandbox" (borrowed); NULL or "" for none.
 * @out: receives the label (caller-owned).
 * When every part is a valid DNS label and the joined string fits in NAMES_MAX, the plain join
 * is the result: ("acme", "dev") -> "acme-dev". Otherwise each part is sanitised as in
 * names_dns_label() without its own hash, empty parts are dropped, the longest parts are cut
 * until everything fits, and "-" plus the hash of the raw parts (each followed by a NUL byte)
 * is appended: ("acme", "a@b.com", "sandbox") -> "acme-a-b-com-sandbox-<hash>". The plain join
 * can be ambiguous (("a", "b-c") and ("a-b", "c") both give "a-b-c"); names_claims_check()
 * detects that.
 * Return: 0; -EINVAL when @a or @b is NULL; -EIO when OpenSSL cannot hash. @out is "" on error.
 */
int names_join(const char *a, const char *b, const char *suffix, char out[NAMES_BUF] /* OUT */);

/*
 * One request for a name. The final name is names_dns_label(name, NAMES_MAX) when there is no
 * prefix and no suffix, else names_join() over the present parts in order (prefix, name,
 * suffix). Two claims with the same owner and the same raw parts are one request made twice,
 * not a collision.
 */
struct names_claim {
	const char *owner;  /* who asks, e.g. the Tenant's name (borrowed; NULL counts as "") */
	const char *prefix; /* e.g. the tenant for "<tenant>-<name>" (borrowed; NULL or "": none) */
	const char *name;   /* the requested name (borrowed; required) */
	const char *suffix; /* e.g. "sandbox" (borrowed; NULL or "": none) */
	char final[NAMES_BUF]; /* OUT: the resulting DNS label */
	/* OUT: index of the lowest-numbered claim with the same final name but another owner or
	 * other raw parts, or NAMES_NO_COLLISION. */
	size_t collides_with;
};

/**
 * names_claims_check() - compute every claim's final name and find the collisions.
 * @claims: @n claims (caller-owned); the inputs are read, final and collides_with written.
 * @ncolliding: OUT, optional: how many claims collide with at least one other claim.
 * @err: optional detail on a negative return.
 * Nothing is renamed: claims that collide keep their final name and are marked. O(n log n).
 * Thread-safety: safe on distinct arrays.
 * Return: 0 (collisions are a result, not a failure); -EINVAL when a claim has no name;
 * -EIO when OpenSSL cannot hash.
 */
int names_claims_check(struct names_claim *claims, size_t n, size_t *ncolliding /* OUT */,
                       struct ll_err *err);

#endif
