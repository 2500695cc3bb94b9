/* flags.c - command-line flags and environment variables from one table (see flags.h). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/flags.h"
#include "base/mem.h"

#define FRACTION_DIGITS_MAX 9
#define USAGE_WIDTH         100
#define USAGE_COLUMN        30

/* ---- values ---- */

static int parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
		*out = true;
	else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static long unit_ms(const char *unit)
{
	static const struct {
		const char *name;
		long ms;
	} units[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(unit, units[i].name) == 0)
			return units[i].ms;
	return -1;
}

/* Integer arithmetic only: a double cast to long is undefined for nan, inf or 1e300. */
int flags_parse_duration_ms(const char *s, long *ms)
{
	const char *p = s;
	long whole = 0, frac = 0, scale = 1, mult, v;
	int digits = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL; /* no sign, no "nan", no ".5" */
	for (; *p >= '0' && *p <= '9'; p++)
		if (__builtin_mul_overflow(whole, 10, &whole) ||
		    __builtin_add_overflow(whole, *p - '0', &whole))
			return -ERANGE;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return -EINVAL;
		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < FRACTION_DIGITS_MAX) {
				frac = frac * 10 + (*p - '0');
				scale *= 10;
			}
	}
	mult = unit_ms(p);
	if (mult < 0)
		return -EINVAL;
	if (__builtin_mul_overflow(whole, mult, &v) ||
	    __builtin_add_overflow(v, frac * mult / scale, &v))
		return -ERANGE;
	*ms = v;
	return 0;
}

static int parse_hostport(const char *s, char host[FLAGS_HOST_MAX], int *port)
{
	const char *colon = strrchr(s, ':');
	long p;

	if (colon == NULL || (size_t)(colon - s) >= FLAGS_HOST_MAX ||
	    parse_long(colon + 1, 0, 65535, &p))
		return -EINVAL;
	if (colon == s) {
		memcpy(host, "127.0.0.1", sizeof("127.0.0.1"));
	} else {
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
	}
	*port = (int)p;
	return 0;
}

#define FIELD(out, off, type) ((type *)((char *)(out) + (off)))

static int add_to_list(const struct flag *f, const char *v, void *out)
{
	const char **list = FIELD(out, f->offset, const char *);
	size_t *count = FIELD(out, f->offset2, size_t);

	if (*count == FLAGS_LIST_MAX)
		return -E2BIG;
	list[(*count)++] = v;
	list[*count] = NULL;
	return 0;
}

static int set_value(const struct flag *f, const char *v, void *out)
{
	switch (f->type) {
	case FLAG_STRING:
		*FIELD(out, f->offset, const char *) = v;
		return 0;
	case FLAG_BOOL:
	case FLAG_SWITCH:
		return parse_bool(v, FIELD(out, f->offset, bool));
	case FLAG_INT:
		return parse_long(v, f->min, f->max, FIELD(out, f->offset, long));
	case FLAG_DURATION:
		return flags_parse_duration_ms(v, FIELD(out, f->offset, long));
	case FLAG_HOSTPORT:
		return parse_hostport(v, FIELD(out, f->offset, char), FIELD(out, f->offset2, int));
	case FLAG_LIST:
		return add_to_list(f, v, out);
	}
	return -EINVAL;
}

/* What a value of @f's type looks like, for the error line. */
static const char *expected(const struct flag *f, char *out, size_t len)
{
	switch (f->type) {
	case FLAG_BOOL:
	case FLAG_SWITCH:
		return "true or false";
	case FLAG_INT:
		snprintf(out, len, "an integer from %ld to %ld", f->min, f->max);
		return out;
	case FLAG_DURATION:
		return "a duration such as 500ms, 15s, 1.5m or 1h";
	case FLAG_HOSTPORT:
		return "HOST:PORT with a port from 0 to 65535";
	case FLAG_LIST:
		snprintf(out, len, "at most %d values", FLAGS_LIST_MAX);
		return out;
	case FLAG_STRING:
		break;
	}
	return "a string";
}

/* ---- sources ---- */

static int apply_defaults(const struct flag *table, size_t n, void *out, struct ll_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (table[i].dflt && set_value(&table[i], table[i].dflt, out) < 0)
			return ll_err_set(err, -EINVAL, "bad default for --%s: \"%s\"",
			                  table[i].name, table[i].dflt);
	return 0;
}

/* The value argv gives @f, or NULL: a flag given on the command line hides its variable. */
struct given {
	const struct flag *f;
	const char *v;
};

static int apply_environment(const struct flag *table, size_t n, const struct given *argv_vals,
                             size_t n_vals, void *out, struct ll_err *err)
{
	for (size_t i = 0; i < n; i++) {
		const char *v = table[i].env ? getenv(table[i].env) : NULL;
		char want[64];
		bool hidden = false;

		for (size_t j = 0; j < n_vals && !hidden; j++)
			hidden = argv_vals[j].f == &table[i];
		if (v && *v && !hidden && set_value(&table[i], v, out) < 0)
			return ll_err_set(err, -EINVAL, "invalid value %s=\"%s\": expected %s",
			                  table[i].env, v, expected(&table[i], want, sizeof(want)));
	}
	return 0;
}

static const struct flag *find(const struct flag *table, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(table[i].name) == len && strncmp(table[i].name, name, len) == 0)
			return &table[i];
	return NULL;
}

/* Split argv[first..] into flags and their values, before anything is applied. */
static int split_argv(const struct flag *table, size_t n, int argc, char **argv, int first,
                      struct given *vals, size_t *n_vals, struct ll_err *err)
{
	for (int i = first; i < argc; i++) {
		const char *a = argv[i], *name, *eq;
		const struct flag *f;

		if (a[0] != '-')
			return ll_err_set(err, -EINVAL, "unexpected argument \"%s\"", a);
		name = a + (a[1] == '-' ? 2 : 1);
		if (strcmp(name, "help") == 0 || strcmp(name, "h") == 0)
			return 1;
		eq = strchr(name, '=');
		f = find(table, n, name, eq ? (size_t)(eq - name) : strlen(name));
		if (f == NULL)
			return ll_err_set(err, -EINVAL, "unknown flag \"%s\"", a);
		vals[*n_vals].f = f;
		if (f->type == FLAG_SWITCH && eq == NULL)
			vals[*n_vals].v = "true";
		else if (eq)
			vals[*n_vals].v = eq + 1;
		else if (i + 1 < argc)
			vals[*n_vals].v = argv[++i];
		else
			return ll_err_set(err, -EINVAL, "flag --%s needs a value", f->name);
		(*n_vals)++;
	}
	return 0;
}

int flags_parse(const struct flag *table, size_t n, int argc, char **argv, int first, void *out,
                struct ll_err *err)
{
	size_t n_vals = 0;
	struct given *vals = xcalloc(argc > first ? (size_t)(argc - first) : 1, sizeof(*vals));
	int rc = split_argv(table, n, argc, argv, first, vals, &n_vals, err);

	if (rc == 0)
		rc = apply_defaults(table, n, out, err);
	if (rc == 0)
		rc = apply_environment(table, n, vals, n_vals, out, err);
	for (size_t i = 0; rc == 0 && i < n_vals; i++) {
		char want[64];

		if (set_value(vals[i].f, vals[i].v, out) < 0)
			rc = ll_err_set(err, -EINVAL, "invalid value for --%s: \"%s\": expected %s",
			                vals[i].f->name, vals[i].v,
			                expected(vals[i].f, want, sizeof(want)));
	}
	free(vals);
	return rc;
}

/* ---- help ---- */

/* Print @text from column @col, wrapped before USAGE_WIDTH; @at is where the line is now. */
static void wrap(FILE *f, const char *text, size_t at, size_t col)
{
	while (*text) {
		size_t len = strcspn(text, " ");

		if (at > col && at + 1 + len > USAGE_WIDTH) {
			fprintf(f, "\n%*s", (int)col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', f);
			at++;
		}
		fwrite(text, 1, len, f);
		at += len;
		text += len;
		while (*text == ' ')
			text++;
	}
	fputc('\n', f);
}

void flags_usage(const struct flag *table, size_t n, FILE *f)
{
	char head[128], tail[256];

	for (size_t i = 0; i < n; i++) {
		const struct flag *fl = &table[i];
		int len = snprintf(head, sizeof(head), "  --%s%s%s", fl->name, fl->arg ? " " : "",
		                   fl->arg ? fl->arg : "");
		size_t at = (size_t)len;

		snprintf(tail, sizeof(tail), "%s%s%s%s%s%s%s", fl->help ? fl->help : "",
		         fl->env ? " [" : "", fl->env ? fl->env : "", fl->env ? "]" : "",
		         fl->dflt ? " (" : "", fl->dflt ? fl->dflt : "", fl->dflt ? ")" : "");
		fputs(head, f);
		if (at + 1 >= USAGE_COLUMN) {
			fprintf(f, "\n%*s", USAGE_COLUMN, "");
		} else {
			fprintf(f, "%*s", (int)(USAGE_COLUMN - at), "");
		}
		wrap(f, tail, USAGE_COLUMN, USAGE_COLUMN);
	}
}
