/*
 * kube_rawsrv.h - a loopback HTTP/1.1 server for the client's request and stream suites: it
 * keeps each request's bytes exactly as received (head and body), and answers with whatever the
 * test's answer function writes on the socket, one connection per request. Header-only, static.
 */
#ifndef LANDLORD_TESTS_KUBE_RAWSRV_H
#define LANDLORD_TESTS_KUBE_RAWSRV_H

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/err.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"

#define RAWSRV_REQ_MAX (16u << 20)

struct rawsrv;
typedef void (*rawsrv_answer_fn)(struct rawsrv *s, int fd);

struct rawsrv {
	int lfd, port;
	pthread_t thread;
	pthread_mutex_t lock;
	char *req; /* the last request as received (head and body), NUL-terminated */
	size_t req_len;
	size_t head_len; /* bytes of req up to and including the blank line */
	int nreq;
	rawsrv_answer_fn answer;
	void *ud;
	atomic_int stop;
};

static inline bool rawsrv_write(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

static inline bool rawsrv_puts(int fd, const char *s)
{
	return rawsrv_write(fd, s, strlen(s));
}

/* One whole answer with a Content-Length. */
static inline void rawsrv_reply(int fd, int status, const char *ctype, const void *body, size_t n)
{
	char head[512];

	snprintf(head, sizeof(head),
	         "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	         "Connection: close\r\n\r\n",
	         status, ctype, n);
	rawsrv_puts(fd, head);
	rawsrv_write(fd, body, n);
}

/* A chunked answer's head; send pieces with rawsrv_chunk() and end with rawsrv_chunk(fd, 0,0). */
static inline void rawsrv_chunked_head(int fd, int status, const char *ctype)
{
	char head[512];

	snprintf(head, sizeof(head),
	         "HTTP/1.1 %d X\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n"
	         "Connection: close\r\n\r\n",
	         status, ctype);
	rawsrv_puts(fd, head);
}

static inline bool rawsrv_chunk(int fd, const void *p, size_t n)
{
	char size[32];

	snprintf(size, sizeof(size), "%zx\r\n", n);
	return rawsrv_puts(fd, size) && (n == 0 || rawsrv_write(fd, p, n)) &&
	       rawsrv_puts(fd, "\r\n");
}

static inline size_t rawsrv_content_length(const char *head)
{
	const char *p = head;

	while ((p = strchr(p, '\n')) != NULL) {
		p++;
		if (strncasecmp(p, "Content-Length:", 15) == 0)
			return (size_t)strtoul(p + 15, NULL, 10);
	}
	return 0;
}

/* Read one request; false when the peer went away first. */
static inline bool rawsrv_read_request(struct rawsrv *s, int fd)
{
	char *b = malloc(RAWSRV_REQ_MAX + 1), *end = NULL;
	size_t len = 0, want = 0;

	while (len < RAWSRV_REQ_MAX) {
		ssize_t r = recv(fd, b + len, RAWSRV_REQ_MAX - len, 0);

		if (r <= 0)
			break;
		len += (size_t)r;
		b[len] = '\0';
		if (end == NULL && (end = strstr(b, "\r\n\r\n")) != NULL)
			want = (size_t)(end + 4 - b) + rawsrv_content_length(b);
		if (end && len >= want)
			break;
	}
	if (end == NULL || len < want) {
		free(b);
		return false;
	}
	pthread_mutex_lock(&s->lock);
	free(s->req);
	s->req = b;
	s->req_len = len;
	s->head_len = (size_t)(end + 4 - b);
	s->nreq++;
	pthread_mutex_unlock(&s->lock);
	return true;
}

static inline void *rawsrv_main(void *arg)
{
	struct rawsrv *s = arg;

	while (!atomic_load(&s->stop)) {
		struct pollfd p = {.fd = s->lfd, .events = POLLIN};
		int fd;

		if (poll(&p, 1, 100) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		if (rawsrv_read_request(s, fd) && s->answer)
			s->answer(s, fd);
		shutdown(fd, SHUT_WR);
		close(fd);
	}
	return NULL;
}

static inline void rawsrv_start(struct rawsrv *s, rawsrv_answer_fn answer, void *ud)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);

	memset(s, 0, sizeof(*s));
	s->answer = answer;
	s->ud = ud;
	pthread_mutex_init(&s->lock, NULL);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, len) != 0 || listen(s->lfd, 16) ||
	    getsockname(s->lfd, (struct sockaddr *)&sa, &len) != 0) {
		fprintf(stderr, "rawsrv: cannot listen\n");
		abort();
	}
	s->port = ntohs(sa.sin_port);
	pthread_create(&s->thread, NULL, rawsrv_main, s);
}

static inline void rawsrv_stop(struct rawsrv *s)
{
	atomic_store(&s->stop, 1);
	pthread_join(s->thread, NULL);
	close(s->lfd);
	free(s->req);
	pthread_mutex_destroy(&s->lock);
}

static inline int rawsrv_nreq(struct rawsrv *s)
{
	int n;

	pthread_mutex_lock(&s->lock);
	n = s->nreq;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* A client of @s without rate limit; NULL on failure (with the reason on stderr). */
static inline struct kc_client *rawsrv_client(const struct rawsrv *s, long timeout_ms)
{
	char url[64];
	struct kcfg cfg = {.server = url};
	struct kc_opts o = {.timeout_ms = timeout_ms, .qps = -1, .client_name = "rawsrv"};
	struct kc_client *c = NULL;
	struct ll_err err = {{0}};

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
	if (kc_client_new(&cfg, &o, &c, &err) != 0)
		fprintf(stderr, "rawsrv client: %s\n", err.msg);
	return c;
}

#endif
