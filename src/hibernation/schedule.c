/*
 * schedule.c - the state a ResourceSupervisor wants at an instant (schedule.h).
 */
#include <errno.h>

#include "base/err.h"
#include "hibernation/schedule.h"
#include "tenancy/cron.h"

struct scheduled {
	enum sched_state state;
	enum sched_cause cause;
	int64_t next; /* 0: none */
	enum sched_state next_state;
};

static int next_firing(const struct cron *c, const struct tz_zone *zone, int64_t after,
                       const char *which, int64_t *out, struct ll_err *err)
{
	struct ll_err why = {{0}};
	int rc = cron_next(c, zone, after, out, &why);

	return rc < 0 ? ll_err_set(err, rc, "spec.schedule.%s: %s", which, why.msg) : 0;
}

/* What the schedules alone want at @now. */
static int scheduled_at(const struct sched_spec *s, int64_t now, struct scheduled *out,
                        struct ll_err *err)
{
	int64_t first, sleep_at, wake_at;
	int rc;

	*out = (struct scheduled){.state = SCHED_SLEEPING, .cause = SCHED_BY_SCHEDULE};
	if (s->sleep == NULL && s->wake != NULL) {
		return ll_err_set(err, -EINVAL,
		                  "spec.schedule.wakeSchedule needs a spec.schedule.sleepSchedule");
	}
	if (s->sleep == NULL) {
		out->cause = SCHED_ALWAYS;
		return 0;
	}
	if (s->wake == NULL) {
		rc = next_firing(s->sleep, s->zone, s->created - 1, "sleepSchedule", &first, err);
		if (rc == 0 && first > now)
			*out = (struct scheduled){SCHED_RUNNING, SCHED_BY_SCHEDULE, first,
			                          SCHED_SLEEPING};
		return rc;
	}
	rc = next_firing(s->sleep, s->zone, now, "sleepSchedule", &sleep_at, err);
	if (rc == 0)
		rc = next_firing(s->wake, s->zone, now, "wakeSchedule", &wake_at, err);
	if (rc == 0 && wake_at < sleep_at)
		*out = (struct scheduled){SCHED_SLEEPING, SCHED_BY_SCHEDULE, wake_at,
		                          SCHED_RUNNING};
	else if (rc == 0)
		*out = (struct scheduled){SCHED_RUNNING, SCHED_BY_SCHEDULE, sleep_at,
		                          SCHED_SLEEPING};
	return rc;
}

static void from_scheduled(struct sched_decision *out, const struct scheduled *s)
{
	out->state = s->state;
	out->cause = s->cause;
	out->next = s->next;
	out->next_state = s->next_state;
}

/* The override holds @state until @until (0: indefinitely); then the schedule decides. */
static int hold(const struct sched_spec *spec, enum sched_state state, int64_t until,
                struct sched_decision *out, struct ll_err *err)
{
	struct scheduled then = {0};
	int rc = until ? scheduled_at(spec, until, &then, err) : 0;

	out->state = state;
	out->cause = SCHED_BY_OVERRIDE;
	out->next = until;
	out->next_state = then.state;
	return rc;
}

static void rewrite(struct sched_decision *out, enum hib_override_kind kind, int64_t until)
{
	out->ov_action = SCHED_OV_REWRITE;
	out->ov_new = (struct hib_override){.kind = kind, .until = until};
}

/* sleep or wake: until the next scheduled transition. */
static int until_next(const struct sched_spec *spec, const struct scheduled *s, bool sleep,
                      struct sched_decision *out, struct ll_err *err)
{
	enum sched_state state = sleep ? SCHED_SLEEPING : SCHED_RUNNING;

	if (s->next)
		rewrite(out, sleep ? HIB_OVERRIDE_SLEEP_UNTIL : HIB_OVERRIDE_WAKE_UNTIL, s->next);
	return hold(spec, state, s->next, out, err);
}

static int skip_next_sleep(const struct sched_spec *spec, const struct scheduled *s,
                           struct sched_decision *out, struct ll_err *err)
{
	int64_t woken;
	int rc;

	if (s->state == SCHED_SLEEPING) { /* wait for the wake */
		from_scheduled(out, s);
		return 0;
	}
	if (spec->wake == NULL) { /* the only sleep ahead is skipped: awake for good */
		rewrite(out, HIB_OVERRIDE_WAKE, 0);
		return hold(spec, SCHED_RUNNING, 0, out, err);
	}
	rc = next_firing(spec->wake, spec->zone, s->next, "wakeSchedule", &woken, err);
	if (rc < 0)
		return rc;
	rewrite(out, HIB_OVERRIDE_WAKE_UNTIL, woken);
	return hold(spec, SCHED_RUNNING, woken, out, err);
}

int sched_decide(const struct sched_spec *spec, const struct hib_override *ov, int64_t now,
                 struct sched_decision *out, struct ll_err *err)
{
	struct scheduled s;
	int rc;

	*out = (struct sched_decision){0};
	rc = scheduled_at(spec, now, &s, err);
	if (rc < 0)
		return rc;
	from_scheduled(out, &s);
	if (ov == NULL)
		return 0;
	switch (ov->kind) {
	case HIB_OVERRIDE_SLEEP_UNTIL:
	case HIB_OVERRIDE_WAKE_UNTIL:
		if (now < ov->until)
			return hold(spec,
			            ov->kind == HIB_OVERRIDE_SLEEP_UNTIL ? SCHED_SLEEPING
			                                                 : SCHED_RUNNING,
			            ov->until, out, err);
		out->ov_action = SCHED_OV_REMOVE;
		return 0;
	case HIB_OVERRIDE_SLEEP:
	case HIB_OVERRIDE_WAKE:
		return until_next(spec, &s, ov->kind == HIB_OVERRIDE_SLEEP, out, err);
	case HIB_OVERRIDE_SKIP_NEXT_SLEEP:
		return skip_next_sleep(spec, &s, out, err);
	}
	return 0;
}

const char *sched_state_name(enum sched_state s)
{
	return s == SCHED_SLEEPING ? "sleeping" : "running";
}
