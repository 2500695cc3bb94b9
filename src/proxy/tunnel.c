/*
 * tunnel.c - exec, attach and port-forward through the proxy (proxy_internal.h): a request for
 * pods/exec, pods/attach or pods/portforward that asks to switch protocols (WebSocket, or SPDY/3.1)
 * becomes a tunnel between the client and the API server, after one more check.
 *
 * The check: Kubernetes 1.33 authorises a WebSocket exec, attach or port-forward as `get` on the
 * subresource (the request is a GET), where SPDY's POST is `create`; a user granted only `get`
 * could thus run commands over WebSocket. Before any upgrade the proxy asks the API server, with
 * a SubjectAccessReview made as itself for the caller (user and groups as impersonated), whether
 * the caller may `create` that subresource of that pod, and answers 403 unless it may. No answer
 * is cached: a tunnel is rare and long, one review costs a millisecond.
 *
 * Then the upgrade request goes upstream as the caller (kc_upgrade(): impersonation headers, the
 * client's Upgrade, Sec-WebSocket-Key, -Version and -Protocol and X-Stream-Protocol-Version,
 * see add_stream_versions(); the path in the upstream namespace; the query as it came: command,
 * container, stdin, tty, ports).
 * An answer other than 101 is forwarded with its status, its Status converted to the tenant's
 * view. A 101 is answered to the client with the API server's Upgrade, Sec-WebSocket-Accept,
 * Sec-WebSocket-Protocol and X-Stream-Protocol-Version (the client's key went upstream, so the
 * accept value holds), and the job's thread copies bytes both ways, the client's early bytes
 * first, until one side ends (what the other had in flight is delivered first), the
 * --stream-idle-timeout passes with no byte either way, or the role stops: http_server_free()
 * shuts the client's side down, and the thread looks at px->stopping at least once a second
 * (and then waits for that shutdown before it closes: await_shutdown()).
 * Back-pressure is natural: each direction holds one buffer, read again only once written.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "http/later.h"
#include "http/server.h"
#include "proxy/convert.h"
#include "proxy/proxy_internal.h"

#define PUMP_BUF     (64u << 10) /* bytes in flight in each direction */
#define PUMP_TICK_MS 1000        /* how often an idle tunnel looks at the role stopping */
#define STOP_WAIT_MS 2000        /* then how long it waits for the server to shut it */
#define REVIEW_PATH  "/apis/authorization.k8s.io/v1/subjectaccessreviews"
#define UP_HEADERS   (PX_IMP_HEADERS_MAX + 9)

/* ---------- the request ---------- */

/* Copy header @name into @out; false when it is longer than the field. */
static bool take(struct http_req *req, const char *name, char *out, size_t size)
{
	const char *v = http_req_header(req, name);
	size_t n = v ? strlen(v) : 0;

	out[0] = '\0';
	if (n >= size)
		return false;
	memcpy(out, v ? v : "", n + 1);
	return true;
}

void px_upgrade_take(struct px_job *j, struct http_req *req)
{
	const char *conn = http_req_header(req, "Connection");
	struct px_upgrade *u = &j->up;
	bool ok = take(req, "Upgrade", u->upgrade, sizeof(u->upgrade));

	ok = take(req, "Sec-WebSocket-Key", u->ws_key, sizeof(u->ws_key)) && ok;
	ok = take(req, "Sec-WebSocket-Version", u->ws_version, sizeof(u->ws_version)) && ok;
	ok = take(req, "Sec-WebSocket-Protocol", u->ws_protocol, sizeof(u->ws_protocol)) && ok;
	ok = take(req, "X-Stream-Protocol-Version", u->stream_version, sizeof(u->stream_version)) &&
	     ok;
	u->too_long = !ok;
	u->asked = conn && strcasestr(conn, "upgrade") && http_req_header(req, "Upgrade");
}

bool px_tunnel_wanted(const struct px_job *j)
{
	const struct px_route *r = &j->route;

	return j->up.asked && r->kind == PX_NAMESPACED && r->group && !*r->group && r->name &&
	       r->sub && strcmp(r->resource, "pods") == 0 &&
	       (strcmp(r->sub, "exec") == 0 || strcmp(r->sub, "attach") == 0 ||
	        strcmp(r->sub, "portforward") == 0);
}

/* ---------- the access review ---------- */

/* The caller's groups as the API server sees them when impersonated: system:authenticated too. */
static json_t *review_groups(const struct px_caller *who)
{
	json_t *groups = json_array();
	bool authenticated = false;

	for (size_t i = 0; i < who->n_groups; i++) {
		json_array_append_new(groups, json_string(who->groups[i]));
		authenticated |= strcmp(who->groups[i], "system:authenticated") == 0;
	}
	if (!authenticated)
		json_array_append_new(groups, json_string("system:authenticated"));
	return groups;
}

static json_t *review_body(const struct px_job *j, const char *full_ns)
{
	return json_pack("{s:s, s:s, s:{s:s, s:o, s:{s:s, s:s, s:s, s:s, s:s, s:s}}}", "apiVersion",
	                 "authorization.k8s.io/v1", "kind", "SubjectAccessReview", "spec", "user",
	                 j->who.user, "groups", review_groups(&j->who), "resourceAttributes",
	                 "namespace", full_ns, "verb", "create", "group", "", "resource", "pods",
	                 "subresource", j->route.sub, "name", j->route.name);
}

/* May the caller create the pod's subresource? 0 when it may; -1 with the answer sent. */
static int review(struct px_job *j, const char *full_ns)
{
	json_t *body = review_body(j, full_ns);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	struct kc_request rq = {.method = "POST",
	                        .path = REVIEW_PATH,
	                        .body = text,
	                        .body_len = text ? strlen(text) : 0,
	                        .verb = "REVIEW"};
	struct kc_resp up = {0};
	struct ll_err err = {{0}};
	int rc = text ? kc_do(j->px->o.client, &rq, &up, &err) : -ENOMEM;
	const struct px_route *r = &j->route;

	if (rc < 0)
		px_job_status(j, rc == -ETIMEDOUT ? 504 : 502, "InternalError",
		              "the access review failed: %s", err.msg);
	else if (!kc_resp_ok(&up))
		px_job_status(j, 503, "ServiceUnavailable",
		              "the access review was refused (%ld): %s", up.http_status,
		              up.status.message);
	else if (!json_is_true(jx_get(up.body, "status", "allowed", NULL)))
		px_job_status(j, 403, "Forbidden",
		              "pods \"%s\" is forbidden: User \"%s\" cannot create resource "
		              "\"pods/%s\" in API group \"\" in the namespace \"%s\"",
		              r->name, j->who.user, r->sub, r->ns);
	rc = j->later ? 0 : -1;
	kc_resp_release(&up);
	free(text);
	json_decref(body);
	return rc;
}

/* ---------- the upgrade upstream ---------- */

static void add(struct kc_header *h, size_t *n, const char *name, const char *value)
{
	if (*value)
		h[(*n)++] = (struct kc_header){name, value};
}

/*
 * X-Stream-Protocol-Version: the client's first value, then, when it is a remote command
 * version, the older ones after it. lib/http hands over one value per header, and kubectl's SPDY
 * executor sends each version it speaks on a line of its own, v5.channel.k8s.io first, which
 * kubelets do not speak over SPDY (they answer v4.channel.k8s.io from the rest of the list).
 */
static void add_stream_versions(struct kc_header *h, size_t *n, const char *first)
{
	static const char *const versions[] = {"v5.channel.k8s.io", "v4.channel.k8s.io",
	                                       "v3.channel.k8s.io", "v2.channel.k8s.io",
	                                       "channel.k8s.io"};
	size_t i = 0, count = sizeof(versions) / sizeof(versions[0]);

	add(h, n, "X-Stream-Protocol-Version", first);
	while (i < count && strcmp(first, versions[i]) != 0)
		i++;
	while (++i < count)
		add(h, n, "X-Stream-Protocol-Version", versions[i]);
}

static int upgrade(struct px_job *j, const char *path, struct kc_tunnel **t, struct kc_resp *head)
{
	struct kc_header h[UP_HEADERS];
	size_t n = px_job_impersonation(j, h);
	struct ll_err err = {{0}};
	struct kc_request rq = {.method = j->method,
	                        .path = path,
	                        .query = j->query,
	                        .headers = h,
	                        .cancel = &j->cancel};
	int rc;

	add(h, &n, "Upgrade", j->up.upgrade);
	add(h, &n, "Sec-WebSocket-Key", j->up.ws_key);
	add(h, &n, "Sec-WebSocket-Version", j->up.ws_version);
	add(h, &n, "Sec-WebSocket-Protocol", j->up.ws_protocol);
	add_stream_versions(h, &n, j->up.stream_version);
	rq.n_headers = n;
	rc = kc_upgrade(j->px->o.client, &rq, t, head, &err);
	if (rc == -EINVAL)
		px_job_status(j, 400, "BadRequest", "the upgrade request is not valid: %s",
		              err.msg);
	else if (rc < 0)
		px_job_status(j, rc == -ETIMEDOUT ? 504 : 502, "InternalError",
		              "the API server did not answer: %s", err.msg);
	return rc;
}

/* The API server's answer other than 101, its Status converted to the tenant's view. */
static void forward_answer(struct px_job *j, const struct px_nsmap *map, struct kc_resp *up)
{
	struct http_resp *resp = http_later_resp(j->later);
	struct px_conv conv = {.map = map, .dir = PX_TO_USER, .resource = "pods"};
	bool json = strncasecmp(up->content_type, "application/json", 16) == 0;
	json_t *body = json && up->raw.len ? json_loadb(up->raw.p, up->raw.len, 0, NULL) : NULL;
	char *text;

	if (body && px_convert(&conv, body) != PX_CONV_OK) {
		json_decref(body);
		px_job_status(j, 500, "InternalError",
		              "the API server's answer could not be converted");
		return;
	}
	if (up->content_type[0])
		http_resp_header(resp, "Content-Type", up->content_type);
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		buf_append_str(http_resp_body(resp), text ? text : "");
		free(text);
		json_decref(body);
	} else {
		buf_append(http_resp_body(resp), up->raw.p, up->raw.len);
	}
	http_later_send(j->later, (int)up->http_status);
	j->later = NULL;
}

/* ---------- the client's 101 ---------- */

/* The client's side of the tunnel, handed over by the server thread. */
struct handoff {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool called;
	int fd;
	struct http_upgraded *u;
};

/* On the server thread (or in http_later_send() when the server stops): must not block. */
static void on_upgraded(void *ud, int fd, struct http_upgraded *u)
{
	struct handoff *h = ud;

	pthread_mutex_lock(&h->mu);
	h->called = true;
	h->fd = fd;
	h->u = u;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->mu);
}

/* Answer 101 as the API server did and wait for the client's side. 0, or -1 (no tunnel). */
static int answer_101(struct px_job *j, struct kc_tunnel *t, struct handoff *h)
{
	static const char *const pass[] = {"Sec-WebSocket-Accept", "Sec-WebSocket-Protocol",
	                                   "X-Stream-Protocol-Version"};
	struct http_resp *resp = http_later_resp(j->later);
	const char *token = kc_tunnel_header(t, "Upgrade");

	if (token == NULL || http_resp_upgrade(resp, token, on_upgraded, h) != 0) {
		px_job_status(j, 502, "InternalError",
		              "the API server switched to a protocol the proxy cannot name");
		return -1;
	}
	for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
		const char *v = kc_tunnel_header(t, pass[i]);

		if (v)
			http_resp_header(resp, pass[i], v);
	}
	http_later_send(j->later, 101);
	j->later = NULL;
	pthread_mutex_lock(&h->mu);
	while (!h->called) /* exactly once, whatever happens (server.h) */
		pthread_cond_wait(&h->cond, &h->mu);
	pthread_mutex_unlock(&h->mu);
	return h->fd >= 0 ? 0 : -1;
}

/* ---------- the bytes ---------- */

struct dir {
	const char *p; /* bytes to write: into buf, or the client's early bytes */
	size_t len;
	char *buf;
	bool eof; /* the reading side ended */
};

struct pump {
	struct dir up;   /* client to API server */
	struct dir down; /* API server to client */
	int cfd;
	struct kc_tunnel *t;
	bool c_hup, t_hup; /* poll() said so: that descriptor is not polled again */
	bool failed;       /* a write failed: the tunnel ends */
	size_t bytes_up, bytes_down;
};

static bool again(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

static bool client_to_upstream(struct pump *p)
{
	bool moved = false;
	ssize_t n;

	if (!p->up.len && !p->up.eof) {
		n = recv(p->cfd, p->up.buf, PUMP_BUF, 0);
		if (n > 0) {
			p->up.p = p->up.buf;
			p->up.len = (size_t)n;
			moved = true;
		} else if (n == 0 || !again()) {
			p->up.eof = true;
		}
	}
	if (p->up.len) {
		n = kc_tunnel_write(p->t, p->up.p, p->up.len);
		if (n > 0) {
			p->up.p += n;
			p->up.len -= (size_t)n;
			p->bytes_up += (size_t)n;
			moved = true;
		} else if (n != -EAGAIN) {
			p->failed = true;
		}
	}
	return moved;
}

static bool upstream_to_client(struct pump *p)
{
	bool moved = false;
	ssize_t n;

	if (!p->down.len && !p->down.eof) {
		n = kc_tunnel_read(p->t, p->down.buf, PUMP_BUF);
		if (n > 0) {
			p->down.p = p->down.buf;
			p->down.len = (size_t)n;
			moved = true;
		} else if (n != -EAGAIN) {
			p->down.eof = true;
		}
	}
	if (p->down.len) {
		n = send(p->cfd, p->down.p, p->down.len, MSG_NOSIGNAL);
		if (n > 0) {
			p->down.p += n;
			p->down.len -= (size_t)n;
			p->bytes_down += (size_t)n;
			moved = true;
		} else if (n < 0 && !again()) {
			p->failed = true; /* the client is gone */
		}
	}
	return moved;
}

/* A side ended and what it sent is delivered, or a write failed. */
static bool finished(const struct pump *p)
{
	return p->failed || (p->up.eof && !p->up.len) || (p->down.eof && !p->down.len);
}

static void wait_io(struct pump *p, int timeout_ms)
{
	bool read_client = !p->up.len && !p->up.eof, read_up = !p->down.len && !p->down.eof;
	struct pollfd fds[2] = {
	        {.fd = p->c_hup ? -1 : p->cfd,
	         .events = (short)((read_client ? POLLIN : 0) | (p->down.len ? POLLOUT : 0))},
	        {.fd = p->t_hup ? -1 : kc_tunnel_fd(p->t),
	         .events = kc_tunnel_events(p->t, read_up, p->up.len > 0)},
	};

	if (poll(fds, 2, timeout_ms) <= 0)
		return;
	/* a hang-up or an error stays reported: the next read or write says what it is */
	p->c_hup |= (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
	p->t_hup |= (fds[1].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}

static bool role_stopping(struct px_job *j)
{
	bool stopping;

	pthread_mutex_lock(&j->px->mu);
	stopping = j->px->stopping;
	pthread_mutex_unlock(&j->px->mu);
	return stopping || atomic_load(&j->cancel);
}

/*
 * The role stops: http_server_free() takes each tunnel from its caller and shuts the caller's
 * socket down. Close only after that (the end of file, for at most STOP_WAIT_MS): a caller's
 * close racing with the server's stop is what lib/http must not see.
 */
static void await_shutdown(struct pump *p)
{
	int64_t until = clock_mono_ms() + STOP_WAIT_MS;
	char sink[4096];

	for (int64_t left; (left = until - clock_mono_ms()) > 0;) {
		struct pollfd fd = {.fd = p->cfd, .events = POLLIN | POLLRDHUP};
		ssize_t n;

		if (poll(&fd, 1, (int)left) <= 0)
			return;
		n = recv(p->cfd, sink, sizeof(sink), 0);
		if (n == 0 || (n < 0 && !again()))
			return;
	}
}

/* Copy until the tunnel ends. Return: why, for the log. */
static const char *pump_run(struct px_job *j, struct pump *p)
{
	int64_t idle_ms = (j->px->o.stream_idle_timeout_s ? j->px->o.stream_idle_timeout_s
	                                                  : PX_STREAM_IDLE_MAX_S) *
	                  1000;
	int64_t last = clock_mono_ms();

	for (;;) {
		bool moved = client_to_upstream(p);
		int64_t now = clock_mono_ms(), left;

		moved = upstream_to_client(p) || moved;
		if (finished(p))
			return p->failed ? "a write failed" : p->up.eof ? "client" : "upstream";
		if (moved) {
			last = now;
			continue;
		}
		left = last + idle_ms - now;
		if (left <= 0)
			return "idle";
		if (role_stopping(j)) {
			await_shutdown(p);
			return "stopping";
		}
		wait_io(p, (int)(left < PUMP_TICK_MS ? left : PUMP_TICK_MS));
	}
}

static void pump(struct px_job *j, struct kc_tunnel *t, const struct handoff *h)
{
	struct pump p = {.cfd = h->fd, .t = t};
	const char *why;

	p.up.buf = xmalloc(PUMP_BUF);
	p.down.buf = xmalloc(PUMP_BUF);
	p.up.p = http_upgraded_early(h->u, &p.up.len);
	why = pump_run(j, &p);
	log_debug("tunnel ended", "{s:s,s:s,s:s,s:s,s:I,s:I}", "tenant", j->route.tenant, "user",
	          j->who.user, "subresource", j->route.sub, "by", why, "bytes_up",
	          (json_int_t)p.bytes_up, "bytes_down", (json_int_t)p.bytes_down);
	free(p.up.buf);
	free(p.down.buf);
}

/* ---------- the whole ---------- */

void px_tunnel(struct px_job *j, const struct px_nsmap *map, const char *path, const char *full_ns)
{
	struct handoff h = {.fd = -1};
	struct kc_tunnel *t = NULL;
	struct kc_resp head = {0};

	if (j->up.too_long) {
		px_job_status(j, 400, "BadRequest", "an upgrade header is too long");
		return;
	}
	if (review(j, full_ns) < 0 || upgrade(j, path, &t, &head) < 0)
		return;
	if (t == NULL) {
		forward_answer(j, map, &head);
		kc_resp_release(&head);
		return;
	}
	pthread_mutex_init(&h.mu, NULL);
	pthread_cond_init(&h.cond, NULL);
	if (answer_101(j, t, &h) == 0)
		pump(j, t, &h);
	kc_tunnel_close(t);
	if (h.u)
		http_upgraded_close(h.u);
	pthread_cond_destroy(&h.cond);
	pthread_mutex_destroy(&h.mu);
	kc_resp_release(&head);
}
