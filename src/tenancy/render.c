/* render.c - a Template's manifests rendered for one namespace (see render.h). */
#include "tenancy/render.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "tenancy/denial.h"
#include "tenancy/regexset.h"

enum ptype { P_STRING, P_NUMBER, P_BOOLEAN };

static const char *const ptype_names[] = {"string", "number", "boolean"};

/* A declared parameter and, once resolved, the value in force. */
struct decl {
	const char *name; /* lent by the Template */
	enum ptype type;
	bool required;
	struct jval dflt;    /* the Template's value; missing when none */
	const char *pattern; /* validation, lent; NULL when none */
	struct rxs *rx;
	const char *val; /* the value in force, lent by the Template or the instance */
	size_t len;
	bool given; /* by the instance */
};

struct decls {
	struct decl d[RENDER_PARAMS_MAX];
	size_t n;
};

/* Where a walk is: spec, resources, manifests, 0, metadata, name... */
#define WALK_DEPTH_MAX (JDOC_MAX_DEPTH + 8)

struct seg {
	const char *key; /* NULL for an array index */
	size_t idx;
};

enum walk_mode {
	W_CHECK,    /* the Template alone: keys and references, no output */
	W_MAPPINGS, /* resourceMappings: no "${" at all, no output */
	W_RENDER,   /* substitute and build the output */
};

struct walk {
	enum walk_mode mode;
	const struct decls *p;
	const char *ns, *tenant;
	size_t total; /* bytes of rendered strings so far */
	size_t depth;
	struct seg seg[WALK_DEPTH_MAX];
	struct ll_err *err;
};

/* ===== messages ===== */

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* A parameter name: letters, digits and _, not starting with a digit, 1..RENDER_NAME_MAX. */
static bool param_name(const char *s, size_t n)
{
	if (n == 0 || n > RENDER_NAME_MAX || isdigit((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!ident_char(s[i]))
			return false;
	return true;
}

static bool plain_key(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (!ident_char(*s) && *s != '-')
			return false;
	return true;
}

/* [NAME], or ["..."] quoted when @name is no parameter name. */
static void put_bracket_name(struct denial *d, const char *name, size_t len)
{
	denial_text(d, "[");
	if (param_name(name, len))
		denial_text(d, "%.*s", (int)len, name);
	else
		denial_quote(d, name, len);
	denial_text(d, "]");
}

static void put_param(struct denial *d, const char *name, size_t len)
{
	denial_text(d, "spec.parameters");
	put_bracket_name(d, name, len);
}

static void put_path(struct denial *d, const struct walk *w)
{
	for (size_t i = 0; i < w->depth; i++) {
		const struct seg *s = &w->seg[i];

		if (s->key == NULL)
			denial_text(d, "[%zu]", s->idx);
		else if (!plain_key(s->key))
			put_bracket_name(d, s->key, strlen(s->key));
		else
			denial_text(d, "%s%s", i > 0 ? "." : "", s->key);
	}
}

static struct denial *msg_start(struct denial *d, struct ll_err *err)
{
	denial_init(d, err->msg, sizeof(err->msg));
	return d;
}

/* "<path>: " into @d, started in w->err. */
static struct denial *path_msg(struct denial *d, const struct walk *w)
{
	msg_start(d, w->err);
	put_path(d, w);
	denial_text(d, ": ");
	return d;
}

/* Template "<name>": before what @err says. */
static int prefix_template(struct ll_err *err, struct jval tmpl, int rc)
{
	char was[LL_ERR_MSG_MAX];
	const char *name = jval_name(tmpl);
	struct denial d;

	memcpy(was, err->msg, sizeof(was));
	msg_start(&d, err);
	denial_text(&d, "Template ");
	denial_quote(&d, name != NULL ? name : "", name != NULL ? strlen(name) : 0);
	denial_text(&d, ": %s", was);
	return rc;
}

/* ===== parameter values ===== */

/* How many digits from s[*i] on; *@i moves past them. */
static size_t digits(const char *s, size_t n, size_t *i)
{
	size_t start = *i;

	while (*i < n && isdigit((unsigned char)s[*i]))
		(*i)++;
	return *i - start;
}

/* Whether @s is a JSON number (RFC 8259); *@is_int when it has neither fraction nor exponent. */
static bool number_syntax(const char *s, size_t n, bool *is_int)
{
	size_t i = 0, d;

	*is_int = true;
	if (i < n && s[i] == '-')
		i++;
	d = digits(s, n, &i);
	if (d == 0 || (d > 1 && s[i - d] == '0'))
		return false;
	if (i < n && s[i] == '.') {
		i++;
		if (digits(s, n, &i) == 0)
			return false;
		*is_int = false;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (digits(s, n, &i) == 0)
			return false;
		*is_int = false;
	}
	return i == n;
}

/* A JSON number as jansson: an integer when it has neither fraction nor exponent and fits 64
 * bits, else a finite real; NULL when @s is none of these. */
static json_t *parse_number(const char *s, size_t n)
{
	bool is_int;
	char *z;
	json_t *v = NULL;

	if (!number_syntax(s, n, &is_int))
		return NULL;
	z = xstrndup(s, n);
	errno = 0;
	if (is_int) {
		long long ll = strtoll(z, NULL, 10);

		if (errno == 0)
			v = json_integer(ll);
	}
	if (v == NULL) {
		double dbl = strtod(z, NULL);

		if (isfinite(dbl))
			v = json_real(dbl);
	}
	free(z);
	return v;
}

/* The typed value of @d (its value parses as its type: checked when resolved). */
static json_t *typed_value(const struct decl *d)
{
	if (d->type == P_BOOLEAN)
		return json_boolean(d->len == 4 && memcmp(d->val, "true", 4) == 0);
	return parse_number(d->val, d->len);
}

static bool of_type(enum ptype t, const char *v, size_t n)
{
	json_t *num;

	switch (t) {
	case P_NUMBER:
		num = parse_number(v, n);
		json_decref(num);
		return num != NULL;
	case P_BOOLEAN:
		return (n == 4 && memcmp(v, "true", 4) == 0) ||
		       (n == 5 && memcmp(v, "false", 5) == 0);
	default:
		return true;
	}
}

/*
 * Whether value @v (@n bytes) suits @d: its type, then its pattern. @field: ".value" for a
 * Template's default, "" for an instance's value.
 */
static int check_value(const struct decl *d, const char *v, size_t n, const char *field,
                       struct ll_err *err)
{
	struct denial m;
	bool limited = false;

	if (!of_type(d->type, v, n)) {
		put_param(msg_start(&m, err), d->name, strlen(d->name));
		denial_text(&m, "%s: ", field);
		denial_quote(&m, v, n);
		denial_text(&m, " is not a %s%s", ptype_names[d->type],
		            d->type == P_BOOLEAN ? " (true or false)" : "");
		return -EINVAL;
	}
	if (d->rx == NULL || rxs_match(d->rx, v, n, &limited) == 0)
		return 0;
	put_param(msg_start(&m, err), d->name, strlen(d->name));
	denial_text(&m, "%s: ", field);
	denial_quote(&m, v, n);
	denial_text(&m, " does not match ");
	denial_item(&m, 0, d->pattern, strlen(d->pattern), false);
	if (limited)
		denial_text(&m, " (the match hit its limit)");
	return -EINVAL;
}

/* ===== declarations ===== */

static void decls_release(struct decls *p)
{
	for (size_t i = 0; i < p->n; i++)
		rxs_free(p->d[i].rx);
	p->n = 0;
}

static const struct decl *decl_find(const struct decls *p, const char *name, size_t len)
{
	for (size_t i = 0; i < p->n; i++)
		if (strlen(p->d[i].name) == len && memcmp(p->d[i].name, name, len) == 0)
			return &p->d[i];
	return NULL;
}

/* spec.parameters[i].name, unique. */
static int decl_name(struct decls *p, struct jval item, size_t i, struct ll_err *err)
{
	struct jval name = jval_get(item, "name");
	const char *s = jval_str(name);
	size_t n = jval_strlen(name);
	struct denial m;

	if (jval_type(item) != JT_OBJECT)
		return ll_err_set(err, -EINVAL, "spec.parameters[%zu]: must be an object", i);
	if (s == NULL || !param_name(s, n)) {
		msg_start(&m, err);
		denial_text(&m, "spec.parameters[%zu].name: ", i);
		denial_quote(&m, s != NULL ? s : "", n);
		denial_text(&m,
		            " is not a parameter name (letters, digits and _, not starting with "
		            "a digit, at most %d)",
		            RENDER_NAME_MAX);
		return -EINVAL;
	}
	if (decl_find(p, s, n) != NULL)
		return ll_err_set(err, -EINVAL,
		                  "spec.parameters[%zu].name: \"%s\" is declared twice", i, s);
	p->d[p->n].name = s;
	return 0;
}

/* A member @key of declaration @d that must have JSON type @want when present. */
static int decl_member(const struct decl *d, struct jval item, const char *key, enum jtype want,
                       struct jval *out, struct ll_err *err)
{
	*out = jval_get(item, key);
	if (jval_type(*out) == JT_NONE || jval_type(*out) == JT_NULL) {
		*out = (struct jval){0};
		return 0;
	}
	if (jval_type(*out) == want)
		return 0;
	return ll_err_set(err, -EINVAL, "spec.parameters[%s].%s: must be a %s", d->name, key,
	                  want == JT_BOOL ? "boolean" : "string");
}

static int decl_type(struct decl *d, struct jval item, struct ll_err *err)
{
	struct jval v;
	struct denial m;
	int rc = decl_member(d, item, "type", JT_STRING, &v, err);

	if (rc != 0 || jval_type(v) == JT_NONE)
		return rc;
	for (size_t t = 0; t < 3; t++)
		if (strcmp(jval_str(v), ptype_names[t]) == 0 &&
		    jval_strlen(v) == strlen(ptype_names[t])) {
			d->type = (enum ptype)t;
			return 0;
		}
	msg_start(&m, err);
	denial_text(&m, "spec.parameters[%s].type: ", d->name);
	denial_quote(&m, jval_str(v), jval_strlen(v));
	denial_text(&m, " is not string, number or boolean");
	return -EINVAL;
}

static int decl_pattern(struct decl *d, struct jval item, struct ll_err *err)
{
	struct jval v;
	struct ll_err rxerr;
	int rc = decl_member(d, item, "validation", JT_STRING, &v, err);

	if (rc != 0 || jval_type(v) == JT_NONE)
		return rc;
	d->pattern = jval_str(v);
	d->rx = rxs_new();
	rc = rxs_add(d->rx, d->pattern, jval_strlen(v), &rxerr);
	if (rc == -EMSGSIZE)
		return ll_err_set(err, rc, "spec.parameters[%s].validation: longer than %d bytes",
		                  d->name, RXS_PATTERN_MAX);
	if (rc != 0)
		return ll_err_set(err, rc, "spec.parameters[%s].validation: %s", d->name,
		                  rxerr.msg);
	return 0;
}

/* The rest of declaration @d: type, required, value, validation; the default checked. */
static int decl_fields(struct decl *d, struct jval item, struct ll_err *err)
{
	struct jval v;
	int rc = decl_type(d, item, err);

	if (rc == 0)
		rc = decl_member(d, item, "required", JT_BOOL, &v, err);
	d->required = rc == 0 && jval_bool(v, false);
	if (rc == 0)
		rc = decl_member(d, item, "value", JT_STRING, &d->dflt, err);
	if (rc == 0 && jval_strlen(d->dflt) > RENDER_VALUE_MAX)
		return ll_err_set(err, -EMSGSIZE,
		                  "spec.parameters[%s].value: %zu bytes, at most %d", d->name,
		                  jval_strlen(d->dflt), RENDER_VALUE_MAX);
	if (rc == 0)
		rc = decl_pattern(d, item, err);
	/* a default, or "" for a parameter that is not required, must suit the declaration */
	if (rc == 0 && (jval_type(d->dflt) == JT_STRING || !d->required))
		rc = check_value(d, jval_type(d->dflt) == JT_STRING ? jval_str(d->dflt) : "",
		                 jval_strlen(d->dflt), ".value", err);
	return rc;
}

static int decls_load(struct decls *p, struct jval tmpl, struct ll_err *err)
{
	struct jval params = jval_path(tmpl, "spec", "parameters", NULL), item;
	size_t i;
	int rc;

	p->n = 0;
	if (jval_type(tmpl) != JT_OBJECT)
		return ll_err_set(err, -EINVAL, "a Template must be an object");
	if (jval_type(params) != JT_NONE && jval_type(params) != JT_NULL &&
	    jval_type(params) != JT_ARRAY)
		return ll_err_set(err, -EINVAL, "spec.parameters: must be a list");
	if (jval_size(params) > RENDER_PARAMS_MAX)
		return ll_err_set(err, -E2BIG, "spec.parameters: %zu parameters, at most %d",
		                  jval_size(params), RENDER_PARAMS_MAX);
	jval_foreach(params, i, item) {
		struct decl *d = &p->d[p->n];

		memset(d, 0, sizeof(*d));
		rc = decl_name(p, item, i, err);
		if (rc == 0) {
			p->n++;
			rc = decl_fields(d, item, err);
		}
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ===== instance values ===== */

/* "spec.parameters[NAME]: <what>" in @err; returns @code. */
static int param_fail(struct ll_err *err, int code, const char *name, size_t len, const char *what)
{
	struct denial m;

	put_param(msg_start(&m, err), name, len);
	denial_text(&m, ": %s", what);
	return code;
}

static int take_param(struct decls *p, struct jval item, size_t i, struct ll_err *err)
{
	const char *name = jval_str(jval_get(item, "name"));
	size_t len = jval_strlen(jval_get(item, "name"));
	struct jval v = jval_get(item, "value");
	struct decl *d;
	char what[64];

	if (name == NULL)
		return ll_err_set(err, -EINVAL, "spec.parameters[%zu]: name must be a string", i);
	d = (struct decl *)decl_find(p, name, len);
	if (d == NULL)
		return param_fail(err, -EINVAL, name, len,
		                  "the Template declares no such parameter");
	if (d->given)
		return param_fail(err, -EINVAL, name, len, "given twice");
	if (jval_type(v) != JT_STRING)
		return param_fail(err, -EINVAL, name, len, "value must be a string");
	if (jval_strlen(v) > RENDER_VALUE_MAX) {
		snprintf(what, sizeof(what), "%zu bytes, at most %d", jval_strlen(v),
		         RENDER_VALUE_MAX);
		return param_fail(err, -EMSGSIZE, name, len, what);
	}
	d->given = true;
	d->val = jval_str(v);
	d->len = jval_strlen(v);
	return 0;
}

/* The value in force of every parameter, checked. */
static int resolve(struct decls *p, struct jval params, struct ll_err *err)
{
	struct jval item;
	size_t i;
	int rc;

	if (jval_type(params) != JT_NONE && jval_type(params) != JT_NULL &&
	    jval_type(params) != JT_ARRAY)
		return ll_err_set(err, -EINVAL, "spec.parameters: must be a list");
	if (jval_size(params) > RENDER_PARAMS_MAX)
		return ll_err_set(err, -E2BIG, "spec.parameters: %zu parameters, at most %d",
		                  jval_size(params), RENDER_PARAMS_MAX);
	jval_foreach(params, i, item) {
		rc = take_param(p, item, i, err);
		if (rc != 0)
			return rc;
	}
	for (i = 0; i < p->n; i++) {
		struct decl *d = &p->d[i];

		if (!d->given) {
			d->val = jval_type(d->dflt) == JT_STRING ? jval_str(d->dflt) : "";
			d->len = jval_strlen(d->dflt);
		}
		if (d->required && d->len == 0)
			return ll_err_set(err, -EINVAL,
			                  "spec.parameters[%s]: required, and no value was given",
			                  d->name);
		rc = check_value(d, d->val, d->len, "", err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ===== the walk ===== */

static int walk_value(struct walk *w, struct jval v, json_t **out);

static int push(struct walk *w, const char *key, size_t idx)
{
	if (w->depth == WALK_DEPTH_MAX)
		return ll_err_set(w->err, -EINVAL, "nested too deep");
	w->seg[w->depth++] = (struct seg){key, idx};
	return 0;
}

/* "<path>: " and the reference at @s quoted, up to its '}' or 80 bytes. */
static struct denial *ref_msg(struct denial *m, const struct walk *w, const char *s, size_t n)
{
	size_t i;

	path_msg(m, w);
	for (i = 1; i < n && i < 80 && s[i - 1] != '}'; i++)
		;
	denial_quote(m, s, i);
	return m;
}

static bool is_word(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(s, word, n) == 0;
}

/*
 * The reference "${..." at @s (@n bytes left): ${namespace}, ${tenant} (*@val) or ${{NAME}} of
 * a declared parameter (*@d); its length in *@used. Anything else is refused.
 */
static int reference(const struct walk *w, const char *s, size_t n, size_t *used,
                     const struct decl **d /* OUT */, const char **val /* OUT */)
{
	bool param = n > 2 && s[2] == '{';
	size_t i = param ? 3 : 2;
	struct denial m;

	while (i < n && ident_char(s[i]))
		i++;
	*d = NULL;
	*val = NULL;
	if (param && i + 1 < n && s[i] == '}' && s[i + 1] == '}' && param_name(s + 3, i - 3)) {
		*used = i + 2;
		*d = decl_find(w->p, s + 3, i - 3);
		if (*d != NULL)
			return 0;
		denial_text(path_msg(&m, w), "${{%.*s}} names no parameter of the Template",
		            (int)(i - 3), s + 3);
		return -EINVAL;
	}
	if (!param && i < n && s[i] == '}') {
		*used = i + 1;
		if (is_word(s + 2, i - 2, "namespace"))
			*val = w->ns;
		else if (is_word(s + 2, i - 2, "tenant") && w->tenant == NULL) {
			denial_text(path_msg(&m, w), "${tenant} is used, but namespace ");
			denial_quote(&m, w->ns, strlen(w->ns));
			denial_text(&m, " belongs to no tenant");
			return -EINVAL;
		} else if (is_word(s + 2, i - 2, "tenant"))
			*val = w->tenant;
		if (*val != NULL)
			return 0;
	}
	denial_text(ref_msg(&m, w, s, n),
	            " is not ${namespace}, ${tenant} or ${{PARAM}} of a declared parameter");
	return -EINVAL;
}

/* Append @n bytes of rendered text to @b, within the caps. */
static int put_text(struct walk *w, struct buf *b, const char *s, size_t n)
{
	struct denial m;
	bool appended;

	if (w->mode != W_RENDER)
		return 0;
	appended = buf_append(b, s, n) == 0;
	if (appended && w->total + b->len <= RENDER_OUTPUT_MAX)
		return 0;
	path_msg(&m, w);
	if (!appended)
		denial_text(&m, "longer than %u bytes once rendered", RENDER_STRING_MAX);
	else
		denial_text(&m, "the render is longer than %u bytes", RENDER_OUTPUT_MAX);
	return -EMSGSIZE;
}

/* String @s (@n bytes) with its references substituted, into @b. */
static int substitute(struct walk *w, const char *s, size_t n, struct buf *b)
{
	size_t at = 0, used;
	const struct decl *d;
	const char *val, *dollar;
	int rc = 0;

	while (rc == 0 && at < n) {
		dollar = memchr(s + at, '$', n - at);
		if (dollar == NULL || dollar + 1 == s + n || dollar[1] != '{') {
			size_t upto = dollar == NULL ? n : (size_t)(dollar - s) + 1;

			rc = put_text(w, b, s + at, upto - at);
			at = upto;
			continue;
		}
		rc = put_text(w, b, s + at, (size_t)(dollar - s) - at);
		at = (size_t)(dollar - s);
		if (rc == 0)
			rc = reference(w, s + at, n - at, &used, &d, &val);
		if (rc == 0)
			rc = put_text(w, b, d != NULL ? d->val : val,
			              d != NULL ? d->len : strlen(val));
		at += used;
	}
	return rc;
}

static int walk_string(struct walk *w, struct jval v, json_t **out)
{
	const char *s = jval_str(v), *val;
	size_t n = jval_strlen(v), used;
	const struct decl *d;
	struct buf b = BUF_INIT(RENDER_STRING_MAX);
	struct denial m;
	int rc;

	if (w->mode == W_MAPPINGS && memmem(s, n, "${", 2) != NULL) {
		denial_quote(path_msg(&m, w), s, n);
		denial_text(&m, " holds \"${\": resource mappings are never parameterised");
		return -EINVAL;
	}
	if (w->mode == W_RENDER && n > 4 && s[0] == '$' && s[1] == '{' && s[2] == '{' &&
	    reference(w, s, n, &used, &d, &val) == 0 && used == n && d->type != P_STRING) {
		*out = typed_value(d);
		w->total += d->len;
		return *out != NULL ? 0 : ll_err_set(w->err, -EINVAL, "internal: untyped value");
	}
	rc = substitute(w, s, n, &b);
	if (rc == 0 && w->mode == W_RENDER) {
		*out = json_stringn(b.p != NULL ? b.p : "", b.len);
		w->total += b.len;
		if (*out == NULL)
			rc = ll_err_set(w->err, -EINVAL, "not valid UTF-8 once rendered");
	}
	buf_release(&b);
	return rc;
}

static int walk_object(struct walk *w, struct jval v, json_t **out)
{
	const char *key;
	struct jval val;
	json_t *child = NULL;
	struct denial m;
	size_t i;
	int rc = 0;

	if (w->mode == W_RENDER)
		*out = json_object();
	jval_foreach_member(v, i, key, val) {
		rc = push(w, key, 0);
		if (rc != 0)
			break;
		if (strstr(key, "${") != NULL) {
			denial_text(path_msg(&m, w), "a key may not hold \"${\"");
			rc = -EINVAL;
		}
		if (rc == 0)
			rc = walk_value(w, val, &child);
		if (rc == 0 && w->mode == W_RENDER && json_object_set_new(*out, key, child) != 0)
			rc = ll_err_set(w->err, -EINVAL, "internal: a key jansson refuses");
		w->depth--;
		if (rc != 0) {
			json_decref(child);
			break;
		}
	}
	return rc;
}

static int walk_array(struct walk *w, struct jval v, json_t **out)
{
	struct jval elem;
	json_t *child = NULL;
	size_t i;
	int rc = 0;

	if (w->mode == W_RENDER)
		*out = json_array();
	jval_foreach(v, i, elem) {
		rc = push(w, NULL, i);
		if (rc != 0)
			break;
		rc = walk_value(w, elem, &child);
		if (rc == 0 && w->mode == W_RENDER)
			json_array_append_new(*out, child);
		w->depth--;
		if (rc != 0) {
			json_decref(child);
			break;
		}
	}
	return rc;
}

/* @v walked: on W_RENDER, *@out is its rendering (also on error: the caller drops it). */
static int walk_value(struct walk *w, struct jval v, json_t **out)
{
	*out = NULL;
	switch (jval_type(v)) {
	case JT_OBJECT:
		return walk_object(w, v, out);
	case JT_ARRAY:
		return walk_array(w, v, out);
	case JT_STRING:
		return walk_string(w, v, out);
	default:
		if (w->mode == W_RENDER)
			*out = jval_to_json(v);
		return 0;
	}
}

/* ===== objects ===== */

/* A member of @obj that must be a string that is not empty and holds no NUL. */
static const char *required_str(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);
	const char *s = json_string_value(v);

	if (s == NULL || *s == '\0' || strlen(s) != json_string_length(v))
		return NULL;
	return s;
}

/* "spec.resources.manifests[i]: <kind> "<name>"" into @m. */
static struct denial *object_msg(struct denial *m, const struct walk *w, const char *kind,
                                 const char *name)
{
	path_msg(m, w);
	denial_item(m, 0, kind, strlen(kind), false);
	denial_text(m, " ");
	denial_quote(m, name, strlen(name));
	return m;
}

/* The namespace of namespaced object @obj: set when absent, else checked in RENDER_INSTANCE. */
static int place(const struct walk *w, const struct render_in *in, json_t *obj, const char *kind,
                 const char *name)
{
	json_t *meta = json_object_get(obj, "metadata"), *ns = json_object_get(meta, "namespace");
	struct denial m;

	if (ns == NULL || json_is_null(ns) || (json_is_string(ns) && json_string_length(ns) == 0)) {
		json_object_set_new(meta, "namespace", json_string(in->ns));
		return 0;
	}
	if (!json_is_string(ns)) {
		denial_text(path_msg(&m, w), "metadata.namespace must be a string");
		return -EINVAL;
	}
	if (in->mode == RENDER_GROUP || strcmp(json_string_value(ns), in->ns) == 0)
		return 0;
	object_msg(&m, w, kind, name);
	denial_text(&m, " is in namespace ");
	denial_quote(&m, json_string_value(ns), json_string_length(ns));
	denial_text(&m, ": a TemplateInstance renders into its own namespace ");
	denial_quote(&m, in->ns, strlen(in->ns));
	denial_text(&m, " only");
	return -EACCES;
}

/* Rendered manifest @obj: what it is, where it goes. */
static int finish_object(const struct walk *w, const struct render_in *in, json_t *obj)
{
	const char *api = required_str(obj, "apiVersion"), *kind = required_str(obj, "kind");
	const char *name = required_str(json_object_get(obj, "metadata"), "name");
	enum render_scope scope;
	struct denial m;

	if (api == NULL || kind == NULL || name == NULL) {
		denial_text(path_msg(&m, w), "%s is required (a string, not empty)",
		            api == NULL    ? "apiVersion"
		            : kind == NULL ? "kind"
		                           : "metadata.name");
		return -EINVAL;
	}
	scope = in->scope(in->scope_ctx, api, kind);
	if (scope == RENDER_SCOPE_NAMESPACED)
		return place(w, in, obj, kind, name);
	if (scope == RENDER_SCOPE_CLUSTER && in->mode == RENDER_GROUP)
		return 0;
	if (scope == RENDER_SCOPE_CLUSTER) {
		denial_text(
		        object_msg(&m, w, kind, name),
		        " is cluster-scoped: a TemplateInstance renders namespaced objects only");
		return -EACCES;
	}
	denial_text(path_msg(&m, w), "kind ");
	denial_quote(&m, kind, strlen(kind));
	denial_text(&m, " of ");
	denial_quote(&m, api, strlen(api));
	denial_text(&m, " is not served by the API server");
	return -ENOENT;
}

/* W_CHECK: manifest @item names its apiVersion, kind and metadata.name (references allowed). */
static int check_fields(const struct walk *w, struct jval item)
{
	const char *api = jval_str(jval_get(item, "apiVersion")),
	           *kind = jval_str(jval_get(item, "kind"));
	const char *name = jval_str(jval_path(item, "metadata", "name", NULL));
	struct denial m;

	if (api != NULL && *api != '\0' && kind != NULL && *kind != '\0' && name != NULL &&
	    *name != '\0')
		return 0;
	denial_text(path_msg(&m, w), "%s is required (a string, not empty)",
	            api == NULL || *api == '\0'     ? "apiVersion"
	            : kind == NULL || *kind == '\0' ? "kind"
	                                            : "metadata.name");
	return -EINVAL;
}

/* Walk spec.resources.manifests with @w (its mode says what for); the objects into @objs. */
static int walk_manifests(struct walk *w, struct jval tmpl, const struct render_in *in,
                          json_t *objs)
{
	struct jval list = jval_path(tmpl, "spec", "resources", "manifests", NULL), item;
	json_t *obj = NULL;
	size_t i;
	int rc = 0;

	if (jval_type(list) != JT_NONE && jval_type(list) != JT_NULL && jval_type(list) != JT_ARRAY)
		return ll_err_set(w->err, -EINVAL, "spec.resources.manifests: must be a list");
	w->depth = 0;
	push(w, "spec", 0);
	push(w, "resources", 0);
	push(w, "manifests", 0);
	jval_foreach(list, i, item) {
		struct denial m;

		push(w, NULL, i);
		if (jval_type(item) != JT_OBJECT) {
			denial_text(path_msg(&m, w), "must be an object");
			return -EINVAL;
		}
		rc = walk_value(w, item, &obj);
		if (rc == 0 && w->mode == W_CHECK)
			rc = check_fields(w, item);
		if (rc == 0 && w->mode == W_RENDER)
			rc = finish_object(w, in, obj);
		if (rc != 0) {
			json_decref(obj);
			return rc;
		}
		if (obj != NULL)
			json_array_append_new(objs, obj);
		w->depth--;
	}
	return 0;
}

/* No "${" anywhere in spec.resources.resourceMappings, keys included. */
static int check_mappings(struct walk *w, struct jval tmpl)
{
	struct jval maps = jval_path(tmpl, "spec", "resources", "resourceMappings", NULL);
	json_t *none = NULL;

	w->mode = W_MAPPINGS;
	w->depth = 0;
	push(w, "spec", 0);
	push(w, "resources", 0);
	push(w, "resourceMappings", 0);
	return walk_value(w, maps, &none);
}

/* The Template's declarations into @p, then the checks of render_check_template(). */
static int load_template(struct decls *p, struct jval tmpl, struct ll_err *err)
{
	struct walk *w;
	int rc = decls_load(p, tmpl, err);

	if (rc != 0)
		return rc;
	w = xcalloc(1, sizeof(*w));
	*w = (struct walk){.mode = W_CHECK, .p = p, .ns = "", .tenant = "", .err = err};
	rc = walk_manifests(w, tmpl, NULL, NULL);
	if (rc == 0)
		rc = check_mappings(w, tmpl);
	free(w);
	return rc;
}

int render_check_template(struct jval tmpl, struct ll_err *err)
{
	struct decls *p = xcalloc(1, sizeof(*p));
	struct ll_err spare;
	int rc = load_template(p, tmpl, err != NULL ? err : &spare);

	decls_release(p);
	free(p);
	return rc;
}

int render_check_params(struct jval tmpl, struct jval params, struct ll_err *err)
{
	struct decls *p = xcalloc(1, sizeof(*p));
	struct ll_err spare;
	int rc;

	if (err == NULL)
		err = &spare;
	rc = load_template(p, tmpl, err);
	if (rc != 0)
		prefix_template(err, tmpl, rc);
	else
		rc = resolve(p, params, err);
	decls_release(p);
	free(p);
	return rc;
}

int render_objects(const struct render_in *in, json_t **out, struct ll_err *err)
{
	struct decls *p = xcalloc(1, sizeof(*p));
	struct walk *w = xcalloc(1, sizeof(*w));
	json_t *objs = json_array();
	struct ll_err spare;
	int rc;

	assert(in->ns != NULL && in->ns[0] != '\0' && in->scope != NULL);
	*out = NULL;
	if (err == NULL)
		err = &spare;
	rc = load_template(p, in->tmpl, err);
	if (rc != 0)
		prefix_template(err, in->tmpl, rc);
	else
		rc = resolve(p, in->params, err);
	*w = (struct walk){
	        .mode = W_RENDER, .p = p, .ns = in->ns, .tenant = in->tenant, .err = err};
	if (rc == 0)
		rc = walk_manifests(w, in->tmpl, in, objs);
	if (rc == 0)
		*out = objs;
	else
		json_decref(objs);
	decls_release(p);
	free(p);
	free(w);
	return rc;
}
