/*
 * rule_tenancy.c - the tenant rules of tenancy/admit.h as an admission validator: the request
 * is read into a document, decided against the view the rule row carries, and the decision
 * becomes the verdict; audited findings become admission warnings, count in
 * landlord_admission_audit_total{family} and are queued as Events (webhook/audit_events.h,
 * written off the decision's path).
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"

#include "base/err.h"
#include "base/jdoc.h"
#include "base/json.h"
#include "base/metrics.h"
#include "tenancy/admit.h"
#include "webhook/admission.h"
#include "webhook/audit_events.h"
#include "webhook/cacheview.h"
#include "webhook/reserve.h"
#include "webhook/rules.h"

const char *const wh_tenancy_resources[] = {"*", NULL};

static void count_audits(unsigned audited)
{
	char labels[96];

	metrics_describe("landlord_admission_audit_total", METRIC_COUNTER,
	                 "Requests admitted in audit mode that a rule would have denied, by rule "
	                 "family.",
	                 NULL, 0);
	for (int f = 0; f < ADM_FAMILY_N; f++) {
		if (!(audited & (1u << f)))
			continue;
		metrics_labels(labels, sizeof(labels), "family", adm_family_name(f), NULL);
		metrics_add("landlord_admission_audit_total", labels, 1);
	}
}

#define AUDIT_PREFIX "audit: "

/* Each audited finding (a warning "audit: <message>") as an Event about the request's object. */
static void record_audits(const json_t *request, const struct adm_decision *d)
{
	size_t plen = strlen(AUDIT_PREFIX);

	if (d->audited == 0)
		return;
	for (size_t i = 0; i < d->n_warnings; i++)
		if (strncmp(d->warnings[i], AUDIT_PREFIX, plen) == 0)
			audit_events_record(request, d->warnings[i] + plen);
}

static void to_verdict(const json_t *request, const struct adm_decision *d,
                       struct admission_verdict *v)
{
	v->allowed = d->allowed;
	if (!d->allowed) {
		v->code = d->code;
		snprintf(v->message, sizeof(v->message), "%s", d->message);
	}
	for (size_t i = 0; i < d->n_warnings; i++)
		admission_verdict_warn(v, d->warnings[i]);
	count_audits(d->audited);
	record_audits(request, d);
}

/* Read @request and decide it on @view into @d. false: malformed, @v says why (400). */
static bool decide(const json_t *request, const struct adm_view *view, struct adm_decision *d,
                   struct admission_verdict *v)
{
	struct adm_request rq;
	struct jdoc *doc = NULL;
	struct ll_err err = {{0}};
	bool ok = jdoc_from_json(request, NULL, &doc, &err) == 0 &&
	          adm_request_read(jdoc_root(doc), &rq, &err) == 0;

	if (ok)
		adm_decide(&rq, view, d);
	else {
		v->allowed = false;
		v->code = 400;
		snprintf(v->message, sizeof(v->message), "malformed AdmissionRequest: %s", err.msg);
	}
	jdoc_unref(doc);
	return ok;
}

void wh_tenancy_validate(const json_t *request, struct admission_verdict *v, void *ud)
{
	struct adm_decision d;

	if (decide(request, ud, &d, v))
		to_verdict(request, &d, v);
}

static bool loading(const struct wh_tenancy *tn, struct admission_verdict *v)
{
	if (cacheview_synced(tn->cv))
		return false;
	v->allowed = false;
	v->code = 503;
	snprintf(v->message, sizeof(v->message),
	         "landlord's caches are still loading (Tenants, Namespaces, Plans, Templates, "
	         "hosts): the tenant rules cannot be decided yet; retry in a few seconds");
	return true;
}

static void deny(struct admission_verdict *v, int code, const char *ns, const char *why)
{
	v->allowed = false;
	v->code = code;
	snprintf(v->message, sizeof(v->message), "namespace \"%.253s\": %s", ns, why);
}

/* An admitted Namespace CREATE joining a tenant: labelled by /mutate, and a slot reserved. */
static void admit_namespace(const struct wh_tenancy *tn, const json_t *request,
                            const struct adm_decision *d, struct admission_verdict *v)
{
	const char *ns = jx_str(request, "name", NULL);
	char why[1024];
	int rc;

	if (ns == NULL || *d->ns.tenant == '\0')
		return;
	if (d->ns.add_label) {
		snprintf(why, sizeof(why),
		         "landlord's mutating webhook did not label it for tenant \"%s\" "
		         "(" LABEL_TENANT "); retry, or add the label yourself",
		         d->ns.tenant);
		deny(v, 500, ns, why);
		return;
	}
	if (d->ns.max < 0 || tn->client == NULL)
		return;
	rc = ns_reserve_slot(tn->client, cacheview_view(tn->cv), d->ns.tenant, ns, d->ns.max, why,
	                     sizeof(why));
	if (rc != 0)
		deny(v, rc == 1 ? 403 : 500, ns, why);
}

void wh_tenancy_serve(const json_t *request, struct admission_verdict *v, void *ud)
{
	const struct wh_tenancy *tn = ud;
	struct adm_decision d;

	if (loading(tn, v) || !decide(request, cacheview_view(tn->cv), &d, v))
		return;
	to_verdict(request, &d, v);
	if (v->allowed)
		admit_namespace(tn, request, &d, v);
}

const char *const wh_tenancy_mutate_resources[] = {"namespaces",
                                                   LANDLORD_GROUP "/templateinstances", NULL};

/* Add @value at @path (under metadata), and the map @map first when the object has none. */
static void patch_add(struct admission_verdict *v, const json_t *request, const char *map,
                      const char *path, const char *value)
{
	char map_path[64];

	if (v->patch == NULL)
		v->patch = json_array();
	snprintf(map_path, sizeof(map_path), "/metadata/%s", map);
	if (!json_is_object(jx_get(request, "object", "metadata", map, NULL)))
		json_array_append_new(v->patch, json_pack("{s:s,s:s,s:{}}", "op", "add", "path",
		                                          map_path, "value"));
	/* "add" on a member that exists replaces it (RFC 6902, 4.1) */
	json_array_append_new(
	        v->patch, json_pack("{s:s,s:s,s:s}", "op", "add", "path", path, "value", value));
}

void wh_tenancy_label(const json_t *request, struct admission_verdict *v, void *ud)
{
	struct adm_decision d;

	/* never denies: /validate gives the reason, with the same decision */
	if (!decide(request, ud, &d, v)) {
		*v = (struct admission_verdict){
		        .allowed = true, .warnings = v->warnings, .patch = v->patch};
		return;
	}
	if (*d.last_writer)
		patch_add(v, request, "annotations",
		          "/metadata/annotations/landlord.dev~1last-writer", d.last_writer);
	if (d.allowed && d.ns.add_label)
		patch_add(v, request, "labels", "/metadata/labels/landlord.dev~1tenant",
		          d.ns.tenant);
}

void wh_tenancy_mutate(const json_t *request, struct admission_verdict *v, void *ud)
{
	const struct wh_tenancy *tn = ud;

	if (cacheview_synced(tn->cv))
		wh_tenancy_label(request, v, (void *)cacheview_view(tn->cv));
}
