/* test_audit_events.c - Events for audited findings (src/webhook/audit_events.c): queued,
 * aggregated, bounded, written by their own thread to the fake API server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/metrics.h"
#include "fake_manager.h"
#include "webhook/audit_events.h"

struct env {
	struct fake_api *f;
	struct kc_client *c;
	struct audit_events *ae;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	e->f = fake_api_start();
	e->c = fake_client_new(e->f);
	e->ae = audit_events_new(&(struct audit_events_opts){.client = e->c});
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	audit_events_install(NULL);
	audit_events_free(e->ae);
	kc_client_free(e->c);
	fake_api_stop(e->f);
	free(e);
	metrics_reset_for_tests();
	return 0;
}

static json_t *pvc(const char *name)
{
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind",
	                 "PersistentVolumeClaim", "metadata", "name", name, "namespace", "acme-dev",
	                 "uid", "u-1");
}

static json_t *events(struct env *e)
{
	return fake_api_list(e->f, "events", NULL);
}

/* Stop the recorder (its last pass writes what is pending) and list the Events. */
static json_t *flush(struct env *e)
{
	audit_events_free(e->ae);
	e->ae = NULL;
	return events(e);
}

static void test_audit_events__repeats_are_one_event_with_a_count(void **state)
{
	struct env *e = *state;
	json_t *obj = pvc("data"), *all, *ev;

	for (int i = 0; i < 5; i++)
		audit_events_add(e->ae, obj, "acme-dev", "storage class \"gold\" is not allowed");
	all = flush(e);
	assert_int_equal(json_array_size(all), 1);
	ev = json_array_get(all, 0);
	assert_string_equal(jx_namespace(ev), "acme-dev");
	assert_string_equal(jx_str(ev, "reason", NULL), AE_REASON);
	assert_string_equal(jx_str(ev, "type", NULL), "Warning");
	assert_string_equal(jx_str(ev, "message", NULL), "storage class \"gold\" is not allowed");
	assert_string_equal(jx_str(ev, "involvedObject", "kind", NULL), "PersistentVolumeClaim");
	assert_string_equal(jx_str(ev, "involvedObject", "name", NULL), "data");
	assert_string_equal(jx_str(ev, "involvedObject", "uid", NULL), "u-1");
	assert_string_equal(jx_str(ev, "source", "component", NULL), "landlord-webhook");
	assert_int_equal(json_integer_value(jx_get(ev, "count", NULL)), 5);
	assert_int_equal(strncmp(jx_name(ev), "data.", 5), 0);
	json_decref(all);
	json_decref(obj);
}

static bool one_event(struct fake_api *f, void *ud)
{
	json_t *all = fake_api_list(f, "events", NULL);
	bool one = json_array_size(all) == 1;

	json_decref(all);
	return one;
}

static void test_audit_events__later_repeats_patch_the_count(void **state)
{
	struct env *e = *state;
	json_t *obj = pvc("data"), *all;

	audit_events_add(e->ae, obj, NULL, "m");
	assert_true(fake_api_wait(e->f, one_event, NULL)); /* created at once */
	audit_events_add(e->ae, obj, NULL, "m");
	audit_events_add(e->ae, obj, NULL, "other message"); /* a second Event */
	all = flush(e);
	assert_int_equal(json_array_size(all), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *ev = json_array_get(all, i);
		bool first = strcmp(jx_str(ev, "message", NULL), "m") == 0;

		assert_int_equal(json_integer_value(jx_get(ev, "count", NULL)), first ? 2 : 1);
	}
	json_decref(all);
	json_decref(obj);
}

static void test_audit_events__a_deleted_event_is_created_again(void **state)
{
	struct env *e = *state;
	json_t *obj = pvc("data"), *all;

	audit_events_add(e->ae, obj, NULL, "m");
	assert_true(fake_api_wait(e->f, one_event, NULL));
	all = events(e);
	assert_true(fake_api_delete(e->f, "events", "acme-dev", jx_name(json_array_get(all, 0))));
	json_decref(all);
	audit_events_add(e->ae, obj, NULL, "m");
	all = flush(e);
	assert_int_equal(json_array_size(all), 1);
	assert_int_equal(json_integer_value(jx_get(json_array_get(all, 0), "count", NULL)), 2);
	json_decref(all);
	json_decref(obj);
}

static void test_audit_events__a_full_table_drops_and_counts(void **state)
{
	struct env *e = *state;
	int hold = fake_api_rule_add(e->f, &(struct fake_rule){.method = "POST",
	                                                       .path_contains = "/events",
	                                                       .action = FAKE_HOLD});
	char name[32];
	json_t *obj;

	/* The first create is held: every entry stays pending, none may be forgotten. */
	for (int i = 0; i < AE_ENTRIES + 3; i++) {
		snprintf(name, sizeof(name), "pvc-%d", i);
		obj = pvc(name);
		audit_events_add(e->ae, obj, NULL, "m");
		json_decref(obj);
	}
	assert_int_equal(metrics_get("landlord_admission_audit_events_dropped_total", NULL), 3);
	fake_api_rule_remove(e->f, hold);
}

static void test_audit_events__requests_name_their_object_and_dry_runs_record_nothing(void **state)
{
	struct env *e = *state;
	json_t *del = json_pack("{s:s,s:s,s:s,s:{s:s,s:s,s:s},s:{s:{s:s}}}", "operation", "DELETE",
	                        "name", "web", "namespace", "acme-dev", "kind", "group", "apps",
	                        "version", "v1", "kind", "Deployment", "oldObject", "metadata",
	                        "uid", "u-9");
	json_t *dry =
	        json_pack("{s:s,s:s,s:b,s:{s:s,s:s,s:s},s:{s:{s:s}}}", "operation", "CREATE",
	                  "namespace", "acme-dev", "dryRun", 1, "kind", "group", "", "version",
	                  "v1", "kind", "Service", "object", "metadata", "name", "svc");
	json_t *all, *ev;

	audit_events_install(e->ae);
	audit_events_record(del, "cordoned");
	audit_events_record(dry, "a NodePort");
	all = flush(e);
	assert_int_equal(json_array_size(all), 1);
	ev = json_array_get(all, 0);
	assert_string_equal(jx_str(ev, "involvedObject", "apiVersion", NULL), "apps/v1");
	assert_string_equal(jx_str(ev, "involvedObject", "kind", NULL), "Deployment");
	assert_string_equal(jx_str(ev, "involvedObject", "name", NULL), "web");
	assert_string_equal(jx_str(ev, "involvedObject", "uid", NULL), "u-9");
	assert_string_equal(jx_namespace(ev), "acme-dev");
	json_decref(all);
	json_decref(del);
	json_decref(dry);
}

static void test_audit_events__failing_writes_end_with_the_recorder(void **state)
{
	struct env *e = *state;
	int fail = fake_api_rule_add(e->f, &(struct fake_rule){.path_contains = "/events",
	                                                       .action = FAKE_ANSWER,
	                                                       .status = 500});
	json_t *obj = pvc("data"), *all;

	audit_events_add(e->ae, obj, NULL, "m");
	all = flush(e); /* the last pass tries once, and returns */
	assert_int_equal(json_array_size(all), 0);
	assert_true(fake_api_rule_hits(e->f, fail) >= 1);
	assert_true(metrics_get("landlord_audit_events_total", "result=\"failed\"") >= 1);
	json_decref(all);
	json_decref(obj);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(test_audit_events__##name, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(repeats_are_one_event_with_a_count),
	        T(later_repeats_patch_the_count),
	        T(a_deleted_event_is_created_again),
	        T(a_full_table_drops_and_counts),
	        T(failing_writes_end_with_the_recorder),
	        T(requests_name_their_object_and_dry_runs_record_nothing),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
