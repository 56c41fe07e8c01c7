/* libFuzzer target for the pprof decoder (agent/pprof/decode.h) and the local profile
 * store fed by it (agent/ui/store.h): any bytes, gzipped or not. Checks the decoder's
 * promises (every index in range, value counts match the sample types) and that the
 * store takes or refuses the profile without crashing, leaking or exceeding its
 * budget, and answers every query over it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pprof/decode.h"
#include "agent/ui/store.h"

static int64_t fixed_now(void)
{
	return 1800000000LL * 1000000000LL;
}

static void check(const struct np_pprof_profile *p)
{
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct np_pprof_sample *s = &p->samples[i];
		for (uint32_t k = 0; k < s->nloc; k++)
			if (p->sample_locs[s->first_loc + k] >= p->nlocations)
				abort();
		for (uint32_t k = 0; k < s->nlabels; k++)
			if (p->labels[s->first_label + k].key >= p->nstrings)
				abort();
	}
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct np_pprof_location *l = &p->locations[i];
		if (l->mapping != NP_PPROF_NONE && l->mapping >= p->nmappings)
			abort();
		for (uint32_t k = 0; k < l->nlines; k++) {
			uint32_t f = p->lines[l->first_line + k].function;
			if (f != NP_PPROF_NONE && (f >= p->nfunctions || p->functions[f].name >= p->nstrings))
				abort();
		}
	}
	for (size_t i = 0; i < p->nmappings; i++)
		if (p->mappings[i].filename >= p->nstrings)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct np_pprof_profile *p = NULL;
	struct np_err err;
	size_t n;

	if (np_pprof_decode(data, size, 4u << 20, &p, &err) == 0) {
		check(p);
		np_pprof_profile_free(p);
	}
	(void)np_pprof_count_samples(data, size, 4u << 20, &n, &err);

	struct np_store_config cfg;
	struct np_store *s;
	np_store_config_defaults(&cfg);
	cfg.budget_bytes = 256u << 10;
	cfg.max_profile_bytes = 4u << 20;
	cfg.max_stack_depth = 64;
	cfg.now_ns = fixed_now;
	if (np_store_new(&cfg, &s, &err))
		abort();
	void *copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	if (np_store_add(s, NULL, copy, size, &err) == 0) {
		struct np_store_query q = { 0 };
		struct np_buf out = NP_BUF_INIT;
		struct np_store_stats st;
		if (np_store_flamegraph_json(s, &q, NP_STORE_GROUP_PROCESS, 50, &out, &err) ||
		    np_store_top_json(s, &q, 10, &out, &err) || np_store_services_json(s, &q, &out, &err) ||
		    np_store_timeline_json(s, &q, &out, &err))
			abort();
		np_buf_reset(&out);
		(void)np_store_pprof(s, &q, &out, &err);
		np_buf_free(&out);
		np_store_get_stats(s, &st);
		if (st.bytes > st.budget)
			abort();
	}
	np_store_free(s);
	return 0;
}
