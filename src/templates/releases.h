/*
 * releases.h - the Helm releases of template instances (issue 14; docs/helm.md): what the
 * TemplateInstance and TemplateGroupInstance controllers want of each release, and the release
 * controller that makes it so with the real helm, one release at a time per key.
 *
 * An owner (an instance) says what it wants of release <release> in <namespace>: installed from
 * its Template's chart with rendered values, as an account of landlord-system, or gone. The
 * release controller ("helmrelease", keys "<namespace>/<release>", --helm-concurrency workers)
 * pulls the chart, runs helm only when the release's digest label differs from what is wanted
 * (or its records are not what landlord's ledger says: ReleaseTampered, nothing runs), recovers
 * releases left pending, and reports each result back to its owner, whose status shows it.
 *
 * Invariants:
 * - Only the leader runs helm; losing the Lease kills every helm process before the workers
 *   are joined (controller_def.leading).
 * - A release is never taken over: records of a release landlord has no ledger of make the
 *   owner's row Conflict; a ledger names one owner, and another owner's want is Conflict too.
 * - The ledger (ledger.h) is created before helm first runs, so a crash at any line leaves a
 *   release landlord can find, roll back or uninstall.
 * - helm runs as the owner's account of now (its last writer's), never as landlord; an uninstall
 *   runs as the instance's account of now too, else as the account that ran it last.
 */
#ifndef LANDLORD_RELEASES_H
#define LANDLORD_RELEASES_H

#include <jansson.h>
#include <stdbool.h>

#include "templates/apply.h"
#include "tenancy/tplstatus.h"

struct templates;

/* An owner's wish for one release. Strings and JSON borrowed for the call. */
struct release_want {
	const char *owner;          /* "ti/<namespace>/<name>" or "tgi/<name>" */
	const char *ns;             /* the release's namespace */
	const char *release;        /* its name */
	const char *account;        /* the ServiceAccount of landlord-system helm runs as */
	const json_t *helm;         /* the Template's spec.resources.helm; NULL: uninstall */
	const json_t *values, *set; /* rendered values and setValues (with @helm) */
	bool sync;                  /* the instance's spec.sync: drift is repaired */
	bool bind_account;          /* @account is tgi.<ns>: made and bound before a run */
};

/* What an owner's status shows of a release. */
struct release_state {
	bool ready;              /* deployed from what is wanted now */
	bool gone;               /* uninstalled (a removal wanted), or never installed */
	char status[32];         /* Helm's: deployed, failed, pending-upgrade... ("" unknown) */
	long revision;           /* 0 when unknown */
	char chart_version[129]; /* "" when unknown */
	char reason[64];         /* "" when fine; HelmFailed, Conflict, ReleaseTampered... */
	char message[TPL_FAIL_MESSAGE_MAX];
	/* the release's workloads: Deployments, StatefulSets, DaemonSets */
	long long workloads_ready[3], workloads_desired[3];
};

/**
 * releases_want() - record @w (replacing the owner's last wish for that release) and, when it
 * changed, queue the release. @st: what the release controller last reported for this wish.
 * Return: 0; -EEXIST when another owner's wish holds the release (@st says Conflict).
 */
int releases_want(struct templates *t, const struct release_want *w,
                  struct release_state *st /* OUT */);
/**
 * releases_of() - the releases landlord's ledgers give @owner, as a new JSON array of
 * "<namespace>/<release>" (in @ns only, unless NULL).
 */
json_t *releases_of(struct templates *t, const char *owner, const char *ns);
/** release_state_counts() - add the release's workloads to @row's (before the roll-up). */
void release_state_counts(const struct release_state *st, struct tpl_row *row);
/** releases_on() - whether helm is configured (--helm-binary). */
bool releases_on(const struct templates *t);
/** releases_owner_ti(), releases_owner_tgi() - an owner's name, into @out. */
void releases_owner_ti(const char *ns, const char *name, char *out, size_t cap);
void releases_owner_tgi(const char *name, char *out, size_t cap);

#endif
