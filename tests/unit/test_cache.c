/* test_cache.c - the informer's pointer table: keys read from the items, deletion, growth. */
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
#include "kube/cache.h"

struct item {
	char key[32];
};

static bool item_match(const void *item, const char *key)
{
	return strcmp(((const struct item *)item)->key, key) == 0;
}

static void test_cache__put_get_replace_delete(void **state)
{
	struct cache_table t = CACHE_TABLE_INIT(item_match);
	struct item a = {"a"}, b = {"b"}, a2 = {"a"};

	assert_null(cache_get(&t, "a"));
	assert_null(cache_del(&t, "a"));
	assert_null(cache_put(&t, "a", &a));
	assert_null(cache_put(&t, "b", &b));
	assert_int_equal(t.n, 2);
	assert_ptr_equal(cache_get(&t, "a"), &a);
	assert_ptr_equal(cache_put(&t, "a", &a2), &a); /* replaced: the old one comes back */
	assert_int_equal(t.n, 2);
	assert_ptr_equal(cache_get(&t, "a"), &a2);
	assert_ptr_equal(cache_del(&t, "a"), &a2);
	assert_null(cache_get(&t, "a"));
	assert_ptr_equal(cache_get(&t, "b"), &b);
	assert_int_equal(t.n, 1);
	assert_int_equal(cache_bytes(&t), t.cap * sizeof(struct cache_slot));
	cache_release(&t);
	assert_int_equal(t.n, 0);
	assert_int_equal(cache_bytes(&t), 0);
}

/* Many keys, every other one deleted: probe runs stay intact (backward shift) and the load
 * stays at or under 3/4. */
static void test_cache__many_keys_survive_deletes(void **state)
{
	enum { N = 5000 };
	struct cache_table t = CACHE_TABLE_INIT(item_match);
	struct item *items = calloc(N, sizeof(*items));

	for (int i = 0; i < N; i++) {
		snprintf(items[i].key, sizeof(items[i].key), "ns-%d/obj", i);
		assert_null(cache_put(&t, items[i].key, &items[i]));
		assert_true(t.n * 4 <= t.cap * 3);
	}
	for (int i = 0; i < N; i += 2)
		assert_ptr_equal(cache_del(&t, items[i].key), &items[i]);
	assert_int_equal(t.n, N / 2);
	for (int i = 0; i < N; i++) {
		if (i % 2)
			assert_ptr_equal(cache_get(&t, items[i].key), &items[i]);
		else
			assert_null(cache_get(&t, items[i].key));
	}
	for (int i = 1; i < N; i += 2)
		assert_ptr_equal(cache_del(&t, items[i].key), &items[i]);
	assert_int_equal(t.n, 0);
	for (size_t i = 0; i < t.cap; i++)
		assert_null(t.slots[i].item);
	cache_release(&t);
	free(items);
}

static struct jdoc *doc(const char *text)
{
	struct jdoc *d = NULL;

	assert_int_equal(jdoc_parse(text, strlen(text), NULL, &d, NULL), 0);
	return d;
}

static void test_cache__documents_keyed_by_metadata(void **state)
{
	struct cache_table t = CACHE_TABLE_INIT(cache_doc_match);
	struct jdoc *ns = doc("{\"metadata\":{\"namespace\":\"x\",\"name\":\"a\"}}");
	struct jdoc *cl = doc("{\"metadata\":{\"name\":\"a\"}}");
	struct jdoc *empty_ns = doc("{\"metadata\":{\"namespace\":\"\",\"name\":\"b\"}}");
	struct jdoc *nameless = doc("{\"metadata\":{\"namespace\":\"x\"}}");
	char key[CACHE_KEY_MAX], long_name[600];

	assert_true(cache_doc_key(ns, key));
	assert_string_equal(key, "x/a");
	cache_put(&t, key, ns);
	assert_true(cache_doc_key(cl, key));
	assert_string_equal(key, "a");
	cache_put(&t, key, cl);
	assert_true(cache_doc_key(empty_ns, key));
	assert_string_equal(key, "b");
	assert_false(cache_doc_key(nameless, key));
	assert_ptr_equal(cache_get(&t, "x/a"), ns);
	assert_ptr_equal(cache_get(&t, "a"), cl);
	assert_null(cache_get(&t, "x/"));
	assert_null(cache_get(&t, "xa"));
	assert_false(cache_doc_match(ns, "x"));
	assert_false(cache_doc_match(nameless, "x/"));
	/* a key too long for the buffer is refused, not cut */
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	{
		char text[700];
		struct jdoc *big;

		snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"%s\"}}", long_name);
		big = doc(text);
		assert_false(cache_doc_key(big, key));
		jdoc_unref(big);
	}
	cache_release(&t);
	jdoc_unref(ns);
	jdoc_unref(cl);
	jdoc_unref(empty_ns);
	jdoc_unref(nameless);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cache__put_get_replace_delete),
	        cmocka_unit_test(test_cache__many_keys_survive_deletes),
	        cmocka_unit_test(test_cache__documents_keyed_by_metadata),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
