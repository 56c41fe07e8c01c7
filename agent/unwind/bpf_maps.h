/* The unwinder's BPF maps (bpf/unwind.h): created by the sampler's program (agent/profile/
 * sampler.c), filled by the loader (loader.h). Here, below both, so that the unwinder needs
 * nothing of the sampler but these descriptors. */
#ifndef NP_UNWIND_BPF_MAPS_H
#define NP_UNWIND_BPF_MAPS_H

/* The fds stay owned by the sampler. */
struct np_unwind_maps {
	int mappings;	    /* LPM trie: (tgid, address) -> struct np_unw_mapping */
	int tables;	    /* ARRAY_OF_MAPS: table id -> table array */
	int rules;	    /* ARRAY: global rule index -> struct np_unw_rule */
	int requested;	    /* ARRAY: table id -> when BPF last asked for it */
	int table_template; /* the inner map template (its flags and sizes) */
	int epoch;	    /* ARRAY[1]: bumped when the walker's cached rules may be wrong */
};

#endif
