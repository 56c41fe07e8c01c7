/* Metrics registry shared by the whole agent: counters, gauges and histograms with
 * label sets, thread-safe, rendered in the Prometheus text exposition format 0.0.4
 * (HELP and TYPE lines, families sorted by name, series sorted by label values) for
 * the HTTP module's /metrics.
 *
 * Usage:
 *   static const char *const ep_labels[] = { "endpoint", NULL };
 *   struct np_metric *sent = np_metrics_counter(np_metrics_global(), "pyroscope_write_sent_profiles_total",
 *                                               "Total number of profiles sent to Pyroscope.", ep_labels, &err);
 *   struct np_series *s = np_metric_series(sent, (const char *const[]){ url }, &err);
 *   np_series_inc(s);
 *
 * Ownership: the registry owns families and series; their pointers stay valid until
 * np_metrics_free (the global registry lives for the whole process), so hot paths keep
 * the np_series pointer and update it without locks (counters and gauges are atomics;
 * a histogram takes a per-series mutex so that a scrape sees count == +Inf bucket).
 * Registering an existing name with the same type and label names returns the existing
 * family, so components that are re-created on a config reload keep their counts.
 * Every update function accepts NULL and does nothing: a failed registration must not
 * take the data path down with it. */
#ifndef NP_LIB_METRICS_H
#define NP_LIB_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/strbuf.h"

#define NP_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

enum np_metric_type { NP_METRIC_COUNTER, NP_METRIC_GAUGE, NP_METRIC_HISTOGRAM };

struct np_metrics; /* a registry */
struct np_metric;  /* a family: name, help, type, label names (and buckets) */
struct np_series;  /* one label-value combination of a family */

/* Prometheus' DefBuckets: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10 (seconds). */
extern const double np_metrics_default_buckets[];
#define NP_METRICS_DEFAULT_BUCKETS_N 11

/* The process-wide registry that /metrics serves. Never freed. */
struct np_metrics *np_metrics_global(void);

NP_MUST_CHECK struct np_metrics *np_metrics_new(struct np_err *err);
void np_metrics_free(struct np_metrics *reg);

/* label_names is NULL-terminated (NULL itself means no labels). Names must match
 * [a-zA-Z_:][a-zA-Z0-9_:]* and label names [a-zA-Z_][a-zA-Z0-9_]* without a "__"
 * prefix ("le" is also reserved for histograms). Fails if the name exists with a
 * different type, label names or buckets. */
NP_MUST_CHECK struct np_metric *np_metrics_counter(struct np_metrics *reg, const char *name, const char *help,
						  const char *const *label_names, struct np_err *err);
NP_MUST_CHECK struct np_metric *np_metrics_gauge(struct np_metrics *reg, const char *name, const char *help,
						const char *const *label_names, struct np_err *err);
/* buckets: strictly increasing finite upper bounds; +Inf is implicit. */
NP_MUST_CHECK struct np_metric *np_metrics_histogram(struct np_metrics *reg, const char *name, const char *help,
						    const char *const *label_names, const double *buckets,
						    size_t n_buckets, struct np_err *err);

/* The series for these label values (one per label name; NULL when the family has no
 * labels), created on first use. */
NP_MUST_CHECK struct np_series *np_metric_series(struct np_metric *m, const char *const *label_values,
						struct np_err *err);
/* Forgets a series. Only for callers that know nobody holds its pointer any more. */
void np_metric_remove(struct np_metric *m, const char *const *label_values);

void np_series_add(struct np_series *s, double v); /* counters: v >= 0, others ignored */
void np_series_inc(struct np_series *s);
void np_series_set(struct np_series *s, double v); /* gauges only */
void np_series_observe(struct np_series *s, double v); /* histograms only */

/* Reading back, for tests and debug pages. */
double np_series_value(const struct np_series *s);     /* counter or gauge value */
uint64_t np_series_hist_count(struct np_series *s);    /* histogram observation count */
double np_series_hist_sum(struct np_series *s);

/* Appends the text exposition of every family to out. */
NP_MUST_CHECK int np_metrics_render(struct np_metrics *reg, struct np_buf *out, struct np_err *err);

/* Formats a sample value as the text format expects (shortest round-trip form,
 * "+Inf", "-Inf", "NaN"). buf must hold 32 bytes. */
const char *np_metrics_format_value(double v, char buf[32]);

#endif
