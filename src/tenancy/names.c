/* names.c - sanitised, hashed DNS labels and label values, and name collision detection. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/err.h"
#include "base/mem.h"
#include "kube/k8sname.h"
#include "tenancy/names.h"

/* Room left for the sanitised text in a hashed DNS label or label value: "<body>-<hash>". */
#define BODY_MAX(max) ((max)-1 - NAMES_HASH_LEN)

/* ASCII only on purpose: the <ctype.h> classes follow the locale. */
static bool is_lower_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(unsigned char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool is_value_punct(unsigned char c)
{
	return c == '.' || c == '_' || c == '-';
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* A DNS label of at most @max characters (@max <= NAMES_MAX leaves room for a prefix). */
static bool is_dns_label(const char *s, size_t max)
{
	return strnlen(s, max + 1) <= max && k8s_is_dns_label(s);
}

static size_t put(char *dst, size_t cap, size_t len, char c)
{
	if (len < cap)
		dst[len] = c;
	return len + 1;
}

/*
 * Sanitise @raw: alphanumerics are kept (lowercased when @dns), each run of other bytes becomes
 * one '-' (a label value keeps a lone '.', '_' or '-'), and runs at either end are dropped.
 * Writes the first @cap characters to @dst (no NUL) and returns the length of the whole result,
 * so that a call with @cap 0 only measures.
 */
static size_t sanitise(const char *raw, bool dns, char *dst, size_t cap)
{
	const unsigned char *p;
	size_t len = 0, run = 0;
	char sep = '-';

	for (p = (const unsigned char *)raw; *p != '\0'; p++) {
		unsigned char c = *p;

		if (dns && c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if (!(dns ? is_lower_alnum(c) : is_alnum(c))) {
			sep = (run == 0 && !dns && is_value_punct(c)) ? (char)c : '-';
			run++;
			continue;
		}
		if (run > 0 && len > 0)
			len = put(dst, cap, len, sep);
		run = 0;
		len = put(dst, cap, len, (char)c);
	}
	return len;
}

/* Length of @s[0..len) without trailing separators (a cut may end right after one). */
static size_t trim_end(const char *s, size_t len)
{
	while (len > 0 && !is_alnum((unsigned char)s[len - 1]))
		len--;
	return len;
}

/* First NAMES_HASH_LEN hex digits of SHA-256 over @parts, each followed by a NUL if @nul_after. */
static int hash_hex(const char *const parts[], size_t n, bool nul_after,
                    char hex[NAMES_HASH_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t i;
	int rc = -EIO;

	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out;
	for (i = 0; i < n; i++)
		if (EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]) + (nul_after ? 1 : 0)) != 1)
			goto out;
	if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen * 2 < NAMES_HASH_LEN)
		goto out;
	for (i = 0; i < NAMES_HASH_LEN / 2; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[NAMES_HASH_LEN] = '\0';
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* Finish @out, holding @len sanitised characters, as "<body>-<hash>" or "<hash>". */
static int append_hash(char out[NAMES_BUF], size_t len, const char *const parts[], size_t n,
                       bool nul_after)
{
	char hex[NAMES_HASH_LEN + 1];
	int rc = hash_hex(parts, n, nul_after, hex);

	if (rc < 0) {
		out[0] = '\0';
		return rc;
	}
	len = trim_end(out, len);
	if (len > 0)
		out[len++] = '-';
	memcpy(out + len, hex, sizeof(hex));
	return 0;
}

int names_dns_label(const char *raw, size_t max, char out[NAMES_BUF])
{
	size_t len;

	out[0] = '\0';
	if (raw == NULL || max < NAMES_MIN_MAX || max > NAMES_MAX)
		return -EINVAL;
	if (is_dns_label(raw, max)) {
		memcpy(out, raw, strlen(raw) + 1);
		return 0;
	}
	len = sanitise(raw, true, out, BODY_MAX(max));
	return append_hash(out, min_size(len, BODY_MAX(max)), &raw, 1, false);
}

int names_label_value(const char *raw, char out[NAMES_BUF])
{
	size_t len;

	out[0] = '\0';
	if (raw == NULL)
		return -EINVAL;
	if (k8s_is_label_value(raw)) {
		memcpy(out, raw, strlen(raw) + 1);
		return 0;
	}
	len = sanitise(raw, false, out, BODY_MAX(NAMES_MAX));
	return append_hash(out, min_size(len, BODY_MAX(NAMES_MAX)), &raw, 1, false);
}

/* The plain "<p0>-<p1>[-<p2>]" when every part is a valid label and the whole fits. */
static bool join_plain(const char *const parts[], size_t n, char out[NAMES_BUF])
{
	size_t i, pos = 0, len = n - 1;

	for (i = 0; i < n; i++) {
		if (!is_dns_label(parts[i], NAMES_MAX))
			return false;
		len += strlen(parts[i]);
	}
	if (len > NAMES_MAX)
		return false;
	for (i = 0; i < n; i++) {
		if (i > 0)
			out[pos++] = '-';
		memcpy(out + pos, parts[i], strlen(parts[i]));
		pos += strlen(parts[i]);
	}
	out[pos] = '\0';
	return true;
}

/* Split @budget fairly: parts wanting less get all they want, the longest are cut evenly. */
static void share(const size_t want[], size_t n, size_t budget, size_t give[])
{
	size_t i, cap = budget, used;

	for (;;) {
		used = 0;
		for (i = 0; i < n; i++)
			used += min_size(want[i], cap);
		if (used <= budget)
			break;
		cap--;
	}
	for (i = 0; i < n; i++) {
		give[i] = min_size(want[i], cap);
		if (want[i] > give[i] && used < budget) {
			give[i]++;
			used++;
		}
	}
}

static int join_hashed(const char *const parts[], size_t n, char out[NAMES_BUF])
{
	size_t want[3], give[3], i, len, pos = 0, present = 0;

	for (i = 0; i < n; i++) {
		want[i] = sanitise(parts[i], true, NULL, 0);
		present += want[i] > 0;
	}
	/* Separators between present parts come out of the body's room. */
	share(want, n, BODY_MAX(NAMES_MAX) - (present > 0 ? present - 1 : 0), give);
	for (i = 0; i < n; i++) {
		if (want[i] == 0)
			continue;
		if (pos > 0)
			out[pos++] = '-';
		len = sanitise(parts[i], true, out + pos, give[i]);
		pos += trim_end(out + pos, min_size(len, give[i]));
	}
	return append_hash(out, pos, parts, n, true);
}

int names_join(const char *a, const char *b, const char *suffix, char out[NAMES_BUF])
{
	const char *parts[3] = {a, b, suffix};
	size_t n = (suffix != NULL && suffix[0] != '\0') ? 3 : 2;

	out[0] = '\0';
	if (a == NULL || b == NULL)
		return -EINVAL;
	if (join_plain(parts, n, out))
		return 0;
	return join_hashed(parts, n, out);
}

static const char *opt(const char *s)
{
	return s != NULL ? s : "";
}

static int claim_final(struct names_claim *c)
{
	const char *parts[3];
	size_t n = 0;

	if (c->prefix != NULL && c->prefix[0] != '\0')
		parts[n++] = c->prefix;
	parts[n++] = c->name;
	if (c->suffix != NULL && c->suffix[0] != '\0')
		parts[n++] = c->suffix;
	if (n == 1)
		return names_dns_label(c->name, NAMES_MAX, c->final);
	return names_join(parts[0], parts[1], n == 3 ? parts[2] : NULL, c->final);
}

/* Orders claims by owner and raw parts; 0 means "the same request". */
static int raw_cmp(const struct names_claim *x, const struct names_claim *y)
{
	int d = strcmp(opt(x->owner), opt(y->owner));

	if (d == 0)
		d = strcmp(opt(x->prefix), opt(y->prefix));
	if (d == 0)
		d = strcmp(x->name, y->name);
	if (d == 0)
		d = strcmp(opt(x->suffix), opt(y->suffix));
	return d;
}

/* By final name, then request, then position, so each run of equal requests starts lowest. */
static int claim_cmp(const void *pa, const void *pb)
{
	const struct names_claim *x = *(const struct names_claim *const *)pa;
	const struct names_claim *y = *(const struct names_claim *const *)pb;
	int d = strcmp(x->final, y->final);

	if (d == 0)
		d = raw_cmp(x, y);
	if (d == 0)
		d = (x > y) - (x < y);
	return d;
}

/*
 * Mark the @n sorted claims @g that share one final name. Each run of equal requests is led by
 * its lowest-numbered claim; the two lowest leaders are the ones reported. Returns how many of
 * the claims collide (all or none).
 */
static size_t mark_group(const struct names_claim *base, struct names_claim **g, size_t n)
{
	const struct names_claim *first = NULL, *second = NULL, *lead = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		if (i > 0 && raw_cmp(g[i - 1], g[i]) == 0)
			continue;
		if (first == NULL || g[i] < first) {
			second = first;
			first = g[i];
		} else if (second == NULL || g[i] < second) {
			second = g[i];
		}
	}
	if (second == NULL)
		return 0;
	for (i = 0; i < n; i++) {
		if (i == 0 || raw_cmp(g[i - 1], g[i]) != 0)
			lead = g[i];
		g[i]->collides_with = (size_t)((lead == first ? second : first) - base);
	}
	return n;
}

int names_claims_check(struct names_claim *claims, size_t n, size_t *ncolliding, struct ll_err *err)
{
	struct names_claim **sorted = NULL;
	size_t i, j, count = 0;
	int rc = 0;

	if (ncolliding != NULL)
		*ncolliding = 0;
	for (i = 0; i < n; i++) {
		claims[i].collides_with = NAMES_NO_COLLISION;
		if (claims[i].name == NULL) {
			rc = ll_err_set(err, -EINVAL, "name claim %zu has no name", i);
			goto out;
		}
		rc = claim_final(&claims[i]);
		if (rc < 0) {
			ll_err_set(err, rc, "name claim %zu: cannot hash its name", i);
			goto out;
		}
	}
	sorted = xcalloc(n, sizeof(*sorted));
	for (i = 0; i < n; i++)
		sorted[i] = &claims[i];
	qsort(sorted, n, sizeof(*sorted), claim_cmp);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && strcmp(sorted[i]->final, sorted[j]->final) == 0; j++)
			;
		count += mark_group(claims, sorted + i, j - i);
	}
	if (ncolliding != NULL)
		*ncolliding = count;
out:
	free(sorted);
	return rc;
}
