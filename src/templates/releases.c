/*
 * releases.c - the release controller's shared state (releases.h): owners' wishes, the results
 * reported back, landlord's ledgers (ledger.h) and the informers on them and on Helm's records.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "templates/releases_internal.h"

#define IDX_RELEASE "release" /* Helm's records by "<namespace>/<release>" (ledger.c) */
#define IDX_OWNER   "owner"   /* ledgers by owner */

/* ---------- names ---------- */

void releases_owner_ti(const char *ns, const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "ti/%s/%s", ns, name);
}

void releases_owner_tgi(const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "tgi/%s", name);
}

void release_state_counts(const struct release_state *st, struct tpl_row *row)
{
	struct tpl_ready_desired *rd[3] = {&row->deployments, &row->stateful_sets,
	                                   &row->daemon_sets};

	for (size_t k = 0; k < 3; k++) {
		rd[k]->ready += st->workloads_ready[k];
		rd[k]->desired += st->workloads_desired[k];
	}
}

bool releases_on(const struct templates *t)
{
	return t->helm != NULL;
}

/* Queue @owner's instance: its status shows the release. */
static void enqueue_owner(struct templates *t, const char *owner)
{
	char name[256];

	if (strncmp(owner, "ti/", 3) == 0 && t->ti != NULL)
		ctrl_enqueue(t->ti, owner + 3); /* "<namespace>/<name>" */
	else if (sscanf(owner, "tgi/%255s", name) == 1 && t->tgi != NULL)
		ctrl_enqueue(t->tgi, name);
}

/* ---------- wishes and results ---------- */

/* The state a result reports for the wish of generation @gen. */
static void state_of(const json_t *result, long long gen, struct release_state *st)
{
	memset(st, 0, sizeof(*st));
	if (result == NULL || json_integer_value(json_object_get(result, "gen")) != gen)
		return; /* not done yet */
	st->ready = json_is_true(json_object_get(result, "ready"));
	st->gone = json_is_true(json_object_get(result, "gone"));
	snprintf(st->status, sizeof(st->status), "%s", jx_str(result, "status", NULL) ?: "");
	st->revision = (long)json_integer_value(json_object_get(result, "revision"));
	snprintf(st->chart_version, sizeof(st->chart_version), "%s",
	         jx_str(result, "chartVersion", NULL) ?: "");
	snprintf(st->reason, sizeof(st->reason), "%s", jx_str(result, "reason", NULL) ?: "");
	snprintf(st->message, sizeof(st->message), "%s", jx_str(result, "message", NULL) ?: "");
	for (size_t k = 0; k < 3; k++) {
		static const char *const fields[] = {"deployments", "statefulSets", "daemonSets"};
		const json_t *w = json_object_get(result, fields[k]);

		st->workloads_ready[k] = json_integer_value(json_object_get(w, "ready"));
		st->workloads_desired[k] = json_integer_value(json_object_get(w, "desired"));
	}
}

/* A wish as stored: "helm" (and its values) only when the release is wanted installed. */
static json_t *wish_json(const struct release_want *w)
{
	json_t *o =
	        json_pack("{s:s,s:s}", "owner", w->owner, "account", w->account ? w->account : "");

	if (w->helm != NULL) {
		json_object_set(o, "helm", (json_t *)w->helm);
		json_object_set_new(o, "values",
		                    w->values ? json_incref((json_t *)w->values) : json_object());
		json_object_set_new(o, "set",
		                    w->set ? json_incref((json_t *)w->set) : json_array());
		json_object_set_new(o, "sync", json_boolean(w->sync));
		if (w->bind_account)
			json_object_set_new(o, "bindAccount", json_true());
	}
	return o;
}

/* Is @old the same wish as @now (generation aside)? */
static bool same_wish(const json_t *old, const json_t *now)
{
	static const char *const fields[] = {"owner", "account", "helm",       "values",
	                                     "set",   "sync",    "bindAccount"};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const json_t *a = json_object_get(old, fields[i]),
		             *b = json_object_get(now, fields[i]);

		if (!(a == b || (a && b && json_equal(a, b))))
			return false;
	}
	return true;
}

int releases_want(struct templates *t, const struct release_want *w, struct release_state *st)
{
	struct tpl_helm *h = t->helm;
	char key[400];
	json_t *now = wish_json(w), *old;
	bool changed = false;
	int rc = 0;

	snprintf(key, sizeof(key), "%s/%s", w->ns, w->release);
	pthread_mutex_lock(&h->lock);
	old = json_object_get(h->wants, key);
	if (old != NULL && strcmp(jx_str(old, "owner", NULL), w->owner) != 0 &&
	    json_object_get(old, "helm") != NULL) {
		memset(st, 0, sizeof(*st));
		snprintf(st->reason, sizeof(st->reason), "Conflict");
		snprintf(st->message, sizeof(st->message),
		         "release %s in %s is wanted by %s already; a release has one owner",
		         w->release, w->ns, jx_str(old, "owner", NULL));
		rc = -EEXIST;
	} else if (old == NULL || !same_wish(old, now)) {
		json_object_set_new(now, "gen", json_integer(++h->gen));
		json_object_set(h->wants, key, now);
		changed = true;
	} else
		json_object_set(now, "gen", json_object_get(old, "gen"));
	if (rc == 0)
		state_of(json_object_get(h->results, key),
		         json_integer_value(json_object_get(now, "gen")), st);
	pthread_mutex_unlock(&h->lock);
	json_decref(now);
	if (changed)
		ctrl_enqueue(h->c, key);
	return rc;
}

json_t *releases_of(struct templates *t, const char *owner, const char *ns)
{
	struct jdoc_list l = inf_by_index_ref(t->helm->ledgers, IDX_OWNER, owner);
	json_t *out = json_array();

	for (size_t i = 0; i < l.n; i++) {
		const char *lns = jd_str(l.items[i], "spec", "namespace", NULL),
		           *rel = jd_str(l.items[i], "spec", "release", NULL);

		if (lns && rel && (ns == NULL || strcmp(ns, lns) == 0))
			json_array_append_new(out, json_sprintf("%s/%s", lns, rel));
	}
	jdoc_list_release(&l);
	return out;
}

void rel_fail(struct rel_rec *r, const char *reason, const char *fmt, ...)
{
	char msg[TPL_FAIL_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_set_new(r->result, "reason", json_string(reason));
	json_object_set_new(r->result, "message", json_string(msg));
	json_object_set_new(r->result, "ready", json_false());
}

void rel_report(struct rel_rec *r)
{
	struct tpl_helm *h = r->h;
	json_t *old;
	bool changed;

	if (r->want == NULL)
		return;
	json_object_set(r->result, "gen", json_object_get(r->want, "gen"));
	pthread_mutex_lock(&h->lock);
	old = json_object_get(h->results, r->key);
	changed = old == NULL || !json_equal(old, r->result);
	if (changed)
		json_object_set(h->results, r->key, r->result);
	if (json_is_true(json_object_get(r->result, "gone")) &&
	    json_object_get(h->wants, r->key) == r->want)
		json_object_del(h->wants, r->key); /* done: nobody wants anything of it now */
	pthread_mutex_unlock(&h->lock);
	if (changed)
		enqueue_owner(r->t, jx_str(r->want, "owner", NULL));
}

/* ---------- one reconcile's inputs ---------- */

int rel_load(struct templates *t, const char *key, struct rel_rec *r)
{
	struct tpl_helm *h = t->helm;
	const char *slash = strchr(key, '/');
	const json_t *mine;
	const struct jdoc *cached;

	memset(r, 0, sizeof(*r));
	if (slash == NULL || slash - key >= (long)sizeof(r->ns) ||
	    strlen(slash + 1) >= sizeof(r->release))
		return -EINVAL;
	r->t = t;
	r->h = h;
	snprintf(r->key, sizeof(r->key), "%s", key);
	snprintf(r->ns, sizeof(r->ns), "%.*s", (int)(slash - key), key);
	snprintf(r->release, sizeof(r->release), "%s", slash + 1);
	snprintf(r->ledger_name, sizeof(r->ledger_name), LEDGER_NAME_FMT, r->ns, r->release);
	r->result = json_object();
	pthread_mutex_lock(&h->lock);
	r->want = json_incref(json_object_get(h->wants, key));
	mine = json_object_get(h->mine, key);
	if (mine != NULL) /* what landlord wrote last: the cache may not show it yet */
		r->ledger = json_is_null(mine) ? NULL : json_deep_copy(mine);
	pthread_mutex_unlock(&h->lock);
	if (mine == NULL) {
		cached = inf_get_ref(h->ledgers, NULL, r->ledger_name);
		r->ledger = cached ? jval_to_json(jdoc_root(cached)) : NULL;
		jdoc_unref(cached);
	}
	return 0;
}

void rel_release(struct rel_rec *r)
{
	json_decref(r->want);
	json_decref(r->ledger);
	json_decref(r->result);
}

/* ---------- the ledger ---------- */

const char *rel_ledger_str(const struct rel_rec *r, const char *field)
{
	const char *s = jx_str(r->ledger, "spec", field, NULL);

	return s != NULL ? s : "";
}

/* Remember what landlord wrote (@obj: the server's answer; NULL: deleted). */
static void remember(struct rel_rec *r, const json_t *obj)
{
	pthread_mutex_lock(&r->h->lock);
	json_object_set_new(r->h->mine, r->key, obj ? json_deep_copy(obj) : json_null());
	pthread_mutex_unlock(&r->h->lock);
	json_decref(r->ledger);
	r->ledger = obj ? json_deep_copy(obj) : NULL;
}

static void forget_mine(struct rel_rec *r)
{
	pthread_mutex_lock(&r->h->lock);
	json_object_del(r->h->mine, r->key);
	pthread_mutex_unlock(&r->h->lock);
}

/* Send @obj (create, or replace guarded by its resourceVersion). Return: 0 or -EAGAIN. */
static int send_ledger(struct rel_rec *r, json_t *obj, bool create)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = create ? kc_create(r->t->kc, &LL_HELMLEDGERS, NULL, obj, &resp, &err)
	                : kc_replace(r->t->kc, &LL_HELMLEDGERS, NULL, r->ledger_name, NULL, obj,
	                             &resp, &err);

	if (rc == 0 && kc_resp_ok(&resp)) {
		remember(r, resp.body);
	} else {
		log_warn("cannot write a helm release ledger", "{s:s,s:s}", "ledger",
		         r->ledger_name, "error", err.msg[0] ? err.msg : resp.status.message);
		forget_mine(r); /* a conflict: read it again from the cache */
		rc = -EAGAIN;
	}
	kc_resp_release(&resp);
	return rc;
}

int rel_ledger_create(struct rel_rec *r)
{
	json_t *obj =
	        json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s,s:s,s:s,s:s,s:s,s:s,s:s}}", "apiVersion",
	                  LANDLORD_API_VERSION, "kind", LL_HELMLEDGERS.kind, "metadata", "name",
	                  r->ledger_name, "labels", LABEL_MANAGED_BY, MANAGED_BY_VALUE, "spec",
	                  "owner", jx_str(r->want, "owner", NULL), "namespace", r->ns, "release",
	                  r->release, "account", jx_str(r->want, "account", NULL), "records", "",
	                  "pending", "1", "chartVersion", "");
	int rc = send_ledger(r, obj, true);

	json_decref(obj);
	return rc;
}

int rel_ledger_write(struct rel_rec *r, const char *pending, const char *records,
                     const char *chart_version)
{
	json_t *obj = json_deep_copy(r->ledger), *spec = json_object_get(obj, "spec");
	const char *account = jx_str(r->want, "account", NULL);
	int rc;

	json_object_set_new(spec, "pending", json_string(pending));
	if (records != NULL)
		json_object_set_new(spec, "records", json_string(records));
	if (chart_version != NULL)
		json_object_set_new(spec, "chartVersion", json_string(chart_version));
	if (json_object_get(r->want, "helm") != NULL && account != NULL && *account != '\0')
		json_object_set_new(spec, "account", json_string(account)); /* who runs it now */
	if (spec == NULL)
		rc = -EAGAIN;
	else if (json_equal(spec, json_object_get(r->ledger, "spec")))
		rc = 0; /* it says so already (a new ledger's pending revision 1) */
	else
		rc = send_ledger(r, obj, false);
	json_decref(obj);
	return rc;
}

/* Does a ledger other than @r's name @account (landlord's cache of them)? */
static bool account_in_use(struct rel_rec *r, const char *account)
{
	struct jdoc_list l = inf_list_ref(r->h->ledgers, NULL);
	bool used = false;

	for (size_t i = 0; i < l.n && !used; i++)
		used = strcmp(jd_name(l.items[i]), r->ledger_name) != 0 &&
		       strcmp(jd_str(l.items[i], "spec", "account", NULL) ?: "", account) == 0;
	jdoc_list_release(&l);
	return used;
}

/* Patch the namespace's annotation @key to @value (NULL: remove it). Return: 0 or -EAGAIN. */
static int patch_mark(struct rel_rec *r, const char *key, const char *value)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	json_t *patch = json_pack("{s:{s:{s:o}}}", "metadata", "annotations", key,
	                          value ? json_string(value) : json_null());
	int rc = kc_patch(r->t->kc, &KC_NAMESPACES, NULL, r->ns, NULL, KC_PATCH_MERGE, patch,
	                  LANDLORD_FIELD_MANAGER, &resp, &err);

	if (rc != 0 || !(kc_resp_ok(&resp) || (value == NULL && resp.http_status == 404))) {
		log_warn("cannot mark a helm release on its namespace", "{s:s,s:s}", "release",
		         r->key, "error", rc ? err.msg : resp.status.message);
		rc = -EAGAIN;
	}
	kc_resp_release(&resp);
	json_decref(patch);
	return rc;
}

/*
 * Set or remove the namespace's mark ANNOT_HELM_RELEASE_PREFIX<release> (value: the owner), by
 * which the landlord-helm-records policy refuses others a write of the release's records.
 * Setting skips a mark the cache shows; removing always asks (the cache may not show a mark just
 * made), and a namespace gone is done. Return: 0 or -EAGAIN.
 */
static int mark_namespace(struct rel_rec *r, bool on)
{
	const struct jdoc *ns = inf_get_ref(r->t->namespaces, NULL, r->ns);
	const char *owner = jx_str(r->want, "owner", NULL) ?: rel_ledger_str(r, "owner");
	char key[128];
	bool marked;

	snprintf(key, sizeof(key), ANNOT_HELM_RELEASE_PREFIX "%s", r->release);
	marked = ns != NULL && strcmp(jd_annotation(ns, key) ?: "", owner) == 0;
	jdoc_unref(ns);
	return on && marked ? 0 : patch_mark(r, key, on ? owner : NULL);
}

int rel_mark_namespace(struct rel_rec *r)
{
	return mark_namespace(r, true);
}

int rel_ledger_delete(struct rel_rec *r)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	char account[300];
	struct ti_account group;
	int rc = mark_namespace(r, false);

	if (rc == 0)
		rc = kc_delete(r->t->kc, &LL_HELMLEDGERS, NULL, r->ledger_name,
		               &(struct kc_delete_opts){.grace_seconds = -1}, &resp, &err);

	snprintf(account, sizeof(account), "%s", rel_ledger_str(r, "account"));
	tgi_account_for(r->ns, &group);
	if (rc == 0 && (kc_resp_ok(&resp) || resp.http_status == 404)) {
		remember(r, NULL);
		/* a TemplateGroupInstance's account lives as long as a release of it there */
		if (strcmp(account, group.sa) == 0 && !account_in_use(r, account))
			tgi_account_release(r->t, r->ns);
	} else {
		rc = -EAGAIN;
	}
	kc_resp_release(&resp);
	return rc;
}

/* ---------- informers, events, the controller ---------- */

static void index_release(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                          void *ud)
{
	const char *name = jd_label(obj, "name");
	char key[400];

	(void)ud;
	if (name != NULL && jd_namespace(obj) != NULL) {
		snprintf(key, sizeof(key), "%s/%s", jd_namespace(obj), name);
		emit(key, ctx);
	}
}

static void index_owner(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                        void *ud)
{
	const char *owner = jd_str(obj, "spec", "owner", NULL);

	(void)ud;
	if (owner != NULL)
		emit(owner, ctx);
}

/* A record changed: its release, when landlord wants or keeps it. */
static void map_record(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                       void *ud)
{
	struct templates *t = ud;
	const char *name = jd_label(obj, "name"), *ns = jd_namespace(obj);
	char key[400], ledger[400];
	const struct jdoc *l;
	bool wanted;

	if (name == NULL || ns == NULL)
		return;
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	snprintf(ledger, sizeof(ledger), LEDGER_NAME_FMT, ns, name);
	pthread_mutex_lock(&t->helm->lock);
	wanted = json_object_get(t->helm->wants, key) != NULL;
	pthread_mutex_unlock(&t->helm->lock);
	l = wanted ? NULL : inf_get_ref(t->helm->ledgers, NULL, ledger);
	if (wanted || l != NULL)
		emit(key, ctx);
	jdoc_unref(l);
}

/* A ledger changed (someone else's edit, or its deletion): its release and its owner. */
static void map_ledger(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                       void *ud)
{
	const char *ns = jd_str(obj, "spec", "namespace", NULL),
	           *rel = jd_str(obj, "spec", "release", NULL);
	char key[400];

	(void)ud;
	if (ns != NULL && rel != NULL) {
		snprintf(key, sizeof(key), "%s/%s", ns, rel);
		emit(key, ctx);
	}
}

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct templates *t = ud;
	static const struct inf_index_def by_release[] = {{IDX_RELEASE, index_release, NULL},
	                                                  {NULL, NULL, NULL}};

	t->helm->c = c;
	t->helm->records = mgr_informer(m, &(struct inf_opts){.gvr = KC_SECRETS,
	                                                      .label_selector = "owner=helm",
	                                                      .metadata_only = true,
	                                                      .indexes = by_release,
	                                                      .name = "helm-records"});
	t->helm->ledgers =
	        mgr_informer(m, &(struct inf_opts){.gvr = LL_HELMLEDGERS, .name = "helm-ledgers"});
	if (t->helm->records == NULL || t->helm->ledgers == NULL)
		return -ENOMEM;
	inf_add_index(t->helm->ledgers, IDX_OWNER, index_owner, NULL);
	ctrl_watch_mapped(c, t->helm->records, map_record, t);
	ctrl_watch_mapped(c, t->helm->ledgers, map_ledger, t);
	return 0;
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct rel_rec r;
	struct ctrl_result res;

	(void)c;
	if (rel_load(ud, key, &r) != 0)
		return CTRL_RESULT_DONE;
	res = rel_reconcile(&r);
	rel_report(&r);
	rel_release(&r);
	return res;
}

/*
 * Only the leader runs helm: a replica that stops leading kills what still runs. A term starts
 * with no wish known (called before any worker runs): the instances' first reconciles then
 * queue every release again, into this term's queue (the last term's was dropped with what it
 * held, and an unchanged wish is never queued again).
 */
static void leading(bool lead, void *ud)
{
	struct templates *t = ud;

	proc_group_set_open(&t->helm->runner.group, lead);
	if (!lead)
		proc_group_kill_all(&t->helm->runner.group);
	if (lead) {
		pthread_mutex_lock(&t->helm->lock);
		json_object_clear(t->helm->wants);
		pthread_mutex_unlock(&t->helm->lock);
	}
}

struct controller_def helm_controller_def(struct templates *t)
{
	return (struct controller_def){.name = "helmrelease",
	                               /* twice the helm slots: a worker's API calls (token,
	                                * ledger, records) overlap another's helm, which waits for a
	                                * slot */
	                               .workers = 2 * t->helm->runner.group.max_running,
	                               .setup = setup,
	                               .reconcile = reconcile,
	                               .leading = leading,
	                               .ud = t};
}

int templates_enable_helm(struct templates *t, const char *helm, const struct kcfg *cfg,
                          const struct helm_opts *opts, struct ll_err *err)
{
	struct tpl_helm *h = xcalloc(1, sizeof(*h));
	int rc = helm_runner_init(&h->runner, helm, cfg, opts->concurrency, opts->timeout_ms, err);

	if (rc == 0 && (h->cache_dir = helm_private_dir()) == NULL)
		rc = ll_err_set(err, -errno, "helm: no private directory for the chart cache: %s",
		                strerror(errno));
	if (rc == 0)
		rc = helm_pull_cache_init(&h->pulls, h->cache_dir, &h->runner, err);
	if (rc == 0) {
		h->kube_cache = xasprintf("%s/kube", h->cache_dir);
		h->runner.kube_cache_dir = h->kube_cache;
	}
	if (rc != 0) {
		helm_runner_release(&h->runner);
		free(h->cache_dir);
		free(h);
		return rc;
	}
	pthread_mutex_init(&h->lock, NULL);
	h->repair_every_ms = opts->repair_every_ms;
	h->wants = json_object();
	h->results = json_object();
	h->mine = json_object();
	h->synced = json_object();
	h->objects = json_object();
	h->drifted = json_object();
	h->forced_ms = json_object();
	h->watched = json_object();
	proc_group_set_open(&h->runner.group, false); /* until this replica leads */
	t->helm = h;
	return 0;
}

void releases_free(struct tpl_helm *h)
{
	if (h == NULL)
		return;
	helm_runner_release(&h->runner);
	helm_pull_cache_release(&h->pulls);
	helm_remove_dir(h->cache_dir);
	free(h->cache_dir);
	free(h->kube_cache);
	json_decref(h->wants);
	json_decref(h->results);
	json_decref(h->mine);
	releases_sync_free(h);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
