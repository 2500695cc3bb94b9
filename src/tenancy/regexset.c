/* regexset.c - whole-string PCRE2 patterns with bounded matching (see regexset.h). */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "tenancy/regexset.h"

#include <errno.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"
#include "base/vec.h"

/* A pattern and its source. Grown as patterns are added: a set of one pattern (a Tenant's host
 * regex, one per cached Tenant in the webhook) costs one element, not RXS_SET_MAX. */
struct rx {
	pcre2_code *re;
	char *src;
};

struct rxs {
	pcre2_general_context *gctx;
	pcre2_match_context *mctx;
	VEC(struct rx) rx;
	size_t n; /* == rx.len */
};

static void *rx_alloc(PCRE2_SIZE n, void *ud)
{
	return xmalloc(n);
}

static void rx_free(void *ptr, void *ud)
{
	free(ptr);
}

struct rxs *rxs_new(void)
{
	struct rxs *set = xcalloc(1, sizeof(*set));

	set->gctx = pcre2_general_context_create(rx_alloc, rx_free, NULL);
	set->mctx = pcre2_match_context_create(set->gctx);
	pcre2_set_match_limit(set->mctx, RXS_MATCH_LIMIT);
	pcre2_set_depth_limit(set->mctx, RXS_DEPTH_LIMIT);
	pcre2_set_heap_limit(set->mctx, RXS_HEAP_LIMIT_KIB);
	return set;
}

void rxs_free(struct rxs *set)
{
	if (set == NULL)
		return;
	for (size_t i = 0; i < set->n; i++) {
		pcre2_code_free(set->rx.v[i].re);
		free(set->rx.v[i].src);
	}
	vec_release(&set->rx);
	pcre2_match_context_free(set->mctx);
	pcre2_general_context_free(set->gctx);
	free(set);
}

static pcre2_code *compile(const struct rxs *set, const char *pattern, size_t len,
                           struct ll_err *err)
{
	uint32_t opts = PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_UTF | PCRE2_NEVER_BACKSLASH_C;
	pcre2_compile_context *cctx = pcre2_compile_context_create(set->gctx);
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE offset = 0;
	pcre2_code *re;
	int code = 0;

	re = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &code, &offset, cctx);
	pcre2_compile_context_free(cctx);
	if (re == NULL) {
		if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
			snprintf((char *)msg, sizeof(msg), "error %d", code);
		ll_err_set(err, -EINVAL, "invalid regular expression at offset %zu: %s",
		           (size_t)offset, (const char *)msg);
	}
	return re;
}

int rxs_add(struct rxs *set, const char *pattern, size_t len, struct ll_err *err)
{
	pcre2_code *re;

	if (set->n >= RXS_SET_MAX)
		return ll_err_set(err, -E2BIG, "more than %d regular expressions", RXS_SET_MAX);
	if (len > RXS_PATTERN_MAX)
		return ll_err_set(err, -EMSGSIZE, "regular expression longer than %d bytes",
		                  RXS_PATTERN_MAX);
	if (memchr(pattern, '\0', len) != NULL)
		return ll_err_set(err, -EINVAL, "regular expression holds a NUL byte");
	re = compile(set, pattern, len, err);
	if (re == NULL)
		return -EINVAL;
	vec_push(&set->rx, ((struct rx){re, xstrndup(pattern, len)}));
	set->n = set->rx.len;
	return 0;
}

size_t rxs_count(const struct rxs *set)
{
	return set->n;
}

const char *rxs_pattern(const struct rxs *set, size_t i)
{
	return i < set->n ? set->rx.v[i].src : NULL;
}

int rxs_match(const struct rxs *set, const char *subject, size_t len, bool *limited)
{
	pcre2_match_data *md = NULL;
	int found = -1, rc;

	if (limited != NULL)
		*limited = false;
	if (set->n == 0 || len > RXS_SUBJECT_MAX)
		return -1;
	if (subject == NULL)
		subject = "";
	md = pcre2_match_data_create(1, set->gctx);
	for (size_t i = 0; i < set->n && found < 0; i++) {
		rc = pcre2_match(set->rx.v[i].re, (PCRE2_SPTR)subject, len, 0, 0, md, set->mctx);
		if (rc >= 0)
			found = (int)i;
		else if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
		         rc == PCRE2_ERROR_HEAPLIMIT) {
			if (limited != NULL)
				*limited = true;
		} else if (rc != PCRE2_ERROR_NOMATCH)
			break; /* not UTF-8: no pattern can match it */
	}
	pcre2_match_data_free(md);
	return found;
}
