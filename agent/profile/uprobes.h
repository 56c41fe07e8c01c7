/* Uprobes for pyroscope.ebpf's u_probe_links and `record --uprobe`: each "FILE:SYMBOL" is
 * resolved to a file offset in the ELF file and the sampler's uprobe program attached there.
 * A uprobe belongs to a file (an inode), not to a path, so the same path is resolved in each
 * process's view of it (/proc/PID/root/FILE: a container's copy of libc is another file) and
 * attached once per distinct file. With load_probe, processes that appear later are looked at
 * too (their own copies of the file get probes as they show up). */
#ifndef NP_PROFILE_UPROBES_H
#define NP_PROFILE_UPROBES_H

#include <stddef.h>
#include <stdint.h>

#include "agent/profile/sampler.h"
#include "lib/error.h"

/* "FILE:SYMBOL" split at its last ':' into the two (copied to file[] and sym[]); -1 with a
 * message saying what is wrong with the text. */
NP_MUST_CHECK int np_uprobe_parse(const char *link, char *file, size_t file_len, char *sym, size_t sym_len,
				  struct np_err *err);

/* The file offset of SYMBOL's code in the ELF file at path (reached as given), for attaching;
 * -1 with a message saying which and why: the file cannot be opened, is not ELF, has no such
 * symbol, or the symbol is not in a loadable segment. */
NP_MUST_CHECK int np_uprobe_resolve(const char *path, const char *sym, uint64_t *file_offset, struct np_err *err);

struct np_uprobes;

/* Resolves and attaches every link on the host and in every running process's view of the file.
 * The links are checked first: a link that cannot be resolved on the host is an error (naming
 * the link). */
NP_MUST_CHECK int np_uprobes_new(struct np_sampler *s, const char *const *links, size_t n, int load_probe,
				 struct np_uprobes **out, struct np_err *err);
void np_uprobes_free(struct np_uprobes *u);

/* With load_probe: looks at the processes that appeared since the last call and attaches the
 * links in their view of the files. Bounded work; failures are counted, not errors. */
void np_uprobes_rescan(struct np_uprobes *u);

struct np_uprobes_stats {
	size_t links, attached; /* links, and files probed (uprobes attached) */
	uint64_t failed;	/* attach failures (a process's file that could not be probed) */
};
void np_uprobes_stats(const struct np_uprobes *u, struct np_uprobes_stats *out);

#endif
