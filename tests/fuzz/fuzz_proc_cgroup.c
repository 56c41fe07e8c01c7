/* libFuzzer target for the /proc/PID/cgroup parser (agent/discovery/container_id):
 * no crash, no leak, and the invariants the profiler relies on: an ID is exactly 64
 * lowercase hex characters, the origin says whether there is one, the full parse
 * agrees with the ID-only one, --explain's walk gives the same answer, a pod UID is
 * only reported for a pod, and nothing appended below a path's container level (a
 * delegated subtree) changes the ID it gives. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/attribution/container_id.h"

static int is_id(const char *s)
{
	if (strlen(s) != NP_CONTAINER_ID_LEN)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[NP_CONTAINER_ID_LEN + 1];
	struct np_cgroup_info ci = NP_CGROUP_INFO_INIT;
	struct np_err err;
	enum np_cid_origin origin = np_container_id_from_cgroup((const char *)data, size, id);

	if ((origin == NP_CID_NONE) != (id[0] == '\0'))
		abort();
	if (id[0] && !is_id(id))
		abort();
	{
		struct np_cid_answer a, b;
		struct np_buf ex = NP_BUF_INIT;
		if (np_cgroup_answer((const char *)data, size, &a) != origin || strcmp(a.id, id) != 0 ||
		    (!a.pod && a.pod_uid[0]))
			abort();
		if (np_container_id_explain((const char *)data, size, &ex, &b, &err) == 0 &&
		    (strcmp(a.id, b.id) != 0 || strcmp(a.pod_uid, b.pod_uid) != 0))
			abort();
		np_buf_free(&ex);
	}
	if (np_container_id_from_path((const char *)data, size, id)) {
		char below[NP_CONTAINER_ID_LEN + 1];
		uint8_t *longer = malloc(size + 2 + NP_CONTAINER_ID_LEN + 7);
		if (!is_id(id) || !longer)
			abort();
		memcpy(longer, data, size);
		memcpy(longer + size, "/docker-", 8);
		memset(longer + size + 8, 'a', NP_CONTAINER_ID_LEN);
		if (!np_container_id_from_path((const char *)longer, size + 8 + NP_CONTAINER_ID_LEN, below) ||
		    strcmp(below, id) != 0)
			abort();
		free(longer);
	}
	{
		/* Below a pod's container even a whole fake pod slice changes nothing. */
		static const char fake[] = "/kubepods-pod11111111_2222_3333_4444_555555555555.slice/cri-containerd-"
					   "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.scope";
		struct np_cid_answer a, b;
		np_cgroup_path_answer((const char *)data, size, &a);
		if (a.pod && a.id[0]) {
			uint8_t *longer = malloc(size + sizeof(fake));
			if (!longer)
				abort();
			memcpy(longer, data, size);
			memcpy(longer + size, fake, sizeof(fake) - 1);
			np_cgroup_path_answer((const char *)longer, size + sizeof(fake) - 1, &b);
			if (strcmp(a.id, b.id) != 0 || strcmp(a.pod_uid, b.pod_uid) != 0)
				abort();
			free(longer);
		}
	}
	if (np_cgroup_info_parse((const char *)data, size, &ci, &err) == 0) {
		char again[NP_CONTAINER_ID_LEN + 1];
		np_container_id_from_cgroup((const char *)data, size, again);
		if (strcmp(again, ci.container_id) != 0 || ci.origin != origin || !ci.lines ||
		    strlen(ci.pod_uid) > NP_POD_UID_LEN)
			abort();
		np_cgroup_info_free(&ci);
	}
	return 0;
}
