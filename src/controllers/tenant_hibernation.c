/*
 * tenant_hibernation.c - a Tenant's spec.hibernation becomes one ResourceSupervisor named as
 * the tenant (see tenant_internal.h and docs/tenants.md#hibernation).
 *
 * landlord owns the supervisor's spec, its two labels and its ownerReferences; its annotations
 * (the owners' override landlord.dev/hibernation, rewritten by the supervisor controller), its
 * finalizers and its status are the supervisor controller's and the owners', and no write here
 * touches them: a new supervisor is POSTed, a drifted one is repaired by a JSON patch of exactly
 * those fields, guarded by the resourceVersion it was judged on. A supervisor is the tenant's
 * only when it carries an ownerReference to the Tenant's uid: one of the same name made by
 * someone else is reported on the Tenant and left alone, whatever its labels say. When the
 * Tenant goes with its finalizer removed by hand, the garbage collector deletes the supervisor
 * through that ownerReference (and its own finalizer wakes its namespaces first).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "controllers/tenant_internal.h"
#include "kube/events.h"

#define CONFLICT "HibernationConflict"

static const char *tenant_uid(const struct rec *r)
{
	return jval_str(jval_path(r->tenant, "metadata", "uid", NULL));
}

static void hib_report(struct rec *r, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void hib_report(struct rec *r, const char *reason, const char *fmt, ...)
{
	va_list ap;

	r->hib_reason = reason;
	va_start(ap, fmt);
	vsnprintf(r->hib_msg, sizeof(r->hib_msg), fmt, ap);
	va_end(ap);
}

bool tc_hibernation_ok(const struct rec *r)
{
	return r->hib_reason == NULL || strcmp(r->hib_reason, HIB_PROVISIONED) == 0;
}

/* The reason of the HibernationReady condition the Tenant's status holds now, or NULL. */
static const char *reported_reason(const struct rec *r)
{
	struct jval conds = jval_path(r->tenant, "status", "conditions", NULL), c;
	size_t i;

	jval_foreach(conds, i, c)
		if (tc_str_eq(jval_str(jval_get(c, "type")), COND_HIBERNATION))
			return jval_str(jval_get(c, "reason"));
	return NULL;
}

/* A supervisor of the tenant's name that is not the tenant's: reported, never written. */
static void conflict(struct rec *r)
{
	hib_report(r, CONFLICT,
	           "ResourceSupervisor %s exists and is not this tenant's (no ownerReference to "
	           "it): landlord leaves it alone; delete it to let landlord make the tenant's",
	           r->name);
	if (!tc_str_eq(reported_reason(r), CONFLICT))
		tc_event(r, EVENT_WARNING, CONFLICT, "%s", r->hib_msg);
}

/* @key as a JSON pointer token (RFC 6901: "~" is "~0", "/" is "~1") after @prefix. */
static void pointer(char *out, size_t len, const char *prefix, const char *key)
{
	size_t n = (size_t)snprintf(out, len, "%s", prefix);

	for (; *key && n + 3 < len; key++) {
		if (*key == '~' || *key == '/') {
			out[n++] = '~';
			out[n++] = *key == '~' ? '0' : '1';
		} else {
			out[n++] = *key;
		}
	}
	out[n < len ? n : len - 1] = '\0';
}

static void add_op(json_t *ops, const char *path, json_t *value)
{
	json_array_append_new(
	        ops, json_pack("{s:s,s:s,s:O}", "op", "add", "path", path, "value", value));
}

/* The "add" operations bringing landlord's labels of @have to @want's. */
static void label_ops(json_t *ops, struct jval have, const json_t *want)
{
	struct jval labels = jval_path(have, "metadata", "labels", NULL);
	json_t *wanted = json_object_get(json_object_get(want, "metadata"), "labels"), *v;
	const char *k;
	char path[400];

	if (jval_type(labels) != JT_OBJECT) {
		add_op(ops, "/metadata/labels", wanted);
		return;
	}
	json_object_foreach(wanted, k, v) {
		if (tc_str_eq(jval_str(jval_get(labels, k)), json_string_value(v)))
			continue;
		pointer(path, sizeof(path), "/metadata/labels/", k);
		add_op(ops, path, v);
	}
}

/* The JSON patch bringing @have's spec, labels and ownerReferences to @want's, guarded by its
 * resourceVersion; NULL when nothing differs. */
static json_t *repair_patch(const struct jdoc *have, const json_t *want)
{
	struct jval root = jdoc_root(have);
	json_t *meta = json_object_get(want, "metadata");
	json_t *ops = json_pack("[{s:s,s:s,s:s}]", "op", "test", "path",
	                        "/metadata/resourceVersion", "value", jd_resource_version(have));

	if (!jval_equal_json(jval_get(root, "spec"), json_object_get(want, "spec")))
		add_op(ops, "/spec", json_object_get(want, "spec"));
	label_ops(ops, root, want);
	if (!jval_equal_json(jval_path(root, "metadata", "ownerReferences", NULL),
	                     json_object_get(meta, "ownerReferences")))
		add_op(ops, "/metadata/ownerReferences", json_object_get(meta, "ownerReferences"));
	if (json_array_size(ops) == 1) {
		json_decref(ops);
		return NULL;
	}
	return ops;
}

/* Repair the tenant's supervisor @have (its cached or live document). A patch that lost a race
 * (its test failed) is not a failure: the change that beat it comes by watch. */
static void repair(struct rec *r, const struct jdoc *have, const json_t *want)
{
	json_t *body = repair_patch(have, want);
	struct kc_resp resp = {0};
	struct ll_err err;
	int rc;

	r->hib_ours = true;
	hib_report(r, HIB_PROVISIONED, "ResourceSupervisor %s in place", r->name);
	if (body == NULL)
		return;
	log_info("repairing the tenant's ResourceSupervisor", "{s:s,s:O}", "tenant", r->name,
	         "patch", body);
	rc = kc_patch(r->kc, &LL_RESOURCESUPERVISORS, NULL, r->name, NULL, KC_PATCH_JSON, body,
	              LANDLORD_FIELD_MANAGER, &resp, &err);
	if (rc == 0 && (resp.http_status == 409 ||
	                (resp.http_status == 422 &&
	                 tc_str_eq(resp.status.message, KC_JSON_PATCH_NOT_APPLIED))))
		hib_report(r, "Pending", "ResourceSupervisor %s changed while landlord repaired it",
		           r->name);
	else if (!tc_write_ok(r, rc, &resp, &err, "patch", NULL, r->name, false))
		hib_report(r, "ApplyFailed", "%s", r->fail_msg);
	kc_resp_release(&resp);
	json_decref(body);
}

/* The supervisor of the tenant's name as the API server has it now: NULL when there is none
 * (*@failed false) or it could not be read (*@failed true, recorded). */
static struct jdoc *read_live(struct rec *r, bool *failed)
{
	struct kc_resp resp = {0};
	struct ll_err err;
	struct jdoc *live = NULL;
	int rc = kc_get(r->kc, &LL_RESOURCESUPERVISORS, NULL, r->name, &resp, &err);

	*failed = false;
	if (rc == 0 && kc_resp_ok(&resp))
		live = tc_doc_of(resp.body);
	else if (!(rc == 0 && resp.http_status == 404))
		*failed = !tc_write_ok(r, rc, &resp, &err, "read", NULL, r->name, false);
	kc_resp_release(&resp);
	return live;
}

/* The supervisor of @have (cached, or read after a create met one), wanted as @want. */
static void judge(struct rec *r, const struct jdoc *have, const json_t *want)
{
	if (!tm_supervisor_owned_by(jdoc_root(have), tenant_uid(r)))
		conflict(r);
	else if (tc_doc_deleting(have))
		hib_report(
		        r, "Pending",
		        "ResourceSupervisor %s is being deleted (its namespaces are woken first); "
		        "landlord makes it again once it is gone",
		        r->name);
	else
		repair(r, have, want);
}

/* A new supervisor: POST, so that one of the same name is never merged into. */
static void create(struct rec *r, const json_t *want)
{
	struct kc_resp resp = {0};
	struct ll_err err;
	struct jdoc *live;
	bool failed;
	int rc = kc_create(r->kc, &LL_RESOURCESUPERVISORS, NULL, want, &resp, &err);

	if (rc == 0 && resp.http_status == 409) { /* a stranger's, or the cache is behind */
		live = read_live(r, &failed);
		if (live)
			judge(r, live, want);
		else
			hib_report(r, failed ? "ApplyFailed" : "Pending",
			           "ResourceSupervisor %s: %s", r->name,
			           failed ? r->fail_msg : "gone again while landlord created it");
		jdoc_unref(live);
	} else if (tc_write_ok(r, rc, &resp, &err, "create", NULL, r->name, false)) {
		r->hib_ours = true;
		hib_report(r, HIB_PROVISIONED, "ResourceSupervisor %s in place", r->name);
		tc_event(r, EVENT_NORMAL, "HibernationCreated",
		         "created ResourceSupervisor %s for the tenant's namespaces", r->name);
	} else {
		hib_report(r, "ApplyFailed", "%s", r->fail_msg);
	}
	kc_resp_release(&resp);
}

void tc_sync_supervisor(struct rec *r)
{
	json_t *want = tm_resourcesupervisor(r->tenant, lcfg_argocd(r->cfg) != NULL);
	const struct jdoc *have = inf_get_ref(r->t->supervisors, NULL, r->name);
	bool ours = have && tm_supervisor_owned_by(jdoc_root(have), tenant_uid(r));

	if (want && have)
		judge(r, have, want);
	else if (want)
		create(r, want);
	else if (ours && !tc_doc_deleting(have) && tc_delete_obj(r, &LL_RESOURCESUPERVISORS, have))
		tc_event(r, EVENT_NORMAL, "HibernationRemoved",
		         "deleting ResourceSupervisor %s (spec.hibernation was removed); it wakes "
		         "the tenant's namespaces before it goes",
		         r->name);
	jdoc_unref(have);
	json_decref(want);
}

bool tc_supervisor_gone(struct rec *r)
{
	bool failed;
	struct jdoc *live = read_live(r, &failed);
	bool gone = !failed &&
	            (live == NULL || !tm_supervisor_owned_by(jdoc_root(live), tenant_uid(r)));

	if (!gone && live) {
		hib_report(
		        r, "Pending",
		        "deleting ResourceSupervisor %s: its namespaces are woken before they are "
		        "released or purged",
		        r->name);
		if (!tc_doc_deleting(live))
			tc_delete_obj(r, &LL_RESOURCESUPERVISORS, live);
	}
	jdoc_unref(live);
	return gone;
}
