/*
 * ti.c - the TemplateInstance controller: the instance's Template rendered for its namespace
 * and applied as the instance's writer (templates.h), kept in sync, pruned, and cleaned by a
 * finalizer.
 *
 * One reconcile: finalizer; Template, namespace and writer from the caches; instantiableIn
 * (privileged writers pass); render; order; the apply account; watches on the kinds; the kinds
 * recorded in status before anything of a new kind is written (so that a crash leaves nothing
 * a later prune cannot find); dry run and apply; prune; status. What an instance was last
 * applied from is remembered (a fingerprint): a reconcile that changes nothing and follows no
 * drift event only refreshes status. sync: false applies once, then only status.
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
#include "templates/ti_internal.h"
#include "tenancy/render.h"
#include "tenancy/tplorder.h"

#define IDX_TEMPLATE      "template"
#define RBAC_SETTLE_MS    1000 /* a new binding's rights reach the authorizer */
#define NOT_READY_RETRY   30000
#define CHARTS_GONE_RETRY 5000 /* besides the release controller's word when one is gone */
#define ACCOUNTS_WAIT_MS  500  /* the last instance going waits this long for the others */

/* ---------- informers and events ---------- */

static void index_template(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                           void *ud)
{
	const char *name = jd_str(obj, "spec", "template", NULL);

	(void)ud;
	if (name)
		emit(name, ctx);
}

static void emit_list(struct jdoc_list l, void (*emit)(const char *, void *), void *ctx)
{
	char key[512];

	for (size_t i = 0; i < l.n; i++) {
		snprintf(key, sizeof(key), "%s/%s", jd_namespace(l.items[i]), jd_name(l.items[i]));
		emit(key, ctx);
	}
	jdoc_list_release(&l);
}

/* A Template changed: every instance of it. */
static void map_template(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                         void *ud)
{
	struct templates *t = ud;

	emit_list(inf_by_index_ref(t->instances, IDX_TEMPLATE, jd_name(obj)), emit, ctx);
}

/* A namespace changed (labels: instantiableIn, roles): every instance in it. */
static void map_namespace(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                          void *ud)
{
	struct templates *t = ud;

	emit_list(inf_list_ref(t->instances, jd_name(obj)), emit, ctx);
}

/* An account or binding changed: the instances of its namespace. */
static void map_account(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                        void *ud)
{
	struct templates *t = ud;
	const char *ns = jd_namespace(obj);
	char owner_ns[256];

	if (ns && strcmp(ns, LANDLORD_SYSTEM_NAMESPACE) == 0 &&
	    sscanf(jd_name(obj), "ti.%255[^.]", owner_ns) == 1)
		ns = owner_ns;
	emit_list(inf_list_ref(t->instances, ns), emit, ctx);
}

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct templates *t = ud;

	t->ti = c;
	t->instances = mgr_informer(m, &(struct inf_opts){.gvr = LL_TEMPLATEINSTANCES});
	t->templates = mgr_informer(m, &(struct inf_opts){.gvr = LL_TEMPLATES});
	t->namespaces =
	        mgr_informer(m, &(struct inf_opts){.gvr = KC_NAMESPACES, .metadata_only = true});
	t->accounts = mgr_informer(m, &(struct inf_opts){.gvr = KC_SERVICEACCOUNTS,
	                                                 .ns = LANDLORD_SYSTEM_NAMESPACE,
	                                                 .label_selector = LABEL_TI_ACCOUNT,
	                                                 .metadata_only = true,
	                                                 .name = "ti-accounts"});
	t->bindings = mgr_informer(m, &(struct inf_opts){.gvr = KC_ROLEBINDINGS,
	                                                 .label_selector = LABEL_TI_ACCOUNT,
	                                                 .name = "ti-bindings"});
	if (!t->instances || !t->templates || !t->namespaces || !t->accounts || !t->bindings)
		return -ENOMEM;
	if (tpl_rollup_setup(t, c, m) != 0)
		return -ENOMEM;
	inf_add_index(t->instances, IDX_TEMPLATE, index_template, NULL);
	ctrl_watch_primary(c, t->instances);
	ctrl_watch_mapped(c, t->templates, map_template, t);
	ctrl_watch_mapped(c, t->namespaces, map_namespace, t);
	ctrl_watch_mapped(c, t->accounts, map_account, t);
	ctrl_watch_mapped(c, t->bindings, map_account, t);
	return 0;
}

/* ---------- finalizer ---------- */

/* Add or remove landlord's finalizer. */
static int set_finalizer(struct ti_rec *r, bool present)
{
	json_t *body = kc_finalizer_patch(r->ti, LANDLORD_FINALIZER, present);
	int rc = body ? ti_patch(r, NULL, KC_PATCH_JSON, body) : 0;

	json_decref(body);
	return rc;
}

/* ---------- the steps of a reconcile ---------- */

static enum render_scope scope_of(const void *ctx, const char *api_version, const char *kind)
{
	const struct templates *t = ctx;
	struct kc_gvr gvr;

	if (disc_lookup_kind(t->disc, api_version, kind, &gvr, NULL) != 0)
		return RENDER_SCOPE_UNKNOWN;
	return gvr.namespaced ? RENDER_SCOPE_NAMESPACED : RENDER_SCOPE_CLUSTER;
}

/* Does the Template let a tenant instantiate it in the instance's namespace? */
static bool instantiable(struct ti_rec *r)
{
	json_t *selector = jval_to_json(jd_get(r->tmpl, "spec", "instantiableIn", NULL)),
	       *labels = jval_to_json(jd_get(r->ns, "metadata", "labels", NULL));
	struct sel *s = NULL;
	bool ok = false;

	if (json_object_size(selector) > 0 && sel_from_json(selector, &s, NULL) == 0)
		ok = !sel_is_empty(s) && sel_matches(s, labels ? labels : json_object());
	sel_free(s);
	json_decref(selector);
	json_decref(labels);
	return ok;
}

/* What the instance is applied from (mapped sources' @versions too): a change applies again. */
static void fingerprint(const struct ti_rec *r, const char *versions, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%lld/%s/%s/%s%s",
	         jval_str(jval_path(r->ti, "metadata", "uid", NULL)),
	         jval_int(jval_path(r->ti, "metadata", "generation", NULL), 0), r->writer,
	         jd_resource_version(r->tmpl), jd_resource_version(r->ns), versions);
}

static int render(struct ti_rec *r)
{
	struct render_in in = {.tmpl = jdoc_root(r->tmpl),
	                       .params = jval_path(r->ti, "spec", "parameters", NULL),
	                       .ns = r->ns_name,
	                       .tenant = jd_label(r->ns, LABEL_TENANT),
	                       .mode = RENDER_INSTANCE,
	                       .scope = scope_of,
	                       .scope_ctx = r->t};
	struct ll_err err = {{0}};
	int rc = render_objects(&in, &r->objects, &err);

	if (rc != 0)
		ti_fail(r,
		        rc == -ENOENT   ? "KindNotServed"
		        : rc == -EACCES ? "Forbidden"
		                        : "ParameterInvalid",
		        "", err.msg);
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

/* The apply order of the render and the copies of its mappings. */
static int order(struct ti_rec *r)
{
	struct ll_err err = {{0}};
	int rc = tpl_order(r->objects, &r->order, &err);

	if (rc != 0) {
		r->failed = false; /* this failure is the one that stops the render */
		ti_fail(r, "ParameterInvalid", "", err.msg);
	}
	return rc;
}

/* The kinds rendered now and before, recorded in status before any new one is written. */
static int record_kinds(struct ti_rec *r)
{
	json_t *kinds = jval_to_json(jval_path(r->ti, "status", "kinds", NULL)), *o;
	char key[TPL_FAIL_OBJECT_MAX];
	size_t i, before;
	int rc = 0;

	if (!json_is_array(kinds)) {
		json_decref(kinds);
		kinds = json_array();
	}
	before = json_array_size(kinds);
	json_array_foreach(r->objects, i, o) {
		tpl_kind_key(o, key);
		if (!has_string(kinds, key))
			json_array_append_new(kinds, json_string(key));
		if (tpl_watch_kind(r->t, o, LABEL_TI) != 0)
			log_warn("cannot watch a rendered kind", "{s:s}", "kind", key);
	}
	r->kinds = kinds;
	if (json_array_size(kinds) != before)
		rc = ti_write_status_kinds(r);
	return rc;
}

static struct ctrl_result apply(struct ti_rec *r)
{
	struct tpl_target target;
	struct tpl_failure fail;
	struct ll_err err = {{0}};
	bool changed = false;
	int rc = ti_account_for(r->ns_name, r->ns_labels, r->writer, &r->account);

	if (rc != 0)
		return ti_fail(r, "RoleNotConfigured", "",
		               "LandlordConfig maps no ClusterRole for "
		               "this namespace's writers"),
		       CTRL_RESULT_DONE;
	rc = ti_account_ensure(r->t, r->ns_name, &r->account, &changed, &err);
	if (rc != 0)
		return ti_fail(r, "AccountFailed", "", err.msg), CTRL_RESULT_RETRY;
	if (record_kinds(r) != 0)
		return CTRL_RESULT_RETRY;
	ti_target(r, &target);
	rc = tpl_apply(&target, r->objects, r->order, json_array_size(r->objects), &r->applied,
	               &fail);
	if (rc == 0)
		rc = tpl_prune(&target, r->kinds, r->objects, &r->pruned, &fail);
	if (rc != 0) {
		ti_fail(r, fail.reason, fail.object, fail.message);
		/* a binding just written may not be in force yet: look again shortly */
		return changed ? CTRL_RESULT_AFTER(RBAC_SETTLE_MS)
		               : CTRL_RESULT_AFTER(NOT_READY_RETRY);
	}
	r->synced = true;
	return CTRL_RESULT_DONE;
}

/* An instance that may not be here (any more): the copies of its mappings go. */
static void drop_copies(struct ti_rec *r)
{
	struct tpl_target target;
	struct tpl_failure fail;
	struct ll_err err = {{0}};
	json_t *kinds = json_pack("[ss]", "v1/Secret", "v1/ConfigMap");
	bool changed;
	size_t pruned;

	if (ti_account_for(r->ns_name, r->ns_labels, r->writer, &r->account) == 0 &&
	    ti_account_ensure(r->t, r->ns_name, &r->account, &changed, &err) == 0) {
		ti_target(r, &target);
		target.only_annotated = ANNOT_MAPPED_FROM;
		if (tpl_prune(&target, kinds, NULL, &pruned, &fail) != 0)
			log_warn("could not delete mapped copies", "{s:s,s:s,s:s}", "instance",
			         r->key, "object", fail.object, "error", fail.message);
	}
	json_decref(kinds);
	tpl_forget(r->t, r->key);
}

/* The render applied, unless it is what was applied last (or sync: false applied once). */
static struct ctrl_result render_and_apply(struct ti_rec *r)
{
	struct buf versions = BUF_INIT(4096);
	struct ctrl_result res = CTRL_RESULT_DONE;
	char fp[8192], before[8192];

	if (!jval_bool(jval_path(r->ti, "spec", "sync", NULL), false) && ti_synced_before(r)) {
		r->synced = r->unchanged = true;
		return res;
	}
	if (render(r) != 0)
		return res;
	ti_map_resources(r, &versions);
	fingerprint(r, buf_cstr(&versions), fp, sizeof(fp));
	buf_release(&versions);
	if (order(r) != 0)
		return res;
	if (!r->failed && tpl_fingerprint_is(r->t, r->key, fp)) {
		r->synced = r->unchanged = true;
		return res;
	}
	tpl_fingerprint_get(r->t, r->key, before, sizeof(before));
	res = apply(r);
	/* not over a drift seen during the apply: the next reconcile must apply again */
	if (r->synced && !r->failed)
		tpl_fingerprint_swap(r->t, r->key, before, fp);
	return res;
}

static struct ctrl_result converge(struct ti_rec *r)
{
	struct ctrl_result res;

	if (r->tmpl == NULL) {
		ti_fail(r, "SourceNotFound", "", "");
		snprintf(r->message, sizeof(r->message), "Template \"%s\" does not exist",
		         r->tmpl_name);
		return ti_finish(r, CTRL_RESULT_DONE);
	}
	if (strcmp(r->writer, WRITER_PRIVILEGED) != 0 && !instantiable(r)) {
		ti_fail(r, "NotInstantiable", "", "");
		snprintf(
		        r->message, sizeof(r->message),
		        "Template \"%s\" is not instantiable in namespace %s (spec.instantiableIn)",
		        r->tmpl_name, r->ns_name);
		drop_copies(r);
		return ti_finish(r, CTRL_RESULT_DONE);
	}
	res = render_and_apply(r);
	ti_charts(r);
	return ti_finish(r, res);
}

void ti_enqueue_template(struct templates *t, const char *name)
{
	struct jdoc_list l = inf_by_index_ref(t->instances, IDX_TEMPLATE, name);
	char key[512];

	for (size_t i = 0; i < l.n; i++) {
		snprintf(key, sizeof(key), "%s/%s", jd_namespace(l.items[i]), jd_name(l.items[i]));
		tpl_forget(t, key);
		ctrl_enqueue(t->ti, key);
	}
	jdoc_list_release(&l);
}

/* ---------- teardown ---------- */

/*
 * Are there instances in @ns other than @self that are not going? (Going ones that still prune
 * ensure the account again, and the last one releases it.)
 */
enum release_decision { ACCOUNTS_KEEP, ACCOUNTS_WAIT, ACCOUNTS_RELEASE };

/*
 * When instance @self of @ns is done with its teardown: may it release the namespace's apply
 * accounts? Not while another instance lives. Instances deleted together still need them for
 * their own helm uninstall, so only the last of them by name releases, once the others are
 * gone (ACCOUNTS_WAIT until then); the others go without waiting for it.
 */
static enum release_decision release_decision(struct templates *t, const char *ns, const char *self)
{
	struct jdoc_list l = inf_list_ref(t->instances, ns);
	enum release_decision d = ACCOUNTS_RELEASE;

	for (size_t i = 0; i < l.n && d != ACCOUNTS_KEEP; i++) {
		int cmp = strcmp(jd_name(l.items[i]), self);

		if (cmp == 0)
			continue;
		if (jd_str(l.items[i], "metadata", "deletionTimestamp", NULL) == NULL || cmp > 0)
			d = ACCOUNTS_KEEP; /* one lives, or a later one releases */
		else
			d = ACCOUNTS_WAIT;
	}
	jdoc_list_release(&l);
	return d;
}

/*
 * Does the instance still hold landlord's finalizer, as the API server says? The cache can be a
 * step behind the finalizer's removal, and a teardown run on it would make the accounts again.
 */
static bool still_finalized(struct ti_rec *r)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	const json_t *finalizers, *f;
	bool held = true; /* no answer: assume so, the teardown is idempotent */
	size_t i;

	if (kc_get(r->t->kc, &LL_TEMPLATEINSTANCES, r->ns_name, r->name, &resp, &err) == 0 &&
	    (resp.http_status == 404 || kc_resp_ok(&resp))) {
		held = false;
		finalizers = jx_get(resp.body, "metadata", "finalizers", NULL);
		json_array_foreach(finalizers, i, f)
			held = held || (json_is_string(f) &&
			                strcmp(json_string_value(f), LANDLORD_FINALIZER) == 0);
	}
	kc_resp_release(&resp);
	return held;
}

static struct ctrl_result teardown(struct ti_rec *r)
{
	struct tpl_target target;
	struct tpl_failure fail;
	struct ll_err err = {{0}};
	bool changed;
	int rc = 0;

	if (kc_finalizer_index(r->ti, LANDLORD_FINALIZER) < 0 || !still_finalized(r))
		return CTRL_RESULT_DONE;
	if (r->ns && jd_str(r->ns, "metadata", "deletionTimestamp", NULL) == NULL &&
	    ti_account_for(r->ns_name, r->ns_labels, r->writer, &r->account) == 0) {
		rc = ti_account_ensure(r->t, r->ns_name, &r->account, &changed, &err);
		/* helm uninstall first, as the instance's account (made again above: another
		 * instance of the namespace may have released it); a namespace going takes the
		 * release's objects itself */
		if (rc == 0 && !ti_charts_gone(r))
			return CTRL_RESULT_AFTER(CHARTS_GONE_RETRY);
		ti_target(r, &target);
		r->kinds = jval_to_json(jval_path(r->ti, "status", "kinds", NULL));
		if (rc == 0)
			rc = tpl_prune(&target, r->kinds, NULL, &r->pruned, &fail);
		if (rc != 0) {
			log_warn("template instance cleanup failed; retrying", "{s:s,s:s,s:s}",
			         "instance", r->key, "object", fail.object, "error",
			         err.msg[0] ? err.msg : fail.message);
			return CTRL_RESULT_RETRY;
		}
	}
	switch (release_decision(r->t, r->ns_name, r->name)) {
	case ACCOUNTS_WAIT:
		return CTRL_RESULT_AFTER(ACCOUNTS_WAIT_MS);
	case ACCOUNTS_RELEASE:
		ti_accounts_release(r->t, r->ns_name);
		break;
	case ACCOUNTS_KEEP:
		break;
	}
	tpl_forget(r->t, r->key);
	return set_finalizer(r, false) == 0 ? CTRL_RESULT_DONE : CTRL_RESULT_RETRY;
}

/* ---------- reconcile ---------- */

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct templates *t = ud;
	struct ti_rec r;
	struct ctrl_result res;

	(void)c;
	if (ti_rec_load(t, key, &r) != 0) {
		tpl_drop(t, key);
		return CTRL_RESULT_DONE;
	}
	if (jval_type(jval_path(r.ti, "metadata", "deletionTimestamp", NULL)) != JT_NONE)
		res = teardown(&r);
	else if (set_finalizer(&r, true) != 0)
		res = CTRL_RESULT_RETRY;
	else
		res = converge(&r);
	ti_rec_release(&r);
	return res;
}

struct controller_def ti_controller_def(struct templates *t)
{
	return (struct controller_def){.name = "templateinstance",
	                               .workers = 2,
	                               .setup = setup,
	                               .reconcile = reconcile,
	                               .ud = t};
}
