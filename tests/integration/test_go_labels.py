"""Go pprof labels (docs/specs/go-labels.md): the labels a Go program sets with pprof.Do go on its
samples, as pprof sample labels (pushed by `run` to the test Pyroscope, written by `record
--format pprof`) and as leading KEY=VALUE frames in `record`'s folded output; each goroutine's
samples carry its own labels; the reader's bounds hold; cgo binaries too; `record --no-go` and
`go_enabled = false` leave them off, and a stripped Go binary's frames unnamed. The workload is
built with Debian's golang-go, into a temporary directory with its own Go build cache: cgo off
(a static binary, stripped or not) and on (with C thread-locals beside Go's, stripped or not)."""
import os
import shutil
import subprocess
import tempfile
import unittest

import agent_push
import np
import pprof
import stacks as st

SRC = os.path.join(np.WORKLOADS, "go_labels")


def build(outdir, name="go_labels", ldflags="", cgo=False):
    """Builds the workload into outdir/name (its Go build cache there too), with cgo (a dynamic
    loader, and C thread-locals beside Go's) or without; returns its path."""
    src = os.path.join(outdir, "src-" + name)
    shutil.copytree(SRC, src)
    exe = os.path.join(outdir, name)
    env = dict(os.environ, HOME=outdir, GOCACHE=os.path.join(outdir, "gocache"), CGO_ENABLED="1" if cgo else "0",
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    r = subprocess.run(["go", "build", "-ldflags=" + ldflags, "-o", exe, "."], cwd=src, env=env, capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"go build failed:\n{r.stderr}")
    return exe


def labels_of(stack):
    """The leading KEY=VALUE frames of a folded stack, and the rest."""
    frames = stack.split(";")
    n = 0
    while n < len(frames) and "=" in frames[n] and not frames[n].startswith("runtime."):
        n += 1
    return frames[:n], frames[n:]


class GoLabels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nodeprof-golabels-")
        cls.exe = build(cls.dir)
        # Stripped: only .gopclntab names its functions.
        cls.stripped = build(cls.dir, "go_labels_stripped", "-s -w")
        cls.cgo = build(cls.dir, "go_labels_cgo", cgo=True)
        cls.cgo_stripped = build(cls.dir, "go_labels_cgo_stripped", "-s -w", cgo=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def start(self, *args, exe=None):
        p = subprocess.Popen([exe or self.exe, *args], stdout=subprocess.DEVNULL)
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    def record(self, pid, *args):
        r = np.nodeprof("record", "--pid", pid, "--duration", "2s", *args, timeout=90)
        self.assertEqual(r.returncode, 0, r.stderr)
        return np.parse_folded(r.stdout)

    def test_record_folded_each_goroutine_its_labels(self):
        w = self.start("two")
        stacks = self.record(w.pid)
        a = {k: v for k, v in stacks.items() if "main.workA" in k.split(";")}
        b = {k: v for k, v in stacks.items() if "main.workB" in k.split(";")}
        self.assertGreater(st.total(a), 20, st.top(stacks))
        self.assertGreater(st.total(b), 20, st.top(stacks))
        # Labels lead, in key order, and only the goroutine that set them has them.
        for k in a:
            self.assertEqual(labels_of(k)[0], ["tier=gold", "worker=alpha"], k)
        for k in b:
            self.assertEqual(labels_of(k)[0], ["worker=beta"], k)
        # --pid-label's frame comes first, then the Go labels.
        stacks = self.record(w.pid, "--pid-label")
        a = [k for k in stacks if "main.workA" in k.split(";")]
        self.assertTrue(a, st.top(stacks))
        for k in a:
            self.assertTrue(k.startswith(f"pid={w.pid};tier=gold;worker=alpha;"), k)
        # --no-go: no labels.
        stacks = self.record(w.pid, "--no-go")
        self.assertGreater(st.total(stacks), 20, st.top(stacks))
        for k in stacks:
            self.assertEqual(labels_of(k)[0], [], k)

    def test_cgo(self):
        """A cgo binary (dynamic loader, C thread-locals in its TLS block): g is found through
        runtime.tlsg's offset in .symtab; stripped of it, the labels are not supported, and said."""
        w = self.start("two", exe=self.cgo)
        stacks = self.record(w.pid)
        a = [k for k in stacks if "main.workA" in k.split(";")]
        self.assertTrue(a, st.top(stacks))
        for k in a:
            self.assertEqual(labels_of(k)[0], ["tier=gold", "worker=alpha"], k)
        w = self.start("two", exe=self.cgo_stripped)
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "2s", timeout=90)
        self.assertEqual(r.returncode, 0, r.stderr)
        stacks = np.parse_folded(r.stdout)
        self.assertGreater(st.total(stacks, lambda f: "main.workA" in f), 10, st.top(stacks))
        for k in stacks:
            self.assertEqual(labels_of(k)[0], [], k)
        self.assertIn("no symbol runtime.tlsg", r.stderr)

    def test_record_pprof_sample_labels(self):
        w = self.start("two")
        out = os.path.join(np.tmpdir(self), "p.pb.gz")
        r = np.nodeprof("record", "--pid", w.pid, "--duration", "2s", "--format", "pprof", "-o", out, timeout=90)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            p = pprof.decode(f.read())
        seen = {}
        for s in pprof.pyroscope.summarize_profile(p, b"", False, 0)["stacks"]:
            fn = "A" if "main.workA" in s["frames"] else "B" if "main.workB" in s["frames"] else None
            if fn:
                seen.setdefault(fn, set()).add(tuple(sorted(s["labels"].items())))
        self.assertEqual(seen, {"A": {(("tier", "gold"), ("worker", "alpha"))}, "B": {(("worker", "beta"),)}})

    def check_bounds(self, labels_a, labels_b):
        """workA's 15 labels: 10 kept (any 10 of a map; the first 10 by key of a slice); workB's
        26-byte key and 100-byte value: cut to 15 and 47 bytes (the OTel profiler's bounds)."""
        all_a = {f"k{i + 10}=v{i}" for i in range(15)}
        self.assertEqual(len(labels_a), 10, labels_a)
        self.assertTrue(set(labels_a) <= all_a, labels_a)
        self.assertEqual(labels_b, ["a_very_long_lab=" + "x" * 47, "short=v"])

    def test_bounds(self):
        w = self.start("many")
        stacks = self.record(w.pid)
        a = [k for k in stacks if "main.workA" in k.split(";")]
        b = [k for k in stacks if "main.workB" in k.split(";")]
        self.assertTrue(a and b, st.top(stacks))
        for ka in a:
            for kb in b:
                self.check_bounds(labels_of(ka)[0], labels_of(kb)[0])

    def pushed(self, mode, ebpf_args, min_samples=60):
        """{function: {sample labels: samples}} pushed for workA and workB through `nodeprof run`,
        and /metrics. A process's samples taken before the agent looked at it (in its first
        interval) have no labels yet: they are counted under ()."""
        agg, fams = agent_push.run(self, ".*go_labels.*", "golabels", ebpf_args, [self.exe, mode],
                                   lambda k: "main.work" in k, min_samples, with_labels=True)
        by_fn = {}
        for (stack, labels), v in agg.items():
            fn = "A" if "main.workA" in stack.split(";") else "B"
            by_fn.setdefault(fn, {})
            by_fn[fn][labels] = by_fn[fn].get(labels, 0) + v
        return by_fn, fams

    def labeled(self, by_fn):
        """Checks that most samples carry labels; the labels of each function, without ()."""
        for fn, d in by_fn.items():
            self.assertGreater(sum(v for l, v in d.items() if l) / sum(d.values()), 0.7, by_fn)
        return {fn: {l for l in d if l} for fn, d in by_fn.items()}

    def test_run_pushes_carry_labels(self):
        by_fn, fams = self.pushed("two", {})
        self.assertEqual(self.labeled(by_fn),
                         {"A": {(("tier", "gold"), ("worker", "alpha"))}, "B": {(("worker", "beta"),)}})
        self.assertGreater(agent_push.runtime_metric(self, fams, "go", "nodeprof_runtime_samples_total",
                                                     outcome="labeled"), 0)
        self.assertEqual(agent_push.runtime_metric(self, fams, "go", "nodeprof_runtime_processes"), 1)

    def test_run_bounds_counted(self):
        by_fn, fams = self.pushed("many", {})
        got = self.labeled(by_fn)
        for la in got["A"]:
            for lb in got["B"]:
                self.check_bounds([f"{k}={v}" for k, v in la], [f"{k}={v}" for k, v in lb])
        self.assertGreater(agent_push.runtime_metric(self, fams, "go", "nodeprof_runtime_samples_total",
                                                     outcome="labels_cut"), 0)

    def test_run_go_disabled(self):
        by_fn, fams = self.pushed("two", {"go_enabled": "false"}, 40)
        self.assertEqual({fn: set(d) for fn, d in by_fn.items()}, {"A": {()}, "B": {()}})
        self.assertEqual(agent_push.runtime_metric(self, fams, "go", "nodeprof_runtime_processes"), 0)


    def test_no_go_leaves_gopclntab_out(self):
        """go_enabled = false (--no-go) is the OTel profiler's Go interpreter off: a stripped Go
        binary's frames are not named from .gopclntab. Its symbol table is cached apart, so the
        switch back and forth with one cache directory names frames each way."""
        w = self.start("two", exe=self.stripped)
        cache = np.tmpdir(self)
        for no_go in (False, True, False):
            stacks = self.record(w.pid, "--symb-cache-path", cache, *(["--no-go"] if no_go else []))
            mine = {k: v for k, v in stacks.items() if "go_labels_stripped" in k or "main." in k}
            self.assertGreater(st.total(mine), 20, st.top(stacks))
            named = st.total(mine, lambda f: "main.spin" in f)
            if no_go:
                self.assertEqual(named, 0, st.top(mine))
                self.assertFalse(any("main." in k or "=" in k for k in mine), st.top(mine))
            else:
                self.assertGreater(named / st.total(mine), 0.8, st.top(mine))

    def test_run_go_disabled_stripped(self):
        """Through run: go_enabled = false pushes a stripped Go binary's frames unnamed (the
        server names them binary!0xADDR), without labels."""
        by = {}
        agg, fams = agent_push.run(self, ".*go_labels_stripped.*", "golabels", {"go_enabled": "false"},
                                   [self.stripped, "two"], lambda k: "go_labels_stripped" in k, 40, with_labels=True)
        for (stack, labels), v in agg.items():
            by[labels] = by.get(labels, 0) + v
            self.assertNotIn("main.", stack)
        self.assertEqual(set(by), {()})


if __name__ == "__main__":
    unittest.main()
