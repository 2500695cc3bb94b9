/*
 * metrics.h - process-wide Prometheus registry (text exposition format 0.0.4).
 *
 * A metric family is declared once with metrics_describe() (name, type, help); samples are
 * addressed by family name plus a rendered label set, e.g. `verb="GET",code="200"` (build it
 * with metrics_labels(), which escapes values). Counters only go up; gauges are set or added;
 * histograms use fixed buckets chosen at describe time (NULL: latency buckets in seconds from
 * 0.001 to 60). Thread-safe; updates take one mutex and are O(1) amortised. Families with no
 * samples still render their HELP/TYPE lines.
 * An update that does not fit the family's type (metrics_set() on a counter, metrics_add() on a
 * histogram, a negative add to a counter) is ignored; a type mismatch is logged once per family.
 * A family holds at most METRICS_MAX_SERIES label sets; samples for new ones beyond it are dropped.
 */
#ifndef LANDLORD_METRICS_H
#define LANDLORD_METRICS_H

#include <stddef.h>

struct buf;

#define METRICS_MAX_SERIES 10000

enum metric_type {
	METRIC_COUNTER,
	METRIC_GAUGE,
	METRIC_HISTOGRAM,
};

/**
 * metrics_describe() - declare a family; repeated calls with the same name are no-ops. A family
 * first created implicitly by an update takes @help (and counter <-> gauge, @type) from here.
 */
void metrics_describe(const char *name, enum metric_type type, const char *help,
                      const double *buckets /* histogram upper bounds, ascending; or NULL */,
                      size_t n_buckets);
/** metrics_add() - counter or gauge += @v. An undeclared family is declared as a counter. */
void metrics_add(const char *name, const char *labels /* "" or NULL for none */, double v);
/** metrics_set() - gauge = @v. An undeclared family is declared as a gauge. */
void metrics_set(const char *name, const char *labels, double v);
/** metrics_observe() - histogram observation (undeclared: a histogram with default buckets). */
void metrics_observe(const char *name, const char *labels, double v);
/** metrics_get() - current counter/gauge value (histograms: the count); 0 when absent. */
double metrics_get(const char *name, const char *labels);

/**
 * metrics_labels() - render name/value pairs (NULL-terminated) into @out as
 * `k1="v1",k2="v2"`, escaping backslash, quote and newline; a NULL value renders as "". Pairs
 * that do not fit are left out whole, so the result stays well-formed. Return: @out (always
 * terminated when @out_len > 0).
 */
const char *metrics_labels(char *out, size_t out_len, ...) __attribute__((sentinel));

/** metrics_render() - the whole registry in text format. Return: 0 or -EMSGSIZE. */
int metrics_render(struct buf *out);
/** metrics_reset_for_tests() - forget every family. */
void metrics_reset_for_tests(void);

#endif
