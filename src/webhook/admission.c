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
#include "http/probe.h"
#include "webhook/admission.h"

struct validator {
	admission_validator_fn fn;
	void *ud;
};

struct admission_route {
	char *name;
	struct validator *validators;
	size_t n_validators;
};

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

static void run_validators(struct admission_route *r, const json_t *request,
                           struct admission_verdict *v)
{
	size_t i;

	*v = (struct admission_verdict){.allowed = true};
	for (i = 0; i < r->n_validators && v->allowed; i++)
		r->validators[i].fn(request, v, r->validators[i].ud);
	if (!v->allowed && v->code == 0)
		v->code = 403;
}

static json_t *response_for(const char *uid, const struct admission_verdict *v)
{
	json_t *resp = json_pack("{s:s,s:b}", "uid", uid, "allowed", v->allowed);

	if (!v->allowed)
		json_object_set_new(resp, "status",
		                    json_pack("{s:i,s:s}", "code", v->code, "message", v->message));
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
	const char *uid, *api_version, *kind;
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
	run_validators(r, request, &v);
	doc = response_for(uid, &v);
	text = jx_dumps(doc);
	buf_append_str(out, text);
	free(text);
	json_decref(doc);
	record(r, v.allowed, t0);
	if (!v.allowed)
		log_info("admission denied", "{s:s,s:s?,s:s?,s:s?,s:s}", "webhook", r->name, "kind",
		         jx_str(request, "kind", "kind", NULL), "name",
		         jx_str(request, "name", NULL), "user",
		         jx_str(request, "userInfo", "username", NULL), "reason", v.message);
out:
	json_decref(review);
	return status;
}

static int handle(void *ud, const char *method, const char *query, const char *body,
                  struct buf *out)
{
	if (strcmp(method, "POST") != 0) {
		buf_append_str(out, "admission reviews are POSTed\n");
		return 405;
	}
	return admission_review(ud, body, out);
}

struct admission_route *admission_route_new(struct probe *server, const char *path,
                                            const char *name)
{
	static const double buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
	                                 0.01,   0.025,   0.05,   0.1,   0.25,   1};
	struct admission_route *r = xcalloc(1, sizeof(*r));

	r->name = xstrdup(name);
	metrics_describe("landlord_admission_requests_total", METRIC_COUNTER,
	                 "Admission reviews answered, by webhook and verdict.", NULL, 0);
	metrics_describe("landlord_admission_duration_seconds", METRIC_HISTOGRAM,
	                 "Time to answer one admission review.", buckets,
	                 sizeof(buckets) / sizeof(buckets[0]));
	probe_handle(server, path, handle, r);
	return r;
}

void admission_add_validator(struct admission_route *r, admission_validator_fn fn, void *ud)
{
	r->validators = xrealloc(r->validators, (r->n_validators + 1) * sizeof(*r->validators));
	r->validators[r->n_validators++] = (struct validator){fn, ud};
}

void admission_route_free(struct admission_route *r)
{
	if (r == NULL)
		return;
	free(r->validators);
	free(r->name);
	free(r);
}
