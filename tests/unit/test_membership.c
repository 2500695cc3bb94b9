/* test_membership.c - who belongs to a tenant: members, exceptions and outsiders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "testjson.h"

#include "base/err.h"
#include "base/json.h"
#include "tenancy/landlordconfig.h"
#include "tenancy/membership.h"

struct env {
	struct jdoc *tenant; /* read in place, as the controller reads its cache */
	json_t *namespaces;
	struct lcfg *cfg;
};

static int setup(void **state)
{
	static struct env e;
	json_t *cfg = js("{\"spec\":{\"privileged\":{\"users\":[\"ops-.*\"],"
	                 "\"groups\":[\"platform\"],\"serviceAccounts\":[\"monitoring:.*\"]}}}");

	e.tenant = jd(
	        "{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"accessControl\":{"
	        "\"owners\":{\"users\":[\"alice\"]},\"editors\":{\"groups\":[\"team-a\"]},"
	        "\"viewers\":{\"serviceAccounts\":[{\"namespace\":\"ci\",\"name\":\"bot\"}]}}}}");
	e.namespaces = js("{\"acme-dev\":true,\"acme-prod\":true}");
	assert_int_equal(lcfg_parse(cfg, &e.cfg, NULL), 0);
	json_decref(cfg);
	*state = &e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	jdoc_unref(e->tenant);
	json_decref(e->namespaces);
	lcfg_unref(e->cfg);
	return 0;
}

static enum tm_verdict verdict(struct env *e, const char *subject)
{
	struct jdoc *s = jd(subject);
	enum tm_verdict v = tm_subject_verdict(jdoc_root(e->tenant), e->cfg, e->namespaces,
	                                       "acme-dev", jdoc_root(s));

	jdoc_unref(s);
	return v;
}

static void test_membership__listed_users_groups_and_service_accounts_are_members(void **state)
{
	struct env *e = *state;

	assert_int_equal(verdict(e, "{\"kind\":\"User\",\"name\":\"alice\"}"), TM_MEMBER);
	assert_int_equal(verdict(e, "{\"kind\":\"Group\",\"name\":\"team-a\"}"), TM_MEMBER);
	assert_int_equal(verdict(e, "{\"kind\":\"ServiceAccount\",\"namespace\":\"ci\","
	                            "\"name\":\"bot\"}"),
	                 TM_MEMBER);
	assert_int_equal(
	        verdict(e, "{\"kind\":\"User\",\"name\":\"system:serviceaccount:ci:bot\"}"),
	        TM_MEMBER);
	/* a role's users are not its groups, and names match exactly */
	assert_int_equal(verdict(e, "{\"kind\":\"Group\",\"name\":\"alice\"}"), TM_OUTSIDER);
	assert_int_equal(verdict(e, "{\"kind\":\"User\",\"name\":\"alice2\"}"), TM_OUTSIDER);
	assert_int_equal(verdict(e, "{\"kind\":\"ServiceAccount\",\"namespace\":\"ci\","
	                            "\"name\":\"other\"}"),
	                 TM_OUTSIDER);
}

static void test_membership__service_accounts_of_tenant_namespaces_are_members(void **state)
{
	struct env *e = *state;

	assert_int_equal(verdict(e, "{\"kind\":\"ServiceAccount\",\"namespace\":\"acme-prod\","
	                            "\"name\":\"deployer\"}"),
	                 TM_MEMBER);
	/* no namespace: the binding's own */
	assert_int_equal(verdict(e, "{\"kind\":\"ServiceAccount\",\"name\":\"x\"}"), TM_MEMBER);
	assert_int_equal(verdict(e, "{\"kind\":\"User\","
	                            "\"name\":\"system:serviceaccount:acme-dev:builder\"}"),
	                 TM_MEMBER);
	assert_int_equal(
	        verdict(e, "{\"kind\":\"Group\",\"name\":\"system:serviceaccounts:acme-dev\"}"),
	        TM_MEMBER);
	/* another tenant's namespace, all service accounts, everyone */
	assert_int_equal(verdict(e, "{\"kind\":\"ServiceAccount\",\"namespace\":\"globex-dev\","
	                            "\"name\":\"deployer\"}"),
	                 TM_OUTSIDER);
	assert_int_equal(verdict(e, "{\"kind\":\"Group\",\"name\":\"system:serviceaccounts\"}"),
	                 TM_OUTSIDER);
	assert_int_equal(verdict(e, "{\"kind\":\"Group\",\"name\":\"system:authenticated\"}"),
	                 TM_OUTSIDER);
	assert_int_equal(verdict(e, "{\"kind\":\"User\","
	                            "\"name\":\"system:serviceaccount:globex-dev:x\"}"),
	                 TM_OUTSIDER);
	/* the template accounts of this namespace, in landlord-system; not another namespace's */
	assert_int_equal(verdict(e, "{\"kind\":\"ServiceAccount\",\"namespace\":"
	                            "\"landlord-system\",\"name\":\"ti.acme-dev.editor\"}"),
	                 TM_MEMBER);
	assert_int_equal(verdict(e, "{\"kind\":\"ServiceAccount\",\"namespace\":"
	                            "\"landlord-system\",\"name\":\"tgi.acme-dev\"}"),
	                 TM_MEMBER);
	assert_int_equal(verdict(e, "{\"kind\":\"ServiceAccount\",\"namespace\":"
	                            "\"landlord-system\",\"name\":\"tgi.acme-prod\"}"),
	                 TM_OUTSIDER);
	assert_int_equal(verdict(e, "{\"kind\":\"ServiceAccount\",\"namespace\":"
	                            "\"landlord-system\",\"name\":\"landlord\"}"),
	                 TM_OUTSIDER);
}

static void test_membership__privileged_subjects_are_exceptions(void **state)
{
	struct env *e = *state;

	assert_int_equal(verdict(e, "{\"kind\":\"User\",\"name\":\"ops-jane\"}"), TM_EXCEPTION);
	assert_int_equal(verdict(e, "{\"kind\":\"Group\",\"name\":\"platform\"}"), TM_EXCEPTION);
	assert_int_equal(verdict(e, "{\"kind\":\"ServiceAccount\",\"namespace\":\"monitoring\","
	                            "\"name\":\"prometheus\"}"),
	                 TM_EXCEPTION);
	assert_int_equal(verdict(e, "{\"kind\":\"User\","
	                            "\"name\":\"system:serviceaccount:monitoring:prometheus\"}"),
	                 TM_EXCEPTION);
	assert_int_equal(verdict(e, "{\"kind\":\"User\",\"name\":\"devops-jane\"}"), TM_OUTSIDER);
}

static void test_membership__what_cannot_be_read_is_an_outsider(void **state)
{
	struct env *e = *state;
	static const char *const odd[] = {
	        "{}",
	        "{\"kind\":\"User\"}",
	        "{\"kind\":\"User\",\"name\":\"\"}",
	        "{\"kind\":\"Robot\",\"name\":\"alice\"}",
	        "{\"kind\":\"User\",\"name\":\"system:serviceaccount:acme-dev\"}",
	        "{\"kind\":\"User\",\"name\":\"system:serviceaccount:acme-dev:\"}",
	        "{\"kind\":\"User\",\"name\":\"system:serviceaccount::x\"}",
	        "{\"kind\":\"User\",\"name\":\"system:serviceaccount:acme-dev:a:b\"}",
	        "{\"kind\":\"Group\",\"name\":\"system:serviceaccounts:\"}",
	        "{\"kind\":7,\"name\":\"alice\"}",
	};

	for (size_t i = 0; i < sizeof(odd) / sizeof(*odd); i++)
		if (verdict(e, odd[i]) != TM_OUTSIDER)
			fail_msg("%s is not an outsider", odd[i]);
}

static void test_membership__subjects_are_described(void **state)
{
	char out[64];
	struct jdoc *sa = jd("{\"kind\":\"ServiceAccount\",\"namespace\":\"ci\",\"name\":\"bot\"}");
	struct jdoc *user = jd("{\"kind\":\"User\",\"name\":\"alice\"}");

	(void)state;
	tm_subject_describe(jdoc_root(sa), out, sizeof(out));
	assert_string_equal(out, "ServiceAccount ci/bot");
	tm_subject_describe(jdoc_root(user), out, sizeof(out));
	assert_string_equal(out, "User alice");
	jdoc_unref(sa);
	jdoc_unref(user);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(
	                test_membership__listed_users_groups_and_service_accounts_are_members),
	        cmocka_unit_test(
	                test_membership__service_accounts_of_tenant_namespaces_are_members),
	        cmocka_unit_test(test_membership__privileged_subjects_are_exceptions),
	        cmocka_unit_test(test_membership__what_cannot_be_read_is_an_outsider),
	        cmocka_unit_test(test_membership__subjects_are_described),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
