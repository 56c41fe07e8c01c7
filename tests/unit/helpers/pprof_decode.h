/* A small, independent protobuf/pprof decoder for unit tests: it reads what the
 * builder wrote back into plain arrays so tests can check every field. */
#ifndef NP_TEST_PPROF_DECODE_H
#define NP_TEST_PPROF_DECODE_H

#include <stddef.h>
#include <stdint.h>

struct dec_sample {
	uint64_t loc[300];
	size_t nloc;
	int64_t value[4];
	size_t nvalue;
};

struct dec_profile {
	char *strings[4096];
	size_t nstrings;
	int64_t sample_type[2], period_type[2], period, time_nanos, duration_nanos;
	int n_sample_types;
	struct dec_sample *samples;
	size_t nsamples;
	struct { uint64_t id, start, limit, offset; int64_t file, build_id; int has_functions; } mappings[512];
	size_t nmappings;
	struct { uint64_t id, mapping, function; } locations[4096];
	size_t nlocations;
	struct { uint64_t id; int64_t name, system_name; } functions[4096];
	size_t nfunctions;
};

/* Returns 0 on success, -1 on malformed input. */
int dec_profile(const uint8_t *p, size_t len, struct dec_profile *out);
void dec_profile_free(struct dec_profile *d);
/* The function name of a location id, or NULL. */
const char *dec_location_name(const struct dec_profile *d, uint64_t loc);

#endif
