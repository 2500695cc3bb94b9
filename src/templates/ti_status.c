/*
 * ti_status.c - a TemplateInstance's reconcile state and status: conditions Ready, Synced and
 * Conflict, one row of counts, at most one failing entry (an instance has one namespace and
 * stops at its first failure), and the kinds it applied. Written with a merge patch of the
 * status subresource, only when it changed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "kube/conditions.h"
#include "templates/ti_internal.h"

int ti_rec_load(struct templates *t, const char *key, struct ti_rec *r)
{
	const char *slash = strchr(key, '/'), *writer;

	memset(r, 0, sizeof(*r));
	r->t = t;
	r->ti_doc = inf_get_key_ref(t->instances, key);
	if (r->ti_doc == NULL || slash == NULL)
		return (jdoc_unref(r->ti_doc), -ENOENT);
	r->ti = jdoc_root(r->ti_doc);
	snprintf(r->key, sizeof(r->key), "%s", key);
	snprintf(r->ns_name, sizeof(r->ns_name), "%.*s", (int)(slash - key), key);
	snprintf(r->name, sizeof(r->name), "%s", slash + 1);
	snprintf(r->tmpl_name, sizeof(r->tmpl_name), "%s",
	         jval_str(jval_path(r->ti, "spec", "template", NULL)) ?: "");
	snprintf(r->field_manager, sizeof(r->field_manager), TI_MANAGER_PREFIX "%s/%s", r->ns_name,
	         r->name);
	r->tmpl = inf_get_ref(t->templates, NULL, r->tmpl_name);
	r->ns = inf_get_ref(t->namespaces, NULL, r->ns_name);
	r->ns_labels = r->ns ? jval_to_json(jd_get(r->ns, "metadata", "labels", NULL)) : NULL;
	if (!json_is_object(r->ns_labels)) {
		json_decref(r->ns_labels);
		r->ns_labels = json_object();
	}
	writer = jval_annotation(r->ti, ANNOT_LAST_WRITER);
	r->writer = writer && (strcmp(writer, WRITER_OWNER) == 0 ||
	                       strcmp(writer, WRITER_PRIVILEGED) == 0)
	                    ? writer
	                    : WRITER_EDITOR;
	return 0;
}

void ti_rec_release(struct ti_rec *r)
{
	jdoc_unref(r->ti_doc);
	jdoc_unref(r->tmpl);
	jdoc_unref(r->ns);
	json_decref(r->ns_labels);
	json_decref(r->objects);
	json_decref(r->kinds);
	free(r->order);
}

void ti_fail(struct ti_rec *r, const char *reason, const char *object, const char *message)
{
	if (r->failed)
		return;
	r->failed = true;
	snprintf(r->reason, sizeof(r->reason), "%s", reason && *reason ? reason : "Failed");
	snprintf(r->object, sizeof(r->object), "%s", object ? object : "");
	snprintf(r->message, sizeof(r->message), "%s", message ? message : "");
}

void ti_target(const struct ti_rec *r, struct tpl_target *out)
{
	*out = (struct tpl_target){.kc = r->t->kc,
	                           .disc = r->t->disc,
	                           .ns = r->ns_name,
	                           .as_user = r->account.user,
	                           .field_manager = r->field_manager,
	                           .label_key = LABEL_TI,
	                           .label_value = r->name};
}

int ti_patch(struct ti_rec *r, const char *subresource, enum kc_patch_type type, const json_t *body)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = kc_patch(r->t->kc, &LL_TEMPLATEINSTANCES, r->ns_name, r->name, subresource, type,
	                  body, LANDLORD_FIELD_MANAGER, &resp, &err);

	if (rc != 0 || !kc_resp_ok(&resp)) {
		log_warn("template instance write failed", "{s:s,s:s?,s:s}", "instance", r->key,
		         "subresource", subresource, "error", rc ? err.msg : resp.status.message);
		rc = -EAGAIN;
	}
	kc_resp_release(&resp);
	return rc;
}

bool ti_synced_before(const struct ti_rec *r)
{
	json_t *conds = jval_to_json(jval_path(r->ti, "status", "conditions", NULL));
	const char *s = jx_str(cond_find(conds, "Synced"), "status", NULL);
	bool synced = s && strcmp(s, "True") == 0;

	json_decref(conds);
	return synced;
}

int ti_write_status_kinds(struct ti_rec *r)
{
	json_t *body = json_pack("{s:{s:O}}", "status", "kinds", r->kinds);
	int rc = ti_patch(r, "status", KC_PATCH_MERGE, body);

	json_decref(body);
	return rc;
}

/* The Ready condition's status, reason and message. */
static void readiness(const struct ti_rec *r, const struct tpl_row *row, bool workloads_ready,
                      const char **status, const char **reason, char *msg, size_t cap)
{
	*status = "False";
	if (r->failed) {
		*reason = r->reason;
		snprintf(msg, cap, "%s", r->message);
	} else if (!r->synced) {
		*reason = "Pending";
		snprintf(msg, cap, "not applied yet");
	} else if (r->release[0] != '\0' && !r->rel.ready) {
		*reason = "ReleasePending";
		snprintf(msg, cap, "Helm release %s: %s", r->release,
		         r->rel.status[0] ? r->rel.status : "installing");
	} else if (!workloads_ready) {
		*reason = "WorkloadsNotReady";
		snprintf(msg, cap,
		         "ready/desired: Deployments %lld/%lld, StatefulSets %lld/%lld, "
		         "DaemonSets %lld/%lld",
		         row->deployments.ready, row->deployments.desired, row->stateful_sets.ready,
		         row->stateful_sets.desired, row->daemon_sets.ready,
		         row->daemon_sets.desired);
	} else {
		*status = "True";
		*reason = "Applied";
		snprintf(msg, cap, "%lld objects applied", row->applied);
	}
}

static json_t *conditions(const struct ti_rec *r, const struct tpl_row *row, bool workloads_ready,
                          long long gen)
{
	json_t *have = jval_to_json(jval_path(r->ti, "status", "conditions", NULL)), *c1, *c2, *c3;
	const char *status, *reason;
	char msg[TPL_FAIL_MESSAGE_MAX + 64], applied[64];
	bool conflict = r->failed && strcmp(r->reason, "Conflict") == 0;

	readiness(r, row, workloads_ready, &status, &reason, msg, sizeof(msg));
	snprintf(applied, sizeof(applied), "%lld objects applied", row->applied);
	c1 = cond_set(have, "Ready", status, reason, msg, gen);
	c2 = cond_set(c1, "Synced", r->synced ? "True" : "False",
	              r->synced ? "Applied" : (r->failed ? r->reason : "Pending"),
	              r->synced ? applied : r->message, gen);
	c3 = cond_set(c2, "Conflict", conflict ? "True" : "False", conflict ? "Conflict" : "None",
	              conflict ? r->message : "", gen);
	json_decref(have);
	json_decref(c1);
	json_decref(c2);
	return c3;
}

static json_t *status_of(const struct ti_rec *r)
{
	long long gen = jval_int(jval_path(r->ti, "metadata", "generation", NULL), 0);
	struct jval last = jval_at(jval_path(r->ti, "status", "rows", NULL), 0);
	struct tpl_status *b = tpl_status_new();
	struct tpl_row row = {.ns = r->ns_name};
	bool workloads_ready;
	json_t *st;

	/* nothing applied this time: the counts of the last apply still hold */
	row.applied = r->unchanged ? jval_int(jval_get(last, "applied"), 0) : (long long)r->applied;
	row.rendered = r->unchanged ? jval_int(jval_get(last, "rendered"), 0)
	                            : (long long)(r->objects ? json_array_size(r->objects) : 0);
	if (r->release[0] != '\0')
		release_state_counts(&r->rel, &row); /* the chart's workloads, in the roll-up */
	workloads_ready = tpl_rollup(r->t, r->ns_name, r->name, &row);
	row.ready = !r->failed && r->synced && workloads_ready &&
	            (r->release[0] == '\0' || r->rel.ready);
	if (r->release[0] != '\0') {
		row.release = r->release;
		row.release_status = r->rel.status;
		row.chart_version = r->rel.chart_version;
		row.revision = r->rel.revision;
	}
	tpl_status_row(b, &row);
	if (r->failed)
		tpl_status_failing(b, r->ns_name, r->object, r->reason, r->message);
	st = tpl_status_json(b);
	tpl_status_free(b);
	json_object_set_new(st, "observedGeneration", json_integer(gen));
	json_object_set_new(st, "conditions", conditions(r, &row, workloads_ready, gen));
	return st;
}

struct ctrl_result ti_finish(struct ti_rec *r, struct ctrl_result res)
{
	json_t *want = status_of(r), *changes = tpl_status_changes(r->ti, want), *body;
	long wait_ms;

	if (json_object_size(changes) > 0 && !tpl_write_due(r->t, r->key, &wait_ms)) {
		res = tpl_sooner(res,
		                 wait_ms); /* at most one write a second: this one comes then */
	} else if (json_object_size(changes) > 0) {
		body = json_pack("{s:O}", "status", changes);
		if (ti_patch(r, "status", KC_PATCH_MERGE, body) != 0)
			res = CTRL_RESULT_RETRY;
		else
			tpl_written(r->t, r->key);
		json_decref(body);
	}
	json_decref(changes);
	json_decref(want);
	return res;
}
