/*
 * Fuzz the tenant rules behind the admission core: any body is an AdmissionReview for
 * admission_review() with the tenancy row (webhook/rules.h) on a fixed view that has every
 * rule switched on, on /validate and on /mutate (the namespace label). The answer must be
 * well-formed JSON: 400 with no response, or 200 with the request's uid, and a denial must
 * carry code 403, 400 or 503 (a namespace not cached yet) and a one-line printable message;
 * warnings are printable lines too; /mutate never denies, and its patch, when there is one, is
 * base64 of a JSON Patch array.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "fuzz_admission_oracle.h"
#include "pki/pki.h"
#include "tenancy/admit_memview.h"
#include "webhook/admission.h"
#include "webhook/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char view_json[] =
        "{\"self\":\"system:serviceaccount:landlord-system:landlord\","
        "\"config\":{\"spec\":{\"privileged\":{\"users\":[\"platform-admin\"]},"
        "\"admission\":{\"modes\":{\"services\":\"audit\"}}}},"
        "\"tenants\":[{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\","
        "\"accessControl\":{\"owners\":{\"users\":[\"alice\"],\"groups\":[\"devs\"]}},"
        "\"namespaces\":{\"withTenantPrefix\":[\"dev\"],\"withoutTenantPrefix\":[\"legacy\"]},"
        "\"allowed\":{\"registries\":[\"ghcr.io/acme\",\"docker.io/library\",\"\"],"
        "\"storageClasses\":[\"fast\"],\"ingressClasses\":[\"nginx\"],"
        "\"priorityClasses\":[\"low\",\"\"],\"runtimeClasses\":[\"gvisor\"],"
        "\"imagePullPolicies\":[\"IfNotPresent\"],\"hosts\":{\"names\":[\"a.acme.com\","
        "\"*.apps.acme.com\"],\"regex\":\"[a-z]+\\\\.acme\\\\.io\",\"denyWildcards\":false}},"
        "\"denied\":{\"serviceAccounts\":[\"builder\"]},"
        "\"services\":{\"nodePort\":false,\"externalName\":false}}},"
        "{\"metadata\":{\"name\":\"frozen\"},\"spec\":{\"plan\":\"gold\",\"cordoned\":true}}],"
        "\"namespaces\":[{\"metadata\":{\"name\":\"acme-dev\",\"labels\":{"
        "\"landlord.dev/tenant\":\"acme\"}}},{\"metadata\":{\"name\":\"legacy\",\"labels\":{"
        "\"landlord.dev/tenant\":\"acme\",\"landlord.dev/cordoned\":\"true\"}}},"
        "{\"metadata\":{\"name\":\"ice\",\"labels\":{\"landlord.dev/tenant\":\"frozen\"}}},"
        "{\"metadata\":{\"name\":\"other\"}}],"
        "\"plans\":[{\"metadata\":{\"name\":\"gold\"},\"spec\":{\"maxNamespaces\":3}}],"
        "\"hosts\":[{\"host\":\"b.acme.io\",\"tenant\":\"globex\"},"
        "{\"host\":\"*.w.acme.io\",\"tenant\":\"globex\"}],"
        "\"templates\":[{\"metadata\":{\"name\":\"web\"},\"spec\":{\"instantiableIn\":{"
        "\"matchLabels\":{\"landlord.dev/tenant\":\"acme\"}},\"parameters\":[{\"name\":"
        "\"TEAM\",\"value\":\"a\",\"validation\":\"^[a-z]+$\"}],\"resources\":{\"manifests\":"
        "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
        "\"t-${{TEAM}}\"}}]}}}]}";

static bool one_printable_line(const char *s)
{
	for (; s && *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return s != NULL;
}

static void check_response(const json_t *resp)
{
	const json_t *warnings = json_object_get(resp, "warnings"), *w;
	size_t i;

	if (!json_is_true(json_object_get(resp, "allowed"))) {
		long long code = jx_int(resp, 0, "status", "code", NULL);

		if ((code != 403 && code != 400 && code != 503) ||
		    !one_printable_line(jx_str(resp, "status", "message", NULL)))
			abort();
	}
	json_array_foreach(warnings, i, w)
		if (!one_printable_line(json_string_value(w)))
			abort();
}

static void check_mutation(const json_t *resp)
{
	const char *b64 = jx_str(resp, "patch", NULL);
	struct buf raw = BUF_INIT(1 << 20);
	json_t *patch;

	if (!json_is_true(json_object_get(resp, "allowed")))
		abort();
	if (b64 == NULL)
		return;
	if (pki_b64_decode(b64, &raw) != 0 || !(patch = jx_loads(raw.p, raw.len, NULL)) ||
	    !json_is_array(patch) || json_array_size(patch) == 0)
		abort();
	json_decref(patch);
	buf_release(&raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct adm_memview *mv;
	static struct adm_view view;
	static struct admission_route *route, *mutate;
	static struct admission_rule rules[2], mutations[2];
	char *body = xstrndup((const char *)data, size);
	json_t *resp;

	if (route == NULL) {
		json_t *doc = jx_loads(view_json, strlen(view_json), NULL);

		if (adm_memview_new(doc, &mv, NULL) != 0)
			abort();
		json_decref(doc);
		view = adm_memview_view(mv);
		rules[0] = (struct admission_rule){"tenancy", wh_tenancy_resources,
		                                   ADMISSION_ANY_OP, wh_tenancy_validate, &view};
		mutations[0] = (struct admission_rule){"label", wh_tenancy_resources,
		                                       ADMISSION_ANY_OP, wh_tenancy_label, &view};
		route = admission_route_new(NULL, "/validate", "fuzz", rules);
		mutate = admission_route_new(NULL, "/mutate", "fuzz", mutations);
	}
	resp = fuzz_admission_answer(route, body);
	if (resp)
		check_response(resp);
	json_decref(resp);
	resp = fuzz_admission_answer(mutate, body);
	if (resp)
		check_mutation(resp);
	json_decref(resp);
	free(body);
	return 0;
}
