"""PHP frames in every sample of a PHP process (issue 30): `nodeprof record` on a CPU-bound
script with a known call chain (tests/integration/workloads/php_chain.php: main ->
Worker::crunch, a static method -> recurse x6 -> array_map, an internal function -> {closure}
-> leaf -> spin), in the order PHP's own debug_backtrace() gives, under Debian's php8.2:
the CLI, started before the recording; the CLI inside a container's root; a php-fpm pool of
three workers serving requests from three clients at once, without opcache (each request
compiles the script again, so frames are named after their requests freed them: [php] then,
never another name); the CLI with opcache's tracing JIT on, exec'd once its recording runs
(its code marked [php jit]); the pprof output's files and lines; --no-php. And `nodeprof run`
with php_enabled on (its frames pushed to the test Pyroscope, its /metrics) and off, the PHP
process started after the agent. All recordings run at once, so the whole module takes a few
seconds more than one recording."""
import os
import signal
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import agent_push
import fastcgi
import np
import pprof
import rootfs
import stacks as st

WORKLOAD = os.path.join(np.WORKLOADS, "php_chain.php")
PHP = "/usr/bin/php8.2"
FPM = "/usr/sbin/php-fpm8.2"
OPCACHE = "opcache.so"  # found in the build's extension directory
SECONDS = 8  # long enough that the first samples (before a process is known) stay a small share on a loaded machine
HZ = 199  # twice the default: enough samples per process while the machine is shared
MIN_SAMPLES = 50
PHP_NAMES = {"main", "Worker::crunch", "recurse", "array_map", "{closure}", "leaf", "spin"}


def jit_php():
    """The CLI with opcache's tracing JIT on."""
    return [PHP, "-n", "-d", f"zend_extension={OPCACHE}", "-d", "opcache.enable_cli=1", "-d",
            "opcache.jit_buffer_size=32M", "-d", "opcache.jit=tracing"]


def reference_chain():
    """The chain as PHP itself sees it from spin: debug_backtrace()'s functions, root first,
    under the script's own code (which PHP's traces call {main})."""
    out = subprocess.run([PHP, "-n", WORKLOAD, "trace"], check=True, capture_output=True, text=True).stdout
    return ["main"] + out.split()


def php_frames(frames):
    return [f for f in frames if f in PHP_NAMES]


def line_of(tag):
    with open(WORKLOAD) as f:
        for i, line in enumerate(f, 1):
            if f"LINE:{tag}" in line:
                return i
    raise AssertionError(f"no LINE:{tag} in {WORKLOAD}")


def fpm_config(d):
    path = os.path.join(d, "fpm.conf")
    with open(path, "w") as f:
        f.write(f"""[global]
error_log = {d}/fpm.log
daemonize = no
pid = {d}/fpm.pid
[pool]
user = root
group = root
listen = {d}/fpm.sock
pm = static
pm.max_children = 3
""")
    return path


class PhpStacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="php-", dir=os.path.join(np.ROOT, "build"))
        cls.procs = []
        cls.results = {}
        cls.served = set()
        try:
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
        # The script is running before nodeprof starts. (In the container's root PHP warns first
        # that it has no time zone data: Debian's PHP reads the system's.)
        for _ in range(5):
            if p.stdout.readline().strip() == "started":
                return p
        raise AssertionError(f"{argv} did not start")

    @classmethod
    def stop_all(cls):
        for p in cls.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()
        cls.procs = []
        # php-fpm's workers outlive a killed master (they are reparented, not signalled): each
        # is stopped by the PID start_fpm found.
        for pid in getattr(cls, "fpm_workers", []):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        cls.fpm_workers = []

    @classmethod
    def start_fpm(cls):
        """A php-fpm pool of three workers (the master's children once it is ready)."""
        conf = fpm_config(cls.dir)
        # -n: no php.ini, so no opcache: every request compiles the script again, mostly at the
        # addresses the last request's functions had (the case the namer's stale check is for).
        master = subprocess.Popen([FPM, "-n", "-R", "-F", "-y", conf], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        cls.procs.append(master)
        sock, deadline = os.path.join(cls.dir, "fpm.sock"), time.time() + 20
        workers = []
        while time.time() < deadline:
            try:
                with open(f"/proc/{master.pid}/task/{master.pid}/children") as f:
                    workers = [int(w) for w in f.read().split()]
            except OSError:
                workers = []
            if len(workers) == 3 and os.path.exists(sock):
                cls.fpm_workers = workers
                return sock, workers
            if master.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"php-fpm did not start its pool: {workers}")

    @classmethod
    def serve(cls, sock, end):
        """Three clients, each sending requests of 0.3 s of the chain until end."""
        def client():
            while time.time() < end:
                out, _, status = fastcgi.get(sock, WORKLOAD, "seconds=0.3")
                text = out.decode(errors="replace")
                if status == 0 and "served by " in text:
                    cls.served.add(int(text.rsplit("served by ", 1)[1].split()[0]))
        threads = [threading.Thread(target=client, daemon=True) for _ in range(3)]
        for t in threads:
            t.start()
        return threads

    @classmethod
    def record_all(cls):
        """Every recording at once, each its own `nodeprof record`."""
        root = os.path.join(cls.dir, "root")
        os.makedirs(root)
        files = [(p, p) for p in rootfs.library_deps(PHP)] + [(PHP, PHP), (WORKLOAD, "/work.php")]
        script = rootfs.chroot_script(root, files, [PHP, "-n", "/work.php", "chain", str(SECONDS + 20)])
        cls.container_root = root
        jobs = {
            "pprof": ([PHP, "-n", WORKLOAD, "chain", SECONDS + 20], ["--format", "pprof"]),
            "container": (["unshare", "--mount", "sh", "-c", script], []),
            "no-php": ([PHP, "-n", WORKLOAD, "chain", SECONDS + 20], ["--no-php"]),
        }
        pids = {name: [cls.start(argv).pid] for name, (argv, _) in jobs.items()}
        # opcache's tracing JIT, which compiles the hot loop in spin, in a process that execs PHP
        # only once its recording runs (same pid, a new incarnation): nodeprof finds PHP at the
        # exec, often before opcache maps the JIT's buffer (then it finds the buffer when a pc in
        # it has the maps read again; which comes first depends on when the exec event is read).
        gate = os.path.join(cls.dir, "jit-go")
        jit = subprocess.Popen(["sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; exec \"$0\" \"$@\"",
                                *jit_php(), WORKLOAD, "chain", str(SECONDS + 20)], stdout=subprocess.PIPE, text=True)
        cls.procs.append(jit)
        jobs["jit"] = (None, [])
        pids["jit"] = [jit.pid]
        sock, workers = cls.start_fpm()
        clients = cls.serve(sock, time.time() + SECONDS + 2)
        jobs["fpm"] = (None, [])
        pids["fpm"] = workers
        running = {}
        for name, (_, extra) in jobs.items():
            out = os.path.join(cls.dir, name + (".pb.gz" if "pprof" in extra else ".folded"))
            log = open(os.path.join(cls.dir, name + ".log"), "w")
            argv = st.nodeprof_record_argv(pids[name][0], SECONDS, hz=HZ, out=out) + extra
            for pid in pids[name][1:]:
                argv += ["--pid", str(pid)]
            running[name] = (subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log), out, log)
        deadline = time.time() + 20
        while time.time() < deadline and "recording the given processes" not in open(running["jit"][2].name).read():
            time.sleep(0.05)
        open(gate, "w").close()
        if jit.stdout.readline().strip() != "started":
            raise AssertionError("the JIT process did not start")
        for name, (p, out, log) in running.items():
            rc = p.wait(timeout=SECONDS + 120)
            log.close()
            with open(log.name) as f:
                cls.results[name] = (rc, out, f.read())
        for t in clients:
            t.join(timeout=10)

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
        want = reference_chain()
        self.assertEqual(want[:3], ["main", "Worker::crunch", "recurse"])  # the reference is what we think
        carries = lambda f: php_frames(f) == want
        hits, n, pct = st.share(s, carries)
        self.assertGreaterEqual(pct, 90, f"{name}: {hits} of {n} samples carry {';'.join(want)}; the others:\n"
                                f"{st.top(s, 8, lambda f: not carries(f))}")
        # The PHP frames stand where the VM's execute_ex stood: none is left among them, the
        # script's root sits below the interpreter's entry (zend_execute) and the C code array_map
        # calls the closure through stays between the two. Judged on the samples whose native
        # walk reached the program's entry (the unwinding tests judge how many do).
        whole = st.share(s, lambda f: php_frames(f) == want and "execute_ex" not in f
                          and st.ENTRY in f[:f.index("main")] and f.index("zend_execute") < f.index("main")
                          and f.index("array_map") < f.index("zend_call_function") < f.index("{closure}"),
                         among=lambda f: st.ENTRY in f)
        self.assertGreaterEqual(whole[2], 90, f"{name}: merged stacks:\n{st.top(s)}")

    def test_cli_chain(self):
        self.assert_chain("pprof")

    def test_process_in_a_container_root(self):
        self.assertEqual(os.listdir(self.container_root), [])  # its files are in another mount namespace
        self.assert_chain("container")

    def test_fpm_pool(self):
        self.assert_chain("fpm")
        # A frame read after its request freed it is [php], never garbage or another's name.
        s = self.stacks("fpm")
        odd = {f for k in s for f in st.frames(k) if "\ufffd" in f or any(c.isspace() for c in f)}
        self.assertEqual(odd, set(), st.top(s))
        self.assertGreaterEqual(len(self.served), 2, f"workers that served requests: {self.served}")

    def test_pprof_names_files_and_lines(self):
        out, _ = self.result("pprof")
        with open(out, "rb") as f:
            p = pprof.decode(f.read(), ingest=False)
        strings = p["string_table"]
        funcs = {strings[fn["name"]]: fn for fn in p["function"].values()}
        for name in ("main", "Worker::crunch", "recurse", "{closure}", "leaf", "spin"):
            self.assertIn(name, funcs)
            self.assertEqual(strings[funcs[name]["filename"]], WORKLOAD, name)
        self.assertEqual(funcs["Worker::crunch"]["start_line"], line_of("crunch") - 5)  # its declaration
        self.assertEqual(funcs["array_map"]["filename"], 0)  # PHP's own C function: no file
        # Each caller's line is its call's line: the call sites of the chain.
        want = {"main": {line_of("main")}, "Worker::crunch": {line_of("crunch")},
                "recurse": {line_of("recurse"), line_of("closure")}, "{closure}": {line_of("closure")},
                "leaf": {line_of("leaf")},
                # The leaf's line is the last the VM saved (docs/specs/php.md §4): the loop's body
                # (% saves it, as it may throw) or its test.
                "spin": {line_of("spin"), line_of("spin") - 1}}
        seen = {name: {} for name in want}
        by_id = {fn["id"]: strings[fn["name"]] for fn in p["function"].values()}
        for s in p["sample"]:
            for lid in s["location_id"]:
                for ln in p["location"][lid]["line"]:
                    name = by_id.get(ln["function_id"])
                    if name in seen:
                        seen[name][ln["line"]] = seen[name].get(ln["line"], 0) + s["value"][0]
        for name, lines in want.items():
            total = sum(seen[name].values())
            right = sum(v for line, v in seen[name].items() if line in lines)
            self.assertGreater(total, 0, name)
            self.assertGreaterEqual(right / total, 0.95, f"lines of {name}: {seen[name]}, want {lines}")

    def test_jit_code_is_marked(self):
        s = self.stacks("jit")
        want = reference_chain()
        # The JIT's code has no unwind table: the native walk stops in it and the PHP frames go
        # at the root end, the JIT's code named below the function it runs (the samples taken
        # before the maps were read again name it [unknown]).
        hits, n, pct = st.share(s, lambda f: php_frames(f) == want and f[-1] in ("[php jit]", "[unknown]"))
        self.assertGreaterEqual(pct, 90, f"{hits} of {n} samples:\n{st.top(s)}")
        hits, n, pct = st.share(s, lambda f: f[-1] == "[php jit]")
        self.assertGreaterEqual(pct, 50, f"{hits} of {n} samples:\n{st.top(s)}")

    def test_no_php_shows_the_vm(self):
        s = self.stacks("no-php")
        named = lambda f: bool(php_frames(f))
        self.assertEqual(st.total(s, named), 0, st.top(s, 8, named))
        self.assertGreaterEqual(st.share(s, st.has("execute_ex"))[2], 90, st.top(s))


class PhpInTheAgent(unittest.TestCase):
    """php_enabled in `nodeprof run`: the frames pushed to Pyroscope, and /metrics. The PHP
    process (with opcache's tracing JIT when php_enabled is on) starts once the agent runs."""

    def run_agent(self, enabled, keep, min_samples, jit=False):
        gate = os.path.join(np.tmpdir(self), "go")
        php = jit_php() if jit else [PHP, "-n"]
        # The shell waits for the gate, then becomes the PHP process (the command line matches
        # before and after).
        workload = ["sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; exec \"$0\" \"$@\"",
                    *php, WORKLOAD, "chain", "60"]

        def go(port, agent):
            deadline = time.time() + 20
            while time.time() < deadline:
                try:
                    if "nodeprof_runtime_processes" in agent_push.metrics(port):
                        break
                except OSError:
                    pass  # not listening yet
                self.assertIsNone(agent.poll(), "the agent exited")
                time.sleep(0.2)
            open(gate, "w").close()

        return agent_push.run(self, ".*php_chain.php chain.*", "phpchain", {"php_enabled": str(enabled).lower()},
                              workload, keep, min_samples, deadline=30, after_start=go)

    def runtime_metric(self, name, **labels):
        return agent_push.runtime_metric(self, self.metrics, "php", name, **labels)

    def test_php_enabled(self):
        want = reference_chain()
        agg, self.metrics = self.run_agent(True, lambda k: php_frames(k.split(";")) == want, 30, jit=True)
        self.assertTrue(all("execute_ex" not in k for k in agg), st.top(agg))
        self.assertGreaterEqual(st.share(agg, lambda f: f[-1] == "[php jit]")[2], 80, st.top(agg))
        self.assertGreaterEqual(self.runtime_metric("nodeprof_runtime_processes"), 1)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_samples_total", outcome="walked"), 0)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_frames_total", kind="user"), 0)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_frames_total", kind="internal"), 0)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_name_cache_entries"), 0)
        self.assertEqual(self.runtime_metric("nodeprof_runtime_name_read_failures_total"), 0)
        # A sample may catch a frame being set up (torn): rare, never the rule.
        walked = self.runtime_metric("nodeprof_runtime_samples_total", outcome="walked")
        self.assertLessEqual(self.runtime_metric("nodeprof_runtime_stacks_cut_total", reason="read_failed"),
                             walked / 50)

    def test_php_disabled(self):
        agg, self.metrics = self.run_agent(False, lambda k: "execute_ex" in k, 20)
        self.assertTrue(all("Worker::crunch" not in k for k in agg), st.top(agg))
        self.assertEqual(self.runtime_metric("nodeprof_runtime_processes"), 0)
        self.assertEqual(self.runtime_metric("nodeprof_runtime_samples_total", outcome="walked"), 0)


if __name__ == "__main__":
    unittest.main()
