/* yamljson.c - one YAML document into a JSON tree, as Helm reads values (see yamljson.h). */
#include "kube/yamljson.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libfyaml.h>

#include "base/err.h"
#include "base/mem.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

/* -EINVAL, with "line N: " in front of the reason when @n's position is known. */
static int fail_at(struct fy_node *n, struct ll_err *err, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int fail_at(struct fy_node *n, struct ll_err *err, const char *fmt, ...)
{
	struct fy_token *t = n != NULL ? fy_node_get_scalar_token(n) : NULL;
	const struct fy_mark *m = t != NULL ? fy_token_start_mark(t) : NULL;
	char why[LL_ERR_MSG_MAX / 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (m != NULL)
		return ll_err_set(err, -EINVAL, "line %d: %s", m->line + 1, why);
	return ll_err_set(err, -EINVAL, "%s", why);
}

/* @s (@n bytes) is one of the NULL-terminated @words. */
static bool one_of(const char *s, size_t n, const char *const *words)
{
	for (; *words != NULL; words++)
		if (strlen(*words) == n && memcmp(s, *words, n) == 0)
			return true;
	return false;
}

static const char *const NULLS[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const TRUES[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                    "True", "TRUE", "on",  "On",  "ON",  NULL};
static const char *const FALSES[] = {"n",     "N",     "no",  "No",  "NO",  "false",
                                     "False", "FALSE", "off", "Off", "OFF", NULL};
static const char *const NONFINITE[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf",
                                        "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
                                        ".NaN",  ".NAN",  NULL};

/* Digits of @base only, at least one. */
static bool digits_of(const char *p, int base)
{
	static const char *const set[] = {
	        [2] = "01", [8] = "01234567", [10] = "0123456789", [16] = "0123456789abcdefABCDEF"};

	return *p != '\0' && strspn(p, set[base]) == strlen(p);
}

/* Go's ParseInt(s, 0, 64): 1 and *@v for an integer; 0 for none; -ERANGE beyond 64 bits. */
static int go_int(const char *s, long long *v)
{
	const char *p = s + (*s == '+' || *s == '-');
	int base = 10;
	unsigned long long u;

	if (p[0] == '0' && p[1] != '\0') {
		base = strchr("xX", p[1])   ? 16
		       : strchr("oO", p[1]) ? 8
		       : strchr("bB", p[1]) ? 2
		                            : 0;
		p += base != 0 ? 2 : 1;
		base = base != 0 ? base : 8;
	}
	if (!digits_of(p, base))
		return 0;
	errno = 0;
	u = strtoull(p, NULL, base);
	if (errno == ERANGE || u > (unsigned long long)INT64_MAX + (*s == '-'))
		return -ERANGE;
	*v = *s == '-' ? (long long)(0 - u) : (long long)u;
	return 1;
}

/* go-yaml v2's float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool yaml_float(const char *s)
{
	const char *p = s + (*s == '+' || *s == '-');
	size_t whole = strspn(p, "0123456789"), frac = 0;

	p += whole;
	if (*p == '.') {
		frac = strspn(++p, "0123456789");
		p += frac;
	}
	if (whole == 0 && frac == 0)
		return false;
	if (*p == 'e' || *p == 'E') {
		p += 1 + (p[1] == '+' || p[1] == '-');
		if (strspn(p, "0123456789") == 0)
			return false;
		p += strspn(p, "0123456789");
	}
	return *p == '\0';
}

/* A number as go-yaml v2 resolves plain @s (@n bytes), else NULL; -ERANGE in *@rc. */
static json_t *number(const char *s, size_t n, int *rc)
{
	char *c = xmalloc(n + 1);
	size_t k = 0;
	long long v;
	json_t *out = NULL;
	double d;

	for (size_t i = 0; i < n; i++)
		if (s[i] != '_')
			c[k++] = s[i];
	c[k] = '\0';
	*rc = go_int(c, &v);
	if (*rc == 1)
		out = json_integer(v);
	else if (*rc == 0 && yaml_float(c) && isfinite(d = strtod(c, NULL)))
		out = json_real(d);
	free(c);
	return out;
}

/* Plain scalar @n: null, a boolean, a number or a string, as Helm reads it. */
static int plain(struct fy_node *n, const char *s, size_t len, json_t **out, struct ll_err *err)
{
	int rc = 0;

	if (one_of(s, len, NULLS))
		*out = json_null();
	else if (one_of(s, len, TRUES) || one_of(s, len, FALSES))
		*out = json_boolean(one_of(s, len, TRUES));
	else if (one_of(s, len, NONFINITE))
		return fail_at(n, err, "%.*s has no JSON value: quote it", (int)len, s);
	else if (len > 0 && strchr("0123456789+-.", s[0]) != NULL)
		*out = number(s, len, &rc);
	if (rc == -ERANGE)
		return fail_at(n, err, "%.*s is an integer beyond 64 bits: quote it", (int)len, s);
	if (*out == NULL)
		*out = json_stringn(s, len);
	return *out != NULL ? 0 : fail_at(n, err, "not valid UTF-8");
}

/* The tag of @n: NULL for none or !!str, !!map, !!seq; else refused. */
static int check_tag(struct fy_node *n, bool *str, struct ll_err *err)
{
	size_t len;
	const char *tag = fy_node_get_tag(n, &len);

	*str = false;
	if (tag == NULL)
		return 0;
	if (len == strlen(TAG_PREFIX "str") && memcmp(tag, TAG_PREFIX "str", len) == 0) {
		*str = true;
		return 0;
	}
	if ((len == strlen(TAG_PREFIX "map") && memcmp(tag, TAG_PREFIX "map", len) == 0) ||
	    (len == strlen(TAG_PREFIX "seq") && memcmp(tag, TAG_PREFIX "seq", len) == 0))
		return 0;
	return fail_at(n, err, "tag %.*s is not supported (only !!str)", (int)len, tag);
}

static int convert(struct fy_node *n, json_t **out, struct ll_err *err);

static int scalar(struct fy_node *n, json_t **out, struct ll_err *err)
{
	size_t len;
	const char *s = fy_node_get_scalar(n, &len);
	bool str;
	int rc = check_tag(n, &str, err);

	if (rc != 0)
		return rc;
	if (fy_node_is_alias(n))
		return fail_at(n, err, "aliases are not supported");
	if (s == NULL)
		s = "";
	if (str || fy_node_get_style(n) != FYNS_PLAIN) {
		*out = json_stringn(s, len);
		return *out != NULL ? 0 : fail_at(n, err, "not valid UTF-8");
	}
	return plain(n, s, len, out, err);
}

/* Mapping key @k as a string: what Helm would read as the same string, else refused. */
static int map_key(struct fy_node *k, json_t **key, struct ll_err *err)
{
	json_t *v = NULL;
	char text[32];
	int rc;

	*key = NULL;
	if (k == NULL || !fy_node_is_scalar(k) || fy_node_is_alias(k))
		return fail_at(k, err, "a key must be a scalar");
	rc = scalar(k, &v, err);
	if (rc == 0 && json_is_integer(v)) {
		size_t len;
		const char *s = fy_node_get_scalar(k, &len);

		snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(v));
		if (len != strlen(text) || memcmp(s, text, len) != 0)
			rc = fail_at(k, err, "key %.*s is the integer %s to Helm: quote it",
			             (int)len, s, text);
		json_decref(v);
		v = rc == 0 ? json_string(text) : NULL;
	} else if (rc == 0 && !json_is_string(v)) {
		rc = fail_at(k, err, "key %s is not a string to Helm: quote it",
		             json_is_null(v)      ? "null"
		             : json_is_boolean(v) ? "(a boolean)"
		                                  : "(a number)");
	} else if (rc == 0 && strcmp(json_string_value(v), "<<") == 0 &&
	           fy_node_get_style(k) == FYNS_PLAIN) {
		rc = fail_at(k, err, "merge keys (<<) are not supported");
	}
	if (rc != 0)
		json_decref(v);
	*key = rc == 0 ? v : NULL;
	return rc;
}

static int mapping(struct fy_node *n, json_t **out, struct ll_err *err)
{
	struct fy_node_pair *pair;
	void *iter = NULL;
	json_t *key = NULL, *val = NULL;
	int rc = 0;

	*out = json_object();
	while (rc == 0 && (pair = fy_node_mapping_iterate(n, &iter)) != NULL) {
		val = NULL; /* the last one went into *@out */
		rc = map_key(fy_node_pair_key(pair), &key, err);
		if (rc == 0)
			rc = convert(fy_node_pair_value(pair), &val, err);
		if (rc == 0)
			json_object_set_new(*out, json_string_value(key), val);
		else
			json_decref(val);
		json_decref(key);
	}
	return rc;
}

static int sequence(struct fy_node *n, json_t **out, struct ll_err *err)
{
	struct fy_node *item;
	void *iter = NULL;
	json_t *val = NULL;
	int rc = 0;

	*out = json_array();
	while (rc == 0 && (item = fy_node_sequence_iterate(n, &iter)) != NULL) {
		rc = convert(item, &val, err);
		if (rc == 0)
			json_array_append_new(*out, val);
		else
			json_decref(val);
	}
	return rc;
}

/* @n into *@out (also on error: the caller drops it). The parser bounds the nesting (64). */
static int convert(struct fy_node *n, json_t **out, struct ll_err *err)
{
	bool str;
	int rc;

	*out = NULL;
	if (n == NULL) {
		*out = json_null();
		return 0;
	}
	if (fy_node_is_scalar(n))
		return scalar(n, out, err);
	rc = check_tag(n, &str, err);
	if (rc == 0 && str)
		rc = fail_at(n, err, "!!str on a collection");
	if (rc != 0)
		return rc;
	return fy_node_is_mapping(n) ? mapping(n, out, err) : sequence(n, out, err);
}

/* The parser's first error, as one line. */
static int parse_error(struct fy_diag *diag, struct ll_err *err)
{
	struct fy_diag_error *e;
	void *iter = NULL;

	while ((e = fy_diag_errors_iterate(diag, &iter)) != NULL)
		if (e->type == FYET_ERROR)
			return ll_err_set(err, -EINVAL, "line %d: %s", e->line, e->msg);
	return ll_err_set(err, -EINVAL, "not YAML");
}

/* The one document of @fyp into *@out. */
static int load(struct fy_parser *fyp, struct fy_diag *diag, json_t **out, struct ll_err *err)
{
	struct fy_document *fyd = fy_parse_load_document(fyp), *next;
	int rc;

	if (fyd == NULL) {
		if (fy_parser_get_stream_error(fyp))
			return parse_error(diag, err);
		*out = json_null(); /* nothing but comments */
		return 0;
	}
	rc = convert(fy_document_root(fyd), out, err);
	fy_parse_document_destroy(fyp, fyd);
	if (rc == 0 && (next = fy_parse_load_document(fyp)) != NULL) {
		fy_parse_document_destroy(fyp, next);
		rc = ll_err_set(err, -EINVAL, "more than one YAML document");
	} else if (rc == 0 && fy_parser_get_stream_error(fyp)) {
		rc = parse_error(diag, err);
	}
	return rc;
}

int yaml_to_json(const char *text, size_t len, json_t **out, struct ll_err *err)
{
	struct fy_diag_cfg dcfg;
	struct fy_parse_cfg pcfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG};
	struct fy_diag *diag;
	struct fy_parser *fyp = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	diag = fy_diag_create(&dcfg);
	if (diag != NULL) {
		fy_diag_set_collect_errors(diag, true);
		pcfg.diag = diag;
		fyp = fy_parser_create(&pcfg);
	}
	if (fyp != NULL && fy_parser_set_string(fyp, text, len) == 0)
		rc = load(fyp, diag, out, err);
	else
		ll_err_set(err, rc, "cannot create a YAML parser");
	if (rc != 0) {
		json_decref(*out);
		*out = NULL;
	}
	if (fyp != NULL)
		fy_parser_destroy(fyp);
	if (diag != NULL)
		fy_diag_destroy(diag);
	return rc;
}
