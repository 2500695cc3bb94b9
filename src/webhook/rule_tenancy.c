/*
 * rule_tenancy.c - the tenant rules of tenancy/admit.h as an admission validator: the request
 * is read into a document, decided against the view the rule row carries, and the decision
 * becomes the verdict; audited findings become admission warnings, count in
 * landlord_admission_audit_total{family} and are queued as Events (webhook/audit_events.h,
 * written off the decision's path).
 */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/jdoc.h"
#include "base/metrics.h"
#include "tenancy/admit.h"
#include "webhook/admission.h"
#include "webhook/audit_events.h"
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

static void to_verdict(const struct adm_decision *d, struct admission_verdict *v)
{
	v->allowed = d->allowed;
	if (!d->allowed) {
		v->code = d->code;
		snprintf(v->message, sizeof(v->message), "%s", d->message);
	}
	for (size_t i = 0; i < d->n_warnings; i++)
		admission_verdict_warn(v, d->warnings[i]);
	count_audits(d->audited);
}

void wh_tenancy_validate(const json_t *request, struct admission_verdict *v, void *ud)
{
	const struct adm_view *view = ud;
	struct adm_decision d;
	struct adm_request rq;
	struct jdoc *doc = NULL;
	struct ll_err err = {{0}};

	if (jdoc_from_json(request, NULL, &doc, &err) != 0 ||
	    adm_request_read(jdoc_root(doc), &rq, &err) != 0) {
		v->allowed = false;
		v->code = 400;
		snprintf(v->message, sizeof(v->message), "malformed AdmissionRequest: %s", err.msg);
		goto out;
	}
	adm_decide(&rq, view, &d);
	to_verdict(&d, v);
	record_audits(request, &d);
out:
	jdoc_unref(doc);
}
