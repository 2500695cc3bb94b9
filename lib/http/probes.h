/*
 * probes.h - the health, readiness and metrics endpoints, on any http_server.
 *
 * probes_new() routes, on the server it is given (before that server starts):
 *   GET /healthz   200 "ok" while the process serves;
 *   GET /readyz    200 "ok" when the ready callback says so (no callback: ready), otherwise 503
 *                  with its one-line reason;
 *   GET /metrics   metrics_render(), Content-Type "text/plain; version=0.0.4".
 * HEAD is answered too; other methods get 405. probes_add_hook() adds handlers under /debug/
 * only (test and diagnostic hooks), so a hook can never shadow a real route.
 * The probes object is lent to the server's routes: free the server first, then the probes.
 */
#ifndef LANDLORD_HTTP_PROBES_H
#define LANDLORD_HTTP_PROBES_H

#include <stdbool.h>
#include <stddef.h>

#include "http/server.h"

struct probes;

/**
 * Ready callback: return true when ready; otherwise put a one-line reason in @why. Runs on the
 * server thread.
 */
typedef bool (*probes_ready_fn)(void *ud, char *why, size_t why_len);

/** probes_new() - route the probes on @s (not started yet). Never NULL. */
struct probes *probes_new(struct http_server *s);
/** probes_set_ready() - set or replace the ready callback; thread-safe, at any time. */
void probes_set_ready(struct probes *p, probes_ready_fn fn, void *ud);
/**
 * probes_add_hook() - route every method of @path (exact) to @fn; before the server starts.
 * Return: 0, -EINVAL when @path is not under /debug/, or http_server_route()'s errors.
 */
int probes_add_hook(struct probes *p, const char *path, http_handler_fn fn, void *ud);
/** probes_free() - after http_server_free() of the server they were routed on. */
void probes_free(struct probes *p);

#endif
