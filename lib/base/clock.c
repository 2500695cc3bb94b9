/* clock.c - monotonic time, deadlines and UTC timestamps (see clock.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"

int64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * CLOCK_NS_PER_SEC + ts.tv_nsec;
}

int64_t clock_mono_ms(void)
{
	return clock_mono_ns() / CLOCK_NS_PER_MS;
}

static struct timespec to_timespec(int64_t ns)
{
	if (ns < 0)
		ns = 0;
	return (struct timespec){.tv_sec = (time_t)(ns / CLOCK_NS_PER_SEC),
	                         .tv_nsec = (long)(ns % CLOCK_NS_PER_SEC)};
}

void clock_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
}

int clock_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline_ns)
{
	struct timespec ts = to_timespec(deadline_ns);

	if (deadline_ns <= clock_mono_ns())
		return ETIMEDOUT;
	return pthread_cond_timedwait(cond, mu, &ts) == ETIMEDOUT ? ETIMEDOUT : 0;
}

void clock_sleep_until(int64_t deadline_ns)
{
	struct timespec ts = to_timespec(deadline_ns);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

struct timespec clock_wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

const char *clock_format_utc(const struct timespec *ts, int frac_digits, char out[CLOCK_UTC_MAX])
{
	long nsec = ts->tv_nsec >= 0 && ts->tv_nsec < CLOCK_NS_PER_SEC ? ts->tv_nsec : 0;
	struct tm tm;
	size_t n;

	if (gmtime_r(&ts->tv_sec, &tm) == NULL)
		memset(&tm, 0, sizeof(tm));
	n = strftime(out, CLOCK_UTC_MAX, "%Y-%m-%dT%H:%M:%S", &tm);
	if (frac_digits == 3)
		snprintf(out + n, CLOCK_UTC_MAX - n, ".%03ldZ", nsec / 1000000);
	else if (frac_digits == 6)
		snprintf(out + n, CLOCK_UTC_MAX - n, ".%06ldZ", nsec / 1000);
	else
		snprintf(out + n, CLOCK_UTC_MAX - n, "Z");
	return out;
}
