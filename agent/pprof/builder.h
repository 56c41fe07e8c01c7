/* Builds one pprof profile (profile.proto, docs/specs/pyroscope-push.md §1.2)
 * from named stacks: strings, functions, mappings and locations are
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

/* One frame; strings are copied into the builder. As Alloy's pyroscope.ebpf writes them
 * (docs/specs/pyroscope-push.md §3.1): a frame in a file carries the address in the
 * file's own space (the ELF virtual address, return addresses minus one) and a Mapping in
 * that same space: [map_start, map_limit) is the process mapping translated by its load
 * bias, map_offset its file offset, so address - map_start + map_offset is the file offset
 * on every machine. Such a mapping is written once per profile however many processes map
 * the file. A frame the node named gets a Line; an unnamed one gets none, so Pyroscope
 * names it from build_id + address (its symbolizer skips Locations that have Lines, and
 * ingestion zeroes the addresses of mappings with has_functions). */
struct np_pprof_frame {
	const char *function;	  /* never NULL; the Line's function unless unnamed */
	const char *mapping_file; /* NULL when the frame belongs to no mapping (mapping 1, address 0) */
	const char *build_id;	  /* NULL or "" when unknown: lowercase hex GNU build ID */
	uint64_t map_start, map_limit, map_offset;
	uint64_t address;	  /* Location.address, in the mapping's space */
	int unnamed;		  /* no Line: only with a mapping_file */
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
