/*
 * imageref.c - image references read as distribution/reference's ParseNormalizedNamed() reads
 * them, and allowed-registry matching (see imageref.h for the rules R1..R9 and M1..M4).
 *
 * The grammar is checked by hand, piece by piece, instead of through one regular expression:
 * each piece has one meaning (host, path, tag, digest), so each can say what is wrong with it.
 * The pieces are found as the anchored regular expression finds them: the digest follows the
 * first '@', the tag the first ':' before it (no part of a path or tag holds '@' or ':').
 */
#include "tenancy/imageref.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "tenancy/denial.h"

#define DOCKER_HUB        "docker.io"
#define DOCKER_HUB_LEGACY "index.docker.io"
#define OFFICIAL_PREFIX   "library/"
#define NO_REGISTRY       "\"\" (images naming no registry)"

static const struct {
	const char *name;
	size_t hex;
} DIGEST_ALGORITHMS[] = {{"sha256", 64}, {"sha384", 96}, {"sha512", 128}};

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool is_word(char c)
{
	return is_alnum(c) || c == '_';
}

static bool is_hex_lower(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool is_hex(char c)
{
	return is_hex_lower(c) || (c >= 'A' && c <= 'F');
}

static bool has_byte_in(const char *s, size_t len, const char *set)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != '\0' && strchr(set, s[i]) != NULL)
			return true;
	return false;
}

static bool equals(const char *s, size_t len, const char *lit)
{
	return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

/* R2: 64 lowercase hex digits and nothing else. */
static bool is_identifier(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && is_hex_lower(s[i]))
		i++;
	return len == 64 && i == len;
}

/* R3: would Docker take @s (the text before the first '/') for a host? */
static bool looks_like_host(const char *s, size_t len)
{
	return equals(s, len, "localhost") || equals(s, len, DOCKER_HUB_LEGACY) ||
	       has_byte_in(s, len, ".:ABCDEFGHIJKLMNOPQRSTUVWXYZ");
}

/* The length of a DNS-like host at the start of @s (R5), or 0 when there is none. */
static size_t domain_name_len(const char *s, size_t len)
{
	size_t i = 0, start;

	for (;;) {
		start = i;
		while (i < len && (is_alnum(s[i]) || s[i] == '-'))
			i++;
		if (i == start || s[start] == '-' || s[i - 1] == '-')
			return 0;
		if (i == len || s[i] != '.')
			return i;
		i++;
	}
}

/* The length of "[ipv6]" at the start of @s (R5), or 0. */
static size_t ipv6_len(const char *s, size_t len)
{
	size_t i = 1;

	while (i < len && (is_hex(s[i]) || s[i] == ':'))
		i++;
	return i > 1 && i < len && s[i] == ']' ? i + 1 : 0;
}

/* R5: host and optional port, all of @s. */
static bool valid_domain(const char *s, size_t len)
{
	size_t i = len > 0 && s[0] == '[' ? ipv6_len(s, len) : domain_name_len(s, len);

	if (i == 0 || i == len)
		return i == len && len > 0;
	if (s[i] != ':' || i + 1 == len)
		return false;
	for (i++; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* The length of one separator (R6) at @s, or 0. */
static size_t separator_len(const char *s, size_t len)
{
	size_t i = 0;

	if (s[0] == '.')
		return 1;
	if (s[0] == '_')
		return len > 1 && s[1] == '_' ? 2 : 1;
	while (i < len && s[i] == '-')
		i++;
	return i;
}

/* R6: one path component, all of @s. */
static bool valid_component(const char *s, size_t len)
{
	size_t i = 0, sep;

	for (;;) {
		if (i >= len || !is_lower_alnum(s[i]))
			return false;
		while (i < len && is_lower_alnum(s[i]))
			i++;
		if (i == len)
			return true;
		sep = separator_len(s + i, len - i);
		if (sep == 0)
			return false;
		i += sep;
	}
}

/* R6: components separated by '/', all of @s. */
static bool valid_path(const char *s, size_t len)
{
	const char *end = s + len, *slash;

	for (;;) {
		slash = memchr(s, '/', (size_t)(end - s));
		if (!valid_component(s, slash ? (size_t)(slash - s) : (size_t)(end - s)))
			return false;
		if (slash == NULL)
			return true;
		s = slash + 1;
	}
}

/* R7 */
static bool valid_tag(const char *s, size_t len)
{
	if (len == 0 || len > IMAGEREF_TAG_MAX || !is_word(s[0]))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!is_word(s[i]) && s[i] != '.' && s[i] != '-')
			return false;
	return true;
}

/* R8: NULL when @s is a digest go-digest accepts, else why not. */
static const char *digest_problem(const char *s, size_t len)
{
	const char *colon = memchr(s, ':', len);
	size_t alen = colon ? (size_t)(colon - s) : len, hex = 0;

	for (size_t a = 0; a < sizeof(DIGEST_ALGORITHMS) / sizeof(*DIGEST_ALGORITHMS); a++)
		if (equals(s, alen, DIGEST_ALGORITHMS[a].name))
			hex = DIGEST_ALGORITHMS[a].hex;
	if (colon == NULL || hex == 0)
		return "the digest must be sha256:, sha384: or sha512: and hex digits";
	if (len - alen - 1 != hex)
		return "the digest has the wrong number of hex digits for its algorithm";
	for (size_t i = alen + 1; i < len; i++)
		if (!is_hex_lower(s[i]))
			return "the digest must be lowercase hex digits";
	return NULL;
}

static int invalid(struct ll_err *err, const char *why)
{
	return ll_err_set(err, -EINVAL, "%s", why);
}

/* R3, R4, R9: the host of @s into @out; the rest (path, tag, digest) in @rest. */
static int split_domain(const char *s, size_t len, struct imageref *out, const char **rest,
                        size_t *rest_len, struct ll_err *err)
{
	const char *slash = memchr(s, '/', len);
	size_t dlen = slash ? (size_t)(slash - s) : 0;

	if (slash == NULL || !looks_like_host(s, dlen)) {
		memcpy(out->domain, DOCKER_HUB, sizeof(DOCKER_HUB));
		out->implicit_domain = true;
		*rest = s;
		*rest_len = len;
		return 0;
	}
	if (dlen > IMAGEREF_DOMAIN_MAX)
		return ll_err_set(err, -EINVAL, "the registry host is longer than %d bytes",
		                  IMAGEREF_DOMAIN_MAX);
	if (!valid_domain(s, dlen))
		return invalid(err, "the registry host is not a host name, IPv4 or [IPv6] address "
		                    "with an optional :port");
	if (equals(s, dlen, DOCKER_HUB_LEGACY))
		memcpy(out->domain, DOCKER_HUB, sizeof(DOCKER_HUB));
	else
		memcpy(out->domain, s, dlen);
	*rest = slash + 1;
	*rest_len = len - dlen - 1;
	return 0;
}

/* R4, R6: the repository path @s into @out, after "library/" when Docker Hub adds it. */
static int set_path(struct imageref *out, const char *s, size_t len, bool official,
                    struct ll_err *err)
{
	size_t pre = official ? strlen(OFFICIAL_PREFIX) : 0;

	if (has_byte_in(s, len, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
		return invalid(err, "the repository name must be lowercase");
	if (len == 0 || !valid_path(s, len))
		return invalid(err, "the repository name must be lowercase letters and digits "
		                    "separated by '/', '.', '_', '__' or '-'");
	if (pre + len > IMAGEREF_PATH_MAX)
		return ll_err_set(err, -EINVAL, "the repository name is longer than %d bytes",
		                  IMAGEREF_PATH_MAX);
	memcpy(out->path, OFFICIAL_PREFIX, pre);
	memcpy(out->path + pre, s, len);
	return 0;
}

/* R6..R8 over what follows the host. */
static int parse_rest(struct imageref *out, const char *s, size_t len, struct ll_err *err)
{
	const char *at = memchr(s, '@', len), *colon;
	size_t name_len = at ? (size_t)(at - s) : len;
	bool official = strcmp(out->domain, DOCKER_HUB) == 0 && memchr(s, '/', len) == NULL;
	const char *why;
	int rc;

	colon = memchr(s, ':', name_len);
	rc = set_path(out, s, colon ? (size_t)(colon - s) : name_len, official, err);
	if (rc != 0)
		return rc;
	if (colon != NULL) {
		if (!valid_tag(colon + 1, name_len - (size_t)(colon - s) - 1))
			return invalid(err, "the tag must be 1 to 128 of A-Z a-z 0-9 _ . -, "
			                    "not starting with . or -");
		memcpy(out->tag, colon + 1, name_len - (size_t)(colon - s) - 1);
	}
	if (at != NULL) {
		why = digest_problem(at + 1, len - name_len - 1);
		if (why != NULL)
			return invalid(err, why);
		memcpy(out->digest, at + 1, len - name_len - 1);
	}
	return 0;
}

int imageref_parse(const char *s, size_t len, struct imageref *out, struct ll_err *err)
{
	const char *rest = NULL;
	size_t rest_len = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		rc = invalid(err, "it is empty");
	else if (len > IMAGEREF_INPUT_MAX)
		rc = ll_err_set(err, -EMSGSIZE, "it is longer than %d bytes", IMAGEREF_INPUT_MAX);
	else if (is_identifier(s, len))
		rc = invalid(err, "64 hex digits are an image ID, not a reference");
	else
		rc = split_domain(s, len, out, &rest, &rest_len, err);
	if (rc == 0)
		rc = parse_rest(out, rest, rest_len, err);
	if (rc != 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

size_t imageref_format(const struct imageref *ref, char out[IMAGEREF_STR_MAX + 1])
{
	int n = snprintf(out, IMAGEREF_STR_MAX + 1, "%s/%s%s%s%s%s", ref->domain, ref->path,
	                 ref->tag[0] ? ":" : "", ref->tag, ref->digest[0] ? "@" : "", ref->digest);

	return n < 0 ? 0 : (size_t)n;
}

int imageref_registry_normalize(const char *s, size_t len, char out[IMAGEREF_NAME_MAX + 1],
                                struct ll_err *err)
{
	const char *slash = memchr(s, '/', len);
	size_t dlen = slash ? (size_t)(slash - s) : len, plen = slash ? len - dlen - 1 : 0;

	out[0] = '\0';
	if (len > IMAGEREF_NAME_MAX)
		return ll_err_set(err, -EMSGSIZE, "an allowed registry is at most %d bytes",
		                  IMAGEREF_NAME_MAX);
	if (len == 0)
		return 0;
	if (!looks_like_host(s, dlen))
		return invalid(err, "an allowed registry starts with a host: one with a '.' or a "
		                    "':port', or localhost");
	if (dlen > IMAGEREF_DOMAIN_MAX || !valid_domain(s, dlen))
		return invalid(err, "the registry host is not a host name, IPv4 or [IPv6] address "
		                    "with an optional :port");
	if (slash != NULL && (plen > IMAGEREF_PATH_MAX || !valid_path(slash + 1, plen)))
		return invalid(err, "the path of an allowed registry must be lowercase letters and "
		                    "digits separated by '/', '.', '_', '__' or '-'");
	if (equals(s, dlen, DOCKER_HUB_LEGACY))
		snprintf(out, IMAGEREF_NAME_MAX + 1, "%s%.*s", DOCKER_HUB, (int)(len - dlen),
		         s + dlen);
	else
		snprintf(out, IMAGEREF_NAME_MAX + 1, "%.*s", (int)len, s);
	return 0;
}

bool imageref_registry_matches(const struct imageref *ref, const char *entry)
{
	char name[IMAGEREF_NAME_MAX + 2];
	size_t n = strlen(entry);

	if (n == 0)
		return ref->implicit_domain;
	snprintf(name, sizeof(name), "%s/%s", ref->domain, ref->path);
	return strncmp(name, entry, n) == 0 && (name[n] == '\0' || name[n] == '/');
}

bool imageref_allowed(const struct imageref *ref, const char *const *entries, size_t n)
{
	char entry[IMAGEREF_NAME_MAX + 1];

	for (size_t i = 0; i < n && i < IMAGEREF_LIST_MAX; i++)
		if (entries[i] != NULL &&
		    imageref_registry_normalize(entries[i], strlen(entries[i]), entry, NULL) == 0 &&
		    imageref_registry_matches(ref, entry))
			return true;
	return false;
}

static void list_entries(struct denial *d, const char *const *entries, size_t n)
{
	char entry[IMAGEREF_NAME_MAX + 1];
	size_t shown = 0;

	for (size_t i = 0; i < n && i < IMAGEREF_LIST_MAX; i++) {
		if (entries[i] == NULL ||
		    imageref_registry_normalize(entries[i], strlen(entries[i]), entry, NULL) != 0)
			continue;
		if (entry[0] == '\0')
			denial_item(d, shown++, NO_REGISTRY, strlen(NO_REGISTRY), false);
		else
			denial_item(d, shown++, entry, strlen(entry), false);
	}
	denial_list_end(d, shown);
}

bool imageref_check(const char *image, size_t len, const char *tenant, const char *const *entries,
                    size_t n, char *msg, size_t size)
{
	struct imageref ref;
	struct ll_err err = {{0}};
	struct denial d;

	if (imageref_parse(image, len, &ref, &err) == 0 && imageref_allowed(&ref, entries, n))
		return true;
	denial_init(&d, msg, size);
	denial_text(&d, "image ");
	denial_quote(&d, image, len);
	if (ref.path[0] == '\0') {
		denial_text(&d, " is not a valid image reference: %s", err.msg);
		return false;
	}
	denial_text(&d, " is not from a registry allowed for tenant ");
	denial_quote(&d, tenant, strlen(tenant));
	denial_text(&d, " (allowed: ");
	list_entries(&d, entries, n);
	denial_text(&d, ")");
	return false;
}
