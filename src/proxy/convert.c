/* convert.c - namespace fields between a tenant's view and upstream (convert.h). */
#include "proxy/convert.h"

#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "proxy/nsmap.h"

#define TEXT_MAX (64u << 10) /* a Status message after conversion */

static enum px_conv_result fail(struct px_conv *c, enum px_conv_result r, const char *field)
{
	snprintf(c->field, sizeof(c->field), "%s", field);
	return r;
}

/* Convert the namespace string member @key of @obj (absent or "" is fine). */
static enum px_conv_result ns_member(struct px_conv *c, json_t *obj, const char *key,
                                     const char *field)
{
	json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
	const char *from, *to;

	if (!v)
		return PX_CONV_OK;
	if (!json_is_string(v))
		return fail(c, PX_CONV_INVALID, field);
	from = json_string_value(v);
	if (!*from)
		return PX_CONV_OK;
	to = c->dir == PX_TO_USER ? px_nsmap_shown(c->map, from) : px_nsmap_full(c->map, from);
	if (!to)
		return c->dir == PX_TO_USER ? PX_CONV_OK : fail(c, PX_CONV_FOREIGN, field);
	json_string_set(v, to);
	return PX_CONV_OK;
}

static enum px_conv_result namespace_object(struct px_conv *c, json_t *obj)
{
	json_t *meta = json_object_get(obj, "metadata");
	json_t *labels = json_is_object(meta) ? json_object_get(meta, "labels") : NULL;
	enum px_conv_result r = ns_member(c, meta, "name", "metadata.name");

	if (r == PX_CONV_OK && json_is_object(labels))
		r = ns_member(c, labels, "kubernetes.io/metadata.name",
		              "metadata.labels.kubernetes.io/metadata.name");
	return r;
}

static enum px_conv_result event_object(struct px_conv *c, json_t *obj)
{
	enum px_conv_result r = ns_member(c, json_object_get(obj, "involvedObject"), "namespace",
	                                  "involvedObject.namespace");

	if (r == PX_CONV_OK)
		r = ns_member(c, json_object_get(obj, "regarding"), "namespace",
		              "regarding.namespace");
	if (r == PX_CONV_OK)
		r = ns_member(c, json_object_get(obj, "related"), "namespace", "related.namespace");
	return r;
}

static enum px_conv_result text_member(struct px_conv *c, json_t *obj, const char *key)
{
	json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
	struct buf out = BUF_INIT(TEXT_MAX);
	enum px_conv_result r = PX_CONV_OK;

	if (!json_is_string(v) || c->dir != PX_TO_USER)
		return PX_CONV_OK;
	if (px_nsmap_text(c->map, json_string_value(v), &out) < 0)
		r = fail(c, PX_CONV_TOO_LONG, key);
	else
		json_string_set(v, buf_cstr(&out));
	buf_release(&out);
	return r;
}

static enum px_conv_result status_object(struct px_conv *c, json_t *obj)
{
	json_t *details = json_object_get(obj, "details");
	json_t *causes = json_is_object(details) ? json_object_get(details, "causes") : NULL;
	const char *kind = json_is_object(details)
	                           ? json_string_value(json_object_get(details, "kind"))
	                           : NULL;
	enum px_conv_result r = text_member(c, obj, "message");
	size_t i;
	json_t *cause;

	if (r == PX_CONV_OK && kind && strcmp(kind, "namespaces") == 0)
		r = ns_member(c, details, "name", "details.name");
	json_array_foreach(causes, i, cause) {
		if (r == PX_CONV_OK)
			r = text_member(c, cause, "message");
	}
	return r;
}

static enum px_conv_result convert_as(struct px_conv *c, json_t *obj, const char *kind);

static bool is_list_kind(const char *kind)
{
	size_t n = strlen(kind);

	return n > 4 && strcmp(kind + n - 4, "List") == 0;
}

static enum px_conv_result list_object(struct px_conv *c, json_t *obj, const char *kind)
{
	char item_kind[128];
	enum px_conv_result r = PX_CONV_OK;
	size_t i;
	json_t *item;

	snprintf(item_kind, sizeof(item_kind), "%.*s", (int)(strlen(kind) - 4), kind);
	json_array_foreach(json_object_get(obj, "items"), i, item) {
		const char *own = json_string_value(json_object_get(item, "kind"));

		if (r == PX_CONV_OK)
			r = convert_as(c, item, own ? own : item_kind);
	}
	return r;
}

static bool of_namespaces(const struct px_conv *c)
{
	return c->resource && strcmp(c->resource, "namespaces") == 0;
}

static enum px_conv_result table_row(struct px_conv *c, json_t *row)
{
	json_t *obj = json_object_get(row, "object");
	json_t *cells = json_object_get(row, "cells");
	bool namespaces = of_namespaces(c);
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	enum px_conv_result r = convert_as(c, obj, kind ? kind : namespaces ? "Namespace" : "");
	json_t *first = json_array_get(cells, 0);
	const char *shown;

	if (r != PX_CONV_OK || !namespaces || !json_is_string(first) || c->dir != PX_TO_USER)
		return r;
	shown = px_nsmap_shown(c->map, json_string_value(first));
	if (shown)
		json_string_set(first, shown);
	return r;
}

static enum px_conv_result table_object(struct px_conv *c, json_t *obj)
{
	enum px_conv_result r = PX_CONV_OK;
	size_t i;
	json_t *row;

	json_array_foreach(json_object_get(obj, "rows"), i, row) {
		if (r == PX_CONV_OK)
			r = table_row(c, row);
	}
	return r;
}

static enum px_conv_result plain_object(struct px_conv *c, json_t *obj, const char *kind)
{
	enum px_conv_result r =
	        ns_member(c, json_object_get(obj, "metadata"), "namespace", "metadata.namespace");

	if (r != PX_CONV_OK)
		return r;
	if (strcmp(kind, "Namespace") == 0 ||
	    (strcmp(kind, "PartialObjectMetadata") == 0 && of_namespaces(c)))
		return namespace_object(c, obj);
	if (strcmp(kind, "Event") == 0)
		return event_object(c, obj);
	if (strstr(kind, "SubjectAccessReview"))
		return ns_member(
		        c, json_object_get(json_object_get(obj, "spec"), "resourceAttributes"),
		        "namespace", "spec.resourceAttributes.namespace");
	if (strcmp(kind, "SelfSubjectRulesReview") == 0)
		return ns_member(c, json_object_get(obj, "spec"), "namespace", "spec.namespace");
	return PX_CONV_OK;
}

/* @obj as a @kind (its own kind, or one its container gives). */
static enum px_conv_result convert_as(struct px_conv *c, json_t *obj, const char *kind)
{
	if (!json_is_object(obj))
		return PX_CONV_OK;
	if (strcmp(kind, "Status") == 0)
		return status_object(c, obj);
	if (strcmp(kind, "Table") == 0)
		return table_object(c, obj);
	if (is_list_kind(kind) && json_is_array(json_object_get(obj, "items")))
		return list_object(c, obj, kind);
	return plain_object(c, obj, kind);
}

/* A watch event has exactly a type and an object, and no kind of its own. */
static bool is_watch_event(const json_t *body)
{
	return json_is_string(json_object_get(body, "type")) &&
	       json_is_object(json_object_get(body, "object")) && !json_object_get(body, "kind");
}

enum px_conv_result px_convert(struct px_conv *c, json_t *body)
{
	json_t *obj = body;
	const char *kind;

	c->field[0] = '\0';
	if (is_watch_event(body))
		obj = json_object_get(body, "object");
	kind = json_string_value(json_object_get(obj, "kind"));
	return convert_as(c, obj, kind ? kind : "");
}
