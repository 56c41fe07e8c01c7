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

/* A probe link as Alloy's probe_links writes it: uprobe:FILE:SYMBOL (calls), uretprobe:FILE:SYMBOL
 * (returns), kprobe:SYMBOL, kretprobe:SYMBOL; a bare FILE:SYMBOL (u_probe_links, `record
 * --uprobe`) is an uprobe. */
enum np_probe_kind { NP_PROBE_UPROBE, NP_PROBE_URETPROBE, NP_PROBE_KPROBE, NP_PROBE_KRETPROBE };
struct np_probe_link {
	enum np_probe_kind kind;
	char file[4096]; /* "" for a kernel probe */
	char sym[256];
};
/* -1 with a message saying what is wrong with the text. */
NP_MUST_CHECK int np_probe_link_parse(const char *link, struct np_probe_link *out, struct np_err *err);
/* kprobe: and kretprobe: name a kernel function, not a file. */
static inline int np_probe_is_kernel(enum np_probe_kind k)
{
	return k == NP_PROBE_KPROBE || k == NP_PROBE_KRETPROBE;
}

/* Whether kernel probe link kprobe:SYM / kretprobe:SYM can attach on this host: -1 with the
 * reason when this kernel has no kprobes (built without CONFIG_KPROBES: no kprobe PMU and no
 * kprobe_events) or /proc/kallsyms has no function SYM. */
NP_MUST_CHECK int np_kprobe_check(const char *sym, struct np_err *err);

struct np_uprobes;

/* Parses every link (a link that does not parse is an error naming it) and attaches each: a
 * kernel probe once, to the kernel function; a user probe on the host and in every running
 * process's view of its file. A link that cannot be attached on this host (its file or symbol
 * is missing here, or the kernel has no kprobes) is no error: the others run, and
 * np_uprobes_problem says how many and why. */
NP_MUST_CHECK int np_uprobes_new(struct np_sampler *s, const char *const *links, size_t n, int load_probe,
				 struct np_uprobes **out, struct np_err *err);
void np_uprobes_free(struct np_uprobes *u);

/* With load_probe: looks at the processes that appeared since the last call and attaches the
 * links in their view of the files. Bounded work; failures are counted, not errors. */
void np_uprobes_rescan(struct np_uprobes *u);

/* How many links could not be attached on this host when started, and the first one's reason
 * (NULL when none); the reason lives as long as u. */
size_t np_uprobes_problem(const struct np_uprobes *u, const char **first);

struct np_uprobes_stats {
	size_t links, attached; /* links, and files probed (uprobes attached) */
	uint64_t failed;	/* attach failures (a process's file that could not be probed) */
};
void np_uprobes_stats(const struct np_uprobes *u, struct np_uprobes_stats *out);

#endif
