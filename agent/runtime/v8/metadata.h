/* V8's layout from its postmortem metadata: the v8dbg_* symbols that node and libnode export
 * (one int each: class field offsets, instance type tags, frame constants, tagging constants),
 * written by V8's tools/gen-postmortem-metadata.py at build time. They are read per binary
 * from the file's data at those symbols (never a table per Node build) into a v8_meta, and a
 * v8_layout is derived from it: the offsets the namer and a walker use, each taken from the
 * metadata, or, for the few fields some V8 versions do not describe, from a rule written down
 * in docs/specs/v8.md §3 with the versions it holds for. A binary that lacks something the
 * layout needs is refused with a message naming the missing symbols.
 *
 * Everything here is plain data: one thread at a time per object, no process memory. */
#ifndef NP_V8_METADATA_H
#define NP_V8_METADATA_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/elf_file.h"
#include "lib/error.h"
#include "lib/intern.h"

/* Node 20 exports 531 of them; a file claiming many more is not a V8 we read. */
#define V8_META_MAX 8192
#define V8_META_NAME_MAX 160
/* The largest frame type number kept (V8 has about 30). */
#define V8_FRAME_TYPES 64
#define V8_NONE 0xffffffffu

/* The metadata: name (without "v8dbg_") -> value. */
struct v8_meta {
	struct np_intern names; /* id - 1 indexes values */
	int32_t *values;
	size_t cap;
	size_t refused; /* names too long or past V8_META_MAX */
};

void v8_meta_init(struct v8_meta *m);
void v8_meta_free(struct v8_meta *m);
/* Adds one symbol, name with or without the "v8dbg_" prefix; a later value for the same name
 * replaces the earlier. Names longer than V8_META_NAME_MAX or past V8_META_MAX are counted
 * in refused and dropped. -1 only on allocation failure. */
NP_MUST_CHECK int v8_meta_add(struct v8_meta *m, const char *name, int32_t value, struct np_err *err);
/* 0 and *out, or -1 when the binary does not export name. */
int v8_meta_get(const struct v8_meta *m, const char *name, int32_t *out);
size_t v8_meta_count(const struct v8_meta *m);

/* Reads every v8dbg_* symbol of an ELF file (.dynsym, else .symtab) with its 4-byte value at
 * that address in the file. *found gets how many; 0 means the file is not a V8 with
 * postmortem metadata. -1 only on allocation failure. */
NP_MUST_CHECK int v8_meta_read_elf(Elf *e, int fd, const struct sym_elf_info *info, struct v8_meta *m,
				   size_t *found, struct np_err *err);

/* V8's version (v8::internal::Version::major_ etc.), 0.0.0 when the file does not say. */
struct v8_version {
	uint32_t major, minor, build, patch;
};
#define V8_VER(a, b, c) (((uint64_t)(a) << 32) | ((uint64_t)(b) << 16) | (uint64_t)(c))
static inline uint64_t v8_version_num(const struct v8_version *v)
{
	return V8_VER(v->major, v->minor, v->build);
}

/* Everything the namer (and a frame walker) reads, in bytes from the object's untagged start
 * unless said otherwise. */
struct v8_layout {
	struct v8_version version;
	/* Tagging: a heap object pointer p has (p & heap_object_tag_mask) == heap_object_tag; a
	 * Smi has (v & smi_tag_mask) == smi_tag and value v >> smi_shift (arithmetic). */
	uint32_t tagged_size, pointer_size;
	int compressed; /* pointer compression: tagged fields are 32-bit offsets in a 4 GiB cage */
	uint32_t heap_object_tag, heap_object_tag_mask, smi_tag, smi_tag_mask, smi_shift;

	/* Instance types (Map::instance_type). */
	uint32_t first_nonstring_type;
	uint32_t string_repr_mask, string_enc_mask, seq_tag, cons_tag, sliced_tag, thin_tag, external_tag;
	uint32_t one_byte_tag, two_byte_tag;
	uint32_t type_js_function_first, type_js_function_last; /* JSFunction and its subclasses */
	uint32_t type_sfi, type_script, type_scope_info, type_bytecode_array, type_byte_array;
	uint32_t type_fixed_array, type_code, type_interpreter_data;

	/* Field offsets. */
	uint32_t heap_object_map, map_instance_type;
	uint32_t string_length, seq_one_byte_chars, seq_two_byte_chars;
	uint32_t cons_first, cons_second, sliced_parent, sliced_offset, thin_actual;
	uint32_t fixed_array_length, fixed_array_data;
	uint32_t js_function_shared, js_function_code;
	uint32_t sfi_name_or_scope_info, sfi_function_data, sfi_script_or_debug_info;
	/* SharedFunctionInfo::flags (u32), V8_NONE when not described: its low 5 bits are the
	 * FunctionKind, 1 and 2 a module's top level (v8/v8:src/objects/function-kind.h). */
	uint32_t sfi_flags;
	uint32_t script_name, script_source, script_line_ends;
	/* ScopeInfo: its slots start at scope_info_slots; the function name follows the header
	 * slots (first_vars) and the context locals (count in slot ncontextlocals). */
	uint32_t scope_info_slots, scope_info_first_vars, scope_info_ncontextlocals;
	int scope_info_fixed_positions; /* V8 >= 12.8.44: start/end position in slots 3 and 4 */
	uint32_t bytecode_array_data, bytecode_array_spt;
	uint32_t interpreter_data_bytecode;
	uint32_t code_deopt_data, code_spt, code_bytecode_or_interpreter_data, code_bytecode_offset_table;
	/* For a walker: where a Code object's instructions are and what kind it is. The
	 * instruction start is a pointer field since V8 11.1.204, before it the instructions
	 * follow the header at that offset. kind = (flags >> shift) & mask. */
	uint32_t code_instruction_start, code_instruction_size, code_flags;
	int code_instruction_start_is_pointer;
	uint32_t code_kind_mask, code_kind_shift, code_kind_baseline;
	/* DeoptimizationData indexes (a FixedArray). */
	uint32_t deopt_inlined_count, deopt_literal_array, deopt_sfi, deopt_inlining_positions;

	/* Frame slots, in bytes from the frame pointer (negative below it). */
	int32_t fp_function, fp_context, fp_bytecode_array, fp_bytecode_offset;
	/* The size of each bytecode at each operand scale (single, wide, extra wide), prefix not
	 * included: V8's Bytecodes::kBytecodeSizes, read from the binary by detect.c (0 bytecodes
	 * when it is not there). For baseline frames: their pc maps to a bytecode by walking the
	 * bytecodes. */
	uint32_t bytecode_count;
	uint8_t bytecode_sizes[3][256];
	/* Frame type marker -> name ("V8::ExitFrame", as OTel's nodev8 names them), "" when V8 does not describe it. */
	char frame_type[V8_FRAME_TYPES][64];
};

/* Derives the layout from the metadata of a V8 of version ver. 0, or -1 with why naming every
 * symbol that is missing (or a value that is out of range). */
int v8_layout_from_meta(const struct v8_meta *m, const struct v8_version *ver, struct v8_layout *out, char *why,
			size_t why_len);

#endif
