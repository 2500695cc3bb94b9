/* Unit tests for allocation (lib/base/mem.c) and the typed vector built on it (vec.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/mem.h"
#include "base/vec.h"

struct pair {
	int a;
	const char *b;
};

static void test_mem__vec_push_keeps_order_and_grows(void **state)
{
	VEC(int) v = VEC_INIT;

	assert_null(v.v);
	for (int i = 0; i < 1000; i++)
		vec_push(&v, i * 3);
	assert_int_equal(v.len, 1000);
	assert_true(v.cap >= v.len);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(v.v[i], i * 3);
	assert_int_equal(vec_pop(&v), 999 * 3);
	assert_int_equal(v.len, 999);
	vec_release(&v);
	assert_null(v.v);
	assert_int_equal(v.len, 0);
	assert_int_equal(v.cap, 0);
}

static void test_mem__vec_of_structs_and_reuse(void **state)
{
	struct pair_vec VEC_BODY(struct pair) v = VEC_INIT;
	size_t cap;

	vec_push(&v, ((struct pair){1, "one"}));
	vec_push(&v, ((struct pair){2, "two"}));
	assert_string_equal(v.v[1].b, "two");
	cap = v.cap;
	vec_clear(&v);
	assert_int_equal(v.len, 0);
	assert_int_equal(v.cap, cap); /* the array is kept for reuse */
	vec_push(&v, ((struct pair){3, "three"}));
	assert_int_equal(v.v[0].a, 3);
	vec_release(&v);
	vec_push(&v, ((struct pair){4, "four"})); /* a released vector is a new one */
	assert_int_equal(v.len, 1);
	vec_release(&v);
}

static void test_mem__vec_reserve_grows_once(void **state)
{
	VEC(char) v = VEC_INIT;
	char *before;

	vec_reserve(&v, 100);
	assert_true(v.cap >= 100);
	before = v.v;
	for (int i = 0; i < 100; i++)
		vec_push(&v, 'x');
	assert_ptr_equal(v.v, before); /* no move while within the reservation */
	vec_release(&v);
}

static void test_mem__reserve_keeps_enough_room(void **state)
{
	size_t cap = 0;
	int *v = vec__reserve(NULL, &cap, 5, sizeof(int));

	assert_true(cap >= 5);
	v = vec__reserve(v, &cap, 3, sizeof(int)); /* already room: unchanged */
	assert_true(cap >= 5);
	v = vec__reserve(v, &cap, 1000, sizeof(int));
	assert_true(cap >= 1000);
	v[999] = 7; /* the room is really there (ASan checks) */
	free(v);
}

static void test_mem__strings(void **state)
{
	char *a = xstrdup("hello"), *b = xstrndup("hello", 3), *c = xasprintf("%s-%d", "x", 42);

	assert_string_equal(a, "hello");
	assert_string_equal(b, "hel");
	assert_string_equal(c, "x-42");
	assert_null(xstrdup(NULL));
	assert_null(xstrndup(NULL, 3));
	free(a);
	free(b);
	free(c);
}

static void test_mem__zero_sizes_give_memory(void **state)
{
	void *a = xmalloc(0), *b = xcalloc(0, 0), *c = xreallocarray(NULL, 0, 8);

	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	free(a);
	free(b);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_mem__vec_push_keeps_order_and_grows),
	        cmocka_unit_test(test_mem__vec_of_structs_and_reuse),
	        cmocka_unit_test(test_mem__vec_reserve_grows_once),
	        cmocka_unit_test(test_mem__reserve_keeps_enough_room),
	        cmocka_unit_test(test_mem__strings),
	        cmocka_unit_test(test_mem__zero_sizes_give_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
