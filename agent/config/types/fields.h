/* The args structs of the built-in components whose schema (agent/config/types/)
 * and runtime (agent/discovery/, agent/write/, agent/profile/) live in different
 * files: each schema binds its arguments to these members (CFG_FIELD, schema.h) and
 * the decoder fills them; the adapter reads them. Durations are in nanoseconds;
 * strings and arrays are borrowed from the decoded args (valid until the next
 * update() or stop()). Alloy's http_client_config block, which several components
 * embed, is one struct (cfg_http_client_args) embedded in theirs and bound by
 * agent/config/http_client.h's CFG_HTTP_CLIENT_ATTRS and _BLOCKS. */
#ifndef NP_CONFIG_TYPES_FIELDS_H
#define NP_CONFIG_TYPES_FIELDS_H

#include <stdint.h>

#include "agent/config/schema.h"
#include "agent/runtime/runtime.h"

/* ---- the shared http_client_config block (agent/config/http_client.h) ----
 * Each struct starts with its ints and ends with pointers, so that embedding one leaves
 * no padding that belongs to no argument (cfg_schema_check_fields). */
struct cfg_tls_args {
	int insecure_skip_verify;
	const char *ca_pem, *ca_file, *cert_pem, *cert_file, *key_pem, *key_file, *server_name, *min_version;
};
struct cfg_basic_auth_args {
	const char *username, *password, *password_file;
};
struct cfg_authorization_args {
	const char *type, *credentials, *credentials_file;
};
/* The client-credentials grant's arguments; the JWT bearer ones are refused, unbound. */
struct cfg_oauth2_args {
	int proxy_from_environment;
	const char *client_id, *client_secret, *client_secret_file, *token_url, *proxy_url, *no_proxy;
	struct cfg_strs scopes;
	struct cfg_str_map endpoint_params;
	struct cfg_str_lists proxy_connect_header;
	const void *tls_config; /* struct cfg_tls_args */
};
struct cfg_http_client_args {
	int proxy_from_environment, follow_redirects, enable_http2;
	const char *bearer_token, *bearer_token_file, *proxy_url, *no_proxy;
	struct cfg_str_lists proxy_connect_header, http_headers;
	const void *basic_auth;	   /* struct cfg_basic_auth_args */
	const void *authorization; /* struct cfg_authorization_args */
	const void *oauth2;	   /* struct cfg_oauth2_args */
	const void *tls_config;	   /* struct cfg_tls_args */
};

struct cfg_ebpf_args {
	struct cfg_capsules forward_to; /* np_profile_sink receivers */
	const struct np_targets *targets;
	int64_t collect_interval;
	int64_t sample_rate;
	const char *demangle;
	int kernel_frames, lazy_mode, verbose_mode, load_probe, targets_only;
	/* <rt>_enabled of each runtime of the table (agent/runtime/runtime.h): python, hotspot, ... */
#define CFG_RUNTIME_FIELD(ident, id, name, key, support, flag, help) int ident;
	struct {
		NP_RUNTIME_LIST(CFG_RUNTIME_FIELD)
	} runtime_enabled;
	double off_cpu_threshold;
	struct cfg_strs u_probe_links;
	uint64_t container_id_cache_size;
};

struct cfg_write_endpoint_args {
	const char *url, *name;
	int64_t remote_timeout, debug_info_upload_timeout, min_backoff_period, max_backoff_period;
	int64_t max_backoff_retries, queue_max_bytes;
	struct cfg_str_map headers;
	struct cfg_http_client_args http;
	int retry_on_http_429;
};
struct cfg_write_tracing_args {
	int jaeger_propagator, trace_context_propagator;
};
struct cfg_write_args {
	struct cfg_str_map external_labels;
	struct cfg_blocks endpoint; /* struct cfg_write_endpoint_args */
	const void *tracing;	    /* struct cfg_write_tracing_args */
};

struct cfg_k8s_namespaces_args {
	struct cfg_strs names;
	int own_namespace;
};
struct cfg_k8s_selector_args {
	const char *role, *label, *field;
};
struct cfg_k8s_attach_metadata_args {
	int node, namespace_;
};
struct cfg_k8s_args {
	const char *role, *api_server, *kubeconfig_file;
	const void *namespaces;	     /* struct cfg_k8s_namespaces_args */
	struct cfg_blocks selectors; /* struct cfg_k8s_selector_args */
	const void *attach_metadata; /* struct cfg_k8s_attach_metadata_args */
	struct cfg_http_client_args http;
};

struct cfg_docker_filter_args {
	const char *name;
	struct cfg_strs values;
};
struct cfg_docker_args {
	const char *host, *host_networking_host;
	int64_t port, refresh_interval;
	struct cfg_blocks filter; /* struct cfg_docker_filter_args */
	struct cfg_http_client_args http;
	int match_first_network;
};

struct cfg_process_discover_args {
	int cwd, exe, commandline, username, uid, container_id, cgroup_path;
};
struct cfg_process_args {
	const struct np_targets *join;
	int64_t refresh_interval;
	const void *discover_config; /* struct cfg_process_discover_args */
};

#endif
