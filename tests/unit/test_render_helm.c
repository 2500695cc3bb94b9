/*
 * test_render_helm.c - a Template's chart values rendered for a namespace: the YAML text parsed
 * as Helm reads it, then one-pass substitution into string values only (typed when exactly
 * ${{N}}), never keys; setValues' values substituted and kept strings; injected text stays
 * literal; what the Template check refuses (keys with "${", undeclared references, values that
 * are no mapping or no YAML) named by field; nothing returned after an error.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testjson.h"

#include "base/err.h"
#include "base/jdoc.h"
#include "base/mem.h"
#include "tenancy/render.h"

#define PARAMS                                                                \
	"[{\"name\":\"TEAM\",\"value\":\"web\",\"validation\":\"^[a-z\\\\n: " \
	"]+$\"},{\"name\":\"N\",\"type\":\"number\","                         \
	"\"value\":\"1\"},{\"name\":\"B\",\"type\":\"boolean\",\"value\":\"false\"}]"

static enum render_scope scope(const void *ctx, const char *api_version, const char *kind)
{
	return RENDER_SCOPE_NAMESPACED;
}

struct run {
	int rc;
	char *values, *set_values; /* compact JSON, sorted keys */
	struct ll_err err;
};

/* The Template "web" with PARAMS and spec.resources.helm @helm, for team-a of acme. */
static struct run run_for(const char *helm, const char *params, const char *tenant)
{
	char *t = xasprintf("{\"metadata\":{\"name\":\"web\"},\"spec\":{\"parameters\":" PARAMS
	                    ",\"resources\":{\"helm\":%s}}}",
	                    helm);
	struct jdoc *td = jd(t), *pd = jd(params);
	struct render_in in = {.tmpl = jdoc_root(td),
	                       .params = jdoc_root(pd),
	                       .ns = "team-a",
	                       .tenant = tenant,
	                       .scope = scope};
	json_t *values = NULL, *set = NULL;
	struct run r = {0};

	r.rc = render_helm_values(&in, &values, &set, &r.err);
	if (r.rc == 0) {
		r.values = json_dumps(values, JSON_COMPACT | JSON_SORT_KEYS);
		r.set_values = json_dumps(set, JSON_COMPACT | JSON_SORT_KEYS);
	} else {
		assert_null(values);
		assert_null(set);
	}
	json_decref(values);
	json_decref(set);
	jdoc_unref(td);
	jdoc_unref(pd);
	free(t);
	return r;
}

static struct run run(const char *helm, const char *params)
{
	return run_for(helm, params, "acme");
}

static void done(struct run *r)
{
	free(r->values);
	free(r->set_values);
}

/* @values (YAML) as a JSON string literal inside the helm object. */
#define HELM(values) "{\"path\":\"/c\",\"values\":\"" values "\"}"

static void test_render_helm__values_are_substituted_into_strings_once(void **state)
{
	struct run r =
	        run(HELM("image:\\n  tag: ${{TEAM}}-${namespace}\\nreplicas: ${{N}}\\n"
	                 "debug: ${{B}}\\nowner: '${tenant}'\\nlist: [a, \\\"x ${{N}}\\\"]\\n"
	                 "plain: yes\\nport: 80\\nempty:\\n"),
	            "[{\"name\":\"TEAM\",\"value\":\"shop\"},{\"name\":\"N\",\"value\":\"3\"},"
	            "{\"name\":\"B\",\"value\":\"true\"}]");

	assert_int_equal(r.rc, 0);
	assert_string_equal(r.values,
	                    "{\"debug\":true,\"empty\":null,\"image\":{\"tag\":\"shop-team-"
	                    "a\"},\"list\":[\"a\",\"x 3\"],\"owner\":\"acme\",\"plain\":"
	                    "true,\"port\":80,\"replicas\":3}");
	assert_string_equal(r.set_values, "[]");
	done(&r);
}

static void test_render_helm__injected_values_stay_literal(void **state)
{
	struct run r = run(HELM("a: ${{TEAM}}\\nb: x\\n"),
	                   "[{\"name\":\"TEAM\",\"value\":\"x\\nb: injected\\n\"}]");

	assert_int_equal(r.rc, 0);
	assert_string_equal(r.values, "{\"a\":\"x\\nb: injected\\n\",\"b\":\"x\"}");
	done(&r);
}

static void test_render_helm__set_values_stay_strings(void **state)
{
	struct run r =
	        run("{\"path\":\"/c\",\"setValues\":[{\"name\":\"replicas\",\"value\":"
	            "\"${{N}}\"},{\"name\":\"image.tag\",\"value\":\"${{TEAM}}-${tenant}\","
	            "\"forceString\":true}]}",
	            "[{\"name\":\"TEAM\",\"value\":\"shop\"},{\"name\":\"N\",\"value\":\"3\"}]");

	assert_int_equal(r.rc, 0);
	assert_string_equal(r.values, "{}");
	assert_string_equal(
	        r.set_values,
	        "[{\"forceString\":false,\"name\":\"replicas\",\"value\":\"3\"},"
	        "{\"forceString\":true,\"name\":\"image.tag\",\"value\":\"shop-acme\"}]");
	done(&r);
}

static void assert_refused(const char *helm, int rc, const char *msg)
{
	struct run r = run(helm, "[]");

	assert_int_equal(r.rc, rc);
	assert_string_equal(r.err.msg, msg);
}

static void test_render_helm__the_template_check_refuses_bad_values(void **state)
{
	assert_refused(HELM("${{TEAM}}: x\\n"), -EINVAL,
	               "Template \"web\": spec.resources.helm.values[\"${{TEAM}}\"]: a key may not "
	               "hold \"${\"");
	assert_refused(HELM("image:\\n  tag: ${{NOPE}}\\n"), -EINVAL,
	               "Template \"web\": spec.resources.helm.values.image.tag: ${{NOPE}} names no "
	               "parameter of the Template");
	assert_refused(HELM("- a\\n- b\\n"), -EINVAL,
	               "Template \"web\": spec.resources.helm.values: must be a YAML mapping");
	assert_refused(HELM("a: &x 1\\nb: *x\\n"), -EINVAL,
	               "Template \"web\": spec.resources.helm.values: line 2: aliases are not "
	               "supported");
	assert_refused(
	        "{\"path\":\"/c\",\"values\":{\"a\":1}}", -EINVAL,
	        "Template \"web\": spec.resources.helm.values: must be a string (YAML text)");
	assert_refused(
	        "{\"path\":\"/c\",\"setValues\":[{\"name\":\"a\",\"value\":1}]}", -EINVAL,
	        "Template \"web\": spec.resources.helm.setValues[0].value: must be a string");
	assert_refused(
	        HELM("a: [\\n"), -EINVAL,
	        "Template \"web\": spec.resources.helm.values: line 2: flow sequence without "
	        "a closing bracket");
}

static void test_render_helm__instances_and_namespaces_are_checked(void **state)
{
	struct run r = run(HELM("a: b\\n"), "[{\"name\":\"TEAM\",\"value\":\"NO\"}]");

	assert_int_equal(r.rc, -EINVAL);
	assert_string_equal(r.err.msg,
	                    "spec.parameters[TEAM]: \"NO\" does not match ^[a-z\\n: ]+$");
	r = run_for(HELM("t: ${tenant}\\n"), "[]", NULL);
	assert_int_equal(r.rc, -EINVAL);
	assert_string_equal(r.err.msg, "spec.resources.helm.values.t: ${tenant} is used, but "
	                               "namespace \"team-a\" belongs to no tenant");
	r = run("null", "[]");
	assert_int_equal(r.rc, -ENOENT);
	r = run(HELM(""), "[]");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.values, "{}");
	done(&r);
}

static void test_render_helm__check_template_sees_the_values(void **state)
{
	struct jdoc *t = jd("{\"metadata\":{\"name\":\"web\"},\"spec\":{\"resources\":{\"helm\":"
	                    "{\"path\":\"/c\",\"values\":\"a: [\"}}}}");
	struct ll_err err;

	assert_int_equal(render_check_template(jdoc_root(t), &err), -EINVAL);
	assert_memory_equal(err.msg, "spec.resources.helm.values: line ",
	                    strlen("spec.resources.helm.values: line "));
	jdoc_unref(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_render_helm__values_are_substituted_into_strings_once),
	        cmocka_unit_test(test_render_helm__injected_values_stay_literal),
	        cmocka_unit_test(test_render_helm__set_values_stay_strings),
	        cmocka_unit_test(test_render_helm__the_template_check_refuses_bad_values),
	        cmocka_unit_test(test_render_helm__instances_and_namespaces_are_checked),
	        cmocka_unit_test(test_render_helm__check_template_sees_the_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
