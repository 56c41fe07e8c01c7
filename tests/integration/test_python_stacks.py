"""Python frames in every sample of a CPython process (issue 19): `nodeprof record` on a
CPU-bound program with a known call chain (tests/integration/workloads/python_chain.py:
<module> -> loop -> gen, a generator -> recurse x6 -> Worker.crunch, a method) under
Debian's python3.11 and every CPython 3.8+ of the machine image's pyenv root, each started
before the recording; two threads with different chains (3.11, which records each
thread's kernel TID, and 3.9, where the thread is told by the C library's descriptor); a
process inside a container's root; the pprof output's files and lines; --no-python; and
`nodeprof run` with python_enabled on and off. CPython 3.6 and 3.7 are refused with a
warning that says so, and their stacks stay native."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

import agent_push
import np
import pprof
import rootfs
import stacks as st

WORKLOAD = os.path.join(np.WORKLOADS, "python_chain.py")
PYENV = os.environ.get("PYENV_ROOT", "/root/.pyenv")
DEBIAN = "/usr/bin/python3.11"
SECONDS = 4
MIN_SAMPLES = 40
PY_NAMES = {"<module>", "loop", "gen", "recurse", "crunch", "Worker.crunch", "alpha_loop", "alpha_leaf",
            "beta_loop", "beta_leaf"}


def pyenv_interpreters():
    """{"3.X": path} of the pyenv root's CPython builds, newest patch release per minor."""
    found = {}
    vdir = os.path.join(PYENV, "versions")
    for v in sorted(os.listdir(vdir)) if os.path.isdir(vdir) else []:
        m = re.fullmatch(r"3\.(\d+)\.\d+", v)
        exe = os.path.join(vdir, v, "bin", "python3")
        if m and os.access(exe, os.X_OK):
            found[f"3.{m.group(1)}"] = exe
    return found


def chain(minor):
    """The Python frames of a whole sample of the chain workload, root first."""
    leaf = "Worker.crunch" if minor >= 11 else "crunch"  # co_qualname exists from 3.11
    return ["<module>", "loop", "gen"] + ["recurse"] * 6 + [leaf]


def python_frames(frames):
    return [f for f in frames if f in PY_NAMES]


def line_of(tag):
    with open(WORKLOAD) as f:
        for i, line in enumerate(f, 1):
            if f"# LINE:{tag}" in line:
                return i
    raise AssertionError(f"no # LINE:{tag} in {WORKLOAD}")


def folded(path):
    out = {}
    with open(path) as f:
        for line in f:
            s, c = line.rstrip("\n").rsplit(" ", 1)
            out[s] = out.get(s, 0) + int(c)
    return out


class PythonStacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="python-", dir=os.path.join(np.ROOT, "build"))
        cls.procs = []
        cls.results = {}
        try:
            cls.interpreters = dict(pyenv_interpreters())
            cls.interpreters["debian"] = DEBIAN
            cls.record_all()
        finally:
            cls.stop_all()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    @classmethod
    def start(cls, argv, **kw):
        p = subprocess.Popen(list(map(str, argv)), stdout=subprocess.PIPE, text=True, **kw)
        cls.procs.append(p)
        # The program is running (and its interpreter initialised) before nodeprof starts.
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
    def record_all(cls):
        """The recordings in three batches (each process its own `nodeprof record --pid`, all of
        a batch at once), so that each process gets a few hundred samples on two CPUs."""
        old = {v: exe for v, exe in cls.interpreters.items() if v != "debian" and int(v.split(".")[1]) < 11}
        new = {v: exe for v, exe in cls.interpreters.items() if v not in old}
        cls.record_batch({name: ([exe, WORKLOAD, "chain", SECONDS + 20], []) for name, exe in old.items()})
        cls.record_batch({name: ([exe, WORKLOAD, "chain", SECONDS + 20], []) for name, exe in new.items()})
        # Debian's python3.11 in a container's root: its files exist only in another mount namespace.
        root = os.path.join(cls.dir, "root")
        os.makedirs(root)
        files = [(p, p) for p in rootfs.library_deps(DEBIAN)] + [(DEBIAN, DEBIAN), (WORKLOAD, "/work.py")]
        script = rootfs.chroot_script(root, files, [DEBIAN, "/work.py", "chain", str(SECONDS + 20)],
                                      binds=[("/usr/lib/python3.11", "/usr/lib/python3.11")])
        cls.container_root = root
        third = {
            "threads-3.11": ([DEBIAN, WORKLOAD, "threads", SECONDS + 20], []),
            "container": (["unshare", "--mount", "sh", "-c", script], []),
            # pprof output, and the same without Python frames.
            "pprof": ([cls.interpreters.get("3.12", DEBIAN), WORKLOAD, "chain", SECONDS + 20], ["--format", "pprof"]),
            "no-python": ([DEBIAN, WORKLOAD, "chain", SECONDS + 20], ["--no-python"]),
        }
        if "3.9" in cls.interpreters:
            third["threads-3.9"] = ([cls.interpreters["3.9"], WORKLOAD, "threads", SECONDS + 20], [])
        cls.record_batch(third)

    @classmethod
    def record_batch(cls, jobs):
        """jobs: {name: (workload argv, extra nodeprof record arguments)}."""
        procs = {name: cls.start(argv) for name, (argv, _) in jobs.items()}
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
        cls.stop_all()

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

    def assert_chain(self, name, minor):
        s = self.stacks(name)
        want = chain(minor)
        hits, n, pct = st.share(s, lambda f: python_frames(f) == want)
        self.assertGreaterEqual(pct, 90, f"{name}: {hits} of {n} samples carry {';'.join(want)}:\n{st.top(s)}")
        # The Python frames stand where the eval loop's stood: no _PyEval_EvalFrameDefault is left
        # between them, and the chain's root sits below the interpreter's own entry.
        whole = st.share(s, lambda f: python_frames(f) == want and "_PyEval_EvalFrameDefault" not in f
                         and st.ENTRY in f[:f.index("<module>")])
        self.assertGreaterEqual(whole[2], 90, f"{name}: merged stacks:\n{st.top(s)}")

    def test_every_interpreter(self):
        versions = [v for v in self.interpreters if v != "debian"]
        for v in versions + ["debian"]:
            minor = 11 if v == "debian" else int(v.split(".")[1])
            with self.subTest(python=v):
                if minor < 8:
                    s = self.stacks(v)
                    _, log = self.result(v)
                    self.assertIn(f"CPython 3.{minor} is not supported", log)
                    self.assertEqual(st.total(s, lambda f: bool(python_frames(f))), 0)
                else:
                    self.assert_chain(v, minor)
        # What this machine image carries: the test judges every one of them.
        for minor in range(8, 14):
            self.assertIn(f"3.{minor}", versions)

    def test_process_in_a_container_root(self):
        self.assertEqual(os.listdir(self.container_root), [])  # its files are in another mount namespace
        self.assert_chain("container", 11)

    def test_threads_keep_their_own_chains(self):
        for name in ("threads-3.11", "threads-3.9"):
            with self.subTest(job=name):
                s = self.stacks(name)
                alpha = st.share(s, lambda f: python_frames(f)[-2:] == ["alpha_loop", "alpha_leaf"])
                beta = st.share(s, lambda f: python_frames(f)[-2:] == ["beta_loop", "beta_leaf"])
                mixed = st.total(s, lambda f: {"alpha_loop", "beta_loop"} <= set(f))
                self.assertEqual(mixed, 0, f"{name}: a thread got another's frames:\n{st.top(s)}")
                self.assertGreaterEqual(alpha[2], 25, f"{name}:\n{st.top(s)}")
                self.assertGreaterEqual(beta[2], 25, f"{name}:\n{st.top(s)}")
                self.assertGreaterEqual(alpha[2] + beta[2], 90, f"{name}:\n{st.top(s)}")

    def test_pprof_names_files_and_lines(self):
        out, _ = self.result("pprof")
        with open(out, "rb") as f:
            p = pprof.decode(f.read(), ingest=False)
        strings = p["string_table"]
        funcs = {strings[fn["name"]]: fn for fn in p["function"].values()}
        self.assertIn("Worker.crunch", funcs)
        crunch = funcs["Worker.crunch"]
        self.assertTrue(strings[crunch["filename"]].endswith("python_chain.py"), strings[crunch["filename"]])
        self.assertEqual(crunch["start_line"], line_of("crunch") - 3)  # the def line
        # Most samples in crunch are on its hot line.
        lines = {}
        for s in p["sample"]:
            leaf_py = None
            for lid in s["location_id"]:
                loc = p["location"][lid]
                if loc["line"] and loc["line"][0]["function_id"] == crunch["id"]:
                    leaf_py = loc["line"][0]["line"]
                    break
            if leaf_py is not None:
                lines[leaf_py] = lines.get(leaf_py, 0) + s["value"][0]
        total = sum(lines.values())
        self.assertGreater(total, 0)
        hot = sum(v for line, v in lines.items() if line in (line_of("crunch"), line_of("crunch") - 1))
        self.assertGreaterEqual(hot / total, 0.8, f"lines of Worker.crunch: {lines}")

    def test_no_python_shows_the_eval_loop(self):
        s = self.stacks("no-python")
        self.assertEqual(st.total(s, lambda f: bool(python_frames(f))), 0, st.top(s))
        self.assertGreaterEqual(st.share(s, st.has("_PyEval_EvalFrameDefault"))[2], 90, st.top(s))


def run_config(python_enabled):
    return np.process_pipeline_config(".*python_chain.py chain.*", "pychain",
                                      {"python_enabled": str(python_enabled).lower()})


class PythonInTheAgent(unittest.TestCase):
    """python_enabled in `nodeprof run`: the local UI gets what pushes get."""

    def top(self, python_enabled):
        port, a = agent_push.start(self, run_config(python_enabled), [DEBIAN, WORKLOAD, "chain", "60"])
        deadline, body = time.time() + 40, ""
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/top?from=now-5m", timeout=5) as r:
                    body = r.read().decode()
                if "recurse" in body or "_PyEval_EvalFrameDefault" in body:
                    break
            except OSError:
                pass
            self.assertIsNone(a.poll(), "the agent exited")
            time.sleep(1)
        self.metrics = agent_push.metrics(port)
        return json.loads(body) if body else {}, body

    def runtime_metric(self, name, **labels):
        return agent_push.runtime_metric(self, self.metrics, "python", name, **labels)

    def test_python_enabled(self):
        _, body = self.top(True)
        self.assertIn("Worker.crunch", body)
        self.assertIn("recurse", body)
        # The runtime interface's metrics, under runtime="python".
        self.assertGreaterEqual(self.runtime_metric("nodeprof_runtime_processes"), 1)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_samples_total", outcome="walked"), 0)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_frames_total", kind="interpreted"), 0)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_name_cache_entries"), 0)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_name_cache_bytes"), 0)
        self.assertEqual(self.runtime_metric("nodeprof_runtime_frames_dropped_total"), 0)

    def test_python_disabled(self):
        _, body = self.top(False)
        self.assertIn("_PyEval_EvalFrameDefault", body)
        self.assertNotIn("recurse", body)
        self.assertEqual(self.runtime_metric("nodeprof_runtime_processes"), 0)
        self.assertEqual(self.runtime_metric("nodeprof_runtime_samples_total", outcome="walked"), 0)


if __name__ == "__main__":
    unittest.main()
