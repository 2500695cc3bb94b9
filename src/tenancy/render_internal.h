/*
 * render_internal.h - what render.c (the walk over the manifests) and render_params.c (the
 * parameters: declarations, values, types, validation) share; not for callers of render.h.
 */
#ifndef LANDLORD_RENDER_INTERNAL_H
#define LANDLORD_RENDER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "tenancy/denial.h"
#include "tenancy/regexset.h"
#include "tenancy/render.h"

enum ptype { P_STRING, P_NUMBER, P_BOOLEAN };

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

/* render_params.c */
/* The Template's spec.parameters into @p (patterns compiled), checked; 0 or an error in @err. */
int render__decls_load(struct decls *p, struct jval tmpl, struct ll_err *err);
/* Free what render__decls_load() compiled. */
void render__decls_release(struct decls *p);
/* The declaration named by @len bytes at @name, or NULL. */
const struct decl *render__decl_find(const struct decls *p, const char *name, size_t len);
/* The values in force: the instance's @params over the defaults, each checked. 0 or error. */
int render__resolve(struct decls *p, struct jval params, struct ll_err *err);
/* A value exactly "${{N}}" as N's type says: a number, a boolean or a string (new). */
json_t *render__typed_value(const struct decl *d);

/* render.c: the walk, for what a Template holds besides manifests (render_helm.c) */
/* One step of a path in messages: a member, or an index when @key is NULL. */
struct render_at {
	const char *key;
	size_t idx;
};

struct render_walk {
	const struct decls *p; /* the declarations, resolved for a render */
	const char *ns, *tenant;
	const struct render_at *at; /* where the value is, for messages */
	size_t n;
	bool untyped; /* "${{N}}" stays a string whatever N's type */
};

/*
 * @v by the rules of manifests: checked when @out is NULL (references declared, keys without
 * "${"), else rendered into *@out (a new tree; NULL on error).
 */
int render__walk(const struct render_walk *rw, struct jval v, json_t **out, struct ll_err *err);
/* The Template's declarations into @p, then the checks of render_check_template(). */
int render__load(struct decls *p, struct jval tmpl, struct ll_err *err);
/* Template "<name>": before what @err says; returns @rc. */
int render__prefix_template(struct ll_err *err, struct jval tmpl, int rc);

/* render_helm.c */
/* spec.resources.helm.values of @helm: a YAML mapping whose strings hold declared references. */
int render__check_values(const struct decls *p, struct jval helm, struct ll_err *err);

/* render.c: messages */
/* A parameter name: letters, digits and _, not starting with a digit, 1..RENDER_NAME_MAX. */
bool render__param_name(const char *s, size_t n);
/* spec.parameters[NAME] into @d (the name quoted when it is not a parameter name). */
void render__put_param(struct denial *d, const char *name, size_t len);
/* A message started in @err's buffer. */
struct denial *render__msg_start(struct denial *d, struct ll_err *err);

#endif
