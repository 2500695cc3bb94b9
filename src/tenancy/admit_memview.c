/* admit_memview.c - an adm_view over one JSON document (see admit_memview.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/mem.h"
#include "tenancy/admit_memview.h"
#include "tenancy/tenant_model.h"

struct mv_tenant {
	struct adm_tenant t;
	json_t *namespaces;
	struct hm_policy *hosts;
};

struct adm_memview {
	struct jdoc *doc;
	struct mv_tenant *tenants;
	size_t n_tenants;
	json_t *tenant_idx; /* name -> index into tenants */
	json_t *ns_idx;     /* namespace -> index into the "namespaces" array */
	json_t *tmpl_idx;   /* Template name -> index into the "templates" array */
	json_t *ns_tenant;  /* namespace -> index into tenants */
	json_t *members;    /* "User/alice", "Group/dev" -> tenant name */
	json_t *claims;     /* namespace -> [tenant names] */
	json_t *plan_users; /* plan -> tenant name */
	json_t *plans;      /* plan -> its spec.maxNamespaces, or null */
	json_t *hosts;      /* host -> tenant name */
	json_t *under;      /* domain -> [[tenant, host]...]: hosts below it, two tenants at most */
	struct lcfg *cfg;
	enum adm_mode modes[ADM_FAMILY_N];
	const char *self;
};

static const struct mv_tenant *tenant_at(const struct adm_memview *v, const json_t *idx)
{
	return json_is_integer(idx) ? &v->tenants[json_integer_value(idx)] : NULL;
}

static const struct adm_tenant *op_tenant(const void *ctx, const char *name)
{
	const struct adm_memview *v = ctx;
	const struct mv_tenant *t = tenant_at(v, json_object_get(v->tenant_idx, name));

	return t ? &t->t : NULL;
}

static const struct adm_tenant *op_tenant_of_namespace(const void *ctx, const char *ns)
{
	const struct adm_memview *v = ctx;
	const struct mv_tenant *t = tenant_at(v, json_object_get(v->ns_tenant, ns));

	return t ? &t->t : NULL;
}

static struct jval op_namespace_obj(const void *ctx, const char *ns)
{
	const struct adm_memview *v = ctx;
	const json_t *i = json_object_get(v->ns_idx, ns);

	if (!json_is_integer(i))
		return (struct jval){0};
	return jval_at(jd_get(v->doc, "namespaces", NULL), (size_t)json_integer_value(i));
}

static struct jval op_template_obj(const void *ctx, const char *name)
{
	const struct adm_memview *v = ctx;
	const json_t *i = json_object_get(v->tmpl_idx, name);

	if (!json_is_integer(i))
		return (struct jval){0};
	return jval_at(jd_get(v->doc, "templates", NULL), (size_t)json_integer_value(i));
}

static const char *op_member_tenant(const void *ctx, const char *kind, const char *name)
{
	const struct adm_memview *v = ctx;
	char key[600];

	snprintf(key, sizeof(key), "%s/%s", kind, name);
	return json_string_value(json_object_get(v->members, key));
}

static const char *other_owner(const json_t *tenant, const char *except)
{
	const char *t = json_string_value(tenant);

	return t && strcmp(t, except) != 0 ? t : NULL;
}

/* A host lookup that skips tenant @except. */
struct host_query {
	const struct adm_memview *v;
	const char *except;
};

static const char *exact_host(const void *ud, const char *key, const char **host)
{
	const struct host_query *q = ud;
	void *iter = json_object_iter_at(q->v->hosts, key);
	const char *t = iter ? other_owner(json_object_iter_value(iter), q->except) : NULL;

	if (t)
		*host = json_object_iter_key(iter);
	return t;
}

/*
 * A wildcard's children ("*.example.com" against "a.example.com", "*.b.example.com"): the hosts
 * in use below its domain, indexed by every domain above them. Each entry keeps the first two
 * tenants, so that one other than @except is always found when there is one.
 */
static const char *below(const void *ud, const char *wildcard, const char **host)
{
	const struct host_query *q = ud;
	const json_t *list = json_object_get(q->v->under, wildcard + 2), *e;
	size_t i;

	json_array_foreach(list, i, e) {
		const char *t = other_owner(json_array_get(e, 0), q->except);
		const char *h = json_string_value(json_array_get(e, 1));

		if (t && hm_overlap(wildcard, strlen(wildcard), h, strlen(h), HM_ANY_LABELS)) {
			*host = h;
			return t;
		}
	}
	return NULL;
}

static const char *op_host_user(const void *ctx, const char *host, const char *except,
                                const char **other)
{
	static const struct hm_index_ops index = {.exact = exact_host, .below = below};

	return hm_find_overlap(&index, &(struct host_query){ctx, except}, host, other);
}

static const char *op_namespace_claimant(const void *ctx, const char *ns, const char *except)
{
	const struct adm_memview *v = ctx;
	json_t *t;
	size_t i;

	json_array_foreach(json_object_get(v->claims, ns), i, t)
		if (other_owner(t, except))
			return json_string_value(t);
	return NULL;
}

static bool op_plan_exists(const void *ctx, const char *plan)
{
	return json_object_get(((const struct adm_memview *)ctx)->plans, plan) != NULL;
}

static long long op_plan_max_namespaces(const void *ctx, const char *plan)
{
	const json_t *max = json_object_get(((const struct adm_memview *)ctx)->plans, plan);

	return json_is_integer(max) ? (long long)json_integer_value(max) : -1;
}

static const char *op_plan_user(const void *ctx, const char *plan)
{
	return json_string_value(
	        json_object_get(((const struct adm_memview *)ctx)->plan_users, plan));
}

static const struct lcfg *op_config(const void *ctx)
{
	return ((const struct adm_memview *)ctx)->cfg;
}

static enum adm_mode op_mode(const void *ctx, enum adm_family f)
{
	return ((const struct adm_memview *)ctx)->modes[f];
}

static const char *op_self_user(const void *ctx)
{
	return ((const struct adm_memview *)ctx)->self;
}

static const struct adm_view_ops OPS = {
        .tenant = op_tenant,
        .tenant_of_namespace = op_tenant_of_namespace,
        .namespace_obj = op_namespace_obj,
        .member_tenant = op_member_tenant,
        .host_user = op_host_user,
        .namespace_claimant = op_namespace_claimant,
        .plan_exists = op_plan_exists,
        .plan_max_namespaces = op_plan_max_namespaces,
        .plan_user = op_plan_user,
        .template_obj = op_template_obj,
        .config = op_config,
        .mode = op_mode,
        .self_user = op_self_user,
};

struct adm_view adm_memview_view(const struct adm_memview *v)
{
	return (struct adm_view){.ops = &OPS, .ctx = v};
}

/* ---- building ---- */

struct member_sink {
	struct adm_memview *v;
	const char *tenant;
};

static void add_member(const char *key, void *ud)
{
	struct member_sink *m = ud;

	if (!json_object_get(m->v->members, key))
		json_object_set_new(m->v->members, key, json_string(m->tenant));
}

static void index_members(struct adm_memview *v, struct jval tenant, const char *name)
{
	static const char *const roles[] = {"owners", "editors", "viewers"};
	static const char *const kinds[][2] = {{"users", "User"}, {"groups", "Group"}};
	struct jval list, s;
	char key[600];
	size_t r, k, i;

	for (r = 0; r < 3; r++)
		for (k = 0; k < 2; k++) {
			list = jval_path(tenant, "spec", "accessControl", roles[r], kinds[k][0],
			                 NULL);
			jval_foreach(list, i, s) {
				snprintf(key, sizeof(key), "%s/%s", kinds[k][1],
				         jval_str(s) ? jval_str(s) : "");
				add_member(key, &(struct member_sink){v, name});
			}
		}
	adm_owner_keys(tenant, add_member, &(struct member_sink){v, name});
}

static void index_claims(struct adm_memview *v, struct jval tenant, const char *name)
{
	struct tm_claims claims = {0};
	json_t *list;

	if (tm_claims_build(tenant, &claims) != 0)
		return;
	for (size_t i = 0; i < claims.n; i++) {
		list = json_object_get(v->claims, claims.ns[i].name);
		if (list == NULL)
			json_object_set_new(v->claims, claims.ns[i].name, list = json_array());
		json_array_append_new(list, json_string(name));
	}
	tm_claims_release(&claims);
}

static int add_tenant(struct adm_memview *v, struct jval tenant, size_t at, struct ll_err *err)
{
	struct mv_tenant *t = &v->tenants[at];
	const char *name = jval_name(tenant), *plan;
	json_t *hosts;
	int hosts_error;

	if (name == NULL)
		return ll_err_set(err, -EINVAL, "tenants[%zu]: metadata.name is required", at);
	hosts = jval_to_json(jval_path(tenant, "spec", "allowed", "hosts", NULL));
	hosts_error = hm_policy_from_json(hosts, &t->hosts, NULL);
	json_decref(hosts);
	t->namespaces = json_object();
	t->t = (struct adm_tenant){.name = name,
	                           .obj = tenant,
	                           .namespaces = t->namespaces,
	                           .hosts = t->hosts,
	                           .hosts_error = hosts_error};
	json_object_set_new(v->tenant_idx, name, json_integer((json_int_t)at));
	if ((plan = jval_str(jval_path(tenant, "spec", "plan", NULL))) &&
	    !json_object_get(v->plan_users, plan))
		json_object_set_new(v->plan_users, plan, json_string(name));
	index_members(v, tenant, name);
	index_claims(v, tenant, name);
	return 0;
}

static void add_namespaces(struct adm_memview *v)
{
	struct jval list = jd_get(v->doc, "namespaces", NULL), ns;
	const char *name, *tenant;
	json_t *idx;
	size_t i;

	jval_foreach(list, i, ns) {
		if ((name = jval_name(ns)) == NULL)
			continue;
		json_object_set_new(v->ns_idx, name, json_integer((json_int_t)i));
		tenant = jval_label(ns, LABEL_TENANT);
		idx = tenant ? json_object_get(v->tenant_idx, tenant) : NULL;
		if (!json_is_integer(idx))
			continue;
		json_object_set(v->ns_tenant, name, idx);
		json_object_set_new(v->tenants[json_integer_value(idx)].namespaces, name,
		                    json_true());
	}
}

static void add_templates(struct adm_memview *v)
{
	struct jval list = jd_get(v->doc, "templates", NULL), t;
	size_t i;

	jval_foreach(list, i, t)
		if (jval_name(t))
			json_object_set_new(v->tmpl_idx, jval_name(t), json_integer((json_int_t)i));
}

static int add_config(struct adm_memview *v, struct ll_err *err)
{
	struct jval modes = jd_get(v->doc, "config", "spec", "admission", "modes", NULL), m;
	json_t *cfg = jval_to_json(jd_get(v->doc, "config", NULL));
	const char *key;
	size_t i;
	int f, rc;

	rc = lcfg_parse(cfg, &v->cfg, NULL);
	json_decref(cfg);
	if (rc != 0)
		return ll_err_set(err, rc, "config: not a valid LandlordConfig");
	jval_foreach_member(modes, i, key, m) {
		f = adm_family_parse(key);
		if (f < 0 || !jval_str(m) ||
		    (strcmp(jval_str(m), "deny") != 0 && strcmp(jval_str(m), "audit") != 0))
			return ll_err_set(err, -EINVAL,
			                  "config.spec.admission.modes.%s: a family "
			                  "(docs/admission-rules.md) set to deny or audit",
			                  key);
		v->modes[f] = strcmp(jval_str(m), "audit") == 0 ? ADM_AUDIT : ADM_DENY;
	}
	return 0;
}

/* Index @host of @tenant under every domain above it: "a.b.c" under "b.c" and "c". */
static void index_below(struct adm_memview *v, const char *host, const char *tenant)
{
	json_t *list, *e;
	size_t i;

	for (const char *p = strchr(host, '.'); p; p = strchr(p + 1, '.')) {
		list = json_object_get(v->under, p + 1);
		if (list == NULL)
			json_object_set_new(v->under, p + 1, list = json_array());
		json_array_foreach(list, i, e)
			if (strcmp(json_string_value(json_array_get(e, 0)), tenant) == 0)
				break;
		if (i == json_array_size(list) && i < 2)
			json_array_append_new(list, json_pack("[s,s]", tenant, host));
	}
}

static void add_lists(struct adm_memview *v)
{
	struct jval plans = jd_get(v->doc, "plans", NULL), hosts = jd_get(v->doc, "hosts", NULL), e;
	size_t i;

	jval_foreach(plans, i, e) {
		struct jval max = jval_path(e, "spec", "maxNamespaces", NULL);

		if (jval_str(e))
			json_object_set_new(v->plans, jval_str(e), json_null());
		else if (jval_name(e))
			json_object_set_new(v->plans, jval_name(e),
			                    jval_type(max) == JT_INT
			                            ? json_integer(jval_int(max, -1))
			                            : json_null());
	}
	jval_foreach(hosts, i, e) {
		const char *host = jval_str(jval_get(e, "host"));
		const char *tenant = jval_str(jval_get(e, "tenant"));

		if (host == NULL || tenant == NULL)
			continue;
		json_object_set_new(v->hosts, host, json_string(tenant));
		index_below(v, host, tenant);
	}
}

static struct adm_memview *alloc_view(void)
{
	struct adm_memview *v = xcalloc(1, sizeof(*v));

	v->tenant_idx = json_object();
	v->ns_idx = json_object();
	v->tmpl_idx = json_object();
	v->ns_tenant = json_object();
	v->members = json_object();
	v->claims = json_object();
	v->plan_users = json_object();
	v->plans = json_object();
	v->hosts = json_object();
	v->under = json_object();
	return v;
}

int adm_memview_new(const json_t *doc, struct adm_memview **out, struct ll_err *err)
{
	struct adm_memview *v = NULL;
	struct jval tenants, t;
	size_t i;
	int rc;

	*out = NULL;
	if (!json_is_object(doc))
		return ll_err_set(err, -EINVAL, "view: must be an object");
	v = alloc_view();
	rc = jdoc_from_json(doc, NULL, &v->doc, err);
	if (rc != 0)
		goto fail;
	v->self = jd_str(v->doc, "self", NULL);
	tenants = jd_get(v->doc, "tenants", NULL);
	v->tenants = xcalloc(jval_size(tenants) + 1, sizeof(*v->tenants));
	jval_foreach(tenants, i, t) {
		if ((rc = add_tenant(v, t, i, err)) != 0)
			goto fail;
		v->n_tenants = i + 1;
	}
	add_namespaces(v);
	add_templates(v);
	add_lists(v);
	if ((rc = add_config(v, err)) != 0)
		goto fail;
	*out = v;
	return 0;
fail:
	adm_memview_free(v);
	return rc;
}

void adm_memview_free(struct adm_memview *v)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < v->n_tenants; i++) {
		json_decref(v->tenants[i].namespaces);
		hm_policy_free(v->tenants[i].hosts);
	}
	free(v->tenants);
	json_decref(v->tenant_idx);
	json_decref(v->ns_idx);
	json_decref(v->tmpl_idx);
	json_decref(v->ns_tenant);
	json_decref(v->members);
	json_decref(v->claims);
	json_decref(v->plan_users);
	json_decref(v->plans);
	json_decref(v->hosts);
	json_decref(v->under);
	lcfg_unref(v->cfg);
	jdoc_unref(v->doc);
	free(v);
}
