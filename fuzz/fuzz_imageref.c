/*
 * fuzz_imageref.c - imageref agrees with an independent reading of distribution/reference on
 * any input, normalising is idempotent, and matching never crosses a non-'/' boundary.
 *
 * The independent reading is ParseNormalizedNamed() as Go writes it: splitDockerDomain() on
 * strings, then distribution/reference's own regular expressions (regexp.go, v0.6.0) run by
 * PCRE2 (leftmost-first, as Go's regexp), then go-digest's checks. imageref.c shares no code
 * with it. Where landlord refuses on purpose (imageref.h R9: a host Docker would drop; R5: a
 * host over IMAGEREF_DOMAIN_MAX bytes) the reading must have accepted exactly that.
 *
 * Input: one byte of mode, then
 *   mode even: the reference (NULs included);
 *   mode odd:  the reference, a NUL, an allowed-registry entry.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tenancy/denial.h"
#include "tenancy/imageref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* distribution/reference regexp.go */
#define ALNUM  "[a-z0-9]+"
#define SEP    "(?:[._]|__|[-]+)"
#define PATHC  ALNUM "(?:" SEP ALNUM ")*"
#define REMOTE PATHC "(?:/" PATHC ")*"
#define DCOMP  "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
#define DNAME  DCOMP "(?:\\." DCOMP ")*"
#define HOST   "(?:" DNAME "|\\[(?:[a-fA-F0-9:]+)\\])"
#define DOMAIN HOST "(?::[0-9]+)?"
#define TAG    "[\\w][\\w.-]{0,127}"
#define DIGEST "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}"

enum { RX_REFERENCE, RX_NAME, RX_IDENTIFIER, RX_DOMAIN, RX_REMOTE, RX_COUNT };

static const char *const RX_SRC[RX_COUNT] = {
        "^((?:" DOMAIN "/)?" REMOTE ")(?::(" TAG "))?(?:@(" DIGEST "))?\\z",
        "^(?:(" DOMAIN ")/)?(" REMOTE ")\\z",
        "^[a-f0-9]{64}\\z",
        "^" DOMAIN "\\z",
        "^" REMOTE "\\z",
};

struct slice {
	const char *p;
	size_t n;
};

struct reading {
	char domain[2048], path[2048], tag[2048], digest[2048];
};

/* Match @which on @s; the captures in @cap[1..]. -1 when PCRE2 gave up (skip the input). */
static int rx(int which, const char *s, size_t n, struct slice cap[4])
{
	static pcre2_code *re[RX_COUNT];
	static pcre2_match_data *md;
	PCRE2_SIZE *ov, off;
	int rc, err;

	if (re[which] == NULL) {
		re[which] = pcre2_compile((PCRE2_SPTR)RX_SRC[which], PCRE2_ZERO_TERMINATED, 0, &err,
		                          &off, NULL);
		md = md ? md : pcre2_match_data_create(8, NULL);
		if (re[which] == NULL)
			abort();
	}
	rc = pcre2_match(re[which], (PCRE2_SPTR)s, n, 0, 0, md, NULL);
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	if (rc < 0)
		return -1;
	ov = pcre2_get_ovector_pointer(md);
	for (int i = 0; cap != NULL && i < 4; i++) {
		bool set = i < rc && ov[2 * i] != PCRE2_UNSET;
		cap[i].p = set ? s + ov[2 * i] : "";
		cap[i].n = set ? ov[2 * i + 1] - ov[2 * i] : 0;
	}
	return 1;
}

static bool eq(struct slice s, const char *lit)
{
	return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

/* strings.ToLower(s) != s, for what matters here: A-Z, or bytes Go would rewrite. */
static bool not_lower(struct slice s)
{
	for (size_t i = 0; i < s.n; i++)
		if ((s.p[i] >= 'A' && s.p[i] <= 'Z') || (unsigned char)s.p[i] >= 0x80)
			return true;
	return false;
}

static void copy(char *dst, struct slice s)
{
	memcpy(dst, s.p, s.n);
	dst[s.n] = '\0';
}

/* go-digest v1.0.0 Digest.Validate() with sha256, sha384 and sha512 available. */
static bool digest_ok(struct slice d)
{
	const char *colon = memchr(d.p, ':', d.n);
	struct slice alg = {d.p, colon ? (size_t)(colon - d.p) : 0};
	size_t want = eq(alg, "sha256") ? 64 : eq(alg, "sha384") ? 96 : eq(alg, "sha512") ? 128 : 0;

	if (colon == NULL || want == 0 || d.n - alg.n - 1 != want)
		return false;
	for (size_t i = alg.n + 1; i < d.n; i++)
		if (!((d.p[i] >= '0' && d.p[i] <= '9') || (d.p[i] >= 'a' && d.p[i] <= 'f')))
			return false;
	return true;
}

/* ParseNormalizedNamed(): 1 accepted into @r, 0 refused, -1 undecided. */
static int reading(const char *s, size_t n, struct reading *r)
{
	static char t[4096];
	struct slice in = {s, n}, dom = {"docker.io", 9}, rem = in, cap[4], name[4];
	const char *slash = memchr(s, '/', n), *colon;
	size_t tn;
	bool lib;
	int rc;

	if (n == 0 || n > 2000 || rx(RX_IDENTIFIER, s, n, NULL) != 0)
		return n > 2000 ? -1 : 0;
	if (slash != NULL) {
		struct slice md = {s, (size_t)(slash - s)}, rest = {slash + 1, n - md.n - 1};

		if (eq(md, "localhost") || memchr(md.p, '.', md.n) || memchr(md.p, ':', md.n) ||
		    not_lower(md)) {
			if (!eq(md, "index.docker.io"))
				dom = md;
			rem = rest;
		}
	}
	lib = eq(dom, "docker.io") && memchr(rem.p, '/', rem.n) == NULL;
	colon = memchr(rem.p, ':', rem.n);
	if (not_lower((struct slice){rem.p, colon ? (size_t)(colon - rem.p) : rem.n}))
		return 0;
	tn = 0; /* domain + "/" + remainder, NULs and all */
	memcpy(t, dom.p, dom.n);
	tn += dom.n;
	memcpy(t + tn, lib ? "/library/" : "/", lib ? 9 : 1);
	tn += lib ? 9 : 1;
	memcpy(t + tn, rem.p, rem.n);
	tn += rem.n;
	rc = rx(RX_REFERENCE, t, tn, cap);
	if (rc <= 0)
		return rc;
	if (rx(RX_NAME, cap[1].p, cap[1].n, name) != 1)
		abort(); /* the name of a reference is a name */
	if (name[2].n > 255 || (cap[3].n > 0 && !digest_ok(cap[3])))
		return 0;
	copy(r->domain, name[1]);
	copy(r->path, name[2]);
	copy(r->tag, cap[2]);
	copy(r->digest, cap[3]);
	return 1;
}

static void check_parse(const char *s, size_t n, struct imageref *ref, bool *ok)
{
	struct reading r;
	int want = reading(s, n, &r), got;
	struct ll_err err = {{0}};

	got = imageref_parse(s, n, ref, &err);
	*ok = got == 0;
	if (got != 0 && (err.msg[0] == '\0' || strchr(err.msg, '\n') || ref->path[0] != '\0'))
		abort();
	if (want < 0)
		return;
	if (want == 0 && got == 0)
		abort(); /* landlord accepts what Docker refuses */
	if (want == 1 && got != 0) {
		if (r.domain[0] == '\0' || strlen(r.domain) > IMAGEREF_DOMAIN_MAX)
			return; /* R9, R5: refused on purpose */
		abort();
	}
	if (want == 1 && (strcmp(r.domain, ref->domain) || strcmp(r.path, ref->path) ||
	                  strcmp(r.tag, ref->tag) || strcmp(r.digest, ref->digest)))
		abort();
}

/* Normalising twice changes nothing; the formatted reference reads back as itself. */
static void check_idempotent(const struct imageref *ref)
{
	char once[IMAGEREF_STR_MAX + 1], twice[IMAGEREF_STR_MAX + 1];
	struct imageref again;

	imageref_format(ref, once);
	if (imageref_parse(once, strlen(once), &again, NULL) != 0 || again.implicit_domain)
		abort();
	imageref_format(&again, twice);
	if (strcmp(once, twice) || strcmp(ref->domain, again.domain) ||
	    strcmp(ref->path, again.path) || strcmp(ref->tag, again.tag) ||
	    strcmp(ref->digest, again.digest))
		abort();
}

/* The entry by M1, read with the regular expressions: 1 valid into @out, 0 not, -1 undecided. */
static int entry_reading(const char *s, size_t n, char *out)
{
	const char *slash = memchr(s, '/', n);
	struct slice host = {s, slash ? (size_t)(slash - s) : n};
	struct slice path = {slash ? slash + 1 : "", slash ? n - host.n - 1 : 0};
	int rc;

	out[0] = '\0';
	if (n == 0)
		return 1;
	if (n > IMAGEREF_NAME_MAX || host.n > IMAGEREF_DOMAIN_MAX || path.n > IMAGEREF_PATH_MAX)
		return 0;
	if (!(eq(host, "localhost") || memchr(host.p, '.', host.n) || memchr(host.p, ':', host.n) ||
	      not_lower(host)))
		return 0;
	rc = rx(RX_DOMAIN, host.p, host.n, NULL);
	if (rc == 1 && slash != NULL)
		rc = rx(RX_REMOTE, path.p, path.n, NULL);
	if (rc != 1)
		return rc;
	if (eq(host, "index.docker.io"))
		snprintf(out, IMAGEREF_NAME_MAX + 1, "docker.io%.*s", (int)(n - host.n),
		         s + host.n);
	else
		snprintf(out, IMAGEREF_NAME_MAX + 1, "%.*s", (int)n, s);
	return 1;
}

/* Does every '/'-separated component of @entry open @name, in order? */
static bool components_prefix(const char *name, const char *entry)
{
	while (*entry != '\0') {
		size_t a = strcspn(name, "/"), b = strcspn(entry, "/");

		if (a != b || memcmp(name, entry, a) != 0)
			return false;
		name += a + (name[a] == '/');
		entry += b + (entry[b] == '/');
	}
	return true;
}

static void check_match(const struct imageref *ref, const char *e, size_t n)
{
	char want[IMAGEREF_NAME_MAX + 1], got[IMAGEREF_NAME_MAX + 1], name[IMAGEREF_NAME_MAX + 2];
	int valid = entry_reading(e, n, want);
	bool m;

	if ((imageref_registry_normalize(e, n, got, NULL) == 0) != (valid == 1) && valid >= 0)
		abort();
	if (valid != 1)
		return;
	if (strcmp(want, got) != 0)
		abort();
	m = imageref_registry_matches(ref, got);
	snprintf(name, sizeof(name), "%s/%s", ref->domain, ref->path);
	if (got[0] == '\0' ? m != ref->implicit_domain : m != components_prefix(name, got))
		abort();
	/* a match never crosses a host: the entry's host is the image's, byte for byte */
	if (m && got[0] != '\0' &&
	    (strcspn(got, "/") != strlen(ref->domain) ||
	     strncmp(got, ref->domain, strlen(ref->domain)) != 0))
		abort();
}

static void check_message(const char *s, size_t n, const char *e, size_t en)
{
	char msg[DENIAL_MSG_MAX], entry[IMAGEREF_NAME_MAX + 1];
	const char *entries[1] = {entry};

	snprintf(entry, sizeof(entry), "%.*s", (int)(en < IMAGEREF_NAME_MAX ? en : 0), e);
	if (imageref_check(s, n, "acme", entries, 1, msg, sizeof(msg)))
		return;
	for (const char *p = msg; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			abort();
	if (strncmp(msg, "image \"", 7) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data + 1, *e = "", *nul;
	size_t n = size > 0 ? size - 1 : 0, en = 0;
	struct imageref ref;
	bool ok;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		nul = memchr(s, '\0', n);
		if (nul != NULL) {
			e = nul + 1;
			en = n - (size_t)(nul - s) - 1;
			n = (size_t)(nul - s);
		}
	}
	check_parse(s, n, &ref, &ok);
	if (ok)
		check_idempotent(&ref);
	if (ok && (data[0] & 1))
		check_match(&ref, e, en);
	check_message(s, n, e, en);
	return 0;
}
