/*
 * tplstatus.h - the bounded status of a TemplateInstance or TemplateGroupInstance, without I/O.
 *
 * An instance reports, per namespace it renders into, one row of counts (issue 13, point 8):
 * objects applied and rendered, Deployments, StatefulSets and DaemonSets ready and desired,
 * its pods by phase, and whether the namespace is ready; and the objects that fail, with the
 * reason and the API server's message. A TemplateGroupInstance may select 100,000 namespaces;
 * its status must stay far below etcd's object limit (1.5 MiB) and the builder's memory must
 * not grow with them. A struct tpl_status is an accumulator: the caller gives every row and
 * every failure of one instance, in any order, then takes the JSON once:
 *
 *	struct tpl_status *s = tpl_status_new();
 *	for each namespace:   tpl_status_row(s, &row);
 *	for each failure:     tpl_status_failing(s, ns, "Deployment/web", "Forbidden", msg);
 *	json_t *st = tpl_status_json(s);   (the caller adds observedGeneration and conditions)
 *	tpl_status_free(s);
 *
 * Bounds (the CRDs' schemas say the same, deploy/crds/template*instances.landlord.dev.yaml):
 * - rows: at most TPL_ROWS_MAX, the first in the order (not ready first, then by namespace
 *   name, bytewise), and no more than keep the whole status within TPL_STATUS_BYTES_MAX
 *   bytes of compact JSON (the failing entries always fit); the rest are counted in
 *   rowsOmitted. The builder keeps at most TPL_ROWS_MAX rows (a bounded
 *   max-heap): memory does not depend on the number of namespaces.
 * - failing: at most TPL_FAILING_MAX entries, the first by (namespace, object, reason,
 *   message), the rest counted in failingOmitted; the same bounded selection.
 * - strings: namespace at most 63 bytes, object 320, reason 64, message TPL_MESSAGE_MAX; a
 *   longer one is cut on a UTF-8 character boundary and ends in "..." within its bound. Bytes
 *   that are not UTF-8 become '?', so the JSON is always valid.
 * - counts are clamped to 0..INT32_MAX (the schemas' int32).
 * So tpl_status_json() is never more than TPL_STATUS_BYTES_MAX bytes of compact JSON, whatever
 * the input; typically 2,000 rows of about 100 bytes and 20 failures of at most 700.
 *
 * Invariants: the output depends only on the set of rows and failures given, never on the
 * order of the calls, so a status built twice from the same state is equal (json_equal()) and
 * a write only on change needs nothing more. Each namespace is given at most once per build
 * (the builder cannot tell a repeat from another namespace without keeping every name).
 * Pure: no globals, no I/O; a struct tpl_status belongs to one thread at a time.
 */
#ifndef LANDLORD_TPLSTATUS_H
#define LANDLORD_TPLSTATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define TPL_ROWS_MAX         2000         /* rows in status.rows */
#define TPL_STATUS_BYTES_MAX (240u << 10) /* bytes of tpl_status_json(), compact JSON */
#define TPL_FAILING_MAX      20           /* entries in status.failing */
#define TPL_MESSAGE_MAX      256          /* bytes of a failing entry's message */
#define TPL_NAMESPACE_MAX    63           /* bytes of a namespace */
#define TPL_OBJECT_MAX       320          /* bytes of Kind/name */
#define TPL_RELEASE_MAX      53           /* bytes of a release name */
#define TPL_VERSION_MAX      128          /* bytes of a chart version */
#define TPL_REASON_MAX       64           /* bytes of a reason */

/**
 * tpl_clip() - @src (NULL: "") into @dst (@max + 1 bytes, @max >= 3), valid UTF-8 (other bytes
 * become '?'): whole when it fits in @max bytes, else cut on a character boundary and ended
 * with "..." within @max bytes. The rule for every string of a status.
 */
void tpl_clip(char *dst, size_t max, const char *src);

struct tpl_status;

/* Ready and desired replicas (Deployments, StatefulSets) or scheduled pods (DaemonSets). */
struct tpl_ready_desired {
	long long ready, desired;
};

/* One namespace's counts; a count below 0 is written as 0, above INT32_MAX as INT32_MAX. */
struct tpl_row {
	const char *ns; /* the namespace (borrowed during the call; not NULL) */
	bool ready;     /* every rendered object applied, every workload ready */
	long long applied, rendered;
	struct tpl_ready_desired deployments, stateful_sets, daemon_sets;
	struct {
		long long pending, running, succeeded, failed, unknown;
	} pods; /* the instance's pods, by phase */
	/* The namespace's Helm release, when the Template has a chart (release NULL: none). */
	const char *release, *release_status, *chart_version; /* borrowed; "" when unknown */
	long long revision;                                   /* 0 when unknown */
};

/** tpl_status_new() - an empty builder; tpl_status_free() it. Aborts on OOM. */
struct tpl_status *tpl_status_new(void);
/** tpl_status_free() - free @s and everything it holds; NULL is a no-op. */
void tpl_status_free(struct tpl_status *s);

/**
 * tpl_status_row() - count namespace @row->ns (its row's fields are copied): in
 * namespaces.matched, in namespaces.ready when @row->ready, and in rows or rowsOmitted.
 */
void tpl_status_row(struct tpl_status *s, const struct tpl_row *row);

/**
 * tpl_status_failing() - add a failing entry: object @object (Kind/name; NULL or "" when the
 * render itself failed) in namespace @ns fails for machine-readable @reason (ParameterInvalid,
 * Forbidden, Conflict, NotReady...) with @message (NULL: ""). Strings are borrowed during the
 * call and copied, cut to their bounds. Kept among the first TPL_FAILING_MAX, else counted.
 */
void tpl_status_failing(struct tpl_status *s, const char *ns, const char *object,
                        const char *reason, const char *message);

/**
 * tpl_status_json() - the status so far, a new object (caller owns it):
 *   {"rows": [{"namespace", "ready", "applied", "rendered", "deployments": {"ready",
 *              "desired"}, "statefulSets": {...}, "daemonSets": {...}, "pods": {"pending",
 *              "running", "succeeded", "failed", "unknown"}, "release": {"name", "status",
 *              "revision", "chartVersion"}}],
 *    "rowsOmitted": N,
 *    "failing": [{"namespace", "object", "reason", "message"}], "failingOmitted": N,
 *    "namespaces": {"matched": N, "ready": N}}
 * In a row, namespace, ready, applied and rendered are always written; a workload kind only
 * when its ready or desired is not 0, and a phase only when not 0 (rows of namespaces without
 * workloads stay short); release only with a chart, and its fields only when known. Rows and
 * failing entries are in their orders above. @s is unchanged: more rows may follow and a later call
 * gives the status with them.
 */
json_t *tpl_status_json(const struct tpl_status *s);

/** tpl_status_bytes() - heap bytes @s holds, with malloc's overhead estimated (for tests). */
size_t tpl_status_bytes(const struct tpl_status *s);

#endif
