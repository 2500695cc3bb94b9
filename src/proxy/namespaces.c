/*
 * namespaces.c - the namespace collection and namespace objects in a tenant's view.
 *
 * Tenant users cannot list namespaces upstream, so the proxy lists (and watches) them as
 * itself, with the label selector landlord.dev/tenant=<tenant> ANDed into the caller's (and its
 * selectors on namespace names converted, selectors.h): nothing is listed cluster-wide and
 * filtered. A new namespace "foo" is created upstream as
 * "<tenant>-foo", as the caller (the webhook's self-service rules decide); over 63 characters
 * upstream it is refused 422 naming metadata.name. Everything else about one namespace is the
 * caller's own call on its upstream name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/mem.h"
#include "kube/kube.h"
#include "proxy/nsmap.h"
#include "proxy/pbconv.h"
#include "proxy/proxy_internal.h"
#include "proxy/selectors.h"

#define QUERY_MAX (16u << 10)

/*
 * @j's query in upstream's terms (selectors.h): the tenant's label selector ANDed into the
 * caller's (or added), and selectors on namespace names converted. 0, or -1 with the answer sent.
 */
static int tenant_query(struct px_job *j, const struct px_nsmap *map, struct buf *out)
{
	char label[256], why[256];
	struct px_query_view q = {.map = map, .namespaces = true, .tenant_label = label};
	int rc;

	snprintf(label, sizeof(label), "%s=%s", LABEL_TENANT, j->route.tenant);
	rc = px_query_view(&q, j->query, out, why, sizeof(why));
	if (rc == -EINVAL)
		px_job_status(j, 400, "BadRequest", "%s", why);
	else if (rc < 0)
		px_job_status(j, 414, "RequestURITooLong", "the query is too long");
	return rc < 0 ? -1 : 0;
}

static void list(struct px_job *j, struct px_nsmap *map)
{
	struct buf q = BUF_INIT(QUERY_MAX);
	struct px_call c = {.path = "/api/v1/namespaces",
	                    .as_self = true,
	                    .map = map,
	                    .resource = "namespaces"};

	if (tenant_query(j, map, &q) == 0) {
		c.query = buf_cstr(&q);
		px_job_forward(j, &c);
	}
	buf_release(&q);
}

/* The new namespace's upstream name in @doc, and the map that shows it back. */
/* The new namespace's upstream name into @doc; *@with (OUT, owned) the table that also shows
 * it, when it is not one of @map's yet. */
static int name_new(struct px_job *j, const struct px_nsmap *map, struct px_nsmap **with,
                    json_t *doc)
{
	json_t *name = json_object_get(json_object_get(doc, "metadata"), "name");
	const char *shown = json_string_value(name);
	const char *known = shown ? px_nsmap_full(map, shown) : NULL;
	char full[128];

	if (!shown) {
		px_job_status(j, 422, "Invalid", "metadata.name: Required value");
		return -1;
	}
	if (known) {
		snprintf(full, sizeof(full), "%s", known);
	} else if (px_nsmap_new_full(map, shown, full, sizeof(full)) < 0) {
		px_job_status(
		        j, 422, "Invalid",
		        "metadata.name: Invalid value: \"%s\": must be a DNS label of at most "
		        "%zu characters (\"%s-\" is added)",
		        shown, 62 - strlen(j->route.tenant), j->route.tenant);
		return -1;
	}
	json_string_set(name, full);
	if (!known) { /* the answer names it: show it under the name asked for */
		size_t n = px_nsmap_len(map);
		const char **names = xcalloc(n + 1, sizeof(*names));

		for (size_t i = 0; i < n; i++) {
			const char *unused;

			names[i] = px_nsmap_at(map, i, &unused);
		}
		names[n] = full;
		*with = px_nsmap_new(j->route.tenant, names, n + 1);
		free(names);
	}
	return 0;
}

/* A protobuf Namespace: its name read by one walk, written by a second (pbconv.h). */
struct pb_name {
	char shown[64];
	const char *full;
	bool seen;
};

static bool pb_enter_meta(void *ud, const char *path)
{
	(void)ud;
	return strcmp(path, "metadata") == 0;
}

static enum pb_verdict pb_name_leaf(void *ud, const char *path, const char *value, size_t len,
                                    const char **repl)
{
	struct pb_name *n = ud;

	if (strcmp(path, "metadata.name") != 0)
		return PB_KEEP;
	if (n->full) {
		*repl = n->full;
		return PB_REPLACE;
	}
	n->seen = len < sizeof(n->shown);
	snprintf(n->shown, sizeof(n->shown), "%.*s", (int)len, value);
	return PB_KEEP;
}

/* The protobuf body with its name made upstream's; 0, or -1 with the answer sent. */
static int create_pb(struct px_job *j, const struct px_nsmap *map, struct px_nsmap **with,
                     struct buf *out)
{
	struct pb_name n = {0};
	struct pb_visit v = {.enter = pb_enter_meta, .leaf = pb_name_leaf, .ud = &n};
	char field[PB_PATH_MAX];
	json_t *doc = NULL;
	int rc = pb_rewrite(j->body.p, j->body.len, &v, out, field, sizeof(field));

	buf_reset(out);
	if (rc < 0 || !n.seen) {
		px_job_status(j, 400, "BadRequest", "the protobuf Namespace does not parse");
		return -1;
	}
	doc = json_pack("{s:{s:s}}", "metadata", "name", n.shown);
	rc = name_new(j, map, with, doc);
	n.full = rc == 0 ? json_string_value(
	                           json_object_get(json_object_get(doc, "metadata"), "name"))
	                 : NULL;
	if (rc == 0 && pb_rewrite(j->body.p, j->body.len, &v, out, field, sizeof(field)) < 0) {
		px_job_status(j, 400, "BadRequest", "the protobuf Namespace does not parse");
		rc = -1;
	}
	json_decref(doc);
	return rc;
}

static int create_json(struct px_job *j, const struct px_nsmap *map, struct px_nsmap **with,
                       struct buf *out)
{
	json_t *doc = json_loadb(j->body.p, j->body.len, 0, NULL);
	char *text = NULL;
	int rc = -1;

	if (!json_is_object(doc))
		px_job_status(j, 400, "BadRequest", "the request body is not a JSON object");
	else if (name_new(j, map, with, doc) == 0 && (text = json_dumps(doc, JSON_COMPACT)) != NULL)
		rc = buf_append_str(out, text) < 0 ? -1 : 0;
	free(text);
	json_decref(doc);
	return rc;
}

/* A new namespace, named from @map (the job's table, borrowed). */
static void create(struct px_job *j, const struct px_nsmap *map)
{
	struct px_call c = {
	        .path = "/api/v1/namespaces", .query = j->query, .resource = "namespaces"};
	struct buf body = BUF_INIT(PX_BODY_MAX * 2);
	bool pb = j->content_type &&
	          strncmp(j->content_type, "application/vnd.kubernetes.protobuf", 35) == 0;
	struct px_nsmap *with = NULL;
	int rc = pb ? create_pb(j, map, &with, &body) : create_json(j, map, &with, &body);

	if (rc == 0) {
		c.map = with ? with : map;
		c.body = body.p;
		c.body_len = body.len;
		c.content_type = pb ? j->content_type : "application/json";
		px_job_forward(j, &c);
	}
	buf_release(&body);
	px_nsmap_free(with);
}

void px_namespaces(struct px_job *j, struct px_nsmap *map)
{
	if (strcmp(j->method, "GET") == 0) {
		list(j, map);
	} else if (strcmp(j->method, "POST") == 0) {
		create(j, map);
	} else {
		px_job_status(j, 405, "MethodNotAllowed", "%s on the namespace collection",
		              j->method);
	}
}

void px_namespace(struct px_job *j, struct px_nsmap *map)
{
	const char *full = px_nsmap_full(map, j->route.ns);
	struct kc_gvr gvr = {.version = "v1", .resource = "namespaces"};
	struct buf path = BUF_INIT(1024);

	if (!full)
		px_job_status(j, 404, "NotFound", "namespaces \"%s\" not found", j->route.ns);
	else if (kc_path(&path, &gvr, NULL, full, j->route.sub) < 0)
		px_job_status(j, 414, "RequestURITooLong", "the path is too long");
	else
		px_forward_body(j, map, buf_cstr(&path), "namespaces");
	buf_release(&path);
}
