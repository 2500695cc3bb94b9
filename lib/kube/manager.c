/* manager.c - controllers, shared informers, workers and leader election (see manager.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "base/ratelimit.h"
#include "base/vec.h"
#include "http/probes.h"
#include "http/server.h"
#include "kube/cache.h"
#include "kube/lease.h"
#include "kube/manager.h"
#include "kube/workqueue.h"

enum map_kind {
	MAP_PRIMARY,
	MAP_OWNED,
	MAP_FN,
	MAP_FN_SPEC, /* MAP_FN for spec changes only */
};

struct mapping {
	enum map_kind kind;
	struct controller *c;
	char *owner_kind;
	ctrl_map_fn fn;
	void *ud;
	struct mapping *next;
};

struct controller {
	struct controller_def def;
	struct mgr *m;
	pthread_rwlock_t qlock; /* guards queue: handlers read it, leadership changes swap it */
	struct wq *queue;       /* NULL while not leading */
	pthread_t *workers;
	int n_workers;
	VEC(struct inf *) primaries;
	struct mapping *mappings;
	struct controller *next;
};

struct shared_inf {
	char *signature;
	struct inf *inf;
	char *name;
	struct shared_inf *next;
};

struct mgr {
	struct mgr_opts o;
	struct shared_inf *infs;
	struct controller *ctrls;
	struct lease *lease;
	struct http_server *probe_server;
	struct probes *probes;
	atomic_bool stop;
	atomic_bool synced;
	pthread_mutex_t lead_lock; /* serialises starting and stopping the workers */
	bool workers_running;
	pthread_mutex_t infs_lock; /* @infs, and whether they were started */
	bool infs_started;
	struct test_hook *hooks; /* mgr_add_test_hook(), routed when the probe server starts */
};

struct test_hook {
	char *path;
	http_handler_fn fn;
	void *ud;
	struct test_hook *next;
};

static const double reconcile_buckets[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                           0.25,  0.5,   1,    2.5,   5,    10};

struct mgr *mgr_new(const struct mgr_opts *opts)
{
	struct mgr *m = xcalloc(1, sizeof(*m));

	m->o = *opts;
	pthread_mutex_init(&m->lead_lock, NULL);
	pthread_mutex_init(&m->infs_lock, NULL);
	metrics_describe("landlord_reconcile_total", METRIC_COUNTER,
	                 "Reconciles by controller and result (success, requeue, error).", NULL, 0);
	metrics_describe("landlord_reconcile_duration_seconds", METRIC_HISTOGRAM,
	                 "Time spent in one reconcile.", reconcile_buckets,
	                 sizeof(reconcile_buckets) / sizeof(reconcile_buckets[0]));
	return m;
}

struct kc_client *mgr_client(struct mgr *m)
{
	return m->o.client;
}

/* @paths joined by ',' ("*" for NULL), appended to @b. */
static void append_paths(struct buf *b, const char *const *paths)
{
	buf_append_str(b, paths ? "|" : "|*");
	for (size_t i = 0; paths && paths[i]; i++)
		buf_appendf(b, "%s%s", i ? "," : "", paths[i]);
}

/*
 * Informers are shared only when they cache the same objects with the same projection (a
 * store-less one only with callers that asked for one).
 */
static char *informer_signature(const struct inf_opts *o)
{
	struct buf b = BUF_INIT(1 << 16);

	buf_appendf(&b, "%s/%s/%s|%s|%s|%s|%d|%d", o->gvr.group ? o->gvr.group : "", o->gvr.version,
	            o->gvr.resource, o->ns ? o->ns : "", o->label_selector ? o->label_selector : "",
	            o->field_selector ? o->field_selector : "", o->metadata_only, o->no_store);
	append_paths(&b, o->keep);
	append_paths(&b, o->drop);
	/* an informer made without an index a caller asks for would answer it with nothing */
	for (size_t i = 0; o->indexes && o->indexes[i].name; i++)
		buf_appendf(&b, "|index:%s", o->indexes[i].name);
	if (o->handler != NULL) /* its handler is its caller's own */
		buf_appendf(&b, "|handler:%p", o->handler->ud);
	return buf_detach(&b);
}

/* The shared informer for @opts, created on first use; *@created says whether it was. */
static struct inf *informer_locked(struct mgr *m, const struct inf_opts *opts, bool *created)
{
	struct shared_inf *s;
	char *sig = informer_signature(opts);

	*created = false;
	for (s = m->infs; s; s = s->next) {
		if (strcmp(s->signature, sig) == 0) {
			free(sig);
			return s->inf;
		}
	}
	s = xcalloc(1, sizeof(*s));
	s->signature = sig;
	s->inf = inf_new(m->o.client, opts);
	s->name = xstrdup(opts->name ? opts->name : opts->gvr.resource);
	s->next = m->infs;
	m->infs = s;
	*created = true;
	return s->inf;
}

struct inf *mgr_informer(struct mgr *m, const struct inf_opts *opts)
{
	struct inf *inf;
	bool created;

	pthread_mutex_lock(&m->infs_lock);
	inf = informer_locked(m, opts, &created);
	pthread_mutex_unlock(&m->infs_lock);
	return inf;
}

struct inf *mgr_informer_live(struct mgr *m, const struct inf_opts *opts, bool *created)
{
	struct inf *inf;
	int rc = 0;

	pthread_mutex_lock(&m->infs_lock);
	inf = informer_locked(m, opts, created);
	if (*created && m->infs_started)
		rc = inf_start(inf);
	pthread_mutex_unlock(&m->infs_lock);
	if (rc != 0)
		log_warn("informer did not start", "{s:s,s:i}", "resource", opts->gvr.resource,
		         "errno", -rc);
	return inf;
}

struct controller *mgr_add_controller(struct mgr *m, const struct controller_def *def)
{
	struct controller *c = xcalloc(1, sizeof(*c)), **tail = &m->ctrls;

	c->def = *def;
	if (c->def.workers <= 0)
		c->def.workers = 2;
	c->m = m;
	pthread_rwlock_init(&c->qlock, NULL);
	while (*tail)
		tail = &(*tail)->next;
	*tail = c;
	return c;
}

const char *ctrl_name(const struct controller *c)
{
	return c->def.name;
}

struct mgr *ctrl_mgr(struct controller *c)
{
	return c->m;
}

void ctrl_enqueue(struct controller *c, const char *key)
{
	pthread_rwlock_rdlock(&c->qlock);
	if (c->queue)
		wq_add(c->queue, key);
	pthread_rwlock_unlock(&c->qlock);
}

typedef void (*emit_fn)(const char *key, void *ctx);

static void enqueue_emit(const char *key, void *ctx)
{
	ctrl_enqueue(ctx, key);
}

/* The key of the controller's primary object named by an ownerReference of @obj. */
static void emit_owners(struct mapping *map, const struct jdoc *obj, emit_fn emit, void *ctx)
{
	struct jval refs = jd_get(obj, "metadata", "ownerReferences", NULL), ref;
	bool namespaced = map->c->primaries.len && inf_gvr(map->c->primaries.v[0])->namespaced;
	size_t i;

	jval_foreach(refs, i, ref) {
		const char *kind = jval_str(jval_get(ref, "kind")),
		           *name = jval_str(jval_get(ref, "name"));
		const char *ns = jd_namespace(obj);
		char *key;

		if (kind == NULL || name == NULL || strcmp(kind, map->owner_kind) != 0)
			continue;
		key = namespaced && ns ? xasprintf("%s/%s", ns, name) : xstrdup(name);
		emit(key, ctx);
		free(key);
	}
}

static void map_object(struct mapping *map, const struct jdoc *obj, emit_fn emit, void *ctx)
{
	char key[CACHE_KEY_MAX];

	switch (map->kind) {
	case MAP_PRIMARY:
		if (cache_doc_key(obj, key))
			emit(key, ctx);
		break;
	case MAP_OWNED:
		emit_owners(map, obj, emit, ctx);
		break;
	case MAP_FN:
	case MAP_FN_SPEC:
		map->fn(obj, emit, ctx, map->ud);
		break;
	}
}

static void on_add(const struct jdoc *obj, void *ud)
{
	struct mapping *map = ud;

	map_object(map, obj, enqueue_emit, map->c);
}

struct key_vec VEC_BODY(char *);

static void collect_key(const char *key, void *ctx)
{
	vec_push((struct key_vec *)ctx, xstrdup(key));
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * An update maps both versions (a changed reference moves the object between keys), and each
 * key is enqueued once: a key enqueued twice can be taken by a worker in between and run twice.
 */
static void on_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	struct mapping *map = ud;
	struct key_vec keys = VEC_INIT;

	if (map->kind == MAP_FN_SPEC && jd_int(old_obj, -1, "metadata", "generation", NULL) ==
	                                        jd_int(new_obj, -2, "metadata", "generation", NULL))
		return; /* the status changed, or only metadata: nothing a mapping reads */
	if (map->kind != MAP_PRIMARY)
		map_object(map, old_obj, collect_key, &keys);
	map_object(map, new_obj, collect_key, &keys);
	if (keys.len > 1)
		qsort(keys.v, keys.len, sizeof(*keys.v), cmp_key);
	for (size_t i = 0; i < keys.len; i++) {
		if (i == 0 || strcmp(keys.v[i], keys.v[i - 1]) != 0)
			ctrl_enqueue(map->c, keys.v[i]);
	}
	for (size_t i = 0; i < keys.len; i++)
		free(keys.v[i]);
	vec_release(&keys);
}

static void on_delete(const struct jdoc *obj, void *ud)
{
	struct mapping *map = ud;

	map_object(map, obj, enqueue_emit, map->c);
}

static struct mapping *add_mapping(struct controller *c, struct inf *inf, enum map_kind kind)
{
	struct mapping *map = xcalloc(1, sizeof(*map));
	struct inf_handler h = {on_add, on_update, on_delete, map};

	map->kind = kind;
	map->c = c;
	map->next = c->mappings;
	c->mappings = map;
	inf_add_handler(inf, &h);
	return map;
}

void ctrl_watch_primary(struct controller *c, struct inf *inf)
{
	vec_push(&c->primaries, inf);
	add_mapping(c, inf, MAP_PRIMARY);
}

void ctrl_watch_owned(struct controller *c, struct inf *inf, const char *owner_kind)
{
	add_mapping(c, inf, MAP_OWNED)->owner_kind = xstrdup(owner_kind);
}

void ctrl_watch_mapped(struct controller *c, struct inf *inf, ctrl_map_fn fn, void *ud)
{
	struct mapping *map = add_mapping(c, inf, MAP_FN);

	map->fn = fn;
	map->ud = ud;
}

void ctrl_watch_mapped_spec(struct controller *c, struct inf *inf, ctrl_map_fn fn, void *ud)
{
	struct mapping *map = add_mapping(c, inf, MAP_FN_SPEC);

	map->fn = fn;
	map->ud = ud;
}

static void record_reconcile(struct controller *c, const char *result, double seconds)
{
	char labels[256];

	metrics_labels(labels, sizeof(labels), "controller", c->def.name, "result", result, NULL);
	metrics_add("landlord_reconcile_total", labels, 1);
	metrics_labels(labels, sizeof(labels), "controller", c->def.name, NULL);
	metrics_observe("landlord_reconcile_duration_seconds", labels, seconds);
}

struct worker_arg {
	struct controller *c;
	struct wq *q;
};

/*
 * After a burst of reconciles glibc keeps what was freed: a restart over 1,000 tenants held
 * 64 MiB of heap for 24 MiB in use (docs/benchmarks.md, "Restart over 1,000 tenants"). So the
 * worker that ends a burst (its queue empty, no other key in flight) hands free pages back to
 * the kernel, at most once per TRIM_INTERVAL_MS in the whole process (the heap is shared); a
 * trim takes a few milliseconds.
 */
#define TRIM_INTERVAL_MS 1000

static atomic_llong last_trim_ms;
static atomic_bool reconciled_since_trim;

static void trim_heap_when_quiet(struct wq *q)
{
	long long now = clock_mono_ms(), last = atomic_load(&last_trim_ms);

	if (wq_len(q) != 0 || wq_in_flight(q) != 0 || !atomic_load(&reconciled_since_trim) ||
	    now - last < TRIM_INTERVAL_MS)
		return;
	if (!atomic_compare_exchange_strong(&last_trim_ms, &last, now))
		return; /* another worker is trimming */
	atomic_store(&reconciled_since_trim, false);
	mem_trim();
}

static void *worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	struct controller *c = wa->c;
	struct wq *q = wa->q;
	const char *key;

	free(wa);
	while (wq_get(q, &key) == 0) {
		int64_t t0 = clock_mono_ns();
		struct ctrl_result r = c->def.reconcile(c, key, c->def.ud);
		double secs = (double)(clock_mono_ns() - t0) / 1e9;

		switch (r.outcome) {
		case CTRL_DONE:
			wq_forget(q, key);
			record_reconcile(c, "success", secs);
			break;
		case CTRL_REQUEUE_AFTER:
			wq_forget(q, key);
			wq_add_after(q, key, r.after_ms);
			record_reconcile(c, "requeue", secs);
			break;
		case CTRL_RETRY:
			log_debug("reconcile failed; retrying with back-off", "{s:s,s:s,s:i}",
			          "controller", c->def.name, "key", key, "requeues",
			          wq_num_requeues(q, key));
			wq_add_rate_limited(q, key);
			record_reconcile(c, "error", secs);
			break;
		}
		wq_done(q, key);
		atomic_store(&reconciled_since_trim, true);
		trim_heap_when_quiet(q);
	}
	return NULL;
}

static void enqueue_primaries(struct controller *c, struct wq *q)
{
	char key[CACHE_KEY_MAX];

	for (size_t i = 0; i < c->primaries.len; i++) {
		struct jdoc_list all = inf_list_ref(c->primaries.v[i], NULL);

		for (size_t j = 0; j < all.n; j++)
			if (cache_doc_key(all.items[j], key))
				wq_add(q, key);
		jdoc_list_release(&all);
	}
}

static void start_controller(struct controller *c)
{
	struct wq_opts qo = {.name = c->def.name};
	struct wq *q = wq_new(&qo);
	int i;

	pthread_rwlock_wrlock(&c->qlock);
	c->queue = q;
	pthread_rwlock_unlock(&c->qlock);
	enqueue_primaries(c, q);
	c->workers = xcalloc((size_t)c->def.workers, sizeof(*c->workers));
	for (i = 0; i < c->def.workers; i++) {
		struct worker_arg *wa = xmalloc(sizeof(*wa));

		wa->c = c;
		wa->q = q;
		if (pthread_create(&c->workers[i], NULL, worker_main, wa) != 0) {
			free(wa);
			break;
		}
	}
	c->n_workers = i;
}

static void stop_controller(struct controller *c)
{
	struct wq *q;
	int i;

	pthread_rwlock_wrlock(&c->qlock);
	q = c->queue;
	c->queue = NULL;
	pthread_rwlock_unlock(&c->qlock);
	if (q == NULL)
		return;
	wq_shutdown(q);
	for (i = 0; i < c->n_workers; i++)
		pthread_join(c->workers[i], NULL);
	free(c->workers);
	c->workers = NULL;
	c->n_workers = 0;
	wq_free(q);
}

static void start_workers(void *ud)
{
	struct mgr *m = ud;
	struct controller *c;

	pthread_mutex_lock(&m->lead_lock);
	if (!m->workers_running && !atomic_load(&m->stop)) {
		for (c = m->ctrls; c; c = c->next)
			if (c->def.leading)
				c->def.leading(true, c->def.ud);
		for (c = m->ctrls; c; c = c->next)
			start_controller(c);
		m->workers_running = true;
		log_info("workers started", NULL);
	}
	pthread_mutex_unlock(&m->lead_lock);
}

/* Returns only when no worker runs any more: the Lease may be released after this. */
static void stop_workers(void *ud)
{
	struct mgr *m = ud;
	struct controller *c;

	pthread_mutex_lock(&m->lead_lock);
	if (m->workers_running) {
		for (c = m->ctrls; c; c = c->next)
			if (c->def.leading)
				c->def.leading(false, c->def.ud);
		for (c = m->ctrls; c; c = c->next)
			stop_controller(c);
		m->workers_running = false;
		log_info("workers stopped", NULL);
	}
	pthread_mutex_unlock(&m->lead_lock);
}

static void on_new_leader(const char *identity, void *ud)
{
	log_info("leader observed", "{s:s?}", "identity", identity);
}

bool mgr_is_leader(struct mgr *m)
{
	bool running;

	pthread_mutex_lock(&m->lead_lock);
	running = m->workers_running;
	pthread_mutex_unlock(&m->lead_lock);
	return running;
}

static bool ready_fn(void *ud, char *why, size_t why_len)
{
	struct mgr *m = ud;

	if (atomic_load(&m->stop)) {
		snprintf(why, why_len, "shutting down");
		return false;
	}
	if (!atomic_load(&m->synced)) {
		snprintf(why, why_len, "informer caches not synced yet");
		return false;
	}
	return true;
}

static struct shared_inf *find_informer(struct mgr *m, const struct http_req *req)
{
	const char *name = http_req_arg(req, "resource");
	struct shared_inf *s;

	if (name == NULL)
		return NULL;
	for (s = m->infs; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

/* Test hook: /debug/pause-watch?resource=NAME&paused=true|false */
static int hook_pause_watch(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct shared_inf *s = find_informer(ud, req);
	const char *arg = http_req_arg(req, "paused");
	bool paused = arg && strcmp(arg, "true") == 0;
	struct buf *out = http_resp_body(resp);

	if (s == NULL) {
		buf_append_str(out, "unknown resource\n");
		return 404;
	}
	inf_pause_watch(s->inf, paused);
	log_info("test hook: watch pause changed", "{s:s,s:b}", "resource", s->name, "paused",
	         paused);
	buf_appendf(out, "%s paused=%s\n", s->name, paused ? "true" : "false");
	return 200;
}

/* Test hook: /debug/cache?resource=NAME -> {"objects":{key: resourceVersion},"stats":{...}} */
static int hook_cache(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct shared_inf *s = find_informer(ud, req);
	struct buf *out = http_resp_body(resp);
	json_t *objects, *doc;
	struct jdoc_list all;
	struct inf_stats st;
	char key[CACHE_KEY_MAX];
	char *text;

	if (s == NULL) {
		buf_append_str(out, "unknown resource\n");
		return 404;
	}
	objects = json_object();
	all = inf_list_ref(s->inf, NULL);
	for (size_t i = 0; i < all.n; i++)
		if (cache_doc_key(all.items[i], key))
			json_object_set_new(objects, key,
			                    json_string(jd_resource_version(all.items[i]) ?: ""));
	jdoc_list_release(&all);
	inf_get_stats(s->inf, &st);
	doc = json_pack("{s:o,s:b,s:{s:I,s:I,s:I,s:I}}", "objects", objects, "synced",
	                inf_has_synced(s->inf), "stats", "lists", (json_int_t)st.lists, "relists",
	                (json_int_t)st.relists, "watch_restarts", (json_int_t)st.watch_restarts,
	                "events", (json_int_t)st.events);
	text = jx_dumps(doc);
	buf_append_str(out, text);
	http_resp_header(resp, "Content-Type", "application/json");
	free(text);
	json_decref(doc);
	return 200;
}

static int start_probe(struct mgr *m)
{
	const char *addr = m->o.probe_addr ? m->o.probe_addr : "127.0.0.1";
	struct ll_err err = {{0}};
	int rc;

	if (m->o.probe_port < 0)
		return 0;
	m->probe_server = http_server_new(
	        &(struct http_server_opts){.name = "probe", .addr = addr, .port = m->o.probe_port});
	m->probes = probes_new(m->probe_server);
	probes_set_ready(m->probes, ready_fn, m);
	if (m->o.test_hooks) {
		probes_add_hook(m->probes, "/debug/pause-watch", hook_pause_watch, m);
		probes_add_hook(m->probes, "/debug/cache", hook_cache, m);
		for (struct test_hook *h = m->hooks; h; h = h->next)
			probes_add_hook(m->probes, h->path, h->fn, h->ud);
	}
	rc = http_server_start(m->probe_server, &err);
	if (rc) {
		log_error("probe server failed to start", "{s:s,s:i,s:i,s:s}", "addr", addr, "port",
		          m->o.probe_port, "errno", -rc, "error", err.msg);
		return rc;
	}
	log_info("probe server listening", "{s:s,s:i,s:b}", "addr", addr, "port",
	         http_server_port(m->probe_server), "test_hooks", m->o.test_hooks);
	return 0;
}

int mgr_add_test_hook(struct mgr *m, const char *path, http_handler_fn fn, void *ud)
{
	struct test_hook *h;

	if (strncmp(path, "/debug/", 7) != 0)
		return -EINVAL;
	h = xcalloc(1, sizeof(*h));
	*h = (struct test_hook){xstrdup(path), fn, ud, m->hooks};
	m->hooks = h;
	return 0;
}

int mgr_probe_port(struct mgr *m)
{
	return m->probe_server ? http_server_port(m->probe_server) : -1;
}

void mgr_block_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void mgr_request_stop(struct mgr *m)
{
	atomic_store(&m->stop, true);
}

/* Wait for SIGTERM/SIGINT or mgr_request_stop(); signals are blocked, so poll sigtimedwait. */
static void wait_for_stop(struct mgr *m)
{
	struct timespec tick = {0, 200 * 1000 * 1000};
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	while (!atomic_load(&m->stop)) {
		sig = sigtimedwait(&set, NULL, &tick);
		if (sig == SIGTERM || sig == SIGINT) {
			log_info("signal received; shutting down", "{s:s}", "signal",
			         sig == SIGTERM ? "SIGTERM" : "SIGINT");
			atomic_store(&m->stop, true);
		}
	}
}

static bool wait_synced(struct mgr *m)
{
	struct shared_inf *s;

	for (s = m->infs; s; s = s->next) {
		while (!inf_wait_synced(s->inf, 1000)) {
			if (atomic_load(&m->stop))
				return false;
			log_info("waiting for informer cache to sync", "{s:s}", "resource",
			         s->name);
		}
	}
	atomic_store(&m->synced, true);
	log_info("informer caches synced", NULL);
	return true;
}

static int start_leading_or_electing(struct mgr *m)
{
	struct lease_opts lo = {
	        .ns = m->o.lease_ns,
	        .name = m->o.lease_name,
	        .lease_duration_ms = m->o.lease_duration_ms,
	        .renew_deadline_ms = m->o.renew_deadline_ms,
	        .retry_period_ms = m->o.retry_period_ms,
	        .on_started_leading = start_workers,
	        .on_stopped_leading = stop_workers,
	        .on_new_leader = on_new_leader,
	        .ud = m,
	};

	if (m->o.lease_client == NULL) {
		start_workers(m);
		return 0;
	}
	m->lease = lease_new(m->o.lease_client, &lo);
	log_info("leader election started", "{s:s,s:s,s:s}", "lease_namespace", lo.ns, "lease",
	         lo.name, "identity", lease_identity(m->lease));
	return lease_start(m->lease);
}

int mgr_run(struct mgr *m)
{
	struct controller *c;
	struct shared_inf *s;
	int rc;

	rc = start_probe(m);
	for (c = m->ctrls; c && rc == 0; c = c->next) {
		rc = c->def.setup ? c->def.setup(c, m, c->def.ud) : 0;
		if (rc)
			log_error("controller setup failed", "{s:s,s:i}", "controller", c->def.name,
			          "errno", -rc);
	}
	pthread_mutex_lock(&m->infs_lock);
	for (s = m->infs; s && rc == 0; s = s->next)
		rc = inf_start(s->inf);
	m->infs_started = rc == 0;
	pthread_mutex_unlock(&m->infs_lock);
	if (rc == 0 && wait_synced(m))
		rc = start_leading_or_electing(m);
	if (rc == 0)
		wait_for_stop(m);
	atomic_store(&m->stop, true);
	if (m->lease)
		lease_stop(m->lease); /* stops the workers first, then releases the Lease */
	stop_workers(m);
	for (s = m->infs; s; s = s->next)
		inf_cancel(s->inf); /* every watch notices at once, not one after another */
	for (s = m->infs; s; s = s->next)
		inf_stop(s->inf);
	log_info("stopped", "{s:i}", "rc", rc);
	return rc;
}

void mgr_free(struct mgr *m)
{
	struct controller *c, *cn;
	struct shared_inf *s, *sn;
	struct mapping *map, *mn;

	if (m == NULL)
		return;
	http_server_free(m->probe_server);
	probes_free(m->probes);
	for (struct test_hook *h = m->hooks, *hn; h; h = hn) {
		hn = h->next;
		free(h->path);
		free(h);
	}
	lease_free(m->lease);
	for (c = m->ctrls; c; c = cn) {
		cn = c->next;
		for (map = c->mappings; map; map = mn) {
			mn = map->next;
			free(map->owner_kind);
			free(map);
		}
		vec_release(&c->primaries);
		pthread_rwlock_destroy(&c->qlock);
		free(c);
	}
	for (s = m->infs; s; s = sn) {
		sn = s->next;
		inf_free(s->inf);
		free(s->signature);
		free(s->name);
		free(s);
	}
	pthread_mutex_destroy(&m->lead_lock);
	pthread_mutex_destroy(&m->infs_lock);
	free(m);
}
