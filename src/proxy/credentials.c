/*
 * credentials.c - the proxy's client CA and HMAC key through one Secret, tenant users'
 * certificates and their kubeconfigs (see credentials.h).
 */
#include "proxy/credentials.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/k8sname.h"
#include "kube/kube.h"

#define ATTEMPTS        4 /* loads started again after a 409 whose winner then vanished */
#define RESERVED_PREFIX "system:"
#define URL_MAX         2048

struct pxcreds {
	char *ns;
	struct pki_pair ca;
	char *trusted;        /* the client CA bundle (PEM) */
	int64_t ca_not_after; /* Unix seconds */
	unsigned char hmac[PXCREDS_HMAC_LEN];
};

void pxcreds_free(struct pxcreds *pc)
{
	if (pc == NULL)
		return;
	if (pc->ca.key_pem)
		explicit_bzero(pc->ca.key_pem, strlen(pc->ca.key_pem));
	explicit_bzero(pc->hmac, sizeof(pc->hmac));
	pki_pair_release(&pc->ca);
	free(pc->trusted);
	free(pc->ns);
	free(pc);
}

const struct pki_pair *pxcreds_ca(const struct pxcreds *pc)
{
	return &pc->ca;
}

const char *pxcreds_trust_bundle(const struct pxcreds *pc)
{
	return pc->trusted;
}

const unsigned char *pxcreds_hmac_key(const struct pxcreds *pc, size_t *len)
{
	*len = sizeof(pc->hmac);
	return pc->hmac;
}

/* ---- the Secret's contents ---- */

/* Wipe the data values of @secret (keys in jansson strings) before it is freed. */
static void wipe_data(json_t *secret)
{
	json_t *data = json_object_get(secret, "data"), *v;
	const char *key;

	json_object_foreach(data, key, v)
		if (json_is_string(v))
			explicit_bzero((char *)json_string_value(v), json_string_length(v));
}

/* The data key @key of @secret, base64-decoded, appended to @out (whose cap applies). */
static int data_field(const json_t *secret, const char *key, struct buf *out, struct ll_err *why)
{
	const json_t *v = jx_get(secret, "data", key, NULL);
	int rc;

	if (v == NULL)
		return ll_err_set(why, -EINVAL, "its data key %s is missing", key);
	if (!json_is_string(v))
		return ll_err_set(why, -EINVAL, "its data key %s is not a string", key);
	rc = pki_b64_decode(json_string_value(v), out);
	if (rc == -EMSGSIZE)
		return ll_err_set(why, -EINVAL, "its %s is over %zu bytes", key, out->max);
	if (rc < 0)
		return ll_err_set(why, -EINVAL, "its %s is not base64", key);
	if (out->len == 0)
		return ll_err_set(why, -EINVAL, "its %s is empty", key);
	return 0;
}

static int read_pem(const json_t *secret, const char *key, char **pem, struct ll_err *why)
{
	struct buf b = BUF_INIT(PKI_PEM_MAX);
	int rc = data_field(secret, key, &b, why);

	*pem = rc == 0 ? buf_detach(&b) : NULL;
	buf_release(&b);
	return rc;
}

/* ca.crt is one CA certificate and ca.key its key. */
static int check_ca(struct pxcreds *pc, struct ll_err *why)
{
	struct pki_bundle b = {0};
	struct pki_cert_info info;
	struct ll_err e = {{0}};
	int rc = pki_bundle_split(pc->ca.cert_pem, strlen(pc->ca.cert_pem), &b, &e);

	if (rc < 0)
		rc = ll_err_set(why, -EINVAL, "its ca.crt does not parse (%s)", e.msg);
	else if (b.n != 1)
		rc = ll_err_set(why, -EINVAL, "its ca.crt holds %zu certificates, not one", b.n);
	else if (pki_read_cert(b.certs[0], strlen(b.certs[0]), &info, NULL) < 0 || !info.is_ca)
		rc = ll_err_set(why, -EINVAL, "its ca.crt is not a CA certificate");
	else if ((rc = pki_check_pair(&pc->ca, &e)) == -EKEYREJECTED)
		rc = ll_err_set(why, -EINVAL, "its ca.key does not match its ca.crt");
	else if (rc < 0)
		rc = ll_err_set(why, -EINVAL, "its ca.key does not parse (%s)", e.msg);
	else
		pc->ca_not_after = info.not_after;
	pki_bundle_release(&b);
	return rc;
}

/*
 * The CAs whose client certificates the proxy accepts: ca.crt. A CA rotation adds next-ca.crt
 * here (read beside ca.crt in parse_secret()), before any certificate it signs is issued, and
 * drops the old CA only once the last certificate it signed has expired.
 */
static int build_trust(struct pxcreds *pc, struct ll_err *why)
{
	struct pki_bundle b = {0};
	int rc = pki_bundle_add(&b, pc->ca.cert_pem, why);

	if (rc == 0)
		pc->trusted = pki_bundle_join(&b);
	pki_bundle_release(&b);
	return rc;
}

static int parse_secret(const json_t *secret, struct pxcreds *pc, struct ll_err *why)
{
	struct buf hmac = BUF_INIT(4 * PXCREDS_HMAC_LEN);
	int rc = read_pem(secret, "ca.crt", &pc->ca.cert_pem, why);

	if (rc == 0)
		rc = read_pem(secret, "ca.key", &pc->ca.key_pem, why);
	if (rc == 0)
		rc = data_field(secret, "hmac.key", &hmac, why);
	if (rc == 0 && hmac.len != PXCREDS_HMAC_LEN)
		rc = ll_err_set(why, -EINVAL, "its hmac.key is %zu bytes, not %u", hmac.len,
		                PXCREDS_HMAC_LEN);
	if (rc == 0) {
		memcpy(pc->hmac, hmac.p, PXCREDS_HMAC_LEN);
		rc = check_ca(pc, why);
	}
	if (rc == 0)
		rc = build_trust(pc, why);
	if (hmac.p)
		explicit_bzero(hmac.p, hmac.len);
	buf_release(&hmac);
	return rc;
}

/* @secret into @pc, or -EINVAL with what is wrong and what to do about it. */
static int use_secret(const json_t *secret, struct pxcreds *pc, struct ll_err *err)
{
	struct ll_err why = {{0}};
	int rc = parse_secret(secret, pc, &why);

	if (rc < 0)
		return ll_err_set(
		        err, -EINVAL,
		        "Secret %s/%s is malformed: %s; landlord never overwrites it: "
		        "restore it, or delete it (kubectl -n %s delete secret %s) to have "
		        "a new CA made, which voids every credential issued so far",
		        pc->ns, PXCREDS_SECRET, why.msg, pc->ns, PXCREDS_SECRET);
	return 0;
}

static void put_data(json_t *data, const char *key, const void *bytes, size_t len)
{
	char *b64 = pki_b64_encode(bytes, len);

	json_object_set_new(data, key, json_string(b64));
	explicit_bzero(b64, strlen(b64));
	free(b64);
}

/* A new Secret: a fresh CA and HMAC key (a new reference in *@out). */
static int new_secret(const char *ns, json_t **out, struct ll_err *err)
{
	struct pki_pair ca = {0};
	unsigned char hmac[PXCREDS_HMAC_LEN];
	char cn[PKI_CN_MAX + 1];
	int64_t now = (int64_t)time(NULL);
	json_t *data = json_object();
	int rc;

	*out = NULL;
	snprintf(cn, sizeof(cn), "landlord-proxy-ca-%lld", (long long)now);
	rc = pki_make_ca(cn, now, PXCREDS_CA_LIFETIME_S, &ca, err);
	if (rc == 0 && pki_random(hmac, sizeof(hmac)) < 0)
		rc = ll_err_set(err, -EIO, "cannot draw the HMAC key: OpenSSL's RAND_bytes failed");
	if (rc == 0) {
		put_data(data, "ca.crt", ca.cert_pem, strlen(ca.cert_pem));
		put_data(data, "ca.key", ca.key_pem, strlen(ca.key_pem));
		put_data(data, "hmac.key", hmac, sizeof(hmac));
		*out = json_pack("{s:s,s:s,s:s,s:{s:s,s:s,s:{s:s}},s:O}", "apiVersion", "v1",
		                 "kind", "Secret", "type", "Opaque", "metadata", "name",
		                 PXCREDS_SECRET, "namespace", ns, "labels", LABEL_MANAGED_BY,
		                 MANAGED_BY_VALUE, "data", data);
		if (*out == NULL)
			rc = ll_err_set(err, -EINVAL, "cannot build the Secret for namespace %s",
			                ns);
	}
	explicit_bzero(hmac, sizeof(hmac));
	if (ca.key_pem)
		explicit_bzero(ca.key_pem, strlen(ca.key_pem));
	pki_pair_release(&ca);
	json_decref(data); /* *@out holds it on success (wiped after the POST) */
	return rc;
}

/* ---- the API server ---- */

/* GET the Secret: *@secret is it (a new reference), or NULL when there is none. */
static int get_secret(struct kc_client *c, const char *ns, json_t **secret, struct ll_err *err)
{
	struct kc_resp resp = {0};
	int rc = kc_get(c, &KC_SECRETS, ns, PXCREDS_SECRET, &resp, err);

	*secret = NULL;
	if (rc < 0)
		rc = -EIO;
	else if (kc_resp_ok(&resp) && json_is_object(resp.body))
		*secret = json_incref(resp.body);
	else if (resp.http_status != 404)
		rc = ll_err_set(err, -EIO, "cannot read Secret %s/%s: %ld %s", ns, PXCREDS_SECRET,
		                resp.http_status, resp.status.message);
	kc_resp_release(&resp);
	return rc;
}

/* POST @take_secret: *@stored is what the API server stored; -EAGAIN when one exists. */
static int create_secret(struct kc_client *c, const char *ns, json_t *take_secret, json_t **stored,
                         struct ll_err *err)
{
	struct kc_resp resp = {0};
	int rc = kc_create(c, &KC_SECRETS, ns, take_secret, &resp, err);

	wipe_data(take_secret);
	json_decref(take_secret);
	if (rc < 0)
		rc = -EIO;
	else if (resp.http_status == 409)
		rc = -EAGAIN;
	else if (!kc_resp_ok(&resp) || !json_is_object(resp.body))
		rc = ll_err_set(err, -EIO, "cannot create Secret %s/%s: %ld %s", ns, PXCREDS_SECRET,
		                resp.http_status, resp.status.message);
	else
		*stored = json_incref(resp.body);
	kc_resp_release(&resp);
	return rc;
}

/* One attempt: read the Secret (or create it), then take what it holds. -EAGAIN: again. */
static int load_once(struct kc_client *c, bool create, struct pxcreds *pc, struct ll_err *err)
{
	json_t *secret = NULL, *fresh = NULL;
	int rc = get_secret(c, pc->ns, &secret, err);

	if (rc == 0 && secret == NULL && !create)
		rc = ll_err_set(err, -ENOENT,
		                "Secret %s/%s does not exist yet: `landlord proxy` or `landlord "
		                "kubeconfig` creates it",
		                pc->ns, PXCREDS_SECRET);
	else if (rc == 0 && secret == NULL) {
		rc = new_secret(pc->ns, &fresh, err);
		if (rc == 0)
			rc = create_secret(c, pc->ns, fresh, &secret, err);
		if (rc == 0)
			log_info("tenant proxy client CA created", "{s:s,s:s}", "namespace", pc->ns,
			         "secret", PXCREDS_SECRET);
	}
	if (rc == 0)
		rc = use_secret(secret, pc, err);
	wipe_data(secret);
	json_decref(secret);
	return rc;
}

int pxcreds_load(struct kc_client *c, const char *ns, bool create, struct pxcreds **out,
                 struct ll_err *err)
{
	struct pxcreds *pc;
	int rc = -EAGAIN;

	*out = NULL;
	if (c == NULL)
		return ll_err_set(err, -EINVAL, "no API client to read the proxy's Secret with");
	pc = xcalloc(1, sizeof(*pc));
	pc->ns = xstrdup(ns ? ns : LANDLORD_SYSTEM_NAMESPACE);
	for (int i = 0; i < ATTEMPTS && rc == -EAGAIN; i++)
		rc = load_once(c, create, pc, err);
	if (rc == -EAGAIN)
		ll_err_set(err, rc, "Secret %s/%s kept appearing and vanishing under %d attempts",
		           pc->ns, PXCREDS_SECRET, ATTEMPTS);
	if (rc < 0) {
		pxcreds_free(pc);
		return rc;
	}
	*out = pc;
	return 0;
}

/* ---- issuing ---- */

static int check_ttl(int64_t ttl_s, struct ll_err *err)
{
	if (ttl_s < 0)
		return ll_err_set(err, -EINVAL, "--ttl must be positive (0: the default, %lldh)",
		                  PXCREDS_TTL_DEFAULT_S / 3600);
	if (ttl_s > PXCREDS_TTL_MAX_S)
		return ll_err_set(
		        err, -EINVAL,
		        "--ttl of %llds is over the longest credential, %lld days (%lldh): "
		        "nothing revokes a client certificate, so its lifetime bounds a "
		        "leaked one",
		        (long long)ttl_s, PXCREDS_TTL_MAX_S / 86400, PXCREDS_TTL_MAX_S / 3600);
	return 0;
}

/* The tenant is a DNS label (as Tenant names are); user and groups are outside "system:". */
static int check_who(const char *tenant, const char *user, const char *const *groups,
                     struct ll_err *err)
{
	const char *why = tenant ? k8s_dns_label_problem(tenant, strlen(tenant)) : "none given";

	if (why)
		return ll_err_set(err, -EINVAL, "the tenant is not a DNS label: %s", why);
	if (user && strncmp(user, RESERVED_PREFIX, strlen(RESERVED_PREFIX)) == 0)
		return ll_err_set(err, -EINVAL,
		                  "the user starts with \"" RESERVED_PREFIX "\", Kubernetes' "
		                  "reserved prefix: a tenant credential may not carry it");
	for (size_t i = 0; groups && groups[i]; i++)
		if (strncmp(groups[i], RESERVED_PREFIX, strlen(RESERVED_PREFIX)) == 0)
			return ll_err_set(err, -EINVAL,
			                  "group %zu starts with \"" RESERVED_PREFIX
			                  "\", Kubernetes' "
			                  "reserved prefix: a tenant credential may not carry it",
			                  i + 1);
	return 0;
}

int pxcreds_issue(const struct pxcreds *pc, const char *tenant, const char *user,
                  const char *const *groups, int64_t ttl_s, struct pki_pair *out,
                  struct ll_err *err)
{
	struct ll_err why = {{0}};
	int64_t now = (int64_t)time(NULL);
	struct pki_client_opts o = {.cn = user,
	                            .orgs = groups,
	                            .ou = tenant,
	                            .now = now,
	                            .lifetime_s = ttl_s ? ttl_s : PXCREDS_TTL_DEFAULT_S};
	int rc = check_ttl(ttl_s, err);

	if (rc == 0)
		rc = check_who(tenant, user, groups, err);
	if (rc == 0 && pc->ca_not_after <= now)
		rc = ll_err_set(
		        err, -EKEYEXPIRED,
		        "the proxy CA in Secret %s/%s expired at %lld (Unix seconds): delete "
		        "the Secret to have a new CA made (every credential issued so far "
		        "stops working)",
		        pc->ns, PXCREDS_SECRET, (long long)pc->ca_not_after);
	if (rc)
		return rc;
	rc = pki_make_client(&pc->ca, &o, out, &why);
	if (rc == -EINVAL)
		return ll_err_set(err, rc,
		                  "user or group refused: %s (the user is the common name, "
		                  "each group an O value)",
		                  why.msg);
	return rc < 0 ? ll_err_set(err, rc, "%s", why.msg) : 0;
}

/* ---- kubeconfigs ---- */

/*
 * @s as a double-quoted scalar: JSON's escapes, which YAML's double quotes share, in ASCII
 * only, so that nothing (a quote, a newline, a Unicode line separator) can end the scalar or
 * the line early.
 */
static int put_quoted(struct buf *b, const char *s)
{
	json_t *j = json_string(s);
	char *q = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
	int rc = q ? buf_append_str(b, q) : -EINVAL;

	free(q);
	json_decref(j);
	return rc;
}

/* An https:// base without control characters, space, query or fragment, as the server URL
 * "<base>/tenants/<tenant>" into @url. */
static int server_url(struct buf *url, const char *base, const char *tenant)
{
	size_t n = base ? strnlen(base, URL_MAX + 1) : 0;

	while (n > 0 && base[n - 1] == '/')
		n--;
	if (n <= strlen("https://") || n > URL_MAX || strncmp(base, "https://", 8) != 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)base[i] <= ' ' || base[i] == 0x7f || base[i] == '?' ||
		    base[i] == '#')
			return -EINVAL;
	if (buf_append(url, base, n) < 0 || buf_appendf(url, "/tenants/%s", tenant) < 0)
		return -EMSGSIZE;
	return 0;
}

/* The PEM @pem as base64 (owned), or NULL when it holds no PEM block. */
static char *pem_b64(const char *pem)
{
	if (pem == NULL || strstr(pem, "-----BEGIN ") == NULL)
		return NULL;
	return pki_b64_encode(pem, strlen(pem));
}

struct kubeconfig_parts {
	const char *user, *tenant, *name, *server;
	char *ca, *cert, *key; /* base64 */
};

static int render(struct buf *b, const struct kubeconfig_parts *p)
{
	const struct {
		const char *text, *value;
	} lines[] = {
	        {"# landlord kubeconfig: the user ", p->user},
	        {"#   of the tenant ", p->tenant},
	        {"#   through landlord's tenant proxy\napiVersion: v1\nkind: Config\n"
	         "clusters:\n- name: ",
	         p->name},
	        {"  cluster:\n    server: ", p->server},
	        {"    certificate-authority-data: ", p->ca},
	        {"users:\n- name: ", p->name},
	        {"  user:\n    client-certificate-data: ", p->cert},
	        {"    client-key-data: ", p->key},
	        {"contexts:\n- name: ", p->name},
	        {"  context:\n    cluster: ", p->name},
	        {"    user: ", p->name},
	        {"current-context: ", p->name},
	};
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof(lines) / sizeof(lines[0]); i++) {
		rc = buf_append_str(b, lines[i].text);
		if (rc == 0)
			rc = put_quoted(b, lines[i].value);
		if (rc == 0)
			rc = buf_append_str(b, "\n");
	}
	return rc == 0 ? buf_append_str(b, "preferences: {}\n") : rc;
}

static void wipe_release(struct buf *b)
{
	if (b->p)
		explicit_bzero(b->p, b->len);
	buf_release(b);
}

int pxcreds_kubeconfig(struct buf *out, const char *server_base, const char *tenant,
                       const char *user, const char *server_ca_pem, const struct pki_pair *client)
{
	struct buf y = BUF_INIT(PXCREDS_KUBECONFIG_MAX), url = BUF_INIT(URL_MAX + 128);
	struct pki_bundle ca = {0};
	char name[K8S_DNS_LABEL_MAX + 16];
	struct kubeconfig_parts p = {.user = user, .tenant = tenant, .name = name};
	int rc = tenant && k8s_is_dns_label(tenant) && user && client ? 0 : -EINVAL;

	if (rc == 0)
		rc = server_url(&url, server_base, tenant);
	if (rc == 0 &&
	    (server_ca_pem == NULL ||
	     pki_bundle_split(server_ca_pem, strlen(server_ca_pem), &ca, NULL) < 0 || ca.n == 0))
		rc = -EINVAL;
	if (rc == 0) {
		snprintf(name, sizeof(name), "landlord-%s", tenant);
		p.server = buf_cstr(&url);
		p.ca = pem_b64(server_ca_pem);
		p.cert = pem_b64(client->cert_pem);
		p.key = pem_b64(client->key_pem);
		rc = p.ca && p.cert && p.key ? render(&y, &p) : -EINVAL;
	}
	if (rc == 0)
		rc = buf_append(out, y.p, y.len);
	if (p.key)
		explicit_bzero(p.key, strlen(p.key));
	free(p.ca);
	free(p.cert);
	free(p.key);
	pki_bundle_release(&ca);
	buf_release(&url);
	wipe_release(&y);
	return rc;
}
