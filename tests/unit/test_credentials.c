/*
 * test_credentials.c - the tenant proxy's credentials (src/proxy/credentials.h) against the fake
 * API server: the first load creates the Secret once and later ones only read it; two loaders
 * racing end with one CA; a malformed Secret is refused with an actionable line and never
 * touched; issued certificates verify as clients against the trust bundle and carry the user,
 * groups and tenant; TTL and name limits; kubeconfigs parse as YAML with the expected fields
 * whatever the user is called.
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
#include <time.h>

#include <cmocka.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "fake_manager.h"
#include "kube/kube.h"
#include "kube/yamljson.h"
#include "pki/pki.h"
#include "proxy/credentials.h"

#define NS      LANDLORD_SYSTEM_NAMESPACE
#define SECRETS "secrets"
#define DAY     86400

struct env {
	struct fake_api *f;
	struct kc_client *kc[2];
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	e->f = fake_api_start();
	e->kc[0] = fake_client_new(e->f);
	e->kc[1] = fake_client_new(e->f);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	kc_client_free(e->kc[0]);
	kc_client_free(e->kc[1]);
	fake_api_stop(e->f);
	free(e);
	return 0;
}

static struct pxcreds *load_ok(struct kc_client *kc, bool create)
{
	struct pxcreds *pc = NULL;
	struct ll_err err = {{0}};
	int rc = pxcreds_load(kc, NULL, create, &pc, &err);

	if (rc != 0)
		fail_msg("pxcreds_load: %d %s", rc, err.msg);
	return pc;
}

/* A data field of the Secret, decoded (owned), or NULL. */
static char *secret_field(struct fake_api *f, const char *key, size_t *len)
{
	json_t *s = fake_api_get(f, SECRETS, NS, PXCREDS_SECRET);
	const char *b64 = jx_str(s, "data", key, NULL);
	struct buf b = BUF_INIT(PKI_BUNDLE_MAX);
	char *out = NULL;

	if (b64 && pki_b64_decode(b64, &b) == 0) {
		if (len)
			*len = b.len;
		out = buf_detach(&b);
	}
	buf_release(&b);
	json_decref(s);
	return out;
}

static void assert_same_material(const struct pxcreds *a, const struct pxcreds *b)
{
	size_t na, nb;
	const unsigned char *ha = pxcreds_hmac_key(a, &na), *hb = pxcreds_hmac_key(b, &nb);

	assert_string_equal(pxcreds_ca(a)->cert_pem, pxcreds_ca(b)->cert_pem);
	assert_string_equal(pxcreds_ca(a)->key_pem, pxcreds_ca(b)->key_pem);
	assert_string_equal(pxcreds_trust_bundle(a), pxcreds_trust_bundle(b));
	assert_int_equal(na, PXCREDS_HMAC_LEN);
	assert_int_equal(nb, PXCREDS_HMAC_LEN);
	assert_memory_equal(ha, hb, PXCREDS_HMAC_LEN);
}

static void test_credentials__the_first_load_creates_the_secret_once(void **state)
{
	struct env *e = *state;
	struct pxcreds *a = load_ok(e->kc[0], true), *b;
	struct pki_cert_info info;
	json_t *s = fake_api_get(e->f, SECRETS, NS, PXCREDS_SECRET);
	char *crt, *hmac;
	size_t hmac_len = 0, len;
	int writes;

	assert_non_null(s);
	assert_string_equal(jx_str(s, "type", NULL), "Opaque");
	assert_string_equal(jx_label(s, LABEL_MANAGED_BY), MANAGED_BY_VALUE);
	assert_int_equal(json_object_size(json_object_get(s, "data")), 3);
	json_decref(s);
	crt = secret_field(e->f, "ca.crt", NULL);
	hmac = secret_field(e->f, "hmac.key", &hmac_len);
	assert_string_equal(crt, pxcreds_ca(a)->cert_pem);
	assert_int_equal(hmac_len, PXCREDS_HMAC_LEN);
	assert_memory_equal(hmac, pxcreds_hmac_key(a, &len), PXCREDS_HMAC_LEN);
	/* a two-year CA, EC P-256, whose key is in the Secret */
	assert_int_equal(pki_read_cert(crt, strlen(crt), &info, NULL), 0);
	assert_true(info.is_ca);
	assert_non_null(strstr(info.cn, "landlord-proxy-ca-"));
	assert_in_range(info.not_after - time(NULL), PXCREDS_CA_LIFETIME_S - 60,
	                PXCREDS_CA_LIFETIME_S);
	assert_int_equal(pki_check_pair(pxcreds_ca(a), NULL), 0);
	/* the trust bundle is the CA alone (for now) */
	assert_int_equal(pki_verify(crt, pxcreds_trust_bundle(a), 0, false, NULL), 0);
	assert_int_equal(fake_api_requests(e->f, "POST", "/secrets"), 1);
	/* a later loader, with or without the right to create, reads it and writes nothing */
	writes = fake_api_writes(e->f);
	b = load_ok(e->kc[1], true);
	assert_same_material(a, b);
	pxcreds_free(b);
	b = load_ok(e->kc[1], false);
	assert_same_material(a, b);
	assert_int_equal(fake_api_writes(e->f), writes);
	pxcreds_free(b);
	pxcreds_free(a);
	free(crt);
	free(hmac);
}

static void test_credentials__without_create_a_missing_secret_is_not_made(void **state)
{
	struct env *e = *state;
	struct pxcreds *pc = (struct pxcreds *)e; /* overwritten with NULL */
	struct ll_err err = {{0}};

	assert_int_equal(pxcreds_load(e->kc[0], NULL, false, &pc, &err), -ENOENT);
	assert_null(pc);
	assert_non_null(strstr(err.msg, "Secret landlord-system/landlord-proxy-ca does not exist"));
	assert_int_equal(fake_api_writes(e->f), 0);
	assert_null(fake_api_get(e->f, SECRETS, NS, PXCREDS_SECRET));
	assert_int_equal(pxcreds_load(NULL, NULL, true, &pc, &err), -EINVAL);
}

struct racer {
	struct kc_client *kc;
	struct pxcreds *pc;
};

static void *race(void *arg)
{
	struct racer *r = arg;

	r->pc = load_ok(r->kc, true);
	return NULL;
}

static bool two_gets(struct fake_api *f, void *ud)
{
	return fake_api_requests(f, "GET", "/secrets/" PXCREDS_SECRET) >= 2;
}

static void test_credentials__two_loaders_racing_agree_on_one_ca(void **state)
{
	struct env *e = *state;
	struct racer r[2] = {{e->kc[0], NULL}, {e->kc[1], NULL}};
	pthread_t t[2];
	char *crt;
	int hold = fake_api_rule_add(e->f, &(struct fake_rule){.method = "GET",
	                                                       .path_contains = "/secrets/",
	                                                       .action = FAKE_HOLD,
	                                                       .times = 2});

	/* both read "no Secret" before either creates one: both mint, one POST loses (409) */
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	assert_true(fake_api_wait(e->f, two_gets, NULL));
	fake_api_release(e->f, hold);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(fake_api_requests(e->f, "POST", "/secrets"), 2);
	assert_int_equal(fake_api_requests(e->f, "GET", "/secrets/" PXCREDS_SECRET), 3);
	assert_same_material(r[0].pc, r[1].pc);
	crt = secret_field(e->f, "ca.crt", NULL);
	assert_string_equal(crt, pxcreds_ca(r[0].pc)->cert_pem);
	free(crt);
	pxcreds_free(r[0].pc);
	pxcreds_free(r[1].pc);
}

/* Put the Secret with the data @take_data, as someone else (or an earlier landlord) wrote it. */
static void put_secret(struct fake_api *f, json_t *take_data)
{
	json_t *s = json_pack("{s:{s:s,s:s},s:s,s:o}", "metadata", "name", PXCREDS_SECRET,
	                      "namespace", NS, "type", "Opaque", "data", take_data);

	fake_api_put(f, SECRETS, s);
	json_decref(s);
}

static json_t *b64(const void *bytes, size_t len)
{
	char *s = pki_b64_encode(bytes, len);
	json_t *j = json_string(s);

	free(s);
	return j;
}

static json_t *b64s(const char *s)
{
	return b64(s, strlen(s));
}

/* The data of a well-formed Secret for @ca. */
static json_t *good_data(const struct pki_pair *ca)
{
	unsigned char hmac[PXCREDS_HMAC_LEN] = {1, 2, 3};

	return json_pack("{s:o,s:o,s:o}", "ca.crt", b64s(ca->cert_pem), "ca.key", b64s(ca->key_pem),
	                 "hmac.key", b64(hmac, sizeof(hmac)));
}

/* The Secret with @take_data is refused, says @want and how to fix it, and stays as it was. */
static void assert_malformed(struct env *e, json_t *take_data, const char *want)
{
	struct pxcreds *pc = NULL;
	struct ll_err err = {{0}};
	json_t *before, *after;
	int writes;

	put_secret(e->f, take_data);
	before = fake_api_get(e->f, SECRETS, NS, PXCREDS_SECRET);
	writes = fake_api_writes(e->f);
	assert_int_equal(pxcreds_load(e->kc[0], NULL, true, &pc, &err), -EINVAL);
	assert_null(pc);
	if (strstr(err.msg, want) == NULL)
		fail_msg("\"%s\" lacks \"%s\"", err.msg, want);
	assert_non_null(strstr(err.msg, "Secret landlord-system/landlord-proxy-ca is malformed: "));
	assert_non_null(strstr(err.msg, "kubectl -n landlord-system delete secret "
	                                "landlord-proxy-ca"));
	assert_null(strchr(err.msg, '\n'));
	assert_int_equal(fake_api_writes(e->f), writes);
	after = fake_api_get(e->f, SECRETS, NS, PXCREDS_SECRET);
	assert_true(json_equal(before, after));
	json_decref(before);
	json_decref(after);
}

static void test_credentials__a_malformed_secret_is_refused_and_untouched(void **state)
{
	struct env *e = *state;
	struct pki_pair ca = {0}, other = {0}, leaf = {0};
	struct buf two = BUF_INIT(1u << 16);
	json_t *d;

	assert_int_equal(pki_make_ca("a", 0, DAY, &ca, NULL), 0);
	assert_int_equal(pki_make_ca("b", 0, DAY, &other, NULL), 0);
	assert_int_equal(pki_make_client(&ca,
	                                 &(struct pki_client_opts){.cn = "x", .lifetime_s = DAY},
	                                 &leaf, NULL),
	                 0);
	d = good_data(&ca);
	json_object_del(d, "hmac.key");
	assert_malformed(e, d, "its data key hmac.key is missing");
	d = good_data(&ca);
	json_object_set_new(d, "hmac.key", b64("short", 5));
	assert_malformed(e, d, "its hmac.key is 5 bytes, not 32");
	d = good_data(&ca);
	json_object_set_new(d, "ca.key", json_string("not base64!"));
	assert_malformed(e, d, "its ca.key is not base64");
	d = good_data(&ca);
	json_object_set_new(d, "ca.crt",
	                    b64s("-----BEGIN CERTIFICATE-----\naGVsbG8=\n"
	                         "-----END CERTIFICATE-----\n"));
	assert_malformed(e, d, "its ca.crt does not parse");
	d = good_data(&ca);
	json_object_set_new(d, "ca.crt", b64s("no certificate here\n"));
	assert_malformed(e, d, "its ca.crt holds 0 certificates, not one");
	buf_append_str(&two, ca.cert_pem);
	buf_append_str(&two, other.cert_pem);
	d = good_data(&ca);
	json_object_set_new(d, "ca.crt", b64s(buf_cstr(&two)));
	assert_malformed(e, d, "its ca.crt holds 2 certificates, not one");
	d = good_data(&ca);
	json_object_set_new(d, "ca.key", b64s(other.key_pem));
	assert_malformed(e, d, "its ca.key does not match its ca.crt");
	d = good_data(&leaf);
	assert_malformed(e, d, "its ca.crt is not a CA certificate");
	d = good_data(&ca);
	json_object_set_new(d, "ca.crt", json_integer(3));
	assert_malformed(e, d, "its data key ca.crt is not a string");
	/* the well-formed one loads */
	put_secret(e->f, good_data(&ca));
	pxcreds_free(load_ok(e->kc[0], false));
	buf_release(&two);
	pki_pair_release(&leaf);
	pki_pair_release(&other);
	pki_pair_release(&ca);
}

static void test_credentials__issued_certificates_verify_as_clients_and_read_back(void **state)
{
	struct env *e = *state;
	struct pxcreds *pc = load_ok(e->kc[0], true);
	const char *const groups[] = {"dev", "ops", NULL};
	struct pki_pair c = {0}, s = {0};
	struct pki_subject sub;
	struct ll_err err = {{0}};
	int64_t now = time(NULL);

	assert_int_equal(pxcreds_issue(pc, "acme", "alice@example.com", groups, 0, &c, &err), 0);
	assert_int_equal(pki_check_pair(&c, NULL), 0);
	assert_int_equal(pki_verify_client(c.cert_pem, pxcreds_trust_bundle(pc), 0, &err), 0);
	assert_int_equal(pki_read_subject(c.cert_pem, strlen(c.cert_pem), &sub, &err), 0);
	assert_string_equal(sub.cn, "alice@example.com");
	assert_string_equal(sub.ou, "acme");
	assert_int_equal(sub.n_orgs, 2);
	assert_string_equal(sub.orgs[0], "dev");
	assert_string_equal(sub.orgs[1], "ops");
	/* 24 hours by default */
	assert_in_range(sub.not_after - now, PXCREDS_TTL_DEFAULT_S - 5, PXCREDS_TTL_DEFAULT_S + 5);
	/* not a server, and nothing the webhook's (or any other) CA would accept */
	assert_int_equal(pki_verify(c.cert_pem, pxcreds_trust_bundle(pc), 0, true, NULL),
	                 -EKEYREJECTED);
	assert_int_equal(pki_make_serving(pxcreds_ca(pc),
	                                  &(struct pki_serving_opts){
	                                          .ips = (const char *[]){"127.0.0.1", NULL},
	                                          .lifetime_s = DAY},
	                                  &s, NULL),
	                 0);
	assert_int_equal(pki_verify_client(s.cert_pem, pxcreds_trust_bundle(pc), 0, NULL),
	                 -EKEYREJECTED);
	pki_pair_release(&s);
	pki_pair_release(&c);
	/* no groups; a user in UTF-8 */
	assert_int_equal(pxcreds_issue(pc, "acme", "J\xc3\xbcrgen", NULL, 3600, &c, &err), 0);
	assert_int_equal(pki_read_subject(c.cert_pem, strlen(c.cert_pem), &sub, &err), 0);
	assert_string_equal(sub.cn, "J\xc3\xbcrgen");
	assert_int_equal(sub.n_orgs, 0);
	assert_in_range(sub.not_after - now, 3600 - 5, 3600 + 5);
	pki_pair_release(&c);
	pxcreds_free(pc);
}

static void assert_issue_refused(const struct pxcreds *pc, const char *tenant, const char *user,
                                 const char *const *groups, int64_t ttl, const char *want)
{
	struct pki_pair c = {0};
	struct ll_err err = {{0}};

	assert_int_equal(pxcreds_issue(pc, tenant, user, groups, ttl, &c, &err), -EINVAL);
	assert_null(c.cert_pem);
	if (strstr(err.msg, want) == NULL)
		fail_msg("\"%s\" lacks \"%s\"", err.msg, want);
}

static void test_credentials__ttls_and_names_have_limits(void **state)
{
	struct env *e = *state;
	struct pxcreds *pc = load_ok(e->kc[0], true);
	const char *const masters[] = {"dev", "system:masters", NULL};
	const char *many[PKI_ORGS_MAX + 2];
	struct pki_pair c = {0};
	struct pki_subject sub;
	int64_t now = time(NULL);

	/* 30 days is the most */
	assert_int_equal(pxcreds_issue(pc, "acme", "alice", NULL, PXCREDS_TTL_MAX_S, &c, NULL), 0);
	assert_int_equal(pki_read_subject(c.cert_pem, strlen(c.cert_pem), &sub, NULL), 0);
	assert_in_range(sub.not_after - now, PXCREDS_TTL_MAX_S - 5, PXCREDS_TTL_MAX_S + 5);
	pki_pair_release(&c);
	assert_issue_refused(pc, "acme", "alice", NULL, PXCREDS_TTL_MAX_S + 1,
	                     "--ttl of 2592001s is over the longest credential, 30 days (720h)");
	assert_issue_refused(pc, "acme", "alice", NULL, -1, "--ttl must be positive");
	/* names */
	assert_issue_refused(pc, "Acme", "alice", NULL, 0, "the tenant is not a DNS label");
	assert_issue_refused(pc, NULL, "alice", NULL, 0, "the tenant is not a DNS label");
	assert_issue_refused(pc, "acme", NULL, NULL, 0, "needs a common name");
	assert_issue_refused(pc, "acme", "a\nb", NULL, 0,
	                     "user or group refused: the common name holds a control character");
	assert_issue_refused(pc, "acme", "system:admin", NULL, 0, "reserved prefix");
	assert_issue_refused(pc, "acme", "alice", masters, 0, "group 2 starts with \"system:\"");
	for (size_t i = 0; i <= PKI_ORGS_MAX; i++)
		many[i] = "g";
	many[PKI_ORGS_MAX + 1] = NULL;
	assert_issue_refused(pc, "acme", "alice", many, 0, "more than 32 O values (groups)");
	pxcreds_free(pc);
}

static void test_credentials__an_expired_ca_issues_nothing(void **state)
{
	struct env *e = *state;
	struct pki_pair ca = {0}, c = {0};
	struct pxcreds *pc;
	struct ll_err err = {{0}};

	assert_int_equal(pki_make_ca("old", time(NULL) - 2 * DAY, DAY, &ca, NULL), 0);
	put_secret(e->f, good_data(&ca));
	pc = load_ok(e->kc[0], true); /* not malformed: it loads */
	assert_int_equal(pxcreds_issue(pc, "acme", "alice", NULL, 0, &c, &err), -EKEYEXPIRED);
	assert_non_null(strstr(err.msg, "the proxy CA in Secret landlord-system/landlord-proxy-ca "
	                                "expired"));
	assert_null(c.cert_pem);
	pxcreds_free(pc);
	pki_pair_release(&ca);
}

/* The base64 field at @path... of @doc, decoded (owned). */
static char *b64_field(const json_t *doc, const char *a, size_t i, const char *b, const char *key)
{
	const char *v = jx_str(json_array_get(json_object_get(doc, a), i), b, key, NULL);
	struct buf out = BUF_INIT(PKI_BUNDLE_MAX);

	assert_non_null(v);
	assert_int_equal(pki_b64_decode(v, &out), 0);
	return buf_detach(&out);
}

/* Render a kubeconfig for @user and read it back as JSON. */
static json_t *render_parse(const struct pki_pair *server_ca, const struct pki_pair *client,
                            const char *user)
{
	struct buf y = BUF_INIT(PXCREDS_KUBECONFIG_MAX);
	struct ll_err err = {{0}};
	json_t *doc = NULL;

	assert_int_equal(pxcreds_kubeconfig(&y, "https://127.0.0.1:8444/", "acme", user,
	                                    server_ca->cert_pem, client),
	                 0);
	if (yaml_to_json(y.p, y.len, &doc, &err) != 0)
		fail_msg("not YAML: %s\n%s", err.msg, y.p);
	buf_release(&y);
	return doc;
}

static void assert_kubeconfig(const json_t *doc, const struct pki_pair *server_ca,
                              const struct pki_pair *client)
{
	const json_t *ctx = json_array_get(json_object_get(doc, "contexts"), 0);
	char *ca = b64_field(doc, "clusters", 0, "cluster", "certificate-authority-data");
	char *crt = b64_field(doc, "users", 0, "user", "client-certificate-data");
	char *key = b64_field(doc, "users", 0, "user", "client-key-data");

	/* exactly these keys at the top: nothing a user name could have added */
	assert_int_equal(json_object_size(doc), 7);
	assert_string_equal(jx_str(doc, "apiVersion", NULL), "v1");
	assert_string_equal(jx_str(doc, "kind", NULL), "Config");
	assert_string_equal(jx_str(doc, "current-context", NULL), "landlord-acme");
	assert_true(json_is_object(json_object_get(doc, "preferences")));
	assert_int_equal(json_array_size(json_object_get(doc, "clusters")), 1);
	assert_int_equal(json_array_size(json_object_get(doc, "users")), 1);
	assert_int_equal(json_array_size(json_object_get(doc, "contexts")), 1);
	assert_string_equal(
	        jx_str(json_array_get(json_object_get(doc, "clusters"), 0), "name", NULL),
	        "landlord-acme");
	assert_string_equal(jx_str(json_array_get(json_object_get(doc, "clusters"), 0), "cluster",
	                           "server", NULL),
	                    "https://127.0.0.1:8444/tenants/acme");
	assert_string_equal(jx_str(json_array_get(json_object_get(doc, "users"), 0), "name", NULL),
	                    "landlord-acme");
	assert_string_equal(jx_str(ctx, "name", NULL), "landlord-acme");
	assert_string_equal(jx_str(ctx, "context", "cluster", NULL), "landlord-acme");
	assert_string_equal(jx_str(ctx, "context", "user", NULL), "landlord-acme");
	assert_string_equal(ca, server_ca->cert_pem);
	assert_string_equal(crt, client->cert_pem);
	assert_string_equal(key, client->key_pem);
	free(ca);
	free(crt);
	free(key);
}

static void test_credentials__kubeconfigs_are_yaml_for_any_user_name(void **state)
{
	struct env *e = *state;
	struct pxcreds *pc = load_ok(e->kc[0], true);
	struct pki_pair server_ca = {0}, c = {0};
	const char *users[] = {"alice",
	                       "o'brien \"the\" #1: - [x] {y} & *z ! % @ `",
	                       "- a",
	                       "J\xc3\xbcrgen \\ \xe5\x9b\xa2",
	                       "eve\nkind: Evil\n",
	                       "line\xe2\x80\xa8separator: x",
	                       "",
	                       "yes"};

	assert_int_equal(pki_make_ca("proxy-serving-ca", 0, DAY, &server_ca, NULL), 0);
	assert_int_equal(pxcreds_issue(pc, "acme", "alice", NULL, 0, &c, NULL), 0);
	for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
		json_t *doc = render_parse(&server_ca, &c, users[i]);

		assert_kubeconfig(doc, &server_ca, &c);
		json_decref(doc);
	}
	/* what kubectl will present verifies at the proxy */
	assert_int_equal(pki_verify_client(c.cert_pem, pxcreds_trust_bundle(pc), 0, NULL), 0);
	pki_pair_release(&c);
	pki_pair_release(&server_ca);
	pxcreds_free(pc);
}

static void test_credentials__kubeconfig_refusals_leave_the_buffer_as_it_was(void **state)
{
	struct env *e = *state;
	struct pxcreds *pc = load_ok(e->kc[0], true);
	struct pki_pair server_ca = {0}, c = {0}, no_key = {0};
	struct buf y = BUF_INIT(PXCREDS_KUBECONFIG_MAX), small = BUF_INIT(512);
	const char *sca;

	assert_int_equal(pki_make_ca("proxy-serving-ca", 0, DAY, &server_ca, NULL), 0);
	assert_int_equal(pxcreds_issue(pc, "acme", "alice", NULL, 0, &c, NULL), 0);
	sca = server_ca.cert_pem;
	no_key = (struct pki_pair){c.cert_pem, (char *)""};
	buf_append_str(&y, "kept");
	assert_int_equal(pxcreds_kubeconfig(&y, "http://127.0.0.1:8444", "acme", "a", sca, &c),
	                 -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&y, "https://", "acme", "a", sca, &c), -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&y, "https://h?x=1", "acme", "a", sca, &c), -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&y, "https://h\n", "acme", "a", sca, &c), -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&y, NULL, "acme", "a", sca, &c), -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&y, "https://h", "Acme", "a", sca, &c), -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&y, "https://h", "acme", "\xff", sca, &c), -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&y, "https://h", "acme", "a", "junk", &c), -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&y, "https://h", "acme", "a", NULL, &c), -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&y, "https://h", "acme", "a", sca, &no_key), -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&y, "https://h", "acme", "a", sca, NULL), -EINVAL);
	assert_int_equal(pxcreds_kubeconfig(&small, "https://h", "acme", "a", sca, &c), -EMSGSIZE);
	assert_string_equal(buf_cstr(&y), "kept");
	assert_int_equal(small.len, 0);
	/* appended after what was there; a base with a path keeps it */
	assert_int_equal(pxcreds_kubeconfig(&y, "https://h.example/proxy//", "acme", "a", sca, &c),
	                 0);
	assert_memory_equal(y.p, "kept# landlord", 14);
	assert_non_null(strstr(y.p, "\"https://h.example/proxy/tenants/acme\"\n"));
	buf_release(&y);
	buf_release(&small);
	pki_pair_release(&c);
	pki_pair_release(&server_ca);
	pxcreds_free(pc);
}

static void test_credentials__api_errors_are_reported(void **state)
{
	struct env *e = *state;
	struct pxcreds *pc = NULL;
	struct ll_err err = {{0}};
	json_t *s;
	int post, get = fake_api_rule_add(e->f, &(struct fake_rule){.method = "GET",
	                                                            .path_contains = "/secrets/",
	                                                            .action = FAKE_ANSWER,
	                                                            .status = 403});

	assert_int_equal(pxcreds_load(e->kc[0], NULL, true, &pc, &err), -EIO);
	assert_non_null(
	        strstr(err.msg, "cannot read Secret landlord-system/landlord-proxy-ca: 403"));
	fake_api_rule_remove(e->f, get);
	post = fake_api_rule_add(e->f, &(struct fake_rule){.method = "POST",
	                                                   .path_contains = "/secrets",
	                                                   .action = FAKE_ANSWER,
	                                                   .status = 403});
	assert_int_equal(pxcreds_load(e->kc[0], NULL, true, &pc, &err), -EIO);
	assert_non_null(
	        strstr(err.msg, "cannot create Secret landlord-system/landlord-proxy-ca: 403"));
	assert_null(pc);
	/* another namespace is another Secret */
	fake_api_rule_remove(e->f, post);
	assert_int_equal(pxcreds_load(e->kc[0], "elsewhere", true, &pc, &err), 0);
	s = fake_api_get(e->f, SECRETS, "elsewhere", PXCREDS_SECRET);
	assert_non_null(s);
	assert_null(fake_api_get(e->f, SECRETS, NS, PXCREDS_SECRET));
	json_decref(s);
	pxcreds_free(pc);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(test_credentials__the_first_load_creates_the_secret_once),
	        T(test_credentials__without_create_a_missing_secret_is_not_made),
	        T(test_credentials__two_loaders_racing_agree_on_one_ca),
	        T(test_credentials__a_malformed_secret_is_refused_and_untouched),
	        T(test_credentials__issued_certificates_verify_as_clients_and_read_back),
	        T(test_credentials__ttls_and_names_have_limits),
	        T(test_credentials__an_expired_ca_issues_nothing),
	        T(test_credentials__kubeconfigs_are_yaml_for_any_user_name),
	        T(test_credentials__kubeconfig_refusals_leave_the_buffer_as_it_was),
	        T(test_credentials__api_errors_are_reported),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
