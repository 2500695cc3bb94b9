/*
 * plan.c - the Plan controller: Plan status summarises the tenants on the plan, in a size that
 * does not grow with their number.
 *
 * status: tenants and namespaces (counts), quota.used and quota.hard (sums over the tenants, per
 * resource of the plan), tenantsNearLimit (at most 20 tenants, nearest to or over their limits
 * first; tenancy/planstatus.h defines the measure), observedGeneration and two conditions: Ready
 * (False, reason Invalid, when the plan's quantities do not parse) and WithinLimits (False,
 * reason TooManyNamespaces, naming the first 20 tenants with more namespaces than maxNamespaces
 * and how many more there are). Each tenant's own status has its full usage. The Tenant
 * controller splits and enforces the quota; this controller only reports, and enforcing
 * maxNamespaces at creation is the webhook's job.
 *
 * Incremental. Per plan the controller keeps a struct ps_plan (each tenant's contribution and
 * the running sums and orders) and the names of the tenants that changed since it last looked:
 * - the Tenant informer's mapping function (reflector thread) notes the tenant for the plan it
 *   names, then enqueues that plan; on an update it runs for the old and the new object, so a
 *   tenant moving from plan A to plan B is noted for both;
 * - the plan's reconcile takes the notes (under the lock), then reads each noted tenant from
 *   the cache: on this plan, its contribution is replaced (ps_plan_put); gone or on another
 *   plan, it is removed. A change is in the cache before it is noted, and notes are taken
 *   before the cache is read, so none is lost; one noted twice is read once.
 * - The first reconcile of a plan (after a start, or once the plan's state was dropped) builds
 *   it from the cache's plan index; notes are kept only for plans that have state. A restart
 *   therefore gives the same status (planstatus output does not depend on the order tenants
 *   came in) and writes nothing when nothing changed.
 * - Notes are bounded: when a plan has more than its tenants plus NOTES_SLACK (a follower keeps
 *   noting while it does not lead), they are dropped and the state is built afresh.
 * Status is written at most once a second per plan; bursts of changes are coalesced.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "controllers/controllers.h"
#include "kube/cache.h"
#include "kube/conditions.h"
#include "kube/status.h"
#include "tenancy/planstatus.h"
#include "tenancy/quotaplan.h"
#include "tenancy/tenant_model.h"

/* Plan status changes with every tenant on the plan; coalesce bursts into one write a second. */
#define STATUS_WRITE_INTERVAL_MS 1000
/* Notes a plan may hold beyond its tenant count before its state is built afresh instead. */
#define NOTES_SLACK    1024
#define BUILDS_METRIC  "landlord_plan_status_builds_total"
#define UPDATES_METRIC "landlord_plan_status_tenant_updates_total"
/* The WithinLimits message: PS_NAMES_MAX names of at most 253 bytes, and the words around. */
#define MESSAGE_MAX 8192

struct plan_state {
	char *name;               /* the plan's: the table's key */
	struct ps_plan *ps;       /* NULL until a reconcile builds it; reconcile-owned contents */
	struct cache_table noted; /* names (char *) of tenants changed since the last reconcile */
	bool rebuild;             /* notes were dropped: build afresh */
	size_t tenants;           /* ps's tenants after the last reconcile */
	long long last_write_ms;  /* monotonic; reconcile-only */
};

struct plan_ctl {
	struct inf *plans, *tenants;
	/* states and, in each, ps (the pointer), noted, rebuild, tenants. The reflector notes, the
	 * reconcile of a plan (one at a time per key) owns what ps points to and last_write_ms. */
	pthread_mutex_t lock;
	struct cache_table states; /* plan name -> struct plan_state */
};

static bool match_state(const void *item, const char *key)
{
	return strcmp(((const struct plan_state *)item)->name, key) == 0;
}

static bool match_name(const void *item, const char *key)
{
	return strcmp(item, key) == 0;
}

static void notes_clear(struct cache_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].item);
	cache_release(t);
}

static void state_free(struct plan_state *st)
{
	if (st == NULL)
		return;
	notes_clear(&st->noted);
	ps_plan_free(st->ps);
	free(st->name);
	free(st);
}

static void states_clear(struct plan_ctl *p)
{
	for (size_t i = 0; i < p->states.cap; i++)
		state_free(p->states.slots[i].item);
	cache_release(&p->states);
}

/* Reflector thread: tenant @name changed, and names plan @plan (before or after the change). */
static void note(struct plan_ctl *p, const char *plan, const char *name)
{
	struct plan_state *st;

	pthread_mutex_lock(&p->lock);
	st = cache_get(&p->states, plan);
	if (st && st->ps && !st->rebuild && !cache_get(&st->noted, name)) {
		if (st->noted.n >= st->tenants + NOTES_SLACK) {
			notes_clear(&st->noted);
			st->rebuild = true;
		} else {
			cache_put(&st->noted, name, xstrdup(name));
		}
	}
	pthread_mutex_unlock(&p->lock);
}

static void map_tenant(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                       void *ud)
{
	const char *plan = jd_str(obj, "spec", "plan", NULL), *name = jd_name(obj);

	if (plan == NULL)
		return;
	if (name)
		note(ud, plan, name);
	emit(plan, ctx);
}

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct plan_ctl *p = ud;
	/* Both whole, and shared with the Tenant controller (the same projection): the Plan's
	 * spec and status, the Tenants' spec.plan and status (namespaceCount, quota). */
	struct inf_opts plans = {.gvr = LL_PLANS}, tenants = {.gvr = LL_TENANTS};
	int rc;

	metrics_describe(BUILDS_METRIC, METRIC_COUNTER,
	                 "Plan status states built from every cached tenant of the plan", NULL, 0);
	metrics_describe(
	        UPDATES_METRIC, METRIC_COUNTER,
	        "Tenants whose contribution to their Plan's status was re-read one at a time", NULL,
	        0);
	/* a new manager: no worker or reflector runs yet, and every plan is built afresh */
	states_clear(p);
	p->states = CACHE_TABLE_INIT(match_state);
	p->plans = mgr_informer(m, &plans);
	p->tenants = mgr_informer(m, &tenants);
	if (p->plans == NULL || p->tenants == NULL)
		return -ENOMEM;
	rc = inf_add_index(p->tenants, TM_INDEX_PLAN, tm_index_plan, NULL);
	if (rc < 0 && rc != -EEXIST)
		return rc;
	ctrl_watch_primary(c, p->plans);
	ctrl_watch_mapped(c, p->tenants, map_tenant, p);
	return 0;
}

/* ---- catching up with the tenants ---- */

/* Tenant @name was noted for plan @key: take its contribution as the cache has it now. */
static void apply_tenant(struct plan_ctl *p, const char *key, struct ps_plan *ps, const char *name)
{
	const struct jdoc *t = inf_get_ref(p->tenants, NULL, name);
	const char *plan = jd_str(t, "spec", "plan", NULL);

	if (plan && strcmp(plan, key) == 0)
		ps_plan_put(ps, name, jd_get(t, "status", NULL));
	else
		ps_plan_remove(ps, name);
	jdoc_unref(t);
}

static void build(struct plan_ctl *p, const char *key, struct ps_plan *ps)
{
	struct jdoc_list tenants = inf_by_index_ref(p->tenants, TM_INDEX_PLAN, key);

	for (size_t i = 0; i < tenants.n; i++) {
		const char *name = jd_name(tenants.items[i]);

		if (name)
			ps_plan_put(ps, name, jd_get(tenants.items[i], "status", NULL));
	}
	jdoc_list_release(&tenants);
	metrics_add(BUILDS_METRIC, NULL, 1);
}

static struct plan_state *state_get_locked(struct plan_ctl *p, const char *key)
{
	struct plan_state *st = cache_get(&p->states, key);

	if (st == NULL) {
		st = xcalloc(1, sizeof(*st));
		st->name = xstrdup(key);
		st->noted = CACHE_TABLE_INIT(match_name);
		st->last_write_ms = clock_mono_ms() - STATUS_WRITE_INTERVAL_MS;
		cache_put(&p->states, key, st);
	}
	return st;
}

/* The plan's state, brought up to date with every tenant change noted so far. */
static struct plan_state *catch_up(struct plan_ctl *p, const char *key)
{
	struct ps_plan *old = NULL;
	struct cache_table noted;
	struct plan_state *st;
	bool fresh;

	pthread_mutex_lock(&p->lock);
	st = state_get_locked(p, key);
	fresh = st->ps == NULL || st->rebuild;
	if (fresh) {
		old = st->ps;
		st->ps = ps_plan_new();
		st->rebuild = false;
	}
	noted = st->noted;
	st->noted = CACHE_TABLE_INIT(match_name);
	pthread_mutex_unlock(&p->lock);

	ps_plan_free(old);
	if (fresh)
		build(p, key, st->ps);
	for (size_t i = 0; !fresh && i < noted.cap; i++)
		if (noted.slots[i].item)
			apply_tenant(p, key, st->ps, noted.slots[i].item);
	if (!fresh && noted.n)
		metrics_add(UPDATES_METRIC, NULL, (double)noted.n);
	notes_clear(&noted);

	pthread_mutex_lock(&p->lock);
	st->tenants = ps_plan_tenants(st->ps);
	pthread_mutex_unlock(&p->lock);
	return st;
}

static void forget(struct plan_ctl *p, const char *key)
{
	struct plan_state *st;

	pthread_mutex_lock(&p->lock);
	st = cache_del(&p->states, key);
	pthread_mutex_unlock(&p->lock);
	state_free(st);
}

/* ---- the status ---- */

/* Is every quantity of the plan valid? Fills @why when not. */
static bool plan_valid(struct jval plan, char *why, size_t len)
{
	struct qp_result res = {0};
	struct ll_err err;
	int rc = qp_compute(jval_path(plan, "spec", "resourceQuota", "hard", NULL), NULL, 0, &res,
	                    &err);

	qp_result_release(&res);
	if (rc < 0)
		snprintf(why, len, "spec.resourceQuota.hard: %.400s", err.msg);
	return rc == 0;
}

static json_t *within_limits(const json_t *conds, const struct ps_plan *ps, long long max,
                             long long gen)
{
	struct buf names = BUF_INIT(MESSAGE_MAX), msg = BUF_INIT(MESSAGE_MAX + 128);
	size_t over = ps_plan_over_namespaces(ps, max, PS_NAMES_MAX, &names);
	json_t *t;

	if (over)
		buf_appendf(&msg, "%zu %s more namespaces than maxNamespaces (%lld): %s", over,
		            over == 1 ? "tenant has" : "tenants have", max, buf_cstr(&names));
	t = cond_set(conds, "WithinLimits", over ? "False" : "True",
	             over ? "TooManyNamespaces" : "WithinLimits",
	             over ? buf_cstr(&msg) : "every tenant is within maxNamespaces", gen);
	buf_release(&names);
	buf_release(&msg);
	return t;
}

static json_t *desired_status(const struct jdoc *doc, const json_t *plan, const struct ps_plan *ps)
{
	long long gen = jx_generation(plan), max = jx_int(plan, -1, "spec", "maxNamespaces", NULL);
	json_t *status = ps_plan_status(ps, jx_get(plan, "spec", "resourceQuota", "hard", NULL));
	json_t *conds;
	char msg[512] = "";
	bool valid = plan_valid(jdoc_root(doc), msg, sizeof(msg));

	conds = cond_set(jx_get(plan, "status", "conditions", NULL), "Ready",
	                 valid ? "True" : "False", valid ? "Valid" : "Invalid",
	                 valid ? "plan is valid" : msg, gen);
	json_object_set_new(status, "conditions", within_limits(conds, ps, max, gen));
	json_object_set_new(status, "observedGeneration", json_integer((json_int_t)gen));
	json_decref(conds);
	return status;
}

/* Write @status unless the plan's status was written less than a second ago. */
static struct ctrl_result write_status(struct controller *c, struct plan_state *st, const char *key,
                                       const json_t *status)
{
	long long now = clock_mono_ms(), since = now - st->last_write_ms;
	char why[512];

	if (since < STATUS_WRITE_INTERVAL_MS)
		return CTRL_RESULT_AFTER(STATUS_WRITE_INTERVAL_MS - since);
	st->last_write_ms = now;
	if (status_write(mgr_client(ctrl_mgr(c)), &LL_PLANS, key, status, STATUS_REPLACE,
	                 LANDLORD_FIELD_MANAGER, why, sizeof(why)) < 0) {
		log_warn("plan status write failed", "{s:s,s:s}", "plan", key, "error", why);
		return CTRL_RESULT_RETRY;
	}
	return CTRL_RESULT_DONE;
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct plan_ctl *p = ud;
	const struct jdoc *doc = inf_get_key_ref(p->plans, key);
	/* the one primary object (its status is small), as jansson for cond_set() and qp */
	json_t *plan = NULL, *status = NULL;
	struct ctrl_result r = CTRL_RESULT_DONE;
	struct plan_state *st;

	if (doc == NULL) {
		forget(p, key);
		goto out;
	}
	st = catch_up(p, key);
	plan = jval_to_json(jdoc_root(doc));
	status = desired_status(doc, plan, st->ps);
	if (!jval_equal_json(jd_get(doc, "status", NULL), status))
		r = write_status(c, st, key, status);
out:
	json_decref(status);
	json_decref(plan);
	jdoc_unref(doc);
	return r;
}

struct controller_def plan_controller_def(void)
{
	static struct plan_ctl ctl = {.lock = PTHREAD_MUTEX_INITIALIZER};

	return (struct controller_def){
	        .name = "plan",
	        .workers = 1,
	        .setup = setup,
	        .reconcile = reconcile,
	        .ud = &ctl,
	};
}
