/*
 * render_helm.c - the values of a Template's chart rendered for one namespace (see render.h):
 * spec.resources.helm.values parsed from YAML, then walked by render.c's rules.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/mem.h"
#include "kube/yamljson.h"
#include "tenancy/denial.h"
#include "tenancy/render.h"
#include "tenancy/render_internal.h"

static const struct render_at VALUES_AT[] = {
        {"spec", 0}, {"resources", 0}, {"helm", 0}, {"values", 0}};

/* "spec.resources.helm.values: <why>" in @err, escaped to one printable line. */
static int values_error(struct ll_err *err, int rc, const char *why)
{
	struct denial d;

	denial_text(render__msg_start(&d, err), "spec.resources.helm.values: %s", why);
	return rc;
}

/* spec.resources.helm.values of @helm parsed into *@doc: a mapping; NULL when there is none. */
static int values_doc(struct jval helm, struct jdoc **doc, struct ll_err *err)
{
	struct jval text = jval_get(helm, "values");
	json_t *tree = NULL;
	struct ll_err why;
	int rc;

	*doc = NULL;
	if (jval_type(text) == JT_NONE || jval_type(text) == JT_NULL)
		return 0;
	if (jval_type(text) != JT_STRING)
		return values_error(err, -EINVAL, "must be a string (YAML text)");
	rc = yaml_to_json(jval_str(text), jval_strlen(text), &tree, &why);
	if (rc != 0)
		return values_error(err, rc, why.msg);
	if (json_is_null(tree)) {
		json_decref(tree);
		tree = json_object();
	}
	if (!json_is_object(tree))
		rc = values_error(err, -EINVAL, "must be a YAML mapping");
	if (rc == 0 && jdoc_from_json(tree, NULL, doc, &why) != 0)
		rc = values_error(err, -EINVAL, why.msg);
	json_decref(tree);
	return rc;
}

int render__check_values(const struct decls *p, struct jval helm, struct ll_err *err)
{
	struct render_walk rw = {.p = p, .ns = "", .tenant = "", .at = VALUES_AT, .n = 4};
	struct jdoc *doc;
	int rc = values_doc(helm, &doc, err);

	if (rc == 0 && doc != NULL)
		rc = render__walk(&rw, jdoc_root(doc), NULL, err);
	jdoc_unref(doc);
	return rc;
}

/* The values of @helm rendered with @rw into *@out (an empty object when none). */
static int render_values(struct render_walk rw, struct jval helm, json_t **out, struct ll_err *err)
{
	struct jdoc *doc;
	int rc = values_doc(helm, &doc, err);

	rw.at = VALUES_AT;
	rw.n = 4;
	if (rc == 0 && doc == NULL)
		*out = json_object();
	else if (rc == 0)
		rc = render__walk(&rw, jdoc_root(doc), out, err);
	jdoc_unref(doc);
	return rc;
}

/* setValues of @helm, each value rendered with @rw as a string, into *@out. */
static int render_set_values(struct render_walk rw, struct jval helm, json_t **out,
                             struct ll_err *err)
{
	struct jval list = jval_get(helm, "setValues"), item;
	struct render_at at[6] = {{"spec", 0},      {"resources", 0}, {"helm", 0},
	                          {"setValues", 0}, {NULL, 0},        {"value", 0}};
	json_t *value = NULL;
	size_t i;
	int rc = 0;

	rw.at = at;
	rw.n = 6;
	rw.untyped = true;
	*out = json_array();
	jval_foreach(list, i, item) {
		at[4].idx = i;
		rc = render__walk(&rw, jval_get(item, "value"), &value, err);
		if (rc != 0)
			break;
		/* render_check_template() made name and value strings */
		json_array_append_new(
		        *out, json_pack("{s:s,s:o,s:b}", "name", jval_str(jval_get(item, "name")),
		                        "value", value, "forceString",
		                        jval_bool(jval_get(item, "forceString"), false)));
	}
	if (rc != 0) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

int render_helm_values(const struct render_in *in, json_t **values, json_t **set_values,
                       struct ll_err *err)
{
	struct decls *p = xcalloc(1, sizeof(*p));
	struct jval helm = jval_path(in->tmpl, "spec", "resources", "helm", NULL);
	struct ll_err spare;
	int rc;

	*values = *set_values = NULL;
	if (err == NULL)
		err = &spare;
	rc = render__load(p, in->tmpl, err);
	if (rc != 0)
		render__prefix_template(err, in->tmpl, rc);
	else if (jval_type(helm) != JT_OBJECT)
		rc = ll_err_set(err, -ENOENT, "spec.resources.helm: the Template has no chart");
	else
		rc = render__resolve(p, in->params, err);
	if (rc == 0)
		rc = render_values((struct render_walk){.p = p, .ns = in->ns, .tenant = in->tenant},
		                   helm, values, err);
	if (rc == 0)
		rc = render_set_values(
		        (struct render_walk){.p = p, .ns = in->ns, .tenant = in->tenant}, helm,
		        set_values, err);
	if (rc != 0) {
		json_decref(*values);
		*values = NULL;
	}
	render__decls_release(p);
	free(p);
	return rc;
}
