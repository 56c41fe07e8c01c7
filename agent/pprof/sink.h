/* Where a built profile goes: the one interface between the engine that builds profiles
 * (pyroscope.ebpf, agent/profile/) and what receives them (pyroscope.write, agent/write/; the
 * local store, agent/ui/). It lives with the builder so that neither side includes the other. */
#ifndef NP_PPROF_SINK_H
#define NP_PPROF_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/labels.h"

struct np_pprof_builder;

/* Takes ownership of pprof_gz (free() it) whether it succeeds or not. */
typedef int (*np_profile_append_fn)(void *ud, const struct np_labels *labels, void *pprof_gz, size_t len,
				    struct np_err *err);
/* The profile as built, borrowed for the call: the sink copies what it keeps before it
 * returns. Its start is np_pprof_time(b), duration_ns its length. */
typedef int (*np_profile_append_built_fn)(void *ud, const struct np_labels *labels,
					  const struct np_pprof_builder *b, int64_t duration_ns, struct np_err *err);

/* A binary whose debug information the engine offers for upload (pyroscope.ebpf's
 * debug_info { upload = true }): its GNU build ID (lowercase hex), its base name, where this
 * agent reads it, the directory where its .gnu_debuglink file would be (/usr/lib/debug plus the
 * binary's directory, in its process's root; NULL: none), and the offering component's
 * debug_info knobs, which start the receiver's uploader (as Alloy's UploadJob carries its
 * InitArguments). */
struct np_debuginfo_offer {
	const char *build_id, *name, *open_path, *debuglink_dir;
	size_t cache_size, queue_size;
	int workers, strip_text_section;
};
/* Never blocks on the network; borrowed strings, copied when kept. */
typedef void (*np_debuginfo_offer_fn)(void *ud, const struct np_debuginfo_offer *o);

/* A receiver of the engine's profiles. Exactly one of the two functions is set: append
 * for a receiver that sends the pprof on (pyroscope.write), append_built for one in this
 * process that reads the samples (the local store), which then costs no decoding.
 * offer_debuginfo: set by a receiver that uploads debug information (pyroscope.write). */
struct np_profile_sink {
	np_profile_append_fn append;
	void *ud;
	np_profile_append_built_fn append_built;
	np_debuginfo_offer_fn offer_debuginfo;
};

#endif
