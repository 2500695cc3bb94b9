/*
 * admit_namespace.c - self-service namespaces (issue 12, point 6): which tenant a Namespace
 * CREATE joins, whether its requester may make it there, and how many namespaces the tenant
 * has besides it, for the caller's maxNamespaces reservation.
 *
 * A namespace joins tenant T when it carries landlord.dev/tenant: T, or, without the label,
 * when its name starts with "T-" (the longest such T the requester owns) or T's spec claims it;
 * the mutating webhook then adds the label. Only T's owners (users, groups, ServiceAccounts of
 * spec.accessControl.owners) may do either, and the name must carry T's prefix unless T's spec
 * claims it. A name a tenant claims or prefixes is refused to everyone else (nobody takes a
 * tenant's name first), and an owner may create no namespace outside its tenants (landlord's
 * grant is for those). Other names by other requesters are RBAC's business alone.
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "tenancy/admit_internal.h"
#include "tenancy/tenant_model.h"

#define SA_USER_PREFIX "system:serviceaccount:"

/* Whether ServiceAccount user "system:serviceaccount:<ns>:<name>" is listed in @sas. */
static bool sa_listed(struct jval sas, const char *username)
{
	const char *rest, *colon;
	struct jval sa;
	size_t i;

	if (strncmp(username, SA_USER_PREFIX, sizeof(SA_USER_PREFIX) - 1) != 0)
		return false;
	rest = username + sizeof(SA_USER_PREFIX) - 1;
	if ((colon = strchr(rest, ':')) == NULL)
		return false;
	jval_foreach(sas, i, sa) {
		const char *ns = jval_str(jval_get(sa, "namespace"));
		const char *name = jval_str(jval_get(sa, "name"));

		if (ns && name && strlen(ns) == (size_t)(colon - rest) &&
		    strncmp(ns, rest, (size_t)(colon - rest)) == 0 && strcmp(name, colon + 1) == 0)
			return true;
	}
	return false;
}

bool adm__owns(const struct adm_request *rq, const struct adm_tenant *t)
{
	struct jval owners = jval_path(t->obj, "spec", "accessControl", "owners", NULL), g;
	size_t i;

	if (*rq->username && jval_has_string(jval_get(owners, "users"), rq->username))
		return true;
	jval_foreach(rq->groups, i, g)
		if (jval_str(g) && jval_has_string(jval_get(owners, "groups"), jval_str(g)))
			return true;
	return *rq->username && sa_listed(jval_get(owners, "serviceAccounts"), rq->username);
}

static bool claimed_by(const struct adm_tenant *t, const char *ns)
{
	struct tm_claims claims = {0};
	bool found;

	if (tm_claims_build(t->obj, &claims) != 0)
		return false;
	found = tm_claims_find(&claims, ns) != NULL;
	tm_claims_release(&claims);
	return found;
}

static bool prefixed(const char *tenant, const char *ns)
{
	size_t n = strlen(tenant);

	return strncmp(ns, tenant, n) == 0 && ns[n] == '-' && ns[n + 1] != '\0';
}

/*
 * The tenant an unlabelled namespace @ns joins: the one whose spec claims it, else the longest
 * "<tenant>-" prefix of its name among tenants the requester owns. *@foreign (OUT) is the
 * longest prefix tenant the requester does not own, for the message; NULL when none.
 */
static const struct adm_tenant *tenant_by_name(struct adm_ctx *c, const char *ns,
                                               const struct adm_tenant **foreign)
{
	const struct adm_view *v = c->view;
	const char *claimant = v->ops->namespace_claimant(v->ctx, ns, "");
	const struct adm_tenant *t = claimant ? v->ops->tenant(v->ctx, claimant) : NULL;
	char head[254];

	*foreign = NULL;
	if (t && adm__owns(c->rq, t))
		return t;
	snprintf(head, sizeof(head), "%s", ns);
	for (size_t i = strlen(head); i > 1; i--) {
		if (head[i - 1] != '-')
			continue;
		head[i - 1] = '\0';
		t = v->ops->tenant(v->ctx, head);
		if (t && adm__owns(c->rq, t))
			return t;
		if (t && *foreign == NULL)
			*foreign = t;
	}
	return NULL;
}

static bool refuse(struct adm_ctx *c, const char *ns, const char *why)
{
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "namespace ");
	denial_quote(&d, ns, strlen(ns));
	denial_text(&d, ": %s", why);
	return adm__violation(c, ADM_NAMESPACES, msg);
}

/* The label names no Tenant: its value is the requester's, so it is quoted. */
static bool no_such_tenant(struct adm_ctx *c, const char *ns, const char *label)
{
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "namespace ");
	denial_quote(&d, ns, strlen(ns));
	denial_text(&d, ": tenant ");
	denial_quote(&d, label, strlen(label));
	denial_text(&d, " (label " LABEL_TENANT ") does not exist; name an existing tenant");
	return adm__violation(c, ADM_NAMESPACES, msg);
}

/* A labelled CREATE: the tenant must exist, be owned by the requester, and prefix the name. */
static const struct adm_tenant *labelled(struct adm_ctx *c, const char *ns, const char *label,
                                         bool *stop)
{
	const struct adm_tenant *t = c->view->ops->tenant(c->view->ctx, label);
	char why[DENIAL_MSG_MAX / 2];

	if (t == NULL) {
		*stop = no_such_tenant(c, ns, label);
		return NULL;
	}
	if (!adm__owns(c->rq, t))
		snprintf(why, sizeof(why),
		         "only owners of tenant \"%s\" may create its namespaces (ask an "
		         "administrator to add you to spec.accessControl.owners of \"%s\")",
		         t->name, t->name);
	else if (!prefixed(label, ns) && !claimed_by(t, ns))
		snprintf(why, sizeof(why),
		         "a namespace of tenant \"%s\" must be named \"%s-<name>\" (or be listed "
		         "in the spec of tenant \"%s\")",
		         t->name, t->name, t->name);
	else
		return t;
	*stop = refuse(c, ns, why);
	return t;
}

/* Whether the requester owns any tenant (the view's owner index). */
static bool owns_any(const struct adm_ctx *c)
{
	const struct adm_view *v = c->view;
	struct jval g;
	size_t i;

	if (v->ops->member_tenant == NULL)
		return false;
	if (*c->rq->username && v->ops->member_tenant(v->ctx, "Owner/User", c->rq->username))
		return true;
	jval_foreach(c->rq->groups, i, g)
		if (jval_str(g) && v->ops->member_tenant(v->ctx, "Owner/Group", jval_str(g)))
			return true;
	return false;
}

/*
 * Without the label: the tenant the name selects, which the requester must own. A name of no
 * tenant is not landlord's business, except for owners: landlord's grant lets them create
 * namespaces for their tenants only (or they could escape maxNamespaces and their quota).
 */
static void unlabelled(struct adm_ctx *c, const char *ns, bool *stop)
{
	const struct adm_tenant *foreign, *t = tenant_by_name(c, ns, &foreign);
	const char *claimant = c->view->ops->namespace_claimant(c->view->ctx, ns, "");
	char why[DENIAL_MSG_MAX / 2];

	if (t) {
		c->tenant = t;
		c->d->ns.add_label = true;
		return;
	}
	if (claimant)
		snprintf(why, sizeof(why),
		         "tenant \"%s\" claims it in its spec; only its owners may create it",
		         claimant);
	else if (foreign)
		snprintf(why, sizeof(why),
		         "the prefix belongs to tenant \"%s\", whose owners alone may create "
		         "namespaces named \"%s-<name>\"",
		         foreign->name, foreign->name);
	else if (owns_any(c))
		snprintf(why, sizeof(why),
		         "belongs to no tenant you own; name it \"<tenant>-<name>\" for a tenant "
		         "whose owner you are (only administrators create other namespaces)");
	else
		return;
	*stop = refuse(c, ns, why);
}

/* The distinct names among @t's namespaces (labelled), its spec's claims and @slots' keys
 * (NULL: none), @ns excepted. */
static size_t usage(const struct adm_tenant *t, const char *ns, const json_t *slots)
{
	json_t *names = json_object(), *v;
	struct tm_claims claims = {0};
	const char *k;
	size_t n;

	json_object_foreach((json_t *)t->namespaces, k, v)
		json_object_set(names, k, json_true());
	json_object_foreach((json_t *)slots, k, v)
		json_object_set(names, k, json_true());
	if (tm_claims_build(t->obj, &claims) == 0)
		for (size_t i = 0; i < claims.n; i++)
			json_object_set(names, claims.ns[i].name, json_true());
	tm_claims_release(&claims);
	json_object_del(names, ns);
	n = json_object_size(names);
	json_decref(names);
	return n;
}

static bool count_check(struct adm_ctx *c, const char *ns)
{
	const char *plan = jval_str(jval_path(c->tenant->obj, "spec", "plan", NULL));
	long long max = plan && c->view->ops->plan_max_namespaces
	                        ? c->view->ops->plan_max_namespaces(c->view->ctx, plan)
	                        : -1;
	size_t used = usage(c->tenant, ns, NULL);
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	if (max < 0)
		return false;
	if ((long long)used < max) {
		c->d->ns.max = max;
		return false;
	}
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "namespace ");
	denial_quote(&d, ns, strlen(ns));
	denial_text(&d,
	            ": tenant \"%s\" has %zu namespaces, the most its plan \"%s\" allows "
	            "(maxNamespaces %lld); delete one, or ask an administrator for a larger plan",
	            c->tenant->name, used, plan, max);
	return adm__violation(c, ADM_NAMESPACES, msg);
}

bool adm__namespace_create(struct adm_ctx *c)
{
	const char *ns = c->rq->name && *c->rq->name ? c->rq->name : c->rq->ns;
	const char *label = jval_label(c->rq->object, LABEL_TENANT);
	bool stop = false;

	if (label)
		c->tenant = labelled(c, ns, label, &stop);
	else
		unlabelled(c, ns, &stop);
	if (stop || c->tenant == NULL)
		return stop;
	snprintf(c->d->ns.tenant, sizeof(c->d->ns.tenant), "%s", c->tenant->name);
	if (adm__cordon(c))
		return true;
	return count_check(c, ns);
}

void adm_owner_keys(struct jval tenant, void (*emit)(const char *key, void *ud), void *ud)
{
	struct jval owners = jval_path(tenant, "spec", "accessControl", "owners", NULL), s;
	char key[600];
	size_t i;

	jval_foreach(jval_get(owners, "users"), i, s)
		if (jval_str(s) && snprintf(key, sizeof(key), "Owner/User/%s", jval_str(s)) > 0)
			emit(key, ud);
	jval_foreach(jval_get(owners, "groups"), i, s)
		if (jval_str(s) && snprintf(key, sizeof(key), "Owner/Group/%s", jval_str(s)) > 0)
			emit(key, ud);
	jval_foreach(jval_get(owners, "serviceAccounts"), i, s) {
		const char *ns = jval_str(jval_get(s, "namespace"));
		const char *name = jval_str(jval_get(s, "name"));

		if (ns && name) {
			snprintf(key, sizeof(key), "Owner/User/" SA_USER_PREFIX "%s:%s", ns, name);
			emit(key, ud);
		}
	}
}

size_t adm_namespace_usage(const struct adm_view *view, const char *tenant, const char *ns,
                           const json_t *slots)
{
	const struct adm_tenant *t;
	size_t n = json_object_size(slots);

	if (view->ops->hold)
		view->ops->hold(view->ctx);
	t = view->ops->tenant(view->ctx, tenant);
	if (t)
		n = usage(t, ns, slots);
	else if (json_object_get(slots, ns))
		n--;
	if (view->ops->release)
		view->ops->release(view->ctx);
	return n;
}
