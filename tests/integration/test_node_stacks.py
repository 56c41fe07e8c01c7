"""JavaScript stacks through V8's frames (issue 28): `nodeprof record` on busy Node.js programs
started before it, with no flag on the node command line, names their JavaScript frames from
V8's heap (bpf/v8.h records them, agent/runtime/v8 names them):

- tests/integration/workloads/js/chain.js (main -> Worker.crunch -> an anonymous function ->
  recurse x6 -> leaf) gives the chain V8's own CPU profiler (`node --cpu-prof`) records for the
  same program, in its order, in >= 90% of the busy thread's samples, whole from the process's
  entry: optimised (TurboFan), baseline (Sparkplug), interpreted (Ignition only), and one
  process going from interpreted to optimised while it is recorded;
- a call TurboFan inlined (workloads/js/inline.js) is expanded back into both functions;
- a worker_threads worker's chain is in the worker's thread, not the main one;
- Debian's Node 18 (V8 10.2 in libnode.so.108, another Code layout) in a container root;
- pprof has one Function per JavaScript function with its script and first line, and lines
  inside it;
- `--no-v8` gives the native stacks of before (V8's trampolines and [unknown]); with node's perf
  map (--perf-basic-prof) the names are the same, and the map still names JIT code with --no-v8;
- `nodeprof run` with v8_enabled pushes the same frames to the Pyroscope test server and exports
  the runtime's metrics under runtime="v8"; v8_enabled = false turns it off."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import agent_push
import nodejs
import np
import pprof
import stacks as st
from nodejs import CHAIN, CHAIN_NAMES, INLINE, INTERPRETED, NODE

SECONDS = 4
MIN_SAMPLES = 30
UNKNOWN_JS = "[unknown js]"
MAIN_THREAD = "_ZN4node5Start"  # node::Start (mangled: --demangle none)
# Where V8 is entered from C++ (v8::internal::Execution::Call, TryRunMicrotasks...): a sample
# below it runs JavaScript.
EXECUTION = "_ZN2v88internal9Execution"
WORKER_THREAD = "_ZN4node6worker6Worker3RunEv"  # node::worker::Worker::Run
# A whole stack's first frames: the process's entry (_start, or glibc's when the walk misses
# _start's own frame), a thread's.
ROOTS = ("_start", st.ENTRY, "clone3", "start_thread")
# The chain root first, as a profile shows it.
CHAIN_ROOT_FIRST = CHAIN_NAMES[::-1]


def after(f, run):
    """The frames of f after the first occurrence of the run of frames run, None without one."""
    for i in range(len(f) - len(run) + 1):
        if f[i:i + len(run)] == run:
            return f[i + len(run):]
    return None


def whole_chain(f, want=CHAIN_ROOT_FIRST):
    """f holds want from the process's entry, with no unnamed frame, and nothing past its leaf
    but V8's builtins (a bytecode handler of an interpreted leaf, a stack check)."""
    rest = after(f, want)
    return (rest is not None and all(x.startswith("Builtins_") for x in rest) and f[0] in ROOTS
            and "[unknown]" not in f and UNKNOWN_JS not in f)


class NodeStacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        nodejs.ensure_node18()
        cls.dir = tempfile.mkdtemp(prefix="node-", dir=os.path.join(np.ROOT, "build"))
        cls.results, cls.infos, cls.perf_maps = {}, {}, []
        cls.cpu_chain, cls.cpu_leaf = nodejs.cpu_prof_chain(cls.dir)
        root18 = os.path.join(cls.dir, "root18")
        os.makedirs(root18)
        env = dict(os.environ)
        cls.record_batch({
            "optimised": ([NODE, CHAIN], env, []),
            "interpreted": ([NODE, *INTERPRETED, CHAIN], env, []),
            # interpreted for 1.5 s, then TurboFan (see chain.js)
            "phases": ([NODE, "--allow-natives-syntax", *INTERPRETED, CHAIN],
                       {**env, "CHAIN_OPTIMISE_AFTER": "1.5"}, []),
            "worker": ([NODE, CHAIN], {**env, "CHAIN_WORKER": "1"}, []),
            "perf-map-no-v8": ([NODE, "--perf-basic-prof", CHAIN], env, ["--no-v8"]),
            # Sparkplug's code for every function, nothing optimised
            "baseline": ([NODE, "--no-opt", "--no-maglev", "--always-sparkplug", CHAIN], env, []),
        })
        cls.record_batch({
            "inline": ([NODE, INLINE], env, []),
            "pprof": ([NODE, CHAIN], env, ["--format", "pprof"]),
            "node18": (["unshare", "--mount", "sh", "-c", nodejs.node18_script(root18, CHAIN, [])], env, []),
            "no-v8": ([NODE, CHAIN], env, ["--no-v8"]),
            "perf-map": ([NODE, "--perf-basic-prof", CHAIN], env, []),
        })

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)
        for m in cls.perf_maps:
            if os.path.exists(m):
                os.unlink(m)

    @classmethod
    def record_batch(cls, jobs):
        """jobs: {name: (workload argv, its environment, extra nodeprof record arguments)}: the
        workloads started, then recorded side by side for SECONDS, each by its own nodeprof."""
        procs, running = {}, {}
        try:
            for name, (argv, env, _) in jobs.items():
                # In the test's directory: node --perf-basic-prof writes its isolate-*-v8.log there.
                p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                                     cwd=cls.dir)
                procs[name] = p
                cls.infos[name] = nodejs.read_line(p)
                if "--perf-basic-prof" in argv:
                    cls.perf_maps.append(f"/tmp/perf-{p.pid}.map")
            for name, p in procs.items():
                extra = jobs[name][2]
                out = os.path.join(cls.dir, name + (".pb.gz" if "pprof" in extra else ".folded"))
                log = open(os.path.join(cls.dir, name + ".log"), "w")
                argv = st.nodeprof_record_argv(p.pid, SECONDS, out=out) + ["--no-kernel", "--log-level", "debug"]
                if "pprof" in extra:
                    argv = argv[:argv.index("--format")] + argv[argv.index("--format") + 2:]
                running[name] = (subprocess.Popen(argv + extra, stdout=subprocess.DEVNULL, stderr=log), out, log)
            for name, (r, out, log) in running.items():
                rc = r.wait(timeout=SECONDS + 120)
                log.close()
                with open(log.name) as f:
                    cls.results[name] = (rc, out, f.read())
            # what the phases workload printed while it was recorded
            if "phases" in procs:
                cls.infos["phases-later"] = nodejs.read_line(procs["phases"], deadline=5)
        finally:
            for p in procs.values():
                p.kill()
                p.wait()
                p.stdout.close()

    def result(self, name):
        rc, out, log = self.results[name]
        self.assertEqual(rc, 0, f"nodeprof record on {name} exited {rc}: {log[-2000:]}")
        return out, log

    def stacks(self, name):
        out, _ = self.result(name)
        with open(out) as f:
            s = np.parse_folded(f.read())
        self.assertGreaterEqual(st.total(s), MIN_SAMPLES, f"{name}: only {st.total(s)} samples:\n{st.top(s)}")
        return s

    def walker_counts(self, name):
        """The debug log's counts of the frames the BPF step recorded, by kind."""
        _, log = self.result(name)
        m = re.search(r'msg="runtime stacks" runtime=v8 counters="([^"]*)"', log)
        self.assertIsNotNone(m, f"{name}: no v8 line in the log:\n{log[-2000:]}")
        return {k: int(v) for k, v in (x.split("=") for x in m.group(1).split())}

    def assert_chain(self, name, thread=MAIN_THREAD, want=CHAIN_ROOT_FIRST):
        """want, whole, in >= 90% of the samples of thread that run JavaScript."""
        s = self.stacks(name)
        mine = lambda f: any(x.startswith(thread) for x in f) and any(x.startswith(EXECUTION) for x in f)  # noqa: E731
        hits = st.share(s, lambda f: whole_chain(f, want), among=mine)
        self.assertGreaterEqual(hits[1], MIN_SAMPLES, f"{name}: few samples of the busy thread:\n{st.top(s)}")
        self.assertGreaterEqual(hits[2], 90, f"{name}: {hits[0]} of {hits[1]} samples carry {';'.join(want)}, "
                                f"whole:\n{st.top(s)}")
        return s

    def test_cpu_prof_is_the_reference(self):
        """The chain the other tests look for is V8's own profiler's."""
        self.assertEqual(self.cpu_chain[:len(CHAIN_NAMES)], CHAIN_NAMES)

    def test_optimised_chain(self):
        self.assert_chain("optimised")
        c = self.walker_counts("optimised")
        self.assertGreater(c["frames_optimised"], 0, c)

    def test_interpreted_chain(self):
        self.assert_chain("interpreted")
        c = self.walker_counts("interpreted")
        self.assertGreater(c["frames_interpreted"], 0, c)
        self.assertEqual(c["frames_optimised"] + c["frames_baseline"], 0, c)

    def test_baseline_chain(self):
        self.assert_chain("baseline")
        c = self.walker_counts("baseline")
        self.assertGreater(c["frames_baseline"], 0, c)
        self.assertEqual(c["frames_optimised"], 0, c)

    def test_interpreted_then_optimised(self):
        """One process whose leaf runs interpreted, then TurboFan's code, while it is recorded."""
        self.assertTrue(self.infos["phases-later"].get("optimised"), self.infos["phases-later"])
        self.assert_chain("phases")
        c = self.walker_counts("phases")
        self.assertGreater(c["frames_optimised"], 0, c)
        self.assertGreater(c["frames_interpreted"], c["samples_with_js_frames"], c)

    def test_inlined_call(self):
        """sq inlined into hot's optimised code: both frames, in call order."""
        s = self.stacks("inline")
        self.assertGreater(st.total(s, st.has_run("hot", "sq")), 0, st.top(s))
        self.assertEqual(st.total(s, lambda f: "sq" in f and not np.contains_run(f, ["hot", "sq"])), 0, st.top(s))
        self.assertGreater(self.walker_counts("inline")["frames_optimised"], 0)

    def test_worker_thread(self):
        s = self.assert_chain("worker", thread=WORKER_THREAD)
        self.assertEqual(st.total(s, lambda f: "leaf" in f and not any(x.startswith(WORKER_THREAD) for x in f)), 0,
                         st.top(s))

    def test_node18_libnode_in_container_root(self):
        self.assertTrue(self.infos["node18"]["v8"].startswith("10.2."), self.infos["node18"])
        self.assert_chain("node18", thread="_ZN4node5Start")
        self.assertGreater(self.walker_counts("node18")["frames_optimised"], 0)

    def test_no_v8(self):
        s = self.stacks("no-v8")
        self.assertEqual(st.total(s, st.has("leaf")), 0, st.top(s))
        self.assertGreater(st.total(s, st.has("Builtins_InterpreterEntryTrampoline")) +
                           st.total(s, st.has("[unknown]")), 0, st.top(s))
        _, log = self.result("no-v8")
        self.assertNotIn("runtime=v8", log)

    def test_perf_map_gives_the_same_names(self):
        """node --perf-basic-prof: the same chain with V8 frames on; with them off, the perf map
        still names the JIT code (V8 writes "JS:*leaf" and the like)."""
        self.assert_chain("perf-map")
        s = self.stacks("perf-map-no-v8")
        self.assertGreater(st.total(s, lambda f: any(re.search(r"\bleaf\b", x) for x in f)), 0, st.top(s))

    def test_pprof_functions_with_files_and_lines(self):
        out, _ = self.result("pprof")
        with open(out, "rb") as f:
            p = pprof.decode(f.read(), ingest=False)
        strings = p["string_table"]
        funcs = {}
        for fn in p["function"].values():
            funcs.setdefault(strings[fn["name"]], []).append(fn)
        for name in ("leaf", "crunch", "recurse", "main"):
            with self.subTest(function=name):
                self.assertEqual(len(funcs.get(name, [])), 1, f"{name}: {funcs.get(name)}")
                self.assertEqual(strings[funcs[name][0]["filename"]], CHAIN)
        leaf = funcs["leaf"][0]
        self.assertEqual(leaf["start_line"], self.cpu_leaf["lineNumber"] + 1)
        first, last = self.infos["pprof"]["loop"]
        lines = [ln["line"] for loc in p["location"].values() for ln in loc["line"] if ln["function_id"] == leaf["id"]]
        self.assertTrue(lines, "no location of leaf")
        inside = sum(first <= x <= last for x in lines)
        self.assertGreater(inside, 0, (lines, first, last))


class NodeInTheAgent(unittest.TestCase):
    """v8_enabled in `nodeprof run`: JavaScript frames pushed to the Pyroscope test server, and the
    runtime interface's metrics under runtime="v8"."""

    def push(self, v8_enabled):
        agg, self.metrics = agent_push.run(self, ".*workloads/js/chain.js.*", "chain",
                                           {"v8_enabled": str(v8_enabled).lower()}, [NODE, CHAIN],
                                           lambda s: "Builtins_JS" in s, MIN_SAMPLES)
        return agg

    def runtime_metric(self, name, **labels):
        return agent_push.runtime_metric(self, self.metrics, "v8", name, **labels)

    def test_v8_enabled(self):
        s = self.push(True)
        hits = st.share(s, lambda f: np.contains_run(f, CHAIN_ROOT_FIRST))
        self.assertGreaterEqual(hits[2], 80, st.top(s))
        self.assertGreaterEqual(self.runtime_metric("nodeprof_runtime_processes"), 1)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_frames_total", kind="optimised"), 0)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_samples_total", outcome="with_js_frames"), 0)
        self.assertGreater(self.runtime_metric("nodeprof_runtime_name_cache_entries"), 0)

    def test_v8_disabled(self):
        s = self.push(False)
        self.assertEqual(st.total(s, st.has("leaf")), 0, st.top(s))
        self.assertEqual(self.runtime_metric("nodeprof_runtime_processes"), 0)


if __name__ == "__main__":
    unittest.main()
