/* selectors.c - list and watch selectors from a tenant's view to upstream (selectors.h). */
#include "proxy/selectors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"
#include "proxy/nsmap.h"

#define NAME_LABEL "kubernetes.io/metadata.name"

/* ---------- values ---------- */

/* The upstream name of shown name @v (@n bytes), or PX_NO_NAMESPACE. */
static const char *upstream_of(const struct px_nsmap *map, const char *v, size_t n)
{
	char shown[64];
	const char *full;

	if (n == 0 || n >= sizeof(shown) || memchr(v, '\0', n))
		return PX_NO_NAMESPACE;
	memcpy(shown, v, n);
	shown[n] = '\0';
	full = px_nsmap_full(map, shown);
	return full ? full : PX_NO_NAMESPACE;
}

/* ---------- label selectors: Go's lexer (k8s.io/apimachinery/pkg/labels) ---------- */

enum tk {
	TK_END,
	TK_ID,
	TK_IN,
	TK_NOTIN,
	TK_NOT,
	TK_EQ,
	TK_EQEQ,
	TK_NE,
	TK_GT,
	TK_LT,
	TK_LP,
	TK_RP,
	TK_COMMA,
};

struct tok {
	enum tk t;
	const char *p;
	size_t n;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
	return c && strchr("=!(),><", c) != NULL;
}

/* One special token at @s: "!=" and "==" are the only two-byte ones. */
static struct tok special(const char *s)
{
	static const struct {
		char c;
		enum tk t;
	} one[] = {{'=', TK_EQ},    {'!', TK_NOT}, {'(', TK_LP}, {')', TK_RP},
	           {',', TK_COMMA}, {'>', TK_GT},  {'<', TK_LT}};
	struct tok t = {TK_END, s, 1};

	if ((s[0] == '!' || s[0] == '=') && s[1] == '=')
		return (struct tok){s[0] == '!' ? TK_NE : TK_EQEQ, s, 2};
	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++)
		if (one[i].c == s[0])
			t.t = one[i].t;
	return t;
}

/* The token at *@pos (whitespace skipped), *@pos moved past it. */
static struct tok lex(const char *s, size_t *pos)
{
	struct tok t;

	while (is_space(s[*pos]))
		(*pos)++;
	if (!s[*pos])
		return (struct tok){TK_END, s + *pos, 0};
	if (is_special(s[*pos])) {
		t = special(s + *pos);
	} else {
		t = (struct tok){TK_ID, s + *pos, 0};
		while (t.p[t.n] && !is_special(t.p[t.n]) && !is_space(t.p[t.n]))
			t.n++;
		if (t.n == 2 && strncmp(t.p, "in", 2) == 0)
			t.t = TK_IN;
		else if (t.n == 5 && strncmp(t.p, "notin", 5) == 0)
			t.t = TK_NOTIN;
	}
	*pos += t.n;
	return t;
}

/* ---------- label selectors: Go's parser ---------- */

struct lparse {
	struct tok *toks;
	long *idx; /* the values of the requirement parsed (values_list(), exact_value()) */
	size_t at;
	const struct px_nsmap *map;
	struct buf *out;
	char *why;
	size_t why_size;
};

/* The token at the cursor; in a value's place "in" and "notin" are identifiers. */
static enum tk look(const struct lparse *p, bool values)
{
	enum tk t = p->toks[p->at].t;

	return values && (t == TK_IN || t == TK_NOTIN) ? TK_ID : t;
}

static enum tk next(struct lparse *p, bool values)
{
	enum tk t = look(p, values);

	if (t != TK_END)
		p->at++;
	return t;
}

static int bad(struct lparse *p, const char *expected)
{
	const struct tok *t = &p->toks[p->at ? p->at - 1 : 0];

	snprintf(p->why, p->why_size, "labelSelector: found '%.*s', expected: %s",
	         (int)(t->n > 64 ? 64 : t->n), t->p, expected);
	return -EINVAL;
}

/* "(a,b)": the values' token indexes into p->idx (an empty value is -1), their count. */
static int values_list(struct lparse *p, size_t *n)
{
	enum tk t;

	*n = 0;
	if (next(p, true) != TK_LP)
		return bad(p, "'('");
	if (look(p, true) == TK_RP) { /* "()" is the one value "" */
		p->at++;
		p->idx[(*n)++] = -1;
		return 0;
	}
	for (;;) {
		t = next(p, true);
		if (t == TK_ID) {
			p->idx[(*n)++] = (long)p->at - 1;
			t = next(p, true);
			if (t == TK_RP)
				return 0;
			if (t != TK_COMMA)
				return bad(p, "',' or ')'");
		} else if (t == TK_COMMA) {
			p->idx[(*n)++] = -1; /* "(," or ",,": an empty value */
		} else {
			return bad(p, "',', or identifier");
		}
		if (look(p, true) == TK_RP) { /* ",)": an empty value */
			p->at++;
			p->idx[(*n)++] = -1;
			return 0;
		}
	}
}

/* An exact value after =, ==, !=: one identifier, or "" before ',' or the end. */
static int exact_value(struct lparse *p, size_t *n)
{
	enum tk t = look(p, true);

	*n = 1;
	p->idx[0] = -1;
	if (t == TK_END || t == TK_COMMA)
		return 0;
	if (next(p, true) != TK_ID)
		return bad(p, "identifier");
	p->idx[0] = (long)p->at - 1;
	return 0;
}

/* The requirement on kubernetes.io/metadata.name, its @n values converted. */
static int emit_name_req(struct lparse *p, const struct tok *op, size_t n)
{
	bool set = op->t == TK_IN || op->t == TK_NOTIN;
	int rc;

	if (op->t == TK_GT || op->t == TK_LT) {
		snprintf(p->why, p->why_size, "labelSelector: %s cannot be compared as a number",
		         NAME_LABEL);
		return -EINVAL;
	}
	rc = buf_appendf(p->out, "%s%s%.*s%s", NAME_LABEL, set ? " " : "", (int)op->n, op->p,
	                 set ? " (" : "");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct tok *v = p->idx[i] < 0 ? NULL : &p->toks[p->idx[i]];

		rc = buf_appendf(p->out, "%s%s", i ? "," : "",
		                 upstream_of(p->map, v ? v->p : "", v ? v->n : 0));
	}
	if (rc == 0 && set)
		rc = buf_append(p->out, ")", 1);
	return rc;
}

static bool is_name_label(const struct tok *key)
{
	return key->n == strlen(NAME_LABEL) && strncmp(key->p, NAME_LABEL, key->n) == 0;
}

/* The operator at the cursor and its values. */
static int operation(struct lparse *p, size_t *n)
{
	switch (next(p, false)) {
	case TK_IN:
	case TK_NOTIN:
		return values_list(p, n);
	case TK_EQ:
	case TK_EQEQ:
	case TK_NE:
	case TK_GT:
	case TK_LT:
		return exact_value(p, n);
	default:
		return bad(p, "=, ==, !=, in, notin, >, <");
	}
}

/* One requirement, appended converted (its key) or as written (any other key). */
static int requirement(struct lparse *p)
{
	size_t first = p->at, n = 0;
	bool neg = next(p, true) == TK_NOT; /* else an identifier: label_terms() looked */
	const struct tok *key, *op, *last;
	int rc;

	if (neg && next(p, true) != TK_ID)
		return bad(p, "identifier");
	key = &p->toks[p->at - 1];
	if (!neg && look(p, true) != TK_END && look(p, true) != TK_COMMA) {
		op = &p->toks[p->at];
		rc = operation(p, &n);
		if (rc < 0)
			return rc;
		if (is_name_label(key))
			return emit_name_req(p, op, n);
	}
	last = &p->toks[p->at - 1];
	return buf_append(p->out, p->toks[first].p, (size_t)(last->p + last->n - p->toks[first].p));
}

static int label_terms(struct lparse *p)
{
	enum tk t;
	int rc;

	for (bool more = true; more;) {
		t = look(p, true);
		if (t == TK_END)
			return 0;
		if (t != TK_ID && t != TK_NOT)
			return bad(p, "!, identifier, or 'end of string'");
		if (p->out->len && buf_append(p->out, ",", 1) < 0)
			return -EMSGSIZE;
		rc = requirement(p);
		if (rc < 0)
			return rc;
		t = next(p, true);
		more = t == TK_COMMA;
		if (t != TK_END && t != TK_COMMA)
			return bad(p, "',' or 'end of string'");
		t = look(p, true);
		if (more && t != TK_ID && t != TK_NOT)
			return bad(p, "identifier after ','");
	}
	return 0;
}

int px_label_selector_view(const struct px_nsmap *map, const char *in, struct buf *out, char *why,
                           size_t why_size)
{
	size_t len = strlen(in), pos = 0, n = 0;
	struct tok *toks = xcalloc(len + 2, sizeof(*toks));
	struct buf mine = BUF_INIT(out->max ? out->max : (16u << 10));
	struct lparse p = {.toks = toks,
	                   .idx = xcalloc(len + 2, sizeof(long)),
	                   .map = map,
	                   .out = &mine,
	                   .why = why,
	                   .why_size = why_size};
	int rc;

	do
		toks[n] = lex(in, &pos);
	while (toks[n++].t != TK_END);
	rc = label_terms(&p);
	if (rc == 0 && buf_append(out, mine.p, mine.len) < 0)
		rc = -EMSGSIZE;
	if (rc == -EMSGSIZE)
		snprintf(why, why_size, "labelSelector: too long");
	buf_release(&mine);
	free(p.idx);
	free(toks);
	return rc;
}

/* ---------- field selectors: Go's fields.ParseSelector ---------- */

/* The buffer's length cut back to @len (kept NUL-terminated). */
static void cut(struct buf *b, size_t len)
{
	b->len = len;
	if (b->p)
		b->p[len] = '\0';
}

/*
 * Go's fields.UnescapeValue of @v (@n bytes) into @out (@size bytes). Return: its length (over
 * @size - 1 when it did not fit: no namespace is that long), or -1 when Go refuses it.
 */
static long unescape(const char *v, size_t n, char *out, size_t size)
{
	size_t w = 0;
	bool slash = false;

	for (size_t i = 0; i < n; i++) {
		if (!slash && v[i] == '\\') {
			slash = true;
			continue;
		}
		if (slash ? !strchr("\\,=", v[i]) || !v[i] : (v[i] == ',' || v[i] == '='))
			return -1;
		slash = false;
		if (w + 1 < size)
			out[w] = v[i];
		w++;
	}
	out[w < size ? w : size - 1] = '\0';
	return slash ? -1 : (long)w;
}

/* One term @t (@n bytes): converted when its field is one of @fields, else as written. */
static int field_term(const struct px_nsmap *map, const char *t, size_t n,
                      const char *const *fields, struct buf *out)
{
	static const char *const ops[] = {"!=", "==", "="};
	char value[128];

	for (size_t i = 0; i < n; i++) {
		for (size_t o = 0; o < 3; o++) {
			size_t ol = strlen(ops[o]);
			long vn;

			if (n - i < ol || strncmp(t + i, ops[o], ol) != 0)
				continue;
			for (size_t f = 0; fields[f]; f++) {
				if (strlen(fields[f]) != i || strncmp(t, fields[f], i) != 0)
					continue;
				vn = unescape(t + i + ol, n - i - ol, value, sizeof(value));
				if (vn >= 0)
					return buf_appendf(out, "%.*s%s", (int)(i + ol), t,
					                   upstream_of(map, value, (size_t)vn));
			}
			return buf_append(out, t, n); /* the first operator splits the term */
		}
	}
	return buf_append(out, t, n);
}

int px_field_selector_view(const struct px_nsmap *map, const char *in, const char *const *fields,
                           struct buf *out)
{
	size_t start = 0, at = out->len;
	bool slash = false;
	int rc = 0;

	for (size_t i = 0; rc == 0; i++) {
		if (in[i] && slash) {
			slash = false;
		} else if (in[i] == '\\') {
			slash = true;
		} else if (in[i] == ',' || !in[i]) {
			rc = field_term(map, in + start, i - start, fields, out);
			if (rc == 0 && in[i])
				rc = buf_append(out, ",", 1);
			start = i + 1;
		}
		if (!in[i])
			break;
	}
	if (rc < 0)
		cut(out, at);
	return rc < 0 ? -EMSGSIZE : 0;
}

/* ---------- queries: Go's url.ParseQuery ---------- */

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * @s (@n bytes) percent-decoded, '+' a space, into @out; a NUL ends it (Go's selector lexers
 * stop there too). Return: false when Go refuses it.
 */
static bool decode(const char *s, size_t n, struct buf *out)
{
	bool ended = false;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '%') {
			if (n - i < 3 || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0)
				return false;
			c = (char)(hex(s[i + 1]) * 16 + hex(s[i + 2]));
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		ended = ended || c == '\0';
		if (!ended && buf_append(out, &c, 1) < 0)
			return false;
	}
	return true;
}

static const char *const NS_FIELDS[] = {"metadata.namespace", "involvedObject.namespace",
                                        "regarding.namespace", NULL};
static const char *const NAME_FIELDS[] = {"metadata.name", NULL};

/* One selector's decoded value @v converted into @out (not encoded). */
static int selector(const struct px_query_view *q, bool labels, const char *v, struct buf *out,
                    char *why, size_t why_size)
{
	size_t mark;
	int rc;

	if (!labels)
		return px_field_selector_view(q->map, v, q->namespaces ? NAME_FIELDS : NS_FIELDS,
		                              out);
	rc = buf_append_str(out, q->tenant_label ? q->tenant_label : "");
	mark = out->len;
	if (rc == 0 && out->len)
		rc = buf_append(out, ",", 1);
	if (rc == 0)
		rc = px_label_selector_view(q->map, v, out, why, why_size);
	if (rc == 0 && out->len == mark + 1)
		cut(out, mark); /* nothing of the caller's: no trailing ',' */
	return rc;
}

/* One pair @pair (@n bytes) of the query, converted when it is a selector. */
static int pair(const struct px_query_view *q, const char *pair, size_t n, struct buf *out,
                bool *labels_seen, char *why, size_t why_size)
{
	size_t eq = strcspn(pair, "=&");
	struct buf name = BUF_INIT(n + 1), value = BUF_INIT(n + 1), conv = BUF_INIT(out->max);
	bool ok = decode(pair, eq < n ? eq : n, &name);
	bool labels = ok && strcmp(buf_cstr(&name), "labelSelector") == 0;
	bool fields = ok && strcmp(buf_cstr(&name), "fieldSelector") == 0;
	int rc = 0;

	if (eq > n)
		eq = n;
	if (!(labels && q->namespaces) && !fields) {
		rc = buf_append(out, pair, n); /* as Go reads it, not a selector to convert */
	} else if (!decode(pair + eq + (eq < n), n - eq - (eq < n), &value)) {
		snprintf(why, why_size, "%s is not percent-encoded correctly",
		         labels ? "labelSelector" : "fieldSelector");
		rc = -EINVAL;
	} else {
		*labels_seen = *labels_seen || labels;
		rc = selector(q, labels, buf_cstr(&value), &conv, why, why_size);
		if (rc == 0)
			rc = buf_appendf(out, "%s=", labels ? "labelSelector" : "fieldSelector");
		if (rc == 0)
			rc = buf_append_urlencoded(out, buf_cstr(&conv));
	}
	buf_release(&conv);
	buf_release(&value);
	buf_release(&name);
	return rc;
}

int px_query_view(const struct px_query_view *q, const char *query, struct buf *out, char *why,
                  size_t why_size)
{
	const char *p = query ? query : "";
	size_t start = out->len;
	bool labels = false;
	int rc = 0;

	why[0] = '\0';
	while (rc == 0 && *p) {
		size_t len = strcspn(p, "&");

		if (len && out->len > start)
			rc = buf_append(out, "&", 1);
		if (rc == 0 && len)
			rc = pair(q, p, len, out, &labels, why, why_size);
		p += len + (p[len] == '&');
	}
	if (rc == 0 && q->namespaces && !labels) {
		rc = buf_append_str(out, out->len > start ? "&labelSelector=" : "labelSelector=");
		if (rc == 0)
			rc = buf_append_urlencoded(out, q->tenant_label ? q->tenant_label : "");
	}
	if (rc < 0 && rc != -EINVAL) {
		snprintf(why, why_size, "the query is too long");
		rc = -EMSGSIZE;
	}
	if (rc < 0)
		cut(out, start);
	return rc;
}
