"""Java stacks through HotSpot frames (issue 27): `nodeprof record` on a busy Java program
(tests/integration/workloads/java/WalkChain.java: Thread.run -> lambda -> Worker.crunch ->
recurse x5 -> leaf -> spin in the thread "walk-busy", and other -> otherLeaf -> otherSpin in
"walk-other"), compiled from source with javac and run under Debian's OpenJDK 17, each JVM
started before the recording. The chain is in >= 90% of the busy thread's samples, in the
order the JVM itself shows the thread (`jcmd PID Thread.print`), through interpreted frames
(-Xint) and compiled ones (after a warm-up: C2 inlines most of the chain, expanded back from
the nmethod's scopes), and in one JVM going from interpreting the chain to running its leaf
compiled, whole down to start_thread, inside a container's root too; the two
threads' chains never mix; pprof has one Function per Java method with its file and first
line; `--no-java` gives the native stacks of before (cut at the first Java frame); two JVMs in
one recording, with Serial and Parallel GC and without compressed pointers. Code that
changes while it is sampled (WalkChurn.java: a method deoptimised mid-run, classes unloaded and
their code addresses reused) never gets a wrong name: a frame is its method's or
"[unknown java]". `nodeprof run` with hotspot_enabled pushes the same frames to the Pyroscope
test server."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import agent_push
import np
import pprof
import rootfs
import stacks as st

JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
JAVA = os.path.join(JDK, "bin", "java")
JAVAC = os.path.join(JDK, "bin", "javac")
JCMD = os.path.join(JDK, "bin", "jcmd")
SOURCE = os.path.join(np.WORKLOADS, "java", "WalkChain.java")
CHURN = os.path.join(np.WORKLOADS, "java", "WalkChurn.java")
GENS = [os.path.join(np.WORKLOADS, "java", f"WalkGen{g}.java") for g in "AB"]
SECONDS = 5
MIN_SAMPLES = 30
UNKNOWN_JAVA = "[unknown java]"
CALL_STUB = "StubRoutines (1)"  # the code blob of the call stub, JavaCalls' way into Java
# libjvm's JavaCalls::call_helper, below every thread's first Java frame (mangled: --demangle none)
CALL_HELPER = "_ZN9JavaCalls11call_helper"


def method(frame):
    """"long WalkChain$Worker.crunch(int)" -> "WalkChain$Worker.crunch", a hidden class's address
    masked as jcmd's and ours differ ("$$Lambda$1/0x7f.." and "$$Lambda$1+<hidden>")."""
    m = re.match(r"^(?:\S+ )?([^ (]+)\(", frame)
    name = m.group(1) if m else frame
    return re.sub(r"(/0x[0-9a-f]+|\+<hidden>)", "", name)


# A Java method's frame as the namer names it: "long pkg.Class.method(int, java.lang.String)".
JAVA_NAME = re.compile(r"^\S+ [^ (]+\(.*\)$")


def java_frames(f):
    """The Java frames of a folded stack (root first), as methods: those after the call stub
    (native frames they called, a signal handler, are left out)."""
    u = user_frames(f)
    if CALL_STUB not in u:
        return []
    return [method(x) for x in u[u.index(CALL_STUB) + 1:] if x == UNKNOWN_JAVA or JAVA_NAME.match(x)]


def user_frames(f):
    """The user part of a folded stack (root first): everything before the first kernel frame."""
    for i, x in enumerate(f):
        if x.startswith(("entry_SYSCALL", "asm_", "irqentry", "ret_from_fork")):
            return f[:i]
    return f


def helper_at(u):
    """The index of the call_helper frame in u, or -1."""
    return next((i for i, x in enumerate(u) if x.startswith(CALL_HELPER)), -1)


def whole(f):
    """The stack runs from the thread's start through libjvm's Java call into Java frames,
    with no frame left unnamed on the way."""
    u = user_frames(f)
    if not java_frames(u) or "[unknown]" in u or UNKNOWN_JAVA in u:
        return False
    root = u[1:] if u[0] == "clone3" else u
    return root[0] == "start_thread" and 0 <= helper_at(u) < u.index(CALL_STUB)


def jcmd_chain(pid, thread, leaf):
    """The thread's Java frames as the JVM itself shows them (jcmd Thread.print), root first,
    from a dump that caught it in leaf (the busy loop's innermost method)."""
    for _ in range(20):
        out = subprocess.run([JCMD, str(pid), "Thread.print"], capture_output=True, text=True, timeout=60).stdout
        m = re.search(r'^"' + re.escape(thread) + r'".*?\n\n', out + "\n\n", re.S | re.M)
        if not m:
            raise AssertionError(f"no thread {thread} in jcmd's dump:\n{out[:2000]}")
        chain = [method(x + "(") for x in re.findall(r"^\s+at (\S+?)\(", m.group(0), re.M)][::-1]
        if chain and chain[-1].endswith("." + leaf):
            return chain
    raise AssertionError(f"jcmd never caught {thread} in {leaf}")


class JavaStacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="java-", dir=os.path.join(np.ROOT, "build"))
        cls.classes = os.path.join(cls.dir, "classes")
        subprocess.run([JAVAC, "-d", cls.classes, SOURCE, CHURN], check=True, capture_output=True)
        # The churned generations outside the class path: only their own loaders find them.
        cls.gens = os.path.join(cls.dir, "gens")
        subprocess.run([JAVAC, "-d", cls.gens, *GENS], check=True, capture_output=True)
        cls.jvm_log = os.path.join(cls.dir, "churn-jvm.log")
        cls.procs = []
        cls.results = {}
        cls.depths = {}
        try:
            cls.record_all()
        finally:
            cls.stop_all()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    @classmethod
    def start(cls, argv):
        err = open(cls.jvm_log, "a")
        p = subprocess.Popen(list(map(str, argv)), stdout=subprocess.PIPE, stderr=err, text=True)
        err.close()
        cls.procs.append(p)
        if p.stdout.readline().strip() != "ready":
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
    def record_all(cls):
        java = [JAVA, "-cp", cls.classes, "WalkChain"]
        two = java + ["two"]
        root = os.path.join(cls.dir, "root")
        os.makedirs(root)
        files = [(os.path.join(cls.classes, c), "/app/" + c) for c in os.listdir(cls.classes)]
        files += [(p, p) for p in rootfs.library_deps(JAVA) if not p.startswith("/usr/lib/x86_64-linux-gnu")]
        # The JDK under a path the host does not have; /proc for the loader's $ORIGIN and the JVM.
        script = rootfs.chroot_script(root, files, ["/opt/jdk/bin/java", "-cp", "/app", "WalkChain"],
                                      binds=[(JDK, "/opt/jdk"), ("/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"),
                                             ("/proc", "/proc")])
        cls.container_root = root
        cls.record_batch({
            "compiled": (two, [], 3),
            "interpreted": ([JAVA, "-Xint", "-cp", cls.classes, "WalkChain"], [], 0),
        })
        cls.record_batch({
            "container": (["unshare", "--mount", "sh", "-c", script], [], 3),
            "no-java": (java, ["--no-java"], 3),
        })
        # The JVM's own log of what changed: compilations (made not entrant) and class unloading.
        churn = [JAVA, "-XX:+PrintCompilation", "-XX:+DisplayVMOutputToStderr", "-Xlog:class+unload=info:stderr",
                 "-cp", cls.classes, "WalkChurn", cls.gens]
        cls.record_batch({"pprof": (java, ["--format", "pprof"], 3), "churn": (churn, [], 0)})
        # Two JVMs in one recording, with other collectors and without compressed pointers.
        serial = cls.start([JAVA, "-XX:+UseSerialGC", "-XX:-UseCompressedOops", "-XX:-UseCompressedClassPointers",
                            "-cp", cls.classes, "WalkChain"])
        parallel = cls.start([JAVA, "-XX:+UseParallelGC", "-cp", cls.classes, "WalkChain", "two"])
        time.sleep(3)
        out = os.path.join(cls.dir, "several.folded")
        with open(os.path.join(cls.dir, "several.log"), "w") as log:
            rc = subprocess.run(st.nodeprof_record_argv(serial.pid, SECONDS, out=out) + ["--pid", str(parallel.pid)],
                                stdout=subprocess.DEVNULL, stderr=log, timeout=SECONDS + 120).returncode
        with open(log.name) as f:
            cls.results["several"] = (rc, out, f.read())
        cls.stop_all()
        cls.record_phases()

    @classmethod
    def record_phases(cls):
        """One JVM recorded from its start, first interpreting the chain, then running spin (the
        busy leaf) compiled: CompileThresholdScaling keeps the interpreter on for about three
        seconds of CPU (spin's first compilation); the recording stops 2 s after the JVM logged spin's C2
        compilation (PrintCompilation), whatever the machine's load."""
        log_path = os.path.join(cls.dir, "phases-jvm.log")
        err = open(log_path, "w")
        p = subprocess.Popen([JAVA, "-XX:CompileThresholdScaling=3000", "-XX:+PrintCompilation",
                              "-XX:+DisplayVMOutputToStderr", "-cp", cls.classes, "WalkChain"],
                             stdout=subprocess.PIPE, stderr=err, text=True)
        err.close()
        cls.procs.append(p)
        out = os.path.join(cls.dir, "phases.folded")
        log = open(os.path.join(cls.dir, "phases.log"), "w")
        rec = None
        try:
            if p.stdout.readline().strip() != "ready":
                raise AssertionError("the phases JVM did not start")
            rec = subprocess.Popen(st.nodeprof_record_argv(p.pid, 60, out=out) + ["--log-level", "debug"],
                                   stdout=subprocess.DEVNULL, stderr=log)
            deadline = time.time() + 40
            while time.time() < deadline:
                with open(log_path) as f:
                    if re.search(r"^\s*\d+\s+\d+ [ %]\s+4\s+WalkChain\$Worker::spin", f.read(), re.M):
                        break
                time.sleep(0.1)
            else:
                raise AssertionError("spin was never compiled by C2")
            t0 = time.time()
            cls.depths["phases"] = jcmd_chain(p.pid, "walk-busy", "spin")
            time.sleep(max(0, 2 - (time.time() - t0)))
            rec.send_signal(signal.SIGINT)
            rc = rec.wait(timeout=60)
        finally:
            if rec and rec.poll() is None:
                rec.kill()
                rec.wait()
            log.close()
            cls.stop_all()
        with open(log.name) as f:
            cls.results["phases"] = (rc, out, f.read())

    @classmethod
    def record_batch(cls, jobs):
        """jobs: {name: (workload argv, extra nodeprof record arguments, warm-up seconds)}."""
        procs = {name: cls.start(argv) for name, (argv, _, _) in jobs.items()}
        time.sleep(max(w for _, _, w in jobs.values()))
        running = {}
        for name, p in procs.items():
            extra = jobs[name][1]
            out = os.path.join(cls.dir, name + (".pb.gz" if "pprof" in extra else ".folded"))
            log = open(os.path.join(cls.dir, name + ".log"), "w")
            argv = st.nodeprof_record_argv(p.pid, SECONDS, out=out) + ["--log-level", "debug"] + extra
            if "pprof" in extra:
                argv.remove("folded")
                argv.remove("--format")
            running[name] = (subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log), out, log)
        for name in ("interpreted", "compiled"):
            if name in procs:
                cls.depths[name] = jcmd_chain(procs[name].pid, "walk-busy", "spin")
        if "compiled" in procs:
            cls.depths["other"] = jcmd_chain(procs["compiled"].pid, "walk-other", "otherSpin")
        for name, (p, out, log) in running.items():
            rc = p.wait(timeout=SECONDS + 120)
            log.close()
            with open(log.name) as f:
                cls.results[name] = (rc, out, f.read())
        cls.stop_all()

    def result(self, name):
        rc, out, log = self.results[name]
        self.assertEqual(rc, 0, f"nodeprof record on {name} exited {rc}: {log[-2000:]}")
        return out, log

    def stacks(self, name):
        out, _ = self.result(name)
        with open(out) as f:
            s = np.parse_folded(f.read())
        n = st.total(s)
        self.assertGreaterEqual(n, MIN_SAMPLES, f"{name}: only {n} samples:\n{st.top(s)}")
        return s

    def walker_counts(self, name):
        """The debug log's count of Java frames the BPF step recorded, by kind."""
        _, log = self.result(name)
        m = re.search(r'msg="runtime stacks" runtime=hotspot counters="samples_with_java_frames=(\d+) '
                      r'frames_interpreted=(\d+) frames_compiled=(\d+) frames_stub=(\d+) cut_no_code_blob=(\d+) '
                      r'cut_frame_not_stepped=(\d+)"', log)
        self.assertIsNotNone(m, f"{name}: no hotspot line in the log:\n{log[-2000:]}")
        return dict(zip(("stacks", "interpreted", "compiled", "stub", "no_blob", "cut"), map(int, m.groups())))

    def assert_chain(self, name, thread="walk-busy", marker="WalkChain.lambda$main$0", want=None, leaf_scopes=0):
        """The JVM's own chain of the thread (jcmd) in >= 90% of that thread's samples (those
        running its lambda), whole down to start_thread."""
        s = self.stacks(name)
        want = want or self.depths[name if thread == "walk-busy" else "other"]
        mine = lambda f: marker in java_frames(f)  # noqa: E731
        # leaf_scopes: how many of the innermost methods may be missing. A sampled pc between
        # safepoints has no debug information of its own; its scopes are those of the next
        # PcDesc (as HotSpot's own lookup takes them), which in C2 code inlining the leaf methods
        # may be their caller's.
        ok = [want[:len(want) - k] for k in range(leaf_scopes + 1)]
        hits = st.share(s, lambda f: java_frames(f) in ok and whole(f), among=mine)
        self.assertGreaterEqual(hits[1], MIN_SAMPLES // 2, f"{name}: few samples of {thread}:\n{st.top(s)}")
        self.assertGreaterEqual(hits[2], 90, f"{name}: {hits[0]} of {hits[1]} samples of {thread} carry "
                                f"{';'.join(want)}, whole:\n{st.top(s)}")
        return s

    def test_compiled_chain_as_the_jvm_shows_it(self):
        self.assert_chain("compiled")
        c = self.walker_counts("compiled")
        self.assertGreater(c["compiled"], 0, c)
        self.assertEqual(c["no_blob"] + c["cut"], 0, c)
        # Every walk with Java frames counted once: about the samples that have them.
        s = self.stacks("compiled")
        java = st.total(s, lambda f: bool(java_frames(f)))
        self.assertGreaterEqual(c["stacks"], java, c)
        # Once, not once per frame (that would be several times the samples); the counters are
        # read after the final drain, so the few samples walked between the two are allowed.
        self.assertLessEqual(c["stacks"], st.total(s) * 1.05 + 5, c)

    def test_interpreted_chain_as_the_jvm_shows_it(self):
        self.assert_chain("interpreted")
        c = self.walker_counts("interpreted")
        self.assertEqual(c["compiled"], 0, c)
        self.assertGreater(c["interpreted"], 0, c)

    def test_interpreted_then_compiled_in_one_jvm(self):
        # The chain named throughout, in both phases (the JVM's chain is the same in both).
        s = self.assert_chain("phases")
        # While a method is being compiled and installed (here, on a stack that runs it), a frame
        # sampled as one thing can be another by the time it is named: that frame is
        # "[unknown java]", never a wrong name (test_changing_code_never_gets_a_wrong_name). A
        # transition or two of them is expected; more would mean the phases are not named.
        unknown = st.total(s, lambda f: UNKNOWN_JAVA in f)
        self.assertLessEqual(unknown, max(2, st.total(s) // 100), st.top(s))
        c = self.walker_counts("phases")
        # The compiled phase: samples with spin's nmethod. The interpreted phase: samples with
        # Java frames and none compiled (a sample has at least one compiled frame per count in
        # "compiled", so this undercounts them).
        self.assertGreaterEqual(c["compiled"], 10, c)
        self.assertGreaterEqual(c["stacks"] - c["compiled"], 10, c)
        self.assertEqual(c["no_blob"] + c["cut"], 0, c)

    def test_two_threads_keep_their_own_chains(self):
        s = self.assert_chain("compiled", "walk-other", "WalkChain.lambda$main$1")
        mixed = st.total(s, lambda f: {"WalkChain$Worker.crunch", "WalkChain.other"} <= set(java_frames(f)))
        self.assertEqual(mixed, 0, f"a thread got another's frames:\n{st.top(s)}")

    def test_pprof_functions_with_files_and_lines(self):
        out, _ = self.result("pprof")
        with open(out, "rb") as f:
            p = pprof.decode(f.read(), ingest=False)
        strings = p["string_table"]
        funcs = {}
        for fn in p["function"].values():
            funcs.setdefault(method(strings[fn["name"]]), []).append(fn)
        for m, line in (("WalkChain$Worker.crunch", 11), ("WalkChain$Worker.recurse", 15), ("WalkChain$Worker.spin", 28)):
            with self.subTest(method=m):
                self.assertEqual(len(funcs.get(m, [])), 1, f"{m}: {funcs.get(m)}")
                fn = funcs[m][0]
                self.assertEqual(strings[fn["filename"]], "WalkChain.java")
                self.assertEqual(fn["start_line"], line)

    def test_changing_code_never_gets_a_wrong_name(self):
        s = self.stacks("churn")
        with open(self.jvm_log) as f:
            jvm = f.read()
        # The JVM did change the code while it was sampled.
        self.assertRegex(jvm, r"WalkChurn::measure \(\d+ bytes\)\s+made not entrant")
        self.assertGreaterEqual(len(re.findall(r"unloading class WalkGen[AB]", jvm)), 2, jvm[-2000:])
        base = ["java.lang.Thread.run", "WalkChurn$$Lambda$1.run", "WalkChurn.deoptLoop"]
        areas = {"WalkChurn$Square.area", "WalkChurn$Circle.area"}
        ok_unload = named_deopt = n_deopt = 0
        for stack, count in s.items():
            j = java_frames(st.frames(stack))
            if "WalkChurn.deoptLoop" in j:
                n_deopt += count
                # deoptLoop -> measure -> Square.area or Circle.area, each level optional (inlined
                # code's leaf pc is named after the scope that holds it)
                rest = j[len(base):]
                shape = j[:len(base)] == base and len(rest) <= 2 and (
                    not rest or rest[0] in ("WalkChurn.measure", UNKNOWN_JAVA)) and (
                    len(rest) < 2 or rest[1] in areas | {UNKNOWN_JAVA})
                named_deopt += count if shape and UNKNOWN_JAVA not in j else 0
                self.assertTrue(shape, f"wrong frames in walk-deopt: {j}")
            elif "WalkChurn.unloadLoop" in j:
                rest = j[j.index("WalkChurn.unloadLoop") + 1:]
                gens = {m[-1] for m in re.findall(r"WalkGen([AB])\.(?:applyAsLong|work\1|inner\1)", ";".join(rest))}
                names = [x for x in rest if x != UNKNOWN_JAVA]
                want = [f"WalkGen{g}.{m}{g if m != 'applyAsLong' else ''}" for g in gens for m in ("applyAsLong", "work", "inner")]
                self.assertLessEqual(len(gens), 1, f"generations mixed in one stack: {j}")
                if gens:  # running a generation: its own three methods, nothing else
                    self.assertTrue(all(x in want for x in names) and len(rest) <= 3, f"wrong frames in walk-unload: {j}")
                    ok_unload += count
        self.assertGreaterEqual(n_deopt, MIN_SAMPLES // 3, st.top(s))
        self.assertGreaterEqual(ok_unload, MIN_SAMPLES // 6, st.top(s))
        self.assertGreaterEqual(100.0 * named_deopt / n_deopt, 90, st.top(s))
        # Frames of unloaded code are caught by the identity check and counted, not named.
        _, log = self.result("churn")
        self.assertRegex(log, r'runtime=hotspot .* name_reads_failed=\d+')

    def test_several_jvms_with_other_collectors_and_pointers(self):
        # Serial GC without compressed oops and class pointers, and Parallel GC, at once: the same
        # chain in both (the second also runs walk-other's). Their C2 code samples the loops of
        # leaf and spin (inlined) at pcs whose next debug information is recurse's.
        self.assert_chain("several", want=self.depths["compiled"], leaf_scopes=2)
        self.assert_chain("several", "walk-other", "WalkChain.lambda$main$1", want=self.depths["other"], leaf_scopes=2)

    def test_jvm_in_a_container_root(self):
        self.assertEqual(os.listdir(self.container_root), [])  # its files are in another mount namespace
        # The same program as "compiled" (whose JVM jcmd could attach to): the same chain.
        self.assert_chain("container", want=self.depths["compiled"])

    def test_no_java_keeps_native_stacks(self):
        s = self.stacks("no-java")
        self.assertEqual(st.total(s, lambda f: bool(java_frames(f))), 0, st.top(s))
        _, log = self.result("no-java")
        self.assertNotIn("runtime=hotspot", log)
        # The walk stops where the Java code starts, as before Java support.
        cut = st.share(s, lambda f: helper_at(f) >= 0 and f[helper_at(f) + 1:][:1] == ["[unknown]"])
        self.assertGreaterEqual(cut[2], 90, st.top(s))


class JavaInTheAgent(unittest.TestCase):
    """hotspot_enabled in `nodeprof run`: Java frames pushed to the Pyroscope test server, and the
    runtime interface's metrics under runtime="hotspot"."""

    def push(self, hotspot_enabled):
        """The stacks (root first) of the first pushes that carry the busy thread; /metrics kept."""
        classes = os.path.join(np.tmpdir(self), "classes")
        subprocess.run([JAVAC, "-d", classes, SOURCE], check=True, capture_output=True)
        agg, self.metrics = agent_push.run(self, ".*WalkChain.*", "walkchain",
                                           {"hotspot_enabled": str(hotspot_enabled).lower()},
                                           [JAVA, "-cp", classes, "WalkChain"],
                                           lambda s: "_ZN9JavaCalls11call_helper" in s or "JavaCalls::call_helper" in s,
                                           MIN_SAMPLES)
        return agg

    def runtime_metric(self, name, **labels):
        return agent_push.runtime_metric(self, self.metrics, "hotspot", name, **labels)

    def test_hotspot_enabled(self):
        s = self.push(True)
        want = ["java.lang.Thread.run", "WalkChain$$Lambda$1.run", "WalkChain.lambda$main$0", "WalkChain$Worker.crunch"] + \
            ["WalkChain$Worker.recurse"] * 5 + ["WalkChain$Worker.leaf", "WalkChain$Worker.spin"]
        hits = st.share(s, lambda f: java_frames(f) == want)
        self.assertGreaterEqual(hits[2], 80, st.top(s))
        self.assertGreaterEqual(self.runtime_metric("nodeprof_runtime_processes"), 1)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_frames_total", kind="compiled"), 0)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_samples_total", outcome="with_java_frames"), 0)
        # C2 inlined most of the chain: its methods are named out of fewer compiled frames.
        self.assertGreater(self.runtime_metric("nodeprof_runtime_frames_total", kind="inlined"), 0)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_name_cache_entries"), 0)
        self.assertEqual(self.runtime_metric("nodeprof_runtime_stacks_cut_total", reason="no_code_blob"), 0)

    def test_hotspot_disabled(self):
        s = self.push(False)
        self.assertEqual(st.total(s, lambda f: bool(java_frames(f))), 0, st.top(s))
        self.assertEqual(self.runtime_metric("nodeprof_runtime_processes"), 0)
        self.assertEqual(self.runtime_metric("nodeprof_runtime_frames_total", kind="compiled"), 0)


if __name__ == "__main__":
    unittest.main()
