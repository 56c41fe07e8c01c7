/* Builds one pprof profile (profile.proto, ../shared/specs/pyroscope-push.md
 * §1.2) from named stacks: strings, functions, mappings and locations are
 * deduplicated, identical stacks are merged, and the result is encoded directly
 * with the protobuf writer.
 *
 * CPU profiles carry sample type and period type cpu/nanoseconds, period
 * 1e9/sample_rate and value = count × period, as Pyroscope and Alloy expect. */
#ifndef NP_PPROF_BUILDER_H
#define NP_PPROF_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/util/error.h"
#include "agent/util/strbuf.h"

/* One frame; strings are copied into the builder. */
struct np_pprof_frame {
	const char *function;	  /* never NULL */
	const char *mapping_file; /* NULL when the frame belongs to no mapping */
	const char *build_id;	  /* NULL or "" when unknown */
	uint64_t map_start, map_limit, map_offset;
};

struct np_pprof_builder;

/* sample_rate_hz > 0; time_nanos is the profile's start (wall clock). */
NP_MUST_CHECK int np_pprof_new(unsigned sample_rate_hz, int64_t time_nanos, struct np_pprof_builder **out,
			       struct np_err *err);
void np_pprof_free(struct np_pprof_builder *b);

/* Adds count samples of a stack given leaf first (kernel frames before user frames). */
NP_MUST_CHECK int np_pprof_add(struct np_pprof_builder *b, const struct np_pprof_frame *frames, size_t n,
			       uint64_t count, struct np_err *err);

size_t np_pprof_sample_count(const struct np_pprof_builder *b); /* distinct stacks */
uint64_t np_pprof_total(const struct np_pprof_builder *b);	    /* samples added */

/* Appends the encoded (uncompressed) profile to out. */
NP_MUST_CHECK int np_pprof_encode(struct np_pprof_builder *b, int64_t duration_nanos, struct np_buf *out,
				  struct np_err *err);

#endif
