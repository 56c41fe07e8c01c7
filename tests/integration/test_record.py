"""`nodeprof record` end to end: real BPF programs sampling real processes."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import np
import pprof


class RecordTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nodeprof-record-")
        cls.split = np.build_workload("split", cls.dir)
        cls.syscalls = np.build_workload("syscalls", cls.dir)
        cls.short = np.build_workload("short_lived", cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def start(self, *argv):
        p = subprocess.Popen(list(map(str, argv)))
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    def test_cpu_split_and_whole_stacks(self):
        truth = os.path.join(np.tmpdir(self), "truth")
        w = self.start(self.split, 4.5, truth)
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "10s", "--sample-rate", "499", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        w.wait(timeout=30)
        with open(truth) as f:
            heavy_ns, light_ns = map(int, f.read().split())
        real = 100.0 * heavy_ns / (heavy_ns + light_ns)
        stacks = np.parse_folded(r.stdout)
        heavy = light = whole = 0
        for stack, count in stacks.items():
            frames = stack.split(";")
            if "heavy" in frames:
                heavy += count
            if "light" in frames:
                light += count
            if np.contains_run(frames, ["main", "heavy", "spin"]) or np.contains_run(frames, ["main", "light", "spin"]):
                whole += count
        total = heavy + light
        self.assertGreater(total, 1000, f"too few samples of heavy/light: {stacks}")
        share = 100.0 * heavy / total
        # The profile must match the CPU time the workload measured itself, and that is 3:1
        # give or take what a loaded machine does to two loops of different lengths.
        self.assertLess(abs(share - real), 5.0, f"profile: heavy {share:.1f}% of heavy+light; measured {real:.1f}%")
        self.assertLess(abs(share - 75.0), 8.0, f"heavy got {share:.1f}% of heavy+light, expected about 75")
        self.assertGreaterEqual(whole / total, 0.9, f"only {whole}/{total} samples carry main->fn->spin")

    def test_kernel_frames_for_syscalls(self):
        w = self.start(self.syscalls, 8)
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "2s", "--sample-rate", "499", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        stacks = np.parse_folded(r.stdout)
        total = sum(stacks.values())
        # glibc's write() keeps no frame pointer: the frame-pointer walk alone would skip
        # write_zeros; the word at the stack pointer (checked to follow a call) puts it back.
        in_kernel = sum(c for s, c in stacks.items()
                        if np.contains_run(s.split(";"), ["main", "write_zeros"]) and
                        any(k in s.split(";") for k in ("do_syscall_64", "ksys_write", "vfs_write")))
        self.assertGreater(total, 200)
        self.assertGreater(in_kernel / total, 0.5, f"kernel frames under main;write_zeros missing: {list(stacks)[:10]}")
        # Kernel frames come after the user frames in folded output (root first).
        checked = 0
        for s in stacks:
            frames = s.split(";")
            if "write_zeros" in frames and "do_syscall_64" in frames:
                self.assertLess(frames.index("write_zeros"), frames.index("do_syscall_64"))
                checked += 1
        self.assertGreater(checked, 0)

    def test_process_that_exits_is_still_named(self):
        rec = subprocess.Popen([np.NODEPROF, "record", "--duration", "4s", "--sample-rate", "199"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (rec.kill(), rec.wait()))
        time.sleep(1.2)
        # Runs and exits between two drains (every second): named from the snapshot taken
        # when the kernel reported the new process.
        subprocess.run([self.short, "0.6"], check=True)
        out, err = rec.communicate(timeout=60)
        self.assertEqual(rec.returncode, 0, err)
        stacks = np.parse_folded(out)
        named = sum(c for s, c in stacks.items() if np.contains_run(s.split(";"), ["main", "short_lived_work"]))
        self.assertGreater(named, 30, "the exited process's frames were not named")

    def test_pprof_output(self):
        w = self.start(self.split, 8)
        d = np.tmpdir(self)
        out = os.path.join(d, "profile.pb.gz")
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "2s", "--format", "pprof", "-o", out, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            data = f.read()
        self.assertEqual(data[:2], b"\x1f\x8b")
        p = pprof.decode(data)
        st = p["string_table"]
        self.assertEqual(st[0], "")
        self.assertEqual([st[p["sample_type"][0][0]], st[p["sample_type"][0][1]]], ["cpu", "nanoseconds"])
        self.assertEqual([st[p["period_type"][0]], st[p["period_type"][1]]], ["cpu", "nanoseconds"])
        self.assertEqual(p["period"], 1000000000 // 97)
        self.assertGreater(p["time_nanos"], 1.6e18)
        self.assertGreater(p["duration_nanos"], 1.5e9)
        for s in p["sample"]:
            self.assertEqual(s["value"][0] % p["period"], 0)
        folded = pprof.folded(p)
        self.assertTrue(any("main;heavy;spin" in k for k in folded), list(folded)[:5])
        # An independent decoder: Go's pprof tool.
        g = subprocess.run(["go", "tool", "pprof", "-raw", out], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "gocache"), GOFLAGS="-mod=mod"))
        self.assertEqual(g.returncode, 0, g.stderr)
        self.assertIn("PeriodType: cpu nanoseconds", g.stdout)
        self.assertIn("heavy", g.stdout)

    def test_comm_and_pid_label(self):
        """--comm and --pid-label, as pyroscope.ebpf's comm and pid_label: sample labels and the
        thread's name as the root frame in pprof; leading frames in folded output."""
        w = self.start(self.split, 8)
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "2s", "--comm", "both", "--pid-label", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        stacks = np.parse_folded(r.stdout)
        self.assertGreater(sum(stacks.values()), 20, stacks)
        for k in stacks:
            self.assertTrue(k.startswith(f"pid={w.pid};comm=split;split;"), k)
        out = os.path.join(np.tmpdir(self), "profile.pb.gz")
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "2s", "--comm", "stackframe", "--pid-label",
                        "--format", "pprof", "-o", out, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            p = pprof.decode(f.read())
        st = p["string_table"]
        self.assertTrue(p["sample"])
        for k in pprof.folded(p):
            self.assertTrue(k.startswith("split;"), k)
        for smp in p["sample"]:
            self.assertEqual([(st[l["key"]], st[l["str"]]) for l in smp["label"]], [("pid", str(w.pid))])

    def test_pprof_of_stripped_program_names_on_server(self):
        """A program without symbols: its frames reach the profile unnamed but with the
        build ID and ELF addresses a server needs, checked with addr2line on the unstripped
        build (same code, same addresses) as Pyroscope's symbolizer would with the debug file."""
        d = np.tmpdir(self)
        src = os.path.join(np.WORKLOADS, "split.c")
        stripped, full = os.path.join(d, "split-stripped"), os.path.join(d, "split-full")
        for out, extra in ((stripped, ["-s"]), (full, ["-g"])):
            subprocess.run(["gcc", "-O2", *extra, "-Wl,--build-id", "-o", out, src], check=True, capture_output=True)

        def text(path):
            return subprocess.run(["objcopy", "-O", "binary", "--only-section=.text", path, "/dev/stdout"],
                                  check=True, capture_output=True).stdout
        self.assertEqual(text(stripped), text(full), "the two builds must share their code")
        self.assertNotIn(" spin", subprocess.run(["nm", "-D", stripped], capture_output=True, text=True).stdout)
        notes = subprocess.run(["readelf", "-n", stripped], check=True, capture_output=True, text=True).stdout
        build_id = notes.split("Build ID:")[1].split()[0]

        w = self.start(stripped, 8)
        out = os.path.join(d, "profile.pb.gz")
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "3s", "--sample-rate", "199", "--format", "pprof",
                        "-o", out, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            p = pprof.decode(f.read())
        st = p["string_table"]
        mine = [m for m in p["mapping"].values() if st[m["filename"]].endswith("/split-stripped")]
        self.assertEqual(len(mine), 1, [st[m["filename"]] for m in p["mapping"].values()])
        m = mine[0]
        self.assertEqual(st[m["build_id"]], build_id)
        self.assertFalse(m["has_functions"])  # the server symbolizes only such mappings
        # The Mapping is the process's executable mapping in the file's own space.
        with open("/proc/%d/maps" % w.pid) as f:
            rx = [l.split() for l in f if l.split()[-1].endswith("/split-stripped") and "x" in l.split()[1]]
        self.assertEqual(len(rx), 1)
        lo, hi = (int(x, 16) for x in rx[0][0].split("-"))
        self.assertEqual(m["memory_limit"] - m["memory_start"], hi - lo)
        self.assertEqual(m["file_offset"], int(rx[0][2], 16))

        locs = {lid: loc for lid, loc in p["location"].items() if loc["mapping_id"] == m["id"]}
        self.assertTrue(locs)
        addrs = sorted({loc["address"] for loc in locs.values()})
        for loc in locs.values():
            self.assertEqual(loc["line"], [], "a frame of a stripped program was named on the node")
            self.assertTrue(m["memory_start"] <= loc["address"] < m["memory_limit"], hex(loc["address"]))
        a2l = subprocess.run(["addr2line", "-f", "-e", full] + ["0x%x" % a for a in addrs],
                             check=True, capture_output=True, text=True).stdout.split("\n")
        name_of = dict(zip(addrs, a2l[0::2]))
        # A sample in a PLT stub (a call to clock_gettime on its way out) has an address no debug
        # information names: every other address is a function's.
        plt = []
        for line in subprocess.run(["readelf", "-SW", full], check=True, capture_output=True, text=True).stdout.splitlines():
            f = line.replace("[ ", "[").split()
            if len(f) > 5 and f[1].startswith(".plt"):
                plt.append((int(f[3], 16), int(f[3], 16) + int(f[5], 16)))
        named = {a: n for a, n in name_of.items() if not any(lo <= a < hi for lo, hi in plt)}
        self.assertNotIn("??", named.values(), name_of)
        # Most CPU is in spin; its samples' leaf addresses name it.
        spin = total = 0
        for s in p["sample"]:
            leaf = p["location"][s["location_id"][0]]
            if leaf["mapping_id"] == m["id"]:
                total += s["value"][0]
                if name_of[leaf["address"]] == "spin":
                    spin += s["value"][0]
        self.assertGreater(total, 0)
        self.assertGreater(spin / total, 0.8, name_of)
        # Pyroscope shows such frames as binary!0xADDR until it has the debug file.
        self.assertTrue(any("split-stripped!0x%x" % a in k for k in pprof.folded(p) for a in addrs))
        # Go's pprof reads it, addresses and all.
        g = subprocess.run(["go", "tool", "pprof", "-raw", "-symbolize=none", out], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "gocache")))
        self.assertEqual(g.returncode, 0, g.stderr)
        self.assertIn("0x%x" % addrs[0], g.stdout)
        self.assertIn(build_id, g.stdout)

    def test_ctrl_c_still_writes(self):
        w = self.start(self.split, 30)
        d = np.tmpdir(self)
        out = os.path.join(d, "p.folded")
        rec = subprocess.Popen([np.NODEPROF, "record", "--pid", str(w.pid), "--duration", "60s", "-o", out],
                               stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        t0 = time.time()
        rec.send_signal(signal.SIGINT)
        _, err = rec.communicate(timeout=30)
        self.assertLess(time.time() - t0, 5)
        self.assertEqual(rec.returncode, 0, err)
        with open(out) as f:
            self.assertIn("heavy", f.read())

    def test_stops_when_every_process_exited(self):
        w = self.start(self.short, "0.5")
        t0 = time.time()
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "30s", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertLess(time.time() - t0, 10)
        self.assertIn("every recorded process has exited", r.stderr)
        self.assertIn("short_lived_work", r.stdout)

    def test_bad_input_gets_one_line_errors(self):
        # Exit 2: a usage error (the command line is wrong); 1: the recording could not be made.
        cases = [
            (["record", "--bogus"], 2, "unrecognized option"),
            (["record", "--pid", "999999999"], 2, "not a process ID"),
            (["record", "--pid", "4000000"], 1, "no running process with PID 4000000"),
            (["record", "--duration", "ten"], 2, "--duration"),
            (["record", "--duration", "10"], 2, "unit"),
            (["record", "--duration", "0"], 2, "duration must be > 0"),
            (["record", "--sample-rate", "0"], 2, "--sample-rate"),
            (["record", "--format", "svg"], 2, "use folded or pprof"),
            (["record", "-o", "/nonexistent-dir/out.folded"], 1, "cannot write /nonexistent-dir/out.folded"),
            (["record", "--demangle", "fancy"], 2, "--demangle"),
            (["record", "extra"], 2, "unexpected argument"),
        ]
        for args, status, expected in cases:
            with self.subTest(args=args):
                r = np.nodeprof(*args, timeout=30)
                self.assertEqual(r.returncode, status, r.stderr)
                self.assertIn(expected, r.stderr)
                self.assertTrue(r.stderr.startswith("nodeprof record: "), r.stderr)
                self.assertNotIn("Segmentation", r.stderr)

    def test_zero_duration_is_a_usage_error(self):
        # It used to print an error message nobody had written (uninitialised memory):
        # under memcheck, any such read fails the run (exit 99).
        for value in ("0", "0s", "-1s"):
            with self.subTest(value=value):
                r = subprocess.run(["valgrind", "-q", "--error-exitcode=99", np.NODEPROF, "record", "--duration",
                                    value], capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stderr, f"nodeprof record: --duration {value}: duration must be > 0\n")
                self.assertEqual(r.stdout, "")

    def test_cxx_names_are_demangled_by_default(self):
        exe = os.path.join(np.tmpdir(self), "cxx_names")
        subprocess.run(["g++", "-O1", "-g", "-fno-omit-frame-pointer", "-o", exe,
                        os.path.join(np.WORKLOADS, "cxx_names.cc")], check=True, capture_output=True)
        w = self.start(exe, 8)
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "2s", "--sample-rate", "499", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        stacks = np.parse_folded(r.stdout)
        # As perf prints them: template arguments kept, parameters left out.
        named = sum(c for s, c in stacks.items()
                    if np.contains_run(s.split(";"), ["main", "shapes::churn", "shapes::Box<unsigned long>::spin"]))
        self.assertGreater(named, 0.8 * sum(stacks.values()), list(stacks)[:10])
        self.assertNotIn("_ZN", r.stdout)
        # --demangle none keeps the linker's names; full adds the parameters.
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "1s", "--demangle", "none", timeout=60)
        self.assertIn("_ZNK6shapes3BoxImE4spinEl", r.stdout)
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "1s", "--demangle", "full", timeout=60)
        self.assertIn("shapes::Box<unsigned long>::spin(long) const", r.stdout)
        # The help says what the default is.
        self.assertRegex(np.nodeprof("record", "--help").stdout, r"templates \(default")

    def test_not_root_is_told_what_to_do(self):
        d = np.tmpdir(self)
        os.chmod(d, 0o777)
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                            np.NODEPROF, "record", "--duration", "1s", "-o", os.path.join(d, "x")],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("run nodeprof as root", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_help_and_version(self):
        r = np.nodeprof("record", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--sample-rate", r.stdout)
        r = np.nodeprof("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^nodeprof \d+\.\d+\.\d+")


if __name__ == "__main__":
    unittest.main()
