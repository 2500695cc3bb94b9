/*
 * test_selectors.c - list and watch selectors from a tenant's view to upstream
 * (src/proxy/selectors.h): terms on kubernetes.io/metadata.name and on namespace fields
 * converted, other terms kept as written, Go's grammars (the label selector's answers checked
 * against lib/kube/selector.h, an independent parser), and queries read as Go reads them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "kube/selector.h"
#include "proxy/nsmap.h"
#include "proxy/selectors.h"

static const char *const FULL[] = {"acme-dev", "acme-prod", "legacy"};

static struct px_nsmap *acme(void)
{
	return px_nsmap_new("acme", FULL, 3);
}

/* The label selector @in converted; NULL when refused. */
static char *labels(const struct px_nsmap *m, const char *in)
{
	static char got[1024];
	struct buf out = BUF_INIT(4096);
	char why[256];
	int rc = px_label_selector_view(m, in, &out, why, sizeof(why));

	snprintf(got, sizeof(got), "%s", buf_cstr(&out));
	buf_release(&out);
	if (rc == -EINVAL)
		assert_true(why[0] != '\0');
	return rc == 0 ? got : NULL;
}

static void test_label_terms_on_the_name_are_converted(void **state)
{
	struct px_nsmap *m = acme();

	(void)state;
	assert_string_equal(labels(m, "kubernetes.io/metadata.name=dev"),
	                    "kubernetes.io/metadata.name=acme-dev");
	assert_string_equal(labels(m, " kubernetes.io/metadata.name == prod "),
	                    "kubernetes.io/metadata.name==acme-prod");
	assert_string_equal(labels(m, "kubernetes.io/metadata.name!=legacy"),
	                    "kubernetes.io/metadata.name!=legacy");
	assert_string_equal(labels(m, "kubernetes.io/metadata.name in (dev, prod)"),
	                    "kubernetes.io/metadata.name in (acme-dev,acme-prod)");
	assert_string_equal(labels(m, "kubernetes.io/metadata.name notin(dev)"),
	                    "kubernetes.io/metadata.name notin (acme-dev)");
	/* not the tenant's: a name no namespace has, never another tenant's */
	assert_string_equal(labels(m, "kubernetes.io/metadata.name=globex-dev"),
	                    "kubernetes.io/metadata.name=" PX_NO_NAMESPACE);
	assert_string_equal(labels(m, "kubernetes.io/metadata.name=acme-dev"),
	                    "kubernetes.io/metadata.name=" PX_NO_NAMESPACE);
	assert_string_equal(labels(m, "kubernetes.io/metadata.name in (dev,,)"),
	                    "kubernetes.io/metadata.name in (acme-dev," PX_NO_NAMESPACE
	                    "," PX_NO_NAMESPACE ")");
	assert_string_equal(labels(m, "kubernetes.io/metadata.name="),
	                    "kubernetes.io/metadata.name=" PX_NO_NAMESPACE);
	/* no value to convert */
	assert_string_equal(labels(m, "kubernetes.io/metadata.name,!kubernetes.io/metadata.name"),
	                    "kubernetes.io/metadata.name,!kubernetes.io/metadata.name");
	assert_null(labels(m, "kubernetes.io/metadata.name>5"));
	px_nsmap_free(m);
}

static void test_other_label_terms_are_kept_as_written(void **state)
{
	struct px_nsmap *m = acme();

	(void)state;
	assert_string_equal(labels(m, ""), "");
	assert_string_equal(labels(m, "   "), "");
	assert_string_equal(labels(m, "app=dev,tier in ( a , b ),!x,y,n>1"),
	                    "app=dev,tier in ( a , b ),!x,y,n>1");
	assert_string_equal(labels(m, "app=web, kubernetes.io/metadata.name=dev"),
	                    "app=web,kubernetes.io/metadata.name=acme-dev");
	/* "in" and "notin" are identifiers where a key or value stands */
	assert_string_equal(labels(m, "in in (in),notin=notin"), "in in (in),notin=notin");
	assert_string_equal(labels(m, "kubernetes.io/metadata.name in (in)"),
	                    "kubernetes.io/metadata.name in (" PX_NO_NAMESPACE ")");
	px_nsmap_free(m);
}

static void test_label_selectors_that_do_not_parse_are_refused(void **state)
{
	static const char *const bad[] = {"a in (b",    "a in b", "=x",    "a,",         ",a",
	                                  "a b",        "!a=b",   "a=(b)", "a in (b c)", "a notin",
	                                  "!",          "a=b=c",  "a==,",  "a in (b,=)", "(",
	                                  "a in (b),,", "a=b,",   "a!b",   "a in ((b))"};
	struct px_nsmap *m = acme();

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (labels(m, bad[i]))
			fail_msg("\"%s\" is taken, as \"%s\"", bad[i], labels(m, bad[i]));
	px_nsmap_free(m);
}

/* Labels {kubernetes.io/metadata.name: @name} as JSON. */
static json_t *named(const char *name)
{
	return json_pack("{s:s, s:s}", "kubernetes.io/metadata.name", name, "team", "a");
}

/*
 * Against lib/kube/selector.h: whatever it parses, the converted selector parses too, and
 * matches each of the tenant's namespaces under its upstream name exactly when the caller's
 * matches it under its shown name.
 */
static void test_converted_selectors_match_the_same_namespaces(void **state)
{
	static const char *const sels[] = {
	        "kubernetes.io/metadata.name=dev",
	        "kubernetes.io/metadata.name!=dev",
	        "kubernetes.io/metadata.name in (dev,legacy,nope)",
	        "kubernetes.io/metadata.name notin (prod,acme-prod)",
	        "kubernetes.io/metadata.name,team=a",
	        "!kubernetes.io/metadata.name",
	        "team in (a,b),kubernetes.io/metadata.name==prod",
	        "kubernetes.io/metadata.name in (acme-dev)",
	        "kubernetes.io/metadata.name!=globex-dev",
	};
	struct px_nsmap *m = acme();
	struct ll_err err = {{0}};

	(void)state;
	for (size_t i = 0; i < sizeof(sels) / sizeof(sels[0]); i++) {
		struct sel *in = NULL, *out = NULL;
		const char *conv = labels(m, sels[i]);

		assert_non_null(conv);
		assert_int_equal(sel_parse(sels[i], &in, &err), 0);
		if (sel_parse(conv, &out, &err) != 0)
			fail_msg("%s: %s does not parse: %s", sels[i], conv, err.msg);
		for (size_t k = 0; k < px_nsmap_len(m); k++) {
			const char *shown, *full = px_nsmap_at(m, k, &shown);
			json_t *as_shown = named(shown), *as_full = named(full);

			if (sel_matches(in, as_shown) != sel_matches(out, as_full))
				fail_msg("%s (as %s) and namespace %s disagree", sels[i], conv,
				         shown);
			json_decref(as_shown);
			json_decref(as_full);
		}
		sel_free(in);
		sel_free(out);
	}
	px_nsmap_free(m);
}

static char *fields(const struct px_nsmap *m, const char *in, const char *const *names)
{
	static char got[1024];
	struct buf out = BUF_INIT(4096);

	assert_int_equal(px_field_selector_view(m, in, names, &out), 0);
	snprintf(got, sizeof(got), "%s", buf_cstr(&out));
	buf_release(&out);
	return got;
}

static void test_field_selectors(void **state)
{
	static const char *const ns[] = {"metadata.namespace", "involvedObject.namespace", NULL};
	struct px_nsmap *m = acme();

	(void)state;
	assert_string_equal(fields(m, "metadata.namespace=dev", ns), "metadata.namespace=acme-dev");
	assert_string_equal(fields(m, "involvedObject.namespace==prod,reason=Pulled", ns),
	                    "involvedObject.namespace==acme-prod,reason=Pulled");
	assert_string_equal(fields(m, "metadata.namespace!=globex-dev", ns),
	                    "metadata.namespace!=" PX_NO_NAMESPACE);
	assert_string_equal(fields(m, "metadata.namespace=", ns),
	                    "metadata.namespace=" PX_NO_NAMESPACE);
	/* escapes: the ',' inside a value does not split it; bad escapes are Go's to refuse */
	assert_string_equal(
	        fields(m, "metadata.name=a\\,metadata.namespace=x,metadata.namespace=dev", ns),
	        "metadata.name=a\\,metadata.namespace=x,metadata.namespace=acme-dev");
	assert_string_equal(fields(m, "metadata.namespace=d\\ev", ns), "metadata.namespace=d\\ev");
	assert_string_equal(fields(m, "metadata.namespace=dev\\", ns), "metadata.namespace=dev\\");
	assert_string_equal(fields(m, "metadata.namespace=d\\=v", ns),
	                    "metadata.namespace=" PX_NO_NAMESPACE);
	/* the first operator splits the term; no operator: Go's to refuse */
	assert_string_equal(fields(m, "metadata.namespace", ns), "metadata.namespace");
	assert_string_equal(fields(m, "metadata.namespace =dev", ns), "metadata.namespace =dev");
	assert_string_equal(fields(m, ",,metadata.namespace=dev,", ns),
	                    ",,metadata.namespace=acme-dev,");
	px_nsmap_free(m);
}

static int query(const struct px_nsmap *m, bool namespaces, const char *in, char *got, size_t size)
{
	struct px_query_view q = {
	        .map = m, .namespaces = namespaces, .tenant_label = "landlord.dev/tenant=acme"};
	struct buf out = BUF_INIT(4096);
	char why[256];
	int rc = px_query_view(&q, in, &out, why, sizeof(why));

	snprintf(got, size, "%s", rc == 0 ? buf_cstr(&out) : why);
	buf_release(&out);
	return rc;
}

#define TENANT "landlord.dev%2Ftenant%3Dacme"

static void test_namespace_list_queries(void **state)
{
	struct px_nsmap *m = acme();
	char got[1024];

	(void)state;
	assert_int_equal(query(m, true, "", got, sizeof(got)), 0);
	assert_string_equal(got, "labelSelector=" TENANT);
	assert_int_equal(query(m, true, "limit=500&watch=true", got, sizeof(got)), 0);
	assert_string_equal(got, "limit=500&watch=true&labelSelector=" TENANT);
	assert_int_equal(query(m, true, "labelSelector=kubernetes.io%2Fmetadata.name%3Ddev&limit=1",
	                       got, sizeof(got)),
	                 0);
	assert_string_equal(got,
	                    "labelSelector=" TENANT "%2Ckubernetes.io%2Fmetadata.name%3Dacme-dev"
	                    "&limit=1");
	assert_int_equal(query(m, true, "fieldSelector=metadata.name%3Dprod", got, sizeof(got)), 0);
	assert_string_equal(got, "fieldSelector=metadata.name%3Dacme-prod&labelSelector=" TENANT);
	/* Go decodes names too: each of these is a labelSelector, and each gets the tenant's */
	assert_int_equal(query(m, true, "label%53elector=&labelSelector&labelSelector=a+in+(b)",
	                       got, sizeof(got)),
	                 0);
	assert_string_equal(got, "labelSelector=" TENANT "&labelSelector=" TENANT
	                         "&labelSelector=" TENANT "%2Ca%20in%20%28b%29");
	/* a selector Go would drop (a bad escape) would drop the tenant's with it */
	assert_int_equal(query(m, true, "labelSelector=%zz", got, sizeof(got)), -EINVAL);
	assert_int_equal(query(m, true, "labelSelector=a%2", got, sizeof(got)), -EINVAL);
	assert_int_equal(query(m, true, "labelSelector=a+in", got, sizeof(got)), -EINVAL);
	assert_non_null(strstr(got, "labelSelector"));
	/* a NUL ends the selector, as in Go's lexer */
	assert_int_equal(query(m, true, "labelSelector=a%00,b", got, sizeof(got)), 0);
	assert_string_equal(got, "labelSelector=" TENANT "%2Ca");
	/* other pairs as they are, even those Go cannot read */
	assert_int_equal(query(m, true, "x=%zz&&y", got, sizeof(got)), 0);
	assert_string_equal(got, "x=%zz&y&labelSelector=" TENANT);
	px_nsmap_free(m);
}

static void test_namespaced_queries(void **state)
{
	struct px_nsmap *m = acme();
	char got[1024];

	(void)state;
	assert_int_equal(query(m, false, "", got, sizeof(got)), 0);
	assert_string_equal(got, "");
	/* a label selector of other kinds is the caller's own */
	assert_int_equal(query(m, false, "labelSelector=kubernetes.io%2Fmetadata.name%3Ddev", got,
	                       sizeof(got)),
	                 0);
	assert_string_equal(got, "labelSelector=kubernetes.io%2Fmetadata.name%3Ddev");
	assert_int_equal(query(m, false,
	                       "fieldSelector=involvedObject.namespace%3Ddev%2Creason%3DPulled"
	                       "&watch=1",
	                       got, sizeof(got)),
	                 0);
	assert_string_equal(got,
	                    "fieldSelector=involvedObject.namespace%3Dacme-dev%2Creason%3DPulled"
	                    "&watch=1");
	assert_int_equal(
	        query(m, false, "field%53elector=regarding.namespace=legacy", got, sizeof(got)), 0);
	assert_string_equal(got, "fieldSelector=regarding.namespace%3Dlegacy");
	assert_int_equal(query(m, false, "fieldSelector=metadata.name%3Ddev", got, sizeof(got)), 0);
	assert_string_equal(got, "fieldSelector=metadata.name%3Ddev");
	assert_int_equal(query(m, false, "fieldSelector=%G0", got, sizeof(got)), -EINVAL);
	px_nsmap_free(m);
}

static void test_too_long(void **state)
{
	struct px_nsmap *m = acme();
	struct px_query_view q = {.map = m, .namespaces = true, .tenant_label = "t=a"};
	struct buf out = BUF_INIT(16);
	char why[64];

	(void)state;
	assert_int_equal(px_query_view(&q, "labelSelector=kubernetes.io%2Fmetadata.name%3Ddev",
	                               &out, why, sizeof(why)),
	                 -EMSGSIZE);
	assert_int_equal(out.len, 0);
	buf_release(&out);
	px_nsmap_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_label_terms_on_the_name_are_converted),
	        cmocka_unit_test(test_other_label_terms_are_kept_as_written),
	        cmocka_unit_test(test_label_selectors_that_do_not_parse_are_refused),
	        cmocka_unit_test(test_converted_selectors_match_the_same_namespaces),
	        cmocka_unit_test(test_field_selectors),
	        cmocka_unit_test(test_namespace_list_queries),
	        cmocka_unit_test(test_namespaced_queries),
	        cmocka_unit_test(test_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
