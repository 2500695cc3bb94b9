/* probe.c - the probe HTTP server: /healthz, /readyz, /metrics and extra hooks (see probe.h). */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/buf.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "http/probe.h"

#define PROBE_WHY_MAX        256
#define PROBE_CONN_TIMEOUT_S 30u
#define PROBE_CONN_LIMIT     64u
#define PROBE_TEXT           "text/plain; charset=utf-8"
#define PROBE_METRICS_TYPE   "text/plain; version=0.0.4"

struct route {
	char *path;
	probe_handler_fn fn;
	void *ud;
};

struct probe {
	char *bind_addr;
	int port; /* requested; the bound one after probe_start() */
	struct MHD_Daemon *d;
	struct route *routes; /* fixed once started: read by the server thread without a lock */
	size_t n_routes;
	pthread_mutex_t mu; /* ready/ready_ud may change while serving */
	probe_ready_fn ready;
	void *ready_ud;
	size_t body_max;
	char *cert_pem; /* HTTPS when set */
	char *key_pem;
};

/* Per-request state: made by the URI log callback, freed by the completion callback. */
struct req {
	char *query;
	struct buf body;
	bool headers_seen;
	bool too_big;
};

struct probe *probe_new(const char *bind_addr, int port)
{
	struct probe *p = xcalloc(1, sizeof(*p));

	p->bind_addr = xstrdup(bind_addr ? bind_addr : "127.0.0.1");
	p->port = port;
	p->body_max = PROBE_BODY_MAX;
	pthread_mutex_init(&p->mu, NULL);
	return p;
}

void probe_set_tls(struct probe *p, const char *cert_pem, const char *key_pem)
{
	assert(p->d == NULL);
	free(p->cert_pem);
	free(p->key_pem);
	p->cert_pem = xstrdup(cert_pem);
	p->key_pem = xstrdup(key_pem);
}

void probe_set_body_max(struct probe *p, size_t max)
{
	assert(p->d == NULL);
	p->body_max = max;
}

void probe_set_ready(struct probe *p, probe_ready_fn fn, void *ud)
{
	pthread_mutex_lock(&p->mu);
	p->ready = fn;
	p->ready_ud = ud;
	pthread_mutex_unlock(&p->mu);
}

void probe_handle(struct probe *p, const char *path, probe_handler_fn fn, void *ud)
{
	assert(p->d == NULL);
	p->routes = xrealloc(p->routes, (p->n_routes + 1) * sizeof(*p->routes));
	p->routes[p->n_routes] = (struct route){xstrdup(path), fn, ud};
	p->n_routes++;
}

/* Called once per request with the raw request target, before MHD decodes it. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct probe *p = cls;
	struct req *r = xcalloc(1, sizeof(*r));
	const char *q = strchr(uri, '?');

	r->query = xstrdup(q ? q + 1 : "");
	buf_init(&r->body, p->body_max);
	return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;

	if (r == NULL)
		return;
	buf_release(&r->body);
	free(r->query);
	free(r);
	*con_cls = NULL;
}

static enum MHD_Result send_response(struct MHD_Connection *c, unsigned int status, struct buf *out,
                                     const char *type)
{
	size_t len = out->len;
	char *body = buf_detach(out);
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer_with_free_callback(len, body, free);
	if (resp == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static unsigned int readyz(struct probe *p, struct buf *out)
{
	char why[PROBE_WHY_MAX] = "";
	probe_ready_fn fn;
	void *ud;

	pthread_mutex_lock(&p->mu);
	fn = p->ready;
	ud = p->ready_ud;
	pthread_mutex_unlock(&p->mu);
	if (fn == NULL || fn(ud, why, sizeof(why))) {
		buf_append_str(out, "ok");
		return MHD_HTTP_OK;
	}
	why[sizeof(why) - 1] = '\0';
	buf_append_str(out, why[0] ? why : "not ready");
	return MHD_HTTP_SERVICE_UNAVAILABLE;
}

/* Built-in paths; 0 when @url is not one of them. */
static unsigned int builtin(struct probe *p, const char *url, const char *method, struct buf *out,
                            const char **type)
{
	bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;

	if (strcmp(url, "/healthz") && strcmp(url, "/readyz") && strcmp(url, "/metrics"))
		return 0;
	if (!get) {
		buf_append_str(out, "method not allowed");
		return MHD_HTTP_METHOD_NOT_ALLOWED;
	}
	if (strcmp(url, "/readyz") == 0)
		return readyz(p, out);
	if (strcmp(url, "/metrics") == 0) {
		*type = PROBE_METRICS_TYPE;
		return metrics_render(out) == 0 ? MHD_HTTP_OK : MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	buf_append_str(out, "ok");
	return MHD_HTTP_OK;
}

static const struct route *find_route(const struct probe *p, const char *url)
{
	for (size_t i = 0; i < p->n_routes; i++)
		if (strcmp(p->routes[i].path, url) == 0)
			return &p->routes[i];
	return NULL;
}

static unsigned int call_route(const struct route *rt, const char *method, const struct req *r,
                               struct buf *out, const char **type)
{
	int status = rt->fn(rt->ud, method, r->query, buf_cstr(&r->body), out);
	const char *s = buf_cstr(out);

	s += strspn(s, " \t\r\n");
	if (*s == '{' || *s == '[')
		*type = "application/json";
	return status >= 100 && status <= 599 ? (unsigned int)status
	                                      : MHD_HTTP_INTERNAL_SERVER_ERROR;
}

static enum MHD_Result respond(struct probe *p, struct MHD_Connection *c, const struct req *r,
                               const char *url, const char *method)
{
	struct buf out = BUF_INIT(BUF_MAX_INTERNAL);
	const char *type = PROBE_TEXT;
	const struct route *rt;
	unsigned int status;

	if (r->too_big) {
		status = MHD_HTTP_CONTENT_TOO_LARGE;
		buf_append_str(&out, "request body too large");
	} else if ((status = builtin(p, url, method, &out, &type)) != 0) {
		/* answered */
	} else if ((rt = find_route(p, url)) != NULL) {
		status = call_route(rt, method, r, &out, &type);
	} else {
		status = MHD_HTTP_NOT_FOUND;
		buf_append_str(&out, "not found");
	}
	return send_response(c, status, &out, type);
}

/*
 * MHD calls this once after the headers, once per body chunk, and a last time with
 * *upload_data_size == 0; only the last call answers.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
	struct req *r = *con_cls;

	assert(r != NULL); /* on_uri() runs first for every request */
	if (!r->headers_seen) {
		r->headers_seen = true;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		/* Past the cap, keep reading but drop the bytes, then answer 413. */
		if (!r->too_big && buf_append(&r->body, upload_data, *upload_data_size) < 0) {
			r->too_big = true;
			buf_release(&r->body);
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	return respond(cls, c, r, url, method);
}

int probe_start(struct probe *p)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	const union MHD_DaemonInfo *info;

	if (p->d)
		return -EALREADY;
	if (p->port < 0 || p->port > 65535 || inet_pton(AF_INET, p->bind_addr, &sa.sin_addr) != 1)
		return -EINVAL;
	sa.sin_port = htons((uint16_t)p->port);
	struct MHD_OptionItem tls[] = {
	        {MHD_OPTION_HTTPS_MEM_CERT, 0, p->cert_pem},
	        {MHD_OPTION_HTTPS_MEM_KEY, 0, p->key_pem},
	        {MHD_OPTION_END, 0, NULL},
	};
	errno = 0;
	p->d = MHD_start_daemon(
	        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | (p->cert_pem ? MHD_USE_TLS : 0),
	        0, NULL, NULL, on_request, p, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	        MHD_OPTION_URI_LOG_CALLBACK, on_uri, p, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
	        NULL, MHD_OPTION_CONNECTION_TIMEOUT, PROBE_CONN_TIMEOUT_S,
	        MHD_OPTION_CONNECTION_LIMIT, PROBE_CONN_LIMIT, MHD_OPTION_ARRAY,
	        p->cert_pem ? tls : tls + 2, MHD_OPTION_END);
	if (p->d == NULL)
		return errno == EADDRINUSE ? -EADDRINUSE : -EIO;
	info = MHD_get_daemon_info(p->d, MHD_DAEMON_INFO_BIND_PORT);
	if (info)
		p->port = info->port;
	return 0;
}

int probe_port(const struct probe *p)
{
	return p->port;
}

void probe_free(struct probe *p)
{
	if (p == NULL)
		return;
	if (p->d)
		MHD_stop_daemon(p->d);
	for (size_t i = 0; i < p->n_routes; i++)
		free(p->routes[i].path);
	free(p->routes);
	pthread_mutex_destroy(&p->mu);
	free(p->bind_addr);
	free(p->cert_pem);
	free(p->key_pem);
	free(p);
}
