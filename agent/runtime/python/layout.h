/* What nodeprof must know of a CPython interpreter's memory to walk its frames from BPF and to
 * name them from user space: the offsets of the few fields it reads, per minor version.
 *
 * 3.8 to 3.12 come from a table (agent/runtime/python/layout.c) derived from each version's own
 * headers and checked against the interpreters this machine carries
 * (tests/integration/test_python_layout.py); 3.13 and later publish their offsets in the
 * interpreter itself (_Py_DebugOffsets at the start of _PyRuntime), read from the ELF file's
 * initialised data. Other versions are not supported (said so, never guessed). */
#ifndef NP_PYTHON_LAYOUT_H
#define NP_PYTHON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

/* An offset that does not exist in this version. */
#define PY_NONE UINT32_MAX

/* How a version keeps its frames and marks where one C call of the eval loop begins. */
enum py_frame_kind {
	/* <= 3.10: PyFrameObject chain (f_back); every frame is its own _PyEval_EvalFrameDefault call. */
	PY_FRAMES_OBJECT = 1,
	/* 3.11: _PyInterpreterFrame chain (previous); the byte at frame_owner is `is_entry`, set on
	 * the first (root-most) frame of each eval-loop call. */
	PY_FRAMES_311 = 2,
	/* 3.12+: _PyInterpreterFrame chain; the byte at frame_owner is `owner`: a frame owned by the
	 * C stack (PY_OWNED_BY_CSTACK) is the shim each eval-loop call pushes below its frames. */
	PY_FRAMES_312 = 3,
};
#define PY_OWNED_BY_CSTACK 3

/* How the instruction field of a frame reads (see py_instr_byte_offset). */
enum py_instr_kind {
	PY_INSTR_LASTI_BYTES = 1, /* 3.8, 3.9: int f_lasti, a byte offset into co_code */
	PY_INSTR_LASTI_UNITS = 2, /* 3.10: int f_lasti, an index of 2-byte code units */
	PY_INSTR_PTR = 3,	  /* 3.11+: a pointer into the code object's inline bytecode
				   * (co_code_adaptive): prev_instr (3.11, 3.12), instr_ptr (3.13+) */
};

struct py_layout {
	unsigned major, minor;
	enum py_frame_kind frames;
	enum py_instr_kind instr;
	/* _PyRuntimeState: interpreters.head */
	uint32_t runtime_interpreters_head;
	/* PyInterpreterState: tstate_head (<= 3.10), threads.head (3.11+) */
	uint32_t interp_threads_head;
	/* PyThreadState */
	uint32_t tstate_next;
	uint32_t tstate_native_thread_id; /* the kernel TID (gettid); 3.11+, else PY_NONE */
	/* thread_id: the thread's pthread_self(), in every version; with glibc and musl on x86-64 the
	 * thread pointer (the task's fsbase), how a thread is matched where native_thread_id is PY_NONE */
	uint32_t tstate_thread_id;
	/* frame (<= 3.10: PyFrameObject *), cframe (3.11, 3.12: _PyCFrame *), current_frame (3.13+) */
	uint32_t tstate_frame;
	uint32_t cframe_current_frame; /* _PyCFrame.current_frame (3.11, 3.12), else PY_NONE */
	/* PyFrameObject (<= 3.10) or _PyInterpreterFrame (3.11+) */
	uint32_t frame_previous; /* f_back / previous */
	uint32_t frame_code;	 /* f_code / f_executable (3.13+) */
	uint32_t frame_instr;	 /* f_lasti (int) / prev_instr / instr_ptr (pointer): see instr */
	uint32_t frame_owner;	 /* 3.11: is_entry; 3.12+: owner (one byte each); else PY_NONE */
	/* PyCodeObject */
	uint32_t code_filename, code_name;
	uint32_t code_qualname;	     /* 3.11+, else PY_NONE */
	uint32_t code_firstlineno;   /* int */
	uint32_t code_linetable;     /* bytes: co_lnotab (3.8, 3.9), co_linetable (3.10+) */
	uint32_t code_code_adaptive; /* 3.11+: offset of the inline bytecode in the code object, else PY_NONE */
	/* PyUnicodeObject: the compact forms only (what code objects' strings are) */
	uint32_t unicode_length; /* Py_ssize_t, in code points */
	uint32_t unicode_state;	 /* the bit field: kind in bits 2-4, compact bit 5, ascii bit 6 */
	uint32_t unicode_ascii_size;   /* sizeof(PyASCIIObject): compact ASCII data follows */
	uint32_t unicode_compact_size; /* sizeof(PyCompactUnicodeObject): other compact data follows */
	/* PyBytesObject */
	uint32_t bytes_size; /* ob_size */
	uint32_t bytes_sval; /* ob_sval */
};

/* The table's entry for major.minor (3.8 to 3.12), or NULL when the table has none. */
const struct py_layout *py_layout_table(unsigned major, unsigned minor);

/* The layout of a 3.13+ interpreter from the bytes of its _PyRuntime's initial value (the
 * ELF file's initialised data at the symbol, at least len bytes of it): checks the
 * "xdebugpy" cookie and that the version field says major.minor, and that every offset is
 * one the walker can use (within the structure sizes the same block gives). -1 with a
 * message saying which check failed. */
NP_MUST_CHECK int py_layout_from_debug_offsets(const uint8_t *runtime, size_t len, unsigned major, unsigned minor,
					       struct py_layout *out, struct np_err *err);

/* The byte offset into the code's bytecode of the instruction a frame was executing, from the
 * raw value of its instruction field (frame_instr) and the code object's address; -1 when it
 * cannot be told (a negative f_lasti: the frame has not started). */
int64_t py_instr_byte_offset(const struct py_layout *l, uint64_t raw, uint64_t code_addr);

/* The source line of the instruction at byte_offset, from the code's line table (co_lnotab or
 * co_linetable, in the version's own format) and co_firstlineno; 0 when the table does not say
 * (or is malformed: it comes from a process nobody trusts). A negative byte_offset (a frame
 * that has not started) is co_firstlineno, as CPython's PyCode_Addr2Line says. */
unsigned py_line_at(const struct py_layout *l, const uint8_t *table, size_t len, int firstlineno,
		    int64_t byte_offset);

#endif
