/* Naming Ruby frames: the words of a Ruby stack (bpf/ruby.h) point at instruction sequences and
 * method entries in the process's memory, read here (process_vm_readv) for the frame's label as
 * Ruby's backtraces since 3.4 print it (`Worker#crunch`, `Worker.run`, `block in Worker#crunch`,
 * `Integer#times`, `<main>`), its file, first line and the line executing.
 *
 * A label, file and line table is read once per process incarnation (pid, gen) and words, and
 * kept until the cache is over its budget at the end of a batch, when everything is dropped and
 * read again on demand. Everything read is untrusted: every object's type is checked before it is
 * used (an address reused by another kind of object gives "[ruby]", never another name), lengths
 * are bounded, strings become valid UTF-8. A frame that cannot be read is named "[ruby]". An
 * address reused by another object of the same kind within one incarnation while cached keeps the
 * name first read (the README states this limit, like Python's). */
#ifndef NP_RUBY_NAMER_H
#define NP_RUBY_NAMER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/procs.h"
#include "agent/runtime/ruby/detect.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

/* The longest label or file name kept (bytes); longer ones are cut. */
#define RB_NAME_MAX 1024
/* The largest line table read (bytes of each of its parts); a larger one gives first lines only. */
#define RB_LINETABLE_MAX ((size_t)64 << 10)
/* The cache's budget (names, files and line tables); 0 = RB_NAMER_DEFAULT_BYTES. */
#define RB_NAMER_DEFAULT_BYTES ((size_t)16 << 20)
/* Instance variables of a class looked at for its name. */
#define RB_IVARS_MAX 128

/* What the namer knows of one process: filled by the tracker from rb_detect; the IDs the VM
 * files a class's name and a singleton class's object under are found by the namer on first
 * use, from the process's Object class (ids: 0 not looked for yet, 1 found, -1 not found). */
struct rb_names_proc {
	const struct rb_layout *l; /* static */
	uint64_t object_class, global_symbols;
	uint64_t vm_ptr; /* address of ruby_current_vm_ptr (3.0 and later; 3.2's shapes are read through it) */
	uint64_t id_classpath, id_attached;
	int ids;
};

struct rb_namer;

NP_MUST_CHECK int rb_namer_new(size_t budget_bytes, struct rb_namer **out, struct np_err *err);
void rb_namer_free(struct rb_namer *n);

/* Names the n_words words of a Ruby stack of (pid, gen) (leaf first): out[i] (room for n_words)
 * gets one frame per Ruby frame, name, file, start_line and line, and finish[i] is 1 on the first
 * frame of one C call of the VM (NP_RB_FINISH). *n_out: the frames written. The strings stay
 * valid until the next rb_namer_frames or rb_namer_end_batch call. -1 only on allocation
 * failure. */
NP_MUST_CHECK int rb_namer_frames(struct rb_namer *n, uint32_t pid, uint32_t gen, struct rb_names_proc *p,
				  const uint64_t *words, size_t n_words, struct sym_frame *out, uint8_t *finish,
				  size_t *n_out, struct np_err *err);

/* Reads len bytes of process pid's memory at addr: 0, or -1 when they cannot all be read. */
typedef int (*rb_mem_reader)(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len);
/* Where memory is read from: process_vm_readv by default; tests and fuzzers give an image. */
void rb_namer_set_reader(struct rb_namer *n, rb_mem_reader read, void *ud);

/* Drops the cache when it is over its budget. */
void rb_namer_end_batch(struct rb_namer *n);

/* Its cache in the shape every interpreter runtime reports (agent/runtime/procs.h). */
void rb_namer_stats(const struct rb_namer *n, struct rt_name_stats *out);

/* The line of instruction position pos (the index of the instruction after the one executing)
 * from an iseq's line table as read from memory: entries (insns_info, count entries of
 * l->insn_info_entry_size bytes), and either its succinct index (succ, succ_len bytes, as Ruby
 * 2.6+ keep it) or its positions (u32 each; NULL when succ is given); with l->line_table
 * RB_LINES_IN_ENTRIES (2.5), the positions are in the entries, and succ and positions unused.
 * 0 when unknown. */
unsigned rb_line_at(const struct rb_layout *l, const uint8_t *entries, size_t count, const uint8_t *succ,
		    size_t succ_len, const uint8_t *positions, uint64_t pos);

#endif
