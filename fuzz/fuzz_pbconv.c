/*
 * fuzz_pbconv.c - the protobuf rewriter on arbitrary bodies (pbconv.h).
 *
 * Input: a body (seeds: the .pb files of tests/data/pb, real ones). Each is walked whole three
 * times:
 *   - keeping every string: on success the output is the input, byte for byte;
 *   - rewriting every namespace field ("...namespace", "...namespaces[]", a
 *     kubernetes.io/metadata.name label) to "acme-<name>": it succeeds exactly when the first
 *     walk did; its output walks again, with as many namespace fields, each one rewritten, and
 *     every other string as it was;
 *   - walking only metadata: it succeeds when the whole walk did.
 * pb_kind() succeeds on every body pb_rewrite() accepts.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "proxy/pbconv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME_LABEL "{kubernetes.io/metadata.name}"

struct seen {
	bool rewrite;     /* rewrite namespace fields, else keep everything */
	bool check;       /* the output's walk: namespace fields must be rewritten */
	bool refused;     /* a namespace name too long to rewrite */
	unsigned ns;      /* namespace fields seen (non-empty, without NULs) */
	struct buf other; /* every other string, with its path, in order */
	char repl[96];
};

static bool ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), m = strlen(end);

	return n >= m && strcmp(s + n - m, end) == 0;
}

static bool ns_field(const char *path)
{
	return ends_with(path, ".namespace") || strcmp(path, "namespace") == 0 ||
	       ends_with(path, ".namespaces[]") || ends_with(path, NAME_LABEL);
}

static enum pb_verdict leaf(void *ud, const char *path, const char *value, size_t len,
                            const char **repl)
{
	struct seen *s = ud;

	if (strlen(path) >= PB_PATH_MAX || len > PB_BODY_MAX || value[len] != '\0')
		abort();
	if (!ns_field(path) || len == 0 || strlen(value) != len) {
		if (buf_append_str(&s->other, path) < 0 || buf_append(&s->other, "=", 1) < 0 ||
		    buf_append(&s->other, value, len) < 0 || buf_append(&s->other, "\n", 1) < 0)
			abort();
		return PB_KEEP;
	}
	s->ns++;
	if (s->check && strncmp(value, "acme-", 5) != 0)
		abort();
	if (!s->rewrite)
		return PB_KEEP;
	if (len > 63) {
		s->refused = true;
		return PB_REFUSE;
	}
	snprintf(s->repl, sizeof(s->repl), "acme-%s", value);
	*repl = s->repl;
	return PB_REPLACE;
}

static bool only_metadata(void *ud, const char *path)
{
	return strcmp(path, "metadata") == 0;
}

static int walk(const uint8_t *data, size_t size, struct seen *s, bool metadata, struct buf *out)
{
	struct pb_visit v = {.enter = metadata ? only_metadata : NULL, .leaf = leaf, .ud = s};
	char field[128];
	int rc;

	buf_init(&s->other, 64u << 20);
	rc = pb_rewrite((const char *)data, size, &v, out, field, sizeof(field));
	if (rc != 0 && rc != -EINVAL && rc != -ENOENT && rc != -EPERM && rc != -EMSGSIZE)
		abort();
	if ((rc == 0 || rc == -ENOENT) && field[0] != '\0')
		abort(); /* only failures name a field */
	if (rc == -EPERM && field[0] == '\0')
		abort();
	return rc;
}

static void same(const struct buf *a, const uint8_t *p, size_t n)
{
	if (a->len != n || (n && memcmp(a->p, p, n) != 0))
		abort();
}

/* The rewritten body walks again: the same strings, every namespace field rewritten. */
static void walk_again(const struct buf *body, const struct seen *keep)
{
	struct seen again = {.check = true};
	struct buf out = BUF_INIT(16u << 20);

	if (walk((const uint8_t *)body->p, body->len, &again, false, &out) != 0)
		abort();
	if (again.ns != keep->ns || again.other.len != keep->other.len ||
	    memcmp(buf_cstr(&again.other), buf_cstr(&keep->other), keep->other.len) != 0)
		abort();
	buf_release(&out);
	buf_release(&again.other);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen keep = {0}, rw = {.rewrite = true}, meta = {0};
	struct buf out = BUF_INIT(16u << 20), out2 = BUF_INIT(16u << 20),
	           out3 = BUF_INIT(16u << 20);
	struct pb_typemeta t;
	int rc = walk(data, size, &keep, false, &out), rc2;

	if (rc == 0) {
		same(&out, data, size);
		if (pb_kind((const char *)data, size, &t) != 0)
			abort();
	}
	/* the same walk, but for refusals of its own and room for longer names */
	rc2 = walk(data, size, &rw, false, &out2);
	if (rc2 != rc && !(rc2 == -EPERM && rw.refused) && rc2 != -EMSGSIZE)
		abort();
	if (rc2 == 0)
		walk_again(&out2, &keep);
	if (rc == 0 && walk(data, size, &meta, true, &out3) != 0)
		abort();
	buf_release(&out);
	buf_release(&out2);
	buf_release(&out3);
	buf_release(&keep.other);
	buf_release(&rw.other);
	buf_release(&meta.other);
	return 0;
}
