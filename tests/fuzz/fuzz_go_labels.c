/* Fuzzes the Go labels parsers of untrusted bytes: the labels record BPF copied out of a process
 * (np_go_labels_decode), a binary's .go.buildinfo (go_buildinfo, go_parse_version) and the
 * kernel's BTF (go_btf_fsbase), each fed the whole input. What they return stays within the
 * reader's bounds: at most NP_GO_LABELS_MAX labels, NUL-ended valid UTF-8 keys (non-empty, sorted,
 * distinct) and values within their rooms. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/profile/go_labels.h"
#include "agent/runtime/go/layout.h"
#include "lib/gostr.h"

static void check_str(const char *s, size_t room)
{
	size_t n = strnlen(s, room);

	if (n == room || !np_go_utf8_valid(s, n))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct np_go_label_set set;
	uint64_t words[NP_GO_LABELS_WORDS + 1];
	char v[64];
	uint64_t addr;
	unsigned minor;
	uint32_t off;
	int kind;

	/* The labels record: the input as its words (the magic put in front when it is short of one,
	 * so that the checks behind it are reached). */
	memset(words, 0, sizeof(words));
	words[0] = NP_GO_LABELS_MAGIC;
	memcpy((uint8_t *)words + 8, data, size < sizeof(words) - 8 ? size : sizeof(words) - 8);
	if (np_go_labels_decode(words, NP_GO_LABELS_WORDS, &set) == 0) {
		if (set.n > NP_GO_LABELS_MAX)
			abort();
		for (size_t i = 0; i < set.n; i++) {
			check_str(set.l[i].key, NP_GO_LABEL_KEY);
			check_str(set.l[i].val, NP_GO_LABEL_VAL);
			if (!set.l[i].key[0] || (i && strcmp(set.l[i - 1].key, set.l[i].key) >= 0))
				abort();
		}
	} else if (set.n) {
		abort();
	}
	kind = go_buildinfo(data, size, v, sizeof(v), &addr);
	if (kind == 1 && strnlen(v, sizeof(v)) == sizeof(v))
		abort();
	if (kind == 1 && go_parse_version(v, strlen(v), &minor) == 0 && strncmp(v, "go1.", 4))
		abort();
	if (go_parse_version((const char *)data, size, &minor) == 0 && (size < 5 || memcmp(data, "go1.", 4)))
		abort();
	(void)go_btf_fsbase(go_btf_mem, (void *)data, size, &off);
	return 0;
}
