/* test_informer.c - the informer's cache logic, and (with LANDLORD_TEST_KUBECONFIG) live tests. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "live.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "kube/cache.h"
#include "kube/informer.h"
#include "kube/informer_internal.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"

static const struct kc_gvr test_gvr = {"", "v1", "configmaps", "ConfigMap", true};

/* ---- recording handler ---- */

struct rec {
	char log[8192]; /* "add:ns/a rv=1;upd:ns/a 1>2;del:ns/b rv=1;" */
};

/* Handlers run on the reflector thread while live tests read the log. */
static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;

static void rec_append(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rec_append(struct rec *r, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	pthread_mutex_lock(&rec_mu);
	n = strlen(r->log);
	va_start(ap, fmt);
	vsnprintf(r->log + n, sizeof(r->log) - n, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&rec_mu);
}

static bool rec_contains(struct rec *r, const char *want)
{
	bool found;

	pthread_mutex_lock(&rec_mu);
	found = strstr(r->log, want) != NULL;
	pthread_mutex_unlock(&rec_mu);
	return found;
}

static const char *rv_of(const struct jdoc *o)
{
	const char *rv = jd_resource_version(o);

	return rv ? rv : "-";
}

static const char *key_of(const struct jdoc *o, char buf[CACHE_KEY_MAX])
{
	assert_true(cache_doc_key(o, buf));
	return buf;
}

static void rec_add(const struct jdoc *obj, void *ud)
{
	char key[CACHE_KEY_MAX];

	rec_append(ud, "add:%s rv=%s;", key_of(obj, key), rv_of(obj));
}

static void rec_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	char key[CACHE_KEY_MAX];

	rec_append(ud, "upd:%s %s>%s;", key_of(new_obj, key), rv_of(old_obj), rv_of(new_obj));
}

static void rec_delete(const struct jdoc *obj, void *ud)
{
	char key[CACHE_KEY_MAX];

	rec_append(ud, "del:%s rv=%s;", key_of(obj, key), rv_of(obj));
}

static struct inf_handler rec_handler(struct rec *r)
{
	return (struct inf_handler){rec_add, rec_update, rec_delete, r};
}

static json_t *obj_new(const char *ns, const char *name, const char *rv, const char *app)
{
	json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
	                      "metadata", "name", name, "resourceVersion", rv);

	if (ns)
		json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ns));
	if (app)
		json_object_set_new(json_object_get(o, "metadata"), "labels",
		                    json_pack("{s:s}", "app", app));
	return o;
}

static struct jdoc *doc_of(json_t *take_obj)
{
	struct jdoc *d = NULL;

	assert_int_equal(jdoc_from_json(take_obj, NULL, &d, NULL), 0);
	json_decref(take_obj);
	return d;
}

static void apply(struct inf *inf, enum watch_event_type type, json_t *take_obj)
{
	struct jdoc *d = doc_of(take_obj);

	assert_int_equal(inf__apply_event(inf, type, d), 0);
	jdoc_unref(d);
}

static struct inf *pure_inf(void)
{
	struct inf_opts o = {.gvr = test_gvr};

	return inf_new(NULL, &o);
}

/* Keys of a list of documents, sorted, joined by ','. */
static char *keys_of(struct jdoc_list *arr)
{
	char *keys[64], buf[CACHE_KEY_MAX];
	size_t n = arr->n, i;
	struct buf b = BUF_INIT(1 << 16);

	assert_true(n <= 64);
	for (i = 0; i < n; i++)
		keys[i] = strdup(key_of(arr->items[i], buf));
	for (i = 1; i < n; i++) {
		for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
			char *t = keys[j];

			keys[j] = keys[j - 1];
			keys[j - 1] = t;
		}
	}
	for (i = 0; i < n; i++) {
		buf_appendf(&b, "%s%s", i ? "," : "", keys[i]);
		free(keys[i]);
	}
	jdoc_list_release(arr);
	return buf_detach(&b);
}

static void assert_keys(struct jdoc_list take_arr, const char *want)
{
	char *got = keys_of(&take_arr);

	assert_string_equal(got, want);
	free(got);
}

/* ---- pure tests ---- */

static void test_informer__parse_projects_and_completes(void **state)
{
	static const char *const keep[] = {"data", NULL};
	static const char *const drop[] = {"data.big", NULL};
	struct inf_opts o = {.gvr = test_gvr, .keep = keep, .drop = drop};
	struct inf *inf = inf_new(NULL, &o);
	struct inf_opts grouped = {.gvr = {"landlord.dev", "v1alpha1", "tenants", "Tenant", false}};
	struct inf *tenants = inf_new(NULL, &grouped);
	struct inf_opts meta = {.gvr = test_gvr, .metadata_only = true};
	struct inf *metas = inf_new(NULL, &meta);
	const char *obj = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\","
	                  "\"resourceVersion\":\"7\",\"managedFields\":[{\"manager\":\"x\"}]},"
	                  "\"data\":{\"k\":\"v\",\"big\":\"...\"},\"binaryData\":{}}";
	const char *pom = "{\"apiVersion\":\"meta.k8s.io/v1\",\"kind\":\"PartialObjectMetadata\","
	                  "\"metadata\":{\"name\":\"n\"}}";
	struct jdoc *da = inf__parse(inf, obj, strlen(obj)),
	            *dt = inf__parse(tenants, obj, strlen(obj));
	struct jdoc *dm = inf__parse(metas, pom, strlen(pom));

	/* kept paths stay with the key, resourceVersion, apiVersion and kind the informer
	 * keeps; dropped ones, managedFields and what was not kept go */
	assert_string_equal(jd_str(da, "data", "k", NULL), "v");
	assert_int_equal(jval_type(jd_get(da, "data", "big", NULL)), JT_NONE);
	assert_int_equal(jval_type(jd_get(da, "binaryData", NULL)), JT_NONE);
	assert_int_equal(jval_type(jd_get(da, "metadata", "managedFields", NULL)), JT_NONE);
	assert_int_equal(jval_type(jd_get(da, "metadata", "uid", NULL)), JT_NONE);
	assert_string_equal(jd_name(da), "a");
	assert_string_equal(jd_namespace(da), "n");
	assert_string_equal(jd_resource_version(da), "7");
	assert_string_equal(jd_str(da, "kind", NULL), "ConfigMap");
	/* the whole object by default, with the apiVersion and kind only the list carried */
	assert_string_equal(jd_str(dt, "apiVersion", NULL), "landlord.dev/v1alpha1");
	assert_string_equal(jd_str(dt, "kind", NULL), "Tenant");
	assert_string_equal(jd_str(dt, "data", "big", NULL), "...");
	assert_string_equal(jd_uid(dt), "u");
	assert_int_equal(jval_type(jd_get(dt, "metadata", "managedFields", NULL)), JT_NONE);
	/* metadata-only objects carry neither */
	assert_int_equal(jval_type(jd_get(dm, "kind", NULL)), JT_NONE);
	assert_int_equal(jval_type(jd_get(dm, "apiVersion", NULL)), JT_NONE);
	assert_string_equal(jd_name(dm), "n");
	assert_null(inf__parse(inf, "{", 1));
	jdoc_unref(da);
	jdoc_unref(dt);
	jdoc_unref(dm);
	inf_free(inf);
	inf_free(tenants);
	inf_free(metas);
}

static void test_informer__key_building(void **state)
{
	struct inf *inf = pure_inf();
	char *k;
	const struct jdoc *got;

	k = inf__key("ns", "a");
	assert_string_equal(k, "ns/a");
	free(k);
	k = inf__key(NULL, "a");
	assert_string_equal(k, "a");
	free(k);
	k = inf__key("", "a");
	assert_string_equal(k, "a");
	free(k);

	apply(inf, WATCH_ADDED, obj_new("ns", "a", "1", NULL));
	apply(inf, WATCH_ADDED, obj_new(NULL, "a", "2", NULL));
	got = inf_get_ref(inf, "ns", "a");
	assert_string_equal(jd_resource_version(got), "1");
	jdoc_unref(got);
	got = inf_get_ref(inf, NULL, "a");
	assert_string_equal(jd_resource_version(got), "2");
	jdoc_unref(got);
	got = inf_get_key_ref(inf, "ns/a");
	assert_string_equal(jd_resource_version(got), "1");
	jdoc_unref(got);
	assert_null(inf_get_ref(inf, "other", "a"));
	assert_int_equal(inf_len(inf), 2);
	inf_free(inf);
}

static void test_informer__events_emit_handlers(void **state)
{
	struct inf *inf = pure_inf();
	struct rec r = {""};
	struct inf_handler h = rec_handler(&r);
	struct jdoc *nameless = doc_of(json_pack("{s:{}}", "metadata"));

	inf_add_handler(inf, &h);
	apply(inf, WATCH_ADDED, obj_new("ns", "a", "1", NULL));
	apply(inf, WATCH_MODIFIED, obj_new("ns", "a", "2", NULL));
	apply(inf, WATCH_ADDED, obj_new("ns", "a", "3", NULL));     /* known: an update */
	apply(inf, WATCH_MODIFIED, obj_new("ns", "b", "4", NULL));  /* unknown: an add */
	apply(inf, WATCH_DELETED, obj_new("ns", "a", "9", NULL));   /* reports the cached state */
	apply(inf, WATCH_DELETED, obj_new("ns", "zz", "10", NULL)); /* unknown: nothing */
	assert_int_equal(inf__apply_event(inf, WATCH_ADDED, nameless), -EINVAL);
	assert_string_equal(r.log, "add:ns/a rv=1;upd:ns/a 1>2;upd:ns/a 2>3;add:ns/b rv=4;"
	                           "del:ns/a rv=3;");
	assert_null(inf_get_ref(inf, "ns", "a"));
	assert_int_equal(inf_len(inf), 1);
	jdoc_unref(nameless);
	inf_free(inf);
}

/* inf__replace() with the (up to three) objects given. */
static void replace(struct inf *inf, json_t *take1, json_t *take2, json_t *take3)
{
	json_t *objs[] = {take1, take2, take3};
	struct jdoc_list l = {calloc(3, sizeof(*l.items)), 0};

	for (size_t i = 0; i < 3; i++)
		if (objs[i])
			l.items[l.n++] = doc_of(objs[i]);
	inf__replace(inf, &l);
	assert_int_equal(l.n, 0);
}

static void test_informer__replace_emits_diff(void **state)
{
	struct inf *inf = pure_inf();
	struct rec r = {""};
	struct inf_handler h = rec_handler(&r);
	const struct jdoc *got;

	inf_add_handler(inf, &h);
	replace(inf, obj_new("ns", "a", "1", NULL), obj_new("ns", "b", "1", NULL),
	        obj_new("ns", "c", "1", NULL));
	/* the store's order is its hash order: each event once, in any order */
	assert_int_equal(strlen(r.log), strlen("add:ns/a rv=1;add:ns/b rv=1;add:ns/c rv=1;"));
	assert_non_null(strstr(r.log, "add:ns/a rv=1;"));
	assert_non_null(strstr(r.log, "add:ns/b rv=1;"));
	assert_non_null(strstr(r.log, "add:ns/c rv=1;"));
	r.log[0] = '\0';
	/* a unchanged, b changed, c vanished, d new; deletes come first */
	replace(inf, obj_new("ns", "a", "1", NULL), obj_new("ns", "b", "2", NULL),
	        obj_new("ns", "d", "3", NULL));
	assert_int_equal(strlen(r.log), strlen("del:ns/c rv=1;upd:ns/b 1>2;add:ns/d rv=3;"));
	assert_ptr_equal(strstr(r.log, "del:ns/c rv=1;"), r.log);
	assert_non_null(strstr(r.log, "upd:ns/b 1>2;"));
	assert_non_null(strstr(r.log, "add:ns/d rv=3;"));
	assert_int_equal(inf_len(inf), 3);
	assert_null(inf_get_ref(inf, "ns", "c"));
	got = inf_get_ref(inf, "ns", "b");
	assert_string_equal(jd_resource_version(got), "2");
	jdoc_unref(got);
	r.log[0] = '\0';
	replace(inf, NULL, NULL, NULL);
	assert_int_equal(inf_len(inf), 0);
	assert_non_null(strstr(r.log, "del:ns/a rv=1;"));
	assert_non_null(strstr(r.log, "del:ns/b rv=2;"));
	assert_non_null(strstr(r.log, "del:ns/d rv=3;"));
	inf_free(inf);
}

static void test_informer__label_index_follows_changes(void **state)
{
	struct inf *inf = pure_inf();

	assert_int_equal(inf_add_index(inf, "app", inf_index_label, "app"), 0);
	assert_int_equal(inf_add_index(inf, "app", inf_index_label, "app"), -EEXIST);
	apply(inf, WATCH_ADDED, obj_new("ns", "a", "1", "web"));
	apply(inf, WATCH_ADDED, obj_new("ns", "b", "1", "web"));
	apply(inf, WATCH_ADDED, obj_new("ns", "c", "1", "db"));
	apply(inf, WATCH_ADDED, obj_new("ns", "d", "1", NULL));
	assert_keys(inf_by_index_ref(inf, "app", "web"), "ns/a,ns/b");
	assert_keys(inf_by_index_ref(inf, "app", "db"), "ns/c");
	/* relabel b, delete c */
	apply(inf, WATCH_MODIFIED, obj_new("ns", "b", "2", "db"));
	apply(inf, WATCH_DELETED, obj_new("ns", "c", "2", "db"));
	assert_keys(inf_by_index_ref(inf, "app", "web"), "ns/a");
	assert_keys(inf_by_index_ref(inf, "app", "db"), "ns/b");
	assert_keys(inf_by_index_ref(inf, "app", "none"), "");
	assert_keys(inf_by_index_ref(inf, "no-such-index", "web"), "");
	/* a relist rebuilds */
	replace(inf, obj_new("ns", "a", "3", "db"), obj_new("ns", "e", "1", "web"), NULL);
	assert_keys(inf_by_index_ref(inf, "app", "db"), "ns/a");
	assert_keys(inf_by_index_ref(inf, "app", "web"), "ns/e");
	inf_free(inf);
}

static json_t *owned(const char *ns, const char *name, const char *uid1, const char *uid2)
{
	json_t *o = obj_new(ns, name, "1", NULL), *refs = json_array();

	json_array_append_new(refs, json_pack("{s:s}", "uid", uid1));
	if (uid2)
		json_array_append_new(refs, json_pack("{s:s}", "uid", uid2));
	json_object_set_new(json_object_get(o, "metadata"), "ownerReferences", refs);
	return o;
}

static void test_informer__owner_and_namespace_indexes(void **state)
{
	struct inf *inf = pure_inf();

	assert_int_equal(inf_add_index(inf, "owner", inf_index_owner_uid, NULL), 0);
	assert_int_equal(inf_add_index(inf, "ns", inf_index_namespace, NULL), 0);
	apply(inf, WATCH_ADDED, owned("x", "a", "u1", "u2"));
	apply(inf, WATCH_ADDED, owned("y", "b", "u2", NULL));
	apply(inf, WATCH_ADDED, obj_new(NULL, "cluster", "1", NULL));
	assert_keys(inf_by_index_ref(inf, "owner", "u1"), "x/a");
	assert_keys(inf_by_index_ref(inf, "owner", "u2"), "x/a,y/b");
	assert_keys(inf_by_index_ref(inf, "ns", "x"), "x/a");
	assert_keys(inf_by_index_ref(inf, "ns", "y"), "y/b");
	apply(inf, WATCH_DELETED, owned("x", "a", "u1", "u2"));
	assert_keys(inf_by_index_ref(inf, "owner", "u1"), "");
	assert_keys(inf_by_index_ref(inf, "owner", "u2"), "y/b");
	assert_keys(inf_by_index_ref(inf, "ns", "x"), "");
	inf_free(inf);
}

/* Indexes given with the options exist from the start, as inf_add_index() would make them. */
static void test_informer__indexes_from_options(void **state)
{
	static const struct inf_index_def defs[] = {{"ns", inf_index_namespace, NULL},
	                                            {"app", inf_index_label, "app"},
	                                            {NULL, NULL, NULL}};
	struct inf *inf = inf_new(NULL, &(struct inf_opts){.gvr = test_gvr, .indexes = defs});

	assert_int_equal(inf_add_index(inf, "ns", inf_index_namespace, NULL), -EEXIST);
	apply(inf, WATCH_ADDED, obj_new("x", "a", "1", "web"));
	apply(inf, WATCH_ADDED, obj_new("y", "b", "2", "web"));
	assert_keys(inf_by_index_ref(inf, "ns", "x"), "x/a");
	assert_keys(inf_by_index_ref(inf, "app", "web"), "x/a,y/b");
	inf_free(inf);
}

static void test_informer__late_handler_replays_adds(void **state)
{
	struct inf *inf = pure_inf();
	struct rec r = {""};
	struct inf_handler h = rec_handler(&r);

	apply(inf, WATCH_ADDED, obj_new("ns", "a", "1", NULL));
	inf_add_handler(inf, &h);
	assert_string_equal(r.log, "add:ns/a rv=1;");
	apply(inf, WATCH_ADDED, obj_new("ns", "b", "2", NULL));
	assert_string_equal(r.log, "add:ns/a rv=1;add:ns/b rv=2;");
	inf_free(inf);
}

static void test_informer__list_filters_namespace(void **state)
{
	struct inf *inf = pure_inf();

	apply(inf, WATCH_ADDED, obj_new("x", "a", "1", NULL));
	apply(inf, WATCH_ADDED, obj_new("x", "b", "1", NULL));
	apply(inf, WATCH_ADDED, obj_new("y", "a", "1", NULL));
	assert_keys(inf_list_ref(inf, NULL), "x/a,x/b,y/a");
	assert_keys(inf_list_ref(inf, "x"), "x/a,x/b");
	assert_keys(inf_list_ref(inf, "z"), "");
	inf_free(inf);
}

static void test_informer__objects_gauge_and_defaults(void **state)
{
	struct inf_opts o = {.gvr = test_gvr, .name = "cm-gauge"};
	struct inf *inf = inf_new(NULL, &o);
	char labels[128];
	struct inf_stats st;

	metrics_labels(labels, sizeof(labels), "resource", "cm-gauge", NULL);
	apply(inf, WATCH_ADDED, obj_new("x", "a", "1", NULL));
	apply(inf, WATCH_ADDED, obj_new("x", "b", "1", NULL));
	assert_true(metrics_get("landlord_informer_objects", labels) == 2);
	apply(inf, WATCH_DELETED, obj_new("x", "b", "1", NULL));
	assert_true(metrics_get("landlord_informer_objects", labels) == 1);
	assert_string_equal(inf_gvr(inf)->resource, "configmaps");
	assert_false(inf_has_synced(inf));
	assert_false(inf_wait_synced(inf, 20));
	assert_null(inf_resource_version(inf));
	inf_get_stats(inf, &st);
	assert_int_equal(st.lists, 0);
	inf_free(inf);
}

static void rec_relist_begin(void *ud)
{
	rec_append(ud, "begin;");
}

static void rec_relist_end(void *ud)
{
	rec_append(ud, "end;");
}

/* Store-less: events pass through as they came, lists come bracketed, nothing is cached. */
static void test_informer__no_store_streams_events(void **state)
{
	struct inf_opts o = {.gvr = test_gvr, .name = "cm-no-store", .no_store = true};
	struct inf *inf = inf_new(NULL, &o);
	struct rec r = {""};
	struct inf_handler h = rec_handler(&r);
	struct inf_relist_handler rh = {rec_relist_begin, rec_relist_end, &r};
	char labels[128];

	metrics_labels(labels, sizeof(labels), "resource", "cm-no-store", NULL);
	inf_add_handler(inf, &h);
	inf_add_relist_handler(inf, &rh);
	assert_int_equal(inf_add_index(inf, "namespace", inf_index_namespace, NULL), -EINVAL);
	apply(inf, WATCH_ADDED, obj_new("ns", "a", "1", NULL));
	apply(inf, WATCH_MODIFIED, obj_new("ns", "a", "2", NULL));
	apply(inf, WATCH_ADDED, obj_new("ns", "a", "3", NULL)); /* known, but an add as it came */
	apply(inf, WATCH_MODIFIED, obj_new("ns", "b", "4", NULL)); /* unknown, an update */
	apply(inf, WATCH_DELETED, obj_new("ns", "a", "9", NULL));  /* the event's own object */
	assert_string_equal(r.log, "add:ns/a rv=1;upd:ns/a ->2;add:ns/a rv=3;upd:ns/b ->4;"
	                           "del:ns/a rv=9;");
	assert_null(inf_get_ref(inf, "ns", "b"));
	assert_keys(inf_list_ref(inf, NULL), "");
	assert_int_equal(inf_len(inf), 0);
	assert_int_equal(inf_bytes(inf), 0);
	assert_true(metrics_get("landlord_informer_objects", labels) == 0);
	/* a (re)list: every item an add, in list order, between the brackets */
	r.log[0] = '\0';
	replace(inf, obj_new("ns", "c", "5", NULL), json_pack("{s:{}}", "metadata"),
	        obj_new("ns", "b", "6", NULL));
	assert_string_equal(r.log, "begin;add:ns/c rv=5;add:ns/b rv=6;end;");
	r.log[0] = '\0';
	replace(inf, NULL, NULL, NULL);
	assert_string_equal(r.log, "begin;end;");
	inf_remove_handler(inf, &h);
	inf_free(inf);
}

static void test_informer__backoff_grows_jittered_and_capped(void **state)
{
	long lo[8] = {0}, hi[8] = {0};

	for (unsigned f = 0; f < 8; f++) {
		lo[f] = hi[f] = inf__backoff_ms(f);
		for (int i = 0; i < 200; i++) {
			long ms = inf__backoff_ms(f);

			lo[f] = ms < lo[f] ? ms : lo[f];
			hi[f] = ms > hi[f] ? ms : hi[f];
		}
	}
	assert_true(lo[0] >= 500 && hi[0] <= 750);
	assert_true(lo[1] >= 1000 && hi[1] <= 1500);
	assert_true(lo[4] >= 8000 && hi[4] <= 12000);
	assert_true(hi[0] > lo[0]); /* jittered */
	assert_true(lo[5] >= 16000 && hi[5] <= 24000);
	assert_true(lo[6] == 30000 && hi[7] == 30000);
	assert_int_equal(inf__backoff_ms(1000), 30000);
}

/* ---- live tests (LANDLORD_TEST_KUBECONFIG) ---- */

struct live {
	struct kc_client *c;
	char ns[64];
	char state_dir[512]; /* for etcd-compact.sh, from LANDLORD_TEST_STATE_DIR */
};

static int live_setup(void **state)
{
	const char *path = getenv("LANDLORD_TEST_KUBECONFIG");
	const char *sd = getenv("LANDLORD_TEST_STATE_DIR");
	struct live *l;
	struct kcfg cfg = {0};
	struct ll_err err = {{0}};
	struct kc_resp resp = {0};
	char sfx[16];
	json_t *ns;

	if (path == NULL || *path == '\0') {
		*state = NULL;
		return 0;
	}
	l = calloc(1, sizeof(*l));
	if (kcfg_load_file(path, NULL, &cfg, &err) != 0 ||
	    kc_client_new(&cfg, NULL, &l->c, &err) != 0) {
		fprintf(stderr, "live setup: %s\n", err.msg);
		kcfg_release(&cfg);
		free(l);
		return -1;
	}
	kcfg_release(&cfg);
	live_state_dir(path, sd, l->state_dir, sizeof(l->state_dir));
	live_rand_suffix(sfx, sizeof(sfx));
	snprintf(l->ns, sizeof(l->ns), "inf-test-%s", sfx);
	ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
	               "name", l->ns);
	if (kc_create(l->c, &KC_NAMESPACES, NULL, ns, &resp, &err) != 0 || !kc_resp_ok(&resp)) {
		fprintf(stderr, "live setup: create namespace: %s %s\n", err.msg,
		        resp.status.message);
		json_decref(ns);
		kc_resp_release(&resp);
		kc_client_free(l->c);
		free(l);
		return -1;
	}
	json_decref(ns);
	kc_resp_release(&resp);
	*state = l;
	return 0;
}

static int live_teardown(void **state)
{
	struct live *l = *state;
	struct kc_resp resp = {0};

	if (l == NULL)
		return 0;
	kc_delete(l->c, &KC_NAMESPACES, NULL, l->ns, NULL, &resp, NULL);
	kc_resp_release(&resp);
	kc_client_free(l->c);
	free(l);
	return 0;
}

#define LIVE_OR_SKIP(state)        \
	struct live *l = *(state); \
	if (l == NULL)             \
		skip();

/* Wait up to 30 s for @cond(@inf, @arg). */
static bool eventually(bool (*cond)(struct inf *inf, const void *arg), struct inf *inf,
                       const void *arg)
{
	long long end = clock_mono_ms() + 30000;

	while (!cond(inf, arg)) {
		if (clock_mono_ms() > end)
			return false;
		usleep(20000);
	}
	return true;
}

struct want_rv {
	const char *ns, *name, *rv; /* rv NULL: absent */
};

static bool cached_rv_is(struct inf *inf, const void *arg)
{
	const struct want_rv *w = arg;
	const struct jdoc *o = inf_get_ref(inf, w->ns, w->name);
	bool ok;

	if (w->rv == NULL)
		ok = o == NULL;
	else
		ok = o && jd_resource_version(o) && strcmp(jd_resource_version(o), w->rv) == 0;
	jdoc_unref(o);
	return ok;
}

/* Create (POST) a configmap; returns its resourceVersion (caller frees). */
static char *create_cm(struct live *l, const struct kc_gvr *gvr, const char *name, const char *app)
{
	json_t *o =
	        json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", gvr->kind,
	                  "metadata", "name", name, "namespace", l->ns, "data", "k", "v");
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	char *rv;

	if (app)
		json_object_set_new(json_object_get(o, "metadata"), "labels",
		                    json_pack("{s:s}", "app", app));
	if (strcmp(gvr->resource, "podtemplates") == 0) {
		json_object_del(o, "data");
		json_object_set_new(o, "template",
		                    json_pack("{s:{s:[{s:s,s:s}]}}", "spec", "containers", "name",
		                              "c", "image", "busybox"));
	}
	assert_int_equal(kc_create(l->c, gvr, l->ns, o, &resp, &err), 0);
	if (!kc_resp_ok(&resp))
		fail_msg("create %s: %ld %s", name, resp.http_status, resp.status.message);
	rv = strdup(jx_resource_version(resp.body));
	json_decref(o);
	kc_resp_release(&resp);
	return rv;
}

static void delete_obj(struct live *l, const struct kc_gvr *gvr, const char *name)
{
	struct kc_resp resp = {0};

	assert_int_equal(kc_delete(l->c, gvr, l->ns, name, NULL, &resp, NULL), 0);
	assert_true(kc_resp_ok(&resp));
	kc_resp_release(&resp);
}

/* Wait up to 30 s for @want in the handler log (dispatch follows the cache change). */
static bool rec_wait(struct rec *r, const char *want)
{
	long long end = clock_mono_ms() + 30000;

	while (!rec_contains(r, want)) {
		if (clock_mono_ms() > end)
			return false;
		usleep(20000);
	}
	return true;
}

static bool has_manager(const json_t *obj, const char *manager)
{
	const json_t *mf = jx_get(obj, "metadata", "managedFields", NULL);
	json_t *e;
	size_t i;

	json_array_foreach(mf, i, e) {
		const char *m = jx_str(e, "manager", NULL);

		if (m && strcmp(m, manager) == 0)
			return true;
	}
	return false;
}

static void test_informer__live_configmaps_converge(void **state)
{
	LIVE_OR_SKIP(state);
	struct inf_opts o = {.gvr = KC_CONFIGMAPS, .ns = l->ns, .page_size = 2};
	struct inf *inf = inf_new(l->c, &o);
	struct rec r = {""}, late = {""};
	struct inf_handler h = rec_handler(&r), hl = rec_handler(&late);
	struct kc_resp resp = {0};
	json_t *patch;
	const struct jdoc *got;
	char *rv_a, *rv_b, *rv_c, *rv_p, *rv_a2, want[256];
	struct want_rv w;
	struct inf_stats st;

	/* three objects before the start: the first list takes two pages */
	rv_a = create_cm(l, &KC_CONFIGMAPS, "a", NULL);
	rv_b = create_cm(l, &KC_CONFIGMAPS, "b", NULL);
	rv_p = create_cm(l, &KC_CONFIGMAPS, "p", NULL);
	inf_add_handler(inf, &h);
	assert_int_equal(inf_start(inf), 0);
	assert_int_equal(inf_start(inf), -EBUSY);
	assert_true(inf_wait_synced(inf, 30000));
	assert_int_equal(inf_add_index(inf, "late", inf_index_namespace, NULL), -EBUSY);
	/* kube-root-ca.crt may or may not exist yet; a and b must */
	w = (struct want_rv){l->ns, "a", rv_a};
	assert_true(cached_rv_is(inf, &w));
	w = (struct want_rv){l->ns, "b", rv_b};
	assert_true(cached_rv_is(inf, &w));
	w = (struct want_rv){l->ns, "p", rv_p};
	assert_true(cached_rv_is(inf, &w));

	rv_c = create_cm(l, &KC_CONFIGMAPS, "c", NULL);
	w = (struct want_rv){l->ns, "c", rv_c};
	assert_true(eventually(cached_rv_is, inf, &w));

	patch = json_pack("{s:{s:s}}", "data", "k", "changed");
	assert_int_equal(kc_patch(l->c, &KC_CONFIGMAPS, l->ns, "a", NULL, KC_PATCH_MERGE, patch,
	                          "unit-test", &resp, NULL),
	                 0);
	assert_true(kc_resp_ok(&resp));
	rv_a2 = strdup(jx_resource_version(resp.body));
	assert_true(has_manager(resp.body, "unit-test"));
	kc_resp_release(&resp);
	json_decref(patch);
	w = (struct want_rv){l->ns, "a", rv_a2};
	assert_true(eventually(cached_rv_is, inf, &w));
	got = inf_get_ref(inf, l->ns, "a");
	assert_string_equal(jd_str(got, "data", "k", NULL), "changed");
	/* the server's managedFields are never cached */
	assert_int_equal(jval_type(jd_get(got, "metadata", "managedFields", NULL)), JT_NONE);
	jdoc_unref(got);

	delete_obj(l, &KC_CONFIGMAPS, "b");
	w = (struct want_rv){l->ns, "b", NULL};
	assert_true(eventually(cached_rv_is, inf, &w));

	snprintf(want, sizeof(want), "add:%s/a rv=%s;", l->ns, rv_a);
	assert_true(rec_wait(&r, want));
	snprintf(want, sizeof(want), "add:%s/c rv=%s;", l->ns, rv_c);
	assert_true(rec_wait(&r, want));
	snprintf(want, sizeof(want), "upd:%s/a %s>%s;", l->ns, rv_a, rv_a2);
	assert_true(rec_wait(&r, want));
	snprintf(want, sizeof(want), "del:%s/b rv=%s;", l->ns, rv_b);
	assert_true(rec_wait(&r, want));

	/* a handler added now sees the current objects as adds */
	inf_add_handler(inf, &hl);
	snprintf(want, sizeof(want), "add:%s/a rv=%s;", l->ns, rv_a2);
	assert_true(rec_contains(&late, want));
	snprintf(want, sizeof(want), "%s/b", l->ns);
	assert_false(rec_contains(&late, want));

	inf_get_stats(inf, &st);
	assert_int_equal(st.lists, 1);
	assert_true(st.events >= 3);
	inf_stop(inf);
	/* the cache stays readable after stop */
	w = (struct want_rv){l->ns, "c", rv_c};
	assert_true(cached_rv_is(inf, &w));
	inf_free(inf);
	free(rv_a);
	free(rv_b);
	free(rv_c);
	free(rv_p);
	free(rv_a2);
}

static void test_informer__live_projection(void **state)
{
	LIVE_OR_SKIP(state);
	static const char *const keep[] = {"metadata.name", "metadata.namespace",
	                                   "metadata.resourceVersion", "data", NULL};
	struct inf_opts o = {.gvr = KC_CONFIGMAPS, .ns = l->ns, .keep = keep};
	struct inf *inf = inf_new(l->c, &o);
	struct kc_resp resp = {0};
	json_t *cm;
	const struct jdoc *got;
	struct want_rv w;
	char *rv;

	cm = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind",
	               "ConfigMap", "metadata", "name", "applied", "namespace", l->ns, "labels",
	               "app", "x", "data", "k", "v");
	assert_int_equal(kc_apply(l->c, &KC_CONFIGMAPS, l->ns, "applied", NULL, cm, "landlord",
	                          true, &resp, NULL),
	                 0);
	assert_true(kc_resp_ok(&resp));
	rv = strdup(jx_resource_version(resp.body));
	assert_non_null(jx_get(resp.body, "metadata", "managedFields", NULL));
	kc_resp_release(&resp);
	assert_int_equal(inf_start(inf), 0);
	assert_true(inf_wait_synced(inf, 30000));
	w = (struct want_rv){l->ns, "applied", rv};
	assert_true(eventually(cached_rv_is, inf, &w));
	got = inf_get_ref(inf, l->ns, "applied");
	assert_string_equal(jd_str(got, "data", "k", NULL), "v");
	assert_int_equal(jval_type(jd_get(got, "metadata", "labels", NULL)), JT_NONE);
	assert_int_equal(jval_type(jd_get(got, "metadata", "uid", NULL)), JT_NONE);
	assert_string_equal(jd_str(got, "kind", NULL), "ConfigMap");
	assert_true(inf_bytes(inf) >= jdoc_bytes(got));
	jdoc_unref(got);
	json_decref(cm);
	free(rv);
	inf_free(inf);
}

static bool has_key(struct inf *inf, const void *key)
{
	const struct jdoc *o = inf_get_key_ref(inf, key);
	bool found = o != NULL;

	jdoc_unref(o);
	return found;
}

static void test_informer__live_metadata_only_namespaces(void **state)
{
	LIVE_OR_SKIP(state);
	struct inf_opts o = {.gvr = KC_NAMESPACES, .metadata_only = true, .name = "ns-meta"};
	struct inf *inf = inf_new(l->c, &o);
	struct kc_resp resp = {0};
	struct ll_err err;
	json_t *created;
	const struct jdoc *def;
	char name[128];

	assert_int_equal(inf_start(inf), 0);
	assert_true(inf_wait_synced(inf, 30000));
	assert_true(eventually(has_key, inf, l->ns));
	def = inf_get_ref(inf, NULL, "default");
	assert_non_null(def);
	assert_string_equal(jd_name(def), "default");
	assert_non_null(jd_uid(def));
	assert_int_equal(jval_type(jd_get(def, "spec", NULL)), JT_NONE);
	assert_int_equal(jval_type(jd_get(def, "status", NULL)), JT_NONE);
	jdoc_unref(def);
	def = inf_get_ref(inf, NULL, l->ns);
	assert_int_equal(jval_type(jd_get(def, "spec", NULL)), JT_NONE);
	jdoc_unref(def);
	/* events after the list arrive too (the watch asks for single objects, not a list) */
	snprintf(name, sizeof(name), "%s-meta", l->ns);
	created = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
	                    "metadata", "name", name);
	assert_int_equal(kc_create(l->c, &KC_NAMESPACES, NULL, created, &resp, &err), 0);
	assert_int_equal(resp.http_status, 201);
	kc_resp_release(&resp);
	assert_true(eventually(has_key, inf, name));
	assert_int_equal(kc_delete(l->c, &KC_NAMESPACES, NULL, name, NULL, &resp, &err), 0);
	kc_resp_release(&resp);
	json_decref(created);
	inf_free(inf);
}

static bool index_count_is(struct inf *inf, const void *arg)
{
	const size_t *want = arg; /* [count for web, count for db] */
	struct jdoc_list web = inf_by_index_ref(inf, "app", "web");
	struct jdoc_list db = inf_by_index_ref(inf, "app", "db");
	bool ok = web.n == want[0] && db.n == want[1];

	jdoc_list_release(&web);
	jdoc_list_release(&db);
	return ok;
}

static void test_informer__live_label_index(void **state)
{
	LIVE_OR_SKIP(state);
	struct inf_opts o = {.gvr = KC_CONFIGMAPS, .ns = l->ns, .label_selector = "app"};
	struct inf *inf = inf_new(l->c, &o);
	size_t want[2];
	char want_key[160];
	json_t *relabel;
	struct kc_resp resp = {0};

	assert_int_equal(inf_add_index(inf, "app", inf_index_label, "app"), 0);
	free(create_cm(l, &KC_CONFIGMAPS, "w1", "web"));
	assert_int_equal(inf_start(inf), 0);
	assert_true(inf_wait_synced(inf, 30000));
	free(create_cm(l, &KC_CONFIGMAPS, "w2", "web"));
	free(create_cm(l, &KC_CONFIGMAPS, "d1", "db"));
	free(create_cm(l, &KC_CONFIGMAPS, "nolabel", NULL)); /* outside the selector */
	want[0] = 2;
	want[1] = 1;
	assert_true(eventually(index_count_is, inf, want));
	relabel = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "app", "db");
	assert_int_equal(kc_patch(l->c, &KC_CONFIGMAPS, l->ns, "w2", NULL, KC_PATCH_MERGE, relabel,
	                          NULL, &resp, NULL),
	                 0);
	assert_true(kc_resp_ok(&resp));
	kc_resp_release(&resp);
	json_decref(relabel);
	want[0] = 1;
	want[1] = 2;
	assert_true(eventually(index_count_is, inf, want));
	snprintf(want_key, sizeof(want_key), "%s/w1", l->ns);
	assert_keys(inf_by_index_ref(inf, "app", "web"), want_key);
	snprintf(want_key, sizeof(want_key), "%s/d1,%s/w2", l->ns, l->ns);
	assert_keys(inf_by_index_ref(inf, "app", "db"), want_key);
	assert_null(inf_get_ref(inf, l->ns, "nolabel"));
	inf_free(inf);
}

/* tests/cluster/etcd-compact.sh on the cluster's state directory. */
static int compact_etcd(const char *state_dir)
{
	const char *data = getenv("LANDLORD_TEST_DATA");
	char script[1024];
	char *argv[] = {"bash", script, (char *)state_dir, NULL};
	pid_t pid;
	int status = 0;

	snprintf(script, sizeof(script), "%s/../cluster/etcd-compact.sh",
	         data ? data : "tests/data");
	posix_spawn_file_actions_t fa;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	rc = posix_spawnp(&pid, "bash", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return -1;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool relisted(struct inf *inf, const void *arg)
{
	struct inf_stats st;

	inf_get_stats(inf, &st);
	return st.relists > *(const uint64_t *)arg;
}

/*
 * A store-less informer beside the test's: paused and relisted with it, it brackets the list
 * and delivers its items as adds, and says nothing of the delete it missed.
 */
static struct inf *bare_new(struct live *l, struct rec *r)
{
	struct inf_opts o = {.gvr = KC_PODTEMPLATES, .ns = l->ns, .name = "bare", .no_store = true};
	struct inf *bare = inf_new(l->c, &o);
	struct inf_handler h = rec_handler(r);
	struct inf_relist_handler rh = {rec_relist_begin, rec_relist_end, r};

	inf_add_handler(bare, &h);
	inf_add_relist_handler(bare, &rh);
	assert_int_equal(inf_start(bare), 0);
	assert_true(inf_wait_synced(bare, 30000));
	return bare;
}

static void test_informer__live_relists_after_compaction(void **state)
{
	LIVE_OR_SKIP(state);
	struct inf_opts o = {.gvr = KC_PODTEMPLATES, .ns = l->ns};
	struct inf *inf, *bare;
	struct rec r = {""}, rb = {""};
	struct inf_handler h = rec_handler(&r);
	struct inf_stats before;
	char labels[256], want[512], *rv_keep, *rv_gone, *rv_new;
	double relists0;
	struct want_rv w;

	if (l->state_dir[0] == '\0')
		skip();
	inf = inf_new(l->c, &o);
	inf_add_handler(inf, &h);
	rv_keep = create_cm(l, &KC_PODTEMPLATES, "keep", NULL);
	rv_gone = create_cm(l, &KC_PODTEMPLATES, "gone", NULL);
	assert_int_equal(inf_start(inf), 0);
	assert_true(inf_wait_synced(inf, 30000));
	bare = bare_new(l, &rb);
	w = (struct want_rv){l->ns, "gone", rv_gone};
	assert_true(eventually(cached_rv_is, inf, &w));
	inf_get_stats(inf, &before);
	metrics_labels(labels, sizeof(labels), "resource", "podtemplates", NULL);
	relists0 = metrics_get("landlord_informer_relists_total", labels);

	/* while the watch is down: one delete, one create, then etcd forgets the history */
	inf_pause_watch(inf, true);
	inf_pause_watch(bare, true);
	pthread_mutex_lock(&rec_mu);
	rb.log[0] = '\0';
	pthread_mutex_unlock(&rec_mu);
	delete_obj(l, &KC_PODTEMPLATES, "gone");
	rv_new = create_cm(l, &KC_PODTEMPLATES, "new", NULL);
	assert_int_equal(compact_etcd(l->state_dir), 0);
	usleep(300000);
	/* nothing reaches the cache while paused */
	w = (struct want_rv){l->ns, "gone", rv_gone};
	assert_true(cached_rv_is(inf, &w));
	w = (struct want_rv){l->ns, "new", NULL};
	assert_true(cached_rv_is(inf, &w));
	inf_pause_watch(inf, false);
	inf_pause_watch(bare, false);

	assert_true(eventually(relisted, inf, &before.relists));
	assert_true(metrics_get("landlord_informer_relists_total", labels) > relists0);
	w = (struct want_rv){l->ns, "gone", NULL};
	assert_true(cached_rv_is(inf, &w));
	w = (struct want_rv){l->ns, "new", rv_new};
	assert_true(cached_rv_is(inf, &w));
	w = (struct want_rv){l->ns, "keep", rv_keep};
	assert_true(cached_rv_is(inf, &w));
	snprintf(want, sizeof(want), "del:%s/gone rv=%s;", l->ns, rv_gone);
	assert_true(rec_wait(&r, want));
	snprintf(want, sizeof(want), "add:%s/new rv=%s;", l->ns, rv_new);
	assert_true(rec_wait(&r, want));
	/* the list comes in name order */
	snprintf(want, sizeof(want), "begin;add:%s/keep rv=%s;add:%s/new rv=%s;end;", l->ns,
	         rv_keep, l->ns, rv_new);
	assert_true(rec_wait(&rb, want));
	assert_false(rec_contains(&rb, "del:"));
	inf_free(bare);
	inf_free(inf);
	free(rv_keep);
	free(rv_gone);
	free(rv_new);
}

/* Lines of @path containing @needle. */
static int count_lines(const char *path, const char *needle)
{
	char line[4096];
	int n = 0;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

static void test_informer__live_forbidden_is_logged_and_retried(void **state)
{
	LIVE_OR_SKIP(state);
	struct inf_opts o = {.gvr = KC_CONFIGMAPS, .ns = l->ns};
	char kubeconfig[600], logpath[] = "/tmp/test-informer-log-XXXXXX";
	struct kcfg cfg = {0};
	struct kc_client *alice = NULL;
	struct inf *inf;
	struct inf_stats st;
	long long end;
	int fd;

	if (l->state_dir[0] == '\0')
		skip();
	/* a tenant user without any RBAC grant in this namespace */
	snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfigs/alice.kubeconfig", l->state_dir);
	assert_int_equal(kcfg_load_file(kubeconfig, NULL, &cfg, NULL), 0);
	assert_int_equal(kc_client_new(&cfg, NULL, &alice, NULL), 0);
	kcfg_release(&cfg);
	fd = mkstemp(logpath);
	assert_true(fd >= 0);
	log_set_fd(fd);
	inf = inf_new(alice, &o);
	assert_int_equal(inf_start(inf), 0);
	/* back-off 0.5-0.75 s, then 1-1.5 s: a third attempt comes within ~2.5 s */
	end = clock_mono_ms() + 15000;
	while (count_lines(logpath, "\"list failed\"") < 3 && clock_mono_ms() < end)
		usleep(50000);
	assert_false(inf_has_synced(inf));
	inf_get_stats(inf, &st);
	assert_int_equal(st.lists, 0);
	inf_free(inf);
	log_set_fd(2);
	close(fd);
	assert_true(count_lines(logpath, "\"list failed\"") >= 3);
	/* the server's own words, naming the user and the verb */
	assert_true(count_lines(logpath, "\"code\":403") >= 3);
	assert_true(count_lines(logpath, "cannot list resource \\\"configmaps\\\"") >= 3);
	assert_true(count_lines(logpath, "\"informer backing off\"") >= 2);
	unlink(logpath);
	kc_client_free(alice);
}

int main(void)
{
	const struct CMUnitTest pure[] = {
	        cmocka_unit_test(test_informer__parse_projects_and_completes),
	        cmocka_unit_test(test_informer__key_building),
	        cmocka_unit_test(test_informer__events_emit_handlers),
	        cmocka_unit_test(test_informer__replace_emits_diff),
	        cmocka_unit_test(test_informer__label_index_follows_changes),
	        cmocka_unit_test(test_informer__owner_and_namespace_indexes),
	        cmocka_unit_test(test_informer__indexes_from_options),
	        cmocka_unit_test(test_informer__late_handler_replays_adds),
	        cmocka_unit_test(test_informer__list_filters_namespace),
	        cmocka_unit_test(test_informer__objects_gauge_and_defaults),
	        cmocka_unit_test(test_informer__no_store_streams_events),
	        cmocka_unit_test(test_informer__backoff_grows_jittered_and_capped),
	};
	const struct CMUnitTest live[] = {
	        cmocka_unit_test(test_informer__live_configmaps_converge),
	        cmocka_unit_test(test_informer__live_projection),
	        cmocka_unit_test(test_informer__live_metadata_only_namespaces),
	        cmocka_unit_test(test_informer__live_label_index),
	        cmocka_unit_test(test_informer__live_relists_after_compaction),
	        cmocka_unit_test(test_informer__live_forbidden_is_logged_and_retried),
	};
	int failed = cmocka_run_group_tests_name("informer", pure, NULL, NULL);

	failed += cmocka_run_group_tests_name("informer_live", live, live_setup, live_teardown);
	return failed;
}
