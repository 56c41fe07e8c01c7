/* Parsers of the text of /proc/PID files, kept apart from the reading so that they can
 * be fuzzed: /proc/PID/status fields (the Uid and NSpid lines) and /proc/PID/cmdline
 * (NUL-separated arguments). The text is the kernel's, but a process chooses its
 * name, its arguments and their sizes, so nothing here trusts a length or a layout. */
#ifndef NP_LIB_PROCFS_TEXT_H
#define NP_LIB_PROCFS_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/strbuf.h"

/* The value of the first "NAME:" line of a status text (not NUL-terminated): its start
 * and length, without the leading white space and the newline. 1 when found, else 0. */
int np_procfs_status_field(const char *text, size_t len, const char *name, const char **value, size_t *vlen);

/* The real UID: the first number of the "Uid:" line. 1 when there is one, else 0. */
int np_procfs_status_uid(const char *text, size_t len, unsigned long *uid);

/* The PID in the innermost PID namespace: the last number of the "NSpid:" line; 0 when
 * there is none (kernels before 4.1) or it does not fit. */
uint32_t np_procfs_status_nspid(const char *text, size_t len);

/* /proc/PID/cmdline as gopsutil joins it: arguments separated by single spaces, empty
 * ones dropped. Fed in chunks of any size; the state carries across them. */
struct np_cmdline_join {
	int in_arg, any;
};
#define NP_CMDLINE_JOIN_INIT { 0, 0 }
/* Appends to out (whose failed flag records a failed allocation). */
void np_procfs_cmdline_feed(struct np_cmdline_join *j, const char *chunk, size_t n, struct np_buf *out);

#endif
