/*
 * landlord - multi-tenancy control plane for Kubernetes.
 *
 * Subcommand dispatch and wiring only: every role is built from the library (include/) and the
 * controllers (src/). Flags have environment-variable equivalents (LANDLORD_<FLAG>, upper case,
 * dashes as underscores); a flag given on the command line wins.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
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
#include "http/probe.h"
#include "kube/discovery.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/manager.h"
#include "webhook/admission.h"

struct config {
	const char *kubeconfig;
	const char *context;
	const char *probe_addr;
	int probe_port;
	const char *webhook_addr;
	int webhook_port;
	const char *tls_cert_file;
	const char *tls_key_file;
	bool leader_elect;
	const char *lease_ns;
	long lease_duration_ms;
	long renew_deadline_ms;
	long retry_period_ms;
	double qps;
	int burst;
	int verbosity;
	bool test_hooks;
	bool http2;
	long crash_after_writes;
};

enum opt_id {
	OPT_KUBECONFIG = 1000,
	OPT_CONTEXT,
	OPT_PROBE_ADDR,
	OPT_LEADER_ELECT,
	OPT_LEASE_NS,
	OPT_LEASE_DURATION,
	OPT_RENEW_DEADLINE,
	OPT_RETRY_PERIOD,
	OPT_QPS,
	OPT_BURST,
	OPT_V,
	OPT_TEST_HOOKS,
	OPT_HTTP2,
	OPT_CRASH_AFTER_WRITES,
	OPT_WEBHOOK_ADDR,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_HELP,
};

static const struct option long_opts[] = {
        {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
        {"context", required_argument, NULL, OPT_CONTEXT},
        {"probe-addr", required_argument, NULL, OPT_PROBE_ADDR},
        {"leader-elect", required_argument, NULL, OPT_LEADER_ELECT},
        {"leader-election-namespace", required_argument, NULL, OPT_LEASE_NS},
        {"lease-duration", required_argument, NULL, OPT_LEASE_DURATION},
        {"renew-deadline", required_argument, NULL, OPT_RENEW_DEADLINE},
        {"retry-period", required_argument, NULL, OPT_RETRY_PERIOD},
        {"kube-api-qps", required_argument, NULL, OPT_QPS},
        {"kube-api-burst", required_argument, NULL, OPT_BURST},
        {"kube-api-http2", required_argument, NULL, OPT_HTTP2},
        {"v", required_argument, NULL, OPT_V},
        {"enable-test-hooks", no_argument, NULL, OPT_TEST_HOOKS},
        {"test-crash-after-writes", required_argument, NULL, OPT_CRASH_AFTER_WRITES},
        {"webhook-addr", required_argument, NULL, OPT_WEBHOOK_ADDR},
        {"tls-cert-file", required_argument, NULL, OPT_TLS_CERT},
        {"tls-key-file", required_argument, NULL, OPT_TLS_KEY},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	fputs("usage: landlord COMMAND [flags]\n"
	      "\n"
	      "commands:\n"
	      "  run          every role in one process: controllers, and the webhook when TLS\n"
	      "               files are given (the default deployment)\n"
	      "  controller   controllers only, behind leader election (run 2+ for HA)\n"
	      "  webhook      the admission webhook server (stateless; run 2+ for HA)\n"
	      "  version      print version and build information\n"
	      "\n"
	      "flags [environment variable] (default):\n"
	      "  --kubeconfig PATH           [KUBECONFIG] (in-cluster, then ~/.kube/config)\n"
	      "  --context NAME              kubeconfig context [LANDLORD_CONTEXT]\n"
	      "  --probe-addr HOST:PORT      /healthz /readyz /metrics; port 0 picks one\n"
	      "                              [LANDLORD_PROBE_ADDR] (127.0.0.1:8081)\n"
	      "  --leader-elect BOOL         [LANDLORD_LEADER_ELECT] (true)\n"
	      "  --leader-election-namespace NS\n"
	      "                              [LANDLORD_LEADER_ELECTION_NAMESPACE] "
	      "(landlord-system)\n"
	      "  --lease-duration D          e.g. 15s [LANDLORD_LEASE_DURATION] (15s)\n"
	      "  --renew-deadline D          [LANDLORD_RENEW_DEADLINE] (10s)\n"
	      "  --retry-period D            [LANDLORD_RETRY_PERIOD] (2s)\n"
	      "  --kube-api-qps N            client rate limit [LANDLORD_KUBE_API_QPS] (500)\n"
	      "  --kube-api-burst N          [LANDLORD_KUBE_API_BURST] (1000)\n"
	      "  --kube-api-http2 BOOL       multiplex requests and watches over one HTTP/2\n"
	      "                              connection; off because libcurl 7.88 can stall\n"
	      "                              it [LANDLORD_KUBE_API_HTTP2] (false)\n"
	      "  --webhook-addr HOST:PORT    admission webhook, HTTPS [LANDLORD_WEBHOOK_ADDR]\n"
	      "                              (127.0.0.1:9443)\n"
	      "  --tls-cert-file PATH        webhook certificate chain [LANDLORD_TLS_CERT_FILE]\n"
	      "  --tls-key-file PATH         webhook key [LANDLORD_TLS_KEY_FILE]\n"
	      "  --v N                       log verbosity; 4 adds debug [LANDLORD_V] (0)\n"
	      "  --enable-test-hooks         /debug/ fault hooks on the probe port, for tests\n"
	      "                              [LANDLORD_ENABLE_TEST_HOOKS]\n"
	      "  --test-crash-after-writes N exit abruptly right after the Nth successful API\n"
	      "                              write (needs --enable-test-hooks)\n"
	      "                              [LANDLORD_TEST_CRASH_AFTER_WRITES] (0: never)\n",
	      out);
}

/* "15s", "500ms", "2m" or a bare number of seconds. Returns milliseconds, or -1. */
static long parse_duration_ms(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	if (strcmp(end, "ms") == 0)
		return (long)v;
	if (*end == '\0' || strcmp(end, "s") == 0)
		return (long)(v * 1000);
	if (strcmp(end, "m") == 0)
		return (long)(v * 60000);
	return -1;
}

static int parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0) {
		*out = true;
		return 0;
	}
	if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "HOST:PORT" into @host (static storage per call site) and @port. */
static int parse_host_port(const char *s, char host[64], const char **host_out, int *port_out)
{
	const char *colon = strrchr(s, ':');
	long port;

	if (colon == NULL || (size_t)(colon - s) >= 64 || parse_long(colon + 1, 0, 65535, &port))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	*host_out = host[0] ? host : "127.0.0.1";
	*port_out = (int)port;
	return 0;
}

/* Apply one option value; shared by flags and their environment variables. */
static int apply_option(struct config *cfg, int id, const char *v)
{
	long n = 0;
	int rc = 0;

	switch (id) {
	case OPT_KUBECONFIG:
		cfg->kubeconfig = v;
		break;
	case OPT_CONTEXT:
		cfg->context = v;
		break;
	case OPT_PROBE_ADDR: {
		static char host[64];

		rc = parse_host_port(v, host, &cfg->probe_addr, &cfg->probe_port);
		break;
	}
	case OPT_WEBHOOK_ADDR: {
		static char host[64];

		rc = parse_host_port(v, host, &cfg->webhook_addr, &cfg->webhook_port);
		break;
	}
	case OPT_TLS_CERT:
		cfg->tls_cert_file = v;
		break;
	case OPT_TLS_KEY:
		cfg->tls_key_file = v;
		break;
	case OPT_LEADER_ELECT:
		rc = parse_bool(v, &cfg->leader_elect);
		break;
	case OPT_LEASE_NS:
		cfg->lease_ns = v;
		break;
	case OPT_LEASE_DURATION:
		rc = (cfg->lease_duration_ms = parse_duration_ms(v)) < 0 ? -EINVAL : 0;
		break;
	case OPT_RENEW_DEADLINE:
		rc = (cfg->renew_deadline_ms = parse_duration_ms(v)) < 0 ? -EINVAL : 0;
		break;
	case OPT_RETRY_PERIOD:
		rc = (cfg->retry_period_ms = parse_duration_ms(v)) < 0 ? -EINVAL : 0;
		break;
	case OPT_QPS:
		rc = parse_long(v, 1, 100000, &n);
		cfg->qps = (double)n;
		break;
	case OPT_BURST:
		rc = parse_long(v, 1, 100000, &n);
		cfg->burst = (int)n;
		break;
	case OPT_V:
		rc = parse_long(v, 0, 10, &n);
		cfg->verbosity = (int)n;
		break;
	case OPT_TEST_HOOKS:
		rc = parse_bool(v, &cfg->test_hooks);
		break;
	case OPT_HTTP2:
		rc = parse_bool(v, &cfg->http2);
		break;
	case OPT_CRASH_AFTER_WRITES:
		rc = parse_long(v, 0, 1000000000, &cfg->crash_after_writes);
		break;
	default:
		rc = -EINVAL;
	}
	return rc;
}

static int apply_environment(struct config *cfg)
{
	const struct option *o;
	char env[96];
	size_t i;

	for (o = long_opts; o->name; o++) {
		const char *v;

		if (o->val == OPT_KUBECONFIG || o->val == OPT_HELP)
			continue; /* $KUBECONFIG is read by the kubeconfig loader itself */
		snprintf(env, sizeof(env), "LANDLORD_%s", o->name);
		for (i = 0; env[i]; i++)
			env[i] = env[i] == '-' ? '_'
			                       : (char)(env[i] >= 'a' && env[i] <= 'z'
			                                        ? env[i] - 'a' + 'A'
			                                        : env[i]);
		v = getenv(env);
		if (v && *v && apply_option(cfg, o->val, v)) {
			fprintf(stderr, "landlord: invalid value %s=\"%s\"\n", env, v);
			return -EINVAL;
		}
	}
	return 0;
}

static const char *flag_name(int id)
{
	const struct option *o;

	for (o = long_opts; o->name; o++)
		if (o->val == id)
			return o->name;
	return "?";
}

static int parse_flags(int argc, char **argv, struct config *cfg)
{
	int c;

	if (apply_environment(cfg))
		return -EINVAL;
	optind = 2; /* argv[1] is the command */
	while ((c = getopt_long_only(argc, argv, "", long_opts, NULL)) != -1) {
		if (c == OPT_HELP) {
			usage(stdout);
			exit(0);
		}
		if (c == '?' || apply_option(cfg, c, c == OPT_TEST_HOOKS ? "true" : optarg)) {
			if (c != '?')
				fprintf(stderr, "landlord: invalid value for --%s: \"%s\"\n",
				        flag_name(c), optarg);
			fprintf(stderr, "run 'landlord --help' for usage\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "landlord: unexpected argument \"%s\"\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

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
	struct kc_opts o = {
	        .qps = cfg->qps, .burst = cfg->burst, .client_name = name, .http2 = cfg->http2};
	struct ll_err err;
	int rc = kc_client_new(kc, &o, out, &err);

	if (rc < 0)
		log_error("invalid API server configuration", "{s:s,s:s}", "source", kc->source,
		          "error", err.msg);
	return rc;
}

/* The admission webhook: a TLS server with the webhook routes and its own probe endpoints. */
struct webhook {
	struct probe *server;
	struct admission_route *route;
};

static int webhook_start(const struct config *cfg, struct webhook *wh)
{
	struct buf cert = BUF_INIT(1u << 20), key = BUF_INIT(1u << 20);
	int rc = buf_read_file(&cert, cfg->tls_cert_file, true);

	if (rc == 0)
		rc = buf_read_file(&key, cfg->tls_key_file, true);
	if (rc < 0) {
		log_error("cannot read the webhook's TLS files", "{s:s,s:s,s:s}", "cert",
		          cfg->tls_cert_file, "key", cfg->tls_key_file, "error", strerror(-rc));
		goto out;
	}
	wh->server = probe_new(cfg->webhook_addr, cfg->webhook_port);
	probe_set_tls(wh->server, buf_cstr(&cert), buf_cstr(&key));
	probe_set_body_max(wh->server, ADMISSION_BODY_MAX);
	wh->route = admission_route_new(wh->server, "/validate", "landlord");
	rc = probe_start(wh->server);
	if (rc < 0)
		log_error("webhook server failed to start (bad certificate or key, or address in "
		          "use)",
		          "{s:s,s:i,s:i}", "addr", cfg->webhook_addr, "port", cfg->webhook_port,
		          "errno", -rc);
	else
		log_info("webhook listening", "{s:s,s:i,s:s}", "addr", cfg->webhook_addr, "port",
		         probe_port(wh->server), "path", "/validate");
out:
	buf_release(&cert);
	buf_release(&key);
	return rc;
}

static void webhook_stop(struct webhook *wh)
{
	probe_free(wh->server);
	admission_route_free(wh->route);
	wh->server = NULL;
	wh->route = NULL;
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
	struct config cfg = {
	        .probe_addr = "127.0.0.1",
	        .probe_port = 8081,
	        .webhook_addr = "127.0.0.1",
	        .webhook_port = 9443,
	        .leader_elect = true,
	        .lease_ns = LANDLORD_SYSTEM_NAMESPACE,
	        .qps = 500,
	        .burst = 1000,
	};
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
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "run") != 0 && strcmp(cmd, "controller") != 0 &&
	    strcmp(cmd, "webhook") != 0) {
		fprintf(stderr, "landlord: unknown command \"%s\"\n\n", cmd);
		usage(stderr);
		return 2;
	}
	if (parse_flags(argc, argv, &cfg))
		return 2;
	log_set_verbosity(cfg.verbosity);
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
