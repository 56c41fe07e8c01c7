/* The offsets of a Ruby version's internal structures (vm_core.h, ractor_core.h, iseq.h,
 * method.h, internal/class.h, symbol.h, id.h: not installed by any package) that the Ruby walker
 * and namer read, with the field names of struct rb_layout (agent/runtime/ruby/detect.h), as
 * JSON. Compiled by tests/ruby/gen_layouts.py against one version's internal headers, with the
 * installed ruby3.1-dev public headers and config.h standing in for that version's own (so only
 * versions whose internal headers compile against them can be derived; the public-header fields,
 * RString, RArray and st_table, are tests/ruby/layout_probe.c's, checked against ruby3.1-dev). */
#include <stddef.h>
#include <stdio.h>

#include "vm_core.h"
#include "iseq.h"
#include "method.h"
#include "symbol.h"
#if __has_include("ractor_core.h") /* 3.0 and later; 2.x keep RClass in internal.h */
#include "internal/class.h"
#include "ractor_core.h"
#define RACTORS 1
#else
#define RACTORS 0
#endif

#ifdef RB_SYMBOLS_IN_SYMBOL_C
/* 2.5 and 2.6 keep their symbol table's structure private to symbol.c (static struct symbols
 * global_symbols; 2.7 moved it to symbol.h as rb_symbols_t with the same fields): as symbol.c
 * declares it at v2_5_0 and v2_6_0 (the same four fields in both; rbspy's ruby_version.rs
 * declares the same for its 2.5 and 2.6 readers), the only structure here not taken from a
 * header. */
typedef struct {
	rb_id_serial_t last_id;
	st_table *str_sym;
	VALUE ids;
	VALUE dsymbol_fstr_hash;
} rb_symbols_t;
#endif

/* The constants bpf/ruby.h and namer.c take as the same in every version they walk (the magic
 * mask and the dummy frame's magic differ: 2.5's are 0xffff0001 and 0x99990001, 2.6 narrowed
 * them to 0x7fff0001 and 0x79990001; they are the layout's frame_magic_mask and
 * frame_magic_dummy). A C method's magic must read the same through either mask. */
_Static_assert(VM_FRAME_MAGIC_CFUNC == 0x55550001 && (VM_FRAME_MAGIC_CFUNC & VM_FRAME_MAGIC_MASK) == 0x55550001,
	       "frame magics");
_Static_assert(VM_FRAME_FLAG_FINISH == 0x20 && VM_FRAME_FLAG_CFRAME == 0x80 && VM_ENV_FLAG_LOCAL == 0x2,
	       "frame and environment flags");
_Static_assert(VM_ENV_DATA_INDEX_ME_CREF == -2 && VM_ENV_DATA_INDEX_SPECVAL == -1 && VM_ENV_DATA_INDEX_FLAGS == 0,
	       "environment data");
_Static_assert(imemo_svar == 2 && imemo_ment == 6 && imemo_iseq == 7, "imemo types");
_Static_assert(ID_SCOPE_SHIFT == 4, "an ID's serial");

/* struct rb_layout's class_names (agent/runtime/ruby/detect.h's enum rb_class_names). */
enum { RB_NAMES_NONE, RB_NAMES_IVARS, RB_NAMES_FIELDS, RB_NAMES_SHAPES };
/* struct rb_layout's line_table (detect.h's enum rb_line_table). */
enum { RB_LINES_INDEXED, RB_LINES_IN_ENTRIES };

#define F(name, value) printf(", \"%s\": %zu", name, (size_t)(value))

int main(void)
{
	printf("{\"cfp_size\": %zu", sizeof(rb_control_frame_t));
	F("ractors", RACTORS);
#if RACTORS
	F("ractor_running_ec", offsetof(rb_ractor_t, threads.running_ec));
	F("ractor_vmlr_node", offsetof(rb_ractor_t, vmlr_node));
	F("vm_ractor_set", offsetof(rb_vm_t, ractor.set));
#else
	/* No ractors: the running context is the global ruby_current_execution_context_ptr. */
	F("ractor_running_ec", 0);
	F("ractor_vmlr_node", 0);
	F("vm_ractor_set", 0);
#endif
	F("ec_vm_stack", offsetof(rb_execution_context_t, vm_stack));
	F("ec_vm_stack_size", offsetof(rb_execution_context_t, vm_stack_size));
	F("ec_cfp", offsetof(rb_execution_context_t, cfp));
	F("ec_stack_start", offsetof(rb_execution_context_t, machine.stack_start));
	F("ec_stack_maxsize", offsetof(rb_execution_context_t, machine.stack_maxsize));
	F("cfp_pc", offsetof(rb_control_frame_t, pc));
	F("cfp_iseq", offsetof(rb_control_frame_t, iseq));
	F("cfp_ep", offsetof(rb_control_frame_t, ep));
	F("frame_magic_mask", VM_FRAME_MAGIC_MASK);
	F("frame_magic_dummy", VM_FRAME_MAGIC_DUMMY);
	F("iseq_body", offsetof(rb_iseq_t, body));
	F("body_encoded", offsetof(struct rb_iseq_constant_body, iseq_encoded));
	F("body_type", offsetof(struct rb_iseq_constant_body, type));
	F("body_iseq_size", offsetof(struct rb_iseq_constant_body, iseq_size));
	F("body_location", offsetof(struct rb_iseq_constant_body, location));
	F("loc_pathobj", offsetof(rb_iseq_location_t, pathobj));
	F("loc_base_label", offsetof(rb_iseq_location_t, base_label));
	F("loc_label", offsetof(rb_iseq_location_t, label));
	F("loc_first_lineno", offsetof(rb_iseq_location_t, first_lineno));
#ifdef RB_ENTRY_POSITIONS
	/* 2.5: the body's insns_info array and its insns_info_size; each entry holds the position
	 * of the instruction it starts at (no positions array, no succinct index). */
	F("line_table", RB_LINES_IN_ENTRIES);
	F("body_insns_info", offsetof(struct rb_iseq_constant_body, insns_info));
	F("body_insns_info_positions", 0);
	F("body_insns_info_size", offsetof(struct rb_iseq_constant_body, insns_info_size));
	F("body_succ_index_table", 0);
	F("insn_info_position", offsetof(struct iseq_insn_info_entry, position));
	_Static_assert(sizeof(((struct iseq_insn_info_entry *)0)->position) == 4, "a u32 position");
#else
	F("line_table", RB_LINES_INDEXED);
	F("body_insns_info", offsetof(struct rb_iseq_constant_body, insns_info.body));
	F("body_insns_info_positions", offsetof(struct rb_iseq_constant_body, insns_info.positions));
	F("body_insns_info_size", offsetof(struct rb_iseq_constant_body, insns_info.size));
	F("body_succ_index_table", offsetof(struct rb_iseq_constant_body, insns_info.succ_index_table));
	F("insn_info_position", 0);
#endif
	F("insn_info_entry_size", sizeof(struct iseq_insn_info_entry));
	F("insn_info_line_no", offsetof(struct iseq_insn_info_entry, line_no));
	F("me_def", offsetof(rb_method_entry_t, def));
	F("me_owner", offsetof(rb_method_entry_t, owner));
	F("def_original_id", offsetof(rb_method_definition_t, original_id));
#if defined(RCLASS_ATTACHED_OBJECT)
	/* 3.3 and later: the extension follows struct RClass and holds the name and a singleton
	 * class's object itself. */
	F("class_names", RB_NAMES_FIELDS);
	F("class_ext", sizeof(struct RClass));
	F("ext_iv_tbl", 0);
	F("ext_classpath", offsetof(rb_classext_t, classpath));
	F("ext_attached", offsetof(rb_classext_t, as.singleton_class.attached_object));
#elif defined(RCLASS_IVPTR)
	/* 3.2: the instance variables are kept by object shape. */
	_Static_assert(SHAPE_IN_BASIC_FLAGS, "the shape id in the flags");
	F("class_names", RB_NAMES_SHAPES);
#if RCLASS_EXT_EMBEDDED
	F("class_ext", sizeof(struct RClass));
#else
	F("class_ext", offsetof(struct RClass, ptr));
#endif
	F("ext_iv_tbl", 0);
	F("ext_classpath", 0);
	F("ext_attached", 0);
	F("ext_iv_ptr", offsetof(rb_classext_t, iv_ptr));
	F("vm_shape_list", offsetof(rb_vm_t, shape_list));
	F("shape_size", sizeof(rb_shape_t));
	F("shape_edge_name", offsetof(rb_shape_t, edge_name));
	F("shape_next_iv_index", offsetof(rb_shape_t, next_iv_index));
	F("shape_type", offsetof(rb_shape_t, type));
	F("shape_parent_id", offsetof(rb_shape_t, parent_id));
	F("shape_id_shift", SHAPE_FLAG_SHIFT);
	F("shape_ivar", SHAPE_IVAR);
#else
	F("class_names", RB_NAMES_IVARS);
	F("class_ext", offsetof(struct RClass, ptr));
	F("ext_iv_tbl", offsetof(rb_classext_t, iv_tbl));
	F("ext_classpath", 0);
	F("ext_attached", 0);
#endif
#if !defined(RCLASS_IVPTR) || defined(RCLASS_ATTACHED_OBJECT)
	F("ext_iv_ptr", 0);
	F("vm_shape_list", 0);
	F("shape_size", 0);
	F("shape_edge_name", 0);
	F("shape_next_iv_index", 0);
	F("shape_type", 0);
	F("shape_parent_id", 0);
	F("shape_id_shift", 0);
	F("shape_ivar", 0);
#endif
	F("symbols_ids", offsetof(rb_symbols_t, ids));
	F("last_op_id", tLAST_OP_ID);
	printf("}\n");
	return 0;
}
