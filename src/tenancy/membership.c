/* membership.c - who belongs to a tenant (see membership.h). */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/jdoc.h"
#include "tenancy/membership.h"

#define SA_USER_PREFIX  "system:serviceaccount:"
#define SA_GROUP_PREFIX "system:serviceaccounts:"

static const char *const ROLES[] = {"owners", "editors", "viewers"};

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* Listed under @what ("users" or "groups") for any of the three roles? */
static bool named_in_spec(struct jval tenant, const char *what, const char *name)
{
	for (size_t r = 0; r < 3; r++)
		if (jval_has_string(
		            jval_path(tenant, "spec", "accessControl", ROLES[r], what, NULL), name))
			return true;
	return false;
}

static bool sa_in_spec(struct jval tenant, const char *ns, const char *name)
{
	for (size_t r = 0; r < 3; r++) {
		struct jval list = jval_path(tenant, "spec", "accessControl", ROLES[r],
		                             "serviceAccounts", NULL),
		            v;
		size_t i;

		jval_foreach(list, i, v)
			if (str_eq(jval_str(jval_get(v, "namespace")), ns) &&
			    str_eq(jval_str(jval_get(v, "name")), name))
				return true;
	}
	return false;
}

static bool sa_member(struct jval tenant, const json_t *namespaces, const char *ns,
                      const char *name)
{
	return json_object_get(namespaces, ns) != NULL || sa_in_spec(tenant, ns, name);
}

/* "system:serviceaccount:<ns>:<name>" split into @ns; returns the name, or NULL. */
static const char *sa_user(const char *user, char ns[256])
{
	const char *rest, *colon;

	if (strncmp(user, SA_USER_PREFIX, strlen(SA_USER_PREFIX)) != 0)
		return NULL;
	rest = user + strlen(SA_USER_PREFIX);
	colon = strchr(rest, ':');
	if (colon == NULL || colon == rest || (size_t)(colon - rest) >= 256 || colon[1] == '\0' ||
	    strchr(colon + 1, ':'))
		return NULL;
	memcpy(ns, rest, (size_t)(colon - rest));
	ns[colon - rest] = '\0';
	return colon + 1;
}

static enum tm_verdict user_verdict(struct jval tenant, const struct lcfg *cfg,
                                    const json_t *namespaces, const char *name)
{
	char ns[256];
	const char *sa = sa_user(name, ns);

	if (named_in_spec(tenant, "users", name) || (sa && sa_member(tenant, namespaces, ns, sa)))
		return TM_MEMBER;
	return lcfg_is_privileged_user(cfg, name, NULL, 0) ? TM_EXCEPTION : TM_OUTSIDER;
}

static enum tm_verdict group_verdict(struct jval tenant, const struct lcfg *cfg,
                                     const json_t *namespaces, const char *name)
{
	const char *ns = name + strlen(SA_GROUP_PREFIX);

	if (named_in_spec(tenant, "groups", name) ||
	    (strncmp(name, SA_GROUP_PREFIX, strlen(SA_GROUP_PREFIX)) == 0 &&
	     json_object_get(namespaces, ns)))
		return TM_MEMBER;
	return lcfg_is_privileged_user(cfg, NULL, &name, 1) ? TM_EXCEPTION : TM_OUTSIDER;
}

static enum tm_verdict sa_verdict(struct jval tenant, const struct lcfg *cfg,
                                  const json_t *namespaces, const char *ns, const char *name)
{
	char user[600];

	if (sa_member(tenant, namespaces, ns, name))
		return TM_MEMBER;
	/* privileged.serviceAccounts is matched through the ServiceAccount's user name */
	if ((size_t)snprintf(user, sizeof(user), SA_USER_PREFIX "%s:%s", ns, name) >= sizeof(user))
		return TM_OUTSIDER;
	return lcfg_is_privileged_user(cfg, user, NULL, 0) ? TM_EXCEPTION : TM_OUTSIDER;
}

/*
 * The account a TemplateInstance in @binding_ns applies as (landlord-system's
 * ti.<binding_ns>.editor or .owner), or a TemplateGroupInstance's chart runs as there
 * (tgi.<binding_ns>): a member of the namespace's tenant, bound there only.
 */
static bool is_apply_account(const char *ns, const char *name, const char *binding_ns)
{
	char editor[300], owner[300], group[300];

	if (ns == NULL || binding_ns == NULL || strcmp(ns, LANDLORD_SYSTEM_NAMESPACE) != 0)
		return false;
	snprintf(editor, sizeof(editor), TI_ACCOUNT_FMT, binding_ns, WRITER_EDITOR);
	snprintf(owner, sizeof(owner), TI_ACCOUNT_FMT, binding_ns, WRITER_OWNER);
	snprintf(group, sizeof(group), TGI_ACCOUNT_FMT, binding_ns);
	return strcmp(name, editor) == 0 || strcmp(name, owner) == 0 || strcmp(name, group) == 0;
}

enum tm_verdict tm_subject_verdict(struct jval tenant, const struct lcfg *cfg,
                                   const json_t *namespaces, const char *binding_ns,
                                   struct jval subject)
{
	const char *kind = jval_str(jval_get(subject, "kind"));
	const char *name = jval_str(jval_get(subject, "name"));
	const char *ns = jval_str(jval_get(subject, "namespace"));

	if (kind == NULL || name == NULL || *name == '\0')
		return TM_OUTSIDER;
	if (strcmp(kind, "User") == 0)
		return user_verdict(tenant, cfg, namespaces, name);
	if (strcmp(kind, "Group") == 0)
		return group_verdict(tenant, cfg, namespaces, name);
	if (strcmp(kind, "ServiceAccount") == 0 && is_apply_account(ns, name, binding_ns) &&
	    json_object_get(namespaces, binding_ns))
		return TM_MEMBER;
	if (strcmp(kind, "ServiceAccount") == 0)
		return sa_verdict(tenant, cfg, namespaces, ns && *ns ? ns : binding_ns, name);
	return TM_OUTSIDER;
}

void tm_subject_describe(struct jval subject, char *out, size_t size)
{
	const char *kind = jval_str(jval_get(subject, "kind"));
	const char *ns = jval_str(jval_get(subject, "namespace"));
	const char *name = jval_str(jval_get(subject, "name"));

	if (ns && *ns)
		snprintf(out, size, "%s %s/%s", kind ? kind : "?", ns, name ? name : "?");
	else
		snprintf(out, size, "%s %s", kind ? kind : "?", name ? name : "?");
}
