/* The offsets nodeprof reads in a CPython interpreter, per minor version: a table for 3.8 to
 * 3.12 (x86-64, default builds: not debug, not free-threaded), and for 3.13 the interpreter's
 * own _Py_DebugOffsets, read from a file a container controls and so checked like any
 * untrusted input. Line tables are decoded in lines.c. */
#include "agent/runtime/python/layout.h"

#include <string.h>

/* Every value below is what tests/python/layout_probe.c prints when compiled against that
 * version's headers (3.8.18, 3.9.18, 3.10.13, 3.11.7, 3.12.1);
 * tests/integration/test_python_layout.py fails when one differs. */
static const struct py_layout table[] = {
	{
		.major = 3, .minor = 8,
		.frames = PY_FRAMES_OBJECT, .instr = PY_INSTR_LASTI_BYTES,
		.runtime_interpreters_head = 32,
		.interp_threads_head = 8, /* tstate_head */
		.tstate_next = 8, .tstate_native_thread_id = PY_NONE, .tstate_thread_id = 176,
		.tstate_frame = 24, .cframe_current_frame = PY_NONE,
		.frame_previous = 24, .frame_code = 32, .frame_instr = 104, .frame_owner = PY_NONE,
		.code_filename = 104, .code_name = 112, .code_qualname = PY_NONE, .code_firstlineno = 40,
		.code_linetable = 120, /* co_lnotab */
		.code_code_adaptive = PY_NONE,
		.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48, .unicode_compact_size = 72,
		.bytes_size = 16, .bytes_sval = 32,
	},
	{
		.major = 3, .minor = 9,
		.frames = PY_FRAMES_OBJECT, .instr = PY_INSTR_LASTI_BYTES,
		.runtime_interpreters_head = 32,
		.interp_threads_head = 8, /* tstate_head */
		.tstate_next = 8, .tstate_native_thread_id = PY_NONE, .tstate_thread_id = 176,
		.tstate_frame = 24, .cframe_current_frame = PY_NONE,
		.frame_previous = 24, .frame_code = 32, .frame_instr = 104, .frame_owner = PY_NONE,
		.code_filename = 104, .code_name = 112, .code_qualname = PY_NONE, .code_firstlineno = 40,
		.code_linetable = 120, /* co_lnotab */
		.code_code_adaptive = PY_NONE,
		.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48, .unicode_compact_size = 72,
		.bytes_size = 16, .bytes_sval = 32,
	},
	{
		.major = 3, .minor = 10,
		.frames = PY_FRAMES_OBJECT, .instr = PY_INSTR_LASTI_UNITS,
		.runtime_interpreters_head = 32,
		.interp_threads_head = 8, /* tstate_head */
		.tstate_next = 8, .tstate_native_thread_id = PY_NONE, .tstate_thread_id = 176,
		.tstate_frame = 24, .cframe_current_frame = PY_NONE,
		.frame_previous = 24, .frame_code = 32, .frame_instr = 96, .frame_owner = PY_NONE,
		.code_filename = 104, .code_name = 112, .code_qualname = PY_NONE, .code_firstlineno = 40,
		.code_linetable = 120, /* co_linetable */
		.code_code_adaptive = PY_NONE,
		.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48, .unicode_compact_size = 72,
		.bytes_size = 16, .bytes_sval = 32,
	},
	{
		.major = 3, .minor = 11,
		.frames = PY_FRAMES_311, .instr = PY_INSTR_PTR,
		.runtime_interpreters_head = 40,
		.interp_threads_head = 16, /* threads.head: 3.11 already has struct pythreads */
		.tstate_next = 8, .tstate_native_thread_id = 160, .tstate_thread_id = 152,
		.tstate_frame = 56, /* cframe */
		.cframe_current_frame = 8,
		.frame_previous = 48, .frame_code = 32, .frame_instr = 56, /* prev_instr */
		.frame_owner = 68, /* is_entry */
		.code_filename = 112, .code_name = 120, .code_qualname = 128, .code_firstlineno = 72,
		.code_linetable = 136, .code_code_adaptive = 184,
		.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48, .unicode_compact_size = 72,
		.bytes_size = 16, .bytes_sval = 32,
	},
	{
		.major = 3, .minor = 12,
		.frames = PY_FRAMES_312, .instr = PY_INSTR_PTR,
		.runtime_interpreters_head = 40,
		.interp_threads_head = 72, /* threads.head */
		.tstate_next = 8, .tstate_native_thread_id = 144, .tstate_thread_id = 136,
		.tstate_frame = 56, /* cframe */
		.cframe_current_frame = 0,
		.frame_previous = 8, .frame_code = 0, .frame_instr = 56, /* prev_instr */
		.frame_owner = 70, /* owner */
		.code_filename = 112, .code_name = 120, .code_qualname = 128, .code_firstlineno = 68,
		.code_linetable = 136, .code_code_adaptive = 192,
		/* 3.12 dropped wstr: the unicode headers are 8 bytes shorter */
		.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 40, .unicode_compact_size = 56,
		.bytes_size = 16, .bytes_sval = 32,
	},
};

const struct py_layout *py_layout_table(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].major == major && table[i].minor == minor)
			return &table[i];
	return NULL;
}

/* _Py_DebugOffsets as 3.13 defines it (Include/internal/pycore_runtime.h): only uint64_t
 * fields after the 8-byte cookie, so no padding, and offsetof here is the field's place in
 * the interpreter's bytes. Later versions add fields in the middle of the sections (3.14 does),
 * so this layout is 3.13's alone; another version's is not guessed. */
struct dbg313 {
	char cookie[8];
	uint64_t version;
	uint64_t free_threaded;
	struct {
		uint64_t size, finalizing, interpreters_head;
	} runtime_state;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
			gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked,
			gil_runtime_state_holder;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
			status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
			localspluskinds, co_code_adaptive;
	} code_object;
	struct {
		uint64_t size, ob_type;
	} pyobject;
	struct {
		uint64_t size, tp_name, tp_repr, tp_flags;
	} type_object;
	struct {
		uint64_t size, ob_item, ob_size;
	} tuple_object, list_object;
	struct {
		uint64_t size, ma_keys, ma_values;
	} dict_object;
	struct {
		uint64_t size, ob_fval;
	} float_object;
	struct {
		uint64_t size, lv_tag, ob_digit;
	} long_object;
	struct {
		uint64_t size, ob_size, ob_sval;
	} bytes_object;
	struct {
		uint64_t size, state, length, asciiobject_size;
	} unicode_object;
	struct {
		uint64_t size, collecting;
	} gc;
};
_Static_assert(sizeof(struct dbg313) == 584, "3.13's _Py_DebugOffsets is 584 bytes");

#define DBG_COOKIE "xdebugpy"
/* The walker reads fields at offsets below this; the real ones are below 8 KiB (3.13's
 * largest is PyInterpreterState.threads.head at 7344). */
#define DBG_MAX_OFFSET ((uint64_t)64 << 10)
/* A structure size no version comes near (sizeof(_PyRuntimeState) is about 100 KiB): bounds
 * the sizes so that the checks below cannot overflow. */
#define DBG_MAX_SIZE ((uint64_t)16 << 20)
/* What 3.13 keeps after PyASCIIObject in PyCompactUnicodeObject: utf8_length, utf8. */
#define COMPACT_EXTRA_313 16

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#define DBG(field) le64(runtime + offsetof(struct dbg313, field))

/* One offset of a structure, size its sizeof from the same block: the walker reads width
 * bytes there, so off + width must lie within size (and below DBG_MAX_OFFSET). */
static int dbg_field(uint64_t size, uint64_t off, uint64_t width, const char *what, uint32_t *out,
		     struct np_err *err)
{
	if (size > DBG_MAX_SIZE)
		return np_errf(err, "_Py_DebugOffsets: %s: structure size %llu is implausible", what,
			       (unsigned long long)size);
	if (off > DBG_MAX_OFFSET || width > size || off > size - width)
		return np_errf(err, "_Py_DebugOffsets: %s: offset %llu (reading %llu bytes) is outside the structure "
			       "(%llu bytes)", what, (unsigned long long)off, (unsigned long long)width,
			       (unsigned long long)size);
	*out = (uint32_t)off;
	return 0;
}

int py_layout_from_debug_offsets(const uint8_t *runtime, size_t len, unsigned major, unsigned minor,
				 struct py_layout *out, struct np_err *err)
{
	struct py_layout l;
	uint64_t version, ascii_size, usize;

	if (major != 3 || minor < 13)
		return np_errf(err, "_Py_DebugOffsets: Python %u.%u has none (3.13 and later)", major, minor);
	if (minor != 13)
		return np_errf(err, "_Py_DebugOffsets: the layout of Python %u.%u's is not known (3.13 only)", major,
			       minor);
	if (!runtime || len < sizeof(struct dbg313))
		return np_errf(err, "_Py_DebugOffsets: %zu bytes of _PyRuntime, need %zu", len, sizeof(struct dbg313));
	if (memcmp(runtime, DBG_COOKIE, 8) != 0)
		return np_errf(err, "_Py_DebugOffsets: no \"" DBG_COOKIE "\" cookie at the start of _PyRuntime");
	/* PY_VERSION_HEX: 0xMMmmppLS (major, minor, micro, release level, serial). */
	version = DBG(version);
	if (version >> 32 || (version >> 24 & 0xff) != major || (version >> 16 & 0xff) != minor)
		return np_errf(err, "_Py_DebugOffsets: version 0x%llx is not %u.%u", (unsigned long long)version, major,
			       minor);
	/* The block grew during 3.13's pre-releases (fields added in 3.13.0b4 and again in rc2):
	 * this is the layout of 3.13.0 final and its patch releases. */
	if (version < 0x030d00f0)
		return np_errf(err, "_Py_DebugOffsets: version 0x%llx is a 3.13 pre-release (its layout is not "
			       "known)", (unsigned long long)version);
	if (DBG(free_threaded) != 0)
		return np_errf(err, "_Py_DebugOffsets: a free-threaded build (not supported)");

	memset(&l, 0, sizeof(l));
	l.major = major;
	l.minor = minor;
	l.frames = PY_FRAMES_312;
	l.instr = PY_INSTR_PTR;
	l.cframe_current_frame = PY_NONE;

	uint64_t rs = DBG(runtime_state.size), is = DBG(interpreter_state.size), ts = DBG(thread_state.size);
	uint64_t fs = DBG(interpreter_frame.size), cs = DBG(code_object.size), bs = DBG(bytes_object.size);
	if (dbg_field(rs, DBG(runtime_state.interpreters_head), 8, "runtime_state.interpreters_head",
		      &l.runtime_interpreters_head, err) < 0 ||
	    dbg_field(is, DBG(interpreter_state.threads_head), 8, "interpreter_state.threads_head",
		      &l.interp_threads_head, err) < 0 ||
	    dbg_field(ts, DBG(thread_state.next), 8, "thread_state.next", &l.tstate_next, err) < 0 ||
	    dbg_field(ts, DBG(thread_state.native_thread_id), 8, "thread_state.native_thread_id",
		      &l.tstate_native_thread_id, err) < 0 ||
	    dbg_field(ts, DBG(thread_state.thread_id), 8, "thread_state.thread_id", &l.tstate_thread_id, err) < 0 ||
	    dbg_field(ts, DBG(thread_state.current_frame), 8, "thread_state.current_frame", &l.tstate_frame, err) < 0 ||
	    dbg_field(fs, DBG(interpreter_frame.previous), 8, "interpreter_frame.previous", &l.frame_previous, err) < 0 ||
	    dbg_field(fs, DBG(interpreter_frame.executable), 8, "interpreter_frame.executable", &l.frame_code, err) < 0 ||
	    dbg_field(fs, DBG(interpreter_frame.instr_ptr), 8, "interpreter_frame.instr_ptr", &l.frame_instr, err) < 0 ||
	    dbg_field(fs, DBG(interpreter_frame.owner), 1, "interpreter_frame.owner", &l.frame_owner, err) < 0 ||
	    dbg_field(cs, DBG(code_object.filename), 8, "code_object.filename", &l.code_filename, err) < 0 ||
	    dbg_field(cs, DBG(code_object.name), 8, "code_object.name", &l.code_name, err) < 0 ||
	    dbg_field(cs, DBG(code_object.qualname), 8, "code_object.qualname", &l.code_qualname, err) < 0 ||
	    dbg_field(cs, DBG(code_object.firstlineno), 4, "code_object.firstlineno", &l.code_firstlineno, err) < 0 ||
	    dbg_field(cs, DBG(code_object.linetable), 8, "code_object.linetable", &l.code_linetable, err) < 0 ||
	    /* The bytecode starts there: sizeof(PyCodeObject) counts its first code unit. */
	    dbg_field(cs, DBG(code_object.co_code_adaptive), 2, "code_object.co_code_adaptive",
		      &l.code_code_adaptive, err) < 0 ||
	    dbg_field(bs, DBG(bytes_object.ob_size), 8, "bytes_object.ob_size", &l.bytes_size, err) < 0 ||
	    /* ob_sval holds at least the terminating NUL. */
	    dbg_field(bs, DBG(bytes_object.ob_sval), 1, "bytes_object.ob_sval", &l.bytes_sval, err) < 0)
		return -1;

	/* The unicode fields lie within PyASCIIObject (the header every compact string starts
	 * with), and that within PyUnicodeObject (the block's size), as does the compact header,
	 * which the block does not give: 3.13 adds utf8_length and utf8 to PyASCIIObject. */
	usize = DBG(unicode_object.size);
	ascii_size = DBG(unicode_object.asciiobject_size);
	uint32_t ascii32, compact32;
	if (dbg_field(usize, ascii_size, COMPACT_EXTRA_313, "unicode_object.asciiobject_size", &ascii32, err) < 0 ||
	    dbg_field(ascii_size, DBG(unicode_object.state), 4, "unicode_object.state", &l.unicode_state, err) < 0 ||
	    dbg_field(ascii_size, DBG(unicode_object.length), 8, "unicode_object.length", &l.unicode_length, err) < 0 ||
	    dbg_field(usize, ascii_size + COMPACT_EXTRA_313, 0, "PyCompactUnicodeObject", &compact32, err) < 0)
		return -1;
	l.unicode_ascii_size = ascii32;
	l.unicode_compact_size = compact32;
	*out = l;
	return 0;
}

int64_t py_instr_byte_offset(const struct py_layout *l, uint64_t raw, uint64_t code_addr)
{
	int32_t lasti;
	uint64_t base;

	switch (l->instr) {
	case PY_INSTR_LASTI_BYTES:
	case PY_INSTR_LASTI_UNITS:
		/* An int: the low 32 bits of whatever width the caller read. */
		lasti = (int32_t)(uint32_t)raw;
		if (lasti < 0)
			return -1;
		return l->instr == PY_INSTR_LASTI_UNITS ? (int64_t)lasti * 2 : lasti;
	case PY_INSTR_PTR:
		/* A frame that has not started points one code unit before the bytecode. */
		if (l->code_code_adaptive == PY_NONE || code_addr > UINT64_MAX - l->code_code_adaptive)
			return -1;
		base = code_addr + l->code_code_adaptive;
		if (raw < base || raw - base > INT32_MAX)
			return -1;
		return (int64_t)(raw - base);
	}
	return -1;
}
