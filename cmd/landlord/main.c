/*
 * landlord - multi-tenancy control plane for Kubernetes.
 *
 * Subcommand dispatch and wiring only: every role is built from the library (lib/) and the roles
 * (src/). Options are the rows of OPTIONS in options.c: each has an environment variable
 * (LANDLORD_<FLAG>), and a flag given on the command line wins.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <openssl/opensslv.h>

#include "base/err.h"
#include "base/log.h"
#include "controllers/controllers.h"
#include "hibernation/extension.h"
#include "hibernation/supervisor.h"
#include "http/probes.h"
#include "http/server.h"
#include "kube/discovery.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/manager.h"
#include "templates/helm_binary.h"
#include "templates/templates.h"
#include "webhook/cacheview.h"
#include "webhook/config_follow.h"
#include "webhook/serve.h"

#include "options.h"
#include "wiring.h"

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

/* The landlord.dev CRDs are installed: Tenant, and the newest ones older installs lack. */
static int check_crds(struct kc_client *c)
{
	static const char *const kinds[] = {"Tenant", "HelmLedger", "ResourceSupervisor",
	                                    "Extension"};
	struct disc *d = disc_new(c);
	struct kc_gvr gvr;
	struct ll_err err;
	size_t i = 0;
	int rc = 0;

	for (; i < sizeof(kinds) / sizeof(kinds[0]) && rc == 0; i++)
		rc = disc_lookup_kind(d, LANDLORD_GROUP "/" LANDLORD_VERSION_V1A1, kinds[i], &gvr,
		                      &err);
	if (rc == -ENOENT)
		log_error("the landlord CRDs are not installed: kubectl apply -f deploy/crds/",
		          "{s:s,s:s}", "server", kc_server(c), "missing", kinds[i - 1]);
	else if (rc < 0)
		log_error("API discovery failed", "{s:s}", "error", err.msg);
	disc_free(d);
	return rc;
}

int new_client(const struct kcfg *kc, const struct config *cfg, const char *name,
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

/* The webhook role (src/webhook/serve.h) from the options; test lifetimes only with the hooks. */
static int webhook_start(const struct config *cfg, struct kc_client *client, struct cacheview *view,
                         struct wh_serve **out)
{
	const long ms = 1000;
	struct wh_serve_opts o = {.client = client,
	                          .view = view,
	                          .addr = cfg->webhook_addr,
	                          .port = cfg->webhook_port,
	                          .cert_file = cfg->tls_cert_file,
	                          .key_file = cfg->tls_key_file,
	                          .url = cfg->webhook_url,
	                          .service = cfg->webhook_service,
	                          .cert_ips = cfg->webhook_cert_ip,
	                          .ca_lifetime_s = cfg->test_ca_lifetime_ms / ms,
	                          .serving_lifetime_s = cfg->test_serving_lifetime_ms / ms,
	                          .publish_grace_s = cfg->test_publish_grace_ms / ms,
	                          .drain_s = cfg->test_drain_ms / ms,
	                          .period_ms = cfg->test_cert_period_ms};
	struct ll_err err = {{0}};
	int rc = wh_serve_start(&o, out, &err);

	if (rc < 0)
		log_error("the webhook did not start", "{s:s}", "error", err.msg);
	return rc;
}

static bool static_tls(const struct config *cfg)
{
	return cfg->tls_cert_file && cfg->tls_key_file;
}

/* The kubeconfig, the main client, and proof that the server takes its credentials. */
int connect_server(const struct config *cfg, struct kcfg *kc, struct kc_client **client)
{
	struct ll_err err;
	int rc = kcfg_load_default(cfg->kubeconfig, cfg->context, kc, &err);

	if (rc < 0) {
		log_error("cannot load the kubeconfig", "{s:s}", "error", err.msg);
		return rc;
	}
	rc = new_client(kc, cfg, "main", client);
	if (rc == 0)
		rc = check_server(*client);
	return rc;
}

/* The tenant rules' view over @m's informers; logs why not. */
static int view_new(struct mgr *m, bool compact, struct cacheview **out)
{
	struct ll_err err = {{0}};
	int rc = cacheview_new(
	        m, &(struct cacheview_opts){.self_user = LANDLORD_USERNAME, .compact = compact},
	        out, &err);

	if (rc < 0)
		log_error("the webhook's caches could not be set up", "{s:s}", "error", err.msg);
	return rc;
}

static int cmd_webhook(const struct config *cfg)
{
	struct cfg_follow *follow = NULL;
	struct wh_serve *wh = NULL;
	struct kc_client *client = NULL;
	struct cacheview *view = NULL;
	struct kcfg kc = {0};
	struct mgr *m = NULL;
	int rc = 0;

	if (!static_tls(cfg) || cfg->webhook_url)
		rc = connect_server(cfg, &kc, &client);
	/* No controllers: the manager runs the view's informers, serves probes, waits for a
	 * signal. Without a client (static files only) the tenant rules are not served. */
	m = mgr_new(&(struct mgr_opts){
	        .client = client, .probe_addr = cfg->probe_addr, .probe_port = cfg->probe_port});
	if (rc == 0 && client) {
		rc = view_new(m, true, &view);
		/* No controller keeps the LandlordConfig in force here: follow it. */
		follow = rc == 0 ? cfg_follow_new(m) : NULL;
	} else if (rc == 0) {
		log_warn("the tenant rules are not served: with --tls-cert-file and no "
		         "--webhook-url "
		         "this webhook does not connect to the API server (tests only)",
		         NULL);
	}
	if (rc == 0)
		rc = webhook_start(cfg, client, view, &wh);
	if (rc == 0)
		rc = mgr_run(m);
	if (rc == 0)
		wh_serve_graceful_stop(wh, cfg->shutdown_delay_ms);
	wh_serve_stop(wh); /* before the view and the manager it reads */
	cacheview_free(view);
	cfg_follow_free(follow);
	mgr_free(m);
	kc_client_free(client);
	kcfg_release(&kc);
	return rc < 0 ? 1 : 0;
}

static struct mgr *controllers_new(const struct config *cfg, struct kc_client *client,
                                   struct kc_client *lease_client, struct templates *tpl,
                                   struct hib *hib, struct ext *ext)
{
	struct controller_def supervisors = hib_controller_def(hib);
	struct controller_def extensions = ext_controller_def(ext);
	struct controller_def config = landlordconfig_controller_def();
	struct controller_def tenant = tenant_controller_def();
	struct controller_def plan = plan_controller_def();
	struct controller_def reservations = reservations_controller_def();
	struct controller_def ti = ti_controller_def(tpl);
	struct controller_def tgi = tgi_controller_def(tpl);
	struct mgr *m = mgr_new(&(struct mgr_opts){
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
	mgr_add_controller(m, &reservations);
	/*
	 * The release controller before the instances': controllers start in this order, and a
	 * release an instance wants is queued only when its wish changes (releases_want()), into
	 * a queue that must exist by then (a key queued before it does is dropped).
	 */
	if (cfg->helm_binary != NULL && *cfg->helm_binary != '\0') {
		struct controller_def helm = helm_controller_def(tpl);

		mgr_add_controller(m, &helm);
	}
	mgr_add_controller(m, &ti);
	mgr_add_controller(m, &tgi);
	mgr_add_controller(m, &supervisors);
	mgr_add_controller(m, &extensions);
	hib_add_test_hooks(hib, m);
	return m;
}

/* With --helm-binary, a Helm 4 binary that runs (templates/helm_binary.h); else Helm is off. */
static int check_helm(const struct config *cfg)
{
	char version[HELM_BINARY_VERSION_MAX];
	struct ll_err err = {{0}};
	int rc;

	if (cfg->helm_binary == NULL || *cfg->helm_binary == '\0')
		return 0;
	rc = helm_binary_check(cfg->helm_binary, HELM_BINARY_CHECK_TIMEOUT_MS, version, &err);
	if (rc < 0)
		log_error("landlord cannot use its Helm binary", "{s:s}", "error", err.msg);
	else
		log_info("helm binary", "{s:s,s:s}", "path", cfg->helm_binary, "version", version);
	return rc;
}

/* With --helm-binary, the release controller's runner (templates.h). */
static int enable_helm(const struct config *cfg, const struct kcfg *kc, struct templates *tpl)
{
	struct ll_err err = {{0}};
	char path[PATH_MAX];
	int rc;

	if (cfg->helm_binary == NULL || *cfg->helm_binary == '\0')
		return 0;
	if (realpath(cfg->helm_binary, path) == NULL)
		snprintf(path, sizeof(path), "%s", cfg->helm_binary);
	rc = templates_enable_helm(tpl, path, kc,
	                           &(struct helm_opts){.concurrency = (int)cfg->helm_concurrency,
	                                               .timeout_ms = cfg->helm_timeout_ms,
	                                               .repair_every_ms = cfg->helm_repair_ms},
	                           &err);
	if (rc < 0)
		log_error("landlord cannot run helm", "{s:s}", "error", err.msg);
	return rc;
}

/*
 * The controllers, and with @with_webhook the webhook, which every replica serves whether or
 * not it leads: it starts before the manager runs and stops after it, on a client of its own.
 */
static int cmd_controllers(const struct config *cfg, bool with_webhook)
{
	struct kc_client *client = NULL, *lease_client = NULL, *wh_client = NULL, *px_client = NULL;
	struct proxy_role *proxy = NULL;
	struct kcfg px_kc = {0};
	struct cacheview *view = NULL;
	struct templates *tpl = NULL;
	struct wh_serve *wh = NULL;
	struct hib *hib = NULL;
	struct ext *ext = NULL;
	struct kcfg kc = {0};
	struct mgr *m = NULL;
	int rc = check_helm(cfg);

	if (rc == 0)
		rc = connect_server(cfg, &kc, &client);
	if (rc == 0 && cfg->leader_elect)
		rc = new_client(&kc, cfg, "lease", &lease_client);
	if (rc == 0 && with_webhook)
		rc = new_client(&kc, cfg, "webhook", &wh_client);
	if (rc == 0 && with_webhook && cfg->proxy_kubeconfig)
		rc = proxy_client_new(cfg, &px_kc, &px_client);
	if (rc == 0)
		rc = check_crds(client);
	if (rc < 0)
		goto out;
	tpl = templates_new(client);
	rc = enable_helm(cfg, &kc, tpl);
	if (rc < 0)
		goto out;
	hib = hib_new(NULL);
	ext = ext_new();
	m = controllers_new(cfg, client, lease_client, tpl, hib, ext);
	if (with_webhook)
		rc = view_new(m, false, &view);
	if (rc == 0 && with_webhook)
		rc = webhook_start(cfg, wh_client, view, &wh);
	if (rc == 0 && px_client)
		rc = proxy_role_start(cfg, px_client, m, &proxy);
	if (rc == 0)
		rc = mgr_run(m);
	if (rc == 0)
		wh_serve_graceful_stop(wh, cfg->shutdown_delay_ms);
out:
	proxy_role_stop(proxy); /* before the manager whose informers it reads */
	wh_serve_stop(wh);      /* before the view and the manager it reads */
	cacheview_free(view);
	mgr_free(m);
	hib_free(hib);
	ext_free(ext);
	templates_free(tpl);
	kc_client_free(px_client);
	kcfg_release(&px_kc);
	kc_client_free(wh_client);
	kc_client_free(lease_client);
	kc_client_free(client);
	kcfg_release(&kc);
	return rc < 0 ? 1 : 0;
}

/* Test-only options need --enable-test-hooks. */
static bool test_options_allowed(const struct config *cfg)
{
	bool any = cfg->crash_after_writes > 0 || cfg->test_ca_lifetime_ms > 0 ||
	           cfg->test_serving_lifetime_ms > 0 || cfg->test_publish_grace_ms > 0 ||
	           cfg->test_drain_ms > 0 || cfg->test_cert_period_ms > 0;

	if (any && !cfg->test_hooks)
		fprintf(stderr, "landlord: --test-crash-after-writes and --test-webhook-* need "
		                "--enable-test-hooks\n");
	return !any || cfg->test_hooks;
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
	    strcmp(cmd, "webhook") != 0 && strcmp(cmd, "proxy") != 0 &&
	    strcmp(cmd, "kubeconfig") != 0) {
		fprintf(stderr, "landlord: unknown command \"%s\"\n\n", cmd);
		options_usage(stderr);
		return 2;
	}
	rc = options_parse(argc, argv, &cfg);
	if (rc)
		return rc;
	log_set_verbosity((int)cfg.verbosity);
	if (!test_options_allowed(&cfg))
		return 2;
	kc_test_crash_after_writes(cfg.crash_after_writes);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (strcmp(cmd, "kubeconfig") == 0) { /* a one-shot command: no signals, no banner */
		rc = cmd_kubeconfig(&cfg);
		curl_global_cleanup();
		return rc;
	}
	mgr_block_signals();
	log_info("landlord starting", "{s:s,s:s,s:b}", "command", cmd, "version", LANDLORD_VERSION,
	         "leader_elect", cfg.leader_elect);
	if (strcmp(cmd, "webhook") == 0)
		rc = cmd_webhook(&cfg);
	else if (strcmp(cmd, "proxy") == 0)
		rc = cmd_proxy(&cfg);
	else
		rc = cmd_controllers(&cfg, strcmp(cmd, "run") == 0);
	curl_global_cleanup();
	return rc;
}
