/* test_selector.c - label selectors: string form, LabelSelector JSON, matching, round trips. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "kube/selector.h"

static struct sel *parse_ok(const char *s)
{
	struct ll_err err = {{0}};
	struct sel *sel = NULL;

	if (sel_parse(s, &sel, &err) != 0)
		fail_msg("sel_parse(\"%s\"): %s", s, err.msg);
	return sel;
}

static struct sel *json_ok(const char *text)
{
	struct ll_err err = {{0}};
	struct sel *sel = NULL;
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);

	if (j == NULL)
		fail_msg("bad test JSON %s", text);
	if (sel_from_json(j, &sel, &err) != 0)
		fail_msg("sel_from_json(%s): %s", text, err.msg);
	json_decref(j);
	return sel;
}

static const char *json_lookup(const char *key, void *ud)
{
	return json_string_value(json_object_get(ud, key));
}

static bool all_strings(const json_t *labels)
{
	const char *k;
	const json_t *v;

	json_object_foreach((json_t *)labels, k, v)
		if (!json_is_string(v))
			return false;
	return true;
}

/* sel_matches(), checked against sel_matches_lookup() over the same labels. */
static bool matches(const struct sel *s, const char *labels_json)
{
	json_t *labels = labels_json ? json_loads(labels_json, 0, NULL) : NULL;
	bool m;

	if (labels_json && labels == NULL)
		fail_msg("bad test JSON %s", labels_json);
	m = sel_matches(s, labels);
	if (all_strings(labels))
		assert_int_equal(sel_matches_lookup(s, json_lookup, labels), m);
	json_decref(labels);
	return m;
}

static bool str_matches(const char *sel, const char *labels_json)
{
	struct sel *s = parse_ok(sel);
	bool m = matches(s, labels_json);

	sel_free(s);
	return m;
}

/* sel_to_string() output, in a static buffer. */
static const char *canon(const struct sel *s)
{
	static char out[4096];
	struct buf b = BUF_INIT(sizeof(out) - 1);

	assert_int_equal(sel_to_string(s, &b), 0);
	snprintf(out, sizeof(out), "%s", buf_cstr(&b));
	buf_release(&b);
	return out;
}

static void assert_canon(const char *in, const char *want)
{
	struct sel *s = parse_ok(in);

	assert_string_equal(canon(s), want);
	sel_free(s);
}

static void assert_parse_error(const char *in, const char *want_msg)
{
	struct ll_err err = {{0}};
	struct sel *s = NULL;

	if (sel_parse(in, &s, &err) != -EINVAL)
		fail_msg("\"%s\" was accepted", in);
	assert_null(s);
	if (strstr(err.msg, want_msg) == NULL)
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", in, err.msg, want_msg);
}

static void test_selector__empty_string_matches_everything(void **state)
{
	struct sel *s = parse_ok("");

	assert_true(sel_is_empty(s));
	assert_false(sel_matches_nothing(s));
	assert_true(matches(s, NULL));
	assert_true(matches(s, "{\"a\":\"b\"}"));
	assert_string_equal(canon(s), "");
	sel_free(s);
	s = parse_ok("  \t ");
	assert_true(sel_is_empty(s));
	sel_free(s);
}

static void test_selector__equality_operators(void **state)
{
	assert_true(str_matches("app=web", "{\"app\":\"web\"}"));
	assert_false(str_matches("app=web", "{\"app\":\"db\"}"));
	assert_false(str_matches("app=web", "{}"));
	assert_false(str_matches("app=web", NULL));
	assert_true(str_matches("app==web", "{\"app\":\"web\"}"));
	assert_false(str_matches("app==web", "{\"app\":\"api\"}"));
	assert_true(str_matches("app!=web", "{\"app\":\"db\"}"));
	assert_false(str_matches("app!=web", "{\"app\":\"web\"}"));
	/* != matches objects that lack the key. */
	assert_true(str_matches("app!=web", "{}"));
	assert_true(str_matches("app!=web", NULL));
	/* An empty value is a value. */
	assert_true(str_matches("app=", "{\"app\":\"\"}"));
	assert_false(str_matches("app=", "{}"));
}

static void test_selector__set_operators(void **state)
{
	assert_true(str_matches("env in (prod,staging)", "{\"env\":\"staging\"}"));
	assert_false(str_matches("env in (prod,staging)", "{\"env\":\"dev\"}"));
	assert_false(str_matches("env in (prod)", "{}"));
	assert_true(str_matches("env notin (prod)", "{\"env\":\"dev\"}"));
	assert_false(str_matches("env notin (prod,dev)", "{\"env\":\"dev\"}"));
	/* notin matches objects that lack the key. */
	assert_true(str_matches("env notin (prod)", "{}"));
	assert_true(str_matches("env notin (prod)", NULL));
	/* "()" and trailing/leading commas stand for the empty value. */
	assert_true(str_matches("env in ()", "{\"env\":\"\"}"));
	assert_true(str_matches("env in (a,)", "{\"env\":\"\"}"));
	assert_true(str_matches("env in (,a)", "{\"env\":\"a\"}"));
	assert_false(str_matches("env in (a,b)", "{\"env\":\"\"}"));
	/* Keywords are plain values inside the parentheses and after '='. */
	assert_true(str_matches("x in (in,notin)", "{\"x\":\"notin\"}"));
	assert_true(str_matches("in in (in)", "{\"in\":\"in\"}"));
	assert_true(str_matches("x=in", "{\"x\":\"in\"}"));
}

static void test_selector__existence_operators(void **state)
{
	assert_true(str_matches("team", "{\"team\":\"a\"}"));
	assert_true(str_matches("team", "{\"team\":\"\"}"));
	assert_false(str_matches("team", "{\"other\":\"a\"}"));
	assert_false(str_matches("team", NULL));
	assert_true(str_matches("!team", "{\"other\":\"a\"}"));
	assert_true(str_matches("!team", NULL));
	assert_false(str_matches("!team", "{\"team\":\"a\"}"));
	assert_true(str_matches("! team", "{}"));
}

static void test_selector__numeric_operators(void **state)
{
	assert_true(str_matches("gen>5", "{\"gen\":\"6\"}"));
	assert_false(str_matches("gen>5", "{\"gen\":\"5\"}"));
	assert_false(str_matches("gen>5", "{\"gen\":\"x\"}"));
	assert_false(str_matches("gen>5", "{}"));
	assert_true(str_matches("gen<5", "{\"gen\":\"-3\"}"));
	assert_false(str_matches("gen<5", "{\"gen\":\"5\"}"));
	assert_false(str_matches("gen<5", "{\"gen\":\" 4\"}"));
	assert_parse_error("gen>abc", "the value must be an integer");
	assert_parse_error("gen>99999999999999999999", "the value must be an integer");
}

static void test_selector__requirements_are_anded(void **state)
{
	const char *sel = "app=web, tier in (fe,be),!legacy,env!=dev";

	assert_true(str_matches(sel, "{\"app\":\"web\",\"tier\":\"fe\"}"));
	assert_true(str_matches(sel, "{\"app\":\"web\",\"tier\":\"be\",\"env\":\"prod\"}"));
	assert_false(str_matches(sel, "{\"app\":\"web\",\"tier\":\"fe\",\"legacy\":\"1\"}"));
	assert_false(str_matches(sel, "{\"app\":\"web\",\"tier\":\"fe\",\"env\":\"dev\"}"));
	assert_false(str_matches(sel, "{\"app\":\"web\"}"));
	/* Contradictions are allowed and match nothing. */
	assert_false(str_matches("a,!a", "{\"a\":\"1\"}"));
	assert_false(str_matches("a,!a", "{}"));
}

static void test_selector__keys_and_values_are_validated(void **state)
{
	struct sel *s = parse_ok("example.com/My_Name-1.x=Val_1.-z");

	assert_true(matches(s, "{\"example.com/My_Name-1.x\":\"Val_1.-z\"}"));
	sel_free(s);
	assert_parse_error("-a=b", "name part must consist of alphanumeric characters");
	assert_parse_error("a-=b", "name part must consist of alphanumeric characters");
	assert_parse_error("/a", "prefix part must be non-empty");
	assert_parse_error("Example.com/a", "prefix part a lowercase RFC 1123 subdomain");
	assert_parse_error("a..b/c", "prefix part a lowercase RFC 1123 subdomain");
	assert_parse_error("a/", "name part must be non-empty");
	assert_parse_error("a/b/c", "a qualified name must be");
	assert_parse_error("a234567890123456789012345678901234567890123456789012345678901234",
	                   "name part must be no more than 63 characters");
	assert_parse_error("a=-b", "invalid label value \"-b\"");
	assert_parse_error("a=b-", "a valid label must be an empty string or consist");
	assert_parse_error("a=b234567890123456789012345678901234567890123456789012345678901234",
	                   "must be no more than 63 characters");
	assert_parse_error("a in (ok,b@d)", "invalid label value \"b@d\"");
	assert_parse_error("ключ=v", "invalid label key");
	/* 63 is the limit, not 62. */
	s = parse_ok("a23456789012345678901234567890123456789012345678901234567890123="
	             "b23456789012345678901234567890123456789012345678901234567890123");
	sel_free(s);
}

static void test_selector__syntax_errors(void **state)
{
	assert_parse_error("a=b,", "found '', expected: identifier after ','");
	assert_parse_error(",a", "found ',', expected: !, identifier, or 'end of string'");
	assert_parse_error("a b", "found 'b', expected: in, notin, =, ==, !=, gt, lt");
	assert_parse_error("a=b c", "found 'c', expected: ',' or 'end of string'");
	assert_parse_error("a in b", "found 'b', expected: '('");
	assert_parse_error("a in (b", "found '', expected: ',' or ')'");
	assert_parse_error("a in (b c)", "found 'c', expected: ',' or ')'");
	assert_parse_error("a in (=)", "found '=', expected: ',', ')' or identifier");
	assert_parse_error("a in (b,=)", "found '=', expected: ',', or identifier");
	assert_parse_error("a===b", "found '=', expected: identifier");
	assert_parse_error("!a=b", "found '=', expected: ',' or 'end of string'");
	assert_parse_error("!", "found '', expected: identifier");
	assert_parse_error("!=a", "expected: !, identifier, or 'end of string'");
	assert_parse_error("a=(b)", "found '(', expected: identifier");
	assert_parse_error("a in", "found '', expected: '('");
	assert_parse_error("-a", "unable to parse requirement: invalid label key \"-a\"");
}

static void test_selector__json_labels_and_expressions(void **state)
{
	struct sel *s =
	        json_ok("{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":["
	                "{\"key\":\"env\",\"operator\":\"In\",\"values\":[\"prod\",\"qa\"]},"
	                "{\"key\":\"tier\",\"operator\":\"NotIn\",\"values\":[\"db\"]},"
	                "{\"key\":\"team\",\"operator\":\"Exists\"},"
	                "{\"key\":\"legacy\",\"operator\":\"DoesNotExist\",\"values\":[]}]}");

	assert_false(sel_is_empty(s));
	assert_true(matches(s, "{\"app\":\"web\",\"env\":\"qa\",\"team\":\"x\"}"));
	assert_true(matches(s, "{\"app\":\"web\",\"env\":\"qa\",\"team\":\"x\",\"tier\":\"fe\"}"));
	assert_false(matches(s, "{\"app\":\"web\",\"env\":\"qa\",\"team\":\"x\",\"tier\":\"db\"}"));
	assert_false(matches(s, "{\"app\":\"web\",\"env\":\"dev\",\"team\":\"x\"}"));
	assert_false(matches(s, "{\"app\":\"web\",\"env\":\"qa\"}"));
	assert_false(
	        matches(s, "{\"app\":\"web\",\"env\":\"qa\",\"team\":\"x\",\"legacy\":\"y\"}"));
	assert_false(matches(s, "{\"app\":\"api\",\"env\":\"qa\",\"team\":\"x\"}"));
	assert_string_equal(canon(s), "app=web,env in (prod,qa),!legacy,team,tier notin (db)");
	sel_free(s);
}

static void test_selector__json_null_matches_nothing_and_empty_everything(void **state)
{
	struct sel *s = NULL;
	struct buf b = BUF_INIT(1024);

	assert_int_equal(sel_from_json(NULL, &s, NULL), 0);
	assert_true(sel_matches_nothing(s));
	assert_false(sel_is_empty(s));
	assert_false(matches(s, NULL));
	assert_false(matches(s, "{\"a\":\"b\"}"));
	/* No string form selects nothing. */
	assert_int_equal(sel_to_string(s, &b), -EINVAL);
	sel_free(s);
	s = json_ok("null");
	assert_true(sel_matches_nothing(s));
	sel_free(s);

	s = json_ok("{}");
	assert_true(sel_is_empty(s));
	assert_true(matches(s, NULL));
	assert_true(matches(s, "{\"a\":\"b\"}"));
	sel_free(s);
	s = json_ok("{\"matchLabels\":{},\"matchExpressions\":[]}");
	assert_true(sel_is_empty(s));
	assert_false(sel_matches_nothing(s));
	sel_free(s);
	s = json_ok("{\"matchLabels\":null,\"matchExpressions\":null}");
	assert_true(sel_is_empty(s));
	sel_free(s);
	buf_release(&b);
}

static void assert_json_error(const char *text, const char *want_msg)
{
	struct ll_err err = {{0}};
	struct sel *s = NULL;
	json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

	assert_non_null(j);
	if (sel_from_json(j, &s, &err) != -EINVAL)
		fail_msg("%s was accepted", text);
	assert_null(s);
	if (strstr(err.msg, want_msg) == NULL)
		fail_msg("%s: message \"%s\" lacks \"%s\"", text, err.msg, want_msg);
	json_decref(j);
}

static void test_selector__json_errors(void **state)
{
	assert_json_error("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\","
	                  "\"values\":[\"1\"]}]}",
	                  "\"Gt\" is not a valid label selector operator");
	assert_json_error("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}",
	                  "values set can't be empty");
	assert_json_error("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
	                  "\"values\":[]}]}",
	                  "values set can't be empty");
	assert_json_error("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\","
	                  "\"values\":[\"x\"]}]}",
	                  "values set must be empty for exists and does not exist");
	assert_json_error("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
	                  "\"values\":[\"ok\",\"b@d\"]}]}",
	                  "invalid label value \"b@d\"");
	assert_json_error("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
	                  "\"values\":[1]}]}",
	                  "values must be strings");
	assert_json_error("{\"matchExpressions\":[{\"operator\":\"Exists\"}]}",
	                  "invalid label key \"\"");
	assert_json_error("{\"matchExpressions\":[\"a\"]}", "entries must be objects");
	assert_json_error("{\"matchExpressions\":{}}", "matchExpressions must be an array");
	assert_json_error("{\"matchLabels\":{\"a\":1}}", "matchLabels[a] must be a string");
	assert_json_error("{\"matchLabels\":{\"a b\":\"c\"}}", "invalid label key \"a b\"");
	assert_json_error("{\"matchLabels\":{\"a\":\"c d\"}}", "invalid label value \"c d\"");
	assert_json_error("{\"matchLabels\":{\"a\":\"c\\u0000d\"}}", "must be a string");
	assert_json_error("{\"matchLabels\":[]}", "matchLabels must be an object");
	assert_json_error("[]", "a label selector must be an object or null");
}

static void test_selector__canonical_string(void **state)
{
	assert_canon("b=1,a=2", "a=2,b=1");
	assert_canon("a==x", "a=x");
	assert_canon("a in (z,y,z,x)", "a in (x,y,z)");
	assert_canon("  a  notin ( q , p ) ", "a notin (p,q)");
	assert_canon("a in ()", "a in ()");
	assert_canon("a in (b,,c)", "a in (,b,c)");
	assert_canon("a=", "a=");
	assert_canon("!a,a", "a,!a");
	assert_canon("x>5,x<10", "x>5,x<10");
	assert_canon("a=1,a=1", "a=1,a=1");
}

/* sel_to_string() output parses back to a selector that prints and matches the same. */
static void test_selector__to_string_round_trips(void **state)
{
	static const char *const in[] = {
	        "a=b",
	        "a!=b,c,!d",
	        "k8s.io/app in (x,,y),app.kubernetes.io/name notin (in)",
	        "x in (in,notin),in=notin",
	        "a=,b in (),c notin (,)",
	        "n>0,n<7",
	};
	static const char *const labels[] = {
	        "{}",
	        "{\"a\":\"b\"}",
	        "{\"a\":\"c\",\"c\":\"\"}",
	        "{\"k8s.io/app\":\"\",\"app.kubernetes.io/name\":\"z\"}",
	        "{\"x\":\"in\",\"in\":\"notin\"}",
	        "{\"a\":\"\",\"b\":\"\",\"c\":\"q\",\"n\":\"3\"}",
	};
	struct sel *s, *t;
	char first[4096];
	size_t i, j;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		s = parse_ok(in[i]);
		snprintf(first, sizeof(first), "%s", canon(s));
		t = parse_ok(first);
		assert_string_equal(canon(t), first);
		for (j = 0; j < sizeof(labels) / sizeof(labels[0]); j++)
			assert_int_equal(matches(s, labels[j]), matches(t, labels[j]));
		sel_free(s);
		sel_free(t);
	}
}

static void test_selector__to_string_respects_the_cap(void **state)
{
	struct sel *s = parse_ok("averyveryverylongkey=averyveryverylongvalue");
	struct buf b = BUF_INIT(10);

	assert_int_equal(sel_to_string(s, &b), -EMSGSIZE);
	assert_int_equal(b.len, 0);
	buf_release(&b);
	sel_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_selector__empty_string_matches_everything),
	        cmocka_unit_test(test_selector__equality_operators),
	        cmocka_unit_test(test_selector__set_operators),
	        cmocka_unit_test(test_selector__existence_operators),
	        cmocka_unit_test(test_selector__numeric_operators),
	        cmocka_unit_test(test_selector__requirements_are_anded),
	        cmocka_unit_test(test_selector__keys_and_values_are_validated),
	        cmocka_unit_test(test_selector__syntax_errors),
	        cmocka_unit_test(test_selector__json_labels_and_expressions),
	        cmocka_unit_test(test_selector__json_null_matches_nothing_and_empty_everything),
	        cmocka_unit_test(test_selector__json_errors),
	        cmocka_unit_test(test_selector__canonical_string),
	        cmocka_unit_test(test_selector__to_string_round_trips),
	        cmocka_unit_test(test_selector__to_string_respects_the_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
