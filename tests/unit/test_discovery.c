/* test_discovery.c - discovery against an unreachable server and (LANDLORD_TEST_KUBECONFIG) live.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "live.h"

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "kube/discovery.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"

/* A client for a loopback port nobody listens on. */
static struct kc_client *unreachable_client(void)
{
	struct kcfg cfg = {.server = "https://127.0.0.1:1", .insecure = true};
	struct kc_opts o = {.timeout_ms = 5000};
	struct kc_client *c = NULL;
	struct ll_err err = {{0}};

	if (kc_client_new(&cfg, &o, &c, &err) != 0)
		fail_msg("kc_client_new: %s", err.msg);
	return c;
}

static void test_discovery__unreachable_is_not_enoent(void **state)
{
	struct kc_client *c = unreachable_client();
	struct disc *d = disc_new(c);
	struct kc_gvr gvr;
	struct ll_err err = {{0}};
	int rc;

	rc = disc_lookup_kind(d, "v1", "Namespace", &gvr, &err);
	assert_true(rc < 0);
	assert_int_not_equal(rc, -ENOENT);
	assert_true(err.msg[0] != '\0');
	/* within the refresh interval the miss reports the same failure, without a new call */
	err.msg[0] = '\0';
	assert_int_equal(disc_lookup_resource(d, "", "namespaces", &gvr, &err), rc);
	assert_true(err.msg[0] != '\0');
	assert_int_equal(disc_refresh(d, NULL), rc);
	disc_free(d);
	kc_client_free(c);
}

/* ---- live ---- */

static int live_setup(void **state)
{
	struct kcfg cfg = {0};
	struct kc_client *c = NULL;

	*state = NULL;
	if (live_kubeconfig() == NULL)
		return 0;
	if (live_connect(&cfg, NULL, &c) != 0)
		return -1;
	kcfg_release(&cfg);
	*state = c;
	return 0;
}

static int live_teardown(void **state)
{
	kc_client_free(*state);
	return 0;
}

static void expect(struct disc *d, const char *api_version, const char *kind, const char *resource,
                   bool namespaced)
{
	struct kc_gvr byk, byr;
	struct ll_err err = {{0}};
	const char *slash = strchr(api_version, '/');
	char group[128];

	snprintf(group, sizeof(group), "%.*s", slash ? (int)(slash - api_version) : 0, api_version);
	if (disc_lookup_kind(d, api_version, kind, &byk, &err) != 0)
		fail_msg("lookup kind %s %s: %s", api_version, kind, err.msg);
	assert_string_equal(byk.group, group);
	assert_string_equal(byk.version, slash ? slash + 1 : api_version);
	assert_string_equal(byk.resource, resource);
	assert_string_equal(byk.kind, kind);
	assert_int_equal(byk.namespaced, namespaced);
	if (disc_lookup_resource(d, group, resource, &byr, &err) != 0)
		fail_msg("lookup resource %s %s: %s", group, resource, err.msg);
	assert_string_equal(byr.kind, kind);
	assert_string_equal(byr.version, byk.version);
	/* interned: the same pointers every time */
	assert_ptr_equal(byr.resource, byk.resource);
}

static void test_discovery__live_builtin_kinds(void **state)
{
	struct kc_client *c = *state;
	struct disc *d;
	struct kc_gvr gvr;
	struct ll_err err = {{0}};

	if (c == NULL)
		skip();
	d = disc_new(c);
	expect(d, "v1", "Namespace", "namespaces", false);
	expect(d, "v1", "ConfigMap", "configmaps", true);
	expect(d, "coordination.k8s.io/v1", "Lease", "leases", true);
	expect(d, "rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", false);
	/* subresources are not resources */
	assert_int_equal(disc_lookup_resource(d, "", "pods/log", &gvr, &err), -ENOENT);
	assert_int_equal(disc_lookup_kind(d, "v1", "NoSuchKind", &gvr, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "NoSuchKind"));
	assert_int_equal(disc_lookup_kind(d, "v9", "Namespace", &gvr, &err), -ENOENT);
	disc_free(d);
}

static void crd_request(struct kc_client *c, const char *method, const char *name,
                        const json_t *body)
{
	struct kc_resp resp = {0};
	int rc;

	if (body)
		rc = kc_create(c, &KC_CRDS, NULL, body, &resp, NULL);
	else
		rc = kc_delete(c, &KC_CRDS, NULL, name, NULL, &resp, NULL);
	assert_int_equal(rc, 0);
	if (!kc_resp_ok(&resp))
		fail_msg("%s CRD %s: %ld %s", method, name, resp.http_status, resp.status.message);
	kc_resp_release(&resp);
}

static bool served(struct kc_client *c, const char *path)
{
	struct kc_resp resp = {0};
	bool ok = kc_request(c, "GET", path, NULL, NULL, 0, NULL, &resp, NULL) == 0 &&
	          kc_resp_ok(&resp) && json_array_size(json_object_get(resp.body, "resources"));

	kc_resp_release(&resp);
	return ok;
}

static void test_discovery__live_finds_new_crd(void **state)
{
	struct kc_client *c = *state;
	struct disc *d;
	struct kc_gvr gvr;
	struct ll_err err = {{0}};
	char sfx[16], group[64], name[128], path[128];
	json_t *crd;
	long long refreshed, end;

	if (c == NULL)
		skip();
	live_rand_suffix(sfx, sizeof(sfx));
	snprintf(group, sizeof(group), "t%s.test.landlord.dev", sfx);
	snprintf(name, sizeof(name), "widgets.%s", group);
	snprintf(path, sizeof(path), "/apis/%s/v1alpha1", group);
	crd = json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:s,s:s},s:[{s:s,s:b,s:b,"
	                "s:{s:{s:s,s:b}}}]}}",
	                "apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition",
	                "metadata", "name", name, "spec", "group", group, "scope", "Namespaced",
	                "names", "plural", "widgets", "singular", "widget", "kind", "Widget",
	                "versions", "name", "v1alpha1", "served", 1, "storage", 1, "schema",
	                "openAPIV3Schema", "type", "object", "x-kubernetes-preserve-unknown-fields",
	                1);
	assert_non_null(crd);

	d = disc_new(c);
	assert_int_equal(disc_refresh(d, &err), 0);
	refreshed = clock_mono_ms();
	crd_request(c, "create", name, crd);
	end = clock_mono_ms() + 30000;
	while (!served(c, path) && clock_mono_ms() < end)
		live_sleep_ms(50);
	assert_true(served(c, path));
	/* the server serves it, but a miss right after a refresh does not refresh again */
	if (clock_mono_ms() - refreshed < 9000) {
		char api_version[96];

		snprintf(api_version, sizeof(api_version), "%s/v1alpha1", group);
		assert_int_equal(disc_lookup_kind(d, api_version, "Widget", &gvr, &err), -ENOENT);
		/* ... and once the interval has passed, a miss refreshes by itself */
		while (clock_mono_ms() - refreshed < 10100)
			live_sleep_ms(100);
		assert_int_equal(disc_lookup_kind(d, api_version, "Widget", &gvr, &err), 0);
	} else {
		assert_int_equal(disc_refresh(d, &err), 0);
	}
	assert_int_equal(disc_lookup_resource(d, group, "widgets", &gvr, &err), 0);
	assert_string_equal(gvr.group, group);
	assert_string_equal(gvr.version, "v1alpha1");
	assert_string_equal(gvr.kind, "Widget");
	assert_true(gvr.namespaced);
	crd_request(c, "delete", name, NULL);
	json_decref(crd);
	disc_free(d);
}

int main(void)
{
	const struct CMUnitTest offline[] = {
	        cmocka_unit_test(test_discovery__unreachable_is_not_enoent),
	};
	const struct CMUnitTest live[] = {
	        cmocka_unit_test(test_discovery__live_builtin_kinds),
	        cmocka_unit_test(test_discovery__live_finds_new_crd),
	};
	int failed = cmocka_run_group_tests_name("discovery", offline, NULL, NULL);

	failed += cmocka_run_group_tests_name("discovery_live", live, live_setup, live_teardown);
	return failed;
}
