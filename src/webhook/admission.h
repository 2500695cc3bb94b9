/*
 * admission.h - the admission webhook: AdmissionReview v1 in, verdict out.
 *
 * Each webhook path is a POST route on an http_server (see http/server.h) serving a table of
 * rules (struct admission_rule; landlord's own table is webhook_rules in rules.h). A rule
 * applies to the requests whose resource and operation it names; a request is allowed only if
 * every rule that applies allows it, and the first denial's code and message are returned to
 * the API server (and so to the user). Malformed reviews are answered 400 with the reason,
 * never allowed by accident. Bodies are capped at ADMISSION_BODY_MAX (413 above). Metrics:
 * landlord_admission_requests_total{webhook,allowed} and
 * landlord_admission_duration_seconds{webhook}.
 */
#ifndef LANDLORD_ADMISSION_H
#define LANDLORD_ADMISSION_H

#include <jansson.h>
#include <stdbool.h>

struct buf;
struct http_server;

/* Room for two copies of an object at the API server's ~3 MiB limit, plus the envelope. */
#define ADMISSION_BODY_MAX (8u << 20)

struct admission_verdict {
	bool allowed;
	int code;           /* HTTP-style code for a denial, e.g. 403 (0: 403) */
	char message[2048]; /* shown to the user on denial (denial.h's DENIAL_MSG_MAX) */
	/*
	 * Admission warnings shown to the user whatever the verdict (audit-mode findings, notes):
	 * NULL or an array of strings that a validator creates or appends to; the verdict owns it
	 * and admission_review() frees it after answering.
	 */
	json_t *warnings;
	/*
	 * A mutation (POST /mutate only): NULL or a JSON Patch array that a validator creates or
	 * appends operations to; sent when the request is admitted. Owned like @warnings.
	 */
	json_t *patch;
};

/** admission_verdict_warn() - append warning @text (copied) to @v->warnings. */
void admission_verdict_warn(struct admission_verdict *v, const char *text);

/** A validator: inspect the AdmissionRequest (borrowed) and deny by filling @v. */
typedef void (*admission_validator_fn)(const json_t *request, struct admission_verdict *v,
                                       void *ud);

/* request.operation, as a set. */
enum admission_op {
	ADMISSION_CREATE = 1u << 0,
	ADMISSION_UPDATE = 1u << 1,
	ADMISSION_DELETE = 1u << 2,
	ADMISSION_CONNECT = 1u << 3,
	ADMISSION_ANY_OP = 0xfu,
};

struct admission_rule {
	const char *name; /* logged with each denial; NULL ends a table */
	/*
	 * The resources it applies to, NULL-terminated: "namespaces" (the core group),
	 * "landlord.dev/tenants", "apps/deployments"; "*" for every resource. A subresource is
	 * named after a '/' on the resource: "pods/exec", "landlord.dev/tenants/status".
	 */
	const char *const *resources;
	unsigned int operations; /* a set of enum admission_op */
	admission_validator_fn validate;
	void *ud;
};

struct admission_route;

/**
 * admission_route_new() - serve POST @path on @server (before it starts), with a body cap of
 * ADMISSION_BODY_MAX, answering with @rules: a table ended by a row whose name is NULL, lent
 * for the route's life. @name labels metrics. @server may be NULL: the pure core only (tests,
 * fuzzing). The route lives until admission_route_free(), which must follow
 * http_server_free(). Returns NULL when the path is already routed on @server.
 */
struct admission_route *admission_route_new(struct http_server *server, const char *path,
                                            const char *name, const struct admission_rule *rules);
void admission_route_free(struct admission_route *r);

/** admission_rule_applies() - whether @rule covers this AdmissionRequest (borrowed). */
bool admission_rule_applies(const struct admission_rule *rule, const json_t *request);

/**
 * admission_review() - the pure core: answer one AdmissionReview body into @out (a JSON
 * AdmissionReview response). Return: the HTTP status (200, or 400 for a malformed review).
 */
int admission_review(struct admission_route *r, const char *body, struct buf *out);

#endif
