/*
 * upgrade.c - 101 Switching Protocols and the tunnels after it (see server.h and
 * docs/internals/http.md).
 *
 * libmicrohttpd (MHD_ALLOW_UPGRADE) sends the 101 and then calls on_upgrade() on the server
 * thread with the connection's socket (under TLS, the application end of a socketpair it pumps)
 * and a handle that MHD_upgrade_action(MHD_UPGRADE_ACTION_CLOSE) ends. It closes that socket
 * itself, at the close or at MHD_stop_daemon(), so the caller gets a duplicate: a descriptor
 * that stays the caller's until http_upgraded_close(), whatever the server does meanwhile.
 *
 * Who ends libmicrohttpd's side takes urh under the tunnel's lock, so only one does: the
 * caller's close, which calls MHD_upgrade_action() with busy set, or http_server_free(), which
 * waits for busy to clear, shuts the socket down for the caller's thread to notice, and leaves
 * the rest to MHD_stop_daemon(), whose own thread then ends the tunnel. No lock of ours is held
 * while calling libmicrohttpd: it completes a tunnel's request (http__upgrade_completed()) with
 * its resume lock held, and that path takes tunnel_mu and the tunnel's lock.
 *
 * A TLS client's hang-up: libmicrohttpd 0.9.75 reads the end of the TLS stream, stops reading,
 * and tells the application nothing until the application's side is done too (it shuts the
 * socketpair down only when both directions have finished, MHD_connection_finish_forward_()):
 * an idle caller would wait for ever. So the stream watcher (stream.c) also polls the client
 * sockets of TLS tunnels for POLLRDHUP, and on a hang-up shuts down the write side of the
 * caller's end: libmicrohttpd reads its end of file, finishes forwarding what the client sent,
 * and shuts the socketpair down; the caller reads the client's last bytes, then the end, and
 * its writes fail with EPIPE. A client that half-closes its side is taken as gone, as for
 * streams. On plain HTTP the caller holds the client's socket and sees the end itself.
 *
 * The caller's close under TLS: MHD_upgrade_action() shuts the application end down and only
 * then sets was_closed, while the server thread may already be reading that end of file; it
 * then finishes the forward only if it saw was_closed, and nothing wakes it to look again
 * (upstream fixed this in 1.0.0, commit 6fb386ec): the client would wait for ever for the end
 * of the tunnel. So a TLS tunnel closed by its caller and not completed CLOSE_KICK_MS later
 * gets a wake-up from the watcher: shutdown(SHUT_RD) on the tunnel's own duplicate of the
 * client's socket (conn_fd), an EPOLLIN for the server thread, which now sees was_closed and
 * finishes (it reads nothing more from the client once was_closed is set). Not at once: a
 * server thread still reading the client would get the end of the TLS stream, and GnuTLS
 * would then refuse to send what the caller wrote last (a premature end invalidates the
 * session).
 *
 * Lock order: the server's mu (the watcher), then tunnel_mu, then a tunnel's mu.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/mem.h"
#include "base/vec.h"
#include "http/server.h"
#include "http/server_internal.h"

#define CLOSE_KICK_MS 100 /* a closed TLS tunnel not completed by then is woken (see above) */

/* RFC 9110 protocol: a token, then optionally "/" and a token ("websocket", "SPDY/3.1"). */
static bool is_protocol(const char *p)
{
	char *name = xstrdup(p), *version = strchr(name, '/');
	bool ok;

	if (version)
		*version++ = '\0';
	ok = http__is_token(name) && (version == NULL || http__is_token(version));
	free(name);
	return ok;
}

int http_resp_upgrade(struct http_resp *resp, const char *upgrade_token,
                      http_upgrade_fn on_upgraded, void *ud)
{
	if (upgrade_token == NULL || on_upgraded == NULL || !is_protocol(upgrade_token))
		return -EINVAL;
	if (resp->upgrade || resp->stream)
		return -EALREADY;
	resp->upgrade = xstrdup(upgrade_token);
	resp->up_fn = on_upgraded;
	resp->up_ud = ud;
	return 0;
}

/* The callback's one call: the tunnel, or why there is none. */
static void fire(struct http_req *r, int fd, struct http_upgraded *u)
{
	http_upgrade_fn fn = r->up_fn;

	r->up_fn = NULL;
	if (fn)
		fn(r->up_ud, fd, u);
}

void http__upgrade_drop(struct http_resp *resp, int reason)
{
	http_upgrade_fn fn = resp->up_fn;

	free(resp->upgrade);
	resp->upgrade = NULL;
	resp->up_fn = NULL;
	if (fn)
		fn(resp->up_ud, reason, NULL);
}

static void on_upgrade(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra,
                       size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh);

struct MHD_Response *http__upgrade_response(struct http_resp *resp)
{
	struct http_req *r = resp->req;
	struct MHD_Response *mr;

	/* From here the request owns the callback: its completion reports a 101 never sent. */
	r->up_fn = resp->up_fn;
	r->up_ud = resp->up_ud;
	resp->up_fn = NULL;
	mr = MHD_create_response_for_upgrade(on_upgrade, r); /* adds Connection: Upgrade */
	if (mr && MHD_add_response_header(mr, MHD_HTTP_HEADER_UPGRADE, resp->upgrade) != MHD_YES) {
		MHD_destroy_response(mr);
		mr = NULL;
	}
	return mr;
}

static struct http_upgraded *tunnel_new(struct http_server *s, int fd, int conn_fd,
                                        struct MHD_UpgradeResponseHandle *urh, const char *extra,
                                        size_t extra_len)
{
	struct http_upgraded *u = xcalloc(1, sizeof(*u));

	pthread_mutex_init(&u->mu, NULL);
	pthread_cond_init(&u->idle, NULL);
	u->refs = 2; /* the caller's and the connection's */
	u->s = s;
	u->urh = urh;
	u->fd = fd;
	u->conn_fd = conn_fd;
	buf_init(&u->early, extra_len + 1);
	if (extra_len)
		buf_append(&u->early, extra, extra_len);
	return u;
}

static void tunnel_free(struct http_upgraded *u)
{
	if (u->conn_fd >= 0)
		close(u->conn_fd);
	buf_release(&u->early);
	pthread_cond_destroy(&u->idle);
	pthread_mutex_destroy(&u->mu);
	free(u);
}

static void tunnel_unref(struct http_upgraded *u)
{
	int left;

	pthread_mutex_lock(&u->mu);
	left = --u->refs;
	pthread_mutex_unlock(&u->mu);
	if (left == 0)
		tunnel_free(u);
}

/* List @u as open, unless http_server_free() has begun. */
static bool tunnel_register(struct http_server *s, struct http_upgraded *u)
{
	bool open;

	pthread_mutex_lock(&s->tunnel_mu);
	open = !s->tunnels_closed;
	if (open)
		vec_push(&s->tunnels, u);
	pthread_mutex_unlock(&s->tunnel_mu);
	return open;
}

/* No tunnel after all: end it at once (on the server thread, so without a race). */
static void refuse(struct http_req *r, struct MHD_UpgradeResponseHandle *urh, int reason)
{
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
	fire(r, reason, NULL);
}

/*
 * The caller's duplicate of @sock and, under TLS (@sock is then a socketpair's end), the
 * tunnel's own duplicate of the client's socket, or -1. Return: 0 or -errno (none made).
 */
static int dup_fds(struct MHD_Connection *c, MHD_socket sock, int *fd, int *conn_fd)
{
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	int e;

	*conn_fd = -1;
	*fd = fcntl(sock, F_DUPFD_CLOEXEC, 0);
	if (*fd < 0)
		return -errno;
	if (ci == NULL || ci->connect_fd == sock)
		return 0;
	*conn_fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0);
	if (*conn_fd >= 0)
		return 0;
	e = errno;
	close(*fd);
	return -e;
}

/* libmicrohttpd has sent the 101: on the server thread, with the connection suspended. */
static void on_upgrade(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra,
                       size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct http_req *r = cls;
	struct http_upgraded *u;
	int fd, conn_fd, rc;

	r->upgraded = true;
	atomic_fetch_sub(&r->s->in_flight, 1); /* answered: a tunnel is not a request in flight */
	rc = dup_fds(c, sock, &fd, &conn_fd);
	if (rc < 0) {
		refuse(r, urh, rc);
		return;
	}
	u = tunnel_new(r->s, fd, conn_fd, urh, extra, extra_len);
	if (!tunnel_register(r->s, u)) {
		close(fd);
		tunnel_free(u);
		refuse(r, urh, -ECANCELED);
		return;
	}
	r->tunnel = u;
	if (conn_fd >= 0)
		http__watcher_kick(r->s);
	fire(r, fd, u);
}

/* The request completes: the connection ended, for a tunnel after its close. */
void http__upgrade_completed(struct http_req *r)
{
	struct http_upgraded *u = r->tunnel;
	struct http_server *s = r->s;

	fire(r, -ECONNABORTED, NULL); /* a 101 queued and never sent */
	if (u == NULL)
		return;
	pthread_mutex_lock(&s->tunnel_mu);
	for (size_t i = 0; i < s->tunnels.len; i++)
		if (s->tunnels.v[i] == u) {
			s->tunnels.v[i] = s->tunnels.v[--s->tunnels.len];
			break;
		}
	pthread_mutex_unlock(&s->tunnel_mu);
	r->tunnel = NULL;
	tunnel_unref(u);
}

const void *http_upgraded_early(const struct http_upgraded *u, size_t *len)
{
	*len = u->early.len;
	return buf_cstr(&u->early);
}

void http_upgraded_close(struct http_upgraded *u)
{
	struct MHD_UpgradeResponseHandle *urh;

	pthread_mutex_lock(&u->mu);
	assert(!u->closed);
	u->closed = true;
	urh = u->urh;
	u->urh = NULL;
	u->busy = urh != NULL;
	pthread_mutex_unlock(&u->mu);
	if (urh) {
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		if (u->conn_fd >= 0) {
			/* TLS: the watcher wakes the close if it is missed (see above). busy keeps
			 * http_server_free() from freeing u->s meanwhile. */
			pthread_mutex_lock(&u->mu);
			u->closed_ns = clock_mono_ns();
			pthread_mutex_unlock(&u->mu);
			http__watcher_kick(u->s);
		}
		pthread_mutex_lock(&u->mu);
		u->busy = false;
		pthread_cond_broadcast(&u->idle);
		pthread_mutex_unlock(&u->mu);
	}
	close(u->fd);
	tunnel_unref(u);
}

/* Take libmicrohttpd's side of @u from its caller, unless the caller closed it already. */
static void tunnel_cancel(struct http_upgraded *u)
{
	pthread_mutex_lock(&u->mu);
	while (u->busy)
		pthread_cond_wait(&u->idle, &u->mu);
	if (u->urh) {
		u->urh = NULL; /* MHD_stop_daemon() ends it; the caller never touches it again */
		shutdown(u->fd, SHUT_RDWR); /* the caller's thread reads the end; fd is still its */
	}
	if (u->conn_fd >= 0) { /* so that the client's socket closes with libmicrohttpd's */
		close(u->conn_fd);
		u->conn_fd = -1;
	}
	pthread_mutex_unlock(&u->mu);
}

/*
 * http_server_free(), before MHD_stop_daemon(): no tunnel opens any more, and every open one is
 * shut down and taken from its caller's hands, so that nothing of libmicrohttpd's is used once
 * the daemon has stopped.
 */
void http__tunnels_close(struct http_server *s)
{
	struct http_upgraded **open;
	size_t n;

	pthread_mutex_lock(&s->tunnel_mu);
	s->tunnels_closed = true;
	n = s->tunnels.len;
	open = xcalloc(n + 1, sizeof(*open));
	for (size_t i = 0; i < n; i++) {
		open[i] = s->tunnels.v[i];
		pthread_mutex_lock(&open[i]->mu);
		open[i]->refs++; /* ours, while the completion may run on the server thread */
		pthread_mutex_unlock(&open[i]->mu);
	}
	pthread_mutex_unlock(&s->tunnel_mu);
	for (size_t i = 0; i < n; i++) {
		tunnel_cancel(open[i]);
		tunnel_unref(open[i]);
	}
	free(open);
}

/* With u->mu held: the milliseconds until @u's close is due a wake-up, or -1 for never. */
static int kick_in_ms(const struct http_upgraded *u, int64_t now)
{
	int64_t due = u->closed_ns + (int64_t)CLOSE_KICK_MS * 1000000;

	if (u->closed_ns == 0 || u->kicked || u->conn_fd < 0)
		return -1;
	return due <= now ? 0 : (int)((due - now + 999999) / 1000000);
}

/*
 * With the server's mu held: the client sockets of open TLS tunnels to watch, from fds[n]; in
 * @timeout_ms, the poll timeout for the next close due a wake-up (-1: none).
 */
nfds_t http__tunnels_watch(struct http_server *s, struct pollfd *fds, nfds_t n, nfds_t max,
                           int *timeout_ms)
{
	int64_t now = clock_mono_ns();

	*timeout_ms = -1;
	pthread_mutex_lock(&s->tunnel_mu);
	for (size_t i = 0; i < s->tunnels.len; i++) {
		struct http_upgraded *u = s->tunnels.v[i];
		int in;

		pthread_mutex_lock(&u->mu);
		if (u->conn_fd >= 0 && u->urh && !u->hung_up && n < max)
			fds[n++] = (struct pollfd){.fd = u->conn_fd, .events = POLLRDHUP};
		in = kick_in_ms(u, now);
		if (in >= 0 && (*timeout_ms < 0 || in < *timeout_ms))
			*timeout_ms = in;
		pthread_mutex_unlock(&u->mu);
	}
	pthread_mutex_unlock(&s->tunnel_mu);
	return n;
}

/* The watcher: wake the closes that are due (see above); a tunnel still listed is not done. */
void http__tunnels_kick_due(struct http_server *s)
{
	int64_t now = clock_mono_ns();

	pthread_mutex_lock(&s->tunnel_mu);
	for (size_t i = 0; i < s->tunnels.len; i++) {
		struct http_upgraded *u = s->tunnels.v[i];

		pthread_mutex_lock(&u->mu);
		if (kick_in_ms(u, now) == 0) {
			u->kicked = true;
			shutdown(u->conn_fd, SHUT_RD);
		}
		pthread_mutex_unlock(&u->mu);
	}
	pthread_mutex_unlock(&s->tunnel_mu);
}

/* The watcher saw @fd hang up: the TLS tunnel on it, if still open, learns it (see above). */
void http__tunnels_hung_up(struct http_server *s, int fd)
{
	pthread_mutex_lock(&s->tunnel_mu);
	for (size_t i = 0; i < s->tunnels.len; i++) {
		struct http_upgraded *u = s->tunnels.v[i];

		pthread_mutex_lock(&u->mu);
		/* With urh still here, the caller has not closed fd yet. */
		if (u->conn_fd == fd && u->urh && !u->hung_up) {
			u->hung_up = true;
			shutdown(u->fd, SHUT_WR);
		}
		pthread_mutex_unlock(&u->mu);
	}
	pthread_mutex_unlock(&s->tunnel_mu);
}
