/*
 * admission.h - the admission webhook: AdmissionReview v1 in, verdict out.
 *
 * Each webhook path is a route on a TLS-serving probe server (see probe.h). A route owns a list
 * of validators; a request is allowed only if every validator allows it, and the first denial's
 * code and message are returned to the API server (and so to the user). Malformed reviews are
 * answered 400 with the reason, never allowed by accident. Bodies are capped at
 * ADMISSION_BODY_MAX. Metrics: landlord_admission_requests_total{webhook,allowed} and
 * landlord_admission_duration_seconds{webhook}.
 */
#ifndef LANDLORD_ADMISSION_H
#define LANDLORD_ADMISSION_H

#include <jansson.h>
#include <stdbool.h>

struct probe;

/* Room for two copies of an object at the API server's ~3 MiB limit, plus the envelope. */
#define ADMISSION_BODY_MAX (8u << 20)

struct admission_verdict {
	bool allowed;
	int code;          /* HTTP-style code for a denial, e.g. 403 */
	char message[512]; /* shown to the user on denial */
};

/** A validator: inspect the AdmissionRequest (borrowed) and deny by filling @v. */
typedef void (*admission_validator_fn)(const json_t *request, struct admission_verdict *v,
                                       void *ud);

struct admission_route;

/**
 * admission_route_new() - serve @path on @server (before probe_start()). @name labels metrics.
 * The route lives until admission_route_free(), which must follow probe_free().
 */
struct admission_route *admission_route_new(struct probe *server, const char *path,
                                            const char *name);
/** admission_add_validator() - before the server starts. */
void admission_add_validator(struct admission_route *r, admission_validator_fn fn, void *ud);
void admission_route_free(struct admission_route *r);

/**
 * admission_review() - the pure core: answer one AdmissionReview body into @out (a JSON
 * AdmissionReview response). Return: the HTTP status (200, or 400 for a malformed review).
 */
struct buf;
int admission_review(struct admission_route *r, const char *body, struct buf *out);

#endif
