/*
 * fake_apiserver.c - the HTTP side of the fake API server (see fake_apiserver.h): routing,
 * verbs, lists, watches, rules, the request log and waiting. Objects live in fake_store.c.
 */
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/mem.h"
#include "fake_internal.h"

#define MAX_BODY        (8u << 20)
#define MAX_SEGS        10
#define FAKE_RECHECK_MS 20

/* One request being received. */
struct upload {
	struct buf body;
};

/* What the URL names. */
struct target {
	const struct fake_res *r;
	const char *ns, *name, *sub;
	char *segs[MAX_SEGS];
	int n;
	bool discovery;
	const char *group, *version;
};

struct call {
	struct fake_api *f;
	struct MHD_Connection *conn;
	const char *method;
	struct target t;
	const char *body;
	size_t body_len;
	bool meta; /* PartialObjectMetadata answers */
};

/* An answer: status and body (owned), or a watch stream. */
struct answer {
	int status;
	json_t *body;
	struct MHD_Response *stream;
	bool corrupt;
	size_t dump_flags; /* json_dumps() flags of the body */
};

static const struct {
	const char *group, *version, *resource, *kind;
	bool namespaced, has_status;
} BUILTIN[] = {
        {"", "v1", "namespaces", "Namespace", false, true},
        {"", "v1", "configmaps", "ConfigMap", true, false},
        {"", "v1", "secrets", "Secret", true, false},
        {"", "v1", "serviceaccounts", "ServiceAccount", true, false},
        {"", "v1", "pods", "Pod", true, true},
        {"", "v1", "events", "Event", true, false},
        {"", "v1", "resourcequotas", "ResourceQuota", true, true},
        {"", "v1", "limitranges", "LimitRange", true, false},
        {"", "v1", "podtemplates", "PodTemplate", true, false},
        {"coordination.k8s.io", "v1", "leases", "Lease", true, false},
        {"rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true, false},
        {"rbac.authorization.k8s.io", "v1", "roles", "Role", true, false},
        {"rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false, false},
        {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false,
         false},
        {"networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true, false},
        {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
         false, true},
        /* create only, answered by the access hook, never stored (do_review()) */
        {"authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", false,
         false},
        /* create only, answered by the token hook, never stored (do_review()) */
        {"authentication.k8s.io", "v1", "tokenreviews", "TokenReview", false, false},
};

#define REVIEWS       "selfsubjectaccessreviews.authorization.k8s.io"
#define TOKEN_REVIEWS "tokenreviews.authentication.k8s.io"

/* ---- answers ---- */

static const char *reason_of(int code)
{
	switch (code) {
	case 400:
		return "BadRequest";
	case 403:
		return "Forbidden";
	case 404:
		return "NotFound";
	case 405:
		return "MethodNotAllowed";
	case 409:
		return "Conflict";
	case 410:
		return "Expired";
	case 415:
		return "UnsupportedMediaType";
	case 422:
		return "Invalid";
	case 429:
		return "TooManyRequests";
	case 503:
		return "ServiceUnavailable";
	default:
		return code >= 500 ? "InternalError" : "Unknown";
	}
}

static json_t *status_body(int code, const char *reason, const char *message)
{
	return json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1",
	                 "metadata", "status", "Failure", "message", message, "reason",
	                 reason ? reason : reason_of(code), "code", code);
}

static struct answer fail(int code, const char *reason, const char *message)
{
	return (struct answer){code, status_body(code, reason, message), NULL, false, JSON_COMPACT};
}

static struct answer ok(int code, json_t *body)
{
	return (struct answer){code, body, NULL, false, JSON_COMPACT};
}

static json_t *as_meta(const json_t *obj, bool meta)
{
	if (!meta)
		return json_deep_copy(obj);
	return json_pack("{s:s,s:s,s:O}", "apiVersion", "meta.k8s.io/v1", "kind",
	                 "PartialObjectMetadata", "metadata", json_object_get(obj, "metadata"));
}

/* ---- the request log and rules ---- */

static char *query_of(struct MHD_Connection *conn)
{
	struct buf b = BUF_INIT(64 << 10);
	const char *keys[] = {"watch",         "resourceVersion", "resourceVersionMatch",
	                      "labelSelector", "fieldSelector",   "limit",
	                      "continue",      "fieldManager",    "force",
	                      "timeoutSeconds"};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, keys[i]);

		if (v)
			buf_appendf(&b, "%s%s=%s", b.len ? "&" : "", keys[i], v);
	}
	return buf_detach(&b);
}

/* Log a request on arrival (held ones count); its status is filled in when answered. */
static size_t log_arrival(struct fake_api *f, const char *method, const char *url,
                          const char *query)
{
	json_array_append_new(f->log, json_pack("{s:s,s:s,s:s,s:i}", "method", method, "path", url,
	                                        "query", query, "status", 0));
	fake__changed(f);
	return json_array_size(f->log) - 1;
}

static void log_answer(struct fake_api *f, size_t idx, const char *method, const char *url,
                       int status)
{
	json_object_set_new(json_array_get(f->log, idx), "status", json_integer(status));
	/* an access or token review is a POST that stores nothing */
	if (strcmp(method, "GET") != 0 && strstr(url, "/selfsubjectaccessreviews") == NULL &&
	    strstr(url, "/tokenreviews") == NULL)
		f->writes++;
	fake__changed(f);
}

static struct fake_rule_slot *rule_by_id(struct fake_api *f, int id)
{
	for (size_t i = 0; i < f->rules.len; i++)
		if (f->rules.v[i].id == id && !f->rules.v[i].removed)
			return &f->rules.v[i];
	return NULL;
}

static bool rule_matches(const struct fake_rule_slot *s, const char *method, const char *url,
                         const char *query, bool watch)
{
	if (s->removed || (s->r.times > 0 && s->hits >= s->r.times) || s->r.watch != watch)
		return false;
	if (s->method && strcmp(s->method, method) != 0)
		return false;
	if (s->path && strstr(url, s->path) == NULL)
		return false;
	return s->query == NULL || strstr(query, s->query) != NULL;
}

/* What the rules say: serve as usual, or the answer is in *@a, or serve and then corrupt. Holds
 * here while a FAKE_HOLD rule says so. */
enum verdict { SERVE, ANSWERED, SERVE_CORRUPT };

static enum verdict apply_rules(struct fake_api *f, const char *method, const char *url,
                                const char *query, bool watch, struct answer *a)
{
	struct fake_rule_slot *s = NULL;
	int id;

	for (size_t i = 0; i < f->rules.len && s == NULL; i++)
		if (rule_matches(&f->rules.v[i], method, url, query, watch))
			s = &f->rules.v[i];
	if (s == NULL)
		return SERVE;
	s->hits++;
	id = s->id;
	fake__changed(f);
	switch (s->r.action) {
	case FAKE_ANSWER:
		*a = fail(s->r.status, NULL, "injected by a fake_rule");
		return ANSWERED;
	case FAKE_CORRUPT:
		return SERVE_CORRUPT;
	case FAKE_HOLD:
		while (!f->stopping && (s = rule_by_id(f, id)) != NULL && !s->released)
			pthread_cond_wait(&f->cond, &f->mu);
		return SERVE;
	}
	return SERVE;
}

/* ---- routing ---- */

static bool parse_target(struct fake_api *f, char *url, struct target *t)
{
	char *save = NULL, *tok, **rest;
	int n;

	memset(t, 0, sizeof(*t));
	for (tok = strtok_r(url, "/", &save); tok && t->n < MAX_SEGS;
	     tok = strtok_r(NULL, "/", &save))
		t->segs[t->n++] = tok;
	if (t->n == 0 || tok != NULL)
		return false;
	if (strcmp(t->segs[0], "api") == 0) {
		t->group = "";
		t->version = t->n > 1 ? t->segs[1] : NULL;
		rest = t->segs + 2;
		n = t->n - 2;
	} else if (strcmp(t->segs[0], "apis") == 0) {
		t->group = t->n > 1 ? t->segs[1] : NULL;
		t->version = t->n > 2 ? t->segs[2] : NULL;
		rest = t->segs + 3;
		n = t->n - 3;
	} else {
		return false;
	}
	if (n <= 0) {
		t->discovery = true;
		return true;
	}
	if (n >= 3 && strcmp(rest[0], "namespaces") == 0) {
		const struct fake_res *r = fake__res_by_path(f, t->group, t->version, rest[2]);

		if (r && r->namespaced) {
			t->ns = rest[1];
			rest += 2;
			n -= 2;
		}
	}
	t->r = fake__res_by_path(f, t->group, t->version, rest[0]);
	t->name = n > 1 ? rest[1] : NULL;
	t->sub = n > 2 ? rest[2] : NULL;
	return t->r != NULL && n <= 3 && (t->sub == NULL || strcmp(t->sub, "status") == 0);
}

static json_t *discovery(struct fake_api *f, const struct target *t)
{
	json_t *out, *list = json_array();

	if (t->version == NULL && t->group == NULL) { /* /apis */
		json_t *seen = json_object();

		for (size_t i = 0; i < f->res.len; i++) {
			const struct fake_res *r = &f->res.v[i];
			char *gv = xasprintf("%s/%s", r->group, r->version);

			if (*r->group && !json_object_get(seen, r->group)) {
				json_object_set_new(seen, r->group, json_true());
				json_array_append_new(
				        list, json_pack("{s:s,s:[{s:s,s:s}],s:{s:s,s:s}}", "name",
				                        r->group, "versions", "groupVersion", gv,
				                        "version", r->version, "preferredVersion",
				                        "groupVersion", gv, "version", r->version));
			}
			free(gv);
		}
		json_decref(seen);
		return json_pack("{s:s,s:s,s:o}", "kind", "APIGroupList", "apiVersion", "v1",
		                 "groups", list);
	}
	if (t->version == NULL && *t->group == '\0') { /* /api */
		json_decref(list);
		return json_pack("{s:s,s:[s]}", "kind", "APIVersions", "versions", "v1");
	}
	if (t->version == NULL) { /* /apis/<group> */
		const struct fake_res *r = NULL;

		json_decref(list);
		for (size_t i = 0; i < f->res.len && r == NULL; i++)
			if (strcmp(f->res.v[i].group, t->group) == 0)
				r = &f->res.v[i];
		if (r == NULL)
			return NULL;
		return json_pack("{s:s,s:s,s:s,s:[{s:o,s:s}]}", "kind", "APIGroup", "apiVersion",
		                 "v1", "name", r->group, "versions", "groupVersion",
		                 json_sprintf("%s/%s", r->group, r->version), "version",
		                 r->version);
	}
	for (size_t i = 0; i < f->res.len; i++) {
		const struct fake_res *r = &f->res.v[i];

		if (strcmp(r->group, t->group) != 0 || strcmp(r->version, t->version) != 0)
			continue;
		json_array_append_new(list,
		                      json_pack("{s:s,s:s,s:b,s:s,s:[s,s,s,s,s,s,s,s]}", "name",
		                                r->resource, "singularName", "", "namespaced",
		                                r->namespaced, "kind", r->kind, "verbs", "create",
		                                "delete", "deletecollection", "get", "list",
		                                "patch", "update", "watch"));
	}
	out = json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
	                "groupVersion", "", "resources", list);
	json_object_set_new(out, "groupVersion",
	                    *t->group ? json_sprintf("%s/%s", t->group, t->version)
	                              : json_string(t->version));
	return out;
}

/* ---- lists ---- */

static int by_ns_name(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	const char *xn = fake__str(x, "metadata", "namespace"),
	           *yn = fake__str(y, "metadata", "namespace");
	int c = strcmp(xn ? xn : "", yn ? yn : "");

	return c ? c : strcmp(fake__str(x, "metadata", "name"), fake__str(y, "metadata", "name"));
}

/* Objects of @r in @ns (NULL: all) matching both selectors, sorted; borrowed, in *@n. */
static json_t **select_objects(struct fake_api *f, const struct fake_res *r, const char *ns,
                               const json_t *labels, const json_t *fields, size_t *n)
{
	json_t **out = xcalloc(json_object_size(f->store) + 1, sizeof(*out)), *obj;
	size_t prefix = strlen(r->name);
	const char *key;

	*n = 0;
	json_object_foreach(f->store, key, obj) {
		const char *ons = fake__str(obj, "metadata", "namespace");

		if (strncmp(key, r->name, prefix) != 0 || key[prefix] != '\n')
			continue;
		if (ns && (ons == NULL || strcmp(ons, ns) != 0))
			continue;
		if (fake__labels_match(labels, obj) && fake__fields_match(fields, obj))
			out[(*n)++] = obj;
	}
	qsort(out, *n, sizeof(*out), by_ns_name);
	return out;
}

static const char *arg(const struct call *c, const char *key)
{
	return MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* Where a continue token resumes: after "ns/name"; its list's resourceVersion in *@rv. */
static const char *resume_after(const char *token, long long *rv)
{
	int used = 0;

	if (token == NULL || sscanf(token, "fake1:%lld:%n", rv, &used) != 1 || used == 0)
		return NULL;
	return token + used;
}

static json_t *list_body(struct call *c, json_t **items, size_t n, size_t from, size_t limit)
{
	struct fake_api *f = c->f;
	json_t *arr = json_array(), *meta = json_object();
	size_t i;

	for (i = from; i < n && (limit == 0 || i - from < limit); i++)
		json_array_append_new(arr, as_meta(items[i], c->meta));
	json_object_set_new(meta, "resourceVersion", json_sprintf("%lld", f->rv));
	if (i < n) {
		const char *ns = fake__str(items[i - 1], "metadata", "namespace");

		json_object_set_new(meta, "continue",
		                    json_sprintf("fake1:%lld:%s/%s", f->rv, ns ? ns : "",
		                                 fake__str(items[i - 1], "metadata", "name")));
		json_object_set_new(meta, "remainingItemCount", json_integer((json_int_t)(n - i)));
	}
	/* do_list() sets the apiVersion and kind of a full list */
	return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "meta.k8s.io/v1", "kind",
	                 "PartialObjectMetadataList", "metadata", meta, "items", arr);
}

static size_t first_after(json_t **items, size_t n, const char *pos)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const char *ns = fake__str(items[i], "metadata", "namespace");
		char *here =
		        xasprintf("%s/%s", ns ? ns : "", fake__str(items[i], "metadata", "name"));
		int cmp = strcmp(here, pos);

		free(here);
		if (cmp > 0)
			break;
	}
	return i;
}

/* @body (stolen) in the layout fake_api_set_list_layout() asked for. */
static struct answer list_answer(struct fake_api *f, json_t *body)
{
	struct answer a = ok(200, body);
	json_t *reordered;

	switch (f->list_layout) {
	case FAKE_LIST_USUAL:
		break;
	case FAKE_LIST_ITEMS_FIRST:
		reordered = json_pack("{s:O,s:O,s:O,s:O}", "kind", json_object_get(body, "kind"),
		                      "apiVersion", json_object_get(body, "apiVersion"), "items",
		                      json_object_get(body, "items"), "metadata",
		                      json_object_get(body, "metadata"));
		json_decref(body);
		a.body = reordered;
		a.dump_flags = JSON_INDENT(2);
		break;
	case FAKE_LIST_ESCAPED:
		a.dump_flags = JSON_COMPACT | JSON_ESCAPE_SLASH;
		break;
	}
	return a;
}

static struct answer do_list(struct call *c, const json_t *labels, const json_t *fields)
{
	struct fake_api *f = c->f;
	const char *token = arg(c, "continue"), *pos = NULL, *lim = arg(c, "limit");
	long long rv = 0;
	size_t n, from = 0;
	json_t **items, *body;
	char *kind;

	if (token && *token) {
		pos = resume_after(token, &rv);
		if (pos == NULL)
			return fail(400, NULL, "invalid continue token");
		if (rv <= f->compacted)
			return fail(410, "Expired", "the provided continue parameter is too old");
	}
	items = select_objects(f, c->t.r, c->t.ns, labels, fields, &n);
	if (pos)
		from = first_after(items, n, pos);
	body = list_body(c, items, n, from, lim ? strtoul(lim, NULL, 10) : 0);
	free(items);
	if (!c->meta) {
		kind = xasprintf("%sList", c->t.r->kind);
		json_object_set_new(body, "kind", json_string(kind));
		json_object_set_new(body, "apiVersion",
		                    *c->t.r->group
		                            ? json_sprintf("%s/%s", c->t.r->group, c->t.r->version)
		                            : json_string(c->t.r->version));
		free(kind);
	}
	return list_answer(f, body);
}

/* ---- watches ---- */

struct watcher {
	struct fake_api *f;
	const struct fake_res *r;
	char *ns;
	json_t *labels, *fields;
	bool meta, last;
	size_t next;
	unsigned long epoch;
	int64_t deadline_ns;
	struct buf pending;
};

static bool selected(const struct watcher *w, const json_t *obj)
{
	const char *ns = fake__str(obj, "metadata", "namespace");

	if (obj == NULL || (w->ns && (ns == NULL || strcmp(ns, w->ns) != 0)))
		return false;
	return fake__labels_match(w->labels, obj) && fake__fields_match(w->fields, obj);
}

static void push_event(struct watcher *w, const char *type, const json_t *obj)
{
	json_t *ev = json_pack("{s:s,s:o}", "type", type, "object", as_meta(obj, w->meta));
	char *line = json_dumps(ev, JSON_COMPACT);

	buf_appendf(&w->pending, "%s\n", line);
	free(line);
	json_decref(ev);
}

/* The type @w sees for history event @ev, or NULL: the object is not (and was not) selected. */
static const char *seen_as(const struct watcher *w, const json_t *ev)
{
	const char *type = fake__str(ev, "type", NULL);
	bool now = selected(w, json_object_get(ev, "object"));
	bool before = selected(w, json_object_get(ev, "old"));

	if (strcmp(type, "MODIFIED") != 0)
		return now ? type : NULL;
	if (now && before)
		return "MODIFIED";
	return now ? "ADDED" : before ? "DELETED" : NULL;
}

static bool fill_next(struct watcher *w)
{
	json_t *events = w->f->events;

	for (; w->next < json_array_size(events); w->next++) {
		json_t *ev = json_array_get(events, w->next);
		const char *type;

		if (strcmp(fake__str(ev, "res", NULL), w->r->name) != 0)
			continue;
		type = seen_as(w, ev);
		if (type == NULL)
			continue;
		push_event(w, type, json_object_get(ev, "object"));
		w->next++;
		return true;
	}
	return false;
}

static ssize_t watch_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct watcher *w = cls;
	struct fake_api *f = w->f;
	size_t n;

	(void)pos;
	if (w->pending.len == 0 && w->last)
		return MHD_CONTENT_READER_END_OF_STREAM;
	pthread_mutex_lock(&f->mu);
	while (w->pending.len == 0 && !fill_next(w)) {
		int64_t now = clock_mono_ns();

		if (f->stopping || w->epoch != f->epoch || now >= w->deadline_ns) {
			pthread_mutex_unlock(&f->mu);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		clock_cond_wait_until(&f->cond, &f->mu, w->deadline_ns);
	}
	pthread_mutex_unlock(&f->mu);
	n = w->pending.len < max ? w->pending.len : max;
	memcpy(out, w->pending.p, n);
	buf_consume(&w->pending, n);
	return (ssize_t)n;
}

static void watch_free(void *cls)
{
	struct watcher *w = cls;

	buf_release(&w->pending);
	json_decref(w->labels);
	json_decref(w->fields);
	free(w->ns);
	free(w);
}

static size_t first_event_after(struct fake_api *f, long long rv)
{
	size_t i;

	for (i = 0; i < json_array_size(f->events); i++)
		if (json_integer_value(json_object_get(json_array_get(f->events, i), "rv")) > rv)
			break;
	return i;
}

static struct answer do_watch(struct call *c, json_t *labels, json_t *fields)
{
	struct fake_api *f = c->f;
	const char *rvs = arg(c, "resourceVersion"), *ts = arg(c, "timeoutSeconds");
	struct watcher *w = xcalloc(1, sizeof(*w));
	long long rv = rvs && *rvs ? strtoll(rvs, NULL, 10) : 0;
	struct answer a = {200, NULL, NULL, false, JSON_COMPACT};

	*w = (struct watcher){f,
	                      c->t.r,
	                      c->t.ns ? xstrdup(c->t.ns) : NULL,
	                      labels,
	                      fields,
	                      c->meta,
	                      false,
	                      0,
	                      f->epoch,
	                      clock_mono_ns() + (ts ? strtoll(ts, NULL, 10) : 1800) * 1000000000LL,
	                      BUF_INIT(64u << 20)};
	if (rv > 0 && rv < f->compacted) {
		json_t *st = status_body(410, "Expired", "too old resource version");
		json_t *ev = json_pack("{s:s,s:o}", "type", "ERROR", "object", st);
		char *line = json_dumps(ev, JSON_COMPACT);

		buf_appendf(&w->pending, "%s\n", line);
		free(line);
		json_decref(ev);
		w->last = true;
	} else if (rv > 0) {
		w->next = first_event_after(f, rv);
	} else {
		size_t n;
		json_t **items = select_objects(f, c->t.r, c->t.ns, labels, fields, &n);

		for (size_t i = 0; i < n; i++)
			push_event(w, "ADDED", items[i]);
		free(items);
		w->next = json_array_size(f->events);
	}
	a.stream = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, watch_read, w,
	                                             watch_free);
	return a;
}

static struct answer do_collection_get(struct call *c)
{
	const char *watch = arg(c, "watch");
	json_t *labels = fake__parse_labels(arg(c, "labelSelector"));
	json_t *fields = fake__parse_fields(arg(c, "fieldSelector"));
	struct answer a;

	if (labels == NULL || fields == NULL) {
		json_decref(labels);
		json_decref(fields);
		return fail(400, NULL, "unable to parse the selector");
	}
	if (watch && (strcmp(watch, "true") == 0 || strcmp(watch, "1") == 0))
		return do_watch(c, labels, fields); /* takes the selectors */
	a = do_list(c, labels, fields);
	json_decref(labels);
	json_decref(fields);
	return a;
}

/* ---- writes ---- */

static json_t *parse_body(const struct call *c)
{
	json_error_t e;
	json_t *obj = c->body_len ? json_loadb(c->body, c->body_len, 0, &e) : NULL;

	return obj;
}

static bool ns_terminating(struct fake_api *f, const char *ns)
{
	const json_t *o = ns ? fake__lookup(f, fake__res(f, "namespaces"), NULL, ns) : NULL;

	return o && json_object_get(json_object_get(o, "metadata"), "deletionTimestamp");
}

/* Set apiVersion, kind, the namespace of the path, and status for a new object. */
static void fill_new(const struct fake_res *r, json_t *obj, const char *ns)
{
	json_t *m = fake__meta(obj);

	json_object_set_new(obj, "apiVersion",
	                    *r->group ? json_sprintf("%s/%s", r->group, r->version)
	                              : json_string(r->version));
	json_object_set_new(obj, "kind", json_string(r->kind));
	if (r->namespaced && ns)
		json_object_set_new(m, "namespace", json_string(ns));
	else
		json_object_del(m, "namespace");
	if (r->has_status)
		json_object_del(obj, "status");
	if (strcmp(r->name, "namespaces") == 0)
		json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Active"));
}

static void generate_name(struct fake_api *f, json_t *m)
{
	static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
	const char *prefix = fake__str(m, "generateName", NULL);
	char suffix[6];
	unsigned long long x = (unsigned long long)++f->gen_seq * 2654435761ULL;

	for (int i = 0; i < 5; i++, x /= 27)
		suffix[i] = alnum[x % 27];
	suffix[5] = '\0';
	json_object_set_new(m, "name", json_sprintf("%s%s", prefix, suffix));
}

static struct answer create_obj(struct call *c, json_t *obj, const char *verb)
{
	struct fake_api *f = c->f;
	const struct fake_res *r = c->t.r;
	json_t *m = fake__meta(obj);
	const char *name;

	fill_new(r, obj, c->t.ns);
	if (fake__str(m, "name", NULL) == NULL && fake__str(m, "generateName", NULL))
		generate_name(f, m);
	name = fake__str(m, "name", NULL);
	if (name == NULL || *name == '\0') {
		json_decref(obj);
		return fail(422, NULL, "metadata.name: Required value");
	}
	if (fake__lookup(f, r, c->t.ns, name)) {
		json_decref(obj);
		return fail(409, "AlreadyExists", "already exists");
	}
	if (r->namespaced && ns_terminating(f, c->t.ns)) {
		json_decref(obj);
		return fail(403, "Forbidden", "namespace is being terminated");
	}
	return ok(201, as_meta(fake__store(f, r, verb, obj, NULL), false));
}

static bool stale(const json_t *body, const json_t *old)
{
	const char *want = fake__str(json_object_get(body, "metadata"), "resourceVersion", NULL);

	return want && *want && strcmp(want, fake__str(old, "metadata", "resourceVersion")) != 0;
}

/* @patched (stolen) as written to the main resource or to /status of @old. */
static json_t *split_status(const struct call *c, json_t *patched, const json_t *old)
{
	json_t *out;

	if (c->t.sub) {
		out = json_deep_copy(old);
		json_object_set(out, "status", json_object_get(patched, "status"));
		json_decref(patched);
		return out;
	}
	if (c->t.r->has_status) {
		json_object_del(patched, "status");
		if (json_object_get(old, "status"))
			json_object_set(patched, "status", json_object_get(old, "status"));
	}
	return patched;
}

static struct answer store_write(struct call *c, json_t *next, json_t *old, const char *verb)
{
	struct fake_api *f = c->f;
	json_t *stored, *out;

	next = split_status(c, next, old);
	json_object_set(next, "apiVersion", json_object_get(old, "apiVersion"));
	json_object_set(next, "kind", json_object_get(old, "kind"));
	json_object_set(fake__meta(next), "name",
	                json_object_get(json_object_get(old, "metadata"), "name"));
	if (c->t.r->namespaced)
		json_object_set(fake__meta(next), "namespace",
		                json_object_get(json_object_get(old, "metadata"), "namespace"));
	stored = fake__store(f, c->t.r, verb, next, old);
	out = json_deep_copy(stored);
	fake__after_write(f, c->t.r, stored);
	return ok(200, out);
}

static struct answer do_update(struct call *c, json_t *old)
{
	json_t *body = parse_body(c);

	if (!json_is_object(body)) {
		json_decref(body);
		return fail(400, NULL, "the body is not a JSON object");
	}
	if (stale(body, old)) {
		json_decref(body);
		return fail(409, "Conflict",
		            "the object has been modified; please apply your changes to the latest "
		            "version and try again");
	}
	return store_write(c, body, old, "update");
}

static struct answer do_patch(struct call *c, json_t *old)
{
	const char *ct = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "Content-Type");
	json_t *body = parse_body(c), *next;
	bool apply = ct && strncmp(ct, "application/apply-patch", 23) == 0;

	if (body == NULL)
		return fail(400, NULL, "the patch is not JSON (YAML is not implemented)");
	if (ct && strncmp(ct, "application/json-patch+json", 27) == 0) {
		next = old ? fake__json_patch(old, body) : NULL;
		json_decref(body);
		if (old == NULL)
			return fail(404, NULL, "not found");
		if (next == NULL)
			return fail(422, NULL, "the JSON patch did not apply (a test failed?)");
		return store_write(c, next, old, "patch");
	}
	if (old == NULL && apply && c->t.sub == NULL) {
		json_object_set_new(fake__meta(body), "name", json_string(c->t.name));
		return create_obj(c, body, "apply");
	}
	if (old == NULL) {
		json_decref(body);
		return fail(404, NULL, "not found");
	}
	if (!apply && stale(body, old)) {
		json_decref(body);
		return fail(409, "Conflict", "the object has been modified");
	}
	json_object_del(fake__meta(body), "resourceVersion");
	next = fake__merge_patch(json_deep_copy(old), body);
	json_decref(body);
	return store_write(c, next, old, apply ? "apply" : "patch");
}

static struct answer do_delete(struct call *c, json_t *old)
{
	json_t *body = parse_body(c), *pre = json_object_get(body, "preconditions");
	const char *uid = fake__str(pre, "uid", NULL),
	           *rv = fake__str(pre, "resourceVersion", NULL);
	struct answer a;

	if ((uid && strcmp(uid, fake__str(old, "metadata", "uid")) != 0) ||
	    (rv && strcmp(rv, fake__str(old, "metadata", "resourceVersion")) != 0))
		a = fail(409, "Conflict", "Precondition failed");
	else
		a = ok(200, fake__delete(c->f, c->t.r, old));
	json_decref(body);
	return a;
}

/* A TokenReview's status: the token hook's, or not authenticated when there is none. */
static json_t *token_status(struct call *c, const json_t *spec)
{
	json_t *st = c->f->token ? c->f->token(spec, c->f->token_ud) : NULL;

	return st ? st : json_pack("{s:b}", "authenticated", false);
}

/* A SelfSubjectAccessReview: the access hook decides (allowed when there is none); a
 * TokenReview: the token hook. Nothing is stored, as in the API server. */
static struct answer do_review(struct call *c)
{
	json_t *obj = parse_body(c);
	const json_t *spec = json_object_get(obj, "spec");
	bool allowed;

	if (strcmp(c->method, "POST") != 0 || c->t.name != NULL) {
		json_decref(obj);
		return fail(405, NULL, "method not allowed");
	}
	if (!json_is_object(spec)) {
		json_decref(obj);
		return fail(422, NULL, "spec: Required value");
	}
	fill_new(c->t.r, obj, NULL);
	if (strcmp(c->t.r->name, TOKEN_REVIEWS) == 0) {
		json_object_set_new(obj, "status", token_status(c, spec));
		return ok(201, obj);
	}
	allowed = c->f->access == NULL || c->f->access(spec, c->f->access_ud);
	json_object_set_new(obj, "status", json_pack("{s:b}", "allowed", allowed));
	return ok(201, obj);
}

static struct answer dispatch(struct call *c)
{
	const char *m = c->method;
	json_t *old;

	if (c->t.r != NULL &&
	    (strcmp(c->t.r->name, REVIEWS) == 0 || strcmp(c->t.r->name, TOKEN_REVIEWS) == 0))
		return do_review(c);

	if (c->t.discovery) {
		json_t *doc = strcmp(m, "GET") == 0 ? discovery(c->f, &c->t) : NULL;

		return doc ? ok(200, doc) : fail(404, NULL, "no such API group or method");
	}
	if (c->t.name == NULL) {
		if (strcmp(m, "GET") == 0)
			return do_collection_get(c);
		if (strcmp(m, "POST") == 0) {
			json_t *obj = parse_body(c);

			return json_is_object(obj)
			               ? create_obj(c, obj, "create")
			               : (json_decref(obj),
			                  fail(400, NULL, "the body is not a JSON object"));
		}
		return fail(405, NULL, "method not allowed");
	}
	old = fake__lookup(c->f, c->t.r, c->t.ns, c->t.name);
	if (strcmp(m, "PATCH") == 0)
		return do_patch(c, old);
	if (old == NULL)
		return fail(404, "NotFound", "not found");
	if (strcmp(m, "GET") == 0)
		return ok(200, as_meta(old, c->meta));
	if (strcmp(m, "PUT") == 0)
		return do_update(c, old);
	if (strcmp(m, "DELETE") == 0)
		return do_delete(c, old);
	return fail(405, NULL, "method not allowed");
}

/* ---- the HTTP handler ---- */

static enum MHD_Result queue(struct MHD_Connection *conn, struct answer *a)
{
	struct MHD_Response *resp = a->stream;
	enum MHD_Result ret;
	char *text = NULL;

	if (resp == NULL) {
		text = json_dumps(a->body, a->dump_flags);
		if (a->corrupt) { /* the end goes, what a scanner reads first stays */
			size_t n = strlen(text);

			text = xrealloc(text, n + 8);
			memcpy(text + (n >= 2 ? n - 2 : 0), ",nope", 6);
		}
		resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	ret = MHD_queue_response(conn, (unsigned int)a->status, resp);
	MHD_destroy_response(resp);
	json_decref(a->body);
	return ret;
}

static struct answer serve(struct fake_api *f, struct call *c, const char *url, char *query)
{
	const char *watch = arg(c, "watch");
	bool is_watch = watch && (strcmp(watch, "true") == 0 || strcmp(watch, "1") == 0);
	char *path = xstrdup(url);
	struct answer a;

	enum verdict v;
	size_t idx;

	pthread_mutex_lock(&f->mu);
	idx = log_arrival(f, c->method, url, query);
	v = apply_rules(f, c->method, url, query, is_watch, &a);
	if (v != ANSWERED) {
		if (f->stopping)
			a = fail(503, NULL, "the fake is stopping");
		else if (!parse_target(f, path, &c->t))
			a = fail(404, NULL, "the server could not find the requested resource");
		else
			a = dispatch(c);
		a.corrupt = v == SERVE_CORRUPT && a.stream == NULL;
	}
	log_answer(f, idx, c->method, url, a.status);
	pthread_mutex_unlock(&f->mu);
	free(path);
	return a;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
	struct fake_api *f = cls;
	struct upload *up = *con_cls;
	const char *accept;
	struct answer a;
	char *query;

	if (up == NULL) {
		up = xcalloc(1, sizeof(*up));
		buf_init(&up->body, MAX_BODY);
		*con_cls = up;
		return MHD_YES;
	}
	if (*data_size > 0) {
		if (buf_append(&up->body, data, *data_size) < 0)
			return MHD_NO;
		*data_size = 0;
		return MHD_YES;
	}
	accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept");
	query = query_of(conn);
	struct call c = {f,
	                 conn,
	                 method,
	                 {0},
	                 up->body.p,
	                 up->body.len,
	                 accept && strstr(accept, "as=PartialObjectMetadata") != NULL};
	a = serve(f, &c, url, query);
	free(query);
	return queue(conn, &a);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct upload *up = *con_cls;

	if (up) {
		buf_release(&up->body);
		free(up);
		*con_cls = NULL;
	}
}

/* ---- life cycle ---- */

static void add_res(struct fake_api *f, const char *group, const char *version,
                    const char *resource, const char *kind, bool namespaced, bool has_status)
{
	struct fake_res r = {*group ? xasprintf("%s.%s", resource, group) : xstrdup(resource),
	                     xstrdup(group),
	                     xstrdup(version),
	                     xstrdup(resource),
	                     xstrdup(kind),
	                     namespaced,
	                     has_status};

	vec_push(&f->res, r);
}

struct fake_api *fake_api_start(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct fake_api *f = xcalloc(1, sizeof(*f));

	pthread_mutex_init(&f->mu, NULL);
	clock_cond_init(&f->cond);
	f->store = json_object();
	f->events = json_array();
	f->log = json_array();
	f->next_rule = 1;
	for (size_t i = 0; i < sizeof(BUILTIN) / sizeof(BUILTIN[0]); i++)
		add_res(f, BUILTIN[i].group, BUILTIN[i].version, BUILTIN[i].resource,
		        BUILTIN[i].kind, BUILTIN[i].namespaced, BUILTIN[i].has_status);
	f->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
	                        NULL, NULL, on_request, f, MHD_OPTION_SOCK_ADDR, &sa,
	                        MHD_OPTION_NOTIFY_COMPLETED, on_completed, f, MHD_OPTION_END);
	if (f->d == NULL) {
		fprintf(stderr, "fake_api_start: cannot start the HTTP server\n");
		abort();
	}
	f->port = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT)->port;
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", f->port);
	return f;
}

void fake_api_stop(struct fake_api *f)
{
	if (f == NULL)
		return;
	pthread_mutex_lock(&f->mu);
	f->stopping = true;
	fake__changed(f);
	pthread_mutex_unlock(&f->mu);
	MHD_stop_daemon(f->d);
	for (size_t i = 0; i < f->res.len; i++) {
		struct fake_res *r = &f->res.v[i];

		free(r->name);
		free(r->group);
		free(r->version);
		free(r->resource);
		free(r->kind);
	}
	for (size_t i = 0; i < f->rules.len; i++) {
		free(f->rules.v[i].method);
		free(f->rules.v[i].path);
		free(f->rules.v[i].query);
	}
	vec_release(&f->res);
	vec_release(&f->rules);
	json_decref(f->store);
	json_decref(f->events);
	json_decref(f->log);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

int fake_api_port(const struct fake_api *f)
{
	return f->port;
}

const char *fake_api_url(const struct fake_api *f)
{
	return f->url;
}

void fake_api_add_resource(struct fake_api *f, const char *group, const char *version,
                           const char *resource, const char *kind, bool namespaced, bool has_status)
{
	pthread_mutex_lock(&f->mu);
	add_res(f, group, version, resource, kind, namespaced, has_status);
	pthread_mutex_unlock(&f->mu);
}

/* ---- direct access ---- */

static const struct fake_res *res_or_die(struct fake_api *f, const char *res)
{
	const struct fake_res *r = fake__res(f, res);

	if (r == NULL) {
		fprintf(stderr, "fake_api: unknown resource %s\n", res);
		abort();
	}
	return r;
}

json_t *fake_api_get(struct fake_api *f, const char *res, const char *ns, const char *name)
{
	json_t *out;

	pthread_mutex_lock(&f->mu);
	out = json_deep_copy(fake__lookup(f, res_or_die(f, res), ns, name));
	pthread_mutex_unlock(&f->mu);
	return out;
}

json_t *fake_api_list(struct fake_api *f, const char *res, const char *ns)
{
	json_t *out = json_array(), **items;
	size_t n;

	pthread_mutex_lock(&f->mu);
	items = select_objects(f, res_or_die(f, res), ns, NULL, NULL, &n);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(out, json_deep_copy(items[i]));
	pthread_mutex_unlock(&f->mu);
	free(items);
	return out;
}

long long fake_api_put(struct fake_api *f, const char *res, const json_t *obj)
{
	const struct fake_res *r;
	json_t *copy = json_deep_copy(obj), *old, *stored;
	long long rv;

	pthread_mutex_lock(&f->mu);
	r = res_or_die(f, res);
	old = fake__lookup(f, r, fake__str(obj, "metadata", "namespace"),
	                   fake__str(obj, "metadata", "name"));
	if (json_object_get(copy, "kind") == NULL)
		json_object_set_new(copy, "kind", json_string(r->kind));
	if (json_object_get(copy, "apiVersion") == NULL)
		json_object_set_new(copy, "apiVersion",
		                    *r->group ? json_sprintf("%s/%s", r->group, r->version)
		                              : json_string(r->version));
	stored = fake__store(f, r, "put", copy, old);
	rv = f->rv;
	fake__after_write(f, r, stored);
	pthread_mutex_unlock(&f->mu);
	return rv;
}

bool fake_api_delete(struct fake_api *f, const char *res, const char *ns, const char *name)
{
	const struct fake_res *r;
	json_t *obj;

	pthread_mutex_lock(&f->mu);
	r = res_or_die(f, res);
	obj = fake__lookup(f, r, ns, name);
	if (obj)
		json_decref(fake__delete(f, r, obj));
	pthread_mutex_unlock(&f->mu);
	return obj != NULL;
}

long long fake_api_resource_version(struct fake_api *f)
{
	long long rv;

	pthread_mutex_lock(&f->mu);
	rv = f->rv;
	pthread_mutex_unlock(&f->mu);
	return rv;
}

void fake_api_compact(struct fake_api *f)
{
	pthread_mutex_lock(&f->mu);
	f->compacted = f->rv;
	json_array_clear(f->events);
	f->epoch++;
	fake__changed(f);
	pthread_mutex_unlock(&f->mu);
}

void fake_api_set_list_layout(struct fake_api *f, enum fake_list_layout layout)
{
	pthread_mutex_lock(&f->mu);
	f->list_layout = layout;
	pthread_mutex_unlock(&f->mu);
}

void fake_api_hold_namespaces(struct fake_api *f, bool hold)
{
	pthread_mutex_lock(&f->mu);
	f->hold_ns = hold;
	pthread_mutex_unlock(&f->mu);
}

void fake_api_finish_namespace(struct fake_api *f, const char *name)
{
	pthread_mutex_lock(&f->mu);
	fake__finish_namespace(f, name);
	pthread_mutex_unlock(&f->mu);
}

/* ---- rules and hooks ---- */

int fake_api_rule_add(struct fake_api *f, const struct fake_rule *rule)
{
	struct fake_rule_slot s = {*rule,
	                           rule->method ? xstrdup(rule->method) : NULL,
	                           rule->path_contains ? xstrdup(rule->path_contains) : NULL,
	                           rule->query_contains ? xstrdup(rule->query_contains) : NULL,
	                           0,
	                           0,
	                           false,
	                           false};

	pthread_mutex_lock(&f->mu);
	s.id = f->next_rule++;
	vec_push(&f->rules, s);
	pthread_mutex_unlock(&f->mu);
	return s.id;
}

int fake_api_rule_hits(struct fake_api *f, int id)
{
	int hits = 0;

	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->rules.len; i++)
		if (f->rules.v[i].id == id)
			hits = f->rules.v[i].hits;
	pthread_mutex_unlock(&f->mu);
	return hits;
}

void fake_api_rule_remove(struct fake_api *f, int id)
{
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->rules.len; i++)
		if (f->rules.v[i].id == id)
			f->rules.v[i].removed = true;
	fake__changed(f);
	pthread_mutex_unlock(&f->mu);
}

void fake_api_release(struct fake_api *f, int id)
{
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->rules.len; i++)
		if (f->rules.v[i].id == id)
			f->rules.v[i].released = true;
	fake__changed(f);
	pthread_mutex_unlock(&f->mu);
}

void fake_api_set_write_hook(struct fake_api *f, fake_write_hook hook, void *ud)
{
	pthread_mutex_lock(&f->mu);
	f->hook = hook;
	f->hook_ud = ud;
	pthread_mutex_unlock(&f->mu);
}

void fake_api_set_access_hook(struct fake_api *f, fake_access_hook hook, void *ud)
{
	pthread_mutex_lock(&f->mu);
	f->access = hook;
	f->access_ud = ud;
	pthread_mutex_unlock(&f->mu);
}

void fake_api_set_token_hook(struct fake_api *f, fake_token_hook hook, void *ud)
{
	pthread_mutex_lock(&f->mu);
	f->token = hook;
	f->token_ud = ud;
	pthread_mutex_unlock(&f->mu);
}

void fake_api_quota_hook(const char *verb, const char *res, json_t *obj, void *ud)
{
	json_t *hard = json_object_get(json_object_get(obj, "spec"), "hard"), *status, *used, *v;
	const char *k;

	(void)verb;
	(void)ud;
	if (strcmp(res, "resourcequotas") != 0 || !json_is_object(hard))
		return;
	status = json_object_get(obj, "status");
	if (!json_is_object(status)) {
		status = json_object();
		json_object_set_new(obj, "status", status);
	}
	used = json_object_get(status, "used");
	if (!json_is_object(used)) {
		used = json_object();
		json_object_set_new(status, "used", used);
	}
	json_object_set_new(status, "hard", json_deep_copy(hard));
	json_object_foreach(hard, k, v)
		if (json_object_get(used, k) == NULL)
			json_object_set_new(used, k, json_string("0"));
}

/* ---- the request log and waiting ---- */

int fake_api_requests(struct fake_api *f, const char *method, const char *path_contains)
{
	json_t *e;
	size_t i;
	int n = 0;

	pthread_mutex_lock(&f->mu);
	json_array_foreach(f->log, i, e)
		n += (method == NULL || strcmp(fake__str(e, "method", NULL), method) == 0) &&
		     (path_contains == NULL || strstr(fake__str(e, "path", NULL), path_contains));
	pthread_mutex_unlock(&f->mu);
	return n;
}

int fake_api_writes(struct fake_api *f)
{
	int n;

	pthread_mutex_lock(&f->mu);
	n = f->writes;
	pthread_mutex_unlock(&f->mu);
	return n;
}

json_t *fake_api_log(struct fake_api *f)
{
	json_t *out;

	pthread_mutex_lock(&f->mu);
	out = json_deep_copy(f->log);
	pthread_mutex_unlock(&f->mu);
	return out;
}

bool fake_api_wait(struct fake_api *f, fake_cond cond, void *ud)
{
	int64_t deadline = clock_mono_ns() + (int64_t)FAKE_WAIT_MS * 1000000;
	unsigned long seen;

	for (;;) {
		pthread_mutex_lock(&f->mu);
		seen = f->changes;
		pthread_mutex_unlock(&f->mu);
		if (cond(f, ud))
			return true;
		pthread_mutex_lock(&f->mu);
		/* also every FAKE_RECHECK_MS: conditions on the manager's metrics change no object
		 */
		if (f->changes == seen)
			clock_cond_wait_until(&f->cond, &f->mu,
			                      clock_mono_ns() + FAKE_RECHECK_MS * 1000000LL);
		pthread_mutex_unlock(&f->mu);
		if (clock_mono_ns() >= deadline)
			return cond(f, ud);
	}
}
