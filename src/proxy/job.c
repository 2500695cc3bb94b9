/*
 * job.c - one request's upstream work, on a thread of its own: route to the handler of its
 * kind, call the API server as the caller, convert the answer, send it (proxy_internal.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "http/later.h"
#include "http/server.h"
#include "kube/discovery.h"
#include "proxy/apifilter.h"
#include "proxy/convert.h"
#include "proxy/nsmap.h"
#include "proxy/proxy_internal.h"
#include "proxy/selectors.h"
#include "proxy/view.h"

#define ACCEPT_MAX 1024
#define QUERY_MAX  (16u << 10)

void px_job_free(struct px_job *j)
{
	if (!j)
		return;
	free(j->method);
	free(j->query);
	free(j->content_type);
	free(j->accept);
	buf_release(&j->body);
	px_credentials_release(j);
	free(j);
}

void px_job_status(struct px_job *j, int code, const char *reason, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	px_write_status(http_later_resp(j->later), code, reason, msg);
	http_later_send(j->later, code);
	j->later = NULL;
}

size_t px_job_impersonation(const struct px_job *j, struct kc_header *h)
{
	size_t n = 0;

	h[n++] = (struct kc_header){"Impersonate-User", j->who.user};
	for (size_t i = 0; !j->who.service_account && i < j->who.n_groups; i++)
		if (strcmp(j->who.groups[i], "system:authenticated") != 0)
			h[n++] = (struct kc_header){"Impersonate-Group", j->who.groups[i]};
	return n;
}

/* Whether media range @item (up to its ';') is one the proxy forwards: JSON or anything. */
static bool json_range(const char *item, size_t len)
{
	size_t mt = strcspn(item, ";");

	if (mt > len)
		mt = len;
	while (mt && item[mt - 1] == ' ')
		mt--;
	return (mt == 16 && strncasecmp(item, "application/json", 16) == 0) ||
	       (mt == 3 && strncmp(item, "*/*", 3) == 0);
}

/*
 * The client's Accept with every non-JSON range dropped (protobuf, CBOR); JSON when it sent
 * none. Return: false when it sent one and accepts no JSON (406).
 */
static bool accept_json(const char *accept, char *out, size_t size)
{
	const char *p = accept ? accept : "";
	size_t w = 0;

	out[0] = '\0';
	while (*p) {
		size_t len = strcspn(p, ",");

		while (len && *p == ' ')
			p++, len--;
		if (json_range(p, len) && w + len + 2 < size) {
			w += (size_t)snprintf(out + w, size - w, "%s%.*s", w ? "," : "", (int)len,
			                      p);
		}
		p += len + (p[len] == ',');
	}
	if (!w)
		snprintf(out, size, "application/json");
	return w || !accept || !*accept;
}

static bool is_json_type(const char *ct)
{
	return ct && strncasecmp(ct, "application/json", 16) == 0;
}

/*
 * The answer's body for the client: JSON converted with @c->map (and @c->fix), else the bytes
 * as they are. Return: 0, or -1 when a JSON answer could not be converted (500 sent: never a
 * half-converted answer).
 */
/*
 * The answer parsed (a document to fix is JSON whatever it is labelled: the /openapi/v3 index
 * comes as text/plain), converted and fixed into *@body (NULL: pass the bytes as they are).
 * Return: 0, or the status to answer instead.
 */
static int parse_answer(const struct px_job *j, const struct px_call *c, const struct kc_resp *up,
                        json_t **body)
{
	struct px_conv conv = {.map = c->map, .dir = PX_TO_USER, .resource = c->resource};
	bool fixable = c->fix && up->http_status == 200;

	*body = NULL;
	if (up->raw.len && (fixable || (c->map && is_json_type(up->content_type))))
		*body = json_loadb(up->raw.p, up->raw.len, 0, NULL);
	if (fixable && !*body)
		return 502;
	if (*body && c->map && px_convert(&conv, *body) != PX_CONV_OK) {
		log_warn("an upstream answer could not be converted", "{s:s}", "field", conv.field);
		return 500;
	}
	return *body && fixable ? c->fix(j, *body) : 0;
}

static int answer_body(struct px_job *j, const struct px_call *c, struct kc_resp *up)
{
	struct http_resp *resp = http_later_resp(j->later);
	json_t *body;
	int fixed = parse_answer(j, c, up, &body);
	char *text;

	if (fixed) {
		json_decref(body);
		if (fixed == 404)
			px_job_status(j, 404, "NotFound",
			              "the server could not find the requested resource");
		else
			px_job_status(j, fixed, "InternalError",
			              "the API server's answer could not be converted");
		return -1;
	}
	if (up->content_type[0])
		http_resp_header(resp, "Content-Type", up->content_type);
	if (!body)
		return buf_append(http_resp_body(resp), up->raw.p, up->raw.len) < 0 ? -1 : 0;
	text = json_dumps(body, JSON_COMPACT);
	buf_append_str(http_resp_body(resp), text ? text : "");
	free(text);
	json_decref(body);
	return 0;
}

void px_job_forward(struct px_job *j, const struct px_call *c)
{
	struct kc_header h[PX_IMP_HEADERS_MAX];
	char accept[ACCEPT_MAX];
	struct kc_resp up = {0};
	struct ll_err err = {{0}};
	struct kc_request rq = {.method = c->method ? c->method : j->method,
	                        .path = c->path,
	                        .query = c->query,
	                        .headers = h,
	                        .n_headers = c->as_self ? 0 : px_job_impersonation(j, h),
	                        .body = c->body,
	                        .body_len = c->body_len,
	                        .content_type = c->content_type,
	                        .accept = accept,
	                        .flags = KC_REQ_RAW};
	int rc;

	if (j->watch || j->follow) {
		px_watch_forward(j, c);
		return;
	}
	if (c->accept)
		snprintf(accept, sizeof(accept), "%s", c->accept);
	else if (!accept_json(j->accept, accept, sizeof(accept))) {
		px_job_status(
		        j, 406, "NotAcceptable",
		        "the tenant proxy answers JSON only, and the Accept header allows none");
		return;
	}
	rc = kc_do(j->px->o.client, &rq, &up, &err);
	if (rc < 0) {
		px_job_status(j, rc == -ETIMEDOUT ? 504 : 502, "InternalError",
		              "the API server did not answer: %s", err.msg);
	} else if (answer_body(j, c, &up) == 0) {
		http_later_send(j->later, (int)up.http_status);
		j->later = NULL;
	}
	kc_resp_release(&up);
}

/* The upstream path of a route inside namespace @full_ns. */
static int upstream_path(const struct px_route *r, const char *full_ns, bool namespaced,
                         struct buf *out)
{
	struct kc_gvr gvr = {.group = r->group,
	                     .version = r->version,
	                     .resource = r->resource,
	                     .namespaced = namespaced};

	return kc_path(out, &gvr, full_ns, r->name, r->sub);
}

static bool refused_sub(const struct px_route *r)
{
	return r->sub && (strcmp(r->sub, "proxy") == 0 || strncmp(r->sub, "proxy/", 6) == 0 ||
	                  strchr(r->sub, '/'));
}

/* Binding a pod to a node (pods/binding, or the core bindings collection) is the scheduler's. */
static bool pod_binding(const struct px_route *r)
{
	return !*r->group &&
	       ((strcmp(r->resource, "pods") == 0 && r->sub && strcmp(r->sub, "binding") == 0) ||
	        strcmp(r->resource, "bindings") == 0);
}

static void namespaced(struct px_job *j, const struct px_nsmap *map)
{
	const struct px_route *r = &j->route;
	const char *full = px_nsmap_full(map, r->ns);
	struct buf path = BUF_INIT(PX_PATH_MAX * 4);
	enum px_visibility vis =
	        px_resource_visibility(px_job_filter(j), r->group, r->resource, r->sub, true);

	if (vis == PX_HIDDEN) {
		px_job_status(j, 404, "NotFound",
		              "the server could not find the requested resource");
	} else if (!full) {
		px_job_status(j, 404, "NotFound", "namespaces \"%s\" not found", r->ns);
	} else if (vis == PX_FORBIDDEN_SUB || refused_sub(r) || pod_binding(r)) {
		px_job_status(j, 403, "Forbidden", "%s%s%s is not served by the tenant proxy",
		              r->resource, r->sub ? "/" : "", r->sub ? r->sub : "");
	} else if (upstream_path(r, full, true, &path) < 0) {
		px_job_status(j, 414, "RequestURITooLong", "the path is too long");
	} else if (px_tunnel_wanted(j)) {
		px_tunnel(j, map, buf_cstr(&path), full);
	} else {
		px_forward_body(j, map, buf_cstr(&path), r->resource);
	}
	buf_release(&path);
}

void px_forward_body(struct px_job *j, const struct px_nsmap *map, const char *path,
                     const char *resource)
{
	struct buf body = BUF_INIT(PX_BODY_MAX * 2);
	struct px_call c = {.path = path,
	                    .query = j->query,
	                    .map = map,
	                    .resource = resource,
	                    .content_type = j->content_type};
	int rc = px_body_upstream(j, map, &body);

	if (rc == 0) {
		c.body = body.len ? body.p : NULL;
		c.body_len = body.len;
		px_job_forward(j, &c);
	} else if (rc == PX_BODY_RMW) {
		px_patch_rmw(j, map, path, resource);
	}
	buf_release(&body);
}

static void dispatch(struct px_job *j, struct px_nsmap *map)
{
	switch (j->route.kind) {
	case PX_DISCOVERY:
	case PX_OPENAPI:
		px_api_documents(j);
		break;
	case PX_NAMESPACES:
		px_namespaces(j, map);
		break;
	case PX_NAMESPACE:
		px_namespace(j, map);
		break;
	case PX_NAMESPACED:
		namespaced(j, map);
		break;
	case PX_TOP:
		px_top(j, map);
		break;
	default:
		px_job_status(j, 404, "NotFound",
		              "the server could not find the requested resource");
		break;
	}
}

/*
 * The query of a path in namespaces, its field selectors on namespace fields converted
 * (selectors.h; the namespace collection's in namespaces.c). Return: false with 400 sent.
 */
static bool view_query(struct px_job *j, const struct px_nsmap *map)
{
	struct px_query_view q = {.map = map};
	struct buf out = BUF_INIT(QUERY_MAX);
	char why[256];
	int rc = 0;

	if (j->route.kind == PX_NAMESPACED || j->route.kind == PX_TOP)
		rc = px_query_view(&q, j->query, &out, why, sizeof(why));
	if (rc == 0 && out.p) {
		free(j->query);
		j->query = buf_detach(&out);
	} else if (rc < 0) {
		px_job_status(j, rc == -EINVAL ? 400 : 414,
		              rc == -EINVAL ? "BadRequest" : "RequestURITooLong", "%s", why);
	}
	buf_release(&out);
	return rc == 0;
}

void px_job_run(struct px_job *j)
{
	struct px_nsmap *map;

	if (px_authorize(j) == 0) {
		map = px_view_nsmap(j->px->view, j->route.tenant);
		if (view_query(j, map))
			dispatch(j, map);
		px_nsmap_free(map);
	}
	if (j->later) /* every path answers; this is the net under a path that forgot */
		px_job_status(j, 500, "InternalError", "the tenant proxy could not answer");
	px_job_free(j);
}
