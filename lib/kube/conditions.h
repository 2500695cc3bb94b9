/*
 * conditions.h - metav1.Condition lists in status, Kubernetes style.
 *
 * lastTransitionTime changes only when a condition's status changes; observedGeneration is set
 * on every condition written. Functions build new JSON; they never modify cached objects.
 */
#ifndef LANDLORD_CONDITIONS_H
#define LANDLORD_CONDITIONS_H

#include <jansson.h>

/**
 * cond_set() - return a new conditions array: @current (borrowed, may be NULL) with condition
 * @type replaced by the given values, keeping its lastTransitionTime when @status is unchanged.
 */
json_t *cond_set(const json_t *current, const char *type, const char *status, const char *reason,
                 const char *message, long long observed_generation);

/** cond_find() - the condition of @type in the array @conditions (lent), or NULL. */
const json_t *cond_find(const json_t *conditions, const char *type);

#endif
