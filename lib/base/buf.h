/*
 * buf.h - growable byte buffer with a hard cap.
 *
 * Invariants: @p is either NULL (nothing appended yet) or NUL-terminated at p[len]; len < cap;
 * len never exceeds @max. Appending past @max fails with -EMSGSIZE and leaves the buffer as it
 * was, so a peer that sends too much gets a defined error, never unbounded growth.
 * Lifecycle: struct buf b = BUF_INIT(max); ... buf_release(&b);  buf_detach() hands the string
 * to the caller (free() it) and resets the buffer.
 */
#ifndef LANDLORD_BUF_H
#define LANDLORD_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct buf {
	char *p;
	size_t len;
	size_t cap;
	size_t max;
};

#define BUF_INIT(max_bytes)             \
	{                               \
		NULL, 0, 0, (max_bytes) \
	}
/* A cap for buffers built from our own data (paths, bodies we generate). */
#define BUF_MAX_INTERNAL (64u << 20)

void buf_init(struct buf *b, size_t max);
/** buf_append() - append @n bytes. Return: 0, or -EMSGSIZE when the cap would be exceeded. */
int buf_append(struct buf *b, const void *data, size_t n);
int buf_append_str(struct buf *b, const char *s);
int buf_appendf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vappendf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/** buf_append_urlencoded() - append @s percent-encoded for a URL path segment or query value. */
int buf_append_urlencoded(struct buf *b, const char *s);
/**
 * buf_read_file() - append the contents of the file at @path.
 * @may_block: true for a path the operator gave (it may be a pipe, e.g. --kubeconfig <(...));
 *             false for paths found inside configuration, so that one naming a FIFO or a
 *             terminal fails with -EAGAIN instead of hanging.
 * Return: 0, -errno from open/read, or -EMSGSIZE when the file does not fit under the cap. On
 * error the buffer is left as it was.
 */
int buf_read_file(struct buf *b, const char *path, bool may_block);
/** buf_cstr() - the contents as a C string; "" when empty. Borrowed until the next change. */
const char *buf_cstr(const struct buf *b);
/** buf_consume() - drop the first @n bytes (n <= len). */
void buf_consume(struct buf *b, size_t n);
void buf_reset(struct buf *b);
void buf_release(struct buf *b);
/** buf_detach() - hand the contents to the caller (never NULL; free() it); resets @b. */
char *buf_detach(struct buf *b);

#endif
