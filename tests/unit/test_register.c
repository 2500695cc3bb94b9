/*
 * test_register.c - landlord's own webhook configurations (--webhook-url) against the fake API
 * server: what is registered is the embedded chart rendering pointed at the URL; registering is
 * idempotent, never takes over a configuration that is not landlord's and never puts back an
 * older bundle; removal removes only what still points at this process.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "fake_manager.h"
#include "kube/kube.h"
#include "pki/pki.h"
#include "webhook/register.h"

#define VWC  "validatingwebhookconfigurations.admissionregistration.k8s.io"
#define MWC  "mutatingwebhookconfigurations.admissionregistration.k8s.io"
#define BASE "https://127.0.0.1:9443"
#define PEM  "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"

static const struct kc_gvr VWC_GVR = {"admissionregistration.k8s.io", "v1",
                                      "validatingwebhookconfigurations",
                                      "ValidatingWebhookConfiguration", false};
static const struct kc_gvr MWC_GVR = {"admissionregistration.k8s.io", "v1",
                                      "mutatingwebhookconfigurations",
                                      "MutatingWebhookConfiguration", false};

struct env {
	struct fake_api *f;
	struct kc_client *kc;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	e->f = fake_api_start();
	fake_api_add_gvr(e->f, &VWC_GVR, false);
	fake_api_add_gvr(e->f, &MWC_GVR, false);
	e->kc = fake_client_new(e->f);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	kc_client_free(e->kc);
	fake_api_stop(e->f);
	free(e);
	return 0;
}

/* Every webhook of @cfg: url under @base with the chart's path (@path, or /sleep for the
 * enforced-sleep webhook), caBundle @b64 (NULL: none). */
static void assert_points(const json_t *cfg, const char *base, const char *path, const char *b64)
{
	const json_t *h;
	size_t i;
	char want[128];

	assert_true(json_array_size(jx_get(cfg, "webhooks", NULL)) > 0);
	json_array_foreach(jx_get(cfg, "webhooks", NULL), i, h) {
		bool sleep = strcmp(jx_str(h, "name", NULL), "sleep.landlord.dev") == 0;

		snprintf(want, sizeof(want), "%s%s", base, sleep ? "/sleep" : path);
		assert_string_equal(jx_str(h, "clientConfig", "url", NULL), want);
		assert_null(jx_get(h, "clientConfig", "service", NULL));
		if (b64)
			assert_string_equal(jx_str(h, "clientConfig", "caBundle", NULL), b64);
		assert_non_null(jx_get(h, "rules", NULL));
	}
}

static void test_register__the_chart_rendering_pointed_at_the_url(void **state)
{
	struct ll_err err = {{0}};
	json_t *objs = wh_configs_for_url(BASE, PEM, 7, &err);
	json_t *chart = jx_loads(webhook_configs_json, webhook_configs_json_len, NULL);
	char *b64 = pki_b64_encode(PEM, strlen(PEM));

	assert_non_null(objs);
	assert_int_equal(json_array_size(objs), 2);
	for (size_t k = 0; k < 2; k++) {
		const json_t *o = json_array_get(objs, k);
		const json_t *c = json_array_get(json_object_get(chart, "items"), k);

		assert_string_equal(jx_name(o),
		                    k == 0 ? wh_validating_names[0] : wh_mutating_names[0]);
		assert_string_equal(jx_label(o, LABEL_MANAGED_BY), MANAGED_BY_VALUE);
		assert_string_equal(jx_annotation(o, ANNOT_CA_BUNDLE_GEN), "7");
		assert_points(o, BASE, k == 0 ? "/validate" : "/mutate", b64);
		/* the same webhooks, rules and conditions as the chart's */
		assert_int_equal(json_array_size(jx_get(o, "webhooks", NULL)),
		                 json_array_size(jx_get(c, "webhooks", NULL)));
		assert_true(json_equal(jx_get(json_array_get(jx_get(o, "webhooks", NULL), 0),
		                              "matchConditions", NULL),
		                       jx_get(json_array_get(jx_get(c, "webhooks", NULL), 0),
		                              "matchConditions", NULL)));
	}
	free(b64);
	json_decref(chart);
	json_decref(objs);
}

static void test_register__creates_then_updates_idempotently(void **state)
{
	struct env *e = *state;
	struct ll_err err = {{0}};
	json_t *v, *m;

	assert_int_equal(wh_register(e->kc, BASE, PEM, 1, &err), 0);
	assert_int_equal(wh_register(e->kc, "https://10.0.0.1:8443", PEM, 1, &err), 0);
	v = fake_api_get(e->f, VWC, NULL, "landlord");
	m = fake_api_get(e->f, MWC, NULL, "landlord");
	assert_points(v, "https://10.0.0.1:8443", "/validate", NULL);
	assert_points(m, "https://10.0.0.1:8443", "/mutate", NULL);
	assert_string_equal(jx_label(v, LABEL_MANAGED_BY), MANAGED_BY_VALUE);
	json_decref(v);
	json_decref(m);
}

static void test_register__never_takes_over_a_configuration_not_landlords(void **state)
{
	struct env *e = *state;
	struct ll_err err = {{0}};
	json_t *chart = json_pack("{s:{s:s},s:[{s:s,s:{s:{s:s,s:s}}}]}", "metadata", "name",
	                          "landlord", "webhooks", "name", "x.landlord.dev", "clientConfig",
	                          "service", "name", "landlord", "namespace", "landlord-system"),
	       *after;

	fake_api_put(e->f, VWC, chart);
	assert_int_equal(wh_register(e->kc, BASE, PEM, 1, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "without --webhook-url"));
	after = fake_api_get(e->f, VWC, NULL, "landlord");
	assert_null(jx_str(json_array_get(jx_get(after, "webhooks", NULL), 0), "clientConfig",
	                   "url", NULL));
	/* removal leaves it too */
	assert_int_equal(wh_deregister(e->kc, BASE, &err), 0);
	json_decref(after);
	after = fake_api_get(e->f, VWC, NULL, "landlord");
	assert_non_null(after);
	json_decref(after);
	json_decref(chart);
}

static void test_register__never_puts_back_an_older_bundle(void **state)
{
	struct env *e = *state;
	struct ll_err err = {{0}};
	const char *newer = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n";
	char *b64 = pki_b64_encode(newer, strlen(newer));
	json_t *v;

	assert_int_equal(wh_register(e->kc, BASE, newer, 5, &err), 0);
	assert_int_equal(wh_register(e->kc, BASE, PEM, 4, &err), 0);
	v = fake_api_get(e->f, VWC, NULL, "landlord");
	assert_string_equal(jx_annotation(v, ANNOT_CA_BUNDLE_GEN), "5");
	assert_points(v, BASE, "/validate", b64);
	json_decref(v);
	free(b64);
}

static void test_register__removal_only_of_what_points_here(void **state)
{
	struct env *e = *state;
	struct ll_err err = {{0}};
	json_t *v;

	assert_int_equal(wh_register(e->kc, BASE, PEM, 1, &err), 0);
	/* another process registered after this one: this one's exit leaves it */
	assert_int_equal(wh_register(e->kc, "https://127.0.0.1:9444", PEM, 1, &err), 0);
	assert_int_equal(wh_deregister(e->kc, BASE, &err), 0);
	v = fake_api_get(e->f, VWC, NULL, "landlord");
	assert_non_null(v);
	json_decref(v);
	/* a prefix of another URL is not this one's */
	assert_int_equal(wh_deregister(e->kc, "https://127.0.0.1:944", &err), 0);
	v = fake_api_get(e->f, VWC, NULL, "landlord");
	assert_non_null(v);
	json_decref(v);
	assert_int_equal(wh_deregister(e->kc, "https://127.0.0.1:9444", &err), 0);
	assert_null(fake_api_get(e->f, VWC, NULL, "landlord"));
	assert_null(fake_api_get(e->f, MWC, NULL, "landlord"));
	/* nothing left to remove is not an error */
	assert_int_equal(wh_deregister(e->kc, BASE, &err), 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_register__the_chart_rendering_pointed_at_the_url),
	        T(test_register__creates_then_updates_idempotently),
	        T(test_register__never_takes_over_a_configuration_not_landlords),
	        T(test_register__never_puts_back_an_older_bundle),
	        T(test_register__removal_only_of_what_points_here),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
