/*
 * admit_internal.h - what the admit_*.c files share (not for callers of admit.h).
 *
 * A rule reads the request and the view through a struct adm_ctx and reports each violation to
 * adm__violation(), which denies or audits by the family's mode. Every rule function returns
 * true when the decision is final (denied): the caller stops there.
 */
#ifndef LANDLORD_ADMIT_INTERNAL_H
#define LANDLORD_ADMIT_INTERNAL_H

#include "tenancy/admit.h"

struct adm_ctx {
	const struct adm_request *rq;
	const struct adm_view *view;
	const struct adm_tenant *tenant; /* the namespace's tenant; NULL for cluster objects */
	struct adm_decision *d;
};

/**
 * adm__violation() - @msg breaks a rule of family @f: deny (returns true) or, in audit mode,
 * add the warning "audit: @msg" and return false.
 */
bool adm__violation(struct adm_ctx *c, enum adm_family f, const char *msg);

/** adm__warn() - add warning @msg (kept when there is room; counted otherwise). */
void adm__warn(struct adm_decision *d, const char *msg);

/** adm__is(): does the request concern @group/@resource (subresource ignored)? */
bool adm__is(const struct adm_request *rq, const char *group, const char *resource);

/**
 * adm__list() - spec.<section>.<field> of the tenant: the array, or the missing value when the
 * tenant has no such list (no restriction).
 */
struct jval adm__list(const struct adm_tenant *t, const char *section, const char *field);

/** adm__list_items() - append the string items of @list to @d (", "-separated, cut). */
void adm__list_items(struct denial *d, struct jval list);

/*
 * adm__class_check() - class @value (NULL or "": none) against @list (missing: allowed), for
 * @what ("storage class", "ingress class"...) of @object_desc (landlord's words, values quoted
 * already: "PersistentVolumeClaim \"data\""; NULL: not named). An absent class is allowed only
 * when "" is listed:
 *   storage class "gold" of PersistentVolumeClaim "data" is not allowed for tenant "acme"
 *   (allowed: fast)
 *   a pod without a priority class is not allowed for tenant "acme" (allowed: low)
 * Reports to family @f; returns as adm__violation().
 */
bool adm__class_check(struct adm_ctx *c, enum adm_family f, struct jval list, const char *what,
                      const char *value, const char *object_desc);

/* The families' rules (admit_rbac.c, admit_pods.c, admit_net.c, admit_tenant.c; the
 * templates family below is admit_templates.c's). */
bool adm__rolebinding(struct adm_ctx *c);
bool adm__pod(struct adm_ctx *c);
bool adm__template(struct adm_ctx *c);
bool adm__pvc(struct adm_ctx *c);
bool adm__ingress(struct adm_ctx *c);
bool adm__httproute(struct adm_ctx *c);
bool adm__gateway(struct adm_ctx *c);
bool adm__service(struct adm_ctx *c);
bool adm__tenant_object(struct adm_ctx *c);
bool adm__plan_delete(struct adm_ctx *c);
bool adm__namespace_create(struct adm_ctx *c);

/* The templates family (admit_templates.c): a TemplateInstance, a Template. */
bool adm__template_instance(struct adm_ctx *c);
bool adm__template_object(struct adm_ctx *c);
/**
 * adm__last_writer() - set c->d->last_writer for a TemplateInstance CREATE or UPDATE (admit.h),
 * the requester being privileged (@priv: landlord or the LandlordConfig's subjects) or one of
 * the cluster's components (@system).
 */
void adm__last_writer(struct adm_ctx *c, bool priv, bool system);

/** adm__owns() - is the requester one of @t's owners (user, group or ServiceAccount)? */
bool adm__owns(const struct adm_request *rq, const struct adm_tenant *t);

/** adm__cordon() - the cordon of c->tenant and of namespace rq->ns (admit.c). */
bool adm__cordon(struct adm_ctx *c);

/** adm__is_template_owner() - a workload kind checked by adm__template(). */
bool adm__is_template_owner(const struct adm_request *rq);

#endif
