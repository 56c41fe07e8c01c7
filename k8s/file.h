/* Bounded whole-file reads for kubeconfigs, tokens, passwords and certificates:
 * these files are small, and a huge or endless file (a FIFO, /dev/zero) must not
 * exhaust memory. */
#ifndef NP_K8S_FILE_H
#define NP_K8S_FILE_H

#include <stddef.h>

#include "lib/error.h"

/* As np_read_file (lib/file.h), with trailing whitespace (a token file's final newline) removed. */
char *k8s_read_secret_file(const char *path, size_t max, struct np_err *err);

#endif
