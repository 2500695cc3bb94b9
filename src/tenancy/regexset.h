/*
 * regexset.h - a few PCRE2 regular expressions, each matched against a whole string, with
 * bounded effort.
 *
 * Tenants list patterns (allowed.hosts.regex) that landlord matches against values that users
 * send (the hosts of an Ingress). Neither side is trusted enough to let a match run unbounded,
 * so every pattern goes through this module, which applies the rules LandlordConfig's privileged
 * patterns follow (landlordconfig.h), and the same limits:
 * - A pattern P behaves as ^(?:P)$ where $ matches only at the very end (PCRE2_ANCHORED |
 *   PCRE2_ENDANCHORED): "acme\.com" matches neither "xacme.com" nor "acme.com\n". UTF mode;
 *   \C is refused. A subject that is not valid UTF-8 matches nothing.
 * - Each match is bounded by RXS_MATCH_LIMIT, RXS_DEPTH_LIMIT and RXS_HEAP_LIMIT_KIB (a pattern
 *   may lower them with (*LIMIT_MATCH=n) and the like, never raise them): a match that hits one
 *   counts as no match, and rxs_match() says so, for the caller to log.
 * - Patterns hold at most RXS_PATTERN_MAX bytes and no NUL byte; a set holds at most RXS_SET_MAX
 *   patterns; a subject longer than RXS_SUBJECT_MAX bytes matches nothing.
 *
 * A set is built by one thread (rxs_new(), rxs_add()) and then only read: any number of threads
 * may call rxs_match() on it at once. PCRE2 allocates through mem.h.
 */
#ifndef LANDLORD_REGEXSET_H
#define LANDLORD_REGEXSET_H

#include <stdbool.h>
#include <stddef.h>

struct ll_err;

#define RXS_PATTERN_MAX 1024
#define RXS_SET_MAX     256 /* LandlordConfig's lists (LCFG_LIST_MAX) go up to it */
#define RXS_SUBJECT_MAX 4096
/* PCRE2 limits on every match (pcre2_set_match_limit() and friends); landlordconfig.h's too. */
#define RXS_MATCH_LIMIT    100000
#define RXS_DEPTH_LIMIT    1000
#define RXS_HEAP_LIMIT_KIB 1024

struct rxs;

/** rxs_new() - an empty set (matches nothing); free with rxs_free(). Never NULL. */
struct rxs *rxs_new(void);

/** rxs_free() - free @set and its patterns; NULL is a no-op. */
void rxs_free(struct rxs *set);

/**
 * rxs_add() - compile @pattern (@len bytes, borrowed) and add it to @set.
 * Return: 0; -EINVAL when it does not compile or holds a NUL byte (@err: "invalid regular
 * expression at offset 3: missing closing parenthesis"); -EMSGSIZE when longer than
 * RXS_PATTERN_MAX; -E2BIG when @set already holds RXS_SET_MAX patterns. @set is unchanged on
 * error. Not while another thread reads @set.
 */
int rxs_add(struct rxs *set, const char *pattern, size_t len, struct ll_err *err);

/** rxs_count() - how many patterns @set holds. */
size_t rxs_count(const struct rxs *set);

/** rxs_pattern() - pattern @i as given to rxs_add() (NUL-terminated), borrowed from @set. */
const char *rxs_pattern(const struct rxs *set, size_t i);

/**
 * rxs_match() - the index of the first pattern of @set that matches all of @subject (@len
 * bytes), or -1 when none does.
 * @limited: OUT, may be NULL; set to whether some pattern hit a limit (counted as no match).
 * Thread-safe on a built set.
 */
int rxs_match(const struct rxs *set, const char *subject, size_t len, bool *limited /* OUT */);

#endif
