/* Error values that carry context up the call stack.
 *
 * Every fallible function takes a `struct np_err *` and returns -1 (or NULL)
 * after filling it; callers either handle the error or add their own context
 * with np_err_wrap() and return it further up ("config.alloy:3:5: ...",
 * "pod default/web: ...", "open /proc/12/maps: No such file or directory").
 * The buffer is fixed so that reporting an error never needs to allocate. */
#ifndef NP_LIB_ERROR_H
#define NP_LIB_ERROR_H

#include <stddef.h>

#define NP_MUST_CHECK __attribute__((warn_unused_result))
#define NP_PRINTF(a, b) __attribute__((format(printf, a, b)))

struct np_err {
	char msg[1024];
	int code; /* an errno value when the cause was a system call, else 0 */
};

/* Replaces the message. Returns -1 so that `return np_errf(err, ...)` reads naturally. */
int np_errf(struct np_err *err, const char *fmt, ...) NP_PRINTF(2, 3);

/* Like np_errf, appending ": strerror(errno)" and recording errno in code. */
int np_errno(struct np_err *err, const char *fmt, ...) NP_PRINTF(2, 3);

/* Prefixes the current message with context: "context: previous message". Returns -1. */
int np_err_wrap(struct np_err *err, const char *fmt, ...) NP_PRINTF(2, 3);

static inline void np_err_clear(struct np_err *err)
{
	err->msg[0] = '\0';
	err->code = 0;
}

#endif
