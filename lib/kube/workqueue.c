/*
 * workqueue.c - de-duplicating, rate-limited work queue (see workqueue.h and
 * docs/internals/workqueue.md).
 *
 * One mutex guards everything. Each key known to the queue has one struct entry in a chained
 * hash table; the entry carries the client-go "dirty" and "processing" sets as flags, the
 * failure count and its place in the timer heap. An entry is freed as soon as none of these
 * hold it.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "base/ratelimit.h"
#include "base/vec.h"
#include "kube/workqueue.h"

#define DEPTH_METRIC   "landlord_workqueue_depth"
#define ADDS_METRIC    "landlord_workqueue_adds_total"
#define RETRIES_METRIC "landlord_workqueue_retries_total"

struct entry {
	struct entry *next; /* hash chain */
	uint64_t hash;
	bool dirty;      /* wants processing: queued, or re-queued on wq_done() */
	bool processing; /* handed out, wq_done() not yet called */
	int failures;    /* rate-limited adds since the last wq_forget() */
	size_t heap_idx; /* position in the timer heap, or NOT_IN_HEAP */
	int64_t deadline_ns;
	char key[];
};

#define NOT_IN_HEAP ((size_t)-1)

struct wq {
	pthread_mutex_t lock;
	pthread_cond_t ready;      /* a key was queued, or shutdown */
	pthread_cond_t timer_wake; /* earliest deadline changed, or shutdown (CLOCK_MONOTONIC) */
	pthread_t timer;
	bool shutting_down;

	struct entry **table; /* hash buckets, power-of-two count */
	size_t table_len;
	size_t n_entries;

	struct entry **fifo; /* ring of queued keys (dirty and not processing) */
	size_t fifo_cap;
	size_t fifo_head;
	size_t fifo_len;

	VEC(struct entry *) heap; /* min-heap on deadline_ns */

	size_t in_flight;
	int64_t base_delay_ns;
	int64_t max_delay_ns;
	struct tbucket bucket;
	char labels[256]; /* name="..." for metrics */
};

/* ---- entries, keyed by string ---- */

static uint64_t hash_key(const char *s)
{
	uint64_t h = 14695981039346656037ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static struct entry *lookup(struct wq *q, const char *key, uint64_t hash)
{
	struct entry *e = q->table[hash & (q->table_len - 1)];

	while (e && (e->hash != hash || strcmp(e->key, key) != 0))
		e = e->next;
	return e;
}

static void table_grow(struct wq *q)
{
	size_t len = q->table_len * 2, i;
	struct entry **t = xcalloc(len, sizeof(*t));

	for (i = 0; i < q->table_len; i++) {
		struct entry *e = q->table[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = t[e->hash & (len - 1)];
			t[e->hash & (len - 1)] = e;
		}
	}
	free(q->table);
	q->table = t;
	q->table_len = len;
}

static struct entry *lookup_or_create(struct wq *q, const char *key)
{
	uint64_t hash = hash_key(key);
	struct entry *e = lookup(q, key, hash);
	size_t len, slot;

	if (e)
		return e;
	if (q->n_entries >= q->table_len / 4 * 3)
		table_grow(q);
	len = strlen(key);
	e = xcalloc(1, sizeof(*e) + len + 1);
	memcpy(e->key, key, len + 1);
	e->hash = hash;
	e->heap_idx = NOT_IN_HEAP;
	slot = hash & (q->table_len - 1);
	e->next = q->table[slot];
	q->table[slot] = e;
	q->n_entries++;
	return e;
}

/* Free @e once nothing refers to it any more. */
static void release_if_unused(struct wq *q, struct entry *e)
{
	struct entry **pp;

	if (e->dirty || e->processing || e->failures || e->heap_idx != NOT_IN_HEAP)
		return;
	pp = &q->table[e->hash & (q->table_len - 1)];
	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	q->n_entries--;
	free(e);
}

/* ---- FIFO of queued keys ---- */

static void depth_changed(struct wq *q)
{
	metrics_set(DEPTH_METRIC, q->labels, (double)q->fifo_len);
}

static void fifo_push(struct wq *q, struct entry *e)
{
	if (q->fifo_len == q->fifo_cap) {
		size_t cap = q->fifo_cap ? q->fifo_cap * 2 : 16, i;
		struct entry **ring = xmalloc(cap * sizeof(*ring));

		for (i = 0; i < q->fifo_len; i++)
			ring[i] = q->fifo[(q->fifo_head + i) % q->fifo_cap];
		free(q->fifo);
		q->fifo = ring;
		q->fifo_cap = cap;
		q->fifo_head = 0;
	}
	q->fifo[(q->fifo_head + q->fifo_len) % q->fifo_cap] = e;
	q->fifo_len++;
	depth_changed(q);
	pthread_cond_signal(&q->ready);
}

static struct entry *fifo_pop(struct wq *q)
{
	struct entry *e = q->fifo[q->fifo_head];

	q->fifo_head = (q->fifo_head + 1) % q->fifo_cap;
	q->fifo_len--;
	depth_changed(q);
	return e;
}

/* client-go Add(): a dirty key is already queued or will be re-queued by wq_done(). */
static void add_locked(struct wq *q, struct entry *e)
{
	if (e->dirty)
		return;
	e->dirty = true;
	metrics_add(ADDS_METRIC, q->labels, 1);
	if (!e->processing)
		fifo_push(q, e);
}

/* ---- timer heap ---- */

static void heap_swap(struct wq *q, size_t i, size_t j)
{
	struct entry *t = q->heap.v[i];

	q->heap.v[i] = q->heap.v[j];
	q->heap.v[j] = t;
	q->heap.v[i]->heap_idx = i;
	q->heap.v[j]->heap_idx = j;
}

static void heap_up(struct wq *q, size_t i)
{
	while (i > 0 && q->heap.v[i]->deadline_ns < q->heap.v[(i - 1) / 2]->deadline_ns) {
		heap_swap(q, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct wq *q, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;

		if (l < q->heap.len && q->heap.v[l]->deadline_ns < q->heap.v[min]->deadline_ns)
			min = l;
		if (r < q->heap.len && q->heap.v[r]->deadline_ns < q->heap.v[min]->deadline_ns)
			min = r;
		if (min == i)
			return;
		heap_swap(q, i, min);
		i = min;
	}
}

static void heap_push(struct wq *q, struct entry *e)
{
	e->heap_idx = q->heap.len;
	vec_push(&q->heap, e);
	heap_up(q, e->heap_idx);
}

static struct entry *heap_pop(struct wq *q)
{
	struct entry *e = q->heap.v[0];

	q->heap.len--;
	if (q->heap.len > 0) {
		q->heap.v[0] = q->heap.v[q->heap.len];
		q->heap.v[0]->heap_idx = 0;
		heap_down(q, 0);
	}
	e->heap_idx = NOT_IN_HEAP;
	return e;
}

/* Arm (or pull forward) the timer of @e; a later deadline than the pending one is ignored. */
static void add_after_locked(struct wq *q, struct entry *e, int64_t delay_ns)
{
	int64_t deadline = clock_mono_ns() + delay_ns;

	if (e->heap_idx != NOT_IN_HEAP) {
		if (deadline >= e->deadline_ns)
			return;
		e->deadline_ns = deadline;
		heap_up(q, e->heap_idx);
	} else {
		e->deadline_ns = deadline;
		heap_push(q, e);
	}
	if (e->heap_idx == 0)
		pthread_cond_signal(&q->timer_wake);
}

static void *timer_main(void *arg)
{
	struct wq *q = arg;

	pthread_mutex_lock(&q->lock);
	while (!q->shutting_down) {
		if (q->heap.len == 0) {
			pthread_cond_wait(&q->timer_wake, &q->lock);
		} else if (q->heap.v[0]->deadline_ns <= clock_mono_ns()) {
			add_locked(q, heap_pop(q));
		} else {
			clock_cond_wait_until(&q->timer_wake, &q->lock, q->heap.v[0]->deadline_ns);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* ---- lifecycle ---- */

static void describe_metrics(void)
{
	metrics_describe(DEPTH_METRIC, METRIC_GAUGE, "Keys waiting in the work queue.", NULL, 0);
	metrics_describe(ADDS_METRIC, METRIC_COUNTER, "Keys added to the work queue.", NULL, 0);
	metrics_describe(RETRIES_METRIC, METRIC_COUNTER, "Rate-limited re-adds to the work queue.",
	                 NULL, 0);
}

struct wq *wq_new(const struct wq_opts *opts)
{
	static const struct wq_opts defaults = {0};
	struct wq *q = xcalloc(1, sizeof(*q));
	int rc;

	if (opts == NULL)
		opts = &defaults;
	q->base_delay_ns = (opts->base_delay_ms > 0 ? opts->base_delay_ms : 5) * CLOCK_NS_PER_MS;
	q->max_delay_ns = (opts->max_delay_ms > 0 ? opts->max_delay_ms : 1000000) * CLOCK_NS_PER_MS;
	tbucket_init(&q->bucket, opts->qps == 0 ? 10 : opts->qps,
	             opts->burst > 0 ? opts->burst : 100);
	metrics_labels(q->labels, sizeof(q->labels), "name", opts->name ? opts->name : "workqueue",
	               NULL);
	describe_metrics();
	depth_changed(q);

	q->table_len = 16;
	q->table = xcalloc(q->table_len, sizeof(*q->table));
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->ready, NULL);
	clock_cond_init(&q->timer_wake);

	rc = pthread_create(&q->timer, NULL, timer_main, q);
	if (rc != 0) {
		/* Like running out of memory: nothing sensible is left to do. */
		log_error("workqueue: cannot start timer thread", "{s:s}", "error", strerror(rc));
		abort();
	}
	return q;
}

void wq_shutdown(struct wq *q)
{
	bool first;

	pthread_mutex_lock(&q->lock);
	first = !q->shutting_down;
	q->shutting_down = true;
	while (q->fifo_len > 0) {
		struct entry *e = fifo_pop(q);

		e->dirty = false;
		release_if_unused(q, e);
	}
	while (q->heap.len > 0)
		release_if_unused(q, heap_pop(q));
	pthread_cond_broadcast(&q->ready);
	pthread_cond_signal(&q->timer_wake);
	pthread_mutex_unlock(&q->lock);
	if (first)
		pthread_join(q->timer, NULL);
}

void wq_free(struct wq *q)
{
	size_t i;

	if (q == NULL)
		return;
	wq_shutdown(q);
	for (i = 0; i < q->table_len; i++) {
		struct entry *e = q->table[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(q->table);
	free(q->fifo);
	vec_release(&q->heap);
	tbucket_release(&q->bucket);
	pthread_cond_destroy(&q->timer_wake);
	pthread_cond_destroy(&q->ready);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

/* ---- adding ---- */

void wq_add(struct wq *q, const char *key)
{
	assert(key != NULL);
	pthread_mutex_lock(&q->lock);
	if (!q->shutting_down)
		add_locked(q, lookup_or_create(q, key));
	pthread_mutex_unlock(&q->lock);
}

void wq_add_after(struct wq *q, const char *key, int64_t delay_ms)
{
	struct entry *e;

	assert(key != NULL);
	if (delay_ms <= 0) {
		wq_add(q, key);
		return;
	}
	pthread_mutex_lock(&q->lock);
	if (!q->shutting_down) {
		e = lookup_or_create(q, key);
		add_after_locked(q, e, delay_ms * CLOCK_NS_PER_MS);
	}
	pthread_mutex_unlock(&q->lock);
}

/* base * 2^failures, capped; overflow-safe. */
static int64_t backoff_ns(const struct wq *q, int failures)
{
	if (failures >= 62 || q->base_delay_ns > (INT64_MAX >> failures))
		return q->max_delay_ns;
	if ((q->base_delay_ns << failures) > q->max_delay_ns)
		return q->max_delay_ns;
	return q->base_delay_ns << failures;
}

void wq_add_rate_limited(struct wq *q, const char *key)
{
	struct entry *e;
	int64_t delay, bucket;

	assert(key != NULL);
	pthread_mutex_lock(&q->lock);
	if (q->shutting_down)
		goto out;
	e = lookup_or_create(q, key);
	delay = backoff_ns(q, e->failures);
	if (e->failures < INT32_MAX)
		e->failures++;
	/* Both limiters are charged, as client-go's MaxOfRateLimiter does. */
	bucket = tbucket_reserve(&q->bucket);
	if (bucket > delay)
		delay = bucket;
	metrics_add(RETRIES_METRIC, q->labels, 1);
	add_after_locked(q, e, delay);
out:
	pthread_mutex_unlock(&q->lock);
}

void wq_forget(struct wq *q, const char *key)
{
	struct entry *e;

	assert(key != NULL);
	pthread_mutex_lock(&q->lock);
	e = lookup(q, key, hash_key(key));
	if (e) {
		e->failures = 0;
		release_if_unused(q, e);
	}
	pthread_mutex_unlock(&q->lock);
}

int wq_num_requeues(struct wq *q, const char *key)
{
	struct entry *e;
	int n;

	assert(key != NULL);
	pthread_mutex_lock(&q->lock);
	e = lookup(q, key, hash_key(key));
	n = e ? e->failures : 0;
	pthread_mutex_unlock(&q->lock);
	return n;
}

/* ---- workers ---- */

int wq_get(struct wq *q, const char **key)
{
	struct entry *e;
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	while (q->fifo_len == 0 && !q->shutting_down)
		pthread_cond_wait(&q->ready, &q->lock);
	if (q->shutting_down) {
		rc = -ESHUTDOWN;
		goto out;
	}
	e = fifo_pop(q);
	e->dirty = false;
	e->processing = true;
	q->in_flight++;
	*key = e->key;
out:
	pthread_mutex_unlock(&q->lock);
	return rc;
}

void wq_done(struct wq *q, const char *key)
{
	struct entry *e;

	pthread_mutex_lock(&q->lock);
	e = lookup(q, key, hash_key(key));
	assert(e != NULL && e->processing);
	if (e == NULL || !e->processing)
		goto out;
	e->processing = false;
	q->in_flight--;
	if (e->dirty) {
		if (q->shutting_down)
			e->dirty = false;
		else
			fifo_push(q, e);
	}
	release_if_unused(q, e);
out:
	pthread_mutex_unlock(&q->lock);
}

size_t wq_len(struct wq *q)
{
	size_t n;

	pthread_mutex_lock(&q->lock);
	n = q->fifo_len;
	pthread_mutex_unlock(&q->lock);
	return n;
}

size_t wq_in_flight(struct wq *q)
{
	size_t n;

	pthread_mutex_lock(&q->lock);
	n = q->in_flight;
	pthread_mutex_unlock(&q->lock);
	return n;
}
