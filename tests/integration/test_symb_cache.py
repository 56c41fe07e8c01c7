"""The on-disk symbol and unwind table caches (docs/specs/symb-cache.md) end to end with
`nodeprof record`: a second recording maps the symbol tables and loads the unwind tables the
first one wrote and builds none (its debug log lines count them), a corrupted cache file of
either kind is refused and rebuilt, and stacks and names stay right either way."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import np

LINE = re.compile(r'msg="symbol tables" built=(\d+) cache_files_loaded=(\d+) cache_files_written=(\d+) '
                  r'cache_files_invalid=(\d+)')
UNWIND = re.compile(r'msg="user stack walks" .* compile_ms=\d+ cache_files_loaded=(\d+) cache_files_written=(\d+) '
                    r'cache_files_invalid=(\d+)')


class SymbCache(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nodeprof-symbcache-")
        cls.split = np.build_workload("split", cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def record(self, pid, cache):
        r = np.nodeprof("record", "--pid", pid, "--duration", "2s", "--sample-rate", "199", "--symb-cache-path", cache,
                        "--log-level", "debug", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = LINE.search(r.stderr)
        self.assertIsNotNone(m, r.stderr)
        built, loaded, written, invalid = map(int, m.groups())
        u = UNWIND.search(r.stderr)
        self.assertIsNotNone(u, r.stderr)
        u_loaded, u_written, u_invalid = map(int, u.groups())
        stacks = np.parse_folded(r.stdout)
        named = sum(c for s, c in stacks.items() if np.contains_run(s.split(";"), ["main", "heavy", "spin"]))
        self.assertGreater(named, 20, f"main;heavy;spin not named: {list(stacks)[:10]}")
        return {"built": built, "loaded": loaded, "written": written, "invalid": invalid,
                "unw_loaded": u_loaded, "unw_written": u_written, "unw_invalid": u_invalid}

    def workload(self):
        w = subprocess.Popen([self.split, "20", os.path.join(np.tmpdir(self), "truth")])
        self.addCleanup(lambda: (w.kill(), w.wait()))
        return w

    def cache_files(self, cache, suffix=".sym"):
        return [os.path.join(cache, f) for f in os.listdir(cache) if f.endswith(suffix)]

    def test_second_recording_builds_nothing(self):
        w = self.workload()
        cache = os.path.join(np.tmpdir(self), "symb-cache")
        first = self.record(w.pid, cache)
        self.assertGreaterEqual(first["built"], 1)
        self.assertEqual(first["written"], first["built"])
        self.assertEqual(oct(os.stat(cache).st_mode & 0o777), oct(0o700))
        files = self.cache_files(cache)
        self.assertEqual(len(files), first["written"])
        for f in files:
            self.assertEqual(os.stat(f).st_mode & 0o777, 0o600)
        second = self.record(w.pid, cache)
        # Every table the first recording wrote is mapped, not built again; a build is only for
        # a file the first recording never named (a frame in another library), which adds a file.
        self.assertGreaterEqual(second["loaded"], 1)
        self.assertEqual(second["invalid"], 0)
        self.assertEqual(second["built"], len(self.cache_files(cache)) - len(files), second)
        # Unwind tables likewise: loaded from the files, compiled only for a file new to the cache.
        self.assertGreaterEqual(first["unw_written"], 1, first)
        unw = self.cache_files(cache, ".unw")
        self.assertEqual(len(unw), first["unw_written"])
        self.assertGreaterEqual(second["unw_loaded"], 1, second)
        self.assertEqual(second["unw_invalid"], 0, second)
        self.assertEqual(second["unw_written"], len(self.cache_files(cache, ".unw")) - len(unw), second)

    def test_corrupted_file_is_rebuilt(self):
        w = self.workload()
        cache = os.path.join(np.tmpdir(self), "symb-cache")
        self.record(w.pid, cache)
        files = self.cache_files(cache) + self.cache_files(cache, ".unw")
        self.assertGreaterEqual(len(files), 2)
        for f in files:
            with open(f, "r+b") as fh:
                size = os.fstat(fh.fileno()).st_size
                fh.seek(size // 2)
                b = fh.read(1)
                fh.seek(size // 2)
                fh.write(bytes([b[0] ^ 0x10]))
        again = self.record(w.pid, cache)
        # The workload's own file and libc are named in every recording: at least those were
        # opened, refused and rebuilt.
        self.assertGreaterEqual(again["invalid"], 2, again)
        self.assertGreaterEqual(again["built"], again["invalid"], again)
        self.assertEqual(again["loaded"], 0, again)
        self.assertGreaterEqual(again["unw_invalid"], 1, again)
        self.assertEqual(again["unw_loaded"], 0, again)
        before = len(self.cache_files(cache))
        third = self.record(w.pid, cache)
        self.assertEqual(third["invalid"], 0, third)
        self.assertEqual(third["unw_invalid"], 0, third)
        self.assertGreaterEqual(third["unw_loaded"], 1, third)
        self.assertGreaterEqual(third["loaded"], 2, third)
        self.assertEqual(third["built"], len(self.cache_files(cache)) - before, third)


if __name__ == "__main__":
    unittest.main()
