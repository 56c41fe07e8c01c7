"""agent/runtime/python/layout against the CPython builds this machine carries (pyenv, under
/root/.pyenv/versions or $PYENV_ROOT/versions, and Debian's /usr/bin/python3.11):

- offsets: tests/python/layout_probe.c compiled against each version's own headers (and Debian's
  3.11 ones, another patch release, when python3.11-dev is installed) prints every
  field of struct py_layout with offsetof/sizeof; build/harness/py_layout prints our table's
  (3.8 to 3.12) or, for 3.13, what py_layout_from_debug_offsets reads from the initial bytes of
  _PyRuntime in that version's libpython. Any field that differs fails, as does a field one side
  has and the other lacks. The probe also checks the constants layout.h states (unicode state
  bits, FRAME_OWNED_BY_CSTACK, one-byte owner fields, default non-debug build).
- line tables: tests/python/line_tables.py, run by each interpreter, dumps the raw tables of a
  corpus of functions (loops, back-references over hundreds of lines, gaps of 300 and 70000
  lines, >255-byte lines, no-location ranges, a 4500-line function) with the line CPython's own
  PyCode_Addr2Line and co_lines()/dis.findlinestarts give for every even byte offset and -1;
  the harness decodes each with py_line_at and every offset must agree. The corpus is checked to
  exercise each format's awkward encodings, so it cannot quietly stop testing them.

Every supported version (3.8 to 3.13) must be present: a missing one fails, its table entry would
otherwise be untested. NODEPROF_PY_LAYOUT_HARNESS runs against another build of the harness (e.g.
build/asan/harness/py_layout)."""
import glob
import json
import os
import re
import subprocess
import unittest

import np

HARNESS = os.environ.get("NODEPROF_PY_LAYOUT_HARNESS") or os.path.join(np.ROOT, "build", "harness", "py_layout")
PROBE = os.path.join(np.ROOT, "tests", "python", "layout_probe.c")
LINE_TABLES = os.path.join(np.ROOT, "tests", "python", "line_tables.py")
SUPPORTED = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]
TABLE_VERSIONS = SUPPORTED[:-1]
EXTRA_INTERPRETERS = ["/usr/bin/python3.11"]
# Other builds' headers, for versions in the table: another patch release (Debian's 3.11.2).
EXTRA_HEADERS = [("3.11", "/usr/include/python3.11")]

# enum py_frame_kind / py_instr_kind (layout.h) each version must have.
FRAMES = {"3.8": 1, "3.9": 1, "3.10": 1, "3.11": 2, "3.12": 3, "3.13": 3}
INSTR = {"3.8": 1, "3.9": 1, "3.10": 2, "3.11": 3, "3.12": 3, "3.13": 3}


def installs():
    """{"3.X": prefix} of the newest patch release of each supported minor with its headers."""
    roots = {os.environ.get("PYENV_ROOT", "/root/.pyenv"), "/root/.pyenv"}
    found = {}
    for root in sorted(roots):
        for prefix in glob.glob(os.path.join(root, "versions", "*")):
            m = re.fullmatch(r"(3\.\d+)\.(\d+)", os.path.basename(prefix))
            if not m or m.group(1) not in SUPPORTED:
                continue
            if not os.path.exists(os.path.join(prefix, "include", "python" + m.group(1), "Python.h")):
                continue
            if not os.access(os.path.join(prefix, "bin", "python" + m.group(1)), os.X_OK):
                continue
            key = (int(m.group(2)), prefix)
            if m.group(1) not in found or key > found[m.group(1)]:
                found[m.group(1)] = key
    return {v: p for v, (_, p) in found.items()}


def run(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {p.returncode}:\n{p.stderr[-4000:]}")
    return p.stdout


def probe(test, inc):
    out = os.path.join(np.tmpdir(test), "probe")
    run(["gcc", "-std=gnu11", "-O0", "-Wall", "-Werror", "-DPy_BUILD_CORE", "-I" + inc,
         "-I" + os.path.join(inc, "internal"), "-o", out, PROBE])
    return json.loads(run([out]))


def runtime_file(version, prefix):
    """The ELF file holding _PyRuntime: the shared libpython when the build has one, else the
    executable."""
    so = os.path.join(prefix, "lib", f"libpython{version}.so.1.0")
    return so if os.path.exists(so) else os.path.join(prefix, "bin", "python" + version)


def ours(version, prefix):
    args = [HARNESS, version] + ([runtime_file(version, prefix)] if version not in TABLE_VERSIONS else [])
    return json.loads(run(args))


def table_features(version, functions):
    """How often the corpus uses each awkward encoding of the version's format."""
    seen = {}

    def count(k):
        seen[k] = seen.get(k, 0) + 1

    for f in functions:
        t = bytes.fromhex(f["table"])
        if version in ("3.8", "3.9", "3.10"):
            for i in range(0, len(t) - 1, 2):
                b, d = t[i], t[i + 1] - 256 if t[i + 1] > 127 else t[i + 1]
                if version == "3.10" and d == -128:
                    count("no line (-128)")
                elif d < 0:
                    count("negative line delta")
                if d == 127:
                    count("line delta split at 127")
                if b == 0:
                    count("zero-length entry")
                if b >= 254:
                    count("offset delta split at 254/255")
        else:
            for b in t:
                if b & 128:
                    count("code %d" % (b >> 3 & 15))
    return seen


class PythonLayout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.installs = installs()

    def test_every_version_present(self):
        missing = [v for v in SUPPORTED if v not in self.installs]
        self.assertEqual(missing, [], "CPython versions without an interpreter and headers here "
                         "(their layouts go untested): " + ", ".join(missing))

    def test_offsets_match_headers(self):
        self.assertTrue(self.installs, "no CPython 3.8-3.13 with headers found")
        builds = [(v, os.path.join(p, "include", "python" + v), p) for v, p in sorted(self.installs.items())]
        builds += [(v, inc, None) for v, inc in EXTRA_HEADERS if os.path.exists(os.path.join(inc, "Python.h"))]
        for version, inc, prefix in builds:
            with self.subTest(version=version, headers=inc):
                want = probe(self, inc)
                facts = want.pop("facts")
                got = ours(version, prefix)
                self.assertEqual(got.pop("frames"), FRAMES[version])
                self.assertEqual(got.pop("instr"), INSTR[version])
                self.assertEqual(sorted(got), sorted(want), "the harness and the probe print different fields")
                diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
                self.assertEqual(diff, {}, f"{version}: fields where ours (first) differ from the headers")
                self.check_facts(version, facts)

    def check_facts(self, version, facts):
        # layout.h: the state field is right after hash; kind in bits 2-4, compact bit 5, ascii bit 6.
        self.assertTrue(facts["state_after_hash"])
        self.assertEqual(facts["unicode_kind_bits"], 7 << 2)
        self.assertEqual(facts["unicode_compact_bits"], 1 << 5)
        self.assertEqual(facts["unicode_ascii_bits"], 1 << 6)
        self.assertEqual((facts["unicode_1byte_kind"], facts["unicode_2byte_kind"], facts["unicode_4byte_kind"]),
                         (1, 2, 4))
        self.assertEqual((facts["sizeof_ssize_t"], facts["sizeof_int"]), (8, 4))
        self.assertFalse(facts["free_threaded"])
        self.assertFalse(facts["debug_build"])
        if "sizeof_f_lasti" in facts or version in ("3.8", "3.9", "3.10"):
            self.assertEqual(facts["sizeof_f_lasti"], 4)
        if version not in ("3.8", "3.9", "3.10"):
            self.assertEqual(facts["sizeof_owner"], 1)
            self.assertEqual(facts["sizeof_codeunit"], 2)
        if version not in ("3.8", "3.9", "3.10", "3.11"):
            self.assertEqual(facts["frame_owned_by_cstack"], 3)  # PY_OWNED_BY_CSTACK
        if version == "3.13":
            # Not in _Py_DebugOffsets: layout.c adds 16 (utf8_length, utf8) to asciiobject_size.
            self.assertEqual(facts["compact_minus_ascii"], 16)
            self.assertEqual(facts["debug_offsets_at"], 0)
            self.assertEqual(facts["debug_offsets_size"], 584)

    def test_debug_offsets_refused_for_other_versions(self):
        prefix = self.installs.get("3.13")
        self.assertIsNotNone(prefix, "no CPython 3.13 here")
        lib = runtime_file("3.13", prefix)
        for asked, message in (("3.12", "has none"), ("3.14", "not known"), ("2.13", "has none")):
            with self.subTest(asked=asked):
                p = subprocess.run([HARNESS, asked, lib], capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertIn(message, p.stderr)
        # A file whose _PyRuntime is not 3.13's: an older libpython has no cookie.
        older = self.installs.get("3.12")
        if older:
            p = subprocess.run([HARNESS, "3.13", runtime_file("3.12", older)], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("cookie", p.stderr)

    def interpreters(self):
        out = [(v, os.path.join(p, "bin", "python" + v)) for v, p in sorted(self.installs.items())]
        out += [(None, x) for x in EXTRA_INTERPRETERS if os.access(x, os.X_OK)]
        return out

    def test_line_tables(self):
        interpreters = self.interpreters()
        self.assertTrue(interpreters, "no interpreter to take line tables from")
        for _, python in interpreters:
            with self.subTest(python=python):
                dump = json.loads(run([python, LINE_TABLES]))
                version = dump["version"]
                self.check_corpus(version, dump["functions"])
                got = json.loads(run([HARNESS, "lines", version], input=json.dumps(dump)))
                compared, wrong = 0, []
                for f in dump["functions"]:
                    lines = got[f["name"]]
                    self.assertEqual(len(lines), len(f["offsets"]))
                    for off, line, a2l, col in zip(f["offsets"], lines, f["addr2line"], f["lines"]):
                        compared += 1
                        if line != (a2l or 0) or (col != "absent" and line != (col or 0)):
                            wrong.append((f["name"], off, line, a2l, col))
                self.assertEqual(wrong[:20], [], f"{python} ({version}): {len(wrong)} offsets of {compared} "
                                 "decode differently (function, offset, ours, PyCode_Addr2Line, co_lines)")
                self.assertGreater(compared, 20000)

    def check_corpus(self, version, functions):
        seen = table_features(version, functions)
        if version in ("3.8", "3.9"):
            need = ["negative line delta", "line delta split at 127", "zero-length entry",
                    "offset delta split at 254/255"]
        elif version == "3.10":
            need = ["no line (-128)", "negative line delta", "line delta split at 127", "zero-length entry",
                    "offset delta split at 254/255"]
        else:
            need = ["code %d" % c for c in range(16)]
        missing = [k for k in need if not seen.get(k)]
        self.assertEqual(missing, [], f"{version}: the corpus no longer exercises these encodings")
        if version not in ("3.8", "3.9"):
            self.assertTrue(any(a is None for f in functions for a in f["addr2line"]),
                            "the corpus has no instruction without a line")


if __name__ == "__main__":
    unittest.main()
