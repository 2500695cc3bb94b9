/*
 * releases_internal.h - what releases.c (wishes, results, ledgers, informers) and release_run.c
 * (one reconcile of one release) share. Not public.
 */
#ifndef LANDLORD_RELEASES_INTERNAL_H
#define LANDLORD_RELEASES_INTERNAL_H

#include <jansson.h>
#include <pthread.h>

#include "kube/manager.h"
#include "templates/helm_pull.h"
#include "templates/helm_run.h"
#include "templates/ledger.h"
#include "templates/releases.h"
#include "templates/templates_internal.h"

struct tpl_helm {
	struct helm_runner runner;
	struct helm_pull_cache pulls;
	char *cache_dir;  /* the pull cache's directory, made private at start; removed at exit */
	char *kube_cache; /* <cache_dir>/kube: helm's API discovery cache (KUBECACHEDIR) */
	struct controller *c;
	struct inf *records, *ledgers;
	int64_t repair_every_ms; /* at most one forced upgrade per release this often */
	pthread_mutex_t lock;    /* what follows */
	json_t *wants;   /* key -> {owner, account, helm, values, set, gen}: replaced, never changed
	                  */
	json_t *results; /* key -> {gen, ready, gone, status, revision, chartVersion, reason,
	                  *         message, failures} */
	json_t *mine;    /* key -> the ledger as landlord last wrote it (null: deleted) */
	long long gen;
	/* release_sync.c: the releases' objects, their watches and drift */
	json_t *synced;    /* key -> {objkey: {kind, base, now}} */
	json_t *objects;   /* objkey -> key */
	json_t *drifted;   /* key -> true: an object drifted since the last run */
	json_t *forced_ms; /* key -> when its last forced upgrade ran (monotonic ms) */
	json_t *watched;   /* "apiVersion/Kind" -> true */
	struct sync_watch *watches;
};

/* One reconcile of one release. */
struct rel_rec {
	struct templates *t;
	struct tpl_helm *h;
	char key[400], ns[256], release[64], ledger_name[400];
	json_t *want;   /* the wish (a reference), or NULL */
	json_t *ledger; /* the ledger (a new reference), or NULL */
	struct helm_records recs;
	json_t *result;       /* what this reconcile reports (new object) */
	char chart[PATH_MAX]; /* the chart's file or directory */
	char digest[HELM_DIGEST_LEN + 1];
	bool force;            /* repair drift: --force-conflicts */
	long long run_started; /* when this reconcile's helm run started (epoch s), or 0 */
	long wait_ms;          /* look again after this long (a repair held back), or 0 */
};

/** rel_load() - @key's wish and ledger. Return: 0, or -EINVAL for a malformed key. */
int rel_load(struct templates *t, const char *key, struct rel_rec *r /* OUT */);
void rel_release(struct rel_rec *r);
/** rel_report() - publish r->result for the wish it answers; queue its owner when it changed. */
void rel_report(struct rel_rec *r);
/** rel_fail() - r->result says @reason and @message (printf). */
void rel_fail(struct rel_rec *r, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/** rel_ledger_create() - a new ledger of r's wish (pending revision 1). Return: 0 or -EAGAIN. */
int rel_ledger_create(struct rel_rec *r);
/**
 * rel_ledger_write() - the ledger with @pending and, unless NULL, @records (a text) and
 * @chart_version; for an install, the wish's account (who runs the release now). Return: 0 or
 * -EAGAIN.
 */
int rel_ledger_write(struct rel_rec *r, const char *pending, const char *records,
                     const char *chart_version);
/**
 * rel_mark_namespace() - mark the release's namespace (landlord.dev/helm.<release>: its owner),
 * by which the landlord-helm-records policy lets nobody else write its records; before any helm
 * command. Return: 0 or -EAGAIN.
 */
int rel_mark_namespace(struct rel_rec *r);
/** rel_ledger_delete() - the release is gone: its namespace's mark goes, then the ledger. */
int rel_ledger_delete(struct rel_rec *r);
/** rel_ledger_str() - a field of the ledger's spec, or "". */
const char *rel_ledger_str(const struct rel_rec *r, const char *field);

/* ---- release_sync.c ---- */

/**
 * rel_get_record() - Helm's record Secret of revision @revision of the release, as the API
 * server has it now (one GET). Return: a new object, or NULL (logged when not a 404).
 */
json_t *rel_get_record(struct rel_rec *r, long revision);
/**
 * rel_decode_record() - the release (manifest, chart, info) in @secret (rel_get_record()'s),
 * only when it is still the record of @rec's uid and resourceVersion (which the ledger vouched
 * for). Return: a new object, or NULL.
 */
json_t *rel_decode_record(const json_t *secret, const struct helm_record *rec);
/**
 * rel_sync_learn() - the objects of @release's manifest watched and their baselines taken (one
 * GET each); drift noted before is dropped, and an object another manager than Helm wrote at
 * or after @since (seconds since the epoch: the run's start) is drift now.
 * Return: 0, or -EAGAIN when a baseline is missing.
 */
int rel_sync_learn(struct rel_rec *r, const json_t *release, long long since);
/** rel_sync_forget() - the release is gone: nothing of it watched. */
void rel_sync_forget(struct rel_rec *r);
/** rel_sync_known() - whether the release's objects are known (rel_sync_learn() ran). */
bool rel_sync_known(struct rel_rec *r);
/**
 * rel_sync_drifted() - whether an object of the release drifted and a repair may run now (at
 * most once per --helm-repair-interval: otherwise false, and *@wait_ms says when).
 */
bool rel_sync_drifted(struct rel_rec *r, long *wait_ms /* OUT */);
/** rel_sync_counts() - the release's workloads, ready and desired, into @result. */
void rel_sync_counts(struct tpl_helm *h, const char *key, json_t *result);
/** releases_sync_free() - the watches' contexts (after the manager). */
void releases_sync_free(struct tpl_helm *h);

/** rel_reconcile() - one release made what its wish says (release_run.c). */
struct ctrl_result rel_reconcile(struct rel_rec *r);

#endif
