/*
 * admit_templates.c - the rules of family "templates" (issue 13, point 3) and the last writer
 * of a TemplateInstance (point 4); see admit.h.
 *
 * A TemplateInstance written by anyone but a privileged subject must name a Template that
 * exists, whose spec.instantiableIn (a namespace label selector; unset or empty selects no
 * namespace) selects the instance's namespace, and whose parameters accept the instance's
 * (render_check_params()). A Template written by anyone must render (render_check_template()).
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "kube/selector.h"
#include "tenancy/admit_internal.h"
#include "tenancy/render.h"

/*
 * Refuse (or audit) the instance: "TemplateInstance <ns>/<name>: [Template "<tmpl>" ]<why><detail>"
 * to family "templates". @tmpl and @detail may be NULL.
 */
static bool refuse_instance(struct adm_ctx *c, const char *tmpl, const char *why,
                            const char *detail)
{
	const char *name = *c->rq->name ? c->rq->name : jval_name(c->rq->object);
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "TemplateInstance %s/%s: ", c->rq->ns, name ? name : "");
	if (tmpl) {
		denial_text(&d, "Template ");
		denial_quote(&d, tmpl, strlen(tmpl));
		denial_text(&d, " ");
	}
	denial_text(&d, "%s%s", why, detail ? detail : "");
	return adm__violation(c, ADM_TEMPLATES, msg);
}

/* Does the Template's spec.instantiableIn select the request's namespace? false: refused. */
static bool instantiable(struct adm_ctx *c, const char *tmpl_name, struct jval tmpl)
{
	struct jval ns = c->view->ops->namespace_obj(c->view->ctx, c->rq->ns);
	json_t *ls = jval_to_json(jval_path(tmpl, "spec", "instantiableIn", NULL)), *labels;
	struct sel *s = NULL;
	struct ll_err err = {{0}};
	char why[600];
	bool ok = false;

	if (ls == NULL || json_is_null(ls) || sel_from_json(ls, &s, &err) != 0 || sel_is_empty(s)) {
		snprintf(why, sizeof(why),
		         "is not instantiable in namespace %s (spec.instantiableIn%s%s)", c->rq->ns,
		         *err.msg ? ": " : " selects no namespace", *err.msg ? err.msg : "");
	} else {
		labels = jval_to_json(jval_path(ns, "metadata", "labels", NULL));
		ok = sel_matches(s, labels);
		json_decref(labels);
		snprintf(why, sizeof(why),
		         "is not instantiable in namespace %s (spec.instantiableIn)", c->rq->ns);
	}
	sel_free(s);
	json_decref(ls);
	return ok || !refuse_instance(c, tmpl_name, why, NULL);
}

bool adm__template_instance(struct adm_ctx *c)
{
	const char *name = jval_str(jval_path(c->rq->object, "spec", "template", NULL));
	struct jval tmpl;
	struct ll_err err = {{0}};

	if (name == NULL || *name == '\0')
		return refuse_instance(c, NULL, "spec.template must name a Template", NULL);
	tmpl = c->view->ops->template_obj(c->view->ctx, name);
	if (jval_type(tmpl) != JT_OBJECT)
		return refuse_instance(c, name, "does not exist (spec.template)", NULL);
	if (!instantiable(c, name, tmpl))
		return true;
	if (render_check_params(tmpl, jval_path(c->rq->object, "spec", "parameters", NULL), &err) !=
	    0)
		return refuse_instance(c, name, "refuses its parameters: ", err.msg);
	return false;
}

bool adm__template_object(struct adm_ctx *c)
{
	const char *name = *c->rq->name ? c->rq->name : jval_name(c->rq->object);
	char msg[DENIAL_MSG_MAX];
	struct ll_err err = {{0}};
	struct denial d;

	if (render_check_template(c->rq->object, &err) == 0)
		return false;
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "Template ");
	denial_quote(&d, name ? name : "", name ? strlen(name) : 0);
	denial_text(&d, ": %s", err.msg);
	return adm__violation(c, ADM_TEMPLATES, msg);
}

static bool known_writer(const char *v)
{
	return v && (strcmp(v, WRITER_EDITOR) == 0 || strcmp(v, WRITER_OWNER) == 0 ||
	             strcmp(v, WRITER_PRIVILEGED) == 0);
}

void adm__last_writer(struct adm_ctx *c, bool priv, bool system)
{
	const char *self = c->view->ops->self_user(c->view->ctx);
	bool is_self = self && *self && strcmp(self, c->rq->username) == 0;
	const char *old = NULL, *w;
	struct jval annots;

	if (c->rq->op == ADM_UPDATE) {
		annots = jval_path(c->rq->old_object, "metadata", "annotations", NULL);
		old = jval_str(jval_get(annots, ANNOT_LAST_WRITER));
	}
	if (is_self || system) /* landlord's finalizer, the garbage collector: no new writer */
		w = known_writer(old)                    ? old
		    : is_self && c->rq->op == ADM_CREATE ? WRITER_PRIVILEGED
		                                         : WRITER_EDITOR;
	else if (priv)
		w = WRITER_PRIVILEGED;
	else if (c->tenant && adm__owns(c->rq, c->tenant))
		w = WRITER_OWNER;
	else
		w = WRITER_EDITOR;
	snprintf(c->d->last_writer, sizeof(c->d->last_writer), "%s", w);
}
