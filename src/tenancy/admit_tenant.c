/*
 * admit_tenant.c - the rules on Tenant and Plan objects (issue 12, point 7): a valid name, a
 * host policy that compiles, no namespace claimed by two tenants, withoutTenantPrefix names not
 * already taken, a missing Plan as a warning (GitOps may apply the Tenant first), and no
 * deletion of a Plan still in use. The decisions hold for every requester, administrators
 * included; the webhook configurations' match conditions keep the API server from sending the
 * requests of the exempt (cluster administrators among them), as for every other rule.
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "kube/k8sname.h"
#include "tenancy/admit_internal.h"
#include "tenancy/imageref.h"
#include "tenancy/tenant_model.h"

/* The CRD's bound on a Tenant name, so that "<tenant>-<name>" fits a namespace name. */
#define TENANT_NAME_MAX 40

static bool name_check(struct adm_ctx *c, const char *name)
{
	const char *why = name ? k8s_dns_label_problem(name, strlen(name)) : "a name is required";
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	if (why == NULL && strlen(name) <= TENANT_NAME_MAX)
		return false;
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "Tenant name ");
	denial_quote(&d, name ? name : "", name ? strlen(name) : 0);
	denial_text(&d, " is not valid: %s (allowed: an RFC 1123 label of at most %d characters)",
	            why ? why : "it is too long", TENANT_NAME_MAX);
	return adm__violation(c, ADM_TENANTS, msg);
}

static bool hosts_check(struct adm_ctx *c, const char *tenant)
{
	struct jval hosts = jval_path(c->rq->object, "spec", "allowed", "hosts", NULL);
	json_t *copy = jval_to_json(hosts);
	struct hm_policy *p = NULL;
	struct ll_err err = {{0}};
	char msg[DENIAL_MSG_MAX];
	struct denial d;
	bool stop = false;

	if (hm_policy_from_json(copy, &p, &err) != 0) {
		denial_init(&d, msg, sizeof(msg));
		denial_text(&d, "spec.allowed.hosts of tenant \"%s\" is not valid: ", tenant);
		denial_quote(&d, err.msg, strlen(err.msg));
		stop = adm__violation(c, ADM_TENANTS, msg);
	}
	hm_policy_free(p);
	json_decref(copy);
	return stop;
}

static bool claim_check(struct adm_ctx *c, const char *tenant, const struct tm_ns *ns)
{
	const char *other = c->view->ops->namespace_claimant(c->view->ctx, ns->name, tenant);
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	if (!ns->collides && other == NULL)
		return false;
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "namespace ");
	denial_quote(&d, ns->name, strlen(ns->name));
	if (ns->collides)
		denial_text(&d,
		            " is claimed twice by tenant \"%s\" (each namespace name may come "
		            "from one entry only)",
		            tenant);
	else
		denial_text(&d,
		            " of tenant \"%s\" is already claimed by tenant \"%s\" (a namespace "
		            "belongs to one tenant)",
		            tenant, other);
	return adm__violation(c, ADM_TENANTS, msg);
}

/*
 * A withoutTenantPrefix name that exists and is not labelled for this tenant is taken, one that
 * the tenant released too (landlord.dev/released-from: the controller reports it as a collision
 * until an administrator labels it for the tenant again).
 */
static bool taken_check(struct adm_ctx *c, const char *tenant, const char *name)
{
	struct jval ns = c->view->ops->namespace_obj(c->view->ctx, name);
	const char *owner = jval_label(ns, LABEL_TENANT);
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	if (jval_type(ns) == JT_NONE || (owner && strcmp(owner, tenant) == 0))
		return false;
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "spec.namespaces.withoutTenantPrefix of tenant \"%s\" names namespace ",
	            tenant);
	denial_quote(&d, name, strlen(name));
	denial_text(&d,
	            ", which already exists and is not the tenant's (allowed: a name not "
	            "taken, or a namespace labelled " LABEL_TENANT "=%s)",
	            tenant);
	return adm__violation(c, ADM_TENANTS, msg);
}

static bool claims_check(struct adm_ctx *c, const char *tenant)
{
	struct jval plain = jval_path(c->rq->object, "spec", "namespaces", "withoutTenantPrefix",
	                              NULL),
	            v;
	struct tm_claims claims = {0};
	bool stop = false;
	size_t i;

	if (tm_claims_build(c->rq->object, &claims) != 0)
		return false; /* no name: name_check() has refused already */
	for (i = 0; i < claims.n && !stop; i++)
		stop = claim_check(c, tenant, &claims.ns[i]);
	tm_claims_release(&claims);
	jval_foreach(plain, i, v)
		if (!stop && jval_str(v))
			stop = taken_check(c, tenant, jval_str(v));
	return stop;
}

/* Notes that admit the Tenant: a Plan not there yet, registry entries that allow nothing. */
static void notes(struct adm_ctx *c, const char *tenant)
{
	const char *plan = jval_str(jval_path(c->rq->object, "spec", "plan", NULL));
	struct jval regs = jval_path(c->rq->object, "spec", "allowed", "registries", NULL), v;
	char msg[DENIAL_MSG_MAX], norm[IMAGEREF_NAME_MAX + 1];
	struct ll_err err = {{0}};
	struct denial d;
	size_t i;

	if (plan && !c->view->ops->plan_exists(c->view->ctx, plan)) {
		denial_init(&d, msg, sizeof(msg));
		denial_text(&d, "plan ");
		denial_quote(&d, plan, strlen(plan));
		denial_text(&d,
		            " does not exist yet: the namespaces of tenant \"%s\" are created "
		            "but nothing is granted in them until it does (PlanNotFound)",
		            tenant);
		adm__warn(c->d, msg);
	}
	jval_foreach(regs, i, v) {
		if (!jval_str(v) ||
		    imageref_registry_normalize(jval_str(v), jval_strlen(v), norm, &err) == 0)
			continue;
		denial_init(&d, msg, sizeof(msg));
		denial_text(&d, "spec.allowed.registries entry ");
		denial_quote(&d, jval_str(v), jval_strlen(v));
		denial_text(&d, " allows no image: %s", err.msg);
		adm__warn(c->d, msg);
	}
}

bool adm__tenant_object(struct adm_ctx *c)
{
	const char *name = jval_name(c->rq->object);

	if (name_check(c, name) || hosts_check(c, name) || claims_check(c, name))
		return true;
	notes(c, name);
	return false;
}

bool adm__plan_delete(struct adm_ctx *c)
{
	const char *user = c->view->ops->plan_user(c->view->ctx, c->rq->name);
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	if (user == NULL)
		return false;
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "plan ");
	denial_quote(&d, c->rq->name, strlen(c->rq->name));
	denial_text(&d, " is still used by tenant ");
	denial_quote(&d, user, strlen(user));
	denial_text(&d, " (allowed: deleting a plan no tenant names; move its tenants first)");
	return adm__violation(c, ADM_TENANTS, msg);
}
