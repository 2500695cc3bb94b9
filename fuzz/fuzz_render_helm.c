/*
 * fuzz_render_helm.c - any values text of a Template's chart renders, or fails with one printable
 * line and nothing returned, without crashing; a render has the shape of the values as parsed
 * (same keys, same nesting, strings where strings were), so a parameter value (one that holds
 * YAML, a key and a reference) adds nothing; the Template check agrees with the render.
 * Input: spec.resources.helm.values, the YAML text.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jdoc.h"
#include "kube/yamljson.h"
#include "tenancy/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char PARAMS[] = "[{\"name\":\"TEAM\",\"value\":\"x\\n${{TEAM}}: y\\n- z\"}]";

static enum render_scope scope(const void *ctx, const char *api_version, const char *kind)
{
	return RENDER_SCOPE_NAMESPACED;
}

/* @got has @want's shape: the same keys and nesting, a string wherever @want has one. */
static bool same_shape(const json_t *want, const json_t *got)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_typeof(want) != json_typeof(got))
		return false;
	if (json_is_object(want)) {
		if (json_object_size(want) != json_object_size(got))
			return false;
		json_object_foreach((json_t *)want, key, v)
			if (!same_shape(v, json_object_get(got, key)))
				return false;
	}
	if (json_is_array(want)) {
		if (json_array_size(want) != json_array_size(got))
			return false;
		json_array_foreach(want, i, v)
			if (!same_shape(v, json_array_get(got, i)))
				return false;
	}
	return true;
}

static void one_line(const char *msg)
{
	for (const char *p = msg; *p != '\0'; p++)
		if (*p < 0x20 || *p > 0x7e)
			abort();
}

static void check(const struct render_in *in, const char *text, size_t len)
{
	json_t *values = NULL, *set = NULL, *parsed = NULL;
	struct ll_err err = {{0}}, check_err;
	int rc = render_helm_values(in, &values, &set, &err);

	if ((render_check_template(in->tmpl, &check_err) == 0) != (rc == 0))
		abort();
	if (rc != 0) {
		if (values != NULL || set != NULL || err.msg[0] == '\0')
			abort();
		one_line(err.msg);
		return;
	}
	if (yaml_to_json(text, len, &parsed, &err) != 0)
		abort();
	if (!json_is_null(parsed) && !same_shape(parsed, values))
		abort();
	json_decref(parsed);
	json_decref(values);
	json_decref(set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *text = size <= (64u << 10) ? json_stringn((const char *)data, size) : NULL, *tmpl;
	struct jdoc *td = NULL, *pd = NULL;
	struct ll_err err;

	if (text == NULL) /* not UTF-8, or over 64 KiB (the CRD allows 256: speed) */
		return 0;
	tmpl = json_pack("{s:{s:s},s:{s:[{s:s,s:s}],s:{s:{s:s,s:o}}}}", "metadata", "name", "web",
	                 "spec", "parameters", "name", "TEAM", "value", "a", "resources", "helm",
	                 "path", "/c", "values", text);
	if (jdoc_from_json(tmpl, NULL, &td, &err) == 0 &&
	    jdoc_parse(PARAMS, strlen(PARAMS), NULL, &pd, &err) == 0)
		check(&(struct render_in){.tmpl = jdoc_root(td),
		                          .params = jdoc_root(pd),
		                          .ns = "team-a",
		                          .tenant = "acme",
		                          .scope = scope},
		      (const char *)data, size);
	jdoc_unref(td);
	jdoc_unref(pd);
	json_decref(tmpl);
	return 0;
}
