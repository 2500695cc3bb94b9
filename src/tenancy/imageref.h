/*
 * imageref.h - container image references, normalised as Docker does, and matched against a
 * tenant's allowed registries.
 *
 * A Pod's image is a string such as "nginx", "ghcr.io/acme/api:1.4" or
 * "registry.example.com:5000/team/app@sha256:<64 hex>". The admission webhook refuses images
 * that are not from a registry the tenant's allowed.registries lists (issue 12, point 8), so it
 * must read them exactly as the container runtime will: this module follows
 * ParseNormalizedNamed() of github.com/distribution/reference v0.6.0 (what containerd and
 * Docker use), digests as github.com/opencontainers/go-digest v1.0.0 validates them.
 *
 * Parsing, rule by rule (docs/internals/matching.md has the examples and the sources):
 * R1. A reference is 1..IMAGEREF_INPUT_MAX bytes of the grammar below: no whitespace, no NUL,
 *     nothing outside ASCII.
 * R2. Exactly 64 lowercase hex digits is an image ID, not a reference: refused.
 * R3. The text before the first '/' is the registry host when it is "localhost", or holds a
 *     '.' or a ':', or an upper-case letter. Otherwise (and when there is no '/') the host is
 *     the implicit "docker.io" and the whole string is the repository path.
 * R4. The host "index.docker.io" is "docker.io". On "docker.io" a one-component path gets
 *     "library/" in front: "nginx", "docker.io/nginx" and "index.docker.io/nginx" are all
 *     "docker.io/library/nginx". No other host gets anything added.
 * R5. A host is DNS-like components [A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])? joined by '.', or
 *     an IPv6 address in brackets ("[fc00::1]"), then optionally ':' and a port of digits. It
 *     keeps its case (Docker does not lower it). At most IMAGEREF_DOMAIN_MAX bytes: landlord's
 *     cap, Docker has none.
 * R6. The path is one or more components separated by '/'; a component is runs of [a-z0-9]
 *     joined by one separator: '.', '_', "__" or any number of '-'. Upper case is refused. At
 *     most 255 bytes, "library/" included, the host not (v0.6.0 no longer counts the host).
 * R7. A tag is ':' then [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
 * R8. A digest is '@' then sha256, sha384 or sha512, ':' and 64, 96 or 128 lowercase hex
 *     digits (go-digest refuses other algorithms, other lengths and upper case). A reference
 *     may have both a tag and a digest; both are kept, as ParseNormalizedNamed() keeps them.
 * R9. landlord refuses what Docker would read without any host: when the text before the
 *     first '/' is taken for a host by R3 but is not one by R5 ("a_b.com/x"), Docker falls back
 *     to a name with no registry, and which registry a runtime then asks is anyone's guess.
 *
 * Allowed registries (allowed.registries of a Tenant):
 * M1. An entry is "" or a host, optionally followed by '/' and a path prefix: "ghcr.io/acme",
 *     "registry.example.com:5000", "docker.io/library". Its host is read by R3 and R5 but never
 *     implied: an entry must start with one ("nginx" is not an entry); "index.docker.io" is
 *     "docker.io"; "library/" is never added (write "docker.io/library" for official images);
 *     the path follows R6; no tag, no digest.
 * M2. An image is allowed by an entry when its "host/path" equals the entry or starts with the
 *     entry followed by '/'. Bytes compare exactly: "ghcr.io/acme" does not allow
 *     "ghcr.io/acme-evil/x", "ghcr.io" does not allow "ghcr.io.evil.com/x", a port is part of
 *     its host ("host:5000" allows neither "host/x" nor "host:50000/x"), and "GHCR.IO/acme/x"
 *     is not allowed by "ghcr.io/acme" (refused rather than guessed).
 * M3. The entry "" allows the images that name no registry (the CRD's meaning): "nginx",
 *     "bitnami/redis", not "docker.io/bitnami/redis".
 * M4. An entry that is not valid allows nothing and is left out of messages.
 *
 * Everything here is pure, allocates nothing, and is safe from any thread.
 */
#ifndef LANDLORD_IMAGEREF_H
#define LANDLORD_IMAGEREF_H

#include <stdbool.h>
#include <stddef.h>

struct ll_err;

/* Longest reference read (R1); every reference within the caps below is shorter. */
#define IMAGEREF_INPUT_MAX  1024
#define IMAGEREF_DOMAIN_MAX 255
#define IMAGEREF_PATH_MAX   255
#define IMAGEREF_TAG_MAX    128
#define IMAGEREF_DIGEST_MAX 135 /* "sha512:" and 128 hex digits */
/* "host/path", and the whole normalised reference. */
#define IMAGEREF_NAME_MAX (IMAGEREF_DOMAIN_MAX + 1 + IMAGEREF_PATH_MAX)
#define IMAGEREF_STR_MAX  (IMAGEREF_NAME_MAX + 1 + IMAGEREF_TAG_MAX + 1 + IMAGEREF_DIGEST_MAX)
/* Entries of an allowed list that are read; the CRD allows 64. */
#define IMAGEREF_LIST_MAX 256

/* A parsed, normalised reference: "docker.io" "library/nginx" "1.25" "". */
struct imageref {
	char domain[IMAGEREF_DOMAIN_MAX + 1];
	char path[IMAGEREF_PATH_MAX + 1];
	char tag[IMAGEREF_TAG_MAX + 1];       /* "" when none */
	char digest[IMAGEREF_DIGEST_MAX + 1]; /* "" when none */
	bool implicit_domain;                 /* written without a host (R3): matters for M3 */
};

/**
 * imageref_parse() - read @s (@len bytes, need not be NUL-terminated) by R1..R9 into @out.
 * Return: 0; -EINVAL when it is not a reference, -EMSGSIZE when longer than IMAGEREF_INPUT_MAX.
 * On error @err (may be NULL) says why in one line without the value ("the repository name
 * must be lowercase"), and @out is zeroed.
 */
int imageref_parse(const char *s, size_t len, struct imageref *out /* OUT */, struct ll_err *err);

/**
 * imageref_format() - @ref as "host/path[:tag][@digest]" into @out. imageref_parse() of it gives
 * @ref again (with implicit_domain false). Return: its length.
 */
size_t imageref_format(const struct imageref *ref, char out[IMAGEREF_STR_MAX + 1] /* OUT */);

/**
 * imageref_registry_normalize() - allowed-registry entry @s (@len bytes) by M1 into @out:
 * "index.docker.io/acme" -> "docker.io/acme", "" -> "".
 * Return: 0; -EINVAL (@err says why) or -EMSGSIZE when it is not an entry; @out is "" then.
 */
int imageref_registry_normalize(const char *s, size_t len, char out[IMAGEREF_NAME_MAX + 1],
                                struct ll_err *err);

/** imageref_registry_matches() - is @ref allowed by the normalised entry @entry (M2, M3)? */
bool imageref_registry_matches(const struct imageref *ref, const char *entry);

/**
 * imageref_allowed() - is @ref allowed by any of @entries (@n NUL-terminated entries as the
 * Tenant writes them; NULL ones and those from IMAGEREF_LIST_MAX on are skipped)?
 */
bool imageref_allowed(const struct imageref *ref, const char *const *entries, size_t n);

/**
 * imageref_check() - decide image @image (@len bytes) for tenant @tenant against @entries (as
 * for imageref_allowed()). Returns true when it parses and is allowed. Otherwise writes the
 * denial into @msg (@size bytes; DENIAL_MSG_MAX holds any), one line:
 *   image "docker.io/x:1" is not from a registry allowed for tenant "acme" (allowed: ghcr.io/acme)
 *   image "Nginx" is not a valid image reference: the repository name must be lowercase
 * The image is quoted as written; the allowed entries are listed normalised, the first
 * DENIAL_LIST_SHOWN and "and N more" (or "none"). Without a list (no allowed.registries) the
 * caller does not call this: an absent list means no restriction.
 */
bool imageref_check(const char *image, size_t len, const char *tenant, const char *const *entries,
                    size_t n, char *msg /* OUT */, size_t size);

#endif
