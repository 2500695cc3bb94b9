/* view.c - Tenants, members and namespaces from shared informers (view.h). */
#include "proxy/view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/jdoc.h"
#include "base/mem.h"
#include "kube/informer.h"
#include "kube/manager.h"
#include "proxy/nsmap.h"

#define IDX_TENANT "tenant" /* the Tenant controller's index of the same name and function */
#define SA_USER    "system:serviceaccount:"

struct px_view {
	struct inf *tenants;
	struct inf *namespaces;
};

int px_view_new(struct mgr *m, struct px_view **out, struct ll_err *err)
{
	struct inf_opts tenants = {.gvr = LL_TENANTS};
	struct inf_opts namespaces = {.gvr = KC_NAMESPACES, .metadata_only = true};
	struct px_view *v = xcalloc(1, sizeof(*v));
	int rc = 0;

	v->tenants = mgr_informer(m, &tenants);
	v->namespaces = mgr_informer(m, &namespaces);
	if (!v->tenants || !v->namespaces)
		rc = -ENOMEM;
	if (rc == 0)
		rc = inf_add_index(v->namespaces, IDX_TENANT, inf_index_label,
		                   (void *)LABEL_TENANT);
	if (rc == -EEXIST)
		rc = 0; /* the Tenant controller made it */
	if (rc < 0) {
		ll_err_set(err, rc, "the proxy's informers could not be made: %s", strerror(-rc));
		free(v);
		return rc;
	}
	*out = v;
	return 0;
}

void px_view_free(struct px_view *v)
{
	free(v);
}

bool px_view_synced(const struct px_view *v)
{
	return inf_has_synced(v->tenants) && inf_has_synced(v->namespaces);
}

static bool live(const struct jdoc *t)
{
	return t && jval_type(jd_get(t, "metadata", "deletionTimestamp", NULL)) == JT_NONE;
}

bool px_view_tenant_exists(struct px_view *v, const char *tenant)
{
	const struct jdoc *t = inf_get_ref(v->tenants, NULL, tenant);
	bool ok = live(t);

	jdoc_unref(t);
	return ok;
}

/* Whether @list (an array of strings) holds @name. */
static bool names(struct jval list, const char *name)
{
	return name && jval_has_string(list, name);
}

static bool any_group(struct jval list, const struct px_identity *id)
{
	for (size_t i = 0; i < id->n_groups; i++)
		if (names(list, id->groups[i]))
			return true;
	return false;
}

/* Whether ServiceAccount user @user ("system:serviceaccount:NS:NAME") is listed in @sas. */
static bool listed_sa(struct jval sas, const char *user)
{
	const char *rest = user + strlen(SA_USER), *colon = strchr(rest, ':');

	if (!colon)
		return false;
	for (size_t i = 0; i < jval_size(sas); i++) {
		struct jval sa = jval_at(sas, i);
		const char *ns = jval_str(jval_get(sa, "namespace"));
		const char *name = jval_str(jval_get(sa, "name"));

		if (ns && name && strlen(ns) == (size_t)(colon - rest) &&
		    strncmp(ns, rest, (size_t)(colon - rest)) == 0 && strcmp(name, colon + 1) == 0)
			return true;
	}
	return false;
}

static bool in_role(struct jval role, const struct px_identity *id)
{
	bool sa = id->user && strncmp(id->user, SA_USER, strlen(SA_USER)) == 0;

	return names(jval_get(role, "users"), id->user) ||
	       any_group(jval_get(role, "groups"), id) ||
	       (sa && listed_sa(jval_get(role, "serviceAccounts"), id->user));
}

/* Whether @user is a ServiceAccount of one of @tenant's namespaces. */
static bool tenant_sa(struct px_view *v, const char *tenant, const char *user)
{
	char ns[64];
	const char *rest, *colon;
	const struct jdoc *d;
	bool ok;

	if (!user || strncmp(user, SA_USER, strlen(SA_USER)) != 0)
		return false;
	rest = user + strlen(SA_USER);
	colon = strchr(rest, ':');
	if (!colon || (size_t)(colon - rest) >= sizeof(ns))
		return false;
	memcpy(ns, rest, (size_t)(colon - rest));
	ns[colon - rest] = '\0';
	d = inf_get_ref(v->namespaces, NULL, ns);
	ok = d && jd_label(d, LABEL_TENANT) && strcmp(jd_label(d, LABEL_TENANT), tenant) == 0;
	jdoc_unref(d);
	return ok;
}

bool px_view_is_member(struct px_view *v, const char *tenant, const struct px_identity *id)
{
	static const char *const roles[] = {"owners", "editors", "viewers"};
	const struct jdoc *t = inf_get_ref(v->tenants, NULL, tenant);
	struct jval ac = jd_get(t, "spec", "accessControl", NULL);
	bool ok = false;

	for (size_t i = 0; live(t) && !ok && i < sizeof(roles) / sizeof(*roles); i++)
		ok = in_role(jval_get(ac, roles[i]), id);
	if (live(t) && !ok)
		ok = tenant_sa(v, tenant, id->user);
	jdoc_unref(t);
	return ok;
}

struct px_nsmap *px_view_nsmap(struct px_view *v, const char *tenant)
{
	struct jdoc_list l = inf_by_index_ref(v->namespaces, IDX_TENANT, tenant);
	const char **full = xcalloc(l.n ? l.n : 1, sizeof(*full));
	struct px_nsmap *m;

	for (size_t i = 0; i < l.n; i++)
		full[i] = jd_name(l.items[i]);
	m = px_nsmap_new(tenant, full, l.n);
	free(full);
	jdoc_list_release(&l);
	return m;
}
