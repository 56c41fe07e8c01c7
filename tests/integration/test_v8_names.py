"""agent/runtime/v8 on real Node processes: V8 found and its layout read from the postmortem
metadata of the image's node (/usr/bin/node) and of Debian's Node 18 (a libnode.so.108 build,
extracted by `make node18` and run in a container root), JavaScript frames named from V8's heap,
checked against V8's own view of the same program:

- build/harness/v8_names stops a thread (ptrace), walks its frame pointers as a V8 frame walker
  does and names the frames with the namer (tests/harness/v8_names.c);
- tests/integration/workloads/js/chain.js prints the Error().stack V8 builds inside its leaf
  function: the callers' names, files and lines there must be the sampled ones (the leaf's line
  must be in its loop), and the names must be those `node --cpu-prof` (V8's CPU profiler) gives
  the same functions, in the same order;
- interpreted frames (--no-opt --no-sparkplug --no-maglev), baseline ones (--always-sparkplug),
  optimised ones (TurboFan, default flags), an inlined call expanded into two frames in order
  (workloads/js/inline.js), on both Node 20 and Node 18 (whose Code layouts differ); a
  worker_threads worker, Node in a container root, and the stale check (an address whose
  object is not the one sampled is "[unknown js]" and counted).

NODEPROF_V8_NAMES_HARNESS runs another build of the harness (e.g. build/asan/harness/v8_names)."""
import json
import os
import re
import subprocess
import time
import unittest

import nodejs
import np
import rootfs
from nodejs import CHAIN, CHAIN_NAMES, CHURN, ESM, INLINE, INTERPRETED, NODE

HARNESS = os.environ.get("NODEPROF_V8_NAMES_HARNESS") or os.path.join(np.ROOT, "build", "harness", "v8_names")
TRIES = 40


def harness(*args, check=True):
    p = subprocess.run([HARNESS, *map(str, args)], capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"v8_names {' '.join(map(str, args))} exited {p.returncode}: {p.stderr}")
    return p


def start(test, argv, **kw):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)

    def stop():
        proc.kill()
        proc.wait()
    test.addCleanup(stop)
    return proc, nodejs.read_line(proc)


def parse_stack(lines):
    """[(name, file, line)] of Error().stack lines ("name (file:line:col)" or "file:line:col")."""
    out = []
    for s in lines:
        m = re.fullmatch(r"(?:(.*) \()?(.*):(\d+):(\d+)\)?", s)
        if m:
            out.append((m.group(1) or "", m.group(2), int(m.group(3))))
    return out


def js_frames(sample):
    """The sample's frames that are JavaScript functions (no V8:: stub frames)."""
    return [f for f in sample["frames"] if not f["name"].startswith("V8::")]


def sample_until(test, pid, want, tid=None, tries=TRIES):
    """Samples pid (tid) until want(sample) holds; fails with the last sample when it never does."""
    last = None
    for _ in range(tries):
        p = harness("stack", pid, *([tid] if tid else []), check=False)
        if p.returncode == 0:
            last = json.loads(p.stdout)
            if want(last):
                return last
        time.sleep(0.05)
    test.fail(f"no sample of {pid} as wanted in {tries} tries; last: {json.dumps(last)[:3000]}")


class V8Names(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        nodejs.ensure_node18()

    def check_chain(self, info, sample, file, optimised=False):
        """The sampled chain against the workload's Error().stack: names, files, callers' lines."""
        frames = js_frames(sample)
        names = [f["name"] for f in frames]
        self.assertEqual(names[:len(CHAIN_NAMES)], CHAIN_NAMES, json.dumps(sample)[:3000])
        expected = parse_stack(info["stack"])
        self.assertEqual([e[0].split(".")[-1] for e in expected[:len(CHAIN_NAMES)]], CHAIN_NAMES)
        top = frames[0]
        self.assertEqual(top["file"], file)
        self.assertTrue(info["loop"][0] <= top["line"] <= info["loop"][1], top)
        self.assertEqual(top["start_line"], expected[0][2] - 1, "leaf's first line: the line before its report()")
        for got, want in zip(frames[1:len(CHAIN_NAMES)], expected[1:len(CHAIN_NAMES)]):
            self.assertEqual((got["name"], got["file"], got["line"]), (want[0].split(".")[-1], file, want[2]))
        if optimised:
            self.assertEqual(sample["walked"][0]["kind"], "code")

    def test_detect_image_node(self):
        proc, info = start(self, [NODE, *INTERPRETED, CHAIN])
        d = json.loads(harness("detect", info["pid"]).stdout)
        self.assertEqual(d["version"].rsplit(".", 1)[0] if d["version"].count(".") == 3 else d["version"],
                         ".".join(info["v8"].split("-")[0].split(".")[:3]))
        self.assertEqual(d["path"], os.path.realpath(NODE))
        self.assertGreater(d["symbols"], 400)
        self.assertEqual(d["frame_types"].get("13"), "V8::InterpretedFrame")
        f = json.loads(harness("file", os.path.realpath(NODE)).stdout)
        self.assertEqual(f["version"], d["version"])

    def test_not_v8(self):
        p = harness("file", "/bin/sh", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no V8 metadata", p.stderr)
        proc = subprocess.Popen(["sleep", "30"])
        self.addCleanup(proc.kill)
        p = harness("detect", proc.pid, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no V8 found", p.stderr)

    def test_interpreted_chain(self):
        proc, info = start(self, [NODE, *INTERPRETED, CHAIN])
        s = sample_until(self, info["pid"], lambda s: [f["name"] for f in js_frames(s)][:1] == ["leaf"])
        # interpreted only: every JavaScript frame is a bytecode frame, but for V8's own builtins
        kinds = [w["kind"] for w in s["walked"]]
        self.assertEqual(kinds.count("code"), 0, kinds)
        self.assertGreaterEqual(kinds.count("bytecode"), len(CHAIN_NAMES), kinds)
        self.check_chain(info, s, CHAIN)
        self.assertEqual(s["stats"]["failed"] + s["stats"]["stale"], 0)

    def test_baseline_chain(self):
        """Sparkplug code: its pc mapped back to the bytecode, then to the line."""
        proc, info = start(self, [NODE, "--no-opt", "--no-maglev", "--always-sparkplug", CHAIN])
        s = sample_until(self, info["pid"], lambda s: s["walked"] and s["walked"][0]["kind"] == "baseline"
                         and js_frames(s)[0]["name"] == "leaf")
        kinds = [w["kind"] for w in s["walked"]]
        self.assertGreaterEqual(kinds.count("baseline"), len(CHAIN_NAMES), kinds)
        self.check_chain(info, s, CHAIN)

    def test_optimised_chain(self):
        proc, info = start(self, [NODE, CHAIN])
        s = sample_until(self, info["pid"], lambda s: s["walked"] and s["walked"][0]["kind"] == "code"
                         and js_frames(s)[0]["name"] == "leaf")
        self.check_chain(info, s, CHAIN, optimised=True)

    def test_inlined_call(self):
        proc, info = start(self, [NODE, INLINE])

        def inlined(s):
            f = js_frames(s)
            return s["walked"] and s["walked"][0]["kind"] == "code" and [x["name"] for x in f[:2]] == ["sq", "hot"]
        s = sample_until(self, info["pid"], inlined)
        f = js_frames(s)
        # one code frame gave both, innermost first, each with its own line
        self.assertEqual((f[0]["line"], f[1]["line"]), (info["sq"], info["call"]), s)
        self.assertEqual(f[0]["file"], INLINE)
        self.assertEqual(f[2]["name"], "(anonymous)")  # the module's top level, which calls hot

    def test_es_module(self):
        """An ES module's script is named by its URL; its top level has no name (its ScopeInfo's
        module slots must not be taken for one)."""
        proc, info = start(self, [NODE, *INTERPRETED, ESM])
        s = sample_until(self, info["pid"], lambda s: [f["name"] for f in js_frames(s)][:1] == ["spin"])
        f = js_frames(s)
        self.assertEqual(f[0]["file"], info["url"])
        self.assertTrue(info["loop"][0] <= f[0]["line"] <= info["loop"][1], f[0])
        self.assertEqual((f[1]["name"], f[1]["file"], f[1]["line"]), ("(anonymous)", info["url"], info["call"]))

    def test_cpu_prof_agrees(self):
        """Our names of leaf's chain are V8's CPU profiler's, in the same order."""
        chain, leaf = nodejs.cpu_prof_chain(np.tmpdir(self))
        self.assertEqual(chain[:len(CHAIN_NAMES)], CHAIN_NAMES)
        # and the function's first line (0-based there)
        proc, info = start(self, [NODE, CHAIN])
        s = sample_until(self, info["pid"], lambda s: js_frames(s)[:1] and js_frames(s)[0]["name"] == "leaf")
        self.assertEqual(js_frames(s)[0]["start_line"], leaf["lineNumber"] + 1)
        self.assertEqual("file://" + js_frames(s)[0]["file"], leaf["url"])

    def test_worker_thread(self):
        proc, info = start(self, [NODE, *INTERPRETED, CHAIN], env={**os.environ, "CHAIN_WORKER": "1"})
        self.assertFalse(info["main"])
        tids = sorted(int(t) for t in os.listdir(f"/proc/{proc.pid}/task"))
        found = None
        for _ in range(TRIES):
            for tid in tids:
                p = harness("stack", proc.pid, tid, check=False)
                if p.returncode == 0:
                    s = json.loads(p.stdout)
                    if [f["name"] for f in js_frames(s)][:1] == ["leaf"]:
                        found = (tid, s)
                        break
            if found:
                break
        self.assertIsNotNone(found, "no thread of the process runs leaf")
        self.assertNotEqual(found[0], proc.pid)  # the worker's own thread and isolate
        self.check_chain(info, found[1], CHAIN)

    def test_stale(self):
        proc, info = start(self, [NODE, *INTERPRETED, CHAIN])
        s = sample_until(self, info["pid"], lambda s: [f["name"] for f in js_frames(s)][:1] == ["leaf"])
        w = next(w for w in s["walked"] if w["kind"] == "bytecode")
        sfi, cookie = int(w["object"], 16), int(w["cookie"], 16)
        out = harness("sfi", info["pid"], hex(sfi), hex(cookie)).stdout.split("\t")
        self.assertEqual(out[:2], ["leaf", CHAIN])
        self.assertIn("stale=0", out[3])
        # the object at the address is not the one the walker saw: never leaf's name
        out = harness("sfi", info["pid"], hex(sfi), hex(cookie ^ 0x10)).stdout.split("\t")
        self.assertEqual(out[0], "[unknown js]")
        self.assertIn("stale=1", out[3])
        # not a SharedFunctionInfo at all (inside one, so readable memory)
        out = harness("sfi", info["pid"], hex(sfi + 16)).stdout.split("\t")
        self.assertEqual(out[0], "[unknown js]")
        self.assertIn("failed=1", out[3])
        out = harness("sfi", info["pid"], "0x10").stdout.split("\t")
        self.assertEqual(out[0], "[unknown js]")

    def test_stale_after_gc(self):
        """Functions sampled, then freed and compacted away by the garbage collector: naming what
        the walker recorded gives their own names or "[unknown js]", never another function's."""
        proc, info = start(self, [NODE, "--expose-gc", "--compact-on-every-full-gc", *INTERPRETED, CHURN])
        seen = {}
        for _ in range(TRIES):
            p = harness("stack", info["pid"], check=False)
            if p.returncode == 0:
                s = json.loads(p.stdout)
                names = [f["name"] for f in js_frames(s)]
                w = [w for w in s["walked"] if w["kind"] == "bytecode"]
                if w and names and re.fullmatch(r"gen\d+_0", names[0]):
                    seen[names[0]] = (w[0]["object"], w[0]["cookie"])
            if len(seen) >= 4:
                break
            time.sleep(0.15)
        self.assertGreaterEqual(len(seen), 4, seen)
        # wait until every sampled generation is two collections in the past
        last = max(int(n[3:].split("_")[0]) for n in seen)
        end = time.monotonic() + 30
        gen = -1
        while gen < last + 2 and time.monotonic() < end:
            line = proc.stdout.readline()
            if line:
                gen = json.loads(line).get("gen", gen)
            else:
                time.sleep(0.05)
        self.assertGreaterEqual(gen, last + 2)
        gone = 0
        for name, (obj, cookie) in seen.items():
            out = harness("sfi", info["pid"], obj, cookie).stdout.split("\t")
            self.assertIn(out[0], (name, "[unknown js]"), (name, out))
            gone += out[0] == "[unknown js]"
        self.assertGreater(gone, 0, "no sampled function was collected: the test saw no garbage collection")

    def test_image_node_in_container_root(self):
        exe = os.path.realpath(NODE)
        root = np.tmpdir(self)
        files = [(CHAIN, "/app/chain.js"), (exe, "/opt/node/bin/node")] + [(p, p) for p in rootfs.library_deps(exe)]
        script = rootfs.chroot_script(root, files, ["/opt/node/bin/node", *INTERPRETED, "/app/chain.js"])
        proc, info = start(self, ["unshare", "--mount", "sh", "-c", script])
        d = json.loads(harness("detect", info["pid"]).stdout)
        # as /proc/PID/maps says it from outside the container's mount namespace
        self.assertTrue(d["path"].endswith("/opt/node/bin/node"), d["path"])
        s = sample_until(self, info["pid"], lambda s: [f["name"] for f in js_frames(s)][:1] == ["leaf"])
        self.check_chain(info, s, "/app/chain.js")

    def node18(self, script, flags):
        """script under Debian's Node 18 in a container root of its own; returns (proc, info)."""
        sh = nodejs.node18_script(np.tmpdir(self), script, flags)
        return start(self, ["unshare", "--mount", "sh", "-c", sh])

    def test_node18_libnode_in_container_root(self):
        # V8 10.2 has no Maglev, so no --no-maglev
        proc, info = self.node18(CHAIN, ["--no-opt", "--no-sparkplug"])
        self.assertTrue(info["v8"].startswith("10.2."), info["v8"])
        d = json.loads(harness("detect", info["pid"]).stdout)
        self.assertTrue(d["path"].endswith("/usr/lib/x86_64-linux-gnu/libnode.so.108"), d["path"])
        self.assertTrue(info["v8"].startswith(d["version"].rsplit(".", 1)[0]), (d["version"], info["v8"]))
        s = sample_until(self, info["pid"], lambda s: [f["name"] for f in js_frames(s)][:1] == ["leaf"])
        self.check_chain(info, s, "/app/chain.js")

    def test_node18_optimised_and_inlined(self):
        """V8 10.2's Code layout (described by its metadata, instructions inline after the header)."""
        proc, info = self.node18(CHAIN, [])
        s = sample_until(self, info["pid"], lambda s: s["walked"] and s["walked"][0]["kind"] == "code"
                         and js_frames(s)[0]["name"] == "leaf")
        self.check_chain(info, s, "/app/chain.js", optimised=True)
        proc, info = self.node18(INLINE, [])

        def inlined(s):
            f = js_frames(s)
            return s["walked"] and s["walked"][0]["kind"] == "code" and [x["name"] for x in f[:2]] == ["sq", "hot"]
        f = js_frames(sample_until(self, info["pid"], inlined))
        self.assertEqual((f[0]["line"], f[1]["line"], f[0]["file"]), (info["sq"], info["call"], "/app/inline.js"))

    def test_node18_es_module(self):
        proc, info = self.node18(ESM, ["--no-opt", "--no-sparkplug"])
        s = sample_until(self, info["pid"], lambda s: [f["name"] for f in js_frames(s)][:1] == ["spin"])
        f = js_frames(s)
        self.assertEqual((f[0]["file"], f[1]["name"], f[1]["line"]), (info["url"], "(anonymous)", info["call"]))

    def test_node18_baseline(self):
        proc, info = self.node18(CHAIN, ["--no-opt", "--always-sparkplug"])
        s = sample_until(self, info["pid"], lambda s: s["walked"] and s["walked"][0]["kind"] == "baseline"
                         and js_frames(s)[0]["name"] == "leaf")
        self.check_chain(info, s, "/app/chain.js")


if __name__ == "__main__":
    unittest.main()
