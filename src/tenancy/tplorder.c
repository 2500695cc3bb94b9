/* tplorder.c - the apply order of one render (see tplorder.h). */
#include "tenancy/tplorder.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"
#include "tenancy/denial.h"

#define WORDS ((TPL_ORDER_OBJECTS_MAX + 63) / 64)

struct node {
	const char *kind, *name;
	size_t kind_len, name_len;
	unsigned rank;
	unsigned pending;     /* dependencies not yet ordered */
	bool done;            /* ordered */
	uint64_t deps[WORDS]; /* bit j: object j comes first */
};

struct order {
	const json_t *objects;
	struct node *nodes;
	size_t n;
	struct ll_err *err;
};

/* The kind ranks, lowest first; other kinds come after all of them. */
static const char *const RANKED[] = {"ServiceAccount", "Secret",      "ConfigMap",         "Role",
                                     "ClusterRole",    "RoleBinding", "ClusterRoleBinding"};
#define RANKS (sizeof(RANKED) / sizeof(RANKED[0]))

static unsigned kind_rank(const char *kind)
{
	for (unsigned r = 0; r < RANKS; r++)
		if (strcmp(kind, RANKED[r]) == 0)
			return r;
	return RANKS;
}

static bool has_dep(const struct node *nd, size_t j)
{
	return (nd->deps[j / 64] >> (j % 64)) & 1;
}

/* ===== messages ===== */

/* "spec.resources.manifests[i]: Kind "name": " started in o->err. */
static struct denial *obj_msg(struct denial *d, const struct order *o, size_t i)
{
	const struct node *nd = &o->nodes[i];

	denial_init(d, o->err->msg, sizeof(o->err->msg));
	denial_text(d, "spec.resources.manifests[%zu]: ", i);
	denial_item(d, 0, nd->kind, nd->kind_len, false);
	denial_text(d, " ");
	denial_quote(d, nd->name, nd->name_len);
	denial_text(d, ": ");
	return d;
}

/* "...: landlord.dev/depends-on: "<entry>" <what>" */
static int entry_error(const struct order *o, size_t i, const char *entry, size_t len,
                       const char *what)
{
	struct denial d;

	denial_text(obj_msg(&d, o, i), TPL_DEPENDS_ON ": ");
	denial_quote(&d, entry, len);
	denial_text(&d, " %s", what);
	return -EINVAL;
}

/* "[i] Kind/name" */
static void put_member(struct denial *d, const struct node *nd, size_t i)
{
	denial_text(d, "[%zu] ", i);
	denial_item(d, 0, nd->kind, nd->kind_len, false);
	denial_text(d, "/");
	denial_item(d, 0, nd->name, nd->name_len, false);
}

/* ===== loading ===== */

/* Member @key of @obj: a string that is not empty and holds no NUL, or NULL. */
static const char *required_str(const json_t *obj, const char *key, size_t *len)
{
	const json_t *v = json_object_get(obj, key);
	const char *s = json_string_value(v);

	if (s == NULL || *s == '\0' || strlen(s) != json_string_length(v))
		return NULL;
	*len = json_string_length(v);
	return s;
}

static int load_nodes(struct order *o)
{
	for (size_t i = 0; i < o->n; i++) {
		const json_t *obj = json_array_get(o->objects, i);
		struct node *nd = &o->nodes[i];

		nd->kind = required_str(obj, "kind", &nd->kind_len);
		nd->name = required_str(json_object_get(obj, "metadata"), "name", &nd->name_len);
		if (nd->kind == NULL || nd->name == NULL)
			return ll_err_set(
			        o->err, -EINVAL,
			        "spec.resources.manifests[%zu]: kind and metadata.name are "
			        "required (strings, not empty)",
			        i);
		nd->rank = kind_rank(nd->kind);
	}
	return 0;
}

/* @s[0..*len) without the spaces and tabs around it. */
static const char *trim(const char *s, size_t *len)
{
	while (*len > 0 && (s[0] == ' ' || s[0] == '\t'))
		s++, (*len)--;
	while (*len > 0 && (s[*len - 1] == ' ' || s[*len - 1] == '\t'))
		(*len)--;
	return s;
}

/* Entry @e (@len bytes, trimmed) of object @i's annotation: the objects it names, into deps. */
static int add_entry(struct order *o, size_t i, const char *e, size_t len)
{
	const char *slash = memchr(e, '/', len), *name;
	size_t kind_len, name_len, found = 0;

	if (slash == NULL)
		return entry_error(o, i, e, len, "is not Kind/name");
	kind_len = (size_t)(slash - e);
	name = slash + 1;
	name_len = len - kind_len - 1;
	if (kind_len == 0 || name_len == 0 || memchr(name, '/', name_len) || memchr(e, ' ', len) ||
	    memchr(e, '\t', len) || memchr(e, '\0', len))
		return entry_error(o, i, e, len, "is not Kind/name");
	for (size_t j = 0; j < o->n; j++) {
		const struct node *m = &o->nodes[j];

		if (m->kind_len != kind_len || m->name_len != name_len ||
		    memcmp(m->kind, e, kind_len) != 0 || memcmp(m->name, name, name_len) != 0)
			continue;
		if (j == i)
			return entry_error(o, i, e, len, "is the object itself");
		o->nodes[i].deps[j / 64] |= UINT64_C(1) << (j % 64);
		found++;
	}
	if (found == 0)
		return entry_error(o, i, e, len, "is not an object of this render");
	return 0;
}

/* Object @i's landlord.dev/depends-on, into its deps. */
static int load_deps(struct order *o, size_t i)
{
	const json_t *meta = json_object_get(json_array_get(o->objects, i), "metadata");
	const json_t *v = json_object_get(json_object_get(meta, "annotations"), TPL_DEPENDS_ON);
	const char *s = json_string_value(v), *end;
	size_t len = json_string_length(v), entries = 0;
	struct denial d;
	int rc;

	if (v == NULL)
		return 0;
	if (s == NULL) {
		denial_text(obj_msg(&d, o, i), TPL_DEPENDS_ON " must be a string");
		return -EINVAL;
	}
	s = trim(s, &len);
	end = s + len;
	while (len > 0) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		size_t n = (size_t)((comma != NULL ? comma : end) - s);
		const char *e = trim(s, &n);

		if (++entries > TPL_ORDER_DEPS_MAX) {
			denial_text(obj_msg(&d, o, i), TPL_DEPENDS_ON " names more than %d objects",
			            TPL_ORDER_DEPS_MAX);
			return -E2BIG;
		}
		rc = n == 0 ? entry_error(o, i, e, n, "is not Kind/name") : add_entry(o, i, e, n);
		if (rc != 0)
			return rc;
		if (comma == NULL)
			break;
		s = comma + 1;
	}
	return 0;
}

/* ===== ordering ===== */

/* The object not done, with no pending dependency, of lowest (rank, index); o->n when none. */
static size_t next_ready(const struct order *o)
{
	size_t best = o->n;

	for (size_t j = 0; j < o->n; j++) {
		const struct node *nd = &o->nodes[j];

		if (nd->done || nd->pending > 0)
			continue;
		if (best == o->n || nd->rank < o->nodes[best].rank)
			best = j;
	}
	return best;
}

/* The objects left all wait on one another: find a cycle among them and name it. */
static int cycle_error(const struct order *o)
{
	size_t *pos = xmalloc(o->n * sizeof(*pos)), *path = xmalloc(o->n * sizeof(*path));
	size_t len = 0, at = 0, first, low;
	struct denial d;

	for (size_t j = 0; j < o->n; j++)
		pos[j] = SIZE_MAX;
	while (o->nodes[at].done)
		at++;
	/* Every object left has a dependency left: follow the first until one comes back. */
	while (pos[at] == SIZE_MAX) {
		size_t next = 0;

		pos[at] = len;
		path[len++] = at;
		while (o->nodes[next].done || !has_dep(&o->nodes[at], next))
			next++;
		at = next;
	}
	first = pos[at];
	low = first;
	for (size_t k = first; k < len; k++)
		if (path[k] < path[low])
			low = k;
	denial_text(obj_msg(&d, o, path[low]), TPL_DEPENDS_ON " makes a cycle: ");
	for (size_t k = 0; k <= len - first; k++) {
		size_t idx = path[first + (low - first + k) % (len - first)];

		denial_text(&d, "%s", k > 0 ? " -> " : "");
		put_member(&d, &o->nodes[idx], idx);
	}
	free(pos);
	free(path);
	return -EINVAL;
}

static int sort(struct order *o, size_t *order)
{
	for (size_t j = 0; j < o->n; j++) {
		struct node *nd = &o->nodes[j];

		for (size_t w = 0; w < WORDS; w++)
			nd->pending += (unsigned)__builtin_popcountll(nd->deps[w]);
	}
	for (size_t k = 0; k < o->n; k++) {
		size_t best = next_ready(o);

		if (best == o->n)
			return cycle_error(o);
		o->nodes[best].done = true;
		order[k] = best;
		for (size_t j = 0; j < o->n; j++)
			if (!o->nodes[j].done && has_dep(&o->nodes[j], best))
				o->nodes[j].pending--;
	}
	return 0;
}

int tpl_order(const json_t *objects, size_t **order_out, struct ll_err *err)
{
	struct ll_err local;
	struct order o = {.objects = objects, .n = json_array_size(objects), .err = err};
	size_t *order = NULL;
	int rc = 0;

	*order_out = NULL;
	if (o.err == NULL)
		o.err = &local;
	if (!json_is_array(objects))
		return ll_err_set(o.err, -EINVAL, "the rendered objects are not a list");
	if (o.n > TPL_ORDER_OBJECTS_MAX)
		return ll_err_set(o.err, -E2BIG,
		                  "the render has %zu objects; at most %d are applied", o.n,
		                  TPL_ORDER_OBJECTS_MAX);
	o.nodes = xcalloc(o.n, sizeof(*o.nodes));
	order = xmalloc((o.n > 0 ? o.n : 1) * sizeof(*order));
	rc = load_nodes(&o);
	for (size_t i = 0; rc == 0 && i < o.n; i++)
		rc = load_deps(&o, i);
	if (rc == 0)
		rc = sort(&o, order);
	free(o.nodes);
	if (rc != 0) {
		free(order);
		return rc;
	}
	*order_out = order;
	return 0;
}
