/* Durations as Go and Alloy write them: "1h30m", "15s", "500ms", "1.5s", "0".
 * Used by the configuration and by command-line flags such as --duration. */
#ifndef NP_LIB_DURATION_H
#define NP_LIB_DURATION_H

#include <stdint.h>

#include "lib/error.h"

#define NP_NSEC_PER_SEC 1000000000LL

/* Parses Go's time.ParseDuration syntax (units ns us µs ms s m h; a sign; fractions).
 * On error the message says what was wrong and which units are valid. */
NP_MUST_CHECK int np_duration_parse(const char *s, int64_t *out_ns, struct np_err *err);

/* Formats like Go's Duration.String ("1m30s", "500ms", "0s") into buf. */
const char *np_duration_format(int64_t ns, char *buf, unsigned long cap);

#endif
