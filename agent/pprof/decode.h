/* A pprof (profile.proto, docs/specs/pyroscope-push.md §1.2) decoder, for the
 * local profile store and for reading back what we wrote. It takes gzipped or plain
 * bytes from anywhere (a profiler, a file, a remote party), so it treats them as
 * hostile: every length and index is checked, cross-references (sample -> location
 * -> function/mapping, every string index) are resolved and validated up front,
 * and the decompressed size is capped by the caller. Memory is a small multiple
 * of the decompressed size.
 *
 * Hand-written because it is ~400 lines over the field table; a protobuf library
 * would add a code generator to the build and would not enforce pprof's
 * cross-reference rules anyway.
 *
 * All indices in the decoded form are array indices (ids are resolved), and every
 * string index is < nstrings, so callers never re-check. */
#ifndef NP_PPROF_DECODE_H
#define NP_PPROF_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/pprof/gzip.h" /* np_gunzip: gzipped input is taken */
#include "lib/error.h"
#include "lib/strbuf.h"

#define NP_PPROF_NONE UINT32_MAX /* "no mapping" / "no function" */

struct np_pprof_str {
	const char *s; /* NUL-terminated, points into the profile's arena */
	uint32_t len;
};

struct np_pprof_value_type {
	uint32_t type, unit; /* string indices */
};

struct np_pprof_mapping {
	uint64_t id, start, limit, offset;
	uint32_t filename, build_id; /* string indices */
	int has_functions;	     /* every Location in it has its function */
};

struct np_pprof_function {
	uint64_t id;
	uint32_t name, system_name, filename; /* string indices */
	int64_t start_line;
};

struct np_pprof_line {
	uint32_t function; /* index into functions, or NP_PPROF_NONE */
	int64_t line;
};

struct np_pprof_location {
	uint64_t id, address;
	uint32_t mapping;	       /* index into mappings, or NP_PPROF_NONE */
	uint32_t first_line, nlines; /* into lines; innermost (inlined) first, caller last */
};

struct np_pprof_label {
	uint32_t key, str, num_unit; /* string indices (0 = "") */
	int64_t num;
};

struct np_pprof_sample {
	uint32_t first_loc, nloc;     /* into sample_locs: location indices, leaf first */
	uint32_t first_value;	      /* into values; nsample_types of them */
	uint32_t first_label, nlabels; /* into labels */
};

struct np_pprof_profile {
	struct np_pprof_str *strings;
	size_t nstrings;
	struct np_pprof_value_type *sample_types;
	size_t nsample_types;
	struct np_pprof_sample *samples;
	size_t nsamples;
	uint32_t *sample_locs;
	int64_t *values;
	struct np_pprof_label *labels;
	struct np_pprof_mapping *mappings;
	size_t nmappings;
	struct np_pprof_location *locations;
	size_t nlocations;
	struct np_pprof_line *lines;
	struct np_pprof_function *functions;
	size_t nfunctions;
	struct np_pprof_value_type period_type;
	int64_t period, time_nanos, duration_nanos;
	uint32_t default_sample_type; /* string index, 0 when unset */
	char *arena;		      /* owned: string bytes */
	size_t bytes;		      /* heap bytes this profile holds */
};

/* Decodes gzipped (detected by its magic) or plain pprof bytes. max_bytes caps the
 * decompressed size. *out is owned by the caller (np_pprof_profile_free). */
NP_MUST_CHECK int np_pprof_decode(const void *data, size_t len, size_t max_bytes, struct np_pprof_profile **out,
				  struct np_err *err);
void np_pprof_profile_free(struct np_pprof_profile *p);

static inline const char *np_pprof_string(const struct np_pprof_profile *p, uint32_t idx)
{
	return idx < p->nstrings ? p->strings[idx].s : "";
}

/* Counts the samples of a gzipped or plain pprof without decoding the rest (for
 * metrics). Fails on malformed top-level framing. */
NP_MUST_CHECK int np_pprof_count_samples(const void *data, size_t len, size_t max_bytes, size_t *out,
					 struct np_err *err);

#endif
