/* Unit tests for the binary symbol formats: .gopclntab in its four layouts (synthesized here
 * exactly as the Go linker lays them out, in both byte orders and pointer sizes), demangling
 * modes (the verified tables of docs/specs/symbols.md §6.3 and §7) and xz (MiniDebugInfo). The
 * debuglink CRC is lib/checksum's (test_lib_checksum). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/symbols/debugfile.h"
#include "agent/symbols/demangle.h"
#include "agent/symbols/elf_file.h"
#include "agent/symbols/gopclntab.h"

/* ---- a pclntab writer ---- */

struct blob {
	uint8_t b[4096];
	size_t len;
	int big;
	int ptr;
};

static void put(struct blob *x, size_t off, uint64_t v, int size)
{
	assert_true(off + (size_t)size <= sizeof(x->b));
	for (int i = 0; i < size; i++) {
		int shift = x->big ? (size - 1 - i) * 8 : i * 8;
		x->b[off + (size_t)i] = (uint8_t)(v >> shift);
	}
	if (off + (size_t)size > x->len)
		x->len = off + (size_t)size;
}

static void put_str(struct blob *x, size_t off, const char *s)
{
	memcpy(x->b + off, s, strlen(s) + 1);
	if (off + strlen(s) + 1 > x->len)
		x->len = off + strlen(s) + 1;
}

static const char *const fn_names[] = { "main.main", "main.(*Ledger).Settle", "runtime.goexit" };
static const uint64_t fn_off[] = { 0x0, 0x120, 0x400 }; /* entry offsets from text */
static const uint64_t fn_end = 0x480;
#define TEXT 0x401000ull

/* Lays out a table of the three functions above for version v. */
static void build(struct blob *x, enum sym_go_version v, int big, int ptr)
{
	memset(x, 0, sizeof(*x));
	x->big = big;
	x->ptr = ptr;
	uint32_t magic = v == SYM_GO_12 ? 0xfffffffbu : v == SYM_GO_116 ? 0xfffffffau : v == SYM_GO_118 ? 0xfffffff0u : 0xfffffff1u;
	put(x, 0, magic, 4);
	x->b[6] = 1;
	x->b[7] = (uint8_t)ptr;
	size_t n = 3;
	if (v == SYM_GO_12) {
		/* word0 nfunctab; functab at 8+ptr: (entry, funcoff) pairs + end pc; _func and names
		 * are anywhere in the blob, offsets from its start. */
		put(x, 8, n, ptr);
		size_t ft = 8 + (size_t)ptr;
		size_t funcs = ft + (2 * n + 1) * (size_t)ptr + 16, names = funcs + n * 32;
		size_t name_off = names;
		for (size_t i = 0; i < n; i++) {
			put(x, ft + 2 * i * (size_t)ptr, TEXT + fn_off[i], ptr);
			put(x, ft + (2 * i + 1) * (size_t)ptr, funcs + i * 32, ptr);
			put(x, funcs + i * 32, TEXT + fn_off[i], ptr);
			put(x, funcs + i * 32 + (size_t)ptr, name_off, 4);
			put_str(x, name_off, fn_names[i]);
			name_off += strlen(fn_names[i]) + 1;
		}
		put(x, ft + 2 * n * (size_t)ptr, TEXT + fn_end, ptr);
		return;
	}
	size_t words = v == SYM_GO_116 ? 7 : 8;
	size_t hdr = 8 + words * (size_t)ptr;
	size_t names = hdr;
	size_t name_off[3], off = 0;
	for (size_t i = 0; i < n; i++) {
		name_off[i] = off;
		put_str(x, names + off, fn_names[i]);
		off += strlen(fn_names[i]) + 1;
	}
	size_t pcln = (names + off + 7) & ~(size_t)7;
	put(x, 8, n, ptr); /* nfunc */
	put(x, 8 + (size_t)ptr, 1, ptr); /* nfiles */
	if (v == SYM_GO_116) {
		put(x, 8 + 2 * (size_t)ptr, names, ptr);
		put(x, 8 + 6 * (size_t)ptr, pcln, ptr);
		size_t es = 2 * (size_t)ptr, funcs = (n + 1) * es;
		for (size_t i = 0; i < n; i++) {
			put(x, pcln + i * es, TEXT + fn_off[i], ptr);
			put(x, pcln + i * es + (size_t)ptr, funcs + i * 32, ptr);
			put(x, pcln + funcs + i * 32, TEXT + fn_off[i], ptr);
			put(x, pcln + funcs + i * 32 + (size_t)ptr, name_off[i], 4);
		}
		put(x, pcln + n * es, TEXT + fn_end, ptr);
	} else {
		put(x, 8 + 2 * (size_t)ptr, TEXT, ptr); /* textStart */
		put(x, 8 + 3 * (size_t)ptr, names, ptr);
		put(x, 8 + 7 * (size_t)ptr, pcln, ptr);
		size_t funcs = (n + 1) * 8;
		for (size_t i = 0; i < n; i++) {
			put(x, pcln + i * 8, fn_off[i], 4);
			put(x, pcln + i * 8 + 4, funcs + i * 48, 4);
			put(x, pcln + funcs + i * 48, fn_off[i], 4);
			put(x, pcln + funcs + i * 48 + 4, name_off[i], 4);
		}
		put(x, pcln + n * 8, fn_end, 4);
	}
}

static const char *lookup(const struct sym_symtab *t, uint64_t addr)
{
	ssize_t i = sym_symtab_find(t, addr);
	return i < 0 ? NULL : sym_symtab_name(t, (size_t)i);
}

static void check_table(const struct blob *x, enum sym_go_version v)
{
	assert_int_equal(sym_gopclntab_version(x->b, x->len), v);
	struct sym_stb b;
	sym_stb_init(&b);
	struct np_err err;
	size_t added;
	assert_int_equal(sym_gopclntab_add(x->b, x->len, 0, &b, &added, &err), 0);
	assert_int_equal(added, 3);
	struct sym_symtab *t;
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_string_equal(lookup(t, TEXT), "main.main");
	assert_string_equal(lookup(t, TEXT + 0x11f), "main.main");
	assert_string_equal(lookup(t, TEXT + 0x120), "main.(*Ledger).Settle");
	assert_string_equal(lookup(t, TEXT + 0x47f), "runtime.goexit");
	assert_null(lookup(t, TEXT + fn_end));
	assert_null(lookup(t, TEXT - 1));
	sym_symtab_free(t);
}

static void gopclntab_all_layouts(void **state)
{
	static const enum sym_go_version versions[] = { SYM_GO_12, SYM_GO_116, SYM_GO_118, SYM_GO_120 };
	struct blob x;
	for (size_t i = 0; i < 4; i++)
		for (int big = 0; big < 2; big++)
			for (int ptr = 4; ptr <= 8; ptr += 4) {
				build(&x, versions[i], big, ptr);
				check_table(&x, versions[i]);
			}
}

static void gopclntab_rejects_garbage(void **state)
{
	struct blob x;
	build(&x, SYM_GO_120, 0, 8);
	struct sym_stb b;
	struct np_err err;
	size_t added;
	/* Bad header fields. */
	uint8_t saved = x.b[6];
	x.b[6] = 3; /* quantum */
	assert_int_equal(sym_gopclntab_version(x.b, x.len), SYM_GO_NONE);
	x.b[6] = saved;
	x.b[7] = 2; /* pointer size */
	assert_int_equal(sym_gopclntab_version(x.b, x.len), SYM_GO_NONE);
	x.b[7] = 8;
	assert_int_equal(sym_gopclntab_version(x.b, 15), SYM_GO_NONE);
	assert_int_equal(sym_gopclntab_version(NULL, 0), SYM_GO_NONE);
	/* A huge nfunc must not read past the end. */
	put(&x, 8, 0x7fffffffffffull, 8);
	sym_stb_init(&b);
	assert_int_equal(sym_gopclntab_add(x.b, x.len, 0, &b, &added, &err), 0);
	assert_int_equal(added, 0);
	sym_stb_free(&b);
	/* Every truncation of a valid table is safe. */
	build(&x, SYM_GO_118, 0, 8);
	for (size_t cut = 0; cut < x.len; cut++) {
		sym_stb_init(&b);
		assert_int_equal(sym_gopclntab_add(x.b, cut, 0, &b, &added, &err), 0);
		assert_true(added <= 3);
		sym_stb_free(&b);
	}
	/* Names that run off the end (no NUL) are skipped. */
	build(&x, SYM_GO_116, 0, 8);
	x.len = 8 + 7 * 8 + 5; /* cuts names */
	sym_stb_init(&b);
	assert_int_equal(sym_gopclntab_add(x.b, x.len, 0, &b, &added, &err), 0);
	assert_int_equal(added, 0);
	sym_stb_free(&b);
}

/* ---- demangling: docs/specs/symbols.md §6.3 and §7 verified outputs ---- */

struct dm_case {
	const char *mangled, *simplified, *templates, *full;
};

static const struct dm_case dm_cases[] = {
	{ "_ZNSt6vectorIiSaIiEE9push_backEOi", "std::vector::push_back",
	  "std::vector<int, std::allocator<int> >::push_back", "std::vector<int, std::allocator<int> >::push_back(int&&)" },
	{ "_ZNK2ns3BoxIdEltERKS1_", "ns::Box::operator<", "ns::Box<double>::operator<",
	  "ns::Box<double>::operator<(ns::Box<double> const&) const" },
	{ "_ZZ4mainENKUliE_clEi", "main::{lambda(int)#1}::operator()", "main::{lambda(int)#1}::operator()",
	  "main::{lambda(int)#1}::operator()(int) const" },
	{ "_ZN2nsL9clonecandEii.constprop.0", "ns::clonecand", "ns::clonecand", "ns::clonecand(int, int)" },
	{ "_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJiEEEvN9__gnu_cxx17__normal_iteratorIPiS1_EEDpOT_",
	  "std::vector::_M_realloc_insert", "std::vector<int, std::allocator<int> >::_M_realloc_insert<int>",
	  "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(__gnu_cxx::__normal_iterator<int*, "
	  "std::vector<int, std::allocator<int> > >, int&&)" },
	{ "_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo", "(anonymous namespace)::foo",
	  "(anonymous namespace)::foo()" },
	{ "main", "main", "main", "main" },
	{ "foo_bar", "foo_bar", "foo_bar", "foo_bar" },
	/* Rust legacy: hash hidden in every mode. */
	{ "_ZN1m4work17h890c2ae4cdb539c8E", "m::work", "m::work", "m::work" },
	{ "_ZN71_$LT$core..hash..sip..Hasher$LT$S$GT$$u20$as$u20$core..hash..Hasher$GT$5write17h1256e8eecd222b03E",
	  "<core::hash::sip::Hasher<S> as core::hash::Hasher>::write",
	  "<core::hash::sip::Hasher<S> as core::hash::Hasher>::write",
	  "<core::hash::sip::Hasher<S> as core::hash::Hasher>::write" },
	/* Rust v0. */
	{ "_RNvCskK7mfDs1mzF_1m4main", "m::main", "m::main", "m::main" },
	{ "_RINvNtCsgEmfK2I1SDS_4core3ptr13drop_in_placeINtNtCslNYArtu3iFV_5alloc3vec3VecNtNtBL_6string6StringEECsjrHSEGnQ3l9_3std",
	  "core::ptr::drop_in_place::<>", "core::ptr::drop_in_place::<alloc::vec::Vec<alloc::string::String>>",
	  "core::ptr::drop_in_place::<alloc::vec::Vec<alloc::string::String>>" },
	/* Not valid mangled names: unchanged. */
	{ "_Znotreally", "_Znotreally", "_Znotreally", "_Znotreally" },
	{ "_R", "_R", "_R", "_R" },
};

static void check_mode(const char *mangled, enum sym_demangle mode, const char *want)
{
	int oom = 0;
	char *got = sym_demangle(mangled, mode, &oom);
	assert_int_equal(oom, 0);
	if (strcmp(want, mangled) == 0) {
		if (got) /* "unchanged" may also be spelled as an identical copy */
			assert_string_equal(got, want);
	} else {
		assert_non_null(got);
		assert_string_equal(got, want);
	}
	free(got);
}

static void demangle_modes_match_spec(void **state)
{
	for (size_t i = 0; i < sizeof(dm_cases) / sizeof(dm_cases[0]); i++) {
		const struct dm_case *c = &dm_cases[i];
		int oom;
		assert_null(sym_demangle(c->mangled, SYM_DEMANGLE_NONE, &oom));
		check_mode(c->mangled, SYM_DEMANGLE_SIMPLIFIED, c->simplified);
		check_mode(c->mangled, SYM_DEMANGLE_TEMPLATES, c->templates);
		check_mode(c->mangled, SYM_DEMANGLE_FULL, c->full);
	}
}

/* Operators with angle brackets and nested templates stay intact (no string surgery). */
static void demangle_simplified_keeps_operators(void **state)
{
	/* ns::Box<int>::operator<<(int), ns::Box<int>::operator->() */
	check_mode("_ZN2ns3BoxIiElsEi", SYM_DEMANGLE_SIMPLIFIED, "ns::Box::operator<<");
	check_mode("_ZN2ns3BoxIiEptEv", SYM_DEMANGLE_SIMPLIFIED, "ns::Box::operator->");
	/* std::map<int, std::vector<int>>::find(int const&) */
	check_mode("_ZNSt3mapIiSt6vectorIiSaIiEESt4lessIiESaISt4pairIKiS2_EEE4findERS6_", SYM_DEMANGLE_SIMPLIFIED,
	           "std::map::find");
	/* A deeply nested hostile name must not hang or crash. */
	char deep[4100];
	strcpy(deep, "_Z1f");
	for (int i = 0; i < 400; i++) /* 4 + 400 * 10 bytes */
		strcat(deep, "St6vectorI");
	int oom;
	char *s = sym_demangle(deep, SYM_DEMANGLE_SIMPLIFIED, &oom);
	free(s);
}

/* ---- ELF images: counts checked before libelf allocates for them ---- */

/* A little-endian ELF64 header with section headers at 64 and section 0 after it. */
static void elf_header(uint8_t *img, uint16_t shnum, uint16_t phnum, uint64_t s0_size, uint32_t s0_info)
{
	memset(img, 0, 128);
	memcpy(img, "\177ELF\2\1\1", 7);
	img[16] = 3;  /* ET_DYN */
	img[18] = 62; /* EM_X86_64 */
	img[20] = 1;
	uint64_t shoff = 64;
	memcpy(img + 40, &shoff, 8);
	img[52] = 64;           /* e_ehsize */
	img[54] = 56;           /* e_phentsize */
	memcpy(img + 56, &phnum, 2);
	img[58] = 64;           /* e_shentsize */
	memcpy(img + 60, &shnum, 2);
	memcpy(img + 64 + 32, &s0_size, 8);
	memcpy(img + 64 + 44, &s0_info, 4);
}

static void elf_counts_checked_before_libelf(void **state)
{
	static uint8_t img[128];
	elf_header(img, 1, 0, 0, 0);
	Elf *e = sym_elf_begin_mem(img, sizeof(img));
	assert_non_null(e); /* one (null) section: fine */
	elf_end(e);
	/* Extended numbering: section 0's sh_size claims a million sections (libelf would
	 * allocate a descriptor for each). */
	elf_header(img, 0, 0, 1000000, 0);
	assert_null(sym_elf_begin_mem(img, sizeof(img)));
	elf_header(img, 0, 0, SYM_ELF_MAX_SECTIONS, 0);
	e = sym_elf_begin_mem(img, sizeof(img)); /* at the bound: libelf decides (too few headers) */
	if (e)
		elf_end(e);
	/* PN_XNUM: section 0's sh_info holds the segment count. */
	elf_header(img, 1, 0xffff, 0, 100000);
	assert_null(sym_elf_begin_mem(img, sizeof(img)));
	/* Truncated headers and other classes. */
	assert_null(sym_elf_begin_mem(img, 40));
	img[4] = 3;
	assert_null(sym_elf_begin_mem(img, sizeof(img)));
}

/* ---- MiniDebugInfo decompression and debuglink CRC ---- */

static void xz_round_trip_and_limits(void **state)
{
	static const char payload[] = "\x7f" "ELF pretend inner image, repeated repeated repeated repeated";
	uint8_t xz[1024];
	size_t xz_len = 0;
	assert_int_equal(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, (const uint8_t *)payload, sizeof(payload), xz,
	                                         &xz_len, sizeof(xz)),
	                 LZMA_OK);
	size_t out_len;
	enum sym_xz_status oom;
	unsigned char *out = sym_xz_decode(xz, xz_len, 1 << 20, &out_len, &oom);
	assert_non_null(out);
	assert_int_equal(out_len, sizeof(payload));
	assert_memory_equal(out, payload, sizeof(payload));
	free(out);
	/* Over the output bound: refused. */
	assert_null(sym_xz_decode(xz, xz_len, 8, &out_len, &oom));
	assert_int_equal(oom, SYM_XZ_TOO_BIG);
	/* Truncated and corrupted streams: refused as invalid, no crash. */
	for (size_t cut = 0; cut < xz_len; cut++) {
		assert_null(sym_xz_decode(xz, cut, 1 << 20, &out_len, &oom));
		assert_int_equal(oom, SYM_XZ_INVALID);
	}
	xz[xz_len / 2] ^= 0x55;
	assert_null(sym_xz_decode(xz, xz_len, 1 << 20, &out_len, &oom));
	assert_null(sym_xz_decode("not xz", 6, 1 << 20, &out_len, &oom));
	assert_int_equal(oom, SYM_XZ_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gopclntab_all_layouts),
		cmocka_unit_test(gopclntab_rejects_garbage),
		cmocka_unit_test(demangle_modes_match_spec),
		cmocka_unit_test(demangle_simplified_keeps_operators),
		cmocka_unit_test(elf_counts_checked_before_libelf),
		cmocka_unit_test(xz_round_trip_and_limits),
	};
	return cmocka_run_group_tests_name("sym_formats", tests, NULL, NULL);
}
