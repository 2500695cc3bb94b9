/*
 * admit_testing.h - what the suites of the admit_* modules share: a view built from
 * tests/data/admit/view.json (tenants acme, globex and frozen; see docs/admission-rules.md for
 * the rules) with a JSON merge patch on top, and a request decided against it. Header-only and
 * static; include it after cmocka.h.
 */
#ifndef LANDLORD_TESTS_ADMIT_TESTING_H
#define LANDLORD_TESTS_ADMIT_TESTING_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/err.h"
#include "base/jdoc.h"
#include "tenancy/admit.h"
#include "tenancy/admit_memview.h"
#include "testjson.h"

/* RFC 7386 merge of @patch into @target (arrays replaced). */
static inline void at_merge(json_t *target, const json_t *patch)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)patch, key, v) {
		json_t *cur = json_object_get(target, key);

		if (json_is_null(v))
			json_object_del(target, key);
		else if (json_is_object(v) && json_is_object(cur))
			at_merge(cur, v);
		else
			json_object_set(target, key, v);
	}
}

/* The base view with merge patch @patch (NULL: none) applied to its document. */
static inline struct adm_memview *at_view(const char *patch)
{
	char path[1024];
	const char *data = getenv("LANDLORD_TEST_DATA");
	json_t *doc, *p = js(patch);
	json_error_t e;
	struct adm_memview *mv = NULL;
	struct ll_err err;

	snprintf(path, sizeof(path), "%s/admit/view.json", data ? data : "tests/data");
	doc = json_load_file(path, 0, &e);
	if (doc == NULL)
		fail_msg("%s: %s", path, e.text);
	if (p)
		at_merge(doc, p);
	if (adm_memview_new(doc, &mv, &err) != 0)
		fail_msg("view: %s", err.msg);
	json_decref(p);
	json_decref(doc);
	return mv;
}

/*
 * Decide AdmissionRequest @request (JSON text) on @mv into @d. Shorthand members, completed:
 * "resource": "apps/deployments" or "pods" (group/resource), "user": "alice" (groups
 * ["system:authenticated"] unless "groups" is given).
 */
static inline void at_decide(struct adm_memview *mv, const char *request, struct adm_decision *d)
{
	json_t *req = js(request);
	const char *res = json_string_value(json_object_get(req, "resource"));
	const char *slash = res ? strchr(res, '/') : NULL;
	struct adm_view view = adm_memview_view(mv);
	struct adm_request rq;
	struct jdoc *doc = NULL;
	struct ll_err err;

	if (res) {
		json_t *gvr = slash ? json_pack("{s:s%,s:s}", "group", res, (size_t)(slash - res),
		                                "resource", slash + 1)
		                    : json_pack("{s:s,s:s}", "group", "", "resource", res);

		json_object_set_new(req, "resource", gvr);
	}
	if (json_object_get(req, "user")) {
		json_t *groups = json_object_get(req, "groups");

		json_object_set_new(
		        req, "userInfo",
		        json_pack("{s:O,s:o}", "username", json_object_get(req, "user"), "groups",
		                  groups ? json_incref(groups) : js("[\"system:authenticated\"]")));
		json_object_del(req, "user");
		json_object_del(req, "groups");
	}
	if (jdoc_from_json(req, NULL, &doc, &err) != 0 ||
	    adm_request_read(jdoc_root(doc), &rq, &err) != 0)
		fail_msg("request: %s", err.msg);
	adm_decide(&rq, &view, d);
	jdoc_unref(doc);
	json_decref(req);
}

#endif
