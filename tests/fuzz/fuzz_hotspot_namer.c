/* Fuzzes the naming of Java frames from a JVM's memory (agent/runtime/hotspot/namer.c), which
 * a pod controls byte for byte: Methods, ConstMethods, constant pools, classes, Symbols, line
 * tables, nmethods with their metadata, scopes and PcDescs; and the stream decoders and the
 * descriptor formatter on their own.
 *
 * Input: byte 0 picks the mode. Modes 0 and 1: the whole input is a memory image at BASE read
 * with JDK 17's (0) or JDK 25's (1) offsets; bytes 1-72 are six frames of 12 bytes: kind
 * (even: interpreted, odd: compiled), a pad byte, the Method/nmethod's offset in the image
 * (u16), a pc offset (u16), a pad u16 and a u32 (bci, or compile id). Mode 2: the rest is a
 * line table (byte 1 the UNSIGNED5 x, bytes 2-5 a bci). Mode 3: NUL-separated class, method
 * and signature.
 * Invariants: every frame gets a non-NULL valid UTF-8 name (a method's or "[unknown java]"),
 * a compiled frame at least one and at most cap frames, one cached nmethod per frame,
 * lines are ints, formatted names are NUL-terminated within their buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/hotspot/namer.h"
#include "lib/gostr.h"
#include "tests/fuzz/hotspot_layouts.h"
#include "tests/fuzz/mem_image.h"

#define BASE 0x7f0000000000ULL

/* JDK 17's offsets, or JDK 25's (tests/fuzz/hotspot_layouts.h). */
static void layout(int jdk25, struct hs_names_layout *l)
{
	if (jdk25)
		layout25(l);
	else
		layout17(l);
}

static void check_frame(const struct sym_frame *f)
{
	if (!f->name || !np_go_utf8_valid(f->name, strlen(f->name)) ||
	    (f->file && !np_go_utf8_valid(f->file, strlen(f->file))) || f->line > INT32_MAX || f->start_line > INT32_MAX)
		abort();
}

static void frames(const uint8_t *data, size_t size)
{
	struct mem_image im = { BASE, data, size };
	struct hs_names_layout l;
	struct hs_namer *n;
	struct np_err err;
	struct sym_frame f[HS_MAX_SCOPES];
	struct hs_namer_stats st;

	if (size < 73)
		return;
	layout(data[0] & 1, &l);
	if (hs_namer_new(1 << 16, &n, &err))
		abort();
	hs_namer_set_reader(n, mem_image_read, &im);
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < 6; i++) {
			const uint8_t *s = data + 1 + 12 * i;
			uint16_t off, pc;
			uint32_t arg;
			size_t count, cap = 1 + (s[1] % HS_MAX_SCOPES);
			memcpy(&off, s + 2, 2);
			memcpy(&pc, s + 4, 2);
			memcpy(&arg, s + 8, 4);
			if (s[0] & 1) {
				struct hs_compiled_frame cf = { .nmethod = BASE + off, .pc = BASE + pc, .compile_id = arg };
				if (hs_namer_compiled(n, 1, 1, &l, &cf, f, cap, &count, &err))
					abort();
				if (count < 1 || count > cap)
					abort();
				for (size_t k = 0; k < count; k++)
					check_frame(&f[k]);
			} else {
				struct hs_interp_frame fr = { .method = BASE + off, .bci = (int32_t)arg,
							      .const_method = s[0] & 2 ? BASE + pc : 0 };
				if (hs_namer_interpreted(n, 1, 1, &l, &fr, f, &err))
					abort();
				check_frame(&f[0]);
			}
		}
		hs_namer_stats(n, &st);
		/* One nmethod entry per compiled frame named (the cache may be dropped in between);
		 * methods come from the frames and the scopes of their nmethods. */
		if (st.nmethods > 12)
			abort();
		hs_namer_end_batch(n);
	}
	hs_namer_free(n);
}

static void lines(const uint8_t *data, size_t size)
{
	int32_t bci;
	unsigned first, a;
	uint8_t *t;
	size_t n;

	if (size < 6)
		return;
	memcpy(&bci, data + 2, 4);
	n = size - 6;
	t = malloc(n ? n : 1);
	if (!t)
		return;
	memcpy(t, data + 6, n);
	a = hs_line_at(t, n, data[1] & 1, bci % 4096, 4096, &first);
	if (a > INT32_MAX || first > INT32_MAX || a != hs_line_at(t, n, data[1] & 1, bci % 4096, 4096, NULL))
		abort();
	for (size_t pos = 0; pos < n;) {
		uint32_t v;
		size_t before = pos;
		if (hs_u5_read(t, n, &pos, data[1] & 1, &v)) {
			if (pos != before)
				abort();
			break;
		}
		if (pos <= before || pos - before > 5)
			abort();
	}
	free(t);
}

static void format(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 3), out[64];
	const char *parts[3];
	size_t at = 0;

	if (!s)
		return;
	memcpy(s, data + 1, size - 1);
	memset(s + size - 1, 0, 4);
	for (int i = 0; i < 3; i++) {
		parts[i] = s + at;
		at += strlen(s + at) + 1;
		if (at > size)
			at = size;
	}
	(void)hs_format_method(parts[0], parts[1], parts[2], data[0] & 4, out, sizeof(out));
	if (strnlen(out, sizeof(out)) >= sizeof(out))
		abort();
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 4) {
	case 0:
	case 1:
		frames(data, size);
		break;
	case 2:
		lines(data, size);
		break;
	default:
		format(data, size);
		break;
	}
	return 0;
}
