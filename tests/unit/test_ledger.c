/*
 * test_ledger.c - Helm's release records against landlord's ledger (templates/ledger.h): records
 * sorted by revision, the ledger's text, and which differences are accepted: none with nothing
 * pending; with a run pending, only what helm's own run makes (its revision added, older ones
 * superseded or dropped from history); with an uninstall pending, removals and changes only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "base/json.h"
#include "pki/pki.h"
#include "templates/ledger.h"

/* Add a record of @rev with uid u<rev>, resourceVersion @rv and @status. */
static void add(struct helm_records *r, long rev, const char *rv, const char *status)
{
	char version[24], uid[24];
	json_t *meta;

	snprintf(version, sizeof(version), "%ld", rev);
	snprintf(uid, sizeof(uid), "u%ld", rev);
	meta = json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "uid", uid, "resourceVersion", rv, "labels",
	                 "version", version, "status", status, "landlord.dev/digest", "d");
	helm_records_add(r, meta);
	json_decref(meta);
}

static void test_ledger__records_are_sorted_and_written_canonically(void **state)
{
	struct helm_records r = {0};
	char *text;

	add(&r, 3, "30", "deployed");
	add(&r, 1, "10", "superseded");
	add(&r, 2, "20", "failed");
	text = helm_records_text(&r);
	assert_string_equal(text, "1 u1 10\n2 u2 20\n3 u3 30\n");
	free(text);
	assert_int_equal(helm_records_latest(&r)->revision, 3);
	assert_int_equal(helm_records_deployed(&r)->revision, 3);
	assert_string_equal(helm_records_latest(&r)->digest, "d");
	r.v[2].status[0] = '\0';
	assert_null(helm_records_deployed(&r));
	assert_true(helm_status_pending("pending-upgrade"));
	assert_false(helm_status_pending("deployed"));
}

static void test_ledger__with_nothing_pending_any_difference_is_tampering(void **state)
{
	const char *ledger = "1 u1 10\n2 u2 20\n";
	struct helm_records r = {0};
	char why[256];

	add(&r, 1, "10", "superseded");
	add(&r, 2, "20", "deployed");
	assert_true(helm_records_match(ledger, "", &r, why));
	add(&r, 3, "30", "pending-upgrade"); /* a record landlord did not make */
	assert_false(helm_records_match(ledger, "", &r, why));
	assert_string_equal(why, "a record of revision 3 that landlord did not make");
	memset(&r, 0, sizeof(r));
	add(&r, 1, "10", "superseded");
	add(&r, 2, "21", "deployed"); /* edited */
	assert_false(helm_records_match(ledger, "", &r, why));
	assert_string_equal(why, "the record of revision 2 was changed");
	memset(&r, 0, sizeof(r));
	add(&r, 2, "20", "deployed"); /* revision 1 deleted */
	assert_false(helm_records_match(ledger, "", &r, why));
	assert_string_equal(why, "the record of revision 1 was deleted");
	r.overflow = true;
	assert_false(helm_records_match(ledger, "", &r, why));
	memset(&r, 0, sizeof(r));
	assert_true(helm_records_match("", "", &r, why)); /* nothing either side */
}

static void test_ledger__a_pending_run_may_add_its_revision_and_supersede_older_ones(void **state)
{
	const char *ledger = "1 u1 10\n2 u2 20\n";
	struct helm_records r = {0};
	char why[256];

	add(&r, 2, "25", "superseded"); /* revision 1 dropped from history, 2 superseded */
	add(&r, 3, "30", "pending-upgrade");
	assert_true(helm_records_match(ledger, "3", &r, why));
	add(&r, 4, "40", "deployed"); /* not the run's revision */
	assert_false(helm_records_match(ledger, "3", &r, why));
	assert_string_equal(why, "a record of revision 4 that landlord did not make");
	memset(&r, 0, sizeof(r));
	add(&r, 1, "10", "superseded");
	add(&r, 2, "20", "deployed");
	r.v[1].uid[1] = '9'; /* replaced by another object of that name */
	assert_false(helm_records_match(ledger, "3", &r, why));
	assert_string_equal(why, "the record of revision 2 was changed");
	/* the first install: an empty ledger, revision 1 pending */
	memset(&r, 0, sizeof(r));
	add(&r, 1, "10", "pending-install");
	assert_true(helm_records_match("", "1", &r, why));
	assert_false(helm_records_match("", "", &r, why));
}

static void test_ledger__a_pending_uninstall_may_change_and_remove_but_not_add(void **state)
{
	const char *ledger = "1 u1 10\n2 u2 20\n";
	struct helm_records r = {0};
	char why[256];

	add(&r, 2, "27", "uninstalling");
	assert_true(helm_records_match(ledger, LEDGER_PENDING_UNINS, &r, why));
	add(&r, 3, "30", "deployed");
	assert_false(helm_records_match(ledger, LEDGER_PENDING_UNINS, &r, why));
}

/* A record's data.release as the API server gives it, from the release's JSON @json. */
static char *record_data(const char *json)
{
	unsigned char gz[4096];
	z_stream z = {0};
	char *once, *twice;

	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
	                 Z_OK);
	z.next_in = (unsigned char *)json;
	z.avail_in = (uInt)strlen(json);
	z.next_out = gz;
	z.avail_out = sizeof(gz);
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	once = pki_b64_encode(gz, sizeof(gz) - z.avail_out);
	deflateEnd(&z);
	twice = pki_b64_encode(once, strlen(once));
	free(once);
	return twice;
}

static void test_ledger__a_record_is_decoded_and_its_manifest_read(void **state)
{
	const char *manifest =
	        "---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\n"
	        "metadata:\n  name: web-config\n---\n# Source: web/templates/d.yaml\n"
	        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
	        "  namespace: other\n---\nnot: [an object\n---\nkind: NoVersion\n";
	json_t *rel = json_pack("{s:s,s:{s:{s:s}}}", "manifest", manifest, "chart", "metadata",
	                        "version", "1.2.3");
	char *json = json_dumps(rel, JSON_COMPACT), *data = record_data(json), *text;
	json_t *back = helm_record_decode(data), *objs;

	assert_non_null(back);
	assert_string_equal(jx_str(back, "chart", "metadata", "version", NULL), "1.2.3");
	objs = helm_manifest_objects(jx_str(back, "manifest", NULL), "team-a");
	text = json_dumps(objs, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(text, "{\"apps/v1/Deployment/other/web\":\"apps/v1/Deployment\","
	                          "\"v1/ConfigMap/team-a/web-config\":\"v1/ConfigMap\"}");
	assert_null(helm_record_decode("bm90IGd6aXA=")); /* base64, not gzip */
	assert_null(helm_record_decode("!"));
	assert_null(helm_record_decode(NULL));
	free(text);
	json_decref(objs);
	json_decref(back);
	free(data);
	free(json);
	json_decref(rel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_ledger__records_are_sorted_and_written_canonically),
	        cmocka_unit_test(test_ledger__with_nothing_pending_any_difference_is_tampering),
	        cmocka_unit_test(
	                test_ledger__a_pending_run_may_add_its_revision_and_supersede_older_ones),
	        cmocka_unit_test(
	                test_ledger__a_pending_uninstall_may_change_and_remove_but_not_add),
	        cmocka_unit_test(test_ledger__a_record_is_decoded_and_its_manifest_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
