/*
 * test_pki.c - CAs and serving certificates as a TLS client checks them (chain, purpose, host
 * and IP names, validity), PEM bundles split, joined and capped, base64, and a specific error
 * for every refusal.
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
#include <time.h>

#include <cmocka.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "base/buf.h"
#include "base/err.h"
#include "pki/pki.h"

#define DAY 86400

static const char *const DNS[] = {"landlord-webhook.landlord-system.svc",
                                  "landlord-webhook.landlord-system.svc.cluster.local", NULL};
static const char *const IPS[] = {"127.0.0.1", "::1", NULL};

static void make_ca(struct pki_pair *ca, int64_t now, int64_t life)
{
	struct ll_err err = {{0}};

	assert_int_equal(pki_make_ca("landlord-webhook-ca", now, life, ca, &err), 0);
	assert_non_null(ca->cert_pem);
	assert_non_null(ca->key_pem);
}

static void make_serving(const struct pki_pair *ca, struct pki_pair *out, int64_t now, int64_t life)
{
	struct pki_serving_opts o = {.dns_names = DNS, .ips = IPS, .now = now, .lifetime_s = life};
	struct ll_err err = {{0}};

	assert_int_equal(pki_make_serving(ca, &o, out, &err), 0);
}

static X509 *parse(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);

	BIO_free(bio);
	assert_non_null(x);
	return x;
}

static void test_pki__a_ca_is_self_signed_with_ca_true_and_keycertsign(void **state)
{
	struct pki_pair a = {0}, b = {0};
	struct pki_cert_info ia, ib;
	int64_t now = time(NULL);
	X509 *x;

	make_ca(&a, 0, 365 * DAY);
	make_ca(&b, 0, 365 * DAY);
	assert_int_equal(pki_read_cert(a.cert_pem, strlen(a.cert_pem), &ia, NULL), 0);
	assert_int_equal(pki_read_cert(b.cert_pem, strlen(b.cert_pem), &ib, NULL), 0);
	assert_true(ia.is_ca);
	assert_string_equal(ia.cn, "landlord-webhook-ca");
	/* backdated by at most PKI_BACKDATE_MAX_S for clock skew; a year from now */
	assert_in_range(now - ia.not_before, PKI_BACKDATE_MAX_S - 5, PKI_BACKDATE_MAX_S + 5);
	assert_in_range(ia.not_after - now, 365 * DAY - 5, 365 * DAY + 5);
	/* 128 random bits, positive: two CAs never share a serial */
	assert_in_range(strlen(ia.serial_hex), 24, 32);
	assert_string_not_equal(ia.serial_hex, ib.serial_hex);
	x = parse(a.cert_pem);
	assert_int_equal(X509_check_ca(x), 1);
	assert_true(X509_get_key_usage(x) & KU_KEY_CERT_SIGN);
	assert_int_equal(X509_check_issued(x, x), X509_V_OK);
	assert_int_equal(pki_check_pair(&a, NULL), 0);
	/* a CA verifies against itself */
	assert_int_equal(pki_verify(a.cert_pem, a.cert_pem, 0, false, NULL), 0);
	X509_free(x);
	pki_pair_release(&a);
	pki_pair_release(&b);
}

static void test_pki__a_serving_certificate_chains_to_its_ca_for_its_names(void **state)
{
	struct pki_pair ca = {0}, s = {0};
	struct pki_cert_info info;
	struct ll_err err = {{0}};
	X509 *x;

	make_ca(&ca, 0, 365 * DAY);
	make_serving(&ca, &s, 0, 90 * DAY);
	assert_int_equal(pki_verify(s.cert_pem, ca.cert_pem, 0, true, &err), 0);
	assert_int_equal(pki_check_pair(&s, NULL), 0);
	assert_int_equal(pki_read_cert(s.cert_pem, strlen(s.cert_pem), &info, NULL), 0);
	assert_false(info.is_ca);
	assert_string_equal(info.cn, DNS[0]);
	x = parse(s.cert_pem);
	assert_int_equal(X509_check_host(x, DNS[0], 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(x, DNS[1], 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(x, "evil.example.com", 0, 0, NULL), 0);
	assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
	assert_int_equal(X509_check_ip_asc(x, "::1", 0), 1);
	assert_true(X509_get_extended_key_usage(x) & XKU_SSL_SERVER);
	assert_false(X509_get_extended_key_usage(x) & XKU_SSL_CLIENT);
	assert_int_equal(X509_check_ca(x), 0);
	X509_free(x);
	/* pki_cert_names(): the same check, IPs as IPs and anything else as a DNS name */
	assert_int_equal(pki_cert_names(s.cert_pem, DNS[1]), 0);
	assert_int_equal(pki_cert_names(s.cert_pem, "127.0.0.1"), 0);
	assert_int_equal(pki_cert_names(s.cert_pem, "::1"), 0);
	assert_int_equal(pki_cert_names(s.cert_pem, "10.0.0.1"), -ENOENT);
	assert_int_equal(pki_cert_names(s.cert_pem, "evil.example.com"), -ENOENT);
	assert_int_equal(pki_cert_names("not a certificate", DNS[0]), -EINVAL);
	pki_pair_release(&s);
	pki_pair_release(&ca);
}

static void test_pki__a_serving_certificate_never_outlives_its_ca(void **state)
{
	struct pki_pair ca = {0}, s = {0};
	struct pki_cert_info ic, is;

	make_ca(&ca, 0, 10 * DAY);
	make_serving(&ca, &s, 0, 90 * DAY);
	assert_int_equal(pki_read_cert(ca.cert_pem, strlen(ca.cert_pem), &ic, NULL), 0);
	assert_int_equal(pki_read_cert(s.cert_pem, strlen(s.cert_pem), &is, NULL), 0);
	assert_int_equal(is.not_after, ic.not_after);
	pki_pair_release(&s);
	pki_pair_release(&ca);
}

static void test_pki__short_lifetimes_are_backdated_by_a_tenth(void **state)
{
	struct pki_pair ca = {0};
	struct pki_cert_info info;
	int64_t now = 1800000000;

	make_ca(&ca, now, 30);
	assert_int_equal(pki_read_cert(ca.cert_pem, strlen(ca.cert_pem), &info, NULL), 0);
	assert_int_equal(info.not_before, now - 3);
	assert_int_equal(info.not_after, now + 30);
	pki_pair_release(&ca);
}

static void test_pki__verification_fails_for_another_ca_expiry_and_purpose(void **state)
{
	struct pki_pair ca = {0}, other = {0}, s = {0};
	struct ll_err err = {{0}};
	int64_t now = time(NULL);

	make_ca(&ca, now, 365 * DAY);
	make_ca(&other, now, 365 * DAY);
	make_serving(&ca, &s, now, 90 * DAY);
	assert_int_equal(pki_verify(s.cert_pem, other.cert_pem, 0, true, &err), -EKEYREJECTED);
	assert_non_null(strstr(err.msg, "does not verify: unable to get local issuer"));
	assert_int_equal(pki_verify(s.cert_pem, ca.cert_pem, now + 91 * DAY, true, &err),
	                 -EKEYREJECTED);
	assert_non_null(strstr(err.msg, "expired"));
	assert_int_equal(pki_verify(s.cert_pem, ca.cert_pem, now - DAY, true, &err), -EKEYREJECTED);
	assert_non_null(strstr(err.msg, "not yet valid"));
	/* a CA certificate is no TLS server certificate */
	assert_int_equal(pki_verify(ca.cert_pem, ca.cert_pem, 0, true, &err), -EKEYREJECTED);
	/* both CAs in one bundle: the certificate chains to the one that signed it */
	{
		char *both = NULL;
		struct pki_bundle b = {0};

		assert_int_equal(pki_bundle_add(&b, other.cert_pem, NULL), 0);
		assert_int_equal(pki_bundle_add(&b, ca.cert_pem, NULL), 0);
		both = pki_bundle_join(&b);
		assert_int_equal(pki_verify(s.cert_pem, both, 0, true, &err), 0);
		free(both);
		pki_bundle_release(&b);
	}
	assert_int_equal(pki_verify(s.cert_pem, "", 0, true, &err), -EINVAL);
	assert_int_equal(pki_verify(s.cert_pem, "no pem here", 0, true, &err), -EINVAL);
	assert_string_equal(err.msg, "the CA bundle holds no certificate");
	pki_pair_release(&s);
	pki_pair_release(&ca);
	pki_pair_release(&other);
}

static void test_pki__pairs_that_do_not_match_are_refused(void **state)
{
	struct pki_pair a = {0}, b = {0}, mixed, s = {0};
	struct pki_serving_opts o = {.dns_names = DNS, .lifetime_s = DAY};
	struct ll_err err = {{0}};

	make_ca(&a, 0, DAY);
	make_ca(&b, 0, DAY);
	mixed = (struct pki_pair){a.cert_pem, b.key_pem};
	assert_int_equal(pki_check_pair(&mixed, &err), -EKEYREJECTED);
	assert_string_equal(err.msg, "the key does not match the certificate");
	assert_int_equal(pki_make_serving(&mixed, &o, &s, &err), -EINVAL);
	assert_string_equal(err.msg, "the CA key does not match the CA certificate");
	mixed = (struct pki_pair){a.cert_pem, (char *)"-----BEGIN PRIVATE KEY-----\nx\n"};
	assert_int_equal(pki_check_pair(&mixed, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "does not parse"));
	/* a serving certificate cannot sign */
	make_serving(&a, &s, 0, DAY);
	{
		struct pki_pair s2 = {0};

		assert_int_equal(pki_make_serving(&s, &o, &s2, &err), -EINVAL);
		assert_string_equal(err.msg, "the CA certificate is not a CA");
	}
	pki_pair_release(&s);
	pki_pair_release(&a);
	pki_pair_release(&b);
}

static void test_pki__bad_names_and_lifetimes_are_refused_with_the_reason(void **state)
{
	struct pki_pair ca = {0}, s = {0};
	struct ll_err err = {{0}};
	const char *const comma[] = {"a.svc,DNS:evil.com", NULL};
	const char *const space[] = {"a b", NULL};
	const char *const notip[] = {"10.0.0.300", NULL};
	const char *const none[] = {NULL};
	char long_cn[PKI_CN_MAX + 2];

	make_ca(&ca, 0, DAY);
	assert_int_equal(
	        pki_make_serving(&ca,
	                         &(struct pki_serving_opts){.dns_names = comma, .lifetime_s = DAY},
	                         &s, &err),
	        -EINVAL);
	assert_non_null(strstr(err.msg, "holds a comma"));
	assert_int_equal(
	        pki_make_serving(&ca,
	                         &(struct pki_serving_opts){.dns_names = space, .lifetime_s = DAY},
	                         &s, &err),
	        -EINVAL);
	assert_int_equal(
	        pki_make_serving(&ca, &(struct pki_serving_opts){.ips = notip, .lifetime_s = DAY},
	                         &s, &err),
	        -EINVAL);
	assert_string_equal(err.msg, "\"10.0.0.300\" is not an IPv4 or IPv6 literal");
	assert_int_equal(
	        pki_make_serving(&ca,
	                         &(struct pki_serving_opts){.dns_names = none, .lifetime_s = DAY},
	                         &s, &err),
	        -EINVAL);
	assert_string_equal(err.msg, "a serving certificate needs a DNS name or an IP");
	assert_int_equal(
	        pki_make_serving(&ca, &(struct pki_serving_opts){.dns_names = DNS, .lifetime_s = 0},
	                         &s, &err),
	        -EINVAL);
	assert_null(s.cert_pem);
	/* an IP alone names the certificate */
	assert_int_equal(pki_make_serving(&ca,
	                                  &(struct pki_serving_opts){.ips = IPS, .lifetime_s = DAY},
	                                  &s, &err),
	                 0);
	pki_pair_release(&s);
	assert_int_equal(pki_make_ca("", 0, DAY, &s, &err), -EINVAL);
	memset(long_cn, 'a', sizeof(long_cn) - 1);
	long_cn[sizeof(long_cn) - 1] = '\0';
	assert_int_equal(pki_make_ca(long_cn, 0, DAY, &s, &err), -EINVAL);
	assert_int_equal(pki_make_ca("x", 0, 0, &s, &err), -EINVAL);
	assert_string_equal(err.msg, "a CA's lifetime must be positive");
	pki_pair_release(&ca);
}

static void test_pki__bundles_split_join_and_deduplicate(void **state)
{
	struct pki_pair a = {0}, b = {0};
	struct pki_bundle bun = {0}, again = {0};
	struct buf text = BUF_INIT(1u << 20);
	char *joined;

	make_ca(&a, 0, DAY);
	make_ca(&b, 0, DAY);
	/* text around and between blocks is ignored; a repeated certificate is kept once */
	buf_appendf(&text, "# the CAs in force\n%shello\n%s\n%s", a.cert_pem, b.cert_pem,
	            a.cert_pem);
	assert_int_equal(pki_bundle_split(text.p, text.len, &bun, NULL), 0);
	assert_int_equal(bun.n, 2);
	assert_string_equal(bun.certs[0], a.cert_pem);
	assert_string_equal(bun.certs[1], b.cert_pem);
	assert_true(pki_bundle_has(&bun, b.cert_pem));
	assert_int_equal(pki_bundle_add(&bun, b.cert_pem, NULL), 0);
	assert_int_equal(bun.n, 2);
	joined = pki_bundle_join(&bun);
	assert_int_equal(pki_bundle_split(joined, strlen(joined), &again, NULL), 0);
	assert_int_equal(again.n, 2);
	assert_string_equal(again.certs[1], b.cert_pem);
	free(joined);
	pki_bundle_release(&again);
	pki_bundle_release(&bun);
	/* nothing at all is an empty bundle */
	assert_int_equal(pki_bundle_split("", 0, &bun, NULL), 0);
	assert_int_equal(bun.n, 0);
	assert_int_equal(pki_bundle_split("just words\n", 11, &bun, NULL), 0);
	assert_int_equal(bun.n, 0);
	joined = pki_bundle_join(&bun);
	assert_string_equal(joined, "");
	free(joined);
	buf_release(&text);
	pki_pair_release(&a);
	pki_pair_release(&b);
}

static void test_pki__bundles_refuse_keys_broken_blocks_and_too_many(void **state)
{
	struct pki_pair a = {0};
	struct pki_bundle bun = {0};
	struct buf text = BUF_INIT(8u << 20);
	struct ll_err err = {{0}};
	const char *cut;

	make_ca(&a, 0, DAY);
	/* a key in a bundle is a mistake to report, not to skip */
	assert_int_equal(pki_bundle_split(a.key_pem, strlen(a.key_pem), &bun, &err), -EINVAL);
	assert_string_equal(err.msg, "a \"PRIVATE KEY\" block where certificates were expected");
	/* a block cut short */
	cut = strstr(a.cert_pem, "-----END");
	assert_int_equal(pki_bundle_split(a.cert_pem, (size_t)(cut - a.cert_pem), &bun, &err),
	                 -EINVAL);
	assert_non_null(strstr(err.msg, "malformed"));
	assert_int_equal(bun.n, 0);
	/* a block whose base64 is not a certificate */
	buf_append_str(&text, "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n");
	assert_int_equal(pki_bundle_split(text.p, text.len, &bun, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "does not parse"));
	buf_reset(&text);
	/* over the count */
	for (unsigned i = 0; i <= PKI_BUNDLE_CERTS_MAX; i++) {
		struct pki_pair ca = {0};

		make_ca(&ca, 0, DAY);
		buf_append_str(&text, ca.cert_pem);
		pki_pair_release(&ca);
	}
	assert_int_equal(pki_bundle_split(text.p, text.len, &bun, &err), -EMSGSIZE);
	assert_int_equal(bun.n, 0);
	/* over the size */
	assert_int_equal(pki_bundle_split(text.p, PKI_BUNDLE_MAX + 1, &bun, &err), -EMSGSIZE);
	assert_int_equal(
	        pki_read_cert(text.p, PKI_BUNDLE_MAX + 1, &(struct pki_cert_info){0}, &err),
	        -EMSGSIZE);
	assert_int_equal(pki_read_cert("nope", 4, &(struct pki_cert_info){0}, &err), -EINVAL);
	buf_release(&text);
	pki_pair_release(&a);
}

static void test_pki__base64_round_trips_and_refuses_garbage(void **state)
{
	struct buf out = BUF_INIT(64);
	char *enc;

	for (size_t n = 0; n < 8; n++) {
		enc = pki_b64_encode("abcdefgh", n);
		buf_reset(&out);
		assert_int_equal(pki_b64_decode(enc, &out), 0);
		assert_int_equal(out.len, n);
		assert_memory_equal(buf_cstr(&out), "abcdefgh", n);
		free(enc);
	}
	enc = pki_b64_encode("\xff\xfe", 2);
	assert_string_equal(enc, "//4=");
	free(enc);
	assert_int_equal(pki_b64_decode("abc", &out), -EINVAL);
	assert_int_equal(pki_b64_decode("ab=c", &out), -EINVAL);
	assert_int_equal(pki_b64_decode("a===", &out), -EINVAL);
	assert_int_equal(pki_b64_decode("ab\ncd==", &out), -EINVAL);
	buf_reset(&out);
	assert_int_equal(
	        pki_b64_decode("YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWZnaGlqa2xtbm9wcXJz"
	                       "dHV2d3h5emFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6",
	                       &out),
	        -EMSGSIZE);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pki__a_ca_is_self_signed_with_ca_true_and_keycertsign),
	        cmocka_unit_test(test_pki__a_serving_certificate_chains_to_its_ca_for_its_names),
	        cmocka_unit_test(test_pki__a_serving_certificate_never_outlives_its_ca),
	        cmocka_unit_test(test_pki__short_lifetimes_are_backdated_by_a_tenth),
	        cmocka_unit_test(test_pki__verification_fails_for_another_ca_expiry_and_purpose),
	        cmocka_unit_test(test_pki__pairs_that_do_not_match_are_refused),
	        cmocka_unit_test(test_pki__bad_names_and_lifetimes_are_refused_with_the_reason),
	        cmocka_unit_test(test_pki__bundles_split_join_and_deduplicate),
	        cmocka_unit_test(test_pki__bundles_refuse_keys_broken_blocks_and_too_many),
	        cmocka_unit_test(test_pki__base64_round_trips_and_refuses_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
