/*
 * test_landlordconfig_ctl.c - the configuration in force (config/current.c) and the
 * LandlordConfig controller: its pure helpers (landlordconfig_ctl_internal.h), the controller
 * in the real manager against the fake API server (tests/fake) and, when LANDLORD_TEST_KUBECONFIG
 * names a cluster-admin kubeconfig of a cluster with deploy/crds applied, the controller in a real
 * manager.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "live.h"

#include "base/clock.h"
#include "base/metrics.h"
#include "fake_manager.h"
#include "kube/conditions.h"
#include "kube/kubeconfig.h"
#include "tenancy/landlordconfig_current.h"

#include "base/json.h"
#include "controllers/controllers.h"
#include "controllers/landlordconfig_ctl_internal.h"

static json_t *load(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	if (j == NULL)
		fail_msg("bad test JSON: %s", jerr.text);
	return j;
}

/* A valid configuration built from a spec. */
static struct lcfg *config(const char *spec_text)
{
	json_t *obj = json_pack("{s:o}", "spec", load(spec_text));
	struct lcfg *cfg = NULL;

	assert_int_equal(lcfg_parse(obj, &cfg, NULL), 0);
	json_decref(obj);
	return cfg;
}

static bool same(const struct lcfg *a, const struct lcfg *b)
{
	json_t *ja = lcfg_to_json(a), *jb = lcfg_to_json(b);
	bool eq = json_equal(ja, jb);

	json_decref(ja);
	json_decref(jb);
	return eq;
}

/* ---- current.c ---- */

static int calls;

static void count_call(void *ud)
{
	(*(int *)ud)++;
}

static int reset(void **state)
{
	lcfg_current_reset();
	calls = 0;
	return 0;
}

static void test_landlordconfig_ctl__current_is_the_defaults_until_an_install(void **state)
{
	struct lcfg *cur = lcfg_current(), *dflt = lcfg_defaults();

	assert_non_null(cur);
	assert_true(same(cur, dflt));
	lcfg_unref(cur);
	lcfg_unref(dflt);
}

static void test_landlordconfig_ctl__install_is_a_change_only_when_the_config_differs(void **state)
{
	struct lcfg *a = config("{\"defaults\":{\"podSecurity\":\"baseline\"}}");
	struct lcfg *a2 = config("{\"defaults\":{\"podSecurity\":\"baseline\"}}");
	struct lcfg *dflt = lcfg_defaults(), *cur;

	assert_int_equal(lcfg_subscribe(count_call, &calls), 0);
	/* The defaults are in force: installing them again is no change. */
	assert_false(lcfg_install(dflt));
	assert_int_equal(calls, 0);
	assert_true(lcfg_install(a));
	assert_int_equal(calls, 1);
	/* Another object with the same content: no change, no notification... */
	assert_false(lcfg_install(a2));
	assert_int_equal(calls, 1);
	/* ...but it is the one in force now (install took its own reference). */
	lcfg_unref(a2);
	cur = lcfg_current();
	assert_ptr_equal(cur, a2);
	assert_string_equal(lcfg_default_pod_security(cur), "baseline");
	lcfg_unref(cur);
	assert_true(lcfg_install(dflt));
	assert_int_equal(calls, 2);
	lcfg_unref(a);
	lcfg_unref(dflt);
}

static void
test_landlordconfig_ctl__every_subscriber_is_notified_and_their_number_capped(void **state)
{
	int counts[LCFG_MAX_SUBSCRIBERS] = {0};
	struct lcfg *a = config("{\"defaults\":{\"networkIsolation\":false}}");
	int i;

	for (i = 0; i < LCFG_MAX_SUBSCRIBERS; i++)
		assert_int_equal(lcfg_subscribe(count_call, &counts[i]), 0);
	assert_int_equal(lcfg_subscribe(count_call, &calls), -ENOSPC);
	assert_true(lcfg_install(a));
	for (i = 0; i < LCFG_MAX_SUBSCRIBERS; i++)
		assert_int_equal(counts[i], 1);
	assert_int_equal(calls, 0);
	lcfg_unref(a);
}

static void test_landlordconfig_ctl__reset_restores_the_defaults_and_drops_subscribers(void **state)
{
	struct lcfg *a = config("{\"defaults\":{\"networkIsolation\":false}}");
	struct lcfg *cur;

	assert_int_equal(lcfg_subscribe(count_call, &calls), 0);
	assert_true(lcfg_install(a));
	lcfg_current_reset();
	cur = lcfg_current();
	assert_true(lcfg_default_network_isolation(cur));
	lcfg_unref(cur);
	assert_true(lcfg_install(a));
	assert_int_equal(calls, 1); /* only the install before the reset notified */
	lcfg_unref(a);
}

struct race {
	struct lcfg *cfgs[2];
	int rounds;
};

static void *read_loop(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < r->rounds; i++) {
		struct lcfg *cur = lcfg_current();
		const char *ps = lcfg_default_pod_security(cur);

		if (strcmp(ps, "baseline") != 0 && strcmp(ps, "privileged") != 0 &&
		    strcmp(ps, "restricted") != 0)
			return (void *)1;
		lcfg_unref(cur);
	}
	return NULL;
}

/* Readers keep their reference while installs replace the configuration (ASan watches). */
static void
test_landlordconfig_ctl__readers_keep_their_config_while_installs_replace_it(void **state)
{
	struct race r = {
	        .cfgs = {config("{\"defaults\":{\"podSecurity\":\"baseline\"}}"),
	                 config("{\"defaults\":{\"podSecurity\":\"privileged\"}}")},
	        .rounds = 20000,
	};
	pthread_t readers[3];
	void *res;
	int i;

	assert_int_equal(lcfg_subscribe(count_call, &calls), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&readers[i], NULL, read_loop, &r), 0);
	for (i = 0; i < 2000; i++)
		assert_true(lcfg_install(r.cfgs[i % 2]));
	for (i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(readers[i], &res), 0);
		assert_null(res);
	}
	assert_int_equal(calls, 2000);
	lcfg_unref(r.cfgs[0]);
	lcfg_unref(r.cfgs[1]);
}

/* ---- the controller's helpers ---- */

static json_t *problems(size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++) {
		char field[64];

		snprintf(field, sizeof(field), "spec.privileged.users[%zu]", i);
		json_array_append_new(arr, json_pack("{s:s,s:s}", "field", field, "message",
		                                     "invalid regular expression"));
	}
	return arr;
}

static void
test_landlordconfig_ctl__summary_names_the_first_problems_and_counts_the_rest(void **state)
{
	json_t *one = problems(1), *five = problems(5);
	char *s1 = lcfgctl_invalid_summary(one), *s5 = lcfgctl_invalid_summary(five);

	assert_string_equal(s1, "1 problem: spec.privileged.users[0]: invalid regular expression");
	assert_string_equal(s5, "5 problems: spec.privileged.users[0]: invalid regular expression; "
	                        "spec.privileged.users[1]: invalid regular expression; "
	                        "spec.privileged.users[2]: invalid regular expression; and 2 "
	                        "more in status.invalid");
	free(s1);
	free(s5);
	json_decref(one);
	json_decref(five);
}

static void test_landlordconfig_ctl__long_messages_are_cut_on_a_character_boundary(void **state)
{
	char long_msg[3000];
	json_t *arr, *js;
	char *s;
	size_t i;

	/* "é" is two bytes: a cut in the middle of one would leave invalid UTF-8. */
	for (i = 0; i + 2 < sizeof(long_msg); i += 2)
		memcpy(long_msg + i, "\xc3\xa9", 2);
	long_msg[i] = '\0';
	arr = json_pack("[{s:s,s:s}]", "field", "f", "message", long_msg);
	s = lcfgctl_invalid_summary(arr);
	assert_true(strlen(s) <= SUMMARY_MAX_BYTES);
	assert_string_equal(s + strlen(s) - 3, "...");
	/* jansson refuses invalid UTF-8, so this also proves the cut is clean. */
	js = json_string(s);
	assert_non_null(js);
	json_decref(js);
	free(s);
	json_decref(arr);
}

static bool listed(const char *const *list, const char *name)
{
	for (const char *const *p = list; *p; p++)
		if (strcmp(*p, name) == 0)
			return true;
	return false;
}

/* role_check_fn over two lists: the roles that exist and those landlord may bind. */
struct roles_known {
	const char *const *present, *const *bindable;
	int asked;
};

static enum role_state check_in(const char *name, void *ud)
{
	struct roles_known *k = ud;

	k->asked++;
	if (!listed(k->present, name))
		return ROLE_MISSING;
	return listed(k->bindable, name) ? ROLE_OK : ROLE_NOT_BINDABLE;
}

static void
test_landlordconfig_ctl__judge_roles_lists_every_missing_or_unbindable_role(void **state)
{
	static const char *const present[] = {"admin", "edit", "view", "team-edit", "ops", NULL};
	static const char *const bindable[] = {"admin", "edit", "view", "team-edit", NULL};
	struct roles_known k = {present, bindable, 0};
	struct lcfg *cfg =
	        config("{\"tenantRoles\":{\"default\":{\"viewer\":\"nope\"},"
	               "\"custom\":[{\"labelSelector\":{},\"editor\":\"team-edit\"},"
	               "{\"labelSelector\":{},\"owner\":\"ops\",\"viewer\":\"nope\"}]}}");
	json_t *invalid = NULL;
	json_t *want = load("[{\"field\":\"spec.tenantRoles.default.viewer\","
	                    "\"message\":\"ClusterRole \\\"nope\\\" does not exist\"},"
	                    "{\"field\":\"spec.tenantRoles.custom[1].owner\","
	                    "\"message\":\"landlord may not bind ClusterRole \\\"ops\\\": add it "
	                    "to resourceNames of the bind rule in ClusterRole landlord "
	                    "(deploy/rbac.yaml), or render it with scripts/render-rbac.py\"},"
	                    "{\"field\":\"spec.tenantRoles.custom[1].viewer\","
	                    "\"message\":\"ClusterRole \\\"nope\\\" does not exist\"}]");

	/* Missing wins the reason; every problem is listed. */
	assert_int_equal(lcfgctl_judge_roles(cfg, check_in, &k, &invalid), VERDICT_UNKNOWN_ROLE);
	assert_true(json_equal(invalid, want));
	/* default.owner, .editor, .viewer, then custom[0].editor, custom[1].owner and .viewer */
	assert_int_equal(k.asked, 6);
	json_decref(invalid);
	json_decref(want);
	lcfg_unref(cfg);

	/* Every role exists, one may not be bound. */
	cfg = config("{\"tenantRoles\":{\"custom\":[{\"labelSelector\":{},\"owner\":\"ops\"}]}}");
	assert_int_equal(lcfgctl_judge_roles(cfg, check_in, &k, &invalid), VERDICT_NOT_BINDABLE);
	assert_int_equal(json_array_size(invalid), 1);
	assert_string_equal(jx_str(json_array_get(invalid, 0), "field", NULL),
	                    "spec.tenantRoles.custom[0].owner");
	json_decref(invalid);
	lcfg_unref(cfg);

	/* The defaults name admin, edit and view: nothing to report when they exist and bind. */
	cfg = lcfg_defaults();
	invalid = (json_t *)&invalid;
	assert_int_equal(lcfgctl_judge_roles(cfg, check_in, &k, &invalid), VERDICT_ACCEPTED);
	assert_null(invalid);
	lcfg_unref(cfg);
}

static void test_landlordconfig_ctl__spec_names_role_reads_written_and_builtin_roles(void **state)
{
	json_t *obj = load("{\"spec\":{\"tenantRoles\":{\"default\":{\"owner\":\"\","
	                   "\"viewer\":\"team-view\"},\"custom\":[{\"labelSelector\":"
	                   "\"not even a selector\",\"editor\":\"sandbox-edit\"}]}}}");
	json_t *empty = load("{}");

	assert_true(lcfgctl_spec_names_role(obj, "admin")); /* empty: the built-in owner */
	assert_true(lcfgctl_spec_names_role(obj, "edit"));  /* unset: the built-in editor */
	assert_true(lcfgctl_spec_names_role(obj, "team-view"));
	assert_false(lcfgctl_spec_names_role(obj, "view")); /* replaced */
	assert_true(lcfgctl_spec_names_role(obj, "sandbox-edit"));
	assert_false(lcfgctl_spec_names_role(obj, "landlord:tenant:acme"));
	assert_true(lcfgctl_spec_names_role(empty, "view"));
	assert_true(lcfgctl_spec_names_role(NULL, "admin"));
	assert_false(lcfgctl_spec_names_role(NULL, "cluster-admin"));
	json_decref(obj);
	json_decref(empty);
}

static const json_t *condition(const json_t *status, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(status, "conditions"), i, c) {
		if (strcmp(jx_str(c, "type", NULL), type) == 0)
			return c;
	}
	fail_msg("no %s condition", type);
	return NULL;
}

static void assert_condition(const json_t *status, const char *type, const char *st,
                             const char *reason, long long gen)
{
	const json_t *c = condition(status, type);

	assert_string_equal(jx_str(c, "status", NULL), st);
	assert_string_equal(jx_str(c, "reason", NULL), reason);
	assert_int_equal(jx_int(c, -1, "observedGeneration", NULL), gen);
}

static void
test_landlordconfig_ctl__accepted_status_clears_problems_and_records_the_generation(void **state)
{
	json_t *obj =
	        load("{\"metadata\":{\"name\":\"landlord\",\"generation\":4},\"status\":{"
	             "\"observedGeneration\":3,\"invalid\":[{\"field\":\"f\",\"message\":\"m\"}],"
	             "\"conditions\":[{\"type\":\"Accepted\",\"status\":\"True\","
	             "\"reason\":\"Accepted\",\"message\":\"old\","
	             "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}");
	json_t *st = lcfgctl_desired_status(obj, VERDICT_ACCEPTED, NULL);

	assert_int_equal(jx_int(st, -1, "observedGeneration", NULL), 4);
	assert_int_equal(jx_int(st, -1, "lastAppliedGeneration", NULL), 4);
	assert_true(json_is_null(json_object_get(st, "invalid")));
	assert_condition(st, "Accepted", "True", "Accepted", 4);
	assert_condition(st, "Ready", "True", "Accepted", 4);
	/* Accepted stayed True: its transition time is kept. */
	assert_string_equal(jx_str(condition(st, "Accepted"), "lastTransitionTime", NULL),
	                    "2026-01-01T00:00:00Z");
	assert_false(lcfgctl_status_matches(st, jx_get(obj, "status", NULL)));
	json_decref(st);
	json_decref(obj);
}

static void
test_landlordconfig_ctl__rejected_status_lists_every_problem_and_keeps_applied(void **state)
{
	json_t *obj = load("{\"metadata\":{\"name\":\"landlord\",\"generation\":7},\"status\":{"
	                   "\"lastAppliedGeneration\":6,\"conditions\":[{\"type\":\"Accepted\","
	                   "\"status\":\"True\",\"reason\":\"Accepted\",\"message\":\"m\","
	                   "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}");
	json_t *five = problems(5), *st = lcfgctl_desired_status(obj, VERDICT_INVALID, five);
	const char *msg;

	assert_int_equal(jx_int(st, -1, "observedGeneration", NULL), 7);
	/* Untouched: the last applied generation is still 6. */
	assert_null(json_object_get(st, "lastAppliedGeneration"));
	assert_true(json_equal(json_object_get(st, "invalid"), five));
	assert_condition(st, "Accepted", "False", "Invalid", 7);
	assert_condition(st, "Ready", "False", "Invalid", 7);
	assert_string_not_equal(jx_str(condition(st, "Accepted"), "lastTransitionTime", NULL),
	                        "2026-01-01T00:00:00Z");
	msg = jx_str(condition(st, "Accepted"), "message", NULL);
	assert_non_null(strstr(msg, "generation 7 is not in force"));
	assert_non_null(strstr(msg, "5 problems: spec.privileged.users[0]"));
	json_decref(st);

	st = lcfgctl_desired_status(obj, VERDICT_UNKNOWN_ROLE, five);
	assert_condition(st, "Accepted", "False", "UnknownClusterRole", 7);
	json_decref(st);
	st = lcfgctl_desired_status(obj, VERDICT_NOT_BINDABLE, five);
	assert_condition(st, "Accepted", "False", "RoleNotBindable", 7);
	assert_condition(st, "Ready", "False", "RoleNotBindable", 7);
	assert_true(json_equal(json_object_get(st, "invalid"), five));
	json_decref(st);
	json_decref(five);
	json_decref(obj);
}

static void test_landlordconfig_ctl__other_names_are_ignored_with_a_reason(void **state)
{
	json_t *obj = load("{\"metadata\":{\"name\":\"other\",\"generation\":1}}");
	json_t *st = lcfgctl_desired_status(obj, VERDICT_IGNORED_NAME, NULL);

	assert_condition(st, "Accepted", "False", "IgnoredName", 1);
	assert_condition(st, "Ready", "False", "IgnoredName", 1);
	assert_string_equal(jx_str(condition(st, "Accepted"), "message", NULL),
	                    "only the LandlordConfig named landlord is read");
	assert_null(json_object_get(st, "lastAppliedGeneration"));
	json_decref(st);
	json_decref(obj);
}

static void test_landlordconfig_ctl__a_status_written_once_matches_the_next_time(void **state)
{
	json_t *obj = load("{\"metadata\":{\"name\":\"landlord\",\"generation\":2}}");
	json_t *st = lcfgctl_desired_status(obj, VERDICT_ACCEPTED, NULL), *written, *again;

	/* The API server drops the null (merge patch): what the cache holds afterwards. */
	written = json_deep_copy(st);
	json_object_del(written, "invalid");
	json_object_set(obj, "status", written);
	again = lcfgctl_desired_status(obj, VERDICT_ACCEPTED, NULL);
	assert_true(lcfgctl_status_matches(again, written));
	/* A leftover invalid list must still go. */
	json_object_set_new(written, "invalid", problems(1));
	assert_false(lcfgctl_status_matches(again, written));
	json_decref(again);
	json_decref(written);
	json_decref(st);
	json_decref(obj);
}

static void test_landlordconfig_ctl__persisted_configmap_round_trips(void **state)
{
	struct lcfg *cfg = config("{\"privileged\":{\"users\":[\"ops-.*\"]},"
	                          "\"showback\":{\"cpuCoreHour\":\"0.031\",\"currency\":\"EUR\"}}");
	json_t *doc = lcfg_to_json(cfg), *cm;
	char *text = jx_dumps(doc);
	struct lcfg *back = NULL;
	struct ll_err err = {{0}};

	cm = lcfgctl_configmap_body(text);
	assert_string_equal(jx_name(cm), ACCEPTED_CONFIG_CONFIGMAP);
	assert_string_equal(jx_namespace(cm), LANDLORD_SYSTEM_NAMESPACE);
	assert_string_equal(jx_label(cm, "app.kubernetes.io/managed-by"), "landlord");
	assert_true(lcfgctl_configmap_is_current(cm, text));
	assert_false(lcfgctl_configmap_is_current(cm, "{}"));
	assert_false(lcfgctl_configmap_is_current(NULL, text));
	assert_int_equal(lcfgctl_config_from_configmap(cm, &back, &err), 0);
	assert_true(same(cfg, back));
	assert_true(lcfg_is_privileged_user(back, "ops-1", NULL, 0));
	/* Compact JSON, so the stored text is stable and small. */
	assert_null(strchr(text, '\n'));
	lcfg_unref(back);
	json_decref(cm);

	/* The label is part of "current": a ConfigMap without it is rewritten. */
	cm = json_pack("{s:{s:s}}", "data", ACCEPTED_CONFIG_KEY, text);
	assert_false(lcfgctl_configmap_is_current(cm, text));
	json_decref(cm);
	free(text);
	json_decref(doc);
	lcfg_unref(cfg);
}

static void test_landlordconfig_ctl__an_unusable_persisted_configmap_is_an_error(void **state)
{
	json_t *empty = load("{\"data\":{}}");
	json_t *garbage = load("{\"data\":{\"config.json\":\"{not json\"}}");
	json_t *bad = load("{\"data\":{\"config.json\":"
	                   "\"{\\\"spec\\\":{\\\"privileged\\\":{\\\"users\\\":[\\\"(\\\"]}}}\"}}");
	struct lcfg *cfg = (struct lcfg *)&cfg;
	struct ll_err err = {{0}};

	assert_int_equal(lcfgctl_config_from_configmap(empty, &cfg, &err), -ENOENT);
	assert_null(cfg);
	assert_int_equal(lcfgctl_config_from_configmap(garbage, &cfg, &err), -EINVAL);
	assert_null(cfg);
	assert_int_equal(lcfgctl_config_from_configmap(bad, &cfg, &err), -EINVAL);
	assert_null(cfg);
	assert_non_null(strstr(err.msg, "spec.privileged.users[0]"));
	json_decref(empty);
	json_decref(garbage);
	json_decref(bad);
}

static void test_landlordconfig_ctl__digest_is_hex_sha256(void **state)
{
	char d[65];

	lcfgctl_config_digest("abc", d);
	assert_string_equal(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* ---- the controller in the real manager against the fake API server ---- */

#define LCFGS "landlordconfigs.landlord.dev"
#define CRS   "clusterroles.rbac.authorization.k8s.io"

struct fenv {
	struct fake_api *f;
	struct fake_mgr *m;
};

static struct fake_mgr *fake_start(struct fake_api *f)
{
	struct controller_def def = landlordconfig_controller_def();

	lcfg_current_reset(); /* the defaults, as in a new process */
	return fake_mgr_start(f, &def, 1);
}

static int fake_setup(void **state)
{
	struct fenv *e = calloc(1, sizeof(*e));
	static const char *const roles[] = {"admin", "edit", "view"};

	e->f = fake_api_start();
	fake_api_add_gvr(e->f, &LL_LANDLORDCONFIGS, true);
	for (size_t i = 0; i < 3; i++) {
		json_t *cr = json_pack("{s:{s:s}}", "metadata", "name", roles[i]);

		fake_api_put(e->f, CRS, cr);
		json_decref(cr);
	}
	*state = e;
	return 0;
}

static int fake_teardown(void **state)
{
	struct fenv *e = *state;

	fake_mgr_stop(e->m);
	fake_api_stop(e->f);
	lcfg_current_reset();
	free(e);
	return 0;
}

static void fake_config(struct fake_api *f, const char *name, const char *spec_text)
{
	json_t *obj = json_pack("{s:{s:s},s:o}", "metadata", "name", name, "spec", load(spec_text));

	fake_api_put(f, LCFGS, obj);
	json_decref(obj);
}

/* The condition @type of @obj's status, or NULL (condition() fails the test instead). */
struct reason_want {
	const char *name, *reason;
};

static bool has_reason(struct fake_api *f, void *ud)
{
	const struct reason_want *w = ud;
	json_t *obj = fake_api_get(f, LCFGS, NULL, w->name);
	const json_t *c = cond_find(jx_get(obj, "status", "conditions", NULL), "Accepted");
	bool ok = c && strcmp(jx_str(c, "reason", NULL), w->reason) == 0 &&
	          jx_int(obj, -1, "status", "observedGeneration", NULL) == jx_generation(obj);

	json_decref(obj);
	return ok;
}

/* The object once its status reports @reason for its current generation (new reference). */
static json_t *fake_wait_reason(struct fake_api *f, const char *name, const char *reason)
{
	struct reason_want w = {name, reason};

	if (!fake_api_wait(f, has_reason, &w))
		fail_msg("LandlordConfig %s never reported %s", name, reason);
	return fake_api_get(f, LCFGS, NULL, name);
}

static bool persisted_pod_security(struct fake_api *f, void *ud)
{
	json_t *cm =
	        fake_api_get(f, "configmaps", LANDLORD_SYSTEM_NAMESPACE, ACCEPTED_CONFIG_CONFIGMAP);
	struct lcfg *cfg = NULL;
	struct ll_err err;
	bool ok = cm && lcfgctl_config_from_configmap(cm, &cfg, &err) == 0 &&
	          strcmp(lcfg_default_pod_security(cfg), ud) == 0;

	lcfg_unref(cfg);
	json_decref(cm);
	return ok;
}

static bool has_event(struct fake_api *f, void *ud)
{
	json_t *evs = fake_api_list(f, "events", "default"), *ev;
	bool found = false;
	size_t i;

	json_array_foreach(evs, i, ev)
		found |= strcmp(jx_str(ev, "reason", NULL), ud) == 0;
	json_decref(evs);
	return found;
}

static void assert_in_force(const char *pod_security)
{
	struct lcfg *cur = lcfg_current();

	assert_string_equal(lcfg_default_pod_security(cur), pod_security);
	lcfg_unref(cur);
}

static void test_landlordconfig_ctl__fake_accepts_persists_and_records(void **state)
{
	struct fenv *e = *state;
	json_t *obj, *evs;

	fake_config(e->f, "landlord", "{\"defaults\":{\"podSecurity\":\"baseline\"}}");
	e->m = fake_start(e->f);
	obj = fake_wait_reason(e->f, "landlord", "Accepted");
	assert_int_equal(jx_int(obj, -1, "status", "lastAppliedGeneration", NULL),
	                 jx_generation(obj));
	assert_string_equal(jx_str(condition(jx_get(obj, "status", NULL), "Ready"), "status", NULL),
	                    "True");
	json_decref(obj);
	assert_true(fake_api_wait(e->f, persisted_pod_security, "baseline"));
	assert_in_force("baseline");
	assert_true(fake_api_wait(e->f, has_event, "Accepted")); /* recorded after the status */
	evs = fake_api_list(e->f, "events", "default");
	assert_int_equal(json_array_size(evs), 1);
	assert_string_equal(jx_str(json_array_get(evs, 0), "type", NULL), "Normal");
	assert_string_equal(jx_str(json_array_get(evs, 0), "involvedObject", "name", NULL),
	                    "landlord");
	json_decref(evs);
}

static void test_landlordconfig_ctl__fake_rejects_and_keeps_what_is_in_force(void **state)
{
	struct fenv *e = *state;
	json_t *obj;

	fake_config(e->f, "landlord", "{\"defaults\":{\"podSecurity\":\"baseline\"}}");
	e->m = fake_start(e->f);
	json_decref(fake_wait_reason(e->f, "landlord", "Accepted"));
	assert_true(fake_api_wait(e->f, persisted_pod_security, "baseline"));

	fake_config(e->f, "landlord",
	            "{\"defaults\":{\"podSecurity\":\"privileged\"},"
	            "\"privileged\":{\"users\":[\"(\", \"ok\", \"[\"]}}");
	obj = fake_wait_reason(e->f, "landlord", "Invalid");
	assert_int_equal(json_array_size(jx_get(obj, "status", "invalid", NULL)), 2);
	json_decref(obj);
	assert_in_force("baseline");
	assert_true(persisted_pod_security(e->f, "baseline"));

	/* a ClusterRole that does not exist, until it does */
	fake_config(e->f, "landlord",
	            "{\"defaults\":{\"podSecurity\":\"privileged\"},"
	            "\"tenantRoles\":{\"default\":{\"viewer\":\"auditor\"}}}");
	obj = fake_wait_reason(e->f, "landlord", "UnknownClusterRole");
	assert_string_equal(
	        jx_str(json_array_get(jx_get(obj, "status", "invalid", NULL), 0), "field", NULL),
	        "spec.tenantRoles.default.viewer");
	json_decref(obj);
	assert_in_force("baseline");
	obj = json_pack("{s:{s:s}}", "metadata", "name", "auditor");
	fake_api_put(e->f, CRS, obj);
	json_decref(obj);
	json_decref(fake_wait_reason(e->f, "landlord", "Accepted"));
	assert_true(fake_api_wait(e->f, persisted_pod_security, "privileged"));
	assert_in_force("privileged");
}

static void put_role(struct fake_api *f, const char *name)
{
	json_t *obj = json_pack("{s:{s:s}}", "metadata", "name", name);

	fake_api_put(f, CRS, obj);
	json_decref(obj);
}

/* The access hook: landlord may bind every ClusterRole but @deny (cluster-wide reviews of bind
 * on clusterroles only; any other review is denied, so a malformed one fails the test). The
 * hook runs on the fake's threads: counts are atomic, and a test swaps the whole struct with
 * fake_api_set_access_hook() rather than changing @deny. */
struct access {
	const char *deny;
	atomic_int denied_asked, edit_asked; /* reviews of @deny and of "edit" */
};

static bool access_hook(const json_t *spec, void *ud)
{
	struct access *a = ud;
	const json_t *ra = json_object_get(spec, "resourceAttributes");
	const char *name = jx_str(ra, "name", NULL), *verb = jx_str(ra, "verb", NULL),
	           *group = jx_str(ra, "group", NULL), *res = jx_str(ra, "resource", NULL);

	if (name == NULL || verb == NULL || group == NULL || res == NULL ||
	    strcmp(verb, "bind") != 0 || strcmp(group, "rbac.authorization.k8s.io") != 0 ||
	    strcmp(res, "clusterroles") != 0 || json_object_get(ra, "namespace") != NULL)
		return false;
	if (strcmp(name, "edit") == 0)
		atomic_fetch_add(&a->edit_asked, 1);
	if (a->deny == NULL || strcmp(name, a->deny) != 0)
		return true;
	atomic_fetch_add(&a->denied_asked, 1);
	return false;
}

static double requeues(void)
{
	char labels[128];

	return metrics_get("landlord_reconcile_total",
	                   metrics_labels(labels, sizeof(labels), "controller", "landlordconfig",
	                                  "result", "requeue", NULL));
}

static bool requeued_since(struct fake_api *f, void *ud)
{
	return requeues() > *(double *)ud;
}

#define OPS_ADMIN_MSG                                                                           \
	"landlord may not bind ClusterRole \"ops-admin\": add it to resourceNames of the bind " \
	"rule in ClusterRole landlord (deploy/rbac.yaml), or render it with "                   \
	"scripts/render-rbac.py"

/* Rejected as RoleNotBindable: both fields listed, the message names the role and the fix, the
 * configuration in force is unchanged, an Event says so, and a re-check is scheduled. */
static void expect_not_bindable(struct fenv *e, const char *in_force)
{
	json_t *obj = fake_wait_reason(e->f, "landlord", "RoleNotBindable");
	const json_t *invalid = jx_get(obj, "status", "invalid", NULL);
	const char *msg;

	assert_int_equal(json_array_size(invalid), 2);
	assert_string_equal(jx_str(json_array_get(invalid, 0), "field", NULL),
	                    "spec.tenantRoles.default.owner");
	assert_string_equal(jx_str(json_array_get(invalid, 1), "field", NULL),
	                    "spec.tenantRoles.custom[0].owner");
	assert_string_equal(jx_str(json_array_get(invalid, 0), "message", NULL), OPS_ADMIN_MSG);
	msg = jx_str(condition(jx_get(obj, "status", NULL), "Accepted"), "message", NULL);
	assert_non_null(strstr(msg, "is not in force; the configuration in force is unchanged. "
	                            "2 problems: spec.tenantRoles.default.owner: " OPS_ADMIN_MSG));
	json_decref(obj);
	assert_in_force(in_force);
	assert_true(persisted_pod_security(e->f, (void *)in_force));
	assert_true(fake_api_wait(e->f, has_event, "RoleNotBindable"));
}

/* fake_api_put() of @role (e.g. landlord's own ClusterRole, as an administrator edits it) makes
 * landlord accept the configuration in force at once, long before the timed re-check. */
static void expect_accepted_after_role_change(struct fenv *e, const char *role,
                                              const char *in_force)
{
	int64_t start = clock_mono_ms();

	put_role(e->f, role);
	json_decref(fake_wait_reason(e->f, "landlord", "Accepted"));
	assert_true(clock_mono_ms() - start < NOT_BINDABLE_RECHECK_MS / 2);
	assert_true(fake_api_wait(e->f, persisted_pod_security, (void *)in_force));
	assert_in_force(in_force);
}

#define MAPS_OPS_ADMIN(ps)                                                                    \
	"{\"defaults\":{\"podSecurity\":\"" ps "\"},\"tenantRoles\":{\"default\":{\"owner\":" \
	"\"ops-admin\"},\"custom\":[{\"labelSelector\":{},\"owner\":\"ops-admin\"}]}}"

static void
test_landlordconfig_ctl__fake_a_role_landlord_may_not_bind_is_rejected_until_it_may(void **state)
{
	struct fenv *e = *state;
	/* static: the hook may still run after a failed assertion leaves this frame */
	static struct access deny = {.deny = "ops-admin"}, allow = {.deny = NULL};
	double before;
	int denied, edit;

	put_role(e->f, "ops-admin");
	fake_api_set_access_hook(e->f, access_hook, &deny);
	fake_config(e->f, "landlord", "{\"defaults\":{\"podSecurity\":\"baseline\"}}");
	e->m = fake_start(e->f);
	json_decref(fake_wait_reason(e->f, "landlord", "Accepted"));
	assert_true(fake_api_wait(e->f, persisted_pod_security, "baseline"));

	before = requeues();
	fake_config(e->f, "landlord", MAPS_OPS_ADMIN("privileged"));
	expect_not_bindable(e, "baseline");
	assert_true(fake_api_wait(e->f, requeued_since, &before));

	/* One review per role per reconcile, though ops-admin is named twice. */
	fake_mgr_stop(e->m);
	denied = atomic_load(&deny.denied_asked);
	edit = atomic_load(&deny.edit_asked);
	before = fake_mgr_reconciles("landlordconfig");
	e->m = fake_start(e->f); /* loads the persisted configuration: baseline */
	assert_true(fake_mgr_wait_reconciles(e->f, "landlordconfig", before + 1));
	fake_mgr_stop(e->m);
	assert_true(atomic_load(&deny.denied_asked) > denied);
	assert_int_equal(atomic_load(&deny.denied_asked) - denied,
	                 atomic_load(&deny.edit_asked) - edit);

	/* The administrator adds ops-admin to landlord's ClusterRole. */
	before = fake_mgr_reconciles("landlordconfig");
	e->m = fake_start(e->f);
	assert_true(fake_mgr_wait_reconciles(e->f, "landlordconfig", before + 1));
	expect_not_bindable(e, "baseline");
	fake_api_set_access_hook(e->f, access_hook, &allow);
	expect_accepted_after_role_change(e, "landlord", "privileged");

	/* Or grants it through a new ClusterRole (and binding): any ClusterRole re-checks. */
	fake_api_set_access_hook(e->f, access_hook, &deny);
	fake_config(e->f, "landlord", MAPS_OPS_ADMIN("baseline"));
	expect_not_bindable(e, "privileged");
	fake_api_set_access_hook(e->f, access_hook, &allow);
	expect_accepted_after_role_change(e, "landlord-binds-ops-admin", "baseline");
}

/* A review without an answer leaves everything as it is, and is retried. */
static void test_landlordconfig_ctl__fake_a_failed_review_changes_nothing(void **state)
{
	struct fenv *e = *state;
	int rule;
	json_t *obj;

	fake_config(e->f, "landlord", "{\"defaults\":{\"podSecurity\":\"baseline\"}}");
	rule = fake_api_rule_add(e->f, &(struct fake_rule){.path_contains = "accessreviews",
	                                                   .action = FAKE_ANSWER,
	                                                   .status = 500,
	                                                   .times = 3});
	e->m = fake_start(e->f);
	json_decref(fake_wait_reason(e->f, "landlord", "Accepted"));
	assert_int_equal(fake_api_rule_hits(e->f, rule), 3);
	assert_in_force("baseline");
	obj = fake_api_get(e->f, LCFGS, NULL, "landlord");
	assert_string_equal(
	        jx_str(condition(jx_get(obj, "status", NULL), "Accepted"), "reason", NULL),
	        "Accepted");
	json_decref(obj);
}

static void test_landlordconfig_ctl__fake_other_names_are_ignored(void **state)
{
	struct fenv *e = *state;

	fake_config(e->f, "other", "{\"defaults\":{\"podSecurity\":\"baseline\"}}");
	e->m = fake_start(e->f);
	json_decref(fake_wait_reason(e->f, "other", "IgnoredName"));
	assert_in_force("restricted");
}

/* The persisted configuration is in force after a restart, even while the object is invalid;
 * and a restart with nothing changed writes nothing. */
static void test_landlordconfig_ctl__fake_restart_loads_and_writes_nothing(void **state)
{
	struct fenv *e = *state;
	double before;
	int writes;

	fake_config(e->f, "landlord", "{\"defaults\":{\"podSecurity\":\"baseline\"}}");
	e->m = fake_start(e->f);
	json_decref(fake_wait_reason(e->f, "landlord", "Accepted"));
	assert_true(fake_api_wait(e->f, persisted_pod_security, "baseline"));
	fake_mgr_stop(e->m);

	writes = fake_api_writes(e->f);
	before = fake_mgr_reconciles("landlordconfig");
	e->m = fake_start(e->f);
	assert_true(fake_mgr_wait_reconciles(e->f, "landlordconfig", before + 1));
	fake_mgr_stop(e->m);
	e->m = NULL;
	assert_int_equal(fake_api_writes(e->f), writes);

	fake_config(e->f, "landlord", "{\"privileged\":{\"users\":[\"(\"]}}");
	e->m = fake_start(e->f);
	json_decref(fake_wait_reason(e->f, "landlord", "Invalid"));
	assert_in_force("baseline");
}

/* ---- live: the controller in a real manager ---- */

struct live {
	struct kcfg cfg;
	struct kc_client *c;
	char role[64];
	struct mgr *m;
	pthread_t runner;
};

static void *run_manager(void *arg)
{
	mgr_run(arg);
	return NULL;
}

static void start_manager(struct live *f)
{
	struct controller_def def = landlordconfig_controller_def();

	f->m = mgr_new(&(struct mgr_opts){.client = f->c, .probe_port = -1});
	mgr_add_controller(f->m, &def);
	assert_int_equal(pthread_create(&f->runner, NULL, run_manager, f->m), 0);
}

static void stop_manager(struct live *f)
{
	mgr_request_stop(f->m);
	assert_int_equal(pthread_join(f->runner, NULL), 0);
	mgr_free(f->m);
	f->m = NULL;
}

/* Make one call; return its HTTP status. */
static long http_call(struct live *f, int (*call)(struct live *, struct kc_resp *))
{
	struct kc_resp resp = {0};
	long code;

	assert_int_equal(call(f, &resp), 0);
	code = resp.http_status;
	kc_resp_release(&resp);
	return code;
}

static int delete_config(struct live *f, struct kc_resp *resp)
{
	return kc_delete(f->c, &LL_LANDLORDCONFIGS, NULL, LANDLORD_CONFIG_NAME, NULL, resp, NULL);
}

static int delete_configmap(struct live *f, struct kc_resp *resp)
{
	return kc_delete(f->c, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE, ACCEPTED_CONFIG_CONFIGMAP,
	                 NULL, resp, NULL);
}

static int delete_role(struct live *f, struct kc_resp *resp)
{
	return kc_delete(f->c, &KC_CLUSTERROLES, NULL, f->role, NULL, resp, NULL);
}

static int create_role(struct live *f, struct kc_resp *resp)
{
	json_t *role =
	        json_pack("{s:s,s:s,s:{s:s},s:[]}", "apiVersion", "rbac.authorization.k8s.io/v1",
	                  "kind", "ClusterRole", "metadata", "name", f->role, "rules");
	int rc = kc_create(f->c, &KC_CLUSTERROLES, NULL, role, resp, NULL);

	json_decref(role);
	return rc;
}

static int create_namespace(struct live *f, struct kc_resp *resp)
{
	json_t *ns = json_pack("{s:{s:s}}", "metadata", "name", LANDLORD_SYSTEM_NAMESPACE);
	int rc = kc_create(f->c, &KC_NAMESPACES, NULL, ns, resp, NULL);

	json_decref(ns);
	return rc;
}

static void apply_spec(struct live *f, const char *spec_text)
{
	json_t *obj = json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", LANDLORD_API_VERSION, "kind",
	                        "LandlordConfig", "metadata", "name", LANDLORD_CONFIG_NAME, "spec",
	                        load(spec_text));
	struct kc_resp resp = {0};

	/* Force: this test owns the singleton while it runs. */
	assert_int_equal(kc_apply(f->c, &LL_LANDLORDCONFIGS, NULL, LANDLORD_CONFIG_NAME, NULL, obj,
	                          "landlord-test", true, &resp, NULL),
	                 0);
	if (!kc_resp_ok(&resp))
		fail_msg("apply: %ld %s", resp.http_status, resp.status.message);
	kc_resp_release(&resp);
	json_decref(obj);
}

/* The object once its status reports @reason for its current generation (new reference). */
static json_t *wait_reason(struct live *f, const char *reason)
{
	for (int i = 0; i < 300; i++) {
		struct kc_resp resp = {0};
		json_t *obj = NULL;

		assert_int_equal(
		        kc_get(f->c, &LL_LANDLORDCONFIGS, NULL, LANDLORD_CONFIG_NAME, &resp, NULL),
		        0);
		if (kc_resp_ok(&resp) && jx_int(resp.body, -1, "status", "observedGeneration",
		                                NULL) == jx_generation(resp.body)) {
			const json_t *st = jx_get(resp.body, "status", NULL);
			const char *r = jx_str(condition(st, "Accepted"), "reason", NULL);

			if (strcmp(r, reason) == 0)
				obj = json_incref(resp.body);
		}
		kc_resp_release(&resp);
		if (obj != NULL)
			return obj;
		live_sleep_ms(100);
	}
	fail_msg("LandlordConfig never reported %s", reason);
	return NULL;
}

/* The stored config.json once it holds @cfg (new string), else fail after 30 s. */
static char *wait_persisted(struct live *f, const struct lcfg *cfg)
{
	json_t *doc = lcfg_to_json(cfg);
	char *want = jx_dumps(doc);

	json_decref(doc);
	for (int i = 0; i < 300; i++) {
		struct kc_resp resp = {0};
		bool ok;

		assert_int_equal(kc_get(f->c, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE,
		                        ACCEPTED_CONFIG_CONFIGMAP, &resp, NULL),
		                 0);
		ok = kc_resp_ok(&resp) && lcfgctl_configmap_is_current(resp.body, want);
		kc_resp_release(&resp);
		if (ok)
			return want;
		live_sleep_ms(100);
	}
	fail_msg("ConfigMap never held %s", want);
	return NULL;
}

static char *configmap_rv(struct live *f)
{
	struct kc_resp resp = {0};
	char *rv;

	assert_int_equal(kc_get(f->c, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE,
	                        ACCEPTED_CONFIG_CONFIGMAP, &resp, NULL),
	                 0);
	assert_int_equal(resp.http_status, 200);
	rv = strdup(jx_resource_version(resp.body));
	kc_resp_release(&resp);
	return rv;
}

static bool config_gone(void *arg)
{
	struct live *f = arg;
	struct kc_resp resp = {0};
	bool gone;

	assert_int_equal(kc_get(f->c, &LL_LANDLORDCONFIGS, NULL, LANDLORD_CONFIG_NAME, &resp, NULL),
	                 0);
	gone = resp.http_status == 404;
	kc_resp_release(&resp);
	return gone;
}

static int live_setup(void **state)
{
	struct live *f;
	char sfx[16];

	*state = NULL;
	if (live_kubeconfig() == NULL)
		return 0;
	f = calloc(1, sizeof(*f));
	if (live_connect(&f->cfg, NULL, &f->c) != 0) {
		free(f);
		return -1;
	}
	live_rand_suffix(sfx, sizeof(sfx));
	snprintf(f->role, sizeof(f->role), "test-lcfg-role-%s", sfx);
	http_call(f, create_namespace);
	http_call(f, delete_config);
	http_call(f, delete_configmap);
	if (!live_wait(config_gone, f, 10000))
		fprintf(stderr, "live setup: the LandlordConfig is still there after 10 s\n");
	lcfg_current_reset();
	*state = f;
	return 0;
}

static int live_teardown(void **state)
{
	struct live *f = *state;

	if (f == NULL)
		return 0;
	if (f->m != NULL)
		stop_manager(f);
	http_call(f, delete_config);
	http_call(f, delete_role);
	kc_client_free(f->c);
	kcfg_release(&f->cfg);
	free(f);
	lcfg_current_reset();
	metrics_reset_for_tests();
	return 0;
}

static void
test_landlordconfig_ctl__live_accepts_rejects_persists_and_survives_a_restart(void **state)
{
	struct live *f = *state;
	struct lcfg *dflt, *cur, *want;
	const char *viewer;
	json_t *obj;
	char *text, *rv, *rv2, spec[512];

	if (f == NULL)
		skip();
	dflt = lcfg_defaults();
	start_manager(f);

	/* No LandlordConfig: the defaults are persisted. */
	free(wait_persisted(f, dflt));

	/* A valid one is accepted, put in force and persisted. */
	apply_spec(f, "{\"defaults\":{\"podSecurity\":\"baseline\"},"
	              "\"privileged\":{\"users\":[\"ops-.*\"]}}");
	obj = wait_reason(f, "Accepted");
	assert_int_equal(jx_int(obj, -1, "status", "lastAppliedGeneration", NULL),
	                 jx_generation(obj));
	json_decref(obj);
	cur = lcfg_current();
	assert_string_equal(lcfg_default_pod_security(cur), "baseline");
	free(wait_persisted(f, cur));
	lcfg_unref(cur);
	rv = configmap_rv(f);

	/* A bad pattern: rejected, every problem listed, nothing changes. */
	apply_spec(f, "{\"defaults\":{\"podSecurity\":\"privileged\"},"
	              "\"privileged\":{\"users\":[\"(\", \"ok\", \"[\"]}}");
	obj = wait_reason(f, "Invalid");
	assert_int_equal(json_array_size(jx_get(obj, "status", "invalid", NULL)), 2);
	assert_string_equal(
	        jx_str(json_array_get(jx_get(obj, "status", "invalid", NULL), 0), "field", NULL),
	        "spec.privileged.users[0]");
	assert_int_equal(jx_int(obj, -1, "status", "lastAppliedGeneration", NULL),
	                 jx_generation(obj) - 1);
	json_decref(obj);
	cur = lcfg_current();
	assert_string_equal(lcfg_default_pod_security(cur), "baseline");
	lcfg_unref(cur);
	rv2 = configmap_rv(f);
	assert_string_equal(rv, rv2);
	free(rv2);

	/* A ClusterRole that does not exist: rejected until it is created. */
	snprintf(spec, sizeof(spec),
	         "{\"defaults\":{\"podSecurity\":\"privileged\"},"
	         "\"tenantRoles\":{\"default\":{\"viewer\":\"%s\"}}}",
	         f->role);
	apply_spec(f, spec);
	obj = wait_reason(f, "UnknownClusterRole");
	assert_string_equal(
	        jx_str(json_array_get(jx_get(obj, "status", "invalid", NULL), 0), "field", NULL),
	        "spec.tenantRoles.default.viewer");
	json_decref(obj);
	assert_int_equal(http_call(f, create_role), 201);
	json_decref(wait_reason(f, "Accepted"));
	cur = lcfg_current();
	assert_string_equal(lcfg_default_pod_security(cur), "privileged");
	text = wait_persisted(f, cur);
	lcfg_unref(cur);
	free(text);
	free(rv);

	/* Restart behind an invalid object: the persisted configuration is loaded. */
	stop_manager(f);
	lcfg_current_reset();
	apply_spec(f, "{\"privileged\":{\"users\":[\"(\"]}}");
	start_manager(f);
	json_decref(wait_reason(f, "Invalid"));
	cur = lcfg_current();
	assert_string_equal(lcfg_default_pod_security(cur), "privileged");
	lcfg_roles_for_namespace(cur, NULL, NULL, NULL, &viewer);
	assert_string_equal(viewer, f->role);
	lcfg_unref(cur);

	/* Deleted: the defaults are in force and persisted. */
	assert_int_equal(http_call(f, delete_config), 200);
	want = lcfg_defaults();
	free(wait_persisted(f, want));
	for (int i = 0; i < 100; i++) {
		cur = lcfg_current();
		if (same(cur, want)) {
			lcfg_unref(cur);
			break;
		}
		lcfg_unref(cur);
		live_sleep_ms(100);
	}
	cur = lcfg_current();
	assert_true(same(cur, want));
	lcfg_unref(cur);
	lcfg_unref(want);
	lcfg_unref(dflt);
	stop_manager(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup(
	                test_landlordconfig_ctl__current_is_the_defaults_until_an_install, reset),
	        cmocka_unit_test_setup(
	                test_landlordconfig_ctl__install_is_a_change_only_when_the_config_differs,
	                reset),
	        cmocka_unit_test_setup(
	                test_landlordconfig_ctl__every_subscriber_is_notified_and_their_number_capped,
	                reset),
	        cmocka_unit_test_setup(
	                test_landlordconfig_ctl__reset_restores_the_defaults_and_drops_subscribers,
	                reset),
	        cmocka_unit_test_setup(
	                test_landlordconfig_ctl__readers_keep_their_config_while_installs_replace_it,
	                reset),
	        cmocka_unit_test(
	                test_landlordconfig_ctl__summary_names_the_first_problems_and_counts_the_rest),
	        cmocka_unit_test(
	                test_landlordconfig_ctl__long_messages_are_cut_on_a_character_boundary),
	        cmocka_unit_test(
	                test_landlordconfig_ctl__judge_roles_lists_every_missing_or_unbindable_role),
	        cmocka_unit_test(
	                test_landlordconfig_ctl__spec_names_role_reads_written_and_builtin_roles),
	        cmocka_unit_test(
	                test_landlordconfig_ctl__accepted_status_clears_problems_and_records_the_generation),
	        cmocka_unit_test(
	                test_landlordconfig_ctl__rejected_status_lists_every_problem_and_keeps_applied),
	        cmocka_unit_test(test_landlordconfig_ctl__other_names_are_ignored_with_a_reason),
	        cmocka_unit_test(
	                test_landlordconfig_ctl__a_status_written_once_matches_the_next_time),
	        cmocka_unit_test(test_landlordconfig_ctl__persisted_configmap_round_trips),
	        cmocka_unit_test(
	                test_landlordconfig_ctl__an_unusable_persisted_configmap_is_an_error),
	        cmocka_unit_test(test_landlordconfig_ctl__digest_is_hex_sha256),
	        cmocka_unit_test_setup_teardown(
	                test_landlordconfig_ctl__fake_accepts_persists_and_records, fake_setup,
	                fake_teardown),
	        cmocka_unit_test_setup_teardown(
	                test_landlordconfig_ctl__fake_rejects_and_keeps_what_is_in_force,
	                fake_setup, fake_teardown),
	        cmocka_unit_test_setup_teardown(
	                test_landlordconfig_ctl__fake_a_role_landlord_may_not_bind_is_rejected_until_it_may,
	                fake_setup, fake_teardown),
	        cmocka_unit_test_setup_teardown(
	                test_landlordconfig_ctl__fake_a_failed_review_changes_nothing, fake_setup,
	                fake_teardown),
	        cmocka_unit_test_setup_teardown(
	                test_landlordconfig_ctl__fake_other_names_are_ignored, fake_setup,
	                fake_teardown),
	        cmocka_unit_test_setup_teardown(
	                test_landlordconfig_ctl__fake_restart_loads_and_writes_nothing, fake_setup,
	                fake_teardown),
	        cmocka_unit_test_setup_teardown(
	                test_landlordconfig_ctl__live_accepts_rejects_persists_and_survives_a_restart,
	                live_setup, live_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
