/*
 * test_reserve.c - maxNamespaces slots (webhook/reserve.h) against the fake API server: a slot
 * under the limit, a refusal at it, a retried admission, expired slots, namespaces the caches
 * already count, and concurrent reservations for the last slots.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "fake_apiserver.h"
#include "fake_manager.h"
#include "kube/kube.h"
#include "tenancy/admit_memview.h"
#include "tenancy/nsreserve.h"
#include "webhook/reserve.h"

#define CM RESERVATIONS_PREFIX "acme"

struct env {
	struct fake_api *f;
	struct kc_client *kc;
	struct adm_memview *mv;
	struct adm_view view;
};

/* acme has acme-dev (labelled) and claims acme-prod (not created yet). */
static const char VIEW[] =
        "{\"tenants\":[{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\","
        "\"namespaces\":{\"withTenantPrefix\":[\"dev\",\"prod\"]}}}],"
        "\"namespaces\":[{\"metadata\":{\"name\":\"acme-dev\",\"labels\":"
        "{\"landlord.dev/tenant\":\"acme\"}}}]}";

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	json_t *doc = json_loads(VIEW, 0, NULL);
	struct ll_err err = {{0}};

	e->f = fake_api_start();
	e->kc = fake_client_new(e->f);
	assert_int_equal(adm_memview_new(doc, &e->mv, &err), 0);
	e->view = adm_memview_view(e->mv);
	json_decref(doc);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	kc_client_free(e->kc);
	fake_api_stop(e->f);
	adm_memview_free(e->mv);
	free(e);
	return 0;
}

static int reserve(struct env *e, const char *ns, long long max, char *why)
{
	return ns_reserve_slot(e->kc, &e->view, "acme", ns, max, why, 512);
}

static json_t *slots(struct env *e)
{
	json_t *cm = fake_api_get(e->f, "configmaps", LANDLORD_SYSTEM_NAMESPACE, CM);
	json_t *data = json_incref(json_object_get(cm, "data"));

	assert_string_equal(jx_str(cm, "metadata", "labels", LABEL_RESERVATIONS_FOR, NULL), "acme");
	json_decref(cm);
	return data;
}

static void seed(struct env *e, const char *data_json)
{
	json_t *cm = json_pack("{s:{s:s,s:s,s:{s:s}},s:o}", "metadata", "name", CM, "namespace",
	                       LANDLORD_SYSTEM_NAMESPACE, "labels", LABEL_RESERVATIONS_FOR, "acme",
	                       "data", json_loads(data_json, 0, NULL));

	fake_api_put(e->f, "configmaps", cm);
	json_decref(cm);
}

/* Two namespaces counted, a limit of 4: two slots, then a refusal that says why. */
static void test_reserve__slots_up_to_the_limit_then_refuses(void **state)
{
	struct env *e = *state;
	char why[512] = "";
	json_t *data;

	assert_int_equal(reserve(e, "acme-a", 4, why), 0);
	assert_int_equal(reserve(e, "acme-b", 4, why), 0);
	assert_int_equal(reserve(e, "acme-c", 4, why), 1);
	assert_non_null(strstr(why, "tenant \"acme\" has 4 namespaces, counting those being"));
	assert_non_null(strstr(why, "maxNamespaces 4"));
	/* a retried admission finds its own slot */
	assert_int_equal(reserve(e, "acme-a", 4, why), 0);
	data = slots(e);
	assert_int_equal(json_object_size(data), 2);
	assert_non_null(json_object_get(data, "acme-a"));
	json_decref(data);
}

/* A slot for a namespace the caches count (acme-dev) or the spec claims adds nothing. */
static void test_reserve__counted_namespaces_take_no_second_slot(void **state)
{
	struct env *e = *state;
	char why[512] = "", now[24];

	snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
	seed(e, "{}");
	json_t *cm = fake_api_get(e->f, "configmaps", LANDLORD_SYSTEM_NAMESPACE, CM);
	json_object_set_new(json_object_get(cm, "data"), "acme-dev", json_string(now));
	json_object_set_new(json_object_get(cm, "data"), "acme-prod", json_string(now));
	fake_api_put(e->f, "configmaps", cm);
	json_decref(cm);
	assert_int_equal(reserve(e, "acme-a", 3, why), 0);
	assert_int_equal(reserve(e, "acme-b", 3, why), 1);
}

/* Expired slots and values that are not times count for nothing and are dropped on write. */
static void test_reserve__expired_slots_are_dropped(void **state)
{
	struct env *e = *state;
	char why[512] = "";
	json_t *data;

	seed(e, "{\"acme-old\":\"1000\",\"acme-bad\":\"soon\",\"acme-far\":\"99999999999\"}");
	assert_int_equal(reserve(e, "acme-a", 3, why), 0);
	data = slots(e);
	assert_int_equal(json_object_size(data), 1);
	assert_non_null(json_object_get(data, "acme-a"));
	json_decref(data);
}

struct racer {
	struct env *e;
	char ns[32];
	int rc;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	char why[512];

	r->rc = reserve(r->e, r->ns, 5, why);
	return NULL;
}

/* Eight admissions at once for three slots: exactly three win, whatever the order. */
static void test_reserve__concurrent_admissions_never_pass_the_limit(void **state)
{
	struct env *e = *state;
	struct racer r[8];
	pthread_t t[8];
	int won = 0;
	json_t *data;

	for (int i = 0; i < 8; i++) {
		r[i] = (struct racer){.e = e};
		snprintf(r[i].ns, sizeof(r[i].ns), "acme-r%d", i);
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_true(r[i].rc == 0 || r[i].rc == 1);
		won += r[i].rc == 0;
	}
	assert_int_equal(won, 3);
	data = slots(e);
	assert_int_equal(json_object_size(data), 3);
	json_decref(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_reserve__slots_up_to_the_limit_then_refuses,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_reserve__counted_namespaces_take_no_second_slot, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_reserve__expired_slots_are_dropped, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(
	                test_reserve__concurrent_admissions_never_pass_the_limit, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
