/*
 * test_hostmatch.c - Ingress and HTTPRoute hosts: what a host is, what allowed.hosts allows
 * (names compared literally, whole-host regexes, denyWildcards), overlapping hosts under both
 * wildcard meanings, and the denial messages.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "testjson.h"

#include "base/err.h"
#include "tenancy/denial.h"
#include "tenancy/hostmatch.h"

#define L63 "a23456789012345678901234567890123456789012345678901234567890123"

static struct hm_policy *policy(const char *hosts_json)
{
	struct ll_err err = {{0}};
	struct hm_policy *p = NULL;
	json_t *hosts = hosts_json ? js(hosts_json) : NULL;

	if (hm_policy_from_json(hosts, &p, &err) != 0)
		fail_msg("%s refused: %s", hosts_json, err.msg);
	json_decref(hosts);
	return p;
}

static enum hm_verdict check(const struct hm_policy *p, const char *host)
{
	return hm_check(p, host, strlen(host), NULL);
}

static void test_hostmatch__hosts_are_rfc1123_names_or_one_leading_wildcard(void **state)
{
	static const char *const ok[] = {
	        "example.com",   "a",   "a-b.example.com", "xn--n3h.com", "1.2.3.4", "0a.b",
	        "*.example.com", "*.a", L63 ".com",
	};
	static const char *const bad[] = {
	        "Example.com",
	        "example.com.",
	        ".example.com",
	        "a..b",
	        "-a.com",
	        "a-.com",
	        "*",
	        "*.",
	        "**.example.com",
	        "a.*.example.com",
	        "*example.com",
	        "foo*.example.com",
	        "*.*.example.com",
	        L63 "4.com",
	        "exa mple.com",
	        "example.com\n",
	        "ex_ample.com",
	        "\xc3\xa9.com",
	        "a:80",
	        "a/b",
	};
	char longest[HM_HOST_MAX + 2];

	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++)
		if (hm_host_problem(ok[i], strlen(ok[i])) != NULL)
			fail_msg("\"%s\" refused: %s", ok[i],
			         hm_host_problem(ok[i], strlen(ok[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		if (hm_host_problem(bad[i], strlen(bad[i])) == NULL)
			fail_msg("\"%s\" accepted", bad[i]);
	assert_string_equal(hm_host_problem("", 0), "it is empty");
	assert_non_null(hm_host_problem("a\0b", 3));
	assert_null(hm_host_problem("a.b\0junk", 3));
	/* 253 bytes in all: four 63-byte labels minus one byte */
	memcpy(longest, L63 "." L63 "." L63 "." L63, 255);
	assert_null(hm_host_problem(longest + 2, 253));
	assert_string_equal(hm_host_problem(longest + 1, 254), "it is longer than 253 bytes");
	assert_string_equal(hm_host_problem(L63 "4.com", 68),
	                    "each label must be no more than 63 characters");
	assert_true(hm_is_wildcard("*.a", 3));
	assert_false(hm_is_wildcard("a.*", 3));
	assert_false(hm_is_wildcard("*", 1));
}

static void test_hostmatch__names_are_compared_literally(void **state)
{
	struct hm_policy *p =
	        policy("{\"names\":[\"app.acme.com\",\"*.acme.com\",\"api.acme.io\"]}");

	assert_int_equal(check(p, "app.acme.com"), HM_ALLOWED);
	assert_int_equal(check(p, "api.acme.io"), HM_ALLOWED);
	/* a listed wildcard allows itself, and is not expanded */
	assert_int_equal(check(p, "*.acme.com"), HM_ALLOWED);
	assert_int_equal(check(p, "x.acme.com"), HM_NOT_ALLOWED);
	assert_int_equal(check(p, "api.acme.io.evil.com"), HM_NOT_ALLOWED);
	assert_int_equal(check(p, "evil-api.acme.io"), HM_NOT_ALLOWED);
	assert_int_equal(check(p, "acme.com"), HM_NOT_ALLOWED);
	assert_int_equal(check(p, "*.app.acme.com"), HM_NOT_ALLOWED);
	assert_int_equal(check(p, "APP.acme.com"), HM_INVALID);
	/* a length, not a NUL, ends the host */
	assert_int_equal(hm_check(p, "app.acme.com.evil", 12, NULL), HM_ALLOWED);
	assert_int_equal(hm_check(p, "app.acme.co", 11, NULL), HM_NOT_ALLOWED);
	hm_policy_free(p);
}

static void test_hostmatch__a_regex_matches_the_whole_host(void **state)
{
	struct hm_policy *p = policy("{\"regex\":\"[a-z0-9-]+\\\\.acme-apps\\\\.io\"}");
	struct hm_policy *dot = policy("{\"regex\":\".*\\\\.acme\\\\.com\"}");
	struct hm_policy *both = policy("{\"names\":[\"www.acme.com\"],"
	                                "\"regex\":[\"a\\\\.acme\\\\.io\",\"b\\\\.acme\\\\.io\"]}");

	assert_int_equal(check(p, "foo.acme-apps.io"), HM_ALLOWED);
	assert_int_equal(check(p, "foo.acme-apps.io.evil.com"), HM_NOT_ALLOWED);
	assert_int_equal(check(p, "evil.com.foo.acme-apps.io"), HM_NOT_ALLOWED);
	assert_int_equal(check(p, "a.b.acme-apps.io"), HM_NOT_ALLOWED);
	assert_int_equal(check(p, "*.acme-apps.io"), HM_NOT_ALLOWED);
	assert_int_equal(check(p, "fooxacme-apps.io"), HM_NOT_ALLOWED);
	/* a regex sees the '*' of a wildcard host */
	assert_int_equal(check(dot, "*.acme.com"), HM_ALLOWED);
	assert_int_equal(check(dot, "a.b.acme.com"), HM_ALLOWED);
	assert_int_equal(check(both, "www.acme.com"), HM_ALLOWED);
	assert_int_equal(check(both, "b.acme.io"), HM_ALLOWED);
	assert_int_equal(check(both, "c.acme.io"), HM_NOT_ALLOWED);
	hm_policy_free(p);
	hm_policy_free(dot);
	hm_policy_free(both);
}

static void test_hostmatch__deny_wildcards_wins_over_everything(void **state)
{
	struct hm_policy *p = policy("{\"names\":[\"*.acme.com\",\"a.acme.com\"],\"regex\":\".*\","
	                             "\"denyWildcards\":true}");
	struct hm_policy *only = policy("{\"denyWildcards\":true}");

	assert_int_equal(check(p, "*.acme.com"), HM_WILDCARD_DENIED);
	assert_int_equal(check(p, "a.acme.com"), HM_ALLOWED);
	assert_int_equal(check(p, "anything.example"), HM_ALLOWED);
	/* A1 with A2: no list, so any host, but no wildcard */
	assert_int_equal(check(only, "x.example.com"), HM_ALLOWED);
	assert_int_equal(check(only, "*.example.com"), HM_WILDCARD_DENIED);
	hm_policy_free(p);
	hm_policy_free(only);
}

static void test_hostmatch__absent_lists_restrict_nothing_empty_ones_everything(void **state)
{
	struct hm_policy *none = policy(NULL), *null = policy("null"), *empty = policy("{}");
	struct hm_policy *no_names = policy("{\"names\":[]}");

	assert_int_equal(check(NULL, "x.example.com"), HM_ALLOWED);
	assert_int_equal(check(NULL, "*.example.com"), HM_ALLOWED);
	assert_int_equal(check(NULL, "X.example.com"), HM_INVALID);
	assert_int_equal(check(none, "*.example.com"), HM_ALLOWED);
	assert_int_equal(check(null, "x.example.com"), HM_ALLOWED);
	assert_int_equal(check(empty, "x.example.com"), HM_ALLOWED);
	assert_int_equal(check(no_names, "x.example.com"), HM_NOT_ALLOWED);
	assert_int_equal(check(no_names, ""), HM_INVALID);
	hm_policy_free(none);
	hm_policy_free(null);
	hm_policy_free(empty);
	hm_policy_free(no_names);
}

static void test_hostmatch__bad_policies_are_refused_with_the_field(void **state)
{
	static const struct {
		const char *json, *why;
		int rc;
	} bad[] = {
	        {"{\"regex\":\"(\"}", "allowed.hosts.regex: invalid regular expression at offset 1",
	         -EINVAL},
	        {"{\"regex\":[\"a\",7]}", "allowed.hosts.regex must be a string", -EINVAL},
	        {"{\"regex\":\"a\\u0000b\"}", "NUL", -EINVAL},
	        {"{\"names\":\"a.com\"}", "allowed.hosts.names must be an array", -EINVAL},
	        {"{\"names\":[1]}", "allowed.hosts.names[0] is not a string", -EINVAL},
	        {"{\"denyWildcards\":\"yes\"}", "denyWildcards must be a boolean", -EINVAL},
	        {"[]", "allowed.hosts must be an object", -EINVAL},
	};
	struct hm_policy *p = (struct hm_policy *)1;
	struct ll_err err = {{0}};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		json_t *hosts = js(bad[i].json);

		assert_int_equal(hm_policy_from_json(hosts, &p, &err), bad[i].rc);
		assert_null(p);
		if (strstr(err.msg, bad[i].why) == NULL)
			fail_msg("%s: \"%s\" does not say \"%s\"", bad[i].json, err.msg,
			         bad[i].why);
		json_decref(hosts);
	}
}

static void test_hostmatch__list_caps(void **state)
{
	const char *names[HM_NAMES_MAX + 1];
	struct hm_allowed spec = {.names = names, .n_names = HM_NAMES_MAX + 1};
	struct hm_policy *p = NULL;
	json_t *hosts = js("{\"names\":[\"a.com\\u0000.evil\",\"b.com\"]}");

	for (size_t i = 0; i <= HM_NAMES_MAX; i++)
		names[i] = "a.com";
	assert_int_equal(hm_policy_new(&spec, &p, NULL), -E2BIG);
	assert_null(p);
	spec.n_names = HM_NAMES_MAX;
	assert_int_equal(hm_policy_new(&spec, &p, NULL), 0);
	assert_int_equal(check(p, "a.com"), HM_ALLOWED);
	hm_policy_free(p);
	/* a name holding a NUL allows nothing, not what comes before the NUL */
	assert_int_equal(hm_policy_from_json(hosts, &p, NULL), 0);
	assert_int_equal(check(p, "a.com"), HM_NOT_ALLOWED);
	assert_int_equal(check(p, "b.com"), HM_ALLOWED);
	hm_policy_free(p);
	json_decref(hosts);
}

static void test_hostmatch__a_runaway_regex_is_stopped_and_reported(void **state)
{
	struct hm_policy *p = policy("{\"regex\":\"(a|a)+\\\\.a\"}");
	char host[64];
	bool limited = false;

	memset(host, 'a', 40);
	memcpy(host + 40, ".b", 3);
	assert_int_equal(hm_check(p, host, strlen(host), &limited), HM_NOT_ALLOWED);
	assert_true(limited);
	assert_int_equal(hm_check(p, "aa.a", 4, &limited), HM_ALLOWED);
	assert_false(limited);
	hm_policy_free(p);
}

struct overlap_case {
	const char *a, *b;
	bool one_label, any_labels;
};

static const struct overlap_case OVERLAPS[] = {
        {"a.example.com", "a.example.com", true, true},
        {"a.example.com", "b.example.com", false, false},
        {"*.example.com", "a.example.com", true, true},
        {"*.example.com", "a.b.example.com", false, true},
        {"*.example.com", "example.com", false, false},
        {"*.example.com", "*.example.com", true, true},
        {"*.example.com", "*.a.example.com", false, true},
        {"*.example.com", "*.example.org", false, false},
        {"*.example.com", "aexample.com", false, false},
        {"*.example.com", "a.xexample.com", false, false},
        {"*.example.com", "a.example.com.evil", false, false},
        {"*.a.example.com", "b.example.com", false, false},
        {"*.a.example.com", "a.example.com", false, false},
        {"*.com", "example.com", true, true},
        {"*.com", "a.example.com", false, true},
        {"*.com", "*.example.com", false, true},
        {"example.com", "Example.com", false, false}, /* not a host */
        {"", "", false, false},
        {"*.example.com", "*.example.com.", false, false},
        {"*", "a", false, false},
};

static void test_hostmatch__overlap_is_symmetric_under_both_wildcard_meanings(void **state)
{
	for (size_t i = 0; i < sizeof(OVERLAPS) / sizeof(*OVERLAPS); i++) {
		const struct overlap_case *c = &OVERLAPS[i];
		size_t al = strlen(c->a), bl = strlen(c->b);

		if (hm_overlap(c->a, al, c->b, bl, HM_ONE_LABEL) != c->one_label ||
		    hm_overlap(c->b, bl, c->a, al, HM_ONE_LABEL) != c->one_label)
			fail_msg("\"%s\" and \"%s\", one label: want %d", c->a, c->b, c->one_label);
		if (hm_overlap(c->a, al, c->b, bl, HM_ANY_LABELS) != c->any_labels ||
		    hm_overlap(c->b, bl, c->a, al, HM_ANY_LABELS) != c->any_labels)
			fail_msg("\"%s\" and \"%s\", any labels: want %d", c->a, c->b,
			         c->any_labels);
	}
}

static void test_hostmatch__denials_say_what_would_be_accepted(void **state)
{
	struct hm_policy *p = policy("{\"names\":[\"app.acme.com\",\"*.acme.com\"],"
	                             "\"regex\":\"[a-z]+\\\\.acme\\\\.io\"}");
	struct hm_policy *many = policy("{\"names\":[\"a.io\",\"b.io\",\"c.io\",\"d.io\",\"e.io\","
	                                "\"f.io\",\"g.io\",\"h.io\"]}");
	struct hm_policy *regex = policy("{\"regex\":\"x\"}"), *none = policy("{\"names\":[]}");
	char msg[DENIAL_MSG_MAX];

	hm_denial(p, HM_NOT_ALLOWED, "acme", "x.evil.com", 10, msg, sizeof(msg));
	assert_string_equal(msg,
	                    "host \"x.evil.com\" is not allowed for tenant \"acme\" (allowed: "
	                    "app.acme.com, *.acme.com; hosts matching \"[a-z]+\\\\.acme\\\\.io\")");
	hm_denial(many, HM_NOT_ALLOWED, "acme", "x.io", 4, msg, sizeof(msg));
	assert_string_equal(msg, "host \"x.io\" is not allowed for tenant \"acme\" (allowed: a.io, "
	                         "b.io, c.io, d.io, e.io and 3 more)");
	hm_denial(regex, HM_NOT_ALLOWED, "acme", "y", 1, msg, sizeof(msg));
	assert_string_equal(msg, "host \"y\" is not allowed for tenant \"acme\" (allowed: hosts "
	                         "matching \"x\")");
	hm_denial(none, HM_NOT_ALLOWED, "acme", "y", 1, msg, sizeof(msg));
	assert_string_equal(msg, "host \"y\" is not allowed for tenant \"acme\" (allowed: none)");
	hm_denial(p, HM_WILDCARD_DENIED, "acme", "*.acme.com", 10, msg, sizeof(msg));
	assert_string_equal(msg, "wildcard host \"*.acme.com\" is not allowed for tenant \"acme\" "
	                         "(wildcard hosts are denied)");
	hm_denial(p, HM_INVALID, "acme", "Foo.com\n", 8, msg, sizeof(msg));
	assert_string_equal(msg, "host \"Foo.com\\x0a\" is not a valid host name: a lowercase RFC "
	                         "1123 subdomain must consist of lower case alphanumeric "
	                         "characters, '-' or '.', and must start and end with an "
	                         "alphanumeric character");
	hm_denial(p, HM_ALLOWED, "acme", "app.acme.com", 12, msg, sizeof(msg));
	assert_string_equal(msg, "");
	hm_conflict("a.example.com", 13, "*.example.com", 13, "globex", msg, sizeof(msg));
	assert_string_equal(msg, "host \"a.example.com\" overlaps \"*.example.com\", a host of "
	                         "tenant \"globex\"");
	hm_policy_free(p);
	hm_policy_free(many);
	hm_policy_free(regex);
	hm_policy_free(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_hostmatch__hosts_are_rfc1123_names_or_one_leading_wildcard),
	        cmocka_unit_test(test_hostmatch__names_are_compared_literally),
	        cmocka_unit_test(test_hostmatch__a_regex_matches_the_whole_host),
	        cmocka_unit_test(test_hostmatch__deny_wildcards_wins_over_everything),
	        cmocka_unit_test(
	                test_hostmatch__absent_lists_restrict_nothing_empty_ones_everything),
	        cmocka_unit_test(test_hostmatch__bad_policies_are_refused_with_the_field),
	        cmocka_unit_test(test_hostmatch__list_caps),
	        cmocka_unit_test(test_hostmatch__a_runaway_regex_is_stopped_and_reported),
	        cmocka_unit_test(test_hostmatch__overlap_is_symmetric_under_both_wildcard_meanings),
	        cmocka_unit_test(test_hostmatch__denials_say_what_would_be_accepted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
