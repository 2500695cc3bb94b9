/*
 * rules.h - the admission rules landlord's webhook enforces: one table, in rules.c.
 */
#ifndef LANDLORD_WEBHOOK_RULES_H
#define LANDLORD_WEBHOOK_RULES_H

#include "webhook/admission.h"

/* Ended by a row whose name is NULL: the rules served on POST /validate. */
extern const struct admission_rule webhook_rules[];
/*
 * The same for POST /mutate. A row there may only deny for now: the route answers with no
 * patch (the namespace mutation adds one).
 */
extern const struct admission_rule webhook_mutations[];

/*
 * The tenant rules (tenancy/admit.h, docs/admission-rules.md) as one row:
 *
 *	{"tenancy", wh_tenancy_resources, ADMISSION_ANY_OP, wh_tenancy_validate, &view},
 *
 * where @ud is a const struct adm_view * that outlives the route (the webhook's informer-backed
 * view; tests use admit_memview.h). Every resource: the cordon covers them all, and the
 * webhook configuration decides what the API server sends. A request that cannot be read is
 * refused with 400.
 */
extern const char *const wh_tenancy_resources[];
void wh_tenancy_validate(const json_t *request, struct admission_verdict *v, void *ud);

#endif
