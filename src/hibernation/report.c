/*
 * report.c - a ResourceSupervisor's status: the state and the next transition, each namespace's
 * counts, at most REPORT_WORKLOADS_MAX workloads reported by name, the last REPORT_TRANSITIONS
 * transitions, what the sleep freed (the sleeping namespaces' quota usage when they went to
 * sleep) and the conditions Ready and InvalidSchedule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "hibernation/supervisor_internal.h"
#include "kube/conditions.h"

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
