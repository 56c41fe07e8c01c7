/* Reading a JVM's vmstructs tables from its memory: see vmstructs.h. */
#include "agent/runtime/hotspot/vmstructs.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "agent/runtime/mem.h"
#include "lib/sorted.h"
#include "lib/strbuf.h"

#define SYM(n, m) { n, offsetof(struct hs_vm_symbols, m) }
const struct hs_vm_symbol_name hs_vm_symbol_names[] = {
	SYM("gHotSpotVMStructs", structs),
	SYM("gHotSpotVMTypes", types),
	SYM("gHotSpotVMIntConstants", int_constants),
	SYM("gHotSpotVMLongConstants", long_constants),
	SYM("gHotSpotVMStructEntryTypeNameOffset", struct_type_name),
	SYM("gHotSpotVMStructEntryFieldNameOffset", struct_field_name),
	SYM("gHotSpotVMStructEntryTypeStringOffset", struct_type_string),
	SYM("gHotSpotVMStructEntryIsStaticOffset", struct_is_static),
	SYM("gHotSpotVMStructEntryOffsetOffset", struct_offset),
	SYM("gHotSpotVMStructEntryAddressOffset", struct_address),
	SYM("gHotSpotVMStructEntryArrayStride", struct_stride),
	SYM("gHotSpotVMTypeEntryTypeNameOffset", type_type_name),
	SYM("gHotSpotVMTypeEntrySuperclassNameOffset", type_superclass_name),
	SYM("gHotSpotVMTypeEntryIsOopTypeOffset", type_is_oop),
	SYM("gHotSpotVMTypeEntryIsIntegerTypeOffset", type_is_integer),
	SYM("gHotSpotVMTypeEntryIsUnsignedOffset", type_is_unsigned),
	SYM("gHotSpotVMTypeEntrySizeOffset", type_size),
	SYM("gHotSpotVMTypeEntryArrayStride", type_stride),
	SYM("gHotSpotVMIntConstantEntryNameOffset", int_name),
	SYM("gHotSpotVMIntConstantEntryValueOffset", int_value),
	SYM("gHotSpotVMIntConstantEntryArrayStride", int_stride),
	SYM("gHotSpotVMLongConstantEntryNameOffset", long_name),
	SYM("gHotSpotVMLongConstantEntryValueOffset", long_value),
	SYM("gHotSpotVMLongConstantEntryArrayStride", long_stride),
};
#undef SYM
const size_t hs_vm_symbol_count = sizeof(hs_vm_symbol_names) / sizeof(hs_vm_symbol_names[0]);

/* One entry of any table: a field (type, field), a type (type, NULL) or a constant (name). */
struct entry {
	const char *type, *field, *type_string; /* into vm->text; field "" for types and constants */
	uint64_t value;				/* offset, address, size or constant */
	int is_static;
	uint32_t index; /* in the JVM's table: of two entries with one name, the first is kept */
};

enum { T_FIELDS, T_TYPES, T_INTS, T_LONGS, T_COUNT };

struct hs_vm {
	struct entry *tab[T_COUNT]; /* each sorted by (type, field) */
	size_t n[T_COUNT];
	size_t skipped;
	char *text; /* every name, NUL-terminated */
	size_t text_len;
};

/* One reader for every runtime (agent/runtime/mem.h); hs_mem_reader has its shape. */
int hs_process_mem(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	return rt_process_mem(ud, pid, addr, buf, len);
}

int hs_read_cstr(hs_mem_reader read, void *ud, uint32_t pid, uint64_t addr, char *buf, size_t max)
{
	return rt_read_cstr(read, ud, pid, addr, buf, max);
}

static int read_u64(hs_mem_reader read, void *ud, uint32_t pid, uint64_t addr, uint64_t *v)
{
	return addr ? read(ud, pid, addr, v, sizeof(*v)) : -1;
}

static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

/* The layout of one table's entries, as the JVM exports it. */
struct layout {
	uint64_t base, stride, name, field, type_string, is_static, value, address;
	int has_field, has_type_string, has_static, has_address;
	size_t value_size; /* 4 for int constants, 8 otherwise */
	int value_signed;
};

struct reader {
	hs_mem_reader read;
	void *ud;
	uint32_t pid;
	struct np_buf text;
	struct np_err *err;
};

/* Appends the string at addr to text: its offset, or -1 (unreadable, too long, not ASCII). */
static int64_t add_str(struct reader *r, uint64_t addr)
{
	char s[HS_VM_NAME_MAX];
	size_t off = r->text.len, len;

	if (hs_read_cstr(r->read, r->ud, r->pid, addr, s, sizeof(s)) || !printable(s))
		return -1;
	len = strlen(s);
	if (r->text.len + len + 1 > HS_VM_TEXT_MAX)
		return -2;
	np_buf_append(&r->text, s, len + 1);
	if (r->text.failed)
		return -2;
	return (int64_t)off;
}

static uint64_t get(const uint8_t *e, uint64_t off, size_t size)
{
	uint64_t v = 0;

	memcpy(&v, e + off, size);
	return v;
}

/* Entries keep text offsets (cast into the pointers) until the text is final. */
#define OFF_PTR(o) ((const char *)(uintptr_t)(o))

static int read_table(struct reader *r, const struct layout *l, const char *what, struct entry **out, size_t *n_out,
		      size_t *skipped)
{
	struct entry *tab = NULL;
	size_t n = 0, cap = 0;
	uint8_t e[HS_VM_STRIDE_MAX];

	*out = NULL;
	*n_out = 0;
	for (size_t i = 0;; i++) {
		uint64_t addr = l->base + i * l->stride, name;
		int64_t t, f = -1, ts = -1;
		if (i >= HS_VM_MAX_ENTRIES) {
			free(tab);
			return np_errf(r->err, "%s: more than %d entries (no terminating entry)", what, HS_VM_MAX_ENTRIES);
		}
		if (addr < l->base || r->read(r->ud, r->pid, addr, e, l->stride)) {
			free(tab);
			return np_errf(r->err, "%s: entry %zu at 0x%llx cannot be read", what, i,
				       (unsigned long long)addr);
		}
		name = get(e, l->name, 8);
		if (!name)
			break; /* the terminating entry */
		t = add_str(r, name);
		if (t >= 0 && l->has_field)
			f = add_str(r, get(e, l->field, 8));
		if (t >= 0 && f != -2 && l->has_type_string && get(e, l->type_string, 8))
			ts = add_str(r, get(e, l->type_string, 8));
		if (t == -2 || f == -2 || ts == -2) {
			free(tab);
			return np_errf(r->err, "%s: the names exceed %zu bytes", what, HS_VM_TEXT_MAX);
		}
		if (t < 0 || (l->has_field && f < 0)) {
			(*skipped)++;
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct entry *nt = realloc(tab, nc * sizeof(*tab));
			if (!nt) {
				free(tab);
				return np_errf(r->err, "out of memory");
			}
			tab = nt;
			cap = nc;
		}
		struct entry *en = &tab[n];
		en->index = (uint32_t)n++;
		en->type = OFF_PTR(t);
		en->field = OFF_PTR(f);
		en->type_string = OFF_PTR(ts);
		en->is_static = l->has_static ? get(e, l->is_static, 4) != 0 : 0;
		if (en->is_static && l->has_address)
			en->value = get(e, l->address, 8);
		else if (l->value_size == 4 && l->value_signed)
			en->value = (uint64_t)(int64_t)(int32_t)get(e, l->value, 4);
		else
			en->value = get(e, l->value, l->value_size);
	}
	*out = tab;
	*n_out = n;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->type, y->type);

	return c ? c : strcmp(x->field, y->field);
}

static int cmp_entry_index(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = cmp_entry(a, b);

	return c ? c : x->index < y->index ? -1 : x->index > y->index;
}

/* Reads the uint64_t layout variables of one table and checks that they describe entries no
 * larger than HS_VM_STRIDE_MAX whose fields lie inside them. */
static int read_layout(struct reader *r, const char *what, uint64_t table_ptr, const uint64_t *vars,
		       const int *widths, size_t nvars, uint64_t stride_var, uint64_t *vals, struct layout *l)
{
	uint64_t base;

	if (read_u64(r->read, r->ud, r->pid, table_ptr, &base) || !base)
		return np_errf(r->err, "%s: the table pointer cannot be read", what);
	if (read_u64(r->read, r->ud, r->pid, stride_var, &l->stride) || l->stride < 8 || l->stride > HS_VM_STRIDE_MAX)
		return np_errf(r->err, "%s: bad entry stride", what);
	for (size_t i = 0; i < nvars; i++) {
		if (read_u64(r->read, r->ud, r->pid, vars[i], &vals[i]))
			return np_errf(r->err, "%s: a layout variable cannot be read", what);
		if (vals[i] > l->stride - (uint64_t)widths[i])
			return np_errf(r->err, "%s: a field offset (%llu) is outside the %llu-byte entry", what,
				       (unsigned long long)vals[i], (unsigned long long)l->stride);
	}
	l->base = base;
	return 0;
}

static int read_all(struct reader *r, const struct hs_vm_symbols *s, struct hs_vm *vm)
{
	struct layout l[T_COUNT];
	const char *what[T_COUNT] = { "gHotSpotVMStructs", "gHotSpotVMTypes", "gHotSpotVMIntConstants",
				      "gHotSpotVMLongConstants" };
	uint64_t v[6];

	memset(l, 0, sizeof(l));
	{
		uint64_t vars[] = { s->struct_type_name, s->struct_field_name, s->struct_type_string,
				    s->struct_is_static, s->struct_offset, s->struct_address };
		int w[] = { 8, 8, 8, 4, 8, 8 };
		if (read_layout(r, what[0], s->structs, vars, w, 6, s->struct_stride, v, &l[0]))
			return -1;
		l[0].name = v[0];
		l[0].field = v[1];
		l[0].type_string = v[2];
		l[0].is_static = v[3];
		l[0].value = v[4];
		l[0].address = v[5];
		l[0].has_field = l[0].has_type_string = l[0].has_static = l[0].has_address = 1;
		l[0].value_size = 8;
	}
	{
		uint64_t vars[] = { s->type_type_name, s->type_size };
		int w[] = { 8, 8 };
		if (read_layout(r, what[1], s->types, vars, w, 2, s->type_stride, v, &l[1]))
			return -1;
		l[1].name = v[0];
		l[1].value = v[1];
		l[1].value_size = 8;
	}
	{
		uint64_t vars[] = { s->int_name, s->int_value };
		int w[] = { 8, 4 };
		if (read_layout(r, what[2], s->int_constants, vars, w, 2, s->int_stride, v, &l[2]))
			return -1;
		l[2].name = v[0];
		l[2].value = v[1];
		l[2].value_size = 4;
		l[2].value_signed = 1;
	}
	{
		uint64_t vars[] = { s->long_name, s->long_value };
		int w[] = { 8, 8 };
		if (read_layout(r, what[3], s->long_constants, vars, w, 2, s->long_stride, v, &l[3]))
			return -1;
		l[3].name = v[0];
		l[3].value = v[1];
		l[3].value_size = 8;
	}
	/* An empty string at offset 0 for the "no field" of types and constants. */
	np_buf_putc(&r->text, '\0');
	for (int t = 0; t < T_COUNT; t++)
		if (read_table(r, &l[t], what[t], &vm->tab[t], &vm->n[t], &vm->skipped))
			return -1;
	if (r->text.failed)
		return np_errf(r->err, "out of memory");
	return 0;
}

int hs_vm_read(hs_mem_reader read, void *ud, uint32_t pid, const struct hs_vm_symbols *syms, struct hs_vm **out,
	       struct np_err *err)
{
	struct reader r = { .read = read, .ud = ud, .pid = pid, .text = NP_BUF_INIT, .err = err };
	struct hs_vm *vm = calloc(1, sizeof(*vm));

	if (!vm)
		return np_errf(err, "out of memory");
	if (read_all(&r, syms, vm)) {
		np_buf_free(&r.text);
		hs_vm_free(vm);
		return -1;
	}
	vm->text = np_buf_steal(&r.text, &vm->text_len);
	if (!vm->text) {
		hs_vm_free(vm);
		return np_errf(err, "out of memory");
	}
	for (int t = 0; t < T_COUNT; t++) {
		for (size_t i = 0; i < vm->n[t]; i++) {
			struct entry *e = &vm->tab[t][i];
			intptr_t ts = (intptr_t)(uintptr_t)e->type_string, f = (intptr_t)(uintptr_t)e->field;
			e->type = vm->text + (uintptr_t)e->type;
			e->field = f < 0 ? vm->text : vm->text + f;
			e->type_string = ts < 0 ? NULL : vm->text + ts;
		}
		if (!vm->n[t])
			continue;
		/* A name twice (a JVM has none; garbage may): the first of the table wins. */
		qsort(vm->tab[t], vm->n[t], sizeof(struct entry), cmp_entry_index);
		size_t kept = 1;
		for (size_t i = 1; i < vm->n[t]; i++) {
			if (cmp_entry(&vm->tab[t][i], &vm->tab[t][kept - 1]) == 0) {
				vm->skipped++;
				continue;
			}
			vm->tab[t][kept++] = vm->tab[t][i];
		}
		vm->n[t] = kept;
	}
	*out = vm;
	return 0;
}

void hs_vm_free(struct hs_vm *vm)
{
	if (!vm)
		return;
	for (int t = 0; t < T_COUNT; t++)
		free(vm->tab[t]);
	free(vm->text);
	free(vm);
}

static const struct entry *find(const struct hs_vm *vm, int t, const char *type, const char *field)
{
	struct entry key = { .type = type, .field = field ? field : "" };
	int found;
	size_t i;

	if (!vm->n[t])
		return NULL;
	i = np_sorted_find(vm->tab[t], vm->n[t], sizeof(struct entry), &key, cmp_entry, &found);
	return found ? &vm->tab[t][i] : NULL;
}

int hs_vm_field_offset(const struct hs_vm *vm, const char *type, const char *field, uint64_t *out)
{
	const struct entry *e = find(vm, T_FIELDS, type, field);

	if (!e || e->is_static)
		return -1;
	*out = e->value;
	return 0;
}

int hs_vm_static_address(const struct hs_vm *vm, const char *type, const char *field, uint64_t *out)
{
	const struct entry *e = find(vm, T_FIELDS, type, field);

	if (!e || !e->is_static || !e->value)
		return -1;
	*out = e->value;
	return 0;
}

const char *hs_vm_field_type(const struct hs_vm *vm, const char *type, const char *field)
{
	const struct entry *e = find(vm, T_FIELDS, type, field);

	return e ? e->type_string : NULL;
}

int hs_vm_type_size(const struct hs_vm *vm, const char *type, uint64_t *out)
{
	const struct entry *e = find(vm, T_TYPES, type, NULL);

	if (!e)
		return -1;
	*out = e->value;
	return 0;
}

int hs_vm_int_constant(const struct hs_vm *vm, const char *name, int64_t *out)
{
	const struct entry *e = find(vm, T_INTS, name, NULL);

	if (!e)
		return -1;
	*out = (int64_t)e->value;
	return 0;
}

int hs_vm_long_constant(const struct hs_vm *vm, const char *name, int64_t *out)
{
	const struct entry *e = find(vm, T_LONGS, name, NULL);

	if (!e)
		return -1;
	*out = (int64_t)e->value;
	return 0;
}

void hs_vm_stats(const struct hs_vm *vm, struct hs_vm_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->fields = vm->n[T_FIELDS];
	out->types = vm->n[T_TYPES];
	out->int_constants = vm->n[T_INTS];
	out->long_constants = vm->n[T_LONGS];
	out->skipped = vm->skipped;
	out->bytes = sizeof(*vm) + vm->text_len;
	for (int t = 0; t < T_COUNT; t++)
		out->bytes += vm->n[t] * sizeof(struct entry);
}

void hs_vm_each_field(const struct hs_vm *vm, hs_vm_field_cb cb, void *ud)
{
	for (size_t i = 0; i < vm->n[T_FIELDS]; i++) {
		const struct entry *e = &vm->tab[T_FIELDS][i];
		if (cb(ud, e->type, e->field, e->type_string, e->is_static, e->value))
			return;
	}
}

void hs_vm_each_constant(const struct hs_vm *vm, hs_vm_value_cb cb, void *ud)
{
	for (int t = T_INTS; t <= T_LONGS; t++)
		for (size_t i = 0; i < vm->n[t]; i++)
			if (cb(ud, vm->tab[t][i].type, t == T_LONGS, (int64_t)vm->tab[t][i].value))
				return;
}

void hs_vm_each_type(const struct hs_vm *vm, hs_vm_value_cb cb, void *ud)
{
	for (size_t i = 0; i < vm->n[T_TYPES]; i++)
		if (cb(ud, vm->tab[T_TYPES][i].type, 0, (int64_t)vm->tab[T_TYPES][i].value))
			return;
}
