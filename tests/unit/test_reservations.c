/*
 * test_reservations.c - the reservations controller in the real manager against the fake API
 * server: expired and settled slots are released, pending ones kept, and a ConfigMap left with
 * none is deleted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/api.h"
#include "base/json.h"
#include "controllers/controllers.h"
#include "fake_manager.h"
#include "tenancy/nsreserve.h"

static void seed(struct fake_api *f, const char *tenant, json_t *take_data)
{
	char name[128];
	json_t *cm;

	snprintf(name, sizeof(name), RESERVATIONS_PREFIX "%s", tenant);
	cm = json_pack("{s:{s:s,s:s,s:{s:s}},s:o}", "metadata", "name", name, "namespace",
	               LANDLORD_SYSTEM_NAMESPACE, "labels", LABEL_RESERVATIONS_FOR, tenant, "data",
	               take_data);
	fake_api_put(f, "configmaps", cm);
	json_decref(cm);
}

/* Poll the fake (no sleeping assertions): until @name's data has @n slots, or it is gone. */
static json_t *wait_slots(struct fake_api *f, const char *name, size_t n, bool gone)
{
	for (int i = 0; i < 500; i++) {
		json_t *cm = fake_api_get(f, "configmaps", LANDLORD_SYSTEM_NAMESPACE, name);

		if (gone ? cm == NULL : json_object_size(json_object_get(cm, "data")) == n)
			return cm ? cm : json_object();
		json_decref(cm);
		usleep(10000);
	}
	return NULL;
}

static void test_reservations__expired_slots_are_released(void **state)
{
	struct fake_api *f = fake_api_start();
	struct controller_def def = reservations_controller_def();
	char now[24], made[24];
	struct fake_mgr *m;
	json_t *cm;

	(void)state;
	snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
	seed(f, "acme",
	     json_pack("{s:s,s:s,s:s}", "acme-old", "1000", "acme-new", now, "acme-made", "1000"));
	/* a slot whose namespace exists and has settled goes; one not created yet stays */
	snprintf(made, sizeof(made), "%lld", (long long)time(NULL) - RESERVATION_SETTLE_S);
	seed(f, "initech", json_pack("{s:s,s:s}", "initech-a", made, "initech-b", now));
	cm = json_pack("{s:{s:s}}", "metadata", "name", "initech-a");
	fake_api_put(f, "namespaces", cm);
	json_decref(cm);
	seed(f, "globex", json_pack("{s:s}", "globex-old", "1000"));
	m = fake_mgr_start(f, &def, 1);
	cm = wait_slots(f, RESERVATIONS_PREFIX "acme", 1, false);
	assert_non_null(cm);
	assert_non_null(json_object_get(json_object_get(cm, "data"), "acme-new"));
	json_decref(cm);
	cm = wait_slots(f, RESERVATIONS_PREFIX "initech", 1, false);
	assert_non_null(cm);
	assert_non_null(json_object_get(json_object_get(cm, "data"), "initech-b"));
	json_decref(cm);
	cm = wait_slots(f, RESERVATIONS_PREFIX "globex", 0, true);
	assert_non_null(cm);
	json_decref(cm);
	fake_mgr_stop(m);
	fake_api_stop(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_reservations__expired_slots_are_released),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
