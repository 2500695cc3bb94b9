/* server.c - the shared HTTP server: requests, routing, start and stop (see server.h). */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "http/server.h"
#include "http/server_internal.h"

#define TEXT_TYPE      "text/plain; charset=utf-8"
#define STREAM_BLOCK   (16u << 10)
#define ALLOW_LIST_MAX 128

union addr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

struct http_server *http_server_new(const struct http_server_opts *o)
{
	static const struct http_server_opts none = {0};
	struct http_server *s = xcalloc(1, sizeof(*s));

	o = o ? o : &none;
	s->name = xstrdup(o->name ? o->name : "http");
	s->addr = xstrdup(o->addr ? o->addr : "127.0.0.1");
	s->port = o->port;
	s->quiesced_fd = -1;
	s->cert_pem = o->cert_pem && o->key_pem ? xstrdup(o->cert_pem) : NULL;
	s->key_pem = o->cert_pem && o->key_pem ? xstrdup(o->key_pem) : NULL;
	s->client_ca_pem = o->client_ca_pem ? xstrdup(o->client_ca_pem) : NULL;
	s->body_max = o->body_max ? o->body_max : HTTP_BODY_MAX;
	s->conn_limit = o->conn_limit ? o->conn_limit : HTTP_CONN_LIMIT;
	s->timeout_s = o->timeout_s ? o->timeout_s : HTTP_TIMEOUT_S;
	s->close_every = o->close_every;
	s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->tls_mu, NULL);
	pthread_mutex_init(&s->tunnel_mu, NULL);
	metrics_describe("landlord_http_requests_total", METRIC_COUNTER,
	                 "HTTP requests answered, by server and status code.", NULL, 0);
	metrics_describe("landlord_http_request_duration_seconds", METRIC_HISTOGRAM,
	                 "Time from a request line to its queued answer (a stream: its headers).",
	                 NULL, 0);
	return s;
}

static bool same_route(const struct route *a, const struct http_route *b)
{
	bool same_method = (a->method == NULL && b->method == NULL) ||
	                   (a->method && b->method && strcmp(a->method, b->method) == 0);

	return same_method && a->prefix == b->prefix && strcmp(a->path, b->path) == 0;
}

int http_server_route(struct http_server *s, const struct http_route *r)
{
	struct route rt;

	if (s->d)
		return -EALREADY;
	if (r->fn == NULL || r->path == NULL || r->path[0] != '/' ||
	    (r->method && r->method[0] == '\0'))
		return -EINVAL;
	for (size_t i = 0; i < s->routes.len; i++)
		if (same_route(&s->routes.v[i], r))
			return -EEXIST;
	rt = (struct route){
	        .method = r->method ? xstrdup(r->method) : NULL,
	        .path = xstrdup(r->path),
	        .path_len = strlen(r->path),
	        .prefix = r->prefix,
	        .body_max = r->body_max ? r->body_max : s->body_max,
	        .fn = r->fn,
	        .ud = r->ud,
	};
	vec_push(&s->routes, rt);
	return 0;
}

static bool method_ok(const struct route *rt, const char *method)
{
	if (rt->method == NULL || strcmp(rt->method, method) == 0)
		return true;
	return strcmp(method, "HEAD") == 0 && strcmp(rt->method, "GET") == 0;
}

static bool path_ok(const struct route *rt, const char *path)
{
	if (rt->prefix)
		return strncmp(path, rt->path, rt->path_len) == 0;
	return strcmp(path, rt->path) == 0;
}

/* Exact beats prefix, a longer prefix beats a shorter one, a named method beats "any". */
static size_t specificity(const struct route *rt)
{
	size_t len = rt->prefix ? rt->path_len : SIZE_MAX / 2;

	return len * 2 + (rt->method != NULL);
}

/* The route for @path and @method, or NULL with *@path_known telling 405 from 404. */
static const struct route *find_route(const struct http_server *s, const char *path,
                                      const char *method, bool *path_known)
{
	const struct route *best = NULL;

	*path_known = false;
	for (size_t i = 0; i < s->routes.len; i++) {
		const struct route *rt = &s->routes.v[i];

		if (!path_ok(rt, path))
			continue;
		*path_known = true;
		if (method_ok(rt, method) && (best == NULL || specificity(rt) > specificity(best)))
			best = rt;
	}
	return best;
}

static void allow_add(char *allow, const char *method)
{
	size_t len = strlen(allow), mlen = strlen(method);
	const char *p = allow;

	while ((p = strstr(p, method)) != NULL) {
		if ((p == allow || p[-1] == ' ') && (p[mlen] == ',' || p[mlen] == '\0'))
			return;
		p += mlen;
	}
	if (len + mlen + 3 < ALLOW_LIST_MAX)
		snprintf(allow + len, ALLOW_LIST_MAX - len, "%s%s", len ? ", " : "", method);
}

/* The Allow header for a 405 on @path: the methods of every route for it. */
static void allow_list(const struct http_server *s, const char *path, char *allow)
{
	allow[0] = '\0';
	for (size_t i = 0; i < s->routes.len; i++) {
		const struct route *rt = &s->routes.v[i];

		if (!path_ok(rt, path) || rt->method == NULL)
			continue;
		allow_add(allow, rt->method);
		if (strcmp(rt->method, "GET") == 0)
			allow_add(allow, "HEAD");
	}
}

/* Called once per request with the raw request target, before MHD decodes it. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct http_req *r = xcalloc(1, sizeof(*r));
	const char *q = strchr(uri, '?');

	r->s = cls;
	r->c = c;
	r->t0 = clock_mono_ns();
	r->query = xstrdup(q ? q + 1 : "");
	buf_init(&r->body, 0);
	atomic_fetch_add(&r->s->in_flight, 1);
	return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct http_req *r = *con_cls;

	if (r == NULL)
		return;
	if (r->stream) {
		http__stream_conn_ended(r->stream);
		http__stream_unref(r->stream);
	}
	http__later_request_done(r);
	http__upgrade_completed(r);
	buf_release(&r->body);
	free(r->query);
	free(r->peer_pem);
	if (!r->upgraded) /* a tunnel left the count when its 101 went out */
		atomic_fetch_sub(&r->s->in_flight, 1);
	free(r);
	*con_cls = NULL;
}

static void remote_addr(struct http_req *r)
{
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(r->c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	r->remote[0] = '\0';
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, r->remote,
		          sizeof(r->remote));
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, r->remote,
		          sizeof(r->remote));
}

/* After the headers: pick the route (or the early answer) and the body cap. */
static void begin(struct http_req *r, const char *url, const char *method)
{
	bool path_known;

	r->headers_seen = true;
	remote_addr(r);
	r->route = find_route(r->s, url, method, &path_known);
	if (r->route == NULL)
		r->early = path_known ? MHD_HTTP_METHOD_NOT_ALLOWED : MHD_HTTP_NOT_FOUND;
	else
		buf_init(&r->body, r->route->body_max);
}

static void record(const struct http_req *r, unsigned int status)
{
	char labels[160], code[8];

	snprintf(code, sizeof(code), "%u", status);
	metrics_labels(labels, sizeof(labels), "server", r->s->name, "code", code, NULL);
	metrics_add("landlord_http_requests_total", labels, 1);
	metrics_labels(labels, sizeof(labels), "server", r->s->name, NULL);
	metrics_observe("landlord_http_request_duration_seconds", labels,
	                (double)(clock_mono_ns() - r->t0) / 1e9);
}

static struct MHD_Response *make_response(struct http_resp *resp)
{
	struct MHD_Response *mr;
	size_t len;
	char *body;

	if (resp->upgrade)
		return http__upgrade_response(resp);
	if (resp->stream) {
		mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK,
		                                       http__stream_read, resp->stream,
		                                       http__stream_response_freed);
		if (mr) {
			pthread_mutex_lock(&resp->stream->mu);
			resp->stream->refs++; /* the response's, dropped when MHD frees it */
			pthread_mutex_unlock(&resp->stream->mu);
		}
		return mr;
	}
	len = resp->body.len;
	body = buf_detach(&resp->body);
	mr = MHD_create_response_from_buffer_with_free_callback(len, body, free);
	if (mr == NULL)
		free(body);
	return mr;
}

/*
 * Whether this answer ends its connection: draining, or every close_every-th answer of the
 * server (libmicrohttpd 0.9.75 gives TLS connections no context of their own to age them by).
 */
static bool must_close(const struct http_req *r)
{
	if (atomic_load(&r->s->draining))
		return true;
	return r->s->close_every &&
	       atomic_fetch_add(&r->s->answers, 1) % r->s->close_every == r->s->close_every - 1;
}

/* A 101 leaves Connection and Upgrade to libmicrohttpd, and has no body to type. */
static bool upgrade_owns(const char *name)
{
	return strcasecmp(name, MHD_HTTP_HEADER_CONNECTION) == 0 ||
	       strcasecmp(name, MHD_HTTP_HEADER_UPGRADE) == 0 ||
	       strcasecmp(name, MHD_HTTP_HEADER_CONTENT_TYPE) == 0;
}

static void add_headers(const struct http_resp *resp, struct MHD_Response *mr)
{
	bool typed = resp->upgrade != NULL;

	for (size_t i = 0; i < resp->headers.len; i++) {
		struct header *h = &resp->headers.v[i];

		if (resp->upgrade && upgrade_owns(h->name))
			continue;
		typed = typed || strcasecmp(h->name, MHD_HTTP_HEADER_CONTENT_TYPE) == 0;
		MHD_add_response_header(mr, h->name, h->value);
	}
	if (!typed)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, TEXT_TYPE);
}

/* A 101 is an upgrade and an upgrade is a 101: the status, made consistent with @resp. */
static unsigned int settle_upgrade(struct http_resp *resp, unsigned int status)
{
	if (resp->upgrade && status != MHD_HTTP_SWITCHING_PROTOCOLS)
		http__upgrade_drop(resp, -ECANCELED); /* the handler changed its mind */
	else if (resp->upgrade == NULL && status == MHD_HTTP_SWITCHING_PROTOCOLS)
		status = MHD_HTTP_INTERNAL_SERVER_ERROR; /* a 101 needs http_resp_upgrade() */
	return status;
}

enum MHD_Result http__send_response(struct http_resp *resp, unsigned int status)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;

	status = settle_upgrade(resp, status);
	mr = make_response(resp);
	if (mr == NULL)
		return MHD_NO;
	add_headers(resp, mr);
	/* A tunnel never carries another request; libmicrohttpd refuses "close" on a 101. */
	if (resp->upgrade == NULL && must_close(resp->req))
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(resp->req->c, status, mr);
	MHD_destroy_response(mr);
	record(resp->req, status);
	return ret;
}

void http__resp_release(struct http_resp *resp)
{
	for (size_t i = 0; i < resp->headers.len; i++) {
		free(resp->headers.v[i].name);
		free(resp->headers.v[i].value);
	}
	vec_release(&resp->headers);
	buf_release(&resp->body);
	http__upgrade_drop(resp,
	                   -ECONNABORTED); /* the token; the callback has gone to the request */
}

static unsigned int early_answer(struct http_req *r, struct http_resp *resp)
{
	char allow[ALLOW_LIST_MAX];

	switch (r->early) {
	case MHD_HTTP_NOT_FOUND:
		buf_append_str(&resp->body, "not found\n");
		break;
	case MHD_HTTP_METHOD_NOT_ALLOWED:
		allow_list(r->s, r->path, allow);
		http_resp_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
		buf_append_str(&resp->body, "method not allowed\n");
		break;
	default:
		buf_append_str(&resp->body, "request body too large\n");
		break;
	}
	return (unsigned int)r->early;
}

static enum MHD_Result respond(struct http_req *r)
{
	struct http_resp resp = {.req = r, .body = BUF_INIT(HTTP_RESP_BODY_MAX)};
	enum MHD_Result ret;
	unsigned int status;
	int rc;

	if (r->early) {
		status = early_answer(r, &resp);
	} else {
		rc = r->route->fn(r->route->ud, r, &resp);
		status = rc >= 100 && rc <= 599 ? (unsigned int)rc : MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	if (resp.deferred) { /* suspended: http__later_answer() queues it on resume */
		http__resp_release(&resp);
		return MHD_YES;
	}
	ret = http__send_response(&resp, status);
	http__resp_release(&resp);
	return ret;
}

/*
 * MHD calls this once after the headers, once per body chunk, and a last time with
 * *upload_data_size == 0; only the last call answers.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
	struct http_req *r = *con_cls;

	assert(r != NULL); /* on_uri() runs first for every request */
	r->method = method;
	r->path = url;
	if (!r->headers_seen) {
		begin(r, url, method);
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		/* Past the cap, or with no handler to read it, keep reading but drop the bytes. */
		if (r->early == 0 && buf_append(&r->body, upload_data, *upload_data_size) < 0) {
			r->early = MHD_HTTP_CONTENT_TOO_LARGE;
			buf_release(&r->body);
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r->later)
		return http__later_answer(r);
	return respond(r);
}

static int parse_addr(const struct http_server *s, union addr *a, socklen_t *len,
                      struct ll_err *err)
{
	memset(a, 0, sizeof(*a));
	if (s->port < 0 || s->port > 65535)
		return ll_err_set(err, -EINVAL, "port %d is outside 0..65535", s->port);
	if (inet_pton(AF_INET, s->addr, &a->in.sin_addr) == 1) {
		a->in.sin_family = AF_INET;
		a->in.sin_port = htons((uint16_t)s->port);
		*len = sizeof(a->in);
		return 0;
	}
	if (inet_pton(AF_INET6, s->addr, &a->in6.sin6_addr) == 1) {
		a->in6.sin6_family = AF_INET6;
		a->in6.sin6_port = htons((uint16_t)s->port);
		*len = sizeof(a->in6);
		return 0;
	}
	return ll_err_set(err, -EINVAL, "%s is not an IPv4 or IPv6 address literal", s->addr);
}

/* MHD said no without saying why: bind the address ourselves to find out. */
static int diagnose(const struct http_server *s, const union addr *a, socklen_t len,
                    struct ll_err *err)
{
	int fd = socket(a->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, e = 0;

	if (fd < 0)
		e = errno;
	else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	         bind(fd, &a->sa, len) < 0)
		e = errno;
	if (fd >= 0)
		close(fd);
	if (e == EADDRINUSE)
		return ll_err_set(err, -EADDRINUSE, "port %d on %s is in use: %s", s->port, s->addr,
		                  strerror(e));
	if (e == EADDRNOTAVAIL || e == EAFNOSUPPORT)
		return ll_err_set(err, -EINVAL, "cannot bind %s: %s", s->addr, strerror(e));
	if (e)
		return ll_err_set(err, -EIO, "cannot bind port %d on %s: %s", s->port, s->addr,
		                  strerror(e));
	return ll_err_set(err, -EIO, "the %s server on %s port %d did not start%s", s->name,
	                  s->addr, s->port,
	                  s->cert_pem ? " (is the TLS certificate or key invalid?)" : "");
}

/* Warn when the descriptors conn_limit may need are more than the process may open. */
static void check_fd_limit(const struct http_server *s)
{
	rlim_t need = (rlim_t)s->conn_limit * HTTP_FDS_PER_CONN + 64;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < need)
		log_warn("the HTTP server may need more file descriptors than RLIMIT_NOFILE allows",
		         "{s:s, s:i, s:I, s:I}", "server", s->name, "conn_limit",
		         (int)s->conn_limit, "need", (long long)need, "limit",
		         (long long)rl.rlim_cur);
}

int http_server_start(struct http_server *s, struct ll_err *err)
{
	const union MHD_DaemonInfo *info;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
	                     MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE;
	struct MHD_OptionItem tls[HTTP__TLS_OPTIONS];
	socklen_t len = 0;
	union addr a;
	int rc;

	if (s->d)
		return ll_err_set(err, -EALREADY, "the %s server is already started", s->name);
	rc = parse_addr(s, &a, &len, err);
	if (rc)
		return rc;
	rc = http__tls_options(s, tls, err);
	if (rc)
		return rc;
	flags |= (a.sa.sa_family == AF_INET6 ? MHD_USE_IPv6 : 0) | (s->cert_pem ? MHD_USE_TLS : 0);
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &a.sa,
	                        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_COMPLETED,
	                        on_completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, s->timeout_s,
	                        MHD_OPTION_CONNECTION_LIMIT, s->conn_limit, MHD_OPTION_ARRAY, tls,
	                        MHD_OPTION_END);
	if (s->d == NULL)
		return diagnose(s, &a, len, err);
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	if (info)
		s->port = info->port;
	check_fd_limit(s);
	return 0;
}

void http_server_drain(struct http_server *s)
{
	atomic_store(&s->draining, true);
}

int http_server_shutdown(struct http_server *s, int wait_ms)
{
	const struct timespec tick = {0, 10 * 1000 * 1000};
	int64_t until = clock_mono_ns() + (int64_t)wait_ms * 1000000;
	MHD_socket fd;
	int left;

	http_server_drain(s);
	if (s->d == NULL)
		return 0;
	if (!s->shut) {
		s->shut = true;
		/* MHD accepts no more and gives the socket back. Its thread may still be taking it
		 * out of epoll, so the socket is only shut down here (connecting clients are
		 * refused at once) and closed after MHD has stopped. */
		fd = MHD_quiesce_daemon(s->d);
		if (fd != MHD_INVALID_SOCKET) {
			shutdown(fd, SHUT_RDWR);
			s->quiesced_fd = fd;
		}
	}
	while ((left = atomic_load(&s->in_flight)) > 0 && clock_mono_ns() < until)
		nanosleep(&tick, NULL);
	return left;
}

int http_server_port(const struct http_server *s)
{
	return s->port;
}

void http_server_free(struct http_server *s)
{
	if (s == NULL)
		return;
	http__streams_cancel(s); /* resumes every idle stream: MHD cannot stop with one suspended */
	http__laters_cancel(s);  /* and every pending answer (503) */
	http__watcher_stop(s);
	http__tunnels_close(s); /* shut down and taken back: MHD_stop_daemon() ends them */
	if (s->d)
		MHD_stop_daemon(s->d); /* closes the connections: on_close(-ECANCELED) runs here */
	if (s->quiesced_fd >= 0)
		close(s->quiesced_fd);
	for (size_t i = 0; i < s->routes.len; i++) {
		free(s->routes.v[i].method);
		free(s->routes.v[i].path);
	}
	vec_release(&s->routes);
	vec_release(&s->streams);
	vec_release(&s->laters);
	vec_release(&s->tunnels);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->tls_mu);
	pthread_mutex_destroy(&s->tunnel_mu);
	free(s->name);
	free(s->addr);
	free(s->cert_pem);
	free(s->key_pem);
	free(s->client_ca_pem);
	free(s);
}

const char *http_req_method(const struct http_req *r)
{
	return r->method;
}

const char *http_req_path(const struct http_req *r)
{
	return r->path;
}

const char *http_req_query(const struct http_req *r)
{
	return r->query;
}

const char *http_req_arg(const struct http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, name);
}

const char *http_req_header(const struct http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, name);
}

const char *http_req_body(const struct http_req *r, size_t *len)
{
	if (len)
		*len = r->body.len;
	return buf_cstr(&r->body);
}

const char *http_req_remote_addr(const struct http_req *r)
{
	return r->remote;
}

bool http__is_token(const char *s)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";

	if (*s == '\0')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr(extra, *s)))
			return false;
	return true;
}

int http_resp_header(struct http_resp *resp, const char *name, const char *value)
{
	struct header h;

	if (!http__is_token(name) || strpbrk(value, "\r\n"))
		return -EINVAL;
	h.name = xstrdup(name);
	h.value = xstrdup(value);
	vec_push(&resp->headers, h);
	return 0;
}

struct buf *http_resp_body(struct http_resp *resp)
{
	return &resp->body;
}

struct http_stream *http_resp_stream(struct http_resp *resp, const struct http_stream_opts *o)
{
	assert(resp->stream == NULL && resp->upgrade == NULL);
	buf_release(&resp->body);
	resp->stream = http__stream_new(resp->req, o);
	return resp->stream;
}
