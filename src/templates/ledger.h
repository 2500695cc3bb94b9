/*
 * ledger.h - what landlord knows of a Helm release it runs (issue 14, point 5; docs/helm.md
 * "Release records"): Helm's own record Secrets (owner=helm, name=<release>, one per revision),
 * and landlord's ledger of them, a HelmLedger <namespace>.<release> (cluster-scoped, spec).
 *
 * Helm trusts its records, which a tenant editor can write, and deletes objects by what they
 * list. The ledger, which no tenant can write, says who installed the release (the owner
 * instance and the account it runs as), and after each helm run, the uid and resourceVersion of
 * every record. A record set that differs from the ledger has been changed by someone else:
 * no helm command runs on it (ReleaseTampered). While a ledger exists, its namespace carries the
 * mark landlord.dev/helm.<release>, by which the landlord-helm-records policy
 * (deploy/policies/helm-records.yaml) refuses everyone but landlord's helm accounts and
 * administrators a write of the release's records.
 *
 * While a run is under way the ledger says so (pending): the revision the run creates, or
 * "uninstall". A landlord that died during the run finds records changed by its own helm; the
 * only differences accepted then are those helm makes: the pending revision added (upgrade,
 * rollback), older revisions changed (superseded) or removed (history), and, for an uninstall,
 * any record changed or removed.
 *
 * Invariants:
 * - helm_records_text() is canonical: records sorted by revision, one "revision uid rv" line each.
 * - The pure functions (text, match, latest, deployed) touch no network and no global state.
 */
#ifndef LANDLORD_LEDGER_H
#define LANDLORD_LEDGER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "templates/helm_run.h"

struct kc_client;
struct inf;
struct ll_err;

#define HELM_RECORDS_MAX     64      /* more records than this for one release: tampered */
#define LEDGER_NAME_FMT      "%s.%s" /* a HelmLedger's name: namespace, release */
#define LEDGER_PENDING_NONE  ""
#define LEDGER_PENDING_UNINS "uninstall"

/* One of Helm's release records, from its metadata. */
struct helm_record {
	long revision;                    /* label version */
	char uid[64], rv[32];             /* metadata.uid, metadata.resourceVersion */
	char status[32];                  /* label status: deployed, failed, pending-upgrade... */
	char digest[HELM_DIGEST_LEN + 1]; /* label landlord.dev/digest, "" when none */
};

struct helm_records {
	struct helm_record v[HELM_RECORDS_MAX];
	size_t n;
	bool overflow; /* more than HELM_RECORDS_MAX, or one unreadable (no version label) */
};

/**
 * helm_records_add() - add the record whose metadata (labels, uid, resourceVersion) is @meta,
 * keeping @r sorted by revision.
 */
void helm_records_add(struct helm_records *r, const json_t *meta);
/**
 * helm_records_from_cache() - the records of @release in @ns that the informer @records
 * (Secrets owner=helm, metadata only, index "release" of "<ns>/<name label>") holds.
 */
void helm_records_from_cache(struct inf *records, const char *ns, const char *release,
                             struct helm_records *out /* OUT */);
/**
 * helm_records_list() - the same from the API server (one metadata-only LIST): as of now when
 * @not_older_than is NULL, else from its watch cache once that has seen that resourceVersion
 * (one of a write or GET that followed every write the caller must see; a consistent LIST waits
 * up to ~100 ms for the cache while other kinds are written).
 * Return: 0, or -EAGAIN with @err.
 */
int helm_records_list(struct kc_client *kc, const char *ns, const char *release,
                      const char *not_older_than, struct helm_records *out /* OUT */,
                      struct ll_err *err);

/** helm_records_text() - @r as the ledger keeps it (a new string; caller frees). */
char *helm_records_text(const struct helm_records *r);
/**
 * helm_records_match() - do the records @now agree with the ledger's @text, given its
 * @pending (LEDGER_PENDING_NONE, a revision number, or LEDGER_PENDING_UNINS)? When not, @why
 * names the first difference ("record of revision 3 changed", ...).
 */
bool helm_records_match(const char *text, const char *pending, const struct helm_records *now,
                        char why[256]);
/** helm_records_latest() - the record of the highest revision, or NULL when none. */
const struct helm_record *helm_records_latest(const struct helm_records *r);
/** helm_records_deployed() - the highest revision whose status is deployed, or NULL. */
const struct helm_record *helm_records_deployed(const struct helm_records *r);
/** helm_status_pending() - a pending-install, pending-upgrade or pending-rollback status. */
bool helm_status_pending(const char *status);

/**
 * helm_record_decode() - a record's data.release (as the API server gives it: base64 of Helm's
 * base64 of gzip of the release's JSON) decoded, at most 16 MiB of JSON: a new object (the
 * release: manifest, chart, info...), or NULL when it is not one. Pure.
 */
json_t *helm_record_decode(const char *data);
/**
 * helm_manifest_objects() - the objects of a release's @manifest (valid UTF-8, as a JSON string
 * is; YAML documents separated by
 * "---" lines; one that does not parse, or lacks apiVersion, kind or metadata.name, is skipped)
 * as a new object {"<apiVersion>/<Kind>/<namespace>/<name>": "<apiVersion>/<Kind>"}, the
 * namespace @ns where a document names none. Pure.
 */
json_t *helm_manifest_objects(const char *manifest, const char *ns);

#endif
