/* tenant_namespaces.c - the namespaces a Tenant claims (see tenant_internal.h). */
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

static bool reported_before(const struct rec *r, const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(jx_get(r->tenant, "status", "collisions", NULL), i, c)
		if (jx_str(c, "name", NULL) && strcmp(jx_str(c, "name", NULL), name) == 0)
			return true;
	return false;
}

static void collision(struct rec *r, const char *name, const char *reason)
{
	json_t *c;
	size_t i;

	r->ns_pending = true;
	json_array_foreach(r->collisions, i, c)
		if (strcmp(jx_str(c, "name", NULL), name) == 0)
			return; /* status.collisions is a map keyed by name: one entry each */
	json_array_append_new(r->collisions,
	                      json_pack("{s:s,s:s}", "name", name, "reason", reason));
	if (!reported_before(r, name))
		event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_WARNING,
		             "NamespaceCollision", "namespace %s cannot be used: %s", name, reason);
}

static bool claimed_by_other_tenant(struct rec *r, const char *ns)
{
	struct jdoc_list claimants = inf_by_index_ref(r->t->tenants, IDX_CLAIMS, ns);
	bool other = false;

	for (size_t i = 0; i < claimants.n; i++)
		if (!tc_str_eq(jd_name(claimants.items[i]), r->name) &&
		    !tc_doc_deleting(claimants.items[i]))
			other = true;
	jdoc_list_release(&claimants);
	return other;
}

static json_t *create_namespace(struct rec *r, const struct tm_ns *claim)
{
	json_t *meta =
	        tm_namespace_metadata(r->tenant, r->cfg, jx_str(r->tenant, "spec", "plan", NULL),
	                              claim->name, claim, NULL);
	json_t *ns = json_pack("{s:s,s:s,s:{s:s,s:O,s:O}}", "apiVersion", "v1", "kind", "Namespace",
	                       "metadata", "name", claim->name, "labels",
	                       json_object_get(meta, "labels"), "annotations",
	                       json_object_get(meta, "annotations"));
	struct kc_resp resp = {0};
	struct ll_err err;
	json_t *created = NULL;
	int rc = kc_create(r->kc, &KC_NAMESPACES, NULL, ns, &resp, &err);

	if (rc == 0 && resp.http_status == 409) {
		/* someone else's, or our cache is behind: the namespace event settles it */
		r->ns_pending = true;
	} else if (tc_write_ok(r, rc, &resp, &err, "create namespace", NULL, claim->name, false)) {
		created = json_incref(resp.body);
		json_array_append_new(r->created, json_string(claim->name));
	}
	kc_resp_release(&resp);
	json_decref(ns);
	json_decref(meta);
	return created;
}

/* Bring an owned namespace's metadata to what the tenant wants. Returns the namespace. */
static json_t *sync_metadata(struct rec *r, const json_t *ns, const struct tm_ns *claim)
{
	const char *kind = jx_label(ns, LABEL_KIND);
	json_t *want =
	        tm_namespace_metadata(r->tenant, r->cfg, jx_str(r->tenant, "spec", "plan", NULL),
	                              jx_name(ns), claim, kind ? kind : KIND_ADOPTED);
	json_t *body = NULL, *updated = NULL;
	json_t *prev = tm_managed_keys(ns);

	if (claim == NULL && prev == NULL) {
		/* adoption: guarded by a test of the tenant label, so it is never taken */
		json_t *labels = json_deep_copy(jx_get(ns, "metadata", "labels", NULL));
		json_t *annots = json_deep_copy(jx_get(ns, "metadata", "annotations", NULL));

		annots = annots ? annots : json_object();
		json_object_update(labels, json_object_get(want, "labels"));
		json_object_update(annots, json_object_get(want, "annotations"));
		body = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:o},{s:s,s:s,s:o}]", "op",
		                 "test", "path", "/metadata/labels/landlord.dev~1tenant", "value",
		                 r->name, "op", "test", "path", "/metadata/resourceVersion",
		                 "value", jx_resource_version(ns), "op", "add", "path",
		                 "/metadata/labels", "value", labels, "op", "add", "path",
		                 "/metadata/annotations", "value", annots);
		if (body &&
		    tc_patch(r, &KC_NAMESPACES, NULL, jx_name(ns), KC_PATCH_JSON, body, &updated))
			event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_NORMAL,
			             "NamespaceAdopted", "adopted namespace %s", jx_name(ns));
	} else {
		body = tm_metadata_patch(ns, want);
		if (body)
			tc_patch(r, &KC_NAMESPACES, NULL, jx_name(ns), KC_PATCH_MERGE, body,
			         &updated);
	}
	json_decref(prev);
	json_decref(body);
	json_decref(want);
	if (updated)
		return updated;
	return body ? NULL : jx_ref(ns);
}

/* Delete landlord's objects labelled for this tenant in @ns (NULL: in every namespace). */
void tc_delete_owned_in(struct rec *r, const char *ns, const json_t *keep_active)
{
	for (int k = 0; k < N_OWNED; k++) {
		struct jdoc_list objs = inf_by_index_ref(r->t->owned[k], IDX_TENANT, r->name);

		for (size_t i = 0; i < objs.n; i++) {
			const char *in = jd_namespace(objs.items[i]);

			if (in == NULL)
				continue;
			if (ns ? strcmp(in, ns) == 0
			       : !json_object_get(keep_active, in) &&
			                    !json_object_get(r->let_go, in))
				tc_delete_obj(r, TC_OWNED[k].gvr, objs.items[i]);
		}
		jdoc_list_release(&objs);
	}
}

static bool purgeable(struct rec *r, const json_t *ns)
{
	const char *src = jx_annotation(ns, ANNOT_SOURCE);

	return jx_bool(r->tenant, 0, "spec", "namespaces", "onDeletePurge", NULL) && src &&
	       strcmp(src, SOURCE_SPEC) == 0 && jx_label(ns, LABEL_TENANT) &&
	       strcmp(jx_label(ns, LABEL_TENANT), r->name) == 0;
}

/* A namespace leaves the tenant: purge it, or strip what landlord put there. */
void tc_let_go(struct rec *r, const json_t *ns)
{
	const char *name = jx_name(ns);
	json_t *body;

	json_object_set_new(r->let_go, name, json_true());
	if (jx_get(ns, "metadata", "deletionTimestamp", NULL))
		return; /* purging already */
	if (purgeable(r, ns)) {
		struct kc_delete_opts o = {.precondition_uid = jx_uid(ns), .grace_seconds = -1};
		struct kc_resp resp = {0};
		struct ll_err err;
		int rc = kc_delete(r->kc, &KC_NAMESPACES, NULL, name, &o, &resp, &err);

		if (tc_write_ok(r, rc, &resp, &err, "delete namespace", NULL, name, true))
			event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_NORMAL,
			             "NamespacePurged", "deleting namespace %s (onDeletePurge)",
			             name);
		kc_resp_release(&resp);
		return;
	}
	tc_delete_owned_in(r, name, NULL);
	body = tm_release_patch(ns, r->name);
	if (tc_patch(r, &KC_NAMESPACES, NULL, name, KC_PATCH_MERGE, body, NULL)) {
		json_array_append_new(r->released, json_string(name));
		event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_NORMAL,
		             "NamespaceReleased",
		             "released namespace %s: landlord's access, quota, policies and "
		             "labels were removed; the namespace and its contents stay",
		             name);
	}
	json_decref(body);
}

/* Namespaces that carry this tenant's label or landlord's bookkeeping for it. */
json_t *tc_owned_namespaces(struct rec *r)
{
	json_t *out = json_object();
	struct jdoc_list lists[2] = {inf_by_index_ref(r->t->namespaces, IDX_TENANT, r->name),
	                             inf_by_index_ref(r->t->namespaces, IDX_MANAGED, r->name)};

	for (int l = 0; l < 2; l++) {
		for (size_t i = 0; i < lists[l].n; i++) {
			const char *name = jd_name(lists[l].items[i]);

			if (name && !json_object_get(out, name))
				json_object_set_new(out, name, tc_copy_of(lists[l].items[i]));
		}
		jdoc_list_release(&lists[l]);
	}
	return out;
}

static bool labelled_ours(struct rec *r, const json_t *ns)
{
	const char *l = jx_label(ns, LABEL_TENANT);

	return l && strcmp(l, r->name) == 0;
}

static void sync_claim(struct rec *r, const struct tm_ns *claim)
{
	json_t *ns = tc_cached_copy(r->t->namespaces, NULL, claim->name);
	json_t *now = NULL;

	if (claim->collides) {
		collision(r, claim->name, "claimed twice by this tenant");
		/* bad input never costs what is already provisioned: keep it as it is */
		if (ns && labelled_ours(r, ns) &&
		    !jx_get(ns, "metadata", "deletionTimestamp", NULL))
			json_object_set_new(r->active, claim->name, jx_ref(ns));
	} else if (lcfg_is_privileged_namespace(r->cfg, claim->name)) {
		collision(r, claim->name, "a privileged namespace; landlord never touches it");
	} else if (ns && !labelled_ours(r, ns)) {
		collision(r, claim->name,
		          jx_label(ns, LABEL_TENANT) ? "exists and belongs to another tenant"
		                                     : "exists and does not belong to this tenant");
	} else if (ns == NULL && claimed_by_other_tenant(r, claim->name)) {
		collision(r, claim->name, "another tenant asks for the same name");
	} else if (ns && jx_get(ns, "metadata", "deletionTimestamp", NULL)) {
		r->ns_pending = true; /* wait until it is gone, then create it again */
	} else if (ns) {
		/* ours: even if the metadata update fails now, its contents stay managed */
		now = sync_metadata(r, ns, claim);
		json_object_set_new(r->active, claim->name, jx_ref(now ? now : ns));
	} else {
		now = create_namespace(r, claim);
		if (now == NULL)
			r->ns_pending = true;
		else
			json_object_set(r->active, claim->name, now);
	}
	json_decref(now);
	json_decref(ns);
}

/* One Event for all the namespaces a pass created (a new tenant creates several at once). */
static void record_created(struct rec *r)
{
	char list[768] = "";
	size_t i, len = 0;
	json_t *v;

	json_array_foreach(r->created, i, v) {
		int n = snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
		                 json_string_value(v));

		if (n < 0 || (size_t)n >= sizeof(list) - len)
			break;
		len += (size_t)n;
	}
	if (json_array_size(r->created) > 0)
		event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_NORMAL, "NamespaceCreated",
		             "created namespace%s %s", json_array_size(r->created) > 1 ? "s" : "",
		             list);
}

void tc_sync_namespaces(struct rec *r)
{
	json_t *owned = tc_owned_namespaces(r), *ns;
	const char *name;

	for (size_t i = 0; i < r->claims.n; i++)
		sync_claim(r, &r->claims.ns[i]);
	json_object_foreach(owned, name, ns) {
		const char *src = jx_annotation(ns, ANNOT_SOURCE);
		bool adopted =
		        labelled_ours(r, ns) && (src == NULL || strcmp(src, SOURCE_SPEC) != 0);

		if (json_object_get(r->active, name) || tm_claims_find(&r->claims, name))
			continue;
		if (adopted && !jx_get(ns, "metadata", "deletionTimestamp", NULL) &&
		    !lcfg_is_privileged_namespace(r->cfg, name)) {
			json_t *now = sync_metadata(r, ns, NULL);

			json_object_set(r->active, name, now ? now : ns);
			json_decref(now);
			continue;
		}
		tc_let_go(r, ns);
	}
	json_decref(owned);
	record_created(r);
}
