/*
 * rules.h - the admission rules landlord's webhook enforces: one table, in rules.c.
 */
#ifndef LANDLORD_WEBHOOK_RULES_H
#define LANDLORD_WEBHOOK_RULES_H

#include "webhook/admission.h"

/* Ended by a row whose name is NULL. */
extern const struct admission_rule webhook_rules[];

#endif
