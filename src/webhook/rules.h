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

#endif
