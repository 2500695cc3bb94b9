/*
 * nsreserve.h - the shape of a tenant's maxNamespaces reservations, shared by the webhook that
 * takes slots (webhook/reserve.h) and the controller that releases stale ones
 * (controllers/reservations.c).
 *
 * One ConfigMap per tenant, RESERVATIONS_PREFIX<tenant> in landlord's namespace, labelled
 * LABEL_RESERVATIONS_FOR=<tenant>. Its data maps each namespace being created to the Unix time
 * (decimal seconds) its slot was taken. A slot is released once its namespace exists and
 * RESERVATION_SETTLE_S have passed, or RESERVATION_TTL_S after it was taken whatever happened
 * (the create failed after admission).
 *
 * Invariants: pure, inputs borrowed, thread-safe.
 */
#ifndef LANDLORD_NSRESERVE_H
#define LANDLORD_NSRESERVE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define RESERVATIONS_PREFIX    "landlord-reservations."
#define LABEL_RESERVATIONS_FOR "landlord.dev/reservations-for"
#define RESERVATION_TTL_S      60
/* A slot whose namespace exists is released this long after it was taken: by then every
 * replica's cache counts the namespace itself. */
#define RESERVATION_SETTLE_S 5

/** nsr_slot_time() - the Unix time in slot value @taken, or -1 when it is not one. */
int64_t nsr_slot_time(const char *taken);

/** nsr_expired() - whether slot value @taken ("<unix seconds>") has expired at @now. Values that
 * are not such a number have. */
bool nsr_expired(const char *taken, int64_t now);

/**
 * nsr_prune() - @data (a reservations ConfigMap's data, borrowed; NULL: none) without expired
 * slots, as a new object; *@next_expiry (OUT) is when the earliest kept slot expires (0 when
 * none is kept).
 */
json_t *nsr_prune(const json_t *data, int64_t now, int64_t *next_expiry);

#endif
