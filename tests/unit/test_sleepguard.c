/*
 * test_sleepguard.c - the verdict on a hand-made wake while a sleep is enforced: raising
 * replicas (on the workload or its /scale) and clearing suspend are refused, naming the
 * workload, the supervisor and the override that wakes it; lowering, other changes, workloads
 * landlord did not put to sleep, unreadable saved values and other operations pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tenancy/sleepguard.h"

#define SAVED_REPLICAS "{\"supervisor\":\"night\",\"field\":\"replicas\",\"value\":3}"
#define SAVED_SUSPEND  "{\"supervisor\":\"night\",\"field\":\"suspend\",\"value\":false}"

/* An UPDATE of @resource[/@sub] from @old_spec to @new_spec; @saved on the old object. */
static json_t *request(const char *resource, const char *sub, const char *saved,
                       const char *old_spec, const char *new_spec)
{
	json_t *req = json_pack(
	        "{s:s,s:s,s:s,s:{s:s,s:s,s:s},s:{s:{s:{}},s:o},s:{s:o}}", "operation", "UPDATE",
	        "namespace", "team", "name", "web", "resource", "group", "apps", "version", "v1",
	        "resource", resource, "oldObject", "metadata", "annotations", "spec",
	        json_loads(old_spec, 0, NULL), "object", "spec", json_loads(new_spec, 0, NULL));

	if (sub)
		json_object_set_new(req, "subResource", json_string(sub));
	if (saved)
		json_object_set_new(
		        json_object_get(
		                json_object_get(json_object_get(req, "oldObject"), "metadata"),
		                "annotations"),
		        "landlord.dev/sleep-saved", json_string(saved));
	return req;
}

static bool refuses(json_t *req, const char *scale_saved, char *msg)
{
	bool out = sleepguard_refuses(req, scale_saved, msg, 1024);

	json_decref(req);
	return out;
}

static void test_raising_replicas_is_refused_with_the_way_to_wake(void **state)
{
	char msg[1024] = "";

	(void)state;
	assert_true(refuses(request("deployments", NULL, SAVED_REPLICAS, "{\"replicas\":0}",
	                            "{\"replicas\":2}"),
	                    NULL, msg));
	assert_non_null(
	        strstr(msg, "Deployment team/web is asleep under ResourceSupervisor night"));
	assert_non_null(strstr(msg, "kubectl annotate resourcesupervisor night "
	                            "landlord.dev/hibernation=wake --overwrite"));
}

static void test_the_scale_subresource_uses_the_workloads_saved_value(void **state)
{
	char msg[1024] = "";

	(void)state;
	assert_true(refuses(
	        request("statefulsets", "scale", NULL, "{\"replicas\":0}", "{\"replicas\":1}"),
	        SAVED_REPLICAS, msg));
	assert_non_null(strstr(msg, "StatefulSet team/web"));
	assert_false(refuses(
	        request("statefulsets", "scale", NULL, "{\"replicas\":0}", "{\"replicas\":1}"),
	        NULL, msg)); /* not landlord's sleep */
	assert_false(refuses(request("deployments", "status", SAVED_REPLICAS, "{\"replicas\":0}",
	                             "{\"replicas\":1}"),
	                     SAVED_REPLICAS, msg));
}

static void test_clearing_suspend_is_refused(void **state)
{
	char msg[1024] = "";

	(void)state;
	assert_true(refuses(request("cronjobs", NULL, SAVED_SUSPEND, "{\"suspend\":true}",
	                            "{\"suspend\":false}"),
	                    NULL, msg));
	assert_non_null(strstr(msg, "CronJob team/web"));
	assert_non_null(strstr(msg, "its suspend stays"));
	assert_true(refuses(request("jobs", NULL, SAVED_SUSPEND, "{\"suspend\":true}", "{}"), NULL,
	                    msg));
}

static void test_what_does_not_wake_passes(void **state)
{
	char msg[1024] = "";

	(void)state;
	assert_false(refuses(request("deployments", NULL, SAVED_REPLICAS, "{\"replicas\":0}",
	                             "{\"replicas\":0,\"paused\":true}"),
	                     NULL, msg));
	assert_false(refuses(request("deployments", NULL, SAVED_REPLICAS, "{\"replicas\":2}",
	                             "{\"replicas\":1}"),
	                     NULL, msg)); /* lowering */
	assert_false(
	        refuses(request("deployments", NULL, NULL, "{\"replicas\":0}", "{\"replicas\":5}"),
	                NULL, msg)); /* not landlord's */
	assert_false(refuses(
	        request("deployments", NULL, "{not json", "{\"replicas\":0}", "{\"replicas\":5}"),
	        NULL, msg)); /* unreadable: landlord left it alone */
	assert_false(refuses(
	        request("daemonsets", NULL, SAVED_REPLICAS, "{\"replicas\":0}", "{\"replicas\":5}"),
	        NULL, msg));
	assert_string_equal(msg, "");
}

static void test_kinds(void **state)
{
	(void)state;
	assert_string_equal(sleepguard_kind("replicasets"), "ReplicaSet");
	assert_null(sleepguard_kind("pods"));
	assert_null(sleepguard_kind(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_raising_replicas_is_refused_with_the_way_to_wake),
	        cmocka_unit_test(test_the_scale_subresource_uses_the_workloads_saved_value),
	        cmocka_unit_test(test_clearing_suspend_is_refused),
	        cmocka_unit_test(test_what_does_not_wake_passes),
	        cmocka_unit_test(test_kinds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
