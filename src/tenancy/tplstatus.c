/* tplstatus.c - the bounded status of an instance (see tplstatus.h). */
#include "tenancy/tplstatus.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* A row as kept: counts clamped to int32, the namespace cut to its bound. */
struct srow {
	char ns[TPL_NAMESPACE_MAX + 1];
	bool ready;
	int32_t applied, rendered;
	int32_t work[3][2]; /* deployments, statefulSets, daemonSets: ready, desired */
	int32_t pods[5];    /* pending, running, succeeded, failed, unknown */
	uint8_t release, release_status, chart_version; /* interned (struct tpl_status), 0: none */
	int32_t revision;
};

struct sfail {
	char ns[TPL_NAMESPACE_MAX + 1];
	char object[TPL_OBJECT_MAX + 1];
	char reason[TPL_REASON_MAX + 1];
	char message[TPL_MESSAGE_MAX + 1];
};

/* A max-heap of at most @cap elements of @elem bytes: the top is the last in @cmp's order. */
struct heap {
	char *v;
	size_t len, alloc, cap, elem;
	int (*cmp)(const void *a, const void *b);
};

/* Strings rows share (release names, Helm statuses, chart versions: a few per instance). */
#define INTERNED_MAX 32

struct tpl_status {
	struct heap rows, failing;
	size_t matched, ready, failures;
	char interned[INTERNED_MAX][TPL_VERSION_MAX + 1]; /* [0] is "" */
	size_t n_interned;
};

static const char *const WORK_KEYS[3] = {"deployments", "statefulSets", "daemonSets"};
static const char *const PHASE_KEYS[5] = {"pending", "running", "succeeded", "failed", "unknown"};

/* ===== strings ===== */

/* The length of the valid UTF-8 sequence at @s (NUL-terminated), or 0. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0; /* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f; /* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90; /* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f; /* beyond U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/*
 * @src (NULL: "") into @dst (@max + 1 bytes), valid UTF-8 (other bytes become '?'): whole when
 * it fits in @max bytes, else cut on a character boundary and ended with "..." in @max bytes.
 */
void tpl_clip(char *dst, size_t max, const char *src)
{
	const unsigned char *s = (const unsigned char *)(src != NULL ? src : "");
	size_t out = 0, cut = 0;

	while (*s != '\0') {
		size_t n = utf8_seq(s);

		if (out + (n > 0 ? n : 1) > max) {
			memcpy(dst + cut, "...", 3);
			dst[cut + 3] = '\0';
			return;
		}
		if (n == 0)
			dst[out++] = '?', s++;
		else
			memcpy(dst + out, s, n), out += n, s += n;
		if (out <= max - 3)
			cut = out;
	}
	dst[out] = '\0';
}

static int32_t clamp(long long c)
{
	return c < 0 ? 0 : c > INT32_MAX ? INT32_MAX : (int32_t)c;
}

/* ===== the bounded heaps ===== */

static void *at(const struct heap *h, size_t i)
{
	return h->v + i * h->elem;
}

static void swap(const struct heap *h, size_t i, size_t j)
{
	char *a = at(h, i), *b = at(h, j);

	for (size_t k = 0; k < h->elem; k++) {
		char t = a[k];

		a[k] = b[k];
		b[k] = t;
	}
}

static void sift_up(struct heap *h, size_t i)
{
	while (i > 0 && h->cmp(at(h, (i - 1) / 2), at(h, i)) < 0) {
		swap(h, (i - 1) / 2, i);
		i = (i - 1) / 2;
	}
}

static void sift_down(struct heap *h, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, big = i;

		if (l < h->len && h->cmp(at(h, l), at(h, big)) > 0)
			big = l;
		if (r < h->len && h->cmp(at(h, r), at(h, big)) > 0)
			big = r;
		if (big == i)
			return;
		swap(h, i, big);
		i = big;
	}
}

/* Keep @item when it is among the first @h->cap in order; otherwise it or the last is dropped. */
static void offer(struct heap *h, const void *item)
{
	if (h->len < h->cap) {
		if (h->len == h->alloc) {
			h->alloc = h->alloc == 0 ? 16 : h->alloc * 2;
			if (h->alloc > h->cap)
				h->alloc = h->cap;
			h->v = xreallocarray(h->v, h->alloc, h->elem);
		}
		memcpy(at(h, h->len++), item, h->elem);
		sift_up(h, h->len - 1);
	} else if (h->cap > 0 && h->cmp(item, at(h, 0)) < 0) {
		memcpy(at(h, 0), item, h->elem);
		sift_down(h, 0);
	}
}

/* The kept elements in order: a sorted copy (caller frees; never NULL). */
static char *sorted(const struct heap *h)
{
	char *copy = xmalloc(h->len * h->elem);

	if (h->len > 0)
		memcpy(copy, h->v, h->len * h->elem);
	qsort(copy, h->len, h->elem, h->cmp);
	return copy;
}

/* ===== the builder ===== */

/* Not ready first, then by namespace. */
static int row_cmp(const void *a, const void *b)
{
	const struct srow *x = a, *y = b;

	int c;

	if (x->ready != y->ready)
		return x->ready ? 1 : -1;
	c = strcmp(x->ns, y->ns);
	/* a namespace given twice: the order still does not depend on the calls' */
	return c != 0 ? c : memcmp(x, y, sizeof(*x));
}

static int fail_cmp(const void *a, const void *b)
{
	const struct sfail *x = a, *y = b;
	int c = strcmp(x->ns, y->ns);

	if (c == 0)
		c = strcmp(x->object, y->object);
	if (c == 0)
		c = strcmp(x->reason, y->reason);
	return c != 0 ? c : strcmp(x->message, y->message);
}

struct tpl_status *tpl_status_new(void)
{
	struct tpl_status *s = xcalloc(1, sizeof(*s));

	s->n_interned = 1; /* [0]: "" */
	s->rows = (struct heap){.cap = TPL_ROWS_MAX, .elem = sizeof(struct srow), .cmp = row_cmp};
	s->failing = (struct heap){
	        .cap = TPL_FAILING_MAX, .elem = sizeof(struct sfail), .cmp = fail_cmp};
	return s;
}

void tpl_status_free(struct tpl_status *s)
{
	if (s == NULL)
		return;
	free(s->rows.v);
	free(s->failing.v);
	free(s);
}

/* @str clipped to @max bytes, interned: its index, or 0 ("") when NULL, empty or no room. */
static uint8_t intern(struct tpl_status *s, const char *str, size_t max)
{
	char clipped[TPL_VERSION_MAX + 1];
	size_t i;

	if (str == NULL || *str == '\0')
		return 0;
	tpl_clip(clipped, max, str);
	for (i = 1; i < s->n_interned; i++)
		if (strcmp(s->interned[i], clipped) == 0)
			return (uint8_t)i;
	if (s->n_interned == INTERNED_MAX)
		return 0;
	memcpy(s->interned[i], clipped, sizeof(clipped));
	s->n_interned++;
	return (uint8_t)i;
}

void tpl_status_row(struct tpl_status *s, const struct tpl_row *row)
{
	const struct tpl_ready_desired *work[3] = {&row->deployments, &row->stateful_sets,
	                                           &row->daemon_sets};
	const long long pods[5] = {row->pods.pending, row->pods.running, row->pods.succeeded,
	                           row->pods.failed, row->pods.unknown};
	struct srow r;

	memset(&r, 0, sizeof(r));
	tpl_clip(r.ns, TPL_NAMESPACE_MAX, row->ns);
	r.ready = row->ready;
	r.release = intern(s, row->release, TPL_RELEASE_MAX);
	r.release_status = intern(s, row->release_status, TPL_REASON_MAX);
	r.chart_version = intern(s, row->chart_version, TPL_VERSION_MAX);
	r.revision = clamp(row->revision);
	r.applied = clamp(row->applied);
	r.rendered = clamp(row->rendered);
	for (size_t k = 0; k < 3; k++) {
		r.work[k][0] = clamp(work[k]->ready);
		r.work[k][1] = clamp(work[k]->desired);
	}
	for (size_t k = 0; k < 5; k++)
		r.pods[k] = clamp(pods[k]);
	s->matched++;
	s->ready += row->ready;
	offer(&s->rows, &r);
}

void tpl_status_failing(struct tpl_status *s, const char *ns, const char *object,
                        const char *reason, const char *message)
{
	struct sfail f;

	memset(&f, 0, sizeof(f));
	tpl_clip(f.ns, TPL_NAMESPACE_MAX, ns);
	tpl_clip(f.object, TPL_OBJECT_MAX, object);
	tpl_clip(f.reason, TPL_REASON_MAX, reason);
	tpl_clip(f.message, TPL_MESSAGE_MAX, message);
	s->failures++;
	offer(&s->failing, &f);
}

/* ===== the JSON ===== */

static json_t *release_json(const struct tpl_status *s, const struct srow *r)
{
	json_t *o = json_pack("{s:s}", "name", s->interned[r->release]);

	if (r->release_status != 0)
		json_object_set_new(o, "status", json_string(s->interned[r->release_status]));
	if (r->revision > 0)
		json_object_set_new(o, "revision", json_integer(r->revision));
	if (r->chart_version != 0)
		json_object_set_new(o, "chartVersion", json_string(s->interned[r->chart_version]));
	return o;
}

static json_t *row_json(const struct tpl_status *s, const struct srow *r)
{
	json_t *o = json_pack("{s:s, s:b, s:i, s:i}", "namespace", r->ns, "ready", r->ready,
	                      "applied", (int)r->applied, "rendered", (int)r->rendered);
	json_t *pods = json_object();

	for (size_t k = 0; k < 3; k++)
		if (r->work[k][0] != 0 || r->work[k][1] != 0)
			json_object_set_new(o, WORK_KEYS[k],
			                    json_pack("{s:i, s:i}", "ready", (int)r->work[k][0],
			                              "desired", (int)r->work[k][1]));
	for (size_t k = 0; k < 5; k++)
		if (r->pods[k] != 0)
			json_object_set_new(pods, PHASE_KEYS[k], json_integer(r->pods[k]));
	if (json_object_size(pods) > 0)
		json_object_set(o, "pods", pods);
	json_decref(pods);
	if (r->release != 0)
		json_object_set_new(o, "release", release_json(s, r));
	return o;
}

/* The kept rows in order, as many as fit in @budget bytes of compact JSON. */
static json_t *rows_json(const struct tpl_status *s, size_t budget)
{
	const struct srow *rows = (const struct srow *)sorted(&s->rows);
	json_t *list = json_array();
	size_t bytes = 2; /* [] */

	for (size_t i = 0; i < s->rows.len; i++) {
		json_t *row = row_json(s, &rows[i]);
		size_t n = json_dumpb(row, NULL, 0, JSON_COMPACT) + (i > 0);

		if (bytes + n > budget) {
			json_decref(row);
			break;
		}
		bytes += n;
		json_array_append_new(list, row);
	}
	free((void *)rows);
	return list;
}

static json_t *failing_json(const struct tpl_status *s)
{
	const struct sfail *fails = (const struct sfail *)sorted(&s->failing);
	json_t *list = json_array();

	for (size_t i = 0; i < s->failing.len; i++)
		json_array_append_new(list,
		                      json_pack("{s:s, s:s, s:s, s:s}", "namespace", fails[i].ns,
		                                "object", fails[i].object, "reason",
		                                fails[i].reason, "message", fails[i].message));
	free((void *)fails);
	return list;
}

static json_int_t count(size_t n)
{
	return n > INT32_MAX ? INT32_MAX : (json_int_t)n;
}

/* Bytes of the status but its rows' elements: keys, counts of 10 digits, brackets. */
#define FRAME_BYTES 160

json_t *tpl_status_json(const struct tpl_status *s)
{
	json_t *failing = failing_json(s);
	size_t failing_bytes = json_dumpb(failing, NULL, 0, JSON_COMPACT);
	/* 20 entries of at most 6 * 703 bytes escaped (84 KiB) always fit */
	json_t *rows = rows_json(s, TPL_STATUS_BYTES_MAX - FRAME_BYTES - failing_bytes);

	return json_pack("{s:o, s:I, s:o, s:I, s:{s:I, s:I}}", "rows", rows, "rowsOmitted",
	                 count(s->matched - json_array_size(rows)), "failing", failing,
	                 "failingOmitted", count(s->failures - json_array_size(failing)),
	                 "namespaces", "matched", count(s->matched), "ready", count(s->ready));
}

size_t tpl_status_bytes(const struct tpl_status *s)
{
	return sizeof(*s) + 16 + s->rows.alloc * s->rows.elem + s->failing.alloc * s->failing.elem +
	       (s->rows.alloc > 0 ? 16 : 0) + (s->failing.alloc > 0 ? 16 : 0);
}
