/*
 * test_pbconv.c - namespace names rewritten in Kubernetes protobuf bodies (pbconv.h).
 *
 * tests/data/pb/<case>.pb are real request bodies, written by tests/data/pb/gen (Go: client-go's
 * scheme and protobuf encoder for the typed client's group version, as kubectl 1.33 sends
 * them); <case>.want.pb is the same object with "dev" as "acme-dev" and "ci" as "acme-ci" in
 * its namespace fields, encoded by Go too, and <case>.json the object in JSON. A rewrite must
 * give want.pb byte for byte; every string the walk reports must stand at its path in the JSON.
 * Hand-made bodies cover what Go never writes: malformed wire data, unknown fields, repeated
 * fields, tags Go reads as int32.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/buf.h"
#include "proxy/pb_descriptors.h"
#include "proxy/pbconv.h"

#define NAME_LABEL "{kubernetes.io/metadata.name}"
#define AFFINITY   "spec.affinity."
#define TEMPLATE   "spec.template."
#define REQUIRED   "requiredDuringSchedulingIgnoredDuringExecution[]"
#define PREFERRED  "preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm"

/* The namespace fields of the kinds in tests/data/pb, as a proxy's rules would list them. */
static const char *const NS_PATHS[] = {
        "metadata.namespace",
        "subjects[].namespace",
        "involvedObject.namespace",
        "spec.resourceAttributes.namespace",
        AFFINITY "podAffinity." REQUIRED ".namespaces[]",
        AFFINITY "podAffinity." REQUIRED ".namespaceSelector.matchLabels" NAME_LABEL,
        AFFINITY "podAffinity." PREFERRED ".namespaces[]",
        AFFINITY "podAntiAffinity." REQUIRED ".namespaces[]",
        TEMPLATE AFFINITY "podAffinity." REQUIRED ".namespaces[]",
        TEMPLATE AFFINITY "podAffinity." REQUIRED ".namespaceSelector.matchLabels" NAME_LABEL,
        TEMPLATE AFFINITY "podAffinity." PREFERRED ".namespaces[]",
        TEMPLATE AFFINITY "podAntiAffinity." REQUIRED ".namespaces[]",
        "spec.ingress[].from[].namespaceSelector.matchLabels" NAME_LABEL,
        NULL,
};
static const char *const NAMESPACE_PATHS[] = {"metadata.name", "metadata.labels" NAME_LABEL, NULL};

struct rules {
	bool is_namespace; /* the body is a Namespace */
	bool prune;        /* enter() only what leads to a namespace field */
	bool only_dev;     /* "ci" is not the tenant's */
	bool keep_all;     /* leaf() keeps everything */
	json_t *json;      /* when set, every string must stand at its path in it */
	unsigned leaves, entered, rewritten;
	bool saw_data; /* a leaf under "data" */
	json_t *seen;  /* when set: path -> value of every leaf */
};

static bool listed(const char *const *list, const char *path)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(list[i], path) == 0)
			return true;
	return false;
}

/* Whether @path is @rule or a parent of it ("spec" of "spec.x", "m" of "m{k}", "a[]"...). */
static bool leads_to(const char *path, const char *rule)
{
	size_t n = strlen(path);

	return strncmp(rule, path, n) == 0 && strchr(".[{", rule[n]) && rule[n] != '\0';
}

static bool enter(void *ud, const char *path)
{
	struct rules *r = ud;
	bool yes = !r->prune;

	for (size_t i = 0; !yes && NS_PATHS[i]; i++)
		yes = leads_to(path, NS_PATHS[i]);
	for (size_t i = 0; !yes && r->is_namespace && NAMESPACE_PATHS[i]; i++)
		yes = leads_to(path, NAMESPACE_PATHS[i]);
	r->entered += yes;
	return yes;
}

/* Every value at JSON path @path in @v ("a.b[].c{k}"): is @want one of them? */
static bool json_has(const json_t *v, const char *path, const char *want)
{
	size_t n, i;
	const json_t *e;
	char key[512];

	if (*path == '\0')
		return json_is_string(v) && strcmp(json_string_value(v), want) == 0;
	if (*path == '.')
		path++;
	if (strncmp(path, "[]", 2) == 0) {
		json_array_foreach(v, i, e) {
			if (json_has(e, path + 2, want))
				return true;
		}
		return false;
	}
	if (*path == '{') {
		n = strcspn(path, "}");
		snprintf(key, sizeof(key), "%.*s", (int)n - 1, path + 1);
		return json_has(json_object_get(v, key), path + n + 1, want);
	}
	n = strcspn(path, ".[{");
	snprintf(key, sizeof(key), "%.*s", (int)n, path);
	return json_has(json_object_get(v, key), path + n, want);
}

static enum pb_verdict leaf(void *ud, const char *path, const char *value, size_t len,
                            const char **repl)
{
	struct rules *r = ud;
	bool ns = listed(NS_PATHS, path) || (r->is_namespace && listed(NAMESPACE_PATHS, path));

	r->leaves++;
	r->saw_data |= strncmp(path, "data", 4) == 0;
	assert_int_equal(strlen(value), len);
	if (r->seen)
		json_object_set_new(r->seen, path, json_string(value));
	if (r->json && *value)
		assert_true(json_has(r->json, path, value));
	if (r->keep_all || !ns || !*value)
		return PB_KEEP;
	if (strcmp(value, "dev") == 0)
		*repl = "acme-dev";
	else if (strcmp(value, "ci") == 0 && !r->only_dev)
		*repl = "acme-ci";
	else
		return PB_REFUSE;
	r->rewritten++;
	return PB_REPLACE;
}

static void load(const char *name, struct buf *b)
{
	const char *root = getenv("LANDLORD_TEST_DATA");
	char path[4096];

	assert_non_null(root);
	snprintf(path, sizeof(path), "%s/pb/%s", root, name);
	buf_init(b, 1u << 20);
	assert_int_equal(buf_read_file(b, path, false), 0);
}

static json_t *load_json(const char *name)
{
	const char *root = getenv("LANDLORD_TEST_DATA");
	char path[4096];
	json_t *doc;

	snprintf(path, sizeof(path), "%s/pb/%s.json", root, name);
	doc = json_load_file(path, 0, NULL);
	assert_non_null(doc);
	return doc;
}

static int rewrite(const struct buf *in, struct rules *r, struct buf *out, char *field)
{
	struct pb_visit v = {.enter = enter, .leaf = leaf, .ud = r};

	buf_init(out, 8u << 20);
	return pb_rewrite(in->p, in->len, &v, out, field, 128);
}

static void assert_same(const struct buf *a, const struct buf *b)
{
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->p, b->p, a->len);
}

static const char *const CASES[] = {
        "configmap",
        "namespace",
        "rolebinding",
        "pod",
        "deployment",
        "networkpolicy",
        "event",
        "selfsubjectaccessreview",
        "tokenrequest",
        "deleteoptions",
        "deleteoptions-rbac",
        "eviction",
        NULL,
};

/* How many namespace names Go's want.pb differs by, per case (0: no namespace field). */
static unsigned expected_rewrites(const char *name)
{
	static const struct {
		const char *name;
		unsigned n;
	} N[] = {
	        {"configmap", 1},   {"namespace", 2},
	        {"rolebinding", 3}, {"pod", 6},
	        {"deployment", 6},  {"networkpolicy", 2},
	        {"event", 2},       {"selfsubjectaccessreview", 1},
	        {"eviction", 1},
	};

	for (size_t i = 0; i < sizeof(N) / sizeof(N[0]); i++)
		if (strcmp(N[i].name, name) == 0)
			return N[i].n;
	return 0;
}

/* One case, pruned and in full: Go's rewritten bytes, every string where JSON has it. */
static void check_case(const char *name, bool prune)
{
	struct buf in, want, out;
	struct pb_typemeta t;
	json_t *json = load_json(name);
	struct rules r = {.prune = prune, .json = json};
	char file[256], field[128];

	snprintf(file, sizeof(file), "%s.pb", name);
	load(file, &in);
	snprintf(file, sizeof(file), "%s.want.pb", name);
	load(file, &want);
	assert_int_equal(pb_kind(in.p, in.len, &t), 0);
	assert_string_equal(t.kind, json_string_value(json_object_get(json, "kind")));
	assert_string_equal(t.api_version, json_string_value(json_object_get(json, "apiVersion")));
	r.is_namespace = strcmp(t.kind, "Namespace") == 0;
	assert_int_equal(rewrite(&in, &r, &out, field), 0);
	assert_string_equal(field, "");
	assert_same(&out, &want);
	assert_int_equal(r.rewritten, expected_rewrites(name));
	assert_true(r.leaves > 0 || strncmp(name, "deleteoptions", 13) == 0);
	buf_release(&in);
	buf_release(&want);
	buf_release(&out);
	json_decref(json);
}

static void test_pbconv__real_bodies_are_rewritten_as_go_encodes_the_result(void **state)
{
	for (size_t i = 0; CASES[i]; i++) {
		check_case(CASES[i], true);
		check_case(CASES[i], false);
	}
}

static void test_pbconv__unchanged_bodies_come_out_identical(void **state)
{
	for (size_t i = 0; CASES[i]; i++) {
		for (int want = 0; want < 2; want++) {
			struct rules r = {.keep_all = true};
			struct buf in, out;
			char file[256], field[128];

			snprintf(file, sizeof(file), "%s%s", CASES[i], want ? ".want.pb" : ".pb");
			load(file, &in);
			assert_int_equal(rewrite(&in, &r, &out, field), 0);
			assert_same(&out, &in);
			buf_release(&in);
			buf_release(&out);
		}
	}
}

static void test_pbconv__pruned_walks_leave_the_rest_undecoded(void **state)
{
	struct rules pruned = {.prune = true}, full = {0};
	struct buf in, out;
	char field[128];

	load("configmap.pb", &in);
	assert_int_equal(rewrite(&in, &pruned, &out, field), 0);
	buf_release(&out);
	assert_false(pruned.saw_data);
	assert_int_equal(pruned.entered, 1); /* metadata */
	assert_int_equal(rewrite(&in, &full, &out, field), 0);
	buf_release(&out);
	assert_true(full.saw_data); /* data{namespace} is "dev", and kept */
	assert_true(full.leaves > pruned.leaves);
	buf_release(&in);

	/* A Deployment's containers are never entered for the namespace rules. */
	pruned = (struct rules){.prune = true, .seen = json_object()};
	load("deployment.pb", &in);
	assert_int_equal(rewrite(&in, &pruned, &out, field), 0);
	assert_null(json_object_get(pruned.seen, "spec.template.spec.containers[].name"));
	assert_non_null(json_object_get(pruned.seen, "metadata.namespace"));
	json_decref(pruned.seen);
	buf_release(&in);
	buf_release(&out);
}

static void assert_seen(json_t *seen, const char *path, const char *value)
{
	const char *got = json_string_value(json_object_get(seen, path));

	if (!got || strcmp(got, value) != 0)
		fail_msg("%s: %s, not %s", path, got ? got : "(not visited)", value);
}

static void test_pbconv__paths_follow_json(void **state)
{
	struct rules r = {.keep_all = true, .seen = json_object()};
	struct buf in, out;
	char field[128];

	load("pod.pb", &in);
	assert_int_equal(rewrite(&in, &r, &out, field), 0);
	/* repeated strings, maps by key, inline structs, IntOrString and Quantity */
	assert_seen(r.seen, "spec.containers[].args[]", "dev");
	assert_seen(r.seen, "metadata.labels{app}", "web");
	assert_seen(r.seen, "spec.volumes[].configMap.name", "settings");
	assert_seen(r.seen, "spec.containers[].livenessProbe.httpGet.port", "http");
	assert_seen(r.seen, "spec.containers[].resources.limits{cpu}", "500m");
	assert_seen(r.seen, "spec.containers[].env[].valueFrom.fieldRef.fieldPath",
	            "metadata.namespace");
	assert_seen(r.seen, AFFINITY "podAffinity." REQUIRED ".namespaceSelector.matchLabels{tier}",
	            "dev");
	assert_seen(r.seen, AFFINITY "podAffinity." REQUIRED ".topologyKey",
	            "kubernetes.io/hostname");
	json_decref(r.seen);
	buf_release(&in);
	buf_release(&out);
}

static void test_pbconv__a_refusal_names_the_field(void **state)
{
	struct rules r = {.prune = true, .only_dev = true};
	struct buf in, out;
	char field[128];

	load("rolebinding.pb", &in);
	assert_int_equal(rewrite(&in, &r, &out, field), -EPERM);
	assert_string_equal(field, "subjects[].namespace");
	buf_release(&in);
	buf_release(&out);

	r = (struct rules){.prune = true, .only_dev = true};
	load("networkpolicy.pb", &in);
	assert_int_equal(rewrite(&in, &r, &out, field), -EPERM);
	assert_string_equal(field,
	                    "spec.ingress[].from[].namespaceSelector.matchLabels" NAME_LABEL);
	buf_release(&in);
	buf_release(&out);
}

static void test_pbconv__kinds_map_to_their_messages(void **state)
{
	static const char *const K[][3] = {
	        {"v1", "ConfigMap", "k8s.io.api.core.v1.ConfigMap"},
	        {"rbac.authorization.k8s.io/v1", "RoleBinding", "k8s.io.api.rbac.v1.RoleBinding"},
	        {"apps/v1", "Deployment", "k8s.io.api.apps.v1.Deployment"},
	        {"v1", "DeleteOptions", "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"},
	        {"rbac.authorization.k8s.io/v1", "DeleteOptions",
	         "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"},
	        {"authorization.k8s.io/v1", "SelfSubjectAccessReview",
	         "k8s.io.api.authorization.v1.SelfSubjectAccessReview"},
	        {"authentication.k8s.io/v1", "TokenRequest",
	         "k8s.io.api.authentication.v1.TokenRequest"},
	        {"policy/v1", "Eviction", "k8s.io.api.policy.v1.Eviction"},
	        {"events.k8s.io/v1", "Event", "k8s.io.api.events.v1.Event"},
	        {"v1", "Status", "k8s.io.apimachinery.pkg.apis.meta.v1.Status"},
	        {"networking.k8s.io/v1", "NetworkPolicy", "k8s.io.api.networking.v1.NetworkPolicy"},
	};
	char name[256];

	for (size_t i = 0; i < sizeof(K) / sizeof(K[0]); i++) {
		assert_int_equal(pb_message_name(K[i][0], K[i][1], name, sizeof(name)), 0);
		assert_string_equal(name, K[i][2]);
	}
	assert_int_equal(pb_message_name("v1", "Frobnicator", name, sizeof(name)), -ENOENT);
	assert_int_equal(pb_message_name("landlord.dev/v1alpha1", "Tenant", name, sizeof(name)),
	                 -ENOENT);
	assert_int_equal(pb_message_name("core/v1", "ConfigMap", name, sizeof(name)), -ENOENT);
	assert_int_equal(pb_message_name("v1", "ConfigMap", name, 8), -EMSGSIZE);
	for (size_t i = 1; i < pb_gvks_len; i++) { /* sorted, for the binary search */
		int c = strcmp(&pb_pool[pb_gvks[i - 1].api_version],
		               &pb_pool[pb_gvks[i].api_version]);

		assert_true(c < 0 || (c == 0 && strcmp(&pb_pool[pb_gvks[i - 1].kind],
		                                       &pb_pool[pb_gvks[i].kind]) < 0));
	}
	assert_true(pb_schema_depth < PB_DEPTH_MAX);
}

/* Protobuf by hand. */
static void put_varint(struct buf *b, uint64_t v)
{
	unsigned char c;

	do {
		c = (unsigned char)(v & 0x7f);
		v >>= 7;
		c |= v ? 0x80 : 0;
		assert_int_equal(buf_append(b, &c, 1), 0);
	} while (v);
}

static void put_len(struct buf *b, uint64_t num, const void *p, size_t n)
{
	put_varint(b, num << 3 | 2);
	put_varint(b, n);
	assert_int_equal(buf_append(b, p, n), 0);
}

static void put_str(struct buf *b, uint64_t num, const char *s)
{
	put_len(b, num, s, strlen(s));
}

/* An envelope of @raw as @api_version @kind into @out (fresh). */
static void envelope(struct buf *out, const char *api_version, const char *kind,
                     const struct buf *raw)
{
	struct buf tm = BUF_INIT(1u << 20);

	buf_init(out, 8u << 20);
	assert_int_equal(buf_append(out, "k8s\0", 4), 0);
	put_str(&tm, 1, api_version);
	put_str(&tm, 2, kind);
	put_len(out, 1, tm.p, tm.len);
	put_len(out, 2, raw->p ? raw->p : "", raw->len);
	put_str(out, 3, "");
	put_str(out, 4, "");
	buf_release(&tm);
}

/* A ConfigMap whose metadata is @meta, as an envelope. */
static void configmap(struct buf *out, const struct buf *meta)
{
	struct buf raw = BUF_INIT(8u << 20);

	put_len(&raw, 1, meta->p ? meta->p : "", meta->len);
	envelope(out, "v1", "ConfigMap", &raw);
	buf_release(&raw);
}

static int rewrite_meta(const struct buf *meta, struct buf *out, char *field)
{
	struct buf in;
	struct rules r = {.prune = true};
	int rc;

	configmap(&in, meta);
	rc = rewrite(&in, &r, out, field);
	buf_release(&in);
	return rc;
}

static void test_pbconv__unknown_and_repeated_fields(void **state)
{
	struct buf meta = BUF_INIT(1u << 20), want_meta = BUF_INIT(1u << 20), want, out;
	char field[128];

	/* unknown fields kept, every occurrence of namespace rewritten */
	put_str(&meta, 1, "settings");
	put_varint(&meta, 99 << 3 | 0);
	put_varint(&meta, 300);
	put_str(&meta, 3, "dev");
	put_str(&meta, 50, "dev");
	put_varint(&meta, 60 << 3 | 5);
	assert_int_equal(buf_append(&meta, "\1\2\3\4", 4), 0);
	put_str(&meta, 3, "ci");
	put_str(&want_meta, 1, "settings");
	put_varint(&want_meta, 99 << 3 | 0);
	put_varint(&want_meta, 300);
	put_str(&want_meta, 3, "acme-dev");
	put_str(&want_meta, 50, "dev");
	put_varint(&want_meta, 60 << 3 | 5);
	assert_int_equal(buf_append(&want_meta, "\1\2\3\4", 4), 0);
	put_str(&want_meta, 3, "acme-ci");
	configmap(&want, &want_meta);
	assert_int_equal(rewrite_meta(&meta, &out, field), 0);
	assert_same(&out, &want);
	buf_release(&out);
	buf_release(&want);

	/* Go reads a field number as int32(tag >> 3): 2^32 + 3 is namespace (3) */
	buf_reset(&meta);
	put_varint(&meta, ((1ull << 32) + 3) << 3 | 2);
	put_varint(&meta, 3);
	assert_int_equal(buf_append(&meta, "dev", 3), 0);
	assert_int_equal(rewrite_meta(&meta, &out, field), 0);
	assert_non_null(memmem(out.p, out.len, "acme-dev", 8));
	buf_release(&out);
	buf_release(&meta);
	buf_release(&want_meta);
}

static void test_pbconv__lengths_are_reencoded_only_where_changed(void **state)
{
	struct buf meta = BUF_INIT(1u << 20), in, out;
	struct rules r = {.prune = true};
	char field[128];

	/* a non-minimal length (2 bytes for 8) in an unchanged message stays as it is */
	put_varint(&meta, 1 << 3 | 2);
	assert_int_equal(buf_append(&meta, "\x88\x00", 2), 0);
	assert_int_equal(buf_append(&meta, "settings", 8), 0);
	configmap(&in, &meta);
	assert_int_equal(rewrite(&in, &r, &out, field), 0);
	assert_same(&out, &in);
	buf_release(&out);
	buf_release(&in);

	/* metadata of 133 bytes becoming 138: its length takes a second byte */
	buf_reset(&meta);
	{
		char ns[128];

		memset(ns, 'x', 126);
		ns[126] = '\0';
		put_str(&meta, 3, "dev");
		put_str(&meta, 2, ns);
	}
	assert_int_equal(meta.len, 5 + 2 + 126);
	assert_int_equal(rewrite_meta(&meta, &out, field), 0);
	assert_non_null(memmem(out.p, out.len,
	                       "\x0a\x8a\x01\x1a\x08"
	                       "acme-dev",
	                       13));
	buf_release(&out);
	buf_release(&meta);
}

static void expect_invalid(const struct buf *in, const char *why)
{
	struct rules r = {0};
	struct buf out;
	char field[128];
	int rc = rewrite(in, &r, &out, field);

	if (rc != -EINVAL)
		fail_msg("%s: %d, not -EINVAL", why, rc);
	buf_release(&out);
}

static void meta_invalid(const struct buf *meta, const char *why)
{
	struct buf in;

	configmap(&in, meta);
	expect_invalid(&in, why);
	buf_release(&in);
}

static void test_pbconv__malformed_bodies_are_refused(void **state)
{
	struct buf meta = BUF_INIT(1u << 20), in;
	size_t raw_tag, raw_end;

	load("pod.pb", &in);
	raw_tag = 4 + 2 + (unsigned char)in.p[5]; /* after the typeMeta, of under 128 bytes */
	raw_end = in.len - 4; /* contentEncoding and contentType, empty, end the envelope */
	for (size_t n = 0; n < in.len; n++) {
		struct buf cut = {.p = in.p, .len = n, .cap = n, .max = n};
		struct rules r = {0};
		struct buf out;
		int rc = rewrite(&cut, &r, &out, (char[128]){0});

		if ((n <= 4 || (n > raw_tag && n < raw_end)) && rc != -EINVAL)
			fail_msg("cut at %zu of %zu: %d", n, in.len, rc);
		assert_true(rc == 0 || rc == -EINVAL || (rc == -ENOENT && n < raw_tag));
		buf_release(&out);
	}
	buf_release(&in);

	meta_invalid(&(struct buf){.p = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", .len = 11},
	             "an 11-byte varint");
	meta_invalid(&(struct buf){.p = "\x1a\x64"
	                                "dev",
	                           .len = 5},
	             "a length past the end");
	meta_invalid(&(struct buf){.p = "\x18\x01", .len = 2}, "namespace as a varint");
	meta_invalid(&(struct buf){.p = "\x0a\x01x\x00\x01", .len = 5}, "field number 0");
	meta_invalid(&(struct buf){.p = "\xa3\x06\xa4\x06", .len = 4}, "a group");
	meta_invalid(&(struct buf){.p = "\xa6\x06", .len = 2}, "wire type 6");
	meta_invalid(&(struct buf){.p = "\xa1\x06\x01\x02", .len = 4}, "a short fixed64");
	/* a walked map: a key with a NUL, a key as a varint, a value past its entry */
	put_len(&meta, 11,
	        "\x0a\x03"
	        "a\0b"
	        "\x12\x01x",
	        8);
	meta_invalid(&meta, "a NUL in a label key");
	buf_reset(&meta);
	put_len(&meta, 11, "\x08\x01\x12\x01x", 5);
	meta_invalid(&meta, "a label key as a varint");
	buf_reset(&meta);
	put_len(&meta, 11,
	        "\x0a\x01"
	        "a\x12\x05x",
	        6);
	put_str(&meta, 3, "dev");
	meta_invalid(&meta, "a label value past its entry");
	buf_release(&meta);

	load("configmap.json", &in);
	expect_invalid(&in, "JSON");
	buf_release(&in);
	expect_invalid(&(struct buf){.p = "k8s\0\x0a\x05\x0a\x02v1", .len = 10},
	               "a short typeMeta");
	expect_invalid(&(struct buf){.p = "k8s\0\x0a\x04\x12\x02x\0", .len = 10}, "a NUL in kind");
}

static void test_pbconv__nesting_is_bounded(void **state)
{
	struct rules r = {0};
	struct pb_visit v = {.leaf = leaf, .ud = &r, .max_depth = 3};
	struct buf in, out = BUF_INIT(8u << 20);
	char field[128];

	load("deployment.pb", &in);
	assert_int_equal(pb_rewrite(in.p, in.len, &v, &out, field, sizeof(field)), -EINVAL);
	assert_string_equal(field, "spec.selector.matchLabels"); /* an entry, fourth level */
	buf_reset(&out);
	v.max_depth = 0; /* PB_DEPTH_MAX */
	assert_int_equal(pb_rewrite(in.p, in.len, &v, &out, field, sizeof(field)), 0);
	buf_release(&out);
	buf_release(&in);
}

static void test_pbconv__unknown_kinds_and_sizes(void **state)
{
	struct buf raw = BUF_INIT(1u << 20), in, out = BUF_INIT(8u << 20);
	struct pb_visit v = {0};
	struct pb_typemeta t;
	char field[128];

	put_len(&raw, 1, "\x0a\x01x", 3); /* metadata.name "x" */
	envelope(&in, "landlord.dev/v1alpha1", "Tenant", &raw);
	assert_int_equal(pb_rewrite(in.p, in.len, &v, &out, field, sizeof(field)), -ENOENT);
	assert_int_equal(pb_kind(in.p, in.len, &t), 0);
	assert_string_equal(t.api_version, "landlord.dev/v1alpha1");
	assert_string_equal(t.kind, "Tenant");
	buf_release(&in);
	envelope(&in, "v1", "", &raw);
	assert_int_equal(pb_rewrite(in.p, in.len, &v, &out, field, sizeof(field)), -ENOENT);
	buf_release(&in);

	/* over PB_BODY_MAX; an output over its cap */
	envelope(&in, "v1", "ConfigMap", &raw);
	assert_int_equal(pb_rewrite(in.p, PB_BODY_MAX + 1, &v, &out, field, sizeof(field)),
	                 -EMSGSIZE);
	assert_int_equal(pb_kind(in.p, PB_BODY_MAX + 1, &t), -EMSGSIZE);
	buf_release(&out);
	buf_init(&out, 8);
	assert_int_equal(pb_rewrite(in.p, in.len, &v, &out, field, sizeof(field)), -EMSGSIZE);
	buf_release(&out);
	buf_init(&out, 1u << 20);
	assert_int_equal(pb_rewrite(in.p, in.len, &v, &out, field, sizeof(field)), 0);
	assert_same(&out, &in);
	assert_true(pb_is_envelope(in.p, in.len));
	assert_false(pb_is_envelope("{}", 2));
	buf_release(&out);
	buf_release(&in);
	buf_release(&raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pbconv__real_bodies_are_rewritten_as_go_encodes_the_result),
	        cmocka_unit_test(test_pbconv__unchanged_bodies_come_out_identical),
	        cmocka_unit_test(test_pbconv__pruned_walks_leave_the_rest_undecoded),
	        cmocka_unit_test(test_pbconv__paths_follow_json),
	        cmocka_unit_test(test_pbconv__a_refusal_names_the_field),
	        cmocka_unit_test(test_pbconv__kinds_map_to_their_messages),
	        cmocka_unit_test(test_pbconv__unknown_and_repeated_fields),
	        cmocka_unit_test(test_pbconv__lengths_are_reencoded_only_where_changed),
	        cmocka_unit_test(test_pbconv__malformed_bodies_are_refused),
	        cmocka_unit_test(test_pbconv__nesting_is_bounded),
	        cmocka_unit_test(test_pbconv__unknown_kinds_and_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
