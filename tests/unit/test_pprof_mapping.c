/* Unit tests for what pprof Locations and Mappings carry (issue 17): named frames of this
 * very process through the real symbolizer (the address is the ELF virtual address, the
 * Mapping the /proc/self/maps line shifted by the load bias, the build ID the one in this
 * binary's note, read here without the symbols module), one Mapping per file however many
 * processes map it, unnamed frames without a Line on a mapping without has_functions,
 * kernel, JIT and unmapped frames, and the local store's pprof download keeping all that. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/pprof/builder.h"
#include "agent/pprof/decode.h"
#include "agent/pprof/gzip.h"
#include "agent/profile/collector.h"
#include "agent/symbols/symbolizer.h"
#include "agent/ui/store.h"
#include "lib/labels.h"

__attribute__((noinline, used)) int np_pm_marker_fn(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 7 + 3;
}

/* The frames through the one conversion the profiler uses, built, encoded and decoded. */
static struct np_pprof_profile *build_stubs(const struct sym_frame *f, size_t n, size_t n_kernel, int stubs)
{
	struct np_collected c = { .tgid = 1, .count = 3, .frames = f, .n_frames = n, .n_kernel = n_kernel };
	struct np_pprof_frame pf[16];
	struct np_pprof_builder *b;
	struct np_buf out = NP_BUF_INIT;
	struct np_pprof_profile *d;
	struct np_err err;

	assert_true(n <= 16);
	char names[16][NP_STUB_NAME_MAX];
	np_collected_pprof_frames(&c, pf);
	for (size_t i = 0; stubs && i < n; i++)
		np_pprof_frame_stub(&pf[i], names[i], sizeof(names[i]));
	assert_int_equal(np_pprof_new(100, 1700000000000000000LL, &b, &err), 0);
	assert_int_equal(np_pprof_add(b, pf, n, 3, &err), 0);
	assert_int_equal(np_pprof_encode(b, 0, &out, &err), 0);
	assert_int_equal(np_pprof_decode(out.p, out.len, 1 << 20, &d, &err), 0);
	np_pprof_free(b);
	np_buf_free(&out);
	return d;
}

static struct np_pprof_profile *build(const struct sym_frame *f, size_t n, size_t n_kernel)
{
	return build_stubs(f, n, n_kernel, 0);
}

static const struct np_pprof_location *loc(const struct np_pprof_profile *d, size_t sample, size_t i)
{
	return &d->locations[d->sample_locs[d->samples[sample].first_loc + i]];
}

static const char *loc_fn(const struct np_pprof_profile *d, const struct np_pprof_location *l)
{
	return l->nlines ? np_pprof_string(d, d->functions[d->lines[l->first_line].function].name) : NULL;
}

/* This binary's GNU build ID from its PT_NOTE segment, in lowercase hex. */
struct note_search {
	char hex[129];
};

static int find_build_id(struct dl_phdr_info *info, size_t size, void *ud)
{
	struct note_search *ns = ud;

	if (info->dlpi_name && info->dlpi_name[0]) /* the main program comes first, unnamed */
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		if (ph->p_type != PT_NOTE)
			continue;
		while (p + 12 <= end) {
			uint32_t namesz, descsz, type;
			memcpy(&namesz, p, 4);
			memcpy(&descsz, p + 4, 4);
			memcpy(&type, p + 8, 4);
			const unsigned char *desc = p + 12 + ((namesz + 3) & ~3u);
			if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + 12, "GNU", 4) && descsz <= 64) {
				for (uint32_t k = 0; k < descsz; k++)
					sprintf(ns->hex + 2 * k, "%02x", desc[k]);
				return 1;
			}
			p = desc + ((descsz + 3) & ~3u);
		}
	}
	return 0;
}

/* The /proc/self/maps line holding addr. */
static void maps_line(uint64_t addr, uint64_t *start, uint64_t *end, uint64_t *pgoff)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	int found = 0;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64, start, end, pgoff) == 3 && *start <= addr &&
		    addr < *end)
			found = 1;
	fclose(f);
	assert_true(found);
}

static void own_frames_carry_elf_address_and_mapping(void **state)
{
	struct sym_options o = { 0 };
	struct symbolizer *s;
	struct np_err err;
	uint32_t pid = (uint32_t)getpid();
	uint64_t fn = (uint64_t)(uintptr_t)np_pm_marker_fn;
	/* the leaf, then a return address into the same function (looked up at ip - 1) */
	uint64_t ips[2] = { fn + 2, fn + 5 };
	struct sym_frame f[2];
	struct note_search ns = { "" };
	uint64_t mstart, mend, pgoff;
	Dl_info di;

	assert_int_equal(symbolizer_new(&o, &s, &err), 0);
	assert_int_equal(symbolizer_user(s, pid, 0, ips, 2, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_int_equal(dl_iterate_phdr(find_build_id, &ns), 1);
	assert_int_equal(strlen(ns.hex), 40);
	assert_true(dladdr(np_pm_marker_fn, &di) != 0);
	maps_line(ips[0], &mstart, &mend, &pgoff);
	uint64_t bias = (uint64_t)(uintptr_t)di.dli_fbase; /* PIE: ELF vaddr = runtime - base */

	struct np_pprof_profile *d = build(f, 2, 0);
	assert_int_equal(d->nsamples, 1);
	const struct np_pprof_location *l0 = loc(d, 0, 0), *l1 = loc(d, 0, 1);
	assert_string_equal(loc_fn(d, l0), "np_pm_marker_fn");
	assert_string_equal(loc_fn(d, l1), "np_pm_marker_fn");
	/* what nm prints for the function, plus the offset; return addresses minus one */
	assert_true(l0->address == ips[0] - bias);
	assert_true(l1->address == ips[1] - 1 - bias);
	assert_true(l0 != l1); /* two addresses: two Locations of one function */
	assert_int_equal(l0->mapping, l1->mapping);
	assert_int_equal(d->nmappings, 2); /* mapping 1 (no file) and this binary */
	const struct np_pprof_mapping *m = &d->mappings[l0->mapping];
	assert_non_null(strstr(np_pprof_string(d, m->filename), "test_pprof_mapping"));
	assert_string_equal(np_pprof_string(d, m->build_id), ns.hex);
	/* the maps line, in the file's own space: same length, same file offset */
	assert_true(m->start == mstart - bias);
	assert_true(m->limit - m->start == mend - mstart);
	assert_true(m->offset == pgoff);
	assert_true(m->start <= l0->address && l0->address < m->limit);
	assert_true(l0->address - m->start == ips[0] - mstart);
	assert_int_equal(m->has_functions, 1);
	np_pprof_profile_free(d);
	symbolizer_end_batch(s);
	symbolizer_free(s);
}

/* Modules as the symbolizer hands them out: the same library in two processes at
 * different addresses, the kernel, anonymous (JIT) memory. */
static const struct sym_module lib_a = { "/usr/lib/libx.so.1", "0123456789abcdef0123", 0x7f0000001000, 0x7f0000005000,
					 0x1000, 0, 0 };
static const struct sym_module lib_b = { "/usr/lib/libx.so.1", "0123456789abcdef0123", 0x7f5500001000, 0x7f5500005000,
					 0x1000, 0, 0 };
static const struct sym_module kernel = { SYM_KERNEL_PATH, "feedface00112233", 0xffffffff81000000, 0xffffffff82000000,
					  0, 1, 0 };
static const struct sym_module jit = { "[anon]", "", 0x7e0000000000, 0x7e0000100000, 0, 0, 0 };

static struct sym_frame user(const char *name, const struct sym_module *m, uint64_t rel, int resolved)
{
	/* this library's text segment: file offset 0x1000 at vaddr 0x1000 */
	return (struct sym_frame){ .name = name, .module = m, .addr = m->start + rel - 0x1000, .rel_addr = rel,
				   .rel_start = 0x1000, .elf = 1, .resolved = resolved };
}

static void one_mapping_per_file_and_unnamed_frames(void **state)
{
	struct sym_frame f[] = {
		{ .name = "do_syscall_64", .module = &kernel, .rel_addr = 0xffffffff81001234,
		  .rel_start = 0xffffffff81000000, .resolved = 1 },
		user("libx.so.1+0x1692", &lib_a, 0x1692, 0), /* no symbol: the server's to name */
		{ .name = "LazyCompile:~handler", .module = &jit, .addr = 0x7e0000000040, .rel_addr = 0x7e0000000040,
		  .rel_start = 0x7e0000000000, .resolved = 1 },
		user("x_work", &lib_b, 0x1210, 1),  /* the same file in another process */
		user("x_main", &lib_a, 0x1100, 1),
		{ .name = "[unknown]", .addr = 0x1234 },
	};
	struct np_pprof_profile *d = build(f, 6, 1);
	const struct np_pprof_mapping *lib = NULL, *kern = NULL;

	assert_int_equal(d->nmappings, 4); /* no file, vmlinux, libx (once), [anon] */
	for (size_t i = 0; i < d->nmappings; i++) {
		const char *file = np_pprof_string(d, d->mappings[i].filename);
		if (!strcmp(file, "/usr/lib/libx.so.1"))
			lib = &d->mappings[i];
		if (!strcmp(file, "vmlinux"))
			kern = &d->mappings[i];
	}
	assert_non_null(lib);
	assert_non_null(kern);
	/* kernel: offset from the first symbol, named, the kernel's build ID (as Alloy) */
	assert_true(loc(d, 0, 0)->address == 0x1234);
	assert_string_equal(loc_fn(d, loc(d, 0, 0)), "do_syscall_64");
	assert_string_equal(np_pprof_string(d, kern->build_id), "feedface00112233");
	assert_true(kern->start == 0 && kern->limit == 0x1000000);
	assert_int_equal(kern->has_functions, 1);
	/* the unnamed library frame: its ELF address, no Line, the file's build ID */
	const struct np_pprof_location *un = loc(d, 0, 1);
	assert_true(un->address == 0x1692);
	assert_int_equal(un->nlines, 0);
	assert_ptr_equal(&d->mappings[un->mapping], lib);
	assert_string_equal(np_pprof_string(d, lib->build_id), "0123456789abcdef0123");
	assert_true(lib->start == 0x1000 && lib->limit == 0x5000 && lib->offset == 0x1000);
	assert_int_equal(lib->has_functions, 0); /* so the server symbolizes it */
	/* named frames of both processes on the one mapping */
	assert_ptr_equal(&d->mappings[loc(d, 0, 3)->mapping], lib);
	assert_ptr_equal(&d->mappings[loc(d, 0, 4)->mapping], lib);
	assert_string_equal(loc_fn(d, loc(d, 0, 3)), "x_work");
	assert_true(loc(d, 0, 3)->address == 0x1210);
	/* JIT code: named from the perf map, its runtime address in the process mapping */
	const struct np_pprof_location *j = loc(d, 0, 2);
	assert_string_equal(loc_fn(d, j), "LazyCompile:~handler");
	assert_true(j->address == 0x7e0000000040);
	assert_true(d->mappings[j->mapping].start == 0x7e0000000000 && d->mappings[j->mapping].has_functions);
	/* no mapping: [unknown] on mapping 1, address 0 */
	const struct np_pprof_location *u = loc(d, 0, 5);
	assert_string_equal(loc_fn(d, u), "[unknown]");
	assert_true(d->mappings[u->mapping].id == 1 && u->address == 0);
	np_pprof_profile_free(d);
}

/* reporter_unsymbolized_stubs: the unnamed frame gets Alloy's "$ FILE + 0xADDR" Line (the file's
 * base name, the address in the mapping's space); named, kernel and mapless frames keep theirs. */
static void unsymbolized_stubs(void **state)
{
	struct sym_frame f[] = {
		{ .name = "do_syscall_64", .module = &kernel, .rel_addr = 0xffffffff81001234,
		  .rel_start = 0xffffffff81000000, .resolved = 1 },
		user("libx.so.1+0x1692", &lib_a, 0x1692, 0),
		user("x_main", &lib_a, 0x1100, 1),
		{ .name = "[unknown]", .addr = 0x1234 },
	};
	struct np_pprof_profile *d = build_stubs(f, 4, 1, 1);

	assert_string_equal(loc_fn(d, loc(d, 0, 0)), "do_syscall_64");
	const struct np_pprof_location *un = loc(d, 0, 1);
	assert_int_equal(un->nlines, 1);
	assert_string_equal(loc_fn(d, un), "$ libx.so.1 + 0x1692");
	assert_true(un->address == 0x1692);
	assert_int_equal(d->mappings[un->mapping].has_functions, 1);
	assert_string_equal(loc_fn(d, loc(d, 0, 2)), "x_main");
	assert_string_equal(loc_fn(d, loc(d, 0, 3)), "[unknown]");
	np_pprof_profile_free(d);
}

/* The UI's store keeps the mapping and the address of unnamed frames for its download. */
static void store_download_keeps_addresses(void **state)
{
	struct sym_frame f[] = {
		user("libx.so.1+0x1692", &lib_a, 0x1692, 0),
		user("x_main", &lib_b, 0x1100, 1),
	};
	struct np_collected c = { .tgid = 1, .frames = f, .n_frames = 2 };
	struct np_pprof_frame pf[2];
	struct np_pprof_builder *b;
	struct np_buf plain = NP_BUF_INIT, gz = NP_BUF_INIT, down = NP_BUF_INIT;
	struct np_store *st;
	struct np_store_config cfg;
	struct np_labels ls = NP_LABELS_INIT;
	struct np_store_query q = { 0 };
	struct np_pprof_profile *d;
	struct np_err err;

	np_collected_pprof_frames(&c, pf);
	assert_int_equal(np_pprof_new(100, 0, &b, &err), 0);
	assert_int_equal(np_pprof_add(b, pf, 2, 5, &err), 0);
	assert_int_equal(np_pprof_encode(b, 0, &plain, &err), 0);
	assert_int_equal(np_gzip(plain.p, plain.len, 1, &gz, &err), 0);
	np_store_config_defaults(&cfg);
	assert_int_equal(np_store_new(&cfg, &st, &err), 0);
	assert_int_equal(np_labels_set(&ls, "service_name", "svc", &err), 0);
	void *copy = malloc(gz.len);
	assert_non_null(copy);
	memcpy(copy, gz.p, gz.len);
	assert_int_equal(np_store_add(st, &ls, copy, gz.len, &err), 0);
	assert_int_equal(np_store_pprof(st, &q, &down, &err), 0);
	assert_int_equal(np_pprof_decode(down.p, down.len, 1 << 20, &d, &err), 0);
	assert_int_equal(d->nsamples, 1);
	const struct np_pprof_location *un = loc(d, 0, 0), *named = loc(d, 0, 1);
	const struct np_pprof_mapping *m = &d->mappings[un->mapping];
	assert_int_equal(un->nlines, 0);
	assert_true(un->address == 0x1692);
	assert_string_equal(np_pprof_string(d, m->filename), "/usr/lib/libx.so.1");
	assert_string_equal(np_pprof_string(d, m->build_id), "0123456789abcdef0123");
	assert_true(m->start == 0x1000 && m->limit == 0x5000 && m->offset == 0x1000);
	assert_int_equal(m->has_functions, 0);
	assert_string_equal(loc_fn(d, named), "x_main");
	assert_int_equal(named->mapping, un->mapping); /* one Mapping for the file */
	/* the flame graph names the unnamed frame as the node does */
	struct np_buf js = NP_BUF_INIT;
	assert_int_equal(np_store_top_json(st, &q, 0, &js, &err), 0);
	assert_non_null(strstr(js.p, "\"libx.so.1+0x1692\""));
	np_buf_free(&js);
	np_pprof_profile_free(d);
	np_labels_free(&ls);
	np_store_free(st);
	np_pprof_free(b);
	np_buf_free(&plain);
	np_buf_free(&gz);
	np_buf_free(&down);
}

/* The labels Alloy's reporter/pprof.go writes (docs/specs/trace-correlation.md §3): span_id and
 * trace_id in lowercase hex after comm and pid, each only when not all zeros; a sample outside
 * any span has none, and the same stack in two spans stays two samples. */
static const char *label_of(const struct np_pprof_profile *d, size_t sample, const char *key)
{
	const struct np_pprof_sample *s = &d->samples[sample];

	for (uint32_t i = 0; i < s->nlabels; i++) {
		const struct np_pprof_label *l = &d->labels[s->first_label + i];
		if (!strcmp(np_pprof_string(d, l->key), key))
			return np_pprof_string(d, l->str);
	}
	return NULL;
}

static void trace_labels(void **state)
{
	struct sym_frame f[] = { user("x_main", &lib_b, 0x1100, 1) };
	struct np_trace_ctx in = { .trace_id = { 0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21,
						 0x1c, 0x80, 0x31, 0x9c },
				   .span_id = { 0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31 } };
	struct np_trace_ctx trace_only = { .trace_id = { [15] = 1 } }, none = { 0 };
	const struct np_trace_ctx *ctx[] = { &in, &trace_only, &none, NULL };
	struct np_sample_extras x = { .pid_label = 1 };
	struct np_pprof_frame pf[2];
	struct np_pprof_builder *b;
	struct np_buf out = NP_BUF_INIT;
	struct np_pprof_profile *d;
	struct np_err err;

	(void)state;
	assert_int_equal(np_pprof_new(100, 0, &b, &err), 0);
	for (size_t i = 0; i < 4; i++) {
		struct np_collected c = { .tgid = 42, .count = i + 1, .frames = f, .n_frames = 1, .trace = ctx[i] };
		np_collected_pprof_frames(&c, pf);
		assert_int_equal(np_collected_add_pprof(b, &c, pf, &x, &err), 0);
	}
	assert_int_equal(np_pprof_encode(b, 0, &out, &err), 0);
	assert_int_equal(np_pprof_decode(out.p, out.len, 1 << 20, &d, &err), 0);
	assert_int_equal(d->nsamples, 3); /* no span and a NULL context are the same sample */
	int seen = 0;
	for (size_t i = 0; i < d->nsamples; i++) {
		int64_t v = d->values[d->samples[i].first_value] / 10000000; /* samples x the 100 Hz period */
		const char *span = label_of(d, i, "span_id"), *trace = label_of(d, i, "trace_id");
		assert_string_equal(label_of(d, i, "pid"), "42");
		if (v == 1) {
			assert_string_equal(span, "b7ad6b7169203331");
			assert_string_equal(trace, "0af7651916cd43dd8448eb211c80319c");
			assert_int_equal(d->samples[i].nlabels, 3);
		} else if (v == 2) {
			assert_null(span);
			assert_string_equal(trace, "00000000000000000000000000000001");
		} else {
			assert_int_equal(v, 3 + 4);
			assert_null(span);
			assert_null(trace);
		}
		seen |= 1 << (v == 7 ? 0 : v);
	}
	assert_int_equal(seen, 7);
	np_pprof_profile_free(d);
	np_pprof_free(b);
	np_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(own_frames_carry_elf_address_and_mapping),
		cmocka_unit_test(one_mapping_per_file_and_unnamed_frames),
		cmocka_unit_test(store_download_keeps_addresses),
		cmocka_unit_test(unsymbolized_stubs),
		cmocka_unit_test(trace_labels),
	};
	return cmocka_run_group_tests_name("pprof_mapping", tests, NULL, NULL);
}
