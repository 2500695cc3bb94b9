/* tenant_model.c - the desired state of a Tenant (see tenant_model.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"
#include "kube/quantity.h"
#include "tenancy/tenant_model.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

static const char *const ROLES[] = {"owners", "editors", "viewers"};

/* ---- claims ---- */

static int add_claim(struct tm_claims *c, struct names_claim *claims, const char *tenant,
                     const char *prefix, const char *name, const char *suffix, const char *kind,
                     const char *user)
{
	struct tm_ns *ns = &c->ns[c->n];

	claims[c->n] = (struct names_claim){
	        .owner = tenant, .prefix = prefix, .name = name, .suffix = suffix};
	memset(ns, 0, sizeof(*ns));
	snprintf(ns->kind, sizeof(ns->kind), "%s", kind);
	ns->user = user;
	c->n++;
	return 0;
}

static bool user_seen(const struct tm_claims *c, const char *user)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->ns[i].user && strcmp(c->ns[i].user, user) == 0)
			return true;
	return false;
}

static size_t max_claims(struct jval tenant)
{
	struct jval ns = jval_path(tenant, "spec", "namespaces", NULL);
	struct jval ac = jval_path(tenant, "spec", "accessControl", NULL);

	return jval_size(jval_get(ns, "withTenantPrefix")) +
	       jval_size(jval_get(ns, "withoutTenantPrefix")) +
	       jval_size(jval_path(ac, "owners", "users", NULL)) +
	       jval_size(jval_path(ac, "editors", "users", NULL));
}

/* The string elements of @list as claims named after themselves, with @prefix. */
static void add_named(struct tm_claims *out, struct names_claim *claims, const char *t,
                      const char *prefix, struct jval list)
{
	struct jval v;
	size_t i;

	jval_foreach(list, i, v)
		if (jval_str(v))
			add_claim(out, claims, t, prefix, jval_str(v), NULL, jval_str(v), NULL);
}

int tm_claims_build(struct jval tenant, struct tm_claims *out)
{
	const char *t = jval_str(jval_path(tenant, "metadata", "name", NULL));
	size_t cap = max_claims(tenant), i;
	struct names_claim *claims = xcalloc(cap ? cap : 1, sizeof(*claims));
	struct jval spec_ns = jval_path(tenant, "spec", "namespaces", NULL), v;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	out->ns = xcalloc(cap ? cap : 1, sizeof(*out->ns));
	if (t == NULL)
		goto out;
	add_named(out, claims, t, t, jval_get(spec_ns, "withTenantPrefix"));
	add_named(out, claims, t, NULL, jval_get(spec_ns, "withoutTenantPrefix"));
	if (jval_bool(jval_path(spec_ns, "sandboxes", "enabled", NULL), false)) {
		for (size_t r = 0; r < 2; r++) {
			struct jval users =
			        jval_path(tenant, "spec", "accessControl", ROLES[r], "users", NULL);

			jval_foreach(users, i, v) {
				const char *u = jval_str(v);

				if (u != NULL && !user_seen(out, u))
					add_claim(out, claims, t, t, u, KIND_SANDBOX, KIND_SANDBOX,
					          u);
			}
		}
	}
	rc = names_claims_check(claims, out->n, NULL, NULL);
	for (i = 0; rc == 0 && i < out->n; i++) {
		memcpy(out->ns[i].name, claims[i].final, NAMES_BUF);
		out->ns[i].collides = claims[i].collides_with != NAMES_NO_COLLISION;
		/* the collision is symmetric: mark the claim it collides with too */
		if (out->ns[i].collides)
			out->ns[claims[i].collides_with].collides = true;
	}
	/* A kind label must be a valid label value. */
	for (i = 0; rc == 0 && i < out->n; i++) {
		char kind[NAMES_BUF];

		rc = names_label_value(out->ns[i].kind, kind);
		memcpy(out->ns[i].kind, kind, NAMES_BUF);
	}
out:
	free(claims);
	if (rc < 0)
		tm_claims_release(out);
	return rc;
}

void tm_claims_release(struct tm_claims *c)
{
	free(c->ns);
	c->ns = NULL;
	c->n = 0;
}

const struct tm_ns *tm_claims_find(const struct tm_claims *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->ns[i].name, name) == 0)
			return &c->ns[i];
	return NULL;
}

/* ---- namespace metadata ---- */

/*
 * Replace {{ TENANT.NAME }} and {{ TENANT.USERNAME }} (spaces inside the braces optional); a new
 * string, or NULL when the result would exceed the cap (values come from users).
 */
static char *substitute(const char *in, const char *tenant, const char *user)
{
	struct buf out = BUF_INIT(TM_METADATA_VALUE_MAX);
	int rc = 0;

	while (*in && rc == 0) {
		const char *end, *val = NULL, *p = in + 2;

		if (in[0] != '{' || in[1] != '{') {
			rc = buf_append(&out, in++, 1);
			continue;
		}
		while (*p == ' ')
			p++;
		if (strncmp(p, "TENANT.NAME", 11) == 0)
			val = tenant, p += 11;
		else if (strncmp(p, "TENANT.USERNAME", 15) == 0)
			val = user ? user : "", p += 15;
		while (val && *p == ' ')
			p++;
		end = val && p[0] == '}' && p[1] == '}' ? p + 2 : NULL;
		if (end == NULL) {
			rc = buf_append(&out, in++, 1);
			continue;
		}
		rc = buf_append_str(&out, val);
		in = end;
	}
	if (rc < 0) {
		buf_release(&out);
		return NULL;
	}
	return buf_detach(&out);
}

/* Set @key in @dst to @value with {{ TENANT.* }} substituted (as a label value: sanitised). */
static void put_value(json_t *dst, const char *key, const char *value, const char *tenant,
                      const char *user, bool label_values)
{
	char *s = value ? substitute(value, tenant, user) : NULL;
	char label[NAMES_BUF];

	if (s == NULL)
		return;
	if (label_values && names_label_value(s, label) == 0)
		json_object_set_new(dst, key, json_string(label));
	else if (!label_values)
		json_object_set_new(dst, key, json_string(s));
	free(s);
}

/* The string members of @src (a map of the Tenant's spec) into @dst. */
static void merge_map(json_t *dst, struct jval src, const char *tenant, const char *user,
                      bool label_values)
{
	const char *k;
	struct jval v;
	size_t i;

	jval_foreach_member(src, i, k, v)
		put_value(dst, k, jval_str(v), tenant, user, label_values);
}

/* The same for a map of the LandlordConfig. */
static void merge_json_map(json_t *dst, const json_t *src, const char *tenant, const char *user,
                           bool label_values)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)src, k, v)
		put_value(dst, k, json_string_value(v), tenant, user, label_values);
}

static bool listed(struct jval names, const char *name)
{
	struct jval v;
	size_t i;

	jval_foreach(names, i, v)
		if (jval_str(v) && strcmp(jval_str(v), name) == 0)
			return true;
	return false;
}

json_t *tm_sorted_keys(const json_t *obj)
{
	json_t *keys = json_array();
	const char *k;
	json_t *v;

	/* jansson iterates in insertion order; sort for a stable annotation */
	json_object_foreach((json_t *)obj, k, v) {
		size_t i = 0;

		while (i < json_array_size(keys) &&
		       strcmp(json_string_value(json_array_get(keys, i)), k) < 0)
			i++;
		json_array_insert_new(keys, i, json_string(k));
	}
	return keys;
}

const char *tm_pod_security(struct jval tenant, const struct lcfg *cfg)
{
	static const char *const levels[] = {"privileged", "baseline", "restricted"};
	const char *p = jval_str(jval_path(tenant, "spec", "podSecurity", NULL));

	for (size_t i = 0; p && i < 3; i++)
		if (strcmp(p, levels[i]) == 0)
			return levels[i];
	return lcfg_default_pod_security(cfg);
}

bool tm_network_isolation(struct jval tenant, const struct lcfg *cfg)
{
	struct jval v = jval_path(tenant, "spec", "networkIsolation", NULL);

	return jval_type(v) == JT_BOOL ? jval_bool(v, false) : lcfg_default_network_isolation(cfg);
}

json_t *tm_namespace_metadata(struct jval tenant, const struct lcfg *cfg, const char *plan,
                              const char *ns_name, const struct tm_ns *ns, const char *adopted_kind)
{
	const char *t = jval_name(tenant), *user = ns ? ns->user : NULL;
	const char *level = tm_pod_security(tenant, cfg);
	json_t *labels = json_object(), *annots = json_object(), *managed, *out;
	struct jval spec, specific;
	char user_label[NAMES_BUF] = "", plan_label[NAMES_BUF] = "", *dumped;
	size_t i;

	if (user)
		names_label_value(user, user_label);
	names_label_value(plan ? plan : "", plan_label);
	merge_json_map(labels, lcfg_namespace_labels(cfg), t, user_label, true);
	merge_json_map(annots, lcfg_namespace_annotations(cfg), t, user, false);
	spec = jval_path(tenant, "spec", "namespaces", "metadata", NULL);
	merge_map(labels, jval_path(spec, "common", "labels", NULL), t, user_label, true);
	merge_map(annots, jval_path(spec, "common", "annotations", NULL), t, user, false);
	if (user) {
		merge_map(labels, jval_path(spec, "sandbox", "labels", NULL), t, user_label, true);
		merge_map(annots, jval_path(spec, "sandbox", "annotations", NULL), t, user, false);
	}
	specific = jval_get(spec, "specific");
	jval_foreach(specific, i, spec) {
		if (!listed(jval_get(spec, "namespaces"), ns_name))
			continue;
		merge_map(labels, jval_get(spec, "labels"), t, user_label, true);
		merge_map(annots, jval_get(spec, "annotations"), t, user, false);
	}
	/* landlord's own keys win over anything configured */
	json_object_set_new(labels, LABEL_TENANT, json_string(t));
	json_object_set_new(labels, LABEL_KIND, json_string(ns ? ns->kind : adopted_kind));
	json_object_set_new(labels, LABEL_PLAN, json_string(plan_label));
	json_object_set_new(labels, LABEL_MANAGED_BY, json_string(MANAGED_BY_VALUE));
	json_object_set_new(labels, PSA_LABEL_PREFIX "enforce", json_string(level));
	json_object_set_new(labels, PSA_LABEL_PREFIX "warn", json_string(level));
	json_object_set_new(labels, PSA_LABEL_PREFIX "audit", json_string(level));
	if (jval_bool(jval_path(tenant, "spec", "cordoned", NULL), false))
		json_object_set_new(labels, LABEL_CORDONED, json_string("true"));
	json_object_set_new(annots, ANNOT_SOURCE, json_string(ns ? SOURCE_SPEC : SOURCE_ADOPTED));
	if (user) {
		json_object_set_new(labels, LABEL_USERNAME, json_string(user_label));
		json_object_set_new(annots, ANNOT_USERNAME_RAW, json_string(user));
	}
	managed = json_pack("{s:s,s:o,s:o}", "tenant", t, "labels", tm_sorted_keys(labels),
	                    "annotations", tm_sorted_keys(annots));
	dumped = jx_dumps(managed);
	json_object_set_new(annots, ANNOT_MANAGED_METADATA, json_string(dumped ? dumped : "{}"));
	free(dumped);
	json_decref(managed);
	out = json_pack("{s:o,s:o}", "labels", labels, "annotations", annots);
	return out;
}

/* The annotation as written, if it is an object naming a tenant (a new reference), or NULL. */
static json_t *managed_annotation(struct jval namespace_obj)
{
	const char *a = jval_annotation(namespace_obj, ANNOT_MANAGED_METADATA);
	json_t *m = a ? jx_loads(a, strlen(a), NULL) : NULL;

	if (m && (!json_is_object(m) || !json_is_string(json_object_get(m, "tenant")))) {
		json_decref(m);
		m = NULL;
	}
	return m;
}

json_t *tm_managed_keys(struct jval namespace_obj)
{
	json_t *m = managed_annotation(namespace_obj);
	const char *label = jval_label(namespace_obj, LABEL_TENANT);

	if (m && (label == NULL || strcmp(label, jx_str(m, "tenant", NULL)) != 0)) {
		json_decref(
		        m); /* not the tenant the protected label names: not landlord's record */
		m = NULL;
	}
	return m;
}

bool tm_managed_metadata_ignored(struct jval namespace_obj)
{
	json_t *m;

	if (jval_annotation(namespace_obj, ANNOT_MANAGED_METADATA) == NULL)
		return false;
	m = tm_managed_keys(namespace_obj);
	json_decref(m);
	return m == NULL;
}

bool tm_namespace_protected(const struct lcfg *cfg, const char *name)
{
	return strncmp(name, "kube-", 5) == 0 || strcmp(name, "default") == 0 ||
	       strcmp(name, LANDLORD_SYSTEM_NAMESPACE) == 0 ||
	       lcfg_is_privileged_namespace(cfg, name);
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Add to @patch_map: desired values that differ, and null for keys no longer wanted. */
static void diff_map(json_t *patch_map, struct jval current, const json_t *desired,
                     const json_t *previously_set)
{
	const char *k;
	json_t *v;
	size_t i;

	json_object_foreach((json_t *)desired, k, v)
		if (!jval_equal_json(jval_get(current, k), v))
			json_object_set(patch_map, k, v);
	json_array_foreach(previously_set, i, v) {
		k = json_string_value(v);
		if (k && !json_object_get(desired, k) && jval_type(jval_get(current, k)) != JT_NONE)
			json_object_set_new(patch_map, k, json_null());
	}
}

/* tm_metadata_patch() with the record of what landlord set given (@prev, borrowed, or NULL). */
static json_t *metadata_patch(struct jval current, const json_t *desired, const json_t *prev)
{
	struct jval have_labels = jval_path(current, "metadata", "labels", NULL);
	json_t *empty = json_object();
	json_t *labels = json_object(), *annots = json_object(), *patch = NULL;
	const json_t *want_labels = desired ? json_object_get(desired, "labels") : empty;
	const json_t *want_annots = desired ? json_object_get(desired, "annotations") : empty;
	json_t *prev_labels = json_object_get(prev, "labels");
	json_t *prev_annots = json_deep_copy(json_object_get(prev, "annotations"));

	if (prev_annots == NULL)
		prev_annots = json_array();
	/* the bookkeeping annotation itself is landlord's too */
	json_array_append_new(prev_annots, json_string(ANNOT_MANAGED_METADATA));
	diff_map(labels, have_labels, want_labels, prev_labels);
	diff_map(annots, jval_path(current, "metadata", "annotations", NULL), want_annots,
	         prev_annots);
	if (desired == NULL) {
		/* releasing: landlord.dev labels go whether or not they were recorded */
		for (size_t i = 0; i < jval_size(have_labels); i++) {
			const char *k = jval_key_at(have_labels, i); /* NULL: not an object */

			if (k && has_prefix(k, LANDLORD_KEY_PREFIX))
				json_object_set_new(labels, k, json_null());
		}
	}
	if (desired && jval_annotation(current, ANNOT_RELEASED_FROM))
		json_object_set_new(annots, ANNOT_RELEASED_FROM, json_null());
	if (json_object_size(labels) || json_object_size(annots)) {
		patch = json_pack("{s:{s:s?}}", "metadata", "resourceVersion",
		                  jval_resource_version(current));
		if (json_object_size(labels))
			json_object_set(json_object_get(patch, "metadata"), "labels", labels);
		if (json_object_size(annots))
			json_object_set(json_object_get(patch, "metadata"), "annotations", annots);
	}
	json_decref(labels);
	json_decref(annots);
	json_decref(prev_annots);
	json_decref(empty);
	return patch;
}

json_t *tm_metadata_patch(struct jval current, const json_t *desired)
{
	json_t *prev = tm_managed_keys(current), *patch = metadata_patch(current, desired, prev);

	json_decref(prev);
	return patch;
}

/*
 * The record of what landlord set for @tenant on a namespace it releases: the tenant label, if
 * still there, must name the tenant; one an administrator removed leaves the record to say. A
 * forged record can then only remove keys that are not protected (the Pod Security labels stay
 * and landlord.dev/ keys go anyway), which its writer could remove as well.
 */
static json_t *release_record(struct jval ns, const char *tenant)
{
	json_t *m = managed_annotation(ns);
	const char *label = jval_label(ns, LABEL_TENANT);

	if (m && (strcmp(jx_str(m, "tenant", NULL), tenant) != 0 ||
	          (label && strcmp(label, tenant) != 0))) {
		json_decref(m);
		m = NULL;
	}
	return m;
}

json_t *tm_release_patch(struct jval current, const char *tenant)
{
	json_t *record = release_record(current, tenant);
	json_t *patch = metadata_patch(current, NULL, record), *meta, *labels, *annots, *v;
	struct jval have_annots = jval_path(current, "metadata", "annotations", NULL);
	const char *k;
	void *tmp;
	size_t i;

	json_decref(record);

	if (patch == NULL)
		patch = json_pack("{s:{s:s?}}", "metadata", "resourceVersion",
		                  jval_resource_version(current));
	meta = json_object_get(patch, "metadata");
	if (json_object_get(meta, "annotations") == NULL)
		json_object_set_new(meta, "annotations", json_object());
	annots = json_object_get(meta, "annotations");
	labels = json_object_get(meta, "labels");
	/* the Pod Security level stays until an administrator changes it (quarantine) */
	json_object_foreach_safe(labels, tmp, k, v)
		if (has_prefix(k, PSA_LABEL_PREFIX))
			json_object_del(labels, k);
	if (labels && json_object_size(labels) == 0)
		json_object_del(meta, "labels");
	for (i = 0; i < jval_size(have_annots); i++) {
		k = jval_key_at(have_annots, i); /* NULL: not an object */
		if (k && has_prefix(k, LANDLORD_KEY_PREFIX))
			json_object_set_new(annots, k, json_null());
	}
	json_object_set_new(annots, ANNOT_RELEASED_FROM, json_string(tenant));
	return patch;
}

/* ---- access ---- */

static int kind_rank(const json_t *subject)
{
	const char *k = jx_str(subject, "kind", NULL);

	return strcmp(k, "User") == 0 ? 0 : strcmp(k, "Group") == 0 ? 1 : 2;
}

/* Insert keeping users, then groups, then service accounts, each sorted; drop duplicates. */
static void append_sorted(json_t *arr, json_t *subject)
{
	const char *name = jx_str(subject, "name", NULL);
	const char *ns = jx_str(subject, "namespace", NULL) ?: "";
	size_t i = 0;

	for (; i < json_array_size(arr); i++) {
		json_t *o = json_array_get(arr, i);
		int c = kind_rank(o) - kind_rank(subject);

		if (c == 0)
			c = strcmp(jx_str(o, "name", NULL), name);
		if (c == 0)
			c = strcmp(jx_str(o, "namespace", NULL) ?: "", ns);
		if (c == 0) {
			json_decref(subject); /* listed twice */
			return;
		}
		if (c > 0)
			break;
	}
	json_array_insert_new(arr, i, subject);
}

json_t *tm_subjects(struct jval tenant, const char *role)
{
	struct jval ac = jval_path(tenant, "spec", "accessControl", role, NULL);
	struct jval users = jval_get(ac, "users"), groups = jval_get(ac, "groups");
	struct jval sas = jval_get(ac, "serviceAccounts"), v;
	json_t *out = json_array();
	size_t i;

	jval_foreach(users, i, v)
		if (jval_str(v))
			append_sorted(out, json_pack("{s:s,s:s,s:s}", "kind", "User", "apiGroup",
			                             RBAC_GROUP, "name", jval_str(v)));
	jval_foreach(groups, i, v)
		if (jval_str(v))
			append_sorted(out, json_pack("{s:s,s:s,s:s}", "kind", "Group", "apiGroup",
			                             RBAC_GROUP, "name", jval_str(v)));
	jval_foreach(sas, i, v) {
		const char *ns = jval_str(jval_get(v, "namespace"));
		const char *name = jval_str(jval_get(v, "name"));

		if (ns && name)
			append_sorted(out, json_pack("{s:s,s:s,s:s}", "kind", "ServiceAccount",
			                             "name", name, "namespace", ns));
	}
	return out;
}

static json_t *object_meta(struct jval tenant, const char *name, const char *ns)
{
	json_t *m = json_pack("{s:s,s:{s:s,s:s}}", "name", name, "labels", LABEL_MANAGED_BY,
	                      MANAGED_BY_VALUE, LABEL_TENANT, jval_name(tenant));

	if (ns)
		json_object_set_new(m, "namespace", json_string(ns));
	return m;
}

static void add_binding(json_t *out, struct jval tenant, const char *ns, const char *role,
                        const char *cluster_role, json_t *subjects)
{
	char name[512];

	if (json_array_size(subjects) == 0) {
		json_decref(subjects);
		return;
	}
	snprintf(name, sizeof(name), ROLEBINDING_PREFIX "%s-%s", role, cluster_role);
	json_object_set_new(out, name,
	                    json_pack("{s:s,s:s,s:o,s:{s:s,s:s,s:s},s:o}", "apiVersion",
	                              RBAC_GROUP "/v1", "kind", "RoleBinding", "metadata",
	                              object_meta(tenant, name, ns), "roleRef", "apiGroup",
	                              RBAC_GROUP, "kind", "ClusterRole", "name", cluster_role,
	                              "subjects", subjects));
}

json_t *tm_rolebindings(struct jval tenant, const struct lcfg *cfg, const char *ns_name,
                        const json_t *ns_labels, const struct tm_ns *claim, bool private_sandbox)
{
	const char *roles[3];
	json_t *out = json_object();
	bool sandbox = claim && claim->user;

	lcfg_roles_for_namespace(cfg, ns_labels, &roles[0], &roles[1], &roles[2]);
	for (size_t r = 0; r < 3; r++) {
		json_t *subjects =
		        sandbox && private_sandbox ? json_array() : tm_subjects(tenant, ROLES[r]);

		if (sandbox && r == 0)
			append_sorted(subjects,
			              json_pack("{s:s,s:s,s:s}", "kind", "User", "apiGroup",
			                        RBAC_GROUP, "name", claim->user));
		add_binding(out, tenant, ns_name, ROLES[r], roles[r], subjects);
	}
	return out;
}

/* ---- policies and quota ---- */

/* @str (or the integer @n when @str is NULL) in canonical form into @buf; NULL when it does not
 * parse. */
static const char *canonical(const char *str, long long n, char buf[QTY_STR_MAX])
{
	struct qty q;

	if (str == NULL)
		q = qty_from_int(n);
	else if (qty_parse(str, &q) != 0)
		return NULL;
	return qty_format(&q, buf);
}

json_t *tm_canonical_quantities(struct jval list)
{
	json_t *out = json_object();
	const char *k, *c;
	char s[QTY_STR_MAX];
	struct jval v;
	size_t i;

	jval_foreach_member(list, i, k, v) {
		if (jval_type(v) == JT_INT)
			c = canonical(NULL, jval_int(v, 0), s);
		else
			c = jval_str(v) ? canonical(jval_str(v), 0, s) : NULL;
		json_object_set_new(out, k, c ? json_string(c) : jval_to_json(v));
	}
	return out;
}

/* tm_canonical_quantities() of a ResourceList landlord built (a split of the plan). */
static json_t *canonical_json(const json_t *list)
{
	json_t *out = json_object(), *v;
	const char *k, *c;
	char s[QTY_STR_MAX];

	json_object_foreach((json_t *)list, k, v) {
		if (json_is_integer(v))
			c = canonical(NULL, json_integer_value(v), s);
		else
			c = json_string_value(v) ? canonical(json_string_value(v), 0, s) : NULL;
		json_object_set_new(out, k, c ? json_string(c) : json_incref(v));
	}
	return out;
}

json_t *tm_limitrange(struct jval tenant, struct jval plan, const char *ns_name)
{
	static const char *const maps[] = {"max", "min", "default", "defaultRequest",
	                                   "maxLimitRequestRatio"};
	struct jval limits = jval_path(plan, "spec", "limitRange", "limits", NULL), item;
	json_t *items;
	size_t i;

	if (jval_type(limits) != JT_ARRAY || jval_size(limits) == 0)
		return NULL;
	items = json_array();
	jval_foreach(limits, i, item) {
		json_t *copy = jval_to_json(item); /* the desired item, sent as written */

		for (size_t m = 0; m < sizeof(maps) / sizeof(maps[0]); m++)
			if (jval_type(jval_get(item, maps[m])) == JT_OBJECT)
				json_object_set_new(
				        copy, maps[m],
				        tm_canonical_quantities(jval_get(item, maps[m])));
		json_array_append_new(items, copy);
	}
	return json_pack("{s:s,s:s,s:o,s:{s:o}}", "apiVersion", "v1", "kind", "LimitRange",
	                 "metadata", object_meta(tenant, LIMITS_NAME, ns_name), "spec", "limits",
	                 items);
}

json_t *tm_networkpolicy(struct jval tenant, const char *ns_name, const json_t *privileged)
{
	json_t *ingress = json_pack("[{s:[{s:{s:{s:s}}}]}]", "from", "namespaceSelector",
	                            "matchLabels", LABEL_TENANT, jval_name(tenant));

	if (json_array_size(privileged) > 0)
		json_array_append_new(ingress, json_pack("{s:[{s:{s:[{s:s,s:s,s:O}]}}]}", "from",
		                                         "namespaceSelector", "matchExpressions",
		                                         "key", "kubernetes.io/metadata.name",
		                                         "operator", "In", "values", privileged));
	return json_pack("{s:s,s:s,s:o,s:{s:{},s:[s],s:o}}", "apiVersion", "networking.k8s.io/v1",
	                 "kind", "NetworkPolicy", "metadata",
	                 object_meta(tenant, ISOLATION_NAME, ns_name), "spec", "podSelector",
	                 "policyTypes", "Ingress", "ingress", ingress);
}

json_t *tm_resourcequota(struct jval tenant, const char *ns_name, const json_t *hard)
{
	return json_pack("{s:s,s:s,s:o,s:{s:o}}", "apiVersion", "v1", "kind", "ResourceQuota",
	                 "metadata", object_meta(tenant, QUOTA_NAME, ns_name), "spec", "hard",
	                 canonical_json(hard));
}

void tm_tenant_role_name(const char *tenant, enum tm_tenant_role which, char out[TM_ROLE_NAME_BUF])
{
	snprintf(out, TM_ROLE_NAME_BUF,
	         which == TM_ROLE_OWNERS ? TENANT_OWNERS_ROLE_FMT : TENANT_CLUSTERROLE_FMT, tenant);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of @names as a sorted array (a stable rule, so a steady state writes nothing). */
static json_t *sorted_keys(const json_t *names)
{
	size_t n = json_object_size(names), i = 0;
	const char **keys = xcalloc(n + 1, sizeof(*keys));
	const char *k;
	json_t *v, *out = json_array();

	json_object_foreach((json_t *)names, k, v)
		keys[i++] = k;
	qsort(keys, n, sizeof(*keys), name_cmp);
	for (i = 0; i < n; i++)
		json_array_append_new(out, json_string(keys[i]));
	free(keys);
	return out;
}

/*
 * Owners' self-service namespaces: `create` anywhere (the webhook decides which names, and
 * RBAC cannot scope a create by name), `delete` only on the tenant's own namespaces.
 */
static void add_namespace_rules(json_t *rules, const json_t *namespaces)
{
	json_array_append_new(rules, json_pack("{s:[s],s:[s],s:[s]}", "apiGroups", "", "resources",
	                                       "namespaces", "verbs", "create"));
	if (json_object_size(namespaces) == 0)
		return; /* no resourceNames would mean every namespace */
	json_array_append_new(rules, json_pack("{s:[s],s:[s],s:o,s:[s]}", "apiGroups", "",
	                                       "resources", "namespaces", "resourceNames",
	                                       sorted_keys(namespaces), "verbs", "delete"));
}

json_t *tm_clusterrole(struct jval tenant, enum tm_tenant_role which, const json_t *namespaces)
{
	char name[TM_ROLE_NAME_BUF];
	json_t *verbs = which == TM_ROLE_OWNERS ? json_pack("[s]", VERB_OWN)
	                                        : json_pack("[s,s]", "get", "watch");
	json_t *rules =
	        json_pack("[{s:[s],s:[s],s:[s],s:o}]", "apiGroups", LANDLORD_GROUP, "resources",
	                  "tenants", "resourceNames", jval_name(tenant), "verbs", verbs);

	if (which == TM_ROLE_OWNERS)
		add_namespace_rules(rules, namespaces);
	tm_tenant_role_name(jval_name(tenant), which, name);
	return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", RBAC_GROUP "/v1", "kind", "ClusterRole",
	                 "metadata", object_meta(tenant, name, NULL), "rules", rules);
}

json_t *tm_clusterrolebinding(struct jval tenant, enum tm_tenant_role which)
{
	char name[TM_ROLE_NAME_BUF];
	json_t *subjects = json_array();
	size_t roles = which == TM_ROLE_OWNERS ? 1 : 3; /* ROLES[0] is the owners */

	for (size_t r = 0; r < roles; r++) {
		json_t *s = tm_subjects(tenant, ROLES[r]), *v;
		size_t i;

		json_array_foreach(s, i, v)
			append_sorted(subjects, json_incref(v));
		json_decref(s);
	}
	if (json_array_size(subjects) == 0) {
		json_decref(subjects);
		return NULL;
	}
	tm_tenant_role_name(jval_name(tenant), which, name);
	return json_pack("{s:s,s:s,s:o,s:{s:s,s:s,s:s},s:o}", "apiVersion", RBAC_GROUP "/v1",
	                 "kind", "ClusterRoleBinding", "metadata", object_meta(tenant, name, NULL),
	                 "roleRef", "apiGroup", RBAC_GROUP, "kind", "ClusterRole", "name", name,
	                 "subjects", subjects);
}

void tm_index_plan(const struct jdoc *tenant, void (*emit)(const char *value, void *ctx), void *ctx,
                   void *ud)
{
	const char *p = jd_str(tenant, "spec", "plan", NULL);

	(void)ud;
	if (p)
		emit(p, ctx);
}

/* ---- spec.hibernation ---- */

/* A string of @v's member @key, or NULL when absent, not a string or empty. */
static const char *nonempty(struct jval v, const char *key)
{
	const char *s = jval_str(jval_get(v, key));

	return s && *s ? s : NULL;
}

void tm_hibernation_parse(struct jval tenant, struct tm_hibernation *out)
{
	struct jval h = jval_path(tenant, "spec", "hibernation", NULL);

	memset(out, 0, sizeof(*out));
	if (jval_type(h) != JT_OBJECT)
		return;
	out->set = true;
	out->sleep = nonempty(h, "sleepSchedule");
	out->wake = nonempty(h, "wakeSchedule");
	out->timezone = nonempty(h, "timezone") ?: TM_DEFAULT_TZ;
	out->enforce = jval_bool(jval_get(h, "enforce"), false);
	out->allow_exclusion = jval_bool(jval_get(h, "allowWorkloadExclusion"), false);
}

json_t *tm_resourcesupervisor(struct jval tenant, bool argocd)
{
	const char *name = jval_name(tenant);
	const char *uid = jval_str(jval_path(tenant, "metadata", "uid", NULL));
	struct tm_hibernation h;
	json_t *meta, *schedule, *sup;

	tm_hibernation_parse(tenant, &h);
	if (!h.set || name == NULL || uid == NULL)
		return NULL;
	meta = object_meta(tenant, name, NULL);
	json_object_set_new(meta, "ownerReferences",
	                    json_pack("[{s:s,s:s,s:s,s:s,s:b}]", "apiVersion",
	                              LANDLORD_GROUP "/" LANDLORD_VERSION_V1A1, "kind", "Tenant",
	                              "name", name, "uid", uid, "controller", 1));
	schedule = json_pack("{s:s}", "timezone", h.timezone);
	if (h.sleep)
		json_object_set_new(schedule, "sleepSchedule", json_string(h.sleep));
	if (h.wake)
		json_object_set_new(schedule, "wakeSchedule", json_string(h.wake));
	sup = json_pack("{s:s,s:s,s:o,s:{s:{s:{s:{s:s}}},s:o,s:b,s:b}}", "apiVersion",
	                LANDLORD_GROUP "/" LANDLORD_VERSION_V1A1, "kind", TM_SUPERVISOR_KIND,
	                "metadata", meta, "spec", "namespaces", "labelSelector", "matchLabels",
	                LABEL_TENANT, name, "schedule", schedule, "enforce", h.enforce,
	                "allowWorkloadExclusion", h.allow_exclusion);
	if (argocd)
		json_object_set_new(json_object_get(sup, "spec"), "argocd",
		                    json_pack("{s:[s]}", "appProjects", name));
	return sup;
}

bool tm_supervisor_owned_by(struct jval supervisor, const char *tenant_uid)
{
	struct jval refs = jval_path(supervisor, "metadata", "ownerReferences", NULL), ref;
	size_t i;

	jval_foreach(refs, i, ref) {
		const char *uid = jval_str(jval_get(ref, "uid"));

		if (tenant_uid && uid && strcmp(uid, tenant_uid) == 0)
			return true;
	}
	return false;
}

json_t *tm_supervisor_owner_rule(struct jval tenant)
{
	return json_pack("{s:[s],s:[s],s:[s],s:[s,s,s]}", "apiGroups", LANDLORD_GROUP, "resources",
	                 TM_SUPERVISORS, "resourceNames", jval_name(tenant), "verbs", "get",
	                 "patch", "update");
}
