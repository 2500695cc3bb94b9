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

	if (tm_managed_metadata_ignored(ns))
		event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_WARNING,
		             "ManagedMetadataIgnored",
		             "namespace %s: the annotation " ANNOT_MANAGED_METADATA
		             " does not name this tenant, which the namespace's label does; it was "
		             "ignored and is rewritten",
		             jx_name(ns));
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

/*
 * Was @ns this tenant's? Its label names the tenant, landlord released it from the tenant, or
 * the tenant's status (landlord's alone to write) lists it. Objects carrying the tenant's labels
 * anywhere else are not landlord's to touch: outside tenant namespaces no policy stops anyone
 * from labelling their own objects so.
 */
bool tc_namespace_was_ours(struct rec *r, const char *ns)
{
	const struct jdoc *d = inf_get_ref(r->t->namespaces, NULL, ns);
	bool ours = d && (tc_str_eq(jd_label(d, LABEL_TENANT), r->name) ||
	                  tc_str_eq(jd_annotation(d, ANNOT_RELEASED_FROM), r->name));

	if (d && !ours)
		ours = tc_str_listed(jx_get(r->tenant, "status", "namespaces", NULL), ns);
	jdoc_unref(d);
	return ours;
}

/* Delete landlord's objects labelled for this tenant in @ns (NULL: in every namespace that was
 * the tenant's and is neither in @keep_active nor let go in this pass). */
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
			                    !json_object_get(r->let_go, in) &&
			                    tc_namespace_was_ours(r, in))
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

static void purge(struct rec *r, const json_t *ns)
{
	struct kc_delete_opts o = {.precondition_uid = jx_uid(ns), .grace_seconds = -1};
	struct kc_resp resp = {0};
	struct ll_err err;
	int rc = kc_delete(r->kc, &KC_NAMESPACES, NULL, jx_name(ns), &o, &resp, &err);

	if (tc_write_ok(r, rc, &resp, &err, "delete namespace", NULL, jx_name(ns), true))
		event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_NORMAL, "NamespacePurged",
		             "deleting namespace %s (onDeletePurge)", jx_name(ns));
	kc_resp_release(&resp);
}

/* Quarantine: landlord's objects and every RoleBinding granting a member go, Pod Security stays. */
static void release(struct rec *r, const json_t *ns)
{
	const char *name = jx_name(ns);
	json_t *body;

	tc_delete_owned_in(r, name, NULL);
	tc_revoke_members(r, name);
	body = tm_release_patch(ns, r->name);
	if (tc_patch(r, &KC_NAMESPACES, NULL, name, KC_PATCH_MERGE, body, NULL)) {
		json_array_append_new(r->released, json_string(name));
		event_record(r->kc, LANDLORD_COMPONENT, r->tenant, EVENT_NORMAL,
		             "NamespaceReleased",
		             "released namespace %s: every RoleBinding granting the tenant's "
		             "members, landlord's quota, limits and network policy, and its labels "
		             "were removed; Pod Security stays at the tenant's level",
		             name);
	}
	json_decref(body);
}

/*
 * Landlord's mark for this tenant inside an unlabelled namespace its status lists: one of its
 * objects there, or the bookkeeping annotation naming it. Without one, the namespace may be a
 * new one of the same name, and is left alone.
 */
static bool marked_ours(struct rec *r, const json_t *ns)
{
	const char *a = jx_annotation(ns, ANNOT_MANAGED_METADATA);
	json_t *m = a ? jx_loads(a, strlen(a), NULL) : NULL;
	bool marked = tc_str_eq(jx_str(m, "tenant", NULL), r->name);

	json_decref(m);
	for (int k = 0; !marked && k < N_OWNED; k++) {
		struct jdoc_list objs = inf_by_index_ref(r->t->owned[k], IDX_TENANT, r->name);

		for (size_t i = 0; i < objs.n && !marked; i++)
			marked = tc_str_eq(jd_namespace(objs.items[i]), jx_name(ns));
		jdoc_list_release(&objs);
	}
	return marked;
}

/*
 * A namespace leaves the tenant. Labelled for it: purged (onDeletePurge, created from the spec)
 * or released. Labelled for another tenant by an administrator: only this tenant's objects go;
 * the other tenant adopts it. Unlabelled by an administrator: released, if landlord's mark for
 * the tenant is still there. A system or privileged namespace is never written.
 */
void tc_let_go(struct rec *r, const json_t *ns)
{
	const char *name = jx_name(ns), *label = jx_label(ns, LABEL_TENANT);

	json_object_set_new(r->let_go, name, json_true());
	if (jx_get(ns, "metadata", "deletionTimestamp", NULL))
		return; /* purging already */
	if (tm_namespace_protected(r->cfg, name)) {
		log_warn("not letting go of a protected namespace", "{s:s,s:s}", "tenant", r->name,
		         "namespace", name);
		return;
	}
	if (tc_str_eq(label, r->name) && purgeable(r, ns))
		purge(r, ns);
	else if (tc_str_eq(label, r->name))
		release(r, ns);
	else if (label)
		tc_delete_owned_in(r, name, NULL);
	else if (!tc_str_eq(jx_annotation(ns, ANNOT_RELEASED_FROM), r->name) && marked_ours(r, ns))
		release(r, ns);
}

/*
 * The namespaces this tenant has to look after: those its label names, and those its status
 * lists (so that one detached by an administrator is still let go).
 */
json_t *tc_owned_namespaces(struct rec *r)
{
	json_t *out = json_object(), *v;
	struct jdoc_list labelled = inf_by_index_ref(r->t->namespaces, IDX_TENANT, r->name);
	size_t i;

	for (i = 0; i < labelled.n; i++)
		if (jd_name(labelled.items[i]))
			json_object_set_new(out, jd_name(labelled.items[i]),
			                    tc_copy_of(labelled.items[i]));
	jdoc_list_release(&labelled);
	json_array_foreach(jx_get(r->tenant, "status", "namespaces", NULL), i, v) {
		json_t *ns = json_is_string(v) && !json_object_get(out, json_string_value(v))
		                     ? tc_cached_copy(r->t->namespaces, NULL, json_string_value(v))
		                     : NULL;

		if (ns)
			json_object_set_new(out, json_string_value(v), ns);
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
	} else if (tm_namespace_protected(r->cfg, claim->name)) {
		collision(r, claim->name,
		          "a system or privileged namespace; landlord never touches it");
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
		    !tm_namespace_protected(r->cfg, name)) {
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
