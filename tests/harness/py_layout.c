/* Prints what agent/runtime/python/layout knows, for tests/integration/test_python_layout.py to hold
 * against each CPython version's headers (tests/python/layout_probe.c) and interpreters:
 *
 *   py_layout MAJOR.MINOR            the table's layout (3.8 to 3.12), as JSON with the field
 *                                    names of struct py_layout (PY_NONE is null)
 *   py_layout MAJOR.MINOR LIBPYTHON  the layout from _Py_DebugOffsets (3.13+): the initial bytes
 *                                    of _PyRuntime in that ELF file
 *   py_layout lines MAJOR.MINOR      reads {"functions": [{"name", "table" (hex),
 *                                    "firstlineno", "offsets": [byte offsets]}]} on stdin and
 *                                    prints {"NAME": [py_line_at of each offset]}
 *   py_layout instr MAJOR.MINOR RAW CODE_ADDR   py_instr_byte_offset (decimal or 0x hex)
 *
 * Exit status 1 with a message on stderr when the layout is refused or the input is bad. */
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/runtime/python/layout.h"
#include "agent/symbols/elf_file.h"

/* _PyRuntime is ~100 KiB; its debug offsets are the first few hundred bytes. */
#define RUNTIME_READ 4096

static int parse_version(const char *s, unsigned *major, unsigned *minor)
{
	char *end;
	unsigned long a = strtoul(s, &end, 10), b;

	if (*end != '.')
		return -1;
	b = strtoul(end + 1, &end, 10);
	if (*end || a > 99 || b > 99)
		return -1;
	*major = (unsigned)a;
	*minor = (unsigned)b;
	return 0;
}

static void field(const char *name, uint32_t v, int *first)
{
	printf("%s\n  \"%s\": ", *first ? "{" : ",", name);
	*first = 0;
	if (v == PY_NONE)
		printf("null");
	else
		printf("%" PRIu32, v);
}

static void print_layout(const struct py_layout *l)
{
	int first = 1;

	field("major", l->major, &first);
	field("minor", l->minor, &first);
	field("frames", l->frames, &first);
	field("instr", l->instr, &first);
#define F(name) field(#name, l->name, &first)
	F(runtime_interpreters_head);
	F(interp_threads_head);
	F(tstate_next);
	F(tstate_native_thread_id);
	F(tstate_thread_id);
	F(tstate_frame);
	F(cframe_current_frame);
	F(frame_previous);
	F(frame_code);
	F(frame_instr);
	F(frame_owner);
	F(code_filename);
	F(code_name);
	F(code_qualname);
	F(code_firstlineno);
	F(code_linetable);
	F(code_code_adaptive);
	F(unicode_length);
	F(unicode_state);
	F(unicode_ascii_size);
	F(unicode_compact_size);
	F(bytes_size);
	F(bytes_sval);
#undef F
	printf("\n}\n");
}

/* The file bytes of _PyRuntime's initial value: the symbol's place in the section that holds
 * it (.data, PROGBITS). */
static int read_runtime(const char *path, uint8_t *buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	uint64_t value, size;
	Elf_Scn *scn = NULL;
	int rc = -1;

	if (fd < 0) {
		perror(path);
		return -1;
	}
	e = sym_elf_begin_fd(fd);
	if (!e) {
		fprintf(stderr, "%s: not an ELF file we read\n", path);
		close(fd);
		return -1;
	}
	if (sym_elf_find_symbol(e, fd, "_PyRuntime", (size_t)64 << 20, &value, &size) < 0) {
		fprintf(stderr, "%s: no _PyRuntime symbol\n", path);
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC) ||
		    value < sh.sh_addr || value - sh.sh_addr >= sh.sh_size)
			continue;
		n = sh.sh_size - (value - sh.sh_addr);
		if (n > size)
			n = size;
		if (n > RUNTIME_READ)
			n = RUNTIME_READ;
		d = elf_getdata_rawchunk(e, (int64_t)(sh.sh_offset + (value - sh.sh_addr)), n, ELF_T_BYTE);
		if (!d || !d->d_buf || d->d_size != n) {
			fprintf(stderr, "%s: cannot read _PyRuntime: %s\n", path, elf_errmsg(-1));
			goto out;
		}
		memcpy(buf, d->d_buf, n);
		*len = n;
		rc = 0;
		goto out;
	}
	fprintf(stderr, "%s: _PyRuntime (0x%" PRIx64 ") is in no section with file contents\n", path, value);
out:
	elf_end(e);
	close(fd);
	return rc;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static int lines(const struct py_layout *l)
{
	json_error_t jerr;
	json_t *in = json_loadf(stdin, 0, &jerr), *fns, *fn, *out;
	size_t i;

	if (!in) {
		fprintf(stderr, "stdin: %s (line %d)\n", jerr.text, jerr.line);
		return 1;
	}
	fns = json_object_get(in, "functions");
	out = json_object();
	json_array_foreach(fns, i, fn) {
		const char *name = json_string_value(json_object_get(fn, "name"));
		const char *hex = json_string_value(json_object_get(fn, "table"));
		json_t *offsets = json_object_get(fn, "offsets"), *o, *res;
		size_t n, j;
		uint8_t *table;

		if (!name || !hex || !json_is_integer(json_object_get(fn, "firstlineno")) || !json_is_array(offsets) ||
		    strlen(hex) % 2) {
			fprintf(stderr, "function %zu: needs name, table (hex), firstlineno, offsets\n", i);
			return 1;
		}
		n = strlen(hex) / 2;
		/* Exactly n bytes: under ASan a read past the table is a crash. */
		table = malloc(n ? n : 1);
		if (!table)
			return 1;
		for (j = 0; j < n; j++) {
			int h = hexval(hex[2 * j]), lo = hexval(hex[2 * j + 1]);
			if (h < 0 || lo < 0) {
				fprintf(stderr, "%s: bad hex\n", name);
				return 1;
			}
			table[j] = (uint8_t)(h << 4 | lo);
		}
		res = json_array();
		json_array_foreach(offsets, j, o) {
			unsigned line = py_line_at(l, table, n, (int)json_integer_value(json_object_get(fn, "firstlineno")),
						   json_integer_value(o));
			json_array_append_new(res, json_integer(line));
		}
		json_object_set_new(out, name, res);
		free(table);
	}
	json_dumpf(out, stdout, JSON_COMPACT);
	printf("\n");
	json_decref(out);
	json_decref(in);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned major, minor;
	const struct py_layout *t;
	struct py_layout l;

	if (argc >= 3 && strcmp(argv[1], "lines") == 0) {
		if (parse_version(argv[2], &major, &minor) < 0)
			return 2;
		t = py_layout_table(major, minor);
		if (!t) {
			/* Only the version matters to the line tables. */
			memset(&l, 0, sizeof(l));
			l.major = major;
			l.minor = minor;
			t = &l;
		}
		return lines(t);
	}
	if (argc == 5 && strcmp(argv[1], "instr") == 0) {
		if (parse_version(argv[2], &major, &minor) < 0 || !(t = py_layout_table(major, minor)))
			return 2;
		printf("%" PRId64 "\n",
		       py_instr_byte_offset(t, strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0)));
		return 0;
	}
	if (argc < 2 || argc > 3 || parse_version(argv[1], &major, &minor) < 0) {
		fprintf(stderr, "usage: py_layout MAJOR.MINOR [LIBPYTHON] | lines MAJOR.MINOR | instr MAJOR.MINOR RAW CODE\n");
		return 2;
	}
	if (argc == 2) {
		t = py_layout_table(major, minor);
		if (!t) {
			fprintf(stderr, "no table entry for %u.%u\n", major, minor);
			return 1;
		}
		print_layout(t);
		return 0;
	}
	{
		static uint8_t buf[RUNTIME_READ];
		size_t len = 0;
		struct np_err err;

		if (read_runtime(argv[2], buf, &len) < 0)
			return 1;
		if (py_layout_from_debug_offsets(buf, len, major, minor, &l, &err) < 0) {
			fprintf(stderr, "%s: %s\n", argv[2], err.msg);
			return 1;
		}
		print_layout(&l);
	}
	return 0;
}
