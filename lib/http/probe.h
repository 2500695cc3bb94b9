/*
 * probe.h - the probe HTTP server every long-running role runs (libmicrohttpd, plain HTTP).
 *
 * Serves GET /healthz (200 while the process is alive), /readyz (200 when the ready callback
 * says so, 503 otherwise, with the reason in the body), /metrics (metrics_render()), and any
 * extra handlers registered before start (used for test-only hooks under /debug/, which are only
 * registered when the binary runs with --enable-test-hooks). Binds 127.0.0.1 by default (an
 * IPv4 literal); port 0 picks a free port, reported by probe_port(). Request bodies are capped at
 * PROBE_BODY_MAX: a larger one is answered 413 without calling a handler. Built-in paths answer
 * 405 to methods other than GET/HEAD; other paths 404.
 *
 * The same server carries the admission webhook: probe_set_tls() switches it to HTTPS (the
 * certificate and key as PEM, held in memory) and probe_set_body_max() raises the body cap for
 * AdmissionReviews, which carry whole objects.
 */
#ifndef LANDLORD_PROBE_H
#define LANDLORD_PROBE_H

#include <stdbool.h>
#include <stddef.h>

struct buf;
struct probe;

#define PROBE_BODY_MAX (64u << 10)

/**
 * Ready callback: return true when ready; otherwise put a one-line reason in @why. Runs on the
 * server thread; without one, /readyz answers 200.
 */
typedef bool (*probe_ready_fn)(void *ud, char *why, size_t why_len);
/**
 * Extra handler: write the response body into @out and return the HTTP status (outside
 * 100..599: 500). @method is "GET"/"POST"..., @query the raw query string as sent (still
 * percent-encoded) or "", @body the request body (""). Runs on the server thread. A body that
 * starts with '{' or '[' is sent as application/json, anything else as text/plain.
 */
typedef int (*probe_handler_fn)(void *ud, const char *method, const char *query, const char *body,
                                struct buf *out);

struct probe *probe_new(const char *bind_addr /* NULL: 127.0.0.1 */, int port);
void probe_set_ready(struct probe *p, probe_ready_fn fn, void *ud);
/** probe_set_tls() - serve HTTPS with @cert_pem (chain) and @key_pem (copied); before start. */
void probe_set_tls(struct probe *p, const char *cert_pem, const char *key_pem);
/** probe_set_body_max() - request body cap in bytes (default PROBE_BODY_MAX); before start. */
void probe_set_body_max(struct probe *p, size_t max);
/** probe_handle() - route exact @path to @fn; call before probe_start(). */
void probe_handle(struct probe *p, const char *path, probe_handler_fn fn, void *ud);
/**
 * probe_start() - start serving on a background thread.
 * Return: 0, -EADDRINUSE, -EINVAL (bad address or port), -EALREADY (started), -EIO.
 */
int probe_start(struct probe *p);
/** probe_port() - the bound port (after start). */
int probe_port(const struct probe *p);
/** probe_free() - stop serving and free. */
void probe_free(struct probe *p);

#endif
