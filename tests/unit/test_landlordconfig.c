/* test_landlordconfig.c - LandlordConfig parsing, validation, queries and round trips. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tenancy/landlordconfig.h"

static json_t *load(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	if (j == NULL)
		fail_msg("bad test JSON: %s", jerr.text);
	return j;
}

/* Parse {"spec": <spec_text>} and insist it is valid. */
static struct lcfg *parse_ok(const char *spec_text)
{
	json_t *obj = json_pack("{s:o}", "spec", load(spec_text)), *invalid = NULL;
	struct lcfg *cfg = NULL;

	if (lcfg_parse(obj, &cfg, &invalid) != 0) {
		char *s = json_dumps(invalid, 0);

		fail_msg("lcfg_parse: %s", s);
	}
	assert_null(invalid);
	json_decref(obj);
	return cfg;
}

/* Parse {"spec": <spec_text>} and return the problems it must have. */
static json_t *parse_bad(const char *spec_text)
{
	json_t *obj = json_pack("{s:o}", "spec", load(spec_text)), *invalid = NULL;
	struct lcfg *cfg = (struct lcfg *)&cfg;

	assert_int_equal(lcfg_parse(obj, &cfg, &invalid), -EINVAL);
	assert_null(cfg);
	assert_non_null(invalid);
	json_decref(obj);
	return invalid;
}

/* The message reported for @field, or NULL. */
static const char *problem(const json_t *invalid, const char *field)
{
	const json_t *e;
	size_t i;

	json_array_foreach(invalid, i, e)
		if (strcmp(json_string_value(json_object_get(e, "field")), field) == 0)
			return json_string_value(json_object_get(e, "message"));
	return NULL;
}

static void assert_problem(const json_t *invalid, const char *field, const char *contains)
{
	const char *msg = problem(invalid, field);

	if (msg == NULL || strstr(msg, contains) == NULL)
		fail_msg("%s: expected a message containing \"%s\", got %s", field, contains,
		         msg != NULL ? msg : "nothing");
}

static bool user_privileged(const struct lcfg *cfg, const char *user)
{
	return lcfg_is_privileged_user(cfg, user, NULL, 0);
}

static void test_landlordconfig__defaults_without_an_object(void **state)
{
	struct lcfg *cfg = NULL, *d = lcfg_defaults();
	json_t *invalid = (json_t *)&invalid, *a, *b;
	const char *owner, *editor, *viewer;
	const char *const *names;
	struct lcfg_prices prices;
	size_t n;

	assert_int_equal(lcfg_parse(NULL, &cfg, &invalid), 0);
	assert_null(invalid);
	lcfg_roles_for_namespace(cfg, NULL, &owner, &editor, &viewer);
	assert_string_equal(owner, "admin");
	assert_string_equal(editor, "edit");
	assert_string_equal(viewer, "view");
	lcfg_role_names(cfg, &names, &n);
	assert_int_equal(n, 3);
	assert_string_equal(names[0], "admin");
	assert_string_equal(names[1], "edit");
	assert_string_equal(names[2], "view");
	assert_string_equal(lcfg_default_pod_security(cfg), "restricted");
	assert_true(lcfg_default_network_isolation(cfg));
	assert_int_equal(json_object_size(lcfg_namespace_labels(cfg)), 0);
	assert_int_equal(json_object_size(lcfg_namespace_annotations(cfg)), 0);
	assert_null(lcfg_argocd(cfg));
	assert_false(user_privileged(cfg, "alice"));
	assert_false(lcfg_is_privileged_namespace(cfg, "kube-system"));
	lcfg_showback(cfg, &prices);
	assert_string_equal(prices.currency, "USD");
	assert_int_equal(prices.cpu_core_hour, 0);
	/* No spec at all and lcfg_defaults() are the same configuration. */
	a = lcfg_to_json(cfg);
	b = lcfg_to_json(d);
	assert_true(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	lcfg_unref(cfg);
	lcfg_unref(d);
}

static const char *full_spec =
        "{\"tenantRoles\":{\"default\":{\"owner\":\"tenant-owner\",\"editor\":\"tenant-edit\","
        "\"viewer\":\"tenant-view\"},\"custom\":[{\"labelSelector\":{\"matchLabels\":"
        "{\"stage\":\"prod\"}},\"owner\":\"prod-owner\"},{\"labelSelector\":{\"matchExpressions\""
        ":[{\"key\":\"stage\",\"operator\":\"Exists\"}]},\"owner\":\"staged-owner\",\"viewer\":"
        "\"system:aggregate-to-view\"}]},"
        "\"privileged\":{\"namespaces\":[\"kube-.*\",\"openshift-.*\"],\"users\":[\"alice\","
        "\"admin-[0-9]+\"],\"groups\":[\"team-.*\"],\"serviceAccounts\":[\"argocd:.*\"]},"
        "\"namespaceMetadata\":{\"labels\":{\"company.io/managed\":\"yes\"},\"annotations\":"
        "{\"company.io/owner\":\"platform team\"}},"
        "\"defaults\":{\"podSecurity\":\"baseline\",\"networkIsolation\":false},"
        "\"integrations\":{\"argocd\":{\"namespace\":\"argocd\",\"clusterResourceWhitelist\":"
        "[{\"group\":\"\",\"kind\":\"Namespace\"}],\"namespaceResourceBlacklist\":[]}},"
        "\"showback\":{\"currency\":\"EUR\",\"cpuCoreHour\":\"0.031\",\"memoryGiBHour\":"
        "\"0.004\",\"storageGiBMonth\":\"12\"}}";

static void test_landlordconfig__full_config(void **state)
{
	struct lcfg *cfg = parse_ok(full_spec);
	const char *const *names;
	struct lcfg_prices prices;
	const char *owner;
	size_t n;

	lcfg_roles_for_namespace(cfg, NULL, &owner, NULL, NULL);
	assert_string_equal(owner, "tenant-owner");
	lcfg_role_names(cfg, &names, &n);
	/* tenant-{owner,edit,view}, prod-owner, staged-owner, system:aggregate-to-view. */
	assert_int_equal(n, 6);
	assert_string_equal(names[0], "prod-owner");
	assert_string_equal(names[5], "tenant-view");
	assert_true(lcfg_is_privileged_namespace(cfg, "kube-system"));
	assert_false(lcfg_is_privileged_namespace(cfg, "default"));
	assert_true(user_privileged(cfg, "admin-42"));
	assert_string_equal(lcfg_default_pod_security(cfg), "baseline");
	assert_false(lcfg_default_network_isolation(cfg));
	assert_string_equal(json_string_value(json_object_get(lcfg_namespace_labels(cfg),
	                                                      "company.io/managed")),
	                    "yes");
	assert_string_equal(json_string_value(json_object_get(lcfg_namespace_annotations(cfg),
	                                                      "company.io/owner")),
	                    "platform team");
	assert_string_equal(json_string_value(json_object_get(lcfg_argocd(cfg), "namespace")),
	                    "argocd");
	assert_int_equal(
	        json_array_size(json_object_get(lcfg_argocd(cfg), "clusterResourceWhitelist")), 1);
	lcfg_showback(cfg, &prices);
	assert_string_equal(prices.currency, "EUR");
	assert_int_equal(prices.cpu_core_hour, 31000);
	assert_int_equal(prices.memory_gib_hour, 4000);
	assert_int_equal(prices.storage_gib_month, 12 * (int64_t)LCFG_MICROS);
	lcfg_unref(cfg);
}

static void test_landlordconfig__every_problem_is_reported(void **state)
{
	json_t *invalid = parse_bad(
	        "{\"tenantRoles\":{\"default\":{\"owner\":\"a/"
	        "b\",\"editor\":7},\"custom\":[{\"owner\""
	        ":\"x\"},{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"k\",\"operator\":"
	        "\"Near\"}]}}]},"
	        "\"privileged\":{\"users\":[\"ok\",\"fine\",\"a(b\"],\"groups\":\"team\","
	        "\"namespaces\":[\"[z-a]\"]},"
	        "\"namespaceMetadata\":{\"labels\":{\"bad key!\":\"v\",\"k\":\"-bad-\"}},"
	        "\"defaults\":{\"podSecurity\":\"lax\",\"networkIsolation\":\"yes\"},"
	        "\"integrations\":{\"argocd\":{\"namespace\":1,\"clusterResourceWhitelist\":{}}},"
	        "\"showback\":{\"currency\":\"usd\",\"cpuCoreHour\":\"1.2.3\",\"memoryGiBHour\":0."
	        "5}}");

	assert_problem(invalid, "spec.tenantRoles.default.owner", "invalid ClusterRole name");
	assert_problem(invalid, "spec.tenantRoles.default.editor", "must be a string");
	assert_problem(invalid, "spec.tenantRoles.custom[0].labelSelector", "is required");
	assert_non_null(problem(invalid, "spec.tenantRoles.custom[1].labelSelector"));
	assert_problem(invalid, "spec.privileged.users[2]",
	               "invalid regular expression at offset 3: missing closing parenthesis");
	assert_problem(invalid, "spec.privileged.groups", "must be an array");
	assert_problem(invalid, "spec.privileged.namespaces[0]", "invalid regular expression");
	assert_problem(invalid, "spec.namespaceMetadata.labels[bad key!]", "invalid key");
	assert_problem(invalid, "spec.namespaceMetadata.labels[k]", "invalid label value");
	assert_problem(invalid, "spec.defaults.podSecurity", "must be one of");
	assert_problem(invalid, "spec.defaults.networkIsolation", "must be a boolean");
	assert_problem(invalid, "spec.integrations.argocd.namespace", "must be a string");
	assert_problem(invalid, "spec.integrations.argocd.clusterResourceWhitelist",
	               "must be an array");
	assert_problem(invalid, "spec.showback.currency", "ISO 4217");
	assert_problem(invalid, "spec.showback.cpuCoreHour", "invalid price \"1.2.3\"");
	assert_problem(invalid, "spec.showback.memoryGiBHour", "must be a string");
	assert_int_equal(json_array_size(invalid), 16);
	json_decref(invalid);
}

static void test_landlordconfig__wrong_shapes_are_reported(void **state)
{
	json_t *obj = load("[1]"), *invalid = NULL;
	struct lcfg *cfg = NULL;

	assert_int_equal(lcfg_parse(obj, &cfg, &invalid), -EINVAL);
	assert_problem(invalid, "", "must be a LandlordConfig object");
	json_decref(invalid);
	json_decref(obj);
	obj = load("{\"spec\":\"x\"}");
	assert_int_equal(lcfg_parse(obj, &cfg, NULL), -EINVAL);
	assert_null(cfg);
	json_decref(obj);
	invalid = parse_bad("{\"privileged\":[],\"showback\":1}");
	assert_problem(invalid, "spec.privileged", "must be an object");
	assert_problem(invalid, "spec.showback", "must be an object");
	json_decref(invalid);
}

static void test_landlordconfig__slow_pattern_gives_up_quickly(void **state)
{
	struct lcfg *cfg = parse_ok("{\"privileged\":{\"users\":[\"(a+)+$\",\"(a|aa)*c\"]}}");
	char subject[4096];
	struct timespec t0, t1;
	long long ms;

	memset(subject, 'a', sizeof(subject) - 2);
	subject[sizeof(subject) - 2] = 'b';
	subject[sizeof(subject) - 1] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_false(user_privileged(cfg, subject));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000LL + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	/* Unbounded backtracking over 4094 characters would outlast the universe. */
	assert_true(ms < 5000);
	/* The same patterns still match what they describe. */
	assert_true(user_privileged(cfg, "aaaa"));
	assert_true(user_privileged(cfg, "aaac"));
	lcfg_unref(cfg);
}

static void test_landlordconfig__patterns_are_anchored(void **state)
{
	struct lcfg *cfg =
	        parse_ok("{\"privileged\":{\"users\":[\"alice\"],\"groups\":[\"team-.*\"],"
	                 "\"namespaces\":[\"a|b\"]}}");
	const char *groups[] = {"devs", "team-a"};

	assert_true(user_privileged(cfg, "alice"));
	assert_false(user_privileged(cfg, "malice"));
	assert_false(user_privileged(cfg, "alice2"));
	assert_false(user_privileged(cfg, "alice\n"));
	assert_false(user_privileged(cfg, NULL));
	assert_true(lcfg_is_privileged_user(cfg, "bob", groups, 2));
	assert_false(lcfg_is_privileged_user(cfg, "bob", groups, 1));
	groups[1] = "my-team-a";
	assert_false(lcfg_is_privileged_user(cfg, "bob", groups, 2));
	/* Alternation is anchored as a whole: ^(?:a|b)$. */
	assert_true(lcfg_is_privileged_namespace(cfg, "b"));
	assert_false(lcfg_is_privileged_namespace(cfg, "ab"));
	assert_false(lcfg_is_privileged_namespace(cfg, "xb"));
	/* Invalid UTF-8 matches nothing. */
	assert_false(user_privileged(cfg, "alice\xff"));
	lcfg_unref(cfg);
}

static void test_landlordconfig__patterns_cannot_escape_the_anchors(void **state)
{
	json_t *invalid = parse_bad("{\"privileged\":{\"users\":[\"a)|(.*\"]}}");

	assert_problem(invalid, "spec.privileged.users[0]", "invalid regular expression");
	json_decref(invalid);
}

static void test_landlordconfig__service_accounts_match_namespace_colon_name(void **state)
{
	struct lcfg *cfg = parse_ok("{\"privileged\":{\"serviceAccounts\":[\"argocd:.*\","
	                            "\"kube-system:builder\"]}}");

	assert_true(user_privileged(cfg, "system:serviceaccount:argocd:app-controller"));
	assert_true(user_privileged(cfg, "system:serviceaccount:kube-system:builder"));
	assert_false(user_privileged(cfg, "system:serviceaccount:kube-system:other"));
	assert_false(user_privileged(cfg, "system:serviceaccount:argocd"));
	/* Only service-account usernames are matched against serviceAccounts. */
	assert_false(user_privileged(cfg, "argocd:app-controller"));
	assert_false(user_privileged(cfg, "system:serviceaccounts:argocd:x"));
	lcfg_unref(cfg);
}

static void test_landlordconfig__custom_roles_first_match_wins(void **state)
{
	struct lcfg *cfg = parse_ok(
	        "{\"tenantRoles\":{\"default\":{\"viewer\":\"tenant-view\"},\"custom\":["
	        "{\"labelSelector\":{\"matchLabels\":{\"stage\":\"prod\"}},\"owner\":\"prod-"
	        "admin\","
	        "\"editor\":\"\"},"
	        "{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"stage\",\"operator\":"
	        "\"Exists\"}]},\"owner\":\"staged-admin\",\"editor\":\"staged-edit\"}]}}");
	json_t *prod = load("{\"stage\":\"prod\"}"), *dev = load("{\"stage\":\"dev\"}");
	json_t *other = load("{\"team\":\"x\"}");
	const char *owner, *editor, *viewer;

	lcfg_roles_for_namespace(cfg, prod, &owner, &editor, &viewer);
	assert_string_equal(owner, "prod-admin");
	assert_string_equal(editor, "edit");        /* empty: the default's */
	assert_string_equal(viewer, "tenant-view"); /* absent: the default's */
	lcfg_roles_for_namespace(cfg, dev, &owner, &editor, &viewer);
	assert_string_equal(owner, "staged-admin");
	assert_string_equal(editor, "staged-edit");
	assert_string_equal(viewer, "tenant-view");
	lcfg_roles_for_namespace(cfg, other, &owner, &editor, &viewer);
	assert_string_equal(owner, "admin");
	assert_string_equal(editor, "edit");
	lcfg_roles_for_namespace(cfg, NULL, &owner, NULL, NULL);
	assert_string_equal(owner, "admin");
	json_decref(prod);
	json_decref(dev);
	json_decref(other);
	lcfg_unref(cfg);
}

static void test_landlordconfig__reserved_and_invalid_metadata_keys(void **state)
{
	json_t *invalid =
	        parse_bad("{\"namespaceMetadata\":{\"labels\":{\"landlord.dev/tenant\":\"x\","
	                  "\"ok.io/fine\":\"x\",\"sub.landlord.dev/x\":\"y\","
	                  "\"Upper.io/x\":\"y\"},\"annotations\":{\"landlord.dev/a\":\"b\","
	                  "\"notlandlord.dev/a\":\"b\"}}}");

	assert_problem(invalid, "spec.namespaceMetadata.labels[landlord.dev/tenant]", "reserved");
	assert_problem(invalid, "spec.namespaceMetadata.labels[sub.landlord.dev/x]", "reserved");
	assert_problem(invalid, "spec.namespaceMetadata.labels[Upper.io/x]",
	               "prefix part a lowercase RFC 1123 subdomain");
	assert_problem(invalid, "spec.namespaceMetadata.annotations[landlord.dev/a]", "reserved");
	assert_int_equal(json_array_size(invalid), 4);
	json_decref(invalid);
}

static void test_landlordconfig__prices_are_exact(void **state)
{
	static const struct {
		const char *text;
		int64_t micros;
	} good[] = {
	        {"0.031", 31000},
	        {"0", 0},
	        {"12", 12000000},
	        {"1.5", 1500000},
	        {"0.000001", 1},
	        {"007.10", 7100000},
	        {"1000000000000", LCFG_PRICE_MAX_MICROS},
	};
	static const char *const bad_prices[] = {"1.2.3",
	                                         "",
	                                         ".5",
	                                         "1.",
	                                         "-1",
	                                         "1e3",
	                                         "0.0000001",
	                                         " 1",
	                                         "1000000000000.000001",
	                                         "99999999999999999999"};
	struct lcfg_prices prices;
	char spec[256];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(*good); i++) {
		struct lcfg *cfg;

		snprintf(spec, sizeof(spec), "{\"showback\":{\"storageGiBMonth\":\"%s\"}}",
		         good[i].text);
		cfg = parse_ok(spec);
		lcfg_showback(cfg, &prices);
		assert_int_equal(prices.storage_gib_month, good[i].micros);
		lcfg_unref(cfg);
	}
	for (i = 0; i < sizeof(bad_prices) / sizeof(*bad_prices); i++) {
		json_t *invalid;

		snprintf(spec, sizeof(spec), "{\"showback\":{\"cpuCoreHour\":\"%s\"}}",
		         bad_prices[i]);
		invalid = parse_bad(spec);
		assert_problem(invalid, "spec.showback.cpuCoreHour", "invalid price");
		json_decref(invalid);
	}
}

static void test_landlordconfig__round_trips_through_json(void **state)
{
	struct lcfg *cfg = parse_ok(full_spec), *again = NULL;
	json_t *first = lcfg_to_json(cfg), *second, *invalid = NULL;
	const char *owner;

	assert_string_equal(json_string_value(json_object_get(first, "kind")), "LandlordConfig");
	assert_string_equal(json_string_value(json_object_get(
	                            json_object_get(json_object_get(first, "spec"), "showback"),
	                            "cpuCoreHour")),
	                    "0.031");
	assert_int_equal(lcfg_parse(first, &again, &invalid), 0);
	second = lcfg_to_json(again);
	assert_true(json_equal(first, second));
	/* The copy is the caller's: changing it leaves the configuration alone. */
	json_object_del(first, "spec");
	lcfg_roles_for_namespace(again, NULL, &owner, NULL, NULL);
	assert_string_equal(owner, "tenant-owner");
	assert_true(lcfg_is_privileged_user(again, "alice", NULL, 0));
	json_decref(first);
	json_decref(second);
	lcfg_unref(cfg);
	lcfg_unref(again);
}

static void test_landlordconfig__references_outlive_the_input(void **state)
{
	json_t *obj = json_pack("{s:o}", "spec", load(full_spec));
	struct lcfg *cfg = NULL, *extra;
	const json_t *labels;

	assert_int_equal(lcfg_parse(obj, &cfg, NULL), 0);
	json_decref(obj);
	extra = lcfg_ref(cfg);
	assert_ptr_equal(extra, cfg);
	lcfg_unref(cfg);
	/* Still alive through the second reference; ASan reports any use after free or leak. */
	labels = lcfg_namespace_labels(extra);
	assert_int_equal(json_object_size(labels), 1);
	assert_true(lcfg_is_privileged_namespace(extra, "kube-public"));
	lcfg_unref(extra);
	lcfg_unref(NULL);
}

static void *query_loop(void *arg)
{
	struct lcfg *cfg = lcfg_ref(arg);
	const char *owner;
	int i;

	for (i = 0; i < 2000; i++) {
		struct lcfg *r = lcfg_ref(cfg);

		lcfg_roles_for_namespace(r, NULL, &owner, NULL, NULL);
		if (!lcfg_is_privileged_user(r, "alice", NULL, 0) ||
		    strcmp(owner, "tenant-owner") != 0)
			return arg;
		lcfg_unref(r);
	}
	lcfg_unref(cfg);
	return NULL;
}

static void test_landlordconfig__shared_between_threads(void **state)
{
	struct lcfg *cfg = parse_ok(full_spec);
	pthread_t threads[4];
	void *failed;
	size_t i;

	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, query_loop, cfg), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(threads[i], &failed), 0);
		assert_null(failed);
	}
	/* Every thread dropped what it took: this is the last reference (ASan checks the free). */
	lcfg_unref(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_landlordconfig__defaults_without_an_object),
	        cmocka_unit_test(test_landlordconfig__full_config),
	        cmocka_unit_test(test_landlordconfig__every_problem_is_reported),
	        cmocka_unit_test(test_landlordconfig__wrong_shapes_are_reported),
	        cmocka_unit_test(test_landlordconfig__slow_pattern_gives_up_quickly),
	        cmocka_unit_test(test_landlordconfig__patterns_are_anchored),
	        cmocka_unit_test(test_landlordconfig__patterns_cannot_escape_the_anchors),
	        cmocka_unit_test(test_landlordconfig__service_accounts_match_namespace_colon_name),
	        cmocka_unit_test(test_landlordconfig__custom_roles_first_match_wins),
	        cmocka_unit_test(test_landlordconfig__reserved_and_invalid_metadata_keys),
	        cmocka_unit_test(test_landlordconfig__prices_are_exact),
	        cmocka_unit_test(test_landlordconfig__round_trips_through_json),
	        cmocka_unit_test(test_landlordconfig__references_outlive_the_input),
	        cmocka_unit_test(test_landlordconfig__shared_between_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
