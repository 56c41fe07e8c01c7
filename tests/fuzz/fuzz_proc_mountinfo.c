/* libFuzzer target for the mountinfo reader that finds the cgroup2 mount
 * (agent/discovery/cgroup2): no crash, and a found mount's directory and root are
 * NUL-terminated within their buffers and hold no NUL decoded from an escape. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/attribution/cgroup2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct np_cgroup2_mount *m = malloc(sizeof(*m));
	char *text = malloc(size ? size : 1);

	if (!m || !text)
		abort();
	memcpy(text, data, size);
	if (np_cgroup2_mount_parse(text, size, m)) {
		if (!memchr(m->dir, '\0', sizeof(m->dir)) || !memchr(m->root, '\0', sizeof(m->root)))
			abort();
		if (strlen(m->dir) > size || strlen(m->root) > size)
			abort();
	}
	free(text);
	free(m);
	return 0;
}
