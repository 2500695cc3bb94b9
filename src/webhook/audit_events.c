/*
 * audit_events.c - Events for audited findings: a bounded table of aggregated entries, written
 * by a thread of its own (see audit_events.h).
 *
 * The lock guards the table and the token bucket; the thread copies what one write needs out of
 * an entry, marks it busy (never forgotten meanwhile), writes without the lock, and stores the
 * outcome under it again.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "kube/kube.h"
#include "webhook/audit_events.h"

#define NS_PER_MS     1000000LL
#define PASS_MS       1000 /* the thread's longest sleep */
#define NAME_PART_MAX 200  /* of an Event's name: <object>.<16 hex digits> */

struct entry {
	char *ns, *api_version, *kind, *name, *uid, *message;
	char *event;        /* the Event's name once created, or NULL */
	long long count;    /* findings seen */
	long long sent;     /* the count the Event carries */
	int64_t first_wall; /* nanoseconds since the epoch, for firstTimestamp */
	int64_t last_seen;  /* monotonic ns */
	int64_t sent_at;    /* monotonic ns of the last write, 0: none */
	bool busy;          /* the thread is writing it */
};

struct audit_events {
	struct kc_client *client;
	char *component;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct entry *e[AE_ENTRIES];
	size_t n;
	double tokens; /* Events that may be created now */
	int64_t tokens_at;
	bool stop;
	bool thread_failed;
	pthread_t thread;
};

static _Atomic(struct audit_events *) installed;

/* ---- the table ---- */

static void entry_free(struct entry *e)
{
	free(e->ns);
	free(e->api_version);
	free(e->kind);
	free(e->name);
	free(e->uid);
	free(e->message);
	free(e->event);
	free(e);
}

static bool same(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static struct entry *find(struct audit_events *ae, const char *ns, const char *kind,
                          const char *name, const char *message)
{
	for (size_t i = 0; i < ae->n; i++) {
		struct entry *e = ae->e[i];

		if (same(e->ns, ns) && same(e->kind, kind) && same(e->name, name) &&
		    same(e->message, message))
			return e;
	}
	return NULL;
}

static void remove_at(struct audit_events *ae, size_t i)
{
	entry_free(ae->e[i]);
	ae->e[i] = ae->e[--ae->n];
}

/* Room for one more: forget the entry seen longest ago whose Event is up to date. */
static bool make_room(struct audit_events *ae)
{
	size_t oldest = ae->n;

	if (ae->n < AE_ENTRIES)
		return true;
	for (size_t i = 0; i < ae->n; i++) {
		const struct entry *e = ae->e[i];

		if (!e->busy && e->sent == e->count &&
		    (oldest == ae->n || e->last_seen < ae->e[oldest]->last_seen))
			oldest = i;
	}
	if (oldest == ae->n)
		return false;
	remove_at(ae, oldest);
	return true;
}

static struct entry *entry_new(const json_t *obj, const char *ns, const char *message)
{
	struct entry *e = xcalloc(1, sizeof(*e));
	const char *name = jx_name(obj), *kind = jx_str(obj, "kind", NULL);
	const char *api_version = jx_str(obj, "apiVersion", NULL), *uid = jx_uid(obj);
	struct timespec now = clock_wall_now();

	e->ns = xstrdup(ns);
	e->api_version = api_version ? xstrdup(api_version) : NULL;
	e->kind = kind ? xstrdup(kind) : NULL;
	e->name = name ? xstrdup(name) : NULL;
	e->uid = uid ? xstrdup(uid) : NULL;
	e->message = xstrdup(message);
	e->first_wall = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
	return e;
}

static void count_dropped(void)
{
	metrics_add("landlord_admission_audit_events_dropped_total", NULL, 1);
}

void audit_events_add(struct audit_events *ae, const json_t *obj, const char *ns,
                      const char *message)
{
	const char *where = ns && *ns ? ns : jx_namespace(obj);
	struct entry *e;

	where = where && *where ? where : "default";
	pthread_mutex_lock(&ae->mu);
	e = find(ae, where, jx_str(obj, "kind", NULL), jx_name(obj), message);
	if (e == NULL && make_room(ae)) {
		e = entry_new(obj, where, message);
		ae->e[ae->n++] = e;
	}
	if (e) {
		e->count++;
		e->last_seen = clock_mono_ns();
		pthread_cond_signal(&ae->cond);
	}
	pthread_mutex_unlock(&ae->mu);
	if (e == NULL)
		count_dropped();
}

/* ---- writing ---- */

/* What one write needs, copied out of an entry under the lock. */
struct job {
	struct entry *e; /* busy while the job runs */
	char *event;     /* NULL: create one */
	long long count;
	json_t *body;
};

static void timestamp(int64_t wall_ns, char out[CLOCK_UTC_MAX])
{
	struct timespec ts = {wall_ns / 1000000000LL, wall_ns % 1000000000LL};

	clock_format_utc(&ts, 0, out);
}

static json_t *create_body(const struct audit_events *ae, const struct entry *e, char *name)
{
	char first[CLOCK_UTC_MAX], last[CLOCK_UTC_MAX];
	struct timespec now = clock_wall_now();

	timestamp(e->first_wall, first);
	timestamp((int64_t)now.tv_sec * 1000000000LL + now.tv_nsec, last);
	return json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s?,s:s?,s:s?,s:s?,s:s?},s:s,s:s,s:s,"
	                 "s:{s:s},s:s,s:s,s:I,s:s}",
	                 "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
	                 e->ns, "involvedObject", "apiVersion", e->api_version, "kind", e->kind,
	                 "name", e->name, "uid", e->uid, "namespace", e->ns, "reason", AE_REASON,
	                 "message", e->message, "type", "Warning", "source", "component",
	                 ae->component, "firstTimestamp", first, "lastTimestamp", last, "count",
	                 (json_int_t)e->count, "reportingComponent", ae->component);
}

static json_t *update_body(const struct entry *e)
{
	char last[CLOCK_UTC_MAX];
	struct timespec now = clock_wall_now();

	timestamp((int64_t)now.tv_sec * 1000000000LL + now.tv_nsec, last);
	return json_pack("{s:I,s:s}", "count", (json_int_t)e->count, "lastTimestamp", last);
}

/* A name unique to this replica and entry: <object>.<16 hex digits>. */
static char *event_name(const struct entry *e)
{
	static atomic_uint_fast64_t seq;
	uint64_t x = (uint64_t)clock_mono_ns() ^ ((uint64_t)e->first_wall << 7) ^
	             (atomic_fetch_add(&seq, 1) * 0x9e3779b97f4a7c15ull) ^ (uint64_t)(uintptr_t)e;

	return xasprintf("%.*s.%016llx", NAME_PART_MAX, e->name ? e->name : "object",
	                 (unsigned long long)x);
}

/* Refill the bucket; take one token for a new Event. */
static bool take_token(struct audit_events *ae, int64_t now)
{
	ae->tokens += (double)(now - ae->tokens_at) * AE_CREATE_PER_S / 1e9;
	ae->tokens_at = now;
	if (ae->tokens > AE_CREATE_BURST)
		ae->tokens = AE_CREATE_BURST;
	if (ae->tokens < 1)
		return false;
	ae->tokens -= 1;
	return true;
}

/*
 * The next write due, or false; forgets entries past the window. Under the lock. @final_since:
 * 0, or the start of the last pass: then every entry not written since is due, once.
 */
static bool next_job(struct audit_events *ae, int64_t now, int64_t final_since, struct job *j)
{
	for (size_t i = 0; i < ae->n; i++) {
		struct entry *e = ae->e[i];
		bool due = e->count > e->sent &&
		           (final_since ? e->sent_at < final_since
		                        : e->sent_at == 0 ||
		                                  now - e->sent_at >= AE_UPDATE_MS * NS_PER_MS);

		if (!e->busy && e->count == e->sent &&
		    now - e->last_seen > AE_WINDOW_MS * NS_PER_MS) {
			remove_at(ae, i--);
			continue;
		}
		if (e->busy || !due || (e->event == NULL && !take_token(ae, now)))
			continue;
		*j = (struct job){.e = e, .count = e->count};
		j->event = e->event ? xstrdup(e->event) : event_name(e);
		j->body = e->event ? update_body(e) : create_body(ae, e, j->event);
		e->busy = true;
		return true;
	}
	return false;
}

static void count_write(const char *result)
{
	char labels[64];

	metrics_labels(labels, sizeof(labels), "result", result, NULL);
	metrics_add("landlord_audit_events_total", labels, 1);
}

/* Create or patch; Return: true when the Event carries the count. Without the lock. */
static bool write_event(struct audit_events *ae, const struct entry *e, struct job *j, bool create)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = create ? kc_create(ae->client, &KC_EVENTS, e->ns, j->body, &resp, &err)
	                : kc_patch(ae->client, &KC_EVENTS, e->ns, j->event, NULL, KC_PATCH_MERGE,
	                           j->body, NULL, &resp, &err);
	bool ok = rc == 0 && kc_resp_ok(&resp);

	if (rc < 0)
		log_warn("audit event not recorded", "{s:s,s:s}", "namespace", e->ns, "error",
		         err.msg);
	else if (!ok && !(resp.http_status == 404 && !create))
		log_warn("audit event not recorded", "{s:s,s:i,s:s}", "namespace", e->ns, "code",
		         (int)resp.http_status, "message", resp.status.message);
	if (!ok && rc == 0 && resp.http_status == 404 && !create) {
		free(j->event); /* deleted meanwhile: a new Event, with the whole count */
		j->event = NULL;
	}
	count_write(ok ? (create ? "created" : "updated") : "failed");
	kc_resp_release(&resp);
	return ok;
}

static void run_job(struct audit_events *ae, struct job *j)
{
	struct entry *e = j->e; /* its identity fields never change; busy keeps it alive */
	bool create = e->event == NULL, ok = write_event(ae, e, j, create);

	pthread_mutex_lock(&ae->mu);
	e->busy = false;
	e->sent_at = clock_mono_ns();
	if (ok) {
		e->sent = j->count;
		if (create) {
			e->event = j->event;
			j->event = NULL;
		}
	} else if (!create && j->event == NULL) {
		free(e->event); /* the Event is gone: the next pass creates one */
		e->event = NULL;
		e->sent_at = 0;
	}
	pthread_mutex_unlock(&ae->mu);
	free(j->event);
	json_decref(j->body);
}

/* Every write due now. Return: whether the lock was dropped (something was written). */
static bool pass(struct audit_events *ae, bool final)
{
	int64_t since = final ? clock_mono_ns() : 0;
	struct job j;
	bool wrote = false;

	while (next_job(ae, clock_mono_ns(), since, &j)) {
		pthread_mutex_unlock(&ae->mu);
		run_job(ae, &j);
		wrote = true;
		pthread_mutex_lock(&ae->mu);
	}
	return wrote;
}

static void *thread_main(void *arg)
{
	struct audit_events *ae = arg;

	pthread_mutex_lock(&ae->mu);
	while (!ae->stop) {
		if (!pass(ae, false))
			clock_cond_wait_until(&ae->cond, &ae->mu,
			                      clock_mono_ns() + PASS_MS * NS_PER_MS);
	}
	pass(ae, true);
	pthread_mutex_unlock(&ae->mu);
	return NULL;
}

/* ---- life cycle ---- */

struct audit_events *audit_events_new(const struct audit_events_opts *o)
{
	struct audit_events *ae = xcalloc(1, sizeof(*ae));

	ae->client = o->client;
	ae->component = xstrdup(o->component ? o->component : "landlord-webhook");
	ae->tokens = AE_CREATE_BURST;
	ae->tokens_at = clock_mono_ns();
	pthread_mutex_init(&ae->mu, NULL);
	clock_cond_init(&ae->cond);
	metrics_describe("landlord_audit_events_total", METRIC_COUNTER,
	                 "Writes of audit-mode Events, by result (created, updated, failed).", NULL,
	                 0);
	metrics_describe("landlord_admission_audit_events_dropped_total", METRIC_COUNTER,
	                 "Audited findings recorded in no Event: the table of pending Events was "
	                 "full.",
	                 NULL, 0);
	if (pthread_create(&ae->thread, NULL, thread_main, ae) != 0) {
		log_error("cannot start the audit events thread: no Event will be recorded", NULL);
		ae->stop = true;
		ae->thread_failed = true;
	}
	return ae;
}

void audit_events_free(struct audit_events *ae)
{
	if (ae == NULL)
		return;
	pthread_mutex_lock(&ae->mu);
	ae->stop = true;
	pthread_cond_signal(&ae->cond);
	pthread_mutex_unlock(&ae->mu);
	if (!ae->thread_failed)
		pthread_join(ae->thread, NULL);
	while (ae->n)
		remove_at(ae, 0);
	pthread_cond_destroy(&ae->cond);
	pthread_mutex_destroy(&ae->mu);
	free(ae->component);
	free(ae);
}

/* ---- the process's recorder ---- */

void audit_events_install(struct audit_events *ae)
{
	atomic_store(&installed, ae);
}

/* The object a request is about, as an Event names it (new reference). */
static json_t *subject(const json_t *request)
{
	const char *op = jx_str(request, "operation", NULL);
	const json_t *obj =
	        jx_get(request, op && strcmp(op, "DELETE") == 0 ? "oldObject" : "object", NULL);
	const char *group = jx_str(request, "kind", "group", NULL);
	const char *version = jx_str(request, "kind", "version", NULL);
	const char *name = jx_str(request, "name", NULL);
	char api_version[256];

	snprintf(api_version, sizeof(api_version), "%s%s%s", group && *group ? group : "",
	         group && *group ? "/" : "", version ? version : "");
	return json_pack("{s:s,s:s?,s:{s:s?,s:s?,s:s?}}", "apiVersion", api_version, "kind",
	                 jx_str(request, "kind", "kind", NULL), "metadata", "name",
	                 name && *name ? name : jx_name(obj), "namespace",
	                 jx_str(request, "namespace", NULL), "uid", jx_uid(obj));
}

void audit_events_record(const json_t *request, const char *message)
{
	struct audit_events *ae = atomic_load(&installed);
	json_t *about;

	if (ae == NULL || json_is_true(jx_get(request, "dryRun", NULL)))
		return;
	about = subject(request);
	if (about)
		audit_events_add(ae, about, jx_str(request, "namespace", NULL), message);
	json_decref(about);
}
