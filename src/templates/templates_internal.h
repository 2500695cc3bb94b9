/*
 * templates_internal.h - what the files of the template controllers share (not public).
 *
 *   templates.c   struct templates: discovery and the watches on rendered kinds (kinds.c)
 *   accounts.c    the apply identities of TemplateInstances: ServiceAccounts in landlord-system
 *                 and their RoleBindings in the instance's namespace
 *   ti.c          the TemplateInstance controller: informers, reconcile, finalizer
 *   ti_status.c   its status: conditions, the row, failing entries, the kinds applied
 *   releases.c    Helm releases: owners' wishes, results, ledgers (releases.h, ledger.h)
 *   release_run.c one reconcile of one release
 */
#ifndef LANDLORD_TEMPLATES_INTERNAL_H
#define LANDLORD_TEMPLATES_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "kube/discovery.h"
#include "kube/informer.h"
#include "kube/manager.h"
#include "templates/apply.h"
#include "templates/podstore.h"
#include "templates/templates.h"
#include "tenancy/tplstatus.h"

struct templates {
	struct kc_client *kc; /* borrowed */
	struct disc *disc;
	struct controller *ti, *tgi;
	struct inf *instances, *templates, *namespaces, *accounts, *bindings;
	struct inf *groups, *quotas;    /* TemplateGroupInstances; tenant quotas (tgi.c) */
	struct inf *workloads[3];       /* the roll-up (rollup.c) */
	struct inf *group_workloads[3]; /* the same for TemplateGroupInstances (label tgi) */
	struct podstore *pods;          /* the pods both roll-ups count (podstore.h) */
	pthread_mutex_t lock;           /* what follows */
	json_t *watched;                /* "apiVersion/Kind" -> true: kinds watched for instances */
	json_t *fingerprints; /* instance key -> what it was last applied from (ti.c, tgi.c) */
	json_t *written_ms;   /* instance key -> when its status was last written (monotonic) */
	json_t *drifted; /* TGI fingerprint key -> {"apiVersion/Kind/name": true}: drifted since */
	struct drift_watch *drift_watches; /* the TGI watches' handler contexts */
	unsigned long long drifts;         /* TI drift markers made (tpl_mark_drift()) */
	struct tpl_helm *helm;             /* Helm releases (releases.c); NULL: helm is off */
};

/** releases_free() - the Helm state of templates_enable_helm(); NULL is fine. */
void releases_free(struct tpl_helm *h);

/* The context of a TemplateGroupInstance watch's handlers: its kind ("apiVersion/Kind"). */
struct drift_watch {
	struct templates *t;
	struct inf *inf; /* the watch */
	struct drift_watch *next;
	char kind[TPL_FAIL_OBJECT_MAX];
};

/** tpl_rollup_setup() - the roll-up's informers, wired to @c (whose queue holds instances). */
int tpl_rollup_setup(struct templates *t, struct controller *c, struct mgr *m);
/**
 * tpl_rollup() - add the workloads of @instance in @ns (label landlord.dev/ti) and the pods they
 * select to @row. Return: whether every workload is ready.
 */
bool tpl_rollup(struct templates *t, const char *ns, const char *instance, struct tpl_row *row);
/** tpl_rollup_setup_group(), tpl_rollup_group() - the same for TemplateGroupInstances. */
int tpl_rollup_setup_group(struct templates *t, struct controller *c, struct mgr *m);
bool tpl_rollup_group(struct templates *t, const char *ns, const char *tgi, struct tpl_row *row);
/**
 * tpl_write_due() - may @key's status be written now (at most once a second)? Otherwise
 * *@wait_ms says how long until it may. tpl_written() records a write.
 */
bool tpl_write_due(struct templates *t, const char *key, long *wait_ms /* OUT */);
void tpl_written(struct templates *t, const char *key);

/**
 * tpl_watch_kind() - make sure instance label @label (LABEL_TI or LABEL_TGI) of @obj's kind is
 * watched: a metadata-only informer selecting @label, whose events enqueue
 * "<namespace>/<label value>" on the TemplateInstance controller (LABEL_TI), forgetting its
 * fingerprint, or "<label value>/<namespace>" on the TemplateGroupInstance controller, noting
 * the object in that namespace's drift notes (LABEL_TGI, tpl_drift_note()).
 * Return: 0, or -ENOENT when discovery does not know the kind.
 */
int tpl_watch_kind(struct templates *t, const json_t *obj, const char *label);
/** tgi_fingerprint_key() - the fingerprint key of TGI @tgi in namespace @ns, into @out. */
void tgi_fingerprint_key(const char *tgi, const char *ns, char *out, size_t cap);

/**
 * tpl_kind_informer() - the synced watch tpl_watch_kind() made on @kind ("apiVersion/Kind") for
 * @label, or NULL (never made, kind not served, not synced yet). A LABEL_TGI one has an index
 * TPL_IDX_NAMESPACE.
 */
struct inf *tpl_kind_informer(struct templates *t, const char *kind, const char *label);
/** tpl_forget() - drop @key's fingerprint: its next reconcile applies again. */
void tpl_forget(struct templates *t, const char *key);
/** tpl_forget_prefix() - drop every fingerprint whose key begins with @prefix. */
void tpl_forget_prefix(struct templates *t, const char *prefix);
/** tpl_drop() - forget everything about @key (its instance is gone). */
void tpl_drop(struct templates *t, const char *key);
/** tpl_fingerprint_is() - whether @key was last applied from @fp. */
bool tpl_fingerprint_is(struct templates *t, const char *key, const char *fp);
/* A drift note meaning "too many to name: everything". */
#define TPL_DRIFT_ALL "*"
/* The prefix of a note of an object that appeared ("+apiVersion/Kind/name"): a drift only if
 * the render does not hold it. */
#define TPL_NOTE_ADDED "+"
/* The index of a TGI's kind watch by namespace (tpl_kind_informer()). */
#define TPL_IDX_NAMESPACE "namespace"
/**
 * tpl_drift_note() - @object ("apiVersion/Kind/name", or TPL_NOTE_ADDED before it) of
 * fingerprint key @key drifted (appeared) since it was applied; past 256 notes for one key,
 * TPL_DRIFT_ALL stands for them all.
 */
void tpl_drift_note(struct templates *t, const char *key, const char *object);
/**
 * tpl_drift_take() - the notes of @key (a new reference to an object of them, or NULL when
 * none), removed: a drift noted after this call is noted anew, and its event enqueues again.
 */
json_t *tpl_drift_take(struct templates *t, const char *key);
/**
 * tpl_mark_drift() - replace @key's fingerprint by a drift marker unlike any other: a reconcile
 * applying now (it read the fingerprint before) cannot record its own over it
 * (tpl_fingerprint_swap()), and the next one applies again.
 */
void tpl_mark_drift(struct templates *t, const char *key);
/** tpl_fingerprint_get() - @key's fingerprint or drift marker ("" when none), into @out. */
void tpl_fingerprint_get(struct templates *t, const char *key, char *out, size_t cap);
/** tpl_fingerprint_swap() - set @key's fingerprint to @fp if it is still @before. */
bool tpl_fingerprint_swap(struct templates *t, const char *key, const char *before, const char *fp);

/* The identity a TemplateInstance in @ns applies as. */
struct ti_account {
	char user[400];         /* system:serviceaccount:landlord-system:ti.<ns>.<role> */
	char sa[300];           /* ti.<ns>.<role> */
	char binding[64];       /* landlord-ti-<role> */
	const char *role;       /* "editor" or "owner" */
	char cluster_role[256]; /* what the binding grants (LandlordConfig tenantRoles) */
};

/**
 * ti_account_for() - the account for an instance whose last writer is @writer in namespace
 * @ns (its labels @ns_labels pick LandlordConfig's roles). Return: 0, -EINVAL when no role is
 * configured.
 */
int ti_account_for(const char *ns, const json_t *ns_labels, const char *writer,
                   struct ti_account *out /* OUT */);
#define TGI_ACCOUNT_ROLE      "tgi"
#define TEMPLATES_CLUSTERROLE "landlord-templates"
/** tgi_account_for() - tgi.<ns>, the account TemplateGroupInstances' charts run as in @ns. */
void tgi_account_for(const char *ns, struct ti_account *out /* OUT */);
/** tgi_account_release() - delete tgi.<ns> and its RoleBinding (no release of @ns needs it). */
void tgi_account_release(struct templates *t, const char *ns);
/**
 * ti_account_ensure() - create the ServiceAccount and apply the RoleBinding unless the caches
 * show them as wanted. *@changed says whether anything was written (RBAC then needs a moment
 * before the account's rights show). Return: 0, or -EAGAIN with @err set.
 */
int ti_account_ensure(struct templates *t, const char *ns, const struct ti_account *a,
                      bool *changed /* OUT */, struct ll_err *err);
/** ti_accounts_release() - delete @ns's accounts and bindings (no instance left there). */
void ti_accounts_release(struct templates *t, const char *ns);

/** tpl_status_changes() - the fields of @want that differ from @obj's status (new object). */
json_t *tpl_status_changes(struct jval obj, const json_t *want);
/** tpl_sooner() - @res, or a requeue after @wait_ms when that comes sooner. */
struct ctrl_result tpl_sooner(struct ctrl_result res, long wait_ms);

#endif
