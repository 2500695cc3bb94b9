/*
 * namespaces.c - which namespaces a ResourceSupervisor holds, and each one's sleep mark: the
 * label landlord.dev/sleeping (advisory or enforced) and the quota reservation
 * landlord.dev/sleep-reserved (its landlord-quota's status.used when it went to sleep, and the
 * supervisor), written in one patch before any workload goes down and removed after every
 * workload is up again (in one patch, or the reservation later, once the pods are back).
 * Namespaces are handled NS_PARALLEL at a time, each by one thread in order; each thread keeps
 * its own outcome (a copy of the reconcile's), merged when all are done. Only landlord and cluster
 * administrators may write landlord.dev/ keys on a namespace (the landlord-namespace-metadata
 * policy), so the mark can be trusted: it is how a supervisor finds what it holds after its
 * selector changed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "hibernation/supervisor_internal.h"
#include "kube/selector.h"

/* How long after a wake began the reservation waits for the workloads' pods. */
#define WAKE_GRACE_S 60

/* Append the operations of the array @take (its reference is taken) to @body. */
static void json_extend_ops(json_t *body, json_t *take)
{
	json_array_extend(body, take);
	json_decref(take);
}

struct sel *ns_selector(const struct jdoc *sup)
{
	struct jval ls = jd_get(sup, "spec", "namespaces", "labelSelector", NULL);
	json_t *sel_json;
	struct sel *sel = NULL;

	if (jval_type(ls) != JT_OBJECT)
		return NULL;
	sel_json = jval_to_json(ls);
	if (sel_from_json(sel_json, &sel, NULL) != 0)
		sel = NULL; /* the CRD's schema keeps this from happening: selects nothing */
	json_decref(sel_json);
	return sel;
}

static const char *ns_label(const char *key, void *ud)
{
	return jd_label(ud, key);
}

bool ns_selected(const struct jdoc *sup, const struct sel *sel, const struct jdoc *ns)
{
	struct jval names = jd_get(sup, "spec", "namespaces", "names", NULL), v;
	const char *name = jd_name(ns);
	struct sel *own = sel ? NULL : ns_selector(sup);
	bool found = false;
	size_t i;

	jval_foreach(names, i, v)
		if (jval_str(v) && name && strcmp(jval_str(v), name) == 0)
			found = true;
	if (!found && (sel || own))
		found = sel_matches_lookup(sel ? sel : own, ns_label, (void *)ns);
	sel_free(own);
	return found;
}

const char *ns_excluded(const struct lcfg *cfg, const struct jdoc *ns)
{
	const char *name = jd_name(ns), *flag = jd_label(ns, LABEL_HIB_EXCLUDE);

	if (name == NULL || strcmp(name, LANDLORD_SYSTEM_NAMESPACE) == 0 ||
	    strncmp(name, "kube-", 5) == 0)
		return "SystemNamespace";
	if (lcfg_is_privileged_namespace(cfg, name))
		return "PrivilegedNamespace";
	if (flag && strcmp(flag, "true") == 0)
		return "Excluded";
	if (jd_str(ns, "metadata", "deletionTimestamp", NULL))
		return "Terminating";
	return NULL;
}

const char *ns_sleeper(const struct jdoc *ns, char *buf, size_t len)
{
	const char *text = jd_annotation(ns, HIB_RESERVED_ANNOTATION);
	struct hib_reserved *res;
	const char *who = NULL;

	if (text == NULL)
		return NULL;
	res = xmalloc(sizeof(*res));
	if (hib_reserved_parse(text, res, NULL) == 0 && strlen(res->supervisor) < len) {
		memcpy(buf, res->supervisor, strlen(res->supervisor) + 1);
		who = buf;
	}
	free(res);
	return who;
}

struct ns_report *ns_report_add(struct sup_rec *r, const char *ns)
{
	struct ns_report *rep;

	if (r->nns == r->cap_ns) {
		r->cap_ns = r->cap_ns ? 2 * r->cap_ns : 16;
		r->nss = xrealloc(r->nss, r->cap_ns * sizeof(*r->nss));
	}
	rep = &r->nss[r->nns++];
	*rep = (struct ns_report){0};
	snprintf(rep->name, sizeof(rep->name), "%s", ns);
	return rep;
}

/* The reservation to write: the namespace's landlord-quota status.used (none: nothing used). */
static char *reservation_text(struct sup_rec *r, const char *ns)
{
	const struct jdoc *rq = inf_get_ref(r->h->quotas, ns, QUOTA_NAME);
	struct jval used = rq ? jd_get(rq, "status", "used", NULL) : (struct jval){0}, v;
	struct hib_reserved *res = xmalloc(sizeof(*res));
	struct ll_err err = {{0}};
	const char *key;
	char *text = NULL;
	size_t i;

	if (hib_reserved_init(res, r->name, &err) == 0) {
		jval_foreach_member(used, i, key, v)
			if (jval_str(v) && hib_reserved_add(res, key, jval_str(v), &err) < 0)
				log_warn("hibernation: a quota resource is not reserved",
				         "{s:s,s:s,s:s}", "namespace", ns, "resource", key, "error",
				         err.msg);
		text = hib_reserved_format(res);
	}
	free(res);
	jdoc_unref(rq);
	return text;
}

/* An "add" of @key=@value into the map at @map ("/metadata/labels"), made if missing. */
static json_t *add_op(const struct jdoc *ns, const char *map, const char *key, const char *value)
{
	char path[128];

	if (jd_get(ns, "metadata", map + sizeof("/metadata/") - 1, NULL).doc == NULL)
		return json_pack("{s:s,s:s,s:{s:s}}", "op", "add", "path", map, "value", key,
		                 value);
	snprintf(path, sizeof(path), "%s/landlord.dev~1%s", map, key + strlen(LANDLORD_KEY_PREFIX));
	return json_pack("{s:s,s:s,s:s}", "op", "add", "path", path, "value", value);
}

/* Label and reserve @ns (one patch, guarded by its resourceVersion); true once it is marked. */
static bool mark(struct sup_rec *r, const struct jdoc *ns)
{
	const char *want = r->enforce ? SLEEPING_ENFORCED : SLEEPING_ADVISORY;
	const char *have = jd_label(ns, LABEL_SLEEPING);
	const char *reserved = jd_annotation(ns, HIB_RESERVED_ANNOTATION);
	char *text;
	json_t *body;
	bool ok;

	if (have && strcmp(have, want) == 0 && reserved)
		return true;
	text = reserved ? xstrdup(reserved) : reservation_text(r, jd_name(ns));
	if (text == NULL)
		return false;
	body = json_pack("[{s:s,s:s,s:s}]", "op", "test", "path", "/metadata/resourceVersion",
	                 "value", jd_resource_version(ns));
	json_array_append_new(body, add_op(ns, "/metadata/labels", LABEL_SLEEPING, want));
	json_array_append_new(body,
	                      add_op(ns, "/metadata/annotations", HIB_RESERVED_ANNOTATION, text));
	ok = sup_patch(r, &KC_NAMESPACES, NULL, jd_name(ns), KC_PATCH_JSON, body, NULL);
	json_decref(body);
	free(text);
	return ok;
}

/* Remove the label (@label) and the reservation (@reservation), testing that the reservation is
 * still this one's. */
static bool unmark(struct sup_rec *r, const struct jdoc *ns, bool label, bool reservation)
{
	static const char rpath[] = "/metadata/annotations/landlord.dev~1sleep-reserved";
	const char *text = jd_annotation(ns, HIB_RESERVED_ANNOTATION);
	json_t *body = json_array();
	bool ok;

	if (text && reservation)
		json_extend_ops(body,
		                json_pack("[{s:s,s:s,s:s},{s:s,s:s}]", "op", "test", "path", rpath,
		                          "value", text, "op", "remove", "path", rpath));
	if (label && jd_label(ns, LABEL_SLEEPING))
		json_array_append_new(body, json_pack("{s:s,s:s}", "op", "remove", "path",
		                                      "/metadata/labels/landlord.dev~1sleeping"));
	ok = json_array_size(body) == 0 ||
	     sup_patch(r, &KC_NAMESPACES, NULL, jd_name(ns), KC_PATCH_JSON, body, NULL);
	json_decref(body);
	return ok;
}

static void add_reserved(struct sup_rec *r, const struct jdoc *ns)
{
	const char *text = jd_annotation(ns, HIB_RESERVED_ANNOTATION);
	struct hib_reserved *res;

	if (text == NULL)
		return;
	res = xmalloc(sizeof(*res));
	if (hib_reserved_parse(text, res, NULL) == 0) {
		if (r->reserved_used == NULL)
			r->reserved_used = json_object();
		for (size_t i = 0; i < res->count; i++)
			json_object_set_new(r->reserved_used, res->used[i].resource,
			                    json_string(res->used[i].quantity));
	}
	free(res);
}

static void sleep_one(struct sup_rec *r, const struct jdoc *ns, struct ns_report *rep)
{
	char holder[HIB_NAME_MAX + 1];
	const char *other = ns_sleeper(ns, holder, sizeof(holder));

	if (other && strcmp(other, r->name) != 0) {
		wl_report(r, jd_name(ns), "Namespace", jd_name(ns), "skipped", "HeldByAnother",
		          "asleep under supervisor %s", other);
		return;
	}
	if (!mark(r, ns))
		return; /* nothing goes down in a namespace that is not marked */
	rep->sleeping = true;
	wl_sleep_namespace(r, jd_name(ns), rep);
	add_reserved(r, ns);
}

/*
 * Wake: every workload up, then the label goes; the reservation stays until the workloads have
 * their pods again (or WAKE_GRACE_S after the wake began, those still short are reported), so
 * that what the namespace used is not handed to another namespace meanwhile. A workload the
 * quota keeps from coming back is reported QuotaExceeded for as long as it is.
 */
static void wake_one(struct sup_rec *r, const struct jdoc *ns, struct ns_report *rep)
{
	bool grace_over = r->now >= r->wake_began + WAKE_GRACE_S;
	bool reserved = jd_annotation(ns, HIB_RESERVED_ANNOTATION) != NULL;
	size_t short_of_pods;
	bool wait;

	rep->sleeping = true; /* until it is unmarked */
	if (!wl_wake_namespace(r, jd_name(ns), rep))
		return;
	/* QuotaExceeded is reported for as long as it lasts, reserved or not */
	short_of_pods = wl_short(r, jd_name(ns), rep, grace_over && reserved);
	wait = reserved && short_of_pods > 0 && !grace_over && !r->deleting; /* deleted: none */
	if (!unmark(r, ns, true, !wait)) /* one patch when nothing waits for pods */
		return;
	rep->sleeping = false;
	r->waiting_pods = r->waiting_pods || wait;
}

/* Was @ns put to sleep by this supervisor (its reservation says so)? */
static bool held_here(struct sup_rec *r, const struct jdoc *ns)
{
	char holder[HIB_NAME_MAX + 1];
	const char *who = ns_sleeper(ns, holder, sizeof(holder));

	return who && strcmp(who, r->name) == 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(jd_name(*(const struct jdoc *const *)a),
	              jd_name(*(const struct jdoc *const *)b));
}

static void append(struct jdoc_list *to, struct jdoc_list *from)
{
	to->items = xrealloc(to->items, (to->n + from->n) * sizeof(to->items[0]));
	memcpy(to->items + to->n, from->items, from->n * sizeof(from->items[0]));
	to->n += from->n;
	free(from->items);
	*from = (struct jdoc_list){0};
}

/*
 * The namespaces to look at: with a label selector every namespace, else those named; and
 * every namespace marked asleep (by any supervisor: the reservation says whose). Sorted, with
 * duplicates next to each other.
 */
static struct jdoc_list candidates(struct sup_rec *r)
{
	struct jval names = jd_get(r->sup, "spec", "namespaces", "names", NULL), v;
	struct jdoc_list out = {0}, more;
	size_t i;

	if (jval_type(jd_get(r->sup, "spec", "namespaces", "labelSelector", NULL)) == JT_OBJECT) {
		out = inf_list_ref(r->h->namespaces, NULL);
	} else {
		jval_foreach(names, i, v) {
			const struct jdoc *ns = inf_get_ref(r->h->namespaces, NULL, jval_str(v));
			struct jdoc_list one = {.items = xmalloc(sizeof(ns)), .n = ns != NULL};

			one.items[0] = ns;
			append(&out, &one);
		}
	}
	for (int k = 0; k < 2; k++) {
		more = inf_by_index_ref(r->h->namespaces, LABEL_SLEEPING,
		                        k ? SLEEPING_ENFORCED : SLEEPING_ADVISORY);
		append(&out, &more);
	}
	if (out.n > 1)
		qsort(out.items, out.n, sizeof(out.items[0]), by_name);
	return out;
}

/* One namespace's turn: sleep it or wake it, as the supervisor wants. */
struct ns_task {
	const struct jdoc *ns;
	struct ns_report *rep;
	bool sleep;
};

struct ns_pass {
	struct ns_task *tasks;
	size_t n;
	atomic_size_t next; /* the next task to take */
};

/* A worker's own reconcile state: the parent's, with its own outcome (merged in merge()). */
struct ns_worker {
	struct ns_pass *pass;
	struct sup_rec rec;
	pthread_t thread;
};

static void run_task(struct sup_rec *r, const struct ns_task *t)
{
	if (t->sleep)
		sleep_one(r, t->ns, t->rep);
	else
		wake_one(r, t->ns, t->rep);
}

/* Tasks are taken in order, so each worker's reported workloads are in namespace order. */
static void *ns_worker_main(void *arg)
{
	struct ns_worker *w = arg;
	size_t i;

	while ((i = atomic_fetch_add(&w->pass->next, 1)) < w->pass->n) {
		w->rec.ns_index = i;
		run_task(&w->rec, &w->pass->tasks[i]);
	}
	return NULL;
}

/* The worker whose next listed workload comes first in namespace order, or -1: none left. */
static int first_worker(struct ns_worker *ws, const size_t *at, size_t nw)
{
	int best = -1;

	for (size_t w = 0; w < nw; w++)
		if (at[w] < ws[w].rec.nitems &&
		    (best < 0 ||
		     ws[w].rec.items[at[w]].ns_index < ws[best].rec.items[at[best]].ns_index))
			best = (int)w;
	return best;
}

/*
 * The workers' outcomes into the parent. The workloads listed are the first in namespace
 * order: each worker's list is in that order, and each of the first REPORT_WORKLOADS_MAX
 * overall is among its worker's first, so the listing is the one a single pass would make.
 */
static void merge(struct sup_rec *r, struct ns_worker *ws, size_t nw)
{
	size_t at[NS_PARALLEL] = {0}, counted = r->nitems + r->more_items;
	int w;

	for (size_t i = 0; i < nw; i++) {
		struct sup_rec *c = &ws[i].rec;

		counted += c->nitems + c->more_items;
		r->retry = r->retry || c->retry;
		r->waiting_pods = r->waiting_pods || c->waiting_pods;
		if (c->reserved_used && r->reserved_used == NULL)
			r->reserved_used = json_object();
		if (c->reserved_used)
			json_object_update(r->reserved_used, c->reserved_used);
		json_decref(c->reserved_used);
	}
	while (r->nitems < REPORT_WORKLOADS_MAX && (w = first_worker(ws, at, nw)) >= 0)
		r->items[r->nitems++] = ws[w].rec.items[at[w]++];
	r->more_items = counted - r->nitems;
}

/* Run the tasks, NS_PARALLEL namespaces at a time (each namespace's writes stay in order). */
static void run_tasks(struct sup_rec *r, struct ns_task *tasks, size_t n)
{
	struct ns_pass pass = {.tasks = tasks, .n = n};
	size_t nw = n < NS_PARALLEL ? n : NS_PARALLEL, started = 0;
	struct ns_worker *ws;

	if (n <= 1) {
		for (size_t i = 0; i < n; i++)
			run_task(r, &tasks[i]);
		return;
	}
	atomic_init(&pass.next, 0);
	ws = xcalloc(nw, sizeof(*ws));
	for (size_t w = 0; w < nw; w++) {
		ws[w].pass = &pass;
		ws[w].rec = *r;
		ws[w].rec.nitems = ws[w].rec.more_items = 0;
		ws[w].rec.retry = ws[w].rec.waiting_pods = false;
		ws[w].rec.reserved_used = NULL;
		if (w > 0 && pthread_create(&ws[w].thread, NULL, ns_worker_main, &ws[w]) != 0)
			break; /* fewer threads: this one's share goes to the others */
		started = w + 1;
	}
	ns_worker_main(&ws[0]);
	for (size_t w = 1; w < started; w++)
		pthread_join(ws[w].thread, NULL);
	merge(r, ws, started);
	free(ws);
}

void ns_reconcile_all(struct sup_rec *r)
{
	struct jdoc_list all = candidates(r);
	struct sel *sel = ns_selector(r->sup); /* once, not per namespace */
	struct ns_task *tasks = xcalloc(all.n ? all.n : 1, sizeof(*tasks));
	size_t n = 0;

	for (size_t i = 0; i < all.n; i++) {
		const struct jdoc *ns = all.items[i];
		bool wanted =
		        !r->deleting && ns_selected(r->sup, sel, ns) && !ns_excluded(r->cfg, ns);

		if (i > 0 && strcmp(jd_name(all.items[i - 1]), jd_name(ns)) == 0)
			continue;
		if (!wanted && !held_here(r, ns))
			continue;
		tasks[n++] =
		        (struct ns_task){.ns = ns, .sleep = wanted && r->d.state == SCHED_SLEEPING};
	}
	for (size_t i = 0; i < n; i++) /* the rows first: ns_report_add() may move them */
		ns_report_add(r, jd_name(tasks[i].ns));
	for (size_t i = 0; i < n; i++)
		tasks[i].rep = &r->nss[r->nns - n + i];
	run_tasks(r, tasks, n);
	free(tasks);
	sel_free(sel);
	jdoc_list_release(&all);
}
