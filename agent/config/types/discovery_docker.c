/* discovery.docker: arguments of the Alloy reference (discovery/docker/docker.go;
 * docs/specs/kubernetes.md §4.1) and its Validate rules. The runtime adapter
 * is agent/discovery/docker_component.c (over agent/discovery/docker.h). */
#include <string.h>

#include "agent/config/http_client.h"
#include "agent/config/types/types.h"
#include "agent/config/types/fields.h"
#include "agent/discovery/docker.h"

/* Each argument's member in the args struct (agent/config/types/fields.h). */
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

const struct cfg_component_type cfg_type_discovery_docker = {
	.name = "discovery.docker",
	.args = &schema,
	.exports = cfg_targets_exports,
	.ops = &cfg_ops_discovery_docker,
};
