/*
 * hibernation.h - the three annotation values of hibernation, read and written one way.
 *
 * A ResourceSupervisor puts workloads and namespaces to sleep and wakes them (issue 15). Three
 * annotations carry its state, and the hibernation controller and the admission webhook read
 * them through this module only, so they never disagree on what a value means:
 *
 * - HIB_OVERRIDE_ANNOTATION, set by a person on a namespace or workload to override the
 *   schedule: "sleep", "wake", "skip-next-sleep", "sleep-until=<RFC 3339 time>" or
 *   "wake-until=<RFC 3339 time>". HIB_OVERRIDE_PATTERN is the same language as a regular
 *   expression, for a ValidatingAdmissionPolicy's CEL matches().
 * - HIB_SAVED_ANNOTATION, written by landlord on a workload it puts to sleep: what it changed
 *   and the value to restore, as one JSON object
 *     {"supervisor":"<name>","field":"replicas","value":3}
 *   field "replicas" (Deployments, StatefulSets: a whole number 0-2147483647), "suspend"
 *   (CronJobs: true or false), "paused-replicas" (KEDA ScaledObjects: the old value of their
 *   annotation autoscaling.keda.sh/paused-replicas, a string, or null when it was absent) or
 *   "paused" (KEDA ScaledJobs: autoscaling.keda.sh/paused, likewise).
 * - HIB_RESERVED_ANNOTATION, written by landlord on a namespace it puts to sleep: its
 *   ResourceQuota's status.used at that moment, the quota it keeps reserved while asleep:
 *     {"supervisor":"<name>","used":{"requests.cpu":"1500m","pods":"3"}}
 *
 * RFC 3339 times are YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM): 'T' and 'Z' in either
 * case, a fraction of 1 to 9 digits (truncated: whole seconds are kept), no leap second
 * (second 60 is refused), the day checked against its month (leap years included), the
 * written year 1970-9999, the offset applied; the instant must lie within
 * 1970-01-01T00:00:00Z..9999-12-31T23:59:59Z (HIB_TIME_MIN..HIB_TIME_MAX). They are written
 * back in UTC without a fraction: "2026-11-28T20:00:00Z".
 *
 * Invariants:
 * - Parsing is strict: a value is accepted whole or refused, with one printable line in @err
 *   (denial.h's escaping) that names the annotation, the value and what is allowed, e.g.
 *   annotation landlord.dev/sleep-saved: "replicas" must be a whole number 0-2147483647, not "3"
 *   On error the output struct is zeroed.
 * - The JSON values are objects with exactly their keys (none missing, none unknown, none
 *   twice), of bounded size (HIB_SAVED_TEXT_MAX, HIB_RESERVED_TEXT_MAX bytes) and are written
 *   compact, keys in the order shown above. What a format function writes, the matching parse
 *   function reads back to an equal struct; parse-then-format gives the canonical text.
 * - Structs are plain values owned by the caller; zeroed, none is valid (the enums start at 1).
 * - Pure: no globals, no I/O; thread-safe. The JSON functions allocate only while they run
 *   (jansson), except for the text that the *_format() functions return.
 */
#ifndef LANDLORD_HIBERNATION_H
#define LANDLORD_HIBERNATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/quantity.h"

struct ll_err;

#define HIB_OVERRIDE_ANNOTATION "landlord.dev/hibernation"
#define HIB_SAVED_ANNOTATION    "landlord.dev/sleep-saved"
#define HIB_RESERVED_ANNOTATION "landlord.dev/sleep-reserved"

#define HIB_TIME_MIN 0LL            /* 1970-01-01T00:00:00Z */
#define HIB_TIME_MAX 253402300799LL /* 9999-12-31T23:59:59Z */

#define HIB_NAME_MAX          253         /* bytes of a supervisor's name (a DNS subdomain) */
#define HIB_SAVED_TEXT_MAX    1024        /* bytes of a HIB_SAVED_ANNOTATION value */
#define HIB_SAVED_STRING_MAX  63          /* bytes of a saved KEDA annotation value */
#define HIB_RESERVED_TEXT_MAX (32 * 1024) /* bytes of a HIB_RESERVED_ANNOTATION value */
#define HIB_RESERVED_MAX      64          /* resources in one reservation */
#define HIB_RESOURCE_MAX      253         /* bytes of a resource name ("requests.cpu") */
#define HIB_QUANTITY_MAX      63          /* bytes of a quantity as written ("1500m") */
#define HIB_OVERRIDE_BUF      40          /* room for any hib_override_format() text and NUL */

/*
 * The override values as a regular expression in the common subset of POSIX ERE, RE2 (CEL's
 * matches()) and PCRE2, anchored at both ends. It matches every value hib_override_parse()
 * accepts, and refuses every value that it refuses except those only a calendar can tell: a day
 * past the end of its month ("2026-04-31", "2025-02-29") and a time that its offset moves out
 * of HIB_TIME_MIN..HIB_TIME_MAX ("1970-01-01T00:30:00+01:00"). '$' must mean the end of the
 * text, as in RE2 and POSIX (PCRE2: PCRE2_DOLLAR_ENDONLY).
 */
#define HIB_RFC3339_PATTERN                                                     \
	"(19[7-9][0-9]|[2-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])" \
	"[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?"          \
	"([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
#define HIB_OVERRIDE_PATTERN \
	"^(sleep|wake|skip-next-sleep|(sleep|wake)-until=" HIB_RFC3339_PATTERN ")$"

/* ===== the override ===== */

enum hib_override_kind {
	HIB_OVERRIDE_SLEEP = 1,       /* "sleep": asleep until the annotation goes */
	HIB_OVERRIDE_WAKE,            /* "wake": awake until the annotation goes */
	HIB_OVERRIDE_SKIP_NEXT_SLEEP, /* "skip-next-sleep": the next scheduled sleep is skipped */
	HIB_OVERRIDE_SLEEP_UNTIL,     /* "sleep-until=<time>": asleep until @until */
	HIB_OVERRIDE_WAKE_UNTIL,      /* "wake-until=<time>": awake until @until */
};

struct hib_override {
	enum hib_override_kind kind;
	int64_t until; /* *_UNTIL: Unix seconds, HIB_TIME_MIN..HIB_TIME_MAX; otherwise 0 */
};

/**
 * hib_override_parse() - read the HIB_OVERRIDE_ANNOTATION value @value (NUL-terminated,
 * borrowed; NULL reads as "").
 * @out: OUT, the override on success; zeroed on error.
 * @err: may be NULL; on error one line naming the annotation, the value and what is allowed:
 *       annotation landlord.dev/hibernation: "slep" is not one of sleep, wake,
 *       skip-next-sleep, sleep-until=<RFC 3339 time>, wake-until=<RFC 3339 time>
 *       annotation landlord.dev/hibernation: "2026-13-01T00:00:00Z" is not an RFC 3339 time
 *       (month 13 is out of range 1-12)
 * Return: 0; -EINVAL. Thread-safe.
 */
int hib_override_parse(const char *value, struct hib_override *out /* OUT */, struct ll_err *err);

/**
 * hib_override_format() - the canonical text of @o into @out (@cap bytes, caller-owned;
 * HIB_OVERRIDE_BUF always suffices): "sleep", ..., "sleep-until=2026-11-28T20:00:00Z".
 * Return: 0; -EINVAL when @o is not a value hib_override_parse() makes (a kind out of range, an
 * *_UNTIL time outside HIB_TIME_MIN..HIB_TIME_MAX, or @until not 0 for the other kinds);
 * -EMSGSIZE when the text and its NUL do not fit @cap. @out is "" on error when @cap > 0.
 */
int hib_override_format(const struct hib_override *o, char *out /* OUT */, size_t cap);

/**
 * hib_parse_rfc3339() - the instant of the RFC 3339 time @s (NUL-terminated, borrowed), see
 * the top of this file.
 * @unix_seconds: OUT, seconds since 1970-01-01T00:00:00Z, fraction truncated; set on success.
 * @err: may be NULL; on error one line: "2026-02-29T00:00:00Z" is not an RFC 3339 time (day 29
 *       is out of range 1-28 for 2026-02)
 * Return: 0; -EINVAL. Thread-safe.
 */
int hib_parse_rfc3339(const char *s, int64_t *unix_seconds /* OUT */, struct ll_err *err);

/* ===== the saved value ===== */

enum hib_saved_field {
	HIB_SAVED_REPLICAS = 1,    /* "replicas": spec.replicas */
	HIB_SAVED_SUSPEND,         /* "suspend": spec.suspend */
	HIB_SAVED_PAUSED_REPLICAS, /* "paused-replicas": autoscaling.keda.sh/paused-replicas */
	HIB_SAVED_PAUSED,          /* "paused": autoscaling.keda.sh/paused */
};

/* What landlord changed on a workload and the value to put back. The members that do not
 * belong to @field are zero. */
struct hib_saved {
	char supervisor[HIB_NAME_MAX + 1]; /* the ResourceSupervisor that put it to sleep */
	enum hib_saved_field field;
	int32_t replicas;                      /* HIB_SAVED_REPLICAS: 0..INT32_MAX */
	bool suspend;                          /* HIB_SAVED_SUSPEND */
	bool has_string;                       /* PAUSED_*: false when the value was null */
	char string[HIB_SAVED_STRING_MAX + 1]; /* PAUSED_* with @has_string: UTF-8, no NUL */
};

/** hib_saved_field_name() - "replicas", "suspend", "paused-replicas", "paused"; NULL if none. */
const char *hib_saved_field_name(enum hib_saved_field field);

/**
 * hib_saved_check() - whether @s is a value hib_saved_format() writes: @supervisor a DNS
 * subdomain, @field one of the enum, its member in range (@string valid UTF-8 of at most
 * HIB_SAVED_STRING_MAX bytes, "" when !@has_string), the other members zero. Use it before
 * putting a workload to sleep whose KEDA annotation may be too long to save.
 * @err: may be NULL; on error one line naming the problem, as hib_saved_parse() words it
 *       without the annotation.
 * Return: 0; -EINVAL. Thread-safe.
 */
int hib_saved_check(const struct hib_saved *s, struct ll_err *err);

/**
 * hib_saved_parse() - read the HIB_SAVED_ANNOTATION value @text (NUL-terminated, borrowed).
 * @out: OUT, the saved value on success; zeroed on error.
 * @err: may be NULL; on error one line naming the annotation and the problem:
 *       annotation landlord.dev/sleep-saved: "replicas" must be a whole number 0-2147483647,
 *       not "abc"
 * Return: 0; -EINVAL (not JSON, not the object described above); -EMSGSIZE (@text longer than
 * HIB_SAVED_TEXT_MAX bytes). Thread-safe.
 */
int hib_saved_parse(const char *text, struct hib_saved *out /* OUT */, struct ll_err *err);

/**
 * hib_saved_format() - the compact JSON of @s, keys supervisor, field, value in that order.
 * Return: the text, caller frees with free(); NULL when hib_saved_check() refuses @s.
 * Thread-safe.
 */
char *hib_saved_format(const struct hib_saved *s);

/* ===== the quota reservation ===== */

struct hib_reserved_entry {
	char resource[HIB_RESOURCE_MAX + 1]; /* a qualified name: "requests.cpu", "count/pods" */
	char quantity[HIB_QUANTITY_MAX + 1]; /* as written: "1500m" */
	struct qty value;                    /* @quantity parsed */
};

/* A namespace's status.used when it went to sleep, in the order it was written. */
struct hib_reserved {
	char supervisor[HIB_NAME_MAX + 1];
	size_t count;
	struct hib_reserved_entry used[HIB_RESERVED_MAX]; /* the first @count; names unique */
};

/**
 * hib_reserved_init() - an empty reservation in @r for the supervisor @supervisor
 * (NUL-terminated, borrowed; a DNS subdomain).
 * Return: 0; -EINVAL (@r zeroed, one line in @err, which may be NULL). Thread-safe.
 */
int hib_reserved_init(struct hib_reserved *r /* OUT */, const char *supervisor, struct ll_err *err);

/**
 * hib_reserved_add() - append @resource (a qualified name of at most HIB_RESOURCE_MAX bytes)
 * used @quantity (a Kubernetes quantity of at most HIB_QUANTITY_MAX bytes, kept as written) to
 * @r, made by hib_reserved_init() or hib_reserved_parse(). Both strings are borrowed.
 * @err: may be NULL; on error one line naming the resource and the problem.
 * Return: 0; -EINVAL (a bad name or quantity, or @resource already there); -EMSGSIZE (@r holds
 * HIB_RESERVED_MAX resources). @r is unchanged on error. Thread-safe for distinct @r.
 */
int hib_reserved_add(struct hib_reserved *r, const char *resource, const char *quantity,
                     struct ll_err *err);

/**
 * hib_reserved_parse() - read the HIB_RESERVED_ANNOTATION value @text (NUL-terminated,
 * borrowed).
 * @out: OUT, the reservation on success; zeroed on error.
 * @err: may be NULL; on error one line naming the annotation and the problem:
 *       annotation landlord.dev/sleep-reserved: quantity "lots" of "requests.cpu" is not a
 *       Kubernetes quantity
 * Return: 0; -EINVAL (not JSON, not the object described above); -EMSGSIZE (@text longer than
 * HIB_RESERVED_TEXT_MAX bytes, or more than HIB_RESERVED_MAX resources). Thread-safe.
 */
int hib_reserved_parse(const char *text, struct hib_reserved *out /* OUT */, struct ll_err *err);

/**
 * hib_reserved_format() - the compact JSON of @r: supervisor, then used in @r's order, each
 * quantity as written. At most HIB_RESERVED_TEXT_MAX bytes.
 * Return: the text, caller frees with free(); NULL when @r is not what hib_reserved_init() and
 * hib_reserved_add() make (a bad supervisor, count, name or quantity, a name twice, a quantity
 * whose @value is not its text parsed). Thread-safe.
 */
char *hib_reserved_format(const struct hib_reserved *r);

#endif
