/*
 * ratelimit.h - token bucket (QPS with burst) on the monotonic clock.
 *
 * Used for the client-side API rate limit and the work queue's overall rate limit. Thread-safe.
 * qps <= 0 disables limiting (every reservation is immediate).
 */
#ifndef LANDLORD_RATELIMIT_H
#define LANDLORD_RATELIMIT_H

#include <pthread.h>
#include <stdint.h>

struct tbucket {
	pthread_mutex_t lock;
	double qps;
	double burst;
	double tokens;
	int64_t last_ns;
};

/** tbucket_init() - start full; a @burst below 1 counts as 1. */
void tbucket_init(struct tbucket *tb, double qps, int burst);
void tbucket_release(struct tbucket *tb);
/** tbucket_reserve() - take one token; return how many ns the caller must wait before acting. */
int64_t tbucket_reserve(struct tbucket *tb);
/** tbucket_wait() - reserve and sleep for the wait. */
void tbucket_wait(struct tbucket *tb);

#endif
