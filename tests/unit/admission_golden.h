/*
 * admission_golden.h - what the two admission golden suites (test_admission_golden.c through
 * a JSON view, test_cacheview.c through informer caches) share beyond testjson.h: /mutate's
 * answer reduced to its JSON Patch. Header-only; include after cmocka.h.
 */
#ifndef LANDLORD_TESTS_ADMISSION_GOLDEN_H
#define LANDLORD_TESTS_ADMISSION_GOLDEN_H

#include <jansson.h>

#include "base/buf.h"
#include "pki/pki.h"
#include "webhook/admission.h"

/* The JSON Patch (decoded) that @rules on /mutate send for review @body, or NULL for none. */
static inline json_t *admission_mutation(const struct admission_rule *rules, const char *body)
{
	struct admission_route *route = admission_route_new(NULL, "/mutate", "golden", rules);
	struct buf out = BUF_INIT(1 << 20), raw = BUF_INIT(1 << 20);
	json_t *answer, *patch = NULL;
	const char *b64;

	assert_int_equal(admission_review(route, body, &out), 200);
	answer = json_loadb(out.p, out.len, 0, NULL);
	b64 = json_string_value(json_object_get(json_object_get(answer, "response"), "patch"));
	if (b64) {
		assert_int_equal(pki_b64_decode(b64, &raw), 0);
		patch = json_loadb(raw.p, raw.len, 0, NULL);
		assert_non_null(patch);
	}
	json_decref(answer);
	buf_release(&raw);
	buf_release(&out);
	admission_route_free(route);
	return patch;
}

#endif
