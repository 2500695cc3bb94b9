/*
 * test_manager.c - the controller manager, live against a real API server
 * (LANDLORD_TEST_KUBECONFIG; skipped otherwise, always run by tests/e2e/test_library_live.py).
 * Event wiring (primary, owned, mapped), requeue-after timers, readiness and stop.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "live.h"

#include "base/err.h"
#include "base/json.h"
#include "base/metrics.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/manager.h"

struct seen {
	pthread_mutex_t mu;
	json_t *counts; /* key -> reconciles */
	char requeue_key[128];
};

static long long seen_count(struct seen *s, const char *key)
{
	long long n;

	pthread_mutex_lock(&s->mu);
	n = json_integer_value(json_object_get(s->counts, key));
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* leading(true) and leading(false) calls, and the reconciles done when the last came */
static int lead_calls[2], reconciles_at_lead_false = -1;

struct fixture {
	struct kcfg cfg;
	struct kc_client *c;
	char ns[64];
	char mapped_key[128];
	struct seen seen;
	struct mgr *m;
	pthread_t runner;
};

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct seen *s = &((struct fixture *)ud)->seen;
	json_int_t n;

	pthread_mutex_lock(&s->mu);
	n = json_integer_value(json_object_get(s->counts, key)) + 1;
	json_object_set_new(s->counts, key, json_integer(n));
	pthread_mutex_unlock(&s->mu);
	/* The first pass over this key asks to be run again in 200 ms, by timer. */
	if (strcmp(key, s->requeue_key) == 0 && n == 1)
		return CTRL_RESULT_AFTER(200);
	return CTRL_RESULT_DONE;
}

/* Every child maps to one fixed key, whatever it is. */
static void map_to_fixed(const struct jdoc *obj, void (*emit)(const char *key, void *ctx),
                         void *ctx, void *ud)
{
	emit(ud, ctx);
}

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct fixture *f = ud;
	struct inf_opts primary = {
	        .gvr = KC_CONFIGMAPS, .ns = f->ns, .label_selector = "role=primary"};
	struct inf_opts child = {.gvr = KC_CONFIGMAPS, .ns = f->ns, .label_selector = "role=child"};
	struct inf *children = mgr_informer(m, &child);

	ctrl_watch_primary(c, mgr_informer(m, &primary));
	ctrl_watch_owned(c, children, "ConfigMap");
	ctrl_watch_mapped(c, children, map_to_fixed, f->mapped_key);
	return 0;
}

static void *run_manager(void *arg)
{
	mgr_run(arg);
	return NULL;
}

static json_t *configmap(const char *name, const char *role, const char *owner_uid,
                         const char *owner_name)
{
	json_t *cm = json_pack("{s:s,s:s,s:{s:s,s:{s:s}}}", "apiVersion", "v1", "kind", "ConfigMap",
	                       "metadata", "name", name, "labels", "role", role);

	if (owner_uid)
		json_object_set_new(json_object_get(cm, "metadata"), "ownerReferences",
		                    json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", "v1", "kind",
		                              "ConfigMap", "name", owner_name, "uid", owner_uid));
	return cm;
}

/* Create a ConfigMap; return its uid (caller frees). */
static char *create(struct fixture *f, json_t *take_obj)
{
	struct kc_resp resp = {0};
	char *uid;

	assert_int_equal(kc_create(f->c, &KC_CONFIGMAPS, f->ns, take_obj, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 201);
	uid = strdup(jx_uid(resp.body));
	kc_resp_release(&resp);
	json_decref(take_obj);
	return uid;
}

static bool wait_count(struct seen *s, const char *key, long long at_least)
{
	for (int i = 0; i < 300; i++) {
		if (seen_count(s, key) >= at_least)
			return true;
		live_sleep_ms(100);
	}
	return false;
}

static int live_setup(void **state)
{
	struct fixture *f;

	*state = NULL;
	if (live_kubeconfig() == NULL)
		return 0;
	f = calloc(1, sizeof(*f));
	if (live_connect(&f->cfg, NULL, &f->c) != 0) {
		free(f);
		return -1;
	}
	if (live_namespace_create(f->c, "test-manager", f->ns, sizeof(f->ns)) != 0) {
		kc_client_free(f->c);
		kcfg_release(&f->cfg);
		free(f);
		return -1;
	}
	snprintf(f->mapped_key, sizeof(f->mapped_key), "%s/mapped-target", f->ns);
	snprintf(f->seen.requeue_key, sizeof(f->seen.requeue_key), "%s/requeue-me", f->ns);
	pthread_mutex_init(&f->seen.mu, NULL);
	f->seen.counts = json_object();
	*state = f;
	return 0;
}

static int live_teardown(void **state)
{
	struct fixture *f = *state;

	if (f == NULL)
		return 0;
	live_namespace_delete(f->c, f->ns);
	json_decref(f->seen.counts);
	pthread_mutex_destroy(&f->seen.mu);
	kc_client_free(f->c);
	kcfg_release(&f->cfg);
	free(f);
	metrics_reset_for_tests();
	return 0;
}

static void leading(bool lead, void *ud)
{
	struct fixture *f = ud;

	lead_calls[lead]++;
	if (!lead) {
		pthread_mutex_lock(&f->seen.mu);
		reconciles_at_lead_false = (int)json_object_size(f->seen.counts);
		pthread_mutex_unlock(&f->seen.mu);
	}
}

static void test_manager__wires_events_requeues_by_timer_and_stops(void **state)
{
	struct fixture *f = *state;
	struct controller_def def = {.name = "test",
	                             .workers = 2,
	                             .setup = setup,
	                             .reconcile = reconcile,
	                             .leading = leading,
	                             .ud = f};
	char key[160], *owner_uid, *uid;
	struct kc_resp resp = {0};
	json_t *patch;

	if (f == NULL)
		skip();
	f->m = mgr_new(&(struct mgr_opts){.client = f->c, .probe_port = 0});
	mgr_add_controller(f->m, &def);
	assert_int_equal(pthread_create(&f->runner, NULL, run_manager, f->m), 0);

	/* A primary object is reconciled under its own key. */
	owner_uid = create(f, configmap("owner", "primary", NULL, NULL));
	snprintf(key, sizeof(key), "%s/owner", f->ns);
	assert_true(wait_count(&f->seen, key, 1));
	assert_true(mgr_is_leader(f->m));
	assert_true(mgr_probe_port(f->m) > 0);
	/* told it leads before its workers started, once */
	assert_int_equal(lead_calls[1], 1);
	assert_int_equal(lead_calls[0], 0);

	/* A child change reaches its owner (owned) and the fixed key (mapped). */
	uid = create(f, configmap("child", "child", owner_uid, "owner"));
	assert_true(wait_count(&f->seen, key, 2));
	assert_true(wait_count(&f->seen, f->mapped_key, 1));
	patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", "touched", "yes");
	assert_int_equal(kc_patch(f->c, &KC_CONFIGMAPS, f->ns, "child", NULL, KC_PATCH_MERGE, patch,
	                          NULL, &resp, NULL),
	                 0);
	assert_int_equal(resp.http_status, 200);
	kc_resp_release(&resp);
	json_decref(patch);
	assert_true(wait_count(&f->seen, key, 3));
	assert_true(wait_count(&f->seen, f->mapped_key, 2));
	/* The child is not a primary: its own key is never reconciled. */
	snprintf(key, sizeof(key), "%s/child", f->ns);
	assert_int_equal(seen_count(&f->seen, key), 0);

	/* CTRL_REQUEUE_AFTER runs the key again by timer, with no event in between. */
	free(create(f, configmap("requeue-me", "primary", NULL, NULL)));
	assert_true(wait_count(&f->seen, f->seen.requeue_key, 2));
	assert_true(metrics_get("landlord_reconcile_total",
	                        "controller=\"test\",result=\"requeue\"") >= 1);

	mgr_request_stop(f->m);
	assert_int_equal(pthread_join(f->runner, NULL), 0);
	assert_false(mgr_is_leader(f->m));
	/* told it no longer leads when it stopped, once */
	assert_int_equal(lead_calls[0], 1);
	assert_true(reconciles_at_lead_false >= 3);
	mgr_free(f->m);
	free(owner_uid);
	free(uid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(
	                test_manager__wires_events_requeues_by_timer_and_stops, live_setup,
	                live_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
