/* libFuzzer target for agent/runtime/python/layout: line tables of every version's format
 * (py_line_at), instruction offsets, and 3.13's _Py_DebugOffsets (py_layout_from_debug_offsets),
 * all of which come from processes and files a container controls.
 *
 * Input: byte 0 picks the function (even: line table; odd: debug offsets).
 *   line table:    byte 1 the version (3.8 to 3.13), bytes 2-5 co_firstlineno, 6-13 the byte
 *                  offset, 14-21 and 22-29 an instruction field and a code address, the rest
 *                  the table
 *   debug offsets: byte 1 the minor version asked for (12, 13 or 14), the rest _PyRuntime's bytes
 * Invariants: nothing read past the input (exact-size copies), a line is an int or 0, a frame
 * not started is on its first line, an accepted layout has every offset below 64 KiB with the
 * unicode headers in order. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/python/layout.h"

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void lines(const uint8_t *data, size_t size)
{
	struct py_layout l313 = { .major = 3, .minor = 13, .instr = PY_INSTR_PTR, .code_code_adaptive = 200 };
	const struct py_layout *l;
	unsigned minor;
	int first;
	int64_t off, b;
	uint8_t *table;
	size_t n;

	if (size < 30)
		return;
	minor = 8 + data[1] % 6;
	l = minor <= 12 ? py_layout_table(3, minor) : &l313;
	first = (int)(uint32_t)get64(data + 2);
	off = (int64_t)get64(data + 6);
	/* Mostly small offsets, where the tables have entries. */
	if (data[1] & 0x80)
		off = off % 4096;
	n = size - 30;
	table = malloc(n ? n : 1);
	if (!table)
		return;
	memcpy(table, data + 30, n);
	unsigned a = py_line_at(l, table, n, first, off);
	if (a > INT_MAX || a != py_line_at(l, table, n, first, off))
		abort();
	if (off < 0 && a != (first > 0 ? (unsigned)first : 0))
		abort();
	/* Every prefix of a short table, as a read cut anywhere would give. */
	for (size_t cut = 0; cut < n && cut < 32; cut++)
		if (py_line_at(l, table, cut, first, off) > INT_MAX)
			abort();
	free(table);

	b = py_instr_byte_offset(l, get64(data + 14), get64(data + 22));
	if (b < -1 || b > (int64_t)INT32_MAX * 2)
		abort();
}

static void debug_offsets(const uint8_t *data, size_t size)
{
	static const unsigned minors[] = { 12, 13, 13, 14 };
	struct py_layout l;
	struct np_err err;
	uint8_t *rt;
	size_t n;
	int rc;

	if (size < 2)
		return;
	n = size - 2;
	rt = malloc(n ? n : 1);
	if (!rt)
		return;
	memcpy(rt, data + 2, n);
	rc = py_layout_from_debug_offsets(rt, n, 3, minors[data[1] % 4], &l, &err);
	free(rt);
	if (rc < 0) {
		if (!err.msg[0])
			abort(); /* a refusal says why */
		return;
	}
	const uint32_t offs[] = { l.runtime_interpreters_head, l.interp_threads_head, l.tstate_next,
				  l.tstate_native_thread_id, l.tstate_thread_id, l.tstate_frame, l.frame_previous,
				  l.frame_code, l.frame_instr, l.frame_owner, l.code_filename, l.code_name,
				  l.code_qualname, l.code_firstlineno, l.code_linetable, l.code_code_adaptive,
				  l.unicode_length, l.unicode_state, l.unicode_ascii_size, l.bytes_size, l.bytes_sval };
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] > (64u << 10))
			abort();
	if (l.major != 3 || l.minor != 13 || l.frames != PY_FRAMES_312 || l.instr != PY_INSTR_PTR ||
	    l.cframe_current_frame != PY_NONE || l.unicode_state + 4 > l.unicode_ascii_size ||
	    l.unicode_length + 8 > l.unicode_ascii_size || l.unicode_compact_size != l.unicode_ascii_size + 16)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		debug_offsets(data, size);
	else
		lines(data, size);
	return 0;
}
