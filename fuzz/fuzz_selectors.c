/*
 * fuzz_selectors.c - the tenant proxy's selector and query rewriting (src/proxy/selectors.h) on
 * any input. The first byte picks what the rest is: 'l' a label selector, 'f' a field selector,
 * anything else a query (of the namespace list when even, of a namespaced list when odd).
 * Checks:
 *   - a label selector lib/kube/selector.h parses is taken (unless it compares the namespace's
 *     name as a number), and converted it parses too and matches each of the tenant's
 *     namespaces under its upstream name exactly when the original matches it under its shown
 *     name;
 *   - a field selector keeps its terms: each is as written, or the same field and operator
 *     with a value that is a namespace of the tenant's or PX_NO_NAMESPACE;
 *   - a converted namespace-list query, read as Go reads it (url.ParseQuery), has at least one
 *     labelSelector, and every one of them begins with the tenant's requirement.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "kube/selector.h"
#include "proxy/nsmap.h"
#include "proxy/selectors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TENANT_LABEL "landlord.dev/tenant=acme"

static const char *const FULL[] = {"acme-dev", "dev", "acme-acme-x", "acme-x", "legacy"};

static void check_labels(const struct px_nsmap *m, const char *in)
{
	struct buf out = BUF_INIT(1u << 20);
	char why[256];
	struct sel *orig = NULL, *conv = NULL;
	int rc = px_label_selector_view(m, in, &out, why, sizeof(why));

	if (sel_parse(in, &orig, NULL) == 0) {
		if (rc != 0 && !strstr(why, "as a number"))
			abort();
		if (rc == 0 && sel_parse(buf_cstr(&out), &conv, NULL) != 0)
			abort();
		for (size_t i = 0; conv && i < px_nsmap_len(m); i++) {
			const char *shown, *full = px_nsmap_at(m, i, &shown);
			json_t *a = json_pack("{s:s, s:s}", "kubernetes.io/metadata.name", shown,
			                      "k", "v");
			json_t *b = json_pack("{s:s, s:s}", "kubernetes.io/metadata.name", full,
			                      "k", "v");

			if (sel_matches(orig, a) != sel_matches(conv, b))
				abort();
			json_decref(a);
			json_decref(b);
		}
	}
	sel_free(conv);
	sel_free(orig);
	buf_release(&out);
}

/* The unescaped ',' of a field selector, as Go splits its terms. */
static size_t terms(const char *s, const char **at, size_t max)
{
	size_t n = 0;
	bool slash = false;

	at[n++] = s;
	for (; *s; s++) {
		if (slash)
			slash = false;
		else if (*s == '\\')
			slash = true;
		else if (*s == ',' && n < max)
			at[n++] = s + 1;
	}
	return n;
}

static size_t term_len(const char *t)
{
	size_t n = 0;
	bool slash = false;

	for (; t[n] && (slash || t[n] != ','); n++)
		slash = !slash && t[n] == '\\';
	return n;
}

static bool allowed_value(const struct px_nsmap *m, const char *v, size_t n)
{
	if (n == strlen(PX_NO_NAMESPACE) && strncmp(v, PX_NO_NAMESPACE, n) == 0)
		return true;
	for (size_t i = 0; i < px_nsmap_len(m); i++) {
		const char *shown, *full = px_nsmap_at(m, i, &shown);

		if (strlen(full) == n && strncmp(full, v, n) == 0)
			return true;
	}
	return false;
}

static void check_fields(const struct px_nsmap *m, const char *in)
{
	static const char *const fields[] = {"metadata.namespace", "involvedObject.namespace",
	                                     NULL};
	const char *a[4096], *b[4096];
	struct buf out = BUF_INIT(1u << 20);
	size_t na, nb;

	if (px_field_selector_view(m, in, fields, &out) != 0)
		return;
	na = terms(in, a, 4096);
	nb = terms(buf_cstr(&out), b, 4096);
	if (na != nb)
		abort();
	for (size_t i = 0; i < na && na < 4096; i++) {
		size_t la = term_len(a[i]), lb = term_len(b[i]), op = strcspn(b[i], "!=");

		if (la == lb && memcmp(a[i], b[i], la) == 0)
			continue;
		/* converted: the same field and operator, a value of the tenant's */
		while (op < lb && (b[i][op] == '=' || b[i][op] == '!'))
			op++;
		if (op > lb || op > la || memcmp(a[i], b[i], op) != 0 ||
		    !allowed_value(m, b[i] + op, lb - op))
			abort();
	}
	buf_release(&out);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Go's url.QueryUnescape of @s (@n bytes) into @out; false when Go refuses it. */
static bool go_unescape(const char *s, size_t n, struct buf *out)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i] == '+' ? ' ' : s[i];

		if (c == '%') {
			if (n - i < 3 || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0)
				return false;
			c = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		}
		if (buf_append(out, &c, 1) < 0)
			return false;
	}
	return true;
}

/* Every labelSelector Go reads in @q begins with the tenant's requirement; at least one. */
static void check_go_reads(const char *q)
{
	int seen = 0;

	while (*q) {
		size_t len = strcspn(q, "&"), eq;
		struct buf k = BUF_INIT(1u << 20), v = BUF_INIT(1u << 20);

		eq = strcspn(q, "=&");
		if (eq > len)
			eq = len;
		if (len && !memchr(q, ';', len) && go_unescape(q, eq, &k) &&
		    go_unescape(q + eq + (eq < len), len - eq - (eq < len), &v) &&
		    strcmp(buf_cstr(&k), "labelSelector") == 0) {
			const char *s = buf_cstr(&v);

			seen++;
			if (strncmp(s, TENANT_LABEL, strlen(TENANT_LABEL)) != 0 ||
			    (s[strlen(TENANT_LABEL)] && s[strlen(TENANT_LABEL)] != ',') ||
			    v.len != strlen(s))
				abort();
		}
		buf_release(&k);
		buf_release(&v);
		q += len + (q[len] == '&');
	}
	if (!seen)
		abort();
}

static void check_query(const struct px_nsmap *m, const char *in, bool namespaces)
{
	struct px_query_view q = {.map = m, .namespaces = namespaces, .tenant_label = TENANT_LABEL};
	struct buf out = BUF_INIT(1u << 20);
	char why[256];
	int rc = px_query_view(&q, in, &out, why, sizeof(why));

	if (rc != 0 && rc != -EINVAL && rc != -EMSGSIZE)
		abort();
	if (rc == 0 && namespaces)
		check_go_reads(buf_cstr(&out));
	buf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct px_nsmap *m;
	char *s;

	if (size == 0 || size > (64u << 10))
		return 0;
	s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	m = px_nsmap_new("acme", FULL, sizeof(FULL) / sizeof(FULL[0]));
	if (data[0] == 'l')
		check_labels(m, s);
	else if (data[0] == 'f')
		check_fields(m, s);
	else
		check_query(m, s, (data[0] & 1) == 0);
	px_nsmap_free(m);
	free(s);
	return 0;
}
