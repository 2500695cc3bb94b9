/*
 * supervisor.c - the ResourceSupervisor controller: informers, event mapping, the reconcile,
 * the finalizer and the override annotation (supervisor.h).
 *
 * One reconcile: read the supervisor from the cache; parse its schedule and zone (a bad one is
 * InvalidSchedule and no transition); decide the state (schedule.h) and settle the override
 * annotation (rewritten or removed with a patch that tests its old value); sleep or wake each
 * namespace (namespaces.c, workloads.c); write the status when it differs; requeue at the next
 * transition. A deleted supervisor wakes everything it put to sleep before its finalizer goes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "hibernation/supervisor_internal.h"
#include "http/server.h"
#include "kube/discovery.h"
#include "kube/finalizers.h"
#include "kube/status.h"
#include "tenancy/cron.h"
#include "tenancy/landlordconfig_current.h"
#include "tenancy/tzif.h"

#define CONTROLLER_NAME "resourcesupervisor"
/* While a woken namespace waits for its pods, it is looked at again this often at least. */
#define POD_WAIT_MS 5000
/* A timer fires this long after the transition's second, so the clock has reached it. */
#define TIMER_SLACK_MS 50

/* The projections: what the reconcile reads of each workload. */
static const char *const KEEP_WORKLOAD[] = {"metadata.name",
                                            "metadata.namespace",
                                            "metadata.uid",
                                            "metadata.resourceVersion",
                                            "metadata.deletionTimestamp",
                                            "metadata.ownerReferences",
                                            "metadata.labels." LABEL_HIB_EXCLUDE,
                                            "metadata.annotations",
                                            "spec.replicas",
                                            "spec.suspend",
                                            "spec.persistentVolumeClaimRetentionPolicy",
                                            "status.conditions",
                                            "status.replicas",
                                            NULL};
/* Annotations are kept (a patch must know whether the map exists), but not kubectl's copy. */
static const char *const DROP_WORKLOAD[] = {
        "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration", NULL};
static const struct inf_index_def WORKLOAD_INDEXES[] = {{"namespace", inf_index_namespace, NULL},
                                                        {NULL, NULL, NULL}};
/* As the TemplateGroupInstance controller asks, so the informer is shared. */
static const char *const KEEP_QUOTA[] = {"metadata.labels", "metadata.uid", "spec",
                                         "status.hard",     "status.used",  NULL};

static int64_t now_ms(struct hib *h)
{
	struct timespec ts = clock_wall_now();

	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / CLOCK_NS_PER_MS + atomic_load(&h->shift_ms);
}

/* ---------- events ---------- */

static void emit_selecting(struct hib *h, const struct jdoc *ns, void (*emit)(const char *, void *),
                           void *ctx)
{
	struct jdoc_list sups = inf_list_ref(h->supervisors, NULL);
	char holder[254];

	for (size_t i = 0; i < sups.n; i++)
		if (ns_selected(sups.items[i], NULL, ns))
			emit(jd_name(sups.items[i]), ctx);
	jdoc_list_release(&sups);
	if (ns_sleeper(ns, holder, sizeof(holder)))
		emit(holder, ctx);
}

/* A namespace's labels decide which supervisors select it; its reservation, whose sleep it is. */
static void map_namespace(const struct jdoc *ns, void (*emit)(const char *, void *), void *ctx,
                          void *ud)
{
	emit_selecting(ud, ns, emit, ctx);
}

/* A workload matters while its namespace sleeps (a new one sleeps too) or wakes (its pods come
 * back), or once it is asleep. */
static void map_workload(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                         void *ud)
{
	struct hib *h = ud;
	const struct jdoc *ns = inf_get_ref(h->namespaces, NULL, jd_namespace(obj));

	if (ns && (jd_label(ns, LABEL_SLEEPING) || jd_annotation(ns, HIB_RESERVED_ANNOTATION) ||
	           jd_annotation(obj, HIB_SAVED_ANNOTATION)))
		emit_selecting(h, ns, emit, ctx);
	jdoc_unref(ns);
}

static struct inf_opts workload_opts(const struct hib_kind_def *k)
{
	return (struct inf_opts){.gvr = k->gvr,
	                         .keep = KEEP_WORKLOAD,
	                         .drop = DROP_WORKLOAD,
	                         .indexes = WORKLOAD_INDEXES};
}

static struct inf *workload_informer(struct mgr *m, const struct hib_kind_def *k)
{
	return mgr_informer(m, &(struct inf_opts){.gvr = k->gvr,
	                                          .keep = KEEP_WORKLOAD,
	                                          .drop = DROP_WORKLOAD,
	                                          .indexes = WORKLOAD_INDEXES});
}

/* An optional kind's events, mapped as the others' (the informer was made while running). */
static void enqueue_key(const char *key, void *ctx)
{
	ctrl_enqueue(ctx, key);
}

static void opt_add(const struct jdoc *obj, void *ud)
{
	struct hib *h = ud;

	map_workload(obj, enqueue_key, h->ctl, h);
}

static void opt_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	opt_add(old_obj, ud);
	opt_add(new_obj, ud);
}

/* Is the CRD of optional resource @gvr installed (the CRD informer has it)? */
static bool crd_installed(struct hib *h, const struct kc_gvr *gvr)
{
	char name[256];
	const struct jdoc *crd;

	snprintf(name, sizeof(name), "%s.%s", gvr->resource, gvr->group);
	crd = inf_get_ref(h->crds, NULL, name);
	jdoc_unref(crd);
	return crd != NULL;
}

/* An optional kind's informer, made (or found, shared) once discovery serves it; else NULL. */
static struct inf *optional_informer(struct hib *h, const struct inf_opts *opts)
{
	struct inf_opts served = *opts;
	char api_version[128];
	bool created = false;
	struct inf *inf;

	snprintf(api_version, sizeof(api_version), "%s/%s", opts->gvr.group, opts->gvr.version);
	if (disc_lookup_kind(h->disc, api_version, opts->gvr.kind, &served.gvr, NULL) != 0)
		return NULL; /* not served (yet): looked up again at once after its CRD changes */
	inf = mgr_informer_live(ctrl_mgr(h->ctl), &served, &created);
	if (created)
		log_info("hibernation: watching an optional kind", "{s:s}", "kind", opts->gvr.kind);
	return inf;
}

/*
 * The synced informer in *@slot, made once the CRD of @opts->gvr is installed and served;
 * NULL while it is not (r->retry set when installed but not read yet). The informer may be
 * shared with another controller: @handler is added once, by whoever fills the slot.
 */
static struct inf *optional_synced(struct sup_rec *r, struct inf **slot,
                                   const struct inf_opts *opts, const struct inf_handler *handler)
{
	struct hib *h = r->h;
	struct inf *inf, *made;
	bool first = false;

	pthread_mutex_lock(&h->lock);
	inf = *slot;
	pthread_mutex_unlock(&h->lock);
	if (inf == NULL && crd_installed(h, &opts->gvr)) {
		made = optional_informer(h, opts);
		pthread_mutex_lock(&h->lock);
		first = *slot == NULL && made != NULL;
		if (first)
			*slot = made;
		inf = *slot;
		pthread_mutex_unlock(&h->lock);
		if (first)
			inf_add_handler(made, handler);
	}
	if (inf && inf_has_synced(inf))
		return inf;
	if (crd_installed(h, &opts->gvr))
		r->retry = true; /* installed, not read yet: look again after the back-off */
	return NULL;
}

struct inf *hib_work(struct sup_rec *r, enum hib_kind k)
{
	const struct hib_kind_def *def = &HIB_KINDS[k];
	struct inf_opts opts = workload_opts(def);

	if (!def->optional)
		return r->h->work[k];
	return optional_synced(r, &r->h->work[k], &opts,
	                       &(struct inf_handler){opt_add, opt_update, opt_add, r->h});
}

/* An AppProject matters to the supervisors naming it and to those holding its window. */
static void project_add(const struct jdoc *project, void *ud)
{
	struct hib *h = ud;
	const char *holders = jd_annotation(project, SLEEP_WINDOW_ANNOTATION);
	struct jdoc_list sups = inf_list_ref(h->supervisors, NULL);

	for (size_t i = 0; i < sups.n; i++) {
		struct jval names = jd_get(sups.items[i], "spec", "argocd", "appProjects", NULL), v;
		const char *name = jd_name(sups.items[i]);
		bool wanted = holders && win_holder(holders, name);
		size_t j;

		jval_foreach(names, j, v)
			wanted = wanted ||
			         (jval_str(v) && strcmp(jval_str(v), jd_name(project)) == 0);
		if (wanted)
			ctrl_enqueue(h->ctl, name);
	}
	jdoc_list_release(&sups);
}

static void project_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	project_add(old_obj, ud);
	project_add(new_obj, ud);
}

struct inf *hib_projects(struct sup_rec *r)
{
	/* the Extension controller's options, so that both share one watch */
	return optional_synced(
	        r, &r->h->projects, &(struct inf_opts){.gvr = ARGOCD_APPPROJECTS},
	        &(struct inf_handler){project_add, project_update, project_add, r->h});
}

/* A CRD of an optional kind came or went: every supervisor looks again. */
static void map_crd(const struct jdoc *crd, void (*emit)(const char *, void *), void *ctx, void *ud)
{
	struct hib *h = ud;
	char name[256];

	for (int k = 0; k <= HK_COUNT; k++) {
		const struct kc_gvr *gvr = k < HK_COUNT ? &HIB_KINDS[k].gvr : &ARGOCD_APPPROJECTS;

		snprintf(name, sizeof(name), "%s.%s", gvr->resource, gvr->group);
		if ((k == HK_COUNT || HIB_KINDS[k].optional) && jd_name(crd) &&
		    strcmp(jd_name(crd), name) == 0) {
			struct jdoc_list sups = inf_list_ref(h->supervisors, NULL);

			disc_invalidate(h->disc); /* served soon, if not yet: look it up afresh */
			for (size_t i = 0; i < sups.n; i++)
				emit(jd_name(sups.items[i]), ctx);
			jdoc_list_release(&sups);
			return;
		}
	}
}

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct hib *h = ud;
	int rc;

	h->ctl = c;
	h->supervisors = mgr_informer(m, &(struct inf_opts){.gvr = LL_RESOURCESUPERVISORS});
	h->namespaces =
	        mgr_informer(m, &(struct inf_opts){.gvr = KC_NAMESPACES, .metadata_only = true});
	h->quotas = mgr_informer(m, &(struct inf_opts){.gvr = KC_RESOURCEQUOTAS,
	                                               .label_selector = LABEL_MANAGED_BY
	                                               "=" MANAGED_BY_VALUE "," LABEL_TENANT,
	                                               .keep = KEEP_QUOTA});
	if (!h->supervisors || !h->namespaces || !h->quotas)
		return -ENOMEM;
	h->disc = disc_new(mgr_client(m));
	h->crds = mgr_informer(m, &(struct inf_opts){.gvr = KC_CRDS, .metadata_only = true});
	if (h->crds == NULL)
		return -ENOMEM;
	ctrl_watch_mapped(c, h->crds, map_crd, h);
	for (int k = 0; k < HK_COUNT; k++) {
		if (HIB_KINDS[k].optional)
			continue; /* made once discovery finds it (hib_work()) */
		h->work[k] = workload_informer(m, &HIB_KINDS[k]);
		if (h->work[k] == NULL)
			return -ENOMEM;
		ctrl_watch_mapped(c, h->work[k], map_workload, h);
	}
	rc = inf_add_index(h->namespaces, LABEL_SLEEPING, inf_index_label, (void *)LABEL_SLEEPING);
	if (rc < 0 && rc != -EEXIST)
		return rc;
	ctrl_watch_primary(c, h->supervisors);
	ctrl_watch_mapped(c, h->namespaces, map_namespace, h);
	return 0;
}

/* ---------- writes ---------- */

/*
 * What a refused patch means: -ENOENT (the object is gone: nothing left to do), -EAGAIN (a
 * JSON patch's test or path failed: the cache was behind, look again), or -EIO. The API server
 * answers a JSON patch that does not apply with 422 and this generic message (the detail is in
 * the Status's causes), unlike a validation failure, whose message names the object.
 */
static int patch_failure(enum kc_patch_type type, const struct kc_resp *resp)
{
	if (resp->http_status == 404)
		return -ENOENT;
	if (type == KC_PATCH_JSON &&
	    (resp->http_status == 409 ||
	     (resp->http_status == 422 &&
	      strcmp(resp->status.message, KC_JSON_PATCH_NOT_APPLIED) == 0)))
		return -EAGAIN;
	return -EIO;
}

bool sup_patch(struct sup_rec *r, const struct kc_gvr *gvr, const char *ns, const char *name,
               enum kc_patch_type type, const json_t *body, int *rc_out)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = kc_patch(r->kc, gvr, ns, name, NULL, type, body, LANDLORD_FIELD_MANAGER, &resp,
	                  &err);
	bool ok = rc == 0 && kc_resp_ok(&resp);

	if (rc == 0 && !ok)
		rc = patch_failure(type, &resp);
	if (!ok && rc != -ENOENT)
		r->retry = true;
	if (!ok && rc != -EAGAIN && rc != -ENOENT)
		log_warn("hibernation: a patch failed", "{s:s,s:s,s:s?,s:s,s:i,s:s}", "supervisor",
		         r->name, "kind", gvr->kind, "namespace", ns, "name", name, "code",
		         (int)resp.http_status, "error",
		         rc == -EIO ? resp.status.message : err.msg);
	if (rc_out)
		*rc_out = rc;
	kc_resp_release(&resp);
	return ok;
}

/* Add or remove landlord's finalizer, leaving other entries alone. */
static bool set_finalizer(struct sup_rec *r, bool present)
{
	json_t *body = kc_finalizer_patch(jdoc_root(r->sup), LANDLORD_FINALIZER, present);
	bool ok = body == NULL ||
	          sup_patch(r, &LL_RESOURCESUPERVISORS, NULL, r->name, KC_PATCH_JSON, body, NULL);

	json_decref(body);
	return ok;
}

/* Rewrite (canonical text) or remove the override, testing the value it was decided on. */
static void settle_override(struct sup_rec *r, const char *old)
{
	static const char path[] = "/metadata/annotations/landlord.dev~1hibernation";
	char text[HIB_OVERRIDE_BUF];
	json_t *body;

	if (r->d.ov_action == SCHED_OV_KEEP)
		return;
	if (r->d.ov_action == SCHED_OV_REWRITE &&
	    hib_override_format(&r->d.ov_new, text, sizeof(text)) < 0)
		return;
	body = json_pack("[{s:s,s:s,s:s}]", "op", "test", "path", path, "value", old);
	if (r->d.ov_action == SCHED_OV_REWRITE)
		json_array_append_new(body, json_pack("{s:s,s:s,s:s}", "op", "replace", "path",
		                                      path, "value", text));
	else
		json_array_append_new(body, json_pack("{s:s,s:s}", "op", "remove", "path", path));
	if (sup_patch(r, &LL_RESOURCESUPERVISORS, NULL, r->name, KC_PATCH_JSON, body, NULL))
		log_info("hibernation: override settled", "{s:s,s:s,s:s}", "supervisor", r->name,
		         "was", old, "now",
		         r->d.ov_action == SCHED_OV_REWRITE ? text : "(removed)");
	json_decref(body);
}

/* ---------- the decision ---------- */

struct parsed_schedule {
	struct cron sleep, wake;
	bool has_sleep, has_wake;
	struct tz_zone *zone;
};

static int parse_cron_field(const struct jdoc *sup, const char *field, struct cron *out, bool *has,
                            struct ll_err *err)
{
	const char *expr = jd_str(sup, "spec", "schedule", field, NULL);
	struct ll_err why = {{0}};
	int rc;

	*has = expr != NULL && expr[strspn(expr, " \t\n")] != '\0';
	if (!*has)
		return 0;
	rc = cron_parse(expr, out, &why);
	return rc < 0 ? ll_err_set(err, rc, "spec.schedule.%s: %s", field, why.msg) : 0;
}

static int parse_schedule(struct hib *h, const struct jdoc *sup, struct parsed_schedule *ps,
                          struct ll_err *err)
{
	const char *zone = jd_str(sup, "spec", "schedule", "timezone", NULL);
	struct ll_err why = {{0}};
	int rc = parse_cron_field(sup, "sleepSchedule", &ps->sleep, &ps->has_sleep, err);

	if (rc == 0)
		rc = parse_cron_field(sup, "wakeSchedule", &ps->wake, &ps->has_wake, err);
	if (rc == 0) {
		rc = tz_load(zone && *zone ? zone : "UTC", h->zoneinfo_dir, &ps->zone, &why);
		if (rc < 0)
			ll_err_set(err, rc, "spec.schedule.timezone: %s", why.msg);
	}
	return rc;
}

static int64_t created_at(const struct jdoc *sup)
{
	const char *ts = jd_str(sup, "metadata", "creationTimestamp", NULL);
	int64_t t = 0;

	if (ts == NULL || hib_parse_rfc3339(ts, &t, NULL) < 0)
		return 0;
	return t;
}

/* Decide r->d. Return: 0, or the schedule's or the override's error in @err. */
static int decide(struct sup_rec *r, struct ll_err *err)
{
	const char *ov_text = jd_annotation(r->sup, HIB_OVERRIDE_ANNOTATION);
	struct parsed_schedule ps = {0};
	struct hib_override ov;
	int rc = parse_schedule(r->h, r->sup, &ps, err);

	if (rc == 0 && ov_text)
		rc = hib_override_parse(ov_text, &ov, err);
	if (rc == 0) {
		struct sched_spec spec = {.sleep = ps.has_sleep ? &ps.sleep : NULL,
		                          .wake = ps.has_wake ? &ps.wake : NULL,
		                          .zone = ps.zone,
		                          .created = created_at(r->sup)};

		rc = sched_decide(&spec, ov_text ? &ov : NULL, r->now, &r->d, err);
	}
	tz_free(ps.zone);
	return rc;
}

/* ---------- reconcile ---------- */

/* When the supervisor last began to run (its newest transition), or to go (deletion). */
static int64_t wake_began(const struct sup_rec *r)
{
	const char *ts = jd_str(r->sup, "metadata", "deletionTimestamp", NULL);
	struct jval last = jval_at(jd_get(r->sup, "status", "transitions", NULL), 0);
	int64_t t = 0;

	if (ts == NULL && jval_str(jval_get(last, "state")) &&
	    strcmp(jval_str(jval_get(last, "state")), "running") == 0)
		ts = jval_str(jval_get(last, "time"));
	if (ts == NULL || hib_parse_rfc3339(ts, &t, NULL) < 0)
		return r->now; /* unknown: the grace runs from now */
	return t;
}

static void read_spec(struct sup_rec *r)
{
	struct jval order = jd_get(r->sup, "spec", "wakeOrder", NULL), v;
	bool seen[HK_WORKLOADS] = {0};
	size_t i;

	r->enforce = jd_bool(r->sup, false, "spec", "enforce", NULL);
	r->allow_exclusion = jd_bool(r->sup, false, "spec", "allowWorkloadExclusion", NULL);
	r->deleting = jd_str(r->sup, "metadata", "deletionTimestamp", NULL) != NULL;
	r->wake_began = wake_began(r);
	jval_foreach(order, i, v)
		for (int k = 0; k < HK_WORKLOADS; k++)
			if (!seen[k] && jval_str(v) &&
			    strcmp(jval_str(v), HIB_KINDS[k].kind) == 0) {
				r->order[r->norder++] = (enum hib_kind)k;
				seen[k] = true;
			}
	for (int k = 0; k < HK_WORKLOADS; k++) /* kinds not named wake after, in default order */
		if (!seen[k])
			r->order[r->norder++] = (enum hib_kind)k;
}

/* Write the status when it differs from the cached one. Return: whether it differed. */
static bool write_status(struct sup_rec *r, const char *invalid)
{
	json_t *status = report_status(r, invalid);
	bool changed = !jval_equal_json(jd_get(r->sup, "status", NULL), status);
	char why[512];

	if (changed && status_write(r->kc, &LL_RESOURCESUPERVISORS, r->name, status, STATUS_REPLACE,
	                            LANDLORD_FIELD_MANAGER, why, sizeof(why)) < 0) {
		log_warn("hibernation: status not written", "{s:s,s:s}", "supervisor", r->name,
		         "error", why);
		r->retry = true;
	} else {
		report_announce(r, invalid);
	}
	json_decref(status);
	return changed;
}

static struct ctrl_result outcome(struct sup_rec *r, int64_t now_ms_at)
{
	int64_t wait;

	if (r->retry)
		return CTRL_RESULT_RETRY;
	if (r->waiting_pods) /* workload events wake it sooner; this is for the grace's end */
		return CTRL_RESULT_AFTER(POD_WAIT_MS);
	if (r->deleting || r->d.next == 0)
		return CTRL_RESULT_DONE;
	wait = r->d.next * 1000 - now_ms_at + TIMER_SLACK_MS;
	return CTRL_RESULT_AFTER(wait > TIMER_SLACK_MS ? wait : TIMER_SLACK_MS);
}

/* After a wake: is every namespace of the supervisor awake, its reservation gone too? */
static bool nothing_asleep(const struct sup_rec *r)
{
	if (r->retry || r->waiting_pods)
		return false;
	for (size_t i = 0; i < r->nns; i++)
		if (r->nss[i].sleeping)
			return false;
	return true;
}

static void run(struct sup_rec *r)
{
	struct ll_err err = {{0}};
	const char *ov_text = jd_annotation(r->sup, HIB_OVERRIDE_ANNOTATION);

	read_spec(r);
	if (r->deleting) {
		r->d = (struct sched_decision){.state = SCHED_RUNNING};
		ns_reconcile_all(r);
		if (nothing_asleep(r) && win_release_all(r) && !r->retry && set_finalizer(r, false))
			report_forget(r);
		return;
	}
	if (!set_finalizer(r, true))
		return;
	if (decide(r, &err) < 0) { /* no transition: what sleeps stays asleep, and so on */
		if (write_status(r, err.msg))
			log_warn("hibernation: invalid schedule", "{s:s,s:s}", "supervisor",
			         r->name, "error", err.msg);
		return;
	}
	if (ov_text)
		settle_override(r, ov_text);
	/* The window comes before anything sleeps and goes after everything woke. */
	if (r->d.state != SCHED_SLEEPING || win_hold_all(r))
		ns_reconcile_all(r);
	if (r->d.state != SCHED_SLEEPING && nothing_asleep(r))
		win_release_all(r);
	write_status(r, NULL);
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct hib *h = ud;
	int64_t at = now_ms(h);
	struct sup_rec r = {.h = h, .kc = mgr_client(ctrl_mgr(c)), .name = key, .now = at / 1000};
	struct ctrl_result res;

	r.sup = inf_get_ref(h->supervisors, NULL, key);
	if (r.sup == NULL)
		return CTRL_RESULT_DONE;
	r.cfg = lcfg_current();
	run(&r);
	res = outcome(&r, at);
	free(r.nss);
	json_decref(r.reserved_used);
	lcfg_unref(r.cfg);
	jdoc_unref(r.sup);
	return res;
}

/* ---------- the controller ---------- */

struct hib *hib_new(const char *zoneinfo_dir)
{
	struct hib *h = xcalloc(1, sizeof(*h));

	h->zoneinfo_dir = zoneinfo_dir;
	h->announced = json_object();
	atomic_init(&h->shift_ms, 0);
	report_describe_metrics();
	pthread_mutex_init(&h->lock, NULL);
	return h;
}

void hib_free(struct hib *h)
{
	if (h == NULL)
		return;
	disc_free(h->disc);
	json_decref(h->announced);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

struct controller_def hib_controller_def(struct hib *h)
{
	return (struct controller_def){
	        .name = CONTROLLER_NAME,
	        .workers = 16, /* reconciles wait on the API server, not on CPU */
	        .setup = setup,
	        .reconcile = reconcile,
	        .ud = h};
}

/* Test hook: /debug/clock[?shift=SECONDS] */
static int hook_clock(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct hib *h = ud;
	const char *arg = http_req_arg(req, "shift");
	struct jdoc_list sups;
	char *end = NULL;
	long long shift = arg ? strtoll(arg, &end, 10) : 0;
	struct timespec ts;
	char when[CLOCK_UTC_MAX];

	if (arg && (end == arg || *end != '\0')) {
		buf_append_str(http_resp_body(resp), "shift must be a whole number of seconds\n");
		return 400;
	}
	atomic_fetch_add(&h->shift_ms, shift * 1000);
	if (h->supervisors && h->ctl && shift != 0) {
		sups = inf_list_ref(h->supervisors, NULL);
		for (size_t i = 0; i < sups.n; i++)
			ctrl_enqueue(h->ctl, jd_name(sups.items[i]));
		jdoc_list_release(&sups);
	}
	ts = (struct timespec){.tv_sec = now_ms(h) / 1000};
	clock_format_utc(&ts, 0, when);
	buf_appendf(http_resp_body(resp), "%s\n", when);
	if (shift != 0)
		log_info("test hook: hibernation clock shifted", "{s:I,s:s}", "seconds",
		         (json_int_t)shift, "now", when);
	return 200;
}

int hib_add_test_hooks(struct hib *h, struct mgr *m)
{
	return mgr_add_test_hook(m, "/debug/clock", hook_clock, h);
}
