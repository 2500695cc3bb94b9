/*
 * audit_events.h - Kubernetes Events for findings admitted in audit mode, recorded off the
 * decision's path.
 *
 * A family in audit mode (LandlordConfig spec.admission.modes) admits what it would deny, with
 * an admission warning, a count in landlord_admission_audit_total and a Warning Event, reason
 * AdmissionAudited, about the object, in the request's namespace ("default" for cluster-scoped
 * objects, as events.h does), whose message is the rule's. Here is the Event:
 *
 *  - audit_events_add() only queues: it copies, takes one mutex, never waits on the API server;
 *    a background thread writes the Events;
 *  - repeats aggregate: the same namespace, object (kind and name) and message are one entry,
 *    and one Event whose count and lastTimestamp follow (a merge patch, at most once every
 *    AE_UPDATE_MS per entry); an entry unseen for AE_WINDOW_MS is forgotten, and the next
 *    repeat starts a new Event, as client-go's aggregation window does;
 *  - bounded: at most AE_ENTRIES entries (a full table first forgets the entry seen longest ago
 *    whose Event is up to date; with none, the new finding is dropped and counted in
 *    landlord_admission_audit_events_dropped_total), and new Events are created at most
 *    AE_CREATE_PER_S a second (bursts of AE_CREATE_BURST): a loop of audited requests costs
 *    etcd a bounded number of writes, never one per request;
 *  - best effort: a write that fails is logged and counted (landlord_audit_events_total
 *    {result="failed"}), retried at the next pass while the entry lives, and never affects a
 *    decision. An Event deleted meanwhile (404 on the patch) is created again.
 *
 * Each replica aggregates on its own (Event names are unique per replica), so two replicas
 * auditing the same object give two Events whose counts add up.
 *
 * One recorder serves the process: the webhook role installs it with audit_events_install()
 * (webhook/serve.h) and the tenant rules (rule_tenancy.c) reach it through audit_events_record().
 */
#ifndef LANDLORD_WEBHOOK_AUDIT_EVENTS_H
#define LANDLORD_WEBHOOK_AUDIT_EVENTS_H

#include <jansson.h>

struct kc_client;
struct audit_events;

#define AE_ENTRIES      256
#define AE_UPDATE_MS    5000
#define AE_WINDOW_MS    (10 * 60 * 1000)
#define AE_CREATE_PER_S 5
#define AE_CREATE_BURST 25
#define AE_REASON       "AdmissionAudited"

struct audit_events_opts {
	struct kc_client *client; /* borrowed; outlives the recorder */
	const char *component;    /* the Events' source; NULL: "landlord-webhook" */
};

/** audit_events_new() - a recorder with its thread running. Never NULL. */
struct audit_events *audit_events_new(const struct audit_events_opts *o);
/**
 * audit_events_add() - queue one finding about @obj (borrowed: apiVersion, kind, metadata's
 * name, namespace and uid are read; @ns wins over its namespace when not NULL or "") with
 * @message (copied). Thread-safe; never blocks on I/O.
 */
void audit_events_add(struct audit_events *ae, const json_t *obj, const char *ns,
                      const char *message);
/**
 * audit_events_free() - stop the thread after one last pass (what is pending is written, as far
 * as the API server answers), and free. NULL is fine. No audit_events_add() may run meanwhile.
 */
void audit_events_free(struct audit_events *ae);

/** audit_events_install() - the process's recorder (NULL: none, findings are not recorded). */
void audit_events_install(struct audit_events *ae);
/**
 * audit_events_record() - audit_events_add() on the installed recorder, for one audited
 * AdmissionRequest (borrowed): the object is request.object (request.oldObject for a DELETE),
 * named by request.kind, request.name and request.namespace. A dry run records nothing (the
 * configurations declare sideEffects None). No recorder installed: nothing.
 */
void audit_events_record(const json_t *request, const char *message);

#endif
