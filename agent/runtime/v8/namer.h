/* Naming JavaScript frames from V8's heap: given what a frame walker records per frame (the
 * SharedFunctionInfo and the bytecode offset of an interpreted frame, the Code object and the
 * pc offset of a compiled one, or the frame type of a stub frame), the namer reads the
 * function's name (V8's SharedFunctionInfo::DebugName: the name, else the inferred name
 * "obj.method", else "(anonymous)" as V8's CPU profiler says), the script's name (path or
 * URL) and the line (the script's line ends and the source position table); the functions
 * that optimised code inlined at the pc expand into several frames, innermost first.
 *
 * Stale check: V8's garbage collector moves and frees objects, so an address the walker saw
 * may hold another object by the time it is named. Every object read is checked to be of the
 * type expected (its map's instance type); the walker also records an identity cookie
 * (v8_frame.cookie: the low 32 bits of one tagged field, see below) that the namer compares
 * with what it reads, and with what its cache holds. A frame that fails the check is named
 * "[unknown js]" and counted (stale), never given another function's name.
 *
 * A cache per process incarnation (pid, gen) keeps what was read until it is over its budget
 * at the end of a batch, when everything is dropped and read again on demand. Everything
 * read is untrusted: lengths and recursion are bounded, strings become valid UTF-8, garbage
 * gives "[unknown js]", never a crash or an error. One thread at a time. */
#ifndef NP_V8_NAMER_H
#define NP_V8_NAMER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/v8/metadata.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

/* The longest function or script name kept (in code points); longer ones are cut with "...". */
#define V8_NAME_MAX 512
/* Tables read at most: a position table, the inlining table, a script's line ends (in lines). */
#define V8_TABLE_MAX ((size_t)256 << 10)
#define V8_LINES_MAX ((size_t)1 << 20)
/* A script source scanned for its line ends when V8 has not computed them, at most. */
#define V8_SOURCE_MAX ((size_t)16 << 20)
/* Cons strings nest; names deeper than this are not read. */
#define V8_STRING_DEPTH 8
/* Functions a compiled frame expands into at most (itself and the functions inlined). */
#define V8_INLINE_MAX 32
/* The cache's budget; 0 = V8_NAMER_DEFAULT_BYTES. */
#define V8_NAMER_DEFAULT_BYTES ((size_t)32 << 20)

#define V8_UNKNOWN "[unknown js]"
#define V8_NO_COOKIE 0xffffffffffffffffull

enum v8_frame_kind {
	V8_FRAME_STUB = 1,  /* a frame with a type marker: marker is V8's frame type number */
	V8_FRAME_BYTECODE,  /* interpreted (Ignition): object = SFI, offset = the frame's bytecode
	                     * offset slot, Smi-decoded (V8 keeps offset + BytecodeArray header - tag) */
	V8_FRAME_SFI,       /* the function is known but not where in it: object = SFI */
	V8_FRAME_CODE,      /* compiled (Maglev, TurboFan): object = Code, offset = pc - instruction start */
	V8_FRAME_BASELINE,  /* Sparkplug: object = the baseline Code, offset = pc - instruction start,
	                     * function = the JSFunction's SFI (baseline code does not point back) */
};

/* One frame as the walker recorded it. object may be tagged or not. cookie is V8_NO_COOKIE, or
 * the low 32 bits of the tagged word at layout.sfi_name_or_scope_info of the SFI (BYTECODE,
 * SFI, and function of BASELINE) or at layout.code_spt of the Code (CODE, BASELINE: the same
 * slot holds baseline code's bytecode offset table) as the walker read it. */
struct v8_frame {
	uint32_t kind;
	uint32_t marker;
	uint64_t object;
	uint64_t function;
	uint64_t offset;
	uint64_t cookie;
	int return_address; /* offset is a return address's (not the leaf frame): look up offset - 1 */
};

struct v8_namer;

NP_MUST_CHECK int v8_namer_new(size_t budget_bytes, struct v8_namer **out, struct np_err *err);
void v8_namer_free(struct v8_namer *n);

/* Reads len bytes of process pid's memory at addr: 0, or -1 when they cannot all be read. */
typedef int (*v8_mem_reader)(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len);
/* Where memory is read from: process_vm_readv by default; tests and fuzzers give an image. */
void v8_namer_set_reader(struct v8_namer *n, v8_mem_reader read, void *ud);

/* Names count frames of (pid, gen), whose V8 has layout l, into out[0..out_cap): a compiled
 * frame may give several (inlined functions, innermost first), the others one each. *out_n
 * gets how many were written (frames that do not fit are left out). Each sym_frame has name,
 * file (NULL when unknown), start_line and line (0 when unknown), resolved = 1 when named; the
 * strings stay valid until v8_namer_end_batch (stub frames' names: while l lives), so several
 * calls may name the samples of one batch. -1 only on allocation failure. */
NP_MUST_CHECK int v8_namer_frames(struct v8_namer *n, uint32_t pid, uint32_t gen, const struct v8_layout *l,
				  const struct v8_frame *in, size_t count, struct sym_frame *out, size_t out_cap,
				  size_t *out_n, struct np_err *err);

/* Drops the cache when it is over its budget. */
void v8_namer_end_batch(struct v8_namer *n);

struct v8_namer_stats {
	size_t entries, bytes; /* objects cached, bytes held */
	size_t budget;	       /* bytes it may hold (v8_namer_new's) */
	uint64_t reads;        /* objects read from process memory */
	uint64_t failed;       /* frames named "[unknown js]" because an object could not be read */
	uint64_t stale;        /* ... because the object at the address is no longer the one sampled */
};
void v8_namer_stats(const struct v8_namer *n, struct v8_namer_stats *out);

/* ---- decoders, exported for the fuzz targets and tests ---- */

/* V8's source position table (src/codegen/source-position-table.cc): the source position (the
 * raw 64-bit SourcePosition) in effect at code_offset, or -1 when the table is malformed or
 * has no entry at or before it. */
int v8_spt_lookup(const uint8_t *table, size_t len, uint64_t code_offset, uint64_t *pos);
/* SourcePosition's fields (src/codegen/source-position.h). */
static inline int v8_pos_external(uint64_t pos)
{
	return (int)(pos & 1);
}
/* The script offset, -1 when unknown (kNoSourcePosition). */
static inline int64_t v8_pos_script_offset(uint64_t pos)
{
	return (int64_t)((pos >> 1) & ((1u << 30) - 1)) - 1;
}
/* The inlining id + 1: 0 when the position is not in an inlined function. */
static inline uint32_t v8_pos_inlining(uint64_t pos)
{
	return (uint32_t)((pos >> 31) & 0xffff);
}
/* Baseline code's pc to bytecode offset (v8/v8:src/baseline/bytecode-offset-iterator.cc): table
 * is the code's bytecode offset table (unsigned VLQs: the pc length of the function's entry,
 * then of each bytecode in order), bc the bytecodes, sizes/count V8's kBytecodeSizes. 0 and
 * *out (-1: the function's entry), or -1 when the tables do not reach pc_offset. */
int v8_baseline_offset(const uint8_t *table, size_t table_len, const uint8_t *bc, size_t bc_len,
		       const uint8_t (*sizes)[256], uint32_t count, uint64_t pc_offset, int64_t *out);
/* The 1-based line of a script offset given the line ends (offsets of each line's terminator),
 * 0 when unknown. */
uint32_t v8_line_at(const uint32_t *ends, size_t n, int64_t offset);

#endif
