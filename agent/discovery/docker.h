/* discovery.docker: containers of a Docker Engine as targets, labelled exactly as
 * Prometheus' docker SD (discovery/moby/docker.go, network.go) labels them, which is
 * what Alloy's discovery.docker exports (docs/specs/kubernetes.md §4.1):
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
 * (tcp://host:port, http://, https://) with libcurl, with the HTTP client settings of
 * lib/http_client.h. The API version is negotiated like the Docker client does:
 * /_ping's Api-Version, capped at the newest version this code knows.
 *
 * Prometheus' docker SD gives the Docker client its HTTP client settings only for
 * http:// and https:// hosts; unix:// and tcp:// hosts are reached through the Docker
 * client's own transport. nodeprof follows it for what shapes or authenticates the
 * connection: TLS, proxies and credentials are not used for unix:// and tcp:// hosts, and
 * `check` warns where they are written (np_docker_check_http_client), so a configuration
 * Alloy loads loads here too and nothing is ignored silently. http_headers,
 * follow_redirects and enable_http2 are honoured on every transport: headers go with each
 * request, and cleartext HTTP is HTTP/1.1 either way. */
#ifndef NP_DISCOVERY_DOCKER_H
#define NP_DISCOVERY_DOCKER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/http_client.h"
#include "lib/labels.h"
#include "lib/oauth2.h"

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

	const struct np_http_client_config *http; /* borrowed; NULL: Alloy's defaults */
	struct np_oauth2 *oauth2; /* borrowed token source of http->oauth2 (required with it); a
				     token is fetched on the caller's thread within refresh_interval */

	size_t max_response_bytes; /* default 64 MiB: the Engine's answers are bounded by this */
};

void np_docker_config_init(struct np_docker_config *cfg);
NP_MUST_CHECK int np_docker_config_validate(const struct np_docker_config *cfg, struct np_err *err);

/* Fails when a setting of hc cannot apply to host (see the top of this file), with
 * *setting the argument or block name of discovery.docker to report it at; 0 with
 * *setting NULL otherwise. Settings at their defaults always apply; hc may be NULL. */
NP_MUST_CHECK int np_docker_check_http_client(const char *host, const struct np_http_client_config *hc,
					      const char **setting, struct np_err *err);

/* Asks the Engine once and appends the targets to out. */
NP_MUST_CHECK int np_docker_discover_once(const struct np_docker_config *cfg, struct np_targets *out,
					  struct np_err *err);

/* The label building alone, from the bodies of GET /containers/json and GET /networks
 * (exposed for tests and fuzzing). Malformed JSON or wrongly typed fields fail the
 * whole refresh, as Go's decoder does. */
NP_MUST_CHECK int np_docker_targets_from_json(const struct np_docker_config *cfg, const char *containers_json,
					      size_t containers_len, const char *networks_json, size_t networks_len,
					      struct np_targets *out, struct np_err *err);

#endif
