/* Periodic discovery runner: see periodic.h. */
#include "agent/discovery/periodic.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clock.h"
#include "lib/log.h"

struct np_periodic {
	struct cfg_component *c;
	const char *export_name;
	int64_t interval_ns;
	np_periodic_fn fn;
	void *ctx;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* signalled by stop */
	int stopping;
	struct np_targets last;
	int published;
	char last_error[sizeof(((struct np_err *)0)->msg)];
};

static void pass(struct np_periodic *p)
{
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_err err;

	if (p->fn(p->ctx, &ts, &err)) {
		if (strncmp(p->last_error, err.msg, sizeof(p->last_error) - 1) != 0) {
			np_log(NP_WARN, "discovery", "discovery failed; keeping the last targets", "component",
			       cfg_component_id(p->c), "error", err.msg, NULL);
			snprintf(p->last_error, sizeof(p->last_error), "%s", err.msg);
		}
		cfg_component_set_health(p->c, CFG_HEALTH_UNHEALTHY, err.msg);
		np_targets_free(&ts);
		return;
	}
	p->last_error[0] = '\0';
	cfg_component_set_health(p->c, CFG_HEALTH_HEALTHY, NULL);
	if (p->published && np_targets_equal(&ts, &p->last)) {
		np_targets_free(&ts);
		return;
	}
	if (cfg_component_publish_targets(p->c, p->export_name, &ts, &err)) {
		cfg_component_set_health(p->c, CFG_HEALTH_UNHEALTHY, err.msg);
		np_targets_free(&ts);
		return;
	}
	np_targets_free(&p->last);
	p->last = ts;
	p->published = 1;
}

static void *run(void *arg)
{
	struct np_periodic *p = arg;
	struct timespec deadline;

	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		pthread_mutex_unlock(&p->mu);
		pass(p);
		pthread_mutex_lock(&p->mu);
		deadline = np_ns_timespec(np_mono_ns() + p->interval_ns);
		while (!p->stopping && pthread_cond_timedwait(&p->cond, &p->mu, &deadline) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int np_periodic_start(struct cfg_component *c, const char *export_name, int64_t interval_ns, np_periodic_fn fn,
		      void *ctx, struct np_periodic **out, struct np_err *err)
{
	struct np_periodic *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;

	if (!p)
		return np_errf(err, "out of memory");
	p->c = c;
	p->export_name = export_name;
	p->interval_ns = interval_ns > 0 ? interval_ns : 60LL * 1000000000LL;
	p->fn = fn;
	p->ctx = ctx;
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&p->thread, NULL, run, p)) {
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->mu);
		free(p);
		return np_errno(err, "start the discovery thread");
	}
	*out = p;
	return 0;
}

void np_periodic_stop(struct np_periodic *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	np_targets_free(&p->last);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
