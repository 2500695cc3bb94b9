/*
 * test_fieldrules.c - no namespace field of a built-in kind goes unnoticed (fieldrules.h).
 *
 * tests/data/fieldrules/openapi-v2.json is the real /openapi/v2 of the test control plane
 * (tests/cluster, Kubernetes v1.33.13 with --runtime-config=api/all=true and every feature
 * gate on), trimmed to what this test reads: the built-in groups' paths without /watch/ (each
 * with one operation and its x-kubernetes-group-version-kind), and the definitions the
 * built-in kinds reach, with only type, properties, items, additionalProperties, allOf, $ref
 * and x-kubernetes-group-version-kind kept.
 *
 * The kinds walked are those of the paths px_filter_openapi_v2() keeps with nodes read-only
 * (the widest view apifilter.h gives), so a kind that becomes visible is walked from then on.
 * Each field that fieldrules.h says must be listed has to be, and then:
 *   - a PX_FIELD_CONVERTED one is converted by px_convert() in a body of its kind: to
 *     upstream and back, and refused when it names a namespace of no tenant's (kept as it is
 *     where convert.h says so: a NetworkPolicy peer may name a platform namespace);
 *   - a PX_FIELD_GAP one is not converted (yet): when it is, the table must say so;
 *   - every entry of the table is used, and an entry for a whole type is an exemption of a
 *     type with no namespace field.
 * Regenerate the data file from a running control plane when Kubernetes is upgraded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "proxy/apifilter.h"
#include "proxy/convert.h"
#include "proxy/fieldrules.h"
#include "proxy/nsmap.h"

#define SEGS_MAX  48
#define SEG_LEN   96
#define CHAIN_MAX 48

enum leaf {
	LEAF_OTHER,    /* nothing to build a body with (a boolean, a whole reference) */
	LEAF_STRING,   /* "namespace": "dev" */
	LEAF_STRINGS,  /* "namespaces": ["dev"] */
	LEAF_SELECTOR, /* a LabelSelector on namespaces */
};

struct walker {
	const json_t *defs;
	const char *kind, *api_version; /* the kind walked */
	char seg[SEGS_MAX][SEG_LEN];    /* the path from the kind, "[]" after arrays */
	size_t nseg;
	struct {
		const char *def;
		size_t at; /* the segment its fields start at */
	} chain[CHAIN_MAX];
	size_t nchain;
	bool *used; /* per rule */
	json_t *missing;
	int hits;
	struct px_nsmap *map;
};

/* "io.k8s.api.core.v1.PodAffinityTerm" gives "core.PodAffinityTerm". */
static void scope_of(const char *def, char *out, size_t size)
{
	const char *type = strrchr(def, '.');
	const char *p = type, *pkg;
	int dots = 0;

	if (!type) {
		snprintf(out, size, "%s", def);
		return;
	}
	while (p > def && dots < 2) {
		p--;
		dots += *p == '.';
	}
	pkg = *p == '.' ? p + 1 : p;
	snprintf(out, size, "%.*s%s", (int)(strchr(pkg, '.') - pkg), pkg, type);
}

static void join(const struct walker *w, size_t from, char *out, size_t size)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t i = from; i < w->nseg; i++)
		n += (size_t)snprintf(out + n, size - n, "%s%s", i > from ? "." : "", w->seg[i]);
	assert_true(n < size);
}

static bool names_namespace(const char *field)
{
	for (const char *p = field; *p; p++) {
		if (strncasecmp(p, "namespace", 9) == 0)
			return true;
	}
	return false;
}

static const char *ref_of(const json_t *schema)
{
	const char *ref = json_string_value(json_object_get(schema, "$ref"));

	if (!ref)
		ref = json_string_value(json_object_get(
		        json_array_get(json_object_get(schema, "allOf"), 0), "$ref"));
	return ref ? strrchr(ref, '/') + 1 : NULL;
}

static bool type_has_namespace(const json_t *defs, const char *def)
{
	const char *key;
	const json_t *v;

	json_object_foreach(json_object_get(json_object_get(defs, def), "properties"), key, v) {
		if (names_namespace(key))
			return true;
	}
	return false;
}

static bool is_reference_type(const char *def)
{
	size_t n = strlen(def);

	return (n > 9 && strcmp(def + n - 9, "Reference") == 0) ||
	       (n > 3 && strcmp(def + n - 3, "Ref") == 0);
}

static enum leaf leaf_of(const json_t *schema)
{
	const char *type = json_string_value(json_object_get(schema, "type"));
	const char *ref = ref_of(schema);
	const json_t *items = json_object_get(schema, "items");

	if (ref && strstr(ref, ".LabelSelector") && !strstr(ref, "Requirement"))
		return LEAF_SELECTOR;
	if (type && strcmp(type, "string") == 0)
		return LEAF_STRING;
	if (type && strcmp(type, "array") == 0 && json_is_string(json_object_get(items, "type")) &&
	    strcmp(json_string_value(json_object_get(items, "type")), "string") == 0)
		return LEAF_STRINGS;
	return LEAF_OTHER;
}

/* ---------- bodies of the kind walked, with a value at the field ---------- */

static json_t *leaf_value(enum leaf leaf, const char *ns)
{
	if (leaf == LEAF_STRING)
		return json_string(ns);
	if (leaf == LEAF_STRINGS)
		return json_pack("[s]", ns);
	return json_pack("{s:{s:s}}", "matchLabels", "kubernetes.io/metadata.name", ns);
}

/* The segment's name without its "[]" and "{}" (as many as it has), into @name. */
static size_t seg_name(const char *seg, char *name, size_t size)
{
	size_t n = strlen(seg);

	while (n >= 2 && (strcmp(seg + n - 2, "[]") == 0 || strcmp(seg + n - 2, "{}") == 0))
		n -= 2;
	snprintf(name, size, "%.*s", (int)n, seg);
	return n;
}

static json_t *body_with(const struct walker *w, enum leaf leaf, const char *ns)
{
	json_t *v = leaf_value(leaf, ns);

	for (size_t i = w->nseg; i-- > 0;) {
		char name[SEG_LEN];
		size_t n = seg_name(w->seg[i], name, sizeof(name));

		for (size_t k = strlen(w->seg[i]); k > n; k -= 2)
			v = w->seg[i][k - 1] == ']' ? json_pack("[o]", v)
			                            : json_pack("{s:o}", "k", v);
		v = json_pack("{s:o}", name, v);
	}
	json_object_set_new(v, "apiVersion", json_string(w->api_version));
	json_object_set_new(v, "kind", json_string(w->kind));
	return v;
}

static const json_t *value_at(const struct walker *w, const json_t *body)
{
	const json_t *v = body;

	for (size_t i = 0; i < w->nseg; i++) {
		char name[SEG_LEN];
		size_t n = seg_name(w->seg[i], name, sizeof(name));

		v = json_object_get(v, name);
		for (size_t k = strlen(w->seg[i]); k > n; k -= 2)
			v = w->seg[i][k - 1] == ']' ? json_array_get(v, 0)
			                            : json_object_get(v, "k");
	}
	return v;
}

/* Convert a body whose field says @ns; the field's value after, and the result in *@r. */
static json_t *converted(const struct walker *w, enum leaf leaf, const char *ns, enum px_dir dir,
                         enum px_conv_result *r)
{
	json_t *body = body_with(w, leaf, ns);
	struct px_conv c = {.map = w->map, .dir = dir};
	json_t *v;

	*r = px_convert(&c, body);
	v = json_incref((json_t *)value_at(w, body));
	json_decref(body);
	return v;
}

/* Converted fields that keep a namespace not the tenant's instead of refusing it (convert.h). */
static bool keeps_others(const struct px_field_rule *rule)
{
	return strcmp(rule->scope, "networking.NetworkPolicyPeer") == 0;
}

static void check_foreign(const struct walker *w, const struct px_field_rule *rule, enum leaf leaf,
                          const char *path)
{
	enum px_conv_result foreign = PX_CONV_OK;
	json_t *other = converted(w, leaf, "elsewhere", PX_TO_UPSTREAM, &foreign);
	json_t *same = leaf_value(leaf, "elsewhere");

	if (keeps_others(rule) && (foreign != PX_CONV_OK || !json_equal(other, same)))
		fail_msg("%s %s: a namespace of no tenant's is not kept as it is", w->kind, path);
	else if (!keeps_others(rule) && foreign != PX_CONV_FOREIGN)
		fail_msg("%s %s: a namespace of no tenant's is not refused", w->kind, path);
	json_decref(same);
	json_decref(other);
}

static void check_fate(const struct walker *w, const struct px_field_rule *rule, enum leaf leaf,
                       const char *path)
{
	json_t *shown = leaf_value(leaf, "dev"), *full = leaf_value(leaf, "acme-dev");
	enum px_conv_result r, back;
	json_t *up = converted(w, leaf, "dev", PX_TO_UPSTREAM, &r);
	json_t *down = converted(w, leaf, "acme-dev", PX_TO_USER, &back);

	if (rule->fate == PX_FIELD_CONVERTED) {
		if (r != PX_CONV_OK || !json_equal(up, full) || back != PX_CONV_OK ||
		    !json_equal(down, shown))
			fail_msg("%s %s: listed as converted, but px_convert() does not convert it",
			         w->kind, path);
		check_foreign(w, rule, leaf, path);
	} else if (r != PX_CONV_OK || !json_equal(up, shown) || !json_equal(down, full)) {
		fail_msg("%s %s: px_convert() converts it now: make its entry PX_FIELD_CONVERTED",
		         w->kind, path);
	}
	json_decref(down);
	json_decref(up);
	json_decref(full);
	json_decref(shown);
}

/* ---------- the walk ---------- */

/* A field to be listed, at the current path (@type: a whole reference type, or NULL). */
static void hit(struct walker *w, const json_t *schema, const char *type)
{
	char path[2048], full[2048], scope[256];
	const struct px_field_rule *rule;

	w->hits++;
	join(w, 0, full, sizeof(full));
	rule = px_field_rule_find("*", full);
	for (size_t i = 0; !rule && i < w->nchain; i++) {
		scope_of(w->chain[i].def, scope, sizeof(scope));
		join(w, w->chain[i].at, path, sizeof(path));
		rule = px_field_rule_find(scope, path);
	}
	if (!rule && type) {
		scope_of(type, scope, sizeof(scope));
		rule = px_field_rule_find(scope, "");
	}
	if (!rule) {
		scope_of(type ? type : w->chain[w->nchain - 1].def, scope, sizeof(scope));
		join(w, type ? w->nseg : w->chain[w->nchain - 1].at, path, sizeof(path));
		json_array_append_new(w->missing,
		                      json_sprintf("%s %s (%s: %s)", scope, path, w->kind, full));
		return;
	}
	w->used[rule - px_field_rules] = true;
	if (rule->fate != PX_FIELD_EXEMPT && !type && leaf_of(schema) != LEAF_OTHER)
		check_fate(w, rule, leaf_of(schema), full);
	else if (rule->fate != PX_FIELD_EXEMPT)
		fail_msg("%s %s: only a string, a list of strings or a selector can be converted",
		         w->kind, full);
}

static void walk_def(struct walker *w, const char *def);

static bool on_chain(const struct walker *w, const char *def)
{
	for (size_t i = 0; i < w->nchain; i++) {
		if (strcmp(w->chain[i].def, def) == 0)
			return true;
	}
	return false;
}

static void field(struct walker *w, const json_t *schema, const char *name)
{
	const char *type = ref_of(schema);
	const json_t *items = json_object_get(schema, "items");
	const json_t *map = json_object_get(schema, "additionalProperties");
	char *last = w->seg[w->nseg - 1];
	size_t len = strlen(last);

	if (name && names_namespace(name))
		hit(w, schema, NULL);
	if (type) {
		if (is_reference_type(type) && !type_has_namespace(w->defs, type))
			hit(w, schema, type);
		if (!on_chain(w, type))
			walk_def(w, type);
	} else if (json_is_object(items) || json_is_object(map)) {
		assert_true(len + 3 <= SEG_LEN);
		memcpy(last + len, json_is_object(items) ? "[]" : "{}", 3);
		field(w, json_is_object(items) ? items : map, NULL);
		last[len] = '\0';
	}
}

static void walk_def(struct walker *w, const char *def)
{
	const json_t *props = json_object_get(json_object_get(w->defs, def), "properties");
	const char *key;
	const json_t *schema;

	assert_true(w->nchain < CHAIN_MAX);
	w->chain[w->nchain].def = def;
	w->chain[w->nchain++].at = w->nseg;
	json_object_foreach((json_t *)props, key, schema) {
		assert_true(w->nseg < SEGS_MAX && strlen(key) < SEG_LEN);
		snprintf(w->seg[w->nseg++], SEG_LEN, "%s", key);
		field(w, schema, key);
		w->nseg--;
	}
	w->nchain--;
}

/* ---------- the kinds a tenant reaches ---------- */

static json_t *load_data(void)
{
	const char *root = getenv("LANDLORD_TEST_DATA");
	char path[1024];
	json_error_t e;
	json_t *doc;

	snprintf(path, sizeof(path), "%s/fieldrules/openapi-v2.json", root ? root : "tests/data");
	doc = json_load_file(path, 0, &e);
	if (!doc)
		fail_msg("%s: %s (line %d)", path, e.text, e.line);
	return doc;
}

/* The definition of each kind whose paths apifilter keeps: {definition: "group/version/kind"}. */
static json_t *visible_kinds(const json_t *doc)
{
	const struct px_apifilter f = {.nodes_readonly = true};
	json_t *paths = json_pack("{s:o}", "paths", json_deep_copy(json_object_get(doc, "paths")));
	json_t *by_gvk = json_object(), *kinds = json_object(), *item, *op, *g;
	const char *key, *method;
	size_t i;

	json_object_foreach(json_object_get(doc, "definitions"), key, item) {
		json_array_foreach(json_object_get(item, "x-kubernetes-group-version-kind"), i, g) {
			char id[512];

			snprintf(id, sizeof(id), "%s/%s/%s",
			         json_string_value(json_object_get(g, "group")),
			         json_string_value(json_object_get(g, "version")),
			         json_string_value(json_object_get(g, "kind")));
			json_object_set_new(by_gvk, id, json_string(key));
		}
	}
	assert_int_equal(px_filter_openapi_v2(&f, paths), PX_FILTER_OK);
	json_object_foreach(json_object_get(paths, "paths"), key, item) {
		json_object_foreach(item, method, op) {
			const json_t *gvk = json_object_get(op, "x-kubernetes-group-version-kind");
			char id[512];
			const char *def;

			snprintf(id, sizeof(id), "%s/%s/%s",
			         json_string_value(json_object_get(gvk, "group")),
			         json_string_value(json_object_get(gvk, "version")),
			         json_string_value(json_object_get(gvk, "kind")));
			def = json_string_value(json_object_get(by_gvk, id));
			if (def)
				json_object_set_new(kinds, def, json_string(id));
		}
	}
	json_decref(paths);
	json_decref(by_gvk);
	return kinds;
}

static void walk_kind(struct walker *w, const char *def, const char *gvk)
{
	char group[256], version[64], api_version[320];
	const char *slash1 = strchr(gvk, '/'), *slash2 = strchr(slash1 + 1, '/');

	snprintf(group, sizeof(group), "%.*s", (int)(slash1 - gvk), gvk);
	snprintf(version, sizeof(version), "%.*s", (int)(slash2 - slash1 - 1), slash1 + 1);
	snprintf(api_version, sizeof(api_version), "%s%s%s", group, *group ? "/" : "", version);
	w->kind = slash2 + 1;
	w->api_version = api_version;
	w->nseg = 0;
	w->nchain = 0;
	walk_def(w, def);
}

static void fail_on_missing(const json_t *missing)
{
	char *list;

	if (json_array_size(missing) == 0)
		return;
	list = json_dumps(missing, JSON_INDENT(1));
	fail_msg("%zu namespace fields without an entry in src/proxy/fieldrules.c (innermost "
	         "scope, path there, kind: full path):\n%s",
	         json_array_size(missing), list);
}

static void test_fieldrules__every_namespace_field_has_a_rule(void **state)
{
	const char *full = "acme-dev";
	json_t *doc = load_data(), *kinds = visible_kinds(doc);
	struct walker w = {.defs = json_object_get(doc, "definitions"), .missing = json_array()};
	const char *def;
	json_t *gvk;

	(void)state;
	w.used = calloc(px_field_rules_len, sizeof(*w.used));
	w.map = px_nsmap_new("acme", &full, 1);
	json_object_foreach(kinds, def, gvk) {
		walk_kind(&w, def, json_string_value(gvk));
	}
	fail_on_missing(w.missing);
	print_message("%zu kinds, %d namespace fields\n", json_object_size(kinds), w.hits);
	assert_true(json_object_size(kinds) >= 50); /* the data and the filter still agree */
	assert_true(w.hits >= 350);
	for (size_t i = 0; i < px_field_rules_len; i++) {
		if (!w.used[i])
			fail_msg("fieldrules.c: {\"%s\", \"%s\"} lists no field of a kind a tenant "
			         "reaches: remove it",
			         px_field_rules[i].scope, px_field_rules[i].path);
	}
	px_nsmap_free(w.map);
	free(w.used);
	json_decref(w.missing);
	json_decref(kinds);
	json_decref(doc);
}

/* An entry for a whole type exempts a type that has nothing to convert. */
static void test_fieldrules__type_entries_are_exemptions_of_types_without_namespace(void **state)
{
	json_t *doc = load_data();
	const json_t *defs = json_object_get(doc, "definitions");

	(void)state;
	for (size_t i = 0; i < px_field_rules_len; i++) {
		const struct px_field_rule *r = &px_field_rules[i];
		const char *key;
		const json_t *v;
		int found = 0;

		assert_non_null(r->why);
		assert_true(r->fate != PX_FIELD_EXEMPT || *r->why);
		if (*r->path)
			continue;
		assert_int_equal(r->fate, PX_FIELD_EXEMPT);
		json_object_foreach((json_t *)defs, key, v) {
			char scope[256];

			scope_of(key, scope, sizeof(scope));
			if (strcmp(scope, r->scope) != 0)
				continue;
			found++;
			if (type_has_namespace(defs, key))
				fail_msg("%s has a namespace field: list that field instead", key);
		}
		assert_true(found > 0);
	}
	json_decref(doc);
}

static void test_fieldrules__find(void **state)
{
	(void)state;
	assert_non_null(px_field_rule_find("*", "metadata.namespace"));
	assert_int_equal(px_field_rule_find("rbac.Subject", "namespace")->fate, PX_FIELD_CONVERTED);
	assert_int_equal(px_field_rule_find("core.EndpointAddress", "targetRef.namespace")->fate,
	                 PX_FIELD_GAP);
	assert_null(px_field_rule_find("rbac.Subject", "name"));
	assert_null(px_field_rule_find(NULL, "namespace"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fieldrules__every_namespace_field_has_a_rule),
	        cmocka_unit_test(
	                test_fieldrules__type_entries_are_exemptions_of_types_without_namespace),
	        cmocka_unit_test(test_fieldrules__find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
