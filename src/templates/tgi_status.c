/*
 * tgi_status.c - a TemplateGroupInstance's reconcile state and status: one row per matched
 * namespace and at most 20 failing entries (tenancy/tplstatus.h bounds them), the namespaces
 * matched and ready, conditions Ready, Synced and Conflict, and the kinds applied. Written with
 * a merge patch of the status subresource, only when it changed; the finalizer.
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
#include "kube/finalizers.h"
#include "kube/selector.h"
#include "templates/tgi_internal.h"
#include "tenancy/landlordconfig_current.h"
#include "tenancy/tplstatus.h"

/*
 * namespace -> objects rendered, for every row of the last status where everything rendered
 * was applied (its workloads may not be ready yet).
 */
static json_t *ready_rows(struct jval tgi)
{
	struct jval rows = jval_path(tgi, "status", "rows", NULL), row;
	json_t *set = json_object();
	size_t i;

	jval_foreach(rows, i, row) {
		const char *ns = jval_str(jval_get(row, "namespace"));
		long long rendered = jval_int(jval_get(row, "rendered"), 0);

		if (ns && rendered > 0 && jval_int(jval_get(row, "applied"), -1) == rendered)
			json_object_set_new(set, ns, json_integer(rendered));
	}
	return set;
}

int tgi_rec_load(struct templates *t, const char *name, struct tgi_rec *r)
{
	json_t *selector;

	memset(r, 0, sizeof(*r));
	r->t = t;
	r->tgi_doc = inf_get_ref(t->groups, NULL, name);
	if (r->tgi_doc == NULL)
		return -ENOENT;
	r->tgi = jdoc_root(r->tgi_doc);
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->tmpl_name, sizeof(r->tmpl_name), "%s",
	         jval_str(jval_path(r->tgi, "spec", "template", NULL)) ?: "");
	snprintf(r->field_manager, sizeof(r->field_manager), TGI_MANAGER_PREFIX "%s", name);
	r->tmpl = inf_get_ref(t->templates, NULL, r->tmpl_name);
	r->cfg = lcfg_current();
	selector = jval_to_json(jval_path(r->tgi, "spec", "selector", NULL));
	if (sel_from_json(selector ? selector : json_object(), &r->selector, NULL) != 0)
		r->selector = NULL;
	json_decref(selector);
	r->kinds = jval_to_json(jval_path(r->tgi, "status", "kinds", NULL));
	if (!json_is_array(r->kinds)) {
		json_decref(r->kinds);
		r->kinds = json_array();
	}
	r->selected = json_object();
	r->ready_before = ready_rows(r->tgi);
	r->status = tpl_status_new();
	r->sync = jval_bool(jval_path(r->tgi, "spec", "sync", NULL), false);
	return 0;
}

void tgi_rec_release(struct tgi_rec *r)
{
	jdoc_unref(r->tgi_doc);
	jdoc_unref(r->tmpl);
	lcfg_unref(r->cfg);
	sel_free(r->selector);
	json_decref(r->kinds);
	json_decref(r->selected);
	json_decref(r->ready_before);
	tpl_status_free(r->status);
}

void tgi_fail(struct tgi_rec *r, const char *ns, const char *reason, const char *object,
              const char *message)
{
	char where[TPL_FAIL_OBJECT_MAX + 80];
	bool conflict;

	reason = reason && *reason ? reason : "Failed";
	object = object ? object : "";
	conflict = strcmp(reason, "Conflict") == 0;
	if (ns)
		tpl_status_failing(r->status, ns, object, reason, message);
	/* "ns/Kind/name: " or "ns: " or "" */
	snprintf(where, sizeof(where), "%s%s%s%s", ns ? ns : "", ns && *object ? "/" : "", object,
	         ns || *object ? ": " : "");
	if ((conflict && !r->conflict) || !r->failed) {
		snprintf(r->reason, sizeof(r->reason), "%s", reason);
		snprintf(r->message, sizeof(r->message), "%s%s", where, message ? message : "");
	}
	r->conflict |= conflict;
	r->failed = true;
}

void tgi_row(struct tgi_rec *r, const char *ns, bool ready, size_t applied, size_t rendered)
{
	struct tpl_row row = {.ns = ns,
	                      .ready = ready,
	                      .applied = (long long)applied,
	                      .rendered = (long long)rendered};
	struct release_state st;
	char release[64];

	if (ready) /* the chart goes after the manifests */
		tgi_chart(r, &row, release, &st);
	if (!tpl_rollup_group(r->t, ns, r->name, &row) && row.ready) {
		row.ready = false; /* applied; its workloads are not ready yet */
		r->workloads = true;
	}
	tpl_status_row(r->status, &row);
	r->row_rendered = rendered;
	if (!row.ready)
		r->not_ready++;
}

void tgi_target(const struct tgi_rec *r, const char *ns, struct tpl_target *out)
{
	*out = (struct tpl_target){.kc = r->t->kc,
	                           .disc = r->t->disc,
	                           .ns = ns,
	                           .as_user = NULL,
	                           .field_manager = r->field_manager,
	                           .label_key = LABEL_TGI,
	                           .label_value = r->name,
	                           .managed_by = true};
}

int tgi_patch(struct tgi_rec *r, const char *subresource, enum kc_patch_type type,
              const json_t *body)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = kc_patch(r->t->kc, &LL_TEMPLATEGROUPINSTANCES, NULL, r->name, subresource, type,
	                  body, LANDLORD_FIELD_MANAGER, &resp, &err);

	if (rc != 0 || !kc_resp_ok(&resp)) {
		log_warn("template group instance write failed", "{s:s,s:s?,s:s}", "instance",
		         r->name, "subresource", subresource, "error",
		         rc ? err.msg : resp.status.message);
		rc = -EAGAIN;
	}
	kc_resp_release(&resp);
	return rc;
}

int tgi_write_status_kinds(struct tgi_rec *r)
{
	json_t *body = json_pack("{s:{s:O}}", "status", "kinds", r->kinds);
	int rc = tgi_patch(r, "status", KC_PATCH_MERGE, body);

	json_decref(body);
	return rc;
}

/* ---------- finalizer ---------- */

bool tgi_has_finalizer(const struct tgi_rec *r)
{
	return kc_finalizer_index(r->tgi, LANDLORD_FINALIZER) >= 0;
}

int tgi_set_finalizer(struct tgi_rec *r, bool present)
{
	json_t *body = kc_finalizer_patch(r->tgi, LANDLORD_FINALIZER, present);
	int rc = body ? tgi_patch(r, NULL, KC_PATCH_JSON, body) : 0;

	json_decref(body);
	return rc;
}

/* ---------- status ---------- */

static json_t *conditions(const struct tgi_rec *r, long long gen)
{
	json_t *have = jval_to_json(jval_path(r->tgi, "status", "conditions", NULL)), *c1, *c2, *c3;
	bool synced = !r->failed && !r->quota;
	bool ready = synced && r->not_ready == 0;
	char msg[128];

	snprintf(msg, sizeof(msg), "%zu namespaces ready",
	         json_object_size(r->selected) - r->not_ready);
	c1 = cond_set(have, "Ready", ready ? "True" : "False",
	              ready       ? "Applied"
	              : r->failed ? r->reason
	              : r->quota  ? "QuotaNotInForce"
	                          : "WorkloadsNotReady",
	              ready ? msg : (r->failed ? r->message : msg), gen);
	c2 = cond_set(c1, "Synced", synced ? "True" : "False",
	              synced ? "Applied" : (r->failed ? r->reason : "QuotaNotInForce"),
	              synced ? msg : (r->failed ? r->message : msg), gen);
	c3 = cond_set(c2, "Conflict", r->conflict ? "True" : "False",
	              r->conflict ? "Conflict" : "None", r->conflict ? r->message : "", gen);
	json_decref(have);
	json_decref(c1);
	json_decref(c2);
	return c3;
}

static json_t *status_of(const struct tgi_rec *r)
{
	long long gen = jval_int(jval_path(r->tgi, "metadata", "generation", NULL), 0);
	json_t *st = tpl_status_json(r->status);

	json_object_set_new(st, "observedGeneration", json_integer(gen));
	json_object_set_new(st, "conditions", conditions(r, gen));
	json_object_set(st, "kinds", r->kinds);
	return st;
}

struct ctrl_result tgi_finish(struct tgi_rec *r, struct ctrl_result res)
{
	json_t *want = status_of(r), *changes = tpl_status_changes(r->tgi, want), *body;
	char key[300];
	long wait_ms;

	snprintf(key, sizeof(key), "tgi:%s", r->name); /* no namespace holds a ':' */
	if (json_object_size(changes) > 0 && !tpl_write_due(r->t, key, &wait_ms)) {
		res = tpl_sooner(res,
		                 wait_ms); /* at most one write a second: this one comes then */
	} else if (json_object_size(changes) > 0) {
		body = json_pack("{s:O}", "status", changes);
		if (tgi_patch(r, "status", KC_PATCH_MERGE, body) != 0)
			res = CTRL_RESULT_RETRY;
		else
			tpl_written(r->t, key);
		json_decref(body);
	}
	json_decref(changes);
	json_decref(want);
	return res;
}
