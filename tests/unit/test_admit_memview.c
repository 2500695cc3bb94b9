/* Unit tests for the JSON-backed admission view (src/tenancy/admit_memview.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "admit_testing.h"

static void test_admit_memview__refuses_bad_documents(void **state)
{
	static const char *const bad[] = {
	        "[]",
	        "{\"tenants\":[{\"spec\":{}}]}",
	        "{\"config\":{\"spec\":{\"admission\":{\"modes\":{\"pods\":\"warn\"}}}}}",
	        "{\"config\":{\"spec\":{\"admission\":{\"modes\":{\"pod\":\"audit\"}}}}}",
	        "{\"config\":{\"spec\":{\"privileged\":{\"users\":[\"(\"]}}}}",
	};
	struct adm_memview *mv = (void *)1;
	struct ll_err err;
	json_t *doc;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		doc = js(bad[i]);
		assert_int_equal(adm_memview_new(doc, &mv, &err), -EINVAL);
		assert_null(mv);
		json_decref(doc);
	}
	doc = js("{}");
	assert_int_equal(adm_memview_new(doc, &mv, &err), 0);
	assert_null(adm_memview_view(mv).ops->tenant_of_namespace(mv, "x"));
	assert_false(adm_memview_view(mv).ops->plan_exists(mv, "gold"));
	adm_memview_free(mv);
	json_decref(doc);
	adm_memview_free(NULL);
}

static void test_admit_memview__hosts_overlap_across_wildcards(void **state)
{
	struct adm_memview *mv = at_view(NULL);
	struct adm_view v = adm_memview_view(mv);
	const char *other = NULL;

	/* taken.acme.io and *.wild.acme.io are globex's, app.acme.com acme's */
	assert_string_equal(v.ops->host_user(mv, "taken.acme.io", "acme", &other), "globex");
	assert_string_equal(other, "taken.acme.io");
	assert_null(v.ops->host_user(mv, "taken.acme.io", "globex", &other));
	assert_string_equal(v.ops->host_user(mv, "a.b.wild.acme.io", "acme", &other), "globex");
	assert_string_equal(other, "*.wild.acme.io");
	assert_string_equal(v.ops->host_user(mv, "*.acme.io", "acme", &other), "globex");
	assert_null(v.ops->host_user(mv, "wild.acme.io", "acme", &other));
	assert_null(v.ops->host_user(mv, "*.acme.com", "acme", &other));
	adm_memview_free(mv);
}

static void test_admit_memview__a_wildcard_finds_another_tenant_behind_its_own(void **state)
{
	struct adm_memview *mv = at_view("{\"hosts\":[{\"host\":\"a.s.io\",\"tenant\":\"acme\"},"
	                                 "{\"host\":\"b.s.io\",\"tenant\":\"acme\"},"
	                                 "{\"host\":\"*.c.s.io\",\"tenant\":\"globex\"},"
	                                 "{\"host\":\"d.s.io\",\"tenant\":\"initech\"}]}");
	struct adm_view v = adm_memview_view(mv);
	const char *other = NULL;

	assert_string_equal(v.ops->host_user(mv, "*.s.io", "acme", &other), "globex");
	assert_string_equal(other, "*.c.s.io");
	assert_string_equal(v.ops->host_user(mv, "*.s.io", "globex", &other), "acme");
	assert_string_equal(v.ops->host_user(mv, "*.io", "acme", &other), "globex");
	assert_null(v.ops->host_user(mv, "*.a.s.io", "globex", &other));
	adm_memview_free(mv);
}

static void test_admit_memview__namespaces_claims_members_plans(void **state)
{
	struct adm_memview *mv = at_view(NULL);
	struct adm_view v = adm_memview_view(mv);
	const struct adm_tenant *t = v.ops->tenant_of_namespace(mv, "acme-dev");

	assert_string_equal(t->name, "acme");
	assert_non_null(json_object_get(t->namespaces, "acme-quiet"));
	assert_null(json_object_get(t->namespaces, "globex-web"));
	assert_null(v.ops->tenant_of_namespace(mv, "other"));
	assert_int_equal(jval_type(v.ops->namespace_obj(mv, "other")), JT_OBJECT);
	assert_int_equal(jval_type(v.ops->namespace_obj(mv, "nowhere")), JT_NONE);
	assert_string_equal(v.ops->namespace_claimant(mv, "acme-prod", "globex"), "acme");
	assert_null(v.ops->namespace_claimant(mv, "acme-prod", "acme"));
	assert_string_equal(v.ops->member_tenant(mv, "User", "bob"), "acme");
	assert_string_equal(v.ops->member_tenant(mv, "Group", "acme-devs"), "acme");
	assert_null(v.ops->member_tenant(mv, "Group", "bob"));
	assert_true(v.ops->plan_exists(mv, "silver"));
	assert_null(v.ops->plan_user(mv, "silver"));
	assert_non_null(v.ops->plan_user(mv, "gold"));
	assert_string_equal(v.ops->self_user(mv), "system:serviceaccount:landlord-system:landlord");
	assert_int_equal(v.ops->mode(mv, ADM_PODS), ADM_DENY);
	assert_ptr_equal(v.ops->tenant(mv, "acme"), t);
	adm_memview_free(mv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_admit_memview__refuses_bad_documents),
	        cmocka_unit_test(test_admit_memview__hosts_overlap_across_wildcards),
	        cmocka_unit_test(
	                test_admit_memview__a_wildcard_finds_another_tenant_behind_its_own),
	        cmocka_unit_test(test_admit_memview__namespaces_claims_members_plans),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
