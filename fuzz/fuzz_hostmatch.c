/*
 * fuzz_hostmatch.c - hostmatch agrees with an independent reading of hostmatch.h on any input:
 * what a host is (apimachinery's expression, POSIX regex), what allowed.hosts allows (a host is
 * allowed only when it equals a listed name or the regex, compiled here on its own, matches it),
 * and overlap (computed on label arrays; symmetric; HM_ONE_LABEL implies HM_ANY_LABELS). Any
 * regex, hostile ones included, is matched within its limits.
 *
 * Input: one byte of flags (1 denyWildcards, 2 names given, 4 regex given), then NUL-separated
 * fields: the host, another host, the regex, and up to 8 names.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <pcre2.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tenancy/denial.h"
#include "tenancy/hostmatch.h"
#include "tenancy/regexset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_NAMES  8
#define MAX_LABELS 128

struct field {
	const char *p;
	size_t n;
};

/* H1, H2: apimachinery's IsWildcardDNS1123Subdomain / IsDNS1123Subdomain shape, 253 bytes in
 * all, and no label over 63 bytes. */
static bool valid_host(struct field h)
{
	static regex_t re;
	static bool ready;
	char s[300];
	size_t label = 0;

	if (!ready) {
		if (regcomp(&re,
		            "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9]"
		            ")?)*$",
		            REG_EXTENDED | REG_NOSUB))
			abort();
		ready = true;
	}
	if (h.n == 0 || h.n > 253 || memchr(h.p, '\0', h.n))
		return false;
	for (size_t i = 0; i < h.n; i++) {
		label = h.p[i] == '.' ? 0 : label + 1;
		if (label > 63)
			return false;
	}
	memcpy(s, h.p, h.n);
	s[h.n] = '\0';
	return regexec(&re, s, 0, NULL, 0) == 0;
}

/* The regex on its own: ^(?:P)\z. 1 match, 0 none, -1 undecided (skip). */
static int regex_matches(struct field re, struct field host)
{
	char wrapped[RXS_PATTERN_MAX + 16];
	pcre2_match_context *mctx;
	pcre2_match_data *md;
	pcre2_code *code;
	PCRE2_SIZE off;
	int err, rc;

	/* verbs and \Q do not survive being wrapped; the library reads them whole */
	if (memmem(re.p, re.n, "(*", 2) || memmem(re.p, re.n, "\\Q", 2))
		return -1;
	snprintf(wrapped, sizeof(wrapped), "^(?:%.*s)\\z", (int)re.n, re.p);
	code = pcre2_compile((PCRE2_SPTR)wrapped, strlen(wrapped),
	                     PCRE2_UTF | PCRE2_NEVER_BACKSLASH_C, &err, &off, NULL);
	if (code == NULL)
		return -1;
	mctx = pcre2_match_context_create(NULL);
	pcre2_set_match_limit(mctx, RXS_MATCH_LIMIT);
	pcre2_set_depth_limit(mctx, RXS_DEPTH_LIMIT);
	pcre2_set_heap_limit(mctx, RXS_HEAP_LIMIT_KIB);
	md = pcre2_match_data_create(1, NULL);
	rc = pcre2_match(code, (PCRE2_SPTR)host.p, host.n, 0, 0, md, mctx);
	pcre2_match_data_free(md);
	pcre2_match_context_free(mctx);
	pcre2_code_free(code);
	return rc >= 0 ? 1 : rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
}

static bool wildcard(struct field h)
{
	return h.n >= 2 && h.p[0] == '*' && h.p[1] == '.';
}

static bool listed(struct field h, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == h.n && memcmp(names[i], h.p, h.n) == 0)
			return true;
	return false;
}

static void check_verdict(unsigned flags, struct field host, struct field re,
                          const char *const *names, size_t n)
{
	const char *regex[1] = {re.p};
	struct hm_allowed spec = {
	        .names = flags & 2 ? names : NULL,
	        .n_names = flags & 2 ? n : 0,
	        .regex = flags & 4 ? regex : NULL,
	        .n_regex = flags & 4 ? 1 : 0,
	        .deny_wildcards = flags & 1,
	};
	struct hm_policy *p = NULL;
	char msg[DENIAL_MSG_MAX];
	enum hm_verdict v, want;
	bool limited = false;
	int m = 0;

	if (hm_policy_new(&spec, &p, NULL) != 0)
		return; /* a regex that does not compile (or holds a NUL) */
	v = hm_check(p, host.p, host.n, &limited);
	if (!valid_host(host))
		want = HM_INVALID;
	else if ((flags & 1) && wildcard(host))
		want = HM_WILDCARD_DENIED;
	else if (!(flags & 6) || ((flags & 2) && listed(host, names, n)))
		want = HM_ALLOWED;
	else
		want = (flags & 4) && (m = regex_matches(re, host)) == 1 ? HM_ALLOWED
		                                                         : HM_NOT_ALLOWED;
	if (v != want && !(m < 0 || limited))
		abort();
	hm_denial(p, v, "acme", host.p, host.n, msg, sizeof(msg));
	for (const char *c = msg; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			abort();
	hm_policy_free(p);
}

/* Labels of a valid host, last first: "*.a.b" -> b, a, *. */
static size_t labels(struct field h, struct field out[MAX_LABELS])
{
	size_t n = 0, end = h.n;

	for (size_t i = h.n; i-- > 0;) {
		if (h.p[i] != '.')
			continue;
		out[n++] = (struct field){h.p + i + 1, end - i - 1};
		end = i;
	}
	out[n++] = (struct field){h.p, end};
	return n;
}

static bool same(struct field a, struct field b)
{
	return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

/* Does wildcard @w serve a name that @h serves too, label by label? */
static bool serves(struct field w, struct field h, bool any)
{
	struct field wl[MAX_LABELS], hl[MAX_LABELS];
	size_t wn = labels(w, wl), hn = labels(h, hl);

	if (hn < wn || (!any && hn != wn))
		return false;
	for (size_t i = 0; i + 1 < wn; i++)
		if (!same(wl[i], hl[i]))
			return false;
	return true; /* the same suffix, and one more label (HM_ONE_LABEL) or more */
}

static bool overlap_reading(struct field a, struct field b, bool any)
{
	if (!valid_host(a) || !valid_host(b))
		return false;
	return same(a, b) || (wildcard(a) && serves(a, b, any)) ||
	       (wildcard(b) && serves(b, a, any));
}

static void check_overlap(struct field a, struct field b)
{
	bool one = hm_overlap(a.p, a.n, b.p, b.n, HM_ONE_LABEL);
	bool any = hm_overlap(a.p, a.n, b.p, b.n, HM_ANY_LABELS);

	if (one != hm_overlap(b.p, b.n, a.p, a.n, HM_ONE_LABEL) ||
	    any != hm_overlap(b.p, b.n, a.p, a.n, HM_ANY_LABELS))
		abort(); /* not symmetric */
	if ((one && !any) || one != overlap_reading(a, b, false) ||
	    any != overlap_reading(a, b, true))
		abort();
	if (valid_host(a) != hm_overlap(a.p, a.n, a.p, a.n, HM_ONE_LABEL))
		abort(); /* a valid host overlaps itself */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct field f[3 + MAX_NAMES];
	static char copies[MAX_NAMES][512];
	const char *names[MAX_NAMES];
	const char *p = (const char *)data + 1, *end = (const char *)data + size, *nul;
	size_t nf = 0, n_names = 0;

	if (size < 1 || size > 4096)
		return 0;
	for (size_t i = 0; i < 3 + MAX_NAMES; i++)
		f[i] = (struct field){"", 0};
	while (nf < 3 + MAX_NAMES && p <= end) {
		nul = memchr(p, '\0', (size_t)(end - p));
		f[nf++] = (struct field){p, nul ? (size_t)(nul - p) : (size_t)(end - p)};
		p = nul ? nul + 1 : end + 1;
	}
	for (size_t i = 3; i < nf && f[i].n < sizeof(copies[0]); i++) {
		memcpy(copies[n_names], f[i].p, f[i].n);
		copies[n_names][f[i].n] = '\0';
		names[n_names] = copies[n_names];
		n_names++;
	}
	/* the regex as a C string: its field ends at a NUL anyway */
	if (f[2].n < RXS_PATTERN_MAX + 1) {
		static char re[RXS_PATTERN_MAX + 1];

		memcpy(re, f[2].p, f[2].n);
		re[f[2].n] = '\0';
		f[2].p = re;
	} else {
		f[2] = (struct field){"", 0};
	}
	check_verdict(data[0], f[0], f[2], names, n_names);
	check_overlap(f[0], f[1]);
	return 0;
}
