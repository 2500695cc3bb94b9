/*
 * test_nsmap.c - a tenant's namespaces under shown names (src/proxy/nsmap.h): prefixes with
 * their separator, ambiguity, the one-to-one mapping, new names and their length, and message
 * text converted by whole names only.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "proxy/nsmap.h"

static void test_shown_names(void **state)
{
	static const char *const full[] = {
	        "acme-dev", "acme-alice-sandbox", "legacy", "acme-x", "acmex-y", "acme-dev"};
	struct px_nsmap *m = px_nsmap_new("acme", full, 6);

	(void)state;
	assert_int_equal(px_nsmap_len(m), 5); /* acme-dev once */
	assert_string_equal(px_nsmap_shown(m, "acme-dev"), "dev");
	assert_string_equal(px_nsmap_shown(m, "acme-alice-sandbox"), "alice-sandbox");
	assert_string_equal(px_nsmap_shown(m, "legacy"), "legacy");
	/* the prefix includes its separator */
	assert_string_equal(px_nsmap_shown(m, "acmex-y"), "acmex-y");
	assert_string_equal(px_nsmap_full(m, "dev"), "acme-dev");
	assert_string_equal(px_nsmap_full(m, "x"), "acme-x");
	assert_null(px_nsmap_full(m, "acme-dev")); /* shown as dev only */
	assert_null(px_nsmap_shown(m, "globex-dev"));
	assert_null(px_nsmap_full(m, "y"));
	px_nsmap_free(m);
}

/* "dev" adopted and "acme-dev" made: the prefixed one keeps its full name. */
static void test_ambiguous(void **state)
{
	static const char *const full[] = {"acme-dev", "dev", "acme-acme-x", "acme-x"};
	struct px_nsmap *m = px_nsmap_new("acme", full, 4);
	const char *seen[4];

	(void)state;
	assert_string_equal(px_nsmap_shown(m, "dev"), "dev");
	assert_string_equal(px_nsmap_shown(m, "acme-dev"), "acme-dev");
	assert_string_equal(px_nsmap_full(m, "dev"), "dev");
	assert_string_equal(px_nsmap_full(m, "acme-dev"), "acme-dev");
	/* acme-acme-x strips to acme-x, a full name of the table: it keeps its own */
	assert_string_equal(px_nsmap_shown(m, "acme-acme-x"), "acme-acme-x");
	assert_string_equal(px_nsmap_shown(m, "acme-x"), "x");
	/* one to one: every shown name maps back to its own full name, all distinct */
	for (size_t i = 0; i < px_nsmap_len(m); i++) {
		const char *full_i = px_nsmap_at(m, i, &seen[i]);

		assert_string_equal(px_nsmap_full(m, seen[i]), full_i);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(seen[i], seen[j]);
	}
	px_nsmap_free(m);
}

static void test_new_full(void **state)
{
	struct px_nsmap *m = px_nsmap_new("acme", NULL, 0);
	char out[128];
	char long_name[64];

	(void)state;
	assert_int_equal(px_nsmap_new_full(m, "foo", out, sizeof(out)), 0);
	assert_string_equal(out, "acme-foo");
	memset(long_name, 'a', 58);
	long_name[58] = '\0'; /* acme- + 58 = 63 */
	assert_int_equal(px_nsmap_new_full(m, long_name, out, sizeof(out)), 0);
	long_name[58] = 'a';
	long_name[59] = '\0';
	assert_int_equal(px_nsmap_new_full(m, long_name, out, sizeof(out)), -ENAMETOOLONG);
	assert_int_equal(px_nsmap_new_full(m, "Foo", out, sizeof(out)), -EINVAL);
	assert_int_equal(px_nsmap_new_full(m, "a/b", out, sizeof(out)), -EINVAL);
	px_nsmap_free(m);
}

static void check_text(const struct px_nsmap *m, const char *in, const char *want)
{
	struct buf out = BUF_INIT(1 << 16);

	assert_int_equal(px_nsmap_text(m, in, &out), 0);
	assert_string_equal(buf_cstr(&out), want);
	buf_release(&out);
}

static void test_text(void **state)
{
	static const char *const full[] = {"acme-dev", "acme-prod"};
	struct px_nsmap *m = px_nsmap_new("acme", full, 2);

	(void)state;
	check_text(m, "configmaps \"x\" is forbidden: in the namespace \"acme-dev\"",
	           "configmaps \"x\" is forbidden: in the namespace \"dev\"");
	check_text(m, "acme-dev, acme-prod.", "dev, prod.");
	/* whole names only: never an "acme-" substring of something else */
	check_text(m, "acme-devx acme-dev-2 xacme-dev acme-test",
	           "acme-devx acme-dev-2 xacme-dev "
	           "acme-test");
	check_text(m, "web.acme-dev.svc", "web.acme-dev.svc");
	check_text(m, "", "");
	check_text(m, "acme-dev", "dev");
	px_nsmap_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_shown_names),
	        cmocka_unit_test(test_ambiguous),
	        cmocka_unit_test(test_new_full),
	        cmocka_unit_test(test_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
