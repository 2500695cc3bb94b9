/* ratelimit.c - token bucket on CLOCK_MONOTONIC (see ratelimit.h). */
#include <errno.h>
#include <time.h>

#include "base/clock.h"
#include "base/ratelimit.h"

void tbucket_init(struct tbucket *tb, double qps, int burst)
{
	pthread_mutex_init(&tb->lock, NULL);
	tb->qps = qps;
	/* A bucket that can never hold a whole token would block forever. */
	tb->burst = burst < 1 ? 1 : burst;
	tb->tokens = tb->burst;
	tb->last_ns = clock_mono_ns();
}

void tbucket_release(struct tbucket *tb)
{
	pthread_mutex_destroy(&tb->lock);
}

/*
 * Like golang.org/x/time/rate's Reserve(): the token is taken even when the bucket is empty, so
 * tokens go negative and every later reservation queues up behind the earlier ones.
 */
int64_t tbucket_reserve(struct tbucket *tb)
{
	int64_t now, wait = 0;

	if (tb->qps <= 0)
		return 0;
	pthread_mutex_lock(&tb->lock);
	now = clock_mono_ns();
	if (now > tb->last_ns) {
		tb->tokens += (double)(now - tb->last_ns) * tb->qps / CLOCK_NS_PER_SEC;
		if (tb->tokens > tb->burst)
			tb->tokens = tb->burst;
		tb->last_ns = now;
	}
	tb->tokens -= 1;
	if (tb->tokens < 0)
		wait = (int64_t)(-tb->tokens * CLOCK_NS_PER_SEC / tb->qps) + 1;
	pthread_mutex_unlock(&tb->lock);
	return wait;
}

void tbucket_wait(struct tbucket *tb)
{
	int64_t wait = tbucket_reserve(tb);

	if (wait > 0)
		clock_sleep_until(clock_mono_ns() + wait);
}
