/*
 * test_pki.c - CAs and serving certificates as a TLS client checks them (chain, purpose, host
 * and IP names, validity), client certificates as the tenant proxy checks them (clientAuth only,
 * never a CA or a server; subject read back exactly, ambiguous or overlong subjects refused),
 * PEM bundles split, joined and capped, base64, random bytes, and a specific error for every
 * refusal.
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
#include <openssl/evp.h>
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

/* ---- client certificates ---- */

static const char *const GROUPS[] = {"dev", "ops", "\xc3\xa9quipe-\xe5\x9b\xa2\xe9\x98\x9f", NULL};

static void make_client(const struct pki_pair *ca, struct pki_pair *out, int64_t now, int64_t life)
{
	struct pki_client_opts o = {.cn = "alice@example.com",
	                            .orgs = GROUPS,
	                            .ou = "acme",
	                            .now = now,
	                            .lifetime_s = life};
	struct ll_err err = {{0}};

	if (pki_make_client(ca, &o, out, &err) != 0)
		fail_msg("pki_make_client: %s", err.msg);
}

/* The extension @nid of @x is there and critical (1), there and not critical (0), or absent. */
static int ext_critical(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);

	return i < 0 ? -1 : X509_EXTENSION_get_critical(X509_get_ext(x, i));
}

static void test_pki__a_client_certificate_names_user_groups_and_tenant(void **state)
{
	struct pki_pair ca = {0}, c = {0};
	struct pki_subject sub;
	struct ll_err err = {{0}};
	int64_t now = 1800000000;
	const X509_NAME *name;
	X509 *x;

	make_ca(&ca, now - DAY, 365 * DAY);
	make_client(&ca, &c, now, DAY);
	assert_int_equal(pki_check_pair(&c, NULL), 0);
	assert_int_equal(pki_verify_client(c.cert_pem, ca.cert_pem, now, &err), 0);
	assert_int_equal(pki_read_subject(c.cert_pem, strlen(c.cert_pem), &sub, &err), 0);
	assert_string_equal(sub.cn, "alice@example.com");
	assert_string_equal(sub.ou, "acme");
	assert_int_equal(sub.n_orgs, 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(sub.orgs[i], GROUPS[i]);
	assert_int_equal(sub.not_before, now - PKI_BACKDATE_MAX_S);
	assert_int_equal(sub.not_after, now + DAY);
	assert_in_range(strlen(sub.serial_hex), 24, 32);
	x = parse(c.cert_pem);
	/* O, O, O, OU, CN, each its own RDN and a UTF8String */
	name = X509_get_subject_name(x);
	assert_int_equal(X509_NAME_entry_count(name), 5);
	for (int i = 0; i < 5; i++) {
		const X509_NAME_ENTRY *e = X509_NAME_get_entry(name, i);
		int want = i < 3    ? NID_organizationName
		           : i == 3 ? NID_organizationalUnitName
		                    : NID_commonName;

		assert_int_equal(OBJ_obj2nid(X509_NAME_ENTRY_get_object(e)), want);
		assert_int_equal(X509_NAME_ENTRY_set(e), i);
		assert_int_equal(ASN1_STRING_type(X509_NAME_ENTRY_get_data(e)), V_ASN1_UTF8STRING);
	}
	/* a client, only: no CA, clientAuth alone, digitalSignature alone, all critical but EKU */
	assert_int_equal(X509_check_ca(x), 0);
	assert_int_equal(ext_critical(x, NID_basic_constraints), 1);
	assert_int_equal(ext_critical(x, NID_key_usage), 1);
	assert_int_equal(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE);
	assert_int_equal(ext_critical(x, NID_ext_key_usage), 0);
	assert_int_equal(X509_get_extended_key_usage(x), XKU_SSL_CLIENT);
	assert_int_equal(ext_critical(x, NID_authority_key_identifier), 0);
	assert_int_equal(ext_critical(x, NID_subject_alt_name), -1);
	assert_int_equal(X509_check_purpose(x, X509_PURPOSE_SSL_CLIENT, 0), 1);
	assert_int_equal(X509_check_purpose(x, X509_PURPOSE_SSL_SERVER, 0), 0);
	assert_int_equal(EVP_PKEY_get_base_id(X509_get0_pubkey(x)), EVP_PKEY_EC);
	X509_free(x);
	pki_pair_release(&c);
	/* the same user without groups or tenant */
	assert_int_equal(
	        pki_make_client(
	                &ca, &(struct pki_client_opts){.cn = "bob", .now = now, .lifetime_s = DAY},
	                &c, &err),
	        0);
	assert_int_equal(pki_read_subject(c.cert_pem, strlen(c.cert_pem), &sub, &err), 0);
	assert_string_equal(sub.cn, "bob");
	assert_string_equal(sub.ou, "");
	assert_int_equal(sub.n_orgs, 0);
	assert_int_equal(pki_verify_client(c.cert_pem, ca.cert_pem, now, &err), 0);
	pki_pair_release(&c);
	pki_pair_release(&ca);
}

static void test_pki__a_client_certificate_never_outlives_its_ca(void **state)
{
	struct pki_pair ca = {0}, c = {0};
	struct pki_cert_info ic;
	struct pki_subject sub;
	struct ll_err err = {{0}};
	int64_t now = 1800000000;

	make_ca(&ca, now, 10 * DAY);
	make_client(&ca, &c, now + 9 * DAY, 30 * DAY);
	assert_int_equal(pki_read_cert(ca.cert_pem, strlen(ca.cert_pem), &ic, NULL), 0);
	assert_int_equal(pki_read_subject(c.cert_pem, strlen(c.cert_pem), &sub, NULL), 0);
	assert_int_equal(sub.not_after, ic.not_after);
	/* backdated by a tenth of what was left (a day), 300 s at most */
	assert_int_equal(sub.not_before, now + 9 * DAY - PKI_BACKDATE_MAX_S);
	pki_pair_release(&c);
	/* a lifetime as long as int64_t allows is cut, not overflowed */
	make_client(&ca, &c, now, INT64_MAX);
	assert_int_equal(pki_read_subject(c.cert_pem, strlen(c.cert_pem), &sub, NULL), 0);
	assert_int_equal(sub.not_after, ic.not_after);
	pki_pair_release(&c);
	/* an expired CA issues nothing */
	assert_int_equal(pki_make_client(&ca,
	                                 &(struct pki_client_opts){.cn = "alice",
	                                                           .now = now + 10 * DAY,
	                                                           .lifetime_s = DAY},
	                                 &c, &err),
	                 -EINVAL);
	assert_non_null(strstr(err.msg, "the CA expired"));
	assert_null(c.cert_pem);
	pki_pair_release(&ca);
}

static void test_pki__client_verification_refuses_servers_cas_and_strangers(void **state)
{
	struct pki_pair ca = {0}, other = {0}, c = {0}, s = {0}, stranger = {0};
	struct ll_err err = {{0}};
	int64_t now = time(NULL);

	make_ca(&ca, now, 365 * DAY);
	make_ca(&other, now, 365 * DAY);
	make_client(&ca, &c, now, DAY);
	make_client(&other, &stranger, now, DAY);
	make_serving(&ca, &s, now, DAY);
	/* a serving certificate of the very same CA is no client */
	assert_int_equal(pki_verify_client(s.cert_pem, ca.cert_pem, 0, &err), -EKEYREJECTED);
	assert_string_equal(err.msg,
	                    "not a client certificate: its extendedKeyUsage lacks clientAuth");
	/* nor is the CA itself, though it is in the bundle */
	assert_int_equal(pki_verify_client(ca.cert_pem, ca.cert_pem, 0, &err), -EKEYREJECTED);
	assert_string_equal(err.msg, "a CA certificate is not a client certificate");
	/* another CA's client */
	assert_int_equal(pki_verify_client(stranger.cert_pem, ca.cert_pem, 0, &err), -EKEYREJECTED);
	assert_non_null(strstr(err.msg, "unable to get local issuer"));
	/* validity */
	assert_int_equal(pki_verify_client(c.cert_pem, ca.cert_pem, now + 2 * DAY, &err),
	                 -EKEYREJECTED);
	assert_non_null(strstr(err.msg, "expired"));
	assert_int_equal(pki_verify_client(c.cert_pem, ca.cert_pem, now - DAY, &err),
	                 -EKEYREJECTED);
	assert_non_null(strstr(err.msg, "not yet valid"));
	/* a client certificate is no server certificate; without a purpose it only chains */
	assert_int_equal(pki_verify(c.cert_pem, ca.cert_pem, 0, true, &err), -EKEYREJECTED);
	assert_int_equal(pki_verify(c.cert_pem, ca.cert_pem, 0, false, &err), 0);
	/* bad input */
	assert_int_equal(pki_verify_client("junk", ca.cert_pem, 0, &err), -EINVAL);
	assert_int_equal(pki_verify_client(c.cert_pem, "no pem here", 0, &err), -EINVAL);
	assert_int_equal(pki_verify_client(c.cert_pem, NULL, 0, &err), -EINVAL);
	pki_pair_release(&c);
	pki_pair_release(&s);
	pki_pair_release(&stranger);
	pki_pair_release(&ca);
	pki_pair_release(&other);
}

/* pki_make_client() with @o refused, @want in the message. */
static void assert_client_refused(const struct pki_pair *ca, struct pki_client_opts o,
                                  const char *want)
{
	struct pki_pair c = {0};
	struct ll_err err = {{0}};

	if (o.lifetime_s == 0)
		o.lifetime_s = DAY;
	assert_int_equal(pki_make_client(ca, &o, &c, &err), -EINVAL);
	assert_null(c.cert_pem);
	if (strstr(err.msg, want) == NULL)
		fail_msg("\"%s\" lacks \"%s\"", err.msg, want);
}

static void test_pki__client_names_are_checked_text(void **state)
{
	struct pki_pair ca = {0}, c = {0};
	char long_name[PKI_ATTR_MAX + 2], utf8_64[PKI_ATTR_MAX + 1];
	const char *many[PKI_ORGS_MAX + 2];
	const char *const empty_o[] = {"dev", "", NULL};
	const char *const bad_o[] = {"dev", "a\tb", NULL};

	make_ca(&ca, 0, DAY);
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_client_refused(&ca, (struct pki_client_opts){0}, "needs a common name");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = ""}, "1..64 bytes, not 0");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = long_name}, "1..64 bytes");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "a\nb"}, "control character");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "a\x7f"}, "control character");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "a\xc2\x85"}, /* NEL */
	                      "control character (byte 2)");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "\xff"}, "not valid UTF-8");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "\xc0\xaf"}, /* overlong '/' */
	                      "not valid UTF-8");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "\xed\xa0\x80"}, /* surrogate */
	                      "not valid UTF-8");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "\xf4\x90\x80\x80"},
	                      "not valid UTF-8");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "ab\xe2\x82"}, /* cut short */
	                      "not valid UTF-8 (byte 3)");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "a", .ou = ""}, "the OU");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "a", .ou = long_name},
	                      "the OU is 1..64 bytes");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "a", .orgs = empty_o},
	                      "O value 2 is 1..64 bytes");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "a", .orgs = bad_o},
	                      "O value 2 holds a control character");
	for (size_t i = 0; i <= PKI_ORGS_MAX; i++)
		many[i] = "g";
	many[PKI_ORGS_MAX + 1] = NULL;
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "a", .orgs = many},
	                      "more than 32 O values");
	assert_client_refused(&ca, (struct pki_client_opts){.cn = "a", .lifetime_s = -1},
	                      "lifetime must be positive");
	/* at the limits: 32 groups, 64 bytes of two-byte characters */
	many[PKI_ORGS_MAX] = NULL;
	for (size_t i = 0; i < PKI_ATTR_MAX; i += 2)
		memcpy(utf8_64 + i, "\xc3\xa9", 2);
	utf8_64[PKI_ATTR_MAX] = '\0';
	assert_int_equal(pki_make_client(&ca,
	                                 &(struct pki_client_opts){.cn = utf8_64,
	                                                           .orgs = many,
	                                                           .ou = utf8_64,
	                                                           .lifetime_s = DAY},
	                                 &c, NULL),
	                 0);
	{
		struct pki_subject sub;

		assert_int_equal(pki_read_subject(c.cert_pem, strlen(c.cert_pem), &sub, NULL), 0);
		assert_string_equal(sub.cn, utf8_64);
		assert_string_equal(sub.ou, utf8_64);
		assert_int_equal(sub.n_orgs, PKI_ORGS_MAX);
	}
	pki_pair_release(&c);
	pki_pair_release(&ca);
}

/* A subject entry for craft(): a field name and raw UTF8String bytes (no checks at all). */
struct entry {
	const char *field, *value;
};

/* Add the extensions @exts ({name, openssl.cnf value}, NULL-name terminated) to @x. */
static void add_exts(X509 *x, X509 *issuer, const struct entry *exts)
{
	X509V3_CTX ctx;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	for (const struct entry *e = exts; e && e->field; e++) {
		X509_EXTENSION *ex = X509V3_EXT_conf(NULL, &ctx, e->field, e->value);

		assert_non_null(ex);
		assert_true(X509_add_ext(x, ex, -1));
		X509_EXTENSION_free(ex);
	}
}

/*
 * A leaf certificate signed by @ca with the subject @entries (NULL-field terminated) and the
 * extensions @exts (or NULL), as a careless or hostile issuer would make it: no checks on the
 * values; @serial as given.
 */
static char *craft_with(const struct pki_pair *ca, const struct entry *entries,
                        const struct entry *exts, long serial)
{
	BIO *bio = BIO_new_mem_buf(ca->key_pem, -1);
	EVP_PKEY *ca_key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *cax = parse(ca->cert_pem), *x = X509_new();
	X509_NAME *name = X509_get_subject_name(x);
	char *data = NULL, *pem;
	long n;

	for (const struct entry *e = entries; e->field; e++)
		assert_true(X509_NAME_add_entry_by_txt(name, e->field, V_ASN1_UTF8STRING,
		                                       (const unsigned char *)e->value,
		                                       (int)strlen(e->value), -1, 0));
	assert_true(X509_set_version(x, X509_VERSION_3));
	assert_true(ASN1_INTEGER_set(X509_get_serialNumber(x), serial));
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), 0));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), DAY));
	assert_true(X509_set_pubkey(x, key));
	assert_true(X509_set_issuer_name(x, X509_get_subject_name(cax)));
	add_exts(x, cax, exts);
	assert_true(X509_sign(x, ca_key, EVP_sha256()));
	BIO_free(bio);
	bio = BIO_new(BIO_s_mem());
	assert_true(PEM_write_bio_X509(bio, x));
	n = BIO_get_mem_data(bio, &data);
	pem = strndup(data, (size_t)n);
	BIO_free(bio);
	X509_free(x);
	X509_free(cax);
	EVP_PKEY_free(key);
	EVP_PKEY_free(ca_key);
	return pem;
}

static char *craft(const struct pki_pair *ca, const struct entry *entries, long serial)
{
	return craft_with(ca, entries, NULL, serial);
}

/* A certificate of @ca with the extensions @exts is refused for client use, @want saying why. */
static void assert_no_client(const struct pki_pair *ca, const struct entry *exts, const char *want)
{
	char *pem = craft_with(ca, (struct entry[]){{"CN", "alice"}, {0}}, exts, 9);
	struct ll_err err = {{0}};

	assert_int_equal(pki_verify_client(pem, ca->cert_pem, 0, &err), -EKEYREJECTED);
	if (strstr(err.msg, want) == NULL)
		fail_msg("\"%s\" lacks \"%s\"", err.msg, want);
	free(pem);
}

static void test_pki__client_use_needs_client_auth_and_no_ca_whoever_signed_it(void **state)
{
	struct pki_pair ca = {0};
	char *pem;

	make_ca(&ca, 0, DAY);
	/* no extendedKeyUsage at all: OpenSSL would take it for any use, the proxy does not */
	assert_no_client(&ca, NULL, "lacks clientAuth");
	assert_no_client(&ca, (struct entry[]){{"extendedKeyUsage", "anyExtendedKeyUsage"}, {0}},
	                 "lacks clientAuth");
	/* CA:TRUE, even with a keyUsage that cannot sign certificates */
	assert_no_client(&ca,
	                 (struct entry[]){{"basicConstraints", "critical,CA:TRUE"},
	                                  {"keyUsage", "critical,digitalSignature"},
	                                  {"extendedKeyUsage", "clientAuth"},
	                                  {0}},
	                 "a CA certificate");
	assert_no_client(&ca,
	                 (struct entry[]){{"keyUsage", "critical,keyCertSign,digitalSignature"},
	                                  {"extendedKeyUsage", "clientAuth"},
	                                  {0}},
	                 "a CA certificate");
	assert_no_client(&ca,
	                 (struct entry[]){{"keyUsage", "critical,keyEncipherment"},
	                                  {"extendedKeyUsage", "clientAuth"},
	                                  {0}},
	                 "lacks digitalSignature");
	/* clientAuth beside serverAuth is still a client certificate */
	pem = craft_with(&ca, (struct entry[]){{"CN", "alice"}, {0}},
	                 (struct entry[]){{"extendedKeyUsage", "serverAuth,clientAuth"}, {0}}, 9);
	assert_int_equal(pki_verify_client(pem, ca.cert_pem, 0, NULL), 0);
	free(pem);
	pki_pair_release(&ca);
}

static void assert_subject_refused(const struct pki_pair *ca, const struct entry *entries,
                                   long serial, const char *want)
{
	char *pem = craft(ca, entries, serial);
	struct pki_subject sub;
	struct ll_err err = {{0}};

	memset(&sub, 'x', sizeof(sub));
	assert_int_equal(pki_read_subject(pem, strlen(pem), &sub, &err), -EINVAL);
	if (strstr(err.msg, want) == NULL)
		fail_msg("\"%s\" lacks \"%s\"", err.msg, want);
	/* nothing half-read is left behind */
	assert_string_equal(sub.cn, "");
	assert_int_equal(sub.n_orgs, 0);
	free(pem);
}

static void test_pki__reading_a_subject_refuses_ambiguity_and_overlong_values(void **state)
{
	struct pki_pair ca = {0};
	struct entry many[PKI_ORGS_MAX + 3];
	char long_value[PKI_ATTR_MAX + 2];
	struct pki_subject sub;
	struct ll_err err = {{0}};
	char *pem;

	make_ca(&ca, 0, DAY);
	memset(long_value, 'a', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	assert_subject_refused(&ca, (struct entry[]){{"CN", "alice"}, {"CN", "root"}, {0}}, 7,
	                       "more than one CN");
	assert_subject_refused(&ca,
	                       (struct entry[]){{"OU", "acme"}, {"CN", "a"}, {"OU", "other"}, {0}},
	                       7, "more than one OU");
	assert_subject_refused(&ca, (struct entry[]){{"CN", long_value}, {0}}, 7,
	                       "the CN is 1..64 bytes, not 65");
	assert_subject_refused(&ca, (struct entry[]){{"CN", "a"}, {"O", long_value}, {0}}, 7,
	                       "O value 1 is 1..64 bytes");
	assert_subject_refused(&ca, (struct entry[]){{"CN", "a"}, {"OU", ""}, {0}}, 7,
	                       "the OU is 1..64 bytes, not 0");
	assert_subject_refused(&ca, (struct entry[]){{"CN", "alice\r\nX-Evil: 1"}, {0}}, 7,
	                       "control character");
	assert_subject_refused(&ca, (struct entry[]){{"CN", "a"}, {0}}, -7, "serial number");
	for (size_t i = 0; i <= PKI_ORGS_MAX; i++)
		many[i] = (struct entry){"O", "g"};
	many[PKI_ORGS_MAX + 1] = (struct entry){"CN", "a"};
	many[PKI_ORGS_MAX + 2] = (struct entry){0};
	assert_subject_refused(&ca, many, 7, "more than 32 O values");
	/* 32 are fine; other attributes are not the proxy's and are skipped */
	many[PKI_ORGS_MAX] = (struct entry){"L", "Berlin"};
	pem = craft(&ca, many, 7);
	assert_int_equal(pki_read_subject(pem, strlen(pem), &sub, &err), 0);
	assert_int_equal(sub.n_orgs, PKI_ORGS_MAX);
	assert_string_equal(sub.cn, "a");
	assert_string_equal(sub.serial_hex, "07");
	free(pem);
	/* a CA reads too (verification is pki_verify_client()'s) */
	assert_int_equal(pki_read_subject(ca.cert_pem, strlen(ca.cert_pem), &sub, &err), 0);
	assert_string_equal(sub.cn, "landlord-webhook-ca");
	/* no certificate at all; over the size */
	assert_int_equal(pki_read_subject("nope", 4, &sub, &err), -EINVAL);
	assert_int_equal(pki_read_subject(NULL, 0, &sub, &err), -EINVAL);
	assert_int_equal(pki_read_subject(ca.cert_pem, PKI_BUNDLE_MAX + 1, &sub, &err), -EMSGSIZE);
	/* only the first certificate of a text counts, and the text need not end in a NUL */
	{
		struct pki_pair c = {0};
		struct buf two = BUF_INIT(1u << 16);

		make_client(&ca, &c, 0, DAY);
		buf_append_str(&two, c.cert_pem);
		buf_append_str(&two, ca.cert_pem);
		assert_int_equal(pki_read_subject(two.p, strlen(c.cert_pem), &sub, &err), 0);
		assert_string_equal(sub.cn, "alice@example.com");
		assert_int_equal(pki_read_subject(two.p, two.len, &sub, &err), 0);
		assert_string_equal(sub.ou, "acme");
		buf_release(&two);
		pki_pair_release(&c);
	}
	pki_pair_release(&ca);
}

static void test_pki__random_bytes_differ(void **state)
{
	unsigned char a[32], b[32];

	assert_int_equal(pki_random(a, sizeof(a)), 0);
	assert_int_equal(pki_random(b, sizeof(b)), 0);
	assert_memory_not_equal(a, b, sizeof(a));
	assert_int_equal(pki_random(a, 0), 0);
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
	        cmocka_unit_test(test_pki__a_client_certificate_names_user_groups_and_tenant),
	        cmocka_unit_test(test_pki__a_client_certificate_never_outlives_its_ca),
	        cmocka_unit_test(test_pki__client_verification_refuses_servers_cas_and_strangers),
	        cmocka_unit_test(
	                test_pki__client_use_needs_client_auth_and_no_ca_whoever_signed_it),
	        cmocka_unit_test(test_pki__client_names_are_checked_text),
	        cmocka_unit_test(test_pki__reading_a_subject_refuses_ambiguity_and_overlong_values),
	        cmocka_unit_test(test_pki__random_bytes_differ),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
