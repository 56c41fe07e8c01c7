/* Metrics registry and Prometheus text exposition: see metrics.h. */
#include "lib/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/labels.h"
#include "lib/sorted.h"

const double np_metrics_default_buckets[NP_METRICS_DEFAULT_BUCKETS_N] = { .005, .01, .025, .05, .1,
									   .25,  .5,  1,    2.5, 5, 10 };

struct np_series {
	const struct np_metric *family; /* type and histogram bounds, immutable */
	char **values; /* owned, one per label name */
	/* Counter and gauge: the double's bit pattern, so that updates are lock-free. */
	_Atomic uint64_t bits;
	/* Histogram: per-bucket (not cumulative) counts, the last one for +Inf. */
	pthread_mutex_t lock;
	uint64_t *buckets;
	double sum;
};

struct np_metric {
	char *name, *help;
	enum np_metric_type type;
	char **label_names; /* owned */
	size_t n_labels;
	double *bounds; /* histogram upper bounds, owned */
	size_t n_bounds;
	pthread_mutex_t lock; /* guards the series array, not the values */
	struct np_series **series; /* sorted by label values */
	size_t n_series, cap_series;
};

struct np_metrics {
	pthread_mutex_t lock;
	struct np_metric **families; /* sorted by name */
	size_t n, cap;
};

static uint64_t dbits(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

static double bitsd(uint64_t u)
{
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

static struct np_metrics *global_registry;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
	struct np_err err;

	global_registry = np_metrics_new(&err);
}

struct np_metrics *np_metrics_global(void)
{
	pthread_once(&global_once, global_init);
	return global_registry;
}

struct np_metrics *np_metrics_new(struct np_err *err)
{
	struct np_metrics *reg = calloc(1, sizeof(*reg));

	if (!reg) {
		np_errf(err, "out of memory creating a metrics registry");
		return NULL;
	}
	pthread_mutex_init(&reg->lock, NULL);
	return reg;
}

static void series_free(struct np_series *s, size_t n_labels)
{
	if (!s)
		return;
	for (size_t i = 0; i < n_labels; i++)
		free(s->values ? s->values[i] : NULL);
	free(s->values);
	free(s->buckets);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void family_free(struct np_metric *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_series; i++)
		series_free(m->series[i], m->n_labels);
	free(m->series);
	for (size_t i = 0; i < m->n_labels; i++)
		free(m->label_names[i]);
	free(m->label_names);
	free(m->bounds);
	free(m->name);
	free(m->help);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void np_metrics_free(struct np_metrics *reg)
{
	if (!reg)
		return;
	for (size_t i = 0; i < reg->n; i++)
		family_free(reg->families[i]);
	free(reg->families);
	pthread_mutex_destroy(&reg->lock);
	free(reg);
}

static int valid_metric_name(const char *s)
{
	if (!*s)
		return 0;
	for (const char *p = s; *p; p++) {
		char c = *p;
		int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
		if (!alpha && !(p > s && c >= '0' && c <= '9'))
			return 0;
	}
	return 1;
}

/* The exposition format's legacy names, without the "__" prefix Prometheus reserves. */
static int valid_label_name(const char *s)
{
	return np_label_name_legacy(s, strlen(s)) && !(s[0] == '_' && s[1] == '_');
}

static size_t count_names(const char *const *names)
{
	size_t n = 0;

	while (names && names[n])
		n++;
	return n;
}

/* Whether an existing family has exactly this shape. */
static int same_shape(const struct np_metric *m, enum np_metric_type type, const char *const *label_names,
		      const double *bounds, size_t n_bounds)
{
	if (m->type != type || m->n_labels != count_names(label_names))
		return 0;
	for (size_t i = 0; i < m->n_labels; i++)
		if (strcmp(m->label_names[i], label_names[i]) != 0)
			return 0;
	if (type != NP_METRIC_HISTOGRAM)
		return 1;
	if (m->n_bounds != n_bounds)
		return 0;
	for (size_t i = 0; i < n_bounds; i++)
		if (m->bounds[i] != bounds[i])
			return 0;
	return 1;
}

static struct np_metric *family_new(const char *name, const char *help, enum np_metric_type type,
				    const char *const *label_names, const double *bounds, size_t n_bounds)
{
	struct np_metric *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	m->type = type;
	m->name = strdup(name);
	m->help = strdup(help ? help : "");
	m->n_labels = count_names(label_names);
	m->label_names = calloc(m->n_labels ? m->n_labels : 1, sizeof(char *));
	if (!m->name || !m->help || !m->label_names) {
		family_free(m);
		return NULL;
	}
	for (size_t i = 0; i < m->n_labels; i++) {
		m->label_names[i] = strdup(label_names[i]);
		if (!m->label_names[i]) {
			family_free(m);
			return NULL;
		}
	}
	if (type == NP_METRIC_HISTOGRAM) {
		m->bounds = malloc((n_bounds ? n_bounds : 1) * sizeof(double));
		if (!m->bounds) {
			family_free(m);
			return NULL;
		}
		memcpy(m->bounds, bounds, n_bounds * sizeof(double));
		m->n_bounds = n_bounds;
	}
	return m;
}

struct np_series *np_metric_series(struct np_metric *m, const char *const *label_values, struct np_err *err);

/* The checks of a family's name, label names and histogram buckets, before registering. */
static int valid_family(enum np_metric_type type, const char *name, const char *const *label_names,
			const double *bounds, size_t n_bounds, struct np_err *err)
{
	if (!valid_metric_name(name))
		return np_errf(err, "invalid metric name \"%s\": must match [a-zA-Z_:][a-zA-Z0-9_:]*", name);
	for (size_t i = 0; label_names && label_names[i]; i++) {
		if (!valid_label_name(label_names[i]) ||
		    (type == NP_METRIC_HISTOGRAM && strcmp(label_names[i], "le") == 0))
			return np_errf(err, "metric %s: invalid label name \"%s\"", name, label_names[i]);
		for (size_t j = 0; j < i; j++)
			if (strcmp(label_names[i], label_names[j]) == 0)
				return np_errf(err, "metric %s: duplicate label name \"%s\"", name, label_names[i]);
	}
	for (size_t i = 0; type == NP_METRIC_HISTOGRAM && i < n_bounds; i++)
		if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
			return np_errf(err, "metric %s: histogram buckets must be finite and strictly increasing", name);
	return 0;
}

static int cmp_family_name(const void *name, const void *family)
{
	return strcmp(name, (*(struct np_metric *const *)family)->name);
}

static struct np_metric *reg_family(struct np_metrics *reg, enum np_metric_type type, const char *name,
				    const char *help, const char *const *label_names, const double *bounds,
				    size_t n_bounds, struct np_err *err)
{
	struct np_metric *m;
	size_t lo;
	int found;

	if (!reg) {
		np_errf(err, "metric %s: no registry", name);
		return NULL;
	}
	if (valid_family(type, name, label_names, bounds, n_bounds, err) != 0)
		return NULL;

	pthread_mutex_lock(&reg->lock);
	lo = np_sorted_find(reg->families, reg->n, sizeof(reg->families[0]), name, cmp_family_name, &found);
	if (found) {
		m = reg->families[lo];
		int ok = same_shape(m, type, label_names, bounds, n_bounds);
		pthread_mutex_unlock(&reg->lock);
		if (!ok) {
			np_errf(err, "metric %s is already registered with a different type, labels or buckets", name);
			return NULL;
		}
		return m;
	}
	if (np_grow((void **)&reg->families, &reg->cap, reg->n + 1, sizeof(reg->families[0])) != 0)
		goto oom;
	m = family_new(name, help, type, label_names, bounds, n_bounds);
	if (!m)
		goto oom;
	/* A family without labels has exactly one series and shows 0 before any update. */
	if (m->n_labels == 0 && !np_metric_series(m, NULL, err)) {
		family_free(m);
		pthread_mutex_unlock(&reg->lock);
		return NULL;
	}
	memmove(&reg->families[lo + 1], &reg->families[lo], (reg->n - lo) * sizeof(m));
	reg->families[lo] = m;
	reg->n++;
	pthread_mutex_unlock(&reg->lock);
	return m;
oom:
	pthread_mutex_unlock(&reg->lock);
	np_errf(err, "out of memory registering metric %s", name);
	return NULL;
}

struct np_metric *np_metrics_counter(struct np_metrics *reg, const char *name, const char *help,
				     const char *const *label_names, struct np_err *err)
{
	return reg_family(reg, NP_METRIC_COUNTER, name, help, label_names, NULL, 0, err);
}

struct np_metric *np_metrics_gauge(struct np_metrics *reg, const char *name, const char *help,
				   const char *const *label_names, struct np_err *err)
{
	return reg_family(reg, NP_METRIC_GAUGE, name, help, label_names, NULL, 0, err);
}

struct np_metric *np_metrics_histogram(struct np_metrics *reg, const char *name, const char *help,
				       const char *const *label_names, const double *buckets, size_t n_buckets,
				       struct np_err *err)
{
	return reg_family(reg, NP_METRIC_HISTOGRAM, name, help, label_names, buckets, n_buckets, err);
}

/* The label values a series is looked up by (NULL values read as ""). */
struct series_key {
	const char *const *values;
	size_t n;
};

static int cmp_series(const void *key, const void *series)
{
	const struct series_key *k = key;
	char *const *v = (*(struct np_series *const *)series)->values;

	for (size_t i = 0; i < k->n; i++) {
		int c = strcmp(k->values[i] ? k->values[i] : "", v[i]);
		if (c)
			return c;
	}
	return 0;
}

/* Under m->lock: index of the series or its insertion point. */
static size_t find_series(struct np_metric *m, const char *const *values, int *found)
{
	struct series_key k = { values, m->n_labels };

	return np_sorted_find(m->series, m->n_series, sizeof(m->series[0]), &k, cmp_series, found);
}

struct np_series *np_metric_series(struct np_metric *m, const char *const *label_values, struct np_err *err)
{
	struct np_series *s;
	int found;
	size_t i;

	if (!m) {
		np_errf(err, "no metric family");
		return NULL;
	}
	if (m->n_labels && !label_values) {
		np_errf(err, "metric %s: %zu label values required", m->name, m->n_labels);
		return NULL;
	}
	pthread_mutex_lock(&m->lock);
	i = find_series(m, label_values, &found);
	if (found) {
		s = m->series[i];
		pthread_mutex_unlock(&m->lock);
		return s;
	}
	if (np_grow((void **)&m->series, &m->cap_series, m->n_series + 1, sizeof(m->series[0])) != 0)
		goto oom;
	s = calloc(1, sizeof(*s));
	if (!s)
		goto oom;
	pthread_mutex_init(&s->lock, NULL);
	s->family = m;
	s->values = calloc(m->n_labels ? m->n_labels : 1, sizeof(char *));
	if (m->type == NP_METRIC_HISTOGRAM)
		s->buckets = calloc(m->n_bounds + 1, sizeof(uint64_t));
	if (!s->values || (m->type == NP_METRIC_HISTOGRAM && !s->buckets)) {
		series_free(s, 0);
		goto oom;
	}
	for (size_t k = 0; k < m->n_labels; k++) {
		s->values[k] = strdup(label_values[k] ? label_values[k] : "");
		if (!s->values[k]) {
			series_free(s, m->n_labels);
			goto oom;
		}
	}
	atomic_store(&s->bits, dbits(0.0));
	memmove(&m->series[i + 1], &m->series[i], (m->n_series - i) * sizeof(s));
	m->series[i] = s;
	m->n_series++;
	pthread_mutex_unlock(&m->lock);
	return s;
oom:
	pthread_mutex_unlock(&m->lock);
	np_errf(err, "out of memory adding a series to metric %s", m->name);
	return NULL;
}

void np_metric_remove(struct np_metric *m, const char *const *label_values)
{
	int found;
	size_t i;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	i = find_series(m, label_values, &found);
	if (found) {
		series_free(m->series[i], m->n_labels);
		memmove(&m->series[i], &m->series[i + 1], (m->n_series - i - 1) * sizeof(m->series[0]));
		m->n_series--;
	}
	pthread_mutex_unlock(&m->lock);
}

static void atomic_add_double(_Atomic uint64_t *bits, double v)
{
	uint64_t old = atomic_load(bits);

	while (!atomic_compare_exchange_weak(bits, &old, dbits(bitsd(old) + v)))
		;
}

void np_series_add(struct np_series *s, double v)
{
	if (!s || s->family->type == NP_METRIC_HISTOGRAM)
		return;
	if (s->family->type == NP_METRIC_COUNTER && !(v >= 0))
		return; /* counters only go up; NaN is refused too */
	atomic_add_double(&s->bits, v);
}

void np_series_inc(struct np_series *s)
{
	np_series_add(s, 1.0);
}

void np_series_set(struct np_series *s, double v)
{
	if (!s || s->family->type != NP_METRIC_GAUGE)
		return;
	atomic_store(&s->bits, dbits(v));
}

double np_series_value(const struct np_series *s)
{
	if (!s)
		return 0;
	return bitsd(atomic_load(&((struct np_series *)s)->bits));
}

void np_series_observe(struct np_series *s, double v)
{
	const struct np_metric *m;
	size_t i = 0;

	if (!s || s->family->type != NP_METRIC_HISTOGRAM || isnan(v))
		return;
	m = s->family;
	while (i < m->n_bounds && !(v <= m->bounds[i]))
		i++;
	pthread_mutex_lock(&s->lock);
	s->buckets[i]++;
	s->sum += v;
	pthread_mutex_unlock(&s->lock);
}

uint64_t np_series_hist_count(struct np_series *s)
{
	uint64_t n = 0;

	if (!s || !s->buckets)
		return 0;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i <= s->family->n_bounds; i++)
		n += s->buckets[i];
	pthread_mutex_unlock(&s->lock);
	return n;
}

double np_series_hist_sum(struct np_series *s)
{
	double sum;

	if (!s || !s->buckets)
		return 0;
	pthread_mutex_lock(&s->lock);
	sum = s->sum;
	pthread_mutex_unlock(&s->lock);
	return sum;
}

const char *np_metrics_format_value(double v, char buf[32])
{
	if (isnan(v))
		return strcpy(buf, "NaN");
	if (isinf(v))
		return strcpy(buf, v > 0 ? "+Inf" : "-Inf");
	/* Integers below 2^53 are exact: print them plainly (byte counters read better). */
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		snprintf(buf, 32, "%.0f", v);
		return buf;
	}
	/* The shortest form that reads back to the same double, as Go's 'g', -1. */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, 32, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

static void put_escaped(struct np_buf *out, const char *s, int quote_too)
{
	for (; *s; s++) {
		if (*s == '\\')
			np_buf_puts(out, "\\\\");
		else if (*s == '\n')
			np_buf_puts(out, "\\n");
		else if (quote_too && *s == '"')
			np_buf_puts(out, "\\\"");
		else
			np_buf_putc(out, *s);
	}
}

/* Writes `name{l1="v1",...[,le="x"]} value` for one sample line. */
static void put_sample(struct np_buf *out, const struct np_metric *m, const char *suffix, const struct np_series *s,
		       const char *le, const char *value)
{
	int any = 0;

	np_buf_puts(out, m->name);
	np_buf_puts(out, suffix);
	for (size_t i = 0; i < m->n_labels; i++) {
		np_buf_putc(out, any ? ',' : '{');
		any = 1;
		np_buf_puts(out, m->label_names[i]);
		np_buf_puts(out, "=\"");
		put_escaped(out, s->values[i], 1);
		np_buf_putc(out, '"');
	}
	if (le) {
		np_buf_putc(out, any ? ',' : '{');
		any = 1;
		np_buf_printf(out, "le=\"%s\"", le);
	}
	if (any)
		np_buf_putc(out, '}');
	np_buf_putc(out, ' ');
	np_buf_puts(out, value);
	np_buf_putc(out, '\n');
}

static void render_histogram(struct np_buf *out, const struct np_metric *m, struct np_series *s)
{
	uint64_t *counts = NULL, cum = 0;
	double sum;
	char v[32], le[32];
	size_t nb = m->n_bounds + 1;
	uint64_t stack_counts[64];

	counts = nb <= 64 ? stack_counts : malloc(nb * sizeof(uint64_t));
	if (!counts) {
		out->failed = 1;
		return;
	}
	/* Copy under the lock so that the buckets, _sum and _count agree. */
	pthread_mutex_lock(&s->lock);
	memcpy(counts, s->buckets, nb * sizeof(uint64_t));
	sum = s->sum;
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < nb; i++) {
		cum += counts[i];
		snprintf(v, sizeof(v), "%llu", (unsigned long long)cum);
		if (i < m->n_bounds)
			np_metrics_format_value(m->bounds[i], le);
		else
			strcpy(le, "+Inf");
		put_sample(out, m, "_bucket", s, le, v);
	}
	put_sample(out, m, "_sum", s, NULL, np_metrics_format_value(sum, v));
	snprintf(v, sizeof(v), "%llu", (unsigned long long)cum);
	put_sample(out, m, "_count", s, NULL, v);
	if (counts != stack_counts)
		free(counts);
}

static const char *type_name(enum np_metric_type t)
{
	switch (t) {
	case NP_METRIC_COUNTER:
		return "counter";
	case NP_METRIC_GAUGE:
		return "gauge";
	default:
		return "histogram";
	}
}

int np_metrics_render(struct np_metrics *reg, struct np_buf *out, struct np_err *err)
{
	char v[32];

	if (!reg)
		return np_errf(err, "no metrics registry");
	pthread_mutex_lock(&reg->lock);
	for (size_t f = 0; f < reg->n; f++) {
		struct np_metric *m = reg->families[f];

		pthread_mutex_lock(&m->lock);
		/* A family without series has nothing to expose, as in client_golang. */
		if (m->n_series) {
			np_buf_printf(out, "# HELP %s ", m->name);
			put_escaped(out, m->help, 0);
			np_buf_printf(out, "\n# TYPE %s %s\n", m->name, type_name(m->type));
		}
		for (size_t i = 0; i < m->n_series; i++) {
			struct np_series *s = m->series[i];
			if (m->type == NP_METRIC_HISTOGRAM)
				render_histogram(out, m, s);
			else
				put_sample(out, m, "", s, NULL, np_metrics_format_value(np_series_value(s), v));
		}
		pthread_mutex_unlock(&m->lock);
	}
	pthread_mutex_unlock(&reg->lock);
	if (out->failed)
		return np_errf(err, "out of memory rendering metrics");
	return 0;
}
