/*
 * rule_sleep.c - the webhook's /sleep route: no hand-made wake of a workload whose sleep a
 * ResourceSupervisor enforces (tenancy/sleepguard.h, docs/hibernation.md). The API server sends
 * it only requests from namespaces labelled landlord.dev/sleeping=enforced. A /scale request
 * does not carry the workload's annotations, so the workload is read (one GET: only for scale
 * requests on a sleeping namespace's workloads, which are rare).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"
#include "kube/kube.h"
#include "tenancy/hibernation.h"
#include "tenancy/sleepguard.h"
#include "webhook/rules.h"

const char *const wh_sleep_resources[] = {"apps/deployments",
                                          "apps/statefulsets",
                                          "apps/replicasets",
                                          "apps/deployments/scale",
                                          "apps/statefulsets/scale",
                                          "apps/replicasets/scale",
                                          "batch/jobs",
                                          "batch/cronjobs",
                                          NULL};

/* The saved value of the workload a /scale request is about: 0, or -EIO with @v filled. */
static int read_saved(const struct wh_tenancy *tn, const json_t *request, char **saved,
                      struct admission_verdict *v)
{
	const char *resource = jx_str(request, "resource", "resource", NULL);
	const char *ns = jx_str(request, "namespace", NULL), *name = jx_str(request, "name", NULL);
	struct kc_gvr gvr = {jx_str(request, "resource", "group", NULL),
	                     jx_str(request, "resource", "version", NULL), resource,
	                     sleepguard_kind(resource), true};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = tn->client ? kc_get(tn->client, &gvr, ns, name, &resp, &err) : -ENOTCONN;
	const char *text = jx_str(resp.body, "metadata", "annotations", HIB_SAVED_ANNOTATION, NULL);

	if (rc == 0 && (kc_resp_ok(&resp) || resp.http_status == 404)) {
		*saved = text && kc_resp_ok(&resp) ? xstrdup(text) : NULL;
	} else {
		v->allowed = false;
		v->code = 503;
		snprintf(v->message, sizeof(v->message),
		         "landlord could not read %s %s/%s to tell whether it sleeps (%s): retry",
		         gvr.kind ? gvr.kind : "the workload", ns ? ns : "", name ? name : "",
		         rc < 0 ? err.msg : resp.status.message);
		rc = -EIO;
	}
	kc_resp_release(&resp);
	return rc < 0 ? rc : 0;
}

void wh_sleep_validate(const json_t *request, struct admission_verdict *v, void *ud)
{
	const char *sub = jx_str(request, "subResource", NULL);
	char *saved = NULL;

	if (sub && strcmp(sub, "scale") == 0 &&
	    sleepguard_kind(jx_str(request, "resource", "resource", NULL)) &&
	    read_saved(ud, request, &saved, v) < 0)
		return;
	if (sleepguard_refuses(request, saved, v->message, sizeof(v->message))) {
		v->allowed = false;
		v->code = 403;
	}
	free(saved);
}
