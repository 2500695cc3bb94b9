/* Unit tests for Kubernetes name rules (lib/kube/k8sname.c), case by case as apimachinery. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "kube/k8sname.h"

#define OK(fn, s)  assert_null(fn(s, strlen(s)))
#define BAD(fn, s) assert_non_null(fn(s, strlen(s)))
#define A63        "a23456789012345678901234567890123456789012345678901234567890123"
#define A64        A63 "4"

static void test_k8sname__dns_labels(void **state)
{
	OK(k8s_dns_label_problem, "a");
	OK(k8s_dns_label_problem, "a-0");
	OK(k8s_dns_label_problem, "0a");
	OK(k8s_dns_label_problem, A63);
	BAD(k8s_dns_label_problem, A64);
	BAD(k8s_dns_label_problem, "");
	BAD(k8s_dns_label_problem, "-a");
	BAD(k8s_dns_label_problem, "a-");
	BAD(k8s_dns_label_problem, "A");
	BAD(k8s_dns_label_problem, "a.b");
	BAD(k8s_dns_label_problem, "a_b");
	assert_true(k8s_is_dns_label("tenant-dev"));
	assert_false(k8s_is_dns_label(A64 "5"));
	/* a length, not a NUL, ends the input */
	assert_null(k8s_dns_label_problem("ab!", 2));
}

static void test_k8sname__dns_subdomains_bound_the_whole_not_each_label(void **state)
{
	char long_name[300];

	OK(k8s_dns_subdomain_problem, "example.com");
	OK(k8s_dns_subdomain_problem, "a");
	/* apimachinery's IsDNS1123Subdomain accepts a 64-character label inside a subdomain */
	OK(k8s_dns_subdomain_problem, A64 ".com");
	BAD(k8s_dns_subdomain_problem, "");
	BAD(k8s_dns_subdomain_problem, "a..b");
	BAD(k8s_dns_subdomain_problem, ".a");
	BAD(k8s_dns_subdomain_problem, "a.");
	BAD(k8s_dns_subdomain_problem, "a.-b");
	BAD(k8s_dns_subdomain_problem, "Example.com");
	memset(long_name, 'a', 253);
	long_name[253] = '\0';
	OK(k8s_dns_subdomain_problem, long_name);
	long_name[253] = 'a';
	long_name[254] = '\0';
	assert_string_equal(k8s_dns_subdomain_problem(long_name, 254),
	                    "must be no more than 253 characters");
}

static void test_k8sname__label_keys(void **state)
{
	OK(k8s_label_key_problem, "app");
	OK(k8s_label_key_problem, "example.com/My_Name-1.x");
	OK(k8s_label_key_problem, "app.kubernetes.io/managed-by");
	OK(k8s_label_key_problem, A63);
	assert_string_equal(k8s_label_key_problem(A64, 64),
	                    "name part must be no more than 63 characters");
	assert_string_equal(k8s_label_key_problem("/a", 2), "prefix part must be non-empty");
	assert_string_equal(k8s_label_key_problem("a/", 2), "name part must be non-empty");
	assert_non_null(strstr(k8s_label_key_problem("a/b/c", 5), "a qualified name must be"));
	assert_non_null(strstr(k8s_label_key_problem("Upper.io/x", 10),
	                       "prefix part a lowercase RFC 1123 subdomain"));
	BAD(k8s_label_key_problem, "-a");
	BAD(k8s_label_key_problem, "a-");
	BAD(k8s_label_key_problem, "a b");
	BAD(k8s_label_key_problem, "");
	BAD(k8s_label_key_problem, "ключ");
}

static void test_k8sname__label_values(void **state)
{
	OK(k8s_label_value_problem, "");
	OK(k8s_label_value_problem, "Val_1.-z");
	OK(k8s_label_value_problem, A63);
	assert_string_equal(k8s_label_value_problem(A64, 64), "must be no more than 63 characters");
	BAD(k8s_label_value_problem, "-b");
	BAD(k8s_label_value_problem, "b-");
	BAD(k8s_label_value_problem, "a@b");
	BAD(k8s_label_value_problem, "a/b");
	assert_true(k8s_is_label_value(""));
	assert_false(k8s_is_label_value("x@y"));
}

static void test_k8sname__path_segments(void **state)
{
	OK(k8s_path_segment_problem, "system:aggregate-to-admin");
	OK(k8s_path_segment_problem, "...");
	BAD(k8s_path_segment_problem, ".");
	BAD(k8s_path_segment_problem, "..");
	BAD(k8s_path_segment_problem, "a/b");
	BAD(k8s_path_segment_problem, "a%2fb");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_k8sname__dns_labels),
	        cmocka_unit_test(test_k8sname__dns_subdomains_bound_the_whole_not_each_label),
	        cmocka_unit_test(test_k8sname__label_keys),
	        cmocka_unit_test(test_k8sname__label_values),
	        cmocka_unit_test(test_k8sname__path_segments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
