/*
 * test_jsonpatch.c - RFC 6902 JSON Patch (src/proxy/jsonpatch.h): the RFC's Appendix A
 * examples, pointer escapes, array indices, all-or-nothing failure, limits.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/jsonpatch.h"

/* Apply @ops to @doc (JSON texts); the result must be @want (NULL: the error @err). */
static void check(const char *doc, const char *ops, const char *want, int err)
{
	json_t *d = json_loads(doc, JSON_DECODE_ANY, NULL), *o = json_loads(ops, 0, NULL);
	json_t *before = json_deep_copy(d);
	char why[256] = "";
	int rc;

	assert_non_null(d);
	assert_non_null(o);
	rc = jp_apply(&d, o, why, sizeof(why));
	if (want) {
		json_t *w = json_loads(want, JSON_DECODE_ANY, NULL);

		if (rc != 0 || !json_equal(d, w))
			fail_msg("%s on %s: rc %d (%s), got %s", ops, doc, rc, why,
			         json_dumps(d, JSON_COMPACT | JSON_ENCODE_ANY));
		json_decref(w);
	} else {
		assert_int_equal(rc, err);
		assert_true(why[0]);
		assert_true(json_equal(d, before)); /* all or nothing */
	}
	json_decref(before);
	json_decref(d);
	json_decref(o);
}

static void test_rfc_examples(void **state)
{
	(void)state;
	check("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
	      "{\"baz\":\"qux\",\"foo\":\"bar\"}", 0);
	check("{\"foo\":[\"bar\",\"baz\"]}",
	      "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
	      "{\"foo\":[\"bar\",\"qux\",\"baz\"]}", 0);
	check("{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]",
	      "{\"foo\":\"bar\"}", 0);
	check("{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
	      "{\"foo\":[\"bar\",\"baz\"]}", 0);
	check("{\"baz\":\"qux\",\"foo\":\"bar\"}",
	      "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
	      "{\"baz\":\"boo\",\"foo\":\"bar\"}", 0);
	check("{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
	      "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
	      "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}", 0);
	check("{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
	      "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
	      "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}", 0);
	check("{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
	      "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},"
	      "{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]",
	      "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}", 0);
	check("{\"baz\":\"qux\"}", "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]", NULL,
	      -EPROTO);
	check("{\"foo\":\"bar\"}",
	      "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]",
	      "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}", 0);
	check("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]",
	      NULL, -ENOENT);
	check("{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]",
	      "{\"/\":9,\"~1\":10}", 0);
	check("{\"foo\":[\"bar\"]}",
	      "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]",
	      "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}", 0);
}

static void test_namespace_moves(void **state)
{
	(void)state;
	check("{\"metadata\":{\"name\":\"c\",\"namespace\":\"dev\"},\"data\":{}}",
	      "[{\"op\":\"copy\",\"from\":\"/metadata/namespace\",\"path\":\"/data/ns\"}]",
	      "{\"metadata\":{\"name\":\"c\",\"namespace\":\"dev\"},\"data\":{\"ns\":\"dev\"}}", 0);
	check("{\"metadata\":{\"namespace\":\"dev\"},\"data\":{\"x\":\"prod\"}}",
	      "[{\"op\":\"move\",\"from\":\"/data/x\",\"path\":\"/metadata/namespace\"}]",
	      "{\"metadata\":{\"namespace\":\"prod\"},\"data\":{}}", 0);
}

static void test_refusals(void **state)
{
	(void)state;
	check("{\"a\":{\"b\":1}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b/c\"}]", NULL,
	      -EINVAL);
	check("{\"a\":[1,2]}", "[{\"op\":\"remove\",\"path\":\"/a/01\"}]", NULL, -ENOENT);
	check("{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/3\",\"value\":0}]", NULL, -ENOENT);
	check("{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/b\"}]", NULL, -ENOENT);
	check("{\"a\":1}", "[{\"op\":\"frob\",\"path\":\"/a\"}]", NULL, -EINVAL);
	check("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", NULL, -EINVAL);
	check("{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/~2\",\"value\":1}]", NULL, -EPROTO);
	/* all or nothing: the first operation is undone when the second fails */
	check("{\"a\":1}",
	      "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},{\"op\":\"remove\",\"path\":\"/c\"}]",
	      NULL, -ENOENT);
	check("{}", "{}", NULL, -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_rfc_examples),
	        cmocka_unit_test(test_namespace_moves),
	        cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
