/* Source lines of CPython bytecode offsets from a code object's line table, in each version's
 * format, as CPython's own PyCode_Addr2Line reads it (Objects/codeobject.c and
 * Objects/lnotab_notes.txt of each version):
 *
 *   3.8, 3.9  co_lnotab: pairs (byte offset increment, line increment as a signed byte).
 *   3.10      co_linetable: pairs (range length in bytes, line delta as a signed byte), -128 for
 *             a range without a line.
 *   3.11+     the location table: entries of a first byte (bit 7 set, a 4-bit code, the range
 *             length in code units minus one) followed by the code's varints or column bytes
 *             (bit 7 clear).
 *
 * The table comes from a process nobody trusts, so unlike CPython nothing is asserted: every
 * read is within len, every loop consumes at least one byte, line arithmetic is done in 64 bits
 * and clamped, and anything that is not a positive int line is "no line" (0).
 * tests/integration/test_python_layout.py compares every offset of real functions with what each
 * interpreter says. */
#include "agent/runtime/python/layout.h"

#include <limits.h>

/* Far beyond any real line, far from overflowing int64_t however long the table. */
#define LINE_CLAMP ((int64_t)1 << 40)

static unsigned line_result(int64_t line)
{
	return line > 0 && line <= INT_MAX ? (unsigned)line : 0;
}

static int64_t clamp(int64_t line)
{
	return line > LINE_CLAMP ? LINE_CLAMP : line < -LINE_CLAMP ? -LINE_CLAMP : line;
}

static int sbyte(uint8_t b)
{
	return b < 128 ? b : (int)b - 256;
}

/* 3.8, 3.9: the line of the last pair whose cumulative offset is <= q. An odd last byte is not
 * a pair (CPython counts len / 2 of them). */
static unsigned lnotab_line(const uint8_t *t, size_t len, int64_t line, int64_t q)
{
	int64_t addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > q)
			break;
		line += sbyte(t[i + 1]);
	}
	return line_result(line);
}

/* 3.10: ranges [start, start + length) one after the other; empty ones only move the line. */
static unsigned pairs_line(const uint8_t *t, size_t len, int64_t line, int64_t q)
{
	int64_t end = 0;

	for (size_t i = 0; i < len; i += 2) {
		int64_t start = end;
		/* A lone last byte: CPython reads the NUL every bytes object ends with as its delta. */
		int delta = i + 1 < len ? sbyte(t[i + 1]) : 0;

		end += t[i];
		if (delta != -128)
			line += delta;
		if (start <= q && q < end)
			return delta == -128 ? 0 : line_result(line);
	}
	return 0;
}

/* 6-bit chunks, least significant first, bit 6 set on all but the last. Bits past 32 are
 * dropped (CPython keeps an unsigned int); the table's end ends the number (CPython would
 * read the bytes object's NUL there, which ends it too). */
static uint32_t varint(const uint8_t *t, size_t len, size_t i)
{
	uint32_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;

	do {
		if (i >= len)
			break;
		b = t[i++];
		if (shift < 32) {
			v |= (uint32_t)(b & 63) << shift;
			shift += 6;
		}
	} while (b & 64);
	return v;
}

static int64_t svarint(const uint8_t *t, size_t len, size_t i)
{
	uint32_t u = varint(t, len, i);

	return u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
}

enum {
	LOC_ONE_LINE0 = 10, /* 10, 11, 12: the line moves by 0, 1, 2; two column bytes */
	LOC_NO_COLUMNS = 13, /* line delta as an svarint */
	LOC_LONG = 14,	     /* line delta svarint, end line, start and end columns varints */
	LOC_NONE = 15,	     /* no location */
};

/* 3.11+: entries one after the other, each a range of ((b & 7) + 1) code units. Like CPython, the
 * next entry is the next byte with bit 7 set, whatever the codes' operands claimed. */
static unsigned locations_line(const uint8_t *t, size_t len, int64_t line, int64_t q)
{
	int64_t end = 0;
	size_t i = 0;

	while (i < len) {
		uint8_t b = t[i];
		int code = b >> 3 & 15;
		int64_t start = end;

		end += ((b & 7) + 1) * 2;
		if (code == LOC_NO_COLUMNS || code == LOC_LONG)
			line = clamp(line + svarint(t, len, i + 1));
		else if (code >= LOC_ONE_LINE0 && code < LOC_NO_COLUMNS)
			line += code - LOC_ONE_LINE0;
		for (i++; i < len && !(t[i] & 128); i++)
			;
		if (start <= q && q < end)
			/* Only a first byte with bit 7 set says "no location" (CPython's test is b >> 3 == 0x1f). */
			return b >> 3 == (0x10 | LOC_NONE) ? 0 : line_result(line);
	}
	return 0;
}

unsigned py_line_at(const struct py_layout *l, const uint8_t *table, size_t len, int firstlineno,
		    int64_t byte_offset)
{
	if (!l || l->major != 3)
		return 0;
	if (byte_offset < 0)
		return line_result(firstlineno);
	if (!table)
		len = 0;
	if (l->minor <= 9)
		return lnotab_line(table, len, firstlineno, byte_offset);
	if (l->minor == 10)
		return pairs_line(table, len, firstlineno, byte_offset);
	return locations_line(table, len, firstlineno, byte_offset);
}
