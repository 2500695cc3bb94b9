/*
 * clock.h - the process's one notion of time.
 *
 * Durations, timeouts, deadlines and rate limits use the monotonic clock only (CLOCK_MONOTONIC:
 * never jumps with NTP or an operator's `date`), as nanoseconds or milliseconds since an
 * arbitrary origin. A timed wait is expressed as a monotonic deadline and goes through
 * clock_cond_wait_until(), on a condition variable made by clock_cond_init(); that pairing is
 * what makes pthread_cond_timedwait() read the same clock. The wall clock appears only in
 * timestamps that leave the process (logs, conditions, Events, Lease times), formatted by
 * clock_format_utc(). All functions are thread-safe.
 */
#ifndef LANDLORD_CLOCK_H
#define LANDLORD_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define CLOCK_NS_PER_MS  1000000LL
#define CLOCK_NS_PER_SEC 1000000000LL
/* Room for "2026-11-24T06:30:58.123456Z" and its NUL. */
#define CLOCK_UTC_MAX 32

/** clock_mono_ns() - monotonic time in nanoseconds. */
int64_t clock_mono_ns(void);
/** clock_mono_ms() - monotonic time in milliseconds. */
int64_t clock_mono_ms(void);

/** clock_cond_init() - initialise @cond so that its timed waits run on the monotonic clock. */
void clock_cond_init(pthread_cond_t *cond);
/**
 * clock_cond_wait_until() - pthread_cond_timedwait() on @cond (made by clock_cond_init()) with
 * @mu held, until the monotonic time @deadline_ns; a deadline already past returns at once.
 * Return: 0 when woken (possibly spuriously: re-check the predicate), ETIMEDOUT at the deadline.
 */
int clock_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline_ns);
/** clock_sleep_until() - sleep until the monotonic time @deadline_ns (signals do not cut it). */
void clock_sleep_until(int64_t deadline_ns);

/** clock_wall_now() - the wall clock (CLOCK_REALTIME), for timestamps only. */
struct timespec clock_wall_now(void);
/**
 * clock_format_utc() - @ts as RFC 3339 UTC with @frac_digits (0, 3 or 6) fractional digits:
 * "2026-11-24T06:30:58Z", ".123Z" or ".123456Z" (Kubernetes Time and MicroTime). Return: @out.
 */
const char *clock_format_utc(const struct timespec *ts, int frac_digits,
                             char out[CLOCK_UTC_MAX] /* OUT */);

#endif
