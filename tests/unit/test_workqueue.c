/* test_workqueue.c - de-duplication, exclusivity, timers, back-off and shutdown of wq. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/ratelimit.h"
#include "kube/workqueue.h"

#define MS 1000000LL

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * MS};

	nanosleep(&ts, NULL);
}

/* wq_get() that must succeed; returns the key. */
static const char *get(struct wq *q)
{
	const char *key = NULL;

	assert_int_equal(wq_get(q, &key), 0);
	assert_non_null(key);
	return key;
}

static void get_done(struct wq *q, const char *want)
{
	const char *key = get(q);

	assert_string_equal(key, want);
	wq_done(q, key);
}

/* Queue without a global rate limit, so only the per-key back-off delays rate-limited adds. */
static struct wq *new_queue(int64_t base_ms, int64_t max_ms)
{
	struct wq_opts o = {
	        .name = "test", .base_delay_ms = base_ms, .max_delay_ms = max_ms, .qps = -1};

	return wq_new(&o);
}

static void test_workqueue__dedups_queued_keys(void **state)
{
	struct wq *q = wq_new(NULL);

	wq_add(q, "a");
	wq_add(q, "a");
	wq_add(q, "b");
	wq_add(q, "a");
	assert_int_equal(wq_len(q), 2);
	get_done(q, "a");
	get_done(q, "b");
	assert_int_equal(wq_len(q), 0);
	assert_int_equal(wq_in_flight(q), 0);
	wq_free(q);
}

static void test_workqueue__hands_out_in_fifo_order(void **state)
{
	struct wq *q = wq_new(NULL);
	char key[32];
	int next_add = 0, next_get = 0, round, i;

	/* Interleave adds and gets so the ring wraps and grows, and the key table grows. */
	for (round = 0; round < 40; round++) {
		for (i = 0; i < 30; i++) {
			snprintf(key, sizeof(key), "ns/obj-%d", next_add++);
			wq_add(q, key);
		}
		for (i = 0; i < 20; i++) {
			snprintf(key, sizeof(key), "ns/obj-%d", next_get++);
			get_done(q, key);
		}
	}
	assert_int_equal(wq_len(q), (size_t)(next_add - next_get));
	while (next_get < next_add) {
		snprintf(key, sizeof(key), "ns/obj-%d", next_get++);
		get_done(q, key);
	}
	assert_int_equal(wq_len(q), 0);
	wq_free(q);
}

static void test_workqueue__len_and_in_flight(void **state)
{
	struct wq *q = wq_new(NULL);
	const char *a, *b;

	wq_add(q, "a");
	wq_add(q, "b");
	assert_int_equal(wq_len(q), 2);
	assert_int_equal(wq_in_flight(q), 0);
	a = get(q);
	assert_int_equal(wq_len(q), 1);
	assert_int_equal(wq_in_flight(q), 1);
	b = get(q);
	assert_int_equal(wq_len(q), 0);
	assert_int_equal(wq_in_flight(q), 2);
	wq_done(q, b);
	wq_done(q, a);
	assert_int_equal(wq_in_flight(q), 0);
	wq_free(q);
}

static void test_workqueue__key_added_while_processing_is_requeued_once_after_done(void **state)
{
	struct wq *q = wq_new(NULL);
	const char *a;

	wq_add(q, "a");
	a = get(q);
	wq_add(q, "a");
	wq_add(q, "a");
	wq_add(q, "a");
	/* Not queued while in flight, so no other worker can get it ... */
	assert_int_equal(wq_len(q), 0);
	wq_add(q, "b");
	get_done(q, "b");
	/* ... and re-queued exactly once when the worker is done. */
	wq_done(q, a);
	assert_int_equal(wq_len(q), 1);
	assert_int_equal(wq_in_flight(q), 0);
	get_done(q, "a");
	assert_int_equal(wq_len(q), 0);
	wq_free(q);
}

/* ---- many workers, few keys ---- */

#define STRESS_KEYS      4
#define STRESS_WORKERS   8
#define STRESS_PRODUCERS 2
#define STRESS_ADDS      5000

struct stress {
	struct wq *q;
	atomic_int in_use[STRESS_KEYS];
	atomic_long added_gen[STRESS_KEYS];
	atomic_long seen_gen[STRESS_KEYS];
	atomic_long seq;
	atomic_int violations;
	atomic_long processed;
	unsigned seed[STRESS_PRODUCERS];
};

static const char *const stress_keys[STRESS_KEYS] = {"ns/k0", "ns/k1", "ns/k2", "ns/k3"};

static int key_index(const char *key)
{
	int i;

	for (i = 0; i < STRESS_KEYS; i++)
		if (strcmp(key, stress_keys[i]) == 0)
			return i;
	return -1;
}

static void *stress_worker(void *arg)
{
	struct stress *s = arg;
	const char *key;

	while (wq_get(s->q, &key) == 0) {
		int k = key_index(key);

		if (k < 0 || atomic_exchange(&s->in_use[k], 1) != 0) {
			atomic_fetch_add(&s->violations, 1);
		} else {
			atomic_store(&s->seen_gen[k], atomic_load(&s->added_gen[k]));
			sched_yield();
			atomic_store(&s->in_use[k], 0);
		}
		atomic_fetch_add(&s->processed, 1);
		wq_done(s->q, key);
	}
	return NULL;
}

struct producer {
	struct stress *s;
	unsigned x; /* xorshift state */
};

static void *stress_producer(void *arg)
{
	struct producer *p = arg;
	int i;

	for (i = 0; i < STRESS_ADDS; i++) {
		int k;

		p->x ^= p->x << 13;
		p->x ^= p->x >> 17;
		p->x ^= p->x << 5;
		k = (int)(p->x % STRESS_KEYS);
		atomic_store(&p->s->added_gen[k], atomic_fetch_add(&p->s->seq, 1) + 1);
		wq_add(p->s->q, stress_keys[k]);
		if (i % 64 == 0)
			sched_yield();
	}
	return NULL;
}

static bool all_seen(struct stress *s)
{
	int k;

	for (k = 0; k < STRESS_KEYS; k++)
		if (atomic_load(&s->seen_gen[k]) != atomic_load(&s->added_gen[k]))
			return false;
	return true;
}

static void test_workqueue__key_never_handed_to_two_workers(void **state)
{
	static struct stress s;
	struct producer prod[STRESS_PRODUCERS];
	pthread_t workers[STRESS_WORKERS], producers[STRESS_PRODUCERS];
	int64_t deadline;
	int i;

	memset(&s, 0, sizeof(s));
	s.q = wq_new(NULL);
	for (i = 0; i < STRESS_WORKERS; i++)
		assert_int_equal(pthread_create(&workers[i], NULL, stress_worker, &s), 0);
	for (i = 0; i < STRESS_PRODUCERS; i++) {
		prod[i].s = &s;
		prod[i].x = 2463534242u + (unsigned)i * 7919u;
		assert_int_equal(pthread_create(&producers[i], NULL, stress_producer, &prod[i]), 0);
	}
	for (i = 0; i < STRESS_PRODUCERS; i++)
		pthread_join(producers[i], NULL);

	/* Every key's last add must be followed by a hand-out that saw it. */
	deadline = clock_mono_ns() + 30000 * MS;
	while (!all_seen(&s) && clock_mono_ns() < deadline)
		sleep_ms(5);
	assert_true(all_seen(&s));

	wq_shutdown(s.q);
	for (i = 0; i < STRESS_WORKERS; i++)
		pthread_join(workers[i], NULL);
	assert_int_equal(atomic_load(&s.violations), 0);
	assert_true(atomic_load(&s.processed) >= STRESS_KEYS);
	/* De-duplication: far fewer hand-outs than adds is typical, never more. */
	assert_true(atomic_load(&s.processed) <= STRESS_PRODUCERS * STRESS_ADDS);
	assert_int_equal(wq_in_flight(s.q), 0);
	wq_free(s.q);
}

/* ---- timers ---- */

static void test_workqueue__add_after_waits_for_the_delay(void **state)
{
	struct wq *q = wq_new(NULL);
	int64_t t0 = clock_mono_ns(), took;

	wq_add_after(q, "x", 100);
	assert_int_equal(wq_len(q), 0);
	get_done(q, "x");
	took = clock_mono_ns() - t0;
	assert_true(took >= 100 * MS);
	assert_true(took < 5000 * MS);
	wq_free(q);
}

static void test_workqueue__add_after_zero_is_immediate(void **state)
{
	struct wq *q = wq_new(NULL);

	wq_add_after(q, "x", 0);
	wq_add_after(q, "y", -5);
	assert_int_equal(wq_len(q), 2);
	wq_free(q);
}

static void test_workqueue__add_after_orders_by_deadline(void **state)
{
	struct wq *q = wq_new(NULL);
	int64_t t0 = clock_mono_ns();
	char key[16];
	int i;

	/* Far-off timers must not hold back near ones. */
	wq_add_after(q, "far", 60000);
	wq_add_after(q, "b", 50);
	wq_add_after(q, "c", 100);
	wq_add_after(q, "farther", 90000);
	get_done(q, "b");
	get_done(q, "c");
	assert_true(clock_mono_ns() - t0 < 5000 * MS);
	assert_int_equal(wq_len(q), 0);

	/* Distinct delays 20 ms apart, added out of order, come out sorted. */
	for (i = 0; i < 15; i++) {
		int slot = (i * 7) % 15;

		snprintf(key, sizeof(key), "t%02d", slot);
		wq_add_after(q, key, 20 + 20 * slot);
	}
	for (i = 0; i < 15; i++) {
		snprintf(key, sizeof(key), "t%02d", i);
		get_done(q, key);
	}
	wq_free(q);
}

static void test_workqueue__earlier_deadline_wins(void **state)
{
	struct wq *q = wq_new(NULL);
	int64_t t0;

	/* An earlier deadline replaces a later pending one. */
	t0 = clock_mono_ns();
	wq_add_after(q, "k", 60000);
	wq_add_after(q, "k", 50);
	get_done(q, "k");
	assert_true(clock_mono_ns() - t0 < 5000 * MS);

	/* A later deadline does not push a pending earlier one back. */
	t0 = clock_mono_ns();
	wq_add_after(q, "m", 50);
	wq_add_after(q, "m", 60000);
	get_done(q, "m");
	assert_true(clock_mono_ns() - t0 < 5000 * MS);

	/* A later deadline is ignored while an earlier one is pending: one hand-out only. */
	t0 = clock_mono_ns();
	wq_add_after(q, "j", 100);
	wq_add_after(q, "j", 300);
	get_done(q, "j");
	assert_true(clock_mono_ns() - t0 >= 100 * MS);
	while (clock_mono_ns() - t0 < 500 * MS) /* well past the ignored 300 ms deadline */
		sleep_ms(10);
	assert_int_equal(wq_len(q), 0);
	wq_free(q);
}

/* ---- rate limiting ---- */

static int64_t rate_limited_round_trip(struct wq *q, const char *key)
{
	int64_t t0 = clock_mono_ns();

	wq_add_rate_limited(q, key);
	get_done(q, key);
	return clock_mono_ns() - t0;
}

static void test_workqueue__rate_limited_backoff_grows_and_caps(void **state)
{
	struct wq *q = new_queue(20, 50);
	int n;

	for (n = 0; n < 13; n++) {
		int64_t want = (20LL << n) < 50 ? (20LL << n) : 50, took;

		took = rate_limited_round_trip(q, "k");
		assert_true(took >= want * MS);
		/* Uncapped, the later rounds would take 20 ms * 2^12 = 82 s. */
		assert_true(took < 3000 * MS);
		assert_int_equal(wq_num_requeues(q, "k"), n + 1);
	}
	assert_int_equal(wq_num_requeues(q, "other"), 0);
	wq_free(q);
}

static void test_workqueue__forget_resets_backoff(void **state)
{
	struct wq *q = new_queue(20, 100000);
	int64_t took;
	int n;

	for (n = 0; n < 5; n++)
		assert_true(rate_limited_round_trip(q, "k") >= (20LL << n) * MS);
	assert_int_equal(wq_num_requeues(q, "k"), 5);
	wq_forget(q, "k");
	wq_forget(q, "never-seen");
	assert_int_equal(wq_num_requeues(q, "k"), 0);
	/* Without the forget this would be 20 ms * 2^5 = 640 ms. */
	took = rate_limited_round_trip(q, "k");
	assert_true(took >= 20 * MS);
	assert_true(took < 500 * MS);
	assert_int_equal(wq_num_requeues(q, "k"), 1);
	wq_free(q);
}

static void test_workqueue__global_bucket_throttles_distinct_keys(void **state)
{
	struct wq_opts o = {.name = "bucket", .base_delay_ms = 1, .qps = 50, .burst = 2};
	struct wq *q = wq_new(&o);
	bool seen[6] = {false};
	char key[16];
	int64_t t0 = clock_mono_ns();
	int i;

	/* Each key fails for the first time (1 ms back-off); the bucket spaces them 20 ms apart. */
	for (i = 0; i < 6; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		wq_add_rate_limited(q, key);
	}
	for (i = 0; i < 6; i++) {
		const char *k = get(q);

		assert_true(k[0] == 'k' && k[1] >= '0' && k[1] <= '5' && !seen[k[1] - '0']);
		seen[k[1] - '0'] = true;
		wq_done(q, k);
	}
	/* Burst 2, then 4 more at 20 ms each. */
	assert_true(clock_mono_ns() - t0 >= 79 * MS);
	assert_true(clock_mono_ns() - t0 < 5000 * MS);
	wq_free(q);
}

/* ---- shutdown ---- */

struct getter {
	struct wq *q;
	pthread_t thread;
	int rc;
};

static void *getter_main(void *arg)
{
	struct getter *g = arg;
	const char *key;

	g->rc = wq_get(g->q, &key);
	return NULL;
}

static void test_workqueue__shutdown_wakes_blocked_getters(void **state)
{
	struct wq *q = wq_new(NULL);
	struct getter g[3];
	const char *key = NULL;
	int i;

	for (i = 0; i < 3; i++) {
		g[i].q = q;
		g[i].rc = 1;
		assert_int_equal(pthread_create(&g[i].thread, NULL, getter_main, &g[i]), 0);
	}
	sleep_ms(50);
	wq_shutdown(q);
	for (i = 0; i < 3; i++) {
		pthread_join(g[i].thread, NULL);
		assert_int_equal(g[i].rc, -ESHUTDOWN);
	}
	wq_add(q, "late");
	wq_add_after(q, "late", 1);
	wq_add_rate_limited(q, "late");
	assert_int_equal(wq_len(q), 0);
	assert_int_equal(wq_get(q, &key), -ESHUTDOWN);
	wq_shutdown(q); /* idempotent */
	wq_free(q);
}

static void test_workqueue__shutdown_drops_queued_and_delayed_keys(void **state)
{
	struct wq *q = wq_new(NULL);
	const char *a, *key = NULL;

	wq_add(q, "a");
	wq_add(q, "b");
	wq_add(q, "c");
	a = get(q);
	wq_add(q, "a"); /* dirty while in flight */
	wq_add_after(q, "d", 50);
	wq_shutdown(q);
	assert_int_equal(wq_len(q), 0);
	assert_int_equal(wq_in_flight(q), 1);
	assert_string_equal(a, "a"); /* still valid until done */
	sleep_ms(100);
	assert_int_equal(wq_len(q), 0);
	wq_done(q, a);
	assert_int_equal(wq_len(q), 0);
	assert_int_equal(wq_in_flight(q), 0);
	assert_int_equal(wq_get(q, &key), -ESHUTDOWN);
	wq_free(q);
}

/*
 * Freeing a queue whose worker never called wq_done(): up to the free, the shutdown contract
 * holds (no hand-outs, queued and delayed keys dropped, handed-out keys valid, wq_done() does
 * not requeue); the free itself must release the key still in flight (LeakSanitizer reports it
 * otherwise) and nothing twice (ASan).
 */
static void test_workqueue__free_with_key_in_flight(void **state)
{
	struct wq *q = new_queue(60000, 60000); /* "c" stays delayed: wq_len() is exact */
	const char *a, *b, *key = NULL;

	wq_add(q, "a");
	wq_add(q, "b");
	a = get(q);
	b = get(q);
	assert_string_equal(a, "a");
	assert_string_equal(b, "b");
	wq_add(q, "a"); /* dirty while in flight: would be requeued by wq_done() before shutdown */
	wq_add(q, "b");
	wq_add_rate_limited(q, "c");
	wq_add_after(q, "d", 60000);
	wq_add(q, "e");
	assert_int_equal(wq_len(q), 1);
	assert_int_equal(wq_in_flight(q), 2);

	wq_shutdown(q);
	assert_int_equal(wq_get(q, &key), -ESHUTDOWN);
	assert_int_equal(wq_len(q), 0);
	assert_int_equal(wq_in_flight(q), 2);
	assert_string_equal(a, "a"); /* handed-out keys stay valid until their wq_done() */
	assert_string_equal(b, "b");

	wq_done(q, b); /* after shutdown: not requeued although it was dirty */
	assert_int_equal(wq_len(q), 0);
	assert_int_equal(wq_in_flight(q), 1);
	assert_int_equal(wq_get(q, &key), -ESHUTDOWN);
	wq_add(q, "f");
	assert_int_equal(wq_len(q), 0);
	assert_string_equal(a, "a");

	wq_free(q); /* "a" is still in flight */
}

static void test_workqueue__reports_metrics(void **state)
{
	struct wq_opts o = {.name = "metrics-test", .qps = -1};
	struct wq *q = wq_new(&o);
	const char *labels = "name=\"metrics-test\"";

	wq_add(q, "x");
	wq_add(q, "y");
	wq_add(q, "x");
	assert_true(metrics_get("landlord_workqueue_depth", labels) == 2);
	assert_true(metrics_get("landlord_workqueue_adds_total", labels) == 2);
	get_done(q, "x");
	assert_true(metrics_get("landlord_workqueue_depth", labels) == 1);
	wq_add_rate_limited(q, "z");
	assert_true(metrics_get("landlord_workqueue_retries_total", labels) == 1);
	wq_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_workqueue__dedups_queued_keys),
	        cmocka_unit_test(test_workqueue__hands_out_in_fifo_order),
	        cmocka_unit_test(test_workqueue__len_and_in_flight),
	        cmocka_unit_test(
	                test_workqueue__key_added_while_processing_is_requeued_once_after_done),
	        cmocka_unit_test(test_workqueue__key_never_handed_to_two_workers),
	        cmocka_unit_test(test_workqueue__add_after_waits_for_the_delay),
	        cmocka_unit_test(test_workqueue__add_after_zero_is_immediate),
	        cmocka_unit_test(test_workqueue__add_after_orders_by_deadline),
	        cmocka_unit_test(test_workqueue__earlier_deadline_wins),
	        cmocka_unit_test(test_workqueue__rate_limited_backoff_grows_and_caps),
	        cmocka_unit_test(test_workqueue__forget_resets_backoff),
	        cmocka_unit_test(test_workqueue__global_bucket_throttles_distinct_keys),
	        cmocka_unit_test(test_workqueue__shutdown_wakes_blocked_getters),
	        cmocka_unit_test(test_workqueue__shutdown_drops_queued_and_delayed_keys),
	        cmocka_unit_test(test_workqueue__free_with_key_in_flight),
	        cmocka_unit_test(test_workqueue__reports_metrics),
	};

	/* A lost wake-up would hang a test; fail the run instead. */
	alarm(110);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
