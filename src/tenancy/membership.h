/*
 * membership.h - who belongs to a tenant, judged subject by subject.
 *
 * The Tenant controller asks this module about the subjects of RoleBindings it did not make:
 * in a tenant namespace every subject that is not a member (and not an exception the
 * LandlordConfig allows) is removed, and a namespace released from a tenant loses every
 * RoleBinding that grants a member (docs/tenants.md, "Access" and "Removal").
 *
 * A tenant's members are the users, groups and ServiceAccounts of its owners, editors and
 * viewers, and every ServiceAccount of one of its namespaces: as a ServiceAccount subject, as the
 * user "system:serviceaccount:<ns>:<name>", or as the group "system:serviceaccounts:<ns>".
 * Exceptions are LandlordConfig's privileged users, groups and serviceAccounts.
 *
 * Invariants: pure (no I/O), inputs borrowed (the Tenant and the subject are read in place from
 * their documents), thread-safe. A subject that cannot be read (no
 * kind, no name, an unknown kind) is an outsider: only what is understood is kept.
 */
#ifndef LANDLORD_MEMBERSHIP_H
#define LANDLORD_MEMBERSHIP_H

#include <jansson.h>

#include "base/jdoc.h"
#include "tenancy/landlordconfig.h"

enum tm_verdict {
	TM_MEMBER,    /* one of the tenant's users, groups or ServiceAccounts */
	TM_EXCEPTION, /* not a member, but privileged in the LandlordConfig */
	TM_OUTSIDER,  /* neither */
};

/**
 * tm_subject_verdict() - what RBAC subject @subject ({kind, name, namespace?}) is to @tenant.
 * @namespaces: an object whose keys are the tenant's namespaces (values are not read).
 * @binding_ns: the namespace of the RoleBinding that holds the subject (a ServiceAccount
 * subject without a namespace is in it). The account a TemplateInstance of @binding_ns applies
 * as (ServiceAccount landlord-system/ti.<binding_ns>.editor or .owner, docs/templates.md) is a
 * member when @binding_ns is one of the tenant's.
 */
enum tm_verdict tm_subject_verdict(struct jval tenant, const struct lcfg *cfg,
                                   const json_t *namespaces, const char *binding_ns,
                                   struct jval subject);

/** tm_subject_describe() - "User alice", "Group team-a", "ServiceAccount ci/bot" into @out. */
void tm_subject_describe(struct jval subject, char *out, size_t size);

#endif
