/* jdoc.c - immutable one-allocation JSON documents (see jdoc.h). */
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
#include "base/mem.h"
#include "base/vec.h"

/*
 * Layout. A node is 8 bytes: a = type (low 4 bits) | length or count (high 28 bits), b = a
 * pool offset, a table index, an inline int32, or the index of a container's first child.
 * The children of a container are contiguous (objects: key node, value node, sorted by key), so
 * jval_at() is O(1) and jval_get() a binary search. Blocks are written in post-order while
 * parsing; the root is the last node. Strings live in the pool after the nodes, each followed
 * by a NUL; common keys and values are indexes into the sorted table below instead.
 */
enum ntype { N_NULL, N_FALSE, N_TRUE, N_INT32, N_INT64, N_REAL, N_STR, N_TSTR, N_ARRAY, N_OBJ };

struct jnode {
	uint32_t a;
	uint32_t b;
};

struct jdoc {
	atomic_uint refs;
	uint32_t nnodes;
	uint32_t root;
	uint32_t pool_len;
	struct jnode nodes[];
};

#define NTYPE(n)     ((enum ntype)((n).a & 0xfu))
#define NLEN(n)      ((n).a >> 4)
#define MKNODE(t, l) ((uint32_t)(t) | ((uint32_t)(l) << 4))
#define LEN_MAX      ((1u << 28) - 1)
#define BYTES_MAX    ((size_t)LEN_MAX)
#define PATH_MAX_LEN 256
#define TSTR_MAX_LEN 32

/* Kubernetes' most common keys and short values; must stay sorted (bytewise) and unique. */
static const char *const table[] = {
        "",
        "-",
        ".",
        "Active",
        "Apply",
        "ClusterIP",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "DoesNotExist",
        "Egress",
        "Exists",
        "False",
        "FieldsV1",
        "Group",
        "In",
        "Ingress",
        "LimitRange",
        "List",
        "Namespace",
        "NetworkPolicy",
        "NotIn",
        "Opaque",
        "Pod",
        "ResourceQuota",
        "Role",
        "RoleBinding",
        "Secret",
        "Service",
        "ServiceAccount",
        "TCP",
        "Terminating",
        "True",
        "UDP",
        "Unknown",
        "Update",
        "User",
        "annotations",
        "apiGroup",
        "apiGroups",
        "apiVersion",
        "apps/v1",
        "binaryData",
        "blockOwnerDeletion",
        "conditions",
        "containers",
        "continue",
        "controller",
        "cpu",
        "creationTimestamp",
        "data",
        "default",
        "deletionGracePeriodSeconds",
        "deletionTimestamp",
        "egress",
        "f:annotations",
        "f:data",
        "f:finalizers",
        "f:labels",
        "f:metadata",
        "f:phase",
        "f:spec",
        "f:status",
        "fieldsType",
        "fieldsV1",
        "finalizers",
        "from",
        "generateName",
        "generation",
        "hard",
        "image",
        "ingress",
        "items",
        "key",
        "kind",
        "kube-controller-manager",
        "kube-system",
        "kubectl-client-side-apply",
        "kubernetes",
        "kubernetes.io/metadata.name",
        "labels",
        "landlord",
        "lastTransitionTime",
        "limits",
        "managedFields",
        "manager",
        "matchExpressions",
        "matchLabels",
        "memory",
        "message",
        "metadata",
        "name",
        "namespace",
        "namespaceSelector",
        "networking.k8s.io/v1",
        "observedGeneration",
        "operation",
        "operator",
        "ownerReferences",
        "phase",
        "podSelector",
        "policyTypes",
        "ports",
        "protocol",
        "rbac.authorization.k8s.io",
        "rbac.authorization.k8s.io/v1",
        "reason",
        "remainingItemCount",
        "requests",
        "resourceVersion",
        "resources",
        "roleRef",
        "rules",
        "scopeSelector",
        "scopes",
        "selector",
        "spec",
        "status",
        "subjects",
        "subresource",
        "time",
        "to",
        "type",
        "uid",
        "used",
        "v1",
        "value",
        "values",
        "verbs",
};
#define TABLE_LEN (sizeof(table) / sizeof(table[0]))

static int bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

bool jdoc__table_sorted(void)
{
	for (size_t i = 1; i < TABLE_LEN; i++)
		if (bytes_cmp(table[i - 1], strlen(table[i - 1]), table[i], strlen(table[i])) >= 0)
			return false;
	return TABLE_LEN <= LEN_MAX;
}

/* Index of @s in the table, or -1. */
static int table_find(const char *s, size_t len)
{
	size_t lo = 0, hi = TABLE_LEN;

	if (len > TSTR_MAX_LEN)
		return -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = bytes_cmp(s, len, table[mid], strlen(table[mid]));

		if (c == 0)
			return (int)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

/* Bytes of a string node; @pool is the pool the node points into. */
static const char *node_str(const char *pool, struct jnode n, size_t *len)
{
	if (NTYPE(n) == N_TSTR) {
		*len = strlen(table[n.b]);
		return table[n.b];
	}
	*len = NLEN(n);
	return pool + n.b;
}

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
	int t = table_find(s, len);

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

/* @prefix is a whole-segment prefix of (or equal to) @path. */
static bool path_within(const char *path, size_t len, const char *prefix)
{
	size_t plen = strlen(prefix);

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
	size_t at = l->pathlen + (l->pathlen > 0);

	if (l->mode == PJ_KEEP)
		return PJ_KEEP;
	if (at + len >= PATH_MAX_LEN || memchr(key, '\0', len))
		return l->mode == PJ_IN ? PJ_KEEP : PJ_SKIP; /* no configured path is that long */
	if (l->pathlen > 0)
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
	b->lv[b->nlv++] = (struct level){
	        .start = (uint32_t)b->scratch.len,
	        .pathlen = m == PJ_KEEP ? 0 : (b->nlv ? b->cand_len : 0),
	        .is_obj = is_obj,
	        .mode = (uint8_t)(is_obj ? m : PJ_KEEP),
	};
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
	const char *as = node_str(pool, *a, &alen), *bs = node_str(pool, *b, &blen);

	return bytes_cmp(as, alen, bs, blen);
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

static int build_init(struct build *b, const struct jdoc_opts *o, struct ll_err *err)
{
	memset(b, 0, offsetof(struct build, path));
	b->keep = o ? o->keep : NULL;
	b->drop = o ? o->drop : NULL;
	b->max_bytes = o && o->max_bytes ? o->max_bytes : JDOC_DEFAULT_MAX_BYTES;
	b->max_depth = o && o->max_depth ? o->max_depth : JDOC_DEFAULT_MAX_DEPTH;
	if (b->max_bytes > BYTES_MAX || b->max_depth > JDOC_MAX_DEPTH)
		return ll_err_set(err, -EINVAL, "jdoc: limits above %zu bytes or %u levels",
		                  BYTES_MAX, JDOC_MAX_DEPTH);
	for (const char *const *k = b->keep; k && *k; k++)
		if (**k == '\0' || strlen(*k) >= PATH_MAX_LEN)
			return ll_err_set(err, -EINVAL, "jdoc: bad projection path \"%s\"", *k);
	for (const char *const *k = b->drop; k && *k; k++)
		if (**k == '\0' || strlen(*k) >= PATH_MAX_LEN)
			return ll_err_set(err, -EINVAL, "jdoc: bad projection path \"%s\"", *k);
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

int jdoc_parse(const char *data, size_t len, const struct jdoc_opts *opts, struct jdoc **out,
               struct ll_err *err)
{
	struct build b;
	yajl_handle h = NULL;
	yajl_status st;
	int rc;

	*out = NULL;
	rc = build_init(&b, opts, err);
	if (rc)
		return rc;
	h = yajl_alloc(&callbacks, NULL, &b);
	st = yajl_parse(h, (const unsigned char *)data, len);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	if (st == yajl_status_client_canceled || b.rc) {
		rc = ll_err_set(err, b.rc ? b.rc : -EINVAL, "jdoc: %s", b.why);
	} else if (st != yajl_status_ok || b.scratch.len != 1 || b.nlv) {
		unsigned char *msg = yajl_get_error(h, 0, NULL, 0);

		rc = ll_err_set(err, -EINVAL, "invalid JSON at byte %zu: %s",
		                yajl_get_bytes_consumed(h), msg ? (const char *)msg : "incomplete");
		yajl_free_error(h, msg);
	} else {
		*out = build_finish(&b);
	}
	yajl_free(h);
	build_release(&b);
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

/* ---- reading ----------------------------------------------------------------------------- */

static const struct jval none = {NULL, 0};

static struct jnode node(struct jval v)
{
	return v.doc->nodes[v.idx];
}

static const char *pool_of(const struct jdoc *d)
{
	return (const char *)(d->nodes + d->nnodes);
}

enum jtype jval_type(struct jval v)
{
	static const enum jtype types[] = {
	        [N_NULL] = JT_NULL,  [N_FALSE] = JT_BOOL,  [N_TRUE] = JT_BOOL,
	        [N_INT32] = JT_INT,  [N_INT64] = JT_INT,   [N_REAL] = JT_REAL,
	        [N_STR] = JT_STRING, [N_TSTR] = JT_STRING, [N_ARRAY] = JT_ARRAY,
	        [N_OBJ] = JT_OBJECT,
	};

	return v.doc ? types[NTYPE(node(v))] : JT_NONE;
}

struct jval jval_getn(struct jval v, const char *key, size_t len)
{
	struct jnode n;
	size_t lo = 0, hi;

	if (jval_type(v) != JT_OBJECT || key == NULL)
		return none;
	n = node(v);
	hi = NLEN(n);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, klen;
		const char *k = node_str(pool_of(v.doc), v.doc->nodes[n.b + 2 * mid], &klen);
		int c = bytes_cmp(key, len, k, klen);

		if (c == 0)
			return (struct jval){v.doc, (uint32_t)(n.b + 2 * mid + 1)};
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return none;
}

struct jval jval_get(struct jval v, const char *key)
{
	return key ? jval_getn(v, key, strlen(key)) : none;
}

struct jval jval_at(struct jval v, size_t i)
{
	if (jval_type(v) != JT_ARRAY || i >= NLEN(node(v)))
		return none;
	return (struct jval){v.doc, (uint32_t)(node(v).b + i)};
}

size_t jval_size(struct jval v)
{
	enum jtype t = jval_type(v);

	return t == JT_ARRAY || t == JT_OBJECT ? NLEN(node(v)) : 0;
}

const char *jval_key_at(struct jval v, size_t i)
{
	size_t len;

	if (jval_type(v) != JT_OBJECT || i >= NLEN(node(v)))
		return NULL;
	return node_str(pool_of(v.doc), v.doc->nodes[node(v).b + 2 * i], &len);
}

struct jval jval_value_at(struct jval v, size_t i)
{
	if (jval_type(v) != JT_OBJECT || i >= NLEN(node(v)))
		return none;
	return (struct jval){v.doc, (uint32_t)(node(v).b + 2 * i + 1)};
}

const char *jval_str(struct jval v)
{
	size_t len;

	return jval_type(v) == JT_STRING ? node_str(pool_of(v.doc), node(v), &len) : NULL;
}

size_t jval_strlen(struct jval v)
{
	size_t len = 0;

	if (jval_type(v) == JT_STRING)
		node_str(pool_of(v.doc), node(v), &len);
	return len;
}

long long jval_int(struct jval v, long long dflt)
{
	int64_t w;

	if (jval_type(v) != JT_INT)
		return dflt;
	if (NTYPE(node(v)) == N_INT32)
		return (int32_t)node(v).b;
	memcpy(&w, pool_of(v.doc) + node(v).b, sizeof(w));
	return w;
}

double jval_real(struct jval v, double dflt)
{
	double d;

	if (jval_type(v) == JT_INT)
		return (double)jval_int(v, 0);
	if (jval_type(v) != JT_REAL)
		return dflt;
	memcpy(&d, pool_of(v.doc) + node(v).b, sizeof(d));
	return d;
}

bool jval_bool(struct jval v, bool dflt)
{
	return jval_type(v) == JT_BOOL ? NTYPE(node(v)) == N_TRUE : dflt;
}

static struct jval vpath(struct jval v, va_list ap)
{
	const char *key;

	while (v.doc && (key = va_arg(ap, const char *)) != NULL)
		v = jval_get(v, key);
	return v;
}

struct jval jval_path(struct jval v, ...)
{
	va_list ap;

	va_start(ap, v);
	v = vpath(v, ap);
	va_end(ap);
	return v;
}

struct jval jd_get(const struct jdoc *d, ...)
{
	va_list ap;
	struct jval v;

	va_start(ap, d);
	v = vpath(jdoc_root(d), ap);
	va_end(ap);
	return v;
}

const char *jd_str(const struct jdoc *d, ...)
{
	va_list ap;
	struct jval v;

	va_start(ap, d);
	v = vpath(jdoc_root(d), ap);
	va_end(ap);
	return jval_str(v);
}

long long jd_int(const struct jdoc *d, long long dflt, ...)
{
	va_list ap;
	struct jval v;

	va_start(ap, dflt);
	v = vpath(jdoc_root(d), ap);
	va_end(ap);
	return jval_int(v, dflt);
}

bool jd_bool(const struct jdoc *d, int dflt, ...)
{
	va_list ap;
	struct jval v;

	va_start(ap, dflt);
	v = vpath(jdoc_root(d), ap);
	va_end(ap);
	return jval_bool(v, dflt);
}

/* ---- jansson ----------------------------------------------------------------------------- */

static json_t *container_to_json(struct jval v)
{
	json_t *j = jval_type(v) == JT_OBJECT ? json_object() : json_array();
	size_t n = jval_size(v);

	for (size_t i = 0; i < n; i++) {
		if (jval_type(v) == JT_ARRAY) {
			json_array_append_new(j, jval_to_json(jval_at(v, i)));
		} else {
			const char *k = jval_key_at(v, i);
			size_t klen;

			node_str(pool_of(v.doc), v.doc->nodes[node(v).b + 2 * i], &klen);
			json_object_setn_new_nocheck(j, k, klen, jval_to_json(jval_value_at(v, i)));
		}
	}
	return j;
}

json_t *jval_to_json(struct jval v)
{
	switch (jval_type(v)) {
	case JT_NULL:
		return json_null();
	case JT_BOOL:
		return json_boolean(jval_bool(v, false));
	case JT_INT:
		return json_integer(jval_int(v, 0));
	case JT_REAL:
		return json_real(jval_real(v, 0));
	case JT_STRING:
		return json_stringn_nocheck(jval_str(v), jval_strlen(v));
	case JT_ARRAY:
	case JT_OBJECT:
		return container_to_json(v);
	default:
		return NULL;
	}
}

static bool object_equal_json(struct jval v, const json_t *j, bool subset)
{
	const char *key;
	size_t klen;
	json_t *m;

	if (jval_type(v) != JT_OBJECT || (!subset && jval_size(v) != json_object_size(j)))
		return false;
	json_object_keylen_foreach((json_t *)j, key, klen, m) {
		struct jval mv = jval_getn(v, key, klen);

		if (subset ? !jval_has_subset(mv, m) : !jval_equal_json(mv, m))
			return false;
	}
	return true;
}

static bool array_equal_json(struct jval v, const json_t *j, bool subset)
{
	size_t n = json_array_size(j);

	if (jval_type(v) != JT_ARRAY || jval_size(v) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct jval e = jval_at(v, i);
		const json_t *je = json_array_get(j, i);

		if (subset ? !jval_has_subset(e, je) : !jval_equal_json(e, je))
			return false;
	}
	return true;
}

bool jval_equal_json(struct jval v, const json_t *j)
{
	switch (j ? json_typeof(j) : (json_type)-1) {
	case JSON_OBJECT:
		return object_equal_json(v, j, false);
	case JSON_ARRAY:
		return array_equal_json(v, j, false);
	case JSON_STRING:
		return jval_type(v) == JT_STRING && jval_strlen(v) == json_string_length(j) &&
		       memcmp(jval_str(v), json_string_value(j), jval_strlen(v)) == 0;
	case JSON_INTEGER:
		return jval_type(v) == JT_INT && jval_int(v, 0) == json_integer_value(j);
	case JSON_REAL:
		return jval_type(v) == JT_REAL && jval_real(v, 0) == json_real_value(j);
	case JSON_TRUE:
	case JSON_FALSE:
		return jval_type(v) == JT_BOOL && jval_bool(v, false) == json_is_true(j);
	case JSON_NULL:
		return jval_type(v) == JT_NULL;
	default:
		return false;
	}
}

bool jval_has_subset(struct jval have, const json_t *want)
{
	if (json_is_object(want))
		return object_equal_json(have, want, true);
	if (json_is_array(want))
		return array_equal_json(have, want, true);
	return jval_equal_json(have, want);
}

json_t *jval_merge_patch(struct jval have, const json_t *want)
{
	json_t *patch, *m;
	const char *key;
	size_t klen;

	if (!json_is_object(want) || jval_type(have) != JT_OBJECT)
		return json_deep_copy(want);
	patch = json_object();
	json_object_keylen_foreach((json_t *)want, key, klen, m) {
		struct jval hv = jval_getn(have, key, klen);

		if (json_is_null(m)) {
			if (jval_type(hv) != JT_NONE)
				json_object_setn_new_nocheck(patch, key, klen, json_null());
		} else if (json_is_object(m) && jval_type(hv) == JT_OBJECT) {
			json_t *sub = jval_merge_patch(hv, m);

			if (json_object_size(sub))
				json_object_setn_new_nocheck(patch, key, klen, sub);
			else
				json_decref(sub);
		} else if (!jval_equal_json(hv, m)) {
			json_object_setn_new_nocheck(patch, key, klen, json_deep_copy(m));
		}
	}
	for (size_t i = 0; i < jval_size(have); i++) {
		size_t len;
		const char *k =
		        node_str(pool_of(have.doc), have.doc->nodes[node(have).b + 2 * i], &len);

		if (json_object_getn(want, k, len) == NULL)
			json_object_setn_new_nocheck(patch, k, len, json_null());
	}
	return patch;
}
