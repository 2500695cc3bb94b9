/*
 * tgi_helm.c - a TemplateGroupInstance's chart: in each selected namespace whose manifests are
 * applied, its release wanted of the release controller (releases.h) as tgi.<ns>, an account
 * bound there to landlord-templates only (the release controller makes and binds it: one
 * RoleBinding takes the API server ~0.1 s to judge, and its workers do that in parallel); its
 * releases in namespaces no longer selected (or under another name, or of a chart dropped) wanted
 * gone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "templates/releases.h"
#include "templates/tgi_internal.h"
#include "tenancy/render.h"

/* The release's name: spec.resources.helm.releaseName, else the Template's name. */
static void release_name(const struct tgi_rec *r, char out[64])
{
	const char *name = jd_str(r->tmpl, "spec", "resources", "helm", "releaseName", NULL);

	snprintf(out, 64, "%.63s", name != NULL ? name : r->tmpl_name);
}

/* The chart's values for @ns. Return: 0, or as render_helm_values() with @err. */
static int values(struct tgi_rec *r, const char *ns, json_t **vals, json_t **set,
                  struct ll_err *err)
{
	const struct jdoc *nsdoc = inf_get_ref(r->t->namespaces, NULL, ns);
	struct render_in in = {.tmpl = jdoc_root(r->tmpl),
	                       .params = jval_path(r->tgi, "spec", "parameters", NULL),
	                       .ns = ns,
	                       .tenant = nsdoc ? jd_label(nsdoc, LABEL_TENANT) : NULL};
	int rc = render_helm_values(&in, vals, set, err);

	jdoc_unref(nsdoc);
	return rc;
}

/* Want the release of @ns; *@st says what it is. Return: 0, or <0 with @st's reason set. */
static int want(struct tgi_rec *r, const char *ns, const json_t *helm, const char *release,
                struct release_state *st)
{
	struct ti_account account;
	struct ll_err err = {{0}};
	json_t *vals = NULL, *set = NULL;
	char owner[300];
	int rc;

	memset(st, 0, sizeof(*st));
	releases_owner_tgi(r->name, owner, sizeof(owner));
	tgi_account_for(ns, &account); /* the release controller binds it, in parallel */
	rc = values(r, ns, &vals, &set, &err);
	if (rc != 0) {
		snprintf(st->reason, sizeof(st->reason), "ParameterInvalid");
		snprintf(st->message, sizeof(st->message), "%s", err.msg);
	} else {
		rc = releases_want(r->t,
		                   &(struct release_want){.owner = owner,
		                                          .ns = ns,
		                                          .release = release,
		                                          .account = account.sa,
		                                          .helm = helm,
		                                          .values = vals,
		                                          .set = set,
		                                          .sync = r->sync,
		                                          .bind_account = true},
		                   st);
	}
	json_decref(vals);
	json_decref(set);
	return rc;
}

void tgi_chart(struct tgi_rec *r, struct tpl_row *row, char release[64], struct release_state *st)
{
	json_t *helm = jval_to_json(jd_get(r->tmpl, "spec", "resources", "helm", NULL));
	char object[128];

	release[0] = '\0';
	if (helm == NULL)
		return;
	release_name(r, release);
	if (!releases_on(r->t)) {
		memset(st, 0, sizeof(*st));
		snprintf(st->reason, sizeof(st->reason), "HelmNotConfigured");
		snprintf(st->message, sizeof(st->message),
		         "the Template has a chart, and landlord runs without --helm-binary");
	} else {
		want(r, row->ns, helm, release, st);
	}
	row->release = release;
	row->release_status = st->status;
	row->chart_version = st->chart_version;
	row->revision = st->revision;
	row->ready = row->ready && st->ready;
	release_state_counts(st, row);
	if (st->reason[0] != '\0' && strcmp(st->reason, "ReleaseRecovered") != 0) {
		snprintf(object, sizeof(object), "Release/%s", release);
		tgi_fail(r, row->ns, st->reason, object, st->message);
	}
	json_decref(helm);
}

bool tgi_charts_leftover(struct tgi_rec *r, bool all)
{
	json_t *mine, *v;
	struct release_state st;
	char owner[300], release[64] = "", ns[256], rel[64];
	bool gone = true;
	size_t i;

	if (!releases_on(r->t))
		return true;
	releases_owner_tgi(r->name, owner, sizeof(owner));
	if (!all && r->tmpl != NULL &&
	    jval_type(jd_get(r->tmpl, "spec", "resources", "helm", NULL)) != JT_NONE)
		release_name(r, release);
	mine = releases_of(r->t, owner, NULL);
	json_array_foreach(mine, i, v) {
		if (sscanf(json_string_value(v), "%255[^/]/%63s", ns, rel) != 2)
			continue;
		if (!all && strcmp(rel, release) == 0 && json_object_get(r->selected, ns) != NULL)
			continue; /* wanted: tgi_chart() */
		releases_want(r->t,
		              &(struct release_want){.owner = owner, .ns = ns, .release = rel},
		              &st);
		gone = gone && st.gone;
	}
	json_decref(mine);
	return gone;
}
