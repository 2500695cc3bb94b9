/* jdoc.c - building immutable one-allocation JSON documents (see jdoc.h, jdoc_impl.h). */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "base/err.h"
#include "base/jdoc.h"
#include "base/jdoc_impl.h"
#include "base/mem.h"
#include "base/vec.h"

#define BYTES_MAX    ((size_t)LEN_MAX)
#define PATH_MAX_LEN 256

/* ---- building ---------------------------------------------------------------------------- */

/* What happens to the next value: kept whole, skipped, or its members checked against the
 * projection paths, inside a kept path (PJ_IN) or only on the way to one (PJ_OUT). */
enum mode { PJ_KEEP, PJ_SKIP, PJ_IN, PJ_OUT };

struct level {
	uint32_t start; /* first child in scratch */
	uint16_t pathlen;
	uint8_t is_obj;
	uint8_t mode;
};

struct build {
	VEC(struct jnode) out;     /* finished container blocks */
	VEC(struct jnode) scratch; /* children of the open containers */
	VEC(char) pool;
	const char *const *keep;
	const char *const *drop;
	const char *const *defaults; /* root string members: key, value, ..., NULL */
	size_t max_bytes;
	unsigned max_depth;
	unsigned depth;  /* open containers, skipped ones included */
	unsigned nlv;    /* open containers kept */
	unsigned skip;   /* open containers inside a skipped value */
	uint8_t pending; /* mode of the next value in an object (set by its key) */
	uint8_t root_mode;
	int rc;
	char why[96];
	uint16_t cand_len; /* path length of the value that follows a key */
	yajl_handle h;     /* NULL when building from jansson */
	bool finishing;    /* in yajl_complete_parse(): the input has ended */
	size_t end_off;    /* where the top-level value ended in the input */
	char path[PATH_MAX_LEN];
	struct level lv[JDOC_MAX_DEPTH];
};

static int fail(struct build *b, int rc, const char *why)
{
	if (b->rc == 0) {
		b->rc = rc;
		snprintf(b->why, sizeof(b->why), "%s", why);
	}
	return 0;
}

/* Room for @nodes more nodes and @bytes more pool bytes within the cap. */
static bool room(struct build *b, size_t nodes, size_t bytes)
{
	size_t total =
	        (b->out.len + b->scratch.len + nodes) * sizeof(struct jnode) + b->pool.len + bytes;

	if (total <= b->max_bytes)
		return true;
	fail(b, -EMSGSIZE, "document larger than its size limit");
	return false;
}

/* Mode of the value about to start; pops its key when the value turns out not to be kept. */
static enum mode value_mode(struct build *b, bool is_obj)
{
	enum mode m;

	if (b->nlv == 0)
		return is_obj ? (enum mode)b->root_mode
		              : PJ_KEEP; /* projections apply to objects */
	if (!b->lv[b->nlv - 1].is_obj)
		return PJ_KEEP;
	m = (enum mode)b->pending;
	if (m == PJ_OUT && !is_obj) {
		b->scratch.len--; /* its key: a path to keep goes through here, not a scalar */
		return PJ_SKIP;
	}
	if (m == PJ_IN && !is_obj)
		return PJ_KEEP; /* drop paths do not reach into arrays */
	return m;
}

/*
 * yajl accepts an unterminated string after the top-level value ("1 \"x"), so remember where
 * that value ended and check the rest ourselves. During yajl_complete_parse() the offset is
 * into yajl's own padding: the value ended with the input.
 */
static void mark_end(struct build *b)
{
	if (b->depth == 0 && b->h)
		b->end_off = b->finishing ? SIZE_MAX : yajl_get_bytes_consumed(b->h);
}

/* The scalar about to come is not kept: spare its pool bytes. */
static bool skipping(const struct build *b)
{
	if (b->skip)
		return true;
	if (b->nlv == 0 || !b->lv[b->nlv - 1].is_obj)
		return false;
	return b->pending == PJ_SKIP || b->pending == PJ_OUT;
}

static int add_value(struct build *b, struct jnode n)
{
	if (b->skip || value_mode(b, false) == PJ_SKIP)
		return 1;
	if (!room(b, 1, 0))
		return 0;
	vec_push(&b->scratch, n);
	mark_end(b);
	return 1;
}

static bool add_bytes(struct build *b, uint32_t *off, const void *s, size_t len, bool nul)
{
	if (len > LEN_MAX || !room(b, 0, len + nul))
		return len > LEN_MAX ? fail(b, -EMSGSIZE, "string too long") : false;
	*off = (uint32_t)b->pool.len;
	vec_reserve(&b->pool, b->pool.len + len + nul);
	if (len)
		memcpy(b->pool.v + b->pool.len, s, len);
	b->pool.len += len;
	if (nul)
		b->pool.v[b->pool.len++] = '\0';
	return true;
}

static bool str_node(struct build *b, const char *s, size_t len, struct jnode *n)
{
	int t = jdoc__table_find(s, len);

	if (t >= 0) {
		*n = (struct jnode){MKNODE(N_TSTR, 0), (uint32_t)t};
		return true;
	}
	*n = (struct jnode){MKNODE(N_STR, len), 0};
	return add_bytes(b, &n->b, s, len, true);
}

static int cb_null(void *ctx)
{
	return add_value(ctx, (struct jnode){MKNODE(N_NULL, 0), 0});
}

static int cb_bool(void *ctx, int v)
{
	return add_value(ctx, (struct jnode){MKNODE(v ? N_TRUE : N_FALSE, 0), 0});
}

static int add_int(struct build *b, long long v)
{
	struct jnode n = {MKNODE(N_INT32, 0), (uint32_t)(int32_t)v};
	int64_t w = v;

	if ((v >= INT32_MIN && v <= INT32_MAX) || skipping(b))
		return add_value(b, n);
	n.a = MKNODE(N_INT64, 0);
	return add_bytes(b, &n.b, &w, sizeof(w), false) ? add_value(b, n) : 0;
}

static int add_real(struct build *b, double v)
{
	struct jnode n = {MKNODE(N_REAL, 0), 0};

	if (v != v || v - v != 0)
		return fail(b, -EINVAL, "number is not finite");
	if (skipping(b))
		return add_value(b, n);
	return add_bytes(b, &n.b, &v, sizeof(v), false) ? add_value(b, n) : 0;
}

/*
 * yajl has checked the number's syntax; converting it here (rather than in yajl's integer
 * callback) accepts -9223372036854775808 and refuses what does not fit, as jansson does.
 */
static int cb_number(void *ctx, const char *s, size_t len)
{
	char small[64], *text = len < sizeof(small) ? small : xstrndup(s, len);
	bool real = memchr(s, '.', len) || memchr(s, 'e', len) || memchr(s, 'E', len);
	char *end;
	int rc;

	if (text == small) {
		memcpy(small, s, len);
		small[len] = '\0';
	}
	errno = 0;
	if (real) {
		double d = strtod(text, &end);

		rc = errno == ERANGE && (d > 1 || d < -1)
		             ? fail(ctx, -EINVAL, "real number overflow")
		             : add_real(ctx, d);
	} else {
		long long v = strtoll(text, &end, 10);

		rc = errno == ERANGE ? fail(ctx, -EINVAL, "integer overflow") : add_int(ctx, v);
	}
	if (text != small)
		free(text);
	return rc;
}

static int cb_string(void *ctx, const unsigned char *s, size_t len)
{
	struct build *b = ctx;
	struct jnode n;

	if (skipping(b))
		return add_value(b, (struct jnode){MKNODE(N_NULL, 0), 0});
	return str_node(b, (const char *)s, len, &n) ? add_value(b, n) : 0;
}

/*
 * @prefix is a whole-segment prefix of (or equal to) @path; a @prefix ending in '*' is a prefix
 * of the last segment's text ("metadata.labels.app*").
 */
static bool path_within(const char *path, size_t len, const char *prefix)
{
	size_t plen = strlen(prefix);

	if (plen > 0 && prefix[plen - 1] == '*')
		return plen - 1 <= len && memcmp(path, prefix, plen - 1) == 0;
	return plen <= len && memcmp(path, prefix, plen) == 0 && (plen == len || path[plen] == '.');
}

static bool any_within(const char *const *list, const char *path, size_t len)
{
	for (; list && *list; list++)
		if (path_within(path, len, *list))
			return true;
	return false;
}

/* Some path of @list lies strictly below @path. */
static bool any_below(const char *const *list, const char *path, size_t len)
{
	for (; list && *list; list++)
		if (strlen(*list) > len && memcmp(*list, path, len) == 0 && (*list)[len] == '.')
			return true;
	return false;
}

/* The mode of the member at b->path[0..len), in an object whose mode is @parent. */
static enum mode decide(const struct build *b, size_t len, enum mode parent)
{
	bool inside = parent == PJ_IN || !b->keep || any_within(b->keep, b->path, len);

	if (any_within(b->drop, b->path, len))
		return PJ_SKIP;
	if (inside)
		return any_below(b->drop, b->path, len) ? PJ_IN : PJ_KEEP;
	return any_below(b->keep, b->path, len) ? PJ_OUT : PJ_SKIP;
}

static enum mode key_mode(struct build *b, const char *key, size_t len)
{
	const struct level *l = &b->lv[b->nlv - 1];
	bool top = b->nlv == 1; /* the root's members have no separator before them */
	size_t at = top ? 0 : l->pathlen + 1u;

	if (l->mode == PJ_KEEP)
		return PJ_KEEP;
	if (at + len >= PATH_MAX_LEN || memchr(key, '\0', len))
		return l->mode == PJ_IN ? PJ_KEEP : PJ_SKIP; /* no configured path is that long */
	if (!top)
		b->path[l->pathlen] = '.';
	memcpy(b->path + at, key, len);
	b->cand_len = (uint16_t)(at + len);
	return decide(b, at + len, (enum mode)l->mode);
}

static int cb_key(void *ctx, const unsigned char *key, size_t len)
{
	struct build *b = ctx;
	struct jnode n;

	if (b->skip)
		return 1;
	b->pending = (uint8_t)key_mode(b, (const char *)key, len);
	if (b->pending == PJ_SKIP)
		return 1;
	if (!str_node(b, (const char *)key, len, &n) || !room(b, 1, 0))
		return 0;
	vec_push(&b->scratch, n);
	return 1;
}

static int start(struct build *b, bool is_obj)
{
	struct level l;
	enum mode m;

	if (b->depth >= b->max_depth)
		return fail(b, -EINVAL, "nested deeper than the depth limit");
	b->depth++;
	if (b->skip) {
		b->skip++;
		return 1;
	}
	m = value_mode(b, is_obj);
	if (m == PJ_SKIP) {
		b->skip = 1;
		return 1;
	}
	l = (struct level){
	        .start = (uint32_t)b->scratch.len,
	        .pathlen = m == PJ_KEEP || b->nlv == 0 ? 0 : b->cand_len,
	        .is_obj = is_obj,
	        .mode = (uint8_t)(is_obj ? m : PJ_KEEP),
	};
	b->lv[b->nlv++] = l;
	return 1;
}

static int cb_start_map(void *ctx)
{
	return start(ctx, true);
}

static int cb_start_array(void *ctx)
{
	return start(ctx, false);
}

static int pair_cmp(const void *x, const void *y, void *pool)
{
	const struct jnode *a = x, *b = y;
	size_t alen, blen;
	const char *as = jdoc__node_str(pool, *a, &alen), *bs = jdoc__node_str(pool, *b, &blen);

	return jdoc__bytes_cmp(as, alen, bs, blen);
}

/* Sort the members of an object by key; false on a duplicate key. */
static bool sort_members(struct build *b, struct jnode *m, size_t count)
{
	bool sorted = true;

	for (size_t i = 1; i < count && sorted; i++)
		sorted = pair_cmp(&m[2 * (i - 1)], &m[2 * i], b->pool.v) < 0;
	if (sorted)
		return true;
	qsort_r(m, count, 2 * sizeof(*m), pair_cmp, b->pool.v);
	for (size_t i = 1; i < count; i++)
		if (pair_cmp(&m[2 * (i - 1)], &m[2 * i], b->pool.v) == 0)
			return false;
	return true;
}

/* Does the object whose members start at scratch[@start] have the member @key? */
static bool has_member(const struct build *b, size_t start, const char *key, size_t len)
{
	for (size_t i = start; i + 1 < b->scratch.len; i += 2) {
		size_t klen;
		const char *k = jdoc__node_str(b->pool.v, b->scratch.v[i], &klen);

		if (jdoc__bytes_cmp(k, klen, key, len) == 0)
			return true;
	}
	return false;
}

/* The root object gets the default members it lacks, where the projection keeps them. */
static bool add_defaults(struct build *b, size_t start)
{
	for (const char *const *d = b->defaults; d && d[0] && d[1]; d += 2) {
		size_t len = strlen(d[0]);
		struct jnode k, v;
		enum mode m;

		if (len == 0 || len >= PATH_MAX_LEN || has_member(b, start, d[0], len))
			continue;
		memcpy(b->path, d[0], len);
		m = decide(b, len, (enum mode)b->root_mode);
		if (m == PJ_SKIP || m == PJ_OUT)
			continue;
		if (!str_node(b, d[0], len, &k) || !str_node(b, d[1], strlen(d[1]), &v) ||
		    !room(b, 2, 0))
			return false;
		vec_push(&b->scratch, k);
		vec_push(&b->scratch, v);
	}
	return true;
}

static int end(struct build *b)
{
	struct level l;
	struct jnode *kids, n;
	size_t count, first = b->out.len;

	b->depth--;
	if (b->skip) {
		b->skip--;
		return 1;
	}
	l = b->lv[--b->nlv];
	if (b->nlv == 0 && l.is_obj && b->defaults && !add_defaults(b, l.start))
		return 0;
	kids = b->scratch.len > l.start ? b->scratch.v + l.start : NULL;
	count = b->scratch.len - l.start;
	if (l.is_obj) {
		count /= 2;
		if (!sort_members(b, kids, count))
			return fail(b, -EINVAL, "duplicate key in an object");
	}
	if (count > LEN_MAX || first > UINT32_MAX)
		return fail(b, -EMSGSIZE, "container too large");
	if (b->scratch.len > l.start) {
		vec_reserve(&b->out, b->out.len + b->scratch.len - l.start);
		memcpy(b->out.v + first, kids, (b->scratch.len - l.start) * sizeof(*kids));
		b->out.len += b->scratch.len - l.start;
	}
	b->scratch.len = l.start;
	n = (struct jnode){MKNODE(l.is_obj ? N_OBJ : N_ARRAY, count), (uint32_t)first};
	if (!room(b, 1, 0))
		return 0;
	vec_push(&b->scratch, n);
	mark_end(b);
	return 1;
}

static int cb_end(void *ctx)
{
	return end(ctx);
}

static const yajl_callbacks callbacks = {
        .yajl_null = cb_null,
        .yajl_boolean = cb_bool,
        .yajl_number = cb_number,
        .yajl_string = cb_string,
        .yajl_start_map = cb_start_map,
        .yajl_map_key = cb_key,
        .yajl_end_map = cb_end,
        .yajl_start_array = cb_start_array,
        .yajl_end_array = cb_end,
};

/* The first empty or overlong path of @list, or NULL. */
static const char *bad_path(const char *const *list)
{
	for (; list && *list; list++)
		if (**list == '\0' || strlen(*list) >= PATH_MAX_LEN)
			return *list;
	return NULL;
}

static int build_init(struct build *b, const struct jdoc_opts *o, struct ll_err *err)
{
	memset(b, 0, offsetof(struct build, path));
	b->keep = o ? o->keep : NULL;
	b->drop = o ? o->drop : NULL;
	b->defaults = o ? o->defaults : NULL;
	b->max_bytes = o && o->max_bytes ? o->max_bytes : JDOC_DEFAULT_MAX_BYTES;
	b->max_depth = o && o->max_depth ? o->max_depth : JDOC_DEFAULT_MAX_DEPTH;
	if (b->max_bytes > BYTES_MAX || b->max_depth > JDOC_MAX_DEPTH)
		return ll_err_set(err, -EINVAL, "jdoc: limits above %zu bytes or %u levels",
		                  BYTES_MAX, JDOC_MAX_DEPTH);
	if (bad_path(b->keep) || bad_path(b->drop))
		return ll_err_set(err, -EINVAL, "jdoc: bad projection path \"%s\"",
		                  bad_path(b->keep) ? bad_path(b->keep) : bad_path(b->drop));
	b->root_mode = b->keep ? PJ_OUT : b->drop ? PJ_IN : PJ_KEEP;
	return 0;
}

static void build_release(struct build *b)
{
	vec_release(&b->out);
	vec_release(&b->scratch);
	vec_release(&b->pool);
}

/* The finished document: one block of header, nodes and pool. */
static struct jdoc *build_finish(struct build *b)
{
	size_t nn = b->out.len + 1;
	struct jdoc *d = xmalloc(sizeof(*d) + nn * sizeof(struct jnode) + b->pool.len);

	atomic_init(&d->refs, 1);
	d->nnodes = (uint32_t)nn;
	d->root = (uint32_t)(nn - 1);
	d->pool_len = (uint32_t)b->pool.len;
	if (b->out.len)
		memcpy(d->nodes, b->out.v, b->out.len * sizeof(struct jnode));
	d->nodes[nn - 1] = b->scratch.v[0];
	if (b->pool.len)
		memcpy(d->nodes + nn, b->pool.v, b->pool.len);
	return d;
}

static bool only_space(const char *data, size_t len, size_t from)
{
	for (size_t i = from; i < len; i++)
		if (!strchr(" \t\n\r", data[i]) || data[i] == '\0')
			return false;
	return true;
}

/*
 * Feed @len bytes to yajl with @cbs on @ctx; @b builds the top-level value and @other, when
 * not NULL, the items split from it. Returns 0 once @b holds the complete value.
 */
static int run_yajl(const yajl_callbacks *cbs, void *ctx, struct build *b, struct build *other,
                    const char *data, size_t len, struct ll_err *err)
{
	yajl_handle h = yajl_alloc(cbs, NULL, ctx);
	yajl_status st;
	int rc = 0;

	b->h = h;
	st = yajl_parse(h, (const unsigned char *)data, len);
	b->finishing = true;
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	if (st == yajl_status_ok && !only_space(data, len, b->end_off))
		fail(b, -EINVAL, "trailing garbage after the value");
	if (other && other->rc && !b->rc)
		fail(b, other->rc, other->why);
	if (st == yajl_status_client_canceled || b->rc) {
		rc = ll_err_set(err, b->rc ? b->rc : -EINVAL, "jdoc: %s", b->why);
	} else if (st != yajl_status_ok || b->scratch.len != 1 || b->nlv) {
		unsigned char *msg = yajl_get_error(h, 0, NULL, 0);

		rc = ll_err_set(err, -EINVAL, "invalid JSON at byte %zu: %s",
		                yajl_get_bytes_consumed(h), msg ? (const char *)msg : "incomplete");
		yajl_free_error(h, msg);
	}
	yajl_free(h);
	return rc;
}

int jdoc_parse(const char *data, size_t len, const struct jdoc_opts *opts, struct jdoc **out,
               struct ll_err *err)
{
	struct build b;
	int rc;

	*out = NULL;
	rc = build_init(&b, opts, err);
	if (rc == 0)
		rc = run_yajl(&callbacks, &b, &b, NULL, data, len, err);
	if (rc == 0)
		*out = build_finish(&b);
	build_release(&b);
	return rc;
}

/* ---- splitting a list page or a watch event into documents -------------------------------- */

struct split {
	struct build page; /* the top-level value without the member @key */
	struct build item; /* the item being built; its buffers are reused from item to item */
	const char *key;
	size_t keylen;
	int (*fn)(void *ctx, struct jdoc *take_item);
	void *ctx;
	unsigned pd;   /* page containers open (the items array included) */
	unsigned id;   /* containers open in the current item */
	bool at_key;   /* the next value is @key's */
	bool seen_key; /* @key appeared: a second one is a duplicate */
	bool in_array; /* between the elements of @key's array */
	bool in_item;
};

static void build_reset(struct build *b)
{
	b->out.len = b->scratch.len = b->pool.len = 0;
	b->depth = b->nlv = b->skip = 0;
}

static int emit(struct split *s)
{
	struct jdoc *d = build_finish(&s->item);
	int rc;

	build_reset(&s->item);
	rc = s->fn(s->ctx, d);
	return rc ? fail(&s->page, rc, "the item handler failed") : 1;
}

/* The builder that takes the value starting now (@kind: 0 scalar, 1 object, 2 array), or NULL. */
static struct build *target(struct split *s, int kind)
{
	if (s->in_item) {
		s->id += kind != 0;
		return &s->item;
	}
	if (s->at_key) {
		s->at_key = false;
		if (kind == 2) {
			s->in_array = true;
			s->pd++;
			return NULL;
		}
		if (kind == 0)
			return NULL; /* "items": null has no items */
	} else if (!s->in_array) {
		s->pd += kind != 0;
		return &s->page;
	}
	s->in_item = kind != 0; /* an item starts: @key's object, or an element of its array */
	s->id = kind != 0;
	return &s->item;
}

/* After a scalar: a scalar element of the items array is an item of its own. */
static int scalar_done(struct split *s, struct build *b, int ok)
{
	return ok && b == &s->item && !s->in_item ? emit(s) : ok;
}

static int split_null(void *ctx)
{
	struct build *b = target(ctx, 0);

	return b ? scalar_done(ctx, b, cb_null(b)) : 1;
}

static int split_bool(void *ctx, int v)
{
	struct build *b = target(ctx, 0);

	return b ? scalar_done(ctx, b, cb_bool(b, v)) : 1;
}

static int split_number(void *ctx, const char *n, size_t len)
{
	struct build *b = target(ctx, 0);

	return b ? scalar_done(ctx, b, cb_number(b, n, len)) : 1;
}

static int split_string(void *ctx, const unsigned char *str, size_t len)
{
	struct build *b = target(ctx, 0);

	return b ? scalar_done(ctx, b, cb_string(b, str, len)) : 1;
}

static int split_start_map(void *ctx)
{
	struct build *b = target(ctx, 1);

	return b ? cb_start_map(b) : 1;
}

static int split_start_array(void *ctx)
{
	struct build *b = target(ctx, 2);

	return b ? cb_start_array(b) : 1;
}

static int split_key(void *ctx, const unsigned char *key, size_t len)
{
	struct split *s = ctx;

	if (s->in_item)
		return cb_key(&s->item, key, len);
	if (s->pd == 1 && len == s->keylen && memcmp(key, s->key, len) == 0) {
		if (s->seen_key)
			return fail(&s->page, -EINVAL, "duplicate key in an object");
		s->seen_key = s->at_key = true;
		return 1;
	}
	return cb_key(&s->page, key, len);
}

static int split_end(void *ctx)
{
	struct split *s = ctx;

	if (s->in_item) {
		if (!cb_end(&s->item))
			return 0;
		if (--s->id > 0)
			return 1;
		s->in_item = false;
		return emit(s);
	}
	s->pd--;
	if (s->in_array) {
		s->in_array = false; /* the end of the items array */
		return 1;
	}
	return cb_end(&s->page);
}

static const yajl_callbacks split_callbacks = {
        .yajl_null = split_null,
        .yajl_boolean = split_bool,
        .yajl_number = split_number,
        .yajl_string = split_string,
        .yajl_start_map = split_start_map,
        .yajl_map_key = split_key,
        .yajl_end_map = split_end,
        .yajl_start_array = split_start_array,
        .yajl_end_array = split_end,
};

int jdoc_parse_items(const char *data, size_t len, const char *key, const struct jdoc_opts *opts,
                     int (*fn)(void *ctx, struct jdoc *take_item), void *ctx, struct jdoc **rest,
                     struct ll_err *err)
{
	struct split s = {.key = key, .keylen = key ? strlen(key) : 0, .fn = fn, .ctx = ctx};
	int rc;

	if (rest)
		*rest = NULL;
	rc = build_init(&s.page, NULL, err);
	if (rc == 0)
		rc = build_init(&s.item, opts, err);
	if (rc == 0 && (key == NULL || fn == NULL))
		rc = ll_err_set(err, -EINVAL, "jdoc: no key or no item handler");
	if (rc == 0)
		rc = run_yajl(&split_callbacks, &s, &s.page, &s.item, data, len, err);
	if (rc == 0 && rest)
		*rest = build_finish(&s.page);
	build_release(&s.page);
	build_release(&s.item);
	return rc;
}

static int walk(struct build *b, const json_t *v)
{
	const char *key;
	size_t klen, i;
	json_t *m;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (!cb_start_map(b))
			return 0;
		json_object_keylen_foreach((json_t *)v, key, klen, m) {
			if (!cb_key(b, (const unsigned char *)key, klen) || !walk(b, m))
				return 0;
		}
		return cb_end(b);
	case JSON_ARRAY:
		if (!cb_start_array(b))
			return 0;
		json_array_foreach(v, i, m) {
			if (!walk(b, m))
				return 0;
		}
		return cb_end(b);
	case JSON_STRING:
		return cb_string(b, (const unsigned char *)json_string_value(v),
		                 json_string_length(v));
	case JSON_INTEGER:
		return add_int(b, json_integer_value(v));
	case JSON_REAL:
		return add_real(b, json_real_value(v));
	case JSON_TRUE:
	case JSON_FALSE:
		return cb_bool(b, json_is_true(v));
	default:
		return cb_null(b);
	}
}

int jdoc_from_json(const json_t *v, const struct jdoc_opts *opts, struct jdoc **out,
                   struct ll_err *err)
{
	struct build b;
	int rc;

	*out = NULL;
	if (v == NULL)
		return ll_err_set(err, -EINVAL, "jdoc: no value");
	rc = build_init(&b, opts, err);
	if (rc)
		return rc;
	if (walk(&b, v) && b.scratch.len == 1)
		*out = build_finish(&b);
	else
		rc = ll_err_set(err, b.rc ? b.rc : -EINVAL, "jdoc: %s", b.why);
	build_release(&b);
	return rc;
}

struct jdoc *jdoc_ref(const struct jdoc *d)
{
	struct jdoc *m = (struct jdoc *)d;

	if (m)
		atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
	return m;
}

void jdoc_unref(const struct jdoc *d)
{
	struct jdoc *m = (struct jdoc *)d;

	if (m && atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1)
		free(m);
}

struct jval jdoc_root(const struct jdoc *d)
{
	return (struct jval){d, d ? d->root : 0};
}

size_t jdoc_bytes(const struct jdoc *d)
{
	return d ? malloc_usable_size((void *)d) + sizeof(size_t) : 0;
}
