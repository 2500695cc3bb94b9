/* Unit tests for the storage, Ingress, HTTPRoute, Gateway and Service rules
 * (src/tenancy/admit_net.c). */
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

static void decide(struct adm_memview *mv, const char *op, const char *resource, const char *object,
                   const char *old, struct adm_decision *d)
{
	char req[4096];

	snprintf(req, sizeof(req),
	         "{\"operation\":\"%s\",\"resource\":\"%s\",\"namespace\":\"acme-dev\","
	         "\"user\":\"alice\",\"object\":%s%s%s}",
	         op, resource, object, old ? ",\"oldObject\":" : "", old ? old : "");
	at_decide(mv, req, d);
}

static void test_admit_net__pvc_class_from_the_beta_annotation(void **state)
{
	struct adm_decision d;

	decide(*state, "CREATE", "persistentvolumeclaims",
	       "{\"metadata\":{\"generateName\":\"data-\",\"annotations\":{"
	       "\"volume.beta.kubernetes.io/storage-class\":\"gold\"}},\"spec\":{}}",
	       NULL, &d);
	assert_false(d.allowed);
	assert_string_equal(d.message, "storage class \"gold\" of PersistentVolumeClaim \"data-\" "
	                               "is not allowed for tenant \"acme\" (allowed: fast)");
	decide(*state, "CREATE", "persistentvolumeclaims",
	       "{\"metadata\":{\"name\":\"d\",\"annotations\":{"
	       "\"volume.beta.kubernetes.io/storage-class\":\"fast\"}},\"spec\":{}}",
	       NULL, &d);
	assert_true(d.allowed);
}

static void test_admit_net__ingress_class_from_the_annotation(void **state)
{
	struct adm_decision d;

	decide(*state, "CREATE", "networking.k8s.io/ingresses",
	       "{\"metadata\":{\"name\":\"w\",\"annotations\":{\"kubernetes.io/ingress.class\":"
	       "\"nginx\"}},\"spec\":{\"rules\":[{\"host\":\"app.acme.com\"}]}}",
	       NULL, &d);
	assert_true(d.allowed);
	decide(*state, "CREATE", "networking.k8s.io/ingresses",
	       "{\"metadata\":{\"name\":\"w\",\"annotations\":{\"kubernetes.io/ingress.class\":"
	       "\"traefik\"}},\"spec\":{}}",
	       NULL, &d);
	assert_false(d.allowed);
}

static void test_admit_net__an_invalid_host_policy_refuses_every_host(void **state)
{
	struct adm_memview *mv = at_view("{\"tenants\":[{\"metadata\":{\"name\":\"acme\"},"
	                                 "\"spec\":{\"plan\":\"gold\",\"allowed\":{\"hosts\":{"
	                                 "\"regex\":\"(\"}}}}]}");
	struct adm_decision d;

	decide(mv, "CREATE", "gateway.networking.k8s.io/httproutes",
	       "{\"spec\":{\"hostnames\":[\"a.acme.com\"]}}", NULL, &d);
	assert_false(d.allowed);
	assert_string_equal(d.message, "host \"a.acme.com\" cannot be checked: spec.allowed.hosts "
	                               "of tenant \"acme\" is invalid (ask an administrator to "
	                               "fix it)");
	adm_memview_free(mv);
}

static void test_admit_net__hosts_without_restriction_still_must_be_free(void **state)
{
	struct adm_decision d;

	at_decide(*state,
	          "{\"operation\":\"CREATE\",\"resource\":\"gateway.networking.k8s.io/httproutes\","
	          "\"namespace\":\"globex-web\",\"user\":\"gina\",\"object\":{\"spec\":{"
	          "\"hostnames\":[\"app.acme.com\"]}}}",
	          &d);
	assert_false(d.allowed);
	assert_string_equal(d.message, "host \"app.acme.com\" is already used by tenant \"acme\" "
	                               "(a host serves one tenant: choose another)");
	at_decide(*state,
	          "{\"operation\":\"CREATE\",\"resource\":\"gateway.networking.k8s.io/httproutes\","
	          "\"namespace\":\"globex-web\",\"user\":\"gina\",\"object\":{\"spec\":{"
	          "\"hostnames\":[\"Bad_Host\"]}}}",
	          &d);
	assert_false(d.allowed);
	assert_memory_equal(d.message, "host \"Bad_Host\" is not a valid host name", 40);
}

static void test_admit_net__gateway_listener_hosts(void **state)
{
	struct adm_decision d;

	decide(*state, "CREATE", "gateway.networking.k8s.io/gateways",
	       "{\"spec\":{\"gatewayClassName\":\"nginx\",\"listeners\":[{\"name\":\"a\"}]}}", NULL,
	       &d);
	assert_false(d.allowed);
	assert_string_equal(d.message, "a Gateway listener without a hostname serves every host, "
	                               "which tenant \"acme\" may not (name hosts that "
	                               "spec.allowed.hosts allows)");
	decide(*state, "UPDATE", "gateway.networking.k8s.io/gateways",
	       "{\"spec\":{\"gatewayClassName\":\"nginx\",\"listeners\":[{\"name\":\"a\"}]}}",
	       "{\"spec\":{\"gatewayClassName\":\"nginx\",\"listeners\":[{\"name\":\"a\"}]}}", &d);
	assert_true(d.allowed);
}

static void test_admit_net__service_changes_only(void **state)
{
	static const char np[] =
	        "{\"spec\":{\"type\":\"NodePort\",\"externalIPs\":[\"192.0.2.1\"]}}";
	struct adm_decision d;

	decide(*state, "UPDATE", "services", np, np, &d);
	assert_true(d.allowed);
	decide(*state, "UPDATE", "services",
	       "{\"spec\":{\"type\":\"NodePort\",\"externalIPs\":[\"192.0.2.1\",\"192.0.2.2\"]}}",
	       np, &d);
	assert_false(d.allowed);
	assert_string_equal(d.message, "Service \"\" sets externalIPs \"192.0.2.2\", which tenant "
	                               "\"acme\" may not use (allowed: none; an administrator "
	                               "allows them with spec.services.externalIPs)");
}

static void test_admit_net__service_types_listed_as_allowed(void **state)
{
	struct adm_memview *mv = at_view(
	        "{\"tenants\":[{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\","
	        "\"services\":{\"loadBalancer\":false}}}]}");
	struct adm_decision d;

	decide(mv, "CREATE", "services",
	       "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"type\":\"LoadBalancer\"}}", NULL, &d);
	assert_string_equal(d.message,
	                    "Service \"s\" of type LoadBalancer is not allowed for tenant "
	                    "\"acme\" (allowed types: ClusterIP, NodePort, "
	                    "ExternalName)");
	decide(mv, "CREATE", "services", "{\"spec\":{\"type\":\"ExternalName\"}}", NULL, &d);
	assert_true(d.allowed);
	adm_memview_free(mv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_admit_net__pvc_class_from_the_beta_annotation),
	        cmocka_unit_test(test_admit_net__ingress_class_from_the_annotation),
	        cmocka_unit_test(test_admit_net__an_invalid_host_policy_refuses_every_host),
	        cmocka_unit_test(test_admit_net__hosts_without_restriction_still_must_be_free),
	        cmocka_unit_test(test_admit_net__gateway_listener_hosts),
	        cmocka_unit_test(test_admit_net__service_changes_only),
	        cmocka_unit_test(test_admit_net__service_types_listed_as_allowed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
