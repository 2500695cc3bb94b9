/* Unit tests for the Tenant and Plan rules (src/tenancy/admit_tenant.c). */
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

static void tenant(void **state, const char *op, const char *object, struct adm_decision *d)
{
	char req[2048];

	snprintf(req, sizeof(req),
	         "{\"operation\":\"%s\",\"resource\":\"landlord.dev/tenants\",\"user\":"
	         "\"kubernetes-admin\",\"object\":%s}",
	         op, object);
	at_decide(*state, req, d);
}

static void test_admit_tenant__names_up_to_forty_characters(void **state)
{
	struct adm_decision d;

	tenant(state, "CREATE",
	       "{\"metadata\":{\"name\":\"a234567890123456789012345678901234567890\"},"
	       "\"spec\":{\"plan\":\"gold\"}}",
	       &d);
	assert_true(d.allowed);
	tenant(state, "CREATE",
	       "{\"metadata\":{\"name\":\"a2345678901234567890123456789012345678901\"},"
	       "\"spec\":{\"plan\":\"gold\"}}",
	       &d);
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "it is too long"));
	tenant(state, "CREATE", "{\"metadata\":{},\"spec\":{}}", &d);
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "a name is required"));
}

static void test_admit_tenant__privileged_requesters_meet_the_rules_too(void **state)
{
	struct adm_decision d;

	at_decide(*state,
	          "{\"operation\":\"CREATE\",\"resource\":\"landlord.dev/tenants\",\"user\":"
	          "\"platform-admin\",\"object\":{\"metadata\":{\"name\":\"x\"},\"spec\":{"
	          "\"plan\":\"gold\",\"namespaces\":{\"withoutTenantPrefix\":[\"acme-dev\"]}}}}",
	          &d);
	assert_false(d.allowed);
	assert_string_equal(d.message, "namespace \"acme-dev\" of tenant \"x\" is already claimed "
	                               "by tenant \"acme\" (a namespace belongs to one tenant)");
}

static void test_admit_tenant__an_existing_namespace_of_the_tenant_may_be_named(void **state)
{
	struct adm_decision d;

	/* acme-quiet exists, labelled for acme, claimed by no spec: acme may list it */
	tenant(state, "UPDATE",
	       "{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\",\"namespaces\":{"
	       "\"withoutTenantPrefix\":[\"acme-quiet\",\"acme-legacy\"]}}}",
	       &d);
	assert_true(d.allowed);
	assert_int_equal(d.n_warnings, 0);
}

static void test_admit_tenant__status_and_deletes_are_not_checked(void **state)
{
	struct adm_decision d;

	at_decide(*state,
	          "{\"operation\":\"UPDATE\",\"resource\":\"landlord.dev/tenants\",\"subResource\":"
	          "\"status\",\"user\":\"x\",\"object\":{\"metadata\":{\"name\":\"Bad\"}}}",
	          &d);
	assert_true(d.allowed);
	at_decide(
	        *state,
	        "{\"operation\":\"DELETE\",\"resource\":\"landlord.dev/tenants\",\"name\":\"acme\","
	        "\"user\":\"x\"}",
	        &d);
	assert_true(d.allowed);
	at_decide(*state,
	          "{\"operation\":\"UPDATE\",\"resource\":\"landlord.dev/plans\",\"name\":\"gold\","
	          "\"user\":\"x\",\"object\":{}}",
	          &d);
	assert_true(d.allowed);
}

static void test_admit_tenant__plan_in_use_names_a_tenant(void **state)
{
	struct adm_decision d;

	at_decide(*state,
	          "{\"operation\":\"DELETE\",\"resource\":\"landlord.dev/plans\",\"name\":\"gold\","
	          "\"user\":\"x\"}",
	          &d);
	assert_false(d.allowed);
	assert_int_equal(d.family, ADM_TENANTS);
	assert_memory_equal(d.message, "plan \"gold\" is still used by tenant \"", 37);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_admit_tenant__names_up_to_forty_characters),
	        cmocka_unit_test(test_admit_tenant__privileged_requesters_meet_the_rules_too),
	        cmocka_unit_test(
	                test_admit_tenant__an_existing_namespace_of_the_tenant_may_be_named),
	        cmocka_unit_test(test_admit_tenant__status_and_deletes_are_not_checked),
	        cmocka_unit_test(test_admit_tenant__plan_in_use_names_a_tenant),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
