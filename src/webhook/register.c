/*
 * register.c - landlord's own webhook configurations for --webhook-url (see register.h).
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
#include "pki/pki.h"
#include "webhook/register.h"

#define ATTEMPTS 4 /* replaces retried after a conflict */

const char *const wh_validating_names[] = {"landlord", NULL};
const char *const wh_mutating_names[] = {"landlord", NULL};

static const struct kc_gvr VALIDATING = {"admissionregistration.k8s.io", "v1",
                                         "validatingwebhookconfigurations",
                                         "ValidatingWebhookConfiguration", false};
static const struct kc_gvr MUTATING = {"admissionregistration.k8s.io", "v1",
                                       "mutatingwebhookconfigurations",
                                       "MutatingWebhookConfiguration", false};

static const struct kc_gvr *gvr_of(const json_t *obj)
{
	const char *kind = jx_str(obj, "kind", NULL);

	return kind && strcmp(kind, VALIDATING.kind) == 0 ? &VALIDATING : &MUTATING;
}

static void set_in(json_t *obj, const char *field, const char *key, json_t *take_value)
{
	json_t *meta = json_object_get(obj, "metadata"), *m = json_object_get(meta, field);

	if (!json_is_object(m)) {
		m = json_object();
		json_object_set_new(meta, field, m);
	}
	json_object_set_new(m, key, take_value);
}

/* One configuration for @base_url: clientConfig.url from the chart's service path. */
static void point_at(json_t *obj, const char *base_url, const char *b64, long long gen)
{
	json_t *h;
	size_t i;

	set_in(obj, "labels", LABEL_MANAGED_BY, json_string(MANAGED_BY_VALUE));
	if (b64)
		set_in(obj, "annotations", ANNOT_CA_BUNDLE_GEN, json_sprintf("%lld", gen));
	json_array_foreach(json_object_get(obj, "webhooks"), i, h) {
		const char *path = jx_str(h, "clientConfig", "service", "path", NULL);
		json_t *cc = json_pack("{s:s+}", "url", base_url, path ? path : "/");

		if (b64)
			json_object_set_new(cc, "caBundle", json_string(b64));
		json_object_set_new(h, "clientConfig", cc);
	}
}

json_t *wh_configs_for_url(const char *base_url, const char *ca_bundle_pem, long long gen,
                           struct ll_err *err)
{
	json_t *list = jx_loads(webhook_configs_json, webhook_configs_json_len, err), *out = NULL;
	char *b64 = ca_bundle_pem ? pki_b64_encode(ca_bundle_pem, strlen(ca_bundle_pem)) : NULL;
	json_t *items = json_object_get(list, "items"), *item;
	size_t i;

	if (!json_is_array(items)) {
		ll_err_set(err, -EINVAL, "the embedded deploy/webhooks.json holds no items");
		goto out;
	}
	out = json_array();
	json_array_foreach(items, i, item) {
		json_t *obj = json_deep_copy(item);

		point_at(obj, base_url, b64, gen);
		json_array_append_new(out, obj);
	}
out:
	free(b64);
	json_decref(list);
	return out;
}

/* The caBundle @have carries when its generation is later than @want's: keep it. */
static void keep_later_bundle(json_t *want, const json_t *have)
{
	const char *hg = jx_annotation(have, ANNOT_CA_BUNDLE_GEN);
	const char *wg = jx_annotation(want, ANNOT_CA_BUNDLE_GEN);
	const json_t *first = json_array_get(jx_get(have, "webhooks", NULL), 0);
	const char *b64 = jx_str(first, "clientConfig", "caBundle", NULL);
	json_t *h;
	size_t i;

	if (hg == NULL || b64 == NULL || (wg && strtoll(hg, NULL, 10) <= strtoll(wg, NULL, 10)))
		return;
	set_in(want, "annotations", ANNOT_CA_BUNDLE_GEN, json_string(hg));
	json_array_foreach(json_object_get(want, "webhooks"), i, h)
		json_object_set_new(json_object_get(h, "clientConfig"), "caBundle",
		                    json_string(b64));
}

static bool ours(const json_t *obj)
{
	const char *v = jx_label(obj, LABEL_MANAGED_BY);

	return v && strcmp(v, MANAGED_BY_VALUE) == 0;
}

/* One attempt: -EAGAIN after a conflict. */
static int register_once(struct kc_client *kc, json_t *want, struct ll_err *err)
{
	const struct kc_gvr *gvr = gvr_of(want);
	const char *name = jx_name(want);
	struct kc_resp resp = {0};
	int rc = kc_get(kc, gvr, NULL, name, &resp, err);

	if (rc < 0)
		goto out;
	if (resp.http_status == 200 && !ours(resp.body)) {
		rc = ll_err_set(err, -EEXIST,
		                "%s %s exists and landlord did not register it (the chart's?): "
		                "run without --webhook-url, or delete it",
		                gvr->kind, name);
		goto out;
	}
	if (resp.http_status == 200) {
		keep_later_bundle(want, resp.body);
		json_object_set_new(json_object_get(want, "metadata"), "resourceVersion",
		                    json_string(jx_resource_version(resp.body)));
		kc_resp_release(&resp);
		rc = kc_replace(kc, gvr, NULL, name, NULL, want, &resp, err);
	} else if (resp.http_status == 404) {
		kc_resp_release(&resp);
		rc = kc_create(kc, gvr, NULL, want, &resp, err);
	}
	if (rc == 0 && (resp.http_status == 409 || resp.http_status == 404))
		rc = -EAGAIN;
	else if (rc == 0 && !kc_resp_ok(&resp))
		rc = ll_err_set(err, -EIO, "cannot register %s %s: %ld %s", gvr->kind, name,
		                resp.http_status, resp.status.message);
out:
	kc_resp_release(&resp);
	return rc;
}

int wh_register(struct kc_client *kc, const char *base_url, const char *ca_bundle_pem,
                long long gen, struct ll_err *err)
{
	json_t *objs = wh_configs_for_url(base_url, ca_bundle_pem, gen, err), *obj;
	size_t i;
	int rc = objs ? 0 : -EIO;

	json_array_foreach(objs, i, obj) {
		if (rc < 0)
			break;
		rc = -EAGAIN;
		for (int a = 0; a < ATTEMPTS && rc == -EAGAIN; a++)
			rc = register_once(kc, obj, err);
		if (rc == -EAGAIN)
			rc = ll_err_set(err, -EIO, "%s %s kept changing while registering it",
			                gvr_of(obj)->kind, jx_name(obj));
		if (rc == 0)
			log_info("webhook configuration registered", "{s:s,s:s,s:s}", "kind",
			         gvr_of(obj)->kind, "name", jx_name(obj), "url", base_url);
	}
	json_decref(objs);
	return rc;
}

/* Whether every webhook of @obj points under @base_url. */
static bool points_at(const json_t *obj, const char *base_url)
{
	size_t n = strlen(base_url), i;
	json_t *h;

	json_array_foreach(jx_get(obj, "webhooks", NULL), i, h) {
		const char *url = jx_str(h, "clientConfig", "url", NULL);

		if (url == NULL || strncmp(url, base_url, n) != 0 || url[n] != '/')
			return false;
	}
	return true;
}

static int deregister_one(struct kc_client *kc, const struct kc_gvr *gvr, const char *name,
                          const char *base_url, struct ll_err *err)
{
	struct kc_resp resp = {0};
	struct kc_delete_opts del = {.grace_seconds = -1};
	json_t *body = NULL;
	int rc = kc_get(kc, gvr, NULL, name, &resp, err);

	if (rc < 0 || resp.http_status == 404)
		goto out;
	if (!kc_resp_ok(&resp)) {
		rc = ll_err_set(err, -EIO, "cannot read %s %s: %ld %s", gvr->kind, name,
		                resp.http_status, resp.status.message);
		goto out;
	}
	if (!ours(resp.body) || !points_at(resp.body, base_url)) {
		log_info("webhook configuration left in place: not registered by this process "
		         "(another landlord points it elsewhere, or it is not landlord's)",
		         "{s:s,s:s}", "kind", gvr->kind, "name", name);
		goto out;
	}
	body = json_incref(resp.body);
	del.precondition_uid = jx_uid(body);
	del.precondition_rv = jx_resource_version(body);
	kc_resp_release(&resp);
	rc = kc_delete(kc, gvr, NULL, name, &del, &resp, err);
	if (rc == 0 && kc_resp_ok(&resp))
		log_info("webhook configuration removed", "{s:s,s:s}", "kind", gvr->kind, "name",
		         name);
	else if (rc == 0 && resp.http_status != 404 && resp.http_status != 409)
		rc = ll_err_set(err, -EIO, "cannot remove %s %s: %ld %s", gvr->kind, name,
		                resp.http_status, resp.status.message);
out:
	json_decref(body);
	kc_resp_release(&resp);
	return rc < 0 ? -EIO : 0;
}

int wh_deregister(struct kc_client *kc, const char *base_url, struct ll_err *err)
{
	int rc = 0;

	for (size_t i = 0; wh_validating_names[i]; i++)
		if (deregister_one(kc, &VALIDATING, wh_validating_names[i], base_url, err) < 0)
			rc = -EIO;
	for (size_t i = 0; wh_mutating_names[i]; i++)
		if (deregister_one(kc, &MUTATING, wh_mutating_names[i], base_url, err) < 0)
			rc = -EIO;
	return rc;
}
