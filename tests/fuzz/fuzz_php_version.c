/* Fuzzes finding PHP's version in a file's read-only data (untrusted: any file named php* that
 * a process maps is read): the input is the data. A version found must be what the input
 * says after "X-Powered-By: PHP/". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/php/detect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned ma, mi, pa;
	char want[64];

	if (php_version_in(data, size, &ma, &mi, &pa) < 0)
		return 0;
	if (ma < 5 || ma > 99 || mi > 9999 || pa > 9999)
		abort();
	snprintf(want, sizeof(want), "X-Powered-By: PHP/%u.%u", ma, mi);
	if (!memmem(data, size, want, strlen(want)))
		abort();
	return 0;
}
