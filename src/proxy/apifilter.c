/* apifilter.c - the API a tenant sees: groups, kinds, discovery and OpenAPI (apifilter.h). */
#include "proxy/apifilter.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/vec.h"

/* The served groups of Kubernetes 1.33 with every API enabled (--runtime-config=api/all). */
static const struct {
	const char *name;
	bool tenant_kinds; /* holds a kind a tenant sees (a namespaced, class or self-review one) */
} builtin_groups[] = {
        {"", true},
        {"admissionregistration.k8s.io", false},
        {"apiextensions.k8s.io", false},
        {"apiregistration.k8s.io", false},
        {"apps", true},
        {"authentication.k8s.io", true},
        {"authorization.k8s.io", true},
        {"autoscaling", true},
        {"batch", true},
        {"certificates.k8s.io", false},
        {"coordination.k8s.io", true},
        {"discovery.k8s.io", true},
        {"events.k8s.io", true},
        {"flowcontrol.apiserver.k8s.io", false},
        {"internal.apiserver.k8s.io", false},
        {"networking.k8s.io", true},
        {"node.k8s.io", true},
        {"policy", true},
        {"rbac.authorization.k8s.io", true},
        {"resource.k8s.io", true},
        {"scheduling.k8s.io", true},
        {"storage.k8s.io", true},
        {"storagemigration.k8s.io", false},
};

/* Cluster-scoped kinds that pods and claims name: read-only, filtered by the Tenant's list. */
static const struct {
	const char *group;
	const char *resource;
	const char *allowed; /* the member of the Tenant's spec.allowed, or NULL: none */
} class_kinds[] = {
        {"storage.k8s.io", "storageclasses", "storageClasses"},
        {"networking.k8s.io", "ingressclasses", "ingressClasses"},
        {"scheduling.k8s.io", "priorityclasses", "priorityClasses"},
        {"node.k8s.io", "runtimeclasses", "runtimeClasses"},
        {"storage.k8s.io", "volumeattributesclasses", NULL},
        {"resource.k8s.io", "deviceclasses", NULL},
        {"gateway.networking.k8s.io", "gatewayclasses", NULL},
        {"snapshot.storage.k8s.io", "volumesnapshotclasses", NULL},
};

/* Cluster-scoped, create-only, about the caller alone. */
static const struct {
	const char *group;
	const char *resource;
} self_reviews[] = {
        {"authorization.k8s.io", "selfsubjectaccessreviews"},
        {"authorization.k8s.io", "selfsubjectrulesreviews"},
        {"authentication.k8s.io", "selfsubjectreviews"},
};

#define NAME_MAX_LEN 253 /* a group or resource name; longer ones are nobody's */

bool px_group_builtin(const char *group)
{
	for (size_t i = 0; group && i < sizeof(builtin_groups) / sizeof(builtin_groups[0]); i++) {
		if (strcmp(builtin_groups[i].name, group) == 0)
			return true;
	}
	return false;
}

static bool group_shared(const struct px_apifilter *f, const char *group)
{
	for (size_t i = 0; i < f->n_shared_groups; i++) {
		if (f->shared_groups[i] && strcmp(f->shared_groups[i], group) == 0)
			return true;
	}
	return false;
}

bool px_group_visible(const struct px_apifilter *f, const char *group)
{
	if (group == NULL)
		return false;
	for (size_t i = 0; i < sizeof(builtin_groups) / sizeof(builtin_groups[0]); i++) {
		if (strcmp(builtin_groups[i].name, group) == 0)
			return builtin_groups[i].tenant_kinds;
	}
	return *group && group_shared(f, group);
}

static int class_index(const char *group, const char *resource)
{
	for (size_t i = 0; group && resource && i < sizeof(class_kinds) / sizeof(class_kinds[0]);
	     i++) {
		if (strcmp(class_kinds[i].group, group) == 0 &&
		    strcmp(class_kinds[i].resource, resource) == 0)
			return (int)i;
	}
	return -1;
}

static bool is_self_review(const char *group, const char *resource)
{
	for (size_t i = 0; i < sizeof(self_reviews) / sizeof(self_reviews[0]); i++) {
		if (strcmp(self_reviews[i].group, group) == 0 &&
		    strcmp(self_reviews[i].resource, resource) == 0)
			return true;
	}
	return false;
}

/* "proxy" or "proxy/<anything>" of pods, services or nodes in the core group. */
static bool is_proxy_sub(const char *group, const char *resource, const char *sub)
{
	if (*group || !sub || strncmp(sub, "proxy", 5) != 0 || (sub[5] && sub[5] != '/'))
		return false;
	return strcmp(resource, "pods") == 0 || strcmp(resource, "services") == 0 ||
	       strcmp(resource, "nodes") == 0;
}

static enum px_visibility kind_visibility(const struct px_apifilter *f, const char *group,
                                          const char *resource, bool namespaced)
{
	if (!*group && strcmp(resource, "namespaces") == 0)
		return PX_SHOWN;
	if (!*group && strcmp(resource, "nodes") == 0)
		return f->nodes_readonly ? PX_READONLY : PX_HIDDEN;
	if (is_self_review(group, resource))
		return PX_CREATE_ONLY;
	if (class_index(group, resource) >= 0)
		return PX_READONLY;
	return namespaced ? PX_SHOWN : PX_HIDDEN;
}

enum px_visibility px_resource_visibility(const struct px_apifilter *f, const char *group,
                                          const char *resource, const char *sub, bool namespaced)
{
	enum px_visibility v;

	if (!group || !resource || !*resource || (sub && !*sub))
		return PX_HIDDEN;
	if (is_proxy_sub(group, resource, sub))
		return PX_FORBIDDEN_SUB;
	if (!px_group_visible(f, group))
		return PX_HIDDEN;
	v = kind_visibility(f, group, resource, namespaced);
	if (sub && v != PX_SHOWN)
		return PX_HIDDEN;
	return v;
}

const char *px_class_allowed_list(const char *group, const char *resource)
{
	int i = class_index(group, resource);

	return i < 0 ? NULL : class_kinds[i].allowed;
}

bool px_class_allowed(const json_t *allowed, const char *group, const char *resource,
                      const char *name)
{
	const char *member = px_class_allowed_list(group, resource);
	const json_t *list = member ? json_object_get(allowed, member) : NULL;
	size_t i;
	const json_t *v;

	if (!json_is_array(list))
		return true;
	json_array_foreach(list, i, v) {
		if (name && json_is_string(v) && strcmp(json_string_value(v), name) == 0)
			return true;
	}
	return false;
}

/* ---------- discovery ---------- */

/* Keep only the verbs of @v in @entry's "verbs". Return: whether the entry stays. */
static bool restrict_verbs(json_t *entry, enum px_visibility v)
{
	static const char *const readonly[] = {"get", "list", "watch", NULL};
	static const char *const create[] = {"create", NULL};
	const char *const *allowed = v == PX_READONLY ? readonly : create;
	json_t *verbs = json_object_get(entry, "verbs");
	size_t i = 0;

	if (v == PX_SHOWN)
		return true;
	if (v != PX_READONLY && v != PX_CREATE_ONLY)
		return false;
	while (i < json_array_size(verbs)) {
		const char *verb = json_string_value(json_array_get(verbs, i));
		bool keep = false;

		for (size_t k = 0; verb && allowed[k]; k++)
			keep = keep || strcmp(allowed[k], verb) == 0;
		if (keep)
			i++;
		else
			json_array_remove(verbs, i);
	}
	json_object_del(entry, "subresources");
	return json_array_size(verbs) > 0;
}

/* One entry of an APIResourceList ("pods" or "pods/log"). Return: whether it stays. */
static bool legacy_resource(const struct px_apifilter *f, const char *group, json_t *entry)
{
	const char *name = json_string_value(json_object_get(entry, "name"));
	bool namespaced = json_is_true(json_object_get(entry, "namespaced"));
	char resource[NAME_MAX_LEN + 1];
	const char *slash = name ? strchr(name, '/') : NULL;
	size_t len = slash ? (size_t)(slash - name) : name ? strlen(name) : 0;

	if (!name || len > NAME_MAX_LEN)
		return false;
	memcpy(resource, name, len);
	resource[len] = '\0';
	return restrict_verbs(entry, px_resource_visibility(f, group, resource,
	                                                    slash ? slash + 1 : NULL, namespaced));
}

/* The group of "apps/v1" ("" for "v1") into @out. Return: false when it is too long. */
static bool group_of(const char *group_version, char *out, size_t size)
{
	const char *slash = strchr(group_version, '/');
	size_t len = slash ? (size_t)(slash - group_version) : 0;

	if (len >= size)
		return false;
	memcpy(out, group_version, len);
	out[len] = '\0';
	return true;
}

static enum px_filter_result resource_list(const struct px_apifilter *f, json_t *doc)
{
	const char *gv = json_string_value(json_object_get(doc, "groupVersion"));
	json_t *resources = json_object_get(doc, "resources");
	char group[NAME_MAX_LEN + 1];
	size_t i = 0;

	if (!gv || !group_of(gv, group, sizeof(group)))
		return PX_FILTER_INVALID;
	if (!px_group_visible(f, group))
		return PX_FILTER_NOT_FOUND;
	if (resources && !json_is_array(resources))
		return PX_FILTER_INVALID;
	while (i < json_array_size(resources)) {
		if (legacy_resource(f, group, json_array_get(resources, i)))
			i++;
		else
			json_array_remove(resources, i);
	}
	return PX_FILTER_OK;
}

static enum px_filter_result group_list(const struct px_apifilter *f, json_t *doc)
{
	json_t *groups = json_object_get(doc, "groups");
	size_t i = 0;

	if (groups && !json_is_array(groups))
		return PX_FILTER_INVALID;
	json_object_del(doc, "serverAddressByClientCIDRs");
	while (i < json_array_size(groups)) {
		json_t *g = json_array_get(groups, i);

		if (px_group_visible(f, json_string_value(json_object_get(g, "name")))) {
			json_object_del(g, "serverAddressByClientCIDRs");
			i++;
		} else {
			json_array_remove(groups, i);
		}
	}
	return PX_FILTER_OK;
}

/* A resource of aggregated discovery, with its subresources. Return: whether it stays. */
static bool aggregated_resource(const struct px_apifilter *f, const char *group, json_t *r)
{
	const char *name = json_string_value(json_object_get(r, "resource"));
	const char *scope = json_string_value(json_object_get(r, "scope"));
	bool namespaced = scope && strcmp(scope, "Namespaced") == 0;
	enum px_visibility v = px_resource_visibility(f, group, name, NULL, namespaced);
	json_t *subs = json_object_get(r, "subresources");
	size_t i = 0;

	if (v != PX_SHOWN)
		return restrict_verbs(r, v);
	while (i < json_array_size(subs)) {
		const char *sub =
		        json_string_value(json_object_get(json_array_get(subs, i), "subresource"));

		if (sub && px_resource_visibility(f, group, name, sub, namespaced) == PX_SHOWN)
			i++;
		else
			json_array_remove(subs, i);
	}
	return true;
}

static void aggregated_group(const struct px_apifilter *f, const char *group, json_t *item)
{
	size_t i;
	json_t *version;

	json_array_foreach(json_object_get(item, "versions"), i, version) {
		json_t *resources = json_object_get(version, "resources");
		size_t k = 0;

		while (k < json_array_size(resources)) {
			if (aggregated_resource(f, group, json_array_get(resources, k)))
				k++;
			else
				json_array_remove(resources, k);
		}
	}
}

static enum px_filter_result aggregated_list(const struct px_apifilter *f, json_t *doc)
{
	json_t *items = json_object_get(doc, "items");
	size_t i = 0;

	if (items && !json_is_array(items))
		return PX_FILTER_INVALID;
	while (i < json_array_size(items)) {
		json_t *item = json_array_get(items, i);
		const json_t *name = json_object_get(json_object_get(item, "metadata"), "name");
		const char *group = name ? json_string_value(name) : "";

		if (json_is_object(item) && px_group_visible(f, group)) {
			aggregated_group(f, group, item);
			i++;
		} else {
			json_array_remove(items, i);
		}
	}
	return PX_FILTER_OK;
}

enum px_filter_result px_filter_discovery(const struct px_apifilter *f, json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));

	if (!kind)
		return PX_FILTER_INVALID;
	if (strcmp(kind, "APIVersions") == 0) {
		json_object_del(doc, "serverAddressByClientCIDRs");
		return PX_FILTER_OK;
	}
	if (strcmp(kind, "APIGroupList") == 0)
		return group_list(f, doc);
	if (strcmp(kind, "APIGroup") == 0) {
		if (!px_group_visible(f, json_string_value(json_object_get(doc, "name"))))
			return PX_FILTER_NOT_FOUND;
		json_object_del(doc, "serverAddressByClientCIDRs");
		return PX_FILTER_OK;
	}
	if (strcmp(kind, "APIResourceList") == 0)
		return resource_list(f, doc);
	if (strcmp(kind, "APIGroupDiscoveryList") == 0)
		return aggregated_list(f, doc);
	return PX_FILTER_INVALID;
}

/* ---------- Accept ---------- */

struct media_range {
	char type[64];
	char g[64], v[16], as[64];
	bool has_params; /* g, v or as given */
	int q;           /* thousandths */
};

/* An HTTP qvalue ("1", "0.8", "1.000") in thousandths; -1 when malformed. */
static int qvalue(const char *s, size_t n)
{
	int q = 0, digits = 0;
	size_t i = 2;

	if (n == 0 || (s[0] != '0' && s[0] != '1') || (n > 1 && s[1] != '.') || n > 5)
		return -1;
	for (; i < n; i++, digits++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		q = q * 10 + (s[i] - '0');
	}
	for (; digits < 3; digits++)
		q *= 10;
	q += s[0] == '1' ? 1000 : 0;
	return q > 1000 ? -1 : q;
}

static size_t trimmed(const char **s, size_t n)
{
	while (n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		n--;
	}
	while (n && ((*s)[n - 1] == ' ' || (*s)[n - 1] == '\t'))
		n--;
	return n;
}

static void copy_token(char *out, size_t size, const char *s, size_t n)
{
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		s++;
		n -= 2;
	}
	if (n >= size) {
		out[0] = '\0'; /* too long to be anything we serve */
		return;
	}
	memcpy(out, s, n);
	out[n] = '\0';
}

static void media_param(struct media_range *m, const char *p, size_t n)
{
	const char *eq = memchr(p, '=', n);
	size_t klen, vlen;
	const char *val;

	if (!eq)
		return;
	val = eq + 1;
	vlen = trimmed(&val, n - (size_t)(val - p));
	klen = trimmed(&p, (size_t)(eq - p));
	if (klen == 1 && (*p == 'q' || *p == 'Q')) {
		m->q = qvalue(val, vlen);
		return;
	}
	if (klen == 1 && *p == 'g')
		copy_token(m->g, sizeof(m->g), val, vlen);
	else if (klen == 1 && *p == 'v')
		copy_token(m->v, sizeof(m->v), val, vlen);
	else if (klen == 2 && memcmp(p, "as", 2) == 0)
		copy_token(m->as, sizeof(m->as), val, vlen);
	else
		return;
	m->has_params = true;
}

static void media_parse(struct media_range *m, const char *s, size_t n)
{
	const char *semi = memchr(s, ';', n);
	size_t tlen = semi ? (size_t)(semi - s) : n;
	const char *t = s;

	memset(m, 0, sizeof(*m));
	m->q = 1000;
	tlen = trimmed(&t, tlen);
	copy_token(m->type, sizeof(m->type), t, tlen);
	while (semi) {
		const char *p = semi + 1;
		size_t rest = n - (size_t)(p - s);

		semi = memchr(p, ';', rest);
		media_param(m, p, semi ? (size_t)(semi - p) : rest);
	}
}

static bool is_json_range(const char *type)
{
	return strcasecmp(type, "application/json") == 0 ||
	       strcasecmp(type, "application/*") == 0 || strcmp(type, "*/*") == 0;
}

static bool is_aggregated_v2(const struct media_range *m)
{
	return strcasecmp(m->type, "application/json") == 0 &&
	       strcmp(m->g, "apidiscovery.k8s.io") == 0 && strcmp(m->v, "v2") == 0 &&
	       strcmp(m->as, "APIGroupDiscoveryList") == 0;
}

enum px_form px_negotiate(const char *accept, bool aggregatable)
{
	int json_q = 0, agg_q = 0;
	const char *s = accept;
	size_t n = accept ? trimmed(&s, strlen(accept)) : 0;

	if (n == 0)
		return PX_FORM_JSON;
	while (n) {
		const char *comma = memchr(s, ',', n);
		size_t len = comma ? (size_t)(comma - s) : n;
		struct media_range m;

		media_parse(&m, s, len);
		if (m.has_params && is_aggregated_v2(&m) && m.q > agg_q)
			agg_q = m.q;
		else if (!m.has_params && is_json_range(m.type) && m.q > json_q)
			json_q = m.q;
		n = comma ? n - len - 1 : 0;
		s = comma ? comma + 1 : s + len;
	}
	if (aggregatable && agg_q > 0 && agg_q >= json_q)
		return PX_FORM_AGGREGATED;
	return json_q > 0 ? PX_FORM_JSON : PX_FORM_NONE;
}

/* ---------- OpenAPI paths ---------- */

#define SEG_MAX  12
#define PATH_BUF 1024

/* A path split on '/': "/apis/apps/v1/namespaces/{namespace}/deployments". */
struct segs {
	char buf[PATH_BUF];
	const char *s[SEG_MAX];
	size_t n;
};

/* Return: false for a path that is too long, too deep or has an empty segment. */
static bool split(const char *path, struct segs *out)
{
	size_t len = strlen(path);
	char *p = out->buf;

	out->n = 0;
	if (*path == '/') {
		path++;
		len--;
	}
	if (len && path[len - 1] == '/')
		len--;
	if (len >= sizeof(out->buf))
		return false;
	memcpy(out->buf, path, len);
	out->buf[len] = '\0';
	while (len && out->n < SEG_MAX) {
		char *slash = strchr(p, '/');

		out->s[out->n++] = p;
		if (!slash)
			return *p != '\0';
		*slash = '\0';
		if (slash == p)
			return false;
		p = slash + 1;
	}
	return len == 0;
}

/* What an API path is about. */
struct api_path {
	bool discovery;    /* /version, /api, /apis, /apis/G, /api/v1, /apis/G/V */
	const char *group; /* "" for core; NULL: not an API path */
	const char *resource, *sub;
	bool in_namespace; /* .../namespaces/{namespace}/R... */
};

/* The part after /api/v1 or /apis/G/V (@r, @n segments). */
static void parse_rest(struct api_path *a, const char *const *r, size_t n)
{
	if (n == 0) {
		a->discovery = true;
	} else if (strcmp(r[0], "watch") == 0) {
		a->group = NULL; /* the legacy watch paths: refused by the proxy */
	} else if (strcmp(r[0], "namespaces") == 0 && n >= 3 && strcmp(r[1], "{name}") != 0) {
		a->in_namespace = true;
		a->resource = r[2];
		a->sub = n >= 5 ? r[4] : NULL;
	} else if (strcmp(r[0], "namespaces") == 0 && n > 3) {
		a->group = NULL;
	} else {
		a->resource = r[0];
		a->sub = n >= 3 ? r[2] : NULL;
	}
}

static void parse_api_path(const struct segs *p, struct api_path *a)
{
	memset(a, 0, sizeof(*a));
	if (p->n == 1 && (strcmp(p->s[0], "version") == 0 || strcmp(p->s[0], "api") == 0 ||
	                  strcmp(p->s[0], "apis") == 0)) {
		a->discovery = true;
		a->group = "";
	} else if (p->n >= 2 && strcmp(p->s[0], "api") == 0) {
		a->group = "";
		parse_rest(a, p->s + 2, p->n - 2);
	} else if (p->n == 2 && strcmp(p->s[0], "apis") == 0) {
		a->discovery = true;
		a->group = p->s[1];
	} else if (p->n >= 3 && strcmp(p->s[0], "apis") == 0) {
		a->group = p->s[1];
		parse_rest(a, p->s + 3, p->n - 3);
	}
}

/* The set of "group/resource" with a path inside a namespace: the namespaced resources. */
static json_t *namespaced_set(const json_t *paths)
{
	json_t *set = json_object();
	const char *key;
	json_t *item;

	json_object_foreach((json_t *)paths, key, item) {
		struct segs p;
		struct api_path a;
		char k[2 * PATH_BUF];

		if (!split(key, &p))
			continue;
		parse_api_path(&p, &a);
		if (a.group && a.in_namespace) {
			snprintf(k, sizeof(k), "%s/%s", a.group, a.resource);
			json_object_set_new(set, k, json_true());
		}
	}
	return set;
}

/* The visibility of path @key (PX_HIDDEN for paths that are not the API's). */
static enum px_visibility path_visibility(const struct px_apifilter *f, const char *key,
                                          const json_t *namespaced)
{
	struct segs p;
	struct api_path a;
	char k[2 * PATH_BUF];

	if (!split(key, &p))
		return PX_HIDDEN;
	parse_api_path(&p, &a);
	if (!a.group)
		return PX_HIDDEN;
	if (a.discovery)
		return px_group_visible(f, a.group) ? PX_SHOWN : PX_HIDDEN;
	snprintf(k, sizeof(k), "%s/%s", a.group, a.resource);
	return px_resource_visibility(f, a.group, a.resource, a.sub,
	                              a.in_namespace || json_object_get(namespaced, k));
}

/* Keep only @allowed's operation in path item @item. Return: whether an operation is left. */
static bool keep_operation(json_t *item, const char *allowed)
{
	static const char *const ops[] = {"get",  "put",   "post",  "delete",
	                                  "head", "patch", "trace", "options"};
	bool left = false;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(ops[i], allowed) != 0)
			json_object_del(item, ops[i]);
		else
			left = json_object_get(item, ops[i]) != NULL;
	}
	return left;
}

static enum px_filter_result filter_paths(const struct px_apifilter *f, json_t *paths)
{
	json_t *namespaced;
	const char *key;
	size_t klen;
	json_t *item, *tmp;

	if (!json_is_object(paths))
		return PX_FILTER_INVALID;
	namespaced = namespaced_set(paths);
	json_object_keylen_foreach_safe(paths, tmp, key, klen, item) {
		enum px_visibility v =
		        strlen(key) == klen ? path_visibility(f, key, namespaced) : PX_HIDDEN;
		bool keep = v == PX_SHOWN;

		if (v == PX_READONLY)
			keep = json_is_object(item) && keep_operation(item, "get");
		else if (v == PX_CREATE_ONLY)
			keep = json_is_object(item) && keep_operation(item, "post");
		if (!keep)
			json_object_deln(paths, key, klen);
	}
	json_decref(namespaced);
	return PX_FILTER_OK;
}

/* ---------- $ref closure ---------- */

#define CONTAINERS_MAX 10

/* Where "$ref"s may point: objects of named entries ("#/definitions/<name>"). */
struct container {
	const char *at[2]; /* one or two keys from the root: {"definitions"}, {"components",
	                    * "schemas"} */
	json_t *obj;       /* in the document (borrowed), NULL when absent */
	json_t *keep;      /* the names reached (owned) */
};

struct closure {
	struct container c[CONTAINERS_MAX];
	size_t n;
	VEC(json_t *) todo; /* entries reached, not yet walked (borrowed) */
	bool bad;           /* a "$ref" that does not resolve to an entry */
};

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode @s (@n bytes) into @out. Return: the length, or -1. */
static long decode_segment(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '%') {
			int hi = i + 2 < n ? hex_digit(s[i + 1]) : -1;
			int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;

			if (lo < 0)
				return -1;
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (o + 1 >= size)
			return -1;
		out[o++] = c;
	}
	return (long)o;
}

/* JSON pointer escapes, after percent-decoding: ~1 is '/', ~0 is '~'. */
static long unescape_pointer(char *s, long n)
{
	long o = 0;

	for (long i = 0; i < n; i++) {
		if (s[i] == '~' && i + 1 < n && (s[i + 1] == '0' || s[i + 1] == '1')) {
			s[o++] = s[i + 1] == '0' ? '~' : '/';
			i++;
		} else if (s[i] == '~') {
			return -1;
		} else {
			s[o++] = s[i];
		}
	}
	return o;
}

/* The next segment of pointer @p (after its leading '/'), decoded into @out. */
static long next_segment(const char **p, const char *end, char *out, size_t size)
{
	const char *start = *p + 1, *slash = start;
	long n;

	while (slash < end && *slash != '/')
		slash++;
	*p = slash;
	n = decode_segment(start, (size_t)(slash - start), out, size);
	return n < 0 ? -1 : unescape_pointer(out, n);
}

static void reach(struct closure *cl, const char *ref, size_t len)
{
	const char *p = ref + 1, *end = ref + len;
	char seg[3][PATH_BUF];
	long n[3] = {-1, -1, -1};
	size_t depth = 0;

	if (len < 3 || ref[0] != '#' || ref[1] != '/') {
		cl->bad = true;
		return;
	}
	while (p < end && depth < 3) {
		n[depth] = next_segment(&p, end, seg[depth], sizeof(seg[depth]));
		if (n[depth++] < 0) {
			cl->bad = true;
			return;
		}
	}
	for (size_t i = 0; i < cl->n; i++) {
		struct container *c = &cl->c[i];
		size_t keys = c->at[1] ? 2 : 1;
		json_t *entry;

		if (depth <= keys || (size_t)n[0] != strlen(c->at[0]) ||
		    memcmp(seg[0], c->at[0], (size_t)n[0]) != 0)
			continue;
		if (keys == 2 && ((size_t)n[1] != strlen(c->at[1]) ||
		                  memcmp(seg[1], c->at[1], (size_t)n[1]) != 0))
			continue;
		entry = json_object_getn(c->obj, seg[keys], (size_t)n[keys]);
		if (!entry)
			break;
		if (!json_object_getn(c->keep, seg[keys], (size_t)n[keys])) {
			json_object_setn_new_nocheck(c->keep, seg[keys], (size_t)n[keys],
			                             json_true());
			vec_push(&cl->todo, entry);
		}
		return;
	}
	cl->bad = true;
}

static bool is_container(const struct closure *cl, const json_t *v)
{
	for (size_t i = 0; i < cl->n; i++) {
		if (cl->c[i].obj == v)
			return true;
	}
	return false;
}

/*
 * Every "$ref" in @v but those inside the containers' entries (recursively; JSON nesting is
 * bounded by the parser).
 */
static void collect(struct closure *cl, const json_t *v)
{
	const char *key;
	size_t klen, i;
	json_t *m;

	if (is_container(cl, v))
		return;
	if (json_is_array(v)) {
		json_array_foreach(v, i, m) {
			collect(cl, m);
		}
		return;
	}
	json_object_keylen_foreach((json_t *)v, key, klen, m) {
		if (klen == 4 && memcmp(key, "$ref", 4) == 0 && json_is_string(m))
			reach(cl, json_string_value(m), json_string_length(m));
		else
			collect(cl, m);
	}
}

static void prune(struct container *c)
{
	const char *key;
	size_t klen;
	json_t *v, *tmp;

	json_object_keylen_foreach_safe(c->obj, tmp, key, klen, v) {
		if (!json_object_getn(c->keep, key, klen))
			json_object_deln(c->obj, key, klen);
	}
}

/*
 * Remove every entry of the containers @at (pairs of keys, {NULL, NULL}-terminated) that
 * nothing outside them reaches through "$ref", transitively.
 */
static enum px_filter_result close_refs(json_t *doc, const char *const (*at)[2])
{
	struct closure cl = {.n = 0, .todo = VEC_INIT, .bad = false};

	for (size_t i = 0; at[i][0] && cl.n < CONTAINERS_MAX; i++) {
		json_t *obj = json_object_get(doc, at[i][0]);

		if (at[i][1])
			obj = json_object_get(obj, at[i][1]);
		if (!json_is_object(obj))
			continue;
		cl.c[cl.n] = (struct container){{at[i][0], at[i][1]}, obj, json_object()};
		cl.n++;
	}
	collect(&cl, doc);
	while (cl.todo.len && !cl.bad)
		collect(&cl, vec_pop(&cl.todo));
	for (size_t i = 0; i < cl.n; i++) {
		if (!cl.bad)
			prune(&cl.c[i]);
		json_decref(cl.c[i].keep);
	}
	vec_release(&cl.todo);
	return cl.bad ? PX_FILTER_INVALID : PX_FILTER_OK;
}

/* Drop the x-kubernetes-group-version-kind entries of groups a tenant does not see from every
 * schema of @schemas (DeleteOptions and WatchEvent list every group the server has). */
static void scrub_gvks(const struct px_apifilter *f, json_t *schemas)
{
	const char *name;
	json_t *schema;

	json_object_foreach(schemas, name, schema) {
		json_t *gvks = json_object_get(schema, "x-kubernetes-group-version-kind");

		for (size_t i = json_array_size(gvks); i-- > 0;) {
			const char *g = json_string_value(
			        json_object_get(json_array_get(gvks, i), "group"));

			if (!g || !px_group_visible(f, g))
				json_array_remove(gvks, i);
		}
	}
}

enum px_filter_result px_filter_openapi_v2(const struct px_apifilter *f, json_t *doc)
{
	static const char *const at[][2] = {
	        {"definitions", NULL}, {"parameters", NULL}, {"responses", NULL}, {NULL, NULL}};
	enum px_filter_result r;

	if (!json_is_object(doc))
		return PX_FILTER_INVALID;
	r = filter_paths(f, json_object_get(doc, "paths"));
	if (r == PX_FILTER_OK)
		r = close_refs(doc, at);
	if (r == PX_FILTER_OK)
		scrub_gvks(f, json_object_get(doc, "definitions"));
	return r;
}

bool px_openapi_v3_path_visible(const struct px_apifilter *f, const char *path)
{
	struct segs p;
	struct api_path a;

	if (!path || !split(path, &p))
		return false;
	parse_api_path(&p, &a);
	return a.group && a.discovery && px_group_visible(f, a.group);
}

enum px_filter_result px_filter_openapi_v3_index(const struct px_apifilter *f, json_t *doc)
{
	json_t *paths = json_object_get(doc, "paths");
	const char *key;
	size_t klen;
	json_t *v, *tmp;

	if (!json_is_object(paths))
		return PX_FILTER_INVALID;
	json_object_keylen_foreach_safe(paths, tmp, key, klen, v) {
		if (strlen(key) != klen || !px_openapi_v3_path_visible(f, key))
			json_object_deln(paths, key, klen);
	}
	return PX_FILTER_OK;
}

enum px_filter_result px_filter_openapi_v3(const struct px_apifilter *f, const char *path,
                                           json_t *doc)
{
	static const char *const at[][2] = {
	        {"components", "schemas"},   {"components", "parameters"},
	        {"components", "responses"}, {"components", "requestBodies"},
	        {"components", "headers"},   {"components", "examples"},
	        {"components", "links"},     {"components", "callbacks"},
	        {"components", "pathItems"}, {NULL, NULL}};
	enum px_filter_result r;

	if (!px_openapi_v3_path_visible(f, path))
		return PX_FILTER_NOT_FOUND;
	if (!json_is_object(doc))
		return PX_FILTER_INVALID;
	r = filter_paths(f, json_object_get(doc, "paths"));
	if (r == PX_FILTER_OK)
		r = close_refs(doc, at);
	if (r == PX_FILTER_OK)
		scrub_gvks(f, json_object_get(json_object_get(doc, "components"), "schemas"));
	return r;
}
