/*
 * test_route.c - tenant proxy paths (src/proxy/route.h): each path's kind and parts, and the
 * refusals (encoded separators, dot segments, legacy watch paths, bad names, limits).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/route.h"

/* parts: tenant, group, version, ns, resource, name, sub (NULL: absent) */
struct want {
	const char *path;
	enum px_kind kind;
	const char *parts[7];
};

static void assert_str_or_null(const char *want, const char *got, const char *path)
{
	if (!want && !got)
		return;
	if (!want || !got || strcmp(want, got) != 0)
		fail_msg("%s: want %s, got %s", path, want ? want : "NULL", got ? got : "NULL");
}

static void check(const struct want *w)
{
	struct px_route r;

	if (px_route_parse(w->path, &r) != w->kind)
		fail_msg("%s: kind %d, want %d (%s)", w->path, r.kind, w->kind, r.why ? r.why : "");
	if (w->kind == PX_BAD) {
		assert_non_null(r.why);
		return;
	}
	if (w->kind == PX_NOT_FOUND)
		return;
	assert_str_or_null(w->parts[0], r.tenant, w->path);
	assert_str_or_null(w->parts[1], r.group, w->path);
	assert_str_or_null(w->parts[2], r.version, w->path);
	assert_str_or_null(w->parts[3], r.ns, w->path);
	assert_str_or_null(w->parts[4], r.resource, w->path);
	assert_str_or_null(w->parts[5], r.name, w->path);
	assert_str_or_null(w->parts[6], r.sub, w->path);
}

static void test_kinds(void **state)
{
	static const struct want cases[] = {
	        {"/tenants/acme/version", PX_DISCOVERY, {"acme"}},
	        {"/tenants/acme/api", PX_DISCOVERY, {"acme"}},
	        {"/tenants/acme/api/v1", PX_DISCOVERY, {"acme"}},
	        {"/tenants/acme/apis", PX_DISCOVERY, {"acme"}},
	        {"/tenants/acme/apis/apps", PX_DISCOVERY, {"acme"}},
	        {"/tenants/acme/apis/apps/v1", PX_DISCOVERY, {"acme"}},
	        {"/tenants/acme/openapi/v3/api/v1", PX_OPENAPI, {"acme"}},
	        {"/tenants/acme/kubeconfig", PX_KUBECONFIG, {"acme"}},
	        {"/tenants/acme/api/v1/namespaces", PX_NAMESPACES, {"acme", "", "v1"}},
	        {"/tenants/acme/api/v1/namespaces/dev", PX_NAMESPACE, {"acme", "", "v1", "dev"}},
	        {"/tenants/acme/api/v1/namespaces/dev/finalize",
	         PX_NAMESPACE,
	         {"acme", "", "v1", "dev", NULL, NULL, "finalize"}},
	        {"/tenants/acme/api/v1/namespaces/dev/configmaps",
	         PX_NAMESPACED,
	         {"acme", "", "v1", "dev", "configmaps"}},
	        {"/tenants/acme/api/v1/namespaces/dev/pods/web/log",
	         PX_NAMESPACED,
	         {"acme", "", "v1", "dev", "pods", "web", "log"}},
	        {"/tenants/acme/api/v1/namespaces/dev/services/web/proxy/a/b",
	         PX_NAMESPACED,
	         {"acme", "", "v1", "dev", "services", "web", "proxy/a/b"}},
	        {"/tenants/acme/apis/apps/v1/namespaces/dev/deployments/web/scale",
	         PX_NAMESPACED,
	         {"acme", "apps", "v1", "dev", "deployments", "web", "scale"}},
	        {"/tenants/acme/api/v1/pods", PX_TOP, {"acme", "", "v1", NULL, "pods"}},
	        {"/tenants/acme/api/v1/nodes/n1/proxy",
	         PX_TOP,
	         {"acme", "", "v1", NULL, "nodes", "n1", "proxy"}},
	        {"/tenants/acme/apis/storage.k8s.io/v1/storageclasses/fast",
	         PX_TOP,
	         {"acme", "storage.k8s.io", "v1", NULL, "storageclasses", "fast"}},
	        {"/tenants/acme/apis/x.io/v1/namespaces",
	         PX_TOP,
	         {"acme", "x.io", "v1", NULL, "namespaces"}},
	        {"/tenants/acme/apis/apps/v1/namespaces/dev", PX_NOT_FOUND, {0}},
	        {"/tenants/acme", PX_NOT_FOUND, {0}},
	        {"/tenants/acme/healthz", PX_NOT_FOUND, {0}},
	        {"/tenants/acme/api/v2/pods", PX_NOT_FOUND, {0}},
	        {"/api/v1/pods", PX_NOT_FOUND, {0}},
	        {"/tenantsx/acme/api", PX_NOT_FOUND, {0}},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		check(&cases[i]);
}

static void test_refusals(void **state)
{
	static const char *const bad[] = {
	        "/tenants/acme/api/v1/namespaces/dev/configmaps/../../globex-dev/configmaps",
	        "/tenants/acme/api/v1/namespaces/./configmaps",
	        "/tenants/acme//api/v1",
	        "/tenants/acme/api/v1/",
	        "/tenants/acme/",
	        "/tenants/ACME/api",
	        "/tenants/acme/api/v1/namespaces/Dev/pods",
	        /* a decoded "%2F" splits a name; the namespace is then "dev/x", not a label */
	        "/tenants/acme/api/v1/namespaces/globex dev/pods",
	        "/tenants/acme/api/v1/watch/namespaces/dev/pods",
	        "/tenants/acme/apis/apps/v1/watch/deployments",
	        "/tenants/acme/api/v1/namespaces/dev/pods/a\tb",
	        "/tenants/acme/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q",
	};
	struct px_route r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		if (px_route_parse(bad[i], &r) != PX_BAD)
			fail_msg("%s: kind %d, want PX_BAD", bad[i], r.kind);
}

static void test_long_path(void **state)
{
	static char path[PX_PATH_MAX + 16];
	struct px_route r;

	(void)state;
	snprintf(path, sizeof(path), "/tenants/acme/api/v1/namespaces/dev/configmaps/");
	memset(path + strlen(path), 'a', PX_PATH_MAX + 1 - strlen(path));
	path[PX_PATH_MAX + 1] = '\0';
	assert_int_equal(px_route_parse(path, &r), PX_BAD);
	path[PX_PATH_MAX] = '\0';
	assert_int_equal(px_route_parse(path, &r), PX_NAMESPACED);
	assert_int_equal(strlen(r.name), PX_PATH_MAX - strlen("/tenants/acme/api/v1/namespaces/dev/"
	                                                      "configmaps/"));
}

/* The part below the base is kept for discovery, whatever the segments became. */
static void test_rest(void **state)
{
	struct px_route r;

	(void)state;
	assert_int_equal(px_route_parse("/tenants/acme/apis/apps/v1", &r), PX_DISCOVERY);
	assert_string_equal(r.rest, "/apis/apps/v1");
	assert_int_equal(px_route_parse("/tenants/acme/openapi/v3/apis/apps/v1", &r), PX_OPENAPI);
	assert_string_equal(r.rest, "/openapi/v3/apis/apps/v1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_kinds),
	        cmocka_unit_test(test_refusals),
	        cmocka_unit_test(test_long_path),
	        cmocka_unit_test(test_rest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
