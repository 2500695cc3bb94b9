/* admission.c - AdmissionReview v1 handling (see admission.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "base/ratelimit.h"
#include "http/server.h"
#include "pki/pki.h"
#include "webhook/admission.h"

struct admission_route {
	char *name;
	const struct admission_rule *rules; /* lent; ends at a NULL name */
};

static const struct {
	const char *name;
	unsigned int op;
} ops[] = {
        {"CREATE", ADMISSION_CREATE},
        {"UPDATE", ADMISSION_UPDATE},
        {"DELETE", ADMISSION_DELETE},
        {"CONNECT", ADMISSION_CONNECT},
};

static unsigned int op_of(const char *name)
{
	for (size_t i = 0; name && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(ops[i].name, name) == 0)
			return ops[i].op;
	return 0;
}

/* "group/resource[/subresource]", the group left out for the core group. */
static void resource_name(const json_t *request, char *out, size_t len)
{
	const char *group = jx_str(request, "resource", "group", NULL);
	const char *resource = jx_str(request, "resource", "resource", NULL);
	const char *sub = jx_str(request, "subResource", NULL);

	snprintf(out, len, "%s%s%s%s%s", group && *group ? group : "", group && *group ? "/" : "",
	         resource ? resource : "", sub && *sub ? "/" : "", sub && *sub ? sub : "");
}

bool admission_rule_applies(const struct admission_rule *rule, const json_t *request)
{
	char name[512];

	if ((rule->operations & op_of(jx_str(request, "operation", NULL))) == 0)
		return false;
	resource_name(request, name, sizeof(name));
	for (const char *const *r = rule->resources; r && *r; r++)
		if (strcmp(*r, "*") == 0 || strcmp(*r, name) == 0)
			return true;
	return false;
}

void admission_verdict_warn(struct admission_verdict *v, const char *text)
{
	if (v->warnings == NULL)
		v->warnings = json_array();
	json_array_append_new(v->warnings, json_string(text));
}

static int bad_request(struct buf *out, const char *why)
{
	json_t *doc = json_pack("{s:s,s:s,s:s,s:i}", "kind", "Status", "status", "Failure",
	                        "message", why, "code", 400);
	char *text = jx_dumps(doc);

	buf_append_str(out, text);
	free(text);
	json_decref(doc);
	return 400;
}

/* Returns the denying rule's name, or NULL when every rule that applies allows. */
static const char *run_rules(struct admission_route *r, const json_t *request,
                             struct admission_verdict *v)
{
	const struct admission_rule *rule;

	*v = (struct admission_verdict){.allowed = true};
	for (rule = r->rules; rule && rule->name; rule++) {
		if (!admission_rule_applies(rule, request))
			continue;
		rule->validate(request, v, rule->ud);
		if (!v->allowed)
			break;
	}
	if (!v->allowed && v->code == 0)
		v->code = 403;
	return v->allowed ? NULL : rule->name;
}

/* response.patch is the base64 of the JSON Patch's text. */
static void set_patch(json_t *resp, const json_t *patch)
{
	char *text = jx_dumps(patch);
	char *b64 = pki_b64_encode(text, strlen(text));

	json_object_set_new(resp, "patchType", json_string("JSONPatch"));
	json_object_set_new(resp, "patch", json_string(b64));
	free(b64);
	free(text);
}

static json_t *response_for(const char *uid, const struct admission_verdict *v)
{
	json_t *resp = json_pack("{s:s,s:b}", "uid", uid, "allowed", v->allowed);

	if (!v->allowed)
		json_object_set_new(resp, "status",
		                    json_pack("{s:i,s:s}", "code", v->code, "message", v->message));
	if (json_array_size(v->warnings) > 0)
		json_object_set(resp, "warnings", v->warnings);
	if (v->allowed && json_array_size(v->patch) > 0)
		set_patch(resp, v->patch);
	return json_pack("{s:s,s:s,s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
	                 "AdmissionReview", "response", resp);
}

static void record(struct admission_route *r, bool allowed, int64_t t0)
{
	char labels[160];

	metrics_labels(labels, sizeof(labels), "webhook", r->name, "allowed",
	               allowed ? "true" : "false", NULL);
	metrics_add("landlord_admission_requests_total", labels, 1);
	metrics_labels(labels, sizeof(labels), "webhook", r->name, NULL);
	metrics_observe("landlord_admission_duration_seconds", labels,
	                (double)(clock_mono_ns() - t0) / 1e9);
}

int admission_review(struct admission_route *r, const char *body, struct buf *out)
{
	int64_t t0 = clock_mono_ns();
	struct admission_verdict v;
	json_t *review = jx_loads(body, strlen(body), NULL), *doc;
	const json_t *request;
	const char *uid, *api_version, *kind, *denied_by;
	char *text;
	int status = 200;

	request = jx_get(review, "request", NULL);
	uid = jx_str(request, "uid", NULL);
	api_version = jx_str(review, "apiVersion", NULL);
	kind = jx_str(review, "kind", NULL);
	if (review == NULL) {
		status = bad_request(out, "request body is not JSON");
		goto out;
	}
	if (!api_version || strcmp(api_version, "admission.k8s.io/v1") != 0 || !kind ||
	    strcmp(kind, "AdmissionReview") != 0) {
		status = bad_request(out, "expected an admission.k8s.io/v1 AdmissionReview");
		goto out;
	}
	if (!json_is_object(request) || uid == NULL) {
		status = bad_request(out, "AdmissionReview has no request.uid");
		goto out;
	}
	denied_by = run_rules(r, request, &v);
	doc = response_for(uid, &v);
	text = jx_dumps(doc);
	buf_append_str(out, text);
	free(text);
	json_decref(doc);
	json_decref(v.warnings);
	json_decref(v.patch);
	record(r, v.allowed, t0);
	if (!v.allowed)
		log_info("admission denied", "{s:s,s:s,s:s?,s:s?,s:s?,s:s}", "webhook", r->name,
		         "rule", denied_by, "kind", jx_str(request, "kind", "kind", NULL), "name",
		         jx_str(request, "name", NULL), "user",
		         jx_str(request, "userInfo", "username", NULL), "reason", v.message);
out:
	json_decref(review);
	return status;
}

static int handle(void *ud, struct http_req *req, struct http_resp *resp)
{
	http_resp_header(resp, "Content-Type", "application/json");
	return admission_review(ud, http_req_body(req, NULL), http_resp_body(resp));
}

struct admission_route *admission_route_new(struct http_server *server, const char *path,
                                            const char *name, const struct admission_rule *rules)
{
	static const double buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
	                                 0.01,   0.025,   0.05,   0.1,   0.25,   1};
	struct admission_route *r = xcalloc(1, sizeof(*r));

	r->name = xstrdup(name);
	r->rules = rules;
	metrics_describe("landlord_admission_requests_total", METRIC_COUNTER,
	                 "Admission reviews answered, by webhook and verdict.", NULL, 0);
	metrics_describe("landlord_admission_duration_seconds", METRIC_HISTOGRAM,
	                 "Time to answer one admission review.", buckets,
	                 sizeof(buckets) / sizeof(buckets[0]));
	if (server && http_server_route(server, &(struct http_route){.method = "POST",
	                                                             .path = path,
	                                                             .body_max = ADMISSION_BODY_MAX,
	                                                             .fn = handle,
	                                                             .ud = r}) != 0) {
		admission_route_free(r);
		return NULL;
	}
	return r;
}

void admission_route_free(struct admission_route *r)
{
	if (r == NULL)
		return;
	free(r->name);
	free(r);
}
