/* discovery.docker: containers of a Docker Engine as targets, labelled exactly as
 * Prometheus' docker SD (discovery/moby/docker.go, network.go) labels them, which is
 * what Alloy's discovery.docker exports (../shared/specs/kubernetes.md §4.1):
 *
 *   per container (skipped when it has no name):
 *     __meta_docker_container_id, __meta_docker_container_name (Names[0], with its
 *     leading '/'), __meta_docker_container_network_mode,
 *     __meta_docker_container_label_<sanitized key>
 *   per network (all of them, or with match_first_network only the first by name):
 *     __meta_docker_network_id|name|scope|internal|ingress|ip,
 *     __meta_docker_network_label_<sanitized key>
 *   per TCP port: __meta_docker_port_private, and when published
 *     __meta_docker_port_public and __meta_docker_port_public_ip
 *   __address__: <network ip>:<private port>; with no TCP port one target on
 *     <ip>:<port argument>, or host_networking_host in host network mode.
 * Containers sharing another's network ("container:<id>") use that one's networks.
 *
 * Deterministic where Prometheus is not: networks are visited in name order, and when
 * two label keys sanitize to the same name the greater key (bytewise) wins.
 *
 * The Engine API is reached over its unix socket (unix:///var/run/docker.sock) or TCP
 * (tcp://host:port, http://, https://) with libcurl. The API version is negotiated
 * like the Docker client does: /_ping's Api-Version, capped at the newest version
 * this code knows. */
#ifndef NP_DISCOVERY_DOCKER_H
#define NP_DISCOVERY_DOCKER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/util/error.h"
#include "agent/util/labels.h"
#include "agent/util/oauth2.h"

#define NP_DOCKER_API_VERSION_MAX "1.43"

/* A `filter` block: passed to the Engine as the `filters` query parameter. */
struct np_docker_filter {
	const char *name;
	const char *const *values;
	size_t n_values;
};

/* All strings are borrowed and must outlive the calls that use the config. */
struct np_docker_config {
	const char *host;		  /* required */
	int port;			  /* default 80 */
	const char *host_networking_host; /* default "localhost" */
	int64_t refresh_interval_ns;	  /* default 1m; also the request timeout */
	int match_first_network;	  /* default 1 */
	const struct np_docker_filter *filters;
	size_t n_filters;

	/* HTTP client settings. As in Prometheus they only apply to http:// and https://
	 * hosts; setting credentials for a unix:// or tcp:// host is an error instead of
	 * being silently ignored. */
	const char *bearer_token; /* secret: never logged */
	const char *bearer_token_file;
	const char *basic_auth_username;
	const char *basic_auth_password; /* secret */
	const char *basic_auth_password_file;
	struct np_oauth2 *oauth2; /* borrowed token source of the oauth2 block, or NULL; a token
				     is fetched on the caller's thread within refresh_interval */
	int follow_redirects; /* default 1 */
	int enable_http2;     /* default 1 */

	size_t max_response_bytes; /* default 64 MiB: the Engine's answers are bounded by this */
};

void np_docker_config_init(struct np_docker_config *cfg);
NP_MUST_CHECK int np_docker_config_validate(const struct np_docker_config *cfg, struct np_err *err);

/* Tells the config layer whether an Alloy argument of discovery.docker is implemented:
 * block is NULL at the top level or the enclosing block's name ("filter",
 * "basic_auth"); is_block says whether `name` is a block. 0 when supported, else -1
 * with "not supported" (or "unknown") in the message. */
NP_MUST_CHECK int np_docker_check_argument(const char *block, const char *name, int is_block, struct np_err *err);

/* Asks the Engine once and appends the targets to out. */
NP_MUST_CHECK int np_docker_discover_once(const struct np_docker_config *cfg, struct np_targets *out,
					  struct np_err *err);

/* The label building alone, from the bodies of GET /containers/json and GET /networks
 * (exposed for tests and fuzzing). Malformed JSON or wrongly typed fields fail the
 * whole refresh, as Go's decoder does. */
NP_MUST_CHECK int np_docker_targets_from_json(const struct np_docker_config *cfg, const char *containers_json,
					      size_t containers_len, const char *networks_json, size_t networks_len,
					      struct np_targets *out, struct np_err *err);

/* Prometheus' strutil.SanitizeLabelName: every character (UTF-8 rune) outside
 * [a-zA-Z0-9_] becomes one '_'. Appends to out. */
struct np_buf;
void np_docker_sanitize_label_name(const char *name, struct np_buf *out);

#endif
