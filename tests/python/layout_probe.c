/* The offsets of struct py_layout (agent/runtime/python/layout.h) as one CPython version's own headers
 * define them, printed as JSON with the same field names: the oracle that
 * tests/integration/test_python_layout.py holds our table (and, for 3.13+, our reading of
 * _Py_DebugOffsets) against. Built by the test against each version's headers:
 *
 *   gcc -DPy_BUILD_CORE -I<prefix>/include/python3.X -I<prefix>/include/python3.X/internal
 *
 * Besides the offsets it prints "facts": the constants layout.h states as true for every
 * version (unicode state bits, the frame owner values, one-byte owner fields), computed here
 * from the headers instead of trusted. Not part of the agent: it never links with it. */
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION < 8
#error "layout_probe: CPython 3.8 or later"
#endif

#if PY_MINOR_VERSION <= 10
#include <code.h>
#endif
#if PY_MINOR_VERSION == 8
#include "pycore_pystate.h"
#else
#include "pycore_runtime.h"
#include "pycore_interp.h"
#endif
#if PY_MINOR_VERSION >= 11
#include "pycore_frame.h"
#endif

#define NONE_ (-1L)

static int first = 1;

static void field(const char *name, long v)
{
	printf("%s\n  \"%s\": ", first ? "{" : ",", name);
	first = 0;
	if (v == NONE_)
		printf("null");
	else
		printf("%ld", v);
}

/* The state bit field's first 32 bits as the walker reads them (little endian). */
static unsigned long state_word(const PyASCIIObject *o)
{
	unsigned char bytes[sizeof(o->state)];
	uint32_t w = 0;

	memcpy(bytes, &o->state, sizeof(bytes));
	for (size_t i = 0; i < sizeof(bytes) && i < 4; i++)
		w |= (uint32_t)bytes[i] << (8 * i);
	return w;
}

int main(void)
{
	field("major", PY_MAJOR_VERSION);
	field("minor", PY_MINOR_VERSION);

	field("runtime_interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_MINOR_VERSION <= 10
	field("interp_threads_head", offsetof(PyInterpreterState, tstate_head));
#else
	field("interp_threads_head", offsetof(PyInterpreterState, threads.head));
#endif

	field("tstate_next", offsetof(PyThreadState, next));
#if PY_MINOR_VERSION >= 11
	field("tstate_native_thread_id", offsetof(PyThreadState, native_thread_id));
#else
	field("tstate_native_thread_id", NONE_);
#endif
	field("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_MINOR_VERSION <= 10
	field("tstate_frame", offsetof(PyThreadState, frame));
	field("cframe_current_frame", NONE_);
#elif PY_MINOR_VERSION <= 12
	field("tstate_frame", offsetof(PyThreadState, cframe));
	field("cframe_current_frame", offsetof(_PyCFrame, current_frame));
#else
	field("tstate_frame", offsetof(PyThreadState, current_frame));
	field("cframe_current_frame", NONE_);
#endif

#if PY_MINOR_VERSION <= 10
	field("frame_previous", offsetof(PyFrameObject, f_back));
	field("frame_code", offsetof(PyFrameObject, f_code));
	field("frame_instr", offsetof(PyFrameObject, f_lasti));
	field("frame_owner", NONE_);
#else
	field("frame_previous", offsetof(_PyInterpreterFrame, previous));
#if PY_MINOR_VERSION <= 12
	field("frame_code", offsetof(_PyInterpreterFrame, f_code));
	field("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
	field("frame_code", offsetof(_PyInterpreterFrame, f_executable));
	field("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
#if PY_MINOR_VERSION == 11
	field("frame_owner", offsetof(_PyInterpreterFrame, is_entry));
#else
	field("frame_owner", offsetof(_PyInterpreterFrame, owner));
#endif
#endif

	field("code_filename", offsetof(PyCodeObject, co_filename));
	field("code_name", offsetof(PyCodeObject, co_name));
#if PY_MINOR_VERSION >= 11
	field("code_qualname", offsetof(PyCodeObject, co_qualname));
#else
	field("code_qualname", NONE_);
#endif
	field("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_MINOR_VERSION <= 9
	field("code_linetable", offsetof(PyCodeObject, co_lnotab));
#else
	field("code_linetable", offsetof(PyCodeObject, co_linetable));
#endif
#if PY_MINOR_VERSION >= 11
	field("code_code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#else
	field("code_code_adaptive", NONE_);
#endif

	field("unicode_length", offsetof(PyASCIIObject, length));
	field("unicode_state", offsetof(PyASCIIObject, state));
	field("unicode_ascii_size", sizeof(PyASCIIObject));
	field("unicode_compact_size", sizeof(PyCompactUnicodeObject));
	field("bytes_size", offsetof(PyVarObject, ob_size));
	field("bytes_sval", offsetof(PyBytesObject, ob_sval));
	printf(",\n  \"facts\": {");

	/* The state bit field starts right after hash (layout.h and the walker assume so). */
	printf("\"state_after_hash\": %s",
	       offsetof(PyASCIIObject, state) == offsetof(PyASCIIObject, hash) + sizeof(Py_hash_t) ? "true" : "false");
	{
		PyASCIIObject o;

		/* Each field set alone to all ones: the word shows its bits. */
		memset(&o, 0, sizeof(o));
		o.state.kind = 7;
		printf(", \"unicode_kind_bits\": %lu", state_word(&o));
		memset(&o, 0, sizeof(o));
		o.state.compact = 1;
		printf(", \"unicode_compact_bits\": %lu", state_word(&o));
		memset(&o, 0, sizeof(o));
		o.state.ascii = 1;
		printf(", \"unicode_ascii_bits\": %lu", state_word(&o));
	}
	printf(", \"unicode_1byte_kind\": %d, \"unicode_2byte_kind\": %d, \"unicode_4byte_kind\": %d",
	       (int)PyUnicode_1BYTE_KIND, (int)PyUnicode_2BYTE_KIND, (int)PyUnicode_4BYTE_KIND);
	printf(", \"compact_minus_ascii\": %ld", (long)(sizeof(PyCompactUnicodeObject) - sizeof(PyASCIIObject)));
	printf(", \"sizeof_ssize_t\": %zu, \"sizeof_int\": %zu", sizeof(Py_ssize_t), sizeof(int));
#if PY_MINOR_VERSION <= 10
	printf(", \"sizeof_f_lasti\": %zu", sizeof(((PyFrameObject *)0)->f_lasti));
#endif
#if PY_MINOR_VERSION == 11
	printf(", \"sizeof_owner\": %zu", sizeof(((_PyInterpreterFrame *)0)->is_entry));
#elif PY_MINOR_VERSION >= 12
	printf(", \"sizeof_owner\": %zu, \"frame_owned_by_cstack\": %d", sizeof(((_PyInterpreterFrame *)0)->owner),
	       (int)FRAME_OWNED_BY_CSTACK);
#endif
#if PY_MINOR_VERSION >= 11
	printf(", \"sizeof_codeunit\": %zu", sizeof(_Py_CODEUNIT));
#endif
#if PY_MINOR_VERSION >= 13
	printf(", \"debug_offsets_at\": %zu, \"debug_offsets_size\": %zu", offsetof(_PyRuntimeState, debug_offsets),
	       sizeof(_Py_DebugOffsets));
#endif
#ifdef Py_GIL_DISABLED
	printf(", \"free_threaded\": true");
#else
	printf(", \"free_threaded\": false");
#endif
#ifdef Py_DEBUG
	printf(", \"debug_build\": true");
#else
	printf(", \"debug_build\": false");
#endif
	printf("}\n}\n");
	return 0;
}
