/* tenant_write.c - the Tenant controller's writes (see tenant_internal.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "controllers/tenant_internal.h"
#include "kube/conditions.h"
#include "kube/events.h"
#include "kube/status.h"
#include "tenancy/landlordconfig_current.h"
#include "tenancy/quotaplan.h"

void tc_failf(struct rec *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->failed) {
		va_start(ap, fmt);
		vsnprintf(r->fail_msg, sizeof(r->fail_msg), fmt, ap);
		va_end(ap);
	}
	r->failed = true;
}

void tc_event(struct rec *r, const char *type, const char *reason, const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	event_record_doc(r->kc, LANDLORD_COMPONENT, r->tenant, type, reason, "%s", message);
}

struct jdoc *tc_doc_of(const json_t *body)
{
	static const char *const drop[] = {"metadata.managedFields", NULL};
	const struct jdoc_opts opts = {.drop = drop};
	struct jdoc *d = NULL;

	if (body == NULL || jdoc_from_json(body, &opts, &d, NULL) < 0)
		return NULL;
	return d;
}

/* Did a write succeed? A 404 counts as success when @missing_ok (deletes). */
bool tc_write_ok(struct rec *r, int rc, const struct kc_resp *resp, const struct ll_err *err,
                 const char *what, const char *ns, const char *name, bool missing_ok)
{
	if (rc == 0 && (kc_resp_ok(resp) || (missing_ok && resp->http_status == 404)))
		return true;
	if (rc < 0)
		tc_failf(r, "%s %s%s%s: %s", what, ns ? ns : "", ns ? "/" : "", name, err->msg);
	else
		tc_failf(r, "%s %s%s%s: %ld %s: %s", what, ns ? ns : "", ns ? "/" : "", name,
		         resp->http_status, resp->status.reason, resp->status.message);
	log_warn("tenant write failed", "{s:s,s:s,s:s}", "tenant", r->name, "action", what, "error",
	         r->fail_msg);
	return false;
}

/*
 * What others added: null for every member of @have (an object) that @want lacks, and for
 * such members of the objects both hold, recursively (spec.egress, spec.scopeSelector,
 * spec.podSelector.matchLabels, aggregationRule). Arrays are compared by jval_has_subset(),
 * which catches an added element; members added inside array elements are not looked at,
 * since the server defaults some (a LimitRange's default from its max). At the top, metadata
 * (others' labels stay), apiVersion, kind and status are not landlord's to compare. NULL when
 * nothing was added.
 */
json_t *tc_added_by_others(struct jval have, const json_t *want, bool top)
{
	static const char *const not_compared[] = {"metadata", "apiVersion", "kind", "status"};
	json_t *out = NULL, *sub;
	const char *key;
	struct jval v;
	size_t i;

	jval_foreach_member(have, i, key, v) {
		const json_t *w = json_object_get(want, key);
		bool skip = false;

		for (size_t k = 0; top && k < sizeof(not_compared) / sizeof(*not_compared); k++)
			skip |= strcmp(key, not_compared[k]) == 0;
		if (skip)
			continue;
		sub = w == NULL ? json_null()
		      : json_is_object(w) && jval_type(v) == JT_OBJECT
		              ? tc_added_by_others(v, w, false)
		              : NULL;
		if (sub == NULL)
			continue;
		out = out ? out : json_object();
		json_object_set_new(out, key, sub);
	}
	return out;
}

bool tc_may_write(struct rec *r, const struct kc_gvr *gvr, const char *ns, const char *name)
{
	const char *target = gvr->namespaced                            ? ns
	                     : strcmp(gvr->resource, "namespaces") == 0 ? name
	                                                                : NULL;

	if (target == NULL || !tm_namespace_protected(r->cfg, target))
		return true;
	log_warn("refusing to write in a system or privileged namespace", "{s:s,s:s,s:s,s:s}",
	         "tenant", r->name, "namespace", target, "resource", gvr->resource, "name", name);
	return false;
}

bool tc_merge_patch(struct rec *r, const struct kc_gvr *gvr, const char *ns, const char *name,
                    const json_t *body)
{
	return tc_patch(r, gvr, ns, name, KC_PATCH_MERGE, body, NULL);
}

/* Keep the object as the API server wrote it in *@written, when asked for. */
static void keep_written(const struct jdoc **written, const struct kc_resp *resp)
{
	if (written) {
		jdoc_unref(*written);
		*written = tc_doc_of(resp->body);
	}
}

/* A new object: POST, never apply, so an object of the same name is never merged into. */
static int create(struct rec *r, const struct kc_gvr *gvr, const json_t *desired,
                  const struct jdoc **written)
{
	struct kc_resp resp = {0};
	struct ll_err err;
	int rc = kc_create(r->kc, gvr, jx_namespace(desired), desired, &resp, &err);

	if (rc == 0 && resp.http_status == 409)
		rc = -EEXIST;
	else if (!tc_write_ok(r, rc, &resp, &err, "create", jx_namespace(desired), jx_name(desired),
	                      false))
		rc = -EIO;
	else
		keep_written(written, &resp);
	kc_resp_release(&resp);
	return rc;
}

/* The object of @desired's name as the API server has it now (NULL: none, or unreadable). */
static struct jdoc *read_live(struct rec *r, const struct kc_gvr *gvr, const json_t *desired)
{
	struct kc_resp resp = {0};
	struct ll_err err;
	struct jdoc *live = NULL;
	int rc = kc_get(r->kc, gvr, jx_namespace(desired), jx_name(desired), &resp, &err);

	if (rc == 0 && kc_resp_ok(&resp))
		live = tc_doc_of(resp.body);
	else if (!(rc == 0 && (kc_resp_ok(&resp) || resp.http_status == 404)))
		tc_write_ok(r, rc, &resp, &err, "read", jx_namespace(desired), jx_name(desired),
		            false);
	kc_resp_release(&resp);
	return live;
}

/* Why @have (an object of landlord's name) must be replaced, or NULL when it may be updated. */
static const char *replace_reason(const struct rec *r, const struct jdoc *have,
                                  const json_t *desired)
{
	const json_t *ref = json_object_get(desired, "roleRef");

	if (!tc_landlords(r, have))
		return "landlord did not create it";
	if (ref && !jval_has_subset(jd_get(have, "roleRef", NULL), ref))
		return "its roleRef, which cannot change, differs";
	return NULL;
}

/* Delete @have (uid precondition) and create @desired in its place, with a Warning Event. */
static bool replace(struct rec *r, const struct kc_gvr *gvr, const json_t *desired,
                    const struct jdoc *have, const char *why, const struct jdoc **written)
{
	bool ok = tc_delete_obj(r, gvr, have) && create(r, gvr, desired, written) == 0;

	if (ok)
		tc_event(r, EVENT_WARNING, "ObjectReplaced", "replaced %s %s%s%s: %s", gvr->kind,
		         jx_namespace(desired) ?: "", jx_namespace(desired) ? "/" : "",
		         jx_name(desired), why);
	return ok;
}

/* Apply @desired over @have (landlord's), then revert what others added that changes it. */
static bool update(struct rec *r, const struct kc_gvr *gvr, const json_t *desired,
                   const struct jdoc *have, const struct jdoc **written)
{
	const char *ns = jx_namespace(desired), *name = jx_name(desired);
	json_t *added = tc_added_by_others(jdoc_root(have), desired, true);
	struct kc_resp resp = {0};
	struct ll_err err;
	bool ok = true;
	int rc;

	if (!jval_has_subset(jdoc_root(have), desired)) {
		rc = kc_apply(r->kc, gvr, ns, name, NULL, desired, LANDLORD_FIELD_MANAGER, true,
		              &resp, &err);
		ok = tc_write_ok(r, rc, &resp, &err, "apply", ns, name, false);
		if (ok)
			keep_written(written, &resp);
		kc_resp_release(&resp);
	}
	if (ok && added) {
		log_info("reverting fields others added", "{s:s,s:s,s:s,s:O}", "tenant", r->name,
		         "namespace", ns ? ns : "", "name", name, "removed", added);
		ok = tc_patch(r, gvr, ns, name, KC_PATCH_MERGE, added, written);
	}
	json_decref(added);
	return ok;
}

/*
 * Bring the object to @desired. landlord owns its names: a missing object is created (POST);
 * one that is not landlord's (its labels), or whose immutable fields differ, is replaced;
 * landlord's own is applied, and what others added that changes its meaning is reverted.
 */
bool tc_ensure(struct rec *r, const struct kc_gvr *gvr, const json_t *desired,
               const struct jdoc *cached, const struct jdoc **written)
{
	struct jdoc *live = NULL;
	const struct jdoc *have = cached;
	const char *why;
	bool ok;
	int rc;

	if (!tc_may_write(r, gvr, jx_namespace(desired), jx_name(desired)))
		return false;
	if (have == NULL) {
		rc = create(r, gvr, desired, written);
		if (rc != -EEXIST)
			return rc == 0;
		have = live = read_live(r, gvr, desired); /* a stranger's, or a cache behind */
		if (have == NULL)
			return false;
	}
	why = replace_reason(r, have, desired);
	ok = why ? replace(r, gvr, desired, have, why, written)
	         : update(r, gvr, desired, have, written);
	jdoc_unref(live);
	return ok;
}

bool tc_delete_obj(struct rec *r, const struct kc_gvr *gvr, const struct jdoc *obj)
{
	struct kc_delete_opts o = {.precondition_uid = jd_uid(obj), .grace_seconds = -1};
	struct kc_resp resp = {0};
	struct ll_err err;
	bool ok;
	int rc;

	if (!tc_may_write(r, gvr, jd_namespace(obj), jd_name(obj)))
		return false;
	rc = kc_delete(r->kc, gvr, jd_namespace(obj), jd_name(obj), &o, &resp, &err);
	/* 409: the uid precondition failed, so it is a newer object; the next pass decides */
	ok = (rc == 0 && resp.http_status == 409) ||
	     tc_write_ok(r, rc, &resp, &err, "delete", jd_namespace(obj), jd_name(obj), true);
	kc_resp_release(&resp);
	return ok;
}

bool tc_patch(struct rec *r, const struct kc_gvr *gvr, const char *ns, const char *name,
              enum kc_patch_type type, const json_t *body, const struct jdoc **result)
{
	struct kc_resp resp = {0};
	struct ll_err err;
	bool ok;
	int rc;

	if (!tc_may_write(r, gvr, ns, name))
		return false;
	rc = kc_patch(r->kc, gvr, ns, name, NULL, type, body, LANDLORD_FIELD_MANAGER, &resp, &err);
	ok = tc_write_ok(r, rc, &resp, &err, "patch", ns, name, false);
	if (ok)
		keep_written(result, &resp);
	kc_resp_release(&resp);
	return ok;
}
