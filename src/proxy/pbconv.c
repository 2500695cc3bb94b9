/* pbconv.c - string fields rewritten in Kubernetes protobuf bodies (pbconv.h). */
#include "proxy/pbconv.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/vec.h"
#include "proxy/pb_descriptors.h"

static const char MAGIC[4] = {'k', '8', 's', '\0'};

enum wire {
	WT_VARINT = 0,
	WT_FIXED64 = 1,
	WT_LEN = 2,
	WT_GROUP_START = 3,
	WT_GROUP_END = 4,
	WT_FIXED32 = 5,
};

/* runtime.Unknown's and runtime.TypeMeta's fields. */
enum {
	UNK_TYPEMETA = 1,
	UNK_RAW = 2,
	UNK_CONTENT_TYPE = 4, /* the last: 3 is contentEncoding */
	TM_API_VERSION = 1,
	TM_KIND = 2,
	ENTRY_KEY = 1,
	ENTRY_VALUE = 2,
};

/* Replace body[off, off + old_len) by arena[at, at + new_len). */
struct edit {
	size_t off, old_len, at, new_len;
};

struct walk {
	const struct pb_visit *v;
	const struct pb_message *object; /* the message of the envelope's kind */
	const unsigned char *body;
	VEC(struct edit) edits; /* by offset: the walk goes forward */
	struct buf arena;       /* the new bytes of the edits */
	struct buf value;       /* a string handed to leaf(), NUL-terminated */
	char path[PB_PATH_MAX];
	size_t plen;
	unsigned depth, max_depth;
	char *field;
	size_t field_size;
	bool failed; /* @field holds the first failure's path */
};

/* A length-delimited field: its length varint at @len_off, its payload [at, at + n). */
struct span {
	size_t len_off, at, n;
};

/* The tag of a field. */
struct tag {
	int32_t num; /* as Go reads it: int32(tag >> 3) */
	unsigned wt;
};

/* A varint as Go's generated code reads it: at most 10 bytes, high bits past 64 dropped. */
static int varint(const unsigned char *b, size_t *at, size_t end, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		unsigned char c;

		if (*at >= end)
			return -EINVAL;
		c = b[(*at)++];
		x |= (uint64_t)(c & 0x7f) << shift;
		if (c < 0x80) {
			*v = x;
			return 0;
		}
	}
	return -EINVAL;
}

static size_t varint_put(unsigned char *out, uint64_t v)
{
	size_t n = 0;

	do {
		out[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		out[n] |= v ? 0x80 : 0;
		n++;
	} while (v);
	return n;
}

static int read_tag(const unsigned char *b, size_t *at, size_t end, struct tag *t)
{
	uint64_t v;
	int rc = varint(b, at, end, &v);

	if (rc < 0)
		return rc;
	t->num = (int32_t)(uint32_t)(v >> 3);
	t->wt = (unsigned)(v & 7);
	return 0;
}

/* The payload of a length-delimited field whose length varint starts at *@at. */
static int read_span(const unsigned char *b, size_t *at, size_t end, struct span *s)
{
	uint64_t n;
	int rc;

	s->len_off = *at;
	rc = varint(b, at, end, &n);
	if (rc < 0 || n > end - *at)
		return -EINVAL;
	s->at = *at;
	s->n = (size_t)n;
	*at += s->n;
	return 0;
}

/* Skip a field's value as Go's skipGenerated() does; groups are refused. */
static int skip(const unsigned char *b, size_t *at, size_t end, unsigned wt)
{
	uint64_t v;
	struct span s;

	switch (wt) {
	case WT_VARINT:
		return varint(b, at, end, &v);
	case WT_FIXED64:
	case WT_FIXED32:
		if ((wt == WT_FIXED64 ? 8u : 4u) > end - *at)
			return -EINVAL;
		*at += wt == WT_FIXED64 ? 8u : 4u;
		return 0;
	case WT_LEN:
		return read_span(b, at, end, &s);
	default: /* groups, and wire types 6 and 7 */
		return -EINVAL;
	}
}

static const struct pb_field *find_field(const struct pb_message *m, int32_t num)
{
	const struct pb_field *f = &pb_fields[m->first];

	for (unsigned i = 0; i < m->nfields && f[i].number <= num; i++) {
		if (f[i].number == num)
			return &f[i];
	}
	return NULL;
}

static int fail(struct walk *w, int rc)
{
	if (!w->failed && w->field && w->field_size)
		snprintf(w->field, w->field_size, "%s", w->path);
	w->failed = true;
	return rc;
}

/* Append @n bytes of @s to the path; the old length in *@saved. */
static int path_add(struct walk *w, const char *s, size_t n, size_t *saved)
{
	*saved = w->plen;
	if (n >= sizeof(w->path) - w->plen)
		return fail(w, -EMSGSIZE);
	memcpy(w->path + w->plen, s, n);
	w->plen += n;
	w->path[w->plen] = '\0';
	return 0;
}

static void path_cut(struct walk *w, size_t saved)
{
	w->plen = saved;
	w->path[saved] = '\0';
}

/* The path of field @f's value: ".name" (no "." at the top), then "[]" if repeated. */
static int path_field(struct walk *w, const struct pb_field *f, size_t *saved)
{
	const char *name = &pb_pool[f->name];
	size_t ignored;
	int rc = 0;

	*saved = w->plen;
	if (!(f->flags & PB_F_INLINE) && w->plen)
		rc = path_add(w, ".", 1, &ignored);
	if (!rc && !(f->flags & PB_F_INLINE))
		rc = path_add(w, name, strlen(name), &ignored);
	if (!rc && (f->flags & PB_F_REPEATED))
		rc = path_add(w, "[]", 2, &ignored);
	return rc;
}

static bool entering(struct walk *w)
{
	return !w->v->enter || w->v->enter(w->v->ud, w->path);
}

/* Bytes for an edit; their offset in the arena in *@at. */
static int arena_add(struct walk *w, const void *p, size_t n, size_t *at)
{
	*at = w->arena.len;
	return buf_append(&w->arena, p, n) < 0 ? fail(w, -EMSGSIZE) : 0;
}

/*
 * After a nested message at @s was walked and became @d bytes longer: its length rewritten in
 * the edit reserved at @slot (or the slot dropped), and *@delta what the field gained.
 */
static int relength(struct walk *w, size_t slot, const struct span *s, long d, long *delta)
{
	unsigned char len[10];
	size_t n, at;
	int rc;

	*delta = 0;
	if (d == 0) {
		if (slot + 1 == w->edits.len)
			w->edits.len--;
		return 0;
	}
	n = varint_put(len, (uint64_t)((long)s->n + d));
	rc = arena_add(w, len, n, &at);
	if (rc < 0)
		return rc;
	w->edits.v[slot] = (struct edit){s->len_off, s->at - s->len_off, at, n};
	*delta = d + (long)n - (long)(s->at - s->len_off);
	return 0;
}

static int walk_message(struct walk *w, const struct pb_message *m, size_t at, size_t end,
                        long *delta);

/* The message @m in the field at @s, walked one level deeper. */
static int nested(struct walk *w, const struct pb_message *m, const struct span *s, long *delta)
{
	size_t slot = w->edits.len;
	long d = 0;
	int rc;

	*delta = 0;
	if (w->depth >= w->max_depth)
		return fail(w, -EINVAL);
	vec_push(&w->edits, ((struct edit){s->len_off, 0, 0, 0}));
	w->depth++;
	rc = walk_message(w, m, s->at, s->at + s->n, &d);
	w->depth--;
	return rc < 0 ? rc : relength(w, slot, s, d, delta);
}

/* The string at @s, through leaf(). */
static int string_leaf(struct walk *w, const struct span *s, long *delta)
{
	const char *repl = NULL;
	enum pb_verdict verdict;
	unsigned char len[10];
	size_t rlen, n, at, ignored;

	*delta = 0;
	if (!w->v->leaf)
		return 0;
	buf_reset(&w->value);
	if (buf_append(&w->value, w->body + s->at, s->n) < 0)
		return fail(w, -EMSGSIZE);
	verdict = w->v->leaf(w->v->ud, w->path, buf_cstr(&w->value), s->n, &repl);
	if (verdict == PB_KEEP)
		return 0;
	if (verdict != PB_REPLACE || !repl)
		return fail(w, -EPERM);
	rlen = strlen(repl);
	if (rlen == s->n && memcmp(repl, w->body + s->at, rlen) == 0)
		return 0;
	n = varint_put(len, rlen);
	if (arena_add(w, len, n, &at) < 0 || arena_add(w, repl, rlen, &ignored) < 0)
		return -EMSGSIZE;
	vec_push(&w->edits, ((struct edit){s->len_off, s->at + s->n - s->len_off, at, n + rlen}));
	*delta = (long)(n + rlen) - (long)(s->at + s->n - s->len_off);
	return 0;
}

/* A map entry's key: the last one given (as Go reads it). Other parts are checked. */
static int entry_key(struct walk *w, const struct span *e, struct span *key)
{
	size_t at = e->at, end = e->at + e->n;
	struct tag t;
	struct span s;
	int rc = 0;

	*key = (struct span){e->at, e->at, 0};
	while (rc == 0 && at < end) {
		rc = read_tag(w->body, &at, end, &t);
		if (rc == 0 && (t.num == ENTRY_KEY || t.num == ENTRY_VALUE)) {
			rc = t.wt == WT_LEN ? read_span(w->body, &at, end, &s) : -EINVAL;
			if (rc == 0 && t.num == ENTRY_KEY)
				*key = s;
		} else if (rc == 0) {
			rc = skip(w->body, &at, end, t.wt);
		}
	}
	if (rc == 0 && memchr(w->body + key->at, '\0', key->n))
		rc = -EINVAL;
	return rc < 0 ? fail(w, rc) : 0;
}

/* The values of map entry @e (of map field @f), with the entry's key on the path. */
static int entry_values(struct walk *w, const struct pb_field *f, const struct span *e, long *delta)
{
	size_t at = e->at, end = e->at + e->n;
	struct tag t;
	struct span s;
	long d;
	int rc = 0;

	*delta = 0;
	while (rc == 0 && at < end) { /* entry_key() checked the entry */
		rc = read_tag(w->body, &at, end, &t);
		if (rc == 0 && t.num != ENTRY_KEY && t.num != ENTRY_VALUE)
			rc = skip(w->body, &at, end, t.wt);
		else if (rc == 0)
			rc = read_span(w->body, &at, end, &s);
		if (rc < 0 || t.num != ENTRY_VALUE)
			continue;
		d = 0;
		if (f->val == PB_STRING)
			rc = string_leaf(w, &s, &d);
		else if (f->val == PB_MESSAGE && entering(w))
			rc = nested(w, &pb_messages[f->msg], &s, &d);
		*delta += d;
	}
	return rc;
}

/* One entry of map field @f, at @e: walked as a message one level deeper. */
static int map_entry(struct walk *w, const struct pb_field *f, const struct span *e, long *delta)
{
	size_t slot = w->edits.len, saved = w->plen, ignored;
	struct span key;
	long d = 0;
	int rc;

	*delta = 0;
	if (w->depth >= w->max_depth)
		return fail(w, -EINVAL);
	rc = entry_key(w, e, &key);
	if (rc == 0)
		rc = path_add(w, "{", 1, &ignored);
	if (rc == 0)
		rc = path_add(w, (const char *)w->body + key.at, key.n, &ignored);
	if (rc == 0)
		rc = path_add(w, "}", 1, &ignored);
	if (rc < 0) {
		path_cut(w, saved);
		return rc;
	}
	vec_push(&w->edits, ((struct edit){e->len_off, 0, 0, 0}));
	w->depth++;
	rc = entry_values(w, f, e, &d);
	w->depth--;
	path_cut(w, saved);
	return rc < 0 ? rc : relength(w, slot, e, d, delta);
}

static bool wire_ok(const struct pb_field *f, unsigned wt)
{
	bool repeated = f->flags & PB_F_REPEATED;

	switch (f->kind) {
	case PB_VARINT:
		return wt == WT_VARINT || (repeated && wt == WT_LEN);
	case PB_FIXED64:
		return wt == WT_FIXED64 || (repeated && wt == WT_LEN);
	case PB_FIXED32:
		return wt == WT_FIXED32 || (repeated && wt == WT_LEN);
	default:
		return wt == WT_LEN;
	}
}

/* The value of known field @f (its tag read) at *@at: walked, or skipped. */
static int walk_field(struct walk *w, const struct pb_field *f, unsigned wt, size_t *at, size_t end,
                      long *delta)
{
	size_t saved;
	struct span s;
	int rc;

	*delta = 0;
	if (f->kind != PB_STRING && f->kind != PB_MESSAGE && f->kind != PB_MAP)
		return skip(w->body, at, end, wt);
	if (read_span(w->body, at, end, &s) < 0)
		return -EINVAL;
	rc = path_field(w, f, &saved);
	if (rc == 0 && f->kind == PB_STRING)
		rc = string_leaf(w, &s, delta);
	else if (rc == 0 && ((f->flags & PB_F_INLINE) || entering(w)))
		rc = f->kind == PB_MAP ? map_entry(w, f, &s, delta)
		                       : nested(w, &pb_messages[f->msg], &s, delta);
	path_cut(w, saved);
	return rc;
}

/* The fields of message @m in body[at, end); *@delta how much longer they became. */
static int walk_message(struct walk *w, const struct pb_message *m, size_t at, size_t end,
                        long *delta)
{
	const struct pb_field *f;
	struct tag t;
	long d;
	int rc = 0;

	*delta = 0;
	while (rc == 0 && at < end) {
		rc = read_tag(w->body, &at, end, &t);
		if (rc == 0 && (t.wt == WT_GROUP_END || t.num <= 0))
			rc = -EINVAL;
		if (rc < 0)
			break;
		f = find_field(m, t.num);
		if (!f) {
			rc = skip(w->body, &at, end, t.wt);
		} else if (!wire_ok(f, t.wt)) {
			rc = -EINVAL;
		} else {
			rc = walk_field(w, f, t.wt, &at, end, &d);
			*delta += d;
		}
	}
	return rc < 0 ? fail(w, rc) : 0;
}

bool pb_is_envelope(const char *body, size_t len)
{
	return body && len >= sizeof(MAGIC) && memcmp(body, MAGIC, sizeof(MAGIC)) == 0;
}

/* A TypeMeta string into @out (@size bytes). */
static int typemeta_part(const unsigned char *b, const struct span *s, char *out, size_t size)
{
	if (s->n >= size || memchr(b + s->at, '\0', s->n))
		return -EINVAL;
	memcpy(out, b + s->at, s->n);
	out[s->n] = '\0';
	return 0;
}

/* A typeMeta field's payload: its parts over those of earlier ones. */
static int typemeta(const unsigned char *b, const struct span *tm, struct pb_typemeta *t)
{
	size_t at = tm->at, end = tm->at + tm->n;
	struct tag tag;
	struct span s;
	int rc = 0;

	while (rc == 0 && at < end) {
		rc = read_tag(b, &at, end, &tag);
		if (rc == 0 && (tag.wt == WT_GROUP_END || tag.num <= 0))
			rc = -EINVAL;
		else if (rc == 0 && tag.num == TM_API_VERSION)
			rc = tag.wt != WT_LEN || read_span(b, &at, end, &s) < 0
			             ? -EINVAL
			             : typemeta_part(b, &s, t->api_version, sizeof(t->api_version));
		else if (rc == 0 && tag.num == TM_KIND)
			rc = tag.wt != WT_LEN || read_span(b, &at, end, &s) < 0
			             ? -EINVAL
			             : typemeta_part(b, &s, t->kind, sizeof(t->kind));
		else if (rc == 0)
			rc = skip(b, &at, end, tag.wt);
	}
	return rc;
}

/*
 * The fields of the envelope's runtime.Unknown: each typeMeta read into @t, each raw given
 * to @raw (when not NULL). Its other fields are strings or unknown, and skipped.
 */
static int envelope(const unsigned char *b, size_t len, struct pb_typemeta *t,
                    int (*raw)(struct walk *w, const struct span *s), struct walk *w)
{
	size_t at = sizeof(MAGIC);
	struct tag tag;
	struct span s;
	int rc = 0;

	while (rc == 0 && at < len) {
		rc = read_tag(b, &at, len, &tag);
		if (rc == 0 && (tag.wt == WT_GROUP_END || tag.num <= 0))
			rc = -EINVAL;
		else if (rc == 0 && tag.num >= UNK_TYPEMETA && tag.num <= UNK_CONTENT_TYPE)
			rc = tag.wt != WT_LEN || read_span(b, &at, len, &s) < 0 ? -EINVAL : 0;
		else if (rc == 0)
			rc = skip(b, &at, len, tag.wt);
		if (rc == 0 && tag.num == UNK_TYPEMETA)
			rc = typemeta(b, &s, t);
		else if (rc == 0 && tag.num == UNK_RAW && raw)
			rc = raw(w, &s);
	}
	return rc;
}

int pb_kind(const char *body, size_t len, struct pb_typemeta *t)
{
	memset(t, 0, sizeof(*t));
	if (len > PB_BODY_MAX)
		return -EMSGSIZE;
	if (!pb_is_envelope(body, len) || len == sizeof(MAGIC)) /* Go: "empty body" */
		return -EINVAL;
	return envelope((const unsigned char *)body, len, t, NULL, NULL);
}

static const struct pb_gvk *find_gvk(const char *api_version, const char *kind)
{
	size_t lo = 0, hi = pb_gvks_len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pb_gvk *g = &pb_gvks[mid];
		int c = strcmp(&pb_pool[g->api_version], api_version);

		if (c == 0)
			c = strcmp(&pb_pool[g->kind], kind);
		if (c == 0)
			return g;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int pb_message_name(const char *api_version, const char *kind, char *out, size_t size)
{
	const struct pb_gvk *g = find_gvk(api_version, kind);
	const struct pb_message *m;
	int n;

	if (!g)
		return -ENOENT;
	m = &pb_messages[g->msg];
	n = snprintf(out, size, "%s.%s", &pb_pool[pb_packages[m->package]], &pb_pool[m->name]);
	return n < 0 || (size_t)n >= size ? -EMSGSIZE : 0;
}

/* A raw field: the object, walked as the kind's message. */
static int raw_object(struct walk *w, const struct span *s)
{
	long ignored;

	return nested(w, w->object, s, &ignored);
}

static int apply(const struct walk *w, size_t len, struct buf *out)
{
	size_t prev = 0;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < w->edits.len; i++) {
		const struct edit *e = &w->edits.v[i];

		rc = buf_append(out, w->body + prev, e->off - prev);
		if (rc == 0 && e->new_len)
			rc = buf_append(out, w->arena.p + e->at, e->new_len);
		prev = e->off + e->old_len;
	}
	if (rc == 0)
		rc = buf_append(out, w->body + prev, len - prev);
	return rc < 0 ? -EMSGSIZE : 0;
}

int pb_rewrite(const char *body, size_t len, const struct pb_visit *v, struct buf *out, char *field,
               size_t field_size)
{
	struct walk w = {.v = v,
	                 .body = (const unsigned char *)body,
	                 .field = field,
	                 .field_size = field_size};
	struct pb_typemeta t;
	const struct pb_gvk *g;
	int rc;

	if (field && field_size)
		field[0] = '\0';
	rc = pb_kind(body, len, &t);
	if (rc < 0)
		return rc;
	g = find_gvk(t.api_version, t.kind);
	if (!g)
		return -ENOENT;
	w.object = &pb_messages[g->msg];
	w.max_depth = v->max_depth && v->max_depth < PB_DEPTH_MAX ? v->max_depth : PB_DEPTH_MAX;
	buf_init(&w.arena, 2 * (size_t)PB_BODY_MAX);
	buf_init(&w.value, (size_t)PB_BODY_MAX + 1);
	rc = envelope(w.body, len, &t, raw_object, &w);
	if (rc == 0)
		rc = apply(&w, len, out);
	buf_release(&w.arena);
	buf_release(&w.value);
	vec_release(&w.edits);
	return rc;
}
