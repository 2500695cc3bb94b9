/* options.c - every landlord option, once (see options.h). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/api.h"
#include "base/err.h"
#include "options.h"

#define AT(field) offsetof(struct config, field)
/* One row per option: name, environment variable, value name, default, help, field. */
#define STRING(n, e, a, d, h, f)                                                          \
	{                                                                                 \
		.name = n, .env = e, .type = FLAG_STRING, .arg = a, .dflt = d, .help = h, \
		.offset = AT(f)                                                           \
	}
#define BOOL(n, e, d, h, f)                                                                  \
	{                                                                                    \
		.name = n, .env = e, .type = FLAG_BOOL, .arg = "BOOL", .dflt = d, .help = h, \
		.offset = AT(f)                                                              \
	}
#define SWITCH(n, e, h, f)                                                           \
	{                                                                            \
		.name = n, .env = e, .type = FLAG_SWITCH, .help = h, .offset = AT(f) \
	}
#define INT(n, e, d, h, f, lo, hi)                                                       \
	{                                                                                \
		.name = n, .env = e, .type = FLAG_INT, .arg = "N", .dflt = d, .help = h, \
		.offset = AT(f), .min = lo, .max = hi                                    \
	}
#define DURATION(n, e, d, h, f)                                                               \
	{                                                                                     \
		.name = n, .env = e, .type = FLAG_DURATION, .arg = "D", .dflt = d, .help = h, \
		.offset = AT(f)                                                               \
	}
#define HOSTPORT(n, e, d, h, host, port)                                                   \
	{                                                                                  \
		.name = n, .env = e, .type = FLAG_HOSTPORT, .arg = "HOST:PORT", .dflt = d, \
		.help = h, .offset = AT(host), .offset2 = AT(port)                         \
	}

/* Every option, once: adding one is a row here (and using its value). */
static const struct flag OPTIONS[] = {
        STRING("kubeconfig", NULL, "PATH", NULL,
               "the API server and credentials [KUBECONFIG] (in-cluster, then ~/.kube/config)",
               kubeconfig),
        STRING("context", "LANDLORD_CONTEXT", "NAME", NULL, "kubeconfig context", context),
        HOSTPORT("probe-addr", "LANDLORD_PROBE_ADDR", "127.0.0.1:8081",
                 "/healthz /readyz /metrics; port 0 picks one", probe_addr, probe_port),
        BOOL("leader-elect", "LANDLORD_LEADER_ELECT", "true",
             "run controllers only while holding the Lease", leader_elect),
        STRING("leader-election-namespace", "LANDLORD_LEADER_ELECTION_NAMESPACE", "NS",
               LANDLORD_SYSTEM_NAMESPACE, "where the Lease is", lease_ns),
        DURATION("lease-duration", "LANDLORD_LEASE_DURATION", "15s", "a number with ms, s, m or h",
                 lease_duration_ms),
        DURATION("renew-deadline", "LANDLORD_RENEW_DEADLINE", "10s", NULL, renew_deadline_ms),
        DURATION("retry-period", "LANDLORD_RETRY_PERIOD", "2s", NULL, retry_period_ms),
        INT("kube-api-qps", "LANDLORD_KUBE_API_QPS", "500", "client rate limit", qps, 1, 100000),
        INT("kube-api-burst", "LANDLORD_KUBE_API_BURST", "1000", NULL, burst, 1, 100000),
        BOOL("kube-api-http2", "LANDLORD_KUBE_API_HTTP2", "false",
             "multiplex requests and watches over one HTTP/2 connection; off because libcurl "
             "7.88 can stall it",
             http2),
        STRING("helm-binary", "LANDLORD_HELM_BINARY", "PATH", NULL,
               "a Helm 4 binary for the charts of Templates (run, controller), checked at start: "
               "landlord refuses to start when it cannot run it or it is another major version; "
               "unset or empty: Helm support off (docs/helm.md)",
               helm_binary),
        INT("helm-concurrency", "LANDLORD_HELM_CONCURRENCY", "4",
            "helm processes at most at once (installs, upgrades, pulls)", helm_concurrency, 1, 256),
        DURATION("helm-timeout", "LANDLORD_HELM_TIMEOUT", "5m",
                 "each helm process is killed after it; helm's own --timeout is 30s shorter",
                 helm_timeout_ms),
        DURATION("helm-repair-interval", "LANDLORD_HELM_REPAIR_INTERVAL", "30s",
                 "a release whose objects drifted is repaired (a forced upgrade) at most this "
                 "often",
                 helm_repair_ms),
        HOSTPORT("webhook-addr", "LANDLORD_WEBHOOK_ADDR", "127.0.0.1:9443",
                 "admission webhook, HTTPS", webhook_addr, webhook_port),
        STRING("webhook-url", "LANDLORD_WEBHOOK_URL", "URL", NULL,
               "https://HOST:PORT where the API server reaches this landlord from outside a "
               "cluster: landlord registers its webhook configurations there and removes them on "
               "exit (port 0: the one --webhook-addr bound); unset: registers nothing",
               webhook_url),
        STRING("webhook-service", "LANDLORD_WEBHOOK_SERVICE", "NAME", "landlord",
               "the Service in front of the webhook: its DNS names go into the certificate",
               webhook_service),
        STRING("webhook-cert-ip", "LANDLORD_WEBHOOK_CERT_IP", "IP,...", NULL,
               "more IP addresses for the webhook's certificate", webhook_cert_ip),
        HOSTPORT("proxy-addr", "LANDLORD_PROXY_ADDR", "127.0.0.1:8444",
                 "tenant API proxy, HTTPS (proxy, run)", proxy_addr, proxy_port),
        STRING("proxy-kubeconfig", "LANDLORD_PROXY_KUBECONFIG", "PATH", NULL,
               "the tenant proxy's own identity, which may impersonate tenant members "
               "(landlord's must not): `landlord run` serves the proxy only with it; "
               "`landlord proxy` uses it instead of --kubeconfig",
               proxy_kubeconfig),
        STRING("proxy-url", "LANDLORD_PROXY_URL", "URL", "https://127.0.0.1:8444",
               "the proxy's address as tenant users reach it: kubeconfigs point there", proxy_url),
        STRING("proxy-service", "LANDLORD_PROXY_SERVICE", "NAME", "landlord-proxy",
               "the Service in front of the proxy: its DNS names go into the certificate",
               proxy_service),
        STRING("proxy-cert-ip", "LANDLORD_PROXY_CERT_IP", "IP,...", NULL,
               "more IP addresses for the proxy's certificate", proxy_cert_ip),
        DURATION("stream-idle-timeout", "LANDLORD_STREAM_IDLE_TIMEOUT", "4h",
                 "a proxied stream (watch, logs -f, exec) with no bytes for this long ends",
                 stream_idle_timeout_ms),
        STRING("tenant", NULL, "NAME", NULL, "kubeconfig: the tenant", kc_tenant),
        STRING("user", NULL, "NAME", NULL, "kubeconfig: the user (the certificate's CN)", kc_user),
        {.name = "group",
         .type = FLAG_LIST,
         .arg = "NAME",
         .help = "kubeconfig: a group of the user (repeat for several)",
         .offset = AT(kc_groups),
         .offset2 = AT(kc_n_groups)},
        DURATION("ttl", NULL, "24h", "kubeconfig: the certificate's lifetime (at most 30 days)",
                 kc_ttl_ms),
        STRING("tls-cert-file", "LANDLORD_TLS_CERT_FILE", "PATH", NULL,
               "serve this certificate chain instead of landlord's own (with --tls-key-file)",
               tls_cert_file),
        STRING("tls-key-file", "LANDLORD_TLS_KEY_FILE", "PATH", NULL, "its key", tls_key_file),
        DURATION("shutdown-delay", "LANDLORD_SHUTDOWN_DELAY", "5s",
                 "on SIGTERM the webhook reports not ready and keeps serving this long (for the "
                 "Service to drop it), then answers what is in flight and exits; skipped with "
                 "--webhook-url; a second signal cuts it short",
                 shutdown_delay_ms),
        INT("v", "LANDLORD_V", "0", "log verbosity; 4 adds debug", verbosity, 0, 10),
        SWITCH("enable-test-hooks", "LANDLORD_ENABLE_TEST_HOOKS",
               "/debug/ fault hooks on the probe port, for tests", test_hooks),
        INT("test-crash-after-writes", "LANDLORD_TEST_CRASH_AFTER_WRITES", "0",
            "exit abruptly right after the Nth successful API write (needs "
            "--enable-test-hooks; 0: never)",
            crash_after_writes, 0, 1000000000),
        DURATION("test-webhook-ca-lifetime", "LANDLORD_TEST_WEBHOOK_CA_LIFETIME", "0s",
                 "the webhook CA's lifetime (needs --enable-test-hooks; 0: a year)",
                 test_ca_lifetime_ms),
        DURATION("test-webhook-serving-lifetime", "LANDLORD_TEST_WEBHOOK_SERVING_LIFETIME", "0s",
                 "the serving certificate's (needs --enable-test-hooks; 0: 90 days)",
                 test_serving_lifetime_ms),
        DURATION("test-webhook-publish-grace", "LANDLORD_TEST_WEBHOOK_PUBLISH_GRACE", "0s",
                 "wait between a published bundle and serving from its new CA (needs "
                 "--enable-test-hooks; 0: 60s)",
                 test_publish_grace_ms),
        DURATION("test-webhook-drain", "LANDLORD_TEST_WEBHOOK_DRAIN", "0s",
                 "how long an old CA stays in the bundle (needs --enable-test-hooks; 0: 10m)",
                 test_drain_ms),
        DURATION("test-webhook-cert-period", "LANDLORD_TEST_WEBHOOK_CERT_PERIOD", "0s",
                 "between certificate passes (needs --enable-test-hooks; 0: 30s)",
                 test_cert_period_ms),
};

#define N_OPTIONS (sizeof(OPTIONS) / sizeof(OPTIONS[0]))

void options_usage(FILE *out)
{
	fputs("usage: landlord COMMAND [flags]\n"
	      "\n"
	      "commands:\n"
	      "  run          every role in one process: the controllers, the webhook and the\n"
	      "               proxy (the default deployment)\n"
	      "  controller   controllers only, behind leader election (run 2+ for HA)\n"
	      "  webhook      the admission webhook server (stateless; run 2+ for HA)\n"
	      "  proxy        the tenant API proxy (stateless; run 2+ for HA)\n"
	      "  kubeconfig   print a kubeconfig for a tenant user through the proxy:\n"
	      "               --tenant T --user U [--group G]... [--ttl D]\n"
	      "  version      print version and build information\n"
	      "\n"
	      "flags [environment variable] (default):\n",
	      out);
	flags_usage(OPTIONS, N_OPTIONS, out);
}

int options_parse(int argc, char **argv, struct config *cfg)
{
	struct ll_err err;
	int rc = flags_parse(OPTIONS, N_OPTIONS, argc, argv, 2, cfg, &err);

	if (rc == 1) {
		options_usage(stdout);
		exit(0);
	}
	if (rc < 0) {
		fprintf(stderr, "landlord: %s\nrun 'landlord --help' for usage\n", err.msg);
		return 2;
	}
	return 0;
}
