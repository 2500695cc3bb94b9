/*
 * admit_rbac.c - RoleBindings in tenant namespaces bind only the tenant's members and the
 * LandlordConfig's privileged subjects: the same judgement the Tenant controller applies
 * (membership.h), given at the door with the reason. An UPDATE is checked on the subjects it
 * adds: one already bound is the controller's to remove.
 */
#include <stdio.h>
#include <string.h>

#include "tenancy/admit_internal.h"
#include "tenancy/membership.h"

#define SA_USER_PREFIX  "system:serviceaccount:"
#define SA_GROUP_PREFIX "system:serviceaccounts:"

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The namespace a ServiceAccount subject, SA user or SA group names, into @ns; false if none. */
static bool subject_sa_namespace(struct jval subject, const char *binding_ns, char ns[256])
{
	const char *kind = jval_str(jval_get(subject, "kind"));
	const char *name = jval_str(jval_get(subject, "name"));
	const char *sns = jval_str(jval_get(subject, "namespace"));
	const char *colon;

	if (kind == NULL || name == NULL)
		return false;
	if (strcmp(kind, "ServiceAccount") == 0) {
		snprintf(ns, 256, "%s", sns && *sns ? sns : binding_ns);
		return true;
	}
	if (strcmp(kind, "Group") == 0 && starts(name, SA_GROUP_PREFIX)) {
		snprintf(ns, 256, "%s", name + strlen(SA_GROUP_PREFIX));
		return true;
	}
	if (strcmp(kind, "User") == 0 && starts(name, SA_USER_PREFIX) &&
	    (colon = strchr(name + strlen(SA_USER_PREFIX), ':')) != NULL) {
		snprintf(ns, 256, "%.*s", (int)(colon - name - strlen(SA_USER_PREFIX)),
		         name + strlen(SA_USER_PREFIX));
		return true;
	}
	return false;
}

static const char *broad_group(const char *kind, const char *name)
{
	if (strcmp(kind, "Group") != 0)
		return NULL;
	if (strcmp(name, "system:authenticated") == 0)
		return "every authenticated user";
	if (strcmp(name, "system:unauthenticated") == 0)
		return "every anonymous user";
	if (strcmp(name, "system:serviceaccounts") == 0)
		return "every ServiceAccount of the cluster";
	return NULL;
}

/* Why @subject is outside the tenant, after "binds <subject>". */
static void why_outside(struct adm_ctx *c, struct denial *d, struct jval subject)
{
	const char *kind = jval_str(jval_get(subject, "kind"));
	const char *name = jval_str(jval_get(subject, "name"));
	const struct adm_view_ops *ops = c->view->ops;
	const struct adm_tenant *other;
	const char *broad, *member_of = NULL;
	char ns[256];

	if (kind == NULL || name == NULL) {
		denial_text(d, ", a subject landlord cannot read (kind and name are required)");
		return;
	}
	if ((broad = broad_group(kind, name)) != NULL) {
		denial_text(d, ", which is %s", broad);
		return;
	}
	if (subject_sa_namespace(subject, c->rq->ns, ns)) {
		other = ops->tenant_of_namespace(c->view->ctx, ns);
		denial_text(d, ", of namespace ");
		denial_quote(d, ns, strlen(ns));
		if (other)
			denial_text(d, " of tenant \"%s\"", other->name);
		else
			denial_text(d, ", not one of tenant \"%s\"", c->tenant->name);
		return;
	}
	if (ops->member_tenant)
		member_of = ops->member_tenant(c->view->ctx, kind, name);
	if (member_of && strcmp(member_of, c->tenant->name) != 0) {
		denial_text(d, ", a member of tenant ");
		denial_quote(d, member_of, strlen(member_of));
	} else {
		denial_text(d, ", not a member of tenant \"%s\"", c->tenant->name);
	}
}

/* User "alice", Group "dev", ServiceAccount "ci/bot"; an unknown kind quoted too. */
static void describe(struct denial *d, struct jval subject)
{
	const char *kind = jval_str(jval_get(subject, "kind"));
	const char *name = jval_str(jval_get(subject, "name"));
	const char *ns = jval_str(jval_get(subject, "namespace"));
	char both[600];

	if (kind && (strcmp(kind, "User") == 0 || strcmp(kind, "Group") == 0 ||
	             strcmp(kind, "ServiceAccount") == 0)) {
		denial_text(d, "%s ", kind);
	} else {
		denial_text(d, "a subject of kind ");
		denial_quote(d, kind ? kind : "", kind ? strlen(kind) : 0);
		denial_text(d, " named ");
	}
	if (ns && *ns && kind && strcmp(kind, "ServiceAccount") == 0) {
		snprintf(both, sizeof(both), "%s/%s", ns, name ? name : "");
		denial_quote(d, both, strlen(both));
	} else {
		denial_quote(d, name ? name : "", name ? strlen(name) : 0);
	}
}

static bool subject_check(struct adm_ctx *c, struct jval subject)
{
	const struct lcfg *cfg = c->view->ops->config(c->view->ctx);
	const char *binding = jval_name(c->rq->object);
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	if (tm_subject_verdict(c->tenant->obj, cfg, c->tenant->namespaces, c->rq->ns, subject) !=
	    TM_OUTSIDER)
		return false;
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "RoleBinding ");
	denial_quote(&d, binding ? binding : "", binding ? strlen(binding) : 0);
	denial_text(&d, " binds ");
	describe(&d, subject);
	why_outside(c, &d, subject);
	denial_text(&d,
	            " (allowed: members of tenant \"%s\", ServiceAccounts of its namespaces, "
	            "and the LandlordConfig's privileged subjects)",
	            c->tenant->name);
	return adm__violation(c, ADM_RBAC, msg);
}

static bool same_str(struct jval a, struct jval b, const char *key)
{
	const char *x = jval_str(jval_get(a, key)), *y = jval_str(jval_get(b, key));

	return strcmp(x ? x : "", y ? y : "") == 0;
}

/* Was @subject in the binding before this UPDATE? Then it is not checked again. */
static bool subject_kept(struct adm_ctx *c, struct jval subject)
{
	struct jval old = jval_get(c->rq->old_object, "subjects"), s;
	size_t i;

	if (c->rq->op != ADM_UPDATE)
		return false;
	jval_foreach(old, i, s)
		if (same_str(s, subject, "kind") && same_str(s, subject, "name") &&
		    same_str(s, subject, "namespace"))
			return true;
	return false;
}

bool adm__rolebinding(struct adm_ctx *c)
{
	struct jval subjects = jval_get(c->rq->object, "subjects"), s;
	size_t i;

	jval_foreach(subjects, i, s)
		if (!subject_kept(c, s) && subject_check(c, s))
			return true;
	return false;
}
