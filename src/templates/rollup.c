/*
 * rollup.c - what an instance's workloads are doing, live from watches: its Deployments,
 * StatefulSets and DaemonSets ready and desired, and its pods by phase (the pods that a
 * workload of the instance selects, in its namespace).
 *
 * The workload informers select the instance label and keep the replica counts and the
 * selector. Pods are not cached as documents: a store-less pod informer feeds one compact
 * store (podstore.h: per pod its phase and a shared, interned label set), which both roll-ups
 * share. A workload change enqueues the instances of the namespace, a pod change only when a
 * pod came, went, or changed its phase or labels; their status write is coalesced
 * (ti_status.c).
 */
#include <stdio.h>

#include "api/api.h"
#include "base/json.h"
#include "kube/selector.h"
#include "templates/podstore.h"
#include "templates/ti_internal.h"

#define IDX_OWNER "owner"   /* workloads: "<namespace>/<instance>" of their label */
#define PODS      "ti-pods" /* the pod store's informer and gauges */

static const struct kc_gvr TPL_DEPLOYMENTS = {"apps", "v1", "deployments", "Deployment", true};
static const struct kc_gvr TPL_STATEFULSETS = {"apps", "v1", "statefulsets", "StatefulSet", true};
static const struct kc_gvr TPL_DAEMONSETS = {"apps", "v1", "daemonsets", "DaemonSet", true};

static void index_owner(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                        void *ud)
{
	const char *ns = jd_namespace(obj), *ti = jd_label(obj, ud);
	char key[512];

	if (ns && ti) {
		snprintf(key, sizeof(key), "%s/%s", ns, ti);
		emit(key, ctx);
	}
}

/* Something in a namespace changed: its instances look again. */
static void map_to_instances(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                             void *ud)
{
	struct templates *t = ud;
	struct jdoc_list l = inf_list_ref(t->instances, jd_namespace(obj));
	char key[512];

	for (size_t i = 0; i < l.n; i++) {
		snprintf(key, sizeof(key), "%s/%s", jd_namespace(l.items[i]), jd_name(l.items[i]));
		emit(key, ctx);
	}
	jdoc_list_release(&l);
}

static struct inf *workload_informer(struct mgr *m, const struct kc_gvr *gvr, const char *label,
                                     const char *name)
{
	static const char *const keep[] = {"metadata.labels",
	                                   "spec.replicas",
	                                   "spec.selector",
	                                   "status.readyReplicas",
	                                   "status.numberReady",
	                                   "status.desiredNumberScheduled",
	                                   NULL};

	return mgr_informer(
	        m, &(struct inf_opts){
	                   .gvr = *gvr, .label_selector = label, .keep = keep, .name = name});
}

/* The pod store both roll-ups share, made by the first to ask (setups run one at a time). */
static struct podstore *pod_store(struct templates *t, struct mgr *m)
{
	static const char *const keep[] = {"metadata.labels", "status.phase", NULL};
	struct inf *inf;

	if (t->pods)
		return t->pods;
	inf = mgr_informer(
	        m,
	        &(struct inf_opts){.gvr = KC_PODS, .keep = keep, .name = PODS, .no_store = true});
	if (inf == NULL)
		return NULL;
	t->pods = podstore_new(PODS);
	podstore_watch(t->pods, inf);
	return t->pods;
}

/* The pods of @ns changed: its instances look again. */
static void pods_changed(const char *ns, void *ud)
{
	struct templates *t = ud;
	struct jdoc_list l = inf_list_ref(t->instances, ns);
	char key[512];

	for (size_t i = 0; i < l.n; i++) {
		snprintf(key, sizeof(key), "%s/%s", ns, jd_name(l.items[i]));
		ctrl_enqueue(t->ti, key);
	}
	jdoc_list_release(&l);
}

int tpl_rollup_setup(struct templates *t, struct controller *c, struct mgr *m)
{
	t->workloads[0] = workload_informer(m, &TPL_DEPLOYMENTS, LABEL_TI, "ti-deployments");
	t->workloads[1] = workload_informer(m, &TPL_STATEFULSETS, LABEL_TI, "ti-statefulsets");
	t->workloads[2] = workload_informer(m, &TPL_DAEMONSETS, LABEL_TI, "ti-daemonsets");
	for (int i = 0; i < 3; i++) {
		if (t->workloads[i] == NULL)
			return -1;
		inf_add_index(t->workloads[i], IDX_OWNER, index_owner, (void *)LABEL_TI);
		ctrl_watch_mapped(c, t->workloads[i], map_to_instances, t);
	}
	if (pod_store(t, m) == NULL)
		return -1;
	podstore_listen(t->pods, pods_changed, t);
	return 0;
}

/* A TGI's workload changed: that TGI. */
static void map_to_group(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                         void *ud)
{
	const char *name = jd_label(obj, LABEL_TGI);

	(void)ud;
	if (name)
		emit(name, ctx);
}

static void enqueue_key(const char *key, void *ctx)
{
	ctrl_enqueue(ctx, key);
}

/* The pods of @ns changed: the TGIs with workloads there. */
static void pods_changed_group(const char *ns, void *ud)
{
	struct templates *t = ud;

	for (int k = 0; k < 3; k++) {
		struct jdoc_list l = inf_by_index_ref(t->group_workloads[k], "namespace", ns);

		for (size_t i = 0; i < l.n; i++)
			map_to_group(l.items[i], enqueue_key, t->tgi, NULL);
		jdoc_list_release(&l);
	}
}

int tpl_rollup_setup_group(struct templates *t, struct controller *c, struct mgr *m)
{
	t->group_workloads[0] =
	        workload_informer(m, &TPL_DEPLOYMENTS, LABEL_TGI, "tgi-deployments");
	t->group_workloads[1] =
	        workload_informer(m, &TPL_STATEFULSETS, LABEL_TGI, "tgi-statefulsets");
	t->group_workloads[2] = workload_informer(m, &TPL_DAEMONSETS, LABEL_TGI, "tgi-daemonsets");
	for (int i = 0; i < 3; i++) {
		if (t->group_workloads[i] == NULL)
			return -1;
		inf_add_index(t->group_workloads[i], IDX_OWNER, index_owner, (void *)LABEL_TGI);
		inf_add_index(t->group_workloads[i], "namespace", inf_index_namespace, NULL);
		ctrl_watch_mapped(c, t->group_workloads[i], map_to_group, t);
	}
	if (pod_store(t, m) == NULL)
		return -1;
	podstore_listen(t->pods, pods_changed_group, t);
	return 0;
}

/* Ready and desired of one workload document. */
static void count_workload(const struct jdoc *w, int kind, struct tpl_row *row)
{
	struct tpl_ready_desired *rd = kind == 0   ? &row->deployments
	                               : kind == 1 ? &row->stateful_sets
	                                           : &row->daemon_sets;

	if (kind == 2) {
		rd->desired += jd_int(w, 0, "status", "desiredNumberScheduled", NULL);
		rd->ready += jd_int(w, 0, "status", "numberReady", NULL);
	} else {
		rd->desired += jd_int(w, 1, "spec", "replicas", NULL);
		rd->ready += jd_int(w, 0, "status", "readyReplicas", NULL);
	}
}

#define ROLLUP_SELECTORS_MAX 256

static bool rollup_of(struct templates *t, struct inf *const *workloads, const char *ns,
                      const char *instance, struct tpl_row *row)
{
	struct sel *selectors[ROLLUP_SELECTORS_MAX] = {0};
	char key[512];
	size_t n = 0;
	bool ready = true;

	snprintf(key, sizeof(key), "%s/%s", ns, instance);
	for (int k = 0; k < 3; k++) {
		struct jdoc_list l = inf_by_index_ref(workloads[k], IDX_OWNER, key);

		for (size_t i = 0; i < l.n; i++) {
			json_t *sel = jval_to_json(jd_get(l.items[i], "spec", "selector", NULL));

			count_workload(l.items[i], k, row);
			if (n < ROLLUP_SELECTORS_MAX && sel &&
			    sel_from_json(sel, &selectors[n], NULL) == 0) {
				if (sel_is_empty(selectors[n]))
					sel_free(selectors[n]); /* selects no pod of its own */
				else
					n++;
			}
			json_decref(sel);
		}
		jdoc_list_release(&l);
	}
	podstore_count(t->pods, ns, selectors, n, row);
	for (size_t i = 0; i < n; i++)
		sel_free(selectors[i]);
	ready = row->deployments.ready >= row->deployments.desired &&
	        row->stateful_sets.ready >= row->stateful_sets.desired &&
	        row->daemon_sets.ready >= row->daemon_sets.desired;
	return ready;
}

bool tpl_rollup(struct templates *t, const char *ns, const char *instance, struct tpl_row *row)
{
	return rollup_of(t, t->workloads, ns, instance, row);
}

bool tpl_rollup_group(struct templates *t, const char *ns, const char *tgi, struct tpl_row *row)
{
	return rollup_of(t, t->group_workloads, ns, tgi, row);
}
