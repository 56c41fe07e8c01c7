/* A HotSpot JVM's self-description (its "vmstructs", the tables the Serviceability Agent
 * reads), read from the process's memory: the offsets of the fields of its C++ classes, the
 * addresses of static fields, the sizes of types, and the integer constants. The layout of
 * the table entries themselves is read from the variables libjvm exports next to the tables
 * (gHotSpotVMStructEntryTypeNameOffset, ...), so no JDK build's numbers are written here.
 * See docs/specs/hotspot.md §1 and openjdk/jdk17u:src/hotspot/share/runtime/vmStructs.cpp.
 *
 * A pod controls this memory: every count, pointer and string is untrusted. Tables stop at
 * HS_VM_MAX_ENTRIES entries, names at HS_VM_NAME_MAX bytes, and all names together at
 * HS_VM_TEXT_MAX bytes; an entry whose names cannot be read or are not printable ASCII is
 * skipped (counted in skipped). A struct hs_vm is immutable once read: any thread may read it. */
#ifndef NP_HOTSPOT_VMSTRUCTS_H
#define NP_HOTSPOT_VMSTRUCTS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

/* Real tables hold about 2500 (structs), 1000 (types) and 1500 (constants) entries. */
#define HS_VM_MAX_ENTRIES 32768
/* The longest name kept ("GrowableArrayBase", "Abstract_VM_Version::_s_vm_release"... are short). */
#define HS_VM_NAME_MAX 256
/* All the names of one JVM (about 150 KiB in JDK 17). */
#define HS_VM_TEXT_MAX ((size_t)4 << 20)
/* An entry of the tables is a few dozen bytes; a stride or offset beyond this is garbage. */
#define HS_VM_STRIDE_MAX 256

/* Reads len bytes of process pid's memory at addr: 0, or -1 when they cannot all be read.
 * (The shape of agent/python/namer.h's py_mem_reader; hs_process_mem is the default.) */
typedef int (*hs_mem_reader)(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len);
/* process_vm_readv; ud is unused. */
int hs_process_mem(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len);

/* Where libjvm's self-description lies in the process: the absolute addresses (load bias
 * applied) of the exported variables, each a uint64_t except the four table pointers. */
struct hs_vm_symbols {
	uint64_t structs, types, int_constants, long_constants; /* gHotSpotVM{Structs,Types,...} */
	/* gHotSpotVMStructEntry{TypeName,FieldName,TypeString,IsStatic,Offset,Address}Offset, ArrayStride */
	uint64_t struct_type_name, struct_field_name, struct_type_string, struct_is_static, struct_offset,
		struct_address, struct_stride;
	/* gHotSpotVMTypeEntry{TypeName,SuperclassName,IsOopType,IsIntegerType,IsUnsigned,Size}Offset, ArrayStride */
	uint64_t type_type_name, type_superclass_name, type_is_oop, type_is_integer, type_is_unsigned, type_size,
		type_stride;
	/* gHotSpotVMIntConstantEntry{Name,Value}Offset, ArrayStride; the same for Long */
	uint64_t int_name, int_value, int_stride;
	uint64_t long_name, long_value, long_stride;
};

/* The exported name of each member of struct hs_vm_symbols, for the ELF lookup (detect.c). */
struct hs_vm_symbol_name {
	const char *name;
	size_t offset; /* offsetof(struct hs_vm_symbols, member) */
};
extern const struct hs_vm_symbol_name hs_vm_symbol_names[];
extern const size_t hs_vm_symbol_count;

struct hs_vm; /* the parsed tables; owned by whoever hs_vm_read gave it to */

/* Reads the four tables of pid through read. -1 with err set when the layout variables are
 * garbage, a table cannot be read at all or the names exceed HS_VM_TEXT_MAX. */
NP_MUST_CHECK int hs_vm_read(hs_mem_reader read, void *ud, uint32_t pid, const struct hs_vm_symbols *syms,
			     struct hs_vm **out, struct np_err *err);
void hs_vm_free(struct hs_vm *vm);

/* 0 and *out set, or -1 when the JVM does not describe it. type and field as the JVM spells
 * them ("nmethod", "_compile_id"). */
int hs_vm_field_offset(const struct hs_vm *vm, const char *type, const char *field, uint64_t *out);
/* The address of a static field ("CodeCache", "_heaps"): absolute, in the process. */
int hs_vm_static_address(const struct hs_vm *vm, const char *type, const char *field, uint64_t *out);
/* The C type the JVM declares for a field ("GrowableArray<CodeHeap*>*"), valid while vm lives;
 * NULL when absent or undeclared. */
const char *hs_vm_field_type(const struct hs_vm *vm, const char *type, const char *field);
int hs_vm_type_size(const struct hs_vm *vm, const char *type, uint64_t *out);
int hs_vm_int_constant(const struct hs_vm *vm, const char *name, int64_t *out);
int hs_vm_long_constant(const struct hs_vm *vm, const char *name, int64_t *out);

struct hs_vm_stats {
	size_t fields, types, int_constants, long_constants; /* entries kept */
	size_t skipped;					     /* entries dropped as unreadable or garbage */
	size_t bytes;					     /* memory held */
};
void hs_vm_stats(const struct hs_vm *vm, struct hs_vm_stats *out);

/* Iterates over every field entry (for harnesses and the docs): type, field, type string (may
 * be NULL), is_static, offset or address. Stops when cb returns non-zero. */
typedef int (*hs_vm_field_cb)(void *ud, const char *type, const char *field, const char *type_string,
			      int is_static, uint64_t value);
void hs_vm_each_field(const struct hs_vm *vm, hs_vm_field_cb cb, void *ud);
/* The same over the constants (is_long: gHotSpotVMLongConstants), and the type sizes. */
typedef int (*hs_vm_value_cb)(void *ud, const char *name, int is_long, int64_t value);
void hs_vm_each_constant(const struct hs_vm *vm, hs_vm_value_cb cb, void *ud);
void hs_vm_each_type(const struct hs_vm *vm, hs_vm_value_cb cb, void *ud);

/* Reads a NUL-terminated string of at most max-1 bytes at addr into buf without reading
 * across into a page it does not need: 0, or -1 when unreadable or longer. Shared with the
 * namer and detect.c. */
int hs_read_cstr(hs_mem_reader read, void *ud, uint32_t pid, uint64_t addr, char *buf, size_t max);

#endif
