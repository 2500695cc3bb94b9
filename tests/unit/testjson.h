/*
 * testjson.h - JSON from a test's literal text, for the cmocka suites: js("{...}") parses any
 * JSON value (a NUL escape included) and fails the test, naming the text and the error, when it
 * does not parse; js(NULL) is NULL; jd("{...}") is the same as a jdoc document. Header-only and
 * static inline; include it after cmocka.h. json_case_differs() compares a golden case.
 */
#ifndef LANDLORD_TESTS_TESTJSON_H
#define LANDLORD_TESTS_TESTJSON_H

#include <string.h>

#include <jansson.h>

#include "base/err.h"
#include "base/jdoc.h"

static inline json_t *js(const char *text)
{
	json_error_t e;
	json_t *v;

	if (text == NULL)
		return NULL;
	v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	if (v == NULL)
		fail_msg("bad test JSON %s: %s", text, e.text);
	return v;
}

/* A document parsed from @text as the informer would cache it; fails the test if it does not
 * parse. jdoc_unref() it. */
static inline struct jdoc *jd(const char *text)
{
	struct jdoc *d = NULL;
	struct ll_err err;

	if (jdoc_parse(text, strlen(text), NULL, &d, &err) != 0)
		fail_msg("bad test JSON %s: %s", text, err.msg);
	return d;
}

/* An AdmissionReview answer reduced to a golden case's want.json: allowed, and the code and
 * message of a denial, and any warnings. A new reference. */
static inline json_t *admission_got(const json_t *answer)
{
	const json_t *resp = json_object_get(answer, "response");
	json_t *got = json_pack("{s:O}", "allowed", json_object_get(resp, "allowed"));
	const json_t *warnings = json_object_get(resp, "warnings");

	if (!json_is_true(json_object_get(resp, "allowed"))) {
		json_object_set(got, "code",
		                json_object_get(json_object_get(resp, "status"), "code"));
		json_object_set(got, "message",
		                json_object_get(json_object_get(resp, "status"), "message"));
	}
	if (warnings)
		json_object_set(got, "warnings", (json_t *)warnings);
	return got;
}

/*
 * Whether @got differs from @want (both taken), printing both for case @name when it does: the
 * comparison of the golden-file suites. Returns 1 when they differ, else 0.
 */
static inline int json_case_differs(const char *name, json_t *got, json_t *want)
{
	int bad = !json_equal(got, want);

	if (bad) {
		char *g = json_dumps(got, JSON_INDENT(2) | JSON_SORT_KEYS);
		char *w = json_dumps(want, JSON_INDENT(2) | JSON_SORT_KEYS);

		print_error("case %s:\n  want %s\n  got  %s\n", name, w, g);
		free(g);
		free(w);
	}
	json_decref(got);
	json_decref(want);
	return bad;
}

#endif
