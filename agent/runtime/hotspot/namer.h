/* Naming Java frames from a JVM's memory: an interpreted frame's Method* and bytecode index,
 * or a compiled frame's nmethod and pc, become "pkg.Class.method" frames (Alloy's format,
 * docs/specs/hotspot.md §3) with the class's source file, the method's first line and the
 * line of the bytecode executing; a compiled frame expands to one frame per inlined method
 * from the nmethod's debug scopes, leaf first.
 *
 * Identity: methods get compiled, recompiled, deoptimised and unloaded while samples wait to
 * be named. A compiled frame is named only when the nmethod at that address still has the
 * compile id the walker saw (compile ids are never reused) and is not unloaded; an
 * interpreted frame only when its Method* still points to the ConstMethod the walker saw
 * (when the walker gives it) and the method's holder class points back at its constant
 * pool. Otherwise the frame is "[unknown java]" and counted (stale), never another method's
 * name. Memory that cannot be read gives "[unknown java]" too (failed).
 *
 * Cache: methods by (pid, gen, Method*), nmethods by (pid, gen, nmethod, compile id), kept
 * until the cache is over its budget at the end of a batch, when everything is dropped and
 * read again on demand. Everything read is untrusted: lengths and counts are bounded, names
 * become valid UTF-8. One thread at a time. */
#ifndef NP_HOTSPOT_NAMER_H
#define NP_HOTSPOT_NAMER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/hotspot/vmstructs.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

#define HS_NONE UINT32_MAX

/* A field of a JVM structure: its offset and width in bytes (1, 2, 4 or 8, from the type the
 * JVM declares for it); off HS_NONE when this JVM has no such field. */
struct hs_field {
	uint32_t off;
	uint8_t width;
};

/* How a JVM's code blobs and nmethods keep their debug information (docs/specs/hotspot.md §2). */
enum hs_nmethod_layout {
	HS_NM_OFFSETS = 1, /* JDK 8-22: metadata, scopes and PcDescs inside the nmethod, by offsets */
	HS_NM_IMMUTABLE,   /* JDK 23+: scopes and PcDescs in _immutable_data, metadata after the code */
};

/* What the namer reads, from the JVM's vmstructs (hs_names_layout_from_vm). Sizes are the
 * JVM's sizeof of each class; all at most HS_STRUCT_MAX. */
struct hs_names_layout {
	unsigned major; /* Java feature release, 0 unknown */
	uint8_t u5_x;	/* UNSIGNED5's excluded bytes: 0 before JDK 20, 1 after (the 0 byte) */
	uint32_t method_size, cm_size, cp_size, ik_size, nm_size, pc_size, cb_size_of;
	struct hs_field method_const_method;
	struct hs_field cm_constants, cm_code_size, cm_flags, cm_name_index, cm_signature_index, cm_size_words;
	uint32_t cm_has_linenumber_table; /* the flag bit */
	struct hs_field cp_pool_holder, cp_length, cp_source_file_index; /* the last: JDK 14+ */
	struct hs_field ik_constants, ik_source_file_index;		  /* the last: JDK 8-13 */
	struct hs_field klass_name;
	struct hs_field sym_length, sym_body;
	struct hs_field cb_name, cb_size;
	/* JDK 8-22: _code_begin (a pointer); JDK 23+: _code_offset (from the blob's start). */
	struct hs_field cb_code_begin;
	int cb_code_is_offset;
	int nm_layout;
	struct hs_field nm_method, nm_compile_id, nm_state;
	/* HS_NM_OFFSETS: offsets from the nmethod's start; scopes data is a pointer where
	 * nm_scopes_data_is_ptr (JDK 9-22, CompiledMethod::_scopes_data_begin). */
	struct hs_field nm_metadata_offset, nm_scopes_data, nm_scopes_pcs_offset, nm_dependencies_offset;
	int nm_scopes_data_is_ptr;
	/* HS_NM_IMMUTABLE */
	struct hs_field nm_immutable_data, nm_immutable_data_size, cb_data_offset;
	struct hs_field cb_mutable_data, cb_mutable_data_size, cb_relocation_size; /* JDK 25+ */
	struct hs_field pc_pc_offset, pc_scope_decode_offset;
};

/* The largest JVM class the namer reads whole (InstanceKlass is ~470 bytes). */
#define HS_STRUCT_MAX 4096u
/* The longest class, method or signature name kept (bytes); longer ones are cut. */
#define HS_NAME_MAX 1024
/* The largest line number table, and nmethod debug data (metadata + scopes + PcDescs), read. */
#define HS_LINETABLE_MAX ((size_t)64 << 10)
#define HS_DEBUG_MAX ((size_t)1 << 20)
/* Inlining deeper than this is cut (C2's MaxInlineLevel is 15). */
#define HS_MAX_SCOPES 64
/* The cache's budget; 0 = HS_NAMER_DEFAULT_BYTES. */
#define HS_NAMER_DEFAULT_BYTES ((size_t)16 << 20)
#define HS_UNKNOWN_JAVA "[unknown java]"

/* Fills l from the JVM's vmstructs (major: hs_jvm.major). -1 with why set when a structure
 * the namer needs is not described, or larger than HS_STRUCT_MAX. */
int hs_names_layout_from_vm(const struct hs_vm *vm, unsigned major, struct hs_names_layout *l, char *why,
			    size_t why_len);

struct hs_namer;

NP_MUST_CHECK int hs_namer_new(size_t budget_bytes, struct hs_namer **out, struct np_err *err);
void hs_namer_free(struct hs_namer *n);
/* Where memory is read from: hs_process_mem by default; tests and fuzzers give an image. */
void hs_namer_set_reader(struct hs_namer *n, hs_mem_reader read, void *ud);

/* An interpreted frame: the Method*, the bytecode index (-1 unknown: the frame gets the
 * method's first line), and what the sample saw of the method, which it must still be: its
 * ConstMethod* and/or its identity (np_hs_method_check of bpf/hotspot.h, as the BPF walker
 * records it). 0 for either means not seen; with neither, the namer can only check that the
 * method is consistent now, counted as unverified. */
struct hs_interp_frame {
	uint64_t method;
	int32_t bci;
	uint64_t const_method;
	uint64_t identity;
};
/* Names one interpreted frame of (pid, gen) into *out (name, file, start_line, line; module
 * NULL, addr = method). Strings stay valid until the next hs_namer_* call. -1 only on
 * allocation failure. */
NP_MUST_CHECK int hs_namer_interpreted(struct hs_namer *n, uint32_t pid, uint32_t gen,
				       const struct hs_names_layout *l, const struct hs_interp_frame *f,
				       struct sym_frame *out, struct np_err *err);

/* A compiled frame: the nmethod's address, the pc (the sampled pc for the leaf, the return
 * address for callers: both as seen on the stack, not minus one) and the nmethod's compile
 * id as the walker read it. */
struct hs_compiled_frame {
	uint64_t nmethod, pc;
	uint32_t compile_id;
};
/* Names one compiled frame into out[0..*count) (at most cap; the innermost inlined method
 * first, the nmethod's own method last). A stale or unreadable frame is one "[unknown java]".
 * Strings stay valid until the next hs_namer_* call. -1 only on allocation failure. */
NP_MUST_CHECK int hs_namer_compiled(struct hs_namer *n, uint32_t pid, uint32_t gen, const struct hs_names_layout *l,
				    const struct hs_compiled_frame *f, struct sym_frame *out, size_t cap,
				    size_t *count, struct np_err *err);

/* The nmethod at addr as it is now, for harnesses and the tracker: its compile id and
 * whether it is one (its CodeBlob name is "nmethod", or "native nmethod" for a native
 * method's wrapper). 0, or -1 when unreadable or not one. */
int hs_namer_read_compile_id(struct hs_namer *n, uint32_t pid, const struct hs_names_layout *l, uint64_t addr,
			     uint32_t *compile_id);

/* The pcs at which the nmethod (with compile_id) records debug information (its PcDescs,
 * absolute, in their order), for harnesses to name every scope: *count at most cap, 0 when
 * the nmethod is stale or unreadable. -1 only on allocation failure. */
NP_MUST_CHECK int hs_namer_nmethod_pcs(struct hs_namer *n, uint32_t pid, uint32_t gen,
				       const struct hs_names_layout *l, uint64_t nmethod, uint32_t compile_id,
				       uint64_t *pcs, size_t cap, size_t *count, struct np_err *err);

/* Drops the cache when it is over its budget. */
void hs_namer_end_batch(struct hs_namer *n);

struct hs_namer_stats {
	size_t methods, nmethods, bytes; /* entries cached, bytes held */
	size_t budget;			 /* bytes it may hold (hs_namer_new's) */
	uint64_t reads;			 /* methods and nmethods read */
	uint64_t failed;		 /* frames whose memory could not be read or made no sense */
	uint64_t stale;			 /* frames whose identity no longer matched */
	uint64_t unverified;		 /* interpreted frames named with nothing recorded to check */
	uint64_t interpreted, compiled, inlined; /* frames named, by kind (inlined: the extra frames) */
	uint64_t clears;			  /* times the cache was dropped for its budget */
};
void hs_namer_stats(const struct hs_namer *n, struct hs_namer_stats *out);

/* Decoders of the JVM's compressed streams, exposed for the unit tests and fuzzers.
 * UNSIGNED5 (openjdk/jdk:src/hotspot/share/utilities/unsigned5.hpp; x = excluded bytes):
 * the value at *pos of buf[0..len), *pos advanced; -1 when it runs past len or uses an
 * excluded byte. */
int hs_u5_read(const uint8_t *buf, size_t len, size_t *pos, uint8_t x, uint32_t *out);
/* The line of bci in a compressed line number table (Method::line_number_from_bci), and the
 * smallest line in it (the start line) in *first; 0 when unknown. */
unsigned hs_line_at(const uint8_t *table, size_t len, uint8_t x, int32_t bci, uint32_t code_size, unsigned *first);
/* "void pkg.Class.method(int, java.lang.String)" from class "pkg/Class", method and
 * signature "(ILjava/lang/String;)V", into out (NUL-terminated, cut to cap). 0, or -1 when the
 * signature is malformed (out gets "pkg.Class.method"). hidden: mask a hidden class's
 * address ("Foo$$Lambda+0x0000000800c01000" becomes "Foo$$Lambda+<hidden>"). */
int hs_format_method(const char *klass, const char *method, const char *signature, int hidden, char *out,
		     size_t cap);

#endif
