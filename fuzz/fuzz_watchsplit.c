/*
 * fuzz_watchsplit.c - the watch line splitter and event parser on arbitrary streams.
 *
 * Input: byte 0 picks the line cap, byte 1 seeds the chunking; the rest is the stream. The stream
 * is split once in a single feed and once in varying chunks with callbacks that sometimes stop
 * the feed; both must yield the same lines and the same verdict.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "kube/watchsplit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct lines {
	struct buf all;
	unsigned n;
	unsigned stop_every; /* 0: never stop */
};

static int on_line(const char *line, size_t len, void *ud)
{
	struct lines *l = ud;
	enum watch_event_type type;
	json_t *obj = NULL;

	if (len == 0 || memchr(line, '\n', len))
		abort();
	if (watch_event_parse(line, len, &type, &obj, NULL) == 0) {
		if (obj == NULL || type > WATCH_ERROR)
			abort();
		json_decref(obj);
	} else if (obj != NULL) {
		abort();
	}
	if (buf_append(&l->all, line, len) || buf_append(&l->all, "\n", 1))
		abort();
	l->n++;
	return l->stop_every && l->n % l->stop_every == 0 ? 1 : 0;
}

/* Feed all of the stream in chunks, then drain what stops left behind. */
static int chunked(const uint8_t *p, size_t size, size_t max, uint8_t seed, struct lines *l)
{
	struct watchsplit ws;
	size_t off = 0;
	int rc = 0;

	watchsplit_init(&ws, max);
	while (off < size && (rc == 0 || rc == 1)) {
		size_t n = 1 + (seed + off * 7) % 23;

		if (n > size - off)
			n = size - off;
		rc = watchsplit_feed(&ws, (const char *)p + off, n, on_line, l);
		off += n;
	}
	while (rc == 1)
		rc = watchsplit_feed(&ws, NULL, 0, on_line, l);
	if (rc == 0 && watchsplit_pending(&ws) > max)
		abort();
	watchsplit_release(&ws);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lines a = {.all = BUF_INIT(1u << 26)}, b = {.all = BUF_INIT(1u << 26)};
	struct watchsplit ws;
	size_t max;
	uint8_t seed;
	int ra, rb;

	if (size < 2)
		return 0;
	max = 1 + (size_t)data[0] * 4;
	seed = data[1];
	data += 2;
	size -= 2;

	watchsplit_init(&ws, max);
	ra = watchsplit_feed(&ws, (const char *)data, size, on_line, &a);
	watchsplit_release(&ws);

	b.stop_every = 1 + seed % 4;
	rb = chunked(data, size, max, seed, &b);
	if (ra != rb || (ra == 0 && (a.all.len != b.all.len ||
	                             memcmp(buf_cstr(&a.all), buf_cstr(&b.all), a.all.len) != 0)))
		abort();
	buf_release(&a.all);
	buf_release(&b.all);
	return 0;
}
