/* Finding CRuby in a process: the file that holds the VM (libruby-X.Y.so, or a ruby executable
 * built without a shared library), its version, where the variables the walker and the namer
 * start from lie in the process, and the layout of the VM's structures for that version
 * (docs/specs/ruby.md says where each offset comes from). Files are reached the way the
 * symbolizer reaches them (inside the process's root, read with pread), so a container's Ruby is
 * found like the host's. */
#ifndef NP_RUBY_DETECT_H
#define NP_RUBY_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

/* How the namer finds a class's name (struct rb_layout's class_names). */
enum rb_class_names {
	/* None readable: a method is named without its class. */
	RB_NAMES_NONE = 0,
	/* 2.5 - 3.1: the __classpath__ and __attached__ instance variables, in the class
	 * extension's iv_tbl (an st_table). */
	RB_NAMES_IVARS = 1,
	/* 3.3, 3.4: the class extension's own fields, classpath and
	 * as.singleton_class.attached_object. */
	RB_NAMES_FIELDS = 2,
	/* 3.2: the same instance variables, kept by object shape: their values in the extension's
	 * iv_ptr array, indexed by the shape (in the class's flags) whose transition from its
	 * parent added each (the VM's shape_list). */
	RB_NAMES_SHAPES = 3,
};

/* Where an iseq's line table keeps the instruction position each entry starts at (struct
 * rb_layout's line_table). */
enum rb_line_table {
	/* 2.6 - 3.4: a succinct index of the positions (insns_info.succ_index_table), or, while
	 * it is not built, an array of them (insns_info.positions). */
	RB_LINES_INDEXED = 0,
	/* 2.5: in each entry (iseq_insn_info_entry.position, at insn_info_position), the entries
	 * sorted by it (body->insns_info, body->insns_info_size). */
	RB_LINES_IN_ENTRIES = 1,
};

/* A Ruby version's structure offsets and constants (x86-64). */
struct rb_layout {
	unsigned major, minor;
	/* 1: the running execution context is a ractor's (3.0 and later); 0: it is the global
	 * ruby_current_execution_context_ptr (2.x), and the ractor fields are 0. */
	uint32_t ractors;
	/* The walker's (bpf/ruby.h struct np_rb_proc). */
	uint32_t ractor_running_ec;
	uint32_t ec_vm_stack, ec_vm_stack_size, ec_cfp, ec_stack_start, ec_stack_maxsize;
	uint32_t cfp_pc, cfp_iseq, cfp_ep, cfp_size;
	/* VM_FRAME_MAGIC_MASK and VM_FRAME_MAGIC_DUMMY: 0xffff0001 and 0x99990001 in 2.5,
	 * 0x7fff0001 and 0x79990001 from 2.6 (a C method's magic reads the same through both). */
	uint32_t frame_magic_mask, frame_magic_dummy;
	uint32_t iseq_body, body_encoded;
	uint32_t vm_ractor_set, ractor_vmlr_node;
	/* The namer's: rb_iseq_constant_body and its rb_iseq_location_t. */
	uint32_t body_type, body_iseq_size, body_location;
	uint32_t loc_pathobj, loc_base_label, loc_label, loc_first_lineno;
	uint32_t body_insns_info, body_insns_info_positions, body_insns_info_size, body_succ_index_table;
	uint32_t insn_info_entry_size, insn_info_line_no;
	/* enum rb_line_table; RB_LINES_IN_ENTRIES: where an entry holds its position (u32). */
	uint32_t line_table, insn_info_position;
	/* rb_method_entry_t, rb_method_definition_t. */
	uint32_t me_def, me_owner, def_original_id;
	/* Where a class's name and a singleton class's object are (class_names, below). class_ext:
	 * RClass's pointer to its rb_classext_t (RB_NAMES_IVARS), or where the extension itself lies
	 * in the class (RB_NAMES_FIELDS, and 3.2's). ext_iv_tbl: the instance variables' st_table
	 * (__classpath__, __attached__) in the extension; ext_classpath, ext_attached: the fields
	 * holding them. Unused ones are 0. */
	uint32_t class_names;
	/* RUBY_FL_SINGLETON, a singleton class's flag: FL_USER0 to 3.3, FL_USER1 from 3.4. */
	uint64_t fl_singleton;
	uint32_t class_ext, ext_iv_tbl, ext_classpath, ext_attached;
	/* RB_NAMES_SHAPES: rb_classext_t.iv_ptr; rb_vm_t.shape_list; rb_shape_t's size and fields;
	 * where the shape id lies in the flags (SHAPE_FLAG_SHIFT) and SHAPE_IVAR. */
	uint32_t ext_iv_ptr, vm_shape_list, shape_size, shape_edge_name, shape_next_iv_index, shape_type,
		shape_parent_id, shape_id_shift, shape_ivar;
	uint32_t st_entries_start, st_entries_bound, st_entries, st_entry_size;
	/* RString and RArray: embedded or on the heap (flag), lengths and contents. str_len: where
	 * an embedded string's length is too (3.2 and later: as.embed.len, then RString.len, both at
	 * the heap length's offset); 0: it is in the flags (str_embed_len_shift, _mask). */
	uint64_t str_noembed;
	uint32_t str_embed_len_shift, str_embed_len_mask, str_embed_ary, str_heap_len, str_heap_ptr, str_len;
	uint64_t ary_embed;
	uint32_t ary_embed_len_shift, ary_embed_len_mask, ary_embed_ary, ary_heap_len, ary_heap_ptr;
	/* rb_symbols_t: the ID table (ids), and the last ID of the operator table (tLAST_OP_ID). */
	uint32_t symbols_ids;
	uint64_t last_op_id;
};

/* The layout of Ruby major.minor, NULL when this build of nodeprof has none (layout.c, generated
 * by tests/ruby/gen_layouts.py from each version's headers). */
const struct rb_layout *rb_layout_table(unsigned major, unsigned minor);

/* Why Ruby major.minor, which has no layout, is not walked: a static sentence. */
const char *rb_layout_refusal(unsigned major, unsigned minor);

/* Bytes of rb_iseq_constant_body the namer reads at once: location and line table lie in them. */
#define RB_BODY_HEAD 256

/* 1 when every offset the BPF walker takes fits its u16 fields and its read of a control frame
 * (bpf/ruby.h), and the namer's reads hold the fields it takes; 0 otherwise. */
int rb_layout_walkable(const struct rb_layout *l);

struct rb_interp {
	const struct rb_layout *layout; /* static */
	char version[16];		/* "3.1.2" */
	uint64_t single_ractor;		/* address of ruby_single_main_ractor (0 before 3.0) */
	uint64_t vm_ptr;		/* address of ruby_current_vm_ptr (0 before 3.0) */
	uint64_t ec_ptr;		/* address of ruby_current_execution_context_ptr (before 3.0, else 0) */
	uint64_t object_class;		/* address of rb_cObject (the variable) */
	uint64_t global_symbols;	/* address of the VM's symbol table (rb_symbols_t), 0: not found */
};

/* The version in a file name such as "libruby-3.1.so.3.1" or "libruby.so.3.3.0": 0, or -1 when
 * the name is not a Ruby library's. */
int rb_version_from_name(const char *path, unsigned *major, unsigned *minor);

/* The symbol table's address from the code of rb_id2str (code: its first bytes, at vaddr), which
 * reads the table's last ID and, 16 bytes on, its ID array: 0 when the code does not read so.
 * follow: where a first jump (e9) leads, for the caller to read there and call again. */
uint64_t rb_symbols_from_code(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *follow);

/* Looks for CRuby among the executable mappings of (pid, gen). 1: found, *out filled. 0: no CRuby
 * this profiler can walk; when the process does run one (of a version or build it cannot walk),
 * why[] says which and why, else why[0] is NUL. -1 only on allocation failure. */
NP_MUST_CHECK int rb_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct rb_interp *out, char *why,
			    size_t why_len, struct np_err *err);

#endif
