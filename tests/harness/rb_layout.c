/* Prints what agent/runtime/ruby/detect.c knows of a Ruby version's layout, for
 * tests/integration/test_ruby_layout.py to hold against that version's headers
 * (tests/ruby/layout_probe.c):
 *
 *   rb_layout MAJOR.MINOR   the table's layout as JSON, with the field names of struct rb_layout
 *
 * Exit status 1 with a message on stderr when the table has no such version. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/ruby/detect.h"

int main(int argc, char **argv)
{
	const struct rb_layout *l;
	unsigned major, minor;

	if (argc != 2 || sscanf(argv[1], "%u.%u", &major, &minor) != 2) {
		fprintf(stderr, "usage: rb_layout MAJOR.MINOR\n");
		return 2;
	}
	if (!(l = rb_layout_table(major, minor))) {
		fprintf(stderr, "rb_layout: no layout for Ruby %u.%u\n", major, minor);
		return 1;
	}
#define F(name) printf("%s\"" #name "\": %llu", first ? "" : ", ", (unsigned long long)l->name), first = 0
	int first = 1;
	printf("{");
	F(major);
	F(minor);
	F(ractors);
	F(ractor_running_ec);
	F(ec_vm_stack);
	F(ec_vm_stack_size);
	F(ec_cfp);
	F(ec_stack_start);
	F(ec_stack_maxsize);
	F(cfp_pc);
	F(cfp_iseq);
	F(cfp_ep);
	F(cfp_size);
	F(frame_magic_mask);
	F(frame_magic_dummy);
	F(iseq_body);
	F(body_encoded);
	F(vm_ractor_set);
	F(ractor_vmlr_node);
	F(body_type);
	F(body_iseq_size);
	F(body_location);
	F(loc_pathobj);
	F(loc_base_label);
	F(loc_label);
	F(loc_first_lineno);
	F(body_insns_info);
	F(body_insns_info_positions);
	F(body_insns_info_size);
	F(body_succ_index_table);
	F(insn_info_entry_size);
	F(insn_info_line_no);
	F(line_table);
	F(insn_info_position);
	F(me_def);
	F(me_owner);
	F(def_original_id);
	F(class_names);
	F(fl_singleton);
	F(class_ext);
	F(ext_iv_tbl);
	F(ext_classpath);
	F(ext_attached);
	F(ext_iv_ptr);
	F(vm_shape_list);
	F(shape_size);
	F(shape_edge_name);
	F(shape_next_iv_index);
	F(shape_type);
	F(shape_parent_id);
	F(shape_id_shift);
	F(shape_ivar);
	F(st_entries_start);
	F(st_entries_bound);
	F(st_entries);
	F(st_entry_size);
	F(str_noembed);
	F(str_embed_len_shift);
	F(str_embed_len_mask);
	F(str_embed_ary);
	F(str_heap_len);
	F(str_heap_ptr);
	F(str_len);
	F(ary_embed);
	F(ary_embed_len_shift);
	F(ary_embed_len_mask);
	F(ary_embed_ary);
	F(ary_heap_len);
	F(ary_heap_ptr);
	F(symbols_ids);
	F(last_op_id);
	printf("}\n");
	return 0;
}
