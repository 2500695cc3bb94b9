/*
 * serve.c - the webhook role's start and stop (see serve.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "http/probes.h"
#include "http/server.h"
#include "kube/kube.h"
#include "pki/certs.h"
#include "pki/pki.h"
#include "webhook/admission.h"
#include "webhook/audit_events.h"
#include "webhook/cacheview.h"
#include "webhook/register.h"
#include "webhook/rules.h"
#include "webhook/serve.h"

#define NAMES_MAX    24  /* DNS names and IPs in the serving certificate, each */
#define HOST_MAX     256 /* a URL's host */
#define FIRST_PASSES 5   /* first certificate passes tried at start, one a second */
#define PEM_FILE_MAX (1u << 20)

struct wh_serve {
	struct kc_client *client;
	struct certs *certs;
	struct http_server *server;
	struct probes *probes;
	struct admission_route *validate, *mutate, *sleep;
	struct admission_rule sleep_rules[2]; /* the /sleep route's: enforced sleep */
	struct admission_rule *rules;         /* webhook_rules, then the tenant rules on the view */
	struct admission_rule *mutations;     /* webhook_mutations, then the tenant mutations */
	struct wh_tenancy tenancy;            /* the tenant rules' view and client */
	struct audit_events *events; /* Events for audited findings (with a client and a view) */
	char *registered;            /* the base URL registered, or NULL */
	atomic_bool draining;        /* wh_serve_drain() was called: /readyz says 503 */
	char *dns[NAMES_MAX + 1], *ips[NAMES_MAX + 1];
	size_t n_dns, n_ips;
};

/* ---- names ---- */

struct url {
	char host[HOST_MAX]; /* without brackets */
	int port;            /* -1: none given (443) */
	bool ip;
};

static int bad_url(const char *s, const char *why, struct ll_err *err)
{
	return ll_err_set(err, -EINVAL, "--webhook-url %s: %s (https://HOST:PORT)", s, why);
}

/* "https://HOST[:PORT][/]", HOST a name, an IPv4 literal or a bracketed IPv6 one. */
static int parse_url(const char *s, struct url *u, struct ll_err *err)
{
	const char *h = s + 8, *end, *host_end, *port = NULL;
	unsigned char any[16];

	if (strncmp(s, "https://", 8) != 0)
		return bad_url(s, "not https://", err);
	end = h + strcspn(h, "/");
	if (*end && strcmp(end, "/") != 0)
		return bad_url(s, "give the base only: landlord adds /validate and /mutate", err);
	if (*h == '[') {
		host_end = memchr(h, ']', (size_t)(end - h));
		if (host_end == NULL || (host_end + 1 != end && host_end[1] != ':'))
			return bad_url(s, "bad IPv6 literal", err);
		port = host_end + 1 != end ? host_end + 2 : NULL;
		h++;
	} else {
		host_end = memchr(h, ':', (size_t)(end - h));
		port = host_end ? host_end + 1 : NULL;
		host_end = host_end ? host_end : end;
	}
	if (host_end == h || (size_t)(host_end - h) >= sizeof(u->host))
		return bad_url(s, "no host", err);
	snprintf(u->host, sizeof(u->host), "%.*s", (int)(host_end - h), h);
	u->port = -1;
	if (port) {
		char *stop;
		long p = strtol(port, &stop, 10);

		if (stop == port || stop != end || p < 0 || p > 65535)
			return bad_url(s, "bad port", err);
		u->port = (int)p;
	}
	u->ip = inet_pton(AF_INET, u->host, any) == 1 || inet_pton(AF_INET6, u->host, any) == 1;
	return 0;
}

/* The base URL registered: port 0 is the bound one, none is 443. Owned. */
static char *base_url(const struct url *u, int bound_port)
{
	const char *l = strchr(u->host, ':') ? "[" : "", *r = *l ? "]" : "";
	int port = u->port == 0 ? bound_port : u->port;

	if (port < 0)
		return xasprintf("https://%s%s%s", l, u->host, r);
	return xasprintf("https://%s%s%s:%d", l, u->host, r, port);
}

static void add_name(char **list, size_t *n, char *take_name)
{
	for (size_t i = 0; i < *n; i++) {
		if (strcmp(list[i], take_name) == 0) {
			free(take_name);
			return;
		}
	}
	if (*n < NAMES_MAX)
		list[(*n)++] = take_name;
	else
		free(take_name);
}

static int add_ips(struct wh_serve *w, const char *csv, struct ll_err *err)
{
	unsigned char any[16];

	while (csv && *csv) {
		size_t n = strcspn(csv, ",");
		char *ip = xasprintf("%.*s", (int)n, csv);

		if (inet_pton(AF_INET, ip, any) != 1 && inet_pton(AF_INET6, ip, any) != 1) {
			ll_err_set(err, -EINVAL, "--webhook-cert-ip: %s is not an IP address", ip);
			free(ip);
			return -EINVAL;
		}
		add_name(w->ips, &w->n_ips, ip);
		csv += n + (csv[n] == ',');
	}
	return 0;
}

static int names(struct wh_serve *w, const struct wh_serve_opts *o, const struct url *u,
                 struct ll_err *err)
{
	const char *svc = o->service && *o->service ? o->service : "landlord";
	const char *ns = LANDLORD_SYSTEM_NAMESPACE;

	add_name(w->dns, &w->n_dns, xasprintf("%s.%s.svc", svc, ns));
	add_name(w->dns, &w->n_dns, xasprintf("%s.%s.svc.cluster.local", svc, ns));
	add_name(w->dns, &w->n_dns, xasprintf("%s.%s", svc, ns));
	add_name(w->dns, &w->n_dns, xasprintf("%s", svc));
	if (u && u->ip)
		add_name(w->ips, &w->n_ips, xstrdup(u->host));
	else if (u)
		add_name(w->dns, &w->n_dns, xstrdup(u->host));
	return add_ips(w, o->cert_ips, err);
}

/* ---- the certificate ---- */

static void on_pair(void *ud, const char *cert_pem, const char *key_pem)
{
	struct wh_serve *w = ud;
	struct ll_err err = {{0}};

	if (w->server == NULL) /* the first pass, before the server exists */
		return;
	if (http_server_set_cert(w->server, cert_pem, key_pem, &err) < 0)
		log_error("the webhook's new certificate was refused; the old one is served",
		          "{s:s}", "error", err.msg);
	else
		log_info("webhook serving a new certificate", NULL);
}

static int start_certs(struct wh_serve *w, const struct wh_serve_opts *o, struct ll_err *err)
{
	struct certs_opts co = {.client = o->client,
	                        .ns = LANDLORD_SYSTEM_NAMESPACE,
	                        .secret_name = WEBHOOK_TLS_SECRET,
	                        .dns_names = (const char *const *)w->dns,
	                        .ips = (const char *const *)w->ips,
	                        .validating = wh_validating_names,
	                        .mutating = wh_mutating_names,
	                        .ca_lifetime_s = o->ca_lifetime_s,
	                        .serving_lifetime_s = o->serving_lifetime_s,
	                        .publish_grace_s = o->publish_grace_s,
	                        .drain_s = o->drain_s,
	                        .on_pair = on_pair,
	                        .ud = w};
	int rc = -EIO;

	w->certs = certs_new(&co);
	for (int i = 0; i < FIRST_PASSES && rc < 0; i++) {
		if (i > 0)
			nanosleep(&(struct timespec){.tv_sec = 1}, NULL);
		rc = certs_sync(w->certs, err);
		if (rc == -EINVAL)
			break;
	}
	if (rc < 0)
		ll_err_set(
		        err, rc,
		        "the webhook's certificate (Secret %s/%s): %s; landlord needs its "
		        "namespace (kubectl apply -f deploy/namespace.yaml) and deploy/rbac.yaml",
		        LANDLORD_SYSTEM_NAMESPACE, WEBHOOK_TLS_SECRET, err ? err->msg : "");
	return rc;
}

/*
 * The Secret's certificate was made by the first landlord to start, for its names: say so when
 * it lacks one of this process's (the API server would refuse the handshake for that name).
 */
static void check_names(const struct wh_serve *w, const char *cert_pem)
{
	char *const *lists[2] = {w->dns, w->ips};
	size_t counts[2] = {w->n_dns, w->n_ips};

	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < counts[k]; i++) {
			if (pki_cert_names(cert_pem, lists[k][i]) == 0)
				continue;
			log_warn("the webhook's certificate does not name this landlord's address: "
			         "start every replica with the same --webhook-service, "
			         "--webhook-url "
			         "host and --webhook-cert-ip, or delete the Secret to have it made "
			         "again",
			         "{s:s,s:s,s:s}", "name", lists[k][i], "namespace",
			         LANDLORD_SYSTEM_NAMESPACE, "secret", WEBHOOK_TLS_SECRET);
		}
	}
}

/* ---- the server ---- */

static int read_static(const struct wh_serve_opts *o, struct buf *cert, struct buf *key,
                       struct ll_err *err)
{
	int rc = buf_read_file(cert, o->cert_file, true);

	if (rc == 0)
		rc = buf_read_file(key, o->key_file, true);
	if (rc < 0)
		ll_err_set(err, rc, "cannot read the webhook's TLS files %s and %s: %s",
		           o->cert_file, o->key_file, strerror(-rc));
	return rc;
}

/* The webhook port's /readyz: ready until the graceful stop begins. */
static bool ready(void *ud, char *why, size_t why_len)
{
	const struct wh_serve *w = ud;

	if (!atomic_load(&w->draining))
		return true;
	snprintf(why, why_len, "shutting down: draining the webhook's connections");
	return false;
}

/* @table, and @extra when its validator is set, as one table ended by a NULL row (owned). */
static struct admission_rule *rule_table(const struct admission_rule *table,
                                         struct admission_rule extra)
{
	struct admission_rule *out;
	size_t n = 0;

	while (table[n].name)
		n++;
	out = xcalloc(n + 2, sizeof(*out));
	memcpy(out, table, n * sizeof(*out));
	if (extra.validate)
		out[n] = extra;
	return out;
}

/* webhook_rules and webhook_mutations, and with a view the tenant rules decided on it. */
static void build_rules(struct wh_serve *w, const struct wh_serve_opts *o)
{
	w->tenancy = (struct wh_tenancy){.cv = o->view, .client = o->client};
	w->rules = rule_table(
	        webhook_rules,
	        (struct admission_rule){"tenancy", wh_tenancy_resources, ADMISSION_ANY_OP,
	                                o->view ? wh_tenancy_serve : NULL, &w->tenancy});
	w->mutations = rule_table(
	        webhook_mutations,
	        (struct admission_rule){"tenancy-mutate", wh_tenancy_mutate_resources,
	                                ADMISSION_CREATE | ADMISSION_UPDATE,
	                                o->view ? wh_tenancy_mutate : NULL, &w->tenancy});
	w->sleep_rules[0] =
	        (struct admission_rule){"sleep-enforced", wh_sleep_resources, ADMISSION_UPDATE,
	                                wh_sleep_validate, &w->tenancy};
}

static int listen_on(struct wh_serve *w, const struct wh_serve_opts *o, const char *cert,
                     const char *key, struct ll_err *err)
{
	int rc;

	w->server = http_server_new(&(struct http_server_opts){.name = "webhook",
	                                                       .addr = o->addr,
	                                                       .port = o->port,
	                                                       .cert_pem = cert,
	                                                       .key_pem = key,
	                                                       .body_max = ADMISSION_BODY_MAX,
	                                                       .conn_limit = WH_CONN_LIMIT,
	                                                       .timeout_s = WH_TIMEOUT_S,
	                                                       .close_every = WH_CLOSE_EVERY});
	w->probes = probes_new(w->server);
	probes_set_ready(w->probes, ready, w);
	build_rules(w, o);
	w->validate = admission_route_new(w->server, "/validate", "validate", w->rules);
	w->mutate = admission_route_new(w->server, "/mutate", "mutate", w->mutations);
	w->sleep = admission_route_new(w->server, "/sleep", "sleep", w->sleep_rules);
	rc = http_server_start(w->server, err);
	if (rc == -EADDRINUSE)
		ll_err_set(err, rc,
		           "the webhook's port %s:%d is in use: stop what holds it, or "
		           "give another with --webhook-addr",
		           o->addr, o->port);
	else if (rc < 0)
		ll_err_set(err, rc, "the webhook server did not start on %s:%d: %s", o->addr,
		           o->port, err ? err->msg : "");
	else
		log_info("webhook listening", "{s:s,s:i,s:s}", "addr", o->addr, "port",
		         http_server_port(w->server), "paths", "/validate /mutate /sleep");
	return rc;
}

static int serve_own(struct wh_serve *w, const struct wh_serve_opts *o, const struct url *u,
                     struct ll_err *err)
{
	struct pki_pair pair = {0};
	char *bundle = NULL;
	long long gen = 0;
	int rc = names(w, o, u, err);

	if (rc == 0)
		rc = start_certs(w, o, err);
	if (rc == 0)
		rc = certs_served(w->certs, &pair) < 0 ? -EIO : 0;
	if (rc == 0)
		check_names(w, pair.cert_pem);
	if (rc == 0)
		rc = listen_on(w, o, pair.cert_pem, pair.key_pem, err);
	if (rc == 0 && u) {
		w->registered = base_url(u, http_server_port(w->server));
		certs_bundle(w->certs, &bundle, &gen);
		rc = wh_register(o->client, w->registered, bundle, gen, err);
		if (rc < 0) {
			free(w->registered);
			w->registered = NULL;
		}
	}
	if (rc == 0)
		rc = certs_start(w->certs, o->period_ms);
	free(bundle);
	pki_pair_release(&pair);
	return rc;
}

int wh_serve_start(const struct wh_serve_opts *o, struct wh_serve **out, struct ll_err *err)
{
	struct wh_serve *w = xcalloc(1, sizeof(*w));
	struct buf cert = BUF_INIT(PEM_FILE_MAX), key = BUF_INIT(PEM_FILE_MAX);
	struct url u;
	bool files = o->cert_file && o->key_file;
	int rc = o->url ? parse_url(o->url, &u, err) : 0;

	w->client = o->client;
	if (o->client && o->view) {
		w->events = audit_events_new(&(struct audit_events_opts){.client = o->client});
		audit_events_install(w->events);
	}
	if (rc == 0 && files && o->url)
		rc = ll_err_set(err, -EINVAL,
		                "--webhook-url registers landlord's own certificate: "
		                "drop --tls-cert-file and --tls-key-file");
	else if (rc == 0 && !files && o->client == NULL)
		rc = ll_err_set(err, -EINVAL, "the webhook's own certificate needs an API client");
	if (rc == 0 && files)
		rc = read_static(o, &cert, &key, err);
	if (rc == 0 && files)
		rc = listen_on(w, o, buf_cstr(&cert), buf_cstr(&key), err);
	else if (rc == 0)
		rc = serve_own(w, o, o->url ? &u : NULL, err);
	buf_release(&cert);
	buf_release(&key);
	if (rc < 0) {
		wh_serve_stop(w);
		w = NULL;
	}
	*out = w;
	return rc;
}

int wh_serve_port(const struct wh_serve *w)
{
	return http_server_port(w->server);
}

/* With a URL: remove the configurations (once), so that the API server stops calling. */
static void deregister(struct wh_serve *w)
{
	struct ll_err err = {{0}};

	if (w->registered && wh_deregister(w->client, w->registered, &err) < 0)
		log_warn("the webhook configurations could not be removed", "{s:s}", "error",
		         err.msg);
	free(w->registered);
	w->registered = NULL;
}

/* Wait @ms, or less when another SIGTERM or SIGINT comes (blocked in every thread). */
static void wait_or_signal(long ms)
{
	int64_t until = clock_mono_ns() + (int64_t)ms * 1000000, left;
	struct timespec t;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	while ((left = until - clock_mono_ns()) > 0) {
		t = (struct timespec){left / 1000000000, left % 1000000000};
		if (sigtimedwait(&set, NULL, &t) > 0) {
			log_info("another signal: the webhook stops now", NULL);
			return;
		}
	}
}

void wh_serve_graceful_stop(struct wh_serve *w, long delay_ms)
{
	bool registered = wh_serve_registered(w);

	if (w == NULL)
		return;
	wh_serve_drain(w);
	if (!registered) {
		log_info("webhook serving through the shutdown delay", "{s:I}", "delay_ms",
		         (json_int_t)delay_ms);
		wait_or_signal(delay_ms);
	}
	wh_serve_shutdown(w, WH_IN_FLIGHT_WAIT_MS);
}

bool wh_serve_registered(const struct wh_serve *w)
{
	return w && w->registered;
}

void wh_serve_drain(struct wh_serve *w)
{
	if (w == NULL || atomic_exchange(&w->draining, true))
		return;
	deregister(w);
	http_server_drain(w->server);
	log_info("webhook draining: not ready, each connection closed after its answer", NULL);
}

int wh_serve_shutdown(struct wh_serve *w, int wait_ms)
{
	int64_t t0 = clock_mono_ns();
	int left;

	if (w == NULL || w->server == NULL)
		return 0;
	wh_serve_drain(w);
	left = http_server_shutdown(w->server, wait_ms);
	if (left > 0)
		log_warn("webhook stopped with requests unanswered", "{s:i,s:i}", "in_flight", left,
		         "waited_ms", wait_ms);
	else
		log_info("webhook stopped accepting; every request in flight answered", "{s:I}",
		         "waited_ms", (json_int_t)((clock_mono_ns() - t0) / 1000000));
	return left;
}

void wh_serve_stop(struct wh_serve *w)
{
	if (w == NULL)
		return;
	deregister(w);
	certs_free(w->certs); /* before the server: no pass hands it a pair any more */
	http_server_free(w->server);
	audit_events_install(NULL); /* no decision runs any more: the server is gone */
	audit_events_free(w->events);
	probes_free(w->probes);
	admission_route_free(w->validate);
	admission_route_free(w->mutate);
	admission_route_free(w->sleep);
	free(w->rules);
	free(w->mutations);
	for (size_t i = 0; i < w->n_dns; i++)
		free(w->dns[i]);
	for (size_t i = 0; i < w->n_ips; i++)
		free(w->ips[i]);
	free(w);
}
