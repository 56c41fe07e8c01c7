/* V8's postmortem metadata and the layout derived from it: see metadata.h and docs/specs/v8.md. */
#include "agent/runtime/v8/metadata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"

#define PREFIX "v8dbg_"
/* .dynsym and .symtab of node are about 10 MiB with their strings; libnode's about the same. */
#define SYMBOL_BYTES_MAX ((size_t)128 << 20)

void v8_meta_init(struct v8_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->names = (struct np_intern)NP_INTERN_INIT;
}

void v8_meta_free(struct v8_meta *m)
{
	np_intern_free(&m->names);
	free(m->values);
	v8_meta_init(m);
}

int v8_meta_add(struct v8_meta *m, const char *name, int32_t value, struct np_err *err)
{
	size_t len;
	int added;

	if (!strncmp(name, PREFIX, sizeof(PREFIX) - 1))
		name += sizeof(PREFIX) - 1;
	len = strnlen(name, V8_META_NAME_MAX + 1);
	if (!len || len > V8_META_NAME_MAX ||
	    (m->names.n >= V8_META_MAX && !np_intern_find(&m->names, name, len))) {
		m->refused++;
		return 0;
	}
	uint32_t id = np_intern_add(&m->names, name, len, &added);
	if (!id || np_grow((void **)&m->values, &m->cap, id, sizeof(*m->values)))
		return np_errf(err, "out of memory reading V8 metadata");
	m->values[id - 1] = value;
	return 0;
}

int v8_meta_get(const struct v8_meta *m, const char *name, int32_t *out)
{
	uint32_t id = np_intern_find(&m->names, name, strlen(name));

	if (!id)
		return -1;
	*out = m->values[id - 1];
	return 0;
}

size_t v8_meta_count(const struct v8_meta *m)
{
	return m->names.n;
}

struct elf_walk {
	struct v8_meta *m;
	int fd;
	const struct sym_elf_info *info;
	struct np_err *err;
	int failed;
};

static int on_symbol(void *ud, const char *name, uint64_t value, uint64_t size)
{
	struct elf_walk *w = ud;
	int32_t v;

	/* Every v8dbg_ symbol is an int; one of another size is not metadata. */
	if (size != sizeof(v) || sym_elf_read_vaddr(w->fd, w->info, value, &v, sizeof(v)) < 0)
		return 0;
	if (v8_meta_add(w->m, name, v, w->err) < 0) {
		w->failed = 1;
		return 1;
	}
	return 0;
}

int v8_meta_read_elf(Elf *e, int fd, const struct sym_elf_info *info, struct v8_meta *m, size_t *found,
		     struct np_err *err)
{
	static const unsigned types[] = { SHT_DYNSYM, SHT_SYMTAB };
	struct elf_walk w = { .m = m, .fd = fd, .info = info, .err = err };

	*found = 0;
	for (size_t t = 0; t < 2 && !v8_meta_count(m); t++) {
		(void)sym_elf_each_symbol(e, fd, types[t], PREFIX, sizeof(int32_t), SYMBOL_BYTES_MAX, on_symbol, &w);
		if (w.failed)
			return -1;
	}
	*found = v8_meta_count(m);
	return 0;
}

/* ---- the layout ---- */

struct derive {
	const struct v8_meta *m;
	char *why;
	size_t why_len, used;
	int missing;
};

static void note_missing(struct derive *d, const char *name)
{
	int n;

	if (d->used + 1 >= d->why_len)
		return;
	n = snprintf(d->why + d->used, d->why_len - d->used, "%s%s", d->missing ? ", " : "", name);
	if (n > 0)
		d->used = d->used + (size_t)n < d->why_len ? d->used + (size_t)n : d->why_len - 1;
	d->missing++;
}

/* The first of names (NULL-terminated) the binary exports; when none, the first name is noted
 * as missing and V8_NONE returned. */
static int32_t pick(struct derive *d, const char *const *names)
{
	int32_t v;

	for (size_t i = 0; names[i]; i++)
		if (v8_meta_get(d->m, names[i], &v) == 0)
			return v;
	note_missing(d, names[0]);
	return (int32_t)V8_NONE;
}

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define REQ(...) pick(d, NAMES(__VA_ARGS__))

/* The first of names the binary exports, or -1 (not an error: a rule applies). */
static int32_t opt(const struct derive *d, const char *const *names)
{
	int32_t v;

	for (size_t i = 0; names[i]; i++)
		if (v8_meta_get(d->m, names[i], &v) == 0)
			return v;
	return -1;
}

#define OPT(...) opt(d, NAMES(__VA_ARGS__))

static void frame_types(const struct v8_meta *m, struct v8_layout *l)
{
	static const char prefix[] = "frametype_";

	memset(l->frame_type, 0, sizeof(l->frame_type));
	for (uint32_t id = 1; id <= m->names.n; id++) {
		size_t len;
		const char *name = np_intern_key(&m->names, id, &len);
		int32_t v = m->values[id - 1];
		if (strncmp(name, prefix, sizeof(prefix) - 1) || v < 0 || v >= V8_FRAME_TYPES)
			continue;
		snprintf(l->frame_type[v], sizeof(l->frame_type[v]), "V8::%.56s", name + sizeof(prefix) - 1);
	}
}

/* An offset must lie within an object's first few KiB to be one we read. */
static int offset_ok(uint32_t v)
{
	return v < 4096;
}

int v8_layout_from_meta(const struct v8_meta *m, const struct v8_version *ver, struct v8_layout *out, char *why,
			size_t why_len)
{
	struct derive dd = { .m = m, .why = why, .why_len = why_len }, *d = &dd;
	struct v8_layout l;
	uint64_t v = v8_version_num(ver);
	int32_t x;

	memset(&l, 0, sizeof(l));
	if (why_len)
		why[0] = '\0';
	l.version = *ver;
	if (!v8_meta_count(m)) {
		snprintf(why, why_len, "no v8dbg_ postmortem metadata in the binary");
		return -1;
	}
	if (why_len > 40) {
		dd.used = (size_t)snprintf(why, why_len, "V8 metadata lacks ");
	}

	l.heap_object_tag = (uint32_t)REQ("HeapObjectTag");
	l.heap_object_tag_mask = (uint32_t)REQ("HeapObjectTagMask");
	l.smi_tag = (uint32_t)REQ("SmiTag");
	l.smi_tag_mask = (uint32_t)REQ("SmiTagMask");
	x = REQ("SmiShiftSize");
	l.smi_shift = (uint32_t)x + 1; /* the tag bit, then SmiShiftSize zero bits */
	x = OPT("SystemPointerSize", "PointerSize");
	l.pointer_size = x > 0 ? (uint32_t)x : 8;
	/* TaggedSize appeared with pointer compression (V8 7.x); before it, tagged = pointer. */
	x = OPT("TaggedSize");
	l.tagged_size = x > 0 ? (uint32_t)x : l.pointer_size;
	l.compressed = l.tagged_size == 4 && l.pointer_size == 8;

	l.first_nonstring_type = (uint32_t)REQ("FirstNonstringType");
	l.string_repr_mask = (uint32_t)REQ("StringRepresentationMask");
	l.string_enc_mask = (uint32_t)REQ("StringEncodingMask");
	l.seq_tag = (uint32_t)REQ("SeqStringTag");
	l.cons_tag = (uint32_t)REQ("ConsStringTag");
	l.sliced_tag = (uint32_t)REQ("SlicedStringTag");
	l.thin_tag = (uint32_t)REQ("ThinStringTag");
	l.external_tag = (uint32_t)REQ("ExternalStringTag");
	l.one_byte_tag = (uint32_t)REQ("OneByteStringTag");
	l.two_byte_tag = (uint32_t)REQ("TwoByteStringTag");

	l.type_sfi = (uint32_t)REQ("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE");
	l.type_script = (uint32_t)REQ("type_Script__SCRIPT_TYPE");
	l.type_scope_info = (uint32_t)REQ("type_ScopeInfo__SCOPE_INFO_TYPE");
	l.type_bytecode_array = (uint32_t)REQ("type_BytecodeArray__BYTECODE_ARRAY_TYPE");
	l.type_byte_array = (uint32_t)REQ("type_ByteArray__BYTE_ARRAY_TYPE", "type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE");
	l.type_fixed_array = (uint32_t)REQ("type_FixedArray__FIXED_ARRAY_TYPE");
	l.type_code = (uint32_t)REQ("type_Code__CODE_TYPE");
	x = OPT("type_InterpreterData__INTERPRETER_DATA_TYPE");
	l.type_interpreter_data = x >= 0 ? (uint32_t)x : V8_NONE;
	x = REQ("type_JSFunction__JS_FUNCTION_TYPE");
	l.type_js_function_first = (uint32_t)x;
	{
		/* Since V8 9.0.14 JSFunction has subclasses (class constructors...) whose types follow
		 * JS_FUNCTION_TYPE: 14 types, 15 since 9.6.138 (OTel's nodev8 records the same). Newer
		 * binaries say it. */
		int32_t first = OPT("FirstJSFunctionType"), last = OPT("LastJSFunctionType");
		if (first >= 0 && last >= first) {
			l.type_js_function_first = (uint32_t)first;
			l.type_js_function_last = (uint32_t)last;
		} else {
			uint32_t n = v >= V8_VER(9, 6, 138) ? 15 : v >= V8_VER(9, 0, 14) ? 14 : 1;
			l.type_js_function_last = l.type_js_function_first + n - 1;
		}
	}

	x = OPT("class_HeapObject__map__Map", "class_HeapObject__map__Tagged_Map_");
	l.heap_object_map = x >= 0 ? (uint32_t)x : 0; /* the map is the first word of every object */
	l.map_instance_type = (uint32_t)REQ("class_Map__instance_type__uint16_t");
	l.string_length = (uint32_t)REQ("class_String__length__int32_t", "class_String__length__SMI");
	l.seq_one_byte_chars = (uint32_t)REQ("class_SeqOneByteString__chars__char");
	l.seq_two_byte_chars = (uint32_t)REQ("class_SeqTwoByteString__chars__char");
	l.cons_first = (uint32_t)REQ("class_ConsString__first__String", "class_ConsString__first__Tagged_String_");
	l.cons_second = (uint32_t)REQ("class_ConsString__second__String", "class_ConsString__second__Tagged_String_");
	l.sliced_parent = (uint32_t)REQ("class_SlicedString__parent__String", "class_SlicedString__parent__Tagged_String_");
	l.sliced_offset = (uint32_t)REQ("class_SlicedString__offset__SMI");
	l.thin_actual = (uint32_t)REQ("class_ThinString__actual__String", "class_ThinString__actual__Tagged_String_");
	l.fixed_array_length = (uint32_t)REQ("class_FixedArrayBase__length__SMI");
	l.fixed_array_data = (uint32_t)REQ("class_FixedArray__data__uintptr_t");

	l.js_function_shared = (uint32_t)REQ("class_JSFunction__shared__SharedFunctionInfo",
					     "class_JSFunction__shared__Tagged_SharedFunctionInfo_");
	x = OPT("class_JSFunction__code__Code", "class_JSFunction__code__CodeT", "class_JSFunction__code__Tagged_Code_");
	if (x >= 0)
		l.js_function_code = (uint32_t)x;
	else /* docs/specs/v8.md §3: code moved in front of shared in 11.7.368 */
		l.js_function_code = v >= V8_VER(11, 7, 368) ? l.js_function_shared - l.tagged_size
							     : l.js_function_shared + 3 * l.tagged_size;

	l.sfi_name_or_scope_info = (uint32_t)REQ("class_SharedFunctionInfo__name_or_scope_info__Object",
						 "class_SharedFunctionInfo__name_or_scope_info__Tagged_Object_",
						 "class_SharedFunctionInfo__name_or_scope_info__Tagged_NameOrScopeInfoT_");
	x = OPT("class_SharedFunctionInfo__function_data__Object",
		"class_SharedFunctionInfo__function_data__Tagged_Object_");
	/* Not described since V8 12.x; it has stayed the word after the map. */
	l.sfi_function_data = x >= 0 ? (uint32_t)x : l.heap_object_map + l.tagged_size;
	l.sfi_script_or_debug_info = (uint32_t)REQ("class_SharedFunctionInfo__script_or_debug_info__HeapObject",
						   "class_SharedFunctionInfo__script_or_debug_info__Object",
						   "class_SharedFunctionInfo__script__Tagged_HeapObject_");
	x = OPT("class_SharedFunctionInfo__flags__int", "class_SharedFunctionInfo__flags__uint32_t");
	l.sfi_flags = x >= 0 ? (uint32_t)x : V8_NONE;
	l.script_name = (uint32_t)REQ("class_Script__name__Object", "class_Script__name__Tagged_Object_");
	x = OPT("class_Script__source__Object", "class_Script__source__Tagged_Object_");
	l.script_source = x >= 0 ? (uint32_t)x : l.script_name - l.tagged_size;
	x = OPT("class_Script__line_ends__Object", "class_Script__line_ends__Tagged_Object_");
	l.script_line_ends = x >= 0 ? (uint32_t)x : V8_NONE;

	/* ScopeInfo became a HeapObject with its own slots in 9.1.71; before, a FixedArray. */
	{
		int32_t p;
		int heap = v8_meta_get(m, "parent_ScopeInfo__HeapObject", &p) == 0 || v >= V8_VER(9, 1, 71);
		l.scope_info_slots = heap ? l.heap_object_map + l.tagged_size : l.fixed_array_data;
	}
	l.scope_info_first_vars = (uint32_t)REQ("scopeinfo_idx_first_vars");
	l.scope_info_ncontextlocals = (uint32_t)REQ("scopeinfo_idx_ncontextlocals");
	l.scope_info_fixed_positions = v >= V8_VER(12, 8, 44);

	l.bytecode_array_data = (uint32_t)REQ("class_BytecodeArray__data__uintptr_t");
	x = OPT("class_BytecodeArray__source_position_table__Object",
		"class_BytecodeArray__source_position_table__Tagged_HeapObject_");
	/* Not described since V8 9.4: length, constant pool, handler table, then the table. */
	l.bytecode_array_spt = x >= 0 ? (uint32_t)x : l.fixed_array_length + 3 * l.tagged_size;
	l.interpreter_data_bytecode = l.heap_object_map + l.tagged_size;
	x = OPT("class_Code__deoptimization_data__FixedArray", "class_Code__deoptimization_data__Tagged_FixedArray_");
	l.code_deopt_data = x >= 0 ? (uint32_t)x : V8_NONE;
	x = OPT("class_Code__source_position_table__ByteArray", "class_Code__source_position_table__Tagged_ByteArray_");
	l.code_spt = x >= 0 ? (uint32_t)x : V8_NONE;
	{
		/* docs/specs/v8.md §3.3: the Code fields the metadata of V8 11.x lost, placed by
		 * the rules OTel's nodev8 also uses. */
		int32_t start = OPT("class_Code__instruction_start__uintptr_t", "class_Code__instruction_start__Address");
		int32_t size = OPT("class_Code__instruction_size__int");
		int32_t flags = OPT("class_Code__flags__uint32_t");
		uint32_t ps = l.pointer_size;
		if (size >= 0) {
			/* V8 <= 11.0: the tables lie before the instruction size (V8 8.4 to 11.0). */
			if (l.code_spt == V8_NONE && size >= (int32_t)(3 * ps))
				l.code_spt = (uint32_t)size - 2 * ps;
			if (l.code_deopt_data == V8_NONE && l.code_spt != V8_NONE)
				l.code_deopt_data = l.code_spt - ps;
			if (flags < 0)
				flags = size + 8;
		} else if (l.code_spt != V8_NONE) {
			if (start < 0)
				start = (int32_t)(l.code_spt + 2 * ps);
			if (flags < 0)
				flags = start + (int32_t)ps;
			size = flags + 4 + (v < V8_VER(11, 4, 59) ? 4 : 0);
		}
		l.code_instruction_start = start >= 0 ? (uint32_t)start : V8_NONE;
		l.code_instruction_size = size >= 0 ? (uint32_t)size : V8_NONE;
		l.code_flags = flags >= 0 ? (uint32_t)flags : V8_NONE;
		l.code_instruction_start_is_pointer = v >= V8_VER(11, 1, 204);
		int32_t mask = OPT("CodeKindFieldMask"), shift = OPT("CodeKindFieldShift"), base = OPT("CodeKindBaseline");
		/* Before V8 9.0.240 there is no baseline kind: 0xff matches no code. */
		l.code_kind_mask = mask > 0 ? (uint32_t)mask : 0xf;
		l.code_kind_shift = shift >= 0 ? (uint32_t)shift : 0;
		l.code_kind_baseline = base > 0 ? (uint32_t)base : v >= V8_VER(9, 0, 240) ? 11 : 0xff;
	}
	/* Baseline code keeps its bytecode where optimised code keeps its deoptimisation data. */
	x = OPT("class_Code__bytecode_or_interpreter_data__HeapObject");
	l.code_bytecode_or_interpreter_data = x >= 0 ? (uint32_t)x : l.code_deopt_data;
	/* ... and its pc to bytecode table where optimised code keeps its position table. */
	x = OPT("class_Code__bytecode_offset_table__ByteArray", "class_Code__bytecode_offset_table__Tagged_ByteArray_");
	l.code_bytecode_offset_table = x >= 0 ? (uint32_t)x : l.code_spt;
	x = OPT("DeoptimizationDataInlinedFunctionCountIndex");
	l.deopt_inlined_count = x >= 0 ? (uint32_t)x : 1;
	x = OPT("DeoptimizationDataLiteralArrayIndex");
	l.deopt_literal_array = x >= 0 ? (uint32_t)x : l.deopt_inlined_count + 1;
	x = OPT("DeoptimizationDataSharedFunctionInfoIndex");
	l.deopt_sfi = x >= 0 ? (uint32_t)x : 6;
	x = OPT("DeoptimizationDataInliningPositionsIndex");
	l.deopt_inlining_positions = x >= 0 ? (uint32_t)x : l.deopt_sfi + 1;

	l.fp_function = REQ("off_fp_function");
	l.fp_context = REQ("off_fp_context", "off_fp_context_or_frame_type");
	x = OPT("off_fp_bytecode_array");
	/* Not described before V8 9.5.2: below the function (and the argument count since 8.7.198). */
	l.fp_bytecode_array = x != -1 ? x : l.fp_function - (v >= V8_VER(8, 7, 198) ? 2 : 1) * (int32_t)l.pointer_size;
	x = OPT("off_fp_bytecode_offset");
	l.fp_bytecode_offset = x != -1 ? x : l.fp_bytecode_array - (int32_t)l.pointer_size;
	frame_types(m, &l);

	if (d->missing)
		return -1;
	dd.used = 0;
	if (why_len)
		why[0] = '\0';
	{
		uint32_t offs[] = { l.map_instance_type, l.string_length, l.seq_one_byte_chars, l.seq_two_byte_chars,
				    l.cons_first, l.cons_second, l.sliced_parent, l.sliced_offset, l.thin_actual,
				    l.fixed_array_length, l.fixed_array_data, l.js_function_shared, l.js_function_code,
				    l.sfi_name_or_scope_info, l.sfi_function_data, l.sfi_script_or_debug_info,
				    l.script_name, l.script_source, l.scope_info_slots, l.bytecode_array_data,
				    l.bytecode_array_spt, l.heap_object_map };
		for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
			if (!offset_ok(offs[i])) {
				snprintf(why, why_len, "V8 metadata: field offset %u (the %zuth read) is out of range",
					 offs[i], i + 1);
				return -1;
			}
	}
	if ((l.tagged_size != 4 && l.tagged_size != 8) || l.pointer_size != 8 || l.smi_shift > 63 ||
	    l.heap_object_tag_mask > 7 || (l.heap_object_tag & ~l.heap_object_tag_mask) ||
	    l.smi_tag_mask > 7 || l.heap_object_tag == l.smi_tag || l.scope_info_first_vars > 64 ||
	    l.scope_info_ncontextlocals >= l.scope_info_first_vars || l.deopt_inlined_count > 64 ||
	    l.deopt_literal_array > 64 || l.deopt_sfi > 64 || l.deopt_inlining_positions > 64 ||
	    l.first_nonstring_type > 0xffff || l.type_js_function_last > 0xffff) {
		snprintf(why, why_len,
			 "V8 metadata: a tagging constant, size or index is not one this profiler reads "
			 "(tagged %u, pointer %u, Smi shift %u)",
			 l.tagged_size, l.pointer_size, l.smi_shift);
		return -1;
	}
	*out = l;
	return 0;
}
