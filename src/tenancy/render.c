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
#include "tenancy/render_internal.h"

/* Where a walk is: spec, resources, manifests, 0, metadata, name... */
#define WALK_DEPTH_MAX (JDOC_MAX_DEPTH + 8)

enum walk_mode {
	W_CHECK,  /* the Template alone: keys and references, no output */
	W_FIXED,  /* never parameterised (resourceMappings, a chart's source): no "${", no output */
	W_RENDER, /* substitute and build the output */
};

struct walk {
	enum walk_mode mode;
	const struct decls *p;
	const char *ns, *tenant;
	const char *fixed; /* W_FIXED: what is never parameterised, for the message */
	bool untyped;      /* W_RENDER: "${{N}}" stays a string whatever N's type */
	size_t total;      /* bytes of rendered strings so far */
	size_t depth;
	struct render_at seg[WALK_DEPTH_MAX];
	struct ll_err *err;
};

/* ===== messages ===== */

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* A parameter name: letters, digits and _, not starting with a digit, 1..RENDER_NAME_MAX. */
bool render__param_name(const char *s, size_t n)
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
	if (render__param_name(name, len))
		denial_text(d, "%.*s", (int)len, name);
	else
		denial_quote(d, name, len);
	denial_text(d, "]");
}

void render__put_param(struct denial *d, const char *name, size_t len)
{
	denial_text(d, "spec.parameters");
	put_bracket_name(d, name, len);
}

static void put_path(struct denial *d, const struct walk *w)
{
	for (size_t i = 0; i < w->depth; i++) {
		const struct render_at *s = &w->seg[i];

		if (s->key == NULL)
			denial_text(d, "[%zu]", s->idx);
		else if (!plain_key(s->key))
			put_bracket_name(d, s->key, strlen(s->key));
		else
			denial_text(d, "%s%s", i > 0 ? "." : "", s->key);
	}
}

struct denial *render__msg_start(struct denial *d, struct ll_err *err)
{
	denial_init(d, err->msg, sizeof(err->msg));
	return d;
}

/* "<path>: " into @d, started in w->err. */
static struct denial *path_msg(struct denial *d, const struct walk *w)
{
	render__msg_start(d, w->err);
	put_path(d, w);
	denial_text(d, ": ");
	return d;
}

int render__prefix_template(struct ll_err *err, struct jval tmpl, int rc)
{
	char was[LL_ERR_MSG_MAX];
	const char *name = jval_name(tmpl);
	struct denial d;

	memcpy(was, err->msg, sizeof(was));
	render__msg_start(&d, err);
	denial_text(&d, "Template ");
	denial_quote(&d, name != NULL ? name : "", name != NULL ? strlen(name) : 0);
	denial_text(&d, ": %s", was);
	return rc;
}

/* ===== the walk ===== */

static int walk_value(struct walk *w, struct jval v, json_t **out);

static int push(struct walk *w, const char *key, size_t idx)
{
	if (w->depth == WALK_DEPTH_MAX)
		return ll_err_set(w->err, -EINVAL, "nested too deep");
	w->seg[w->depth++] = (struct render_at){key, idx};
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
	if (param && i + 1 < n && s[i] == '}' && s[i + 1] == '}' &&
	    render__param_name(s + 3, i - 3)) {
		*used = i + 2;
		*d = render__decl_find(w->p, s + 3, i - 3);
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

	if (w->mode == W_FIXED && memmem(s, n, "${", 2) != NULL) {
		denial_quote(path_msg(&m, w), s, n);
		denial_text(&m, " holds \"${\": %s are never parameterised", w->fixed);
		return -EINVAL;
	}
	if (w->mode == W_RENDER && !w->untyped && n > 4 && s[0] == '$' && s[1] == '{' &&
	    s[2] == '{' && reference(w, s, n, &used, &d, &val) == 0 && used == n &&
	    d->type != P_STRING) {
		*out = render__typed_value(d);
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

int render__walk(const struct render_walk *rw, struct jval v, json_t **out, struct ll_err *err)
{
	struct walk *w = xcalloc(1, sizeof(*w));
	json_t *none = NULL;
	int rc = 0;

	*w = (struct walk){.mode = out != NULL ? W_RENDER : W_CHECK,
	                   .p = rw->p,
	                   .ns = rw->ns,
	                   .tenant = rw->tenant,
	                   .untyped = rw->untyped,
	                   .err = err};
	for (size_t i = 0; rc == 0 && i < rw->n; i++)
		rc = push(w, rw->at[i].key, rw->at[i].idx);
	if (rc == 0)
		rc = walk_value(w, v, out != NULL ? out : &none);
	if (rc != 0 && out != NULL) {
		json_decref(*out);
		*out = NULL;
	}
	free(w);
	return rc;
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

/* Where @w is, from spec.resources down to @field. */
static void at_resources(struct walk *w, const char *field)
{
	w->depth = 0;
	push(w, "spec", 0);
	push(w, "resources", 0);
	push(w, field, 0);
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
	at_resources(w, "manifests");
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

	w->mode = W_FIXED;
	w->fixed = "resource mappings";
	at_resources(w, "resourceMappings");
	return walk_value(w, maps, &none);
}

/* @v is a string holding "${". */
static bool holds_ref(struct jval v)
{
	const char *s = jval_str(v);

	return s != NULL && memmem(s, jval_strlen(v), "${", 2) != NULL;
}

/* @v is a string, or "<path>: must be a string". */
static int must_be_string(const struct walk *w, struct jval v)
{
	struct denial m;

	if (jval_type(v) == JT_STRING)
		return 0;
	denial_text(path_msg(&m, w), "must be a string");
	return -EINVAL;
}

/* setValues[]: names without "${" (never substituted), values with declared references only. */
static int check_set_values(struct walk *w, struct jval list)
{
	struct jval item;
	json_t *none = NULL;
	struct denial m;
	size_t i;
	int rc = 0;

	push(w, "setValues", 0);
	jval_foreach(list, i, item) {
		push(w, NULL, i);
		push(w, "name", 0);
		rc = must_be_string(w, jval_get(item, "name"));
		if (rc != 0)
			return rc;
		if (holds_ref(jval_get(item, "name"))) {
			denial_text(path_msg(&m, w), "a name may not hold \"${\"");
			return -EINVAL;
		}
		w->seg[w->depth - 1].key = "value";
		rc = must_be_string(w, jval_get(item, "value"));
		if (rc == 0)
			rc = walk_value(w, jval_get(item, "value"), &none);
		if (rc != 0)
			return rc;
		w->depth -= 2;
	}
	w->depth--;
	return 0;
}

/* The fields of spec.resources.helm that name the chart and how to fetch it. */
static const char *const HELM_SOURCE[] = {"repoUrl", "chart", "path", "version", "credentials"};

/*
 * spec.resources.helm: no "${" in its source (a tenant could point landlord at an internal
 * address, or have the credentials sent to its own server), then its setValues and values.
 */
static int check_helm(struct walk *w, struct jval tmpl)
{
	struct jval helm = jval_path(tmpl, "spec", "resources", "helm", NULL);
	json_t *none = NULL;
	int rc = 0;

	if (jval_type(helm) == JT_NONE || jval_type(helm) == JT_NULL)
		return 0;
	if (jval_type(helm) != JT_OBJECT)
		return ll_err_set(w->err, -EINVAL, "spec.resources.helm: must be an object");
	at_resources(w, "helm");
	w->mode = W_FIXED;
	w->fixed = "chart sources";
	for (size_t i = 0; rc == 0 && i < sizeof(HELM_SOURCE) / sizeof(HELM_SOURCE[0]); i++) {
		push(w, HELM_SOURCE[i], 0);
		rc = walk_value(w, jval_get(helm, HELM_SOURCE[i]), &none);
		w->depth--;
	}
	w->mode = W_CHECK;
	if (rc == 0)
		rc = check_set_values(w, jval_get(helm, "setValues"));
	return rc != 0 ? rc : render__check_values(w->p, helm, w->err);
}

int render__load(struct decls *p, struct jval tmpl, struct ll_err *err)
{
	struct walk *w;
	int rc = render__decls_load(p, tmpl, err);

	if (rc != 0)
		return rc;
	w = xcalloc(1, sizeof(*w));
	*w = (struct walk){.mode = W_CHECK, .p = p, .ns = "", .tenant = "", .err = err};
	rc = walk_manifests(w, tmpl, NULL, NULL);
	if (rc == 0)
		rc = check_mappings(w, tmpl);
	if (rc == 0)
		rc = check_helm(w, tmpl);
	free(w);
	return rc;
}

int render_check_template(struct jval tmpl, struct ll_err *err)
{
	struct decls *p = xcalloc(1, sizeof(*p));
	struct ll_err spare;
	int rc = render__load(p, tmpl, err != NULL ? err : &spare);

	render__decls_release(p);
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
	rc = render__load(p, tmpl, err);
	if (rc != 0)
		render__prefix_template(err, tmpl, rc);
	else
		rc = render__resolve(p, params, err);
	render__decls_release(p);
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
	rc = render__load(p, in->tmpl, err);
	if (rc != 0)
		render__prefix_template(err, in->tmpl, rc);
	else
		rc = render__resolve(p, in->params, err);
	*w = (struct walk){
	        .mode = W_RENDER, .p = p, .ns = in->ns, .tenant = in->tenant, .err = err};
	if (rc == 0)
		rc = walk_manifests(w, in->tmpl, in, objs);
	if (rc == 0)
		*out = objs;
	else
		json_decref(objs);
	render__decls_release(p);
	free(p);
	free(w);
	return rc;
}
