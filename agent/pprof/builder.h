/* Builds one pprof profile (profile.proto, docs/specs/pyroscope-push.md §1.2)
 * from named stacks: strings, functions, mappings and locations are
 * deduplicated, identical stacks are merged, and the result is encoded directly
 * with the protobuf writer.
 *
 * CPU profiles carry sample type and period type cpu/nanoseconds, period
 * 1e9/sample_rate and value = count × period, as Pyroscope and Alloy expect; off-CPU and
 * probe profiles the types Alloy gives them (np_profile_type_of), period 1. */
#ifndef NP_PPROF_BUILDER_H
#define NP_PPROF_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/strbuf.h"

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
	/* Interpreted code (Python): the source file, the function's first line and the line
	 * executing, in the Function and the Line; NULL / 0 for native code. */
	const char *filename;
	unsigned start_line, line;
};

struct np_pprof_builder;

/* What a profile measures, as Alloy's pyroscope.ebpf pushes each: the __name__ label and the
 * pprof sample and period types (docs: pyroscope-push). */
enum np_profile_kind {
	NP_PROFILE_CPU = 0,    /* process_cpu, cpu/nanoseconds: samples x the sampling period */
	NP_PROFILE_OFFCPU = 1, /* offcpu, offcpu/nanoseconds: time off CPU, period 1, no period type */
	NP_PROFILE_UPROBE = 2, /* process_cpu, uprobe/count: calls of a probed function, period 1 */
	NP_PROFILE_KINDS
};

struct np_profile_type {
	const char *name;			 /* the __name__ label */
	const char *sample_type, *sample_unit;
	const char *period_type, *period_unit; /* NULL: none written */
};
const struct np_profile_type *np_profile_type_of(enum np_profile_kind kind);

/* A CPU profile: sample_rate_hz > 0; time_nanos is the profile's start (wall clock). */
NP_MUST_CHECK int np_pprof_new(unsigned sample_rate_hz, int64_t time_nanos, struct np_pprof_builder **out,
			       struct np_err *err);
/* A profile of any kind: sample_rate_hz is used by NP_PROFILE_CPU only. */
NP_MUST_CHECK int np_pprof_new_kind(enum np_profile_kind kind, unsigned sample_rate_hz, int64_t time_nanos,
				    struct np_pprof_builder **out, struct np_err *err);
void np_pprof_free(struct np_pprof_builder *b);

/* Adds count samples of a stack given leaf first (kernel frames before user frames): for an
 * off-CPU profile, count is nanoseconds off CPU; for a probe, calls. */
NP_MUST_CHECK int np_pprof_add(struct np_pprof_builder *b, const struct np_pprof_frame *frames, size_t n,
			       uint64_t count, struct np_err *err);
/* A sample's string label (pprof Sample.label: the server makes each a series label). */
struct np_pprof_sample_label {
	const char *key, *value;
};
#define NP_PPROF_MAX_LABELS 16 /* per sample (comm, pid and 10 Go labels); more are left out */
/* The same with the sample's labels: samples of one stack with other labels stay apart. */
NP_MUST_CHECK int np_pprof_add_labeled(struct np_pprof_builder *b, const struct np_pprof_frame *frames, size_t n,
				       const struct np_pprof_sample_label *labels, size_t nlabels, uint64_t count,
				       struct np_err *err);

size_t np_pprof_sample_count(const struct np_pprof_builder *b); /* distinct stacks */
uint64_t np_pprof_total(const struct np_pprof_builder *b);	    /* samples added */

/* Reading a built profile back, for a consumer in this process (the local store) that
 * would otherwise decode the encoding. Strings are borrowed: valid until the builder is
 * freed or added to. */
enum np_profile_kind np_pprof_kind(const struct np_pprof_builder *b);
int64_t np_pprof_period(const struct np_pprof_builder *b); /* what one count weighs: ns per sample (CPU), else 1 */
int64_t np_pprof_time(const struct np_pprof_builder *b);   /* time_nanos as given to np_pprof_new_kind */
size_t np_pprof_location_count(const struct np_pprof_builder *b);
/* Location id (1..np_pprof_location_count) as a frame: function "" and unnamed 1 for one
 * without a Line; mapping_file NULL for one without a mapping (its address is then 0).
 * Frames that differ only in what the pprof does not keep share a Location. */
void np_pprof_location(const struct np_pprof_builder *b, uint32_t id, struct np_pprof_frame *out);
/* Sample id (1..np_pprof_sample_count): copies its first min(n, cap) location ids, leaf
 * first, into locs, sets *count to what np_pprof_add added up (value = count x period),
 * and returns n. */
size_t np_pprof_sample(const struct np_pprof_builder *b, uint32_t id, uint32_t *locs, size_t cap, uint64_t *count);

/* Sample id's labels (those np_pprof_add_labeled gave it, in its order): copies the first
 * min(n, cap) into out and returns n (0: none); *set is the id of that label set (0: none),
 * the same for every sample with the same labels. Strings are borrowed as above. */
size_t np_pprof_sample_labels(const struct np_pprof_builder *b, uint32_t id, struct np_pprof_sample_label *out,
			      size_t cap, uint32_t *set);

/* Appends the encoded (uncompressed) profile to out. */
NP_MUST_CHECK int np_pprof_encode(struct np_pprof_builder *b, int64_t duration_nanos, struct np_buf *out,
				  struct np_err *err);

#endif
