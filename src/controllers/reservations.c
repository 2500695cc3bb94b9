/*
 * reservations.c - the reservations controller: releases maxNamespaces slots that were never
 * used (tenancy/nsreserve.h). The webhook takes a slot before admitting a namespace; when the
 * create fails after admission, nobody writes the ConfigMap again and the slot would count
 * until the next write. Each reservations ConfigMap in landlord's namespace is reconciled when
 * it changes and again when its next slot is due: a slot whose namespace exists is released
 * RESERVATION_SETTLE_S after it was taken (the namespace counts by itself then, and a deleted
 * one frees its place), any slot RESERVATION_TTL_S after; the write is guarded by
 * resourceVersion, so a slot the webhook adds meanwhile is never lost, and an empty ConfigMap
 * is deleted, with the same guard.
 */
#include <errno.h>
#include <time.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "controllers/controllers.h"
#include "kube/informer.h"
#include "kube/kube.h"
#include "tenancy/nsreserve.h"

struct reservations_ctl {
	struct inf *configmaps, *namespaces;
};

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct reservations_ctl *r = ud;
	struct inf_opts opts = {.gvr = KC_CONFIGMAPS,
	                        .ns = LANDLORD_SYSTEM_NAMESPACE,
	                        .label_selector = LABEL_RESERVATIONS_FOR,
	                        .name = "reservations"};

	/* the Tenant controller's projection: one informer for both */
	struct inf_opts ns = {.gvr = KC_NAMESPACES, .metadata_only = true};

	r->configmaps = mgr_informer(m, &opts);
	r->namespaces = mgr_informer(m, &ns);
	if (r->configmaps == NULL || r->namespaces == NULL)
		return -ENOMEM;
	ctrl_watch_primary(c, r->configmaps);
	return 0;
}

/* PUT @cm with @data, or DELETE it when @data is empty; both guarded by its resourceVersion. */
static struct ctrl_result write(struct controller *c, const json_t *cm, const json_t *data)
{
	struct kc_client *kc = mgr_client(ctrl_mgr(c));
	const char *name = jx_str(cm, "metadata", "name", NULL);
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	json_t *copy = NULL;
	int rc;

	if (json_object_size(data) == 0)
		rc = kc_delete(
		        kc, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE, name,
		        &(struct kc_delete_opts){
		                .precondition_rv = jx_str(cm, "metadata", "resourceVersion", NULL),
		                .grace_seconds = -1},
		        &resp, &err);
	else {
		copy = json_deep_copy(cm);
		json_object_set(copy, "data", (json_t *)data);
		rc = kc_replace(kc, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE, name, NULL, copy,
		                &resp, &err);
	}
	if (rc == 0 && !kc_resp_ok(&resp) && resp.http_status != 404 && resp.http_status != 409)
		log_warn("reservations not released", "{s:s,s:i,s:s}", "configmap", name, "status",
		         (int)resp.http_status, "error", resp.status.message);
	json_decref(copy);
	rc = rc == 0 && (kc_resp_ok(&resp) || resp.http_status == 404) ? 0 : -EIO;
	kc_resp_release(&resp);
	/* a conflict is a newer version, which its own event brings back */
	return rc == 0 ? CTRL_RESULT_DONE : CTRL_RESULT_RETRY;
}

/* Release from @live the slots whose namespace exists and has settled; *@next: the next due. */
static void settle(struct reservations_ctl *r, json_t *live, int64_t now, int64_t *next)
{
	const char *ns;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(live, tmp, ns, v) {
		int64_t due = nsr_slot_time(json_string_value(v)) + RESERVATION_SETTLE_S;
		const struct jdoc *doc = inf_get_ref(r->namespaces, NULL, ns);

		if (doc == NULL) /* not created yet: look again soon */
			due = now + RESERVATION_SETTLE_S;
		if (doc && due <= now)
			json_object_del(live, ns);
		else if (due < *next)
			*next = due;
		jdoc_unref(doc);
	}
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct reservations_ctl *r = ud;
	const struct jdoc *doc = inf_get_key_ref(r->configmaps, key);
	int64_t now = (int64_t)time(NULL), next = 0;
	const json_t *data;
	json_t *cm, *live;
	struct ctrl_result res = CTRL_RESULT_DONE;

	if (doc == NULL)
		return res;
	cm = jval_to_json(jdoc_root(doc));
	data = jx_get(cm, "data", NULL);
	live = nsr_prune(data, now, &next);
	settle(r, live, now, &next);
	if (json_object_size(live) < json_object_size(data) || json_object_size(live) == 0)
		res = write(c, cm, live);
	else
		res = CTRL_RESULT_AFTER((next - now) * 1000 + 1000);
	json_decref(live);
	json_decref(cm);
	jdoc_unref(doc);
	return res;
}

struct controller_def reservations_controller_def(void)
{
	static struct reservations_ctl ctl;

	return (struct controller_def){
	        .name = "reservations",
	        .workers = 1,
	        .setup = setup,
	        .reconcile = reconcile,
	        .ud = &ctl,
	};
}
