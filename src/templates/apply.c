/* apply.c - a render written as one identity: dry run of all, then apply in order; prune. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"
#include "kube/discovery.h"
#include "kube/kube.h"
#include "templates/apply.h"

void tpl_kind_key(const json_t *obj, char *out)
{
	snprintf(out, TPL_FAIL_OBJECT_MAX, "%s/%s", jx_str(obj, "apiVersion", NULL) ?: "",
	         jx_str(obj, "kind", NULL) ?: "");
}

static void set_failure(struct tpl_failure *f, const json_t *obj, const char *reason,
                        const char *message)
{
	snprintf(f->object, sizeof(f->object), "%s/%s", jx_str(obj, "kind", NULL) ?: "",
	         jx_name(obj) ?: "");
	snprintf(f->reason, sizeof(f->reason), "%s", reason && *reason ? reason : "Invalid");
	snprintf(f->message, sizeof(f->message), "%s", message ? message : "");
}

/* The failure of an answer that was not 2xx. */
static int answer_failure(struct tpl_failure *f, const json_t *obj, const struct kc_resp *resp)
{
	char reason[TPL_FAIL_REASON_MAX];

	if (resp->status.reason[0] != '\0')
		snprintf(reason, sizeof(reason), "%s", resp->status.reason);
	else
		snprintf(reason, sizeof(reason), "HTTP%ld", resp->http_status);
	set_failure(f, obj, reason, resp->status.message);
	return -EAGAIN;
}

static bool is_instance_manager(const char *manager)
{
	return strncmp(manager, TI_MANAGER_PREFIX, strlen(TI_MANAGER_PREFIX)) == 0 ||
	       strncmp(manager, TGI_MANAGER_PREFIX, strlen(TGI_MANAGER_PREFIX)) == 0;
}

/*
 * The first instance manager other than @self named in a conflict message, into @out; false
 * when none. The API server writes `conflict with "landlord/ti/ns/x" using v1: .data.k` for
 * one field and `conflicts with "landlord/ti/ns/x":` for several.
 */
static bool instance_in_conflict(const char *message, const char *self, char *out, size_t cap)
{
	const char *p = message;

	while ((p = strstr(p, " with \"")) != NULL) {
		const char *start = p + strlen(" with \""), *end = strchr(start, '"');

		if (end == NULL)
			break;
		snprintf(out, cap, "%.*s", (int)(end - start), start);
		if (is_instance_manager(out) && strcmp(out, self) != 0)
			return true;
		p = end;
	}
	return false;
}

/* Another instance's manager among @obj's managedFields, into @out; false when none. */
static bool instance_owning(const json_t *obj, const char *self, char *out, size_t cap)
{
	const json_t *mf = jx_get(obj, "metadata", "managedFields", NULL), *e;
	size_t i;

	json_array_foreach(mf, i, e) {
		const char *m = jx_str(e, "manager", NULL);

		if (m && is_instance_manager(m) && strcmp(m, self) != 0) {
			snprintf(out, cap, "%s", m);
			return true;
		}
	}
	return false;
}

/* Does @self own fields of @obj (its managedFields)? */
static bool owns_fields(const json_t *obj, const char *self)
{
	const json_t *mf = jx_get(obj, "metadata", "managedFields", NULL), *e;
	size_t i;

	json_array_foreach(mf, i, e) {
		const char *m = jx_str(e, "manager", NULL);

		if (m && strcmp(m, self) == 0 && json_object_size(jx_get(e, "fieldsV1", NULL)) > 0)
			return true;
	}
	return false;
}

/* @obj with the instance's labels, new reference. */
static json_t *labelled(const struct tpl_target *t, const json_t *obj)
{
	json_t *copy = json_deep_copy(obj), *meta = json_object_get(copy, "metadata"), *labels;

	labels = json_object_get(meta, "labels");
	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(meta, "labels", labels);
	}
	json_object_set_new(labels, t->label_key, json_string(t->label_value));
	if (t->managed_by)
		json_object_set_new(labels, LABEL_MANAGED_BY, json_string(MANAGED_BY_VALUE));
	return copy;
}

static int resolve(const struct tpl_target *t, const json_t *obj, struct kc_gvr *gvr,
                   struct tpl_failure *f)
{
	struct ll_err err = {{0}};

	if (disc_lookup_kind(t->disc, jx_str(obj, "apiVersion", NULL), jx_str(obj, "kind", NULL),
	                     gvr, &err) == 0)
		return 0;
	set_failure(f, obj, "KindNotServed", err.msg);
	return -EAGAIN;
}

/* A RoleBinding whose Role is rendered with it: RBAC can only judge it once the Role exists. */
static bool binds_rendered_role(const json_t *obj, const json_t *objects)
{
	const char *role = jx_str(obj, "roleRef", "name", NULL);
	const json_t *o;
	size_t i;

	if (strcmp(jx_str(obj, "kind", NULL), "RoleBinding") != 0 ||
	    !jx_str(obj, "roleRef", "kind", NULL) ||
	    strcmp(jx_str(obj, "roleRef", "kind", NULL), "Role") != 0 || role == NULL)
		return false;
	json_array_foreach(objects, i, o) {
		if (strcmp(jx_str(o, "kind", NULL), "Role") == 0 && jx_name(o) &&
		    strcmp(jx_name(o), role) == 0)
			return true;
	}
	return false;
}

/* One apply call of @obj; @dry_run or real, forced or not. */
static int apply_one(const struct tpl_target *t, const struct kc_gvr *gvr, const json_t *obj,
                     bool dry_run, bool force, struct kc_resp *resp, struct tpl_failure *f)
{
	struct kc_apply_opts o = {.field_manager = t->field_manager,
	                          .force = force,
	                          .dry_run = dry_run,
	                          .as_user = t->as_user};
	struct ll_err err = {{0}};
	json_t *body = labelled(t, obj);
	int rc = kc_apply_with(t->kc, gvr, gvr->namespaced ? t->ns : NULL, jx_name(obj), body, &o,
	                       resp, &err);

	json_decref(body);
	if (rc != 0) {
		set_failure(f, obj, "Unavailable", err.msg);
		return -EIO;
	}
	return 0;
}

/*
 * The dry run of @obj: whether it must be forced (a conflict with a manager that is not an
 * instance), or the failure that stops the render.
 */
static int dry_run_one(const struct tpl_target *t, const json_t *obj, bool *force, bool *skip,
                       struct tpl_failure *f)
{
	struct kc_resp resp = {0};
	struct kc_gvr gvr;
	char other[256];
	int rc = resolve(t, obj, &gvr, f);

	*force = false;
	if (rc == 0)
		rc = apply_one(t, &gvr, obj, true, false, &resp, f);
	if (rc == 0 && resp.http_status == 409 && strcmp(resp.status.reason, "Conflict") == 0) {
		if (instance_in_conflict(resp.status.message, t->field_manager, other,
		                         sizeof(other))) {
			set_failure(f, obj, "Conflict", "");
			snprintf(f->message, sizeof(f->message), "%.200s also manages it: %.700s",
			         other, resp.status.message);
			rc = -EAGAIN;
		} else {
			*force = true;
			kc_resp_release(&resp);
			rc = apply_one(t, &gvr, obj, true, true, &resp, f);
		}
	}
	if (rc == 0 && !kc_resp_ok(&resp))
		rc = answer_failure(f, obj, &resp);
	/* labelled by hand to be left alone: the apply would not change it, it is not written */
	*skip = rc == 0 && jx_label(resp.body, LABEL_IGNORE_UPDATES) != NULL &&
	        jx_label(obj, LABEL_IGNORE_UPDATES) == NULL;
	if (rc == 0 && !*skip &&
	    instance_owning(resp.body, t->field_manager, other, sizeof(other))) {
		set_failure(f, obj, "Conflict", "");
		snprintf(f->message, sizeof(f->message), "%s also manages it", other);
		rc = -EAGAIN;
	}
	kc_resp_release(&resp);
	return rc;
}

static int write_one(const struct tpl_target *t, const json_t *obj, bool force,
                     struct tpl_failure *f)
{
	struct kc_resp resp = {0};
	struct kc_gvr gvr;
	int rc = resolve(t, obj, &gvr, f);

	if (rc == 0)
		rc = apply_one(t, &gvr, obj, false, force, &resp, f);
	if (rc == 0 && !kc_resp_ok(&resp))
		rc = answer_failure(f, obj, &resp);
	kc_resp_release(&resp);
	return rc;
}

int tpl_apply(const struct tpl_target *t, const json_t *objects, const size_t *order, size_t n,
              size_t *applied, struct tpl_failure *fail)
{
	bool *force = xcalloc(n ? n : 1, sizeof(*force)), *skip = xcalloc(n ? n : 1, sizeof(*skip));
	int rc = 0;
	size_t i;

	*applied = 0;
	memset(fail, 0, sizeof(*fail));
	for (i = 0; i < n && rc == 0; i++) {
		const json_t *obj = json_array_get(objects, order[i]);

		if (!binds_rendered_role(obj, objects))
			rc = dry_run_one(t, obj, &force[i], &skip[i], fail);
	}
	for (i = 0; i < n && rc == 0; i++) {
		if (!skip[i])
			rc = write_one(t, json_array_get(objects, order[i]), force[i], fail);
		if (rc == 0)
			(*applied)++;
		else
			fail->written = true;
	}
	free(force);
	free(skip);
	return rc;
}

/* One drifted object applied again: unforced first, forced over a manager that is not an
 * instance. */
static int repair_one(const struct tpl_target *t, const json_t *obj, struct tpl_failure *f)
{
	struct kc_resp resp = {0};
	struct kc_gvr gvr;
	char other[256];
	int rc = resolve(t, obj, &gvr, f);

	if (rc == 0)
		rc = apply_one(t, &gvr, obj, false, false, &resp, f);
	if (rc == 0 && resp.http_status == 409 && strcmp(resp.status.reason, "Conflict") == 0 &&
	    !instance_in_conflict(resp.status.message, t->field_manager, other, sizeof(other))) {
		kc_resp_release(&resp);
		rc = apply_one(t, &gvr, obj, false, true, &resp, f);
	}
	if (rc == 0 && resp.http_status == 409 && strcmp(resp.status.reason, "Conflict") == 0) {
		set_failure(f, obj, "Conflict", "");
		snprintf(f->message, sizeof(f->message), "%.200s also manages it: %.700s", other,
		         resp.status.message);
		rc = -EAGAIN;
	} else if (rc == 0 && !kc_resp_ok(&resp)) {
		rc = answer_failure(f, obj, &resp);
	} else if (rc == 0 && instance_owning(resp.body, t->field_manager, other, sizeof(other))) {
		set_failure(f, obj, "Conflict", "");
		snprintf(f->message, sizeof(f->message), "%s also manages it", other);
		rc = -EAGAIN;
	}
	kc_resp_release(&resp);
	return rc;
}

int tpl_repair(const struct tpl_target *t, const json_t *objects, const size_t *order, size_t n,
               size_t *applied, struct tpl_failure *fail)
{
	int rc = 0;

	*applied = 0;
	memset(fail, 0, sizeof(*fail));
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = repair_one(t, json_array_get(objects, order[i]), fail);
		if (rc == 0)
			(*applied)++;
		else
			fail->written = *applied > 0;
	}
	return rc;
}

/* ---------- prune ---------- */

/* Does @keep hold an object of @obj's kind and name? */
static bool kept(const json_t *keep, const char *kind, const char *name)
{
	const json_t *o;
	size_t i;

	json_array_foreach(keep, i, o) {
		if (strcmp(jx_str(o, "kind", NULL) ?: "", kind) == 0 && jx_name(o) &&
		    strcmp(jx_name(o), name) == 0)
			return true;
	}
	return false;
}

struct prune_ctx {
	const struct tpl_target *t;
	const struct kc_gvr *gvr;
	const json_t *keep;
	size_t pruned;
	struct tpl_failure *fail;
	int rc;
};

static int prune_item(json_t *item, void *ud)
{
	struct prune_ctx *p = ud;
	struct kc_delete_opts o = {
	        .precondition_uid = jx_uid(item), .grace_seconds = -1, .as_user = p->t->as_user};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	const char *name = jx_name(item);

	if (name == NULL || kept(p->keep, p->gvr->kind, name) ||
	    !owns_fields(item, p->t->field_manager) ||
	    (p->t->only_annotated && !jx_annotation(item, p->t->only_annotated)))
		return 0;
	if (kc_delete(p->t->kc, p->gvr, p->t->ns, name, &o, &resp, &err) != 0) {
		json_object_set_new(item, "kind", json_string(p->gvr->kind));
		set_failure(p->fail, item, "Unavailable", err.msg);
		p->rc = -EIO;
	} else if (kc_resp_ok(&resp) || resp.http_status == 404 || resp.http_status == 409) {
		p->pruned += kc_resp_ok(&resp); /* 409: the uid changed, it is another object now */
	} else {
		json_object_set_new(item, "kind", json_string(p->gvr->kind));
		p->rc = answer_failure(p->fail, item, &resp);
	}
	kc_resp_release(&resp);
	return p->rc;
}

/* "apiVersion/Kind" split at its last '/' into @api_version and @kind. */
static bool split_kind_key(const char *key, char *api_version, char *kind, size_t cap)
{
	const char *slash = strrchr(key, '/');

	if (slash == NULL || slash == key || slash[1] == '\0' || (size_t)(slash - key) >= cap ||
	    strlen(slash + 1) >= cap)
		return false;
	snprintf(api_version, cap, "%.*s", (int)(slash - key), key);
	snprintf(kind, cap, "%s", slash + 1);
	return true;
}

static int prune_kind(const struct tpl_target *t, const char *key, struct prune_ctx *p)
{
	char api_version[TPL_FAIL_OBJECT_MAX], kind[TPL_FAIL_OBJECT_MAX],
	        selector[TPL_FAIL_OBJECT_MAX];
	struct kc_list_opts lo = {.label_selector = selector, .accept = KC_ACCEPT_METADATA};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	struct kc_gvr gvr;
	int rc;

	if (!split_kind_key(key, api_version, kind, sizeof(api_version)) ||
	    disc_lookup_kind(t->disc, api_version, kind, &gvr, &err) != 0)
		return 0; /* not served any more: nothing of it is left to prune */
	snprintf(selector, sizeof(selector), "%s=%s", t->label_key, t->label_value);
	p->gvr = &gvr;
	rc = kc_list(t->kc, &gvr, gvr.namespaced ? t->ns : NULL, &lo, prune_item, p, NULL, &resp,
	             &err);
	if (rc != 0 && p->rc == 0) {
		snprintf(p->fail->object, sizeof(p->fail->object), "%s", key);
		snprintf(p->fail->reason, sizeof(p->fail->reason), "Unavailable");
		snprintf(p->fail->message, sizeof(p->fail->message), "%s", err.msg);
		p->rc = -EIO;
	} else if (p->rc == 0 && !kc_resp_ok(&resp)) {
		snprintf(p->fail->object, sizeof(p->fail->object), "%s", key);
		snprintf(p->fail->reason, sizeof(p->fail->reason), "%s",
		         resp.status.reason[0] ? resp.status.reason : "Unavailable");
		snprintf(p->fail->message, sizeof(p->fail->message), "%s", resp.status.message);
		p->rc = -EAGAIN;
	}
	kc_resp_release(&resp);
	return p->rc;
}

int tpl_prune(const struct tpl_target *t, const json_t *kinds, const json_t *keep, size_t *pruned,
              struct tpl_failure *fail)
{
	struct prune_ctx p = {.t = t, .keep = keep, .fail = fail};
	const json_t *k;
	size_t i;

	memset(fail, 0, sizeof(*fail));
	json_array_foreach(kinds, i, k) {
		if (json_is_string(k) && prune_kind(t, json_string_value(k), &p) != 0)
			break;
	}
	*pruned = p.pruned;
	return p.rc;
}
