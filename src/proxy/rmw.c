/*
 * rmw.c - a JSON patch the proxy cannot rewrite by path (it moves, copies or tests a namespace
 * field), applied in the tenant's view instead: the object is read as the caller, converted to
 * the view, patched there (jsonpatch.h), converted back (a namespace that is not the tenant's is
 * refused 422 naming the field), and written back with PUT. The read's resourceVersion stays in
 * the object, so the API server refuses the write (409) if the object changed in between, as it
 * would any stale update: nothing is lost, the client retries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "proxy/convert.h"
#include "proxy/jsonpatch.h"
#include "proxy/proxy_internal.h"

/* GET @path as the caller. Return: the object converted to the view, or NULL (answer sent). */
static json_t *read_view(struct px_job *j, const struct px_nsmap *map, const char *path,
                         const char *resource)
{
	struct kc_header h[PX_IMP_HEADERS_MAX];
	struct kc_resp up = {0};
	struct ll_err err = {{0}};
	struct kc_request rq = {.method = "GET",
	                        .path = path,
	                        .headers = h,
	                        .n_headers = px_job_impersonation(j, h)};
	struct px_conv conv = {.map = map, .dir = PX_TO_USER, .resource = resource};
	json_t *obj = NULL;

	if (kc_do(j->px->o.client, &rq, &up, &err) < 0)
		px_job_status(j, 502, "InternalError", "the API server did not answer: %s",
		              err.msg);
	else if (up.http_status != 200)
		px_job_status(j, (int)up.http_status,
		              up.status.reason[0] ? up.status.reason : "Error", "%s",
		              up.status.message);
	else if (!(obj = json_incref(up.body)) || px_convert(&conv, obj) != PX_CONV_OK) {
		json_decref(obj);
		obj = NULL;
		px_job_status(j, 500, "InternalError", "the object could not be converted");
	}
	kc_resp_release(&up);
	return obj;
}

void px_patch_rmw(struct px_job *j, const struct px_nsmap *map, const char *path,
                  const char *resource)
{
	json_t *obj = read_view(j, map, path, resource);
	json_t *ops = obj ? json_loadb(j->body.p, j->body.len, 0, NULL) : NULL;
	struct px_conv conv = {.map = map, .dir = PX_TO_UPSTREAM, .resource = resource};
	struct px_call c = {
	        .path = path, .query = j->query, .method = "PUT", .map = map, .resource = resource};
	char why[256] = "", *text = NULL;

	if (!obj)
		goto out;
	if (jp_apply(&obj, ops, why, sizeof(why)) < 0)
		px_job_status(j, 422, "Invalid", "the JSON patch does not apply: %s", why);
	else if (px_convert(&conv, obj) != PX_CONV_OK)
		px_job_status(j, 422, "Invalid", "%s: not a namespace of this tenant", conv.field);
	else if ((text = json_dumps(obj, JSON_COMPACT)) == NULL)
		px_job_status(j, 500, "InternalError", "the patched object could not be written");
	else {
		c.body = text;
		c.body_len = strlen(text);
		c.content_type = "application/json";
		px_job_forward(j, &c);
	}
out:
	free(text);
	json_decref(ops);
	json_decref(obj);
}
