/* render_params.c - a Template's parameters: declarations, the values in force, types and
 * validation (see render.h, render_internal.h). */
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
#include "tenancy/render_internal.h"

static const char *const ptype_names[] = {"string", "number", "boolean"};

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
json_t *render__typed_value(const struct decl *d)
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
		render__put_param(render__msg_start(&m, err), d->name, strlen(d->name));
		denial_text(&m, "%s: ", field);
		denial_quote(&m, v, n);
		denial_text(&m, " is not a %s%s", ptype_names[d->type],
		            d->type == P_BOOLEAN ? " (true or false)" : "");
		return -EINVAL;
	}
	if (d->rx == NULL || rxs_match(d->rx, v, n, &limited) == 0)
		return 0;
	render__put_param(render__msg_start(&m, err), d->name, strlen(d->name));
	denial_text(&m, "%s: ", field);
	denial_quote(&m, v, n);
	denial_text(&m, " does not match ");
	denial_item(&m, 0, d->pattern, strlen(d->pattern), false);
	if (limited)
		denial_text(&m, " (the match hit its limit)");
	return -EINVAL;
}

/* ===== declarations ===== */

void render__decls_release(struct decls *p)
{
	for (size_t i = 0; i < p->n; i++)
		rxs_free(p->d[i].rx);
	p->n = 0;
}

const struct decl *render__decl_find(const struct decls *p, const char *name, size_t len)
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
	if (s == NULL || !render__param_name(s, n)) {
		render__msg_start(&m, err);
		denial_text(&m, "spec.parameters[%zu].name: ", i);
		denial_quote(&m, s != NULL ? s : "", n);
		denial_text(&m,
		            " is not a parameter name (letters, digits and _, not starting with "
		            "a digit, at most %d)",
		            RENDER_NAME_MAX);
		return -EINVAL;
	}
	if (render__decl_find(p, s, n) != NULL)
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
	render__msg_start(&m, err);
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

int render__decls_load(struct decls *p, struct jval tmpl, struct ll_err *err)
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

	render__put_param(render__msg_start(&m, err), name, len);
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
	d = (struct decl *)render__decl_find(p, name, len);
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
int render__resolve(struct decls *p, struct jval params, struct ll_err *err)
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
