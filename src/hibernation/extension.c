/*
 * extension.c - the Extension controller: informers, event mapping, the reconcile, status and
 * deletion (extension.h).
 *
 * One reconcile: read the Extension; with the Argo CD namespace configured and its Tenant
 * there, keep the accounts landlord-argocd in the tenant's namespaces (extension_accounts.c);
 * read argocd-cm (impersonation) and, once the AppProject kind is served, apply the AppProject
 * (extension_project.c) when it differs from the cache, then the tenant's rbac key; write the
 * status when it differs. A deleted Extension loses its accounts always, and its AppProject and
 * rbac key with onDeletePurgeAppProject, before its finalizer goes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "hibernation/extension_internal.h"
#include "kube/discovery.h"
#include "kube/finalizers.h"
#include "tenancy/landlordconfig_current.h"

#define CONTROLLER_NAME "extension"
#define IDX_TENANT      "tenant" /* Extensions: spec.tenant; namespaces: label landlord.dev/tenant */
#define APPPROJECT_CRD  "appprojects.argoproj.io"
#define NS_MAX          4096 /* most destinations one AppProject gets */
/* An informer just made, or a kind discovery does not serve yet (it refreshes at most every
 * 10 s): looked at again this often, not after a growing back-off. */
#define SOON_MS 500

/* ---------- events ---------- */

static void index_tenant(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                         void *ud)
{
	const char *t = jd_str(obj, "spec", "tenant", NULL);

	(void)ud;
	if (t)
		emit(t, ctx);
}

static void emit_for_tenant(struct ext *e, const char *tenant, void (*emit)(const char *, void *),
                            void *ctx)
{
	struct jdoc_list exts;

	if (tenant == NULL)
		return;
	exts = inf_by_index_ref(e->extensions, IDX_TENANT, tenant);
	for (size_t i = 0; i < exts.n; i++)
		emit(jd_name(exts.items[i]), ctx);
	jdoc_list_release(&exts);
}

static void emit_all(struct ext *e, void (*emit)(const char *, void *), void *ctx)
{
	struct jdoc_list exts = inf_list_ref(e->extensions, NULL);

	for (size_t i = 0; i < exts.n; i++)
		emit(jd_name(exts.items[i]), ctx);
	jdoc_list_release(&exts);
}

static void map_tenant(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                       void *ud)
{
	emit_for_tenant(ud, jd_name(obj), emit, ctx);
}

static void map_namespace(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                          void *ud)
{
	emit_for_tenant(ud, jd_label(obj, LABEL_TENANT), emit, ctx);
}

/* An account or binding: its tenant's Extensions, and those of its namespace's tenant (an
 * account someone else made there, or deleted, changes that namespace's destination). */
static void map_account(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                        void *ud)
{
	struct ext *e = ud;
	const struct jdoc *ns = inf_get_ref(e->namespaces, NULL, jd_namespace(obj));
	const char *mine = jd_label(obj, LABEL_ARGOCD),
	           *owner = ns ? jd_label(ns, LABEL_TENANT) : NULL;

	emit_for_tenant(e, mine, emit, ctx);
	if (owner && (mine == NULL || strcmp(owner, mine) != 0))
		emit_for_tenant(e, owner, emit, ctx);
	jdoc_unref(ns);
}

/* An Extension: every Extension of its tenant (a duplicate takes over when the first goes). */
static void map_extension(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                          void *ud)
{
	emit_for_tenant(ud, jd_str(obj, "spec", "tenant", NULL), emit, ctx);
}

static void map_crd(const struct jdoc *crd, void (*emit)(const char *, void *), void *ctx, void *ud)
{
	struct ext *e = ud;

	if (jd_name(crd) && strcmp(jd_name(crd), APPPROJECT_CRD) == 0) {
		disc_invalidate(e->disc); /* served soon, if not yet: look it up afresh */
		emit_all(e, emit, ctx);
	}
}

static void enqueue_key(const char *key, void *ctx)
{
	ctrl_enqueue(ctx, key);
}

/* Live informers' handlers: AppProjects by name, argocd-cm and argocd-rbac-cm for everyone. */
static void project_add(const struct jdoc *obj, void *ud)
{
	struct ext *e = ud;

	emit_for_tenant(e, jd_name(obj), enqueue_key, e->ctl);
}

static void project_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	project_add(new_obj, ud);
	(void)old_obj;
}

static void cm_add(const struct jdoc *obj, void *ud)
{
	struct ext *e = ud;

	(void)obj;
	emit_all(e, enqueue_key, e->ctl);
}

static void cm_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	(void)old_obj;
	cm_add(new_obj, ud);
}

static void on_config_change(void *ud)
{
	struct ext *e = ud;

	if (e->ctl && e->extensions)
		emit_all(e, enqueue_key, e->ctl);
}

static int add_index(struct inf *inf, const char *name, inf_index_fn fn, void *ud)
{
	int rc = inf_add_index(inf, name, fn, ud);

	return rc == -EEXIST ? 0 : rc; /* another controller shares the informer */
}

static struct inf *named_informer(struct mgr *m, const struct kc_gvr gvr)
{
	return mgr_informer(m, &(struct inf_opts){.gvr = gvr,
	                                          .field_selector = "metadata.name=" ARGOCD_ACCOUNT,
	                                          .metadata_only = gvr.resource[0] == 's'});
}

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct ext *e = ud;
	int rc = 0;

	e->ctl = c;
	e->extensions = mgr_informer(m, &(struct inf_opts){.gvr = LL_EXTENSIONS});
	e->tenants = mgr_informer(m, &(struct inf_opts){.gvr = LL_TENANTS});
	e->namespaces =
	        mgr_informer(m, &(struct inf_opts){.gvr = KC_NAMESPACES, .metadata_only = true});
	e->crds = mgr_informer(m, &(struct inf_opts){.gvr = KC_CRDS, .metadata_only = true});
	e->accounts = named_informer(m, KC_SERVICEACCOUNTS);
	e->bindings = named_informer(m, KC_ROLEBINDINGS);
	if (!e->extensions || !e->tenants || !e->namespaces || !e->crds || !e->accounts ||
	    !e->bindings)
		return -ENOMEM;
	e->disc = disc_new(mgr_client(m));
	rc = add_index(e->extensions, IDX_TENANT, index_tenant, NULL);
	if (rc == 0)
		rc = add_index(e->namespaces, IDX_TENANT, inf_index_label, (void *)LABEL_TENANT);
	if (rc == 0)
		rc = add_index(e->accounts, LABEL_ARGOCD, inf_index_label, (void *)LABEL_ARGOCD);
	if (rc == 0)
		rc = add_index(e->bindings, LABEL_ARGOCD, inf_index_label, (void *)LABEL_ARGOCD);
	if (rc < 0)
		return rc;
	ctrl_watch_primary(c, e->extensions);
	ctrl_watch_mapped_spec(c, e->extensions, map_extension, e);
	ctrl_watch_mapped(c, e->tenants, map_tenant, e);
	ctrl_watch_mapped(c, e->namespaces, map_namespace, e);
	ctrl_watch_mapped(c, e->crds, map_crd, e);
	ctrl_watch_mapped(c, e->accounts, map_account, e);
	ctrl_watch_mapped(c, e->bindings, map_account, e);
	return lcfg_subscribe(on_config_change, e);
}

/* ---------- live informers ---------- */

static bool crd_installed(struct ext *e)
{
	const struct jdoc *crd = inf_get_ref(e->crds, NULL, APPPROJECT_CRD);

	jdoc_unref(crd);
	return crd != NULL;
}

/* The synced AppProject informer, or NULL: not served (yet), or not read yet (r->retry). */
static struct inf *projects(struct ext_rec *r)
{
	struct ext *e = r->e;
	struct inf_opts opts = {.gvr = ARGOCD_APPPROJECTS};
	struct kc_gvr gvr;
	struct inf *inf;
	bool created = false;

	pthread_mutex_lock(&e->lock);
	inf = e->projects;
	pthread_mutex_unlock(&e->lock);
	if (inf == NULL && crd_installed(e) &&
	    disc_lookup_kind(e->disc, "argoproj.io/v1alpha1", "AppProject", &gvr, NULL) == 0) {
		/* shared with the ResourceSupervisor controller's (same options): each adds its
		 * own handler once, whoever made the informer */
		struct inf *made = mgr_informer_live(ctrl_mgr(e->ctl), &opts, &created);
		bool first;

		pthread_mutex_lock(&e->lock);
		first = e->projects == NULL && made != NULL;
		if (first)
			e->projects = made;
		inf = e->projects;
		pthread_mutex_unlock(&e->lock);
		if (first)
			inf_add_handler(made, &(struct inf_handler){project_add, project_update,
			                                            project_add, e});
		if (created)
			log_info("argocd: watching AppProjects", "{s:s}", "crd", APPPROJECT_CRD);
	}
	if (inf && inf_has_synced(inf))
		return inf;
	if (crd_installed(e))
		r->soon = true; /* installed, not served or not read yet: no back-off growing */
	return NULL;
}

/* The synced informer of ConfigMap @name in the Argo CD namespace, or NULL (r->retry set). */
static struct inf *argo_cm(struct ext_rec *r, const char *name)
{
	char selector[96];
	bool created = false;
	struct inf *inf;

	snprintf(selector, sizeof(selector), "metadata.name=%s", name);
	inf = mgr_informer_live(ctrl_mgr(r->e->ctl),
	                        &(struct inf_opts){.gvr = KC_CONFIGMAPS,
	                                           .ns = r->argo_ns,
	                                           .field_selector = selector},
	                        &created);
	if (inf && created)
		inf_add_handler(inf, &(struct inf_handler){cm_add, cm_update, cm_add, r->e});
	if (inf && inf_has_synced(inf))
		return inf;
	r->soon = true;
	return NULL;
}

/* ---------- writes ---------- */

bool ext_write_ok(struct ext_rec *r, int rc, const struct kc_resp *resp, const char *what,
                  const char *ns, const char *name, bool gone_ok)
{
	if (rc == 0 && (kc_resp_ok(resp) || (gone_ok && resp->http_status == 404)))
		return true;
	r->retry = true;
	if (rc == 0 && resp->http_status == 409)
		return false; /* the cache was behind: look again */
	log_warn("argocd: a write failed", "{s:s,s:s,s:s?,s:s,s:i,s:s}", "extension", r->name,
	         "what", what, "namespace", ns, "name", name, "code", (int)resp->http_status,
	         "error", rc == 0 ? resp->status.message : strerror(-rc));
	return false;
}

bool ext_delete(struct ext_rec *r, const struct kc_gvr *gvr, const struct jdoc *doc)
{
	struct kc_delete_opts o = {.precondition_uid = jd_uid(doc), .grace_seconds = -1};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = kc_delete(r->kc, gvr, jd_namespace(doc), jd_name(doc), &o, &resp, &err);
	bool ok = ext_write_ok(r, rc, &resp, "delete", jd_namespace(doc), jd_name(doc), true);

	if (ok)
		log_info("argocd: deleted", "{s:s,s:s,s:s?,s:s}", "extension", r->name, "kind",
		         gvr->kind, "namespace", jd_namespace(doc), "name", jd_name(doc));
	kc_resp_release(&resp);
	return ok;
}

static bool set_finalizer(struct ext_rec *r, bool present)
{
	json_t *body = kc_finalizer_patch(jdoc_root(r->obj), LANDLORD_FINALIZER, present);
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	bool ok = true;

	if (body) {
		int rc = kc_patch(r->kc, &LL_EXTENSIONS, NULL, r->name, NULL, KC_PATCH_JSON, body,
		                  LANDLORD_FIELD_MANAGER, &resp, &err);

		ok = ext_write_ok(r, rc, &resp, "finalizer", NULL, r->name, !present);
	}
	kc_resp_release(&resp);
	json_decref(body);
	return ok;
}

/* The tenant's rbac key: @csv ("" or NULL: no key), under the tenant's own field manager. */
static void sync_rbac_key(struct ext_rec *r, struct inf *rbac, const char *csv)
{
	char key[128], manager[128];
	const struct jdoc *cm = inf_get_ref(rbac, r->argo_ns, ARGOCD_RBAC_CM);
	const char *have;
	json_t *body;
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	bool want = csv && *csv;
	int rc;

	snprintf(key, sizeof(key), ARGOCD_RBAC_KEY_FMT, r->tenant);
	snprintf(manager, sizeof(manager), ARGOCD_MANAGER_FMT, r->tenant);
	have = cm ? jd_str(cm, "data", key, NULL) : NULL;
	if ((want && have && strcmp(have, csv) == 0) || (!want && have == NULL)) {
		jdoc_unref(cm);
		return;
	}
	body = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
	                 "metadata", "name", ARGOCD_RBAC_CM, "namespace", r->argo_ns);
	if (want)
		json_object_set_new(body, "data", json_pack("{s:s}", key, csv));
	rc = kc_apply(r->kc, &KC_CONFIGMAPS, r->argo_ns, ARGOCD_RBAC_CM, NULL, body, manager, true,
	              &resp, &err);
	if (ext_write_ok(r, rc, &resp, "apply argocd-rbac-cm", r->argo_ns, ARGOCD_RBAC_CM, false))
		log_info("argocd: rbac key written", "{s:s,s:s,s:b}", "extension", r->name, "key",
		         key, "present", want);
	kc_resp_release(&resp);
	json_decref(body);
	jdoc_unref(cm);
}

static bool apply_project(struct ext_rec *r, const json_t *project)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = kc_apply(r->kc, &ARGOCD_APPPROJECTS, r->argo_ns, r->tenant, NULL, project,
	                  LANDLORD_FIELD_MANAGER, true, &resp, &err);
	bool ok = ext_write_ok(r, rc, &resp, "apply AppProject", r->argo_ns, r->tenant, false);

	if (ok)
		log_info("argocd: AppProject applied", "{s:s,s:s,s:s}", "extension", r->name,
		         "namespace", r->argo_ns, "name", r->tenant);
	kc_resp_release(&resp);
	return ok;
}

/* ---------- reconcile ---------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The tenant's namespaces (not being deleted), sorted, into @out (borrowed from @list). */
static size_t tenant_namespaces(struct ext_rec *r, struct jdoc_list *list, const char **out)
{
	size_t n = 0;

	*list = inf_by_index_ref(r->e->namespaces, IDX_TENANT, r->tenant);
	for (size_t i = 0; i < list->n && n < NS_MAX; i++)
		if (jd_str(list->items[i], "metadata", "deletionTimestamp", NULL) == NULL &&
		    jd_name(list->items[i]))
			out[n++] = jd_name(list->items[i]);
	qsort(out, n, sizeof(*out), cmp_str);
	return n;
}

static bool impersonation_enabled(struct ext_rec *r, struct inf *cm_inf)
{
	const struct jdoc *cm = inf_get_ref(cm_inf, r->argo_ns, ARGOCD_CM);
	const char *v = cm ? jd_str(cm, "data", ARGOCD_IMPERSONATION, NULL) : NULL;
	bool on = v && strcmp(v, "true") == 0;

	jdoc_unref(cm);
	return on;
}

/* The AppProject and rbac key, once the kind is served and the tenant's namespaces known. */
static void sync_project(struct ext_rec *r, const struct jdoc *tenant, const char **nss, size_t n,
                         struct outcome *o)
{
	struct inf *cm_inf = argo_cm(r, ARGOCD_CM), *rbac = argo_cm(r, ARGOCD_RBAC_CM);
	struct inf *proj_inf = projects(r);
	bool on = cm_inf && impersonation_enabled(r, cm_inf);
	struct ext_in in = {.tenant = r->tenant,
	                    .argo_ns = r->argo_ns,
	                    .argocd = jd_get(r->obj, "spec", "argoCD", NULL),
	                    .tenant_spec = jd_get(tenant, "spec", NULL),
	                    .cfg = lcfg_argocd(r->cfg),
	                    .namespaces = nss,
	                    .n_namespaces = on ? n : 0};
	struct ext_want want = {0};
	const struct jdoc *have = NULL;

	if (proj_inf == NULL) {
		outcome_set(o, "ArgoCDUnavailable",
		            "the AppProject kind (%s) is not served: Argo CD is not installed; "
		            "landlord makes the AppProject once it is",
		            APPPROJECT_CRD);
		return;
	}
	have = inf_get_ref(proj_inf, r->argo_ns, r->tenant);
	if (have && !ext_project_ours(jdoc_root(have), r->tenant)) {
		outcome_set(o, "AppProjectConflict",
		            "AppProject %s/%s exists and is not landlord's (labels %s=%s, %s=%s): "
		            "left alone; delete it to let landlord make the tenant's",
		            r->argo_ns, r->tenant, LABEL_MANAGED_BY, MANAGED_BY_VALUE, LABEL_TENANT,
		            r->tenant);
	} else if (cm_inf && rbac && ext_want_build(&in, &want) == 0) {
		if (have == NULL || ext_project_differs(jdoc_root(have), want.project))
			apply_project(r, want.project);
		sync_rbac_key(r, rbac, want.csv);
		snprintf(o->project, sizeof(o->project), "%s/%s", r->argo_ns, r->tenant);
		o->destinations = in.n_namespaces;
		o->refused = json_incref(want.refused);
		if (on)
			outcome_set(o, "Synced", "AppProject %s: %zu destinations", o->project,
			            in.n_namespaces);
		else
			outcome_set(
			        o, "ImpersonationDisabled",
			        "%s/%s does not set %s: \"true\": Argo CD would sync as its own "
			        "controller, so the AppProject has no destinations",
			        r->argo_ns, ARGOCD_CM, ARGOCD_IMPERSONATION);
	}
	ext_want_release(&want);
	jdoc_unref(have);
}

/* Is @a's claim on the tenant older than @b's (creation time, then name)? */
static bool claims_first(const struct jdoc *a, const struct jdoc *b)
{
	const char *ta = jd_str(a, "metadata", "creationTimestamp", NULL);
	const char *tb = jd_str(b, "metadata", "creationTimestamp", NULL);
	int c = strcmp(ta ? ta : "", tb ? tb : "");

	return c < 0 || (c == 0 && strcmp(jd_name(a), jd_name(b)) < 0);
}

/*
 * Another Extension of the same tenant that is not being deleted and (when @older) claimed the
 * tenant first: its name into @out. The tenant's AppProject, key and accounts are that one's.
 */
static bool other_claim(struct ext_rec *r, bool older, char *out, size_t len)
{
	struct jdoc_list exts = inf_by_index_ref(r->e->extensions, IDX_TENANT, r->tenant);
	bool found = false;

	for (size_t i = 0; i < exts.n && !found; i++) {
		const struct jdoc *x = exts.items[i];

		found = jd_name(x) && strcmp(jd_name(x), r->name) != 0 &&
		        jd_str(x, "metadata", "deletionTimestamp", NULL) == NULL &&
		        (!older || claims_first(x, r->obj));
		if (found)
			snprintf(out, len, "%s", jd_name(x));
	}
	jdoc_list_release(&exts);
	return found;
}

static void sync(struct ext_rec *r, struct outcome *o)
{
	char other[254];

	const struct jdoc *tenant = NULL;
	struct jdoc_list list = {0};
	const char **nss = NULL;
	size_t n;

	if (r->argo_ns == NULL) {
		ext_accounts_remove(r);
		outcome_set(o, "ArgoCDNotConfigured",
		            "the LandlordConfig sets no spec.integrations.argocd.namespace");
		return;
	}
	if (r->tenant && other_claim(r, true, other, sizeof(other))) {
		outcome_set(
		        o, "DuplicateExtension",
		        "Extension %s is the tenant's: landlord follows the oldest Extension of a "
		        "tenant and writes nothing for this one",
		        other);
		return;
	}
	tenant = r->tenant ? inf_get_ref(r->e->tenants, NULL, r->tenant) : NULL;
	if (tenant == NULL) {
		ext_accounts_remove(r);
		outcome_set(o, "TenantNotFound", "Tenant %s does not exist",
		            r->tenant ? r->tenant : "");
		return;
	}
	nss = xcalloc(NS_MAX, sizeof(*nss));
	n = tenant_namespaces(r, &list, nss);
	n = ext_accounts_sync(r, nss, n);
	sync_project(r, tenant, nss, n, o);
	free(nss);
	jdoc_list_release(&list);
	jdoc_unref(tenant);
}

/* Deletion: the accounts always; the AppProject and rbac key with onDeletePurgeAppProject. */
static bool finish_deletion(struct ext_rec *r)
{
	bool purge = jd_bool(r->obj, false, "spec", "argoCD", "onDeletePurgeAppProject", NULL);
	struct inf *proj_inf, *rbac;
	const struct jdoc *have;
	char other[254];
	bool ok;

	if (r->tenant && other_claim(r, false, other, sizeof(other)))
		return true; /* the tenant's objects are the other Extension's now */
	ok = ext_accounts_remove(r);

	if (!purge || r->argo_ns == NULL || r->tenant == NULL)
		return ok && !r->retry && !r->soon;
	proj_inf = projects(r);
	have = proj_inf ? inf_get_ref(proj_inf, r->argo_ns, r->tenant) : NULL;
	if (have && ext_project_ours(jdoc_root(have), r->tenant))
		ok &= ext_delete(r, &ARGOCD_APPPROJECTS, have);
	jdoc_unref(have);
	rbac = argo_cm(r, ARGOCD_RBAC_CM);
	if (rbac)
		sync_rbac_key(r, rbac, NULL);
	return ok && !r->retry && !r->soon;
}

static void run(struct ext_rec *r)
{
	struct outcome o = {.reason = "Synced"};

	if (jd_str(r->obj, "metadata", "deletionTimestamp", NULL)) {
		if (finish_deletion(r))
			set_finalizer(r, false);
		return;
	}
	if (!set_finalizer(r, true))
		return;
	sync(r, &o);
	if (strcmp(o.reason, "Synced") == 0 && o.project[0] == '\0')
		o.reason = "Pending"; /* not read or written yet: r->retry looks again */
	ext_write_status(r, &o);
	json_decref(o.refused);
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct ext *e = ud;
	struct ext_rec r = {.e = e, .kc = mgr_client(ctrl_mgr(c)), .name = key};
	const json_t *argocd;

	r.obj = inf_get_ref(e->extensions, NULL, key);
	if (r.obj == NULL)
		return CTRL_RESULT_DONE;
	r.cfg = lcfg_current();
	argocd = lcfg_argocd(r.cfg);
	r.argo_ns = argocd ? jx_str(argocd, "namespace", NULL) : NULL;
	if (r.argo_ns && *r.argo_ns == '\0')
		r.argo_ns = NULL;
	r.tenant = jd_str(r.obj, "spec", "tenant", NULL);
	run(&r);
	lcfg_unref(r.cfg);
	jdoc_unref(r.obj);
	if (r.retry)
		return CTRL_RESULT_RETRY;
	return r.soon ? CTRL_RESULT_AFTER(SOON_MS) : CTRL_RESULT_DONE;
}

/* ---------- the controller ---------- */

struct ext *ext_new(void)
{
	struct ext *e = xcalloc(1, sizeof(*e));

	pthread_mutex_init(&e->lock, NULL);
	return e;
}

void ext_free(struct ext *e)
{
	if (e == NULL)
		return;
	disc_free(e->disc);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

struct controller_def ext_controller_def(struct ext *e)
{
	return (struct controller_def){.name = CONTROLLER_NAME,
	                               .workers = 2,
	                               .setup = setup,
	                               .reconcile = reconcile,
	                               .ud = e};
}
