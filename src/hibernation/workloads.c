/*
 * workloads.c - each workload's sleep and wake: one JSON patch each, guarded by a test of the
 * value it changes (supervisor.h). The annotation landlord.dev/sleep-saved (tenancy/
 * hibernation.h) holds the supervisor and the value to put back.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "hibernation/supervisor_internal.h"

#define SAVED_PATH "/metadata/annotations/landlord.dev~1sleep-saved"

const struct hib_kind_def HIB_KINDS[HK_COUNT] = {
        [HK_STATEFULSET] = {"StatefulSet",
                            {"apps", "v1", "statefulsets", "StatefulSet", true},
                            false},
        [HK_DEPLOYMENT] = {"Deployment", {"apps", "v1", "deployments", "Deployment", true}, false},
        [HK_REPLICASET] = {"ReplicaSet", {"apps", "v1", "replicasets", "ReplicaSet", true}, false},
        [HK_JOB] = {"Job", {"batch", "v1", "jobs", "Job", true}, true},
        [HK_CRONJOB] = {"CronJob", {"batch", "v1", "cronjobs", "CronJob", true}, true},
};

void wl_report(struct sup_rec *r, const char *ns, const char *kind, const char *name,
               const char *outcome, const char *reason, const char *fmt, ...)
{
	struct wl_report *it;
	va_list ap;

	if (r->nitems == REPORT_WORKLOADS_MAX) {
		r->more_items++;
		return;
	}
	it = &r->items[r->nitems++];
	snprintf(it->ns, sizeof(it->ns), "%s", ns);
	snprintf(it->kind, sizeof(it->kind), "%s", kind);
	snprintf(it->name, sizeof(it->name), "%s", name);
	it->outcome = outcome;
	it->reason = reason;
	va_start(ap, fmt);
	vsnprintf(it->message, sizeof(it->message), fmt, ap);
	va_end(ap);
}

/* ---------- reading a workload ---------- */

static bool asleep(enum hib_kind k, const struct jdoc *w)
{
	if (HIB_KINDS[k].suspend)
		return jd_bool(w, false, "spec", "suspend", NULL);
	return jd_int(w, -1, "spec", "replicas", NULL) == 0;
}

/* Not landlord's to put to sleep at all: owned ReplicaSets (they carry their Deployment's
 * annotations, the saved value too), finished Jobs, the deleted. */
static bool out_of_scope(enum hib_kind k, const struct jdoc *w)
{
	struct jval conds = jd_get(w, "status", "conditions", NULL), c;
	size_t i;

	if (jd_str(w, "metadata", "deletionTimestamp", NULL))
		return true;
	if (k == HK_REPLICASET && jval_size(jd_get(w, "metadata", "ownerReferences", NULL)) > 0)
		return true;
	if (k != HK_JOB)
		return false;
	jval_foreach(conds, i, c) {
		const char *type = jval_str(jval_get(c, "type"));
		const char *status = jval_str(jval_get(c, "status"));

		if (type && status && strcmp(status, "True") == 0 &&
		    (strcmp(type, "Complete") == 0 || strcmp(type, "Failed") == 0))
			return true;
	}
	return false;
}

/* The value the workload has now, as JSON (a new reference; NULL: the field is absent). */
static json_t *current_value(enum hib_kind k, const struct jdoc *w)
{
	const char *field = HIB_KINDS[k].suspend ? "suspend" : "replicas";

	return jval_to_json(jd_get(w, "spec", field, NULL));
}

static const char *value_path(enum hib_kind k)
{
	return HIB_KINDS[k].suspend ? "/spec/suspend" : "/spec/replicas";
}

/* ---------- sleep ---------- */

/* The patch that puts @w to sleep, or NULL when its value cannot be saved. */
static json_t *sleep_patch(struct sup_rec *r, enum hib_kind k, const struct jdoc *w)
{
	struct hib_saved saved = {.field = HIB_KINDS[k].suspend ? HIB_SAVED_SUSPEND
	                                                        : HIB_SAVED_REPLICAS};
	json_t *now = current_value(k, w), *body = json_array();
	char *text;

	snprintf(saved.supervisor, sizeof(saved.supervisor), "%s", r->name);
	if (saved.field == HIB_SAVED_SUSPEND)
		saved.suspend = now && json_is_true(now);
	else
		saved.replicas = now && json_is_integer(now) ? (int32_t)json_integer_value(now) : 1;
	text = hib_saved_format(&saved);
	if (text == NULL) {
		json_decref(now);
		json_decref(body);
		return NULL;
	}
	if (now) /* the value saved is the value there */
		json_array_append_new(body, json_pack("{s:s,s:s,s:O}", "op", "test", "path",
		                                      value_path(k), "value", now));
	else /* absent (defaulted when read back): nothing else may have changed */
		json_array_append_new(body, json_pack("{s:s,s:s,s:s}", "op", "test", "path",
		                                      "/metadata/resourceVersion", "value",
		                                      jd_resource_version(w)));
	if (jd_get(w, "metadata", "annotations", NULL).doc == NULL)
		json_array_append_new(body, json_pack("{s:s,s:s,s:{s:s}}", "op", "add", "path",
		                                      "/metadata/annotations", "value",
		                                      HIB_SAVED_ANNOTATION, text));
	else
		json_array_append_new(body, json_pack("{s:s,s:s,s:s}", "op", "add", "path",
		                                      SAVED_PATH, "value", text));
	json_array_append_new(body,
	                      json_pack("{s:s,s:s,s:o}", "op", now ? "replace" : "add", "path",
	                                value_path(k), "value",
	                                HIB_KINDS[k].suspend ? json_true() : json_integer(0)));
	json_decref(now);
	free(text);
	return body;
}

/* A workload landlord already holds (its annotation): counted, or reported. */
static void sleeping_already(struct sup_rec *r, enum hib_kind k, const struct jdoc *w,
                             struct ns_report *rep)
{
	const char *text = jd_annotation(w, HIB_SAVED_ANNOTATION);
	struct ll_err err = {{0}};
	struct hib_saved saved;

	if (hib_saved_parse(text, &saved, &err) < 0) {
		rep->failed++;
		wl_report(r, jd_namespace(w), HIB_KINDS[k].kind, jd_name(w), "failed",
		          "InvalidSavedValue", "%s; left alone", err.msg);
	} else if (strcmp(saved.supervisor, r->name) != 0) {
		rep->skipped++;
		wl_report(r, jd_namespace(w), HIB_KINDS[k].kind, jd_name(w), "skipped",
		          "HeldByAnother", "asleep under supervisor %s", saved.supervisor);
	} else if (asleep(k, w)) {
		rep->slept++;
	} else {
		rep->kept++;
		wl_report(r, jd_namespace(w), HIB_KINDS[k].kind, jd_name(w), "kept",
		          "ChangedWhileAsleep", "changed while asleep; left as it is");
	}
}

/* Left running on purpose: excluded, or unsafe to scale down. Return: the reason, or NULL. */
static const char *skip_reason(struct sup_rec *r, enum hib_kind k, const struct jdoc *w)
{
	const char *flag = jd_label(w, LABEL_HIB_EXCLUDE);
	const char *when =
	        jd_str(w, "spec", "persistentVolumeClaimRetentionPolicy", "whenScaled", NULL);

	if (r->allow_exclusion && flag && strcmp(flag, "true") == 0)
		return "Excluded";
	if (k == HK_STATEFULSET && when && strcmp(when, "Delete") == 0)
		return "VolumesDeletedWhenScaled";
	return NULL;
}

static void sleep_workload(struct sup_rec *r, enum hib_kind k, const struct jdoc *w,
                           struct ns_report *rep)
{
	const char *why;
	json_t *body;
	int rc;

	if (out_of_scope(k, w))
		return;
	if (jd_annotation(w, HIB_SAVED_ANNOTATION)) {
		sleeping_already(r, k, w, rep);
		return;
	}
	why = skip_reason(r, k, w);
	if (why) {
		rep->skipped++;
		wl_report(r, jd_namespace(w), HIB_KINDS[k].kind, jd_name(w), "skipped", why, "%s",
		          strcmp(why, "Excluded") == 0
		                  ? "labelled " LABEL_HIB_EXCLUDE "=true"
		                  : "persistentVolumeClaimRetentionPolicy.whenScaled is Delete: at "
		                    "0 replicas its volumes would be deleted");
		return;
	}
	if (asleep(k, w))
		return; /* at 0 (or suspended) already, and not by landlord: nothing to restore */
	body = sleep_patch(r, k, w);
	if (body == NULL) {
		rep->failed++;
		wl_report(r, jd_namespace(w), HIB_KINDS[k].kind, jd_name(w), "failed",
		          "UnsavableValue", "its value cannot be saved; left alone");
		return;
	}
	if (sup_patch(r, &HIB_KINDS[k].gvr, jd_namespace(w), jd_name(w), KC_PATCH_JSON, body, &rc))
		rep->slept++;
	else if (rc != -EAGAIN && rc != -ENOENT) {
		rep->failed++;
		wl_report(r, jd_namespace(w), HIB_KINDS[k].kind, jd_name(w), "failed",
		          "PatchFailed", "could not be put to sleep (see landlord's log)");
	}
	json_decref(body);
}

bool wl_sleep_namespace(struct sup_rec *r, const char *ns, struct ns_report *rep)
{
	for (size_t o = r->norder; o-- > 0;) {
		enum hib_kind k = r->order[o];
		struct jdoc_list all = inf_by_index_ref(r->h->work[k], "namespace", ns);

		for (size_t i = 0; i < all.n; i++)
			sleep_workload(r, k, all.items[i], rep);
		jdoc_list_release(&all);
	}
	return !r->retry;
}

/* ---------- wake ---------- */

static json_t *saved_value(const struct hib_saved *s)
{
	return s->field == HIB_SAVED_SUSPEND ? json_boolean(s->suspend) : json_integer(s->replicas);
}

static bool wake_workload(struct sup_rec *r, enum hib_kind k, const struct jdoc *w,
                          struct ns_report *rep)
{
	const char *text = jd_annotation(w, HIB_SAVED_ANNOTATION);
	struct ll_err err = {{0}};
	struct hib_saved saved;
	json_t *body, *now;
	bool ok;

	/* an owned ReplicaSet carries its Deployment's annotations: the Deployment is landlord's */
	if (text == NULL || jd_str(w, "metadata", "deletionTimestamp", NULL) ||
	    (k == HK_REPLICASET && jval_size(jd_get(w, "metadata", "ownerReferences", NULL)) > 0))
		return true;
	if (hib_saved_parse(text, &saved, &err) < 0) {
		rep->failed++;
		wl_report(r, jd_namespace(w), HIB_KINDS[k].kind, jd_name(w), "failed",
		          "InvalidSavedValue", "%s; left alone", err.msg);
		return true; /* reported: it does not hold the namespace's wake */
	}
	if (strcmp(saved.supervisor, r->name) != 0)
		return true;
	now = current_value(k, w);
	body = json_pack("[{s:s,s:s,s:s},{s:s,s:s}]", "op", "test", "path", SAVED_PATH, "value",
	                 text, "op", "remove", "path", SAVED_PATH);
	if (asleep(k, w)) {
		json_t *restore = json_pack("[{s:s,s:s,s:O},{s:s,s:s,s:o}]", "op", "test", "path",
		                            value_path(k), "value", now, "op", "replace", "path",
		                            value_path(k), "value", saved_value(&saved));

		json_array_extend(body, restore);
		json_decref(restore);
	}
	ok = sup_patch(r, &HIB_KINDS[k].gvr, jd_namespace(w), jd_name(w), KC_PATCH_JSON, body,
	               NULL);
	if (ok && !asleep(k, w)) {
		rep->kept++;
		wl_report(r, jd_namespace(w), HIB_KINDS[k].kind, jd_name(w), "kept",
		          "ChangedWhileAsleep", "changed while asleep; kept as it is");
	}
	json_decref(now);
	json_decref(body);
	return ok;
}

bool wl_wake_namespace(struct sup_rec *r, const char *ns, struct ns_report *rep)
{
	bool done = true;

	for (size_t o = 0; o < r->norder; o++) {
		enum hib_kind k = r->order[o];
		struct jdoc_list all = inf_by_index_ref(r->h->work[k], "namespace", ns);

		for (size_t i = 0; i < all.n; i++)
			done = wake_workload(r, k, all.items[i], rep) && done;
		jdoc_list_release(&all);
	}
	return done;
}

/* ---------- after a wake ---------- */

/* The message of @w's ReplicaFailure condition when it is about quota, or NULL. */
static const char *quota_failure(const struct jdoc *w)
{
	struct jval conds = jd_get(w, "status", "conditions", NULL), c;
	size_t i;

	jval_foreach(conds, i, c) {
		const char *type = jval_str(jval_get(c, "type"));
		const char *msg = jval_str(jval_get(c, "message"));

		if (type && strcmp(type, "ReplicaFailure") == 0 && msg &&
		    strstr(msg, "exceeded quota"))
			return msg;
	}
	return NULL;
}

size_t wl_short(struct sup_rec *r, const char *ns, struct ns_report *rep, bool report)
{
	size_t n = 0;

	for (int k = HK_STATEFULSET; k <= HK_REPLICASET; k++) {
		struct jdoc_list all = inf_by_index_ref(r->h->work[k], "namespace", ns);

		for (size_t i = 0; i < all.n; i++) {
			const struct jdoc *w = all.items[i];
			const char *quota = quota_failure(w);

			if (out_of_scope((enum hib_kind)k, w) ||
			    jd_int(w, 0, "status", "replicas", NULL) >=
			            jd_int(w, 0, "spec", "replicas", NULL))
				continue;
			if (quota) { /* reported: it does not hold the reservation */
				rep->failed++;
				wl_report(r, ns, HIB_KINDS[k].kind, jd_name(w), "failed",
				          "QuotaExceeded", "%s", quota);
				continue;
			}
			n++;
			if (report) {
				rep->failed++;
				wl_report(r, ns, HIB_KINDS[k].kind, jd_name(w), "failed", "NotBack",
				          "has fewer pods than replicas since it was woken");
			}
		}
		jdoc_list_release(&all);
	}
	return n;
}
