/*
 * certs_publish.c - the CA bundle written into landlord's own webhook configurations (see
 * certs.h): only those named, each by a JSON patch whose first operation tests the
 * resourceVersion that was read, and never over a bundle of a later generation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/kube.h"
#include "pki/certs_internal.h"

#define WEBHOOKS_MAX 256 /* webhooks in one configuration: the patch is built for each */

static const struct kc_gvr VALIDATING = {"admissionregistration.k8s.io", "v1",
                                         "validatingwebhookconfigurations",
                                         "ValidatingWebhookConfiguration", false};
static const struct kc_gvr MUTATING = {"admissionregistration.k8s.io", "v1",
                                       "mutatingwebhookconfigurations",
                                       "MutatingWebhookConfiguration", false};

static long long annotation_ll(const json_t *obj, const char *key)
{
	const char *v = jx_annotation(obj, key);

	return v ? strtoll(v, NULL, 10) : 0;
}

/* Whether every webhook of @cfg carries @b64 already. */
static bool carries(const json_t *cfg, const char *b64)
{
	const json_t *hooks = jx_get(cfg, "webhooks", NULL);
	size_t i;
	json_t *h;

	json_array_foreach(hooks, i, h) {
		const char *have = jx_str(h, "clientConfig", "caBundle", NULL);

		if (have == NULL || strcmp(have, b64) != 0)
			return false;
	}
	return true;
}

static void add_op(json_t *patch, const char *op, const char *path, json_t *take_value)
{
	json_array_append_new(
	        patch, json_pack("{s:s,s:s,s:o}", "op", op, "path", path, "value", take_value));
}

/* test resourceVersion; caBundle of each webhook; the generation annotation. */
static json_t *build_patch(const json_t *cfg, const char *b64, long long gen)
{
	json_t *patch = json_array(), *h;
	const json_t *annotations = jx_get(cfg, "metadata", "annotations", NULL);
	char path[64], gen_s[32];
	size_t i;

	snprintf(gen_s, sizeof(gen_s), "%lld", gen);
	add_op(patch, "test", "/metadata/resourceVersion",
	       json_string(jx_resource_version(cfg) ? jx_resource_version(cfg) : ""));
	json_array_foreach(jx_get(cfg, "webhooks", NULL), i, h) {
		if (json_is_object(json_object_get(h, "clientConfig"))) {
			snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle", i);
			add_op(patch, "add", path, json_string(b64));
		} else {
			snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig", i);
			add_op(patch, "add", path, json_pack("{s:s}", "caBundle", b64));
		}
	}
	if (json_is_object(annotations))
		add_op(patch, "add", "/metadata/annotations/landlord.dev~1ca-bundle-generation",
		       json_string(gen_s));
	else
		add_op(patch, "add", "/metadata/annotations",
		       json_pack("{s:s}", ANNOT_CA_BUNDLE_GEN, gen_s));
	return patch;
}

/* One configuration. *@done: it carries @gen (or a later one) after this. */
static int publish_one(struct kc_client *kc, const struct kc_gvr *gvr, const char *name,
                       const struct certs_state *st, const char *b64, bool *done,
                       struct ll_err *err)
{
	struct kc_resp resp = {0};
	json_t *patch = NULL;
	long long have;
	int rc = kc_get(kc, gvr, NULL, name, &resp, err);

	*done = false;
	if (rc < 0)
		goto out;
	if (resp.http_status == 404) {
		*done = true; /* not registered: nothing to wait for */
		goto out;
	}
	if (!kc_resp_ok(&resp)) {
		rc = ll_err_set(err, -EIO, "cannot read %s %s: %ld %s", gvr->kind, name,
		                resp.http_status, resp.status.message);
		goto out;
	}
	have = annotation_ll(resp.body, ANNOT_CA_BUNDLE_GEN);
	if (have > st->gen || (have == st->gen && carries(resp.body, b64))) {
		*done = have == st->gen || have > st->gen;
		goto out;
	}
	if (json_array_size(jx_get(resp.body, "webhooks", NULL)) > WEBHOOKS_MAX) {
		rc = ll_err_set(err, -EIO, "%s %s has more than %d webhooks", gvr->kind, name,
		                WEBHOOKS_MAX);
		goto out;
	}
	patch = build_patch(resp.body, b64, st->gen);
	kc_resp_release(&resp);
	rc = kc_patch(kc, gvr, NULL, name, NULL, KC_PATCH_JSON, patch, LANDLORD_FIELD_MANAGER,
	              &resp, err);
	if (rc == 0 && kc_resp_ok(&resp)) {
		*done = true;
		log_info("CA bundle written into a webhook configuration", "{s:s,s:s,s:I}", "kind",
		         gvr->kind, "name", name, "generation", (json_int_t)st->gen);
	} else if (rc == 0 && resp.http_status != 409 && resp.http_status != 422) {
		rc = ll_err_set(err, -EIO, "cannot patch %s %s: %ld %s", gvr->kind, name,
		                resp.http_status, resp.status.message);
	} /* 409/422: changed since read; the next pass reads it again */
out:
	json_decref(patch);
	kc_resp_release(&resp);
	return rc;
}

int certs__publish(struct kc_client *kc, const char *const *validating, const char *const *mutating,
                   const struct certs_state *st, bool *all, struct ll_err *err)
{
	char *pem = pki_bundle_join(&st->bundle);
	char *b64 = pki_b64_encode(pem, strlen(pem));
	const char *const *names[2] = {validating, mutating};
	const struct kc_gvr *gvrs[2] = {&VALIDATING, &MUTATING};
	int rc = 0;

	*all = true;
	for (int k = 0; k < 2 && rc == 0; k++) {
		for (size_t i = 0; rc == 0 && names[k] && names[k][i]; i++) {
			bool done = false;

			rc = publish_one(kc, gvrs[k], names[k][i], st, b64, &done, err);
			*all = *all && done;
		}
	}
	if (rc < 0)
		*all = false;
	free(b64);
	free(pem);
	return rc < 0 ? -EIO : 0;
}
