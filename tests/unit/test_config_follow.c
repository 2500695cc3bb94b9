/* test_config_follow.c - `landlord webhook`'s LandlordConfig in force
 * (src/webhook/config_follow.c), followed from the fake API server through the real manager's
 * informer. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"
#include "base/json.h"
#include "fake_manager.h"
#include "tenancy/landlordconfig_current.h"
#include "webhook/config_follow.h"

struct env {
	struct fake_api *f;
	struct kc_client *client;
	struct mgr *m;
	struct cfg_follow *follow;
	pthread_t thread;
};

static void *run(void *arg)
{
	mgr_run(arg);
	return NULL;
}

static void env_start(struct env *e)
{
	mgr_block_signals();
	e->client = fake_client_new(e->f);
	e->m = mgr_new(&(struct mgr_opts){.client = e->client, .probe_port = -1});
	e->follow = cfg_follow_new(e->m);
	assert_int_equal(pthread_create(&e->thread, NULL, run, e->m), 0);
}

static void env_stop(struct env *e)
{
	mgr_request_stop(e->m);
	pthread_join(e->thread, NULL);
	cfg_follow_free(e->follow);
	mgr_free(e->m);
	kc_client_free(e->client);
	fake_api_stop(e->f);
	lcfg_current_reset();
}

static bool privileged(const char *user)
{
	struct lcfg *cfg = lcfg_current();
	bool yes = lcfg_is_privileged_user(cfg, user, NULL, 0);

	lcfg_unref(cfg);
	return yes;
}

static bool user_privileged(struct fake_api *f, void *ud)
{
	return privileged(ud);
}

static bool user_not_privileged(struct fake_api *f, void *ud)
{
	return !privileged(ud);
}

static void put_config(struct fake_api *f, const char *name, const char *user)
{
	json_t *obj = json_pack("{s:s,s:s,s:{s:s},s:{s:{s:[s]}}}", "apiVersion",
	                        "landlord.dev/v1alpha1", "kind", "LandlordConfig", "metadata",
	                        "name", name, "spec", "privileged", "users", user);

	fake_api_put(f, "landlordconfigs.landlord.dev", obj);
	json_decref(obj);
}

static void test_config_follow__loads_the_accepted_then_follows_valid_versions(void **state)
{
	struct env e = {.f = fake_api_start()};
	json_t *cm = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind",
	                       "ConfigMap", "metadata", "name", ACCEPTED_CONFIG_CONFIGMAP,
	                       "namespace", LANDLORD_SYSTEM_NAMESPACE, "data", "config.json",
	                       "{\"spec\":{\"privileged\":{\"users\":[\"carol\"]}}}");

	fake_api_add_gvr(e.f, &LL_LANDLORDCONFIGS, true);
	fake_api_put(e.f, "configmaps", cm);
	env_start(&e);
	assert_true(privileged("carol")); /* the accepted one, before any informer event */
	/* Another name is never read; events come in order, so once bob is privileged the other
	 * object has been seen and ignored. */
	put_config(e.f, "other", "zed");
	put_config(e.f, LANDLORD_CONFIG_NAME, "bob");
	assert_true(fake_api_wait(e.f, user_privileged, "bob"));
	assert_false(privileged("zed"));
	assert_false(privileged("carol"));
	/* Deleted: the defaults. */
	assert_true(
	        fake_api_delete(e.f, "landlordconfigs.landlord.dev", NULL, LANDLORD_CONFIG_NAME));
	assert_true(fake_api_wait(e.f, user_not_privileged, "bob"));
	env_stop(&e);
	json_decref(cm);
}

static void test_config_follow__without_an_accepted_one_the_defaults(void **state)
{
	struct env e = {.f = fake_api_start()};

	fake_api_add_gvr(e.f, &LL_LANDLORDCONFIGS, true);
	env_start(&e);
	assert_false(privileged("bob"));
	put_config(e.f, LANDLORD_CONFIG_NAME, "bob");
	assert_true(fake_api_wait(e.f, user_privileged, "bob"));
	env_stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(
	                test_config_follow__loads_the_accepted_then_follows_valid_versions),
	        cmocka_unit_test(test_config_follow__without_an_accepted_one_the_defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
