/*
 * proxy_cmd.c - wiring of the tenant API proxy (src/proxy/proxy.h): `landlord proxy`, the proxy
 * inside `landlord run`, and `landlord kubeconfig`.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/manager.h"
#include "pki/certs.h"
#include "proxy/credentials.h"
#include "proxy/proxy.h"

#include "wiring.h"

#define NAMES_MAX 16

struct proxy_role {
	struct pxcreds *creds;
	struct certs *certs;
	struct px *px;
	char *dns[NAMES_MAX + 1];
	char *ips[NAMES_MAX + 1];
	size_t n_dns, n_ips;
};

static void add(char **list, size_t *n, char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(list[i], name) == 0) {
			free(name);
			return;
		}
	if (*n < NAMES_MAX)
		list[(*n)++] = name;
	else
		free(name);
}

static bool is_ip(const char *s)
{
	unsigned char a[16];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

static void add_host(struct proxy_role *r, const char *host)
{
	if (is_ip(host))
		add(r->ips, &r->n_ips, xstrdup(host));
	else if (*host)
		add(r->dns, &r->n_dns, xstrdup(host));
}

/* The host of https://HOST[:PORT][/...] ("[v6]" unbracketed). */
static void url_host(const char *url, char *out, size_t size)
{
	const char *h = strncmp(url, "https://", 8) == 0 ? url + 8 : url;
	size_t n = *h == '[' ? strcspn(h + 1, "]") : strcspn(h, ":/");

	snprintf(out, size, "%.*s", (int)n, *h == '[' ? h + 1 : h);
}

/* The serving certificate's names: the Service's, the URL's host, the address, the IPs. */
static void names(struct proxy_role *r, const struct config *cfg)
{
	const char *svc = cfg->proxy_service, *ns = LANDLORD_SYSTEM_NAMESPACE;
	const char *csv = cfg->proxy_cert_ip ? cfg->proxy_cert_ip : "";
	char host[256];

	add(r->dns, &r->n_dns, xasprintf("%s", svc));
	add(r->dns, &r->n_dns, xasprintf("%s.%s", svc, ns));
	add(r->dns, &r->n_dns, xasprintf("%s.%s.svc", svc, ns));
	add(r->dns, &r->n_dns, xasprintf("%s.%s.svc.cluster.local", svc, ns));
	url_host(cfg->proxy_url, host, sizeof(host));
	add_host(r, host);
	if (strcmp(cfg->proxy_addr, "0.0.0.0") != 0 && strcmp(cfg->proxy_addr, "::") != 0)
		add_host(r, cfg->proxy_addr);
	while (*csv) {
		size_t n = strcspn(csv, ",");

		snprintf(host, sizeof(host), "%.*s", (int)n, csv);
		add_host(r, host);
		csv += n + (csv[n] == ',');
	}
}

static void on_pair(void *ud, const char *cert_pem, const char *key_pem)
{
	struct proxy_role *r = ud;
	struct ll_err err = {{0}};

	if (r->px && px_set_serving(r->px, cert_pem, key_pem, &err) < 0)
		log_error("the proxy's new certificate was refused; the old one is served", "{s:s}",
		          "error", err.msg);
}

static int start_certs(struct proxy_role *r, struct kc_client *client, struct pki_pair *pair,
                       struct ll_err *err)
{
	struct certs_opts co = {.client = client,
	                        .ns = LANDLORD_SYSTEM_NAMESPACE,
	                        .secret_name = PROXY_TLS_SECRET,
	                        .dns_names = (const char *const *)r->dns,
	                        .ips = (const char *const *)r->ips,
	                        .publish_grace_s = -1,
	                        .on_pair = on_pair,
	                        .ud = r};
	int rc;

	r->certs = certs_new(&co);
	rc = certs_sync(r->certs, err);
	if (rc == 0)
		rc = certs_served(r->certs, pair) < 0 ? -EIO : 0;
	return rc;
}

static int role_start(struct proxy_role *r, const struct config *cfg, struct kc_client *client,
                      struct mgr *m, struct ll_err *err)
{
	struct pki_pair pair = {0};
	int rc = pxcreds_load(client, NULL, true, &r->creds, err);

	names(r, cfg);
	if (rc == 0)
		rc = start_certs(r, client, &pair, err);
	if (rc == 0) {
		struct px_opts o = {.client = client,
		                    .mgr = m,
		                    .addr = cfg->proxy_addr,
		                    .port = cfg->proxy_port,
		                    .cert_pem = pair.cert_pem,
		                    .key_pem = pair.key_pem,
		                    .client_ca_pem = pxcreds_trust_bundle(r->creds),
		                    .stream_idle_timeout_s = cfg->stream_idle_timeout_ms / 1000};

		rc = px_new(&o, &r->px, err);
	}
	if (rc == 0)
		rc = px_start(r->px, err);
	if (rc == 0)
		rc = certs_start(r->certs, 0);
	pki_pair_release(&pair);
	return rc;
}

int proxy_role_start(const struct config *cfg, struct kc_client *client, struct mgr *m,
                     struct proxy_role **out)
{
	struct proxy_role *r = xcalloc(1, sizeof(*r));
	struct ll_err err = {{0}};
	int rc = role_start(r, cfg, client, m, &err);

	if (rc < 0) {
		log_error("the tenant proxy did not start", "{s:s}", "error", err.msg);
		proxy_role_stop(r);
		return rc;
	}
	*out = r;
	return 0;
}

void proxy_role_stop(struct proxy_role *r)
{
	if (!r)
		return;
	certs_free(r->certs); /* before the proxy: no pass hands it a pair any more */
	px_free(r->px);
	pxcreds_free(r->creds);
	for (size_t i = 0; i < r->n_dns; i++)
		free(r->dns[i]);
	for (size_t i = 0; i < r->n_ips; i++)
		free(r->ips[i]);
	free(r);
}

int proxy_client_new(const struct config *cfg, struct kcfg *kc, struct kc_client **out)
{
	struct ll_err err;
	int rc = kcfg_load_default(cfg->proxy_kubeconfig, NULL, kc, &err);

	if (rc < 0) {
		log_error("cannot load the proxy's kubeconfig", "{s:s,s:s}", "path",
		          cfg->proxy_kubeconfig, "error", err.msg);
		return rc;
	}
	return new_client(kc, cfg, "proxy", out);
}

int cmd_proxy(const struct config *cfg)
{
	struct kc_client *client = NULL;
	struct proxy_role *role = NULL;
	struct config own = *cfg;
	struct kcfg kc = {0};
	struct mgr *m = NULL;
	int rc;

	if (cfg->proxy_kubeconfig) { /* its own identity, not landlord's */
		own.kubeconfig = cfg->proxy_kubeconfig;
		own.context = NULL;
	}
	rc = connect_server(&own, &kc, &client);

	if (rc == 0) {
		m = mgr_new(&(struct mgr_opts){.client = client,
		                               .probe_addr = cfg->probe_addr,
		                               .probe_port = cfg->probe_port});
		rc = proxy_role_start(cfg, client, m, &role);
	}
	if (rc == 0)
		rc = mgr_run(m);
	proxy_role_stop(role); /* before the manager whose informers it reads */
	mgr_free(m);
	kc_client_free(client);
	kcfg_release(&kc);
	return rc < 0 ? 1 : 0;
}

/* The CA bundle of the proxy's serving certificate, from its Secret. */
static int serving_ca(struct kc_client *c, char **out, struct ll_err *err)
{
	struct kc_resp resp = {0};
	const char *b64;
	struct buf pem = BUF_INIT(1 << 20);
	int rc = kc_get(c, &KC_SECRETS, LANDLORD_SYSTEM_NAMESPACE, PROXY_TLS_SECRET, &resp, err);

	b64 = rc == 0 ? json_string_value(json_object_get(json_object_get(resp.body, "data"),
	                                                  "ca-bundle.crt"))
	              : NULL;
	if (rc == 0 && !b64)
		rc = ll_err_set(
		        err, -ENOENT,
		        "Secret %s/%s has no ca-bundle.crt: start the proxy (landlord run or "
		        "landlord proxy) once, then ask again",
		        LANDLORD_SYSTEM_NAMESPACE, PROXY_TLS_SECRET);
	if (rc == 0 && pki_b64_decode(b64, &pem) < 0)
		rc = ll_err_set(err, -EINVAL, "Secret %s/%s: ca-bundle.crt is not base64",
		                LANDLORD_SYSTEM_NAMESPACE, PROXY_TLS_SECRET);
	if (rc == 0)
		*out = buf_detach(&pem);
	buf_release(&pem);
	kc_resp_release(&resp);
	return rc;
}

static int issue(const struct config *cfg, struct kc_client *c, struct buf *out, struct ll_err *err)
{
	struct pxcreds *creds = NULL;
	struct pki_pair pair = {0};
	char *ca = NULL;
	int rc = pxcreds_load(c, NULL, true, &creds, err);

	if (rc == 0)
		rc = serving_ca(c, &ca, err);
	if (rc == 0)
		rc = pxcreds_issue(creds, cfg->kc_tenant, cfg->kc_user, cfg->kc_groups,
		                   cfg->kc_ttl_ms / 1000, &pair, err);
	if (rc == 0 &&
	    pxcreds_kubeconfig(out, cfg->proxy_url, cfg->kc_tenant, cfg->kc_user, ca, &pair) < 0)
		rc = ll_err_set(err, -EINVAL, "--proxy-url %s: an https:// URL is needed",
		                cfg->proxy_url);
	pki_pair_release(&pair);
	free(ca);
	pxcreds_free(creds);
	return rc;
}

int cmd_kubeconfig(const struct config *cfg)
{
	struct kc_client *client = NULL;
	struct buf out = BUF_INIT(PXCREDS_KUBECONFIG_MAX);
	struct ll_err err = {{0}};
	struct kcfg kc = {0};
	int rc;

	if (!cfg->kc_tenant || !cfg->kc_user) {
		fprintf(stderr, "landlord kubeconfig: --tenant and --user are required\n");
		return 2;
	}
	rc = connect_server(cfg, &kc, &client);
	if (rc == 0)
		rc = issue(cfg, client, &out, &err);
	if (rc == 0)
		fwrite(out.p, 1, out.len, stdout);
	else if (err.msg[0])
		fprintf(stderr, "landlord kubeconfig: %s\n", err.msg);
	buf_release(&out);
	kc_client_free(client);
	kcfg_release(&kc);
	return rc < 0 ? 1 : 0;
}
