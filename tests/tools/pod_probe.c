/*
 * pod_probe - the probe of the quota-window benchmark (bench/quota_window.py): when can every
 * owner create a pod in every namespace of its tenant?
 *
 *   pod_probe --kubeconfig K --prefix P --tenants N --kinds dev,stage,prod [--sandbox]
 *             [--over-cpu Q] [--threads T] [--check-threads C] [--retry-ms R]
 *             [--timeout-seconds S]
 *
 * Tenant i is "<P>-<i>", owned by user "owner-<i>", with the namespaces "<P>-<i>-<kind>" (and
 * "<P>-<i>-owner-<i>-sandbox" with --sandbox), as tests/tools/bare_tenants.c names them.
 *
 * As the owner (the admin kubeconfig impersonating "owner-<i>": authorization and admission see
 * the owner's user name with the group system:authenticated), it POSTs a Pod with dryRun=All
 * into each namespace until one is admitted (201). A dry run goes through authorization and
 * every admission step of a real create: Pod Security, LimitRanger, ServiceAccount, the
 * ValidatingAdmissionPolicies and ResourceQuota, which checks a dry run against the quota like
 * any create and only does not record the usage. Attempts start once the namespace has a
 * RoleBinding naming the owner and its default ServiceAccount, both seen through watches: a pod
 * is refused without either, and an attempt without the ServiceAccount holds an API server
 * request for 1-2 s of lookups, so probing blindly would load the server it measures. A refused
 * attempt is repeated every R ms (default 50). Once a namespace admits the pod, one more dry-run
 * Pod asking for Q CPUs (default 3: over a namespace's share, under the LimitRange's max) must be
 * refused by quota admission: the quota was in force when access came. Attempts run on T
 * threads (default 32), the over-quota checks on C others (default 8), so that a burst of
 * namespaces getting access at once is not timed by the probe's own queue.
 *
 * The watches (as admin) also time each namespace's steps: created, its landlord-quota in force
 * (status.hard equals spec.hard), its default ServiceAccount, the owner's RoleBinding.
 *
 * Prints {"ready":true} once the watches' starting points are read (start the clients then: the
 * watches begin there, whenever they connect), and at the end one JSON line: per namespace
 * [created, quota in force, ServiceAccount, RoleBinding, admitted, attempts], the times on
 * CLOCK_MONOTONIC in ns (0: not seen), refusals by cause, and the over-quota check. Exit status 1
 * when a namespace did not admit the pod before the timeout.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"

#define MAX_KINDS   16
#define MAX_THREADS 64
#define MAX_OTHER   4 /* refusal messages of no known cause kept for the report */
#define POD_NAME    "quota-probe"

enum step { S_NS, S_QUOTA, S_SA, S_RB, S_OK, N_STEPS };

/* Why an attempt was refused, told by the API server's message. */
enum cause {
	C_RBAC,           /* not (yet) allowed: no RoleBinding the authorizer sees */
	C_PROVISIONING,   /* landlord-quota-in-force: the quota is not in force yet */
	C_SERVICEACCOUNT, /* the default ServiceAccount is missing */
	C_QUOTA_EXCEEDED, /* quota admission: over the quota */
	C_QUOTA_UNKNOWN,  /* quota admission: status.used not filled in */
	C_NOT_FOUND,      /* the namespace is not there */
	C_OTHER,
	N_CAUSES
};

static const char *const CAUSE_NAMES[N_CAUSES] = {
        "rbac",          "provisioning", "serviceaccount", "quota_exceeded",
        "quota_unknown", "not_found",    "other"};

struct ns_probe {
	char *name;
	char *owner;
	int64_t at[N_STEPS]; /* CLOCK_MONOTONIC ns; 0: not yet */
	int attempts;
	bool started;       /* queued once: later attempts are queued by the worker */
	bool queued;        /* waiting for a worker */
	int64_t not_before; /* when queued: not tried before this */
	bool finished;      /* admitted and the over-quota check done */
	int64_t checked;    /* when the over-quota check was answered */
};

struct probe {
	/* arguments */
	const char *kubeconfig;
	const char *prefix;
	const char *kinds[MAX_KINDS];
	int nkinds;
	bool sandbox;
	int tenants;
	int threads;
	int check_threads;
	int retry_ms;
	int timeout_s;
	const char *over_cpu;

	struct kc_client *c;
	struct ns_probe *ns;
	int n;
	json_t *index; /* namespace name -> index into ns; read-only once built */
	char *pod, *over_pod;

	pthread_mutex_t mu;
	pthread_cond_t cv; /* on CLOCK_MONOTONIC */
	int *checks;       /* admitted namespaces waiting for their over-quota check, FIFO */
	int chead, ctail;
	int finished;
	bool stop;
	long causes[N_CAUSES];
	char other[MAX_OTHER][300];
	int n_other;
	int over_refused, over_admitted, over_otherwise;
	atomic_int cancel; /* ends the watches */
	atomic_int watch_failures;
};

/* One watch: the resource, its selector, the callback and where it got to. */
struct watch {
	struct probe *p;
	const struct kc_gvr *gvr;
	const char *field_selector;
	kc_event_fn fn;
	char *rv;
	pthread_t thread;
};

/* ---- the steps seen through the watches ---- */

static int lookup(struct probe *p, const json_t *obj, bool by_namespace)
{
	const char *name = by_namespace ? jx_namespace(obj) : jx_name(obj);
	json_t *idx = name ? json_object_get(p->index, name) : NULL;

	return idx ? (int)json_integer_value(idx) : -1;
}

/* Queue namespace @i for attempts once its RoleBinding and ServiceAccount are seen. mu held. */
static void maybe_queue(struct probe *p, int i)
{
	struct ns_probe *n = &p->ns[i];

	if (n->at[S_RB] && n->at[S_SA] && !n->started) {
		n->started = true;
		n->queued = true;
		n->not_before = clock_mono_ns();
		pthread_cond_broadcast(&p->cv);
	}
}

static void seen(struct probe *p, int i, enum step s)
{
	if (i < 0)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->ns[i].at[s] == 0)
		p->ns[i].at[s] = clock_mono_ns();
	maybe_queue(p, i);
	pthread_mutex_unlock(&p->mu);
}

static void keep_rv(struct watch *w, const json_t *obj)
{
	const char *rv = jx_resource_version(obj);

	if (rv) {
		free(w->rv);
		w->rv = xstrdup(rv);
	}
}

static int on_namespace(enum watch_event_type type, json_t *obj, void *ud)
{
	struct watch *w = ud;

	if (type == WATCH_ADDED || type == WATCH_MODIFIED)
		seen(w->p, lookup(w->p, obj, false), S_NS);
	keep_rv(w, obj);
	return 0;
}

static int on_quota(enum watch_event_type type, json_t *obj, void *ud)
{
	struct watch *w = ud;
	const json_t *st = jx_get(obj, "status", "hard", NULL);

	if ((type == WATCH_ADDED || type == WATCH_MODIFIED) && st &&
	    strcmp(jx_name(obj) ? jx_name(obj) : "", "landlord-quota") == 0 &&
	    json_equal(jx_get(obj, "spec", "hard", NULL), st))
		seen(w->p, lookup(w->p, obj, true), S_QUOTA);
	keep_rv(w, obj);
	return 0;
}

static int on_serviceaccount(enum watch_event_type type, json_t *obj, void *ud)
{
	struct watch *w = ud;

	if (type == WATCH_ADDED || type == WATCH_MODIFIED)
		seen(w->p, lookup(w->p, obj, true), S_SA);
	keep_rv(w, obj);
	return 0;
}

static int on_rolebinding(enum watch_event_type type, json_t *obj, void *ud)
{
	struct watch *w = ud;
	int i = lookup(w->p, obj, true);
	json_t *s;
	size_t k;

	keep_rv(w, obj);
	if (i < 0 || !(type == WATCH_ADDED || type == WATCH_MODIFIED))
		return 0;
	json_array_foreach(json_object_get(obj, "subjects"), k, s) {
		const char *kind = jx_str(s, "kind", NULL), *name = jx_str(s, "name", NULL);

		if (kind && name && strcmp(kind, "User") == 0 &&
		    strcmp(name, w->p->ns[i].owner) == 0)
			seen(w->p, i, S_RB);
	}
	return 0;
}

/* A watch from its starting point until cancelled, placed again where it got to if it ends. */
static void *watcher(void *ud)
{
	struct watch *w = ud;

	while (!atomic_load(&w->p->cancel)) {
		struct kc_watch_opts wo = {.resource_version = w->rv,
		                           .field_selector = w->field_selector,
		                           .timeout_seconds = w->p->timeout_s + 60,
		                           .cancel = &w->p->cancel};
		struct kc_resp r = {0};
		struct ll_err err;
		int rc = kc_watch(w->p->c, w->gvr, NULL, &wo, w->fn, w, &r, &err);

		if (rc != -ECANCELED) {
			atomic_fetch_add(&w->p->watch_failures, 1);
			log_kv(LOG_WARN, "pod_probe: watch ended", "{s:s,s:i,s:i}", "resource",
			       w->gvr->resource, "rc", rc, "code", (int)r.http_status);
		}
		kc_resp_release(&r);
		if (rc == 0 && r.http_status == 410)
			break; /* too far behind: the steps it would have seen stay unseen */
	}
	return NULL;
}

/*
 * Where @w starts: the resourceVersion of one page of at most one item (kc_list() would walk
 * every page, one item each).
 */
static int start_point(struct probe *p, struct watch *w)
{
	struct buf path = BUF_INIT(4096), query = BUF_INIT(4096);
	struct kc_request rq = {.method = "GET", .verb = "LIST"};
	struct kc_resp r = {0};
	struct ll_err err;
	const char *rv;
	int rc = kc_path(&path, w->gvr, NULL, NULL, NULL);

	buf_append_str(&query, "limit=1");
	if (w->field_selector) {
		buf_append_str(&query, "&fieldSelector=");
		buf_append_urlencoded(&query, w->field_selector);
	}
	rq.path = buf_cstr(&path);
	rq.query = buf_cstr(&query);
	if (rc == 0)
		rc = kc_do(p->c, &rq, &r, &err);
	rv = kc_resp_ok(&r) ? jx_str(r.body, "metadata", "resourceVersion", NULL) : NULL;
	if (rc == 0 && rv)
		w->rv = xstrdup(rv);
	else
		log_kv(LOG_ERROR, "pod_probe: cannot list", "{s:s,s:i}", "resource",
		       w->gvr->resource, "code", (int)r.http_status);
	rc = rc == 0 && rv ? 0 : -EIO;
	kc_resp_release(&r);
	buf_release(&path);
	buf_release(&query);
	return rc;
}

/* ---- attempts ---- */

static enum cause cause_of(const struct kc_resp *r)
{
	const char *m = r->status.message;

	if (r->http_status == 404)
		return C_NOT_FOUND;
	if (strstr(m, "cannot create resource"))
		return C_RBAC;
	if (strstr(m, "still being provisioned"))
		return C_PROVISIONING;
	if (strstr(m, "service account") || strstr(m, "serviceaccount"))
		return C_SERVICEACCOUNT;
	if (strstr(m, "exceeded quota"))
		return C_QUOTA_EXCEEDED;
	if (strstr(m, "status unknown for quota"))
		return C_QUOTA_UNKNOWN;
	return C_OTHER;
}

/* One dry-run POST of @body into namespace @i as its owner. */
static int try_pod(struct probe *p, int i, const char *body, struct kc_resp *r)
{
	char path[300];
	struct kc_header h = {"Impersonate-User", p->ns[i].owner};
	struct kc_request rq = {.method = "POST",
	                        .path = path,
	                        .query = "dryRun=All",
	                        .headers = &h,
	                        .n_headers = 1,
	                        .body = body,
	                        .body_len = strlen(body),
	                        .verb = "CREATE"};
	struct ll_err err;
	int rc;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", p->ns[i].name);
	rc = kc_do(p->c, &rq, r, &err);
	if (rc < 0)
		snprintf(r->status.message, sizeof(r->status.message), "%s", err.msg);
	return rc;
}

static void note_other(struct probe *p, const char *what, const char *msg)
{
	if (p->n_other < MAX_OTHER) /* cut to the first 200 bytes of the message */
		snprintf(p->other[p->n_other++], sizeof(p->other[0]), "%.80s: %.200s", what, msg);
}

/* Admitted: the over-quota pod must now be refused by quota admission. */
static void check_over(struct probe *p, int i)
{
	struct kc_resp r = {0};
	int rc = try_pod(p, i, p->over_pod, &r);

	pthread_mutex_lock(&p->mu);
	if (rc == 0 && r.http_status == 403 && cause_of(&r) == C_QUOTA_EXCEEDED) {
		p->over_refused++;
	} else if (rc == 0 && kc_resp_ok(&r)) {
		p->over_admitted++;
	} else {
		p->over_otherwise++;
		note_other(p, "over-quota pod", r.status.message);
	}
	p->ns[i].finished = true;
	p->ns[i].checked = clock_mono_ns();
	p->finished++;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	kc_resp_release(&r);
}

static void attempt(struct probe *p, int i)
{
	struct kc_resp r = {0};
	int rc = try_pod(p, i, p->pod, &r);
	int64_t now = clock_mono_ns();
	bool ok = rc == 0 && kc_resp_ok(&r);

	pthread_mutex_lock(&p->mu);
	p->ns[i].attempts++;
	if (ok) { /* checked by the check workers, so attempts never wait behind checks */
		p->ns[i].at[S_OK] = now;
		p->checks[p->ctail++] = i;
		pthread_cond_broadcast(&p->cv);
	} else {
		enum cause c = rc < 0 ? C_OTHER : cause_of(&r);

		p->causes[c]++;
		if (c == C_OTHER)
			note_other(p, p->ns[i].name, r.status.message);
		p->ns[i].queued = true;
		p->ns[i].not_before = now + (int64_t)p->retry_ms * 1000000;
	}
	pthread_mutex_unlock(&p->mu);
	kc_resp_release(&r);
}

/* The queued namespace due first, taken off the queue; -1 once stopped. mu held. */
static int next_due(struct probe *p)
{
	while (!p->stop) {
		int64_t due = INT64_MAX, now = clock_mono_ns();
		int best = -1;

		for (int i = 0; i < p->n; i++)
			if (p->ns[i].queued && p->ns[i].not_before < due) {
				due = p->ns[i].not_before;
				best = i;
			}
		if (best >= 0 && due <= now) {
			p->ns[best].queued = false;
			return best;
		}
		if (best < 0) {
			pthread_cond_wait(&p->cv, &p->mu);
		} else {
			struct timespec ts = {(time_t)(due / 1000000000), (long)(due % 1000000000)};

			pthread_cond_timedwait(&p->cv, &p->mu, &ts);
		}
	}
	return -1;
}

static void *worker(void *ud)
{
	struct probe *p = ud;

	for (;;) {
		int i;

		pthread_mutex_lock(&p->mu);
		i = next_due(p);
		pthread_mutex_unlock(&p->mu);
		if (i < 0)
			return NULL;
		attempt(p, i);
	}
}

static void *checker(void *ud)
{
	struct probe *p = ud;

	for (;;) {
		int i = -1;

		pthread_mutex_lock(&p->mu);
		while (!p->stop && p->chead == p->ctail)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->chead < p->ctail)
			i = p->checks[p->chead++];
		pthread_mutex_unlock(&p->mu);
		if (i < 0)
			return NULL;
		check_over(p, i);
	}
}

/* ---- setup, run, report ---- */

static char *pod_body(const char *cpu)
{
	json_t *c = json_pack("{s:s,s:s,s:{s:b,s:{s:[s]}}}", "name", "probe", "image",
	                      "registry.k8s.io/pause:3.10", "securityContext",
	                      "allowPrivilegeEscalation", 0, "capabilities", "drop", "ALL");
	json_t *pod;
	char *out;

	if (cpu)
		json_object_set_new(c, "resources",
		                    json_pack("{s:{s:s},s:{s:s}}", "requests", "cpu", cpu, "limits",
		                              "cpu", cpu));
	pod = json_pack("{s:s,s:s,s:{s:s},s:{s:{s:b,s:{s:s}},s:[o]}}", "apiVersion", "v1", "kind",
	                "Pod", "metadata", "name", POD_NAME, "spec", "securityContext",
	                "runAsNonRoot", 1, "seccompProfile", "type", "RuntimeDefault", "containers",
	                c);
	out = json_dumps(pod, JSON_COMPACT);
	json_decref(pod);
	return out;
}

static void setup(struct probe *p)
{
	int per = p->nkinds + (p->sandbox ? 1 : 0);

	p->n = p->tenants * per;
	p->ns = xcalloc((size_t)p->n, sizeof(*p->ns));
	p->checks = xcalloc((size_t)p->n, sizeof(*p->checks));
	p->index = json_object();
	for (int t = 0; t < p->tenants; t++)
		for (int k = 0; k < per; k++) {
			struct ns_probe *n = &p->ns[t * per + k];

			n->owner = xasprintf("owner-%d", t);
			n->name = k < p->nkinds
			                  ? xasprintf("%s-%d-%s", p->prefix, t, p->kinds[k])
			                  : xasprintf("%s-%d-%s-sandbox", p->prefix, t, n->owner);
			json_object_set_new(p->index, n->name, json_integer(t * per + k));
		}
	p->pod = pod_body(NULL);
	p->over_pod = pod_body(p->over_cpu);
}

static void report(struct probe *p, double seconds)
{
	json_t *rows = json_array(), *causes = json_object(), *out;
	int64_t check_delay = 0;

	for (int i = 0; i < p->n; i++) {
		json_t *row = json_array();

		for (int s = 0; s < N_STEPS; s++)
			json_array_append_new(row, json_integer(p->ns[i].at[s]));
		json_array_append_new(row, json_integer(p->ns[i].attempts));
		json_array_append_new(rows, row);
		if (p->ns[i].checked && p->ns[i].checked - p->ns[i].at[S_OK] > check_delay)
			check_delay = p->ns[i].checked - p->ns[i].at[S_OK];
	}
	for (int c = 0; c < N_CAUSES; c++)
		json_object_set_new(causes, CAUSE_NAMES[c], json_integer(p->causes[c]));
	out = json_pack("{s:i,s:i,s:f,s:[s,s,s,s,s,s],s:o,s:o,s:{s:i,s:i,s:i,s:f},s:[],s:i}",
	                "namespaces", p->n, "admitted", p->finished, "seconds", seconds, "columns",
	                "created", "quota_in_force", "serviceaccount", "rolebinding", "admitted",
	                "attempts", "rows", rows, "refusals", causes, "over_quota", "refused",
	                p->over_refused, "admitted", p->over_admitted, "otherwise",
	                p->over_otherwise, "max_seconds_after_admitted", (double)check_delay / 1e9,
	                "messages", "watch_failures", atomic_load(&p->watch_failures));
	for (int i = 0; i < p->n_other; i++)
		json_array_append_new(json_object_get(out, "messages"), json_string(p->other[i]));
	json_dumpf(out, stdout, JSON_COMPACT);
	printf("\n");
	fflush(stdout);
	json_decref(out);
}

/* Wait until every namespace is finished or the timeout passes. mu held. */
static void wait_all(struct probe *p)
{
	int64_t end = clock_mono_ns() + (int64_t)p->timeout_s * 1000000000;
	struct timespec ts = {(time_t)(end / 1000000000), (long)(end % 1000000000)};

	while (p->finished < p->n && clock_mono_ns() < end)
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
}

static int run(struct probe *p)
{
	struct watch w[] = {
	        {p, &KC_NAMESPACES, NULL, on_namespace, NULL, 0},
	        {p, &KC_RESOURCEQUOTAS, NULL, on_quota, NULL, 0},
	        {p, &KC_SERVICEACCOUNTS, "metadata.name=default", on_serviceaccount, NULL, 0},
	        {p, &KC_ROLEBINDINGS, NULL, on_rolebinding, NULL, 0}};
	size_t nw = sizeof(w) / sizeof(w[0]);
	pthread_t workers[MAX_THREADS], checkers[MAX_THREADS];
	int64_t t0;
	int rc = 0;

	for (size_t i = 0; i < nw && rc == 0; i++)
		rc = start_point(p, &w[i]);
	if (rc == 0) {
		printf("{\"ready\":true}\n");
		fflush(stdout);
		t0 = clock_mono_ns();
		for (size_t i = 0; i < nw; i++)
			pthread_create(&w[i].thread, NULL, watcher, &w[i]);
		for (int i = 0; i < p->threads; i++)
			pthread_create(&workers[i], NULL, worker, p);
		for (int i = 0; i < p->check_threads; i++)
			pthread_create(&checkers[i], NULL, checker, p);
		pthread_mutex_lock(&p->mu);
		wait_all(p);
		pthread_mutex_unlock(&p->mu);
		for (int i = 0; i < p->threads; i++)
			pthread_join(workers[i], NULL);
		for (int i = 0; i < p->check_threads; i++)
			pthread_join(checkers[i], NULL);
		atomic_store(&p->cancel, 1);
		for (size_t i = 0; i < nw; i++)
			pthread_join(w[i].thread, NULL);
		report(p, (double)(clock_mono_ns() - t0) / 1e9);
		rc = p->finished == p->n ? 0 : -ETIMEDOUT;
	}
	for (size_t i = 0; i < nw; i++)
		free(w[i].rv);
	return rc;
}

static void parse_kinds(struct probe *p, char *arg)
{
	char *save = NULL, *tok;

	p->nkinds = 0;
	for (tok = strtok_r(arg, ",", &save); tok && p->nkinds < MAX_KINDS;
	     tok = strtok_r(NULL, ",", &save))
		p->kinds[p->nkinds++] = tok;
}

static int parse_opt(struct probe *p, int ch, char *arg)
{
	switch (ch) {
	case 'k':
		p->kubeconfig = arg;
		break;
	case 'p':
		p->prefix = arg;
		break;
	case 'n':
		p->tenants = (int)strtol(arg, NULL, 10);
		break;
	case 'K':
		parse_kinds(p, arg);
		break;
	case 's':
		p->sandbox = true;
		break;
	case 'o':
		p->over_cpu = arg;
		break;
	case 't':
		p->threads = (int)strtol(arg, NULL, 10);
		break;
	case 'c':
		p->check_threads = (int)strtol(arg, NULL, 10);
		break;
	case 'r':
		p->retry_ms = (int)strtol(arg, NULL, 10);
		break;
	case 'T':
		p->timeout_s = (int)strtol(arg, NULL, 10);
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct probe *p)
{
	static const struct option opts[] = {
	        {"kubeconfig", required_argument, NULL, 'k'},
	        {"prefix", required_argument, NULL, 'p'},
	        {"tenants", required_argument, NULL, 'n'},
	        {"kinds", required_argument, NULL, 'K'},
	        {"sandbox", no_argument, NULL, 's'},
	        {"over-cpu", required_argument, NULL, 'o'},
	        {"threads", required_argument, NULL, 't'},
	        {"check-threads", required_argument, NULL, 'c'},
	        {"retry-ms", required_argument, NULL, 'r'},
	        {"timeout-seconds", required_argument, NULL, 'T'},
	        {NULL, 0, NULL, 0},
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if (parse_opt(p, ch, optarg) < 0)
			return -EINVAL;
	if (p->prefix == NULL || p->tenants <= 0 || p->nkinds == 0 || p->threads <= 0 ||
	    p->threads > MAX_THREADS || p->check_threads <= 0 || p->check_threads > MAX_THREADS ||
	    p->retry_ms < 0 || p->timeout_s <= 0) {
		fprintf(stderr, "pod_probe: --prefix, --tenants and --kinds are required (see the "
		                "source)\n");
		return -EINVAL;
	}
	return 0;
}

static void release(struct probe *p)
{
	for (int i = 0; p->ns && i < p->n; i++) {
		free(p->ns[i].name);
		free(p->ns[i].owner);
	}
	free(p->ns);
	free(p->checks);
	free(p->pod);
	free(p->over_pod);
	json_decref(p->index);
}

int main(int argc, char **argv)
{
	struct probe p = {.threads = 32,
	                  .check_threads = 8,
	                  .retry_ms = 50,
	                  .timeout_s = 600,
	                  .over_cpu = "3"};
	struct kcfg cfg = {0};
	struct ll_err err;
	pthread_condattr_t ca;
	int rc;

	pthread_mutex_init(&p.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p.cv, &ca);
	pthread_condattr_destroy(&ca);
	rc = parse_args(argc, argv, &p);
	if (rc < 0)
		goto out;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = kcfg_load_default(p.kubeconfig, NULL, &cfg, &err);
	if (rc == 0)
		rc = kc_client_new(&cfg, &(struct kc_opts){.qps = -1, .client_name = "probe"}, &p.c,
		                   &err);
	if (rc < 0) {
		log_kv(LOG_ERROR, "pod_probe: cannot start", "{s:s}", "error", err.msg);
	} else {
		setup(&p);
		rc = run(&p);
	}
	kc_client_free(p.c);
	kcfg_release(&cfg);
	release(&p);
	curl_global_cleanup();
out:
	pthread_mutex_destroy(&p.mu);
	pthread_cond_destroy(&p.cv);
	return rc < 0 ? 1 : 0;
}
