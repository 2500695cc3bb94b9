/*
 * schedule.h - what a ResourceSupervisor wants at an instant: asleep or awake, until when, and
 * what becomes of its override annotation. Pure: no I/O, no clock, no allocation.
 *
 * The state is a function of the spec, the override and the instant, never of what happened
 * before, so a restarted or new leader decides exactly as the old one would have:
 *  - no schedule: asleep (until the supervisor is deleted);
 *  - only sleepSchedule: awake until its first firing after the supervisor was created, asleep
 *    from then on;
 *  - both: asleep when the next wake comes before the next sleep (the supervisor is inside a
 *    sleep period: made at 23:00 with sleep 20:00 and wake 08:00, it sleeps at once); a wake
 *    and a sleep at the same instant leave it awake.
 * Overrides (tenancy/hibernation.h) come first:
 *  - sleep-until=T / wake-until=T: that state while now < T; from T on the override is spent
 *    (SCHED_OV_REMOVE) and the schedule decides again;
 *  - sleep / wake: "until the next scheduled transition", so landlord rewrites it to
 *    sleep-until= / wake-until= that instant (SCHED_OV_REWRITE); with no transition ahead it
 *    holds until someone removes it;
 *  - skip-next-sleep: while the schedule has it awake, rewritten to wake-until= the first wake
 *    after its next sleep (with no wake schedule: to wake, indefinitely); while the schedule has
 *    it asleep it waits, untouched, for the wake.
 * Instants are Unix seconds (UTC). sched_decide() reports the next instant its answer may
 * change, for the controller's requeue_after timer.
 */
#ifndef LANDLORD_SCHEDULE_H
#define LANDLORD_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "tenancy/hibernation.h"

struct cron;
struct tz_zone;
struct ll_err;

enum sched_state { SCHED_RUNNING, SCHED_SLEEPING };

enum sched_cause {
	SCHED_BY_SCHEDULE, /* the cron schedules */
	SCHED_BY_OVERRIDE, /* the annotation */
	SCHED_ALWAYS,      /* no schedule: asleep until deleted */
};

enum sched_ov_action {
	SCHED_OV_KEEP,    /* leave the annotation as it is (or absent) */
	SCHED_OV_REMOVE,  /* spent: remove it */
	SCHED_OV_REWRITE, /* replace it by sched_decision.ov_new */
};

struct sched_spec {
	const struct cron *sleep; /* NULL: no sleepSchedule */
	const struct cron *wake;  /* NULL: no wakeSchedule (needs sleep) */
	const struct tz_zone *zone;
	int64_t created; /* the supervisor's creationTimestamp */
};

struct sched_decision {
	enum sched_state state; /* wanted now */
	enum sched_cause cause; /* why */
	int64_t next;           /* the next instant the answer may change; 0: none ahead */
	enum sched_state next_state;
	enum sched_ov_action ov_action;
	struct hib_override ov_new; /* SCHED_OV_REWRITE only */
};

/**
 * sched_decide() - what @spec wants at @now, given the override @ov (NULL: none).
 * @out: OUT, filled on success.
 * @err: the one-line reason on error.
 * Return: 0; -EINVAL (a wake schedule without a sleep schedule); -ERANGE (a schedule that
 * never fires within cron.h's horizon: "no firing of the sleep schedule within 8 years").
 */
int sched_decide(const struct sched_spec *spec, const struct hib_override *ov, int64_t now,
                 struct sched_decision *out /* OUT */, struct ll_err *err);

/** sched_state_name() - "running" or "sleeping". */
const char *sched_state_name(enum sched_state s);

#endif
