/*
 * extension_project.c - the AppProject and the argocd-rbac-cm key landlord wants for a tenant
 * (extension_internal.h). Pure: no I/O, unit-tested by tests/unit/test_extension.c.
 *
 * Roles: owner and editor may do anything to the project's Applications, viewer only get them;
 * each role may read logs. A role's groups are the Tenant's groups of that role; its users are
 * "g, <user>, proj:<tenant>:<role>" lines of the rbac key (Argo CD reads every policy.*.csv key
 * of argocd-rbac-cm). Argo CD turns a role's groups into casbin lines too, so groups and users
 * pass the same check (ext_name_safe()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "hibernation/extension_internal.h"

#define CSV_MAX (1u << 20) /* a ConfigMap holds at most 1 MiB */

/* The project's roles, the Tenant's field each takes its members from, and what each may do. */
static const struct role_def {
	const char *role, *field;
	bool full;
} ROLES[] = {{"owner", "owners", true}, {"editor", "editors", true}, {"viewer", "viewers", false}};

/* The fields of the AppProject's spec landlord owns (everything it applies). */
static const char *const OWNED[] = {"description",
                                    "sourceRepos",
                                    "destinations",
                                    "destinationServiceAccounts",
                                    "clusterResourceWhitelist",
                                    "namespaceResourceBlacklist",
                                    "roles",
                                    NULL};

bool ext_name_safe(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || name[0] == ' ' || name[n - 1] == ' ')
		return false;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p == 0x7f || *p == ',' || *p == '"' || *p == '\'')
			return false;
	return true;
}

/* [{group, kind}] from a list of GroupKinds (group "" when absent; items without kind skipped). */
static json_t *group_kinds(struct jval list)
{
	json_t *out = json_array();
	struct jval item;
	size_t i;

	jval_foreach(list, i, item) {
		const char *group = jval_str(jval_get(item, "group"));
		const char *kind = jval_str(jval_get(item, "kind"));

		if (kind && *kind)
			json_array_append_new(out, json_pack("{s:s,s:s}", "group",
			                                     group ? group : "", "kind", kind));
	}
	return out;
}

/* The Extension's list when it gives one, else the LandlordConfig's. */
static json_t *resolved_list(const struct ext_in *in, const char *field)
{
	struct jval mine = jval_path(in->argocd, "appProject", field, NULL);
	json_t *cfg_list, *out;
	struct jdoc *doc = NULL;

	if (jval_type(mine) == JT_ARRAY)
		return group_kinds(mine);
	cfg_list = in->cfg ? json_object_get(in->cfg, field) : NULL;
	if (cfg_list == NULL || jdoc_from_json(cfg_list, NULL, &doc, NULL) < 0)
		return json_array();
	out = group_kinds(jdoc_root(doc));
	jdoc_unref(doc);
	return out;
}

static json_t *policies(const char *tenant, const struct role_def *d)
{
	json_t *out = json_array();
	char line[512];

	snprintf(line, sizeof(line), "p, proj:%s:%s, applications, %s, %s/*, allow", tenant,
	         d->role, d->full ? "*" : "get", tenant);
	json_array_append_new(out, json_string(line));
	snprintf(line, sizeof(line), "p, proj:%s:%s, logs, get, %s/*, allow", tenant, d->role,
	         tenant);
	json_array_append_new(out, json_string(line));
	return out;
}

static void refuse(struct ext_want *w, const char *field, const char *kind, size_t i)
{
	char path[96];

	snprintf(path, sizeof(path), "spec.accessControl.%s.%s[%zu]", field, kind, i);
	json_array_append_new(w->refused, json_string(path));
}

/* The role's groups (safe ones) into @role, its users' lines into @csv. */
static int members(const struct ext_in *in, const struct role_def *d, json_t *role, struct buf *csv,
                   struct ext_want *w)
{
	struct jval subjects = jval_path(in->tenant_spec, "accessControl", d->field, NULL), v;
	struct jval group_list = jval_get(subjects, "groups"),
	            user_list = jval_get(subjects, "users");
	json_t *groups = json_array();
	int rc = 0;
	size_t i;

	jval_foreach(group_list, i, v) {
		if (ext_name_safe(jval_str(v)))
			json_array_append_new(groups, json_string(jval_str(v)));
		else
			refuse(w, d->field, "groups", i);
	}
	jval_foreach(user_list, i, v) {
		if (!ext_name_safe(jval_str(v)))
			refuse(w, d->field, "users", i);
		else if (rc == 0)
			rc = buf_appendf(csv, "g, %s, proj:%s:%s\n", jval_str(v), in->tenant,
			                 d->role);
	}
	if (json_array_size(groups) > 0)
		json_object_set(role, "groups", groups);
	json_decref(groups);
	return rc;
}

static json_t *destinations(const struct ext_in *in, bool with_account)
{
	json_t *out = json_array();

	for (size_t i = 0; i < in->n_namespaces; i++) {
		json_t *d = json_pack("{s:s,s:s}", "server", ARGOCD_SERVER, "namespace",
		                      in->namespaces[i]);

		if (with_account)
			json_object_set_new(d, "defaultServiceAccount",
			                    json_string(ARGOCD_ACCOUNT));
		json_array_append_new(out, d);
	}
	return out;
}

/* Set @key to @list unless it is empty (applying without it removes landlord's old value). */
static void set_list(json_t *spec, const char *key, json_t *list)
{
	if (json_array_size(list) > 0)
		json_object_set(spec, key, list);
	json_decref(list);
}

static json_t *project_spec(const struct ext_in *in, struct buf *csv, struct ext_want *w, int *rc)
{
	json_t *spec = json_object(), *roles = json_array(), *repos = json_array();
	struct jval repo_list = jval_path(in->argocd, "appProject", "sourceRepos", NULL), v;
	char desc[160];
	size_t i;

	snprintf(desc, sizeof(desc), "Tenant %s (kept by landlord)", in->tenant);
	json_object_set_new(spec, "description", json_string(desc));
	jval_foreach(repo_list, i, v)
		if (jval_str(v))
			json_array_append_new(repos, json_string(jval_str(v)));
	set_list(spec, "sourceRepos", repos);
	set_list(spec, "destinations", destinations(in, false));
	set_list(spec, "destinationServiceAccounts", destinations(in, true));
	set_list(spec, "clusterResourceWhitelist", resolved_list(in, "clusterResourceWhitelist"));
	set_list(spec, "namespaceResourceBlacklist",
	         resolved_list(in, "namespaceResourceBlacklist"));
	for (size_t k = 0; k < sizeof(ROLES) / sizeof(ROLES[0]); k++) {
		json_t *role = json_pack("{s:s,s:o}", "name", ROLES[k].role, "policies",
		                         policies(in->tenant, &ROLES[k]));

		if (*rc == 0)
			*rc = members(in, &ROLES[k], role, csv, w);
		json_array_append_new(roles, role);
	}
	json_object_set_new(spec, "roles", roles);
	return spec;
}

int ext_want_build(const struct ext_in *in, struct ext_want *out)
{
	struct buf csv;
	int rc = 0;

	buf_init(&csv, CSV_MAX);
	memset(out, 0, sizeof(*out));
	out->refused = json_array();
	out->project = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}}}", "apiVersion",
	                         "argoproj.io/v1alpha1", "kind", "AppProject", "metadata", "name",
	                         in->tenant, "namespace", in->argo_ns, "labels", LABEL_MANAGED_BY,
	                         MANAGED_BY_VALUE, LABEL_TENANT, in->tenant);
	json_object_set_new(out->project, "spec", project_spec(in, &csv, out, &rc));
	if (rc == 0)
		out->csv = xstrdup(buf_cstr(&csv));
	buf_release(&csv);
	if (rc < 0)
		ext_want_release(out);
	return rc < 0 ? -ENOMEM : 0;
}

void ext_want_release(struct ext_want *w)
{
	json_decref(w->project);
	json_decref(w->refused);
	free(w->csv);
	memset(w, 0, sizeof(*w));
}

bool ext_project_ours(struct jval have, const char *tenant)
{
	const char *by = jval_label(have, LABEL_MANAGED_BY), *t = jval_label(have, LABEL_TENANT);

	return by && t && tenant && strcmp(by, MANAGED_BY_VALUE) == 0 && strcmp(t, tenant) == 0;
}

/* A missing field and an empty list are the same to Argo CD and to the comparison. */
static bool field_equal(struct jval have, const json_t *want)
{
	bool have_empty =
	        jval_type(have) == JT_NONE || (jval_type(have) == JT_ARRAY && jval_size(have) == 0);

	if (want == NULL)
		return have_empty;
	return jval_equal_json(have, want);
}

bool ext_project_differs(struct jval have, const json_t *want)
{
	const json_t *spec = json_object_get(want, "spec");
	const char *tenant = jx_label(want, LABEL_TENANT);

	if (!ext_project_ours(have, tenant))
		return true;
	for (size_t i = 0; OWNED[i]; i++)
		if (!field_equal(jval_path(have, "spec", OWNED[i], NULL),
		                 json_object_get(spec, OWNED[i])))
			return true;
	return false;
}
