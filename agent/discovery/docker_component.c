/* discovery.docker, the whole component: its schema and validation (below), and at run time
 * the Docker Engine API every refresh_interval
 * (agent/discovery/docker.h), exported as `targets`. New arguments start a new
 * poller, which publishes at once. */
#include "agent/discovery/docker_component.h"

#include <stdlib.h>
#include <string.h>

#include "agent/config/component.h"
#include "agent/config/http_client.h"
#include "agent/config/replace_on_update.h"
#include "agent/discovery/docker.h"
#include "agent/discovery/periodic.h"

/* ---- schema ----
 * The arguments of the Alloy reference (discovery/docker/docker.go;
 * docs/specs/kubernetes.md §4.1) and its Validate rules. */

/* Each argument's member in the args struct (above). */
#define FILTER(m) .field = CFG_FIELD(struct cfg_docker_filter_args, m)
#define DOCKER(m) .field = CFG_FIELD(struct cfg_docker_args, m)

static const struct cfg_attr filter_attrs[] = {
	CFG_A("name", &cfg_t_string, CFG_REQUIRED, NULL, FILTER(name)),
	CFG_A("values", &cfg_t_list_string, CFG_REQUIRED, NULL, FILTER(values)),
	CFG_END,
};
static const struct cfg_schema filter_schema = {
	.attrs = filter_attrs,
	CFG_ARGS_STRUCT(struct cfg_docker_filter_args),
};

/* The HTTP client settings that Prometheus' docker SD (so Alloy) ignores for a unix:// or
 * tcp:// host (agent/discovery/docker.h): the configuration loads, as in Alloy, with a
 * warning where the first of them is written, since nodeprof ignores them too. */
static void transport_validate(const struct cfg_args *a, const char *host, struct cfg_diags *d)
{
	const struct cfg_docker_args *args = a->fields;
	struct np_http_client_config hc;
	const char *setting = NULL;
	struct np_err err;

	if (cfg_http_client_settings(&args->http, &hc, &err) || np_docker_check_http_client(host, &hc, &setting, &err)) {
		struct cfg_pos pos = a->pos;
		if (setting && cfg_schema_block(a->schema, setting, NULL))
			pos = cfg_args_block(a, setting, 0)->pos;
		else if (setting)
			pos = cfg_args_name_pos(a, setting);
		cfg_warn(d, pos, "%s", err.msg);
	}
	np_http_client_config_free(&hc);
}

static void validate(const struct cfg_args *a, struct cfg_diags *d)
{
	const char *host = cfg_args_str(a, "host");

	if (host && !cfg_args_is_unknown(a, "host")) {
		const char *sep = strstr(host, "://");
		if (!sep || sep == host)
			cfg_error(d, cfg_args_pos(a, "host"),
				  "host: \"%s\" is not a URL; expected unix:///path/to/docker.sock or tcp://host:port", host);
		else if (strncmp(host, "unix://", 7) != 0 && strncmp(host, "tcp://", 6) != 0 &&
			 strncmp(host, "http://", 7) != 0 && strncmp(host, "https://", 8) != 0)
			cfg_error(d, cfg_args_pos(a, "host"),
				  "host: unsupported scheme in \"%s\"; expected unix://, tcp://, http:// or https://", host);
	}
	cfg_http_client_validate(a, &((const struct cfg_docker_args *)a->fields)->http, d);
	if (host && !cfg_args_is_unknown(a, "host"))
		transport_validate(a, host, d);
}

static const struct cfg_attr attrs[] = {
	CFG_A("host", &cfg_t_string, CFG_REQUIRED | CFG_NON_EMPTY, NULL, DOCKER(host)),
	CFG_A("port", &cfg_t_int, CFG_RANGE, "80", .min = 0, .max = 65535, DOCKER(port)),
	CFG_A("host_networking_host", &cfg_t_string, 0, "\"localhost\"", DOCKER(host_networking_host)),
	CFG_A("refresh_interval", &cfg_t_duration, CFG_RANGE | CFG_MIN_EXCLUSIVE, "\"1m\"", .min = 0, .max = 86400,
	      DOCKER(refresh_interval)),
	CFG_A("match_first_network", &cfg_t_bool, 0, "true", DOCKER(match_first_network)),
	CFG_HTTP_CLIENT_ATTRS(struct cfg_docker_args, http),
	CFG_END,
};

static const struct cfg_block_schema blocks[] = {
	CFG_B("filter", &filter_schema, CFG_REPEATABLE, NULL, DOCKER(filter)),
	CFG_HTTP_CLIENT_BLOCKS(struct cfg_docker_args, http),
	CFG_END,
};

static const struct cfg_schema schema = {
	.attrs = attrs,
	.blocks = blocks,
	.validate = validate,
	CFG_ARGS_STRUCT(struct cfg_docker_args),
};

/* ---- runtime ---- */

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

static const struct cfg_component_ops ops = { start, cfg_replace_update, cfg_replace_stop };

const struct cfg_component_type cfg_type_discovery_docker = {
	.name = "discovery.docker",
	.args = &schema,
	.exports = cfg_targets_exports,
	.ops = &ops,
};
