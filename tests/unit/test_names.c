/* test_names.c - DNS labels, label values, joined names and collision detection. */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "tenancy/names.h"

/*
 * Independent validators: the regular expressions apimachinery uses (validation.IsDNS1123Label
 * and IsValidLabelValue), run by the C library's regex engine rather than names.c's loops.
 */
#define DNS_RE   "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#define VALUE_RE "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"

static bool regex_matches(const char *re, const char *s)
{
	regex_t r;
	int rc;

	if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB) != 0)
		fail_msg("regcomp(%s)", re);
	rc = regexec(&r, s, 0, NULL, 0);
	regfree(&r);
	return rc == 0;
}

static void assert_dns_label(const char *s, size_t max)
{
	if (strlen(s) > max || !regex_matches(DNS_RE, s))
		fail_msg("\"%s\" is not a DNS label of at most %zu characters", s, max);
}

static void assert_label_value(const char *s)
{
	if (strlen(s) > NAMES_MAX || !regex_matches(VALUE_RE, s))
		fail_msg("\"%s\" is not a label value", s);
}

static void check_dns(const char *raw, size_t max, const char *want)
{
	char out[NAMES_BUF], again[NAMES_BUF];

	assert_int_equal(names_dns_label(raw, max, out), 0);
	assert_string_equal(out, want);
	assert_dns_label(out, max);
	assert_int_equal(names_dns_label(raw, max, again), 0);
	assert_string_equal(again, out);
}

static void check_value(const char *raw, const char *want)
{
	char out[NAMES_BUF], again[NAMES_BUF];

	assert_int_equal(names_label_value(raw, out), 0);
	assert_string_equal(out, want);
	assert_label_value(out);
	assert_int_equal(names_label_value(raw, again), 0);
	assert_string_equal(again, out);
}

static void check_join(const char *a, const char *b, const char *suffix, const char *want)
{
	char out[NAMES_BUF], again[NAMES_BUF];

	assert_int_equal(names_join(a, b, suffix, out), 0);
	assert_string_equal(out, want);
	assert_dns_label(out, NAMES_MAX);
	assert_int_equal(names_join(a, b, suffix, again), 0);
	assert_string_equal(again, out);
}

static void fill(char *s, char c, size_t n)
{
	memset(s, c, n);
	s[n] = '\0';
}

static void test_names__valid_labels_are_unchanged(void **state)
{
	char s63[64];

	check_dns("alice", NAMES_MAX, "alice");
	check_dns("a", NAMES_MAX, "a");
	check_dns("0day", NAMES_MAX, "0day");
	check_dns("team-a", NAMES_MAX, "team-a");
	check_dns("xn--bcher-kva", NAMES_MAX, "xn--bcher-kva");
	fill(s63, 'x', 63);
	check_dns(s63, NAMES_MAX, s63);
	check_dns("abcdefghij", NAMES_MIN_MAX, "abcdefghij");
}

static void test_names__changed_labels_get_the_raw_hash(void **state)
{
	/* Hashes: the first 8 hex digits of `printf '<raw>' | sha256sum`. */
	check_dns("Alice", NAMES_MAX, "alice-3bc51062");
	check_dns("a@b.com", NAMES_MAX, "a-b-com-fb98d44a");
	check_dns("system:serviceaccount:ns:sa", NAMES_MAX, "system-serviceaccount-ns-sa-6c01eca2");
	check_dns("Jos\xc3\xa9", NAMES_MAX, "jos-24c2ab65");
	/* Trimmed ends count as a change too. */
	check_dns("-alice-", NAMES_MAX, "alice-8bbe7cdb");
}

static void test_names__nothing_usable_gives_the_hash_alone(void **state)
{
	check_dns("", NAMES_MAX, "e3b0c442");
	check_dns("\xe6\x97\xa5\xe6\x9c\xac", NAMES_MAX, "cf2abf0c");
	check_dns("@@@---", NAMES_MAX, "289a7c10");
	check_value("@@@---", "289a7c10");
}

static void test_names__long_names_are_cut_to_max(void **state)
{
	char raw[301], want[NAMES_BUF];

	fill(raw, 'a', 300);
	fill(want, 'a', 54);
	memcpy(want + 54, "-9835fa6b", 10);
	check_dns(raw, NAMES_MAX, want);
	check_value(raw, want);

	fill(want, 'a', 31);
	memcpy(want + 31, "-9835fa6b", 10);
	check_dns(raw, 40, want);

	/* A valid label longer than the caller's max is cut as well. */
	fill(raw, 'a', 63);
	fill(want, 'a', 53);
	assert_int_equal(names_dns_label(raw, 62, want), 0);
	assert_int_equal(strlen(want), 62);
	assert_memory_equal(want, raw, 53);
	assert_dns_label(want, 62);
}

static void test_names__a_cut_never_leaves_a_dash_before_the_hash(void **state)
{
	char raw[128], out[NAMES_BUF];

	/* Sanitised, this is 53 'a', '-', 'b'...: the 54-character cut ends on the '-'. */
	fill(raw, 'a', 53);
	memcpy(raw + 53, "@bbbbbbbbbb", 12);
	assert_int_equal(names_dns_label(raw, NAMES_MAX, out), 0);
	assert_int_equal(strlen(out), 53 + 1 + NAMES_HASH_LEN);
	assert_int_equal(out[52], 'a');
	assert_int_equal(out[53], '-');
	assert_int_not_equal(out[54], '-');
	assert_dns_label(out, NAMES_MAX);
}

static void test_names__distinct_raw_names_get_distinct_labels(void **state)
{
	char a[NAMES_BUF], b[NAMES_BUF], raw[301];

	/* Same sanitised text, different raw input. */
	assert_int_equal(names_dns_label("a@b.com", NAMES_MAX, a), 0);
	assert_int_equal(names_dns_label("a.b.com", NAMES_MAX, b), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(names_dns_label("Alice", NAMES_MAX, a), 0);
	assert_int_equal(names_dns_label("ALICE", NAMES_MAX, b), 0);
	assert_string_not_equal(a, b);
	/* Long names that differ only past the cut. */
	fill(raw, 'u', 300);
	assert_int_equal(names_dns_label(raw, NAMES_MAX, a), 0);
	raw[299] = 'v';
	assert_int_equal(names_dns_label(raw, NAMES_MAX, b), 0);
	assert_string_not_equal(a, b);
}

static void test_names__dns_label_rejects_bad_arguments(void **state)
{
	char out[NAMES_BUF];

	assert_int_equal(names_dns_label(NULL, NAMES_MAX, out), -EINVAL);
	assert_string_equal(out, "");
	assert_int_equal(names_dns_label("a", NAMES_MIN_MAX - 1, out), -EINVAL);
	assert_int_equal(names_dns_label("a", NAMES_MAX + 1, out), -EINVAL);
	assert_int_equal(names_dns_label("a", 0, out), -EINVAL);
}

static void test_names__label_values(void **state)
{
	char out[NAMES_BUF];

	check_value("", "");
	check_value("alice", "alice");
	check_value("Alice", "Alice");
	check_value("a_b.c-d", "a_b.c-d");
	check_value("First.Last@x.io", "First.Last-x.io-df3a94e8");
	check_value("a@b.com", "a-b.com-fb98d44a");
	check_value("system:serviceaccount:ns:sa", "system-serviceaccount-ns-sa-6c01eca2");
	check_value("Jos\xc3\xa9", "Jos-24c2ab65");
	/* A run holding punctuation becomes one '-', and the ends are trimmed. */
	assert_int_equal(names_label_value("a.@b", out), 0);
	assert_memory_equal(out, "a-b-", 4);
	assert_label_value(out);
	assert_int_equal(names_label_value("_a_", out), 0);
	assert_memory_equal(out, "a-", 2);
	assert_int_equal(strlen(out), 2 + NAMES_HASH_LEN);
	assert_int_equal(names_label_value(NULL, out), -EINVAL);
}

static void test_names__join_keeps_valid_parts_plain(void **state)
{
	check_join("acme", "dev", NULL, "acme-dev");
	check_join("acme", "dev", "", "acme-dev");
	check_join("acme", "alice", "sandbox", "acme-alice-sandbox");
	/* The ambiguity names_claims_check() exists for. */
	check_join("a", "b-c", NULL, "a-b-c");
	check_join("a-b", "c", NULL, "a-b-c");
}

static void test_names__join_hashes_the_raw_parts_when_anything_changes(void **state)
{
	char x[NAMES_BUF], y[NAMES_BUF];

	/* printf 'acme\0a@b.com\0sandbox\0' | sha256sum */
	check_join("acme", "a@b.com", "sandbox", "acme-a-b-com-sandbox-7f0fa457");
	/* printf 'Acme\0dev\0' | sha256sum */
	check_join("Acme", "dev", NULL, "acme-dev-406cb198");
	/* Same sanitised parts, different raw parts. */
	assert_int_equal(names_join("Acme", "x", NULL, x), 0);
	assert_int_equal(names_join("acme", "X", NULL, y), 0);
	assert_string_not_equal(x, y);
	assert_int_equal(names_join("a@b", "c", NULL, x), 0);
	assert_int_equal(names_join("a", "b@c", NULL, y), 0);
	assert_string_not_equal(x, y);
	/* Empty parts are dropped, not joined as "--". */
	assert_int_equal(names_join("acme", "", "sandbox", x), 0);
	assert_memory_equal(x, "acme-sandbox-", 13);
	assert_dns_label(x, NAMES_MAX);
	assert_int_equal(names_join("", "@@", NULL, x), 0);
	assert_int_equal(strlen(x), NAMES_HASH_LEN);
	assert_dns_label(x, NAMES_MAX);
	assert_int_equal(names_join(NULL, "b", NULL, x), -EINVAL);
	assert_int_equal(names_join("a", NULL, NULL, x), -EINVAL);
}

static void test_names__long_sandbox_names_fit_and_keep_the_suffix(void **state)
{
	char tenant[101], user[201], out[NAMES_BUF], other[NAMES_BUF];

	fill(tenant, 't', 100);
	fill(user, 'u', 200);
	assert_int_equal(names_join(tenant, user, "sandbox", out), 0);
	assert_dns_label(out, NAMES_MAX);
	assert_int_equal(strlen(out), NAMES_MAX);
	assert_non_null(strstr(out, "-sandbox-"));
	/* Both long parts keep a fair share. */
	assert_non_null(strstr(out, "tttttttttttttttttttt-uuuuuuuuuuuuuuuuuuuu"));

	/* A short tenant keeps all of its name. */
	assert_int_equal(names_join("acme", user, "sandbox", out), 0);
	assert_dns_label(out, NAMES_MAX);
	assert_memory_equal(out, "acme-uuu", 8);

	/* A valid but too long join is cut and hashed. */
	fill(tenant, 't', 40);
	fill(user, 'u', 40);
	assert_int_equal(names_join(tenant, user, NULL, out), 0);
	assert_dns_label(out, NAMES_MAX);
	user[39] = 'v';
	assert_int_equal(names_join(tenant, user, NULL, other), 0);
	assert_string_not_equal(out, other);

	/* A user name with an e-mail address. */
	assert_int_equal(names_join("a-rather-long-tenant-name-for-testing",
	                            "Someone.With.A.Long.Name@example.com", "sandbox", out),
	                 0);
	assert_dns_label(out, NAMES_MAX);
}

static void test_names__every_output_is_valid(void **state)
{
	static const char *const inputs[] = {
	        "",
	        "-",
	        "--",
	        ".",
	        "_",
	        "a",
	        "A",
	        "0",
	        "a-",
	        "-a",
	        "a.",
	        ".a",
	        "a..b",
	        "a--b",
	        "a@b.com",
	        "system:serviceaccount:ns:sa",
	        "system:serviceaccount:kube-system:default",
	        "oidc:https://issuer.example.com#1234",
	        "\xff\xfe",
	        "\x01\x02\x03",
	        "日本語の名前",
	        "Zoë Straße",
	        "   spaced   out   ",
	        "MiXeD-CaSe_123",
	        "1.2.3.4",
	        "x_y_z",
	        "abcdefghijklmnopqrstuvwxyz-abcdefghijklmnopqrstuvwxyz-abcdefghijkl",
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZ.ABCDEFGHIJKLMNOPQRSTUVWXYZ.ABCDEFGHIJKL",
	};
	static const size_t maxes[] = {NAMES_MIN_MAX, 11, 20, 53, 62, NAMES_MAX};
	size_t n = sizeof(inputs) / sizeof(inputs[0]), i, j, k;
	char out[NAMES_BUF];

	for (i = 0; i < n; i++) {
		for (k = 0; k < sizeof(maxes) / sizeof(maxes[0]); k++) {
			assert_int_equal(names_dns_label(inputs[i], maxes[k], out), 0);
			assert_dns_label(out, maxes[k]);
		}
		assert_int_equal(names_label_value(inputs[i], out), 0);
		assert_label_value(out);
		assert_true((out[0] == '\0') == (inputs[i][0] == '\0'));
		for (j = 0; j < n; j++) {
			assert_int_equal(names_join(inputs[i], inputs[j], NULL, out), 0);
			assert_dns_label(out, NAMES_MAX);
			assert_int_equal(names_join(inputs[i], inputs[j], inputs[(i + j) % n], out),
			                 0);
			assert_dns_label(out, NAMES_MAX);
		}
	}
}

static void test_names__claims_report_the_tenant_prefix_ambiguity(void **state)
{
	struct names_claim c[] = {
	        {.owner = "a", .prefix = "a", .name = "b-c"},
	        {.owner = "acme", .prefix = "acme", .name = "dev"},
	        {.owner = "a-b", .prefix = "a-b", .name = "c"},
	};
	size_t ncolliding = 99;

	assert_int_equal(names_claims_check(c, 3, &ncolliding, NULL), 0);
	assert_int_equal(ncolliding, 2);
	assert_string_equal(c[0].final, "a-b-c");
	assert_string_equal(c[2].final, "a-b-c");
	assert_string_equal(c[1].final, "acme-dev");
	/* Reported, not renamed. */
	assert_int_equal(c[0].collides_with, 2);
	assert_int_equal(c[2].collides_with, 0);
	assert_true(c[1].collides_with == NAMES_NO_COLLISION);
}

static void test_names__claims_final_names_match_the_functions(void **state)
{
	struct names_claim c[] = {
	        {.owner = "acme", .prefix = "acme", .name = "a@b.com", .suffix = "sandbox"},
	        {.owner = "acme", .name = "Shared"},
	        {.owner = "acme", .prefix = "", .name = "x", .suffix = ""},
	        {.owner = NULL, .name = "y", .suffix = "sandbox"},
	};
	char want[NAMES_BUF];
	size_t ncolliding = 99;

	assert_int_equal(names_claims_check(c, 4, &ncolliding, NULL), 0);
	assert_int_equal(ncolliding, 0);
	assert_int_equal(names_join("acme", "a@b.com", "sandbox", want), 0);
	assert_string_equal(c[0].final, want);
	assert_int_equal(names_dns_label("Shared", NAMES_MAX, want), 0);
	assert_string_equal(c[1].final, want);
	assert_string_equal(c[2].final, "x");
	assert_string_equal(c[3].final, "y-sandbox");
}

static void test_names__claims_same_request_twice_is_not_a_collision(void **state)
{
	struct names_claim c[] = {
	        {.owner = "acme", .prefix = "acme", .name = "dev"},
	        {.owner = "acme", .prefix = "acme", .name = "dev", .suffix = ""},
	};
	size_t ncolliding = 99;

	assert_int_equal(names_claims_check(c, 2, &ncolliding, NULL), 0);
	assert_int_equal(ncolliding, 0);
	assert_true(c[0].collides_with == NAMES_NO_COLLISION);
	assert_true(c[1].collides_with == NAMES_NO_COLLISION);
}

static void test_names__claims_detect_every_kind_of_clash(void **state)
{
	struct names_claim c[] = {
	        /* Two owners want the same unprefixed namespace. */
	        {.owner = "t1", .name = "shared"},
	        {.owner = "t2", .name = "shared"},
	        /* One owner asks for a sandbox and a prefixed namespace with the same name. */
	        {.owner = "acme", .prefix = "acme", .name = "alice", .suffix = "sandbox"},
	        {.owner = "acme", .prefix = "acme", .name = "alice-sandbox"},
	        /* Unrelated. */
	        {.owner = "t3", .name = "mine"},
	        /* A repeated request and a third claimant for "shared". */
	        {.owner = "t2", .name = "shared"},
	        {.owner = "t4", .name = "shared"},
	};
	size_t ncolliding = 0;

	assert_int_equal(names_claims_check(c, 7, &ncolliding, NULL), 0);
	assert_int_equal(ncolliding, 6);
	assert_int_equal(c[0].collides_with, 1);
	assert_int_equal(c[1].collides_with, 0);
	assert_int_equal(c[5].collides_with, 0);
	assert_int_equal(c[6].collides_with, 0);
	assert_int_equal(c[2].collides_with, 3);
	assert_int_equal(c[3].collides_with, 2);
	assert_true(c[4].collides_with == NAMES_NO_COLLISION);
	assert_string_equal(c[2].final, "acme-alice-sandbox");
	assert_string_equal(c[3].final, "acme-alice-sandbox");
}

static void test_names__claims_reject_a_missing_name(void **state)
{
	struct names_claim c[] = {
	        {.owner = "a", .name = "ok"},
	        {.owner = "b", .name = NULL},
	};
	struct ll_err err = {{0}};
	size_t ncolliding = 99;

	assert_int_equal(names_claims_check(c, 2, &ncolliding, &err), -EINVAL);
	assert_int_equal(ncolliding, 0);
	assert_non_null(strstr(err.msg, "claim 1"));
	assert_int_equal(names_claims_check(NULL, 0, NULL, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_names__valid_labels_are_unchanged),
	        cmocka_unit_test(test_names__changed_labels_get_the_raw_hash),
	        cmocka_unit_test(test_names__nothing_usable_gives_the_hash_alone),
	        cmocka_unit_test(test_names__long_names_are_cut_to_max),
	        cmocka_unit_test(test_names__a_cut_never_leaves_a_dash_before_the_hash),
	        cmocka_unit_test(test_names__distinct_raw_names_get_distinct_labels),
	        cmocka_unit_test(test_names__dns_label_rejects_bad_arguments),
	        cmocka_unit_test(test_names__label_values),
	        cmocka_unit_test(test_names__join_keeps_valid_parts_plain),
	        cmocka_unit_test(test_names__join_hashes_the_raw_parts_when_anything_changes),
	        cmocka_unit_test(test_names__long_sandbox_names_fit_and_keep_the_suffix),
	        cmocka_unit_test(test_names__every_output_is_valid),
	        cmocka_unit_test(test_names__claims_report_the_tenant_prefix_ambiguity),
	        cmocka_unit_test(test_names__claims_final_names_match_the_functions),
	        cmocka_unit_test(test_names__claims_same_request_twice_is_not_a_collision),
	        cmocka_unit_test(test_names__claims_detect_every_kind_of_clash),
	        cmocka_unit_test(test_names__claims_reject_a_missing_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
