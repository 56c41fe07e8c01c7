"""Files a hostile container ships, mapped and executed by a real process while the real
binary profiles it (tests/lib/hostile_elf.py writes them): a Go-looking file whose pclntab
symbols point through a segment offset that wraps (read outside the file before), a symbol-table
bomb (kept whole with all its symbols at one address, or with names that would be copied) and a MiniDebugInfo
bomb (hundreds of MiB of names from a few MiB, before), and a library
truncated and rewritten while it is read (SIGBUS through a mapping, before). After each the
agent is alive, exits 0 (also on SIGTERM), stayed under 64 MB peak RSS and names the process's
other frames."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import hostile_elf
import np

# Maps each file given (read + execute, privately, as the loader maps a library) and spins in
# the first file's code at TEXT_OFFSET. Truncating a file below its code page would SIGBUS this
# process (truncation unmaps even copied private pages), so the race below cuts only after it.
MAPPER_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
typedef void (*spin_fn)(long);
__attribute__((noinline)) void spin_loop(spin_fn spin) { spin(2000000); }
int main(int argc, char **argv)
{
	spin_fn spin = 0;
	for (int i = 1; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0)
			return 1;
		unsigned char *p = mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			return 1;
		close(fd);
		if (!spin)
			spin = (spin_fn)(p + %d);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		spin_loop(spin);
}
""" % hostile_elf.TEXT_OFFSET

# Runs argv[1..] as its child and reports its pid, then its exit code and peak RSS (KiB). The
# peak of a child forked from this Python process would include the interpreter's own pages
# (ru_maxrss survives exec); forked from this small program it is the agent's alone.
PEAK_C = r"""
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	pid_t p = fork();
	if (p == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	printf("%d\n", (int)p);
	fflush(stdout);
	int st;
	struct rusage ru;
	if (p < 0 || wait4(p, &st, 0, &ru) < 0)
		return 1;
	printf("%d %ld\n", WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st), ru.ru_maxrss);
	return 0;
}
"""

PEAK_RSS_LIMIT_KB = 64 * 1024


class HostileFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nodeprof-hostile-")
        src = os.path.join(cls.dir, "mapper.c")
        with open(src, "w") as f:
            f.write(MAPPER_C)
        cls.mapper = os.path.join(cls.dir, "mapper")
        subprocess.run(["gcc", "-O0", "-fno-omit-frame-pointer", "-g", "-o", cls.mapper, src], check=True,
                       capture_output=True)
        with open(src, "w") as f:
            f.write(PEAK_C)
        cls.peak = os.path.join(cls.dir, "peak")
        subprocess.run(["gcc", "-O2", "-o", cls.peak, src], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def rootfs(self):
        """A container-ish directory: rootfs/usr/lib."""
        d = os.path.join(np.tmpdir(self), "rootfs", "usr", "lib")
        os.makedirs(d)
        return d

    def start_mapper(self, *files):
        p = subprocess.Popen([self.mapper, *files], stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (p.kill(), p.wait(), p.stdout.close()))
        self.assertEqual(p.stdout.readline().strip(), "ready")
        return p

    def record(self, pids, seconds=None, sigterm_after=None):
        """nodeprof record of pids; (returncode, folded output, stderr, peak RSS in KiB)."""
        out = os.path.join(np.tmpdir(self), "out.folded")
        args = [np.NODEPROF, "record", "--sample-rate", "199", "-o", out]
        for pid in pids:
            args += ["--pid", str(pid)]
        args += ["--duration", "%ds" % (seconds or 60)]
        errf = open(os.path.join(os.path.dirname(out), "stderr"), "w+")
        p = subprocess.Popen([self.peak, *args], stdout=subprocess.PIPE, stderr=errf, text=True)
        agent = int(p.stdout.readline())
        if sigterm_after:
            time.sleep(sigterm_after)  # sampling time: nothing to poll from outside
            os.kill(agent, signal.SIGTERM)
        rc, peak = map(int, p.stdout.readline().split())
        p.wait()
        errf.seek(0)
        err = errf.read()
        errf.close()
        p.stdout.close()
        text = ""
        if os.path.exists(out):
            with open(out) as f:
                text = f.read()
        return rc, text, err, peak

    def assert_profiled(self, folded, pid, leaf_module):
        """The mapper's stacks end main;spin_loop;<leaf in leaf_module>, the leaf named by
        module and offset (its symbols were refused or there are none)."""
        stacks = np.parse_folded(folded)
        leaf = re.compile(r"(^|;)main;spin_loop;%s\+0x100[0-8]$" % re.escape(leaf_module))
        hits = sum(c for s, c in stacks.items() if leaf.search(s))
        self.assertGreater(hits, 10, "no main;spin_loop;%s+0x... stacks in:\n%s" % (leaf_module, folded[:3000]))

    def bomb(self, image, name, reason_source):
        lib = hostile_elf.write(os.path.join(self.rootfs(), name), image)
        w = self.start_mapper(lib)
        rc, folded, err, peak = self.record([w.pid], sigterm_after=3)
        self.assertEqual(rc, 0, err)
        self.assertLess(peak, PEAK_RSS_LIMIT_KB, "peak RSS %d KiB" % peak)
        self.assert_profiled(folded, w.pid, name)
        self.assertIsNone(w.poll())
        # Refused, said once, remembered (not rebuilt per sample or per drain).
        refusals = [l for l in err.splitlines() if "symbols refused" in l]
        self.assertEqual(len(refusals), 1, err)
        self.assertIn("reason=table_bytes", refusals[0])
        self.assertIn("source=" + reason_source, refusals[0])
        return peak

    def kept_bomb(self, image):
        """The file's string table is kept whole as the table's names (docs/specs/symbols.md
        §1): the table costs what the file holds, so it is built, and names the spinning code
        within the 3 s recording."""
        self.assertLess(len(image), 4 << 20)
        lib = hostile_elf.write(os.path.join(self.rootfs(), "libbomb.so"), image)
        w = self.start_mapper(lib)
        rc, folded, err, peak = self.record([w.pid], sigterm_after=3)
        self.assertEqual(rc, 0, err)
        self.assertLess(peak, PEAK_RSS_LIMIT_KB, "peak RSS %d KiB" % peak)
        stacks = np.parse_folded(folded)
        hits = sum(c for s, c in stacks.items() if s.endswith("main;spin_loop;hostile_spin"))
        self.assertGreater(hits, 10, folded[:3000])
        self.assertNotIn("symbols refused", err)
        self.assertIsNone(w.poll())
        return peak

    def test_symbol_table_bomb(self):
        """100k symbols with 4,000-byte distinct names, all at one address: ranking them reads
        their names, at most the string table's size of them (the rest rank last), not 100k
        names of 4,000 bytes."""
        image = hostile_elf.symbol_bomb_image(aliased=True)
        peak = self.kept_bomb(image)
        print("symbol table bomb (%d bytes), kept whole: record peak RSS %d KiB" % (len(image), peak))

    def test_symbol_table_bomb_copied(self):
        """The same bomb with a string table that cannot be kept whole (no NUL at its end): its
        names would be copied, hundreds of MiB of them, and the source is refused instead."""
        image = hostile_elf.symbol_bomb_image(terminated=False)
        peak = self.bomb(image, "libbomb.so", "symtab")
        print("symbol table bomb (%d bytes), names copied: record peak RSS %d KiB" % (len(image), peak))

    def test_minidebuginfo_bomb(self):
        image = hostile_elf.minidebuginfo_bomb_image()  # 200k such names inside .gnu_debugdata
        self.assertLess(len(image), 512 << 10)
        peak = self.bomb(image, "libmini.so", "minidebuginfo")
        print("MiniDebugInfo bomb (%d bytes): record peak RSS %d KiB" % (len(image), peak))

    def test_pclntab_symbols_through_a_wrapping_segment(self):
        lib = hostile_elf.write(os.path.join(self.rootfs(), "libgo.so"), hostile_elf.pclntab_wrap_image())
        r = np.nodeprof("tools", "symbolize", lib, "0x400100", "0x1000", timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "0x400100 ??\n0x1000 ??\n")
        w = self.start_mapper(lib)
        rc, folded, err, _ = self.record([w.pid], seconds=2)
        self.assertEqual(rc, 0, err)
        self.assert_profiled(folded, w.pid, "libgo.so")

    def test_huge_debuglink_candidate(self):
        """A .gnu_debuglink candidate of 2 GiB (sparse) is refused by its size, before anything
        reads it for its CRC; a real one next to it (same name, right size) is still used."""
        d = self.rootfs()
        exe = os.path.join(d, "app")
        subprocess.run(["gcc", "-O0", "-g", "-o", exe, "-x", "c", "-"], input="int work(int x) { return x * 3; }\n"
                       "int main(void) { return work(1); }\n", text=True, check=True, capture_output=True)
        nm = subprocess.run(["nm", exe], capture_output=True, text=True, check=True).stdout
        work = int(re.search(r"^([0-9a-f]+) T work$", nm, re.M).group(1), 16)
        dbg = os.path.join(d, "app.debug")
        subprocess.run(["objcopy", "--only-keep-debug", exe, dbg], check=True)
        subprocess.run(["objcopy", "--strip-all", "--add-gnu-debuglink=" + dbg, exe], check=True)
        r = np.nodeprof("tools", "symbolize", exe, hex(work), timeout=30)
        self.assertEqual(r.stdout, "%s work\n" % hex(work), r.stderr)
        os.truncate(dbg, 2 << 30)
        t0 = time.monotonic()
        r = np.nodeprof("tools", "symbolize", exe, hex(work), timeout=30)
        self.assertLess(time.monotonic() - t0, 1.0)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "%s ??\n" % hex(work))
        self.assertIn("reason=debug_file", r.stderr)

    def test_library_truncated_while_read(self):
        """A container truncates and rewrites a library in a loop while it is read: by `tools
        symbolize` (every run reads the file afresh) and by `record` (new processes map each
        rewritten copy, so the agent keeps opening new versions of the file)."""
        lib = os.path.join(self.rootfs(), "librace.so")
        image = hostile_elf.symbol_bomb_image(count=40_000, length=20)  # 1 MB of .symtab to read
        hostile_elf.write(lib, image)
        cut = 2 * 4096  # past the code page (see MAPPER_C); the symbol table and headers go
        self.assertLess(hostile_elf.TEXT_OFFSET + len(hostile_elf.SPIN_CODE), cut)
        stop = threading.Event()
        good = threading.Lock()  # held while the file is whole (a mapper is being started)

        def churn():
            n = 0
            while not stop.is_set():
                with good:
                    with open(lib, "r+b") as f:
                        f.truncate([cut, cut + 4096, len(image) // 2, len(image) - 100][n % 4])
                        f.seek(0)
                        f.write(image)
                n += 1

        t = threading.Thread(target=churn)
        t.start()
        self.addCleanup(lambda: (stop.set(), t.join()))
        workers = []
        rec = subprocess.Popen([np.NODEPROF, "record", "--sample-rate", "199", "--duration", "60s", "-o",
                                os.path.join(os.path.dirname(lib), "race.folded")], stderr=subprocess.PIPE,
                               text=True)
        self.addCleanup(lambda: (rec.poll() is None and rec.kill(), rec.stderr.close()))
        deadline = time.monotonic() + 4
        runs = truncated = 0
        while time.monotonic() < deadline:
            if len(workers) < 12 and runs % 8 == 0:
                with good:
                    workers.append(self.start_mapper(lib))
            r = subprocess.run([np.NODEPROF, "tools", "symbolize", lib, "0x1000", "0x100010"],
                               capture_output=True, text=True, timeout=30)
            if r.returncode == 1:  # caught short: refused as what it then was
                self.assertRegex(r.stderr, "librace.so: not an ELF file")
                truncated += 1
            else:
                self.assertEqual(r.returncode, 0, "tools symbolize died (%d): %s" % (r.returncode, r.stderr))
                self.assertRegex(r.stdout, r"^0x1000 (hostile_spin|\?\?)\n0x100010 (N+0+\d+|\?\?)\n$")
            runs += 1
        stop.set()
        t.join()
        self.assertIsNone(rec.poll(), "record died: %s" % (rec.stderr.read() if rec.poll() is not None else ""))
        rec.send_signal(signal.SIGTERM)
        _, err = rec.communicate(timeout=30)
        self.assertEqual(rec.returncode, 0, err)
        for w in workers:
            self.assertIsNone(w.poll())
        with open(os.path.join(os.path.dirname(lib), "race.folded")) as f:
            folded = f.read()
        stacks = np.parse_folded(folded)
        named = sum(c for s, c in stacks.items() if re.search(r"(^|;)main;spin_loop;(hostile_spin|librace\.so\+0x100[0-8])$", s))
        self.assertGreater(named, 10, "\n".join(l for l in folded.splitlines() if "librace" in l or "spin" in l)[:3000])
        print("truncation race: %d symbolize runs (%d found the file cut short), %d mappers, record exited 0"
              % (runs, truncated, len(workers)))


if __name__ == "__main__":
    unittest.main()
