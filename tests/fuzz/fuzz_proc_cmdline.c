/* libFuzzer target for the /proc/PID/cmdline join (lib/procfs_text): fed whole or
 * in two chunks cut at a fuzzer-chosen place, the result is the same, has no NUL, no
 * leading, trailing or doubled space that the input did not spell out. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/procfs_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct np_buf whole = NP_BUF_INIT, split = NP_BUF_INIT;
	struct np_cmdline_join a = NP_CMDLINE_JOIN_INIT, b = NP_CMDLINE_JOIN_INIT;
	size_t cut;

	if (size < 1)
		return 0;
	cut = data[0] % size;
	data++;
	size--;
	if (cut > size)
		cut = size;
	np_procfs_cmdline_feed(&a, (const char *)data, size, &whole);
	np_procfs_cmdline_feed(&b, (const char *)data, cut, &split);
	np_procfs_cmdline_feed(&b, (const char *)data + cut, size - cut, &split);
	if (whole.failed || split.failed)
		abort();
	if (whole.len != split.len || (whole.len && memcmp(whole.p, split.p, whole.len) != 0))
		abort();
	if (whole.len && memchr(whole.p, '\0', whole.len))
		abort();
	if (whole.len > size)
		abort();
	np_buf_free(&whole);
	np_buf_free(&split);
	return 0;
}
