/*
 * top.c - paths outside /namespaces/NS: a namespaced kind across every namespace of the
 * tenant (kubectl -A), the caller's own access reviews, and everything else hidden.
 *
 * An -A list is one list per namespace of the tenant, as the caller, merged: namespaces the
 * caller may not list are skipped (403 only when it may list none), and nothing is listed
 * cluster-wide. The merged list carries the minimum resourceVersion of its parts. A Table is
 * merged row by row. Cluster-scoped kinds are hidden (404), except the reviews a user makes of
 * its own access (SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"
#include "http/later.h"
#include "http/server.h"
#include "kube/discovery.h"
#include "proxy/convert.h"
#include "proxy/nsmap.h"
#include "proxy/proxy_internal.h"

struct merged {
	json_t *list; /* the first answer, items or rows appended to */
	unsigned long long min_rv;
	int forbidden; /* namespaces the caller may not list */
	int listed;
	struct kc_resp failure; /* the first answer other than 200 or 403 */
};

static bool self_review(const struct px_route *r)
{
	return (strcmp(r->group, "authorization.k8s.io") == 0 &&
	        (strcmp(r->resource, "selfsubjectaccessreviews") == 0 ||
	         strcmp(r->resource, "selfsubjectrulesreviews") == 0)) ||
	       (strcmp(r->group, "authentication.k8s.io") == 0 &&
	        strcmp(r->resource, "selfsubjectreviews") == 0);
}

static void append_all(json_t *into, json_t *from, const char *key)
{
	json_t *dst = json_object_get(into, key);

	if (json_is_array(dst) && json_is_array(json_object_get(from, key)))
		json_array_extend(dst, json_object_get(from, key));
}

static void note_rv(struct merged *m, json_t *part)
{
	const char *rv = json_string_value(
	        json_object_get(json_object_get(part, "metadata"), "resourceVersion"));
	unsigned long long v = rv ? strtoull(rv, NULL, 10) : 0;

	if (v && (!m->min_rv || v < m->min_rv))
		m->min_rv = v;
}

static void merge(struct merged *m, struct kc_resp *up)
{
	json_t *part = up->raw.len ? json_loadb(up->raw.p, up->raw.len, 0, NULL) : NULL;

	if (!part)
		return;
	note_rv(m, part);
	if (!m->list) {
		m->list = part;
		return;
	}
	append_all(m->list, part, "items");
	append_all(m->list, part, "rows");
	json_decref(part);
}

static void list_one(struct px_job *j, const char *full, struct merged *m)
{
	struct kc_header h[PX_IMP_HEADERS_MAX];
	struct kc_gvr gvr = {.group = j->route.group,
	                     .version = j->route.version,
	                     .resource = j->route.resource,
	                     .namespaced = true};
	struct buf path = BUF_INIT(4096);
	struct kc_resp up = {0};
	struct ll_err err = {{0}};
	struct kc_request rq = {.method = "GET",
	                        .query = j->query,
	                        .headers = h,
	                        .n_headers = px_job_impersonation(j, h),
	                        .accept = "application/json;as=Table;v=v1;g=meta.k8s.io,"
	                                  "application/json",
	                        .flags = KC_REQ_RAW};

	if (!j->accept || !strstr(j->accept, "as=Table"))
		rq.accept = "application/json";
	if (kc_path(&path, &gvr, full, NULL, NULL) == 0) {
		rq.path = buf_cstr(&path);
		if (kc_do(j->px->o.client, &rq, &up, &err) < 0)
			up.http_status = 502;
	}
	if (up.http_status == 200) {
		m->listed++;
		merge(m, &up);
	} else if (up.http_status == 403) {
		m->forbidden++;
	} else if (!m->failure.http_status) {
		m->failure = up;
		up = (struct kc_resp){0};
	}
	kc_resp_release(&up);
	buf_release(&path);
}

static void send_merged(struct px_job *j, struct merged *m, const struct px_nsmap *map)
{
	struct px_conv conv = {.map = map, .dir = PX_TO_USER, .resource = j->route.resource};
	struct http_resp *resp = http_later_resp(j->later);
	char rv[32], *text;

	if (m->min_rv) {
		snprintf(rv, sizeof(rv), "%llu", m->min_rv);
		json_object_set_new(json_object_get(m->list, "metadata"), "resourceVersion",
		                    json_string(rv));
	}
	if (px_convert(&conv, m->list) != PX_CONV_OK) {
		px_job_status(j, 500, "InternalError", "a list could not be converted (%s)",
		              conv.field);
		return;
	}
	text = json_dumps(m->list, JSON_COMPACT);
	http_resp_header(resp, "Content-Type", "application/json");
	buf_append_str(http_resp_body(resp), text ? text : "{}");
	free(text);
	http_later_send(j->later, 200);
	j->later = NULL;
}

static void all_namespaces(struct px_job *j, const struct px_nsmap *map)
{
	struct merged m = {0};

	if (j->watch) {
		px_job_status(
		        j, 501, "NotImplemented",
		        "watching every namespace through the tenant proxy is not served yet; "
		        "watch one namespace (-n)");
		return;
	}
	for (size_t i = 0; i < px_nsmap_len(map) && !m.failure.http_status; i++) {
		const char *unused;

		list_one(j, px_nsmap_at(map, i, &unused), &m);
	}
	if (m.failure.http_status)
		px_job_status(j, (int)m.failure.http_status, m.failure.status.reason, "%s",
		              m.failure.status.message);
	else if (!m.listed && m.forbidden)
		px_job_status(
		        j, 403, "Forbidden",
		        "%s is forbidden: the user may not list it in any namespace of tenant "
		        "\"%s\"",
		        j->route.resource, j->route.tenant);
	else if (!m.list)
		px_job_status(j, 404, "NotFound", "tenant \"%s\" has no namespace",
		              j->route.tenant);
	else
		send_merged(j, &m, map);
	json_decref(m.list);
	kc_resp_release(&m.failure);
}

static void review(struct px_job *j, const struct px_nsmap *map)
{
	struct buf path = BUF_INIT(1024);
	struct kc_gvr gvr = {.group = j->route.group,
	                     .version = j->route.version,
	                     .resource = j->route.resource};

	if (strcmp(j->method, "POST") != 0 || j->route.name)
		px_job_status(j, 405, "MethodNotAllowed", "a review is created with POST");
	else if (kc_path(&path, &gvr, NULL, NULL, NULL) < 0)
		px_job_status(j, 414, "RequestURITooLong", "the path is too long");
	else
		px_forward_body(j, map, buf_cstr(&path), j->route.resource);
	buf_release(&path);
}

void px_top(struct px_job *j, const struct px_nsmap *map)
{
	const struct px_route *r = &j->route;
	struct kc_gvr gvr;
	struct ll_err err = {{0}};

	if (self_review(r)) {
		review(j, map);
	} else if (disc_lookup_resource(j->px->disc, r->group, r->resource, &gvr, &err) < 0 ||
	           !gvr.namespaced) {
		px_job_status(j, 404, "NotFound",
		              "the server could not find the requested resource");
	} else if (r->name || strcmp(j->method, "GET") != 0) {
		px_job_status(j, 404, "NotFound",
		              "the server could not find the requested resource");
	} else {
		all_namespaces(j, map);
	}
}
