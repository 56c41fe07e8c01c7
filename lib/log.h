/* Logging: one line per event on stderr, logfmt by default, e.g.
 *   ts=2026-11-22T10:00:00.123Z level=warn component=k8s msg="watch restarted" reason="410 Gone"
 * or, in the json format (Alloy's `logging { format = "json" }`), one object per line
 * with the same fields in the same order:
 *   {"ts":"2026-11-22T10:00:00.123Z","level":"warn","component":"k8s","msg":"watch restarted","reason":"410 Gone"}
 *
 * Usage: np_log(NP_WARN, "k8s", "watch restarted", "reason", reason, "ns", ns, NULL);
 * The variable part is a NULL-terminated list of key, value string pairs; values are
 * quoted and escaped as logfmt requires. For numbers use NP_LOG_INT(v).
 * Thread-safe: each line is written with a single write(2). Never log secrets. */
#ifndef NP_LIB_LOG_H
#define NP_LIB_LOG_H

#include <stdint.h>

enum np_level { NP_DEBUG = 0, NP_INFO = 1, NP_WARN = 2, NP_ERROR = 3 };
enum np_log_format { NP_LOG_LOGFMT = 0, NP_LOG_JSON = 1 };

void np_log_set_format(enum np_log_format format);

void np_log_set_level(enum np_level level);
enum np_level np_log_get_level(void);
/* Parses "debug", "info", "warn", "error". Returns -1 on anything else. */
int np_log_parse_level(const char *s, enum np_level *out);

void np_log(enum np_level level, const char *component, const char *msg, ...)
	__attribute__((sentinel));

/* Formats an integer into a buffer that lives until the end of the enclosing block. */
const char *np_log_fmt_int(char buf[24], int64_t v);
#define NP_LOG_INT(v) np_log_fmt_int((char[24]){0}, (int64_t)(v))

#endif
