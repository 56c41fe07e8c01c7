/* libFuzzer target for discovery.docker's label building from Engine API JSON
 * (agent/discovery/docker_json.c). Input: the container list, a NUL byte, the network
 * list (no NUL: an empty network list). The first byte also picks the config variant.
 * Checks: no crash or leak, every target has a container ID and name label and an
 * __address__, whatever the JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/discovery/docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nul = memchr(text, '\0', size);
	size_t clen = nul ? (size_t)(nul - text) : size;
	const char *nets = nul ? nul + 1 : "[]";
	size_t nlen = nul ? size - clen - 1 : 2;
	struct np_docker_config cfg;
	struct np_targets out = NP_TARGETS_INIT;
	struct np_err err;

	np_docker_config_init(&cfg);
	if (size > 0) {
		cfg.match_first_network = data[0] & 1;
		cfg.port = (data[0] >> 1) & 1 ? 0 : 65535;
	}
	if (np_docker_targets_from_json(&cfg, text, clen, nets, nlen, &out, &err) == 0) {
		for (size_t i = 0; i < out.n; i++)
			if (!np_labels_get(&out.v[i], "__meta_docker_container_id") ||
			    !np_labels_get(&out.v[i], "__meta_docker_container_name") ||
			    !np_labels_get(&out.v[i], "__address__"))
				abort();
	} else if (out.n != 0 && !err.msg[0]) {
		abort();
	}
	np_targets_free(&out);
	return 0;
}
