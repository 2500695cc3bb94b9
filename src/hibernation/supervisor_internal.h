/*
 * supervisor_internal.h - what the files of the ResourceSupervisor controller share.
 *
 *   supervisor.c  informers, event mapping, the reconcile, the finalizer, the override
 *   namespaces.c  which namespaces, and each one's label and quota reservation
 *   workloads.c   each workload's sleep and wake (one guarded JSON patch each)
 *   report.c      status: namespaces, workloads reported, transitions, freed, conditions
 *   syncwindow.c  the Argo CD deny sync window held on spec.argocd.appProjects while asleep
 */
#ifndef LANDLORD_SUPERVISOR_INTERNAL_H
#define LANDLORD_SUPERVISOR_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/jdoc.h"
#include "hibernation/schedule.h"
#include "hibernation/supervisor.h"
#include "kube/informer.h"
#include "tenancy/landlordconfig.h"

/* Labels and annotations of the feature (docs/hibernation.md). */
#define LABEL_SLEEPING          "landlord.dev/sleeping" /* advisory or enforced */
#define LABEL_HIB_EXCLUDE       "landlord.dev/hibernation-exclude"
#define SLEEPING_ADVISORY       "advisory"
#define SLEEPING_ENFORCED       "enforced"
#define SLEEP_WINDOW_ANNOTATION "landlord.dev/sleep-window" /* on AppProjects: the holders */
#define REPORT_WORKLOADS_MAX    20                          /* status.workloads */
#define REPORT_TRANSITIONS      10                          /* status.transitions */
/* Namespaces handled at once by one reconcile (each one's writes stay in their order). */
#define NS_PARALLEL 4

/*
 * The kinds that sleep. The workloads first, in the default wake order (StatefulSets first;
 * sleep goes backwards); then KEDA's, paused before the workloads go down and resumed after
 * they are up. Argo Rollouts and KEDA are optional: watched once discovery finds their CRDs.
 */
enum hib_kind {
	HK_STATEFULSET,
	HK_DEPLOYMENT,
	HK_REPLICASET,
	HK_ROLLOUT,
	HK_JOB,
	HK_CRONJOB,
	HK_WORKLOADS, /* the kinds of spec.wakeOrder end here */
	HK_SCALEDOBJECT = HK_WORKLOADS,
	HK_SCALEDJOB,
	HK_COUNT
};

struct hib_kind_def {
	const char *kind;          /* as in spec.wakeOrder */
	struct kc_gvr gvr;         /* as the API serves it */
	enum hib_saved_field what; /* what sleep changes (tenancy/hibernation.h) */
	bool optional;             /* a CRD that may be missing (found by discovery) */
};
extern const struct hib_kind_def HIB_KINDS[HK_COUNT];

/* KEDA's annotations (its pause): the value each has while asleep. */
#define KEDA_PAUSED_REPLICAS "autoscaling.keda.sh/paused-replicas"
#define KEDA_PAUSED          "autoscaling.keda.sh/paused"

struct sup_rec;
/**
 * hib_work() - the synced informer of kind @k, or NULL: an optional kind whose CRD is not
 * installed (none of it to handle), or installed and not read yet (its workloads are left for a
 * later reconcile: r->retry is set).
 */
struct inf *hib_work(struct sup_rec *r, enum hib_kind k);

/** hib_projects() - the synced AppProject informer, or NULL as hib_work() says. */
struct inf *hib_projects(struct sup_rec *r);

struct hib {
	const char *zoneinfo_dir; /* NULL: the system's */
	struct controller *ctl;
	struct disc *disc; /* finds the optional kinds */
	struct inf *supervisors, *namespaces, *quotas, *crds;
	pthread_mutex_t lock;       /* work[] of optional kinds, once made */
	struct inf *work[HK_COUNT]; /* NULL: an optional kind not found yet */
	struct inf *projects;       /* AppProjects; NULL: not found yet */
	json_t *announced;          /* supervisor -> the state last announced (report.c), locked */
	atomic_llong shift_ms;      /* the test clock's offset from the wall clock */
};

/* One namespace's outcome of a reconcile. */
struct ns_report {
	char name[64];
	bool sleeping; /* labelled by this supervisor after the reconcile */
	int slept, skipped, kept, failed;
};

/* A workload reported in status.workloads. */
struct wl_report {
	size_t ns_index; /* its namespace's place in the pass (the order of the listing) */
	char ns[64], kind[16], name[254];
	const char *outcome, *reason; /* static strings */
	char message[256];
};

/* One reconcile of one supervisor. */
struct sup_rec {
	struct hib *h;
	struct kc_client *kc;
	const char *name;       /* the supervisor's */
	const struct jdoc *sup; /* cached, referenced */
	struct lcfg *cfg;       /* in force, referenced */
	int64_t now;            /* Unix seconds, the controller's clock */
	struct sched_decision d;
	bool enforce, allow_exclusion, deleting;
	enum hib_kind order[HK_WORKLOADS]; /* wake order */
	size_t norder;
	struct ns_report *nss; /* one per namespace handled */
	size_t nns, cap_ns;
	struct wl_report items[REPORT_WORKLOADS_MAX];
	size_t nitems, more_items; /* reported, and those beyond the cap */
	bool retry;                /* something failed or raced: back off and look again */
	bool waiting_pods;         /* a woken namespace waits for its pods (look again soon) */
	int64_t wake_began;        /* when the running state began (the last transition) */
	json_t *reserved_used;     /* sums of the sleeping namespaces' reservations (report.c) */
	size_t ns_index;           /* the namespace being handled (its place in the pass) */
};

/* supervisor.c */
/** sup_patch() - one patch of @gvr/@ns/@name; false (logged, rec->retry set) on failure.
 * A failed JSON-patch test (the cache was behind) is -EAGAIN in *@rc, not logged as failure. */
bool sup_patch(struct sup_rec *r, const struct kc_gvr *gvr, const char *ns, const char *name,
               enum kc_patch_type type, const json_t *body, int *rc /* OUT, or NULL */);

/* namespaces.c */
struct sel;
/** ns_selector() - @sup's spec.namespaces.labelSelector, parsed (sel_free()); NULL: none. */
struct sel *ns_selector(const struct jdoc *sup);
/**
 * ns_selected() - does supervisor @sup select namespace @ns (before any exclusion)? @sel: its
 * ns_selector(), or NULL to parse it here (a caller asking about many namespaces parses once).
 */
bool ns_selected(const struct jdoc *sup, const struct sel *sel, const struct jdoc *ns);
/** ns_excluded() - a namespace no supervisor touches: why, or NULL. */
const char *ns_excluded(const struct lcfg *cfg, const struct jdoc *ns);
/** ns_sleeper() - the supervisor whose sleep holds @ns (its reservation), or NULL. */
const char *ns_sleeper(const struct jdoc *ns, char *buf, size_t len);
/** ns_reconcile_all() - sleep or wake every namespace of the supervisor, as r->d says. */
void ns_reconcile_all(struct sup_rec *r);
/** ns_report_add() - a new report row for @ns (zeroed). */
struct ns_report *ns_report_add(struct sup_rec *r, const char *ns);

/* workloads.c */
/** wl_sleep_namespace() - every workload of @ns down; true when all are (or reported). */
bool wl_sleep_namespace(struct sup_rec *r, const char *ns, struct ns_report *rep);
/** wl_wake_namespace() - every workload landlord slept in @ns up; true when all are. */
bool wl_wake_namespace(struct sup_rec *r, const char *ns, struct ns_report *rep);
/**
 * wl_short() - how many workloads of @ns have fewer pods than replicas (status.replicas below
 * spec.replicas) for no reason known yet; with @report, each is reported NotBack. One whose
 * ReplicaFailure condition says the quota is exceeded is reported QuotaExceeded (with the
 * controller's message, which names the resource) and not counted.
 */
size_t wl_short(struct sup_rec *r, const char *ns, struct ns_report *rep, bool report);
/** wl_report() - add a workload to status.workloads (beyond the cap it is only counted). */
void wl_report(struct sup_rec *r, const char *ns, const char *kind, const char *name,
               const char *outcome, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 7, 8)));

/* syncwindow.c */
/**
 * win_hold_all() - the deny window held on each AppProject of spec.argocd.appProjects; true
 * when each one holds it or is reported (not found, Argo CD not configured or not installed).
 * False: a write failed or raced (r->retry set): nothing may go to sleep yet.
 */
bool win_hold_all(struct sup_rec *r);
/**
 * win_release_all() - this supervisor's hold released on every AppProject that lists it (the
 * last holder removes the window). True when none is left. Call only once nothing is asleep.
 */
bool win_release_all(struct sup_rec *r);
/** win_holder() - is supervisor @name among the comma-separated @holders of a window? */
bool win_holder(const char *holders, const char *name);

/* report.c */
/** report_status() - the status to write for @r (new reference). @invalid: the schedule's
 * error, or NULL. */
json_t *report_status(const struct sup_rec *r, const char *invalid);
/** report_describe_metrics() - declare the feature's metrics (docs/hibernation.md#status). */
void report_describe_metrics(void);
/**
 * report_announce() - after a reconcile: the gauges of @r's supervisor; on a change of state
 * (or a new invalid schedule), the transitions counter and an Event on the supervisor.
 */
void report_announce(const struct sup_rec *r, const char *invalid);
/** report_forget() - the gauges of a supervisor that is gone, at zero. */
void report_forget(const struct sup_rec *r);

#endif
