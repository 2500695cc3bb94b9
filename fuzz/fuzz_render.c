/*
 * fuzz_render.c - any Template and any instance parameters render, or fail with one printable
 * line, without crashing; a rendered object never holds a key that the Template did not have
 * (metadata.namespace excepted: it may be filled in), so a parameter value cannot add one; a
 * TemplateInstance render holds namespaced objects in the instance's namespace only; a render
 * that succeeds passes the webhook's checks.
 * Input: the Template as JSON, a newline, the instance's spec.parameters as JSON.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jdoc.h"
#include "tenancy/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char NS[] = "team-a";

static enum render_scope scope(const void *ctx, const char *api_version, const char *kind)
{
	if (strncmp(kind, "Cluster", 7) == 0 || strcmp(kind, "Namespace") == 0)
		return RENDER_SCOPE_CLUSTER;
	if (kind[0] == 'X')
		return RENDER_SCOPE_UNKNOWN;
	return RENDER_SCOPE_NAMESPACED;
}

/* Every key anywhere in @v, into the set @keys. */
static void collect_keys(struct jval v, json_t *keys)
{
	const char *key;
	struct jval child;
	size_t i;

	jval_foreach_member(v, i, key, child) {
		json_object_set_new(keys, key, json_null());
		collect_keys(child, keys);
	}
	jval_foreach(v, i, child)
		collect_keys(child, keys);
}

static bool keys_within(const json_t *v, const json_t *keys)
{
	const char *key;
	json_t *child;
	size_t i;

	json_object_foreach((json_t *)v, key, child)
		if (json_object_get(keys, key) == NULL || !keys_within(child, keys))
			return false;
	json_array_foreach(v, i, child)
		if (!keys_within(child, keys))
			return false;
	return true;
}

static void check_message(const char *msg)
{
	if (msg[0] == '\0')
		abort();
	for (const char *p = msg; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			abort();
}

static void check_instance_objects(const json_t *objs)
{
	const json_t *obj;
	size_t i;

	json_array_foreach(objs, i, obj) {
		const char *ns = json_string_value(
		        json_object_get(json_object_get(obj, "metadata"), "namespace"));

		if (scope(NULL, "", json_string_value(json_object_get(obj, "kind"))) !=
		            RENDER_SCOPE_NAMESPACED ||
		    ns == NULL || strcmp(ns, NS) != 0)
			abort();
	}
}

static void render_in_mode(struct jval tmpl, struct jval params, enum render_mode mode)
{
	struct render_in in = {.tmpl = tmpl,
	                       .params = params,
	                       .ns = NS,
	                       .tenant = mode == RENDER_GROUP ? NULL : "acme",
	                       .mode = mode,
	                       .scope = scope};
	struct ll_err err;
	json_t *out = NULL, *keys = json_object();
	int rc = render_objects(&in, &out, &err);

	if (rc != 0) {
		if (out != NULL)
			abort();
		check_message(err.msg);
		json_decref(keys);
		return;
	}
	collect_keys(tmpl, keys);
	json_object_set_new(keys, "namespace", json_null());
	if (!json_is_array(out) || !keys_within(out, keys))
		abort();
	if (mode == RENDER_INSTANCE)
		check_instance_objects(out);
	if (render_check_template(tmpl, &err) != 0 || render_check_params(tmpl, params, &err) != 0)
		abort();
	json_decref(out);
	json_decref(keys);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *nl = memchr(s, '\n', size);
	struct jdoc *tmpl = NULL, *params = NULL;
	struct ll_err err;

	if (nl == NULL)
		nl = s + size;
	if (jdoc_parse(s, (size_t)(nl - s), NULL, &tmpl, NULL) != 0)
		return 0;
	if (nl < s + size)
		jdoc_parse(nl + 1, size - (size_t)(nl - s) - 1, NULL, &params, NULL);
	if (render_check_template(jdoc_root(tmpl), &err) != 0)
		check_message(err.msg);
	render_in_mode(jdoc_root(tmpl), jdoc_root(params), RENDER_INSTANCE);
	render_in_mode(jdoc_root(tmpl), jdoc_root(params), RENDER_GROUP);
	jdoc_unref(tmpl);
	jdoc_unref(params);
	return 0;
}
