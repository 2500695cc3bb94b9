/*
 * test_certs.c - the webhook's certificate lifecycle against the fake API server: the first
 * replica creates the Secret, later ones read it and never mint; two starting at once end with
 * one CA; a CA rotation puts the new CA into the bundle and into landlord's configurations
 * before anything it signs is served, and drops the old one only after; a replica with an
 * older view never writes an older bundle; replicas follow the Secret. Time is a test clock.
 */
#include <errno.h>
#include <pthread.h>
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
#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "fake_manager.h"
#include "kube/kube.h"
#include "pki/certs.h"
#include "pki/pki.h"

#define NS      "landlord-system"
#define SECRETS "secrets"
#define VWC     "validatingwebhookconfigurations.admissionregistration.k8s.io"
#define MWC     "mutatingwebhookconfigurations.admissionregistration.k8s.io"
#define T0      1800000000LL
#define CA_LIFE 3000
#define SV_LIFE 900
#define GRACE   60
#define DRAIN   600

static const struct kc_gvr VWC_GVR = {"admissionregistration.k8s.io", "v1",
                                      "validatingwebhookconfigurations",
                                      "ValidatingWebhookConfiguration", false};
static const struct kc_gvr MWC_GVR = {"admissionregistration.k8s.io", "v1",
                                      "mutatingwebhookconfigurations",
                                      "MutatingWebhookConfiguration", false};
static const char *const DNS[] = {"landlord-webhook.landlord-system.svc", NULL};
static const char *const VALIDATING[] = {"landlord-validating", NULL};
static const char *const MUTATING[] = {"landlord-mutating", NULL};

struct replica {
	struct kc_client *kc;
	struct certs *certs;
	int64_t now;
	int pairs; /* on_pair calls */
};

struct env {
	struct fake_api *f;
	struct replica r[2];
};

static int64_t clock_of(void *ud)
{
	return ((struct replica *)ud)->now;
}

static void on_pair(void *ud, const char *cert, const char *key)
{
	((struct replica *)ud)->pairs++;
}

static void start_replica(struct env *e, int i)
{
	struct replica *r = &e->r[i];

	r->kc = fake_client_new(e->f);
	r->now = T0;
	r->certs = certs_new(&(struct certs_opts){.client = r->kc,
	                                          .ns = NS,
	                                          .dns_names = DNS,
	                                          .validating = VALIDATING,
	                                          .mutating = MUTATING,
	                                          .ca_lifetime_s = CA_LIFE,
	                                          .serving_lifetime_s = SV_LIFE,
	                                          .publish_grace_s = GRACE,
	                                          .drain_s = DRAIN,
	                                          .now = clock_of,
	                                          .on_pair = on_pair,
	                                          .ud = r});
}

static void put_config(struct fake_api *f, const char *res, const char *name)
{
	json_t *cfg = json_pack("{s:{s:s},s:[{s:s,s:{s:{s:s,s:s,s:s}}},{s:s,s:{s:s}}]}", "metadata",
	                        "name", name, "webhooks", "name", "a.landlord.dev", "clientConfig",
	                        "service", "namespace", NS, "name", "landlord", "path", "/validate",
	                        "name", "b.landlord.dev", "clientConfig", "url",
	                        "https://127.0.0.1:9443/validate");

	fake_api_put(f, res, cfg);
	json_decref(cfg);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	e->f = fake_api_start();
	fake_api_add_gvr(e->f, &VWC_GVR, false);
	fake_api_add_gvr(e->f, &MWC_GVR, false);
	put_config(e->f, VWC, VALIDATING[0]);
	put_config(e->f, MWC, MUTATING[0]);
	put_config(e->f, VWC, "someone-elses");
	start_replica(e, 0);
	start_replica(e, 1);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	for (int i = 0; i < 2; i++) {
		certs_free(e->r[i].certs);
		kc_client_free(e->r[i].kc);
	}
	fake_api_stop(e->f);
	free(e);
	return 0;
}

static void sync_ok(struct replica *r)
{
	struct ll_err err = {{0}};
	int rc = certs_sync(r->certs, &err);

	if (rc != 0)
		fail_msg("certs_sync: %d %s", rc, err.msg);
}

/* A data field of the Secret, decoded (owned), or NULL. */
static char *secret_field(struct fake_api *f, const char *key)
{
	json_t *s = fake_api_get(f, SECRETS, NS, WEBHOOK_TLS_SECRET);
	const char *b64 = jx_str(s, "data", key, NULL);
	struct buf b = BUF_INIT(PKI_BUNDLE_MAX);
	char *out = NULL;

	if (b64 && pki_b64_decode(b64, &b) == 0)
		out = buf_detach(&b);
	buf_release(&b);
	json_decref(s);
	return out;
}

/* The caBundle of webhook @i of a configuration, decoded (owned), or NULL. */
static char *config_bundle(struct fake_api *f, const char *res, const char *name, int i)
{
	json_t *cfg = fake_api_get(f, res, NULL, name);
	const char *b64 = jx_str(json_array_get(json_object_get(cfg, "webhooks"), (size_t)i),
	                         "clientConfig", "caBundle", NULL);
	struct buf b = BUF_INIT(PKI_BUNDLE_MAX);
	char *out = NULL;

	if (b64 && pki_b64_decode(b64, &b) == 0)
		out = buf_detach(&b);
	buf_release(&b);
	json_decref(cfg);
	return out;
}

static size_t bundle_size(const char *pem)
{
	struct pki_bundle b = {0};
	size_t n;

	assert_int_equal(pki_bundle_split(pem, strlen(pem), &b, NULL), 0);
	n = b.n;
	pki_bundle_release(&b);
	return n;
}

/* What the API server sees: the replica's served certificate verifies against the caBundle of
 * every webhook of both owned configurations, at the replica's time. */
static void assert_api_server_trusts(struct env *e, struct replica *r)
{
	const char *res[2] = {VWC, MWC}, *names[2] = {VALIDATING[0], MUTATING[0]};
	struct pki_pair served = {0};
	struct ll_err err = {{0}};

	assert_int_equal(certs_served(r->certs, &served), 0);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 2; i++) {
			char *bundle = config_bundle(e->f, res[k], names[k], i);

			assert_non_null(bundle);
			if (pki_verify(served.cert_pem, bundle, r->now, true, &err) != 0)
				fail_msg("%s %s webhook %d: %s", res[k], names[k], i, err.msg);
			free(bundle);
		}
	pki_pair_release(&served);
}

static void test_certs__the_first_replica_creates_the_secret_and_publishes(void **state)
{
	struct env *e = *state;
	json_t *s, *other;
	char *crt, *ca, *bundle;
	struct pki_pair served = {0};

	sync_ok(&e->r[0]);
	s = fake_api_get(e->f, SECRETS, NS, WEBHOOK_TLS_SECRET);
	assert_non_null(s);
	assert_string_equal(jx_str(s, "type", NULL), "kubernetes.io/tls");
	assert_string_equal(jx_label(s, LABEL_MANAGED_BY), MANAGED_BY_VALUE);
	assert_string_equal(jx_annotation(s, ANNOT_CA_BUNDLE_GEN), "1");
	assert_non_null(jx_str(s, "data", "ca.key", NULL));
	assert_non_null(jx_str(s, "data", "tls.key", NULL));
	assert_null(jx_str(s, "data", "next-ca.crt", NULL));
	json_decref(s);
	crt = secret_field(e->f, "tls.crt");
	ca = secret_field(e->f, "ca.crt");
	bundle = secret_field(e->f, "ca-bundle.crt");
	assert_int_equal(pki_verify(crt, ca, T0, true, NULL), 0);
	assert_int_equal(bundle_size(bundle), 1);
	assert_int_equal(certs_served(e->r[0].certs, &served), 0);
	assert_string_equal(served.cert_pem, crt);
	assert_int_equal(e->r[0].pairs, 1);
	assert_api_server_trusts(e, &e->r[0]);
	/* only landlord's configurations: another's is untouched */
	other = fake_api_get(e->f, VWC, NULL, "someone-elses");
	assert_null(jx_str(json_array_get(json_object_get(other, "webhooks"), 0), "clientConfig",
	                   "caBundle", NULL));
	assert_null(jx_annotation(other, ANNOT_CA_BUNDLE_GEN));
	json_decref(other);
	other = fake_api_get(e->f, MWC, NULL, MUTATING[0]);
	assert_string_equal(jx_annotation(other, ANNOT_CA_BUNDLE_GEN), "1");
	json_decref(other);
	/* a second pass writes nothing */
	{
		int writes = fake_api_writes(e->f);

		sync_ok(&e->r[0]);
		assert_int_equal(fake_api_writes(e->f), writes);
		assert_int_equal(e->r[0].pairs, 1);
	}
	pki_pair_release(&served);
	free(crt);
	free(ca);
	free(bundle);
}

static void test_certs__a_later_replica_reads_the_secret_and_never_mints(void **state)
{
	struct env *e = *state;
	struct pki_pair a = {0}, b = {0};
	int writes;

	sync_ok(&e->r[0]);
	writes = fake_api_writes(e->f);
	e->r[1].now = T0 + 10;
	sync_ok(&e->r[1]);
	assert_int_equal(fake_api_writes(e->f), writes);
	assert_int_equal(fake_api_requests(e->f, "POST", "/secrets"), 1);
	assert_int_equal(certs_served(e->r[0].certs, &a), 0);
	assert_int_equal(certs_served(e->r[1].certs, &b), 0);
	assert_string_equal(a.cert_pem, b.cert_pem);
	assert_string_equal(a.key_pem, b.key_pem);
	pki_pair_release(&a);
	pki_pair_release(&b);
}

static void *sync_thread(void *arg)
{
	sync_ok(arg);
	return NULL;
}

static bool two_gets(struct fake_api *f, void *ud)
{
	return fake_api_requests(f, "GET", "/secrets/" WEBHOOK_TLS_SECRET) >= 2;
}

static void test_certs__two_replicas_starting_at_once_end_with_one_ca(void **state)
{
	struct env *e = *state;
	struct pki_pair a = {0}, b = {0};
	char *bundle, *ca;
	pthread_t t[2];
	int hold = fake_api_rule_add(e->f, &(struct fake_rule){.method = "GET",
	                                                       .path_contains = "/secrets/",
	                                                       .action = FAKE_HOLD,
	                                                       .times = 2});

	/* both read "no Secret" before either creates one */
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, sync_thread, &e->r[i]), 0);
	assert_true(fake_api_wait(e->f, two_gets, NULL));
	fake_api_release(e->f, hold);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(fake_api_requests(e->f, "POST", "/secrets"), 2); /* one lost: 409 */
	bundle = secret_field(e->f, "ca-bundle.crt");
	ca = secret_field(e->f, "ca.crt");
	assert_int_equal(bundle_size(bundle), 1);
	assert_int_equal(certs_served(e->r[0].certs, &a), 0);
	assert_int_equal(certs_served(e->r[1].certs, &b), 0);
	assert_string_equal(a.cert_pem, b.cert_pem);
	assert_int_equal(pki_verify(a.cert_pem, ca, T0, true, NULL), 0);
	assert_api_server_trusts(e, &e->r[0]);
	pki_pair_release(&a);
	pki_pair_release(&b);
	free(bundle);
	free(ca);
}

/* The served certificate's issuer is the CA @ca_pem (and no other). */
static void assert_served_from(struct replica *r, const char *ca_pem)
{
	struct pki_pair served = {0};

	assert_int_equal(certs_served(r->certs, &served), 0);
	assert_int_equal(pki_verify(served.cert_pem, ca_pem, r->now, true, NULL), 0);
	pki_pair_release(&served);
}

static void test_certs__a_ca_rotation_overlaps_the_bundle_before_serving_the_new_ca(void **state)
{
	struct env *e = *state;
	struct replica *r = &e->r[0], *other = &e->r[1];
	char *old_ca, *new_ca, *bundle, *cfg;
	/* CA: notBefore T0-300, notAfter T0+3000: two thirds at T0+1900 */
	int64_t due = T0 + 1900;

	sync_ok(r);
	old_ca = secret_field(e->f, "ca.crt");
	/* 1. the CA is due: a new CA joins the bundle and the configurations; the served
	 * certificate is still from the old CA */
	r->now = other->now = due;
	sync_ok(r);
	new_ca = secret_field(e->f, "next-ca.crt");
	assert_non_null(new_ca);
	bundle = secret_field(e->f, "ca-bundle.crt");
	assert_int_equal(bundle_size(bundle), 2);
	cfg = config_bundle(e->f, VWC, VALIDATING[0], 0);
	assert_string_equal(cfg, bundle);
	free(cfg);
	free(bundle);
	assert_served_from(r, old_ca);
	assert_api_server_trusts(e, r);
	/* within the grace period nothing more happens, on any replica */
	r->now = other->now = due + GRACE - 1;
	sync_ok(other);
	sync_ok(r);
	assert_served_from(r, old_ca);
	assert_served_from(other, old_ca);
	/* 2. after the grace: a certificate from the new CA is served; the old CA stays, so a
	 * replica that has not re-read the Secret yet is still trusted */
	r->now = due + GRACE;
	sync_ok(r);
	assert_served_from(r, new_ca);
	assert_api_server_trusts(e, r);
	assert_served_from(other, old_ca);
	assert_api_server_trusts(e, other);
	bundle = secret_field(e->f, "ca-bundle.crt");
	assert_int_equal(bundle_size(bundle), 2);
	free(bundle);
	other->now = r->now;
	sync_ok(other);
	assert_served_from(other, new_ca);
	/* 3. after the drain: the old CA leaves the bundle and the configurations */
	r->now = due + GRACE + DRAIN;
	sync_ok(r);
	bundle = secret_field(e->f, "ca-bundle.crt");
	assert_int_equal(bundle_size(bundle), 1);
	assert_int_equal(pki_verify(new_ca, bundle, r->now, false, NULL), 0);
	cfg = config_bundle(e->f, MWC, MUTATING[0], 1);
	assert_string_equal(cfg, bundle);
	assert_int_equal(pki_verify(old_ca, cfg, r->now, false, NULL), -EKEYREJECTED);
	assert_api_server_trusts(e, r);
	free(cfg);
	free(bundle);
	free(old_ca);
	free(new_ca);
}

static void test_certs__the_serving_certificate_renews_at_two_thirds(void **state)
{
	struct env *e = *state;
	struct replica *r = &e->r[0];
	struct pki_pair a = {0}, b = {0};

	sync_ok(r);
	assert_int_equal(certs_served(r->certs, &a), 0);
	r->now = T0 + 569; /* notBefore T0-90, notAfter T0+900: due at T0+570 */
	sync_ok(r);
	assert_int_equal(r->pairs, 1);
	r->now = T0 + 570;
	sync_ok(r);
	assert_int_equal(r->pairs, 2);
	assert_int_equal(certs_served(r->certs, &b), 0);
	assert_string_not_equal(a.cert_pem, b.cert_pem);
	assert_api_server_trusts(e, r);
	pki_pair_release(&a);
	pki_pair_release(&b);
}

static void test_certs__an_older_view_never_writes_an_older_bundle(void **state)
{
	struct env *e = *state;
	json_t *cfg;

	sync_ok(&e->r[0]);
	/* a configuration already carries a later generation (another replica's, from a Secret
	 * this one has not read): left as it is */
	cfg = fake_api_get(e->f, VWC, NULL, VALIDATING[0]);
	json_object_set_new(json_object_get(jx_get(cfg, "metadata", NULL), "annotations"),
	                    ANNOT_CA_BUNDLE_GEN, json_string("7"));
	json_object_set_new(json_object_get(json_array_get(json_object_get(cfg, "webhooks"), 0),
	                                    "clientConfig"),
	                    "caBundle", json_string("bmV3ZXI="));
	fake_api_put(e->f, VWC, cfg);
	json_decref(cfg);
	sync_ok(&e->r[1]);
	cfg = fake_api_get(e->f, VWC, NULL, VALIDATING[0]);
	assert_string_equal(jx_str(json_array_get(json_object_get(cfg, "webhooks"), 0),
	                           "clientConfig", "caBundle", NULL),
	                    "bmV3ZXI=");
	json_decref(cfg);
}

static void test_certs__an_unusable_secret_is_replaced_with_a_later_generation(void **state)
{
	struct env *e = *state;
	json_t *s =
	        json_pack("{s:{s:s,s:s,s:{s:s}},s:s,s:{s:s}}", "metadata", "name",
	                  WEBHOOK_TLS_SECRET, "namespace", NS, "annotations", ANNOT_CA_BUNDLE_GEN,
	                  "4", "type", "kubernetes.io/tls", "data", "ca.crt", "bm90IGEgY2VydA==");

	fake_api_put(e->f, SECRETS, s);
	json_decref(s);
	sync_ok(&e->r[0]);
	s = fake_api_get(e->f, SECRETS, NS, WEBHOOK_TLS_SECRET);
	assert_string_equal(jx_annotation(s, ANNOT_CA_BUNDLE_GEN), "5");
	json_decref(s);
	assert_api_server_trusts(e, &e->r[0]);
}

static bool follows(struct fake_api *f, void *ud)
{
	struct env *e = ud;
	struct pki_pair a = {0}, b = {0};
	bool same = certs_served(e->r[0].certs, &a) == 0 && certs_served(e->r[1].certs, &b) == 0 &&
	            strcmp(a.cert_pem, b.cert_pem) == 0;

	pki_pair_release(&a);
	pki_pair_release(&b);
	return same;
}

static void test_certs__a_running_replica_follows_the_secret(void **state)
{
	struct env *e = *state;
	int before;

	sync_ok(&e->r[0]);
	assert_int_equal(certs_start(e->r[0].certs, 20), 0);
	assert_int_equal(certs_start(e->r[0].certs, 20), -EALREADY);
	/* the other replica renews the serving certificate: the first one serves it soon */
	before = e->r[0].pairs;
	e->r[1].now = T0 + 600;
	sync_ok(&e->r[1]);
	assert_true(fake_api_wait(e->f, follows, e));
	assert_true(e->r[0].pairs > before);
}

static void test_certs__bad_options_and_api_errors_are_reported(void **state)
{
	struct env *e = *state;
	struct ll_err err = {{0}};
	struct certs *c = certs_new(&(struct certs_opts){.client = e->r[0].kc, .ns = NS});

	assert_int_equal(certs_sync(c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "DNS name or IP"));
	certs_free(c);
	fake_api_rule_add(e->f, &(struct fake_rule){.method = "GET",
	                                            .path_contains = "/secrets/",
	                                            .action = FAKE_ANSWER,
	                                            .status = 403});
	assert_int_equal(certs_sync(e->r[0].certs, &err), -EIO);
	assert_non_null(
	        strstr(err.msg, "cannot read Secret landlord-system/" WEBHOOK_TLS_SECRET ": 403"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(test_certs__the_first_replica_creates_the_secret_and_publishes),
	        T(test_certs__a_later_replica_reads_the_secret_and_never_mints),
	        T(test_certs__two_replicas_starting_at_once_end_with_one_ca),
	        T(test_certs__a_ca_rotation_overlaps_the_bundle_before_serving_the_new_ca),
	        T(test_certs__the_serving_certificate_renews_at_two_thirds),
	        T(test_certs__an_older_view_never_writes_an_older_bundle),
	        T(test_certs__an_unusable_secret_is_replaced_with_a_later_generation),
	        T(test_certs__a_running_replica_follows_the_secret),
	        T(test_certs__bad_options_and_api_errors_are_reported),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
