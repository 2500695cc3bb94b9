/*
 * test_fake_apiserver.c - the fake API server itself, through the real client: what unit suites
 * rely on it to do as the API server does (selectors, paging, watches, writes, deletion, status)
 * and its test hooks.
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

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "fake_manager.h"

static const struct kc_gvr WIDGETS = {"example.com", "v1", "widgets", "Widget", true};
#define W "widgets.example.com"

struct env {
	struct fake_api *f;
	struct kc_client *c;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	e->f = fake_api_start();
	fake_api_add_gvr(e->f, &WIDGETS, true);
	e->c = fake_client_new(e->f);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	kc_client_free(e->c);
	fake_api_stop(e->f);
	free(e);
	return 0;
}

static void put(struct fake_api *f, const char *res, const char *text)
{
	json_error_t err;
	json_t *obj = json_loads(text, 0, &err);

	if (obj == NULL)
		fail_msg("bad test JSON %s: %s", text, err.text);
	fake_api_put(f, res, obj);
	json_decref(obj);
}

static int collect(json_t *item, void *ud)
{
	struct buf *b = ud;

	buf_appendf(b, "%s%s", b->len ? " " : "", jx_name(item));
	return 0;
}

/* Names listed (space-separated, sorted by namespace and name); the caller frees. */
static char *names(struct env *e, const char *ns, const char *labels, const char *fields,
                   long limit, int *status)
{
	struct kc_list_opts o = {
	        .label_selector = labels, .field_selector = fields, .limit = limit};
	struct buf b = BUF_INIT(1 << 20);
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};

	assert_int_equal(kc_list(e->c, &WIDGETS, ns, &o, collect, &b, NULL, &resp, &err), 0);
	*status = (int)resp.http_status;
	kc_resp_release(&resp);
	buf_append_str(&b, "");
	return buf_detach(&b);
}

static void expect_names(struct env *e, const char *labels, const char *fields, const char *want)
{
	int status = 0;
	char *got = names(e, NULL, labels, fields, 2, &status);

	assert_int_equal(status, 200);
	if (strcmp(got, want) != 0)
		fail_msg("labels %s fields %s: got \"%s\", want \"%s\"", labels ? labels : "-",
		         fields ? fields : "-", got, want);
	free(got);
}

static void test_fake__selectors_and_paging(void **state)
{
	struct env *e = *state;
	int status = 0;
	char *got;

	put(e->f, W,
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"x\",\"labels\":{\"t\":\"1\"}}}");
	put(e->f, W,
	    "{\"metadata\":{\"name\":\"b\",\"namespace\":\"x\",\"labels\":{\"t\":\"2\"}}}");
	put(e->f, W,
	    "{\"metadata\":{\"name\":\"c\",\"namespace\":\"y\",\"labels\":{\"u\":\"1\"}}}");
	put(e->f, W, "{\"metadata\":{\"name\":\"d\",\"namespace\":\"y\"}}");
	put(e->f, W,
	    "{\"metadata\":{\"name\":\"e\",\"namespace\":\"y\",\"labels\":{\"t\":\"3\"}}}");
	expect_names(e, NULL, NULL, "a b c d e"); /* pages of 2 */
	expect_names(e, "t=1", NULL, "a");
	expect_names(e, "t==2", NULL, "b");
	expect_names(e, "t!=1", NULL, "b c d e");
	expect_names(e, "t in (1, 3)", NULL, "a e");
	expect_names(e, "t notin (1,3)", NULL, "b c d");
	expect_names(e, "t", NULL, "a b e");
	expect_names(e, "!t", NULL, "c d");
	expect_names(e, "t,!u", NULL, "a b e");
	expect_names(e, "t in (1,2),t!=2", NULL, "a");
	expect_names(e, NULL, "metadata.namespace=y", "c d e");
	expect_names(e, NULL, "metadata.name!=c,metadata.namespace==y", "d e");
	got = names(e, NULL, "t in (1", NULL, 0, &status);
	assert_int_equal(status, 400);
	free(got);
	got = names(e, NULL, NULL, "spec.size=1", 0, &status);
	assert_int_equal(status, 400);
	free(got);
	got = names(e, "y", NULL, NULL, 0, &status);
	assert_string_equal(got, "c d e");
	free(got);
}

static void test_fake__an_old_continue_token_is_410_after_compaction(void **state)
{
	struct env *e = *state;
	struct kc_resp resp = {0};
	char path[256];
	const char *token;

	put(e->f, W, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"x\"}}");
	put(e->f, W, "{\"metadata\":{\"name\":\"b\",\"namespace\":\"x\"}}");
	assert_int_equal(kc_request(e->c, "GET", "/apis/example.com/v1/widgets?limit=1", NULL, NULL,
	                            0, NULL, &resp, NULL),
	                 0);
	token = jx_str(resp.body, "metadata", "continue", NULL);
	assert_non_null(token);
	snprintf(path, sizeof(path), "/apis/example.com/v1/widgets?limit=1&continue=%s", token);
	kc_resp_release(&resp);
	fake_api_compact(e->f);
	assert_int_equal(kc_request(e->c, "GET", path, NULL, NULL, 0, NULL, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 410);
	assert_string_equal(resp.status.reason, "Expired");
	kc_resp_release(&resp);
}

struct seen {
	struct buf b;
	int n, stop_at;
};

static int on_event(enum watch_event_type type, json_t *obj, void *ud)
{
	static const char *const names_[] = {[WATCH_ADDED] = "ADDED",
	                                     [WATCH_MODIFIED] = "MODIFIED",
	                                     [WATCH_DELETED] = "DELETED",
	                                     [WATCH_BOOKMARK] = "BOOKMARK",
	                                     [WATCH_ERROR] = "ERROR"};
	struct seen *s = ud;

	buf_appendf(&s->b, "%s%s %s", s->b.len ? ", " : "", names_[type],
	            type == WATCH_ERROR ? jx_str(obj, "reason", NULL) : jx_name(obj));
	return ++s->n == s->stop_at ? 1 : 0;
}

/* The events of a watch from @rv with @labels, until @n have come (or 2 s went by). */
static char *watch_from(struct env *e, long long rv, const char *labels, int n)
{
	char rvs[32];
	struct kc_watch_opts o = {
	        .resource_version = rvs, .label_selector = labels, .timeout_seconds = 2};
	struct seen s = {BUF_INIT(1 << 20), 0, n};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};

	snprintf(rvs, sizeof(rvs), "%lld", rv);
	assert_true(kc_watch(e->c, &WIDGETS, NULL, &o, on_event, &s, &resp, &err) >= 0);
	kc_resp_release(&resp);
	buf_append_str(&s.b, "");
	return buf_detach(&s.b);
}

static void test_fake__watch_sees_objects_enter_and_leave_the_selector(void **state)
{
	struct env *e = *state;
	long long rv;
	char *got;

	put(e->f, "configmaps", "{\"metadata\":{\"name\":\"first\",\"namespace\":\"x\"}}");
	rv = fake_api_resource_version(e->f);

	put(e->f, W,
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"x\",\"labels\":{\"t\":\"1\"}}}");
	put(e->f, W, "{\"metadata\":{\"name\":\"b\",\"namespace\":\"x\"}}");
	put(e->f, W,
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"x\",\"labels\":{\"t\":\"1\"},"
	    "\"annotations\":{\"k\":\"v\"}}}");
	put(e->f, W,
	    "{\"metadata\":{\"name\":\"b\",\"namespace\":\"x\",\"labels\":{\"t\":\"1\"}}}");
	put(e->f, W, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"x\"}}");
	fake_api_delete(e->f, W, "x", "b");
	got = watch_from(e, rv, "t=1", 5);
	assert_string_equal(got, "ADDED a, MODIFIED a, ADDED b, DELETED a, DELETED b");
	free(got);
	got = watch_from(e, rv, NULL, 6);
	assert_string_equal(got, "ADDED a, ADDED b, MODIFIED a, MODIFIED b, MODIFIED a, DELETED b");
	free(got);

	fake_api_compact(e->f);
	got = watch_from(e, rv, NULL, 1);
	assert_string_equal(got, "ERROR Expired");
	free(got);
}

static json_t *body(const char *text)
{
	json_error_t err;
	json_t *obj = json_loads(text, 0, &err);

	if (obj == NULL)
		fail_msg("bad test JSON %s: %s", text, err.text);
	return obj;
}

static void test_fake__create_update_and_status(void **state)
{
	struct env *e = *state;
	json_t *obj = body("{\"metadata\":{\"generateName\":\"w-\"},\"spec\":{\"size\":1},"
	                   "\"status\":{\"phase\":\"Set\"}}");
	struct kc_resp resp = {0};
	json_t *stale, *st;
	const char *name;

	assert_int_equal(kc_create(e->c, &WIDGETS, "x", obj, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 201);
	name = jx_name(resp.body);
	assert_int_equal(strncmp(name, "w-", 2), 0);
	assert_int_equal(strlen(name), 7);
	assert_non_null(jx_uid(resp.body));
	assert_non_null(jx_str(resp.body, "metadata", "creationTimestamp", NULL));
	assert_null(jx_get(resp.body, "status", NULL)); /* status is not set by a create */
	stale = json_deep_copy(resp.body);
	kc_resp_release(&resp);

	json_object_set_new((json_t *)jx_get(stale, "spec", NULL), "size", json_integer(2));
	json_object_set_new(stale, "status", json_pack("{s:s}", "phase", "Ignored"));
	assert_int_equal(kc_replace(e->c, &WIDGETS, "x", jx_name(stale), NULL, stale, &resp, NULL),
	                 0);
	assert_int_equal(resp.http_status, 200);
	assert_int_equal(jx_generation(resp.body), 2);
	assert_null(jx_get(resp.body, "status", NULL));
	kc_resp_release(&resp);
	assert_int_equal(kc_replace(e->c, &WIDGETS, "x", jx_name(stale), NULL, stale, &resp, NULL),
	                 0);
	assert_int_equal(resp.http_status, 409); /* its resourceVersion is stale now */
	kc_resp_release(&resp);

	st = body("{\"status\":{\"phase\":\"Ready\"},\"spec\":{\"size\":99}}");
	assert_int_equal(kc_patch(e->c, &WIDGETS, "x", jx_name(stale), "status", KC_PATCH_MERGE, st,
	                          NULL, &resp, NULL),
	                 0);
	assert_string_equal(jx_str(resp.body, "status", "phase", NULL), "Ready");
	assert_int_equal(jx_int(resp.body, 0, "spec", "size", NULL), 2);
	assert_int_equal(jx_generation(resp.body), 2);
	kc_resp_release(&resp);

	assert_int_equal(kc_create(e->c, &WIDGETS, "x", stale, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 409);
	assert_string_equal(resp.status.reason, "AlreadyExists");
	kc_resp_release(&resp);
	json_decref(stale);
	json_decref(st);
	json_decref(obj);
}

static void test_fake__apply_creates_then_merges(void **state)
{
	struct env *e = *state;
	json_t *one = body("{\"metadata\":{\"name\":\"w\",\"labels\":{\"a\":\"1\"}},"
	                   "\"spec\":{\"size\":1,\"color\":\"red\"}}");
	json_t *two = body("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"size\":2}}");
	struct kc_resp resp = {0};

	assert_int_equal(kc_apply(e->c, &WIDGETS, "x", "w", NULL, one, "unit", true, &resp, NULL),
	                 0);
	assert_int_equal(resp.http_status, 201);
	kc_resp_release(&resp);
	assert_int_equal(kc_apply(e->c, &WIDGETS, "x", "w", NULL, two, "unit", true, &resp, NULL),
	                 0);
	assert_int_equal(resp.http_status, 200);
	assert_int_equal(jx_int(resp.body, 0, "spec", "size", NULL), 2);
	assert_string_equal(jx_str(resp.body, "spec", "color", NULL), "red"); /* merged */
	assert_string_equal(jx_label(resp.body, "a"), "1");
	kc_resp_release(&resp);
	json_decref(one);
	json_decref(two);
}

static void test_fake__finalizers_and_namespaces(void **state)
{
	struct env *e = *state;
	json_t *fin = body("[{\"op\":\"remove\",\"path\":\"/metadata/finalizers/0\"}]"), *o;
	json_t *cm = body("{\"metadata\":{\"name\":\"late\"}}");
	struct kc_resp resp = {0};

	put(e->f, W, "{\"metadata\":{\"name\":\"w\",\"namespace\":\"x\",\"finalizers\":[\"f\"]}}");
	put(e->f, "namespaces", "{\"metadata\":{\"name\":\"x\"}}");
	assert_int_equal(kc_delete(e->c, &WIDGETS, "x", "w", NULL, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 200);
	kc_resp_release(&resp);
	o = fake_api_get(e->f, W, "x", "w");
	assert_non_null(jx_get(o, "metadata", "deletionTimestamp", NULL));
	json_decref(o);
	assert_int_equal(
	        kc_patch(e->c, &WIDGETS, "x", "w", NULL, KC_PATCH_JSON, fin, NULL, &resp, NULL), 0);
	kc_resp_release(&resp);
	assert_null(fake_api_get(e->f, W, "x", "w")); /* the last finalizer went */

	put(e->f, W, "{\"metadata\":{\"name\":\"v\",\"namespace\":\"x\"}}");
	fake_api_hold_namespaces(e->f, true);
	assert_int_equal(kc_delete(e->c, &KC_NAMESPACES, NULL, "x", NULL, &resp, NULL), 0);
	kc_resp_release(&resp);
	o = fake_api_get(e->f, "namespaces", NULL, "x");
	assert_string_equal(jx_str(o, "status", "phase", NULL), "Terminating");
	json_decref(o);
	assert_int_equal(kc_create(e->c, &KC_CONFIGMAPS, "x", cm, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 403);
	kc_resp_release(&resp);
	o = fake_api_get(e->f, W, "x", "v");
	assert_non_null(o); /* held */
	json_decref(o);
	fake_api_finish_namespace(e->f, "x");
	assert_null(fake_api_get(e->f, W, "x", "v"));
	assert_null(fake_api_get(e->f, "namespaces", NULL, "x"));
	json_decref(fin);
	json_decref(cm);
}

static void test_fake__rules_and_the_request_log(void **state)
{
	struct env *e = *state;
	struct kc_resp resp = {0};
	int fail500 = fake_api_rule_add(e->f, &(struct fake_rule){.method = "GET",
	                                                          .path_contains = "/widgets/w",
	                                                          .action = FAKE_ANSWER,
	                                                          .status = 500,
	                                                          .times = 1});

	put(e->f, W, "{\"metadata\":{\"name\":\"w\",\"namespace\":\"x\"}}");
	assert_int_equal(kc_get(e->c, &WIDGETS, "x", "w", &resp, NULL), 0);
	assert_int_equal(resp.http_status, 500);
	kc_resp_release(&resp);
	assert_int_equal(kc_get(e->c, &WIDGETS, "x", "w", &resp, NULL), 0); /* spent */
	assert_int_equal(resp.http_status, 200);
	kc_resp_release(&resp);
	assert_int_equal(fake_api_rule_hits(e->f, fail500), 1);
	assert_int_equal(fake_api_requests(e->f, "GET", "/widgets/w"), 2);
	assert_int_equal(fake_api_writes(e->f), 0); /* direct writes are not requests */
	assert_int_equal(kc_get(e->c, &WIDGETS, "x", "nope", &resp, NULL), 0);
	assert_int_equal(resp.http_status, 404);
	kc_resp_release(&resp);
	assert_int_equal(kc_delete(e->c, &WIDGETS, "x", "w", NULL, &resp, NULL), 0);
	kc_resp_release(&resp);
	assert_int_equal(fake_api_writes(e->f), 1);
}

static void test_fake__metadata_only_and_discovery(void **state)
{
	struct env *e = *state;
	struct kc_resp resp = {0};
	const json_t *r;
	size_t i;
	bool found = false;

	put(e->f, W, "{\"metadata\":{\"name\":\"w\",\"namespace\":\"x\"},\"spec\":{\"size\":1}}");
	assert_int_equal(kc_request(e->c, "GET", "/apis/example.com/v1/namespaces/x/widgets", NULL,
	                            NULL, 0, NULL, &resp, NULL),
	                 0);
	assert_string_equal(jx_str(resp.body, "kind", NULL), "WidgetList");
	assert_int_equal(jx_int(json_array_get(jx_get(resp.body, "items", NULL), 0), 0, "spec",
	                        "size", NULL),
	                 1);
	kc_resp_release(&resp);
	assert_int_equal(kc_request(e->c, "GET", "/apis/example.com/v1/namespaces/x/widgets", NULL,
	                            NULL, 0, KC_ACCEPT_METADATA, &resp, NULL),
	                 0);
	assert_string_equal(jx_str(resp.body, "kind", NULL), "PartialObjectMetadataList");
	assert_string_equal(jx_name(json_array_get(jx_get(resp.body, "items", NULL), 0)), "w");
	assert_null(jx_get(json_array_get(jx_get(resp.body, "items", NULL), 0), "spec", NULL));
	kc_resp_release(&resp);
	assert_int_equal(
	        kc_request(e->c, "GET", "/apis/example.com/v1", NULL, NULL, 0, NULL, &resp, NULL),
	        0);
	json_array_foreach(jx_get(resp.body, "resources", NULL), i, r)
		found |= strcmp(jx_str(r, "name", NULL), "widgets") == 0 &&
		         jx_bool(r, 0, "namespaced", NULL);
	assert_true(found);
	kc_resp_release(&resp);
	assert_int_equal(
	        kc_request(e->c, "GET", "/apis/example.com", NULL, NULL, 0, NULL, &resp, NULL), 0);
	assert_string_equal(jx_str(resp.body, "kind", NULL), "APIGroup");
	kc_resp_release(&resp);
	assert_int_equal(
	        kc_request(e->c, "GET", "/apis/nope.example.com", NULL, NULL, 0, NULL, &resp, NULL),
	        0);
	assert_int_equal(resp.http_status, 404);
	kc_resp_release(&resp);
}

/* The access hook: allowed only for bind on ClusterRole "admin". */
static bool only_bind_admin(const json_t *spec, void *ud)
{
	const char *verb = jx_str(spec, "resourceAttributes", "verb", NULL),
	           *name = jx_str(spec, "resourceAttributes", "name", NULL);

	(*(int *)ud)++;
	return verb && name && strcmp(verb, "bind") == 0 && strcmp(name, "admin") == 0;
}

static bool review(struct env *e, const char *verb, const char *name, long *status)
{
	struct kc_access a = {.verb = verb,
	                      .group = "rbac.authorization.k8s.io",
	                      .resource = "clusterroles",
	                      .name = name};
	struct kc_resp resp = {0};
	bool allowed = true;

	assert_int_equal(kc_self_review(e->c, &a, &allowed, &resp, NULL), 0);
	*status = resp.http_status;
	if (kc_resp_ok(&resp)) {
		assert_string_equal(jx_str(resp.body, "kind", NULL), "SelfSubjectAccessReview");
		assert_string_equal(jx_str(resp.body, "spec", "resourceAttributes", "name", NULL),
		                    name);
	}
	kc_resp_release(&resp);
	return allowed;
}

static void test_fake__access_reviews_are_answered_by_the_hook_and_stored_nowhere(void **state)
{
	struct env *e = *state;
	struct kc_resp resp = {0};
	long long rv = fake_api_resource_version(e->f);
	json_t *stored;
	long status;
	int asked = 0;

	/* No hook: the fake authorizes everything. */
	assert_true(review(e, "bind", "cluster-admin", &status));
	assert_int_equal(status, 201);
	fake_api_set_access_hook(e->f, only_bind_admin, &asked);
	assert_true(review(e, "bind", "admin", &status));
	assert_false(review(e, "bind", "cluster-admin", &status));
	assert_int_equal(status, 201);
	assert_false(review(e, "escalate", "admin", &status));
	assert_int_equal(asked, 3);
	/* Nothing stored, no write, but in the request log. */
	stored = fake_api_list(e->f, "selfsubjectaccessreviews.authorization.k8s.io", NULL);
	assert_int_equal(json_array_size(stored), 0);
	json_decref(stored);
	assert_int_equal(fake_api_writes(e->f), 0);
	assert_int_equal(fake_api_requests(e->f, "POST", "/selfsubjectaccessreviews"), 4);
	assert_int_equal(fake_api_resource_version(e->f), rv);
	/* Create only. */
	assert_int_equal(kc_request(e->c, "GET",
	                            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", NULL,
	                            NULL, 0, NULL, &resp, NULL),
	                 0);
	assert_int_equal(resp.http_status, 405);
	kc_resp_release(&resp);
	/* An injected refusal is an answer: not allowed, and not 2xx. */
	fake_api_rule_add(e->f, &(struct fake_rule){.path_contains = "/selfsubjectaccessreviews",
	                                            .action = FAKE_ANSWER,
	                                            .status = 403});
	assert_false(review(e, "bind", "admin", &status));
	assert_int_equal(status, 403);
	fake_api_set_access_hook(e->f, NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_fake__selectors_and_paging, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_fake__an_old_continue_token_is_410_after_compaction, setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_fake__watch_sees_objects_enter_and_leave_the_selector, setup,
	                teardown),
	        cmocka_unit_test_setup_teardown(test_fake__create_update_and_status, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_fake__apply_creates_then_merges, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_fake__finalizers_and_namespaces, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_fake__rules_and_the_request_log, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_fake__metadata_only_and_discovery, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(
	                test_fake__access_reviews_are_answered_by_the_hook_and_stored_nowhere,
	                setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
