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
                            HIB_SAVED_REPLICAS,
                            false},
        [HK_DEPLOYMENT] = {"Deployment",
                           {"apps", "v1", "deployments", "Deployment", true},
                           HIB_SAVED_REPLICAS,
                           false},
        [HK_REPLICASET] = {"ReplicaSet",
                           {"apps", "v1", "replicasets", "ReplicaSet", true},
                           HIB_SAVED_REPLICAS,
                           false},
        [HK_ROLLOUT] = {"Rollout",
                        {"argoproj.io", "v1alpha1", "rollouts", "Rollout", true},
                        HIB_SAVED_REPLICAS,
                        true},
        [HK_JOB] = {"Job", {"batch", "v1", "jobs", "Job", true}, HIB_SAVED_SUSPEND, false},
        [HK_CRONJOB] = {"CronJob",
                        {"batch", "v1", "cronjobs", "CronJob", true},
                        HIB_SAVED_SUSPEND,
                        false},
        [HK_SCALEDOBJECT] = {"ScaledObject",
                             {"keda.sh", "v1alpha1", "scaledobjects", "ScaledObject", true},
                             HIB_SAVED_PAUSED_REPLICAS,
                             true},
        [HK_SCALEDJOB] = {"ScaledJob",
                          {"keda.sh", "v1alpha1", "scaledjobs", "ScaledJob", true},
                          HIB_SAVED_PAUSED,
                          true},
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
	it->ns_index = r->ns_index;
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

/* The JSON patch path of what sleep changes, and its value while asleep. */
static const char *value_path(enum hib_kind k)
{
	switch (HIB_KINDS[k].what) {
	case HIB_SAVED_SUSPEND:
		return "/spec/suspend";
	case HIB_SAVED_PAUSED_REPLICAS:
		return "/metadata/annotations/autoscaling.keda.sh~1paused-replicas";
	case HIB_SAVED_PAUSED:
		return "/metadata/annotations/autoscaling.keda.sh~1paused";
	default:
		return "/spec/replicas";
	}
}

static json_t *asleep_value(enum hib_kind k)
{
	switch (HIB_KINDS[k].what) {
	case HIB_SAVED_SUSPEND:
		return json_true();
	case HIB_SAVED_PAUSED_REPLICAS:
		return json_string("0");
	case HIB_SAVED_PAUSED:
		return json_string("true");
	default:
		return json_integer(0);
	}
}

/* The value the workload has now, as JSON (a new reference; NULL: absent). */
static json_t *current_value(enum hib_kind k, const struct jdoc *w)
{
	switch (HIB_KINDS[k].what) {
	case HIB_SAVED_SUSPEND:
		return jval_to_json(jd_get(w, "spec", "suspend", NULL));
	case HIB_SAVED_PAUSED_REPLICAS:
		return jval_to_json(
		        jd_get(w, "metadata", "annotations", KEDA_PAUSED_REPLICAS, NULL));
	case HIB_SAVED_PAUSED:
		return jval_to_json(jd_get(w, "metadata", "annotations", KEDA_PAUSED, NULL));
	default:
		return jval_to_json(jd_get(w, "spec", "replicas", NULL));
	}
}

static bool asleep(enum hib_kind k, const struct jdoc *w)
{
	json_t *now = current_value(k, w), *want = asleep_value(k);
	bool same = now && json_equal(now, want);

	json_decref(now);
	json_decref(want);
	return same;
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

/* ---------- sleep ---------- */

/* The saved value of @w now: what to put back at the wake. */
static struct hib_saved saved_now(struct sup_rec *r, enum hib_kind k, const struct jdoc *w)
{
	struct hib_saved saved = {.field = HIB_KINDS[k].what};
	json_t *now = current_value(k, w);

	snprintf(saved.supervisor, sizeof(saved.supervisor), "%s", r->name);
	if (saved.field == HIB_SAVED_SUSPEND)
		saved.suspend = now && json_is_true(now);
	else if (saved.field == HIB_SAVED_REPLICAS)
		saved.replicas = now && json_is_integer(now) ? (int32_t)json_integer_value(now) : 1;
	else if (json_is_string(now)) {
		saved.has_string = true;
		snprintf(saved.string, sizeof(saved.string), "%s", json_string_value(now));
		if (strlen(json_string_value(now)) >= sizeof(saved.string))
			saved.field = 0; /* too long to save: hib_saved_format() refuses it */
	}
	json_decref(now);
	return saved;
}

/* Add @key=@value to @w's annotations (with the map when it has none). */
static void add_annotation(json_t *body, const struct jdoc *w, const char *path, const char *key,
                           const char *value)
{
	if (jd_get(w, "metadata", "annotations", NULL).doc == NULL)
		json_array_append_new(body,
		                      json_pack("{s:s,s:s,s:{s:s}}", "op", "add", "path",
		                                "/metadata/annotations", "value", key, value));
	else
		json_array_append_new(body, json_pack("{s:s,s:s,s:s}", "op", "add", "path", path,
		                                      "value", value));
}

/* The patch that puts @w to sleep, or NULL when its value cannot be saved. */
static json_t *sleep_patch(struct sup_rec *r, enum hib_kind k, const struct jdoc *w)
{
	struct hib_saved saved = saved_now(r, k, w);
	json_t *now = current_value(k, w), *body = json_array();
	char *text = hib_saved_format(&saved);

	if (text == NULL) {
		json_decref(now);
		json_decref(body);
		return NULL;
	}
	if (now) /* the value saved is the value there */
		json_array_append_new(body, json_pack("{s:s,s:s,s:O}", "op", "test", "path",
		                                      value_path(k), "value", now));
	else /* absent: nothing else may have changed */
		json_array_append_new(body, json_pack("{s:s,s:s,s:s}", "op", "test", "path",
		                                      "/metadata/resourceVersion", "value",
		                                      jd_resource_version(w)));
	add_annotation(body, w, SAVED_PATH, HIB_SAVED_ANNOTATION, text);
	json_array_append_new(body, json_pack("{s:s,s:s,s:o}", "op", now ? "replace" : "add",
	                                      "path", value_path(k), "value", asleep_value(k)));
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

static void sleep_kind(struct sup_rec *r, enum hib_kind k, const char *ns, struct ns_report *rep)
{
	struct inf *inf = hib_work(r, k);
	struct jdoc_list all = inf ? inf_by_index_ref(inf, "namespace", ns) : (struct jdoc_list){0};

	for (size_t i = 0; i < all.n; i++)
		sleep_workload(r, k, all.items[i], rep);
	jdoc_list_release(&all);
}

bool wl_sleep_namespace(struct sup_rec *r, const char *ns, struct ns_report *rep)
{
	/* KEDA paused first: it would scale what goes down back up */
	for (int k = HK_WORKLOADS; k < HK_COUNT; k++)
		sleep_kind(r, (enum hib_kind)k, ns, rep);
	if (r->retry)
		return false;
	for (size_t o = r->norder; o-- > 0;)
		sleep_kind(r, r->order[o], ns, rep);
	return !r->retry;
}

/* ---------- wake ---------- */

/* The operation that puts @s's value back at @path (a KEDA annotation that was absent goes). */
static json_t *restore_op(const struct hib_saved *s, const char *path)
{
	switch (s->field) {
	case HIB_SAVED_SUSPEND:
		return json_pack("{s:s,s:s,s:b}", "op", "replace", "path", path, "value",
		                 s->suspend);
	case HIB_SAVED_REPLICAS:
		return json_pack("{s:s,s:s,s:i}", "op", "replace", "path", path, "value",
		                 (int)s->replicas);
	default:
		if (s->has_string)
			return json_pack("{s:s,s:s,s:s}", "op", "replace", "path", path, "value",
			                 s->string);
		return json_pack("{s:s,s:s}", "op", "remove", "path", path);
	}
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
		json_array_append_new(body, json_pack("{s:s,s:s,s:O}", "op", "test", "path",
		                                      value_path(k), "value", now));
		json_array_append_new(body, restore_op(&saved, value_path(k)));
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

static bool wake_kind(struct sup_rec *r, enum hib_kind k, const char *ns, struct ns_report *rep)
{
	bool retry = r->retry, done;
	struct jdoc_list all = {0};
	struct inf *inf;

	r->retry = false;
	inf = hib_work(r, k);
	done = inf != NULL || !r->retry; /* read, or not installed; else not read yet */
	r->retry = r->retry || retry;
	if (inf)
		all = inf_by_index_ref(inf, "namespace", ns);
	for (size_t i = 0; i < all.n; i++)
		done = wake_workload(r, k, all.items[i], rep) && done;
	jdoc_list_release(&all);
	return done;
}

bool wl_wake_namespace(struct sup_rec *r, const char *ns, struct ns_report *rep)
{
	bool done = true;

	for (size_t o = 0; o < r->norder; o++)
		done = wake_kind(r, r->order[o], ns, rep) && done;
	if (!done)
		return false;
	for (int k = HK_WORKLOADS; k < HK_COUNT; k++) /* KEDA resumes once the workloads are up */
		done = wake_kind(r, (enum hib_kind)k, ns, rep) && done;
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

	for (int k = HK_STATEFULSET; k <= HK_ROLLOUT; k++) {
		struct inf *inf = hib_work(r, (enum hib_kind)k);
		struct jdoc_list all =
		        inf ? inf_by_index_ref(inf, "namespace", ns) : (struct jdoc_list){0};

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
