/* Fuzzes finding PHP's version in a file's read-only data (untrusted: any file named php* that
 * a process maps is read): the input is the data. A version found is within its bounds and the
 * input holds its marker, "X-Powered-By: PHP/". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/php/detect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned ma, mi, pa;
	static const char marker[] = "X-Powered-By: PHP/";

	if (php_version_in(data, size, &ma, &mi, &pa) < 0)
		return 0;
	if (ma < 5 || ma > 99 || mi > 9999 || pa > 9999)
		abort();
	if (!memmem(data, size, marker, sizeof(marker) - 1))
		abort();
	return 0;
}
