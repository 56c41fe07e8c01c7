/* Finding PHP in a process: the file that holds the Zend engine (the php, php-fpm or php-cgi
 * executable, or libphp for an embedding such as mod_php), its version, where its
 * executor_globals lie in the process, and the layout of its structures
 * (agent/runtime/php/layout.h). Files are reached the way the symbolizer reaches them (inside
 * the process's root, read with pread), so a container's PHP is found like the host's. */
#ifndef NP_PHP_DETECT_H
#define NP_PHP_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/php/layout.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

struct php_interp {
	struct php_layout layout;
	unsigned patch;		      /* the release within major.minor */
	uint64_t executor_globals;    /* its address in the process */
};

/* The version after "X-Powered-By: PHP/" in a file's read-only data (the header every build
 * sends, so every build carries it): 0, or -1 when there is none. */
int php_version_in(const void *rodata, size_t len, unsigned *major, unsigned *minor, unsigned *patch);

/* Looks for PHP among the executable mappings of (pid, gen). 1: found, *out filled. 0: no PHP
 * this profiler can walk; when the process does run one (of a version or build it cannot
 * walk), why[] says which and why, else why[0] is NUL. -1 only on allocation failure. */
NP_MUST_CHECK int php_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct php_interp *out, char *why,
			     size_t why_len, struct np_err *err);

#endif
