/*
 * test_render.c - Templates rendered for a namespace: one-pass substitution into string values,
 * typed parameters, instance values over defaults, validation, limits, resourceMappings and a
 * chart's source never parameterised, TemplateInstances held to namespaced objects in their
 * namespace, and nothing returned after an error. Injections (a newline, ": ", "---",
 * ${{OTHER}}, a key) stay literal.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/jdoc.h"
#include "base/mem.h"
#include "tenancy/render.h"

static enum render_scope scope(const void *ctx, const char *api_version, const char *kind)
{
	static const char *const cluster[] = {"ClusterRole", "ClusterRoleBinding", "Namespace"};
	static const char *const namespaced[] = {"ConfigMap", "Secret", "RoleBinding", "Deployment",
	                                         "Service"};

	for (size_t i = 0; i < sizeof(cluster) / sizeof(cluster[0]); i++)
		if (strcmp(kind, cluster[i]) == 0)
			return RENDER_SCOPE_CLUSTER;
	for (size_t i = 0; i < sizeof(namespaced) / sizeof(namespaced[0]); i++)
		if (strcmp(kind, namespaced[i]) == 0)
			return RENDER_SCOPE_NAMESPACED;
	return RENDER_SCOPE_UNKNOWN;
}

static struct jdoc *doc(const char *json)
{
	struct jdoc *d = NULL;
	struct ll_err err;

	if (jdoc_parse(json, strlen(json), NULL, &d, &err) != 0)
		fail_msg("bad test JSON: %s: %s", err.msg, json);
	return d;
}

/* A Template with parameters @params and manifests @manifests (JSON text of both arrays). */
static struct jdoc *tmpl(const char *params, const char *manifests)
{
	char *s = xasprintf("{\"apiVersion\":\"landlord.dev/v1alpha1\",\"kind\":\"Template\","
	                    "\"metadata\":{\"name\":\"web\"},\"spec\":{\"parameters\":%s,"
	                    "\"resources\":{\"manifests\":%s}}}",
	                    params, manifests);
	struct jdoc *d = doc(s);

	free(s);
	return d;
}

struct run {
	int rc;
	json_t *out;
	struct ll_err err;
};

static struct run render_mode(const char *params, const char *manifests, const char *values,
                              enum render_mode mode)
{
	struct jdoc *t = tmpl(params, manifests), *v = doc(values);
	struct render_in in = {.tmpl = jdoc_root(t),
	                       .params = jdoc_root(v),
	                       .ns = "team-a",
	                       .tenant = "acme",
	                       .mode = mode,
	                       .scope = scope};
	struct run r = {0};

	r.rc = render_objects(&in, &r.out, &r.err);
	if (r.rc != 0)
		assert_null(r.out);
	else
		r.err.msg[0] = '\0';
	jdoc_unref(t);
	jdoc_unref(v);
	return r;
}

static struct run render(const char *params, const char *manifests, const char *values)
{
	return render_mode(params, manifests, values, RENDER_INSTANCE);
}

#define CM(data)                                                                         \
	"[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\"}," \
	"\"data\":" data "}]"

/* The rendered objects as compact JSON with sorted keys; the run's output is dropped. */
static char *dump(struct run *r)
{
	char *s;

	if (r->rc != 0)
		fail_msg("render failed (%d): %s", r->rc, r->err.msg);
	s = json_dumps(r->out, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(r->out);
	r->out = NULL;
	return s;
}

static void assert_renders(const char *params, const char *manifests, const char *values,
                           const char *want)
{
	struct run r = render(params, manifests, values);
	char *got = dump(&r);

	assert_string_equal(got, want);
	free(got);
}

static void assert_refused(const char *params, const char *manifests, const char *values, int rc,
                           const char *msg)
{
	struct run r = render(params, manifests, values);

	if (r.rc == 0)
		fail_msg("rendered: %s", dump(&r));
	assert_int_equal(r.rc, rc);
	assert_string_equal(r.err.msg, msg);
}

static void assert_template_refused(const char *params, int rc, const char *msg)
{
	struct jdoc *t = tmpl(params, "[]");
	struct ll_err err;

	snprintf(err.msg, sizeof(err.msg), "untouched");
	assert_int_equal(render_check_template(jdoc_root(t), &err), rc);
	assert_string_equal(err.msg, rc == 0 ? "untouched" : msg);
	jdoc_unref(t);
}

#define TEAM "[{\"name\":\"TEAM\",\"validation\":\"^[a-z]+$\",\"required\":true}]"
#define CM_OUT(data)                                                                               \
	"[{\"apiVersion\":\"v1\",\"data\":" data ",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":" \
	"\"cm\",\"namespace\":\"team-a\"}}]"

static void test_render__substitutes_namespace_tenant_and_parameters(void **state)
{
	assert_renders(TEAM,
	               CM("{\"a\":\"${namespace}/${tenant}/${{TEAM}}\",\"b\":\"x${{TEAM}}\"}"),
	               "[{\"name\":\"TEAM\",\"value\":\"blue\"}]",
	               CM_OUT("{\"a\":\"team-a/acme/blue\",\"b\":\"xblue\"}"));
	/* a '$' not followed by '{' stays; so do numbers, booleans, nulls and arrays */
	assert_renders("[]", CM("{\"a\":\"$HOME $ $$ ${namespace}$\",\"n\":[1,true,null,2.5]}"),
	               "[]", CM_OUT("{\"a\":\"$HOME $ $$ team-a$\",\"n\":[1,true,null,2.5]}"));
}

static void test_render__injected_values_stay_literal_strings(void **state)
{
	/* a newline, ": ", "---", a reference and a key-like text: one string each, not rescanned
	 */
	assert_renders(
	        "[{\"name\":\"X\"},{\"name\":\"OTHER\",\"value\":\"secret\"}]",
	        CM("{\"a\":\"${{X}}\",\"b\":\"[${{X}}]\"}"),
	        "[{\"name\":\"X\",\"value\":\"a\\nb: c\\n---\\nkind: Secret\\n${{OTHER}}"
	        "${namespace}\\\"}, \\\"k\\\": {\"}]",
	        CM_OUT("{\"a\":\"a\\nb: c\\n---\\nkind: Secret\\n${{OTHER}}${namespace}\\\"}, "
	               "\\\"k\\\": {\",\"b\":\"[a\\nb: c\\n---\\nkind: Secret\\n${{OTHER}}"
	               "${namespace}\\\"}, \\\"k\\\": {]\"}"));
}

static void test_render__keys_are_never_substituted(void **state)
{
	assert_renders("[{\"name\":\"X\",\"value\":\"v\"}]", CM("{\"$namespace\":\"${{X}}\"}"),
	               "[]", CM_OUT("{\"$namespace\":\"v\"}"));
	assert_refused("[{\"name\":\"X\",\"value\":\"v\"}]", CM("{\"${{X}}\":\"a\"}"), "[]",
	               -EINVAL,
	               "Template \"web\": spec.resources.manifests[0].data[\"${{X}}\"]: a key may "
	               "not hold \"${\"");
}

static void test_render__exact_references_are_typed_by_their_declaration(void **state)
{
	const char *params = "[{\"name\":\"N\",\"type\":\"number\",\"value\":\"3\"},"
	                     "{\"name\":\"R\",\"type\":\"number\",\"value\":\"-1.5e2\"},"
	                     "{\"name\":\"B\",\"type\":\"boolean\",\"value\":\"true\"},"
	                     "{\"name\":\"S\",\"value\":\"7\"}]";

	assert_renders(params,
	               CM("{\"n\":\"${{N}}\",\"r\":\"${{R}}\",\"b\":\"${{B}}\",\"s\":\"${{S}}\","
	                  "\"t\":\"n=${{N}}\",\"u\":\"${{B}}${{B}}\"}"),
	               "[{\"name\":\"B\",\"value\":\"false\"}]",
	               CM_OUT("{\"b\":false,\"n\":3,\"r\":-150.0,\"s\":\"7\",\"t\":\"n=3\","
	                      "\"u\":\"falsefalse\"}"));
	assert_refused(params, CM("{}"), "[{\"name\":\"N\",\"value\":\"3 \"}]", -EINVAL,
	               "spec.parameters[N]: \"3 \" is not a number");
	assert_refused(params, CM("{}"), "[{\"name\":\"N\",\"value\":\"0x10\"}]", -EINVAL,
	               "spec.parameters[N]: \"0x10\" is not a number");
	assert_refused(params, CM("{}"), "[{\"name\":\"N\",\"value\":\"1e999\"}]", -EINVAL,
	               "spec.parameters[N]: \"1e999\" is not a number");
	assert_refused(params, CM("{}"), "[{\"name\":\"B\",\"value\":\"yes\"}]", -EINVAL,
	               "spec.parameters[B]: \"yes\" is not a boolean (true or false)");
}

static void test_render__instance_values_override_defaults_and_are_validated(void **state)
{
	const char *params = "[{\"name\":\"TEAM\",\"value\":\"red\",\"validation\":\"^[a-z]+$\"}]";

	assert_renders(params, CM("{\"t\":\"${{TEAM}}\"}"), "[]", CM_OUT("{\"t\":\"red\"}"));
	assert_renders(params, CM("{\"t\":\"${{TEAM}}\"}"),
	               "[{\"name\":\"TEAM\",\"value\":\"ok\"}]", CM_OUT("{\"t\":\"ok\"}"));
	assert_refused(params, CM("{}"), "[{\"name\":\"TEAM\",\"value\":\"NOT VALID\"}]", -EINVAL,
	               "spec.parameters[TEAM]: \"NOT VALID\" does not match ^[a-z]+$");
	/* the whole value: no newline after the match, no prefix */
	assert_refused(params, CM("{}"), "[{\"name\":\"TEAM\",\"value\":\"ok\\n\"}]", -EINVAL,
	               "spec.parameters[TEAM]: \"ok\\x0a\" does not match ^[a-z]+$");
}

static void test_render__parameter_errors_name_the_parameter(void **state)
{
	assert_refused(TEAM, CM("{}"), "[]", -EINVAL,
	               "spec.parameters[TEAM]: required, and no value was given");
	assert_refused(TEAM, CM("{}"), "[{\"name\":\"TEAM\",\"value\":\"\"}]", -EINVAL,
	               "spec.parameters[TEAM]: required, and no value was given");
	assert_refused(TEAM, CM("{}"), "[{\"name\":\"TEAM\",\"value\":\"a\"},{\"name\":\"X\"}]",
	               -EINVAL, "spec.parameters[X]: the Template declares no such parameter");
	assert_refused(TEAM, CM("{}"), "[{\"name\":\"a b\\n\",\"value\":\"a\"}]", -EINVAL,
	               "spec.parameters[\"a b\\x0a\"]: the Template declares no such parameter");
	assert_refused(TEAM, CM("{}"),
	               "[{\"name\":\"TEAM\",\"value\":\"a\"},{\"name\":\"TEAM\",\"value\":\"b\"}]",
	               -EINVAL, "spec.parameters[TEAM]: given twice");
	assert_refused(TEAM, CM("{}"), "[{\"name\":\"TEAM\",\"value\":1}]", -EINVAL,
	               "spec.parameters[TEAM]: value must be a string");
	assert_refused(TEAM, CM("{}"), "{}", -EINVAL, "spec.parameters: must be a list");
}

static void test_render__unknown_references_are_refused(void **state)
{
	assert_refused("[]", CM("{\"a\":\"x ${{NOPE}}\"}"), "[]", -EINVAL,
	               "Template \"web\": spec.resources.manifests[0].data.a: ${{NOPE}} names no "
	               "parameter of the Template");
	assert_refused("[]", CM("{\"a\":\"${HOME}/bin\"}"), "[]", -EINVAL,
	               "Template \"web\": spec.resources.manifests[0].data.a: \"${HOME}\" is not "
	               "${namespace}, ${tenant} or ${{PARAM}} of a declared parameter");
	assert_refused(
	        "[]", CM("{\"app.kubernetes.io/x\":[\"${{ X }}\"]}"), "[]", -EINVAL,
	        "Template \"web\": spec.resources.manifests[0].data[\"app.kubernetes.io/x\"]"
	        "[0]: \"${{ X }\" is not ${namespace}, ${tenant} or ${{PARAM}} of a declared "
	        "parameter");
	assert_refused("[]", CM("{\"a\":\"${\"}"), "[]", -EINVAL,
	               "Template \"web\": spec.resources.manifests[0].data.a: \"${\" is not "
	               "${namespace}, ${tenant} or ${{PARAM}} of a declared parameter");
}

static void test_render__tenant_is_required_when_used(void **state)
{
	struct jdoc *t = tmpl("[]", CM("{\"t\":\"${tenant}\"}")), *none = doc("[]");
	struct render_in in = {.tmpl = jdoc_root(t),
	                       .params = jdoc_root(none),
	                       .ns = "team-a",
	                       .mode = RENDER_INSTANCE,
	                       .scope = scope};
	struct ll_err err;
	json_t *out = json_true();

	assert_int_equal(render_objects(&in, &out, &err), -EINVAL);
	assert_null(out);
	assert_string_equal(err.msg, "spec.resources.manifests[0].data.t: ${tenant} is used, but "
	                             "namespace \"team-a\" belongs to no tenant");
	assert_int_equal(render_objects(&in, &out, NULL), -EINVAL);
	jdoc_unref(t);
	jdoc_unref(none);
}

static void test_render__limits(void **state)
{
	char *params, *values, *big, *cut;
	struct buf_like {
		char s[80 * 70];
	} *b = xcalloc(1, sizeof(*b));
	size_t n = 0;

	/* 64 parameters pass, 65 do not, on either side */
	n += (size_t)snprintf(b->s + n, sizeof(b->s) - n, "[");
	for (int i = 0; i < RENDER_PARAMS_MAX + 1; i++)
		n += (size_t)snprintf(b->s + n, sizeof(b->s) - n, "%s{\"name\":\"P%d\"}",
		                      i ? "," : "", i);
	snprintf(b->s + n, sizeof(b->s) - n, "]");
	assert_refused(b->s, CM("{}"), "[]", -E2BIG,
	               "Template \"web\": spec.parameters: 65 parameters, at most 64");
	assert_refused("[]", CM("{}"), b->s, -E2BIG, "spec.parameters: 65 parameters, at most 64");
	cut = strrchr(b->s, ','); /* drop the 65th */
	cut[0] = ']';
	cut[1] = '\0';
	assert_renders(b->s, CM("{\"x\":\"${{P63}}\"}"), "[]", CM_OUT("{\"x\":\"\"}"));
	free(b);
	/* 4 KiB a value */
	big = xcalloc(1, RENDER_VALUE_MAX + 2);
	memset(big, 'v', RENDER_VALUE_MAX + 1);
	values = xasprintf("[{\"name\":\"V\",\"value\":\"%s\"}]", big);
	assert_refused("[{\"name\":\"V\"}]", CM("{}"), values, -EMSGSIZE,
	               "spec.parameters[V]: 4097 bytes, at most 4096");
	params = xasprintf("[{\"name\":\"V\",\"value\":\"%s\"}]", big);
	assert_refused(params, CM("{}"), "[]", -EMSGSIZE,
	               "Template \"web\": spec.parameters[V].value: 4097 bytes, at most 4096");
	free(values);
	big[RENDER_VALUE_MAX] = '\0';
	values = xasprintf("[{\"name\":\"V\",\"value\":\"%s\"}]", big);
	{
		struct run r = render("[{\"name\":\"V\"}]", CM("{\"x\":\"${{V}}\"}"), values);

		assert_int_equal(r.rc, 0);
		json_decref(r.out);
	}
	free(values);
	free(params);
	free(big);
}

static void test_render__rendered_strings_are_bounded(void **state)
{
	/* 4 KiB x 300 references: over RENDER_STRING_MAX in one string */
	size_t refs = RENDER_STRING_MAX / RENDER_VALUE_MAX + 10, n = 0;
	char *many = xcalloc(refs, 8), *manifests, *values, *big = xcalloc(1, RENDER_VALUE_MAX + 1);
	struct run r;

	for (size_t i = 0; i < refs; i++)
		n += (size_t)snprintf(many + n, refs * 8 - n, "${{V}}");
	memset(big, 'v', RENDER_VALUE_MAX);
	values = xasprintf("[{\"name\":\"V\",\"value\":\"%s\"}]", big);
	manifests = xasprintf(CM("{\"x\":\"%s\"}"), many);
	r = render("[{\"name\":\"V\"}]", manifests, values);
	assert_int_equal(r.rc, -EMSGSIZE);
	assert_string_equal(r.err.msg,
	                    "spec.resources.manifests[0].data.x: longer than 1048576 bytes once "
	                    "rendered");
	free(many);
	free(manifests);
	free(values);
	free(big);
}

static void test_render__mappings_are_never_parameterised(void **state)
{
	struct jdoc *t = doc("{\"metadata\":{\"name\":\"web\"},\"spec\":{\"resources\":{"
	                     "\"resourceMappings\":{\"secrets\":[{\"namespace\":\"acme\","
	                     "\"name\":\"${{X}}\"}]}}}}");
	struct jdoc *ok = doc("{\"metadata\":{\"name\":\"web\"},\"spec\":{\"resources\":{"
	                      "\"resourceMappings\":{\"configMaps\":[{\"namespace\":\"shared\","
	                      "\"name\":\"ca$\"}]}}}}");
	struct jdoc *key =
	        doc("{\"metadata\":{\"name\":\"web\"},\"spec\":{\"resources\":{"
	            "\"resourceMappings\":{\"configMaps\":[{\"${namespace}\":\"a\"}]}}}}");
	struct ll_err err;

	assert_int_equal(render_check_template(jdoc_root(t), &err), -EINVAL);
	assert_string_equal(err.msg, "spec.resources.resourceMappings.secrets[0].name: \"${{X}}\" "
	                             "holds \"${\": resource mappings are never parameterised");
	assert_int_equal(render_check_template(jdoc_root(ok), &err), 0);
	assert_int_equal(render_check_template(jdoc_root(key), &err), -EINVAL);
	assert_string_equal(err.msg,
	                    "spec.resources.resourceMappings.configMaps[0][\"${namespace}\"]:"
	                    " a key may not hold \"${\"");
	assert_int_equal(render_check_template(jdoc_root(t), NULL), -EINVAL);
	jdoc_unref(t);
	jdoc_unref(ok);
	jdoc_unref(key);
}

/* A Template whose spec.resources.helm is @helm (JSON), with the parameter X. */
static int check_helm(const char *helm, struct ll_err *err)
{
	char *s = xasprintf("{\"metadata\":{\"name\":\"web\"},\"spec\":{\"parameters\":"
	                    "[{\"name\":\"X\",\"value\":\"x\"}],\"resources\":{\"helm\":%s}}}",
	                    helm);
	struct jdoc *t = doc(s);
	int rc = render_check_template(jdoc_root(t), err);

	jdoc_unref(t);
	free(s);
	return rc;
}

static void test_render__a_chart_source_is_never_parameterised(void **state)
{
	static const char *const refused[][2] = {
	        {"{\"repoUrl\":\"https://${{X}}/charts\",\"chart\":\"a\",\"version\":\"1.0.0\"}",
	         "spec.resources.helm.repoUrl: \"https://${{X}}/charts\" holds \"${\": chart "
	         "sources are never parameterised"},
	        {"{\"repoUrl\":\"https://c.example\",\"chart\":\"${namespace}\",\"version\":\"1\"}",
	         "spec.resources.helm.chart: \"${namespace}\" holds \"${\": chart sources are "
	         "never "
	         "parameterised"},
	        {"{\"path\":\"/charts/${tenant}\"}",
	         "spec.resources.helm.path: \"/charts/${tenant}\" holds \"${\": chart sources are "
	         "never parameterised"},
	        {"{\"repoUrl\":\"oci://r.example/c\",\"version\":\"${{X}}\"}",
	         "spec.resources.helm.version: \"${{X}}\" holds \"${\": chart sources are never "
	         "parameterised"},
	        {"{\"path\":\"/c\",\"credentials\":{\"secretRef\":{\"namespace\":\"${namespace}\","
	         "\"name\":\"creds\"}}}",
	         "spec.resources.helm.credentials.secretRef.namespace: \"${namespace}\" holds "
	         "\"${\": "
	         "chart sources are never parameterised"},
	        {"{\"path\":\"/c\",\"setValues\":[{\"name\":\"a.${{X}}\",\"value\":\"1\"}]}",
	         "spec.resources.helm.setValues[0].name: a name may not hold \"${\""},
	        {"{\"path\":\"/c\",\"setValues\":[{\"name\":\"a\",\"value\":\"${{Y}}\"}]}",
	         "spec.resources.helm.setValues[0].value: ${{Y}} names no parameter of the "
	         "Template"},
	        {"[]", "spec.resources.helm: must be an object"},
	};
	struct ll_err err;

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_int_equal(check_helm(refused[i][0], &err), -EINVAL);
		assert_string_equal(err.msg, refused[i][1]);
	}
	assert_int_equal(check_helm("{\"repoUrl\":\"https://c.example/$x\",\"chart\":\"web\","
	                            "\"version\":\"1.2.3\",\"credentials\":{\"secretRef\":{"
	                            "\"namespace\":\"platform\",\"name\":\"repo\"}},\"setValues\":"
	                            "[{\"name\":\"team\",\"value\":\"${{X}}-${namespace}\"}]}",
	                            &err),
	                 0);
	assert_int_equal(check_helm("null", &err), 0);
}

static void test_render__declarations_are_checked(void **state)
{
	struct jdoc *t =
	        tmpl("[{\"name\":\"A\",\"type\":\"number\",\"value\":\"1\"},{\"name\":"
	             "\"b_2\",\"type\":\"string\",\"required\":true,\"validation\":\"x+\"}]",
	             CM("{\"a\":\"${{A}}${{b_2}}\"}"));
	struct ll_err err;

	assert_int_equal(render_check_template(jdoc_root(t), &err), 0);
	jdoc_unref(t);
	assert_template_refused(
	        "[{\"name\":\"a-b\"}]", -EINVAL,
	        "spec.parameters[0].name: \"a-b\" is not a parameter name (letters, "
	        "digits and _, not starting with a digit, at most 63)");
	assert_template_refused("[{\"value\":\"x\"}]", -EINVAL,
	                        "spec.parameters[0].name: \"\" is not a parameter name (letters, "
	                        "digits and _, not starting with a digit, at most 63)");
	assert_template_refused("[{\"name\":\"A\"},{\"name\":\"A\"}]", -EINVAL,
	                        "spec.parameters[1].name: \"A\" is declared twice");
	assert_template_refused(
	        "[{\"name\":\"A\",\"type\":\"int\"}]", -EINVAL,
	        "spec.parameters[A].type: \"int\" is not string, number or boolean");
	assert_template_refused("[{\"name\":\"A\",\"required\":\"yes\"}]", -EINVAL,
	                        "spec.parameters[A].required: must be a boolean");
	assert_template_refused("[{\"name\":\"A\",\"value\":3}]", -EINVAL,
	                        "spec.parameters[A].value: must be a string");
	assert_template_refused(
	        "[{\"name\":\"A\",\"validation\":\"a(b\",\"value\":\"ab\"}]", -EINVAL,
	        "spec.parameters[A].validation: invalid regular expression at offset "
	        "3: missing closing parenthesis");
	assert_template_refused("[{\"name\":\"A\",\"validation\":\"[a-z]+\",\"value\":\"A\"}]",
	                        -EINVAL, "spec.parameters[A].value: \"A\" does not match [a-z]+");
	/* a parameter that is not required stands for "" when no value is given */
	assert_template_refused("[{\"name\":\"A\",\"type\":\"number\"}]", -EINVAL,
	                        "spec.parameters[A].value: \"\" is not a number");
	assert_template_refused("[{\"name\":\"A\",\"validation\":\".+\"}]", -EINVAL,
	                        "spec.parameters[A].value: \"\" does not match .+");
	assert_template_refused("[{\"name\":\"A\",\"type\":\"number\",\"required\":true}]", 0, "");
}

static void test_render__instances_render_namespaced_objects_in_their_namespace(void **state)
{
	const char *ns_param = "[{\"name\":\"NS\",\"value\":\"team-a\"}]";
	const char *other = "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	                    "\"cm\",\"namespace\":\"${{NS}}\"}}]";
	const char *crb = "[{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":"
	                  "\"ClusterRoleBinding\",\"metadata\":{\"name\":\"take-over\"}}]";
	struct run r;
	char *got;

	assert_renders(
	        ns_param, other, "[]",
	        "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\","
	        "\"namespace\":\"team-a\"}}]");
	assert_refused(ns_param, other, "[{\"name\":\"NS\",\"value\":\"kube-system\"}]", -EACCES,
	               "spec.resources.manifests[0]: ConfigMap \"cm\" is in namespace "
	               "\"kube-system\": a TemplateInstance renders into its own namespace "
	               "\"team-a\" only");
	assert_refused("[]", crb, "[]", -EACCES,
	               "spec.resources.manifests[0]: ClusterRoleBinding \"take-over\" is "
	               "cluster-scoped: a TemplateInstance renders namespaced objects only");
	/* a group instance may: the caller decides */
	r = render_mode(ns_param, crb, "[]", RENDER_GROUP);
	got = dump(&r);
	assert_string_equal(got, "[{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":"
	                         "\"ClusterRoleBinding\",\"metadata\":{\"name\":\"take-over\"}}]");
	free(got);
	r = render_mode(ns_param, other, "[{\"name\":\"NS\",\"value\":\"b\"}]", RENDER_GROUP);
	got = dump(&r);
	assert_non_null(strstr(got, "\"namespace\":\"b\""));
	free(got);
}

static void test_render__objects_need_kind_api_version_and_name(void **state)
{
	assert_refused(
	        "[]", "[{\"apiVersion\":\"v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"}}]",
	        "[]", -ENOENT,
	        "spec.resources.manifests[0]: kind \"Widget\" of \"v1\" is not served by the "
	        "API server");
	/* the Template check sees what is missing as written... */
	assert_refused(
	        "[]", "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{}}]", "[]",
	        -EINVAL,
	        "Template \"web\": spec.resources.manifests[0]: metadata.name is required (a "
	        "string, not empty)");
	assert_refused("[]", "[{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}]", "[]",
	               -EINVAL,
	               "Template \"web\": spec.resources.manifests[0]: apiVersion is required (a "
	               "string, not empty)");
	assert_refused("[]", "[1]", "[]", -EINVAL,
	               "Template \"web\": spec.resources.manifests[0]: must be an object");
	/* ...the render what a parameter leaves empty */
	assert_refused(
	        "[{\"name\":\"K\"}]",
	        "[{\"apiVersion\":\"v1\",\"kind\":\"${{K}}\",\"metadata\":{\"name\":\"a\"}}]", "[]",
	        -EINVAL, "spec.resources.manifests[0]: kind is required (a string, not empty)");
	assert_refused(
	        "[{\"name\":\"N\"}]",
	        "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	        "\"${{N}}\"}}]",
	        "[]", -EINVAL,
	        "spec.resources.manifests[0]: metadata.name is required (a string, not empty)");
	assert_refused("[]",
	               "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	               "\"a\",\"namespace\":5}}]",
	               "[]", -EINVAL,
	               "spec.resources.manifests[0]: metadata.namespace must be a string");
}

static void test_render__names_and_render_size_are_bounded(void **state)
{
	char name[RENDER_NAME_MAX + 2], *params, *many, *manifests, *values, *big;
	size_t refs = RENDER_STRING_MAX / RENDER_VALUE_MAX, strings = 17, n = 0;
	struct run r;

	memset(name, 'N', sizeof(name) - 1);
	name[RENDER_NAME_MAX] = '\0';
	params = xasprintf("[{\"name\":\"%s\"}]", name);
	assert_renders(params, CM("{}"), "[]", CM_OUT("{}"));
	free(params);
	name[RENDER_NAME_MAX] = 'N';
	name[RENDER_NAME_MAX + 1] = '\0';
	params = xasprintf("[{\"name\":\"%s\"}]", name);
	assert_template_refused(
	        params, -EINVAL,
	        "spec.parameters[0].name: \"NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"
	        "NNNNNNNNNNNNNNNNNNNNNN\" is not a parameter name (letters, digits and "
	        "_, not starting with a digit, at most 63)");
	free(params);
	/* 17 strings of 1 MiB each: over RENDER_OUTPUT_MAX together */
	many = xcalloc(strings, refs * 6 + 16);
	for (size_t s = 0; s < strings; s++) {
		n += (size_t)snprintf(many + n, strings * (refs * 6 + 16) - n, "%s\"s%zu\":\"",
		                      s ? "," : "", s);
		for (size_t i = 0; i < refs; i++)
			n += (size_t)snprintf(many + n, strings * (refs * 6 + 16) - n, "${{V}}");
		n += (size_t)snprintf(many + n, strings * (refs * 6 + 16) - n, "\"");
	}
	big = xcalloc(1, RENDER_VALUE_MAX + 1);
	memset(big, 'v', RENDER_VALUE_MAX);
	values = xasprintf("[{\"name\":\"V\",\"value\":\"%s\"}]", big);
	manifests = xasprintf(CM("{%s}"), many);
	r = render("[{\"name\":\"V\"}]", manifests, values);
	assert_int_equal(r.rc, -EMSGSIZE);
	assert_string_equal(r.err.msg, "spec.resources.manifests[0].data.s8: the render is longer "
	                               "than 16777216 bytes");
	free(many);
	free(manifests);
	free(values);
	free(big);
}

struct shared {
	struct jdoc *t, *v;
	const char *want;
	int bad;
};

static void *render_often(void *arg)
{
	struct shared *sh = arg;
	struct render_in in = {.tmpl = jdoc_root(sh->t),
	                       .params = jdoc_root(sh->v),
	                       .ns = "team-a",
	                       .tenant = "acme",
	                       .mode = RENDER_INSTANCE,
	                       .scope = scope};

	for (int i = 0; i < 200; i++) {
		json_t *out = NULL;
		char *got;

		if (render_objects(&in, &out, NULL) != 0) {
			__atomic_add_fetch(&sh->bad, 1, __ATOMIC_RELAXED);
			continue;
		}
		got = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
		if (strcmp(got, sh->want) != 0)
			__atomic_add_fetch(&sh->bad, 1, __ATOMIC_RELAXED);
		free(got);
		json_decref(out);
	}
	return NULL;
}

static void test_render__threads_render_one_template_at_once(void **state)
{
	struct shared sh = {.t = tmpl(TEAM, CM("{\"t\":\"${{TEAM}}-${tenant}\"}")),
	                    .v = doc("[{\"name\":\"TEAM\",\"value\":\"blue\"}]"),
	                    .want = CM_OUT("{\"t\":\"blue-acme\"}")};
	pthread_t th[4];

	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, render_often, &sh), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(sh.bad, 0);
	jdoc_unref(sh.t);
	jdoc_unref(sh.v);
}

static void test_render__nothing_is_returned_after_an_error(void **state)
{
	/* the second object fails: the first is not returned either */
	const char *two = "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	                  "\"ok\"}},{\"apiVersion\":\"v1\",\"kind\":\"ClusterRole\",\"metadata\":{"
	                  "\"name\":\"bad\"}}]";
	struct run r = render("[]", two, "[]");

	assert_int_equal(r.rc, -EACCES);
	assert_null(r.out);
	assert_string_equal(r.err.msg, "spec.resources.manifests[1]: ClusterRole \"bad\" is "
	                               "cluster-scoped: a TemplateInstance renders namespaced "
	                               "objects only");
}

static void test_render__check_params_for_the_webhook(void **state)
{
	struct jdoc *t = tmpl(TEAM, "[]"), *good = doc("[{\"name\":\"TEAM\",\"value\":\"a\"}]");
	struct jdoc *bad = doc("[{\"name\":\"TEAM\",\"value\":\"A\"}]");
	struct ll_err err;

	assert_int_equal(render_check_params(jdoc_root(t), jdoc_root(good), &err), 0);
	assert_int_equal(render_check_params(jdoc_root(t), jdoc_root(bad), &err), -EINVAL);
	assert_string_equal(err.msg, "spec.parameters[TEAM]: \"A\" does not match ^[a-z]+$");
	assert_int_equal(render_check_params(jdoc_root(t), jdoc_root(bad), NULL), -EINVAL);
	jdoc_unref(t);
	jdoc_unref(good);
	jdoc_unref(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_render__substitutes_namespace_tenant_and_parameters),
	        cmocka_unit_test(test_render__injected_values_stay_literal_strings),
	        cmocka_unit_test(test_render__keys_are_never_substituted),
	        cmocka_unit_test(test_render__exact_references_are_typed_by_their_declaration),
	        cmocka_unit_test(test_render__instance_values_override_defaults_and_are_validated),
	        cmocka_unit_test(test_render__parameter_errors_name_the_parameter),
	        cmocka_unit_test(test_render__unknown_references_are_refused),
	        cmocka_unit_test(test_render__tenant_is_required_when_used),
	        cmocka_unit_test(test_render__limits),
	        cmocka_unit_test(test_render__rendered_strings_are_bounded),
	        cmocka_unit_test(test_render__mappings_are_never_parameterised),
	        cmocka_unit_test(test_render__a_chart_source_is_never_parameterised),
	        cmocka_unit_test(test_render__declarations_are_checked),
	        cmocka_unit_test(
	                test_render__instances_render_namespaced_objects_in_their_namespace),
	        cmocka_unit_test(test_render__objects_need_kind_api_version_and_name),
	        cmocka_unit_test(test_render__names_and_render_size_are_bounded),
	        cmocka_unit_test(test_render__threads_render_one_template_at_once),
	        cmocka_unit_test(test_render__nothing_is_returned_after_an_error),
	        cmocka_unit_test(test_render__check_params_for_the_webhook),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
