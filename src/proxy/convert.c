/* convert.c - namespace fields between a tenant's view and upstream (convert.h). */
#include "proxy/convert.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"
#include "proxy/nsmap.h"
#include "proxy/pbconv.h"

#define TEXT_MAX  (64u << 10) /* a Status message after conversion */
#define PATH_MAX_ 256         /* a rule's path, base included */

/* ---------- the rules ---------- */

#define RULE(path, kind)       \
	{                      \
		"", path, kind \
	}
#define TERMS(a) "affinity." a ".requiredDuringSchedulingIgnoredDuringExecution[]"
#define WEIGHTED(a) \
	"affinity." a ".preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm"

static const struct px_rule ANY[] = {RULE("metadata.namespace", PX_RULE_NS)};
static const struct px_rule NAMESPACE[] = {
        RULE("metadata.name", PX_RULE_NS),
        RULE("metadata.labels{" PX_NAME_LABEL "}", PX_RULE_NS),
};
static const struct px_rule EVENT[] = {
        RULE("involvedObject.namespace", PX_RULE_NS),
        RULE("regarding.namespace", PX_RULE_NS),
        RULE("related.namespace", PX_RULE_NS),
};
static const struct px_rule ACCESS[] = {RULE("spec.resourceAttributes.namespace", PX_RULE_NS)};
static const struct px_rule RULES_REVIEW[] = {RULE("spec.namespace", PX_RULE_NS)};
static const struct px_rule BINDING[] = {
        RULE("subjects[].namespace", PX_RULE_NS),
        RULE("subjects[].name", PX_RULE_SUBJECT),
};
static const struct px_rule NETWORK_POLICY[] = {
        RULE("spec.ingress[].from[].namespaceSelector", PX_RULE_PEER),
        RULE("spec.egress[].to[].namespaceSelector", PX_RULE_PEER),
};
static const struct px_rule STATEFUL_SET[] = {
        RULE("spec.volumeClaimTemplates[].spec.volumeName", PX_RULE_NO_VOLUME),
};
static const struct px_rule CLAIM[] = {
        RULE("metadata.name", PX_RULE_CLAIM_NAME),
        RULE("spec.volumeName", PX_RULE_CLAIM_VOLUME),
};
/* Inside a pod spec (their base is the spec's path). */
static const struct px_rule POD[] = {
        RULE(TERMS("podAffinity") ".namespaces[]", PX_RULE_NS),
        RULE(TERMS("podAffinity") ".namespaceSelector", PX_RULE_SELECTOR),
        RULE(WEIGHTED("podAffinity") ".namespaces[]", PX_RULE_NS),
        RULE(WEIGHTED("podAffinity") ".namespaceSelector", PX_RULE_SELECTOR),
        RULE(TERMS("podAntiAffinity") ".namespaces[]", PX_RULE_NS),
        RULE(TERMS("podAntiAffinity") ".namespaceSelector", PX_RULE_SELECTOR),
        RULE(WEIGHTED("podAntiAffinity") ".namespaces[]", PX_RULE_NS),
        RULE(WEIGHTED("podAntiAffinity") ".namespaceSelector", PX_RULE_SELECTOR),
        RULE("volumes[].ephemeral.volumeClaimTemplate.spec.volumeName", PX_RULE_NO_VOLUME),
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char *kind;
	const struct px_rule *rules;
	size_t n;
} KIND_RULES[] = {
        {"Namespace", NAMESPACE, N(NAMESPACE)},
        {"Event", EVENT, N(EVENT)},
        {"SubjectAccessReview", ACCESS, N(ACCESS)},
        {"SelfSubjectAccessReview", ACCESS, N(ACCESS)},
        {"LocalSubjectAccessReview", ACCESS, N(ACCESS)},
        {"SelfSubjectRulesReview", RULES_REVIEW, N(RULES_REVIEW)},
        {"RoleBinding", BINDING, N(BINDING)},
        {"NetworkPolicy", NETWORK_POLICY, N(NETWORK_POLICY)},
        {"StatefulSet", STATEFUL_SET, N(STATEFUL_SET)},
        {"PersistentVolumeClaim", CLAIM, N(CLAIM)},
};

/* Where the pod spec is, by kind. */
static const struct {
	const char *kind;
	const char *spec;
} POD_SPECS[] = {
        {"Pod", "spec"},
        {"PodTemplate", "template.spec"},
        {"ReplicationController", "spec.template.spec"},
        {"Deployment", "spec.template.spec"},
        {"ReplicaSet", "spec.template.spec"},
        {"StatefulSet", "spec.template.spec"},
        {"DaemonSet", "spec.template.spec"},
        {"Job", "spec.template.spec"},
        {"CronJob", "spec.jobTemplate.spec.template.spec"},
};

/* The kinds of the resources whose bodies may come without one (patches). */
static const struct {
	const char *group, *resource, *kind;
} RESOURCE_KINDS[] = {
        {"", "namespaces", "Namespace"},
        {"", "events", "Event"},
        {"events.k8s.io", "events", "Event"},
        {"", "pods", "Pod"},
        {"", "podtemplates", "PodTemplate"},
        {"", "replicationcontrollers", "ReplicationController"},
        {"", "persistentvolumeclaims", "PersistentVolumeClaim"},
        {"apps", "deployments", "Deployment"},
        {"apps", "replicasets", "ReplicaSet"},
        {"apps", "statefulsets", "StatefulSet"},
        {"apps", "daemonsets", "DaemonSet"},
        {"batch", "jobs", "Job"},
        {"batch", "cronjobs", "CronJob"},
        {"rbac.authorization.k8s.io", "rolebindings", "RoleBinding"},
        {"networking.k8s.io", "networkpolicies", "NetworkPolicy"},
};

size_t px_conv_rules(const char *kind, struct px_rule *out)
{
	size_t n = 0;

	out[n++] = ANY[0];
	for (size_t i = 0; kind && i < N(KIND_RULES); i++) {
		if (strcmp(KIND_RULES[i].kind, kind) != 0)
			continue;
		for (size_t k = 0; k < KIND_RULES[i].n && n < PX_RULES_MAX; k++)
			out[n++] = KIND_RULES[i].rules[k];
	}
	for (size_t i = 0; kind && i < N(POD_SPECS); i++) {
		if (strcmp(POD_SPECS[i].kind, kind) != 0)
			continue;
		for (size_t k = 0; k < N(POD) && n < PX_RULES_MAX; k++) {
			out[n] = POD[k];
			out[n++].base = POD_SPECS[i].spec;
		}
	}
	return n;
}

void px_rule_path(const struct px_rule *r, char *out, size_t size)
{
	snprintf(out, size, "%s%s%s", r->base, *r->base ? "." : "", r->path);
}

const char *px_resource_kind(const char *group, const char *resource)
{
	for (size_t i = 0; resource && i < N(RESOURCE_KINDS); i++) {
		if ((!group || strcmp(RESOURCE_KINDS[i].group, group) == 0) &&
		    strcmp(RESOURCE_KINDS[i].resource, resource) == 0)
			return RESOURCE_KINDS[i].kind;
	}
	return NULL;
}

long px_subject_namespace(const char *name, size_t *len)
{
	static const char group[] = "system:serviceaccounts:", user[] = "system:serviceaccount:";
	const char *ns;

	if (strncmp(name, group, sizeof(group) - 1) == 0) {
		*len = strlen(name + sizeof(group) - 1);
		return (long)sizeof(group) - 1;
	}
	if (strncmp(name, user, sizeof(user) - 1) != 0)
		return -1;
	ns = name + sizeof(user) - 1;
	*len = strcspn(ns, ":");
	return ns[*len] == ':' ? (long)sizeof(user) - 1 : -1;
}

/* ---------- fields ---------- */

static enum px_conv_result fail(struct px_conv *c, enum px_conv_result r, const char *field,
                                const char *why)
{
	snprintf(c->field, sizeof(c->field), "%s", field);
	c->why = why;
	return r;
}

/* The name @from (@n bytes) converted in @c's direction, or NULL (not the tenant's). */
static const char *convert_name(const struct px_conv *c, const char *from, size_t n)
{
	char name[64];

	if (n == 0 || n >= sizeof(name))
		return NULL;
	memcpy(name, from, n);
	name[n] = '\0';
	return c->dir == PX_TO_USER ? px_nsmap_shown(c->map, name) : px_nsmap_full(c->map, name);
}

/* The namespace string @v (named @field; absent, null or "" is fine). */
static enum px_conv_result ns_value(struct px_conv *c, json_t *v, const char *field)
{
	const char *to;

	if (!v || json_is_null(v))
		return PX_CONV_OK;
	if (!json_is_string(v))
		return fail(c, PX_CONV_INVALID, field, NULL);
	if (json_string_length(v) == 0)
		return PX_CONV_OK;
	to = convert_name(c, json_string_value(v), json_string_length(v));
	if (!to)
		return c->dir == PX_TO_USER ? PX_CONV_OK : fail(c, PX_CONV_FOREIGN, field, NULL);
	json_string_set(v, to);
	return PX_CONV_OK;
}

/* An RBAC subject's name: the namespace inside a ServiceAccount's user or group name. */
static enum px_conv_result subject_name(struct px_conv *c, json_t *v, const char *field)
{
	const char *name = json_string_value(v), *to;
	struct buf out = BUF_INIT(TEXT_MAX);
	size_t len;
	long at = name ? px_subject_namespace(name, &len) : -1;

	if (v && !name && !json_is_null(v) && c->dir == PX_TO_UPSTREAM)
		return fail(c, PX_CONV_INVALID, field, NULL);
	if (at < 0)
		return PX_CONV_OK;
	to = convert_name(c, name + at, len);
	if (!to)
		return c->dir == PX_TO_USER ? PX_CONV_OK : fail(c, PX_CONV_FOREIGN, field, NULL);
	if (buf_appendf(&out, "%.*s%s%s", (int)at, name, to, name + at + len) < 0) {
		buf_release(&out);
		return fail(c, PX_CONV_TOO_LONG, field, NULL);
	}
	json_string_set(v, buf_cstr(&out));
	buf_release(&out);
	return PX_CONV_OK;
}

/* ---------- namespace selectors ---------- */

/* A rule applied where it stands: the field's path so far (indexes included). */
struct walk {
	struct px_conv *c;
	enum px_rule_kind kind;
	char field[256];
	size_t len;
};

static void field_push(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void field_push(struct walk *w, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (w->len >= sizeof(w->field) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(w->field + w->len, sizeof(w->field) - w->len, fmt, ap);
	va_end(ap);
	w->len += n < 0 ? 0 : (size_t)n;
	if (w->len >= sizeof(w->field))
		w->len = sizeof(w->field) - 1;
}

static void field_pop(struct walk *w, size_t len)
{
	w->len = len;
	w->field[len] = '\0';
}

/* A refusal of the field where the walk is. */
static enum px_conv_result refuse(struct walk *w, enum px_conv_result r, const char *why)
{
	return fail(w->c, r, w->field, why);
}

/* Whether the selector must keep to the tenant's namespaces (an affinity term's, upstream). */
static bool strict(const struct walk *w)
{
	return w->kind == PX_RULE_SELECTOR && w->c->dir == PX_TO_UPSTREAM;
}

/* A value of kubernetes.io/metadata.name in a selector. */
static enum px_conv_result label_value(struct walk *w, json_t *v)
{
	const char *s = json_string_value(v);
	const char *to = s ? convert_name(w->c, s, json_string_length(v)) : NULL;

	if (to) {
		json_string_set(v, to);
		return PX_CONV_OK;
	}
	if (s && !strict(w) && w->c->dir == PX_TO_UPSTREAM && px_nsmap_shown(w->c->map, s))
		return refuse(w, PX_CONV_FOREIGN, PX_WHY_UPSTREAM_NAME);
	if (!strict(w))
		return PX_CONV_OK; /* a peer's other namespace, or an answer: as it is */
	return refuse(w, s ? PX_CONV_FOREIGN : PX_CONV_INVALID, NULL);
}

static enum px_conv_result match_labels(struct walk *w, json_t *labels, int *reqs)
{
	size_t at = w->len;
	enum px_conv_result r = PX_CONV_OK;
	const char *key;
	json_t *v;

	if (!labels || json_is_null(labels))
		return PX_CONV_OK;
	field_push(w, ".matchLabels");
	if (!json_is_object(labels) && strict(w))
		r = refuse(w, PX_CONV_INVALID, NULL);
	json_object_foreach(json_is_object(labels) ? labels : NULL, key, v) {
		size_t in = w->len;

		field_push(w, ".%s", key);
		if (r == PX_CONV_OK && strcmp(key, PX_NAME_LABEL) != 0 && strict(w))
			r = refuse(w, PX_CONV_FOREIGN, PX_WHY_SELECTOR_KEY);
		else if (r == PX_CONV_OK && strcmp(key, PX_NAME_LABEL) == 0)
			r = label_value(w, v);
		*reqs += strcmp(key, PX_NAME_LABEL) == 0;
		field_pop(w, in);
	}
	field_pop(w, at);
	return r;
}

/* One of matchExpressions: its values converted when its key is the namespace's name. */
static enum px_conv_result expression(struct walk *w, json_t *e, int *reqs)
{
	const char *key = json_string_value(json_object_get(e, "key"));
	const char *op = json_string_value(json_object_get(e, "operator"));
	json_t *values = json_object_get(e, "values"), *v;
	bool name = key && strcmp(key, PX_NAME_LABEL) == 0;
	enum px_conv_result r = PX_CONV_OK;
	size_t i, at = w->len;

	if (strict(w)) {
		if (!name)
			field_push(w, ".key");
		else if (!op || strcmp(op, "In") != 0)
			field_push(w, ".operator");
		else if (json_array_size(values) == 0)
			field_push(w, ".values");
		if (w->len != at)
			return refuse(w, PX_CONV_FOREIGN,
			              !name                     ? PX_WHY_SELECTOR_KEY
			              : op && !strcmp(op, "In") ? PX_WHY_SELECTOR_VALUES
			                                        : PX_WHY_SELECTOR_OP);
		(*reqs)++;
	}
	json_array_foreach(name ? values : NULL, i, v) {
		field_push(w, ".values[%zu]", i);
		if (r == PX_CONV_OK)
			r = label_value(w, v);
		field_pop(w, at);
	}
	return r;
}

/*
 * A namespaceSelector: an affinity term's (strict towards upstream: requirements on the
 * namespace's name, In values of the tenant's, at least one) or a NetworkPolicy peer's.
 */
static enum px_conv_result ns_selector(struct walk *w, json_t *sel)
{
	json_t *exprs = json_object_get(sel, "matchExpressions"), *e;
	enum px_conv_result r;
	int reqs = 0;
	size_t i, at = w->len;

	if (!sel || json_is_null(sel))
		return PX_CONV_OK;
	if (!json_is_object(sel))
		return strict(w) ? refuse(w, PX_CONV_INVALID, NULL) : PX_CONV_OK;
	r = match_labels(w, json_object_get(sel, "matchLabels"), &reqs);
	if (r == PX_CONV_OK && exprs && !json_is_null(exprs) && !json_is_array(exprs) &&
	    strict(w)) {
		field_push(w, ".matchExpressions");
		r = refuse(w, PX_CONV_INVALID, NULL);
	}
	json_array_foreach(exprs, i, e) {
		field_push(w, ".matchExpressions[%zu]", i);
		if (r == PX_CONV_OK)
			r = expression(w, e, &reqs);
		field_pop(w, at);
	}
	if (r == PX_CONV_OK && strict(w) && reqs == 0)
		r = refuse(w, PX_CONV_FOREIGN, PX_WHY_SELECTOR_EMPTY);
	return r;
}

/* ---------- rules on objects ---------- */

static enum px_conv_result apply(struct walk *w, json_t *v)
{
	struct px_conv *c = w->c;

	switch (w->kind) {
	case PX_RULE_NS:
		return ns_value(c, v, w->field);
	case PX_RULE_SUBJECT:
		return subject_name(c, v, w->field);
	case PX_RULE_SELECTOR:
	case PX_RULE_PEER:
		return ns_selector(w, v);
	case PX_RULE_NO_VOLUME:
		return c->dir == PX_TO_UPSTREAM && json_string_length(v) > 0
		               ? refuse(w, PX_CONV_FOREIGN, PX_WHY_TEMPLATE_VOLUME)
		               : PX_CONV_OK;
	case PX_RULE_CLAIM_NAME:
		c->claim_name = json_is_string(v) ? json_string_value(v) : c->claim_name;
		return PX_CONV_OK;
	case PX_RULE_CLAIM_VOLUME:
		c->claim_volume = json_is_string(v) ? json_string_value(v) : c->claim_volume;
		return PX_CONV_OK;
	}
	return PX_CONV_OK;
}

char px_path_segment(const char **p, char *name, size_t size)
{
	const char *s = *p + (**p == '.');
	size_t n;

	if (!*s)
		return '\0';
	if (*s == '[') {
		*p = s + 2;
		return '[';
	}
	n = *s == '{' ? strcspn(s + 1, "}") : strcspn(s, ".[{");
	snprintf(name, size, "%.*s", (int)n, s + (*s == '{'));
	*p = s + n + (*s == '{' ? 2 : 0);
	return *s == '{' ? '{' : '.';
}

/* Follow @path from @v to the rule's field(s). */
static enum px_conv_result walk(struct walk *w, json_t *v, const char *path)
{
	char name[128];
	size_t at = w->len, i;
	char seg = px_path_segment(&path, name, sizeof(name));
	enum px_conv_result r = PX_CONV_OK;
	json_t *e;

	if (!seg)
		return apply(w, v);
	if (!v || json_is_null(v))
		return PX_CONV_OK;
	if (seg == '[' ? !json_is_array(v) : !json_is_object(v))
		return w->c->dir == PX_TO_UPSTREAM ? refuse(w, PX_CONV_INVALID, NULL) : PX_CONV_OK;
	if (seg != '[') {
		field_push(w, "%s%s", at ? "." : "", name);
		r = walk(w, json_object_get(v, name), path);
		field_pop(w, at);
		return r;
	}
	json_array_foreach(v, i, e) {
		field_push(w, "[%zu]", i);
		if (r == PX_CONV_OK)
			r = walk(w, e, path);
		field_pop(w, at);
	}
	return r;
}

/* The rules of @kind from the @first on (1: all but those of any object). */
static enum px_conv_result by_rules(struct px_conv *c, json_t *obj, const char *kind, size_t first)
{
	struct px_rule rules[PX_RULES_MAX];
	size_t n = px_conv_rules(kind, rules);
	enum px_conv_result r = PX_CONV_OK;

	for (size_t i = first; i < n && r == PX_CONV_OK; i++) {
		struct walk w = {.c = c, .kind = rules[i].kind};
		char path[PATH_MAX_];

		px_rule_path(&rules[i], path, sizeof(path));
		r = walk(&w, obj, path);
	}
	return r;
}

/* ---------- protobuf bodies (pbconv.h) ---------- */

#define PB_RULE_PATH 256
#define PB_WHY_ORDER                                                                           \
	"a namespaceSelector requirement repeats its key or operator, or gives values before " \
	"them"

/* The namespaceSelector being walked: its parts come one by one. */
struct pb_selector {
	int rule;       /* its rule, or -1 */
	int reqs;       /* its requirements on the namespace's name, complete */
	bool expr;      /* inside one of its matchExpressions: */
	bool key, name; /* its key seen, and the namespace's name */
	bool op, in;    /* its operator seen, and In */
	int values;
	char path[PB_PATH_MAX];
};

/* The rules of the body's kind (convert.h), and what the walk found. */
struct pb_rules {
	const struct px_nsmap *map;
	struct px_rule rules[PX_RULES_MAX];
	char paths[PX_RULES_MAX][PB_RULE_PATH];
	size_t n;
	struct buf repl;            /* a replacement */
	const char *why;            /* a refusal's reason (NULL: not a namespace of the tenant's) */
	char bad[PB_PATH_MAX + 64]; /* a selector refused once walked, and why */
	const char *bad_why;
	struct pb_selector sel;
	struct px_claim *claim, unused;
};

static bool pb_strict(const struct pb_rules *r)
{
	return r->sel.rule >= 0 && r->rules[r->sel.rule].kind == PX_RULE_SELECTOR;
}

static void pb_defer(struct pb_rules *r, const char *part, const char *why)
{
	if (!r->bad_why) {
		snprintf(r->bad, sizeof(r->bad), "%s%s", r->sel.path, part);
		r->bad_why = why;
	}
}

/* The end of one of matchExpressions: whole, it confines the selector. */
static void pb_expr_end(struct pb_rules *r)
{
	struct pb_selector *s = &r->sel;

	if (s->expr && pb_strict(r)) {
		if (!s->key || !s->name)
			pb_defer(r, ".matchExpressions[].key", PX_WHY_SELECTOR_KEY);
		else if (!s->op || !s->in)
			pb_defer(r, ".matchExpressions[].operator", PX_WHY_SELECTOR_OP);
		else if (!s->values)
			pb_defer(r, ".matchExpressions[].values", PX_WHY_SELECTOR_VALUES);
		else
			s->reqs++;
	}
	s->expr = false;
}

/* The end of a selector (another begins, or the body ends). */
static void pb_sel_end(struct pb_rules *r)
{
	pb_expr_end(r);
	if (pb_strict(r) && r->sel.reqs == 0)
		pb_defer(r, "", PX_WHY_SELECTOR_EMPTY);
	r->sel.rule = -1;
}

static bool is_selector(const struct px_rule *rule)
{
	return rule->kind == PX_RULE_SELECTOR || rule->kind == PX_RULE_PEER;
}

/* A selector's message or one of its matchExpressions begins at @path (rule @i's). */
static void pb_selector_part(struct pb_rules *r, size_t i, const char *path)
{
	size_t len = strlen(r->paths[i]);

	if (strcmp(path, r->paths[i]) == 0) {
		pb_sel_end(r);
		r->sel = (struct pb_selector){.rule = (int)i};
		snprintf(r->sel.path, sizeof(r->sel.path), "%s", path);
	} else if (strncmp(path, r->paths[i], len) == 0 &&
	           strcmp(path + len, ".matchExpressions[]") == 0 && r->sel.rule == (int)i) {
		pb_expr_end(r);
		r->sel.expr = true;
		r->sel.key = r->sel.name = r->sel.op = r->sel.in = false;
		r->sel.values = 0;
	}
}

/* Whether the walk must enter @path: it leads to a rule's field, or is inside a selector. */
static bool pb_enter(void *ud, const char *path)
{
	struct pb_rules *r = ud;
	size_t n = strlen(path);
	bool walk = false;

	for (size_t i = 0; i < r->n; i++) {
		const char *rule = r->paths[i];
		size_t len = strlen(rule);

		if (n <= len && strncmp(rule, path, n) == 0 && strchr(".[{", rule[n]))
			walk = true;
		if (!is_selector(&r->rules[i]) || strncmp(path, rule, len) != 0)
			continue;
		walk = walk || path[len] == '.';
		pb_selector_part(r, i, path);
	}
	return walk;
}

static enum pb_verdict pb_replace(struct pb_rules *r, const char *to, const char **repl)
{
	buf_reset(&r->repl);
	if (buf_append_str(&r->repl, to) < 0)
		return PB_REFUSE;
	*repl = buf_cstr(&r->repl);
	return PB_REPLACE;
}

static enum pb_verdict pb_refuse(struct pb_rules *r, const char *why)
{
	r->why = why;
	return PB_REFUSE;
}

/* A namespace's shown name @value (@len bytes) made upstream's; NULL when not the tenant's. */
static const char *pb_full(const struct pb_rules *r, const char *value, size_t len)
{
	return len && len < 64 && strlen(value) == len ? px_nsmap_full(r->map, value) : NULL;
}

/* A value of kubernetes.io/metadata.name in a selector. */
static enum pb_verdict pb_label_value(struct pb_rules *r, const char *value, size_t len,
                                      const char **repl)
{
	const char *full = pb_full(r, value, len);

	if (full)
		return pb_replace(r, full, repl);
	if (pb_strict(r))
		return pb_refuse(r, NULL);
	if (strlen(value) == len && px_nsmap_shown(r->map, value))
		return pb_refuse(r, PX_WHY_UPSTREAM_NAME);
	return PB_KEEP; /* a peer's other namespace: as it is */
}

/* A part of one of matchExpressions: "key", "operator" or "values[]". */
static enum pb_verdict pb_expression_leaf(struct pb_rules *r, const char *part, const char *value,
                                          size_t len, const char **repl)
{
	struct pb_selector *s = &r->sel;

	if (strcmp(part, "key") == 0) {
		if (s->key || s->values)
			return pb_refuse(r, PB_WHY_ORDER);
		s->key = true;
		s->name = len == strlen(PX_NAME_LABEL) && memcmp(value, PX_NAME_LABEL, len) == 0;
		return pb_strict(r) && !s->name ? pb_refuse(r, PX_WHY_SELECTOR_KEY) : PB_KEEP;
	}
	if (strcmp(part, "operator") == 0) {
		if (s->op || s->values)
			return pb_refuse(r, PB_WHY_ORDER);
		s->op = true;
		s->in = len == 2 && memcmp(value, "In", 2) == 0;
		return pb_strict(r) && !s->in ? pb_refuse(r, PX_WHY_SELECTOR_OP) : PB_KEEP;
	}
	if (strcmp(part, "values[]") != 0)
		return PB_KEEP;
	if (!s->key || (pb_strict(r) && !s->op))
		return pb_refuse(r, PB_WHY_ORDER);
	s->values++;
	return s->name ? pb_label_value(r, value, len, repl) : PB_KEEP;
}

/* A string inside the selector walked, at @rest after the selector's path. */
static enum pb_verdict pb_selector_leaf(struct pb_rules *r, const char *rest, const char *value,
                                        size_t len, const char **repl)
{
	static const char exprs[] = ".matchExpressions[].";

	if (strcmp(rest, ".matchLabels{" PX_NAME_LABEL "}") == 0) {
		r->sel.reqs += pb_strict(r);
		return pb_label_value(r, value, len, repl);
	}
	if (strncmp(rest, ".matchLabels{", 13) == 0)
		return pb_strict(r) ? pb_refuse(r, PX_WHY_SELECTOR_KEY) : PB_KEEP;
	if (strncmp(rest, exprs, sizeof(exprs) - 1) == 0 && r->sel.expr)
		return pb_expression_leaf(r, rest + sizeof(exprs) - 1, value, len, repl);
	return PB_KEEP;
}

/* An RBAC subject's name: the namespace inside a ServiceAccount's user or group name. */
static enum pb_verdict pb_subject(struct pb_rules *r, const char *value, const char **repl)
{
	size_t len;
	long at = px_subject_namespace(value, &len);
	char ns[64];
	const char *full;

	if (at < 0)
		return PB_KEEP;
	snprintf(ns, sizeof(ns), "%.*s", (int)len, value + at);
	full = pb_full(r, ns, len);
	if (!full)
		return pb_refuse(r, NULL);
	buf_reset(&r->repl);
	if (buf_appendf(&r->repl, "%.*s%s%s", (int)at, value, full, value + at + len) < 0)
		return pb_refuse(r, "too long");
	*repl = buf_cstr(&r->repl);
	return PB_REPLACE;
}

/* A string at rule @rule's field. */
static enum pb_verdict pb_rule_leaf(struct pb_rules *r, const struct px_rule *rule,
                                    const char *value, size_t len, const char **repl)
{
	const char *full = pb_full(r, value, len);

	if (strlen(value) != len)
		return pb_refuse(r, "a NUL byte in a name");
	switch (rule->kind) {
	case PX_RULE_NS:
		return !len ? PB_KEEP : full ? pb_replace(r, full, repl) : pb_refuse(r, NULL);
	case PX_RULE_SUBJECT:
		return pb_subject(r, value, repl);
	case PX_RULE_NO_VOLUME:
		return len ? pb_refuse(r, PX_WHY_TEMPLATE_VOLUME) : PB_KEEP;
	case PX_RULE_CLAIM_NAME:
		snprintf(r->claim->name, sizeof(r->claim->name), "%s", value);
		return PB_KEEP;
	case PX_RULE_CLAIM_VOLUME:
		snprintf(r->claim->volume, sizeof(r->claim->volume), "%s", value);
		r->claim->set = true;
		return PB_KEEP;
	default:
		return PB_KEEP;
	}
}

static enum pb_verdict pb_leaf(void *ud, const char *path, const char *value, size_t len,
                               const char **repl)
{
	struct pb_rules *r = ud;

	for (size_t i = 0; i < r->n; i++) {
		size_t rl = strlen(r->paths[i]);

		if (strncmp(path, r->paths[i], rl) != 0)
			continue;
		if (!path[rl])
			return pb_rule_leaf(r, &r->rules[i], value, len, repl);
		if (path[rl] == '.' && is_selector(&r->rules[i]) && r->sel.rule == (int)i)
			return pb_selector_leaf(r, path + rl, value, len, repl);
	}
	return PB_KEEP;
}

static struct pb_rules *pb_rules_new(const struct px_nsmap *map, const char *kind,
                                     struct px_claim *cl)
{
	struct pb_rules *r = xcalloc(1, sizeof(*r));

	r->map = map;
	r->claim = cl ? cl : &r->unused;
	r->repl = (struct buf)BUF_INIT(64u << 10);
	r->sel.rule = -1;
	r->n = px_conv_rules(kind, r->rules);
	for (size_t i = 0; i < r->n; i++)
		px_rule_path(&r->rules[i], r->paths[i], sizeof(r->paths[i]));
	return r;
}

int px_convert_pb(struct px_conv *c, const char *kind, const char *body, size_t len,
                  struct buf *out, struct px_claim *claim)
{
	struct pb_rules *r = pb_rules_new(c->map, kind, claim);
	struct pb_visit v = {.enter = pb_enter, .leaf = pb_leaf, .ud = r};
	char field[PB_PATH_MAX];
	int rc = pb_rewrite(body, len, &v, out, field, sizeof(field));

	c->why = NULL;
	if (rc == 0)
		pb_sel_end(r);
	if (rc == 0 && r->bad_why) {
		snprintf(field, sizeof(field), "%.*s", (int)sizeof(field) - 1, r->bad);
		r->why = r->bad_why;
		rc = -EPERM;
	}
	snprintf(c->field, sizeof(c->field), "%.*s", (int)sizeof(c->field) - 1,
	         rc < 0 ? field : "");
	if (rc == -EPERM)
		c->why = r->why;
	buf_release(&r->repl);
	free(r);
	return rc;
}

/* ---------- containers ---------- */

static enum px_conv_result text_member(struct px_conv *c, json_t *obj, const char *key)
{
	json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
	struct buf out = BUF_INIT(TEXT_MAX);
	enum px_conv_result r = PX_CONV_OK;

	if (!json_is_string(v) || c->dir != PX_TO_USER)
		return PX_CONV_OK;
	if (px_nsmap_text(c->map, json_string_value(v), &out) < 0)
		r = fail(c, PX_CONV_TOO_LONG, key, NULL);
	else
		json_string_set(v, buf_cstr(&out));
	buf_release(&out);
	return r;
}

static enum px_conv_result status_object(struct px_conv *c, json_t *obj)
{
	json_t *details = json_object_get(obj, "details");
	json_t *causes = json_is_object(details) ? json_object_get(details, "causes") : NULL;
	const char *kind = json_is_object(details)
	                           ? json_string_value(json_object_get(details, "kind"))
	                           : NULL;
	enum px_conv_result r = text_member(c, obj, "message");
	size_t i;
	json_t *cause;

	if (r == PX_CONV_OK && kind && strcmp(kind, "namespaces") == 0)
		r = ns_value(c, json_object_get(details, "name"), "details.name");
	json_array_foreach(causes, i, cause) {
		if (r == PX_CONV_OK)
			r = text_member(c, cause, "message");
	}
	return r;
}

static enum px_conv_result convert_as(struct px_conv *c, json_t *obj, const char *kind);

static bool is_list_kind(const char *kind)
{
	size_t n = strlen(kind);

	return n > 4 && strcmp(kind + n - 4, "List") == 0;
}

static enum px_conv_result list_object(struct px_conv *c, json_t *obj, const char *kind)
{
	char item_kind[128];
	enum px_conv_result r = PX_CONV_OK;
	size_t i;
	json_t *item;

	snprintf(item_kind, sizeof(item_kind), "%.*s", (int)(strlen(kind) - 4), kind);
	json_array_foreach(json_object_get(obj, "items"), i, item) {
		const char *own = json_string_value(json_object_get(item, "kind"));

		if (r == PX_CONV_OK)
			r = convert_as(c, item, own ? own : item_kind);
	}
	return r;
}

static bool of_namespaces(const struct px_conv *c)
{
	return c->resource && strcmp(c->resource, "namespaces") == 0;
}

static enum px_conv_result table_row(struct px_conv *c, json_t *row)
{
	json_t *obj = json_object_get(row, "object");
	json_t *cells = json_object_get(row, "cells");
	bool namespaces = of_namespaces(c);
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	enum px_conv_result r = convert_as(c, obj, kind ? kind : namespaces ? "Namespace" : "");
	json_t *first = json_array_get(cells, 0);
	const char *shown;

	if (r != PX_CONV_OK || !namespaces || !json_is_string(first) || c->dir != PX_TO_USER)
		return r;
	shown = px_nsmap_shown(c->map, json_string_value(first));
	if (shown)
		json_string_set(first, shown);
	return r;
}

static enum px_conv_result table_object(struct px_conv *c, json_t *obj)
{
	enum px_conv_result r = PX_CONV_OK;
	size_t i;
	json_t *row;

	json_array_foreach(json_object_get(obj, "rows"), i, row) {
		if (r == PX_CONV_OK)
			r = table_row(c, row);
	}
	return r;
}

/* @obj as a @kind (its own kind, or one its container gives). */
static enum px_conv_result convert_as(struct px_conv *c, json_t *obj, const char *kind)
{
	if (!json_is_object(obj))
		return PX_CONV_OK;
	if (strcmp(kind, "Status") == 0)
		return status_object(c, obj);
	if (strcmp(kind, "Table") == 0)
		return table_object(c, obj);
	if (is_list_kind(kind) && json_is_array(json_object_get(obj, "items")))
		return list_object(c, obj, kind);
	if (strcmp(kind, "PartialObjectMetadata") == 0 && of_namespaces(c))
		kind = "Namespace";
	return by_rules(c, obj, kind, 0);
}

/* A watch event has exactly a type and an object, and no kind of its own. */
static bool is_watch_event(const json_t *body)
{
	return json_is_string(json_object_get(body, "type")) &&
	       json_is_object(json_object_get(body, "object")) && !json_object_get(body, "kind");
}

enum px_conv_result px_convert(struct px_conv *c, json_t *body)
{
	json_t *obj = body;
	const char *kind, *implied = NULL;
	enum px_conv_result r;

	c->field[0] = '\0';
	c->why = NULL;
	c->claim_name = c->claim_volume = NULL;
	if (c->dir == PX_TO_UPSTREAM) /* a request body, maybe a patch without a kind */
		implied = px_resource_kind(c->group, c->resource);
	if (!implied && is_watch_event(body)) /* never a request to a kind with rules */
		obj = json_object_get(body, "object");
	kind = json_string_value(json_object_get(obj, "kind"));
	if (!kind || !*kind)
		kind = implied ? implied : "";
	r = convert_as(c, obj, kind);
	/*
	 * A body that says it is another kind than its resource's (a subresource's, an Eviction;
	 * or a lie) gets that kind's own rules too: its metadata.namespace is converted once.
	 */
	if (r == PX_CONV_OK && implied && strcmp(kind, implied) != 0 && json_is_object(obj))
		r = by_rules(c, obj, implied, 1);
	return r;
}
