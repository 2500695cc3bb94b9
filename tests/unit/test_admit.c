/* Unit tests for the admission decision core (src/tenancy/admit.c): requests, exemptions,
 * cordons, audit mode and warnings. The rules of each family have their own suites. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "admit_testing.h"

static int teardown(void **state)
{
	adm_memview_free(*state);
	return 0;
}

static int base(void **state)
{
	*state = at_view(NULL);
	return 0;
}

static void test_admit__family_names_round_trip(void **state)
{
	for (int f = 0; f < ADM_FAMILY_N; f++)
		assert_int_equal(adm_family_parse(adm_family_name(f)), f);
	assert_int_equal(adm_family_parse("pod"), -1);
	assert_int_equal(adm_family_parse(NULL), -1);
	assert_null(adm_family_name(ADM_FAMILY_N));
}

static int read_req(const char *text, struct adm_request *rq, struct jdoc **doc, struct ll_err *e)
{
	*doc = jd(text);
	return adm_request_read(jdoc_root(*doc), rq, e);
}

static void test_admit__request_read_takes_fields_and_refuses_bad_shapes(void **state)
{
	static const char *const bad[] = {
	        "[]",
	        "{\"operation\":\"PATCH\",\"resource\":{\"resource\":\"pods\"}}",
	        "{\"operation\":\"CREATE\"}",
	        "{\"operation\":\"CREATE\",\"resource\":{\"resource\":\"\"}}",
	        "{\"operation\":\"CREATE\",\"resource\":{\"resource\":\"pods\"},\"namespace\":1}",
	        ("{\"operation\":\"CREATE\",\"resource\":{\"resource\":\"pods\"},"
	         "\"userInfo\":{\"groups\":\"x\"}}"),
	};
	struct adm_request rq;
	struct jdoc *doc;
	struct ll_err err;

	assert_int_equal(read_req("{\"operation\":\"UPDATE\",\"resource\":{\"group\":\"apps\","
	                          "\"resource\":\"deployments\"},\"subResource\":\"scale\","
	                          "\"namespace\":\"a\",\"name\":\"b\",\"userInfo\":{\"username\":"
	                          "\"u\",\"groups\":[\"g\"]},\"object\":{},\"oldObject\":{}}",
	                          &rq, &doc, &err),
	                 0);
	assert_int_equal(rq.op, ADM_UPDATE);
	assert_string_equal(rq.group, "apps");
	assert_string_equal(rq.resource, "deployments");
	assert_string_equal(rq.subresource, "scale");
	assert_string_equal(rq.ns, "a");
	assert_string_equal(rq.name, "b");
	assert_string_equal(rq.username, "u");
	assert_int_equal(jval_size(rq.groups), 1);
	assert_int_equal(jval_type(rq.old_object), JT_OBJECT);
	jdoc_unref(doc);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(read_req(bad[i], &rq, &doc, &err), -EINVAL);
		assert_true(strlen(err.msg) > 0);
		jdoc_unref(doc);
	}
}

static const char bad_pod[] =
        "{\"operation\":\"CREATE\",\"resource\":\"pods\",\"namespace\":\"%s\",\"user\":\"%s\","
        "\"object\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"quay.io/x/y\"}]}}}";

static void decide_pod(struct adm_memview *mv, const char *ns, const char *user,
                       struct adm_decision *d)
{
	char req[512];

	snprintf(req, sizeof(req), bad_pod, ns, user);
	at_decide(mv, req, d);
}

static void test_admit__only_tenant_namespaces_and_unexempt_users_are_checked(void **state)
{
	struct adm_decision d;

	decide_pod(*state, "acme-dev", "alice", &d);
	assert_false(d.allowed);
	assert_int_equal(d.code, 403);
	assert_int_equal(d.family, ADM_PODS);
	decide_pod(*state, "other", "alice", &d);
	assert_true(d.allowed);
	/* a namespace the view does not know: the caches are behind the API server, retry */
	decide_pod(*state, "nowhere", "alice", &d);
	assert_false(d.allowed);
	assert_int_equal(d.code, 503);
	assert_string_equal(d.message,
	                    "namespace \"nowhere\" is not in landlord's caches yet (just "
	                    "created or labelled for a tenant): try again in a moment");
	decide_pod(*state, "nowhere", "system:serviceaccount:landlord-system:landlord", &d);
	assert_true(d.allowed);
	/* a Namespace being created is not cached by nature (by someone who owns no tenant: an
	 * owner may create only its tenants' namespaces) */
	at_decide(*state,
	          "{\"operation\":\"CREATE\",\"resource\":\"namespaces\",\"namespace\":"
	          "\"nowhere\",\"user\":\"ci-runner\",\"object\":{\"metadata\":{\"name\":"
	          "\"nowhere\"}}}",
	          &d);
	assert_true(d.allowed);
	decide_pod(*state, "acme-dev", "system:serviceaccount:landlord-system:landlord", &d);
	assert_true(d.allowed);
	decide_pod(*state, "acme-dev", "platform-admin", &d);
	assert_true(d.allowed);
	/* the cluster's components are not exempt from the pod rules */
	decide_pod(*state, "acme-dev", "system:kube-controller-manager", &d);
	assert_false(d.allowed);
	assert_string_equal(d.warnings[0], "");
}

static void test_admit__system_components_pass_the_other_rules_and_cordons(void **state)
{
	struct adm_decision d;

	at_decide(
	        *state,
	        "{\"operation\":\"CREATE\",\"resource\":\"services\",\"namespace\":\"frozen-app\","
	        "\"user\":\"x\",\"groups\":[\"system:nodes\"],\"object\":{\"spec\":{}}}",
	        &d);
	assert_true(d.allowed);
	at_decide(*state,
	          "{\"operation\":\"CREATE\",\"resource\":\"services\",\"namespace\":\"acme-dev\","
	          "\"user\":\"system:kube-controller-manager\",\"object\":{\"spec\":"
	          "{\"type\":\"NodePort\"}}}",
	          &d);
	assert_true(d.allowed);
}

static void test_admit__cordon_spares_events_status_and_connect(void **state)
{
	static const char *const passing[] = {
	        "{\"operation\":\"CREATE\",\"resource\":\"events.k8s.io/events\"",
	        "{\"operation\":\"UPDATE\",\"resource\":\"pods\",\"subResource\":\"status\"",
	        "{\"operation\":\"CONNECT\",\"resource\":\"pods\",\"subResource\":\"exec\"",
	};
	struct adm_decision d;
	char req[512];

	for (size_t i = 0; i < sizeof(passing) / sizeof(passing[0]); i++) {
		snprintf(req, sizeof(req), "%s,\"namespace\":\"frozen-app\",\"user\":\"fred\"}",
		         passing[i]);
		at_decide(*state, req, &d);
		assert_true(d.allowed);
	}
	at_decide(*state,
	          "{\"operation\":\"DELETE\",\"resource\":\"namespaces\",\"namespace\":"
	          "\"frozen-app\",\"name\":\"frozen-app\",\"user\":\"fred\"}",
	          &d);
	assert_false(d.allowed);
	assert_int_equal(d.family, ADM_CORDON);
}

static void test_admit__cordon_label_needs_true(void **state)
{
	struct adm_memview *mv = at_view(
	        "{\"namespaces\":[{\"metadata\":{\"name\":\"acme-dev\",\"labels\":{"
	        "\"landlord.dev/tenant\":\"acme\",\"landlord.dev/cordoned\":\"false\"}}}]}");
	struct adm_decision d;

	at_decide(
	        mv,
	        "{\"operation\":\"CREATE\",\"resource\":\"configmaps\",\"namespace\":\"acme-dev\","
	        "\"user\":\"alice\",\"object\":{}}",
	        &d);
	assert_true(d.allowed);
	adm_memview_free(mv);
}

static void test_admit__audit_admits_with_one_warning_per_finding(void **state)
{
	struct adm_memview *mv =
	        at_view("{\"config\":{\"spec\":{\"admission\":{\"modes\":{\"pods\":\"audit\"}}}}}");
	struct adm_decision d;

	at_decide(mv,
	          "{\"operation\":\"CREATE\",\"resource\":\"pods\",\"namespace\":\"acme-dev\","
	          "\"user\":\"alice\",\"object\":{\"spec\":{\"containers\":[{\"name\":\"a\","
	          "\"image\":\"quay.io/x/y\",\"imagePullPolicy\":\"Never\"}],"
	          "\"serviceAccountName\":\"builder\"}}}",
	          &d);
	assert_true(d.allowed);
	assert_int_equal(d.code, 0);
	assert_string_equal(d.message, "");
	assert_int_equal(d.audited, 1u << ADM_PODS);
	assert_int_equal(d.n_warnings, 3);
	assert_memory_equal(d.warnings[0], "audit: image \"quay.io/x/y\"", 26);
	assert_memory_equal(d.warnings[2], "audit: service account \"builder\"", 32);
	adm_memview_free(mv);
}

static void test_admit__warnings_past_the_cap_are_counted(void **state)
{
	struct adm_memview *mv =
	        at_view("{\"config\":{\"spec\":{\"admission\":{\"modes\":{\"pods\":\"audit\"}}}}}");
	struct adm_decision d;
	char req[4096], *p = req;

	p += snprintf(p, sizeof(req),
	              "{\"operation\":\"CREATE\",\"resource\":\"pods\","
	              "\"namespace\":\"acme-dev\",\"user\":\"alice\",\"object\":"
	              "{\"spec\":{\"containers\":[");
	for (int i = 0; i < 11; i++)
		p += snprintf(p, (size_t)(req + sizeof(req) - p),
		              "%s{\"name\":\"c%d\",\"image\":"
		              "\"quay.io/x/%d\",\"imagePullPolicy\":\"IfNotPresent\"}",
		              i ? "," : "", i, i);
	snprintf(p, (size_t)(req + sizeof(req) - p), "]}}}");
	at_decide(mv, req, &d);
	assert_true(d.allowed);
	assert_int_equal(d.n_warnings, ADM_WARNINGS_MAX);
	assert_int_equal(d.dropped_warnings, 11 - ADM_WARNINGS_MAX);
	adm_memview_free(mv);
}

static void test_admit__every_finding_of_an_audited_family_is_reported(void **state)
{
	struct adm_memview *mv = at_view(
	        "{\"config\":{\"spec\":{\"admission\":{\"modes\":{\"ingress\":\"audit\"}}}}}");
	struct adm_decision d;

	at_decide(
	        mv,
	        "{\"operation\":\"CREATE\",\"resource\":\"gateway.networking.k8s.io/gateways\","
	        "\"namespace\":\"acme-dev\",\"user\":\"alice\",\"object\":{\"metadata\":{\"name\":"
	        "\"gw\"},\"spec\":{\"gatewayClassName\":\"istio\",\"listeners\":[{\"hostname\":"
	        "\"x.evil.com\"}]}}}",
	        &d);
	assert_true(d.allowed);
	assert_int_equal(d.n_warnings, 2);
	assert_int_equal(d.audited, 1u << ADM_INGRESS);
	adm_memview_free(mv);
}

static void test_admit__a_denial_after_an_audit_keeps_the_warning(void **state)
{
	struct adm_memview *mv = at_view(
	        "{\"config\":{\"spec\":{\"admission\":{\"modes\":{\"cordon\":\"audit\"}}}}}");
	struct adm_decision d;

	decide_pod(mv, "acme-quiet", "alice", &d);
	assert_false(d.allowed);
	assert_int_equal(d.family, ADM_PODS);
	assert_int_equal(d.audited, 1u << ADM_CORDON);
	assert_int_equal(d.n_warnings, 1);
	assert_memory_equal(d.warnings[0], "audit: namespace \"acme-quiet\"", 29);
	adm_memview_free(mv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_admit__family_names_round_trip),
	        cmocka_unit_test(test_admit__request_read_takes_fields_and_refuses_bad_shapes),
	        cmocka_unit_test_setup_teardown(
	                test_admit__only_tenant_namespaces_and_unexempt_users_are_checked, base,
	                teardown),
	        cmocka_unit_test_setup_teardown(
	                test_admit__system_components_pass_the_other_rules_and_cordons, base,
	                teardown),
	        cmocka_unit_test_setup_teardown(test_admit__cordon_spares_events_status_and_connect,
	                                        base, teardown),
	        cmocka_unit_test(test_admit__cordon_label_needs_true),
	        cmocka_unit_test(test_admit__audit_admits_with_one_warning_per_finding),
	        cmocka_unit_test(test_admit__warnings_past_the_cap_are_counted),
	        cmocka_unit_test(test_admit__every_finding_of_an_audited_family_is_reported),
	        cmocka_unit_test(test_admit__a_denial_after_an_audit_keeps_the_warning),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
