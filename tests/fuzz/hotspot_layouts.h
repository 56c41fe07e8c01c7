/* The offsets hs_names_layout_from_vm gives for Debian's OpenJDK 17.0.15 and Temurin 25.0.3,
 * shared by the namer's unit test (tests/unit/test_hotspot_namer.c) and fuzz target
 * (tests/fuzz/fuzz_hotspot_namer.c), which build memory images in these shapes. */
#ifndef NP_TESTS_FUZZ_HOTSPOT_LAYOUTS_H
#define NP_TESTS_FUZZ_HOTSPOT_LAYOUTS_H

#include <string.h>

#include "agent/runtime/hotspot/namer.h"

/* Offsets as JDK 17 has them (hs_names_layout_from_vm's output for Debian's 17.0.15). */
static inline void layout17(struct hs_names_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->major = 17;
	l->method_size = 88;
	l->cm_size = 48;
	l->cp_size = 72;
	l->ik_size = 464;
	l->nm_size = 352;
	l->pc_size = 16;
	l->cb_size_of = 104;
	l->method_const_method = (struct hs_field){ 8, 8 };
	l->cm_constants = (struct hs_field){ 8, 8 };
	l->cm_size_words = (struct hs_field){ 24, 4 };
	l->cm_flags = (struct hs_field){ 28, 2 };
	l->cm_code_size = (struct hs_field){ 32, 2 };
	l->cm_name_index = (struct hs_field){ 34, 2 };
	l->cm_signature_index = (struct hs_field){ 36, 2 };
	l->cm_has_linenumber_table = 1;
	l->cp_pool_holder = (struct hs_field){ 24, 8 };
	l->cp_source_file_index = (struct hs_field){ 54, 2 };
	l->cp_length = (struct hs_field){ 60, 4 };
	l->ik_constants = (struct hs_field){ 232, 8 };
	l->ik_source_file_index = (struct hs_field){ HS_NONE, 0 };
	l->klass_name = (struct hs_field){ 24, 8 };
	l->sym_length = (struct hs_field){ 4, 2 };
	l->sym_body = (struct hs_field){ 6, 1 };
	l->cb_size = (struct hs_field){ 12, 4 };
	l->cb_code_begin = (struct hs_field){ 32, 8 };
	l->cb_name = (struct hs_field){ 96, 8 };
	l->nm_layout = HS_NM_OFFSETS;
	l->nm_method = (struct hs_field){ 112, 8 };
	l->nm_scopes_data = (struct hs_field){ 120, 8 };
	l->nm_scopes_data_is_ptr = 1;
	l->nm_metadata_offset = (struct hs_field){ 260, 4 };
	l->nm_scopes_pcs_offset = (struct hs_field){ 268, 4 };
	l->nm_dependencies_offset = (struct hs_field){ 272, 4 };
	l->nm_compile_id = (struct hs_field){ 304, 4 };
	l->nm_state = (struct hs_field){ 315, 1 };
	l->pc_pc_offset = (struct hs_field){ 0, 4 };
	l->pc_scope_decode_offset = (struct hs_field){ 4, 4 };
	l->cb_mutable_data.off = HS_NONE;
}

/* JDK 25's (Temurin 25.0.3). */
static inline void layout25(struct hs_names_layout *l)
{
	layout17(l);
	l->major = 25;
	l->u5_x = 1;
	l->cm_size = 56;
	l->cm_flags = (struct hs_field){ 28, 4 };
	l->cm_code_size = (struct hs_field){ 34, 2 };
	l->cm_name_index = (struct hs_field){ 36, 2 };
	l->cm_signature_index = (struct hs_field){ 38, 2 };
	l->ik_size = 472;
	l->ik_constants = (struct hs_field){ 224, 8 };
	l->nm_size = 224;
	l->cb_size_of = 64;
	l->cb_name = (struct hs_field){ 8, 8 };
	l->cb_mutable_data = (struct hs_field){ 16, 8 };
	l->cb_size = (struct hs_field){ 24, 4 };
	l->cb_relocation_size = (struct hs_field){ 28, 4 };
	l->cb_code_begin = (struct hs_field){ 36, 4 };
	l->cb_code_is_offset = 1;
	l->cb_data_offset = (struct hs_field){ 40, 4 };
	l->cb_mutable_data_size = (struct hs_field){ 48, 4 };
	l->nm_layout = HS_NM_IMMUTABLE;
	l->nm_method = (struct hs_field){ 80, 8 };
	l->nm_immutable_data = (struct hs_field){ 96, 8 };
	l->nm_immutable_data_size = (struct hs_field){ 160, 4 };
	l->nm_scopes_pcs_offset = (struct hs_field){ 196, 4 };
	l->nm_scopes_data = (struct hs_field){ 200, 4 };
	l->nm_scopes_data_is_ptr = 0;
	l->nm_compile_id = (struct hs_field){ 212, 4 };
	l->nm_state = (struct hs_field){ 219, 1 };
	l->nm_metadata_offset.off = HS_NONE;
	l->nm_dependencies_offset.off = HS_NONE;
}

#endif
