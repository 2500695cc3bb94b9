/* Unit tests for the pod rules (src/tenancy/admit_pods.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "admit_testing.h"

static int setup(void **state)
{
	*state = at_view(NULL);
	return 0;
}

static int teardown(void **state)
{
	adm_memview_free(*state);
	return 0;
}

/* @op on @resource (a pod or a workload) in acme-dev by alice, with object and old object. */
static void decide(void **state, const char *op, const char *resource, const char *object,
                   const char *old, struct adm_decision *d)
{
	char req[4096];

	snprintf(req, sizeof(req),
	         "{\"operation\":\"%s\",\"resource\":\"%s\",\"namespace\":\"acme-dev\","
	         "\"user\":\"alice\",\"object\":%s%s%s}",
	         op, resource, object, old ? ",\"oldObject\":" : "", old ? old : "");
	at_decide(*state, req, d);
}

#define BAD_IMAGE  "\"quay.io/evil/x:1\""
#define GOOD_IMAGE "\"ghcr.io/acme/api:1\""
#define BAD_MSG                                                                          \
	"image \"quay.io/evil/x:1\" is not from a registry allowed for tenant \"acme\" " \
	"(allowed: ghcr.io/acme, docker.io/library)"

static void test_admit_pods__every_container_kind_is_checked(void **state)
{
	static const char *const kinds[] = {"containers", "initContainers", "ephemeralContainers"};
	struct adm_decision d;
	char obj[512];

	for (size_t i = 0; i < 3; i++) {
		snprintf(obj, sizeof(obj),
		         "{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":" GOOD_IMAGE
		         "}],\"%s\":[{\"name\":\"x\",\"image\":" BAD_IMAGE "}]}}",
		         kinds[i]);
		decide(state, "CREATE", "pods", obj, NULL, &d);
		assert_false(d.allowed);
		assert_string_equal(d.message, BAD_MSG);
	}
}

static void test_admit_pods__every_template_gives_the_pod_message(void **state)
{
	static const char *const owners[] = {"apps/deployments", "apps/statefulsets",
	                                     "apps/daemonsets",  "apps/replicasets",
	                                     "batch/jobs",       "replicationcontrollers"};
	static const char spec[] = "{\"containers\":[{\"name\":\"a\",\"image\":" BAD_IMAGE "}]}";
	struct adm_decision d;
	char obj[512];

	for (size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
		snprintf(obj, sizeof(obj), "{\"spec\":{\"template\":{\"spec\":%s}}}", spec);
		decide(state, "CREATE", owners[i], obj, NULL, &d);
		assert_false(d.allowed);
		assert_string_equal(d.message, BAD_MSG);
	}
	snprintf(obj, sizeof(obj),
	         "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":%s}}}}}", spec);
	decide(state, "UPDATE", "batch/cronjobs", obj, "{\"spec\":{}}", &d);
	assert_string_equal(d.message, BAD_MSG);
	/* not a pod owner: its template, if any, is not read */
	decide(state, "CREATE", "apps/controllerrevisions", obj, NULL, &d);
	assert_true(d.allowed);
}

static void test_admit_pods__an_update_is_checked_on_what_it_changes(void **state)
{
	static const char bad[] = "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":" BAD_IMAGE
	                          ",\"imagePullPolicy\":\"Never\"}],\"priorityClassName\":"
	                          "\"high\",\"runtimeClassName\":\"runc\","
	                          "\"serviceAccountName\":\"builder\"}}";
	static const char renamed[] =
	        "{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":" BAD_IMAGE
	        ",\"imagePullPolicy\":\"Never\"}]}}";
	struct adm_decision d;

	decide(state, "UPDATE", "pods", bad, bad, &d);
	assert_true(d.allowed);
	/* a container of another name is a new container */
	decide(state, "UPDATE", "pods", renamed, bad, &d);
	assert_false(d.allowed);
	assert_string_equal(d.message, BAD_MSG);
	/* an update from a good pod to the bad one meets every rule */
	decide(state, "UPDATE", "pods", bad,
	       "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":" GOOD_IMAGE "}]}}", &d);
	assert_string_equal(d.message, BAD_MSG);
}

static void test_admit_pods__pull_policy_defaults_as_the_api_server_does(void **state)
{
	struct adm_memview *mv = at_view("{\"tenants\":[{\"metadata\":{\"name\":\"acme\"},"
	                                 "\"spec\":{\"plan\":\"gold\",\"allowed\":{"
	                                 "\"imagePullPolicies\":[\"IfNotPresent\"]}}}]}");
	static const struct {
		const char *image;
		bool allowed;
	} cases[] = {
	        {"nginx", false},
	        {"nginx:latest", false},
	        {"nginx:1.25", true},
	        {"nginx@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	         true},
	};
	struct adm_decision d;
	char req[1024];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(req, sizeof(req),
		         "{\"operation\":\"CREATE\",\"resource\":\"pods\",\"namespace\":\"acme-"
		         "dev\","
		         "\"user\":\"alice\",\"object\":{\"spec\":{\"containers\":[{\"name\":\"a\","
		         "\"image\":\"%s\"}]}}}",
		         cases[i].image);
		at_decide(mv, req, &d);
		assert_int_equal(d.allowed, cases[i].allowed);
		if (!d.allowed)
			assert_string_equal(d.message, "image pull policy \"Always\" of container "
			                               "\"a\" is not allowed for tenant \"acme\" "
			                               "(allowed: IfNotPresent)");
	}
	adm_memview_free(mv);
}

static void test_admit_pods__classes_and_service_accounts(void **state)
{
	static const struct {
		const char *spec, *message;
	} cases[] = {
	        {"\"priorityClassName\":\"high\"",
	         "priority class \"high\" of a pod is not allowed for tenant \"acme\" (allowed: "
	         "low, \"\" (none))"},
	        {"\"runtimeClassName\":\"runc\"",
	         "runtime class \"runc\" of a pod is not allowed for tenant \"acme\" (allowed: "
	         "gvisor)"},
	        {"\"serviceAccount\":\"builder\"",
	         "service account \"builder\" is denied to pods of tenant \"acme\" (any other is "
	         "allowed; denied: builder)"},
	        {"\"priorityClassName\":\"\",\"runtimeClassName\":\"\"", NULL},
	        {"\"priorityClassName\":\"low\",\"runtimeClassName\":\"gvisor\"", NULL},
	};
	struct adm_decision d;
	char obj[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(obj, sizeof(obj),
		         "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":" GOOD_IMAGE
		         "}],%s}}",
		         cases[i].spec);
		decide(state, "CREATE", "pods", obj, NULL, &d);
		assert_int_equal(d.allowed, cases[i].message == NULL);
		if (cases[i].message)
			assert_string_equal(d.message, cases[i].message);
	}
}

static void test_admit_pods__no_list_no_restriction(void **state)
{
	struct adm_decision d;

	at_decide(*state,
	          "{\"operation\":\"CREATE\",\"resource\":\"pods\",\"namespace\":\"globex-web\","
	          "\"user\":\"gina\",\"object\":{\"spec\":{\"containers\":[{\"name\":\"a\","
	          "\"image\":\"Not A Reference\",\"imagePullPolicy\":\"Never\"}],"
	          "\"priorityClassName\":\"x\",\"runtimeClassName\":\"y\"}}}",
	          &d);
	assert_true(d.allowed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_admit_pods__every_container_kind_is_checked),
	        cmocka_unit_test(test_admit_pods__every_template_gives_the_pod_message),
	        cmocka_unit_test(test_admit_pods__an_update_is_checked_on_what_it_changes),
	        cmocka_unit_test(test_admit_pods__pull_policy_defaults_as_the_api_server_does),
	        cmocka_unit_test(test_admit_pods__classes_and_service_accounts),
	        cmocka_unit_test(test_admit_pods__no_list_no_restriction),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
