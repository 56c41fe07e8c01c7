"""Java stacks through HotSpot frames (issue 27): `nodeprof record` on a busy Java program
(tests/integration/workloads/java/WalkChain.java: Thread.run -> lambda -> Worker.crunch ->
recurse x5 -> leaf -> spin in the thread "walk-busy"), compiled from source with javac and run
under Debian's OpenJDK 17, each JVM started before the recording: the walk goes through
interpreted frames (-Xint: as deep as the JVM's own view of the thread, `jcmd PID Thread.print`)
and compiled ones (after a warm-up) down to start_thread, inside a container's root too, and
`--no-java` gives the native stacks of before (cut at the first Java frame)."""
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import np
import rootfs
import stacks as st

JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
JAVA = os.path.join(JDK, "bin", "java")
JAVAC = os.path.join(JDK, "bin", "javac")
JCMD = os.path.join(JDK, "bin", "jcmd")
SOURCE = os.path.join(np.WORKLOADS, "java", "WalkChain.java")
SECONDS = 6
MIN_SAMPLES = 30
JAVA_FRAME = "[unknown java]"  # until the namer names them: a Java frame, in its place
# libjvm's JavaCalls::call_helper, below every thread's first Java frame (mangled: --demangle none)
CALL_HELPER = "_ZN9JavaCalls11call_helper"


def java_frames(f):
    return [x for x in f if x == JAVA_FRAME]


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
    if not java_frames(u) or "[unknown]" in u:
        return False
    root = u[1:] if u[0] == "clone3" else u
    return root[0] == "start_thread" and 0 <= helper_at(u) < u.index(JAVA_FRAME)


def jcmd_depth(pid, thread):
    """How many Java frames the JVM itself shows for the thread (jcmd Thread.print)."""
    out = subprocess.run([JCMD, str(pid), "Thread.print"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r'^"' + re.escape(thread) + r'".*?\n\n', out + "\n\n", re.S | re.M)
    if not m:
        raise AssertionError(f"no thread {thread} in jcmd's dump:\n{out[:2000]}")
    return len(re.findall(r"^\s+at ", m.group(0), re.M))


class JavaStacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="java-", dir=os.path.join(np.ROOT, "build"))
        cls.classes = os.path.join(cls.dir, "classes")
        subprocess.run([JAVAC, "-d", cls.classes, SOURCE], check=True, capture_output=True)
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
        p = subprocess.Popen(list(map(str, argv)), stdout=subprocess.PIPE, text=True)
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
            "compiled": (java, [], 3),
            "interpreted": ([JAVA, "-Xint", "-cp", cls.classes, "WalkChain"], [], 0),
        })
        cls.record_batch({
            "container": (["unshare", "--mount", "sh", "-c", script], [], 3),
            "no-java": (java, ["--no-java"], 3),
        })

    @classmethod
    def record_batch(cls, jobs):
        """jobs: {name: (workload argv, extra nodeprof record arguments, warm-up seconds)}."""
        procs = {name: cls.start(argv) for name, (argv, _, _) in jobs.items()}
        time.sleep(max(w for _, _, w in jobs.values()))
        running = {}
        for name, p in procs.items():
            extra = jobs[name][1]
            out = os.path.join(cls.dir, name + ".folded")
            log = open(os.path.join(cls.dir, name + ".log"), "w")
            argv = st.nodeprof_record_argv(p.pid, SECONDS, out=out) + ["--log-level", "debug"] + extra
            running[name] = (subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log), out, log)
        if "interpreted" in procs:
            cls.depths["interpreted"] = max(jcmd_depth(procs["interpreted"].pid, "walk-busy") for _ in range(3))
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
        m = re.search(r'msg="java stacks" interpreted=(\d+) compiled=(\d+) stub=(\d+) no_blob=(\d+) cut=(\d+)', log)
        self.assertIsNotNone(m, f"{name}: no java stacks line in the log:\n{log[-2000:]}")
        return dict(zip(("interpreted", "compiled", "stub", "no_blob", "cut"), map(int, m.groups())))

    def assert_whole(self, name):
        s = self.stacks(name)
        # The busy thread is nearly all of the process's samples: JVM threads are mostly idle.
        busy = st.share(s, lambda f: bool(java_frames(f)))
        self.assertGreaterEqual(busy[2], 90, f"{name}: {busy[0]} of {busy[1]} samples have Java frames:\n{st.top(s)}")
        hits = st.share(s, whole, among=lambda f: bool(java_frames(f)))
        self.assertGreaterEqual(hits[2], 95, f"{name}: {hits[0]} of {hits[1]} Java samples whole:\n{st.top(s)}")
        return s

    def test_compiled_frames_walked_whole(self):
        self.assert_whole("compiled")
        c = self.walker_counts("compiled")
        self.assertGreater(c["compiled"], 0, c)
        self.assertEqual(c["no_blob"] + c["cut"], 0, c)

    def test_interpreted_frames_as_deep_as_the_jvm_says(self):
        s = self.assert_whole("interpreted")
        c = self.walker_counts("interpreted")
        self.assertEqual(c["compiled"], 0, c)
        self.assertGreater(c["interpreted"], 0, c)
        # Every interpreted method is one frame; the call stub that enters Java adds one.
        want = self.depths["interpreted"] + 1
        deep = st.share(s, lambda f: len(java_frames(f)) == want, among=lambda f: bool(java_frames(f)))
        self.assertGreaterEqual(deep[2], 80, f"{deep[0]} of {deep[1]} samples have {want} Java frames:\n{st.top(s)}")
        self.assertEqual(st.total(s, lambda f: len(java_frames(f)) > want), 0, st.top(s))

    def test_jvm_in_a_container_root(self):
        self.assertEqual(os.listdir(self.container_root), [])  # its files are in another mount namespace
        self.assert_whole("container")

    def test_no_java_keeps_native_stacks(self):
        s = self.stacks("no-java")
        self.assertEqual(st.total(s, lambda f: bool(java_frames(f))), 0, st.top(s))
        _, log = self.result("no-java")
        self.assertNotIn('msg="java stacks"', log)
        # The walk stops where the Java code starts, as before Java support.
        cut = st.share(s, lambda f: helper_at(f) >= 0 and f[helper_at(f) + 1:][:1] == ["[unknown]"])
        self.assertGreaterEqual(cut[2], 90, st.top(s))


if __name__ == "__main__":
    unittest.main()
