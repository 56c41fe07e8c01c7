/* discovery.docker as a component: the Docker Engine API every refresh_interval
 * (agent/discovery/docker.h), exported as `targets`. New arguments start a new
 * poller, which publishes at once. */
#include <stdlib.h>
#include <string.h>

#include "agent/config/component.h"
#include "agent/config/replace_on_update.h"
#include "agent/config/http_client.h"
#include "agent/config/types/fields.h"
#include "agent/config/types/types.h"
#include "agent/discovery/docker.h"
#include "agent/discovery/periodic.h"

struct docker_run {
	struct np_docker_config cfg; /* its strings point into `strings` */
	char **strings;		     /* owned copies of every string the config borrows */
	size_t n_strings;
	struct np_docker_filter *filters; /* owned; values arrays are in value_lists */
	const char ***value_lists;
	size_t n_filters;
	struct np_http_client_config http; /* owned; cfg.http points here */
	struct np_oauth2 *oauth2;	    /* owned token source of http.oauth2; cfg.oauth2 points here */
	struct np_periodic *runner;
};


static int discover(void *ctx, struct np_targets *out, struct np_err *err)
{
	struct docker_run *r = ctx;

	return np_docker_discover_once(&r->cfg, out, err);
}

static void run_free(void *instance)
{
	struct docker_run *r = instance;

	if (!r)
		return;
	np_periodic_stop(r->runner);
	np_oauth2_free(r->oauth2);
	np_http_client_config_free(&r->http);
	for (size_t i = 0; i < r->n_strings; i++)
		free(r->strings[i]);
	for (size_t i = 0; i < r->n_filters; i++)
		free(r->value_lists[i]);
	free(r->strings);
	free(r->filters);
	free(r->value_lists);
	free(r);
}

/* Keeps a copy of s in r and returns it (NULL stays NULL). *failed is set on allocation failure. */
static const char *keep(struct docker_run *r, const char *s, int *failed)
{
	char **ns;
	char *copy;

	if (!s)
		return NULL;
	ns = realloc(r->strings, (r->n_strings + 1) * sizeof(*ns));
	copy = strdup(s);
	if (!ns || !copy) {
		if (ns)
			r->strings = ns;
		free(copy);
		*failed = 1;
		return NULL;
	}
	r->strings = ns;
	r->strings[r->n_strings++] = copy;
	return copy;
}

static void *run_start(struct cfg_component *c, const void *args, struct np_err *err)
{
	const struct cfg_docker_args *a = args;
	struct docker_run *r = calloc(1, sizeof(*r));
	int failed = 0;
	size_t nf = a->filter.n;

	if (!r)
		goto oom;
	np_docker_config_init(&r->cfg);
	if (cfg_http_client_settings(&a->http, &r->http, err)) {
		run_free(r);
		return NULL;
	}
	r->cfg.http = &r->http;
	r->cfg.host = keep(r, a->host, &failed);
	r->cfg.port = (int)a->port;
	r->cfg.host_networking_host = keep(r, a->host_networking_host, &failed);
	r->cfg.refresh_interval_ns = a->refresh_interval;
	r->cfg.match_first_network = a->match_first_network;
	if (nf) {
		r->filters = calloc(nf, sizeof(*r->filters));
		r->value_lists = calloc(nf, sizeof(*r->value_lists));
		if (!r->filters || !r->value_lists)
			goto oom;
		for (size_t i = 0; i < nf; i++) {
			const struct cfg_docker_filter_args *f = a->filter.v[i];
			size_t nv = f->values.n;
			r->value_lists[i] = calloc(nv ? nv : 1, sizeof(char *));
			if (!r->value_lists[i])
				goto oom;
			r->n_filters = i + 1;
			for (size_t k = 0; k < nv; k++)
				r->value_lists[i][k] = keep(r, f->values.v[k], &failed);
			r->filters[i] = (struct np_docker_filter){ keep(r, f->name, &failed), r->value_lists[i], nv };
		}
		r->cfg.filters = r->filters;
		r->cfg.n_filters = nf;
	}
	if (failed)
		goto oom;
	if (r->http.oauth2) {
		if (np_oauth2_config_validate(r->http.oauth2, err) || !(r->oauth2 = np_oauth2_new(r->http.oauth2, err))) {
			run_free(r);
			return NULL;
		}
		r->cfg.oauth2 = r->oauth2;
	}
	if (np_docker_config_validate(&r->cfg, err) ||
	    np_periodic_start(c, "targets", r->cfg.refresh_interval_ns, discover, r, &r->runner, err)) {
		run_free(r);
		return NULL;
	}
	return r;
oom:
	run_free(r);
	np_errf(err, "out of memory");
	return NULL;
}

static const struct cfg_instance_ops instance_ops = { run_start, run_free };

static int start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
		 struct np_err *err)
{
	(void)host;
	return cfg_replace_start(&instance_ops, c, args, state, err);
}

const struct cfg_component_ops cfg_ops_discovery_docker = { start, cfg_replace_update, cfg_replace_stop };
