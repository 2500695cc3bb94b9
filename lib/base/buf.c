/* buf.c - growable byte buffer with a hard cap (see buf.h for the invariants). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/mem.h"

void buf_init(struct buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

static int reserve(struct buf *b, size_t extra)
{
	size_t need, cap;

	if (extra > b->max || b->len > b->max - extra)
		return -EMSGSIZE;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	if (cap > b->max + 1)
		cap = b->max + 1;
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
	int rc = reserve(b, n);

	if (rc)
		return rc;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_vappendf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n, rc;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return -EINVAL;
	rc = reserve(b, (size_t)n);
	if (rc)
		return rc;
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_appendf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vappendf(b, fmt, ap);
	va_end(ap);
	return rc;
}

int buf_append_urlencoded(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = 0;

	for (; *s && rc == 0; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			rc = buf_append(b, s, 1);
		} else {
			char esc[3] = {'%', hex[c >> 4], hex[c & 15]};

			rc = buf_append(b, esc, 3);
		}
	}
	return rc;
}

int buf_read_file(struct buf *b, const char *path, bool may_block)
{
	size_t start = b->len;
	char chunk[16384];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | (may_block ? 0 : O_NONBLOCK)), rc = 0;

	if (fd < 0)
		return -errno;
	while (rc == 0 && (n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0)
			rc = errno == EINTR ? 0 : -errno;
		else
			rc = buf_append(b, chunk, (size_t)n);
	}
	close(fd);
	if (rc) {
		b->len = start;
		if (b->p)
			b->p[start] = '\0';
	}
	return rc;
}

const char *buf_cstr(const struct buf *b)
{
	return b->p ? b->p : "";
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
	b->p[b->len] = '\0';
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

void buf_release(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
}

char *buf_detach(struct buf *b)
{
	char *p = b->p ? b->p : xstrdup("");

	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}
