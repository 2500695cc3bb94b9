/*
 * tgi.c - the TemplateGroupInstance controller: the instance's Template rendered into every
 * namespace its selector matches and applied as landlord itself (templates.h), kept in sync,
 * pruned, cleaned from namespaces that leave the selector, and cleaned everywhere by a
 * finalizer.
 *
 * Never written: default, landlord-system, kube-*, LandlordConfig's privileged namespaces and
 * terminating ones (the selector may match them; they are not counted as matched). A namespace
 * labelled landlord.dev/tenant is written only once its ResourceQuota landlord-quota is in
 * force (status.hard holds every resource of spec.hard at a value no higher): landlord's own
 * writes pass the landlord-quota-in-force policy, so the controller checks it itself.
 *
 * One reconcile: finalizer; Template from the cache; for each selected namespace: render
 * (RENDER_GROUP; a cluster-scoped kind or another namespace refused), order, the kinds recorded
 * in status before anything of a new kind is written, dry run and apply, prune; then the
 * namespaces that hold the instance's objects but are no longer selected are cleaned; status.
 * What a namespace was last applied from is remembered (a fingerprint): a reconcile that
 * changes nothing only lists and compares. sync: false applies once per namespace (the
 * namespace's row in status says it was).
 *
 * Drift: the watches on the rendered kinds note each drifted object and enqueue its namespace
 * alone ("<tgi>/<namespace>"); with an unchanged render only the noted objects are applied
 * again (tpl_repair(): no dry run, no prune), and the whole instance looks again only when
 * that namespace's row in status changes.
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
#include "kube/quantity.h"
#include "kube/selector.h"
#include "templates/tgi_internal.h"
#include "tenancy/render.h"
#include "tenancy/tplorder.h"
#include "tenancy/tplstatus.h"

#define IDX_TEMPLATE      "template"
#define NOT_READY_RETRY   30000
#define CHARTS_GONE_RETRY 5000 /* besides the release controller's word when one is gone */

/* landlord's quotas in tenant namespaces: the Tenant controller's informer (tenant.c, OWN_RQ);
 * the same options share it. */
static const char *const KEEP_RQ[] = {"metadata.labels", "metadata.uid", "spec",
                                      "status.hard",     "status.used",  NULL};

/* ---------- informers and events ---------- */

static void index_template(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                           void *ud)
{
	const char *name = jd_str(obj, "spec", "template", NULL);

	(void)ud;
	if (name)
		emit(name, ctx);
}

static void emit_names(struct jdoc_list l, void (*emit)(const char *, void *), void *ctx)
{
	for (size_t i = 0; i < l.n; i++)
		emit(jd_name(l.items[i]), ctx);
	jdoc_list_release(&l);
}

/* A Template changed: every group instance of it. */
static void map_template(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                         void *ud)
{
	struct templates *t = ud;

	emit_names(inf_by_index_ref(t->groups, IDX_TEMPLATE, jd_name(obj)), emit, ctx);
}

/* A namespace or a tenant quota changed: every group instance (a selector may match it). */
static void map_all(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx, void *ud)
{
	struct templates *t = ud;

	(void)obj;
	emit_names(inf_list_ref(t->groups, NULL), emit, ctx);
}

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct templates *t = ud;
	int rc;

	t->tgi = c;
	t->groups = mgr_informer(m, &(struct inf_opts){.gvr = LL_TEMPLATEGROUPINSTANCES});
	t->templates = mgr_informer(m, &(struct inf_opts){.gvr = LL_TEMPLATES});
	t->namespaces =
	        mgr_informer(m, &(struct inf_opts){.gvr = KC_NAMESPACES, .metadata_only = true});
	t->quotas = mgr_informer(m, &(struct inf_opts){.gvr = KC_RESOURCEQUOTAS,
	                                               .label_selector = LABEL_MANAGED_BY
	                                               "=" MANAGED_BY_VALUE "," LABEL_TENANT,
	                                               .keep = KEEP_RQ});
	if (!t->groups || !t->templates || !t->namespaces || !t->quotas)
		return -ENOMEM;
	if (tpl_rollup_setup_group(t, c, m) != 0)
		return -ENOMEM;
	rc = inf_add_index(t->groups, IDX_TEMPLATE, index_template, NULL);
	if (rc < 0 && rc != -EEXIST)
		return rc;
	ctrl_watch_primary(c, t->groups);
	ctrl_watch_mapped(c, t->templates, map_template, t);
	ctrl_watch_mapped(c, t->namespaces, map_all, t);
	ctrl_watch_mapped(c, t->quotas, map_all, t);
	return 0;
}

/* ---------- which namespaces ---------- */

/* Never written by a TemplateGroupInstance, whatever its selector says. */
static bool forbidden_namespace(const struct tgi_rec *r, const char *ns)
{
	return strcmp(ns, "default") == 0 || strcmp(ns, LANDLORD_SYSTEM_NAMESPACE) == 0 ||
	       strncmp(ns, "kube-", 5) == 0 || lcfg_is_privileged_namespace(r->cfg, ns);
}

static bool selects(const struct tgi_rec *r, const struct jdoc *ns)
{
	json_t *labels;
	bool ok;

	if (r->selector == NULL || forbidden_namespace(r, jd_name(ns)) ||
	    jd_str(ns, "metadata", "deletionTimestamp", NULL) != NULL)
		return false;
	labels = jval_to_json(jd_get(ns, "metadata", "labels", NULL));
	ok = sel_matches(r->selector, labels ? labels : json_object());
	json_decref(labels);
	return ok;
}

/* Is every resource of @rq's spec.hard in its status.hard, at a value no higher? */
static bool quota_in_force(const struct jdoc *rq)
{
	struct jval hard = jd_get(rq, "spec", "hard", NULL),
	            status = jd_get(rq, "status", "hard", NULL);

	for (size_t i = 0; i < jval_size(hard); i++) {
		const char *want = jval_str(jval_value_at(hard, i)),
		           *have = jval_str(jval_get(status, jval_key_at(hard, i)));
		struct qty w, h;

		if (want == NULL || have == NULL || qty_parse(want, &w) != 0 ||
		    qty_parse(have, &h) != 0 || qty_cmp(&h, &w) > 0)
			return false;
	}
	return true;
}

/* A tenant namespace whose quota is not in force yet: nothing may land there. */
static bool quota_pending(struct tgi_rec *r, const struct jdoc *ns)
{
	const struct jdoc *rq;
	bool pending;

	if (jd_label(ns, LABEL_TENANT) == NULL)
		return false;
	rq = inf_get_ref(r->t->quotas, jd_name(ns), QUOTA_NAME);
	pending = rq == NULL || !quota_in_force(rq);
	jdoc_unref(rq);
	return pending;
}

/* ---------- one namespace ---------- */

static enum render_scope scope_of(const void *ctx, const char *api_version, const char *kind)
{
	const struct templates *t = ctx;
	struct kc_gvr gvr;

	if (disc_lookup_kind(t->disc, api_version, kind, &gvr, NULL) != 0)
		return RENDER_SCOPE_UNKNOWN;
	return gvr.namespaced ? RENDER_SCOPE_NAMESPACED : RENDER_SCOPE_CLUSTER;
}

/* A TGI stamps namespaces: every object namespaced, in @ns. -EACCES names the first that is
 * not. */
static int confine(struct tgi_rec *r, const char *ns, const json_t *objects, char *object,
                   char *message)
{
	const json_t *o;
	size_t i;

	json_array_foreach(objects, i, o) {
		const char *in = jx_namespace(o);

		snprintf(object, TPL_FAIL_OBJECT_MAX, "%s/%s", jx_str(o, "kind", NULL) ?: "",
		         jx_name(o) ?: "");
		if (scope_of(r->t, jx_str(o, "apiVersion", NULL), jx_str(o, "kind", NULL)) !=
		    RENDER_SCOPE_NAMESPACED) {
			snprintf(message, TPL_FAIL_MESSAGE_MAX,
			         "a TemplateGroupInstance renders only namespaced objects");
			return -EACCES;
		}
		if (in == NULL || strcmp(in, ns) != 0) {
			snprintf(message, TPL_FAIL_MESSAGE_MAX,
			         "metadata.namespace %s: a TemplateGroupInstance writes only into "
			         "the "
			         "namespace it renders for (%s)",
			         in ? in : "(none)", ns);
			return -EACCES;
		}
	}
	return 0;
}

/* @ns's render and its order; a failure is counted in status. */
static int render_for(struct tgi_rec *r, const struct jdoc *ns, json_t **objects, size_t **order)
{
	struct render_in in = {.tmpl = jdoc_root(r->tmpl),
	                       .params = jval_path(r->tgi, "spec", "parameters", NULL),
	                       .ns = jd_name(ns),
	                       .tenant = jd_label(ns, LABEL_TENANT),
	                       .mode = RENDER_GROUP,
	                       .scope = scope_of,
	                       .scope_ctx = r->t};
	char object[TPL_FAIL_OBJECT_MAX] = "", message[TPL_FAIL_MESSAGE_MAX];
	struct ll_err err = {{0}};
	int rc = render_objects(&in, objects, &err);

	if (rc == 0)
		rc = tpl_order(*objects, order, &err);
	snprintf(message, sizeof(message), "%s", err.msg);
	if (rc == 0)
		rc = confine(r, jd_name(ns), *objects, object, message);
	if (rc != 0)
		tgi_fail(r, jd_name(ns),
		         rc == -ENOENT   ? "KindNotServed"
		         : rc == -EACCES ? "Forbidden"
		                         : "ParameterInvalid",
		         object, message);
	return rc;
}

static bool has_string(const json_t *arr, const char *s)
{
	const json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

/* The kinds rendered now and before, recorded in status before any new one is written. */
static int record_kinds(struct tgi_rec *r, const json_t *objects)
{
	char key[TPL_FAIL_OBJECT_MAX];
	size_t i, before = json_array_size(r->kinds);
	const json_t *o;

	json_array_foreach(objects, i, o) {
		tpl_kind_key(o, key);
		if (!has_string(r->kinds, key))
			json_array_append_new(r->kinds, json_string(key));
		if (tpl_watch_kind(r->t, o, LABEL_TGI) != 0)
			log_warn("cannot watch a rendered kind", "{s:s}", "kind", key);
	}
	return json_array_size(r->kinds) != before ? tgi_write_status_kinds(r) : 0;
}

/* What @ns's objects are applied from: a change of any of it applies again. */
static void fingerprint(const struct tgi_rec *r, const struct jdoc *ns, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%lld/%s/%s", jval_str(jval_path(r->tgi, "metadata", "uid", NULL)),
	         jval_int(jval_path(r->tgi, "metadata", "generation", NULL), 0),
	         jd_resource_version(r->tmpl), jd_resource_version(ns));
}

/* "apiVersion/Kind/name" of rendered object @o, into @out. */
static void object_key(const json_t *o, char *out, size_t cap)
{
	char kind[TPL_FAIL_OBJECT_MAX];

	tpl_kind_key(o, kind);
	snprintf(out, cap, "%s/%s", kind, jx_name(o) ?: "");
}

/* Whether @objects holds "apiVersion/Kind/name" @object. */
static bool renders(const json_t *objects, const char *object)
{
	char key[TPL_FAIL_OBJECT_MAX + 256];
	const json_t *o;
	size_t i;

	json_array_foreach(objects, i, o) {
		object_key(o, key, sizeof(key));
		if (strcmp(key, object) == 0)
			return true;
	}
	return false;
}

/*
 * Whether @ns may hold an object of the instance that @objects does not, asked of the watches
 * on the kinds it applied (an object they show later is noted then, and pruned); true when a
 * kind has no synced watch to ask.
 */
static bool prune_needed(struct tgi_rec *r, const char *ns, const json_t *objects)
{
	char object[TPL_FAIL_OBJECT_MAX + 256];
	bool needed = false;
	const json_t *k;
	size_t i;

	json_array_foreach(r->kinds, i, k) {
		struct inf *inf = tpl_kind_informer(r->t, json_string_value(k), LABEL_TGI);
		struct jdoc_list docs;

		if (inf == NULL)
			return true;
		docs = inf_by_index_ref(inf, TPL_IDX_NAMESPACE, ns);
		for (size_t d = 0; d < docs.n && !needed; d++) {
			const char *owner = jd_label(docs.items[d], LABEL_TGI);

			snprintf(object, sizeof(object), "%s/%s", json_string_value(k),
			         jd_name(docs.items[d]));
			needed = owner && strcmp(owner, r->name) == 0 && !renders(objects, object);
		}
		jdoc_list_release(&docs);
		if (needed)
			return true;
	}
	return false;
}

/* Render, apply and prune in @ns; its row and failure go into status. */
static void apply_ns(struct tgi_rec *r, const struct jdoc *ns, const char *fp_key, const char *fp)
{
	char before[512];
	json_t *objects = NULL;
	size_t *order = NULL, applied = 0, pruned = 0, n;
	struct tpl_target target;
	struct tpl_failure fail;
	int rc;

	tpl_fingerprint_get(r->t, fp_key, before, sizeof(before));
	rc = render_for(r, ns, &objects, &order);
	n = objects ? json_array_size(objects) : 0;
	if (rc == 0 && record_kinds(r, objects) != 0) {
		rc = -EAGAIN;
		r->retry = true;
	} else if (rc == 0) {
		tgi_target(r, jd_name(ns), &target);
		rc = tpl_apply(&target, objects, order, n, &applied, &fail);
		if (rc == 0 && prune_needed(r, jd_name(ns), objects))
			rc = tpl_prune(&target, r->kinds, objects, &pruned, &fail);
		if (rc != 0)
			tgi_fail(r, jd_name(ns), fail.reason, fail.object, fail.message);
		r->retry |= rc == -EIO;
	}
	if (rc == 0)
		tpl_fingerprint_swap(r->t, fp_key, before, fp);
	tgi_row(r, jd_name(ns), rc == 0, applied, n);
	json_decref(objects);
	free(order);
}

/* The number of objects @ns renders, for the row of a namespace applied before. */
static size_t rendered_before(struct tgi_rec *r, const struct jdoc *ns)
{
	json_t *count = json_object_get(r->ready_before, jd_name(ns)), *objects = NULL;
	size_t *order = NULL, n;

	if (json_is_integer(count))
		return (size_t)json_integer_value(count);
	n = render_for(r, ns, &objects, &order) == 0 ? json_array_size(objects) : 0;
	json_decref(objects);
	free(order);
	return n;
}

/*
 * The indexes of @order whose objects drifted by @notes, into @out (*@m of them). False when a
 * note names what the render does not hold: a drifted or new labelled object that someone else
 * made, or TPL_DRIFT_ALL. A note of a new object the render holds needs nothing.
 */
static bool drifted_subset(const json_t *objects, const size_t *order, size_t n,
                           const json_t *notes, size_t *out, size_t *m)
{
	char object[TPL_FAIL_OBJECT_MAX + 256];
	size_t known = 0;

	*m = 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *o = json_array_get(objects, order[i]);

		object_key(o, object + 1, sizeof(object) - 1);
		object[0] = TPL_NOTE_ADDED[0];
		known += json_object_get(notes, object) != NULL;
		if (json_object_get(notes, object + 1)) {
			out[*m] = order[i];
			(*m)++;
		}
	}
	return known + *m == json_object_size(notes);
}

/*
 * The render of @ns is unchanged since it was applied whole from @fp, but @drifted (its notes)
 * drifted: only those are applied again. A note of anything the render does not hold makes
 * the whole render go again (and prune).
 */
static void repair_ns(struct tgi_rec *r, const struct jdoc *ns, const char *fp_key, const char *fp,
                      json_t *drifted)
{
	json_t *objects = NULL;
	size_t *order = NULL, *subset = NULL, n = 0, m = 0, applied = 0;
	struct tpl_target target;
	struct tpl_failure fail;
	int rc = render_for(r, ns, &objects, &order);

	if (rc == 0) {
		n = json_array_size(objects);
		subset = xcalloc(n ? n : 1, sizeof(*subset));
		if (drifted_subset(objects, order, n, drifted, subset, &m)) {
			tgi_target(r, jd_name(ns), &target);
			rc = tpl_repair(&target, objects, subset, m, &applied, &fail);
			if (rc != 0)
				tgi_fail(r, jd_name(ns), fail.reason, fail.object, fail.message);
			r->retry |= rc == -EIO;
			tgi_row(r, jd_name(ns), rc == 0, n - (m - applied), n);
		} else {
			rc = -ESTALE;
		}
	} else {
		tgi_row(r, jd_name(ns), false, 0, 0);
	}
	if (rc != 0) /* what this reconcile could not repair, the next applies whole */
		tpl_forget(r->t, fp_key);
	if (rc == -ESTALE)
		apply_ns(r, ns, fp_key, fp);
	json_decref(objects);
	free(order);
	free(subset);
}

/* One selected namespace: wait for its quota, apply unless nothing changed, count its row. */
static void converge_ns(struct tgi_rec *r, const struct jdoc *ns)
{
	const char *name = jd_name(ns);
	char fp_key[600], fp[512];
	json_t *drifted;
	size_t n;

	json_object_set_new(r->selected, name, json_true());
	if (quota_pending(r, ns)) {
		r->quota = true;
		tpl_status_failing(r->status, name, "", "QuotaNotInForce",
		                   "its ResourceQuota landlord-quota is not in force yet");
		tgi_row(r, name, false, 0, 0);
		return;
	}
	tgi_fingerprint_key(r->name, name, fp_key, sizeof(fp_key));
	fingerprint(r, ns, fp, sizeof(fp));
	/* taken before anything is applied: what drifts later is noted and enqueued anew */
	drifted = tpl_drift_take(r->t, fp_key);
	if (tpl_fingerprint_is(r->t, fp_key, fp) && drifted && r->sync) {
		repair_ns(r, ns, fp_key, fp, drifted);
	} else if (tpl_fingerprint_is(r->t, fp_key, fp) ||
	           (!r->sync && json_object_get(r->ready_before, name))) {
		/* sync: applied from this very state, nothing drifted; sync: false: applied once */
		n = rendered_before(r, ns);
		tgi_row(r, name, true, n, n);
	} else {
		apply_ns(r, ns, fp_key, fp);
	}
	json_decref(drifted);
}

/* ---------- namespaces no longer selected ---------- */

struct leftover {
	const json_t *selected;
	json_t *found; /* namespace -> true: holds the instance's objects, not selected */
};

static int note_namespace(json_t *item, void *ud)
{
	struct leftover *l = ud;
	const char *ns = jx_namespace(item);

	if (ns && json_object_get(l->selected, ns) == NULL &&
	    !(strcmp(ns, "default") == 0 || strcmp(ns, LANDLORD_SYSTEM_NAMESPACE) == 0 ||
	      strncmp(ns, "kube-", 5) == 0))
		json_object_set_new(l->found, ns, json_true());
	return 0;
}

/* The namespaces of the instance's objects of one kind, from its watch. Return: false when
 * there is no synced watch to ask. */
static bool leftovers_cached(struct tgi_rec *r, const char *kind, struct leftover *l)
{
	struct inf *inf = tpl_kind_informer(r->t, kind, LABEL_TGI);
	struct jdoc_list docs;

	if (inf == NULL)
		return false;
	docs = inf_list_ref(inf, NULL);
	for (size_t i = 0; i < docs.n; i++) {
		const char *owner = jd_label(docs.items[i], LABEL_TGI),
		           *ns = jd_namespace(docs.items[i]);
		json_t *item;

		if (owner == NULL || ns == NULL || strcmp(owner, r->name) != 0)
			continue;
		item = json_pack("{s:{s:s}}", "metadata", "namespace", ns);
		note_namespace(item, l);
		json_decref(item);
	}
	jdoc_list_release(&docs);
	return true;
}

/* The namespaces (other than @selected's) holding objects labelled with the instance's name,
 * of the kinds it applied: from the watches on those kinds, else listed across the cluster.
 * Return: 0 or -EIO. */
static int leftover_namespaces(struct tgi_rec *r, const json_t *selected, json_t *found)
{
	char selector[400], api_version[TPL_FAIL_OBJECT_MAX];
	struct kc_list_opts lo = {.label_selector = selector, .accept = KC_ACCEPT_METADATA};
	struct leftover l = {selected, found};
	const json_t *k;
	size_t i;
	int rc = 0;

	snprintf(selector, sizeof(selector), "%s=%s", LABEL_TGI, r->name);
	json_array_foreach(r->kinds, i, k) {
		const char *key = json_string_value(k), *slash = key ? strrchr(key, '/') : NULL;
		struct kc_resp resp = {0};
		struct kc_gvr gvr;

		if (slash == NULL || (size_t)(slash - key) >= sizeof(api_version) ||
		    leftovers_cached(r, key, &l))
			continue;
		snprintf(api_version, sizeof(api_version), "%.*s", (int)(slash - key), key);
		if (disc_lookup_kind(r->t->disc, api_version, slash + 1, &gvr, NULL) != 0 ||
		    !gvr.namespaced)
			continue;
		if (kc_list(r->t->kc, &gvr, NULL, &lo, note_namespace, &l, NULL, &resp, NULL) !=
		            0 ||
		    !kc_resp_ok(&resp))
			rc = -EIO;
		kc_resp_release(&resp);
	}
	return rc;
}

/* Everything the instance applied in the namespaces not in @selected goes. Return: 0 or <0. */
static int clean_leftovers(struct tgi_rec *r, const json_t *selected)
{
	json_t *found = json_object(), *v;
	struct tpl_target target;
	struct tpl_failure fail;
	const char *ns;
	char key[600];
	size_t pruned;
	int rc = leftover_namespaces(r, selected, found);

	json_object_foreach(found, ns, v) {
		tgi_target(r, ns, &target);
		if (tpl_prune(&target, r->kinds, NULL, &pruned, &fail) != 0) {
			log_warn("template group instance cleanup failed", "{s:s,s:s,s:s,s:s}",
			         "instance", r->name, "namespace", ns, "object", fail.object,
			         "error", fail.message);
			rc = -EAGAIN;
		}
		tgi_fingerprint_key(r->name, ns, key, sizeof(key));
		tpl_forget(r->t, key);
	}
	json_decref(found);
	return rc;
}

/* ---------- reconcile ---------- */

static struct ctrl_result converge(struct tgi_rec *r)
{
	struct jdoc_list l;
	int rc;

	if (r->tmpl == NULL) {
		char msg[400];

		snprintf(msg, sizeof(msg), "Template \"%s\" does not exist", r->tmpl_name);
		tgi_fail(r, NULL, "SourceNotFound", "", msg);
		return tgi_finish(r, CTRL_RESULT_DONE);
	}
	if (r->selector == NULL) {
		tgi_fail(r, NULL, "SelectorInvalid", "", "spec.selector is not a valid selector");
		return tgi_finish(r, CTRL_RESULT_DONE);
	}
	l = inf_list_ref(r->t->namespaces, NULL);
	for (size_t i = 0; i < l.n; i++)
		if (selects(r, l.items[i]))
			converge_ns(r, l.items[i]);
	jdoc_list_release(&l);
	rc = clean_leftovers(r, r->selected);
	if (rc != 0)
		r->retry = true;
	tgi_charts_leftover(r, false); /* the release controller says when each is gone */
	if (r->retry)
		return tgi_finish(r, CTRL_RESULT_RETRY);
	return tgi_finish(r, r->failed ? CTRL_RESULT_AFTER(NOT_READY_RETRY) : CTRL_RESULT_DONE);
}

/* The instance is going: everything it applied goes first, then its finalizer. */
static struct ctrl_result teardown(struct tgi_rec *r)
{
	json_t *none = json_object();
	char prefix[300];
	int rc;

	if (!tgi_has_finalizer(r)) {
		json_decref(none);
		return CTRL_RESULT_DONE;
	}
	if (!tgi_charts_leftover(r, true)) { /* helm uninstall first, as tgi.<ns> */
		json_decref(none);
		return CTRL_RESULT_AFTER(CHARTS_GONE_RETRY);
	}
	rc = clean_leftovers(r, none);
	json_decref(none);
	if (rc != 0)
		return CTRL_RESULT_RETRY;
	snprintf(prefix, sizeof(prefix), "tgi/%s/", r->name);
	tpl_forget_prefix(r->t, prefix);
	snprintf(prefix, sizeof(prefix), "tgi:%s", r->name);
	tpl_drop(r->t, prefix);
	return tgi_set_finalizer(r, false) == 0 ? CTRL_RESULT_DONE : CTRL_RESULT_RETRY;
}

/*
 * Whether @ns was last applied from what it renders now. When not, a change is on its way to
 * the whole instance's reconcile (or under way there): a namespace alone would apply it twice.
 */
static bool applied_from_now(const struct tgi_rec *r, const struct jdoc *ns)
{
	char fp_key[600], fp[512];

	tgi_fingerprint_key(r->name, jd_name(ns), fp_key, sizeof(fp_key));
	fingerprint(r, ns, fp, sizeof(fp));
	return tpl_fingerprint_is(r->t, fp_key, fp);
}

/*
 * Key "<tgi>/<namespace>": objects drifted there. That namespace alone converges; the whole
 * instance is enqueued when its status may change (a failure, a row that is not what it was),
 * or when the namespace is not one to converge alone (not selected, instance not set up, its
 * render changed).
 */
static struct ctrl_result converge_one(struct tgi_rec *r, const char *ns_name)
{
	const struct jdoc *ns = inf_get_ref(r->t->namespaces, NULL, ns_name);
	json_t *before = json_object_get(r->ready_before, ns_name);
	bool alone =
	        r->tmpl && ns && tgi_has_finalizer(r) &&
	        jval_type(jval_path(r->tgi, "metadata", "deletionTimestamp", NULL)) == JT_NONE &&
	        selects(r, ns) && applied_from_now(r, ns);

	if (alone)
		converge_ns(r, ns);
	jdoc_unref(ns);
	if (!alone || r->failed || r->quota || r->not_ready > 0 || !json_is_integer(before) ||
	    (long long)r->row_rendered != json_integer_value(before))
		ctrl_enqueue(r->t->tgi, r->name);
	return r->retry ? CTRL_RESULT_RETRY : CTRL_RESULT_DONE;
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct templates *t = ud;
	const char *slash = strchr(key, '/');
	char name[256];
	struct tgi_rec r;
	struct ctrl_result res;

	(void)c;
	snprintf(name, sizeof(name), "%.*s", slash ? (int)(slash - key) : (int)strlen(key), key);
	if (tgi_rec_load(t, name, &r) != 0)
		return CTRL_RESULT_DONE;
	if (slash)
		res = converge_one(&r, slash + 1);
	else if (jval_type(jval_path(r.tgi, "metadata", "deletionTimestamp", NULL)) != JT_NONE)
		res = teardown(&r);
	else if (tgi_set_finalizer(&r, true) != 0)
		res = CTRL_RESULT_RETRY;
	else
		res = converge(&r);
	tgi_rec_release(&r);
	return res;
}

struct controller_def tgi_controller_def(struct templates *t)
{
	return (struct controller_def){.name = "templategroupinstance",
	                               .workers = 2,
	                               .setup = setup,
	                               .reconcile = reconcile,
	                               .ud = t};
}
