/*
 * serve.h - the webhook role: start and stop everything `landlord webhook` and `landlord run`
 * serve for admission (issue 12, points 1 to 3).
 *
 * One HTTPS server (lib/http) with POST /validate (webhook_rules, then the tenant rules of
 * tenancy/admit.h decided on the view given, webhook/cacheview.h, with the maxNamespaces slot
 * of webhook/reserve.h), POST /mutate (webhook_mutations, then the tenant label on a namespace
 * an owner creates) and the probe endpoints, bodies capped at ADMISSION_BODY_MAX,
 * idle connections closed after WH_TIMEOUT_S and at most WH_CONN_LIMIT at once. Its certificate:
 *
 *  - static files (cert_file and key_file): served as they are; nothing else happens (tests);
 *  - otherwise landlord's own (pki/certs.h): the Secret WEBHOOK_TLS_SECRET in
 *    LANDLORD_SYSTEM_NAMESPACE shared by every replica, the serving certificate for the
 *    Service's DNS names (<service>, <service>.<ns>, <service>.<ns>.svc and .svc.cluster.local),
 *    the IPs given and the host of the URL given; the CA bundle published into the
 *    configurations named landlord; a pass every period, a new pair swapped in without a
 *    failed handshake.
 *
 * Invariants:
 *  - the server listens only once a pair is known (the first certs pass succeeded), so the API
 *    server never meets a landlord without a certificate;
 *  - the webhook never depends on leadership: every replica serves, whatever the controllers do;
 *  - with a URL (outside a cluster), the configurations are registered after the server
 *    listens, pointing at it (webhook/register.h), and removed by wh_serve_stop(), the clean
 *    exit; a crash leaves them, and tenant namespaces fail closed until landlord is back.
 *    Without a URL nothing is registered: in a cluster the chart's configurations point at the
 *    Service, and a laptop that sleeps never breaks a real cluster;
 *  - a graceful stop loses no call (wh_serve_drain(), a delay for the Service's endpoints to
 *    drop this replica, wh_serve_shutdown(), wh_serve_stop()): not ready at once, every
 *    keep-alive connection closed after its next answer, new connections accepted until the
 *    delay ends, then refused, and the requests in flight answered before the process exits.
 */
#ifndef LANDLORD_WEBHOOK_SERVE_H
#define LANDLORD_WEBHOOK_SERVE_H

#include <stdbool.h>
#include <stdint.h>

struct kc_client;
struct ll_err;
struct wh_serve;

#define WH_CONN_LIMIT 128u /* connections at once: the API server keeps some open per replica */
#define WH_TIMEOUT_S  30u  /* an idle or slow connection is closed after this */
/* One answer in this many closes its connection: the API server dials again, and its Service
 * sends the new connection to any replica, so one that (re)joins gets its share of the calls. */
#define WH_CLOSE_EVERY 100u
/* The graceful stop's wait for requests in flight: longer than any webhook timeout the chart
 * sets (timeoutSeconds, 5 by default), shorter than its terminationGracePeriodSeconds. */
#define WH_IN_FLIGHT_WAIT_MS 10000

struct wh_serve_opts {
	struct kc_client *client; /* borrowed, outlives the role; NULL only with static files */
	const char *addr;         /* an IP literal to listen on */
	int port;                 /* 0: a free one */
	const char *cert_file;    /* with key_file: serve these files, no certs, no registration */
	const char *key_file;
	const char *url;      /* https://HOST[:PORT] to register, or NULL; port 0: the bound one */
	const char *service;  /* the Service's name, for the certificate's DNS names */
	const char *cert_ips; /* more IP literals for the certificate, comma-separated, or NULL */
	/* The tenant rules' view (webhook/cacheview.h), borrowed, outliving the role; NULL: the
	 * tenant rules are not served (every request they would judge is admitted). */
	struct cacheview *view;
	/* certs_opts lifetimes (0: certs.h defaults), and the period of passes (0: default). */
	int64_t ca_lifetime_s, serving_lifetime_s, publish_grace_s, drain_s, period_ms;
};

/**
 * wh_serve_start() - set up the certificate, listen, register (with a URL) and keep the
 * certificate current in the background; *@out is the running role.
 * Return: 0; -EINVAL (a bad URL or IP, a static-file and URL mix), -EADDRINUSE (the port is
 * taken), -EIO (the Secret or the configurations could not be read or written, or TLS refused
 * the pair), -EEXIST (a configuration named landlord that is not landlord's). Every failure
 * leaves one line in @err naming what and what to do; nothing is left running.
 */
int wh_serve_start(const struct wh_serve_opts *o, struct wh_serve **out /* OUT */,
                   struct ll_err *err);
/**
 * wh_serve_drain() - the graceful stop's first step (SIGTERM): with a URL, remove what was
 * registered (the API server stops calling); /readyz on the webhook port answers 503; every
 * answer closes its keep-alive connection, so the API server's next call dials again, and a
 * Service whose endpoints no longer list this replica sends it elsewhere. Everything is still
 * served meanwhile. Idempotent.
 */
void wh_serve_drain(struct wh_serve *w);
/**
 * wh_serve_shutdown() - the second step, after the drain delay: stop accepting (new connections
 * are refused) and wait, at most @wait_ms (WH_IN_FLIGHT_WAIT_MS), for the requests in flight
 * to be answered; drains first if that was not done. Logs the outcome.
 * Return: the requests still unanswered when it gave up (0: none was lost).
 */
int wh_serve_shutdown(struct wh_serve *w, int wait_ms);
/**
 * wh_serve_graceful_stop() - the whole graceful stop after a clean stop of the process (a
 * signal): wh_serve_drain(), then serve through @delay_ms while the Service's endpoints drop
 * this replica (cut short by another SIGTERM or SIGINT, which the caller keeps blocked in every
 * thread), then wh_serve_shutdown(). With --webhook-url the configurations are removed at once
 * and nothing else serves them: no delay. NULL is fine.
 */
void wh_serve_graceful_stop(struct wh_serve *w, long delay_ms);
/** wh_serve_registered() - the configurations point at this process (--webhook-url). */
bool wh_serve_registered(const struct wh_serve *w);
/** wh_serve_port() - the port the server listens on. */
int wh_serve_port(const struct wh_serve *w);
/**
 * wh_serve_stop() - the end: remove what was registered (unless another landlord re-pointed it;
 * wh_serve_drain() may have done it), stop the certificate passes, close the server (idle
 * connections too) and free. NULL is fine.
 */
void wh_serve_stop(struct wh_serve *w);

#endif
