/* Unit tests for the RoleBinding rule (src/tenancy/admit_rbac.c). */
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

/* Decide a RoleBinding "rb" in @ns holding subjects @subjects (a JSON array), by @user. */
static void binding(void **state, const char *ns, const char *user, const char *subjects,
                    struct adm_decision *d)
{
	char req[2048];

	snprintf(
	        req, sizeof(req),
	        "{\"operation\":\"CREATE\",\"resource\":\"rbac.authorization.k8s.io/rolebindings\","
	        "\"namespace\":\"%s\",\"user\":\"%s\",\"object\":{\"metadata\":{\"name\":\"rb\"},"
	        "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"edit\"},\"subjects\":%s}}",
	        ns, user, subjects);
	at_decide(*state, req, d);
}

static void test_admit_rbac__members_and_exceptions_may_be_bound(void **state)
{
	struct adm_decision d;

	binding(state, "acme-dev", "alice",
	        "[{\"kind\":\"User\",\"name\":\"bob\"},{\"kind\":\"Group\",\"name\":\"acme-devs\"},"
	        "{\"kind\":\"ServiceAccount\",\"name\":\"app\"},"
	        "{\"kind\":\"User\",\"name\":\"system:serviceaccount:acme-prod:x\"},"
	        "{\"kind\":\"User\",\"name\":\"platform-admin\"},"
	        "{\"kind\":\"ServiceAccount\",\"namespace\":\"argocd\","
	        "\"name\":\"argocd-application-controller\"}]",
	        &d);
	assert_true(d.allowed);
	binding(state, "acme-dev", "alice", "[]", &d);
	assert_true(d.allowed);
}

static void test_admit_rbac__each_outsider_is_named_with_the_reason(void **state)
{
	static const struct {
		const char *subject, *message;
	} cases[] = {
	        {"{\"kind\":\"Group\",\"name\":\"system:authenticated\"}",
	         "RoleBinding \"rb\" binds Group \"system:authenticated\", which is every "
	         "authenticated user"},
	        {"{\"kind\":\"User\",\"name\":\"gina\"}",
	         "RoleBinding \"rb\" binds User \"gina\", a member of tenant \"globex\""},
	        {"{\"kind\":\"ServiceAccount\",\"namespace\":\"globex-web\",\"name\":\"bot\"}",
	         "RoleBinding \"rb\" binds ServiceAccount \"globex-web/bot\", of namespace "
	         "\"globex-web\" of tenant \"globex\""},
	        {"{\"kind\":\"Group\",\"name\":\"system:serviceaccounts:kube-system\"}",
	         "RoleBinding \"rb\" binds Group \"system:serviceaccounts:kube-system\", of "
	         "namespace \"kube-system\", not one of tenant \"acme\""},
	        {"{\"kind\":\"Robot\",\"name\":\"r2\"}",
	         "RoleBinding \"rb\" binds a subject of kind \"Robot\" named \"r2\", not a member"},
	        {"{\"name\":\"x\"}", "RoleBinding \"rb\" binds a subject of kind \"\" named \"x\", "
	                             "a subject landlord cannot read"},
	};
	struct adm_decision d;
	char subjects[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(subjects, sizeof(subjects), "[{\"kind\":\"User\",\"name\":\"alice\"},%s]",
		         cases[i].subject);
		binding(state, "acme-dev", "alice", subjects, &d);
		assert_false(d.allowed);
		assert_int_equal(d.family, ADM_RBAC);
		if (strncmp(d.message, cases[i].message, strlen(cases[i].message)) != 0)
			fail_msg("case %zu: %s", i, d.message);
		assert_non_null(strstr(d.message, "(allowed: members of tenant \"acme\""));
	}
}

static void test_admit_rbac__a_hostile_name_stays_one_quoted_line(void **state)
{
	struct adm_decision d;

	binding(state, "acme-dev", "alice", "[{\"kind\":\"User\",\"name\":\"eve\\n\\\"x\"}]", &d);
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "User \"eve\\x0a\\\"x\""));
	assert_null(strchr(d.message, '\n'));
}

static void test_admit_rbac__privileged_and_landlord_bind_anyone(void **state)
{
	static const char outsider[] = "[{\"kind\":\"Group\",\"name\":\"system:authenticated\"}]";
	struct adm_decision d;

	binding(state, "acme-dev", "platform-admin", outsider, &d);
	assert_true(d.allowed);
	binding(state, "acme-dev", "system:serviceaccount:landlord-system:landlord", outsider, &d);
	assert_true(d.allowed);
	binding(state, "other", "alice", outsider, &d);
	assert_true(d.allowed);
}

static void test_admit_rbac__an_update_is_checked_on_the_subjects_it_adds(void **state)
{
	struct adm_decision d;

	at_decide(
	        *state,
	        "{\"operation\":\"UPDATE\",\"resource\":\"rbac.authorization.k8s.io/rolebindings\","
	        "\"namespace\":\"acme-dev\",\"user\":\"alice\",\"object\":{\"metadata\":{"
	        "\"labels\":"
	        "{\"a\":\"b\"}},\"subjects\":[{\"kind\":\"User\",\"name\":\"gina\"}]},"
	        "\"oldObject\":"
	        "{\"subjects\":[{\"kind\":\"User\",\"name\":\"gina\"}]}}",
	        &d);
	assert_true(d.allowed);
	at_decide(
	        *state,
	        "{\"operation\":\"UPDATE\",\"resource\":\"rbac.authorization.k8s.io/rolebindings\","
	        "\"namespace\":\"acme-dev\",\"user\":\"alice\",\"object\":{\"subjects\":[{\"kind\":"
	        "\"User\",\"name\":\"gina\"},{\"kind\":\"ServiceAccount\",\"name\":\"gina\","
	        "\"namespace\":\"other\"}]},\"oldObject\":{\"subjects\":[{\"kind\":\"User\","
	        "\"name\":"
	        "\"gina\"}]}}",
	        &d);
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "ServiceAccount \"other/gina\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_admit_rbac__members_and_exceptions_may_be_bound),
	        cmocka_unit_test(test_admit_rbac__each_outsider_is_named_with_the_reason),
	        cmocka_unit_test(test_admit_rbac__a_hostile_name_stays_one_quoted_line),
	        cmocka_unit_test(test_admit_rbac__privileged_and_landlord_bind_anyone),
	        cmocka_unit_test(test_admit_rbac__an_update_is_checked_on_the_subjects_it_adds),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
