/*
 * stream.c - chunked responses fed by another thread, and the watcher that notices a client
 * hanging up on an idle stream (see server.h and docs/internals/http.md).
 *
 * An idle stream (empty queue, not ended) suspends its connection from the reader: MHD then
 * neither polls nor times it out, and would not see the client leave. The watcher thread polls
 * the sockets of suspended streams for a hang-up (POLLRDHUP) and resumes them closed. Whoever
 * clears `suspended` under the stream's lock is the one that resumes, so a connection is
 * resumed exactly once per suspension. The same thread watches the client sockets of TLS
 * tunnels (upgrade.c), whose hang-up libmicrohttpd does not pass on by itself.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "http/server.h"
#include "http/server_internal.h"

static void *watch_main(void *arg);

static void wake_watcher(struct http_server *s)
{
	char c = 1;

	if (s->wake[1] >= 0 && write(s->wake[1], &c, 1) < 0 && errno != EAGAIN)
		log_warn("cannot wake the HTTP stream watcher", "{s:i}", "errno", errno);
}

/* Called with s->mu held: the watcher starts with the first stream. */
static void watcher_start(struct http_server *s)
{
	if (s->watcher_started)
		return;
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		s->wake[0] = s->wake[1] = -1;
		log_warn("no HTTP stream watcher: idle hang-ups go unnoticed", "{s:i}", "errno",
		         errno);
		return;
	}
	if (pthread_create(&s->watcher, NULL, watch_main, s) != 0) {
		close(s->wake[0]);
		close(s->wake[1]);
		s->wake[0] = s->wake[1] = -1;
		return;
	}
	s->watcher_started = true;
}

struct http_stream *http__stream_new(struct http_req *req, const struct http_stream_opts *o)
{
	static const struct http_stream_opts none = {0};
	struct http_stream *st = xcalloc(1, sizeof(*st));
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(req->c, MHD_CONNECTION_INFO_CONNECTION_FD);

	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->cb_done, NULL);
	st->o = o ? *o : none;
	buf_init(&st->q, st->o.queue_max ? st->o.queue_max : HTTP_STREAM_QUEUE_MAX);
	st->refs = 2; /* the producer's and the request's */
	st->s = req->s;
	st->c = req->c;
	st->fd = ci ? ci->connect_fd : -1;
	req->stream = st;
	pthread_mutex_lock(&req->s->mu);
	vec_push(&req->s->streams, st);
	watcher_start(req->s);
	if (req->s->stopping)
		st->closed = -ECANCELED;
	pthread_mutex_unlock(&req->s->mu);
	return st;
}

static void stream_free(struct http_stream *st)
{
	buf_release(&st->q);
	pthread_cond_destroy(&st->cb_done);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

void http__stream_unref(struct http_stream *st)
{
	int left;

	pthread_mutex_lock(&st->mu);
	left = --st->refs;
	pthread_mutex_unlock(&st->mu);
	if (left == 0)
		stream_free(st);
}

void http__stream_response_freed(void *cls)
{
	http__stream_unref(cls);
}

/*
 * Callbacks run one at a time and never once the producer has ended. With st->mu held:
 * returns false when the callback must not run; otherwise marks it running.
 */
static bool cb_begin(struct http_stream *st)
{
	pthread_t self = pthread_self();

	while (st->cb_depth > 0 && !pthread_equal(st->cb_thread, self))
		pthread_cond_wait(&st->cb_done, &st->mu);
	if (st->ended)
		return false;
	st->cb_depth++;
	st->cb_thread = self;
	return true;
}

static void cb_end(struct http_stream *st)
{
	if (--st->cb_depth == 0)
		pthread_cond_broadcast(&st->cb_done);
}

/* With st->mu held: resume a connection we suspended, if nobody did yet. */
static void resume_locked(struct http_stream *st)
{
	if (st->suspended && st->c) {
		st->suspended = false;
		MHD_resume_connection(st->c);
	}
}

/* MHD's content reader: runs on the server thread with MHD's response lock held. */
ssize_t http__stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct http_stream *st = cls;
	bool drained = false, idle = false;
	ssize_t n;

	pthread_mutex_lock(&st->mu);
	if (st->closed) {
		n = MHD_CONTENT_READER_END_WITH_ERROR;
	} else if (st->q.len == 0 && st->ended) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else if (st->q.len == 0) {
		/* Nothing to send: park the connection until a push, the end or a hang-up. */
		st->suspended = idle = true;
		MHD_suspend_connection(st->c);
		n = 0;
	} else {
		n = (ssize_t)(st->q.len < max ? st->q.len : max);
		memcpy(out, st->q.p, (size_t)n);
		buf_consume(&st->q, (size_t)n);
		drained = st->q.len == 0 && st->want_drain && st->o.on_drain;
		if (drained)
			st->want_drain = false;
	}
	if (drained && !cb_begin(st))
		drained = false;
	pthread_mutex_unlock(&st->mu);
	if (idle)
		wake_watcher(st->s);
	if (drained) {
		st->o.on_drain(st->o.ud);
		pthread_mutex_lock(&st->mu);
		cb_end(st);
		pthread_mutex_unlock(&st->mu);
	}
	return n;
}

int http_stream_push(struct http_stream *st, const void *data, size_t len)
{
	int rc;

	pthread_mutex_lock(&st->mu);
	assert(!st->ended);
	if (st->closed) {
		rc = st->closed;
	} else if (buf_append(&st->q, data, len) < 0) {
		st->want_drain = true;
		rc = -EMSGSIZE;
	} else {
		resume_locked(st);
		rc = 0;
	}
	pthread_mutex_unlock(&st->mu);
	return rc;
}

void http_stream_end(struct http_stream *st)
{
	pthread_t self = pthread_self();

	pthread_mutex_lock(&st->mu);
	assert(!st->ended);
	st->ended = true;
	while (st->cb_depth > 0 && !pthread_equal(st->cb_thread, self))
		pthread_cond_wait(&st->cb_done, &st->mu);
	if (!st->closed)
		resume_locked(st);
	pthread_mutex_unlock(&st->mu);
	http__stream_unref(st);
}

/* The connection is gone (completion callback): tell the producer unless it has ended. */
void http__stream_conn_ended(struct http_stream *st)
{
	struct http_server *s = st->s;
	bool run;
	int reason;

	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->streams.len; i++)
		if (s->streams.v[i] == st) {
			s->streams.v[i] = s->streams.v[--s->streams.len];
			break;
		}
	reason = s->stopping ? -ECANCELED : -EPIPE;
	pthread_mutex_unlock(&s->mu);

	pthread_mutex_lock(&st->mu);
	st->c = NULL;
	st->suspended = false;
	if (!st->closed)
		st->closed = reason;
	run = !st->close_ran && st->o.on_close && cb_begin(st);
	st->close_ran = true;
	reason = st->closed;
	pthread_mutex_unlock(&st->mu);
	if (run) {
		st->o.on_close(st->o.ud, reason);
		pthread_mutex_lock(&st->mu);
		cb_end(st);
		pthread_mutex_unlock(&st->mu);
	}
}

/* Shutdown: close every stream and resume the idle ones, so that MHD can stop. */
void http__streams_cancel(struct http_server *s)
{
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	for (size_t i = 0; i < s->streams.len; i++) {
		struct http_stream *st = s->streams.v[i];

		pthread_mutex_lock(&st->mu);
		if (!st->closed)
			st->closed = -ECANCELED;
		resume_locked(st);
		pthread_mutex_unlock(&st->mu);
	}
	pthread_mutex_unlock(&s->mu);
}

/* A socket to watch was added: start the watcher if need be, and have it poll again. */
void http__watcher_kick(struct http_server *s)
{
	pthread_mutex_lock(&s->mu);
	if (!s->stopping) { /* once stopping, the watcher and its pipe may be gone */
		watcher_start(s);
		wake_watcher(s);
	}
	pthread_mutex_unlock(&s->mu);
}

void http__watcher_stop(struct http_server *s)
{
	if (!s->watcher_started)
		return;
	wake_watcher(s); /* s->stopping is already set */
	pthread_join(s->watcher, NULL);
	close(s->wake[0]);
	close(s->wake[1]);
	s->wake[0] = s->wake[1] = -1;
	s->watcher_started = false;
}

/* The sockets of idle streams and TLS tunnels, after the wake pipe (room for conn_limit of
 * them), and the poll timeout in @timeout_ms; 0 when stopping. */
static nfds_t watch_set(struct http_server *s, struct pollfd *fds, int *timeout_ms)
{
	nfds_t n = 1;

	fds[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->streams.len && n <= s->conn_limit; i++) {
		struct http_stream *st = s->streams.v[i];

		pthread_mutex_lock(&st->mu);
		if (st->suspended && st->fd >= 0)
			fds[n++] = (struct pollfd){.fd = st->fd, .events = POLLRDHUP};
		pthread_mutex_unlock(&st->mu);
	}
	n = http__tunnels_watch(s, fds, n, (nfds_t)s->conn_limit + 1, timeout_ms);
	if (s->stopping)
		n = 0;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* @fd reported a hang-up: close the idle stream on it, if it is still idle. */
static void hung_up(struct http_server *s, int fd)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->streams.len; i++) {
		struct http_stream *st = s->streams.v[i];

		pthread_mutex_lock(&st->mu);
		if (st->fd == fd && st->suspended && !st->closed) {
			st->closed = -EPIPE;
			resume_locked(st); /* the reader then ends the connection with an error */
		}
		pthread_mutex_unlock(&st->mu);
	}
	pthread_mutex_unlock(&s->mu);
}

static void *watch_main(void *arg)
{
	struct http_server *s = arg;
	/* Each stream or tunnel is a connection: conn_limit sockets at most, and the wake pipe. */
	struct pollfd *fds = xcalloc((size_t)s->conn_limit + 1, sizeof(*fds));
	char drain[64];
	int timeout_ms;
	nfds_t n;

	while ((n = watch_set(s, fds, &timeout_ms)) > 0) {
		if (poll(fds, n, timeout_ms) < 0 && errno != EINTR)
			break;
		while (read(s->wake[0], drain, sizeof(drain)) > 0)
			;
		for (nfds_t i = 1; i < n; i++)
			if (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
				hung_up(s, fds[i].fd);
				http__tunnels_hung_up(s, fds[i].fd);
			}
		http__tunnels_kick_due(s);
	}
	free(fds);
	return NULL;
}
