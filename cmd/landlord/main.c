/*
 * landlord - multi-tenancy control plane for Kubernetes.
 *
 * Subcommand dispatch and wiring only: every role is built from the library (lib/) and the roles
 * (src/). Options are the rows of OPTIONS in options.c: each has an environment variable
 * (LANDLORD_<FLAG>), and a flag given on the command line wins.
 */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <openssl/opensslv.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "controllers/controllers.h"
#include "http/probes.h"
#include "http/server.h"
#include "kube/discovery.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/manager.h"
#include "webhook/admission.h"
#include "webhook/rules.h"

#include "options.h"

static int cmd_version(void)
{
	curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);

	printf("landlord %s\n", LANDLORD_VERSION);
	printf("built with jansson %s, libcurl %s, libmicrohttpd %s, %s\n", JANSSON_VERSION,
	       cv->version, MHD_get_version(), OPENSSL_VERSION_TEXT);
	return 0;
}

/* One request that proves the server is reachable and the credentials are accepted. */
static int check_server(struct kc_client *c)
{
	struct kc_resp resp = {0};
	struct ll_err err;
	int rc = kc_request(c, "GET", "/version", NULL, NULL, 0, NULL, &resp, &err);

	if (rc < 0) {
		log_error("cannot reach the API server", "{s:s,s:s}", "server", kc_server(c),
		          "error", err.msg);
	} else if (!kc_resp_ok(&resp)) {
		log_error("the API server refused landlord's credentials", "{s:s,s:i,s:s,s:s}",
		          "server", kc_server(c), "code", (int)resp.http_status, "reason",
		          resp.status.reason, "message", resp.status.message);
		rc = -EACCES;
	} else {
		log_info("connected to the API server", "{s:s,s:s?}", "server", kc_server(c),
		         "version", json_string_value(json_object_get(resp.body, "gitVersion")));
	}
	kc_resp_release(&resp);
	return rc;
}

static int check_crds(struct kc_client *c)
{
	struct disc *d = disc_new(c);
	struct kc_gvr gvr;
	struct ll_err err;
	int rc =
	        disc_lookup_kind(d, LANDLORD_GROUP "/" LANDLORD_VERSION_V1A1, "Tenant", &gvr, &err);

	if (rc == -ENOENT)
		log_error("the landlord CRDs are not installed: kubectl apply -f deploy/crds/",
		          "{s:s}", "server", kc_server(c));
	else if (rc < 0)
		log_error("API discovery failed", "{s:s}", "error", err.msg);
	disc_free(d);
	return rc;
}

static int new_client(const struct kcfg *kc, const struct config *cfg, const char *name,
                      struct kc_client **out)
{
	struct kc_opts o = {.qps = (double)cfg->qps,
	                    .burst = (int)cfg->burst,
	                    .client_name = name,
	                    .http2 = cfg->http2};
	struct ll_err err;
	int rc = kc_client_new(kc, &o, out, &err);

	if (rc < 0)
		log_error("invalid API server configuration", "{s:s,s:s}", "source", kc->source,
		          "error", err.msg);
	return rc;
}

/* The admission webhook: a TLS server with the webhook rules and its own probe endpoints. */
struct webhook {
	struct http_server *server;
	struct probes *probes;
	struct admission_route *route;
};

static int webhook_start(const struct config *cfg, struct webhook *wh)
{
	struct buf cert = BUF_INIT(1u << 20), key = BUF_INIT(1u << 20);
	struct ll_err err = {{0}};
	int rc = buf_read_file(&cert, cfg->tls_cert_file, true);

	if (rc == 0)
		rc = buf_read_file(&key, cfg->tls_key_file, true);
	if (rc < 0) {
		log_error("cannot read the webhook's TLS files", "{s:s,s:s,s:s}", "cert",
		          cfg->tls_cert_file, "key", cfg->tls_key_file, "error", strerror(-rc));
		goto out;
	}
	wh->server = http_server_new(&(struct http_server_opts){.name = "webhook",
	                                                        .addr = cfg->webhook_addr,
	                                                        .port = cfg->webhook_port,
	                                                        .cert_pem = buf_cstr(&cert),
	                                                        .key_pem = buf_cstr(&key)});
	wh->probes = probes_new(wh->server);
	wh->route = admission_route_new(wh->server, "/validate", "landlord", webhook_rules);
	rc = http_server_start(wh->server, &err);
	if (rc < 0)
		log_error("webhook server failed to start", "{s:s,s:i,s:i,s:s}", "addr",
		          cfg->webhook_addr, "port", cfg->webhook_port, "errno", -rc, "error",
		          err.msg);
	else
		log_info("webhook listening", "{s:s,s:i,s:s}", "addr", cfg->webhook_addr, "port",
		         http_server_port(wh->server), "path", "/validate");
out:
	buf_release(&cert);
	buf_release(&key);
	return rc;
}

static void webhook_stop(struct webhook *wh)
{
	http_server_free(wh->server);
	probes_free(wh->probes);
	admission_route_free(wh->route);
	*wh = (struct webhook){0};
}

static bool webhook_configured(const struct config *cfg)
{
	return cfg->tls_cert_file && cfg->tls_key_file;
}

static int cmd_webhook(const struct config *cfg)
{
	struct webhook wh = {0};
	struct mgr *m;
	int rc;

	if (!webhook_configured(cfg)) {
		log_error("the webhook needs --tls-cert-file and --tls-key-file", NULL);
		return 1;
	}
	rc = webhook_start(cfg, &wh);
	if (rc == 0) {
		/* No controllers and no API client: the manager only serves probes and signals. */
		m = mgr_new(&(struct mgr_opts){.probe_addr = cfg->probe_addr,
		                               .probe_port = cfg->probe_port});
		rc = mgr_run(m);
		mgr_free(m);
	}
	webhook_stop(&wh);
	return rc < 0 ? 1 : 0;
}

static int cmd_controllers(const struct config *cfg, bool with_webhook)
{
	struct kc_client *client = NULL, *lease_client = NULL;
	struct webhook wh = {0};
	struct kcfg kc = {0};
	struct mgr *m = NULL;
	struct ll_err err;
	struct controller_def config = landlordconfig_controller_def();
	struct controller_def tenant = tenant_controller_def();
	struct controller_def plan = plan_controller_def();
	int rc;

	rc = kcfg_load_default(cfg->kubeconfig, cfg->context, &kc, &err);
	if (rc < 0) {
		log_error("cannot load the kubeconfig", "{s:s}", "error", err.msg);
		goto out;
	}
	rc = new_client(&kc, cfg, "main", &client);
	if (rc == 0 && cfg->leader_elect)
		rc = new_client(&kc, cfg, "lease", &lease_client);
	if (rc == 0)
		rc = check_server(client);
	if (rc == 0)
		rc = check_crds(client);
	if (rc < 0)
		goto out;
	m = mgr_new(&(struct mgr_opts){
	        .client = client,
	        .lease_client = lease_client,
	        .lease_ns = cfg->lease_ns,
	        .lease_name = LANDLORD_LEASE_NAME,
	        .lease_duration_ms = (int)cfg->lease_duration_ms,
	        .renew_deadline_ms = (int)cfg->renew_deadline_ms,
	        .retry_period_ms = (int)cfg->retry_period_ms,
	        .probe_addr = cfg->probe_addr,
	        .probe_port = cfg->probe_port,
	        .test_hooks = cfg->test_hooks,
	});
	mgr_add_controller(m, &config);
	mgr_add_controller(m, &tenant);
	mgr_add_controller(m, &plan);
	if (with_webhook && webhook_configured(cfg))
		rc = webhook_start(cfg, &wh);
	else if (with_webhook)
		log_info("webhook disabled: no --tls-cert-file/--tls-key-file", NULL);
	if (rc == 0)
		rc = mgr_run(m);
out:
	mgr_free(m);
	webhook_stop(&wh);
	kc_client_free(lease_client);
	kc_client_free(client);
	kcfg_release(&kc);
	return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct config cfg = {0};
	const char *cmd = argc > 1 ? argv[1] : "";
	int rc;

	/*
	 * Many threads allocate (workers, reflectors, I/O): glibc would give each its own arena
	 * and keep freed cache pages in all of them. Two arenas keep the footprint close to the
	 * live data; allocation is not where landlord spends its time.
	 */
	mallopt(M_ARENA_MAX, 2);
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0)
		return cmd_version();
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		options_usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "run") != 0 && strcmp(cmd, "controller") != 0 &&
	    strcmp(cmd, "webhook") != 0) {
		fprintf(stderr, "landlord: unknown command \"%s\"\n\n", cmd);
		options_usage(stderr);
		return 2;
	}
	rc = options_parse(argc, argv, &cfg);
	if (rc)
		return rc;
	log_set_verbosity((int)cfg.verbosity);
	if (cfg.crash_after_writes > 0 && !cfg.test_hooks) {
		fprintf(stderr, "landlord: --test-crash-after-writes needs --enable-test-hooks\n");
		return 2;
	}
	kc_test_crash_after_writes(cfg.crash_after_writes);
	mgr_block_signals();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	log_info("landlord starting", "{s:s,s:s,s:b}", "command", cmd, "version", LANDLORD_VERSION,
	         "leader_elect", cfg.leader_elect);
	if (strcmp(cmd, "webhook") == 0)
		rc = cmd_webhook(&cfg);
	else
		rc = cmd_controllers(&cfg, strcmp(cmd, "run") == 0);
	curl_global_cleanup();
	return rc;
}
