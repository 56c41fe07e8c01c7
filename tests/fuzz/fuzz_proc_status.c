/* libFuzzer target for the /proc/PID/status readers (lib/procfs_text): the Uid
 * and NSpid fields. Invariants: a field's value lies inside the text, the UID and the
 * namespace PID fit 32 bits, and a text cut anywhere never reads past its length. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/procfs_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes: ASan catches a read past the length. */
	char *text = malloc(size ? size : 1);
	const char *v;
	size_t n;
	unsigned long uid;

	if (!text)
		return 0;
	memcpy(text, data, size);
	if (np_procfs_status_field(text, size, "Uid", &v, &n) && (v < text || v + n > text + size))
		abort();
	if (np_procfs_status_uid(text, size, &uid) && uid > UINT32_MAX)
		abort();
	(void)np_procfs_status_nspid(text, size);
	for (size_t cut = 0; cut < size && cut < 64; cut++)
		(void)np_procfs_status_nspid(text, cut);
	free(text);
	return 0;
}
