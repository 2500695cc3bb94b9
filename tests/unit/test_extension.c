/*
 * test_extension.c - the AppProject and argocd-rbac-cm key landlord wants for a tenant
 * (hibernation/extension_internal.h): names that may go into a casbin line; sourceRepos from the
 * Extension; the LandlordConfig's lists unless the Extension gives its own (even empty), group
 * "" filled in; destinations and destinationServiceAccounts one per namespace, none while
 * impersonation is off (the fields then left out); the three roles' policies and groups; users
 * as "g" lines; unsafe names left out and reported by field; the comparison with the cache
 * (labels, each owned field, a missing field equal to an empty list, other fields ignored).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/jdoc.h"
#include "base/json.h"
#include "hibernation/extension_internal.h"

static struct jdoc *doc_of(const char *text)
{
	struct jdoc *d = NULL;

	assert_int_equal(jdoc_parse(text, strlen(text), NULL, &d, NULL), 0);
	return d;
}

static json_t *json_of(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);

	assert_non_null(j);
	return j;
}

static const char TENANT_SPEC[] =
        "{\"accessControl\":{\"owners\":{\"users\":[\"alice\",\"bad,user\"],\"groups\":[\"ops\"]},"
        "\"editors\":{\"groups\":[\"dev\",\"x\\ny\"]},\"viewers\":{\"users\":[\"carol\"]}}}";

struct built {
	struct jdoc *ext, *tenant;
	json_t *cfg;
	struct ext_want w;
};

static void build(struct built *b, const char *ext_spec, const char *cfg, const char *const *nss,
                  size_t n)
{
	struct ext_in in;

	b->ext = doc_of(ext_spec);
	b->tenant = doc_of(TENANT_SPEC);
	b->cfg = cfg ? json_of(cfg) : NULL;
	in = (struct ext_in){.tenant = "acme",
	                     .argo_ns = "argocd",
	                     .argocd = jdoc_root(b->ext),
	                     .tenant_spec = jdoc_root(b->tenant),
	                     .cfg = b->cfg,
	                     .namespaces = nss,
	                     .n_namespaces = n};
	assert_int_equal(ext_want_build(&in, &b->w), 0);
}

static void release(struct built *b)
{
	ext_want_release(&b->w);
	jdoc_unref(b->ext);
	jdoc_unref(b->tenant);
	json_decref(b->cfg);
}

static void assert_json(const json_t *have, const char *want_text)
{
	json_t *want = json_of(want_text);

	if (!json_equal(have, want)) {
		char *d = json_dumps(have, JSON_COMPACT | JSON_SORT_KEYS);

		print_error("have %s\nwant %s\n", d, want_text);
		free(d);
		fail();
	}
	json_decref(want);
}

static void test_extension__names_safe_for_casbin(void **state)
{
	(void)state;
	assert_true(ext_name_safe("alice"));
	assert_true(ext_name_safe("oidc:team a@example.com"));
	assert_false(ext_name_safe(""));
	assert_false(ext_name_safe(NULL));
	assert_false(ext_name_safe("a,b"));
	assert_false(ext_name_safe("a\"b"));
	assert_false(ext_name_safe("a'b"));
	assert_false(ext_name_safe("a\nb"));
	assert_false(ext_name_safe("a\rb"));
	assert_false(ext_name_safe("a\tb"));
	assert_false(ext_name_safe("a\x7f"));
	assert_false(ext_name_safe(" alice"));
	assert_false(ext_name_safe("alice "));
}

static void test_extension__project_from_extension_tenant_and_config(void **state)
{
	const char *nss[] = {"acme-a", "acme-b"};
	struct built b = {0};

	(void)state;
	build(&b,
	      "{\"appProject\":{\"sourceRepos\":[\"https://git.example.com/*\"],"
	      "\"namespaceResourceBlacklist\":[{\"kind\":\"ResourceQuota\"}]}}",
	      "{\"namespace\":\"argocd\",\"clusterResourceWhitelist\":[{\"group\":\"\",\"kind\":"
	      "\"Namespace\"}],\"namespaceResourceBlacklist\":[{\"group\":\"*\",\"kind\":\"*\"}]}",
	      nss, 2);
	assert_json(
	        json_object_get(b.w.project, "metadata"),
	        "{\"name\":\"acme\",\"namespace\":\"argocd\",\"labels\":{"
	        "\"app.kubernetes.io/managed-by\":\"landlord\",\"landlord.dev/tenant\":\"acme\"}}");
	assert_json(jx_get(b.w.project, "spec", "sourceRepos", NULL),
	            "[\"https://git.example.com/*\"]");
	assert_json(jx_get(b.w.project, "spec", "destinations", NULL),
	            "[{\"server\":\"https://kubernetes.default.svc\",\"namespace\":\"acme-a\"},"
	            "{\"server\":\"https://kubernetes.default.svc\",\"namespace\":\"acme-b\"}]");
	assert_json(jx_get(b.w.project, "spec", "destinationServiceAccounts", NULL),
	            "[{\"server\":\"https://kubernetes.default.svc\",\"namespace\":\"acme-a\","
	            "\"defaultServiceAccount\":\"landlord-argocd\"},"
	            "{\"server\":\"https://kubernetes.default.svc\",\"namespace\":\"acme-b\","
	            "\"defaultServiceAccount\":\"landlord-argocd\"}]");
	assert_json(jx_get(b.w.project, "spec", "clusterResourceWhitelist", NULL),
	            "[{\"group\":\"\",\"kind\":\"Namespace\"}]");
	assert_json(jx_get(b.w.project, "spec", "namespaceResourceBlacklist", NULL),
	            "[{\"group\":\"\",\"kind\":\"ResourceQuota\"}]");
	assert_null(jx_get(b.w.project, "spec", "syncWindows", NULL));
	release(&b);
}

static void test_extension__roles_users_and_refusals(void **state)
{
	struct built b = {0};

	(void)state;
	build(&b, "{}", NULL, NULL, 0);
	assert_json(jx_get(b.w.project, "spec", "roles", NULL),
	            "[{\"name\":\"owner\",\"groups\":[\"ops\"],\"policies\":["
	            "\"p, proj:acme:owner, applications, *, acme/*, allow\","
	            "\"p, proj:acme:owner, logs, get, acme/*, allow\"]},"
	            "{\"name\":\"editor\",\"groups\":[\"dev\"],\"policies\":["
	            "\"p, proj:acme:editor, applications, *, acme/*, allow\","
	            "\"p, proj:acme:editor, logs, get, acme/*, allow\"]},"
	            "{\"name\":\"viewer\",\"policies\":["
	            "\"p, proj:acme:viewer, applications, get, acme/*, allow\","
	            "\"p, proj:acme:viewer, logs, get, acme/*, allow\"]}]");
	assert_string_equal(b.w.csv, "g, alice, proj:acme:owner\ng, carol, proj:acme:viewer\n");
	assert_json(b.w.refused, "[\"spec.accessControl.owners.users[1]\","
	                         "\"spec.accessControl.editors.groups[1]\"]");
	/* impersonation off: no destinations at all, the fields left out */
	assert_null(jx_get(b.w.project, "spec", "destinations", NULL));
	assert_null(jx_get(b.w.project, "spec", "destinationServiceAccounts", NULL));
	assert_null(jx_get(b.w.project, "spec", "sourceRepos", NULL));
	release(&b);
}

static void test_extension__empty_extension_list_overrides_config(void **state)
{
	struct built b = {0};

	(void)state;
	build(&b, "{\"appProject\":{\"clusterResourceWhitelist\":[]}}",
	      "{\"namespace\":\"argocd\",\"clusterResourceWhitelist\":[{\"kind\":\"Namespace\"}]}",
	      NULL, 0);
	assert_null(jx_get(b.w.project, "spec", "clusterResourceWhitelist", NULL));
	release(&b);
}

static void test_extension__differs_compares_owned_fields_only(void **state)
{
	const char *nss[] = {"acme-a"};
	struct built b = {0};
	json_t *have;
	struct jdoc *d;
	char *text;

	(void)state;
	build(&b, "{\"appProject\":{\"sourceRepos\":[\"*\"]}}", NULL, nss, 1);
	have = json_deep_copy(b.w.project);
	/* what others own: the supervisor's window and annotation, Argo CD's status */
	json_object_set_new(json_object_get(have, "spec"), "syncWindows",
	                    json_of("[{\"kind\":\"deny\",\"schedule\":\"* * * * *\"}]"));
	json_object_set_new(json_object_get(have, "metadata"), "annotations",
	                    json_of("{\"landlord.dev/sleep-window\":\"x\"}"));
	json_object_set_new(json_object_get(have, "spec"), "clusterResourceWhitelist",
	                    json_array()); /* empty: the same as missing */
	text = json_dumps(have, JSON_COMPACT);
	d = doc_of(text);
	assert_false(ext_project_differs(jdoc_root(d), b.w.project));
	assert_true(ext_project_ours(jdoc_root(d), "acme"));
	assert_false(ext_project_ours(jdoc_root(d), "other"));
	jdoc_unref(d);
	free(text);
	/* a destination changed */
	json_array_clear(json_object_get(json_object_get(have, "spec"), "destinations"));
	text = json_dumps(have, JSON_COMPACT);
	d = doc_of(text);
	assert_true(ext_project_differs(jdoc_root(d), b.w.project));
	jdoc_unref(d);
	free(text);
	/* a label gone */
	json_object_del(json_object_get(json_object_get(have, "metadata"), "labels"),
	                "landlord.dev/tenant");
	text = json_dumps(have, JSON_COMPACT);
	d = doc_of(text);
	assert_true(ext_project_differs(jdoc_root(d), b.w.project));
	assert_false(ext_project_ours(jdoc_root(d), "acme"));
	jdoc_unref(d);
	free(text);
	json_decref(have);
	release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_extension__names_safe_for_casbin),
	        cmocka_unit_test(test_extension__project_from_extension_tenant_and_config),
	        cmocka_unit_test(test_extension__roles_users_and_refusals),
	        cmocka_unit_test(test_extension__empty_extension_list_overrides_config),
	        cmocka_unit_test(test_extension__differs_compares_owned_fields_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
