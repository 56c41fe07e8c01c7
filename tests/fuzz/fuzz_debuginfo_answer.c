/* libFuzzer target for the parser of the debug info server's ShouldInitiateUploadResponse
 * (agent/write/debuginfo.c), which reads what a Pyroscope on the network answers. Input: the
 * response body. Checks: no crash or undefined behaviour; the reason is NUL-terminated within
 * its buffer; should is 0 or 1; a failure says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/write/debuginfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char reason[64];
	struct np_err err = { 0 };
	int should = -1;

	memset(reason, 'x', sizeof(reason));
	if (np_debuginfo_decode_should_initiate(data, size, &should, reason, sizeof(reason), &err) == 0) {
		if ((should != 0 && should != 1) || !memchr(reason, '\0', sizeof(reason)))
			abort();
	} else if (!err.msg[0]) {
		abort();
	}
	return 0;
}
