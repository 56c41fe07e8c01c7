/* Bounded whole-file reads for kubeconfigs, tokens, passwords and certificates:
 * these files are small, and a huge or endless file (a FIFO, /dev/zero) must not
 * exhaust memory. */
#ifndef NP_K8S_FILE_H
#define NP_K8S_FILE_H

#include <stddef.h>

#include "agent/util/error.h"

/* Returns a NUL-terminated malloc'ed copy of the file (len without the NUL), or NULL
 * with err set ("read /path: ..." or "/path is larger than N bytes"). */
char *k8s_read_file(const char *path, size_t max, size_t *len, struct np_err *err);

/* As k8s_read_file, with trailing whitespace (a token file's final newline) removed. */
char *k8s_read_secret_file(const char *path, size_t max, struct np_err *err);

#endif
