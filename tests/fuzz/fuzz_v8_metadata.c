/* Fuzzes V8's postmortem metadata (untrusted: a container's node binary says what it likes):
 * the input is either an ELF file, read by v8_probe_fd from a memfd (its v8dbg_ symbols and
 * version symbols, every read bounded), or lines "NAME VALUE" added to Node 20's metadata
 * (tests/fuzz/v8_node20_meta.h) before the layout is derived for several V8 versions. Whatever
 * is accepted must be a layout within the bounds the namer relies on, and the BPF step's view
 * of it (walk_layout.c) within the bounds the step relies on (bpf/v8.h), or refused with why. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/runtime/v8/detect.h"
#include "agent/runtime/v8/metadata.h"
#include "agent/runtime/v8/walk_layout.h"
#include "tests/fuzz/v8_node20_meta.h"

static void check(const struct v8_layout *l)
{
	if ((l->tagged_size != 4 && l->tagged_size != 8) || l->smi_shift > 63 || l->sfi_name_or_scope_info >= 4096 ||
	    l->fixed_array_data >= 4096 || l->scope_info_first_vars > 64 || l->deopt_inlining_positions > 64)
		abort();
	for (int i = 0; i < V8_FRAME_TYPES; i++)
		if (memchr(l->frame_type[i], '\0', sizeof(l->frame_type[i])) == NULL)
			abort();
	/* What the step reads must lie in what it copies. */
	struct v8_proc p = { .layout = *l };
	struct np_v8_proc w;
	char why[256];
	if (v8_walk_layout(&p, &w, why, sizeof(why)) == 0) {
		const int8_t slots[] = { w.fp_context, w.fp_function, w.fp_bytecode_array, w.fp_bytecode_offset };
		for (size_t i = 0; i < sizeof(slots); i++)
			if (slots[i] < -NP_V8_BELOW || slots[i] > -1)
				abort();
		unsigned tagged = w.compressed ? 4 : 8;
		if (w.js_function_shared + tagged > NP_V8_OBJ_READ || w.js_function_code + tagged > NP_V8_OBJ_READ ||
		    (w.markers & 1) ||
		    (w.code_kind_baseline != 0xff &&
		     (w.code_flags + 4 > NP_V8_OBJ_READ || w.code_instruction_size + 4 > NP_V8_OBJ_READ ||
		      (w.code_start_is_pointer && w.code_instruction_start + 8 > NP_V8_OBJ_READ))))
			abort();
	} else if (!memchr(why, '\0', sizeof(why)) || !why[0]) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct np_err err;
	char why[512];

	if (size >= 4 && !memcmp(data, "\x7f" "ELF", 4)) {
		struct v8_proc p;
		int fd = memfd_create("fuzz_v8", MFD_CLOEXEC);
		if (fd < 0)
			return 0;
		if (write(fd, data, size) == (ssize_t)size && v8_probe_fd(fd, &p, why, sizeof(why), &err) == 1)
			check(&p.layout);
		close(fd);
		return 0;
	}
	struct v8_meta m;
	v8_meta_init(&m);
	for (size_t i = 0; i < sizeof(v8_node20_meta) / sizeof(v8_node20_meta[0]); i++)
		if (v8_meta_add(&m, v8_node20_meta[i].name, v8_node20_meta[i].value, &err))
			abort();
	char *text = malloc(size + 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		if (v8_meta_add(&m, line, (int32_t)strtol(sp + 1, NULL, 0), &err))
			abort();
	}
	free(text);
	static const struct v8_version vers[] = { { 8, 4, 371, 0 }, { 10, 2, 154, 0 }, { 11, 3, 244, 8 }, { 12, 9, 202, 0 } };
	for (size_t i = 0; i < 4; i++) {
		struct v8_layout l;
		if (v8_layout_from_meta(&m, &vers[i], &l, why, sizeof(why)) == 0)
			check(&l);
		else if (!memchr(why, '\0', sizeof(why)))
			abort();
	}
	v8_meta_free(&m);
	return 0;
}
