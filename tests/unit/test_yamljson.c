/*
 * test_yamljson.c - YAML read as Helm reads values: YAML 1.1 scalars (null, yes/no/on/off,
 * 0x/0o/0b/leading-0 integers, "_", floats), strings when quoted or tagged !!str, keys that are
 * strings to Helm; aliases, merge keys, other tags, .inf, a second document, duplicate keys,
 * deep nesting and malformed YAML refused with one line.
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

#include "base/err.h"
#include "base/mem.h"
#include "kube/yamljson.h"

static void assert_json(const char *yaml, const char *want)
{
	json_t *out = NULL;
	struct ll_err err = {{0}};
	char *got;

	if (yaml_to_json(yaml, strlen(yaml), &out, &err) != 0)
		fail_msg("%s: %s", yaml, err.msg);
	got = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got %s, want %s", yaml, got, want);
	free(got);
	json_decref(out);
}

static void assert_refused(const char *yaml, const char *msg)
{
	json_t *out = NULL;
	struct ll_err err = {{0}};

	if (yaml_to_json(yaml, strlen(yaml), &out, &err) != -EINVAL)
		fail_msg("%s: not refused", yaml);
	assert_null(out);
	if (strstr(err.msg, msg) == NULL)
		fail_msg("%s: %s lacks %s", yaml, err.msg, msg);
	assert_null(strchr(err.msg, '\n'));
}

static void test_yamljson__scalars_resolve_as_helm_reads_them(void **state)
{
	assert_json("a: ~\nb: null\nc:\nd: NULL\n",
	            "{\"a\":null,\"b\":null,\"c\":null,\"d\":null}");
	assert_json("[yes, No, on, OFF, y, n, true, False]",
	            "[true,false,true,false,true,false,true,false]");
	assert_json("[12, -3, +4, 0x1F, 0o17, 017, 0b101, 1_000, 0, 9223372036854775807]",
	            "[12,-3,4,31,15,15,5,1000,0,9223372036854775807]");
	assert_json("[1.5, .5, 5., 1e3, -2.5E-1, 08]", "[1.5,0.5,5.0,1000.0,-0.25,8.0]");
	assert_json("[1e999, 0x, 1.2.3, v1, 12:30, 2001-12-14, '1', \"yes\", !!str 3, _1]",
	            "[\"1e999\",\"0x\",\"1.2.3\",\"v1\",\"12:30\",\"2001-12-14\",\"1\",\"yes\","
	            "\"3\",\"_1\"]");
	assert_json("a: |\n  x\n  y\nb: >\n  p\n  q\n", "{\"a\":\"x\\ny\\n\",\"b\":\"p q\\n\"}");
	assert_json("team: ${{TEAM}}\n", "{\"team\":\"${{TEAM}}\"}");
}

static void test_yamljson__documents_and_keys(void **state)
{
	assert_json("", "null");
	assert_json("# only a comment\n", "null");
	assert_json("---\na: 1\n...\n", "{\"a\":1}");
	assert_json("1: a\n\"yes\": b\n'0x1': c\n!!str on: d\n",
	            "{\"0x1\":\"c\",\"1\":\"a\",\"on\":\"d\",\"yes\":\"b\"}");
	assert_json("a: {b: [1, {c: d}]}", "{\"a\":{\"b\":[1,{\"c\":\"d\"}]}}");
	assert_json("a: &x 1\n", "{\"a\":1}");
}

static void test_yamljson__what_could_mean_something_else_is_refused(void **state)
{
	char *deep = xmalloc(200);

	assert_refused("a: &x 1\nb: *x\n", "line 2: aliases are not supported");
	assert_refused("<<: {a: 1}\n", "merge keys (<<) are not supported");
	assert_refused("a: !!int 3\n", "tag tag:yaml.org,2002:int is not supported");
	assert_refused("a: !custom x\n", "is not supported");
	assert_refused("a: .inf\n", ".inf has no JSON value: quote it");
	assert_refused("a: 18446744073709551616\n", "is an integer beyond 64 bits");
	assert_refused("a: 1\n---\nb: 2\n", "more than one YAML document");
	assert_refused("a: 1\na: 2\n", "line");
	assert_refused("yes: 1\n", "key (a boolean) is not a string to Helm: quote it");
	assert_refused("~: 1\n", "key null is not a string to Helm");
	assert_refused("1.5: 1\n", "key (a number) is not a string to Helm");
	assert_refused("0x10: 1\n", "key 0x10 is the integer 16 to Helm: quote it");
	assert_refused("? [a]\n: 1\n", "a key must be a scalar");
	assert_refused("a: 1\n? [b]\n: 2\n", "a key must be a scalar"); /* after a good pair */
	assert_refused("a: [\n", "line");
	assert_refused("a: b\xff\n", "");
	memset(deep, '[', 199);
	deep[199] = '\0';
	assert_refused(deep, "");
	memset(deep, 0, 200);
	for (int i = 0; i < 66; i++) {
		deep[i] = '[';
		deep[66 + i] = ']';
	}
	assert_refused(deep, "line 1: Max depth (64) exceeded");
	free(deep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_yamljson__scalars_resolve_as_helm_reads_them),
	        cmocka_unit_test(test_yamljson__documents_and_keys),
	        cmocka_unit_test(test_yamljson__what_could_mean_something_else_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
