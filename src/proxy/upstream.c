/*
 * upstream.c - a request body on its way to the API server: every namespace field converted
 * to its upstream name, or the request refused naming the field (proxy_internal.h).
 *
 * By content type:
 *   - application/json, merge-patch+json, strategic-merge-patch+json: the document converted
 *     as an object (a patch is a partial object: the same fields);
 *   - json-patch+json: each operation whose path is a converted field gets its value
 *     converted; a patch that moves, copies or tests one (into or out of it) cannot be
 *     rewritten by path: PX_BODY_RMW tells the caller to read, patch in the tenant's view and
 *     write back (rmw.c);
 *   - apply-patch+yaml: the YAML read into JSON, converted, and sent as JSON (JSON is YAML);
 *   - application/vnd.kubernetes.protobuf (kubectl's typed clients never fall back to JSON):
 *     the same fields rewritten in place inside the protobuf (pbconv.h); a kind the proxy's
 *     descriptors do not know is 415;
 *   - anything else (CBOR): 415.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "kube/yamljson.h"
#include "proxy/convert.h"
#include "proxy/nsmap.h"
#include "proxy/pbconv.h"
#include "proxy/proxy_internal.h"

/* The JSON Patch paths that name a namespace, as convert.c converts them in objects. */
static const char *const NS_PATHS[] = {
        "/metadata/namespace",
        "/involvedObject/namespace",
        "/regarding/namespace",
        "/related/namespace",
        NULL,
};

static bool media(const char *ct, const char *type)
{
	size_t n = strlen(type);

	return ct && strncasecmp(ct, type, n) == 0 && (ct[n] == '\0' || ct[n] == ';');
}

static bool ns_path(const char *path)
{
	for (size_t i = 0; path && NS_PATHS[i]; i++)
		if (strcmp(path, NS_PATHS[i]) == 0)
			return true;
	return false;
}

static int unprocessable(struct px_job *j, const char *field, const char *why)
{
	px_job_status(j, 422, "Invalid", "%s: %s", field, why);
	return -1;
}

/* Convert the namespace string @v (named @field). 0, or -1 with the answer sent. */
static int ns_value(struct px_job *j, const struct px_nsmap *map, json_t *v, const char *field)
{
	const char *full = json_is_string(v) ? px_nsmap_full(map, json_string_value(v)) : NULL;

	if (!json_is_string(v))
		return unprocessable(j, field, "a namespace must be a string");
	if (!full)
		return unprocessable(j, field, "not a namespace of this tenant");
	json_string_set(v, full);
	return 0;
}

/*
 * An operation on @path, a parent of namespace field @field ("/metadata" of
 * "/metadata/namespace", or "" of every one): the field inside its value is converted.
 */
static int parent_value(struct px_job *j, const struct px_nsmap *map, const char *path,
                        json_t *value, const char *field)
{
	size_t n = strlen(path);
	const char *rest;
	json_t *v = value;

	if (strncmp(field, path, n) != 0 || field[n] != '/')
		return 0;
	for (rest = field + n + 1; v && *rest;) {
		size_t seg = strcspn(rest, "/");
		char key[64];

		snprintf(key, sizeof(key), "%.*s", (int)seg, rest);
		v = json_is_object(v) ? json_object_get(v, key) : NULL;
		rest += seg + (rest[seg] == '/');
	}
	return v ? ns_value(j, map, v, field) : 0;
}

/* Whether JSON Pointer @p is a namespace field or one of its parents ("" is the root). */
static bool touches(const char *p)
{
	for (size_t i = 0; p && NS_PATHS[i]; i++) {
		size_t n = strlen(p);

		if (strncmp(NS_PATHS[i], p, n) == 0 &&
		    (NS_PATHS[i][n] == '\0' || NS_PATHS[i][n] == '/'))
			return true;
	}
	return false;
}

/* One JSON Patch operation. 0, or -1 with the answer sent. */
static int patch_op(struct px_job *j, const struct px_nsmap *map, json_t *op)
{
	const char *kind = json_string_value(json_object_get(op, "op"));
	const char *path = json_string_value(json_object_get(op, "path"));
	const char *from = json_string_value(json_object_get(op, "from"));
	json_t *value = json_object_get(op, "value");
	int rc = 0;

	if (!kind || !path)
		return unprocessable(j, "patch", "an operation without op or path");
	(void)from; /* moves, copies and tests of namespace fields went to rmw.c */
	if (ns_path(path) && value)
		return ns_value(j, map, value, path);
	for (size_t i = 0; rc == 0 && value && NS_PATHS[i]; i++)
		rc = parent_value(j, map, path, value, NS_PATHS[i]);
	return rc;
}

/* Whether an operation moves, copies or tests a namespace field: not rewritable by path. */
static bool needs_rmw(const json_t *ops)
{
	size_t i;
	const json_t *op;

	json_array_foreach(ops, i, op) {
		const char *kind = json_string_value(json_object_get(op, "op"));
		const char *path = json_string_value(json_object_get(op, "path"));
		const char *from = json_string_value(json_object_get(op, "from"));

		if (kind &&
		    (!strcmp(kind, "move") || !strcmp(kind, "copy") || !strcmp(kind, "test")) &&
		    (touches(path) || touches(from)))
			return true;
	}
	return false;
}

static int json_patch(struct px_job *j, const struct px_nsmap *map, json_t *doc)
{
	size_t i;
	json_t *op;

	if (!json_is_array(doc))
		return unprocessable(j, "patch", "a JSON patch must be an array");
	if (needs_rmw(doc))
		return PX_BODY_RMW;
	json_array_foreach(doc, i, op) {
		if (patch_op(j, map, op) < 0)
			return -1;
	}
	return 0;
}

static int object(struct px_job *j, const struct px_nsmap *map, json_t *doc)
{
	struct px_conv conv = {.map = map, .dir = PX_TO_UPSTREAM, .resource = j->route.resource};

	switch (px_convert(&conv, doc)) {
	case PX_CONV_OK:
		return 0;
	case PX_CONV_FOREIGN:
		return unprocessable(j, conv.field, "not a namespace of this tenant");
	default:
		return unprocessable(j, conv.field, "cannot be converted");
	}
}

static json_t *read_body(struct px_job *j, bool yaml)
{
	json_t *doc = NULL;
	struct ll_err err = {{0}};

	if (yaml && yaml_to_json(j->body.p, j->body.len, &doc, &err) < 0)
		doc = NULL;
	else if (!yaml)
		doc = json_loadb(j->body.p, j->body.len, 0, NULL);
	if (!doc)
		px_job_status(j, 400, "BadRequest", "the request body is not valid %s%s%s",
		              yaml ? "YAML" : "JSON", err.msg[0] ? ": " : "", err.msg);
	return doc;
}

/* The protobuf paths convert.c converts in JSON, by kind. */
struct pb_rules {
	const struct px_nsmap *map;
	const char *const *paths;
	char full[64];
};

static const char *const PB_ANY[] = {"metadata.namespace", NULL};
static const char *const PB_NAMESPACE[] = {"metadata.namespace", "metadata.name",
                                           "metadata.labels{kubernetes.io/metadata.name}", NULL};
static const char *const PB_EVENT[] = {"metadata.namespace", "involvedObject.namespace",
                                       "regarding.namespace", "related.namespace", NULL};
static const char *const PB_ACCESS[] = {"metadata.namespace", "spec.resourceAttributes.namespace",
                                        NULL};
static const char *const PB_RULES[] = {"metadata.namespace", "spec.namespace", NULL};

static const char *const *pb_paths(const char *kind)
{
	if (strcmp(kind, "Namespace") == 0)
		return PB_NAMESPACE;
	if (strcmp(kind, "Event") == 0)
		return PB_EVENT;
	if (strstr(kind, "SubjectAccessReview"))
		return PB_ACCESS;
	if (strcmp(kind, "SelfSubjectRulesReview") == 0)
		return PB_RULES;
	return PB_ANY;
}

/* Whether the walk must enter @path: a rule's path starts with it. */
static bool pb_enter(void *ud, const char *path)
{
	const struct pb_rules *r = ud;
	size_t n = strlen(path);

	for (size_t i = 0; r->paths[i]; i++)
		if (strncmp(r->paths[i], path, n) == 0 &&
		    (r->paths[i][n] == '.' || r->paths[i][n] == '{' || r->paths[i][n] == '\0'))
			return true;
	return false;
}

static enum pb_verdict pb_leaf(void *ud, const char *path, const char *value, size_t len,
                               const char **repl)
{
	struct pb_rules *r = ud;
	char shown[64];
	const char *full;
	bool rule = false;

	for (size_t i = 0; r->paths[i] && !rule; i++)
		rule = strcmp(r->paths[i], path) == 0;
	if (!rule || len == 0)
		return PB_KEEP;
	if (len >= sizeof(shown))
		return PB_REFUSE;
	memcpy(shown, value, len);
	shown[len] = '\0';
	full = px_nsmap_full(r->map, shown);
	if (!full)
		return PB_REFUSE;
	snprintf(r->full, sizeof(r->full), "%s", full);
	*repl = r->full;
	return PB_REPLACE;
}

static int protobuf(struct px_job *j, const struct px_nsmap *map, struct buf *out)
{
	struct pb_typemeta t;
	struct pb_rules rules = {.map = map};
	struct pb_visit v = {.enter = pb_enter, .leaf = pb_leaf, .ud = &rules};
	char field[PB_PATH_MAX];
	int rc = pb_kind(j->body.p, j->body.len, &t);

	if (rc < 0) {
		px_job_status(j, 400, "BadRequest", "the protobuf body does not parse");
		return -1;
	}
	rules.paths = pb_paths(t.kind);
	rc = pb_rewrite(j->body.p, j->body.len, &v, out, field, sizeof(field));
	if (rc == -ENOENT)
		px_job_status(j, 415, "UnsupportedMediaType",
		              "the tenant proxy cannot read %s %s as protobuf: send it as JSON",
		              t.api_version, t.kind);
	else if (rc == -EPERM)
		return unprocessable(j, field, "not a namespace of this tenant");
	else if (rc == -EMSGSIZE)
		px_job_status(j, 413, "RequestEntityTooLarge", "the request body is too large");
	else if (rc < 0)
		px_job_status(j, 400, "BadRequest", "the protobuf body does not parse (at %s)",
		              field[0] ? field : "the top");
	return rc < 0 ? -1 : 0;
}

int px_body_upstream(struct px_job *j, const struct px_nsmap *map, struct buf *out)
{
	const char *ct = j->content_type;
	bool patch = media(ct, "application/json-patch+json");
	bool yaml = media(ct, "application/apply-patch+yaml");
	json_t *doc;
	char *text;
	int rc;

	if (j->body.len == 0)
		return 0;
	if (media(ct, "application/vnd.kubernetes.protobuf"))
		return protobuf(j, map, out);
	if (!patch && !yaml && !media(ct, "application/json") &&
	    !media(ct, "application/merge-patch+json") &&
	    !media(ct, "application/strategic-merge-patch+json")) {
		px_job_status(j, 415, "UnsupportedMediaType",
		              "the tenant proxy takes JSON, YAML and protobuf bodies, not %s",
		              ct ? ct : "a body without a Content-Type");
		return -1;
	}
	doc = read_body(j, yaml);
	if (!doc)
		return -1;
	rc = patch ? json_patch(j, map, doc) : object(j, map, doc);
	if (rc == PX_BODY_RMW) {
		json_decref(doc);
		return rc;
	}
	text = rc == 0 ? json_dumps(doc, JSON_COMPACT) : NULL;
	if (text)
		rc = buf_append_str(out, text) < 0 ? -1 : 0;
	free(text);
	json_decref(doc);
	return rc;
}
