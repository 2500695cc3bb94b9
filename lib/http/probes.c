/* probes.c - /healthz, /readyz, /metrics and /debug/ hooks on an http_server (see probes.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "http/probes.h"
#include "http/server.h"

#define WHY_MAX      256
#define METRICS_TYPE "text/plain; version=0.0.4"
#define DEBUG_PREFIX "/debug/"

struct probes {
	struct http_server *s;
	pthread_mutex_t mu; /* the ready callback may change while serving */
	probes_ready_fn ready;
	void *ready_ud;
};

static int healthz(void *ud, struct http_req *req, struct http_resp *resp)
{
	buf_append_str(http_resp_body(resp), "ok");
	return 200;
}

static int readyz(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct probes *p = ud;
	char why[WHY_MAX] = "";
	probes_ready_fn fn;
	void *fn_ud;

	pthread_mutex_lock(&p->mu);
	fn = p->ready;
	fn_ud = p->ready_ud;
	pthread_mutex_unlock(&p->mu);
	if (fn == NULL || fn(fn_ud, why, sizeof(why))) {
		buf_append_str(http_resp_body(resp), "ok");
		return 200;
	}
	why[sizeof(why) - 1] = '\0';
	buf_append_str(http_resp_body(resp), why[0] ? why : "not ready");
	return 503;
}

static int metrics(void *ud, struct http_req *req, struct http_resp *resp)
{
	http_resp_header(resp, "Content-Type", METRICS_TYPE);
	return metrics_render(http_resp_body(resp)) == 0 ? 200 : 500;
}

struct probes *probes_new(struct http_server *s)
{
	struct probes *p = xcalloc(1, sizeof(*p));
	static const struct {
		const char *path;
		http_handler_fn fn;
	} routes[] = {{"/healthz", healthz}, {"/readyz", readyz}, {"/metrics", metrics}};

	p->s = s;
	pthread_mutex_init(&p->mu, NULL);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		http_server_route(s, &(struct http_route){.method = "GET",
		                                          .path = routes[i].path,
		                                          .fn = routes[i].fn,
		                                          .ud = p});
	return p;
}

void probes_set_ready(struct probes *p, probes_ready_fn fn, void *ud)
{
	pthread_mutex_lock(&p->mu);
	p->ready = fn;
	p->ready_ud = ud;
	pthread_mutex_unlock(&p->mu);
}

int probes_add_hook(struct probes *p, const char *path, http_handler_fn fn, void *ud)
{
	if (strncmp(path, DEBUG_PREFIX, strlen(DEBUG_PREFIX)) != 0 ||
	    path[strlen(DEBUG_PREFIX)] == '\0' || strstr(path, "/..") != NULL)
		return -EINVAL;
	return http_server_route(p->s, &(struct http_route){.path = path, .fn = fn, .ud = ud});
}

void probes_free(struct probes *p)
{
	if (p == NULL)
		return;
	pthread_mutex_destroy(&p->mu);
	free(p);
}
