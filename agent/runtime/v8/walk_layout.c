/* The BPF V8 step's view of a process: see walk_layout.h. */
#include "agent/runtime/v8/walk_layout.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 3, 4))) static int fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* A frame slot (bytes from fp) as the step's word offset in [-NP_V8_BELOW, -1]. */
static int slot(int32_t bytes, int8_t *out)
{
	if (bytes % 8 || bytes >= 0 || bytes < -NP_V8_BELOW * 8)
		return -1;
	*out = (int8_t)(bytes / 8);
	return 0;
}

/* An object field the step reads from the first NP_V8_OBJ_READ bytes it copies. */
static int field(uint32_t off, uint32_t width, uint16_t *out)
{
	if (off == V8_NONE || off + width > NP_V8_OBJ_READ)
		return -1;
	*out = (uint16_t)off;
	return 0;
}

static int type16(uint32_t t, uint16_t *out)
{
	if (t == V8_NONE || t >= 0xffff)
		return -1;
	*out = (uint16_t)t;
	return 0;
}

int v8_walk_layout(const struct v8_proc *p, struct np_v8_proc *out, char *why, size_t why_len)
{
	const struct v8_layout *l = &p->layout;
	uint32_t tagged = l->tagged_size;

	memset(out, 0, sizeof(*out));
	if (why_len)
		why[0] = '\0';
	if (l->heap_object_tag != 1 || l->heap_object_tag_mask != 3 || l->smi_tag != 0 || l->smi_tag_mask != 1)
		return fail(why, why_len, "V8 %s tags heap objects %u/%u and Smis %u/%u (1/3 and 0/1 expected)", p->version,
			    l->heap_object_tag, l->heap_object_tag_mask, l->smi_tag, l->smi_tag_mask);
	if (l->pointer_size != 8 || (tagged != 4 && tagged != 8) || (tagged == 4) != !!l->compressed)
		return fail(why, why_len, "V8 %s has %u-byte pointers and %u-byte tagged fields", p->version,
			    l->pointer_size, tagged);
	if (l->smi_shift > 63)
		return fail(why, why_len, "V8 %s shifts Smis by %u", p->version, l->smi_shift);
	out->compressed = (uint8_t)!!l->compressed;
	out->smi_shift = (uint8_t)l->smi_shift;
	if (slot(l->fp_context, &out->fp_context) || slot(l->fp_function, &out->fp_function) ||
	    slot(l->fp_bytecode_array, &out->fp_bytecode_array) || slot(l->fp_bytecode_offset, &out->fp_bytecode_offset))
		return fail(why, why_len, "V8 %s keeps a frame slot beyond the %d words below fp the walker reads",
			    p->version, NP_V8_BELOW);
	if (l->map_instance_type == V8_NONE || l->map_instance_type > 0xffff || l->heap_object_map != 0)
		return fail(why, why_len, "V8 %s: Map::instance_type at %u, HeapObject::map at %u", p->version,
			    l->map_instance_type, l->heap_object_map);
	out->map_instance_type = (uint16_t)l->map_instance_type;
	if (field(l->js_function_shared, tagged, &out->js_function_shared) ||
	    field(l->js_function_code, tagged, &out->js_function_code))
		return fail(why, why_len, "V8 %s: JSFunction's shared (%u) or code (%u) lies beyond the %d bytes the walker reads",
			    p->version, l->js_function_shared, l->js_function_code, NP_V8_OBJ_READ);
	if (l->sfi_name_or_scope_info == V8_NONE || l->sfi_name_or_scope_info > 0xffff)
		return fail(why, why_len, "V8 %s does not describe SharedFunctionInfo::name_or_scope_info", p->version);
	out->sfi_name_or_scope_info = (uint16_t)l->sfi_name_or_scope_info;
	if (type16(l->type_js_function_first, &out->type_js_function_first) ||
	    type16(l->type_js_function_last, &out->type_js_function_last) ||
	    type16(l->type_bytecode_array, &out->type_bytecode_array) ||
	    out->type_js_function_first > out->type_js_function_last)
		return fail(why, why_len, "V8 %s: no JSFunction or BytecodeArray instance types", p->version);
	/* Code: without its layout (a V8 that does not describe it), compiled frames are recorded
	 * as their function alone: code_kind_baseline past every kind turns the check off. */
	out->code_kind_baseline = 0xff;
	if (l->code_instruction_size != V8_NONE && l->code_flags != V8_NONE && l->code_instruction_start != V8_NONE &&
	    l->code_kind_baseline < 0xff && l->code_kind_mask <= 0xff && l->code_kind_shift < 32 &&
	    !field(l->code_instruction_size, 4, &out->code_instruction_size) &&
	    !field(l->code_flags, 4, &out->code_flags) && !field(l->code_spt, tagged, &out->code_spt) &&
	    (l->code_instruction_start_is_pointer ? !field(l->code_instruction_start, 8, &out->code_instruction_start)
						  : l->code_instruction_start <= 0xffff)) {
		out->code_start_is_pointer = (uint8_t)!!l->code_instruction_start_is_pointer;
		if (!out->code_start_is_pointer)
			out->code_instruction_start = (uint16_t)l->code_instruction_start;
		out->code_kind_shift = (uint8_t)l->code_kind_shift;
		out->code_kind_mask = (uint8_t)l->code_kind_mask;
		out->code_kind_baseline = (uint8_t)l->code_kind_baseline;
	}
	for (int m = 1; m < V8_FRAME_TYPES && m <= (int)NP_V8_MARKER_MASK; m++)
		if (l->frame_type[m][0])
			out->markers |= 1ULL << m;
	return 0;
}
