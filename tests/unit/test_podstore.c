/* test_podstore.c - the roll-up's compact pod store: changes, interning, relists, counts, bytes. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/jdoc.h"
#include "base/metrics.h"
#include "kube/selector.h"
#include "templates/podstore.h"

/* ---- helpers ---- */

struct fixture {
	struct podstore *ps;
	struct inf_handler h;
	struct inf_relist_handler rh;
	char changed[4096]; /* "ns;ns;" as the listener heard */
};

static void heard(const char *ns, void *ud)
{
	struct fixture *f = ud;
	size_t n = strlen(f->changed);

	snprintf(f->changed + n, sizeof(f->changed) - n, "%s;", ns);
}

static struct fixture *fixture_new(void)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->ps = podstore_new("test-pods");
	f->h = podstore_handler(f->ps);
	f->rh = podstore_relist_handler(f->ps);
	podstore_listen(f->ps, heard, f);
	return f;
}

static void fixture_free(struct fixture *f)
{
	podstore_free(f->ps);
	free(f);
}

/* A projected pod; @labels_json NULL: none; @phase NULL: none. */
static struct jdoc *pod(const char *ns, const char *name, const char *labels_json,
                        const char *phase)
{
	json_t *o = json_pack("{s:{s:s,s:s}}", "metadata", "namespace", ns, "name", name);
	struct jdoc *d = NULL;

	if (labels_json)
		json_object_set_new(json_object_get(o, "metadata"), "labels",
		                    json_loads(labels_json, 0, NULL));
	if (phase)
		json_object_set_new(o, "status", json_pack("{s:s}", "phase", phase));
	assert_int_equal(jdoc_from_json(o, NULL, &d, NULL), 0);
	json_decref(o);
	return d;
}

static void add(struct fixture *f, const char *ns, const char *name, const char *labels,
                const char *phase)
{
	struct jdoc *d = pod(ns, name, labels, phase);

	f->h.on_add(d, f->h.ud);
	jdoc_unref(d);
}

static void update(struct fixture *f, const char *ns, const char *name, const char *labels,
                   const char *phase)
{
	struct jdoc *d = pod(ns, name, labels, phase);

	f->h.on_update(NULL, d, f->h.ud);
	jdoc_unref(d);
}

static void del(struct fixture *f, const char *ns, const char *name)
{
	struct jdoc *d = pod(ns, name, NULL, NULL);

	f->h.on_delete(d, f->h.ud);
	jdoc_unref(d);
}

/* The pods of @ns that selector string @sel selects: "pending,running,succeeded,failed,unknown". */
static const char *counted(struct fixture *f, const char *ns, const char *sel)
{
	static char out[128];
	struct tpl_row row = {.ns = ns};
	struct sel *s = NULL;

	assert_int_equal(sel_parse(sel, &s, NULL), 0);
	podstore_count(f->ps, ns, &s, 1, &row);
	sel_free(s);
	snprintf(out, sizeof(out), "%lld,%lld,%lld,%lld,%lld", row.pods.pending, row.pods.running,
	         row.pods.succeeded, row.pods.failed, row.pods.unknown);
	return out;
}

#define WEB "{\"app\":\"web\",\"tier\":\"fe\"}"

/* ---- tests ---- */

static void test_podstore__add_update_delete(void **state)
{
	struct fixture *f = fixture_new();
	char labels[128];

	add(f, "a", "p1", WEB, "Pending");
	add(f, "a", "p2", WEB, NULL);
	add(f, "b", "p1", WEB, "Running");
	assert_string_equal(f->changed, "a;a;b;");
	assert_int_equal(podstore_len(f->ps), 3);
	assert_string_equal(counted(f, "a", "app=web"), "2,0,0,0,0");
	f->changed[0] = '\0';
	/* nothing the roll-up reads changed: nobody is told (labels in another order too) */
	update(f, "a", "p1", "{\"tier\":\"fe\",\"app\":\"web\"}", "Pending");
	add(f, "a", "p2", WEB, "Pending"); /* no phase is Pending */
	assert_string_equal(f->changed, "");
	update(f, "a", "p1", WEB, "Running");
	update(f, "a", "p2", "{\"app\":\"db\"}", "Pending");
	update(f, "c", "new", WEB, "Failed"); /* an update of an unknown pod adds it */
	assert_string_equal(f->changed, "a;a;c;");
	assert_string_equal(counted(f, "a", "app=web"), "0,1,0,0,0");
	assert_string_equal(counted(f, "a", "app"), "1,1,0,0,0");
	f->changed[0] = '\0';
	del(f, "a", "p1");
	del(f, "a", "gone"); /* unknown: nothing */
	del(f, "c", "new");
	assert_string_equal(f->changed, "a;c;");
	assert_int_equal(podstore_len(f->ps), 2);
	assert_string_equal(counted(f, "a", "app"), "1,0,0,0,0");
	assert_string_equal(counted(f, "c", "app"), "0,0,0,0,0");
	metrics_labels(labels, sizeof(labels), "resource", "test-pods", NULL);
	assert_true(metrics_get("landlord_informer_objects", labels) == 2);
	assert_true(metrics_get("landlord_informer_bytes", labels) ==
	            (double)podstore_bytes(f->ps));
	fixture_free(f);
}

static void test_podstore__label_sets_are_interned(void **state)
{
	struct fixture *f = fixture_new();

	add(f, "a", "p1", WEB, "Running");
	add(f, "b", "p2", "{\"tier\":\"fe\",\"app\":\"web\"}", "Running");
	add(f, "b", "p3", NULL, "Running");
	add(f, "b", "p4", "{}", "Running");
	assert_int_equal(podstore_label_sets(f->ps), 1); /* unlabelled pods have none */
	update(f, "b", "p2", "{\"app\":\"web\"}", "Running");
	assert_int_equal(podstore_label_sets(f->ps), 2);
	del(f, "a", "p1"); /* the last pod of WEB */
	assert_int_equal(podstore_label_sets(f->ps), 1);
	update(f, "b", "p2", NULL, "Running");
	assert_int_equal(podstore_label_sets(f->ps), 0);
	/* a value with a control character is never valid: left out, the rest kept */
	add(f, "b", "p5", "{\"app\":\"web\",\"bad\":\"x\\u001fy\",\"n\":1}", "Running");
	assert_int_equal(podstore_label_sets(f->ps), 1);
	assert_string_equal(counted(f, "b", "app=web,!bad,!n"), "0,1,0,0,0");
	del(f, "b", "p2");
	del(f, "b", "p3");
	del(f, "b", "p4");
	del(f, "b", "p5");
	assert_int_equal(podstore_len(f->ps), 0);
	assert_int_equal(podstore_label_sets(f->ps), 0);
	fixture_free(f);
}

static void test_podstore__relist_drops_unseen_pods(void **state)
{
	struct fixture *f = fixture_new();

	add(f, "a", "p1", WEB, "Running");
	add(f, "a", "p2", WEB, "Running");
	add(f, "b", "p1", WEB, "Running");
	add(f, "c", "p1", WEB, "Running");
	f->changed[0] = '\0';
	f->rh.on_relist_begin(f->rh.ud);
	add(f, "a", "p1", WEB, "Running");   /* unchanged: nobody told */
	add(f, "c", "p1", WEB, "Succeeded"); /* changed */
	add(f, "d", "p1", WEB, "Pending");   /* new */
	f->rh.on_relist_end(f->rh.ud);
	/* a/p2 and b/p1 were deleted while the watch was down: their namespaces hear after */
	assert_string_equal(f->changed, "c;d;a;b;");
	assert_int_equal(podstore_len(f->ps), 3);
	assert_string_equal(counted(f, "a", "app=web"), "0,1,0,0,0");
	assert_string_equal(counted(f, "b", "app=web"), "0,0,0,0,0");
	assert_string_equal(counted(f, "c", "app=web"), "0,0,1,0,0");
	/* an empty list drops everything */
	f->rh.on_relist_begin(f->rh.ud);
	f->rh.on_relist_end(f->rh.ud);
	assert_int_equal(podstore_len(f->ps), 0);
	assert_int_equal(podstore_label_sets(f->ps), 0);
	fixture_free(f);
}

static void test_podstore__counts_by_selector_and_phase(void **state)
{
	struct fixture *f = fixture_new();
	struct sel *sels[3] = {NULL, NULL, NULL};
	struct tpl_row row = {.ns = "a"};

	add(f, "a", "w1", WEB, "Running");
	add(f, "a", "w2", WEB, "Pending");
	add(f, "a", "w3", WEB, NULL);
	add(f, "a", "w4", WEB, "Succeeded");
	add(f, "a", "w5", WEB, "Failed");
	add(f, "a", "w6", WEB, "Weird");
	add(f, "a", "d1", "{\"app\":\"db\",\"gen\":\"7\"}", "Running");
	add(f, "a", "bare", NULL, "Running");
	add(f, "other", "w1", WEB, "Running");
	assert_string_equal(counted(f, "a", "app=web"), "2,1,1,1,1");
	assert_string_equal(counted(f, "a", "app in (web,db)"), "2,2,1,1,1");
	assert_string_equal(counted(f, "a", "app notin (web)"), "0,2,0,0,0");
	assert_string_equal(counted(f, "a", "gen>5"), "0,1,0,0,0");
	assert_string_equal(counted(f, "a", "tier=fe,app=db"), "0,0,0,0,0");
	assert_string_equal(counted(f, "nowhere", "app"), "0,0,0,0,0");
	/* a pod that several selectors select counts once; NULL selects nothing */
	assert_int_equal(sel_parse("app=web", &sels[0], NULL), 0);
	assert_int_equal(sel_parse("tier=fe", &sels[2], NULL), 0);
	podstore_count(f->ps, "a", sels, 3, &row);
	assert_int_equal(row.pods.running, 1);
	assert_int_equal(row.pods.pending, 2);
	podstore_count(f->ps, "a", sels, 0, &row); /* no selector: nothing */
	assert_int_equal(row.pods.running, 1);
	sel_free(sels[0]);
	sel_free(sels[2]);
	fixture_free(f);
}

/* The reflector's side: pods come, change and go, then a relist. */
static void *writer(void *arg)
{
	struct fixture *f = arg;
	char name[32];

	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "p%d", i % 50);
		if (i % 3 == 2)
			del(f, "a", name);
		else
			add(f, "a", name, i % 2 ? WEB : "{\"app\":\"web\"}",
			    i % 4 ? "Running" : NULL);
	}
	f->rh.on_relist_begin(f->rh.ud);
	add(f, "a", "last", WEB, "Running");
	f->rh.on_relist_end(f->rh.ud);
	return NULL;
}

/* Reconcilers count while the reflector writes (run under TSan by make tsan-unit). */
static void test_podstore__counts_while_written(void **state)
{
	struct fixture *f = fixture_new();
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, writer, f), 0);
	for (int i = 0; i < 500; i++) {
		struct tpl_row row = {.ns = "a"};
		struct sel *s = NULL;

		assert_int_equal(sel_parse("app=web", &s, NULL), 0);
		podstore_count(f->ps, "a", &s, 1, &row);
		assert_true(row.pods.pending + row.pods.running <= 50);
		sel_free(s);
		(void)podstore_bytes(f->ps);
	}
	pthread_join(t, NULL);
	assert_string_equal(counted(f, "a", "app=web"), "0,1,0,0,0");
	assert_int_equal(podstore_label_sets(f->ps), 1);
	fixture_free(f);
}

/*
 * Bytes per pod, the target (<= 200 B): pods named like a Deployment's, labelled like
 * its ReplicaSet's (the same template in every namespace gives the same pod-template-hash).
 */
static double bytes_per_pod(int pods, int namespaces, bool set_per_namespace)
{
	struct fixture *f = fixture_new();
	char ns[64], name[64], labels[128];
	double per;

	for (int i = 0; i < pods; i++) {
		snprintf(ns, sizeof(ns), "team-%04d", i % namespaces);
		snprintf(name, sizeof(name), "web-5d8f7c9b6-%05d", i);
		snprintf(labels, sizeof(labels),
		         "{\"app\":\"web\",\"tier\":\"fe\",\"pod-template-hash\":\"%s\"}",
		         set_per_namespace ? ns : "5d8f7c9b6");
		add(f, ns, name, labels, "Pending");
	}
	assert_int_equal(podstore_len(f->ps), pods);
	per = (double)podstore_bytes(f->ps) / pods;
	print_message("%d pods over %d namespaces (%s): %.0f B per pod\n", pods, namespaces,
	              set_per_namespace ? "a label set per namespace" : "one label set", per);
	fixture_free(f);
	return per;
}

static void test_podstore__bytes_per_pod(void **state)
{
	assert_true(bytes_per_pod(500, 500, false) <= 200);
	assert_true(bytes_per_pod(5000, 50, false) <= 200);
	assert_true(bytes_per_pod(5000, 50, true) <= 200);
	/* every pod with its own labels: reported, not the target's case */
	bytes_per_pod(500, 500, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_podstore__add_update_delete),
	        cmocka_unit_test(test_podstore__label_sets_are_interned),
	        cmocka_unit_test(test_podstore__relist_drops_unseen_pods),
	        cmocka_unit_test(test_podstore__counts_by_selector_and_phase),
	        cmocka_unit_test(test_podstore__counts_while_written),
	        cmocka_unit_test(test_podstore__bytes_per_pod),
	};

	return cmocka_run_group_tests_name("podstore", tests, NULL, NULL);
}
