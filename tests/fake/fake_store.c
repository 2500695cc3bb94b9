/*
 * fake_store.c - the fake API server's objects, history, selectors and patches (see
 * fake_apiserver.h; the HTTP side is fake_apiserver.c). Everything here runs under f->mu.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mem.h"
#include "fake_internal.h"

/* ---- resources ---- */

const struct fake_res *fake__res(struct fake_api *f, const char *name)
{
	for (size_t i = 0; i < f->res.len; i++)
		if (strcmp(f->res.v[i].name, name) == 0)
			return &f->res.v[i];
	return NULL;
}

const struct fake_res *fake__res_by_path(struct fake_api *f, const char *group, const char *version,
                                         const char *resource)
{
	for (size_t i = 0; i < f->res.len; i++) {
		const struct fake_res *r = &f->res.v[i];

		if (strcmp(r->group, group) == 0 && strcmp(r->version, version) == 0 &&
		    strcmp(r->resource, resource) == 0)
			return r;
	}
	return NULL;
}

/* ---- keys and metadata ---- */

static char *key_of(const struct fake_res *r, const char *ns, const char *name)
{
	return xasprintf("%s\n%s\n%s", r->name, r->namespaced && ns ? ns : "", name);
}

const char *fake__str(const json_t *obj, const char *k1, const char *k2)
{
	json_t *v = json_object_get(obj, k1);

	if (k2 != NULL)
		v = json_object_get(v, k2);
	return json_string_value(v);
}

json_t *fake__meta(json_t *obj)
{
	json_t *m = json_object_get(obj, "metadata");

	if (!json_is_object(m)) {
		m = json_object();
		json_object_set_new(obj, "metadata", m);
	}
	return m;
}

json_t *fake__lookup(struct fake_api *f, const struct fake_res *r, const char *ns, const char *name)
{
	char *key = key_of(r, ns, name);
	json_t *obj = json_object_get(f->store, key);

	free(key);
	return obj;
}

static void now_utc(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *without(const json_t *obj, const char *a, const char *b)
{
	json_t *c = json_copy((json_t *)obj);

	json_object_del(c, a);
	json_object_del(c, b);
	return c;
}

/* Generation moves when anything but metadata and status changes. */
static long long next_generation(const json_t *obj, const json_t *old)
{
	json_t *a, *b;
	long long gen;
	bool same;

	if (old == NULL)
		return 1;
	gen = json_integer_value(json_object_get(json_object_get(old, "metadata"), "generation"));
	a = without(obj, "metadata", "status");
	b = without(old, "metadata", "status");
	same = json_equal(a, b);
	json_decref(a);
	json_decref(b);
	return same ? gen : gen + 1;
}

/* ---- history ---- */

static void record_event(struct fake_api *f, const struct fake_res *r, const char *type,
                         json_t *obj, json_t *old)
{
	json_array_append_new(f->events,
	                      json_pack("{s:I,s:s,s:s,s:O,s:O?}", "rv", f->rv, "res", r->name,
	                                "type", type, "object", obj, "old", old));
	fake__changed(f);
}

/*
 * fake__store() - store @obj (stolen) as @r's object, replacing @old (borrowed, NULL: new):
 * stamps uid, creationTimestamp, generation and a new resourceVersion, runs the write hook,
 * and records the event. Returns the stored object (borrowed).
 */
json_t *fake__store(struct fake_api *f, const struct fake_res *r, const char *verb, json_t *obj,
                    json_t *old)
{
	json_t *m = fake__meta(obj), *om = json_object_get(old, "metadata");
	char stamp[32], *key, uid[48];

	if (old == NULL) {
		now_utc(stamp);
		snprintf(uid, sizeof(uid), "00000000-fake-%020lld", ++f->uid_seq);
		json_object_set_new(m, "uid", json_string(uid));
		json_object_set_new(m, "creationTimestamp", json_string(stamp));
	} else {
		json_object_set(m, "uid", json_object_get(om, "uid"));
		json_object_set(m, "creationTimestamp", json_object_get(om, "creationTimestamp"));
		if (json_object_get(om, "deletionTimestamp"))
			json_object_set(m, "deletionTimestamp",
			                json_object_get(om, "deletionTimestamp"));
	}
	json_object_set_new(m, "generation", json_integer(next_generation(obj, old)));
	json_object_del(m, "managedFields");
	snprintf(stamp, sizeof(stamp), "%lld", ++f->rv);
	json_object_set_new(m, "resourceVersion", json_string(stamp));
	if (f->hook)
		f->hook(verb, r->name, obj, f->hook_ud);
	key = key_of(r, fake__str(obj, "metadata", "namespace"),
	             fake__str(obj, "metadata", "name"));
	json_object_set_new(f->store, key, obj);
	free(key);
	record_event(f, r, old ? "MODIFIED" : "ADDED", obj, old);
	return obj;
}

/* fake__remove() - delete the stored @obj (borrowed) of @r for good. */
void fake__remove(struct fake_api *f, const struct fake_res *r, json_t *obj)
{
	char *key = key_of(r, fake__str(obj, "metadata", "namespace"),
	                   fake__str(obj, "metadata", "name"));
	json_t *gone = json_deep_copy(obj);
	char rv[32];

	f->rv++;
	snprintf(rv, sizeof(rv), "%lld", f->rv);
	json_object_set_new(fake__meta(gone), "resourceVersion", json_string(rv));
	json_object_del(f->store, key); /* frees obj */
	record_event(f, r, "DELETED", gone, NULL);
	json_decref(gone);
	free(key);
}

static bool has_finalizers(const json_t *obj)
{
	return json_array_size(json_object_get(json_object_get(obj, "metadata"), "finalizers")) > 0;
}

/* Delete everything in namespace @ns, then the namespace itself (unless finalizers hold it). */
void fake__finish_namespace(struct fake_api *f, const char *ns)
{
	const struct fake_res *nsr = fake__res(f, "namespaces");
	json_t *victims = json_array(), *v, *obj;
	const char *key;
	size_t i;

	json_object_foreach(f->store, key, obj) {
		const char *ons = fake__str(obj, "metadata", "namespace");

		if (ons != NULL && strcmp(ons, ns) == 0 && strncmp(key, "namespaces\n", 11) != 0)
			json_array_append_new(victims, json_string(key));
	}
	json_array_foreach(victims, i, v) {
		char *resname = xstrndup(json_string_value(v), strcspn(json_string_value(v), "\n"));

		obj = json_object_get(f->store, json_string_value(v));
		if (obj)
			fake__remove(f, fake__res(f, resname), obj);
		free(resname);
	}
	json_decref(victims);
	obj = fake__lookup(f, nsr, NULL, ns);
	if (obj && !has_finalizers(obj))
		fake__remove(f, nsr, obj);
}

static void mark_deleting(struct fake_api *f, const struct fake_res *r, json_t *obj)
{
	json_t *c;
	char stamp[32];

	if (json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp"))
		return; /* deleting already: a second DELETE changes nothing */
	c = json_deep_copy(obj);
	now_utc(stamp);
	json_object_set_new(fake__meta(c), "deletionTimestamp", json_string(stamp));
	json_object_set_new(fake__meta(c), "deletionGracePeriodSeconds", json_integer(0));
	if (strcmp(r->name, "namespaces") == 0) {
		json_t *st = json_object();

		json_object_set_new(st, "phase", json_string("Terminating"));
		json_object_set_new(c, "status", st);
	}
	fake__store(f, r, "delete", c, obj);
}

/*
 * fake__delete() - delete @obj (borrowed, stored) as a DELETE does. Returns the object's last
 * state (new reference): with a deletionTimestamp when finalizers or a held namespace keep it.
 */
json_t *fake__delete(struct fake_api *f, const struct fake_res *r, json_t *obj)
{
	bool is_ns = strcmp(r->name, "namespaces") == 0;
	const char *ns = fake__str(obj, "metadata", "name");
	json_t *out = json_deep_copy(obj), *now;

	if (!is_ns && !has_finalizers(obj)) {
		fake__remove(f, r, obj);
		return out;
	}
	mark_deleting(f, r, obj);
	json_decref(out);
	now = fake__lookup(f, r, is_ns ? NULL : fake__str(obj, "metadata", "namespace"), ns);
	out = json_deep_copy(now);
	if (is_ns && !f->hold_ns) {
		char *name = xstrdup(ns);

		fake__finish_namespace(f, name);
		free(name);
	}
	return out;
}

/* fake__after_write() - a deleting object whose last finalizer went is deleted now. */
void fake__after_write(struct fake_api *f, const struct fake_res *r, json_t *obj)
{
	if (json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") == NULL ||
	    has_finalizers(obj))
		return;
	if (strcmp(r->name, "namespaces") == 0) {
		if (!f->hold_ns) {
			char *name = xstrdup(fake__str(obj, "metadata", "name"));

			fake__finish_namespace(f, name);
			free(name);
		}
		return;
	}
	fake__remove(f, r, obj);
}

/* ---- label and field selectors ---- */

enum sel_op { SEL_EQ, SEL_NE, SEL_IN, SEL_NOTIN, SEL_EXISTS, SEL_NOT_EXISTS };

static char *trim(char *s)
{
	char *e;

	while (*s == ' ')
		s++;
	e = s + strlen(s);
	while (e > s && e[-1] == ' ')
		*--e = '\0';
	return s;
}

/* Values of "(a, b)" as an array; NULL when not a parenthesised list. */
static json_t *set_values(char *s)
{
	json_t *out;
	char *save = NULL, *tok;
	size_t n;

	s = trim(s);
	n = strlen(s);
	if (n < 2 || s[0] != '(' || s[n - 1] != ')')
		return NULL;
	s[n - 1] = '\0';
	out = json_array();
	for (tok = strtok_r(s + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		json_array_append_new(out, json_string(trim(tok)));
	return out;
}

static json_t *requirement(const char *key, enum sel_op op, json_t *values)
{
	return json_pack("{s:s,s:i,s:o}", "key", key, "op", (int)op, "values",
	                 values ? values : json_array());
}

static json_t *parse_set_req(char *part, char *sp)
{
	char *rest = trim(sp + 1);
	enum sel_op op;
	json_t *vals;

	*sp = '\0';
	if (strncmp(rest, "notin", 5) == 0 && (rest[5] == ' ' || rest[5] == '(')) {
		op = SEL_NOTIN;
		rest += 5;
	} else if (strncmp(rest, "in", 2) == 0 && (rest[2] == ' ' || rest[2] == '(')) {
		op = SEL_IN;
		rest += 2;
	} else {
		return NULL;
	}
	vals = set_values(rest);
	return vals ? requirement(trim(part), op, vals) : NULL;
}

static json_t *parse_req(char *part)
{
	char *p;

	part = trim(part);
	if (*part == '\0')
		return NULL;
	if (*part == '!')
		return requirement(trim(part + 1), SEL_NOT_EXISTS, NULL);
	if ((p = strstr(part, "!=")) != NULL) {
		*p = '\0';
		return requirement(trim(part), SEL_NE, json_pack("[s]", trim(p + 2)));
	}
	if ((p = strchr(part, '=')) != NULL) {
		*p = '\0';
		return requirement(trim(part), SEL_EQ,
		                   json_pack("[s]", trim(p[1] == '=' ? p + 2 : p + 1)));
	}
	if ((p = strpbrk(part, " (")) != NULL) {
		if (*p == '(') /* "key(a)" is not a selector */
			return NULL;
		return parse_set_req(part, p);
	}
	return requirement(part, SEL_EXISTS, NULL);
}

/* fake__parse_labels() - @sel as an array of requirements, or NULL when it does not parse. */
json_t *fake__parse_labels(const char *sel)
{
	char *copy = xstrdup(sel ? sel : ""), *start = copy, *p;
	json_t *out = json_array(), *req;
	int depth = 0;
	bool bad = false;

	for (p = copy;; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')')
			depth--;
		if ((*p == ',' && depth == 0) || *p == '\0') {
			bool end = *p == '\0';

			*p = '\0';
			if (*trim(start) != '\0') {
				req = parse_req(start);
				bad |= req == NULL;
				json_array_append_new(out, req ? req : json_null());
			}
			start = p + 1;
			if (end)
				break;
		}
	}
	free(copy);
	if (bad || depth != 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static bool in_values(const json_t *values, const char *v)
{
	json_t *x;
	size_t i;

	json_array_foreach(values, i, x)
		if (v && strcmp(json_string_value(x), v) == 0)
			return true;
	return false;
}

bool fake__labels_match(const json_t *reqs, const json_t *obj)
{
	const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels"), *r;
	size_t i;

	json_array_foreach(reqs, i, r) {
		const char *v = json_string_value(
		        json_object_get(labels, json_string_value(json_object_get(r, "key"))));
		const json_t *vals = json_object_get(r, "values");
		bool ok = false;

		switch ((enum sel_op)json_integer_value(json_object_get(r, "op"))) {
		case SEL_EQ:
		case SEL_IN:
			ok = in_values(vals, v);
			break;
		case SEL_NE:
		case SEL_NOTIN:
			ok = !in_values(vals, v);
			break;
		case SEL_EXISTS:
			ok = v != NULL;
			break;
		case SEL_NOT_EXISTS:
			ok = v == NULL;
			break;
		}
		if (!ok)
			return false;
	}
	return true;
}

/* fake__parse_fields() - [{field, value, neg}], or NULL for a field the fake does not know. */
json_t *fake__parse_fields(const char *sel)
{
	char *copy = xstrdup(sel ? sel : ""), *save = NULL, *tok;
	json_t *out = json_array();

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *val;
		bool neg = eq && eq > tok && eq[-1] == '!';

		if (eq == NULL)
			goto bad;
		val = eq + 1 + (eq[1] == '=');
		*(neg ? eq - 1 : eq) = '\0';
		tok = trim(tok);
		if (strcmp(tok, "metadata.name") != 0 && strcmp(tok, "metadata.namespace") != 0)
			goto bad;
		json_array_append_new(out, json_pack("{s:s,s:s,s:b}", "field", tok + 9, "value",
		                                     trim(val), "neg", neg));
	}
	free(copy);
	return out;
bad:
	free(copy);
	json_decref(out);
	return NULL;
}

bool fake__fields_match(const json_t *reqs, const json_t *obj)
{
	const json_t *r;
	size_t i;

	json_array_foreach(reqs, i, r) {
		const char *have = fake__str(obj, "metadata", fake__str(r, "field", NULL));
		bool eq = strcmp(have ? have : "", fake__str(r, "value", NULL)) == 0;

		if (eq == json_is_true(json_object_get(r, "neg")))
			return false;
	}
	return true;
}

/* ---- patches ---- */

/* fake__merge_patch() - RFC 7386: @patch (borrowed) applied to @target (stolen). New ref. */
json_t *fake__merge_patch(json_t *target, const json_t *patch)
{
	const char *k;
	json_t *v;

	if (!json_is_object(patch)) {
		json_decref(target);
		return json_deep_copy(patch);
	}
	if (!json_is_object(target)) {
		json_decref(target);
		target = json_object();
	}
	json_object_foreach((json_t *)patch, k, v) {
		if (json_is_null(v))
			json_object_del(target, k);
		else {
			json_t *have = json_object_get(target, k);

			json_object_set_new(
			        target, k,
			        fake__merge_patch(have ? json_incref(have) : json_null(), v));
		}
	}
	return target;
}

/* Unescape one JSON pointer token (~1 is "/", ~0 is "~") in place. */
static void unescape_token(char *t)
{
	char *w = t;

	for (; *t; t++) {
		if (t[0] == '~' && (t[1] == '0' || t[1] == '1')) {
			*w++ = t[1] == '1' ? '/' : '~';
			t++;
		} else {
			*w++ = *t;
		}
	}
	*w = '\0';
}

/* Resolve all but the last token of @path in @doc; *@last gets the last token (xstrdup). */
static json_t *pointer_parent(json_t *doc, const char *path, char **last)
{
	char *copy, *tok, *next;
	json_t *cur = doc;

	*last = NULL;
	if (path == NULL || path[0] != '/')
		return NULL;
	copy = xstrdup(path + 1);
	for (tok = copy; (next = strchr(tok, '/')) != NULL; tok = next + 1) {
		*next = '\0';
		unescape_token(tok);
		cur = json_is_array(cur) ? json_array_get(cur, strtoul(tok, NULL, 10))
		                         : json_object_get(cur, tok);
		if (cur == NULL)
			break;
	}
	if (cur != NULL) {
		unescape_token(tok);
		*last = xstrdup(tok);
	}
	free(copy);
	return cur;
}

static bool index_of(const json_t *arr, const char *tok, size_t *i, bool may_append)
{
	char *end;

	if (may_append && strcmp(tok, "-") == 0) {
		*i = json_array_size(arr);
		return true;
	}
	*i = strtoul(tok, &end, 10);
	return *tok != '\0' && *end == '\0' && *i < json_array_size(arr) + may_append;
}

static bool json_patch_op(json_t *doc, const json_t *op)
{
	const char *name = fake__str(op, "op", NULL);
	json_t *value = json_object_get(op, "value"), *parent;
	char *last;
	size_t i;
	bool ok = false;

	parent = pointer_parent(doc, fake__str(op, "path", NULL), &last);
	if (parent == NULL || name == NULL)
		goto out;
	if (strcmp(name, "test") == 0) {
		json_t *have = json_is_array(parent) ? (index_of(parent, last, &i, false)
		                                                ? json_array_get(parent, i)
		                                                : NULL)
		                                     : json_object_get(parent, last);

		ok = have != NULL && json_equal(have, value);
	} else if (strcmp(name, "remove") == 0) {
		ok = json_is_array(parent) ? index_of(parent, last, &i, false) &&
		                                     json_array_remove(parent, i) == 0
		                           : json_object_del(parent, last) == 0;
	} else if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0) {
		bool add = name[0] == 'a';

		if (json_is_array(parent))
			ok = index_of(parent, last, &i, add) &&
			     (add ? json_array_insert(parent, i, value)
			          : json_array_set(parent, i, value)) == 0;
		else if (json_is_object(parent))
			ok = (add || json_object_get(parent, last)) &&
			     json_object_set(parent, last, value) == 0;
	}
out:
	free(last);
	return ok;
}

/* fake__json_patch() - RFC 6902 add/remove/replace/test on a copy of @doc; NULL on failure. */
json_t *fake__json_patch(const json_t *doc, const json_t *ops)
{
	json_t *out = json_deep_copy(doc), *op;
	size_t i;

	if (!json_is_array(ops))
		goto bad;
	json_array_foreach(ops, i, op)
		if (!json_patch_op(out, op))
			goto bad;
	return out;
bad:
	json_decref(out);
	return NULL;
}
