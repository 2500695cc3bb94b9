/* selector.c - Kubernetes label selectors (see selector.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/vec.h"
#include "kube/k8sname.h"
#include "kube/selector.h"

/* How much of a rejected key or value goes into an error message. */
#define ERR_ECHO_MAX 80

enum sel_op { OP_EQ, OP_NE, OP_IN, OP_NOTIN, OP_EXISTS, OP_NOT_EXISTS, OP_GT, OP_LT };

struct sel_req {
	char *key;
	enum sel_op op;
	VEC(char *) values; /* sorted, unique */
	long long num;      /* the operand of OP_GT / OP_LT */
};

struct sel {
	bool nothing;
	VEC(struct sel_req) reqs; /* sorted by key, then operator, then values */
};

/* ---- validation (apimachinery IsQualifiedName / IsValidLabelValue) ---- */

static int check_key(const char *key, struct ll_err *err)
{
	const char *why = k8s_label_key_problem(key, strlen(key));

	if (why == NULL)
		return 0;
	return ll_err_set(err, -EINVAL, "invalid label key \"%.*s\": %s", ERR_ECHO_MAX, key, why);
}

/* Go's strconv.ParseInt(s, 10, 64): optional sign, digits only, no overflow. */
static bool parse_int64(const char *s, long long *out)
{
	const char *d = (*s == '+' || *s == '-') ? s + 1 : s;
	char *end;

	if (*d == '\0' || strspn(d, "0123456789") != strlen(d))
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno == 0 && *end == '\0';
}

/* ---- requirements ---- */

static void req_release(struct sel_req *r)
{
	size_t i;

	free(r->key);
	for (i = 0; i < r->values.len; i++)
		free(r->values.v[i]);
	vec_release(&r->values);
	memset(r, 0, sizeof(*r));
}

static void req_add_value(struct sel_req *r, const char *v, size_t len)
{
	vec_push(&r->values, xstrndup(v, len));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void req_sort_values(struct sel_req *r)
{
	size_t i, n = 0;

	if (r->values.len == 0)
		return;
	qsort(r->values.v, r->values.len, sizeof(*r->values.v), cmp_str);
	for (i = 1; i < r->values.len; i++) {
		if (strcmp(r->values.v[n], r->values.v[i]) == 0)
			free(r->values.v[i]);
		else
			r->values.v[++n] = r->values.v[i];
	}
	r->values.len = n + 1;
}

/* apimachinery NewRequirement: value count per operator, value syntax, integer operands. */
static int req_validate(struct sel_req *r, struct ll_err *err)
{
	const char *why;
	size_t i;

	if ((r->op == OP_IN || r->op == OP_NOTIN) && r->values.len == 0)
		return ll_err_set(
		        err, -EINVAL,
		        "key \"%.*s\": for 'in', 'notin' operators, values set can't be empty",
		        ERR_ECHO_MAX, r->key);
	if ((r->op == OP_EXISTS || r->op == OP_NOT_EXISTS) && r->values.len != 0)
		return ll_err_set(
		        err, -EINVAL,
		        "key \"%.*s\": values set must be empty for exists and does not exist",
		        ERR_ECHO_MAX, r->key);
	for (i = 0; i < r->values.len; i++) {
		why = k8s_label_value_problem(r->values.v[i], strlen(r->values.v[i]));
		if (why)
			return ll_err_set(err, -EINVAL,
			                  "invalid label value \"%.*s\" for key \"%.*s\": %s",
			                  ERR_ECHO_MAX, r->values.v[i], ERR_ECHO_MAX, r->key, why);
	}
	if ((r->op == OP_GT || r->op == OP_LT) && !parse_int64(r->values.v[0], &r->num))
		return ll_err_set(
		        err, -EINVAL,
		        "key \"%.*s\": for 'Gt', 'Lt' operators, the value must be an integer",
		        ERR_ECHO_MAX, r->key);
	req_sort_values(r);
	return 0;
}

static int cmp_req(const void *pa, const void *pb)
{
	const struct sel_req *a = pa, *b = pb;
	size_t i;
	int c = strcmp(a->key, b->key);

	if (c)
		return c;
	if (a->op != b->op)
		return a->op < b->op ? -1 : 1;
	for (i = 0; i < a->values.len && i < b->values.len; i++) {
		c = strcmp(a->values.v[i], b->values.v[i]);
		if (c)
			return c;
	}
	return (a->values.len > b->values.len) - (a->values.len < b->values.len);
}

/* Moves *r (already validated) into @s. */
static void sel_take_req(struct sel *s, struct sel_req *r)
{
	vec_push(&s->reqs, *r);
	memset(r, 0, sizeof(*r));
}

static void sel_finish(struct sel *s)
{
	if (s->reqs.len > 1)
		qsort(s->reqs.v, s->reqs.len, sizeof(*s->reqs.v), cmp_req);
}

void sel_free(struct sel *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->reqs.len; i++)
		req_release(&s->reqs.v[i]);
	vec_release(&s->reqs);
	free(s);
}

/* ---- the string form: lexer ---- */

enum tok {
	T_END,
	T_IDENT,
	T_IN,
	T_NOTIN,
	T_NOT,
	T_EQ,
	T_EQEQ,
	T_NE,
	T_GT,
	T_LT,
	T_LPAREN,
	T_RPAREN,
	T_COMMA,
};

struct token {
	enum tok t;
	const char *p; /* literal, a slice of the input */
	size_t len;
};

struct lexer {
	const char *s;
	size_t pos;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
	return c != '\0' && strchr("=!(),><", c) != NULL;
}

static enum tok symbol_token(const char *p, size_t n)
{
	static const struct {
		const char *lit;
		enum tok t;
	} symbols[] = {{"!=", T_NE}, {"==", T_EQEQ},  {"!", T_NOT},    {"=", T_EQ},   {">", T_GT},
	               {"<", T_LT},  {"(", T_LPAREN}, {")", T_RPAREN}, {",", T_COMMA}};
	size_t i;

	for (i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		if (strlen(symbols[i].lit) == n && memcmp(symbols[i].lit, p, n) == 0)
			return symbols[i].t;
	}
	return T_END;
}

/* The longest operator at @p; every single special character is one. */
static size_t scan_symbol(const char *p, enum tok *t)
{
	if (is_special(p[1]) && symbol_token(p, 2) != T_END) {
		*t = symbol_token(p, 2);
		return 2;
	}
	*t = symbol_token(p, 1);
	return 1;
}

static struct token lex_at(const struct lexer *lx, size_t *next)
{
	const char *p = lx->s + lx->pos;
	struct token tk = {T_END, p, 0};
	size_t n = 0;

	while (is_space(*p))
		p++;
	tk.p = p;
	if (*p == '\0') {
		n = 0;
	} else if (is_special(*p)) {
		n = scan_symbol(p, &tk.t);
	} else {
		while (p[n] != '\0' && !is_space(p[n]) && !is_special(p[n]))
			n++;
		tk.t = T_IDENT;
		if (n == 2 && memcmp(p, "in", 2) == 0)
			tk.t = T_IN;
		else if (n == 5 && memcmp(p, "notin", 5) == 0)
			tk.t = T_NOTIN;
	}
	tk.len = n;
	*next = (size_t)(p - lx->s) + n;
	return tk;
}

/* In value context the keywords are plain identifiers ("x in (in)"). */
static struct token as_value(struct token tk)
{
	if (tk.t == T_IN || tk.t == T_NOTIN)
		tk.t = T_IDENT;
	return tk;
}

static struct token peek(const struct lexer *lx)
{
	size_t next;

	return as_value(lex_at(lx, &next));
}

static struct token next_raw(struct lexer *lx)
{
	size_t next;
	struct token tk = lex_at(lx, &next);

	lx->pos = next;
	return tk;
}

static struct token next_value(struct lexer *lx)
{
	return as_value(next_raw(lx));
}

/* ---- the string form: parser (mirrors apimachinery's labels.Parse) ---- */

static int found(struct ll_err *err, struct token tk, const char *expected)
{
	int n = tk.len > ERR_ECHO_MAX ? ERR_ECHO_MAX : (int)tk.len;

	return ll_err_set(err, -EINVAL, "found '%.*s', expected: %s", n, tk.p, expected);
}

/* [!]KEY; infers Exists/DoesNotExist when no binary operator follows. */
static int parse_key(struct lexer *lx, struct sel_req *r, bool *unary, struct ll_err *err)
{
	struct token tk = next_value(lx);
	bool bang = tk.t == T_NOT;
	enum tok after;

	if (bang)
		tk = next_value(lx);
	if (tk.t != T_IDENT)
		return found(err, tk, "identifier");
	r->key = xstrndup(tk.p, tk.len);
	if (check_key(r->key, err))
		return -EINVAL;
	after = peek(lx).t;
	*unary = bang || after == T_END || after == T_COMMA;
	r->op = bang ? OP_NOT_EXISTS : OP_EXISTS;
	return 0;
}

static int parse_operator(struct lexer *lx, struct sel_req *r, struct ll_err *err)
{
	struct token tk = next_raw(lx);

	switch (tk.t) {
	case T_IN:
		r->op = OP_IN;
		return 0;
	case T_NOTIN:
		r->op = OP_NOTIN;
		return 0;
	case T_EQ:
	case T_EQEQ:
		r->op = OP_EQ;
		return 0;
	case T_NE:
		r->op = OP_NE;
		return 0;
	case T_GT:
		r->op = OP_GT;
		return 0;
	case T_LT:
		r->op = OP_LT;
		return 0;
	default:
		return found(err, tk, "in, notin, =, ==, !=, gt, lt");
	}
}

/* After '(': possibly empty identifiers up to ')'; "(,a)" and "(a,)" include "". */
static int parse_identifiers(struct lexer *lx, struct sel_req *r, struct ll_err *err)
{
	struct token tk, la;

	for (;;) {
		tk = next_value(lx);
		la = peek(lx);
		if (tk.t == T_IDENT) {
			req_add_value(r, tk.p, tk.len);
			if (la.t == T_RPAREN)
				break;
			if (la.t != T_COMMA)
				return found(err, la, "',' or ')'");
		} else if (tk.t == T_COMMA) {
			if (r->values.len == 0 || la.t == T_RPAREN || la.t == T_COMMA)
				req_add_value(r, "", 0);
			if (la.t == T_RPAREN)
				break;
			if (la.t == T_COMMA)
				next_value(lx);
		} else {
			return found(err, tk, "',', or identifier");
		}
	}
	next_value(lx); /* the ')' */
	return 0;
}

static int parse_values(struct lexer *lx, struct sel_req *r, struct ll_err *err)
{
	struct token tk = next_value(lx);

	if (tk.t != T_LPAREN)
		return found(err, tk, "'('");
	tk = peek(lx);
	if (tk.t == T_RPAREN) {
		next_value(lx);
		req_add_value(r, "", 0);
		return 0;
	}
	if (tk.t != T_IDENT && tk.t != T_COMMA)
		return found(err, tk, "',', ')' or identifier");
	return parse_identifiers(lx, r, err);
}

/* One value for =, ==, !=, >, <; nothing before ',' or the end means "". */
static int parse_exact_value(struct lexer *lx, struct sel_req *r, struct ll_err *err)
{
	struct token tk = peek(lx);

	if (tk.t == T_END || tk.t == T_COMMA) {
		req_add_value(r, "", 0);
		return 0;
	}
	tk = next_value(lx);
	if (tk.t != T_IDENT)
		return found(err, tk, "identifier");
	req_add_value(r, tk.p, tk.len);
	return 0;
}

static int parse_requirement(struct lexer *lx, struct sel_req *r, struct ll_err *err)
{
	bool unary = false;
	int rc = parse_key(lx, r, &unary, err);

	if (rc == 0 && !unary)
		rc = parse_operator(lx, r, err);
	if (rc == 0 && !unary)
		rc = (r->op == OP_IN || r->op == OP_NOTIN) ? parse_values(lx, r, err)
		                                           : parse_exact_value(lx, r, err);
	if (rc == 0)
		rc = req_validate(r, err);
	return rc;
}

static int prefix_err(struct ll_err *err, int rc, const char *prefix)
{
	char msg[LL_ERR_MSG_MAX];

	if (err == NULL)
		return rc;
	memcpy(msg, err->msg, sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	return ll_err_set(err, rc, "%s%s", prefix, msg);
}

static int parse_all(struct lexer *lx, struct sel *s, struct ll_err *err)
{
	struct sel_req r = {0};
	struct token tk;
	int rc;

	for (;;) {
		tk = peek(lx);
		if (tk.t == T_END)
			return 0;
		if (tk.t != T_IDENT && tk.t != T_NOT)
			return found(err, tk, "!, identifier, or 'end of string'");
		rc = parse_requirement(lx, &r, err);
		if (rc) {
			req_release(&r);
			return prefix_err(err, rc, "unable to parse requirement: ");
		}
		sel_take_req(s, &r);
		tk = next_value(lx);
		if (tk.t == T_END)
			return 0;
		if (tk.t != T_COMMA)
			return found(err, tk, "',' or 'end of string'");
		tk = peek(lx);
		if (tk.t != T_IDENT && tk.t != T_NOT)
			return found(err, tk, "identifier after ','");
	}
}

int sel_parse(const char *str, struct sel **out, struct ll_err *err)
{
	struct lexer lx = {str ? str : "", 0};
	struct sel *s = xcalloc(1, sizeof(*s));
	int rc = parse_all(&lx, s, err);

	if (rc) {
		sel_free(s);
		return rc;
	}
	sel_finish(s);
	*out = s;
	return 0;
}

/* ---- metav1.LabelSelector ---- */

/* A JSON string without embedded NULs, or NULL. */
static const char *json_cstr(const json_t *v)
{
	const char *s = json_string_value(v);

	return s && strlen(s) == json_string_length(v) ? s : NULL;
}

static int json_match_labels(const json_t *ml, struct sel *s, struct ll_err *err)
{
	struct sel_req r = {0};
	const char *key;
	size_t klen;
	json_t *v;
	int rc = 0;

	if (ml == NULL || json_is_null(ml))
		return 0;
	if (!json_is_object(ml))
		return ll_err_set(err, -EINVAL, "matchLabels must be an object");
	/* jansson's iterator API is not const-qualified; iteration does not modify. */
	json_object_keylen_foreach((json_t *)ml, key, klen, v) {
		if (json_cstr(v) == NULL)
			return ll_err_set(err, -EINVAL, "matchLabels[%.*s] must be a string",
			                  ERR_ECHO_MAX, key);
		r.key = xstrdup(key);
		r.op = OP_EQ;
		req_add_value(&r, json_string_value(v), json_string_length(v));
		rc = check_key(r.key, err);
		if (rc == 0 && strlen(key) != klen)
			rc = ll_err_set(err, -EINVAL, "matchLabels keys must not contain NUL");
		if (rc == 0)
			rc = req_validate(&r, err);
		if (rc)
			break;
		sel_take_req(s, &r);
	}
	req_release(&r);
	return rc;
}

static int json_operator(const char *op, enum sel_op *out, struct ll_err *err)
{
	static const struct {
		const char *name;
		enum sel_op op;
	} ops[] = {{"In", OP_IN},
	           {"NotIn", OP_NOTIN},
	           {"Exists", OP_EXISTS},
	           {"DoesNotExist", OP_NOT_EXISTS}};
	size_t i;

	for (i = 0; op && i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(op, ops[i].name) == 0) {
			*out = ops[i].op;
			return 0;
		}
	}
	return ll_err_set(err, -EINVAL, "\"%.*s\" is not a valid label selector operator",
	                  ERR_ECHO_MAX, op ? op : "");
}

static int json_expression(const json_t *e, struct sel_req *r, struct ll_err *err)
{
	const json_t *vals = json_object_get(e, "values");
	const char *key = json_cstr(json_object_get(e, "key"));
	size_t i;
	int rc;

	if (!json_is_object(e))
		return ll_err_set(err, -EINVAL, "matchExpressions entries must be objects");
	if (vals && !json_is_null(vals) && !json_is_array(vals))
		return ll_err_set(err, -EINVAL, "matchExpressions values must be an array");
	r->key = xstrdup(key ? key : "");
	rc = check_key(r->key, err);
	if (rc == 0)
		rc = json_operator(json_cstr(json_object_get(e, "operator")), &r->op, err);
	for (i = 0; rc == 0 && i < json_array_size(vals); i++) {
		const json_t *v = json_array_get(vals, i);

		if (json_cstr(v) == NULL)
			return ll_err_set(err, -EINVAL, "matchExpressions values must be strings");
		req_add_value(r, json_string_value(v), json_string_length(v));
	}
	if (rc == 0)
		rc = req_validate(r, err);
	return rc;
}

static int json_match_expressions(const json_t *me, struct sel *s, struct ll_err *err)
{
	struct sel_req r = {0};
	size_t i;
	int rc = 0;

	if (me == NULL || json_is_null(me))
		return 0;
	if (!json_is_array(me))
		return ll_err_set(err, -EINVAL, "matchExpressions must be an array");
	for (i = 0; i < json_array_size(me); i++) {
		rc = json_expression(json_array_get(me, i), &r, err);
		if (rc)
			break;
		sel_take_req(s, &r);
	}
	req_release(&r);
	return rc;
}

int sel_from_json(const json_t *ls, struct sel **out, struct ll_err *err)
{
	struct sel *s = xcalloc(1, sizeof(*s));
	int rc = 0;

	if (ls == NULL || json_is_null(ls))
		s->nothing = true;
	else if (!json_is_object(ls))
		rc = ll_err_set(err, -EINVAL, "a label selector must be an object or null");
	if (rc == 0 && !s->nothing)
		rc = json_match_labels(json_object_get(ls, "matchLabels"), s, err);
	if (rc == 0 && !s->nothing)
		rc = json_match_expressions(json_object_get(ls, "matchExpressions"), s, err);
	if (rc) {
		sel_free(s);
		return rc;
	}
	sel_finish(s);
	*out = s;
	return 0;
}

/* ---- matching ---- */

static bool req_has_value(const struct sel_req *r, const char *v)
{
	return v && bsearch(&v, r->values.v, r->values.len, sizeof(*r->values.v), cmp_str) != NULL;
}

/* @present: the label is set; @v: its value (NULL when not a string). */
static bool req_matches(const struct sel_req *r, bool present, const char *v)
{
	long long n;

	switch (r->op) {
	case OP_EQ:
	case OP_IN:
		return present && req_has_value(r, v);
	case OP_NE:
	case OP_NOTIN:
		return !present || !req_has_value(r, v);
	case OP_EXISTS:
		return present;
	case OP_NOT_EXISTS:
		return !present;
	case OP_GT:
		return v && parse_int64(v, &n) && n > r->num;
	case OP_LT:
		return v && parse_int64(v, &n) && n < r->num;
	}
	return false;
}

bool sel_matches(const struct sel *s, const json_t *labels)
{
	size_t i;

	if (s->nothing)
		return false;
	for (i = 0; i < s->reqs.len; i++) {
		const json_t *lv =
		        json_is_object(labels) ? json_object_get(labels, s->reqs.v[i].key) : NULL;

		if (!req_matches(&s->reqs.v[i], lv != NULL, json_string_value(lv)))
			return false;
	}
	return true;
}

bool sel_matches_lookup(const struct sel *s, sel_lookup_fn get, void *ud)
{
	size_t i;

	if (s->nothing)
		return false;
	for (i = 0; i < s->reqs.len; i++) {
		const char *v = get(s->reqs.v[i].key, ud);

		if (!req_matches(&s->reqs.v[i], v != NULL, v))
			return false;
	}
	return true;
}

bool sel_matches_nothing(const struct sel *s)
{
	return s->nothing;
}

bool sel_is_empty(const struct sel *s)
{
	return !s->nothing && s->reqs.len == 0;
}

/* ---- the canonical string ---- */

static int append_req(struct buf *b, const struct sel_req *r)
{
	static const char *const op_str[] = {
	        [OP_EQ] = "=",    [OP_NE] = "!=",       [OP_IN] = " in (", [OP_NOTIN] = " notin (",
	        [OP_EXISTS] = "", [OP_NOT_EXISTS] = "", [OP_GT] = ">",     [OP_LT] = "<",
	};
	size_t i;
	int rc = buf_appendf(b, "%s%s%s", r->op == OP_NOT_EXISTS ? "!" : "", r->key, op_str[r->op]);

	for (i = 0; rc == 0 && i < r->values.len; i++)
		rc = buf_appendf(b, "%s%s", i ? "," : "", r->values.v[i]);
	if (rc == 0 && (r->op == OP_IN || r->op == OP_NOTIN))
		rc = buf_append_str(b, ")");
	return rc;
}

int sel_to_string(const struct sel *s, struct buf *out)
{
	struct buf tmp = BUF_INIT(out->max);
	size_t i;
	int rc = 0;

	if (s->nothing)
		return -EINVAL;
	for (i = 0; rc == 0 && i < s->reqs.len; i++) {
		if (i)
			rc = buf_append_str(&tmp, ",");
		if (rc == 0)
			rc = append_req(&tmp, &s->reqs.v[i]);
	}
	if (rc == 0)
		rc = buf_append(out, buf_cstr(&tmp), tmp.len);
	buf_release(&tmp);
	return rc;
}
