/*
 * lease.c - leader election on a coordination.k8s.io/v1 Lease (see lease.h and
 * docs/internals/lease.md).
 *
 * Two threads per elector. The elector thread runs the state machine, keeps time and calls the
 * callbacks. The I/O thread runs one API job at a time (try to acquire/renew, or release), so
 * the elector can step down on time even while a request hangs.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "kube/kube.h"
#include "kube/lease.h"

#define LEADER_GAUGE       "landlord_leader"
#define TRANSITIONS_METRIC "landlord_leader_transitions_total"

enum job {
	JOB_NONE,
	JOB_TRY,     /* try_acquire_or_renew() */
	JOB_RELEASE, /* release_lease() */
};

enum try_result {
	TRY_LEADING,  /* the Lease is ours and was just written (acquired or renewed) */
	TRY_HELD,     /* another holder's Lease has not expired */
	TRY_CONFLICT, /* 409: someone wrote the Lease first */
	TRY_FAILED,   /* no usable answer; logged */
};

/* The last Lease record seen, and when (monotonic) it was first seen. */
struct observed {
	char *holder; /* "" when nobody holds it */
	char *renew_time;
	char *rv;
	long long duration_ms; /* the record's leaseDurationSeconds */
	long long at_ms;
};

struct lease {
	struct kc_client *kc; /* borrowed */
	char *ns;
	char *name;
	char *identity;
	char *key; /* "ns/name", for logs */
	char labels[512];
	long long duration_ms;
	long long deadline_ms;
	long long retry_ms;
	void (*on_started_leading)(void *ud);
	void (*on_stopped_leading)(void *ud);
	void (*on_new_leader)(const char *identity, void *ud);
	void *ud;

	pthread_mutex_t mu;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; broadcast on every change of the fields below */
	bool started;
	bool stopping;
	bool io_exit;
	bool joined;
	enum job job; /* requested or running; JOB_NONE when the I/O thread is idle */
	bool job_done;
	int job_result;
	pthread_t elector_thread;
	pthread_t io_thread;

	atomic_bool leading;
	/* Written by the I/O thread during a job, read by the elector only between jobs. */
	struct observed obs;
	char *reported; /* last identity given to on_new_leader (elector thread only) */
};

static void fill_random(void *p, size_t n)
{
	ssize_t got;
	struct timespec ts;

	do {
		got = getrandom(p, n, 0);
	} while (got < 0 && errno == EINTR);
	if (got == (ssize_t)n)
		return;
	/* No kernel randomness: the clock still tells processes apart. */
	ts = clock_wall_now();
	memcpy(p, &ts.tv_nsec, n < sizeof(ts.tv_nsec) ? n : sizeof(ts.tv_nsec));
}

/* A MicroTime: six fractional digits, which the API server requires for renewTime. */
static void now_microtime(char out[CLOCK_UTC_MAX])
{
	struct timespec now = clock_wall_now();

	clock_format_utc(&now, 6, out);
}

static char *default_identity(void)
{
	char host[HOST_NAME_MAX + 1] = "";
	uint32_t suffix;

	if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0')
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	fill_random(&suffix, sizeof(suffix));
	return xasprintf("%s_%ld_%08" PRIx32, host, (long)getpid(), suffix);
}

static const char *errno_name(int rc)
{
	const char *s = strerrorname_np(-rc);

	return s ? s : "unknown";
}

static void log_call_failed(const struct lease *l, const char *call, int rc,
                            const struct kc_resp *resp, const struct ll_err *err)
{
	if (rc < 0)
		log_warn("lease request failed", "{s:s,s:s,s:s,s:s}", "lease", l->key, "call", call,
		         "error", errno_name(rc), "detail", err->msg);
	else
		log_warn("lease request rejected", "{s:s,s:s,s:I,s:s,s:s}", "lease", l->key, "call",
		         call, "code", (json_int_t)resp->http_status, "reason", resp->status.reason,
		         "message", resp->status.message);
}

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const char *spec_str(const json_t *lease, const char *field)
{
	const char *s = jx_str(lease, "spec", field, NULL);

	return s ? s : "";
}

/* observe() - remember @lease's record; restart the expiry clock when it changed. */
static void observe(struct lease *l, const json_t *lease)
{
	const char *holder = spec_str(lease, "holderIdentity");
	const char *renew = spec_str(lease, "renewTime");
	const char *rv = jx_resource_version(lease);
	long long secs = jx_int(lease, 0, "spec", "leaseDurationSeconds", NULL);

	rv = rv ? rv : "";
	if (same(l->obs.holder, holder) && same(l->obs.renew_time, renew) && same(l->obs.rv, rv))
		return;
	free(l->obs.holder);
	free(l->obs.renew_time);
	free(l->obs.rv);
	l->obs.holder = xstrdup(holder);
	l->obs.renew_time = xstrdup(renew);
	l->obs.rv = xstrdup(rv);
	l->obs.duration_ms = secs > 0 && secs <= INT_MAX ? secs * 1000 : l->duration_ms;
	l->obs.at_ms = clock_mono_ms();
}

static bool may_take(const struct lease *l)
{
	return l->obs.holder[0] == '\0' || strcmp(l->obs.holder, l->identity) == 0 ||
	       clock_mono_ms() - l->obs.at_ms >= l->obs.duration_ms;
}

static json_t *spec_of(json_t *lease)
{
	json_t *spec = json_object_get(lease, "spec");

	if (!json_is_object(spec)) {
		spec = json_object();
		json_object_set_new(lease, "spec", spec);
	}
	return spec;
}

/*
 * claim() - make @lease name us as holder, renewed now. Taking it from another (or no) holder
 * sets acquireTime and counts a transition; a @fresh object starts at 0 transitions.
 */
static void claim(struct lease *l, json_t *lease, bool fresh)
{
	json_t *spec = spec_of(lease);
	bool ours = strcmp(spec_str(lease, "holderIdentity"), l->identity) == 0;
	json_int_t transitions = jx_int(lease, 0, "spec", "leaseTransitions", NULL);
	char now[CLOCK_UTC_MAX];

	now_microtime(now);
	json_object_set_new(spec, "holderIdentity", json_string(l->identity));
	json_object_set_new(spec, "leaseDurationSeconds",
	                    json_integer((l->duration_ms + 999) / 1000));
	json_object_set_new(spec, "renewTime", json_string(now));
	if (!ours) {
		json_object_set_new(spec, "acquireTime", json_string(now));
		json_object_set_new(spec, "leaseTransitions",
		                    json_integer(fresh ? 0 : transitions + 1));
	}
}

static int create_lease(struct lease *l)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	json_t *obj;
	int rc, res = TRY_FAILED;

	obj = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "coordination.k8s.io/v1", "kind",
	                "Lease", "metadata", "name", l->name, "namespace", l->ns);
	claim(l, obj, true);
	rc = kc_create(l->kc, &KC_LEASES, l->ns, obj, &resp, &err);
	if (rc == 0 && kc_resp_ok(&resp) && json_is_object(resp.body)) {
		observe(l, resp.body);
		res = TRY_LEADING;
	} else if (rc == 0 && resp.http_status == 409) {
		log_info("lease created by another candidate first", "{s:s}", "lease", l->key);
		res = TRY_CONFLICT;
	} else {
		log_call_failed(l, "create", rc, &resp, &err);
	}
	json_decref(obj);
	kc_resp_release(&resp);
	return res;
}

/* put_lease() - PUT @lease (carrying the resourceVersion we read). */
static int put_lease(struct lease *l, const json_t *lease, const char *call)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc, res = TRY_FAILED;

	rc = kc_replace(l->kc, &KC_LEASES, l->ns, l->name, NULL, lease, &resp, &err);
	if (rc == 0 && kc_resp_ok(&resp) && json_is_object(resp.body)) {
		observe(l, resp.body);
		res = TRY_LEADING;
	} else if (rc == 0 && resp.http_status == 409) {
		log_info("lease written by someone else first", "{s:s,s:s,s:s}", "lease", l->key,
		         "call", call, "message", resp.status.message);
		res = TRY_CONFLICT;
	} else {
		log_call_failed(l, call, rc, &resp, &err);
	}
	kc_resp_release(&resp);
	return res;
}

/* get_lease() - GET into @resp. Return: 0 (2xx with an object or 404), else TRY_FAILED. */
static int get_lease(struct lease *l, struct kc_resp *resp)
{
	struct ll_err err = {{0}};
	int rc;

	rc = kc_get(l->kc, &KC_LEASES, l->ns, l->name, resp, &err);
	if (rc == 0 &&
	    (resp->http_status == 404 || (kc_resp_ok(resp) && json_is_object(resp->body))))
		return 0;
	log_call_failed(l, "get", rc, resp, &err);
	return TRY_FAILED;
}

/* try_acquire_or_renew() - one GET and, when the Lease is free, expired or ours, one write. */
static int try_acquire_or_renew(struct lease *l)
{
	struct kc_resp resp = {0};
	int res;

	res = get_lease(l, &resp);
	if (res != 0)
		goto out;
	if (resp.http_status == 404) {
		res = create_lease(l);
		goto out;
	}
	observe(l, resp.body);
	if (!may_take(l)) {
		res = TRY_HELD;
		goto out;
	}
	claim(l, resp.body, false);
	res = put_lease(l, resp.body, "update");
out:
	kc_resp_release(&resp);
	return res;
}

/*
 * release_lease() - if the stored Lease still names us, clear the holder and shorten the
 * duration to 1 s (keeping acquireTime and leaseTransitions), so a candidate takes it at its next
 * retry. Tried once; failures are logged.
 */
static int release_lease(struct lease *l)
{
	struct kc_resp resp = {0};
	json_t *spec;
	char now[CLOCK_UTC_MAX];
	int res;

	res = get_lease(l, &resp);
	if (res != 0 || resp.http_status == 404)
		goto out;
	observe(l, resp.body);
	if (strcmp(l->obs.holder, l->identity) != 0)
		goto out;
	now_microtime(now);
	spec = spec_of(resp.body);
	json_object_set_new(spec, "holderIdentity", json_string(""));
	json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
	json_object_set_new(spec, "renewTime", json_string(now));
	res = put_lease(l, resp.body, "release");
	if (res == TRY_LEADING)
		log_info("lease released", "{s:s,s:s}", "lease", l->key, "identity", l->identity);
out:
	kc_resp_release(&resp);
	return res;
}

static void *io_main(void *arg)
{
	struct lease *l = arg;
	enum job job;
	int res;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (l->job == JOB_NONE && !l->io_exit)
			pthread_cond_wait(&l->cond, &l->mu);
		if (l->job == JOB_NONE)
			break;
		job = l->job;
		pthread_mutex_unlock(&l->mu);
		res = job == JOB_TRY ? try_acquire_or_renew(l) : release_lease(l);
		pthread_mutex_lock(&l->mu);
		l->job = JOB_NONE;
		l->job_result = res;
		l->job_done = true;
		pthread_cond_broadcast(&l->cond);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* wait_locked() - one timed wait on the condvar until monotonic @until_ms (<0: no limit). */
static void wait_locked(struct lease *l, long long until_ms)
{
	if (until_ms < 0)
		pthread_cond_wait(&l->cond, &l->mu);
	else
		clock_cond_wait_until(&l->cond, &l->mu, until_ms * CLOCK_NS_PER_MS);
}

/* wait_until() - sleep until monotonic @until_ms or lease_stop(). Return: true when stopping. */
static bool wait_until(struct lease *l, long long until_ms)
{
	bool stop;

	pthread_mutex_lock(&l->mu);
	while (!l->stopping && clock_mono_ms() < until_ms)
		wait_locked(l, until_ms);
	stop = l->stopping;
	pthread_mutex_unlock(&l->mu);
	return stop;
}

static bool is_stopping(struct lease *l)
{
	bool stop;

	pthread_mutex_lock(&l->mu);
	stop = l->stopping;
	pthread_mutex_unlock(&l->mu);
	return stop;
}

static void job_start(struct lease *l, enum job job)
{
	pthread_mutex_lock(&l->mu);
	l->job = job;
	l->job_done = false;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->mu);
}

/*
 * job_wait() - wait for the running job until @until_ms (<0: no limit) or, when
 * @stop_interrupts, lease_stop(). Return: true when it finished (result in *@result).
 */
static bool job_wait(struct lease *l, long long until_ms, bool stop_interrupts, int *result)
{
	bool done;

	pthread_mutex_lock(&l->mu);
	while (!l->job_done && !(stop_interrupts && l->stopping) &&
	       (until_ms < 0 || clock_mono_ms() < until_ms))
		wait_locked(l, until_ms);
	done = l->job_done;
	*result = l->job_result;
	pthread_mutex_unlock(&l->mu);
	return done;
}

static int run_job(struct lease *l, enum job job)
{
	int result;

	job_start(l, job);
	job_wait(l, -1, false, &result);
	return result;
}

/* report_leader() - after a job: tell on_new_leader about a new (non-empty) holder. */
static void report_leader(struct lease *l)
{
	const char *holder = l->obs.holder;

	if (holder == NULL || holder[0] == '\0' || same(holder, l->reported))
		return;
	free(l->reported);
	l->reported = xstrdup(holder);
	log_info("new leader observed", "{s:s,s:s,s:b}", "lease", l->key, "leader", holder, "self",
	         strcmp(holder, l->identity) == 0);
	if (l->on_new_leader)
		l->on_new_leader(holder, l->ud);
}

static void set_leading(struct lease *l, bool leading)
{
	atomic_store(&l->leading, leading);
	metrics_set(LEADER_GAUGE, l->labels, leading ? 1 : 0);
	metrics_add(TRANSITIONS_METRIC, l->labels, 1);
}

static void start_leading(struct lease *l)
{
	set_leading(l, true);
	log_info("lease acquired, leading", "{s:s,s:s}", "lease", l->key, "identity", l->identity);
	if (l->on_started_leading)
		l->on_started_leading(l->ud);
}

static void stop_leading(struct lease *l, const char *reason)
{
	set_leading(l, false);
	if (is_stopping(l))
		log_info("stopping leading", "{s:s,s:s}", "lease", l->key, "reason", reason);
	else
		log_warn("lease lost, stopping leading", "{s:s,s:s}", "lease", l->key, "reason",
		         reason);
	if (l->on_stopped_leading)
		l->on_stopped_leading(l->ud);
}

static long long jittered(long long ms)
{
	uint32_t r;

	fill_random(&r, sizeof(r));
	return ms + (long long)(r % (uint32_t)(ms / 5 + 1));
}

/*
 * campaign() - try every retry period until the Lease is ours. Return: 0 with *@start_ms = when
 * the winning attempt began, or -ECANCELED on lease_stop() (a Lease won meanwhile is released).
 */
static int campaign(struct lease *l, long long *start_ms)
{
	int res;

	for (;;) {
		if (is_stopping(l))
			return -ECANCELED;
		*start_ms = clock_mono_ms();
		res = run_job(l, JOB_TRY);
		report_leader(l);
		if (res == TRY_LEADING)
			break;
		if (wait_until(l, clock_mono_ms() + jittered(l->retry_ms)))
			return -ECANCELED;
	}
	if (is_stopping(l)) {
		run_job(l, JOB_RELEASE);
		return -ECANCELED;
	}
	return 0;
}

/*
 * renew() - renew every retry period. Return why leadership ends; *@in_flight is true when a
 * job still runs. The deadline counts from the start of the last successful write: the server
 * stored it after that instant, so followers cannot expire it before deadline + margin.
 */
static const char *renew(struct lease *l, long long last_ms, bool *in_flight)
{
	long long deadline, start, next;
	int res;

	for (;;) {
		deadline = last_ms + l->deadline_ms;
		next = clock_mono_ms() + l->retry_ms;
		if (wait_until(l, next < deadline ? next : deadline))
			return "stopping";
		if (clock_mono_ms() >= deadline)
			return "renew deadline exceeded";
		start = clock_mono_ms();
		job_start(l, JOB_TRY);
		if (!job_wait(l, deadline, true, &res)) {
			*in_flight = true;
			return is_stopping(l) ? "stopping" : "renew deadline exceeded";
		}
		report_leader(l);
		if (res == TRY_LEADING)
			last_ms = start;
		else if (res == TRY_HELD)
			return "lease taken over by another holder";
	}
}

static void lead(struct lease *l, long long acquired_ms)
{
	bool in_flight = false;
	const char *reason;
	int res;

	start_leading(l);
	reason = renew(l, acquired_ms, &in_flight);
	stop_leading(l, reason);
	if (in_flight) {
		job_wait(l, -1, false, &res);
		report_leader(l);
	}
	run_job(l, JOB_RELEASE);
}

static void *elector_main(void *arg)
{
	struct lease *l = arg;
	long long acquired_ms;

	while (campaign(l, &acquired_ms) == 0)
		lead(l, acquired_ms);
	pthread_mutex_lock(&l->mu);
	l->io_exit = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static bool valid_opts(const struct lease_opts *o, long long dur, long long dl, long long rp)
{
	if (rp <= 0 || rp >= dl || dl >= dur) {
		log_error("lease: need 0 < retry_period < renew_deadline < lease_duration",
		          "{s:I,s:I,s:I}", "retry_period_ms", (json_int_t)rp, "renew_deadline_ms",
		          (json_int_t)dl, "lease_duration_ms", (json_int_t)dur);
		return false;
	}
	if (!o->ns || !o->ns[0] || !o->name || !o->name[0] || (o->identity && !o->identity[0])) {
		log_error("lease: missing namespace or name, or empty identity", NULL);
		return false;
	}
	return true;
}

static void init_sync(struct lease *l)
{
	pthread_mutex_init(&l->mu, NULL);
	clock_cond_init(&l->cond);
}

struct lease *lease_new(struct kc_client *own_client, const struct lease_opts *opts)
{
	static const struct lease_opts defaults = {0};
	const struct lease_opts *o = opts ? opts : &defaults;
	long long dur = o->lease_duration_ms > 0 ? o->lease_duration_ms : 15000;
	long long dl = o->renew_deadline_ms > 0 ? o->renew_deadline_ms : 10000;
	long long rp = o->retry_period_ms > 0 ? o->retry_period_ms : 2000;
	struct lease *l;

	if (!valid_opts(o, dur, dl, rp))
		return NULL;
	l = xcalloc(1, sizeof(*l));
	l->kc = own_client;
	l->ns = xstrdup(o->ns);
	l->name = xstrdup(o->name);
	l->identity = o->identity ? xstrdup(o->identity) : default_identity();
	l->key = xasprintf("%s/%s", l->ns, l->name);
	metrics_labels(l->labels, sizeof(l->labels), "lease", l->key, NULL);
	l->duration_ms = dur;
	l->deadline_ms = dl;
	l->retry_ms = rp;
	l->on_started_leading = o->on_started_leading;
	l->on_stopped_leading = o->on_stopped_leading;
	l->on_new_leader = o->on_new_leader;
	l->ud = o->ud;
	atomic_init(&l->leading, false);
	init_sync(l);
	metrics_describe(LEADER_GAUGE, METRIC_GAUGE, "1 while this process holds the Lease", NULL,
	                 0);
	metrics_describe(TRANSITIONS_METRIC, METRIC_COUNTER,
	                 "Times this process started or stopped leading", NULL, 0);
	metrics_set(LEADER_GAUGE, l->labels, 0);
	return l;
}

int lease_start(struct lease *l)
{
	int rc;

	if (l->started)
		return -EINVAL;
	rc = pthread_create(&l->io_thread, NULL, io_main, l);
	if (rc != 0)
		return -rc;
	rc = pthread_create(&l->elector_thread, NULL, elector_main, l);
	if (rc != 0) {
		pthread_mutex_lock(&l->mu);
		l->io_exit = true;
		pthread_cond_broadcast(&l->cond);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->io_thread, NULL);
		return -rc;
	}
	l->started = true;
	log_info("lease elector started", "{s:s,s:s}", "lease", l->key, "identity", l->identity);
	return 0;
}

bool lease_is_leader(struct lease *l)
{
	return atomic_load(&l->leading);
}

const char *lease_identity(const struct lease *l)
{
	return l->identity;
}

void lease_stop(struct lease *l)
{
	if (!l->started || l->joined)
		return;
	pthread_mutex_lock(&l->mu);
	l->stopping = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->elector_thread, NULL);
	pthread_join(l->io_thread, NULL);
	l->joined = true;
}

void lease_free(struct lease *l)
{
	if (l == NULL)
		return;
	lease_stop(l);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->mu);
	free(l->obs.holder);
	free(l->obs.renew_time);
	free(l->obs.rv);
	free(l->reported);
	free(l->ns);
	free(l->name);
	free(l->identity);
	free(l->key);
	free(l);
}
