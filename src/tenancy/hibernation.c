/* hibernation.c - the three annotation values of hibernation (see hibernation.h). */
#include "tenancy/hibernation.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "kube/k8sname.h"
#include "kube/quantity.h"
#include "tenancy/denial.h"
#include "tenancy/tzif.h"

#define DAY        86400
#define TIME_SHAPE "expected YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)"
#define TIME_BUF   24 /* "9999-12-31T23:59:59Z" and its NUL */

/* ===== messages ===== */

/* Starts @d in @err with "annotation <name>: ", or with nothing when @annotation is NULL. */
static void begin(struct denial *d, struct ll_err *err, const char *annotation)
{
	denial_init(d, err->msg, sizeof(err->msg));
	if (annotation != NULL)
		denial_text(d, "annotation %s: ", annotation);
}

/* Appends the compact JSON of @v, escaped and cut like a value. */
static void json_item(struct denial *d, const json_t *v)
{
	char *text = jx_dumps(v);

	denial_item(d, 0, text, strlen(text), false);
	free(text);
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* ===== RFC 3339 ===== */

/* The fields of an RFC 3339 time as written. */
struct stamp {
	int year, month, day, hour, minute, second;
	int off_sign; /* 0 for Z, +1 or -1 */
	int off_hour, off_minute;
};

/* The value of the @n digits at @s. */
static int num(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

/* Whether NUL-terminated @s starts with @tmpl: 'd' a digit, 'T' 'T' or 't', others themselves. */
static bool fits(const char *s, const char *tmpl)
{
	for (; *tmpl != '\0'; s++, tmpl++) {
		bool ok = *tmpl == 'd'   ? is_digit(*s)
		          : *tmpl == 'T' ? *s == 'T' || *s == 't'
		                         : *s == *tmpl;

		if (!ok)
			return false;
	}
	return true;
}

/* The zone at @p ("Z", "z", "+HH:MM", "-HH:MM") into @t: what follows it, or NULL. */
static const char *read_zone(const char *p, struct stamp *t)
{
	if (*p == 'Z' || *p == 'z')
		return p + 1;
	if ((*p != '+' && *p != '-') || !fits(p + 1, "dd:dd"))
		return NULL;
	t->off_sign = *p == '-' ? -1 : 1;
	t->off_hour = num(p + 1, 2);
	t->off_minute = num(p + 4, 2);
	return p + 6;
}

/* The fields of @s, in RFC 3339's shape, into @t: NULL, or why @s does not have the shape. */
static const char *read_stamp(const char *s, struct stamp *t)
{
	const char *p;
	size_t frac = 0;

	if (!fits(s, "dddd-dd-ddTdd:dd:dd"))
		return TIME_SHAPE;
	p = s + 19;
	if (*p == '.') {
		while (is_digit(p[1 + frac]))
			frac++;
		if (frac == 0)
			return TIME_SHAPE;
		if (frac > 9)
			return "the fraction has more than 9 digits";
		p += 1 + frac;
	}
	p = read_zone(p, t);
	if (p == NULL || *p != '\0')
		return TIME_SHAPE;
	t->year = num(s, 4);
	t->month = num(s + 5, 2);
	t->day = num(s + 8, 2);
	t->hour = num(s + 11, 2);
	t->minute = num(s + 14, 2);
	t->second = num(s + 17, 2);
	return NULL;
}

/* Whether the fields of @t are in range; if not, why not into @why (@cap bytes). */
static bool in_range(const struct stamp *t, char *why, size_t cap)
{
	int mdays = t->month >= 1 && t->month <= 12 ? tz_month_days(t->year, t->month) : 31;
	const struct {
		const char *name;
		int v, lo, hi;
	} f[] = {
	        {"year", t->year, 1970, 9999},       {"month", t->month, 1, 12},
	        {"day", t->day, 1, mdays},           {"hour", t->hour, 0, 23},
	        {"minute", t->minute, 0, 59},        {"second", t->second, 0, 59},
	        {"offset hour", t->off_hour, 0, 23}, {"offset minute", t->off_minute, 0, 59},
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (f[i].v >= f[i].lo && f[i].v <= f[i].hi)
			continue;
		if (strcmp(f[i].name, "second") == 0 && f[i].v == 60)
			snprintf(why, cap,
			         "second 60 is a leap second; leap seconds are not accepted");
		else if (strcmp(f[i].name, "day") == 0)
			snprintf(why, cap, "day %d is out of range 1-%d for %04d-%02d", f[i].v,
			         f[i].hi, t->year, t->month);
		else
			snprintf(why, cap, "%s %d is out of range %d-%d", f[i].name, f[i].v,
			         f[i].lo, f[i].hi);
		return false;
	}
	return true;
}

/* The RFC 3339 time @s into *@out, or a message in @d (already started): -EINVAL. */
static int parse_time(const char *s, int64_t *out, struct denial *d)
{
	struct stamp t = {0};
	const char *shape = read_stamp(s, &t);
	char why[128] = "";
	int64_t v = 0;

	if (shape != NULL)
		snprintf(why, sizeof(why), "%s", shape);
	else if (in_range(&t, why, sizeof(why))) {
		v = tz_days_from_civil(t.year, t.month, t.day) * DAY + t.hour * 3600 +
		    t.minute * 60 + t.second - t.off_sign * (t.off_hour * 3600 + t.off_minute * 60);
		if (v < HIB_TIME_MIN)
			snprintf(why, sizeof(why),
			         "its offset puts it before 1970-01-01T00:00:00Z");
		else if (v > HIB_TIME_MAX)
			snprintf(why, sizeof(why), "its offset puts it after 9999-12-31T23:59:59Z");
	}
	if (why[0] != '\0') {
		denial_quote(d, s, strlen(s));
		denial_text(d, " is not an RFC 3339 time (%s)", why);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int hib_parse_rfc3339(const char *s, int64_t *unix_seconds, struct ll_err *err)
{
	struct ll_err local;
	struct denial d;

	if (err == NULL)
		err = &local;
	begin(&d, err, NULL);
	return parse_time(s != NULL ? s : "", unix_seconds, &d);
}

/* @t (HIB_TIME_MIN..HIB_TIME_MAX) as "2026-11-28T20:00:00Z". */
static void format_time(int64_t t, char out[TIME_BUF])
{
	int64_t year;
	int month, day, sec = (int)(t % DAY);

	tz_civil_from_days(t / DAY, &year, &month, &day);
	snprintf(out, TIME_BUF, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)year, month, day,
	         sec / 3600, sec % 3600 / 60, sec % 60);
}

/* ===== the override ===== */

/* By kind - 1; a text ending in '=' is followed by a time. */
static const char *const OVERRIDES[] = {"sleep", "wake", "skip-next-sleep",
                                        "sleep-until=", "wake-until="};
#define NOVERRIDES (sizeof(OVERRIDES) / sizeof(OVERRIDES[0]))

static bool has_until(enum hib_override_kind kind)
{
	return kind == HIB_OVERRIDE_SLEEP_UNTIL || kind == HIB_OVERRIDE_WAKE_UNTIL;
}

/* The kind whose text @value is, or for the *_UNTIL kinds starts with (its length into
 * *@skip); 0 for none. */
static enum hib_override_kind override_kind(const char *value, size_t *skip)
{
	for (size_t i = 0; i < NOVERRIDES; i++) {
		enum hib_override_kind kind = (enum hib_override_kind)(i + 1);

		*skip = strlen(OVERRIDES[i]);
		if (has_until(kind) ? strncmp(value, OVERRIDES[i], *skip) == 0
		                    : strcmp(value, OVERRIDES[i]) == 0)
			return kind;
	}
	return (enum hib_override_kind)0;
}

int hib_override_parse(const char *value, struct hib_override *out, struct ll_err *err)
{
	struct ll_err local;
	struct denial d;
	enum hib_override_kind kind;
	size_t skip;
	int rc = 0;

	if (err == NULL)
		err = &local;
	if (value == NULL)
		value = "";
	memset(out, 0, sizeof(*out));
	begin(&d, err, HIB_OVERRIDE_ANNOTATION);
	kind = override_kind(value, &skip);
	if (kind == 0) {
		denial_quote(&d, value, strlen(value));
		denial_text(&d,
		            " is not one of sleep, wake, skip-next-sleep, sleep-until=<RFC 3339 "
		            "time>, wake-until=<RFC 3339 time>");
		rc = -EINVAL;
	} else if (has_until(kind)) {
		rc = parse_time(value + skip, &out->until, &d);
	}
	if (rc == 0)
		out->kind = kind;
	else
		memset(out, 0, sizeof(*out));
	return rc;
}

int hib_override_format(const struct hib_override *o, char *out, size_t cap)
{
	char when[TIME_BUF] = "";
	int n;

	if (cap > 0)
		out[0] = '\0';
	if (o->kind < HIB_OVERRIDE_SLEEP || o->kind > HIB_OVERRIDE_WAKE_UNTIL)
		return -EINVAL;
	if (has_until(o->kind) ? o->until < HIB_TIME_MIN || o->until > HIB_TIME_MAX : o->until != 0)
		return -EINVAL;
	if (has_until(o->kind))
		format_time(o->until, when);
	n = snprintf(out, cap, "%s%s", OVERRIDES[o->kind - 1], when);
	if (n < 0 || (size_t)n >= cap) {
		if (cap > 0)
			out[0] = '\0';
		return -EMSGSIZE;
	}
	return 0;
}

/* ===== JSON objects ===== */

/* What one annotation's JSON object looks like. */
struct shape {
	const char *annotation;
	size_t max;               /* bytes of its text */
	const char *const *keys;  /* NULL-terminated */
	const char *keys_written; /* "supervisor, field and value" */
};

static const char *const SAVED_KEYS[] = {"supervisor", "field", "value", NULL};
static const char *const RESERVED_KEYS[] = {"supervisor", "used", NULL};
static const struct shape SAVED = {HIB_SAVED_ANNOTATION, HIB_SAVED_TEXT_MAX, SAVED_KEYS,
                                   "supervisor, field and value"};
static const struct shape RESERVED = {HIB_RESERVED_ANNOTATION, HIB_RESERVED_TEXT_MAX, RESERVED_KEYS,
                                      "supervisor and used"};

static bool is_key(const struct shape *sh, const char *key)
{
	for (size_t i = 0; sh->keys[i] != NULL; i++)
		if (strcmp(sh->keys[i], key) == 0)
			return true;
	return false;
}

/* Exactly the keys of @sh in the object @doc, or a message in @d: -EINVAL. */
static int check_keys(const struct shape *sh, const json_t *doc, struct denial *d)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)doc, key, v) {
		if (is_key(sh, key))
			continue;
		denial_text(d, "unknown key ");
		denial_quote(d, key, strlen(key));
		denial_text(d, "; the keys are %s", sh->keys_written);
		return -EINVAL;
	}
	for (size_t i = 0; sh->keys[i] != NULL; i++) {
		if (json_object_get(doc, sh->keys[i]) != NULL)
			continue;
		denial_text(d, "the key \"%s\" is missing; the keys are %s", sh->keys[i],
		            sh->keys_written);
		return -EINVAL;
	}
	return 0;
}

/* @text as an object of the keys of @sh into *@doc (a new reference), or a message in @d. */
static int load(const struct shape *sh, const char *text, json_t **doc, struct denial *d)
{
	size_t len = strnlen(text, sh->max + 1);
	json_error_t je;

	*doc = NULL;
	if (len > sh->max) {
		denial_text(d, "the value is longer than %zu bytes", sh->max);
		return -EMSGSIZE;
	}
	*doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (*doc == NULL) {
		denial_text(d, "invalid JSON at line %d column %d: %s", je.line, je.column,
		            je.text);
		return -EINVAL;
	}
	if (!json_is_object(*doc)) {
		denial_text(d, "must be a JSON object with the keys %s, not ", sh->keys_written);
		json_item(d, *doc);
		return -EINVAL;
	}
	return check_keys(sh, *doc, d);
}

/* @name (@len bytes) is a supervisor's name, or a message in @d: -EINVAL. */
static int check_supervisor(const char *name, size_t len, struct denial *d)
{
	const char *problem = k8s_dns_subdomain_problem(name, len);

	if (problem == NULL)
		return 0;
	denial_text(d, "supervisor ");
	denial_quote(d, name, len);
	denial_text(d, " is not a ResourceSupervisor name: %s", problem);
	return -EINVAL;
}

/* The "supervisor" of @doc into @out, or a message in @d: -EINVAL. */
static int read_supervisor(const json_t *doc, char out[HIB_NAME_MAX + 1], struct denial *d)
{
	const json_t *v = json_object_get(doc, "supervisor");
	size_t len = json_string_length(v);
	int rc;

	if (!json_is_string(v)) {
		denial_text(d, "\"supervisor\" must be a string, not ");
		json_item(d, v);
		return -EINVAL;
	}
	rc = check_supervisor(json_string_value(v), len, d);
	if (rc == 0)
		memcpy(out, json_string_value(v), len + 1);
	return rc;
}

/* ===== the saved value ===== */

/* By field - 1. */
static const char *const FIELDS[] = {"replicas", "suspend", "paused-replicas", "paused"};
#define NFIELDS (sizeof(FIELDS) / sizeof(FIELDS[0]))

const char *hib_saved_field_name(enum hib_saved_field field)
{
	return field >= HIB_SAVED_REPLICAS && field <= HIB_SAVED_PAUSED ? FIELDS[field - 1] : NULL;
}

static bool is_string_field(enum hib_saved_field field)
{
	return field == HIB_SAVED_PAUSED_REPLICAS || field == HIB_SAVED_PAUSED;
}

/* Whether @s (@len bytes) is UTF-8 as jansson takes it: shortest forms, no surrogates, nothing
 * past U+10FFFF. */
static bool utf8_valid(const char *s, size_t len)
{
	json_t *j = json_stringn(s, len);

	json_decref(j);
	return j != NULL;
}

/* The "field" of @doc into *@out, or a message in @d: -EINVAL. */
static int read_field(const json_t *doc, enum hib_saved_field *out, struct denial *d)
{
	const json_t *v = json_object_get(doc, "field");

	for (size_t i = 0; json_is_string(v) && i < NFIELDS; i++) {
		if (strcmp(json_string_value(v), FIELDS[i]) != 0)
			continue;
		*out = (enum hib_saved_field)(i + 1);
		return 0;
	}
	denial_text(d, "\"field\" must be one of replicas, suspend, paused-replicas, paused, not ");
	json_item(d, v);
	return -EINVAL;
}

/* "<field> must be <what>, not <v>": -EINVAL. */
static int bad_value(struct denial *d, enum hib_saved_field field, const char *what,
                     const json_t *v)
{
	denial_text(d, "\"%s\" must be %s, not ", FIELDS[field - 1], what);
	json_item(d, v);
	return -EINVAL;
}

/* The "value" of @doc for out->field into @out, or a message in @d: -EINVAL. */
static int read_value(const json_t *doc, struct hib_saved *out, struct denial *d)
{
	const json_t *v = json_object_get(doc, "value");
	size_t len = json_string_length(v);

	switch (out->field) {
	case HIB_SAVED_REPLICAS:
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > INT32_MAX)
			return bad_value(d, out->field, "a whole number 0-2147483647", v);
		out->replicas = (int32_t)json_integer_value(v);
		return 0;
	case HIB_SAVED_SUSPEND:
		if (!json_is_boolean(v))
			return bad_value(d, out->field, "true or false", v);
		out->suspend = json_is_true(v);
		return 0;
	default:
		if (json_is_null(v))
			return 0;
		if (!json_is_string(v) || len > HIB_SAVED_STRING_MAX)
			return bad_value(d, out->field, "a string of at most 63 bytes or null", v);
		out->has_string = true;
		memcpy(out->string, json_string_value(v), len + 1);
		return 0;
	}
}

/* The value members of @s against its field, or a message in @d: -EINVAL. */
static int check_value(const struct hib_saved *s, struct denial *d)
{
	const char *name = FIELDS[s->field - 1];
	size_t len = strnlen(s->string, sizeof(s->string));

	if (s->replicas < 0)
		denial_text(d, "\"replicas\" must be a whole number 0-2147483647, not %ld",
		            (long)s->replicas);
	else if (s->replicas != 0 && s->field != HIB_SAVED_REPLICAS)
		denial_text(d, "replicas must be 0 for field \"%s\"", name);
	else if (s->suspend && s->field != HIB_SAVED_SUSPEND)
		denial_text(d, "suspend must be false for field \"%s\"", name);
	else if ((s->has_string || s->string[0] != '\0') && !is_string_field(s->field))
		denial_text(d, "has_string and string must be unset for field \"%s\"", name);
	else if (!s->has_string && s->string[0] != '\0')
		denial_text(d, "string must be \"\" when has_string is false");
	else if (len == sizeof(s->string) || !utf8_valid(s->string, len))
		denial_text(d, "\"%s\" must be a string of at most %d bytes (UTF-8) or null", name,
		            HIB_SAVED_STRING_MAX);
	else
		return 0;
	return -EINVAL;
}

int hib_saved_check(const struct hib_saved *s, struct ll_err *err)
{
	struct ll_err local;
	struct denial d;
	size_t len = strnlen(s->supervisor, sizeof(s->supervisor));

	if (err == NULL)
		err = &local;
	begin(&d, err, NULL);
	if (len == sizeof(s->supervisor))
		return ll_err_set(err, -EINVAL, "supervisor is not NUL-terminated");
	if (check_supervisor(s->supervisor, len, &d) != 0)
		return -EINVAL;
	if (hib_saved_field_name(s->field) == NULL)
		return ll_err_set(err, -EINVAL, "field %d is not one of the enum hib_saved_field",
		                  (int)s->field);
	return check_value(s, &d);
}

int hib_saved_parse(const char *text, struct hib_saved *out, struct ll_err *err)
{
	struct ll_err local;
	struct denial d;
	json_t *doc = NULL;
	int rc;

	if (err == NULL)
		err = &local;
	memset(out, 0, sizeof(*out));
	begin(&d, err, HIB_SAVED_ANNOTATION);
	rc = load(&SAVED, text != NULL ? text : "", &doc, &d);
	if (rc == 0)
		rc = read_supervisor(doc, out->supervisor, &d);
	if (rc == 0)
		rc = read_field(doc, &out->field, &d);
	if (rc == 0)
		rc = read_value(doc, out, &d);
	json_decref(doc);
	if (rc != 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

static json_t *saved_value(const struct hib_saved *s)
{
	switch (s->field) {
	case HIB_SAVED_REPLICAS:
		return json_integer(s->replicas);
	case HIB_SAVED_SUSPEND:
		return json_boolean(s->suspend);
	default:
		return s->has_string ? json_string(s->string) : json_null();
	}
}

char *hib_saved_format(const struct hib_saved *s)
{
	json_t *doc;
	char *text;

	if (hib_saved_check(s, NULL) != 0)
		return NULL;
	doc = json_object();
	json_object_set_new(doc, "supervisor", json_string(s->supervisor));
	json_object_set_new(doc, "field", json_string(FIELDS[s->field - 1]));
	json_object_set_new(doc, "value", saved_value(s));
	text = jx_dumps(doc);
	json_decref(doc);
	return text;
}

/* ===== the quota reservation ===== */

/* The start of a message about a quantity: quantity "<q>" of "<resource>". */
static void quantity_message(struct denial *d, const char *q, size_t q_len, const char *name,
                             size_t name_len)
{
	denial_text(d, "quantity ");
	denial_quote(d, q, q_len);
	denial_text(d, " of ");
	denial_quote(d, name, name_len);
}

/* Resource @name (@name_len bytes) may follow the first @upto entries of @r. */
static int check_resource(const struct hib_reserved *r, size_t upto, const char *name,
                          size_t name_len, struct denial *d)
{
	const char *problem = k8s_label_key_problem(name, name_len);

	if (name_len > HIB_RESOURCE_MAX)
		problem = "must be no more than 253 characters";
	if (problem != NULL) {
		denial_text(d, "resource name ");
		denial_quote(d, name, name_len);
		denial_text(d, " is not a qualified name: %s", problem);
		return -EINVAL;
	}
	for (size_t i = 0; i < upto; i++) {
		if (strlen(r->used[i].resource) != name_len ||
		    memcmp(r->used[i].resource, name, name_len) != 0)
			continue;
		denial_text(d, "resource ");
		denial_quote(d, name, name_len);
		denial_text(d, " appears twice");
		return -EINVAL;
	}
	return 0;
}

/* The quantity @q (@q_len bytes) of resource @name into *@out, or a message in @d. */
static int check_quantity(const char *q, size_t q_len, const char *name, size_t name_len,
                          struct qty *out, struct denial *d)
{
	int rc = q_len <= HIB_QUANTITY_MAX ? qty_parse_n(q, q_len, out) : -E2BIG;

	if (rc == 0 && out->nano >= 0)
		return 0;
	quantity_message(d, q, q_len, name, name_len);
	if (rc == -E2BIG)
		denial_text(d, " is longer than %d bytes", HIB_QUANTITY_MAX);
	else if (rc == -ERANGE)
		denial_text(d, " is too large for a Kubernetes quantity");
	else if (rc != 0)
		denial_text(d, " is not a Kubernetes quantity (e.g. \"500m\", \"2Gi\", \"3\")");
	else
		denial_text(d, " is negative");
	return -EINVAL;
}

/* Appends @name and @q (lengths given; no NULs inside) to @r, or a message in @d. */
static int add_entry(struct hib_reserved *r, const char *name, size_t name_len, const char *q,
                     size_t q_len, struct denial *d)
{
	struct hib_reserved_entry *e;
	struct qty v;
	int rc;

	if (r->count >= HIB_RESERVED_MAX) {
		denial_text(d, "resource ");
		denial_quote(d, name, name_len);
		denial_text(d, " does not fit: a reservation holds at most %d resources",
		            HIB_RESERVED_MAX);
		return -EMSGSIZE;
	}
	rc = check_resource(r, r->count, name, name_len, d);
	if (rc == 0)
		rc = check_quantity(q, q_len, name, name_len, &v, d);
	if (rc != 0)
		return rc;
	e = &r->used[r->count++];
	memset(e, 0, sizeof(*e));
	memcpy(e->resource, name, name_len);
	memcpy(e->quantity, q, q_len);
	e->value.nano = v.nano; /* field by field: the padding of e stays zero */
	e->value.format = v.format;
	return 0;
}

int hib_reserved_init(struct hib_reserved *r, const char *supervisor, struct ll_err *err)
{
	struct ll_err local;
	struct denial d;
	size_t len;

	if (err == NULL)
		err = &local;
	memset(r, 0, sizeof(*r));
	if (supervisor == NULL)
		supervisor = "";
	len = strnlen(supervisor, HIB_NAME_MAX + 1);
	begin(&d, err, NULL);
	if (check_supervisor(supervisor, len, &d) != 0)
		return -EINVAL;
	memcpy(r->supervisor, supervisor, len);
	return 0;
}

int hib_reserved_add(struct hib_reserved *r, const char *resource, const char *quantity,
                     struct ll_err *err)
{
	struct ll_err local;
	struct denial d;

	if (err == NULL)
		err = &local;
	if (resource == NULL)
		resource = "";
	if (quantity == NULL)
		quantity = "";
	begin(&d, err, NULL);
	return add_entry(r, resource, strnlen(resource, HIB_RESOURCE_MAX + 1), quantity,
	                 strnlen(quantity, HIB_QUANTITY_MAX + 1), &d);
}

/* The "used" of @doc into @out, or a message in @d. */
static int read_used(const json_t *doc, struct hib_reserved *out, struct denial *d)
{
	const json_t *used = json_object_get(doc, "used");
	const char *key;
	json_t *v;
	int rc = 0;

	if (!json_is_object(used)) {
		denial_text(d, "\"used\" must be an object of resource names and quantities, not ");
		json_item(d, used);
		return -EINVAL;
	}
	if (json_object_size(used) > HIB_RESERVED_MAX) {
		denial_text(d, "\"used\" has %zu resources, more than the %d allowed",
		            json_object_size(used), HIB_RESERVED_MAX);
		return -EMSGSIZE;
	}
	json_object_foreach((json_t *)used, key, v) {
		if (!json_is_string(v)) {
			denial_text(d, "the quantity of ");
			denial_quote(d, key, strlen(key));
			denial_text(d, " must be a string like \"500m\" or \"2Gi\", not ");
			json_item(d, v);
			return -EINVAL;
		}
		rc = add_entry(out, key, strlen(key), json_string_value(v), json_string_length(v),
		               d);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int hib_reserved_parse(const char *text, struct hib_reserved *out, struct ll_err *err)
{
	struct ll_err local;
	struct denial d;
	json_t *doc = NULL;
	int rc;

	if (err == NULL)
		err = &local;
	memset(out, 0, sizeof(*out));
	begin(&d, err, HIB_RESERVED_ANNOTATION);
	rc = load(&RESERVED, text != NULL ? text : "", &doc, &d);
	if (rc == 0)
		rc = read_supervisor(doc, out->supervisor, &d);
	if (rc == 0)
		rc = read_used(doc, out, &d);
	json_decref(doc);
	if (rc != 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* Whether @r is what hib_reserved_init() and hib_reserved_add() make. */
static bool reserved_valid(const struct hib_reserved *r)
{
	struct ll_err err;
	struct denial d;
	size_t len = strnlen(r->supervisor, sizeof(r->supervisor));

	begin(&d, &err, NULL);
	if (len == sizeof(r->supervisor) || check_supervisor(r->supervisor, len, &d) != 0 ||
	    r->count > HIB_RESERVED_MAX)
		return false;
	for (size_t i = 0; i < r->count; i++) {
		const struct hib_reserved_entry *e = &r->used[i];
		size_t name_len = strnlen(e->resource, sizeof(e->resource));
		size_t q_len = strnlen(e->quantity, sizeof(e->quantity));
		struct qty v;

		if (name_len == sizeof(e->resource) || q_len == sizeof(e->quantity) ||
		    check_resource(r, i, e->resource, name_len, &d) != 0 ||
		    check_quantity(e->quantity, q_len, e->resource, name_len, &v, &d) != 0 ||
		    v.nano != e->value.nano || v.format != e->value.format)
			return false;
	}
	return true;
}

char *hib_reserved_format(const struct hib_reserved *r)
{
	json_t *doc, *used;
	char *text;

	if (!reserved_valid(r))
		return NULL;
	doc = json_object();
	used = json_object();
	json_object_set_new(doc, "supervisor", json_string(r->supervisor));
	for (size_t i = 0; i < r->count; i++)
		json_object_set_new(used, r->used[i].resource, json_string(r->used[i].quantity));
	json_object_set_new(doc, "used", used);
	text = jx_dumps(doc);
	json_decref(doc);
	return text;
}
