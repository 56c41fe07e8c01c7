"""Ruby frames in every sample of a CRuby process (issue 30): `nodeprof record` on a CPU-bound
program with a known call chain (tests/integration/workloads/ruby_chain.rb: <main> ->
Worker.run, a class method -> Worker#crunch -> Integer#times, a C method -> block in
Worker#crunch -> Worker#recurse x6 -> Worker#leaf) under Debian's ruby3.1, started before the
recording: the chain in Ruby's own backtrace order (the workload prints its `caller_locations`),
with the files and lines of the pprof output; two threads with different chains, and two ractors; a process
inside a container's root; YJIT on; a version without a layout refused with a warning (a copy of
libruby whose ruby_version says 2.4.1), and one whose ruby_version says 2.5.1 taken as 2.5 (which
then wants 2.x's ruby_current_execution_context_ptr, which 3.1's library does not export);
--no-ruby; and `nodeprof run` pushing Ruby frames to the test Pyroscope, with the runtime's
/metrics."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import agent_push
import np
import pprof
import rootfs
import stacks as st

WORKLOAD = os.path.join(np.WORKLOADS, "ruby_chain.rb")
RUBY = "/usr/bin/ruby3.1"
SECONDS = 4
MIN_SAMPLES = 40
CHAIN = ["<main>", "Worker.run", "Worker#crunch", "Integer#times", "block in Worker#crunch"] + \
    ["Worker#recurse"] * 6 + ["Worker#leaf"]
RUBY_NAME = re.compile(r"^(<main>|block (?:\(\d+ levels\) )?in .*|[A-Z][A-Za-z0-9_:]*[#.](?:[a-z_][A-Za-z0-9_?!=]*|[-+*/%<>=!~^&|\[\]]+))$")


def ruby_frames(frames):
    return [f for f in frames if RUBY_NAME.match(f)]


def unqualified(name):
    """A label as Ruby 3.1's own backtrace prints it (without the owner 3.4 adds)."""
    m = re.fullmatch(r"(block in |)(?:[A-Z][A-Za-z0-9_:]*[#.])?(.*)", name)
    return m.group(1) + m.group(2)


def line_of(tag):
    with open(WORKLOAD) as f:
        for i, line in enumerate(f, 1):
            if re.search(rf"# LINE:{tag}\b", line):
                return i
    raise AssertionError(f"no # LINE:{tag} in {WORKLOAD}")


def relabelled_libruby(directory, version):
    """A copy of Debian's libruby whose ruby_version says version ("2.4.1": one nodeprof has no
    layout for), under the same soname in directory, for LD_LIBRARY_PATH: Ruby runs as before
    without RubyGems (whose rbconfig.rb compares the version)."""
    lib = subprocess.run(["sh", "-c", f"ldd {RUBY} | awk '/libruby/ {{print $3}}'"], check=True,
                         capture_output=True, text=True).stdout.strip()
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    vaddr = next(int(line.split()[0], 16) for line in nm.splitlines() if line.endswith(" ruby_version"))
    segs = subprocess.run(["readelf", "-lW", lib], check=True, capture_output=True, text=True).stdout
    offset = None
    for line in segs.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and int(f[2], 16) <= vaddr < int(f[2], 16) + int(f[4], 16):
            offset = vaddr - int(f[2], 16) + int(f[1], 16)
    data = bytearray(open(lib, "rb").read())
    if data[offset:offset + 5] != b"3.1.2":
        raise AssertionError(f"{lib}: ruby_version is {bytes(data[offset:offset + 8])!r}")
    data[offset:offset + 5] = version.encode()
    with open(os.path.join(directory, os.path.basename(lib)), "wb") as f:
        f.write(data)


def folded(path):
    out = {}
    with open(path) as f:
        for line in f:
            s, c = line.rstrip("\n").rsplit(" ", 1)
            out[s] = out.get(s, 0) + int(c)
    return out


class RubyStacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ruby-", dir=os.path.join(np.ROOT, "build"))
        cls.procs = []
        cls.results = {}
        root = os.path.join(cls.dir, "root")
        os.makedirs(root)
        files = [(p, p) for p in rootfs.library_deps(RUBY)] + [(RUBY, RUBY), (WORKLOAD, "/work.rb")]
        script = rootfs.chroot_script(
            root, files, [RUBY, "--disable-gems", "/work.rb", "chain", str(SECONDS + 20)],
            binds=[("/usr/lib/ruby", "/usr/lib/ruby"),
                   ("/usr/lib/x86_64-linux-gnu/ruby", "/usr/lib/x86_64-linux-gnu/ruby")])
        cls.container_root = root
        try:
            # Two batches of four processes on the machine's two CPUs: ~100 samples each.
            libdir, libdir25 = os.path.join(cls.dir, "lib"), os.path.join(cls.dir, "lib25")
            os.makedirs(libdir)
            os.makedirs(libdir25)
            relabelled_libruby(libdir, "2.4.1")
            relabelled_libruby(libdir25, "2.5.1")
            cls.record_batch({
                "chain": ([RUBY, WORKLOAD, "chain", SECONDS + 20], ["--format", "pprof"]),
                "unsupported": ([RUBY, "--disable-gems", WORKLOAD, "chain", SECONDS + 20], [],
                                {"LD_LIBRARY_PATH": libdir}),
                "container": (["unshare", "--mount", "sh", "-c", script], []),
                "no-ruby": ([RUBY, WORKLOAD, "chain", SECONDS + 20], ["--no-ruby"]),
            })
            cls.stop_all()
            cls.record_batch({
                "threads": ([RUBY, WORKLOAD, "threads", SECONDS + 20], []),
                "yjit": ([RUBY, "--yjit", WORKLOAD, "chain", SECONDS + 20], []),
                "ractors": ([RUBY, WORKLOAD, "ractors", SECONDS + 20], []),
                "as-2.5": ([RUBY, "--disable-gems", WORKLOAD, "chain", SECONDS + 20], [],
                           {"LD_LIBRARY_PATH": libdir25}),
            })
        finally:
            cls.stop_all()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    @classmethod
    def start(cls, argv, env=None):
        p = subprocess.Popen(list(map(str, argv)), stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, **env) if env else None)
        cls.procs.append(p)
        # The program is running before nodeprof starts.
        if p.stdout.readline().strip() != "started":
            raise AssertionError(f"{argv} did not start")
        return p

    @classmethod
    def stop_all(cls):
        for p in cls.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdout.close()
        cls.procs = []

    @classmethod
    def record_batch(cls, jobs):
        """jobs: {name: (workload argv, extra nodeprof record arguments[, workload environment])},
        recorded at once."""
        procs = {name: cls.start(job[0], *job[2:]) for name, job in jobs.items()}
        running = {}
        for name, p in procs.items():
            extra = jobs[name][1]
            out = os.path.join(cls.dir, name + (".pb.gz" if "pprof" in extra else ".folded"))
            log = open(os.path.join(cls.dir, name + ".log"), "w")
            argv = st.nodeprof_record_argv(p.pid, SECONDS, out=out) + extra
            running[name] = (subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log), out, log)
        for name, (p, out, log) in running.items():
            rc = p.wait(timeout=SECONDS + 120)
            log.close()
            with open(log.name) as f:
                cls.results[name] = (rc, out, f.read())

    def result(self, name):
        rc, out, log = self.results[name]
        self.assertEqual(rc, 0, f"nodeprof record on {name} exited {rc}: {log[-2000:]}")
        return out, log

    def stacks(self, name):
        out, _ = self.result(name)
        s = folded(out)
        n = st.total(s)
        self.assertGreaterEqual(n, MIN_SAMPLES, f"{name}: only {n} samples:\n{st.top(s)}")
        return s

    def profile(self):
        out, _ = self.result("chain")
        with open(out, "rb") as f:
            return pprof.decode(f.read(), ingest=False)

    def assert_chain(self, name, s):
        hits, n, pct = st.share(s, lambda f: ruby_frames(f) == CHAIN)
        self.assertGreaterEqual(pct, 90, f"{name}: {hits} of {n} samples carry {';'.join(CHAIN)}:\n{st.top(s)}")
        # The Ruby frames stand where the VM's C calls stood: no rb_vm_exec is left, and the chain's
        # root sits below the interpreter's own entry, wherever the native walk reached it (it
        # stops early at a few of vm_exec_core's pcs: then the chain stands at the root end).
        whole = st.share(s, lambda f: ruby_frames(f) == CHAIN and "rb_vm_exec" not in f
                         and st.ENTRY in f[:f.index("<main>")] and "ruby_run_node" in f[:f.index("<main>")])
        self.assertGreaterEqual(whole[2], 80, f"{name}: merged stacks:\n{st.top(s)}")

    def test_chain_in_backtrace_order(self):
        p = self.profile()
        s = pprof.folded(p)
        self.assertGreaterEqual(len(p["sample"]), MIN_SAMPLES // 4, st.top(s))
        self.assert_chain("chain", s)
        # Ruby's own backtrace at the leaf (caller_locations, leaf first, with the probe's block on
        # top) gives the same frames in the same order, less the owners Ruby 3.1 does not print.
        out = subprocess.run([RUBY, WORKLOAD, "caller"], check=True, capture_output=True, text=True).stdout
        labels = [line.rsplit(":", 1)[0] for line in out.splitlines()][1:]
        self.assertEqual([unqualified(f) for f in reversed(CHAIN)], labels)

    def test_pprof_files_and_lines(self):
        p = self.profile()
        strings = p["string_table"]
        funcs = {strings[fn["name"]]: fn for fn in p["function"].values()}
        for name in ("Worker#leaf", "Worker#recurse", "Worker.run", "<main>"):
            self.assertIn(name, funcs)
            self.assertTrue(strings[funcs[name]["filename"]].endswith("ruby_chain.rb"), strings[funcs[name]["filename"]])
        self.assertEqual(funcs["Worker#leaf"]["start_line"], line_of("leaf_def"))
        self.assertIn("Integer#times", funcs)
        lines = {}  # {function: {line: samples}}
        for smp in p["sample"]:
            for lid in smp["location_id"]:
                for ln in p["location"][lid]["line"]:
                    fn = strings[p["function"][ln["function_id"]]["name"]]
                    lines.setdefault(fn, {}).setdefault(ln["line"], 0)
                    lines[fn][ln["line"]] += smp["value"][0]
        # Callers stand on the line of their call; the leaf mostly on its hot loop.
        self.assertEqual(set(lines["Worker.run"]), {line_of("run")}, lines["Worker.run"])
        self.assertEqual(set(lines["Worker#crunch"]), {line_of("crunch")}, lines["Worker#crunch"])
        self.assertEqual(set(lines["block in Worker#crunch"]), {line_of("crunch")})
        self.assertEqual(set(lines["Worker#recurse"]), {line_of("recurse"), line_of("recurse_leaf")})
        self.assertEqual(set(lines["<main>"]), {line_of("main")}, lines["<main>"])
        leaf = lines["Worker#leaf"]
        hot = sum(v for ln, v in leaf.items() if line_of("leaf") - 1 <= ln <= line_of("leaf") + 1)
        self.assertGreaterEqual(hot / sum(leaf.values()), 0.9, leaf)

    def test_process_in_a_container_root(self):
        self.assertEqual(os.listdir(self.container_root), [])  # its files are in another mount namespace
        self.assert_chain("container", self.stacks("container"))

    def assert_two_chains(self, name, alpha_root, beta_root):
        s = self.stacks(name)
        alpha = st.share(s, lambda f: ruby_frames(f)[-3:] == [alpha_root, "Alpha.spin", "Alpha.leaf"])
        beta = st.share(s, lambda f: ruby_frames(f)[-3:] == [beta_root, "Beta.spin", "Beta.leaf"])
        mixed = st.total(s, lambda f: {"Alpha.spin", "Beta.spin"} <= set(f))
        self.assertEqual(mixed, 0, f"{name}: a thread got another's frames:\n{st.top(s)}")
        self.assertGreaterEqual(alpha[2], 25, f"{name}:\n{st.top(s)}")
        self.assertGreaterEqual(beta[2], 25, f"{name}:\n{st.top(s)}")
        self.assertGreaterEqual(alpha[2] + beta[2], 80, f"{name}:\n{st.top(s)}")

    def test_threads_keep_their_own_chains(self):
        # Beta runs in a Fiber: its execution context is the fiber's, on the fiber's own stack.
        self.assert_two_chains("threads", "block in <main>", "block (2 levels) in <main>")

    def test_ractors_keep_their_own_chains(self):
        # Each ractor runs under its own VM lock: both run at once, each found on its own stack.
        self.assert_two_chains("ractors", "<main>", "block in <main>")

    def test_yjit(self):
        # YJIT keeps the VM's control frames: the whole chain, whatever the machine code's frames;
        # its code calls the leaf's Integer#* as a C method, with a frame of its own.
        s = self.stacks("yjit")
        hits, n, pct = st.share(s, lambda f: ruby_frames(f) in (CHAIN, CHAIN + ["Integer#*"]))
        self.assertGreaterEqual(pct, 90, f"yjit: {hits} of {n} samples carry the chain:\n{st.top(s)}")

    def test_unsupported_version_is_refused(self):
        # A Ruby the table has no layout for: one warning naming it, and its stacks stay native.
        s = self.stacks("unsupported")
        _, log = self.result("unsupported")
        self.assertIn("Ruby 2.4.1 is not supported (this build of nodeprof walks Ruby 2.5 to 3.4): it predates", log)
        self.assertEqual(st.total(s, lambda f: bool(ruby_frames(f))), 0, st.top(s))
        self.assertGreaterEqual(st.share(s, st.has("rb_vm_exec"))[2], 80, st.top(s))

    def test_version_2_5_is_taken(self):
        # A library saying 2.5.1 gets the 2.5 row and is looked at as 2.x: it must export the
        # global execution context, which 3.1's does not, so its stacks stay native (no Ruby 2.5
        # runs here: its frames are checked from crafted memory, tests/unit/test_ruby_frames.c).
        s = self.stacks("as-2.5")
        _, log = self.result("as-2.5")
        self.assertNotIn("is not supported", log)
        self.assertIn("Ruby 2.5.1: the library exports no ruby_current_execution_context_ptr", log)
        self.assertEqual(st.total(s, lambda f: bool(ruby_frames(f))), 0, st.top(s))

    def test_no_ruby_shows_the_vm(self):
        # The native walk itself stops before rb_vm_exec at a few of vm_exec_core's pcs.
        s = self.stacks("no-ruby")
        self.assertEqual(st.total(s, lambda f: bool(ruby_frames(f))), 0, st.top(s))
        self.assertGreaterEqual(st.share(s, st.has("rb_vm_exec"))[2], 80, st.top(s))


class RubyInTheAgent(unittest.TestCase):
    """ruby_enabled in `nodeprof run`: Ruby frames pushed to Pyroscope, and the runtime's /metrics."""

    def test_ruby_enabled_is_a_switch(self):
        # Grafana's chart writes ruby_enabled = true: no warning any more; false is accepted too.
        d = np.tmpdir(self)
        for value in ("true", "false"):
            path = os.path.join(d, f"{value}.alloy")
            with open(path, "w") as f:
                f.write(np.process_pipeline_config(".*ruby.*", "rb", {"ruby_enabled": value}))
            p = np.nodeprof("check", path)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn("ruby_enabled", p.stderr)

    def test_run_pushes_ruby_frames(self):
        agg, fams = agent_push.run(self, ".*ruby_chain.rb chain.*", "rbchain", {"ruby_enabled": "true"},
                                   [RUBY, WORKLOAD, "chain", "60"], lambda k: "Worker#leaf" in k, 20)
        chain = st.share(agg, lambda f: ruby_frames(f) == CHAIN)
        self.assertGreaterEqual(chain[2], 90, st.top(agg))

        def metric(name, **labels):
            return agent_push.runtime_metric(self, fams, "ruby", name, **labels)
        self.assertGreaterEqual(metric("nodeprof_runtime_processes"), 1)
        self.assertGreater(metric("nodeprof_runtime_samples_total", outcome="walked"), 0)
        self.assertGreater(metric("nodeprof_runtime_frames_total", kind="interpreted"), 0)
        self.assertGreater(metric("nodeprof_runtime_name_cache_entries"), 0)
        self.assertEqual(metric("nodeprof_runtime_frames_dropped_total"), 0)

    def test_run_with_ruby_disabled(self):
        agg, fams = agent_push.run(self, ".*ruby_chain.rb chain.*", "rbchain", {"ruby_enabled": "false"},
                                   [RUBY, WORKLOAD, "chain", "60"], lambda k: "rb_vm_exec" in k, 10)
        self.assertEqual(st.total(agg, lambda f: bool(ruby_frames(f))), 0, st.top(agg))
        self.assertEqual(agent_push.runtime_metric(self, fams, "ruby", "nodeprof_runtime_processes"), 0)


if __name__ == "__main__":
    unittest.main()
