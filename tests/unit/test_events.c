/* test_events.c - Events about objects (lib/kube/events.c), POSTed to the fake API server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "fake_manager.h"
#include "kube/events.h"

struct env {
	struct fake_api *f;
	struct kc_client *c;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	e->f = fake_api_start();
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

static json_t *only_event(struct fake_api *f, const char *ns)
{
	json_t *all = fake_api_list(f, "events", NULL), *ev;

	assert_int_equal(json_array_size(all), 1);
	ev = json_incref(json_array_get(all, 0));
	json_decref(all);
	assert_string_equal(jx_namespace(ev), ns);
	return ev;
}

static void test_events__namespaced_object_gets_its_event_in_its_namespace(void **state)
{
	struct env *e = *state;
	json_t *cm = json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
	                       "metadata", "name", "cfg", "namespace", "team", "uid", "u-1");
	json_t *ev;

	event_record(e->c, "unit", cm, EVENT_WARNING, "Broken", "it broke %d times", 3);
	ev = only_event(e->f, "team");
	assert_string_equal(jx_str(ev, "reason", NULL), "Broken");
	assert_string_equal(jx_str(ev, "type", NULL), "Warning");
	assert_string_equal(jx_str(ev, "message", NULL), "it broke 3 times");
	assert_string_equal(jx_str(ev, "involvedObject", "kind", NULL), "ConfigMap");
	assert_string_equal(jx_str(ev, "involvedObject", "name", NULL), "cfg");
	assert_string_equal(jx_str(ev, "involvedObject", "uid", NULL), "u-1");
	assert_string_equal(jx_str(ev, "source", "component", NULL), "unit");
	assert_string_equal(jx_str(ev, "reportingComponent", NULL), "unit");
	assert_int_equal(strncmp(jx_name(ev), "cfg.", 4), 0); /* generateName */
	json_decref(ev);
	json_decref(cm);
}

static void test_events__cluster_scoped_object_gets_its_event_in_default(void **state)
{
	struct env *e = *state;
	json_t *t = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "landlord.dev/v1alpha1", "kind",
	                      "Tenant", "metadata", "name", "acme");
	json_t *ev;

	event_record(e->c, "unit", t, EVENT_NORMAL, "Created", "hello");
	ev = only_event(e->f, "default");
	assert_string_equal(jx_str(ev, "involvedObject", "name", NULL), "acme");
	assert_null(jx_str(ev, "involvedObject", "namespace", NULL));
	json_decref(ev);
	json_decref(t);
}

/* An object read in place (a cached document) names itself the same way. */
static void test_events__a_document_is_named_like_a_jansson_object(void **state)
{
	struct env *e = *state;
	json_t *cm = json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
	                       "metadata", "name", "cfg", "namespace", "team", "uid", "u-1");
	struct jdoc *d = NULL;
	json_t *ev;

	assert_int_equal(jdoc_from_json(cm, NULL, &d, NULL), 0);
	event_record_doc(e->c, "unit", jdoc_root(d), EVENT_WARNING, "Broken", "it broke %d times",
	                 3);
	ev = only_event(e->f, "team");
	assert_string_equal(jx_str(ev, "message", NULL), "it broke 3 times");
	assert_string_equal(jx_str(ev, "involvedObject", "apiVersion", NULL), "v1");
	assert_string_equal(jx_str(ev, "involvedObject", "kind", NULL), "ConfigMap");
	assert_string_equal(jx_str(ev, "involvedObject", "name", NULL), "cfg");
	assert_string_equal(jx_str(ev, "involvedObject", "namespace", NULL), "team");
	assert_string_equal(jx_str(ev, "involvedObject", "uid", NULL), "u-1");
	assert_int_equal(strncmp(jx_name(ev), "cfg.", 4), 0);
	json_decref(ev);
	jdoc_unref(d);
	json_decref(cm);
}

static void test_events__long_messages_are_cut(void **state)
{
	struct env *e = *state;
	json_t *t = json_pack("{s:{s:s}}", "metadata", "name", "acme");
	char *big = calloc(1, 5000);
	json_t *ev;

	memset(big, 'x', 4999);
	event_record(e->c, "unit", t, EVENT_NORMAL, "Big", "%s", big);
	ev = only_event(e->f, "default");
	assert_true(strlen(jx_str(ev, "message", NULL)) < 1024);
	json_decref(ev);
	json_decref(t);
	free(big);
}

/* Recording is best effort: a refused Event is logged and the caller goes on. */
static void test_events__a_refused_event_is_not_retried(void **state)
{
	struct env *e = *state;
	json_t *t = json_pack("{s:{s:s}}", "metadata", "name", "acme"), *all;
	int rule = fake_api_rule_add(e->f, &(struct fake_rule){.method = "POST",
	                                                       .path_contains = "/events",
	                                                       .action = FAKE_ANSWER,
	                                                       .status = 500});

	event_record(e->c, "unit", t, EVENT_NORMAL, "Lost", "never stored");
	assert_int_equal(fake_api_rule_hits(e->f, rule), 1);
	assert_int_equal(fake_api_requests(e->f, "POST", "/events"), 1);
	all = fake_api_list(e->f, "events", NULL);
	assert_int_equal(json_array_size(all), 0);
	json_decref(all);
	json_decref(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(
	                test_events__namespaced_object_gets_its_event_in_its_namespace, setup,
	                teardown),
	        cmocka_unit_test_setup_teardown(
	                test_events__cluster_scoped_object_gets_its_event_in_default, setup,
	                teardown),
	        cmocka_unit_test_setup_teardown(
	                test_events__a_document_is_named_like_a_jansson_object, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_events__long_messages_are_cut, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_events__a_refused_event_is_not_retried, setup,
	                                        teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
