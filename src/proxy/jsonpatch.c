/* jsonpatch.c - RFC 6902 JSON Patch on jansson trees (jsonpatch.h). */
#include "proxy/jsonpatch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A pointer split into its parent's pointer and its last token, unescaped. */
struct target {
	char parent[JP_POINTER_MAX + 1];
	char last[JP_POINTER_MAX + 1];
	bool root; /* the pointer is "" */
};

/* Unescape one token (~1 is '/', ~0 is '~'). Return: 0 or -EINVAL. */
static int unescape(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '~') {
			if (i + 1 >= n || (s[i + 1] != '0' && s[i + 1] != '1'))
				return -EINVAL;
			c = s[++i] == '0' ? '~' : '/';
		}
		if (o + 1 >= size)
			return -E2BIG;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static int split_target(const char *ptr, struct target *t)
{
	const char *slash;

	memset(t, 0, sizeof(*t));
	if (strlen(ptr) > JP_POINTER_MAX)
		return -E2BIG;
	if (!*ptr) {
		t->root = true;
		return 0;
	}
	if (*ptr != '/')
		return -EINVAL;
	slash = strrchr(ptr, '/');
	memcpy(t->parent, ptr, (size_t)(slash - ptr));
	return unescape(slash + 1, strlen(slash + 1), t->last, sizeof(t->last));
}

/* An array index: "0" or digits without a leading zero, below @limit. -1 when not. */
static long index_of(const char *tok, size_t limit)
{
	char *end;
	long v;

	if (!*tok || (tok[0] == '0' && tok[1]) || tok[0] < '0' || tok[0] > '9')
		return -1;
	v = strtol(tok, &end, 10);
	return *end || v < 0 || (size_t)v >= limit ? -1 : v;
}

/* The value @ptr names in @root, or NULL. */
static json_t *get(json_t *root, const char *ptr)
{
	char tok[JP_POINTER_MAX + 1];
	const char *p = ptr;
	json_t *v = root;

	if (*p && *p != '/')
		return NULL;
	while (v && *p) {
		const char *next = strchr(p + 1, '/');
		size_t n = next ? (size_t)(next - p - 1) : strlen(p + 1);
		long i;

		if (unescape(p + 1, n, tok, sizeof(tok)) < 0)
			return NULL;
		if (json_is_object(v)) {
			v = json_object_get(v, tok);
		} else if (json_is_array(v)) {
			i = index_of(tok, json_array_size(v));
			v = i < 0 ? NULL : json_array_get(v, (size_t)i);
		} else {
			v = NULL;
		}
		p += n + 1;
	}
	return v;
}

/* Add @value (a new reference, always taken) at @ptr. */
static int add(json_t **root, const char *ptr, json_t *value)
{
	struct target t;
	json_t *parent;
	long i;
	int rc = split_target(ptr, &t);

	if (rc == 0 && t.root) {
		json_decref(*root);
		*root = value;
		return 0;
	}
	parent = rc == 0 ? get(*root, t.parent) : NULL;
	if (rc == 0 && json_is_object(parent))
		return json_object_set_new(parent, t.last, value) == 0 ? 0 : -ENOMEM;
	if (rc == 0 && json_is_array(parent)) {
		if (strcmp(t.last, "-") == 0)
			return json_array_append_new(parent, value) == 0 ? 0 : -ENOMEM;
		i = index_of(t.last, json_array_size(parent) + 1);
		if (i >= 0)
			return json_array_insert_new(parent, (size_t)i, value) == 0 ? 0 : -ENOMEM;
	}
	json_decref(value);
	return rc < 0 ? rc : -ENOENT;
}

static int remove_at(json_t *root, const char *ptr)
{
	struct target t;
	json_t *parent;
	long i;
	int rc = split_target(ptr, &t);

	if (rc < 0)
		return rc;
	if (t.root)
		return -EINVAL; /* the whole document cannot be removed */
	parent = get(root, t.parent);
	if (json_is_object(parent))
		return json_object_del(parent, t.last) == 0 ? 0 : -ENOENT;
	i = json_is_array(parent) ? index_of(t.last, json_array_size(parent)) : -1;
	return i >= 0 && json_array_remove(parent, (size_t)i) == 0 ? 0 : -ENOENT;
}

static int op_move(json_t **root, const char *from, const char *path, bool copy)
{
	size_t n = strlen(from);
	json_t *v = get(*root, from);
	int rc;

	if (!v)
		return -ENOENT;
	if (!copy && strncmp(path, from, n) == 0 && path[n] == '/')
		return -EINVAL; /* into its own child */
	v = copy ? json_deep_copy(v) : json_incref(v);
	rc = copy ? 0 : remove_at(*root, from);
	if (rc < 0) {
		json_decref(v);
		return rc;
	}
	return add(root, path, v);
}

static int op_one(json_t **root, const json_t *op)
{
	const char *kind = json_string_value(json_object_get(op, "op"));
	const char *path = json_string_value(json_object_get(op, "path"));
	const char *from = json_string_value(json_object_get(op, "from"));
	json_t *value = json_object_get(op, "value");

	if (!kind || !path)
		return -EINVAL;
	if (strcmp(kind, "add") == 0 && value)
		return add(root, path, json_deep_copy(value));
	if (strcmp(kind, "remove") == 0)
		return remove_at(*root, path);
	if (strcmp(kind, "replace") == 0 && value)
		return !get(*root, path) ? -ENOENT : add(root, path, json_deep_copy(value));
	if ((strcmp(kind, "move") == 0 || strcmp(kind, "copy") == 0) && from)
		return op_move(root, from, path, kind[0] == 'c');
	if (strcmp(kind, "test") == 0 && value)
		return json_equal(get(*root, path), value) ? 0 : -EPROTO;
	return -EINVAL;
}

int jp_apply(json_t **doc, const json_t *ops, char *why, size_t why_size)
{
	json_t *work;
	size_t i;
	const json_t *op;
	int rc = 0;

	if (!json_is_array(ops)) {
		snprintf(why, why_size, "a JSON patch is an array");
		return -EINVAL;
	}
	if (json_array_size(ops) > JP_OPS_MAX) {
		snprintf(why, why_size, "over %d operations", JP_OPS_MAX);
		return -E2BIG;
	}
	work = json_deep_copy(*doc);
	json_array_foreach(ops, i, op) {
		rc = op_one(&work, op);
		if (rc < 0) {
			snprintf(why, why_size, "operation %zu: %s", i,
			         rc == -ENOENT   ? "the path does not exist"
			         : rc == -EPROTO ? "the test failed"
			                         : "not a valid operation");
			break;
		}
	}
	if (rc < 0) {
		json_decref(work);
		return rc;
	}
	json_decref(*doc);
	*doc = work;
	return 0;
}
