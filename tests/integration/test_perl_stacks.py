"""Perl frames in every sample of a perl process (issue 30): `nodeprof record` on a CPU-bound
script with a known call chain (tests/integration/workloads/perl_chain.pl: main -> Worker->crunch,
a class method -> recurse x5 -> leaf -> spin) under Debian's perl 5.36, started before the
recording: the chain in the order and with the files and lines Carp::longmess gives for the same
script; the same script in a container's root; an ithreads program, whose second thread runs
another chain in an interpreter of its own (found through glibc's thread descriptors), each
thread with its own chain; --no-perl; and
`nodeprof run` pushing the frames to the test Pyroscope, with perl_enabled on and off.

One recording batch serves the record tests (all processes at once, 4 s)."""
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

WORKLOAD = os.path.join(np.WORKLOADS, "perl_chain.pl")
PERL = "/usr/bin/perl"
SECONDS = 4
MIN_SAMPLES = 50
# Four busy processes share two CPUs: a higher rate keeps each recording over MIN_SAMPLES.
HZ = 197
SUBS = {"main::main", "Worker::crunch", "main::recurse", "main::leaf", "main::spin", "main::other_spin",
        "<main>", "(eval)", "[perl]"}
# Where Debian's perl finds its modules (strict, warnings, Carp, threads): bound into the container's root.
PERL_LIBS = ["/usr/lib/x86_64-linux-gnu/perl-base", "/usr/lib/x86_64-linux-gnu/perl/5.36", "/usr/share/perl/5.36"]


def line_of(tag):
    with open(WORKLOAD) as f:
        for i, line in enumerate(f, 1):
            if f"# LINE:{tag}" in line:
                return i
    raise AssertionError(f"no # LINE:{tag} in {WORKLOAD}")


def perl_frames(frames):
    return [f for f in frames if f in SUBS]


def longmess():
    """The chain as Carp::longmess gives it at spin, root first: [(sub, line executing in it)],
    None for spin's own (its hot loop, where samples land)."""
    out = subprocess.run([PERL, WORKLOAD, "backtrace"], check=True, capture_output=True, text=True).stdout
    # longmess speaks from spin's caller: "at spin at FILE line N." is where spin was called, then
    # one "SUB(ARGS) called at FILE line N" per frame below, leaf first.
    first = int(re.search(r"at spin at \S+ line (\d+)\.", out).group(1))
    called = [(m.group(1), int(m.group(2))) for m in re.finditer(r"^\s+(\S+?)\(.*\) called at \S+ line (\d+)$", out, re.M)]
    chain = [("main::spin", None)]
    for k, (sub, _) in enumerate(called):
        chain.append((sub, first if k == 0 else called[k - 1][1]))  # the line where it called the frame above
    chain.append(("<main>", called[-1][1]))
    return list(reversed(chain))


class PerlStacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="perl-", dir=os.path.join(np.ROOT, "build"))
        cls.procs = []
        cls.results = {}
        try:
            cls.backtrace = longmess()
            root = os.path.join(cls.dir, "root")
            os.makedirs(root)
            files = [(p, p) for p in rootfs.library_deps(PERL)] + [(PERL, PERL), (WORKLOAD, "/work.pl")]
            script = rootfs.chroot_script(root, files, [PERL, "/work.pl", "chain", str(SECONDS + 20)],
                                          binds=[(d, d) for d in PERL_LIBS])
            cls.container_root = root
            cls.record_batch({
                "chain": ([PERL, WORKLOAD, "chain", SECONDS + 20], ["--format", "pprof"]),
                "container": (["unshare", "--mount", "sh", "-c", script], []),
                "threads": ([PERL, WORKLOAD, "threads", SECONDS + 20], []),
                "no-perl": ([PERL, WORKLOAD, "chain", SECONDS + 20], ["--no-perl"]),
            })
        finally:
            cls.stop_all()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    @classmethod
    def start(cls, argv):
        p = subprocess.Popen(list(map(str, argv)), stdout=subprocess.PIPE, text=True)
        cls.procs.append(p)
        # The script is running before nodeprof starts.
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
        """jobs: {name: (workload argv, extra nodeprof record arguments)}, recorded all at once."""
        procs = {name: cls.start(argv) for name, (argv, _) in jobs.items()}
        running = {}
        for name, p in procs.items():
            extra = jobs[name][1]
            out = os.path.join(cls.dir, name + (".pb.gz" if "pprof" in extra else ".folded"))
            log = open(os.path.join(cls.dir, name + ".log"), "w")
            argv = st.nodeprof_record_argv(p.pid, SECONDS, hz=HZ, out=out) + extra
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
        if out.endswith(".pb.gz"):
            with open(out, "rb") as f:
                s = pprof.folded(pprof.decode(f.read(), ingest=False))
        else:
            with open(out) as f:
                s = np.parse_folded(f.read())
        n = st.total(s)
        self.assertGreaterEqual(n, MIN_SAMPLES, f"{name}: only {n} samples:\n{st.top(s)}")
        return s

    def assert_chain(self, name):
        s = self.stacks(name)
        want = [sub for sub, _ in self.backtrace]
        hits, n, pct = st.share(s, lambda f: perl_frames(f) == want)
        self.assertGreaterEqual(pct, 90, f"{name}: {hits} of {n} samples carry {';'.join(want)}:\n{st.top(s)}")
        # The Perl frames stand where the runops loop's stood: no Perl_runops_standard is left, and
        # the chain's root sits below the interpreter's own entry (perl_run).
        whole = st.share(s, lambda f: perl_frames(f) == want and "Perl_runops_standard" not in f
                         and "perl_run" in f[:f.index("<main>")] and st.ENTRY in f[:f.index("<main>")])
        self.assertGreaterEqual(whole[2], 90, f"{name}: merged stacks:\n{st.top(s)}")

    def test_backtrace_is_the_chain(self):
        # The reference itself: what Carp says of the workload (a class method and recursion).
        self.assertEqual([sub for sub, _ in self.backtrace],
                         ["<main>", "main::main", "Worker::crunch"] + ["main::recurse"] * 5 +
                         ["main::leaf", "main::spin"])

    def test_chain_in_backtrace_order(self):
        self.assert_chain("chain")

    def test_process_in_a_container_root(self):
        self.assertEqual(os.listdir(self.container_root), [])  # its files are in another mount namespace
        self.assert_chain("container")

    def test_files_and_lines_are_carps(self):
        out, _ = self.result("chain")
        with open(out, "rb") as f:
            p = pprof.decode(f.read(), ingest=False)
        strings = p["string_table"]
        want = self.backtrace
        matching = total = 0
        for smp in p["sample"]:
            lines = []
            for lid in reversed(smp["location_id"]):  # root first
                for ln in p["location"][lid]["line"]:
                    fn = p["function"][ln["function_id"]]
                    name = strings[fn["name"]]
                    if name in SUBS:
                        lines.append((name, strings[fn["filename"]], ln["line"]))
            total += smp["value"][0]
            if [n for n, _, _ in lines] != [s for s, _ in want]:
                continue
            for (name, file, line), (_, carp_line) in zip(lines, want):
                self.assertTrue(file.endswith("perl_chain.pl"), (name, file))
                if carp_line is not None:
                    self.assertEqual(line, carp_line, f"{name}: line {line}, Carp says {carp_line}")
            # The leaf, spin, executes its hot loop.
            if lines[-1][2] == line_of("spin"):
                matching += smp["value"][0]
        self.assertGreater(total, 0)
        self.assertGreaterEqual(matching / total, 0.8, "spin's samples on its hot line")

    def test_threads_keep_their_own_chains(self):
        s = self.stacks("threads")
        chain = [sub for sub, _ in self.backtrace]
        # The second thread runs other_spin in an eval (threads.xs's), called from C: as
        # Carp::longmess says in that thread ("main::other_spin() called at ... / eval {...}").
        other = ["(eval)", "main::other_spin"]
        main = st.share(s, lambda f: perl_frames(f) == chain, among=st.has(st.ENTRY))
        second = st.share(s, lambda f: perl_frames(f) == other and "Perl_runops_standard" not in f,
                          among=st.has("start_thread"))
        self.assertGreaterEqual(main[2], 90, st.top(s))
        self.assertGreater(second[1], MIN_SAMPLES // 4, f"few samples of the second thread:\n{st.top(s)}")
        self.assertGreaterEqual(second[2], 90, st.top(s))
        self.assertEqual(st.total(s, lambda f: "main::other_spin" in f and "main::spin" in f), 0, st.top(s))

    def test_no_perl_shows_the_runops_loop(self):
        s = self.stacks("no-perl")
        self.assertEqual(st.total(s, lambda f: bool(perl_frames(f))), 0, st.top(s))
        self.assertGreaterEqual(st.share(s, st.has("Perl_runops_standard"))[2], 90, st.top(s))


class PerlInTheAgent(unittest.TestCase):
    """perl_enabled in `nodeprof run`: frames pushed to the test Pyroscope, and /metrics."""

    def push(self, enabled, keep):
        return agent_push.run(self, ".*perl_chain.pl chain.*", "perlchain", {"perl_enabled": str(enabled).lower()},
                              [PERL, WORKLOAD, "chain", "60"], keep, min_samples=40)

    def metric(self, fams, name, **labels):
        return agent_push.runtime_metric(self, fams, "perl", name, **labels)

    def test_perl_enabled(self):
        agg, fams = self.push(True, lambda k: "Worker::crunch" in k)
        chain = ";".join(["<main>", "main::main", "Worker::crunch"] + ["main::recurse"] * 5 + ["main::leaf", "main::spin"])
        self.assertGreaterEqual(st.share(agg, lambda f: chain in ";".join(f))[2], 90, st.top(agg))
        self.assertGreaterEqual(self.metric(fams, "nodeprof_runtime_processes"), 1)
        self.assertGreater(self.metric(fams, "nodeprof_runtime_samples_total", outcome="walked"), 0)
        self.assertGreater(self.metric(fams, "nodeprof_runtime_frames_total", kind="interpreted"), 0)
        self.assertGreater(self.metric(fams, "nodeprof_runtime_name_cache_entries"), 0)
        self.assertEqual(self.metric(fams, "nodeprof_runtime_stacks_cut_total", reason="read_failed"), 0)

    def test_perl_disabled(self):
        agg, fams = self.push(False, lambda k: "Perl_runops_standard" in k or "Worker::crunch" in k)
        self.assertEqual(st.total(agg, lambda f: "Worker::crunch" in f), 0, st.top(agg))
        self.assertEqual(self.metric(fams, "nodeprof_runtime_processes"), 0)
        self.assertEqual(self.metric(fams, "nodeprof_runtime_samples_total", outcome="walked"), 0)


if __name__ == "__main__":
    unittest.main()
