/*
 * report.c - a ResourceSupervisor's status: the state and the next transition, each namespace's
 * counts, at most REPORT_WORKLOADS_MAX workloads reported by name, the last REPORT_TRANSITIONS
 * transitions, what the sleep freed (the sleeping namespaces' quota usage when they went to
 * sleep) and the conditions Ready and InvalidSchedule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/metrics.h"
#include "hibernation/supervisor_internal.h"
#include "kube/conditions.h"
#include "kube/events.h"

static json_t *utc(int64_t t)
{
	struct timespec ts = {.tv_sec = (time_t)t};
	char out[CLOCK_UTC_MAX];

	return json_string(clock_format_utc(&ts, 0, out));
}

static json_t *namespaces(const struct sup_rec *r)
{
	json_t *list = json_array();

	for (size_t i = 0; i < r->nns && i < 1000; i++) {
		const struct ns_report *n = &r->nss[i];

		json_array_append_new(list, json_pack("{s:s,s:s,s:i,s:i,s:i,s:i}", "name", n->name,
		                                      "state", n->sleeping ? "sleeping" : "running",
		                                      "slept", n->slept, "skipped", n->skipped,
		                                      "kept", n->kept, "failed", n->failed));
	}
	return list;
}

static json_t *workloads(const struct sup_rec *r)
{
	json_t *list = json_array();

	for (size_t i = 0; i < r->nitems; i++) {
		const struct wl_report *w = &r->items[i];

		json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "namespace",
		                                      w->ns, "kind", w->kind, "name", w->name,
		                                      "outcome", w->outcome, "reason", w->reason,
		                                      "message", w->message));
	}
	return list;
}

static const char *cause_name(const struct sup_rec *r, const char *before)
{
	if (before == NULL || strcmp(before, "error") == 0)
		return "created";
	if (r->deleting)
		return "deleted";
	return r->d.cause == SCHED_BY_OVERRIDE ? "override" : "schedule";
}

/* The last transitions, the newest first, with one more when the state changed. */
static json_t *transitions(const struct sup_rec *r, const char *state)
{
	const char *before = jd_str(r->sup, "status", "state", NULL);
	json_t *old = jval_to_json(jd_get(r->sup, "status", "transitions", NULL));
	json_t *list = json_array();
	size_t i;
	json_t *v;

	if (before == NULL || strcmp(before, state) != 0)
		json_array_append_new(list, json_pack("{s:o,s:s,s:s}", "time", utc(r->now), "state",
		                                      state, "cause", cause_name(r, before)));
	json_array_foreach(old, i, v)
		if (json_array_size(list) < REPORT_TRANSITIONS)
			json_array_append(list, v);
	json_decref(old);
	return list;
}

static json_t *freed(const struct sup_rec *r)
{
	static const char *const keys[][3] = {{"pods", "pods", "count/pods"},
	                                      {"cpu", "requests.cpu", "cpu"},
	                                      {"memory", "requests.memory", "memory"}};
	json_t *out = json_object();

	for (size_t i = 0; i < 3; i++) {
		const char *v = jx_str(r->reserved_used, keys[i][1], NULL)
		                        ?: jx_str(r->reserved_used, keys[i][2], NULL);

		if (v && i == 0)
			json_object_set_new(out, keys[i][0], json_integer(strtoll(v, NULL, 10)));
		else if (v)
			json_object_set_new(out, keys[i][0], json_string(v));
	}
	return out;
}

static json_t *conditions(const struct sup_rec *r, const char *invalid, size_t failed)
{
	json_t *old = jval_to_json(jd_get(r->sup, "status", "conditions", NULL)), *c1, *c2;
	long long gen = jd_int(r->sup, 0, "metadata", "generation", NULL);
	char msg[512];

	if (invalid) {
		c1 = cond_set(old, "Ready", "False", "InvalidSchedule", invalid, gen);
	} else if (failed) {
		snprintf(msg, sizeof(msg), "%zu workloads could not be changed: see workloads",
		         failed);
		c1 = cond_set(old, "Ready", "False", "WorkloadsFailed", msg, gen);
	} else {
		bool sleeping = r->d.state == SCHED_SLEEPING;

		c1 = cond_set(old, "Ready", "True", sleeping ? "Asleep" : "Awake",
		              sleeping ? "every workload is asleep" : "every workload is awake",
		              gen);
	}
	c2 = cond_set(c1, "InvalidSchedule", invalid ? "True" : "False",
	              invalid ? "InvalidSchedule" : "Valid", invalid ? invalid : "", gen);
	json_decref(c1);
	json_decref(old);
	return c2;
}

json_t *report_status(const struct sup_rec *r, const char *invalid)
{
	const char *state = invalid ? "error" : sched_state_name(r->d.state);
	json_t *status = json_object();
	size_t failed = 0;

	for (size_t i = 0; i < r->nns; i++)
		failed += (size_t)r->nss[i].failed;
	json_object_set_new(status, "observedGeneration",
	                    json_integer(jd_int(r->sup, 0, "metadata", "generation", NULL)));
	json_object_set_new(status, "state", json_string(state));
	if (!invalid && r->d.next) {
		json_object_set_new(status, "nextTransition", utc(r->d.next));
		json_object_set_new(status, "nextState",
		                    json_string(sched_state_name(r->d.next_state)));
	}
	json_object_set_new(status, "namespaceCount", json_integer((json_int_t)r->nns));
	json_object_set_new(status, "namespaces", namespaces(r));
	json_object_set_new(status, "workloads", workloads(r));
	if (r->more_items)
		json_object_set_new(status, "workloadsNotListed",
		                    json_integer((json_int_t)r->more_items));
	json_object_set_new(status, "transitions", transitions(r, state));
	if (!invalid && r->d.state == SCHED_SLEEPING && r->reserved_used)
		json_object_set_new(status, "freed", freed(r));
	json_object_set_new(status, "conditions", conditions(r, invalid, failed));
	return status;
}

/* ---------- events and metrics ---------- */

#define METRIC_TRANSITIONS "landlord_hibernation_transitions_total"
#define METRIC_NAMESPACES  "landlord_hibernation_namespaces_asleep"
#define METRIC_WORKLOADS   "landlord_hibernation_workloads"

void report_describe_metrics(void)
{
	metrics_describe(METRIC_TRANSITIONS, METRIC_COUNTER,
	                 "ResourceSupervisor transitions, by supervisor and the state entered.",
	                 NULL, 0);
	metrics_describe(METRIC_NAMESPACES, METRIC_GAUGE,
	                 "Namespaces a ResourceSupervisor holds asleep (labelled), as of its last "
	                 "reconcile.",
	                 NULL, 0);
	metrics_describe(
	        METRIC_WORKLOADS, METRIC_GAUGE,
	        "Workloads of a ResourceSupervisor's namespaces by outcome (slept, skipped, "
	        "kept, failed), as of its last reconcile.",
	        NULL, 0);
}

static void set_gauges(const struct sup_rec *r, bool gone)
{
	static const char *const outcomes[] = {"slept", "skipped", "kept", "failed"};
	double n[4] = {0}, asleep = 0;
	char labels[512];

	for (size_t i = 0; i < r->nns && !gone; i++) {
		n[0] += r->nss[i].slept;
		n[1] += r->nss[i].skipped;
		n[2] += r->nss[i].kept;
		n[3] += r->nss[i].failed;
		asleep += r->nss[i].sleeping;
	}
	metrics_set(METRIC_NAMESPACES,
	            metrics_labels(labels, sizeof(labels), "supervisor", r->name, NULL), asleep);
	for (int k = 0; k < 4; k++)
		metrics_set(METRIC_WORKLOADS,
		            metrics_labels(labels, sizeof(labels), "supervisor", r->name, "outcome",
		                           outcomes[k], NULL),
		            n[k]);
}

/*
 * Is @state new for @r's supervisor since this process last announced it? The cache may show
 * the old status for a moment after landlord wrote the new one: without this, a reconcile then
 * would announce the same transition twice.
 */
static bool first_announcement(const struct sup_rec *r, const char *state)
{
	struct hib *h = r->h;
	const char *last;
	bool first;

	pthread_mutex_lock(&h->lock);
	last = json_string_value(json_object_get(h->announced, r->name));
	first = last == NULL || strcmp(last, state) != 0;
	if (first)
		json_object_set_new(h->announced, r->name, json_string(state));
	pthread_mutex_unlock(&h->lock);
	return first;
}

void report_announce(const struct sup_rec *r, const char *invalid)
{
	const char *before = jd_str(r->sup, "status", "state", NULL);
	const char *state = invalid ? "error" : sched_state_name(r->d.state);
	const char *cause = cause_name(r, before);
	char labels[512];
	struct jval sup = jdoc_root(r->sup);

	set_gauges(r, false);
	if ((before && strcmp(before, state) == 0) || !first_announcement(r, state))
		return;
	metrics_add(
	        METRIC_TRANSITIONS,
	        metrics_labels(labels, sizeof(labels), "supervisor", r->name, "state", state, NULL),
	        1);
	if (invalid)
		event_record_doc(r->kc, LANDLORD_COMPONENT, sup, EVENT_WARNING, "InvalidSchedule",
		                 "%s: no transition until it is fixed", invalid);
	else if (r->d.state == SCHED_SLEEPING)
		event_record_doc(r->kc, LANDLORD_COMPONENT, sup, EVENT_NORMAL, "Sleeping",
		                 "putting %zu namespaces to sleep (by %s)", r->nns, cause);
	else if (before && strcmp(before, "sleeping") == 0)
		event_record_doc(r->kc, LANDLORD_COMPONENT, sup, EVENT_NORMAL, "Waking",
		                 "waking %zu namespaces (by %s)", r->nns, cause);
}

void report_forget(const struct sup_rec *r)
{
	set_gauges(r, true);
	pthread_mutex_lock(&r->h->lock);
	json_object_del(r->h->announced, r->name);
	pthread_mutex_unlock(&r->h->lock);
}
