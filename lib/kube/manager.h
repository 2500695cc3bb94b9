/*
 * manager.h - runs controllers: shared informers, one work queue per controller, N workers
 * each, leader election, the probe server, and clean shutdown on SIGTERM/SIGINT.
 *
 * A controller is declared by a struct controller_def: its name, its worker count, a setup()
 * that asks the manager for shared informers and says which events map to which keys, and
 * reconcile(key) -> done | requeue after | retry with back-off.
 *
 * Invariants:
 *  - Informers are shared: asking twice for the same resource/namespace/selectors/metadata mode,
 *    store-less mode and projection (keep/drop) returns the same informer. They run on
 *    followers too, so a new leader starts warm.
 *  - Followers run no workers and enqueue nothing. When leadership is gained, every object of
 *    every controller's primary informers is enqueued once; then events flow.
 *  - A key is reconciled by at most one worker at a time (work queue guarantee).
 *  - Losing leadership (or SIGTERM) tells each controller (its leading(false)), then shuts the
 *    queues down and joins the workers - each finishes the reconcile it is in - before the
 *    Lease is released.
 * A worker that finds its queue empty after reconciling hands the freed heap back to the kernel
 * (malloc_trim, at most once a second in the process): bursts do not leave their peak behind.
 *
 * Metrics: landlord_reconcile_total{controller,result} (result: success, requeue, error),
 * landlord_reconcile_duration_seconds{controller}.
 */
#ifndef LANDLORD_MANAGER_H
#define LANDLORD_MANAGER_H

#include <jansson.h>
#include <stdbool.h>

#include "http/server.h"
#include "kube/informer.h"
#include "kube/kube.h"

struct mgr;
struct controller;

enum ctrl_outcome {
	CTRL_DONE,          /* forget back-off */
	CTRL_REQUEUE_AFTER, /* run again after after_ms (a timer, not a poll loop) */
	CTRL_RETRY,         /* failed: retry with per-key exponential back-off */
};

struct ctrl_result {
	enum ctrl_outcome outcome;
	long after_ms;
};

#define CTRL_RESULT_DONE      ((struct ctrl_result){CTRL_DONE, 0})
#define CTRL_RESULT_RETRY     ((struct ctrl_result){CTRL_RETRY, 0})
#define CTRL_RESULT_AFTER(ms) ((struct ctrl_result){CTRL_REQUEUE_AFTER, (ms)})

struct controller_def {
	const char *name;
	int workers; /* default 2 */
	/* Ask for informers (mgr_informer) and wire events (ctrl_watch_*). Return 0 or -errno. */
	int (*setup)(struct controller *c, struct mgr *m, void *ud);
	struct ctrl_result (*reconcile)(struct controller *c, const char *key, void *ud);
	/*
	 * Optional: told true before this replica's workers start (it leads), false before they
	 * are joined (leadership lost, or shutdown): long work a reconcile waits for (a helm
	 * process) is cancelled then, so the workers return before the Lease can expire.
	 */
	void (*leading)(bool leading, void *ud);
	void *ud;
};

struct mgr_opts {
	struct kc_client *client;       /* shared by informers and reconcilers (borrowed) */
	struct kc_client *lease_client; /* own connection for the Lease; NULL: no election */
	const char *lease_ns;           /* the Lease (required with lease_client) */
	const char *lease_name;
	int lease_duration_ms; /* 0: lease.h defaults */
	int renew_deadline_ms;
	int retry_period_ms;
	const char *probe_addr; /* default 127.0.0.1 */
	int probe_port;         /* -1: no probe server; 0: ephemeral */
	bool test_hooks;        /* register /debug/ fault hooks on the probe server */
};

struct mgr *mgr_new(const struct mgr_opts *opts);
void mgr_free(struct mgr *m);
struct kc_client *mgr_client(struct mgr *m);

/** mgr_informer() - the shared informer for @opts, created on first use (borrowed). */
struct inf *mgr_informer(struct mgr *m, const struct inf_opts *opts);
/**
 * mgr_informer_live() - mgr_informer() from a reconcile, for what is only known then (the kinds
 * a template renders): once the manager's informers have started, a new one starts at once
 * (mgr_run()'s wait for caches does not cover it: inf_has_synced() says when it has). Freed with
 * the manager like the others. *@created says whether this call made it. Thread-safe.
 */
struct inf *mgr_informer_live(struct mgr *m, const struct inf_opts *opts, bool *created /* OUT */);
/** mgr_add_controller() - register before mgr_run(); setup() runs inside mgr_run(). */
struct controller *mgr_add_controller(struct mgr *m, const struct controller_def *def);

/** Event wiring, called from setup(). */
/* Enqueue the object's own key; the informer is this controller's primary. */
void ctrl_watch_primary(struct controller *c, struct inf *inf);
/* Enqueue the name (and namespace) of every ownerReference of @owner_kind. */
void ctrl_watch_owned(struct controller *c, struct inf *inf, const char *owner_kind);
/* Enqueue the keys a mapping function emits for the object (old and new on update). */
typedef void (*ctrl_map_fn)(const struct jdoc *obj, void (*emit)(const char *key, void *ctx),
                            void *ctx, void *ud);
void ctrl_watch_mapped(struct controller *c, struct inf *inf, ctrl_map_fn fn, void *ud);
/*
 * The same, but an update that leaves metadata.generation as it was is not mapped: for kinds
 * whose generation moves only with their spec (those with a status subresource), status writes
 * then wake nobody. Adds and deletes are always mapped.
 */
void ctrl_watch_mapped_spec(struct controller *c, struct inf *inf, ctrl_map_fn fn, void *ud);

/** ctrl_enqueue() - queue @key now (a no-op while not leading). */
void ctrl_enqueue(struct controller *c, const char *key);
const char *ctrl_name(const struct controller *c);
struct mgr *ctrl_mgr(struct controller *c);

/**
 * mgr_run() - start the probe server, set up controllers, start and sync informers, then lead
 * (or follow) until SIGTERM/SIGINT or mgr_request_stop(). The calling thread must have
 * SIGTERM and SIGINT blocked in every thread (mgr_block_signals() before creating threads).
 * Return: 0 after a clean stop, or a negative errno when start-up failed (logged).
 */
int mgr_run(struct mgr *m);
/** mgr_request_stop() - ask mgr_run() to stop (thread-safe). */
void mgr_request_stop(struct mgr *m);
/** mgr_block_signals() - block SIGTERM/SIGINT in the calling thread and its future threads. */
void mgr_block_signals(void);
bool mgr_is_leader(struct mgr *m);
/**
 * mgr_add_test_hook() - route @path (under /debug/) to @fn on the probe server when the
 * manager's test hooks are on (mgr_opts.test_hooks); otherwise it is never routed. Before
 * mgr_run(). Return: 0, or -EINVAL for a path outside /debug/.
 */
int mgr_add_test_hook(struct mgr *m, const char *path, http_handler_fn fn, void *ud);
int mgr_probe_port(struct mgr *m);

#endif
