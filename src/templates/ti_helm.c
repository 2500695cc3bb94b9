/*
 * ti_helm.c - a TemplateInstance's chart: its release wanted of the release controller
 * (releases.h) as the instance's own account, and its releases removed when the chart, the
 * release name or the instance goes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "templates/ti_internal.h"
#include "tenancy/render.h"

/* The release's name: spec.resources.helm.releaseName, else the Template's name. */
static void release_name(const struct ti_rec *r, char out[64])
{
	const char *name = jd_str(r->tmpl, "spec", "resources", "helm", "releaseName", NULL);

	snprintf(out, 64, "%.63s", name != NULL ? name : r->tmpl_name);
}

/* Want the releases of @owner in the namespace other than @keep ("" : all) gone. */
static bool others_gone(struct ti_rec *r, const char *owner, const char *keep)
{
	json_t *mine = releases_of(r->t, owner, r->ns_name), *v;
	struct release_state st;
	char prefix[300];
	bool gone = true;
	size_t i;

	snprintf(prefix, sizeof(prefix), "%s/", r->ns_name);
	json_array_foreach(mine, i, v) {
		const char *rel = json_string_value(v) + strlen(prefix);

		if (strcmp(rel, keep) == 0)
			continue;
		releases_want(
		        r->t,
		        &(struct release_want){.owner = owner, .ns = r->ns_name, .release = rel},
		        &st);
		gone = gone && st.gone;
	}
	json_decref(mine);
	return gone;
}

/* The chart's values for this namespace; a failure is the instance's. */
static int values(struct ti_rec *r, json_t **vals, json_t **set)
{
	struct render_in in = {.tmpl = jdoc_root(r->tmpl),
	                       .params = jval_path(r->ti, "spec", "parameters", NULL),
	                       .ns = r->ns_name,
	                       .tenant = jd_label(r->ns, LABEL_TENANT)};
	struct ll_err err = {{0}};
	int rc = render_helm_values(&in, vals, set, &err);

	if (rc != 0)
		ti_fail(r, "ParameterInvalid", "", err.msg);
	return rc;
}

void ti_charts(struct ti_rec *r)
{
	json_t *helm = jval_to_json(jd_get(r->tmpl, "spec", "resources", "helm", NULL));
	json_t *vals = NULL, *set = NULL;
	char owner[600], object[128];

	releases_owner_ti(r->ns_name, r->name, owner, sizeof(owner));
	if (r->account.sa[0] == '\0' &&
	    ti_account_for(r->ns_name, r->ns_labels, r->writer, &r->account) != 0)
		r->account.sa[0] = '\0';
	if (helm != NULL && !releases_on(r->t)) {
		ti_fail(r, "HelmNotConfigured", "",
		        "the Template has a chart, and landlord runs without --helm-binary");
	} else if (helm != NULL && r->synced && !r->failed && values(r, &vals, &set) == 0) {
		release_name(r, r->release);
		if (releases_want(r->t,
		                  &(struct release_want){
		                          .owner = owner,
		                          .ns = r->ns_name,
		                          .release = r->release,
		                          .account = r->account.sa,
		                          .helm = helm,
		                          .values = vals,
		                          .set = set,
		                          .sync = jval_bool(jval_path(r->ti, "spec", "sync", NULL),
		                                            false)},
		                  &r->rel) != 0 ||
		    (r->rel.reason[0] != '\0' && strcmp(r->rel.reason, "ReleaseRecovered") != 0)) {
			snprintf(object, sizeof(object), "Release/%s", r->release);
			ti_fail(r, r->rel.reason, object, r->rel.message);
		}
	}
	if (releases_on(r->t) && (r->synced || helm == NULL))
		others_gone(r, owner, r->release);
	json_decref(vals);
	json_decref(set);
	json_decref(helm);
}

bool ti_charts_gone(struct ti_rec *r)
{
	char owner[600];

	if (!releases_on(r->t))
		return true;
	releases_owner_ti(r->ns_name, r->name, owner, sizeof(owner));
	return others_gone(r, owner, "");
}
