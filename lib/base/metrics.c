/* metrics.c - process-wide Prometheus registry, text format 0.0.4 (see metrics.h). */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "base/vec.h"

struct sample {
	char *labels;
	double value;     /* counter, gauge */
	double sum;       /* histogram */
	uint64_t count;   /* histogram */
	uint64_t *counts; /* histogram, per bucket (not cumulative), n_bounds entries */
};

struct family {
	char *name;
	char *help; /* NULL while declared implicitly by an update */
	enum metric_type type;
	double *bounds;
	size_t n_bounds;
	VEC(struct sample *) samples;
	json_t *index; /* labels -> sample position */
	bool warned;
};

static const char *const type_names[] = {"counter", "gauge", "histogram"};

static const double default_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                        0.5,   1,      2.5,   5,    10,    30,   60};

static struct {
	pthread_mutex_t mu;
	VEC(struct family *) families;
	json_t *index; /* name -> family position */
} reg = {.mu = PTHREAD_MUTEX_INITIALIZER};

static size_t position(const json_t *index, const char *key)
{
	json_t *v = json_object_get(index, key);

	return v ? (size_t)json_integer_value(v) : SIZE_MAX;
}

static struct family *find_family(const char *name)
{
	size_t i;

	if (reg.index == NULL)
		return NULL;
	i = position(reg.index, name);
	return i == SIZE_MAX ? NULL : reg.families.v[i];
}

static void init_type(struct family *f, enum metric_type type, const double *bounds, size_t n)
{
	if (bounds == NULL) {
		bounds = default_bounds;
		n = sizeof(default_bounds) / sizeof(default_bounds[0]);
	}
	/* +Inf is always implied; a caller-supplied one would duplicate it. */
	while (n > 0 && isinf(bounds[n - 1]) && bounds[n - 1] > 0)
		n--;
	f->type = type;
	if (type != METRIC_HISTOGRAM)
		return;
	for (size_t i = 1; i < n; i++)
		assert(bounds[i - 1] < bounds[i]);
	f->bounds = xmalloc(n * sizeof(*f->bounds));
	memcpy(f->bounds, bounds, n * sizeof(*f->bounds));
	f->n_bounds = n;
}

static struct family *add_family(const char *name, enum metric_type type, const double *bounds,
                                 size_t n_bounds)
{
	struct family *f = xcalloc(1, sizeof(*f));

	f->name = xstrdup(name);
	f->index = json_object();
	init_type(f, type, bounds, n_bounds);
	if (reg.index == NULL)
		reg.index = json_object();
	json_object_set_new_nocheck(reg.index, name, json_integer((json_int_t)reg.families.len));
	vec_push(&reg.families, f);
	return f;
}

void metrics_describe(const char *name, enum metric_type type, const char *help,
                      const double *buckets, size_t n_buckets)
{
	struct family *f;

	pthread_mutex_lock(&reg.mu);
	f = find_family(name);
	if (f == NULL)
		f = add_family(name, type, buckets, n_buckets);
	else if (f->help)
		goto out; /* described already */
	else if (f->type != type && (f->type == METRIC_HISTOGRAM || type == METRIC_HISTOGRAM))
		goto out; /* implicit samples of another shape exist */
	else
		f->type = type; /* counter <-> gauge; a histogram keeps the buckets in use */
	f->help = xstrdup(help ? help : "");
out:
	pthread_mutex_unlock(&reg.mu);
}

static void sample_free(struct sample *s)
{
	free(s->labels);
	free(s->counts);
	free(s);
}

static void family_free(struct family *f)
{
	for (size_t i = 0; i < f->samples.len; i++)
		sample_free(f->samples.v[i]);
	vec_release(&f->samples);
	json_decref(f->index);
	free(f->bounds);
	free(f->help);
	free(f->name);
	free(f);
}

/*
 * Look up (or create) the sample of @name{@labels} for an update of kind @want; NULL when the
 * family has another type or too many series. Undeclared families get the type @want (a
 * histogram the default buckets). Caller holds reg.mu.
 */
static struct sample *lookup(const char *name, const char *labels, enum metric_type want,
                             struct family **fp /* OUT */)
{
	struct family *f = find_family(name);
	struct sample *s;
	size_t i;

	if (labels == NULL)
		labels = "";
	if (f == NULL)
		f = add_family(name, want, NULL, 0);
	*fp = f;
	if ((f->type == METRIC_HISTOGRAM) != (want == METRIC_HISTOGRAM) ||
	    (want == METRIC_GAUGE && f->type != METRIC_GAUGE)) {
		if (!f->warned)
			log_warn("metric update does not match its type", "{s:s,s:s,s:s}", "name",
			         name, "type", type_names[f->type], "update", type_names[want]);
		f->warned = true;
		return NULL;
	}
	i = position(f->index, labels);
	if (i != SIZE_MAX)
		return f->samples.v[i];
	if (f->samples.len >= METRICS_MAX_SERIES) {
		if (!f->warned)
			log_warn("metric has too many series; dropping new ones", "{s:s,s:i}",
			         "name", name, "max", METRICS_MAX_SERIES);
		f->warned = true;
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	s->labels = xstrdup(labels);
	if (f->type == METRIC_HISTOGRAM)
		s->counts = xcalloc(f->n_bounds ? f->n_bounds : 1, sizeof(*s->counts));
	json_object_set_new_nocheck(f->index, labels, json_integer((json_int_t)f->samples.len));
	vec_push(&f->samples, s);
	return s;
}

void metrics_add(const char *name, const char *labels, double v)
{
	struct family *f;
	struct sample *s;

	pthread_mutex_lock(&reg.mu);
	s = lookup(name, labels, METRIC_COUNTER, &f);
	if (s && (f->type == METRIC_GAUGE || v >= 0)) /* counters only go up */
		s->value += v;
	pthread_mutex_unlock(&reg.mu);
}

void metrics_set(const char *name, const char *labels, double v)
{
	struct family *f;
	struct sample *s;

	pthread_mutex_lock(&reg.mu);
	s = lookup(name, labels, METRIC_GAUGE, &f);
	if (s)
		s->value = v;
	pthread_mutex_unlock(&reg.mu);
}

void metrics_observe(const char *name, const char *labels, double v)
{
	struct family *f;
	struct sample *s;
	size_t i;

	pthread_mutex_lock(&reg.mu);
	s = lookup(name, labels, METRIC_HISTOGRAM, &f);
	if (s == NULL)
		goto out;
	for (i = 0; i < f->n_bounds && !(v <= f->bounds[i]); i++)
		;
	if (i < f->n_bounds)
		s->counts[i]++;
	s->count++;
	s->sum += v;
out:
	pthread_mutex_unlock(&reg.mu);
}

double metrics_get(const char *name, const char *labels)
{
	struct family *f;
	struct sample *s;
	size_t i;
	double v = 0;

	pthread_mutex_lock(&reg.mu);
	f = find_family(name);
	if (f == NULL)
		goto out;
	i = position(f->index, labels ? labels : "");
	if (i == SIZE_MAX)
		goto out;
	s = f->samples.v[i];
	v = f->type == METRIC_HISTOGRAM ? (double)s->count : s->value;
out:
	pthread_mutex_unlock(&reg.mu);
	return v;
}

/* Bounded writer for metrics_labels(): put() fails instead of overrunning @cap - 1 bytes. */
struct lw {
	char *out;
	size_t cap;
	size_t len;
};

static int put(struct lw *w, const char *s, size_t n)
{
	if (n >= w->cap - w->len)
		return -EMSGSIZE;
	memcpy(w->out + w->len, s, n);
	w->len += n;
	return 0;
}

static int put_escaped(struct lw *w, const char *s)
{
	int rc = 0;

	for (; *s && rc == 0; s++) {
		if (*s == '\\')
			rc = put(w, "\\\\", 2);
		else if (*s == '"')
			rc = put(w, "\\\"", 2);
		else if (*s == '\n')
			rc = put(w, "\\n", 2);
		else
			rc = put(w, s, 1);
	}
	return rc;
}

static int put_pair(struct lw *w, const char *k, const char *v)
{
	int rc = 0;

	if (w->len > 0)
		rc = put(w, ",", 1);
	if (rc == 0)
		rc = put(w, k, strlen(k));
	if (rc == 0)
		rc = put(w, "=\"", 2);
	if (rc == 0)
		rc = put_escaped(w, v);
	if (rc == 0)
		rc = put(w, "\"", 1);
	return rc;
}

const char *metrics_labels(char *out, size_t out_len, ...)
{
	struct lw w = {out, out_len, 0};
	const char *k, *v;
	size_t mark;
	va_list ap;

	if (out_len == 0)
		return out;
	va_start(ap, out_len);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		mark = w.len;
		if (put_pair(&w, k, v ? v : "") < 0) {
			w.len = mark; /* keep the output well-formed: whole pairs only */
			break;
		}
	}
	va_end(ap);
	out[w.len] = '\0';
	return out;
}

/* Integers print exactly without exponent; others in the shortest form that reads back. */
static void format_value(char out[40], double v)
{
	if (isnan(v)) {
		snprintf(out, 40, "NaN");
	} else if (isinf(v)) {
		snprintf(out, 40, "%s", v > 0 ? "+Inf" : "-Inf");
	} else if (v == trunc(v) && fabs(v) < 1e18) {
		snprintf(out, 40, "%.0f", v);
	} else {
		snprintf(out, 40, "%.15g", v);
		if (strtod(out, NULL) != v)
			snprintf(out, 40, "%.17g", v);
	}
}

static int render_help(struct buf *out, const struct family *f)
{
	int rc = 0;

	if (f->help) {
		rc = buf_appendf(out, "# HELP %s ", f->name);
		for (const char *c = f->help; *c && rc == 0; c++) {
			if (*c == '\\')
				rc = buf_append(out, "\\\\", 2);
			else if (*c == '\n')
				rc = buf_append(out, "\\n", 2);
			else
				rc = buf_append(out, c, 1);
		}
		if (rc == 0)
			rc = buf_append(out, "\n", 1);
	}
	if (rc == 0)
		rc = buf_appendf(out, "# TYPE %s %s\n", f->name, type_names[f->type]);
	return rc;
}

static int render_line(struct buf *out, const char *name, const char *suffix, const char *labels,
                       const char *le, const char *value)
{
	const char *sep = *labels && le ? "," : "";

	if (*labels == '\0' && le == NULL)
		return buf_appendf(out, "%s%s %s\n", name, suffix, value);
	return buf_appendf(out, "%s%s{%s%s%s%s%s} %s\n", name, suffix, labels, sep,
	                   le ? "le=\"" : "", le ? le : "", le ? "\"" : "", value);
}

static int render_histogram(struct buf *out, const struct family *f, const struct sample *s)
{
	char le[40], value[40];
	uint64_t cum = 0;
	int rc = 0;

	for (size_t i = 0; i < f->n_bounds && rc == 0; i++) {
		cum += s->counts[i];
		format_value(le, f->bounds[i]);
		snprintf(value, sizeof(value), "%" PRIu64, cum);
		rc = render_line(out, f->name, "_bucket", s->labels, le, value);
	}
	snprintf(value, sizeof(value), "%" PRIu64, s->count);
	if (rc == 0)
		rc = render_line(out, f->name, "_bucket", s->labels, "+Inf", value);
	format_value(value, s->sum);
	if (rc == 0)
		rc = render_line(out, f->name, "_sum", s->labels, NULL, value);
	snprintf(value, sizeof(value), "%" PRIu64, s->count);
	if (rc == 0)
		rc = render_line(out, f->name, "_count", s->labels, NULL, value);
	return rc;
}

static int render_family(struct buf *out, const struct family *f)
{
	char value[40];
	int rc = render_help(out, f);

	for (size_t i = 0; i < f->samples.len && rc == 0; i++) {
		const struct sample *s = f->samples.v[i];

		if (f->type == METRIC_HISTOGRAM) {
			rc = render_histogram(out, f, s);
		} else {
			format_value(value, s->value);
			rc = render_line(out, f->name, "", s->labels, NULL, value);
		}
	}
	return rc;
}

int metrics_render(struct buf *out)
{
	int rc = 0;

	pthread_mutex_lock(&reg.mu);
	for (size_t i = 0; i < reg.families.len && rc == 0; i++)
		rc = render_family(out, reg.families.v[i]);
	pthread_mutex_unlock(&reg.mu);
	return rc;
}

void metrics_reset_for_tests(void)
{
	pthread_mutex_lock(&reg.mu);
	for (size_t i = 0; i < reg.families.len; i++)
		family_free(reg.families.v[i]);
	vec_release(&reg.families);
	json_decref(reg.index);
	reg.index = NULL;
	pthread_mutex_unlock(&reg.mu);
}
