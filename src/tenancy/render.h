/*
 * render.h - a Template's manifests rendered for one namespace, without I/O.
 *
 * A Template (issue 13) declares parameters (spec.parameters[{name, value, type, required,
 * validation}]) and holds Kubernetes objects (spec.resources.manifests[]) whose string values
 * may say ${namespace}, ${tenant} and ${{PARAM}}. A TemplateInstance (one namespace) or a
 * TemplateGroupInstance (each namespace it selects) gives parameter values; this module checks
 * them and renders the objects that the controllers apply. The webhook calls the checks when a
 * Template or an instance is written. docs/internals/render.md lists every message.
 *
 * Invariants:
 * - Substitution happens once, after parsing, into string VALUES of the parsed tree: a value
 *   never adds a key, an object or a document, and the text substituted in is never scanned
 *   again (a "${{X}}" inside a parameter value stays literal). Keys are never substituted; a
 *   key holding "${" is an error. A string value that is exactly "${{N}}" becomes a JSON number
 *   or boolean when N's type says so; otherwise values go in as text.
 * - Every "${" in a manifest begins ${namespace}, ${tenant} or ${{NAME}} of a declared
 *   parameter, or the Template is refused; a '$' not followed by '{' stays as it is.
 * - resourceMappings are never parameterised: "${" anywhere in them refuses the Template.
 * - A chart's source is never parameterised: "${" in spec.resources.helm's repoUrl, chart,
 *   path, version or credentials refuses the Template; so does one in a setValues[].name. Its
 *   values (YAML text) must parse into a mapping; they are rendered like manifests.
 * - In RENDER_INSTANCE mode a rendered object is namespaced (by the caller's scope function)
 *   and in the instance's namespace; one without a namespace gets it.
 * - Atomic: on error nothing is returned (*out stays NULL) and @err holds one printable line
 *   (denial.h's escaping) naming the field: spec.parameters[TEAM] for an instance's parameter,
 *   spec.resources.manifests[0].metadata.name for a manifest; errors in the Template alone are
 *   prefixed with Template "<name>": when render_objects() finds them.
 * - Pure: no globals, no I/O; every input is borrowed and only read; any number of threads may
 *   render at once (a scope function must then be thread-safe). Output is bounded
 *   (RENDER_STRING_MAX, RENDER_OUTPUT_MAX).
 */
#ifndef LANDLORD_RENDER_H
#define LANDLORD_RENDER_H

#include <jansson.h>
#include <stddef.h>

#include "base/jdoc.h"

struct ll_err;

#define RENDER_PARAMS_MAX 64          /* parameters declared, and given by an instance */
#define RENDER_VALUE_MAX  4096        /* bytes of a parameter's value */
#define RENDER_NAME_MAX   63          /* bytes of a parameter's name */
#define RENDER_STRING_MAX (1u << 20)  /* bytes of one string value once rendered */
#define RENDER_OUTPUT_MAX (16u << 20) /* bytes of all the rendered strings of one render */

enum render_mode {
	RENDER_INSTANCE, /* a TemplateInstance: namespaced objects in its namespace only */
	RENDER_GROUP,    /* a TemplateGroupInstance: the caller decides where objects may go */
};

/* What the API server says about an apiVersion and kind (discovery lives elsewhere). */
enum render_scope {
	RENDER_SCOPE_UNKNOWN, /* not served: the render fails */
	RENDER_SCOPE_NAMESPACED,
	RENDER_SCOPE_CLUSTER,
};

struct render_in {
	struct jval tmpl;   /* the Template object */
	struct jval params; /* the instance's spec.parameters (an array; missing or null: none) */
	const char *ns;     /* the namespace rendered for: ${namespace}; not NULL nor empty */
	const char *tenant; /* its tenant: ${tenant}; NULL when none (then ${tenant} fails) */
	enum render_mode mode;
	/* The scope of @api_version and @kind (NUL-terminated, not empty, any bytes otherwise). */
	enum render_scope (*scope)(const void *ctx, const char *api_version, const char *kind);
	const void *scope_ctx;
};

/**
 * render_objects() - render @in's Template with @in's parameters for namespace @in->ns.
 * @out: OUT, on success a new JSON array of the rendered objects (new references, in manifest
 *       order, each an object with apiVersion, kind and metadata.name strings that are not
 *       empty, and metadata.namespace set for namespaced kinds when the manifest had none);
 *       NULL on error.
 * @err: may be NULL; the one-line reason on error.
 * Return: 0; -EINVAL (a Template or parameter that render_check_template() or
 * render_check_params() refuses, an object without apiVersion, kind or metadata.name);
 * -E2BIG (over RENDER_PARAMS_MAX parameters); -EMSGSIZE (a value over RENDER_VALUE_MAX, a
 * string over RENDER_STRING_MAX or a render over RENDER_OUTPUT_MAX); -ENOENT (a kind the scope
 * function does not know); -EACCES (RENDER_INSTANCE: a cluster-scoped kind, another
 * namespace). Thread-safe.
 */
int render_objects(const struct render_in *in, json_t **out /* OUT */, struct ll_err *err);

/**
 * render_check_template() - whether Template @tmpl (borrowed) is one that can render, for the
 * webhook to call when a Template is written: parameter declarations (names of letters, digits
 * and _, unique; types string, number or boolean; validation patterns that compile; defaults,
 * or "" for parameters that are not required, of their type and matching their pattern), keys
 * without "${", references to declared parameters and apiVersion, kind and metadata.name
 * strings that are not empty (as written) in manifests, no "${" anywhere in
 * spec.resources.resourceMappings nor in spec.resources.helm's source (repoUrl, chart, path,
 * version, credentials) or setValues[].name, and its values (YAML text holding a mapping) and
 * setValues[].value checked like manifests.
 * Return: 0, -EINVAL, -E2BIG or -EMSGSIZE as render_objects(), with messages without the
 * Template prefix. Thread-safe.
 */
int render_check_template(struct jval tmpl, struct ll_err *err);

/**
 * render_check_params() - whether instance parameters @params (spec.parameters, borrowed) are
 * valid for Template @tmpl: each declared once by the Template, given once, a string of at
 * most RENDER_VALUE_MAX bytes of its type and matching its validation (the whole value); every
 * required parameter given a value that is not empty. The webhook calls it when an instance is
 * written; render_objects() does the same. Return and messages as render_objects().
 */
int render_check_params(struct jval tmpl, struct jval params, struct ll_err *err);

/**
 * render_helm_values() - the values of @in's Template's chart (spec.resources.helm) with @in's
 * parameters, for namespace @in->ns (@in->mode and @in->scope are not used). The YAML text of
 * spec.resources.helm.values is parsed first (kube/yamljson.h: as Helm reads it; it must hold
 * a mapping, or nothing), then ${namespace}, ${tenant} and ${{NAME}} are substituted once into
 * its string values, never keys, by the rules of manifests (a value exactly ${{N}} of a number
 * or boolean N becomes one). setValues[].value gets the same substitution and stays a string
 * (helm parses it: --set, or --set-string with forceString).
 * @values: OUT, a new JSON object (empty without values); NULL on error.
 * @set_values: OUT, a new JSON array of {name, value, forceString} (a string, a string, a
 *              boolean), in order; NULL on error.
 * Return: 0; -ENOENT when the Template has no spec.resources.helm; else as render_objects().
 * Thread-safe.
 */
int render_helm_values(const struct render_in *in, json_t **values /* OUT */,
                       json_t **set_values /* OUT */, struct ll_err *err);

#endif
