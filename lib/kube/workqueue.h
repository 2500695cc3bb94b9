/*
 * workqueue.h - de-duplicating, rate-limited work queue of string keys (client-go semantics).
 *
 * Invariants:
 *  - A key is in the queue at most once (adding a queued key is a no-op).
 *  - A key is never handed to two workers at once: a key added while it is being processed is
 *    marked dirty and re-queued when the worker calls wq_done().
 *  - wq_add_rate_limited() delays a key by base * 2^failures (capped at max_delay) and, on top,
 *    by the queue-wide token bucket (qps/burst); wq_forget() resets the failure count.
 *  - wq_add_after() uses timers (one timer thread, no polling); an earlier deadline for the same
 *    key wins, a later one is ignored while an earlier is pending.
 *  - After wq_shutdown(), wq_get() returns -ESHUTDOWN at once (it never waits); queued keys are
 *    dropped, pending timers are cancelled. Keys already handed out stay valid until their
 *    wq_done(), which then no longer re-queues them; join the workers to drain them.
 * All functions are thread-safe. Keys are copied in; wq_get() hands out a borrowed string valid
 * until the matching wq_done().
 */
#ifndef LANDLORD_WORKQUEUE_H
#define LANDLORD_WORKQUEUE_H

#include <stddef.h>
#include <stdint.h>

/* A zero field takes its default. */
struct wq_opts {
	const char *name;      /* for metrics: landlord_workqueue_depth{name=...} etc. */
	int64_t base_delay_ms; /* default 5 */
	int64_t max_delay_ms;  /* default 1000000 (~16 min) */
	double qps;            /* overall rate limit for rate-limited adds; default 10; < 0: off */
	int burst;             /* default 100 */
};

struct wq;

struct wq *wq_new(const struct wq_opts *opts /* NULL: defaults */);
/** wq_free() - shut down (if not yet) and free; no worker may be inside wq_get() any more. */
void wq_free(struct wq *q);

void wq_add(struct wq *q, const char *key);
void wq_add_after(struct wq *q, const char *key, int64_t delay_ms);
void wq_add_rate_limited(struct wq *q, const char *key);
void wq_forget(struct wq *q, const char *key);
/** wq_num_requeues() - failures counted for @key since the last wq_forget(). */
int wq_num_requeues(struct wq *q, const char *key);

/**
 * wq_get() - block until a key is ready.
 * Return: 0 with *key set (borrowed until wq_done(q, *key)); -ESHUTDOWN after wq_shutdown().
 */
int wq_get(struct wq *q, const char **key /* OUT */);
/** wq_done() - the worker has finished @key (the pointer wq_get() gave). */
void wq_done(struct wq *q, const char *key);

/** wq_shutdown() - wake every waiter; further adds are ignored. */
void wq_shutdown(struct wq *q);
/** wq_len() - keys waiting (not counting in-flight or delayed ones). */
size_t wq_len(struct wq *q);
/** wq_in_flight() - keys handed out and not yet done. */
size_t wq_in_flight(struct wq *q);

#endif
