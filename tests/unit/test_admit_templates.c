/*
 * Unit tests for the templates family and the last writer (src/tenancy/admit_templates.c);
 * the golden cases (tests/unit/golden/admission/template*) hold the end-to-end answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "admit_testing.h"

#define MANIFESTS                                                                      \
	"\"resources\":{\"manifests\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"," \
	"\"metadata\":"                                                                \
	"{\"name\":\"c\"}}]}"

static int setup(void **state)
{
	*state = at_view(
	        "{\"templates\":["
	        "{\"metadata\":{\"name\":\"acme-only\"},\"spec\":{\"instantiableIn\":{"
	        "\"matchExpressions\":[{\"key\":\"landlord.dev/tenant\",\"operator\":\"In\","
	        "\"values\":[\"acme\"]}]}," MANIFESTS "}},"
	        "{\"metadata\":{\"name\":\"bogus\"},\"spec\":{\"instantiableIn\":{"
	        "\"matchExpressions\":[{\"key\":\"landlord.dev/"
	        "tenant\",\"operator\":\"Near\"}]}," MANIFESTS "}},"
	        "{\"metadata\":{\"name\":\"empty-labels\"},\"spec\":{\"instantiableIn\":"
	        "{\"matchLabels\":{}}," MANIFESTS "}}]}");
	return 0;
}

static int teardown(void **state)
{
	adm_memview_free(*state);
	return 0;
}

/* A TemplateInstance of @tmpl (NULL: no spec.template) in @ns by @user. */
static void ti(void **state, const char *op, const char *ns, const char *tmpl, const char *user,
               const char *extra, struct adm_decision *d)
{
	char req[2048], spec[256] = "{}";

	if (tmpl)
		snprintf(spec, sizeof(spec), "{\"template\":\"%s\"}", tmpl);
	snprintf(req, sizeof(req),
	         "{\"operation\":\"%s\",\"resource\":\"landlord.dev/templateinstances\","
	         "\"namespace\":\"%s\",\"name\":\"shop\",\"user\":\"%s\",\"object\":{\"metadata\":"
	         "{\"name\":\"shop\",\"namespace\":\"%s\"},\"spec\":%s}%s}",
	         op, ns, user, ns, spec, extra ? extra : "");
	at_decide(*state, req, d);
}

static void test_admit_templates__match_expressions_select_namespaces(void **state)
{
	struct adm_decision d;

	ti(state, "CREATE", "acme-dev", "acme-only", "bob", NULL, &d);
	assert_true(d.allowed);
	ti(state, "UPDATE", "globex-web", "acme-only", "gina", NULL, &d);
	assert_false(d.allowed);
	assert_int_equal(d.family, ADM_TEMPLATES);
	assert_string_equal(d.message, "TemplateInstance globex-web/shop: Template \"acme-only\" "
	                               "is not instantiable in namespace globex-web "
	                               "(spec.instantiableIn)");
}

static void test_admit_templates__a_selector_that_selects_nothing_refuses(void **state)
{
	struct adm_decision d;

	ti(state, "CREATE", "acme-dev", "empty-labels", "alice", NULL, &d);
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "(spec.instantiableIn selects no namespace)"));
	ti(state, "CREATE", "acme-dev", "bogus", "alice", NULL, &d);
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "is not instantiable in namespace acme-dev "
	                                  "(spec.instantiableIn: "));
	ti(state, "CREATE", "acme-dev", NULL, "alice", NULL, &d);
	assert_false(d.allowed);
	assert_string_equal(d.message,
	                    "TemplateInstance acme-dev/shop: spec.template must name a Template");
}

static void test_admit_templates__subresources_and_deletes_are_not_judged(void **state)
{
	struct adm_decision d;

	ti(state, "UPDATE", "acme-dev", "nope", "bob", ",\"subResource\":\"status\"", &d);
	assert_true(d.allowed);
	assert_string_equal(d.last_writer, "");
	ti(state, "DELETE", "acme-dev", "nope", "bob", NULL, &d);
	assert_true(d.allowed);
	assert_string_equal(d.last_writer, "");
}

static void test_admit_templates__landlord_and_components_keep_the_writer(void **state)
{
	const char *self = "system:serviceaccount:landlord-system:landlord";
	const char *forged = ",\"oldObject\":{\"metadata\":{\"annotations\":{"
	                     "\"landlord.dev/last-writer\":\"boss\"}}}";
	const char *owner = ",\"oldObject\":{\"metadata\":{\"annotations\":{"
	                    "\"landlord.dev/last-writer\":\"owner\"}}}";
	struct adm_decision d;

	ti(state, "CREATE", "acme-dev", "nope", self, NULL, &d);
	assert_true(d.allowed);
	assert_string_equal(d.last_writer, "privileged");
	ti(state, "UPDATE", "acme-dev", "nope", self, owner, &d);
	assert_string_equal(d.last_writer, "owner");
	ti(state, "UPDATE", "acme-dev", "nope", self, forged, &d);
	assert_string_equal(d.last_writer, "editor"); /* an unknown value is no writer */
	ti(state, "CREATE", "acme-dev", "acme-only", "system:kube-controller-manager", NULL, &d);
	assert_string_equal(d.last_writer, "editor");
	ti(state, "UPDATE", "acme-dev", "acme-only", "system:kube-controller-manager", owner, &d);
	assert_string_equal(d.last_writer, "owner");
	/* an owner of another tenant is an editor here */
	ti(state, "CREATE", "acme-dev", "acme-only", "gina", NULL, &d);
	assert_string_equal(d.last_writer, "editor");
}

static void test_admit_templates__template_names_are_quoted(void **state)
{
	struct adm_decision d;

	at_decide(*state,
	          "{\"operation\":\"CREATE\",\"resource\":\"landlord.dev/templates\",\"user\":"
	          "\"platform-admin\",\"object\":{\"metadata\":{\"name\":\"we\\u0001b\"},"
	          "\"spec\":{\"resources\":{\"manifests\":[{\"apiVersion\":\"v1\",\"kind\":"
	          "\"ConfigMap\",\"metadata\":{\"name\":\"${{X}}\"}}]}}}}",
	          &d);
	assert_false(d.allowed);
	assert_int_equal(d.family, ADM_TEMPLATES);
	assert_non_null(strstr(d.message, "Template \"we\\x01b\": "));
	assert_string_equal(d.last_writer, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_admit_templates__match_expressions_select_namespaces),
	        cmocka_unit_test(test_admit_templates__a_selector_that_selects_nothing_refuses),
	        cmocka_unit_test(test_admit_templates__subresources_and_deletes_are_not_judged),
	        cmocka_unit_test(test_admit_templates__landlord_and_components_keep_the_writer),
	        cmocka_unit_test(test_admit_templates__template_names_are_quoted),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
