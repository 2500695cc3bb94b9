/*
 * test_schedule.c - what a ResourceSupervisor wants at an instant: no schedule (asleep), a
 * sleep schedule alone (awake until its first firing after creation), both (inside a sleep
 * period or not, a tie stays awake), in a zone; each override: the *-until kinds hold until
 * their time and are then spent, sleep and wake are rewritten to *-until the next scheduled
 * transition (kept as they are when none is ahead), skip-next-sleep waits while asleep and is
 * rewritten to wake-until the wake after the next sleep; a wake schedule alone is refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "hibernation/schedule.h"
#include "tenancy/cron.h"
#include "testtime.h"

static struct cron parse(const char *expr)
{
	struct cron c;
	struct ll_err err;

	if (cron_parse(expr, &c, &err) != 0)
		fail_msg("\"%s\" refused: %s", expr, err.msg);
	return c;
}

static struct sched_decision decide(const struct sched_spec *s, const struct hib_override *ov,
                                    const char *now)
{
	struct sched_decision d;
	struct ll_err err = {{0}};

	if (sched_decide(s, ov, at(now), &d, &err) != 0)
		fail_msg("refused at %s: %s", now, err.msg);
	return d;
}

static void assert_next(const struct sched_decision *d, const char *when)
{
	char buf[32];

	if (when == NULL)
		assert_int_equal(d->next, 0);
	else
		assert_string_equal(iso(d->next, buf), when);
}

/* Sleep at 20:00, wake at 08:00, UTC. */
static struct cron night_sleep, night_wake;
static const struct sched_spec NIGHTS = {&night_sleep, &night_wake, NULL, 0};

static int setup(void **state)
{
	(void)state;
	night_sleep = parse("0 20 * * *");
	night_wake = parse("0 8 * * *");
	return 0;
}

static void test_no_schedule_sleeps_until_deleted(void **state)
{
	struct sched_spec s = {0};
	struct sched_decision d = decide(&s, NULL, "2026-11-28T10:00:00");

	(void)state;
	assert_int_equal(d.state, SCHED_SLEEPING);
	assert_int_equal(d.cause, SCHED_ALWAYS);
	assert_next(&d, NULL);
}

static void test_a_sleep_schedule_alone_sleeps_from_its_first_firing(void **state)
{
	struct cron c = parse("0 20 * * *");
	struct sched_spec s = {&c, NULL, NULL, at("2026-11-28T09:00:00")};
	struct sched_decision d = decide(&s, NULL, "2026-11-28T19:59:59");

	(void)state;
	assert_int_equal(d.state, SCHED_RUNNING);
	assert_next(&d, "2026-11-28T20:00:00Z");
	assert_int_equal(d.next_state, SCHED_SLEEPING);
	d = decide(&s, NULL, "2026-11-28T20:00:00");
	assert_int_equal(d.state, SCHED_SLEEPING);
	assert_next(&d, NULL);
	d = decide(&s, NULL, "2027-03-01T12:00:00"); /* for good */
	assert_int_equal(d.state, SCHED_SLEEPING);
}

static void test_both_schedules_follow_the_period(void **state)
{
	struct sched_decision d = decide(&NIGHTS, NULL, "2026-11-28T10:00:00");

	(void)state;
	assert_int_equal(d.state, SCHED_RUNNING);
	assert_next(&d, "2026-11-28T20:00:00Z");
	d = decide(&NIGHTS, NULL, "2026-11-28T23:00:00"); /* made inside a sleep period */
	assert_int_equal(d.state, SCHED_SLEEPING);
	assert_next(&d, "2026-11-29T08:00:00Z");
	assert_int_equal(d.next_state, SCHED_RUNNING);
	d = decide(&NIGHTS, NULL, "2026-11-29T08:00:00"); /* at the wake itself */
	assert_int_equal(d.state, SCHED_RUNNING);
}

static void test_a_tie_stays_awake(void **state)
{
	struct cron both = parse("0 12 * * *");
	struct sched_spec s = {&both, &both, NULL, 0};
	struct sched_decision d = decide(&s, NULL, "2026-11-28T13:00:00");

	(void)state;
	assert_int_equal(d.state, SCHED_RUNNING);
}

static void test_the_zone_moves_the_instants(void **state)
{
	struct tz_zone *berlin = load("Europe/Berlin");
	struct sched_spec s = {&night_sleep, &night_wake, berlin, 0};
	struct sched_decision d = decide(&s, NULL, "2026-11-28T19:30:00"); /* 20:30 in Berlin */

	(void)state;
	assert_int_equal(d.state, SCHED_SLEEPING);
	assert_next(&d, "2026-11-29T07:00:00Z");
	tz_free(berlin);
}

static void test_until_overrides_hold_then_are_spent(void **state)
{
	struct hib_override ov = {HIB_OVERRIDE_SLEEP_UNTIL, at("2026-11-28T12:00:00")};
	struct sched_decision d = decide(&NIGHTS, &ov, "2026-11-28T10:00:00");

	(void)state;
	assert_int_equal(d.state, SCHED_SLEEPING);
	assert_int_equal(d.cause, SCHED_BY_OVERRIDE);
	assert_next(&d, "2026-11-28T12:00:00Z");
	assert_int_equal(d.next_state, SCHED_RUNNING);
	assert_int_equal(d.ov_action, SCHED_OV_KEEP);
	d = decide(&NIGHTS, &ov, "2026-11-28T12:00:00");
	assert_int_equal(d.state, SCHED_RUNNING);
	assert_int_equal(d.cause, SCHED_BY_SCHEDULE);
	assert_int_equal(d.ov_action, SCHED_OV_REMOVE);

	ov = (struct hib_override){HIB_OVERRIDE_WAKE_UNTIL, at("2026-11-29T02:00:00")};
	d = decide(&NIGHTS, &ov, "2026-11-28T22:00:00");
	assert_int_equal(d.state, SCHED_RUNNING);
	assert_int_equal(d.next_state, SCHED_SLEEPING); /* 02:00 is inside the night */
}

static void test_sleep_and_wake_last_until_the_next_transition(void **state)
{
	struct hib_override ov = {HIB_OVERRIDE_SLEEP, 0};
	struct sched_decision d = decide(&NIGHTS, &ov, "2026-11-28T10:00:00");
	struct sched_spec always = {0};
	char buf[HIB_OVERRIDE_BUF];

	(void)state;
	assert_int_equal(d.state, SCHED_SLEEPING);
	assert_int_equal(d.ov_action, SCHED_OV_REWRITE);
	assert_int_equal(hib_override_format(&d.ov_new, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sleep-until=2026-11-28T20:00:00Z");
	ov = (struct hib_override){HIB_OVERRIDE_WAKE, 0};
	d = decide(&NIGHTS, &ov, "2026-11-28T23:00:00");
	assert_int_equal(d.state, SCHED_RUNNING);
	assert_int_equal(hib_override_format(&d.ov_new, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "wake-until=2026-11-29T08:00:00Z");
	d = decide(&always, &ov, "2026-11-28T23:00:00"); /* no transition ahead: held as it is */
	assert_int_equal(d.state, SCHED_RUNNING);
	assert_int_equal(d.ov_action, SCHED_OV_KEEP);
	assert_next(&d, NULL);
}

static void test_skip_next_sleep(void **state)
{
	struct hib_override ov = {HIB_OVERRIDE_SKIP_NEXT_SLEEP, 0};
	struct sched_decision d = decide(&NIGHTS, &ov, "2026-11-28T10:00:00");
	struct cron c = parse("0 20 * * *");
	struct sched_spec once = {&c, NULL, NULL, at("2026-11-28T09:00:00")};
	char buf[HIB_OVERRIDE_BUF];

	(void)state;
	assert_int_equal(d.state, SCHED_RUNNING);
	assert_int_equal(d.ov_action, SCHED_OV_REWRITE);
	assert_int_equal(hib_override_format(&d.ov_new, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "wake-until=2026-11-29T08:00:00Z");
	d = decide(&NIGHTS, &ov, "2026-11-28T23:00:00"); /* asleep: waits for the wake */
	assert_int_equal(d.state, SCHED_SLEEPING);
	assert_int_equal(d.ov_action, SCHED_OV_KEEP);
	d = decide(&once, &ov, "2026-11-28T10:00:00"); /* the only sleep skipped: awake for good */
	assert_int_equal(d.state, SCHED_RUNNING);
	assert_int_equal(d.ov_new.kind, HIB_OVERRIDE_WAKE);
}

static void test_a_wake_schedule_needs_a_sleep_schedule(void **state)
{
	struct cron c = parse("0 8 * * *");
	struct sched_spec s = {NULL, &c, NULL, 0};
	struct sched_decision d;
	struct ll_err err = {{0}};

	(void)state;
	assert_int_equal(sched_decide(&s, NULL, at("2026-11-28T10:00:00"), &d, &err), -EINVAL);
	assert_string_equal(err.msg,
	                    "spec.schedule.wakeSchedule needs a spec.schedule.sleepSchedule");
}

static void test_a_rare_schedule_is_found_years_ahead(void **state)
{
	struct cron feb29 = parse("0 0 29 2 *");
	struct sched_spec s = {&feb29, NULL, NULL, at("2026-11-28T00:00:00")};
	struct sched_decision d = decide(&s, NULL, "2026-11-28T10:00:00");

	(void)state;
	assert_int_equal(d.state, SCHED_RUNNING);
	assert_next(&d, "2028-02-29T00:00:00Z");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_no_schedule_sleeps_until_deleted),
	        cmocka_unit_test(test_a_sleep_schedule_alone_sleeps_from_its_first_firing),
	        cmocka_unit_test(test_both_schedules_follow_the_period),
	        cmocka_unit_test(test_a_tie_stays_awake),
	        cmocka_unit_test(test_the_zone_moves_the_instants),
	        cmocka_unit_test(test_until_overrides_hold_then_are_spent),
	        cmocka_unit_test(test_sleep_and_wake_last_until_the_next_transition),
	        cmocka_unit_test(test_skip_next_sleep),
	        cmocka_unit_test(test_a_wake_schedule_needs_a_sleep_schedule),
	        cmocka_unit_test(test_a_rare_schedule_is_found_years_ahead),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
