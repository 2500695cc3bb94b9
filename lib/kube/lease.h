/*
 * lease.h - leader election on a coordination.k8s.io/v1 Lease.
 *
 * Rules (docs/internals/lease.md):
 *  - The identity is unique per process (hostname + pid + random suffix), never the hostname.
 *  - Acquire and renew with a PUT that carries the Lease's resourceVersion; a 409 means another
 *    candidate won the race. A Lease that does not exist is created with POST.
 *  - renewTime/acquireTime are MicroTime with exactly six fractional digits ("...00.123456Z").
 *  - Expiry is judged on the monotonic clock: a follower records when it last saw the Lease's
 *    (holder, renewTime) change and considers it expired lease_duration after that, so clock
 *    skew between machines does not matter.
 *  - A leader that cannot renew within renew_deadline (< lease_duration) stops leading before
 *    the Lease can expire: on_stopped_leading() must return only when no worker writes any
 *    more. Then the Lease is released (holderIdentity cleared) and the elector becomes a
 *    candidate again.
 *  - lease_stop() while leading does the same (graceful hand-over: a follower takes over at its
 *    next retry instead of waiting for expiry).
 * The elector uses its own kc_client so a stalled shared connection never costs the lease.
 * Metrics: landlord_leader{lease} gauge (1 while leading), landlord_leader_transitions_total.
 */
#ifndef LANDLORD_LEASE_H
#define LANDLORD_LEASE_H

#include <stdbool.h>

struct kc_client;
struct lease;

struct lease_opts {
	const char *ns;        /* the Lease's namespace (required) */
	const char *name;      /* the Lease's name (required) */
	const char *identity;  /* NULL: generated */
	int lease_duration_ms; /* default 15000 */
	int renew_deadline_ms; /* default 10000 */
	int retry_period_ms;   /* default 2000 */
	/*
	 * Callbacks run on the elector thread and must not call lease_stop(). on_started_leading
	 * should start workers and return; on_stopped_leading returns once they stopped writing.
	 * on_new_leader gets each newly observed non-empty holder (this process included).
	 */
	void (*on_started_leading)(void *ud);
	void (*on_stopped_leading)(void *ud);
	void (*on_new_leader)(const char *identity, void *ud);
	void *ud;
};

/**
 * lease_new() - an elector (not started). @own_client is borrowed and must outlive the lease;
 * its request timeout bounds how long lease_stop() can wait for an API call in flight.
 * @opts is copied. Return: NULL (logged) unless 0 < retry_period < renew_deadline <
 * lease_duration and the strings given are non-empty.
 */
struct lease *lease_new(struct kc_client *own_client, const struct lease_opts *opts);
/** lease_start() - start the elector thread. Return: 0, -EINVAL (already started), -EAGAIN. */
int lease_start(struct lease *l);
bool lease_is_leader(struct lease *l);
/** lease_identity() - this process's identity (borrowed, lives as long as @l). */
const char *lease_identity(const struct lease *l);
/** lease_stop() - stop electing; if leading, stop leading and release the Lease. Joins. */
void lease_stop(struct lease *l);
/** lease_free() - lease_stop() if needed, then free. Accepts NULL. */
void lease_free(struct lease *l);

#endif
