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
	struct jval reported = jval_path(r->tenant, "status", "collisions", NULL), c;
	size_t i;

	jval_foreach(reported, i, c)
		if (tc_str_eq(jval_str(jval_get(c, "name")), name))
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
		tc_event(r, EVENT_WARNING, "NamespaceCollision", "namespace %s cannot be used: %s",
		         name, reason);
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

/* The Plan the tenant names (lent by its document), for the plan label. */
static const char *plan_name(const struct rec *r)
{
	return jval_str(jval_path(r->tenant, "spec", "plan", NULL));
}

static const struct jdoc *create_namespace(struct rec *r, const struct tm_ns *claim)
{
	json_t *meta =
	        tm_namespace_metadata(r->tenant, r->cfg, plan_name(r), claim->name, claim, NULL);
	json_t *ns = json_pack("{s:s,s:s,s:{s:s,s:O,s:O}}", "apiVersion", "v1", "kind", "Namespace",
	                       "metadata", "name", claim->name, "labels",
	                       json_object_get(meta, "labels"), "annotations",
	                       json_object_get(meta, "annotations"));
	struct kc_resp resp = {0};
	struct ll_err err;
	const struct jdoc *created = NULL;
	int rc = kc_create(r->kc, &KC_NAMESPACES, NULL, ns, &resp, &err);

	if (rc == 0 && resp.http_status == 409) {
		/* someone else's, or our cache is behind: the namespace event settles it */
		r->ns_pending = true;
	} else if (tc_write_ok(r, rc, &resp, &err, "create namespace", NULL, claim->name, false)) {
		created = tc_doc_of(resp.body);
		json_array_append_new(r->created, json_string(claim->name));
	}
	kc_resp_release(&resp);
	json_decref(ns);
	json_decref(meta);
	return created;
}

/* The JSON patch adopting @ns: guarded by a test of the tenant label, so it is never taken. */
static json_t *adoption_patch(struct rec *r, struct jval ns, const json_t *want)
{
	json_t *labels = jval_to_json(jval_path(ns, "metadata", "labels", NULL));
	json_t *annots = jval_to_json(jval_path(ns, "metadata", "annotations", NULL));

	/* the whole maps are written back: built from the cached ones, then sent */
	labels = labels ? labels : json_object();
	annots = annots ? annots : json_object();
	json_object_update(labels, json_object_get(want, "labels"));
	json_object_update(annots, json_object_get(want, "annotations"));
	return json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:o},{s:s,s:s,s:o}]", "op", "test",
	                 "path", "/metadata/labels/landlord.dev~1tenant", "value", r->name, "op",
	                 "test", "path", "/metadata/resourceVersion", "value",
	                 jval_resource_version(ns), "op", "add", "path", "/metadata/labels",
	                 "value", labels, "op", "add", "path", "/metadata/annotations", "value",
	                 annots);
}

/*
 * Bring an owned namespace's metadata to what the tenant wants. Returns the namespace (a new
 * reference): as written, or @ns when nothing had to be written; NULL when a write failed.
 */
static const struct jdoc *sync_metadata(struct rec *r, const struct jdoc *ns,
                                        const struct tm_ns *claim)
{
	struct jval have = jdoc_root(ns);
	const char *kind = jd_label(ns, LABEL_KIND), *name = jd_name(ns);
	json_t *want = tm_namespace_metadata(r->tenant, r->cfg, plan_name(r), name, claim,
	                                     kind ? kind : KIND_ADOPTED);
	json_t *body = NULL, *prev = tm_managed_keys(have);
	const struct jdoc *updated = NULL;

	if (tm_managed_metadata_ignored(have))
		tc_event(r, EVENT_WARNING, "ManagedMetadataIgnored",
		         "namespace %s: the annotation " ANNOT_MANAGED_METADATA
		         " does not name this tenant, which the namespace's label does; it was "
		         "ignored and is rewritten",
		         name);
	if (claim == NULL && prev == NULL) {
		body = adoption_patch(r, have, want);
		if (body && tc_patch(r, &KC_NAMESPACES, NULL, name, KC_PATCH_JSON, body, &updated))
			tc_event(r, EVENT_NORMAL, "NamespaceAdopted", "adopted namespace %s", name);
	} else {
		body = tm_metadata_patch(have, want);
		if (body)
			tc_patch(r, &KC_NAMESPACES, NULL, name, KC_PATCH_MERGE, body, &updated);
	}
	json_decref(prev);
	json_decref(want);
	if (body == NULL)
		updated = jdoc_ref(ns);
	json_decref(body);
	return updated;
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
		ours = jval_has_string(jval_path(r->tenant, "status", "namespaces", NULL), ns);
	jdoc_unref(d);
	return ours;
}

/* Delete landlord's objects labelled for this tenant in @ns (NULL: in every namespace that was
 * the tenant's and is neither in @keep_active nor let go in this pass). */
void tc_delete_owned_in(struct rec *r, const char *ns, const struct tc_docs *keep_active)
{
	for (int k = 0; k < N_OWNED; k++) {
		struct jdoc_list objs = inf_by_index_ref(r->t->owned[k], IDX_TENANT, r->name);

		for (size_t i = 0; i < objs.n; i++) {
			const char *in = jd_namespace(objs.items[i]);

			if (in == NULL)
				continue;
			if (ns ? strcmp(in, ns) == 0
			       : !tc_docs_get(keep_active, in) && !json_object_get(r->let_go, in) &&
			                    tc_namespace_was_ours(r, in))
				tc_delete_obj(r, TC_OWNED[k].gvr, objs.items[i]);
		}
		jdoc_list_release(&objs);
	}
}

static bool purgeable(struct rec *r, const struct jdoc *ns)
{
	return jval_bool(jval_path(r->tenant, "spec", "namespaces", "onDeletePurge", NULL),
	                 false) &&
	       tc_str_eq(jd_annotation(ns, ANNOT_SOURCE), SOURCE_SPEC) &&
	       tc_str_eq(jd_label(ns, LABEL_TENANT), r->name);
}

static void purge(struct rec *r, const struct jdoc *ns)
{
	struct kc_delete_opts o = {.precondition_uid = jd_uid(ns), .grace_seconds = -1};
	struct kc_resp resp = {0};
	struct ll_err err;
	int rc = kc_delete(r->kc, &KC_NAMESPACES, NULL, jd_name(ns), &o, &resp, &err);

	if (tc_write_ok(r, rc, &resp, &err, "delete namespace", NULL, jd_name(ns), true))
		tc_event(r, EVENT_NORMAL, "NamespacePurged",
		         "deleting namespace %s (onDeletePurge)", jd_name(ns));
	kc_resp_release(&resp);
}

/* Quarantine: landlord's objects and every RoleBinding granting a member go, Pod Security stays. */
static void release(struct rec *r, const struct jdoc *ns)
{
	const char *name = jd_name(ns);
	json_t *body;

	tc_delete_owned_in(r, name, NULL);
	tc_revoke_members(r, name);
	body = tm_release_patch(jdoc_root(ns), r->name);
	if (tc_patch(r, &KC_NAMESPACES, NULL, name, KC_PATCH_MERGE, body, NULL)) {
		json_array_append_new(r->released, json_string(name));
		tc_event(
		        r, EVENT_NORMAL, "NamespaceReleased",
		        "released namespace %s: every RoleBinding granting the tenant's members, "
		        "landlord's quota, limits and network policy, and its labels were removed; "
		        "Pod Security stays at the tenant's level",
		        name);
	}
	json_decref(body);
}

/*
 * Landlord's mark for this tenant inside an unlabelled namespace its status lists: one of its
 * objects there, or the bookkeeping annotation naming it. Without one, the namespace may be a
 * new one of the same name, and is left alone.
 */
static bool marked_ours(struct rec *r, const struct jdoc *ns)
{
	const char *a = jd_annotation(ns, ANNOT_MANAGED_METADATA);
	json_t *m = a ? jx_loads(a, strlen(a), NULL) : NULL;
	bool marked = tc_str_eq(jx_str(m, "tenant", NULL), r->name);

	json_decref(m);
	for (int k = 0; !marked && k < N_OWNED; k++) {
		struct jdoc_list objs = inf_by_index_ref(r->t->owned[k], IDX_TENANT, r->name);

		for (size_t i = 0; i < objs.n && !marked; i++)
			marked = tc_str_eq(jd_namespace(objs.items[i]), jd_name(ns));
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
void tc_let_go(struct rec *r, const struct jdoc *ns)
{
	const char *name = jd_name(ns), *label = jd_label(ns, LABEL_TENANT);

	if (name == NULL)
		return;
	json_object_set_new(r->let_go, name, json_true());
	if (tc_doc_deleting(ns))
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
	else if (!tc_str_eq(jd_annotation(ns, ANNOT_RELEASED_FROM), r->name) && marked_ours(r, ns))
		release(r, ns);
}

/*
 * The namespaces this tenant has to look after: those its label names, and those its status
 * lists (so that one detached by an administrator is still let go).
 */
void tc_owned_namespaces(struct rec *r, struct tc_docs *out)
{
	struct jdoc_list labelled = inf_by_index_ref(r->t->namespaces, IDX_TENANT, r->name);
	struct jval listed = jval_path(r->tenant, "status", "namespaces", NULL), v;
	size_t i;

	for (i = 0; i < labelled.n; i++)
		if (jd_name(labelled.items[i]))
			tc_docs_put(out, jd_name(labelled.items[i]), jdoc_ref(labelled.items[i]));
	jdoc_list_release(&labelled);
	jval_foreach(listed, i, v)
		if (jval_str(v) && !tc_docs_get(out, jval_str(v)))
			tc_docs_put(out, jval_str(v),
			            inf_get_ref(r->t->namespaces, NULL, jval_str(v)));
}

static bool labelled_ours(struct rec *r, const struct jdoc *ns)
{
	return tc_str_eq(jd_label(ns, LABEL_TENANT), r->name);
}

/* @ns (cached, or NULL) for a claim that can be provisioned: active after this. */
static void sync_claimed(struct rec *r, const struct tm_ns *claim, const struct jdoc *ns)
{
	const struct jdoc *now;

	if (ns && tc_doc_deleting(ns)) {
		r->ns_pending = true; /* wait until it is gone, then create it again */
	} else if (ns) {
		/* ours: even if the metadata update fails now, its contents stay managed */
		now = sync_metadata(r, ns, claim);
		tc_docs_put(&r->active, claim->name, now ? now : jdoc_ref(ns));
	} else {
		now = create_namespace(r, claim);
		if (now == NULL)
			r->ns_pending = true;
		tc_docs_put(&r->active, claim->name, now);
	}
}

static void sync_claim(struct rec *r, const struct tm_ns *claim)
{
	const struct jdoc *ns = inf_get_ref(r->t->namespaces, NULL, claim->name);

	if (claim->collides) {
		collision(r, claim->name, "claimed twice by this tenant");
		/* bad input never costs what is already provisioned: keep it as it is */
		if (ns && labelled_ours(r, ns) && !tc_doc_deleting(ns))
			tc_docs_put(&r->active, claim->name, jdoc_ref(ns));
	} else if (tm_namespace_protected(r->cfg, claim->name)) {
		collision(r, claim->name,
		          "a system or privileged namespace; landlord never touches it");
	} else if (ns && !labelled_ours(r, ns)) {
		collision(r, claim->name,
		          jd_label(ns, LABEL_TENANT) ? "exists and belongs to another tenant"
		                                     : "exists and does not belong to this tenant");
	} else if (ns == NULL && claimed_by_other_tenant(r, claim->name)) {
		collision(r, claim->name, "another tenant asks for the same name");
	} else {
		sync_claimed(r, claim, ns);
	}
	jdoc_unref(ns);
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
		tc_event(r, EVENT_NORMAL, "NamespaceCreated", "created namespace%s %s",
		         json_array_size(r->created) > 1 ? "s" : "", list);
}

void tc_sync_namespaces(struct rec *r)
{
	struct tc_docs owned = {0};

	tc_owned_namespaces(r, &owned);
	for (size_t i = 0; i < r->claims.n; i++)
		sync_claim(r, &r->claims.ns[i]);
	for (size_t i = 0; i < owned.len; i++) {
		const char *name = owned.v[i].name,
		           *src = jd_annotation(owned.v[i].doc, ANNOT_SOURCE);
		const struct jdoc *ns = owned.v[i].doc, *now;
		bool adopted = labelled_ours(r, ns) && !tc_str_eq(src, SOURCE_SPEC);

		if (tc_docs_get(&r->active, name) || tm_claims_find(&r->claims, name))
			continue;
		if (adopted && !tc_doc_deleting(ns) && !tm_namespace_protected(r->cfg, name)) {
			now = sync_metadata(r, ns, NULL);
			tc_docs_put(&r->active, name, now ? now : jdoc_ref(ns));
			continue;
		}
		tc_let_go(r, ns);
	}
	tc_docs_release(&owned);
	record_created(r);
}
