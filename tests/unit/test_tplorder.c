/*
 * test_tplorder.c - the apply order of a render: kinds first (ServiceAccount, Secret,
 * ConfigMap, RBAC, the rest), stable within a kind, refined by landlord.dev/depends-on, which
 * overrides the kind; unknown, malformed and self dependencies, cycles and the limits refused
 * with a line that names the object; the objects left as they were.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "tenancy/tplorder.h"

/* "Kind/name" or "Kind/name<dependencies" items, NULL-terminated, into a rendered list. */
static json_t *objects(const char *first, ...)
{
	json_t *list = json_array();
	va_list ap;

	va_start(ap, first);
	for (const char *s = first; s != NULL; s = va_arg(ap, const char *)) {
		const char *slash = strchr(s, '/'), *lt = strchr(s, '<');
		char *kind = xstrndup(s, (size_t)(slash - s));
		char *name = xstrndup(slash + 1,
		                      lt != NULL ? (size_t)(lt - slash - 1) : strlen(slash + 1));
		json_t *meta = json_pack("{s:s, s:s}", "name", name, "namespace", "team-a");

		if (lt != NULL)
			json_object_set_new(meta, "annotations",
			                    json_pack("{s:s}", TPL_DEPENDS_ON, lt + 1));
		json_array_append_new(list, json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind",
		                                      kind, "metadata", meta));
		free(kind);
		free(name);
	}
	va_end(ap);
	return list;
}

/* The order as "Kind/name Kind/name ...", or "error <rc>: <message>". */
static char *order_of(json_t *list)
{
	struct buf b = BUF_INIT(BUF_MAX_INTERNAL);
	json_t *before = json_deep_copy(list);
	struct ll_err err;
	size_t *order = NULL;
	int rc = tpl_order(list, &order, &err);

	assert_true(json_equal(before, list)); /* only read */
	json_decref(before);
	if (rc != 0) {
		assert_null(order);
		buf_appendf(&b, "error %d: %s", rc, err.msg);
		json_decref(list);
		return buf_detach(&b);
	}
	for (size_t k = 0; k < json_array_size(list); k++) {
		const json_t *o = json_array_get(list, order[k]);

		buf_appendf(
		        &b, "%s%s/%s", k > 0 ? " " : "",
		        json_string_value(json_object_get(o, "kind")),
		        json_string_value(json_object_get(json_object_get(o, "metadata"), "name")));
	}
	free(order);
	json_decref(list);
	return buf_detach(&b);
}

#define assert_order(list, want)                   \
	do {                                       \
		char *got_ = order_of(list);       \
		assert_string_equal(got_, (want)); \
		free(got_);                        \
	} while (0)

static void test_tplorder__kinds_first_then_manifest_order(void **state)
{
	assert_order(objects("Deployment/web", "RoleBinding/rb", "ConfigMap/c1",
	                     "ClusterRoleBinding/crb", "Role/r", "Secret/s", "ClusterRole/cr",
	                     "ServiceAccount/sa", "Service/web", "ConfigMap/c0", NULL),
	             "ServiceAccount/sa Secret/s ConfigMap/c1 ConfigMap/c0 Role/r ClusterRole/cr "
	             "RoleBinding/rb ClusterRoleBinding/crb Deployment/web Service/web");
	assert_order(objects(NULL), "");
	assert_order(objects("Service/b", "Deployment/a", NULL), "Service/b Deployment/a");
}

static void test_tplorder__dependencies_come_first_and_override_kinds(void **state)
{
	/* a ServiceAccount waiting for a ConfigMap: the Secret keeps its place */
	assert_order(objects("ServiceAccount/sa<ConfigMap/c", "Secret/s", "ConfigMap/c", NULL),
	             "Secret/s ConfigMap/c ServiceAccount/sa");
	/* a Deployment first among the rest, after what it names; spaces allowed */
	assert_order(objects("Service/svc", "Deployment/db",
	                     "Deployment/web< Deployment/db ,Service/svc ",
	                     "ConfigMap/c<Deployment/db", NULL),
	             "Service/svc Deployment/db ConfigMap/c Deployment/web");
	/* a chain against manifest order */
	assert_order(
	        objects("ConfigMap/a<ConfigMap/b", "ConfigMap/b<ConfigMap/c", "ConfigMap/c", NULL),
	        "ConfigMap/c ConfigMap/b ConfigMap/a");
	/* an entry names every object of that kind and name; an empty annotation names none */
	assert_order(
	        objects("Job/j<ConfigMap/x", "ConfigMap/x", "ConfigMap/y<", "ConfigMap/x", NULL),
	        "ConfigMap/x ConfigMap/y ConfigMap/x Job/j");
	assert_order(objects("Job/j<ConfigMap/x,ConfigMap/x", "ConfigMap/x", NULL),
	             "ConfigMap/x Job/j");
}

static void test_tplorder__bad_dependencies_are_refused_naming_the_object(void **state)
{
	assert_order(objects("Secret/s", "ConfigMap/web<Secret/db", NULL),
	             "error -22: spec.resources.manifests[1]: ConfigMap \"web\": "
	             "landlord.dev/depends-on: \"Secret/db\" is not an object of this render");
	assert_order(objects("ConfigMap/web<ConfigMap/web", NULL),
	             "error -22: spec.resources.manifests[0]: ConfigMap \"web\": "
	             "landlord.dev/depends-on: \"ConfigMap/web\" is the object itself");
	static const char *const malformed[] = {
	        "Secret",    "/s",        "Secret/",   "Secret/s/x",
	        "Secret /s", "Secret/s,", ",Secret/s", "Secret/s,,Secret/s"};
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		char *spec = xasprintf("ConfigMap/web<%s", malformed[i]);
		char *got = order_of(objects("Secret/s", spec, NULL));

		assert_non_null(strstr(got,
		                       "error -22: spec.resources.manifests[1]: ConfigMap \"web\": "
		                       "landlord.dev/depends-on: \""));
		assert_non_null(strstr(got, "\" is not Kind/name"));
		free(got);
		free(spec);
	}
	json_t *list = objects("ConfigMap/web", NULL);

	json_object_set_new(json_object_get(json_array_get(list, 0), "metadata"), "annotations",
	                    json_pack("{s:i}", TPL_DEPENDS_ON, 1));
	assert_order(list, "error -22: spec.resources.manifests[0]: ConfigMap \"web\": "
	                   "landlord.dev/depends-on must be a string");
}

static void test_tplorder__cycles_are_refused_naming_their_objects(void **state)
{
	assert_order(
	        objects("Deployment/d", "ConfigMap/a<Secret/b", "Secret/b<Role/c",
	                "Role/c<ConfigMap/a", NULL),
	        "error -22: spec.resources.manifests[1]: ConfigMap \"a\": landlord.dev/depends-on "
	        "makes a cycle: [1] ConfigMap/a -> [2] Secret/b -> [3] Role/c -> [1] ConfigMap/a");
	/* an object waiting on a cycle is not part of it */
	assert_order(
	        objects("Job/j<Secret/b", "Secret/b<ConfigMap/a", "ConfigMap/a<Secret/b", NULL),
	        "error -22: spec.resources.manifests[1]: Secret \"b\": landlord.dev/depends-on "
	        "makes a cycle: [1] Secret/b -> [2] ConfigMap/a -> [1] Secret/b");
}

static void test_tplorder__limits_and_shapes(void **state)
{
	json_t *list = json_array();
	struct buf deps = BUF_INIT(BUF_MAX_INTERNAL);
	struct ll_err err;
	size_t *order = (size_t *)&err;

	for (int i = 0; i < TPL_ORDER_OBJECTS_MAX; i++)
		json_array_append_new(list,
		                      json_pack("{s:s, s:{s:s++}}", "kind", "ConfigMap", "metadata",
		                                "name", "c", i % 2 ? "x" : "y", i > 0 ? "" : "0"));
	/* 256 objects, the first depending on 16 others */
	for (int i = 0; i < TPL_ORDER_DEPS_MAX; i++)
		buf_appendf(&deps, "%sConfigMap/c%s", i > 0 ? "," : "", i % 2 ? "x" : "y");
	json_object_set_new(json_object_get(json_array_get(list, 0), "metadata"), "annotations",
	                    json_pack("{s:s}", TPL_DEPENDS_ON, buf_cstr(&deps)));
	assert_int_equal(tpl_order(list, &order, &err), 0);
	assert_int_equal(order[TPL_ORDER_OBJECTS_MAX - 1], 0);
	free(order);
	buf_append_str(&deps, ",ConfigMap/cx");
	json_object_set_new(json_object_get(json_array_get(list, 0), "metadata"), "annotations",
	                    json_pack("{s:s}", TPL_DEPENDS_ON, buf_cstr(&deps)));
	assert_int_equal(tpl_order(list, &order, &err), -E2BIG);
	assert_null(order);
	assert_string_equal(err.msg, "spec.resources.manifests[0]: ConfigMap \"cy0\": "
	                             "landlord.dev/depends-on names more than 16 objects");
	json_array_append_new(
	        list, json_pack("{s:s, s:{s:s}}", "kind", "ConfigMap", "metadata", "name", "last"));
	assert_int_equal(tpl_order(list, &order, NULL), -E2BIG);
	assert_int_equal(tpl_order(list, &order, &err), -E2BIG);
	assert_string_equal(err.msg, "the render has 257 objects; at most 256 are applied");
	json_decref(list);
	buf_release(&deps);

	list = json_pack("[{s:s}]", "kind", "ConfigMap");
	assert_int_equal(tpl_order(list, &order, &err), -EINVAL);
	assert_string_equal(err.msg, "spec.resources.manifests[0]: kind and metadata.name are "
	                             "required (strings, not empty)");
	json_decref(list);
	list = json_object();
	assert_int_equal(tpl_order(list, &order, &err), -EINVAL);
	json_decref(list);
}

static void test_tplorder__messages_are_one_printable_line(void **state)
{
	char *got = order_of(objects("ConfigMap/a\nb<Secret/x\n\"y", NULL));

	assert_string_equal(
	        got, "error -22: spec.resources.manifests[0]: ConfigMap \"a\\x0ab\": "
	             "landlord.dev/depends-on: \"Secret/x\\x0a\\\"y\" is not an object of this "
	             "render");
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tplorder__kinds_first_then_manifest_order),
	        cmocka_unit_test(test_tplorder__dependencies_come_first_and_override_kinds),
	        cmocka_unit_test(test_tplorder__bad_dependencies_are_refused_naming_the_object),
	        cmocka_unit_test(test_tplorder__cycles_are_refused_naming_their_objects),
	        cmocka_unit_test(test_tplorder__limits_and_shapes),
	        cmocka_unit_test(test_tplorder__messages_are_one_printable_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
