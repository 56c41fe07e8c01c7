/* Runs a discovery function on its own thread, right away and then every
 * interval, and publishes the targets to the component's export whenever they
 * change (discovery.docker, discovery.process). A failed pass marks the component
 * unhealthy and keeps the last targets; the next good pass makes it healthy again. */
#ifndef NP_DISCOVERY_PERIODIC_H
#define NP_DISCOVERY_PERIODIC_H

#include <stdint.h>

#include "agent/config/component.h"
#include "lib/error.h"
#include "lib/labels.h"

typedef int (*np_periodic_fn)(void *ctx, struct np_targets *out, struct np_err *err);

struct np_periodic;

/* ctx is borrowed: it must outlive np_periodic_stop(). */
NP_MUST_CHECK int np_periodic_start(struct cfg_component *c, const char *export_name, int64_t interval_ns,
				    np_periodic_fn fn, void *ctx, struct np_periodic **out, struct np_err *err);
/* Stops the thread promptly (a pass in progress finishes first) and frees. NULL is a no-op. */
void np_periodic_stop(struct np_periodic *p);

#endif
