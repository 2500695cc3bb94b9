/*
 * denial.h - the one-line messages that admission denials give.
 *
 * Every webhook rule refuses with one line that names the rule, the value and what would be
 * accepted (issue 12, point 9), in one shape:
 *
 *   image "docker.io/x:1" is not from a registry allowed for tenant "acme" (allowed: ghcr.io/acme)
 *
 * A struct denial writes such a line into a caller-owned char array, piece by piece: text that
 * landlord words (denial_text()), values a user sent, quoted and escaped (denial_quote()), and
 * lists cut to their first DENIAL_LIST_SHOWN items and "and N more" (denial_item(),
 * denial_list_end()).
 *
 * Invariants:
 * - The output is always NUL-terminated, printable ASCII and one line: every byte below 0x20,
 *   0x7f and every byte above it is written as \xHH, in text and values alike, so no value can
 *   break the line or forge a second message. In quoted values '"' and '\' are escaped too.
 * - A value longer than DENIAL_VALUE_SHOWN bytes shows its first DENIAL_VALUE_SHOWN bytes and
 *   "...". A message longer than the array is cut and ends in "..." (arrays of at least 4 bytes;
 *   DENIAL_MSG_MAX always holds a message of the shapes above).
 * - No allocation, no I/O. A struct denial belongs to one thread; the module has no state.
 */
#ifndef LANDLORD_DENIAL_H
#define LANDLORD_DENIAL_H

#include <stdbool.h>
#include <stddef.h>

/* The array size every caller of a *_denial() function is advised to give. */
#define DENIAL_MSG_MAX 2048
/* Longest value shown whole, in input bytes; a longer one is cut and followed by "...". */
#define DENIAL_VALUE_SHOWN 200
/* Items of a list shown before "and N more". */
#define DENIAL_LIST_SHOWN 5

struct denial {
	char *out;   /* the caller's array */
	size_t size; /* its size */
	size_t len;  /* bytes written, not counting the NUL */
	bool full;   /* something did not fit: the message ends in "..." */
};

/**
 * denial_init() - start an empty message in @out (@size bytes, at least 1; the caller owns
 * @out, which the other calls fill while @d is in use).
 */
void denial_init(struct denial *d, char *out, size_t size);

/**
 * denial_text() - append landlord's own words, printf-style. The result is escaped like
 * everything else, but not quoted: use it for fixed text and for names landlord has validated
 * (a tenant name), never for a value that a request carries.
 */
void denial_text(struct denial *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * denial_quote() - append "@value" (@len bytes, NULs included) quoted and escaped, cut after
 * DENIAL_VALUE_SHOWN bytes with "..." inside the quotes.
 */
void denial_quote(struct denial *d, const char *value, size_t len);

/**
 * denial_item() - append item @index (0, 1, ...) of a list: ", " before any but the first,
 * the item (@len bytes) escaped and cut like a value but not quoted. Items from
 * DENIAL_LIST_SHOWN on are not written: give them anyway or not, denial_list_end() counts.
 * @quoted: write the item as denial_quote() would.
 */
void denial_item(struct denial *d, size_t index, const char *item, size_t len, bool quoted);

/**
 * denial_list_end() - end a list of @total items: "none" when @total is 0, " and N more" when
 * more than DENIAL_LIST_SHOWN were given, nothing otherwise.
 */
void denial_list_end(struct denial *d, size_t total);

#endif
