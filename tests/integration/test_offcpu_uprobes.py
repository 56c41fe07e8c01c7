"""Off-CPU time and uprobes (issue 20), with real BPF on a real program
(tests/integration/workloads/offcpu_rounds.c: rounds of 20 ms spinning, a 20 ms nanosleep and
1000 malloc calls):
- `record --off-cpu`: the time off CPU under the sleeping function is about half the wall time,
  with main above it; at --off-cpu-threshold 0.1 about a tenth of it is recorded, unscaled, as
  Alloy reports it;
- `record --uprobe libc:malloc`: the calls under the allocating function equal rounds x 1000;
- a process started after the probes were attached, in a container root with its own copy of
  libc (another file, so another uprobe: what load_probe is for), is counted too;
- `nodeprof run` pushes offcpu and uprobe profiles with Alloy's __name__ and sample types;
- bad links and thresholds are errors that say which and why, in `check` and `record`."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import k8s  # noqa: F401  (puts tests/servers on sys.path)
import np
import promtext
import rootfs
import stacks as st
from pyroscope import PyroscopeServer

RECORD_SECONDS = 6
NS = 1e9


def build(outdir):
    exe = os.path.join(outdir, "offcpu_rounds")
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", exe,
                    os.path.join(np.WORKLOADS, "offcpu_rounds.c")], check=True, capture_output=True)
    return exe


def libc_of(exe):
    """libc's path as the loader finds it (/lib/..., also where a container root made of exe's
    libraries has its copy: a probe link names a path, resolved in each process's view)."""
    for dep in rootfs.library_deps(exe):
        if os.path.basename(dep) == "libc.so.6":
            return dep
    raise AssertionError(f"no libc.so.6 among {exe}'s libraries")


def folded(path):
    with open(path) as f:
        return np.parse_folded(f.read())


def record(argv, out, log):
    return subprocess.Popen([np.NODEPROF, "record", "-o", out, *map(str, argv)], stdout=subprocess.DEVNULL,
                            stderr=log, text=True)


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def wait_for_descendant(ancestor, argv, timeout=30):
    """The PID of the process below `ancestor` whose command line is argv (bytes)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if f.read().split(b"\0")[:-1] != argv:
                        continue
                p = int(d)
                while p > 1 and p != ancestor:
                    p = parent_of(p)
            except (OSError, ValueError, IndexError):
                continue
            if p == ancestor:
                return int(d)
        time.sleep(0.05)
    raise AssertionError(f"no process {argv} below {ancestor}")


def wait_log(log_path, proc, pattern, what, timeout=30):
    """Until the log of `proc` matches `pattern` (a regular expression); fails saying `what` if it
    exits first or the time runs out."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(log_path) as f:
            if re.search(pattern, f.read()):
                return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    with open(log_path) as f:
        raise AssertionError(f"{what}:\n{f.read()}")


def wait_recording(log_path, proc, timeout=30):
    """Until `nodeprof record` says it is recording (its BPF programs and probes are attached)."""
    wait_log(log_path, proc, "recording", "nodeprof record did not start", timeout)


class OffCpuAndUprobes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="offcpu-", dir=os.path.join(np.ROOT, "build"))
        cls.exe = build(cls.dir)
        cls.libc = libc_of(cls.exe)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def start(self, argv, **kw):
        p = subprocess.Popen(list(map(str, argv)), **kw)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        return p

    def log(self, name):
        path = os.path.join(self.dir, name + ".log")
        f = open(path, "w")
        self.addCleanup(f.close)
        return f, path

    def test_offcpu_time_and_threshold(self):
        w = self.start([self.exe, 100000], stdout=subprocess.DEVNULL)
        time.sleep(0.3)
        runs = {}
        for name, args in (("all", ["--off-cpu"]), ("tenth", ["--off-cpu-threshold", "0.1"])):
            out = os.path.join(self.dir, f"offcpu-{name}.folded")
            lf, lp = self.log(f"offcpu-{name}")
            runs[name] = (record(["--pid", w.pid, "--duration", f"{RECORD_SECONDS}s", *args], out, lf), out, lp)
        for name, (p, out, lp) in runs.items():
            self.assertEqual(p.wait(timeout=RECORD_SECONDS + 60), 0, open(lp).read())
        full, tenth = folded(runs["all"][1]), folded(runs["tenth"][1])
        asleep = st.total(full, st.has("snooze")) / NS
        # 20 ms asleep in every ~40 ms round: half the wall time, within 25%.
        self.assertGreater(asleep, 0.75 * RECORD_SECONDS / 2, st.top(full))
        self.assertLess(asleep, 1.25 * RECORD_SECONDS / 2, st.top(full))
        under_main = st.total(full, st.has_run("main", "snooze")) / NS
        self.assertGreaterEqual(under_main / asleep, 0.95, st.top(full))
        # The kernel side shows where it blocked, and no frame of the tracing itself.
        self.assertGreaterEqual(st.share(full, st.has("do_nanosleep"), st.has("snooze"))[2], 95, st.top(full))
        self.assertEqual(st.total(full, lambda f: any(x.startswith("bpf_prog_") for x in f)), 0, st.top(full))
        # A tenth of the switches recorded: a tenth of the time, not scaled back up (Alloy reports
        # the recorded switches' time as it is).
        ratio = (st.total(tenth, st.has("snooze")) / NS) / asleep
        self.assertGreater(ratio, 0.03, st.top(tenth))
        self.assertLess(ratio, 0.2, st.top(tenth))

    def test_uprobe_counts_every_call(self):
        rounds = 60
        w = self.start([self.exe, rounds, "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        out = os.path.join(self.dir, "uprobe.folded")
        lf, lp = self.log("uprobe")
        rec = record(["--pid", w.pid, "--duration", "60s", "--uprobe", f"{self.libc}:malloc"], out, lf)
        wait_recording(lp, rec)
        w.stdin.write("go\n")
        w.stdin.flush()
        self.assertEqual(w.stdout.readline().strip(), f"done {rounds}")
        # The recording ends by itself once its only process has exited.
        self.assertEqual(rec.wait(timeout=60), 0, open(lp).read())
        calls = folded(out)
        mine = st.total(calls, st.has_run("main", "allocate", "malloc"))
        self.assertGreaterEqual(mine, rounds * 1000 * 0.98, st.top(calls))
        self.assertLessEqual(mine, rounds * 1000 * 1.02, st.top(calls))

    def test_process_started_later_with_its_own_libc(self):
        rounds = 40
        out = os.path.join(self.dir, "late.folded")
        lf, lp = self.log("late")
        rec = record(["--duration", f"{RECORD_SECONDS}s", "--uprobe", f"{self.libc}:malloc", "--log-level", "debug"],
                     out, lf)
        wait_recording(lp, rec)
        # A container root made now: its libc is a copy, another file with no probe yet.
        root = os.path.join(self.dir, "root")
        os.makedirs(root, exist_ok=True)
        files = [(p, p) for p in rootfs.library_deps(self.exe)] + [(self.exe, "/app")]
        script = rootfs.chroot_script(root, files, ["/app", str(rounds), "wait"])
        c = self.start(["unshare", "--mount", "sh", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       text=True)
        # The probes look for new processes' files every second: wait until the agent says it
        # attached in this process's view (a fixed sleep was too short on a busy machine).
        app = wait_for_descendant(c.pid, [b"/app", str(rounds).encode(), b"wait"])
        wait_log(lp, rec, r"probe attached.* pid=%d\b" % app, "no probe attached in the container's libc")
        c.stdin.write("go\n")
        c.stdin.flush()
        self.assertEqual(c.stdout.readline().strip(), f"done {rounds}")
        self.assertEqual(rec.wait(timeout=RECORD_SECONDS + 60), 0, open(lp).read())
        calls = folded(out)
        mine = st.total(calls, st.has_run("main", "allocate", "malloc"))
        why = st.top(calls) + "\n" + open(lp).read()[-3000:]
        self.assertGreaterEqual(mine, rounds * 1000 * 0.98, why)
        self.assertLessEqual(mine, rounds * 1000 * 1.02, why)

    def test_bad_input_says_which_and_why(self):
        # (argument, what the message says, check's exit status): a link this host cannot attach
        # is a warning (the configuration may be checked on another host), bad syntax an error
        cases = [
            (f'u_probe_links = ["{self.libc}:no_such_function_here"]', "has no symbol no_such_function_here", 0),
            ('u_probe_links = ["/etc/hostname:malloc"]', "is not an ELF file", 0),
            ('u_probe_links = ["malloc"]', "a probe link is FILE:SYMBOL", 1),
            ('probe_links = ["upr0be:/bin/sh:main"]', "a probe link is uprobe:FILE:SYMBOL", 1),
            ("off_cpu_threshold = 1.5", "off_cpu_threshold", 1),
        ]
        for arg, want, status in cases:
            with self.subTest(arg=arg):
                path = os.path.join(np.tmpdir(self), "bad.alloy")
                with open(path, "w") as f:
                    f.write(f'pyroscope.ebpf "e" {{\n  forward_to = []\n  {arg}\n}}\n')
                r = np.nodeprof("check", path)
                self.assertEqual(r.returncode, status, r.stdout + r.stderr)
                self.assertIn(want, r.stdout + r.stderr)
                self.assertIn("bad.alloy:3:", r.stdout + r.stderr)
        for argv, want in ((["--off-cpu-threshold", "2"], "--off-cpu-threshold"),
                           (["--uprobe", "/etc/hostname:malloc"], "is not an ELF file"),
                           (["--off-cpu", "--uprobe", f"{self.libc}:malloc"], "one at a time")):
            with self.subTest(argv=argv):
                r = np.nodeprof("record", *argv, "--duration", "1s")
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(want, r.stderr)


CONFIG = """discovery.process "p" {{
  refresh_interval = "1s"
}}
discovery.relabel "r" {{
  targets = discovery.process.p.targets
  rule {{
    source_labels = ["__meta_process_exe"]
    regex = ".*/offcpu_rounds"
    action = "keep"
  }}
  rule {{
    target_label = "service_name"
    replacement = "rounds"
  }}
}}
pyroscope.ebpf "e" {{
  targets = discovery.relabel.r.output
  forward_to = [pyroscope.write.w.receiver]
  collect_interval = "2s"
  sample_rate = 97
  off_cpu_threshold = 1.0
  u_probe_links = ["{libc}:malloc"]
  load_probe = true
}}
pyroscope.write "w" {{
  endpoint {{
    url = "{url}"
  }}
}}
"""


class PushedProfileTypes(unittest.TestCase):
    def test_run_pushes_cpu_offcpu_and_uprobe_profiles(self):
        d = np.tmpdir(self)
        exe = build(d)
        w = subprocess.Popen([exe, "100000"], stdout=subprocess.DEVNULL)
        self.addCleanup(lambda: (w.kill(), w.wait()))
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        cfg = os.path.join(d, "offcpu.alloy")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(libc=libc_of(exe), url=f"http://127.0.0.1:{srv.port}"))
        self.assertEqual(np.nodeprof("check", cfg).returncode, 0)
        port = np.free_port()
        log = open(os.path.join(d, "agent.log"), "w+")
        a = subprocess.Popen([np.NODEPROF, "run", "--config", cfg, "--http-listen", f"127.0.0.1:{port}"],
                             stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: (a.poll() is None and a.kill(), a.wait(), log.close()))
        want = {("process_cpu", ("cpu", "nanoseconds")), ("offcpu", ("offcpu", "nanoseconds")),
                ("process_cpu", ("uprobe", "count"))}
        seen, deadline = {}, time.time() + 40
        while time.time() < deadline and not want <= set(seen):
            for push in srv.pushes():
                for s in push["series"]:
                    if s["labels"].get("service_name") != "rounds":
                        continue
                    for prof in s["profiles"]:
                        key = (s["labels"].get("__name__"), tuple(prof["sample_types"][0]))
                        seen.setdefault(key, prof)
            self.assertIsNone(a.poll(), "the agent exited")
            time.sleep(0.5)
        log.seek(0)
        self.assertLessEqual(want, set(seen), f"pushed: {sorted(seen)}\n{log.read()[-3000:]}")
        off = seen[("offcpu", ("offcpu", "nanoseconds"))]
        self.assertIsNone(off["period_type"])
        self.assertEqual(off["period"], 1)
        self.assertTrue(any("snooze" in s["frames"] for s in off["stacks"]), off["stacks"][:3])
        up = seen[("process_cpu", ("uprobe", "count"))]
        self.assertEqual(up["period_type"], ["uprobe", "count"])
        self.assertTrue(any("allocate" in s["frames"] for s in up["stacks"]), up["stacks"][:3])
        with urllib_get(port, "/metrics") as body:
            m = promtext.parse(body)
        ev = m["nodeprof_ebpf_offcpu_events_total"]
        self.assertGreater(ev.value({"event": "switch_recorded"}), 0)
        self.assertGreater(ev.value({"event": "return_counted"}), 0)
        self.assertGreater(m["nodeprof_ebpf_probe_events_total"].value({"event": "uprobe_hit"}), 0)
        self.assertGreaterEqual(m["nodeprof_uprobes_attached"].value({}), 1)


class urllib_get:
    def __init__(self, port, path):
        import urllib.request
        self.r = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10)

    def __enter__(self):
        return self.r.read().decode()

    def __exit__(self, *exc):
        self.r.close()


class ProbeLinks(unittest.TestCase):
    """Alloy's probe_links: uprobe counts calls, uretprobe returns; a link this host cannot attach
    (its file missing here; a kernel probe, which this kernel, built without kprobes, cannot
    run) is a warning in `check`, and in `run` leaves the component unhealthy with the reason
    while the other links run."""

    def test_uprobe_uretprobe_and_links_this_host_cannot_attach(self):
        d = np.tmpdir(self)
        exe = build(d)
        libc = libc_of(exe)
        w = subprocess.Popen([exe, "100000"], stdout=subprocess.DEVNULL)
        self.addCleanup(lambda: (w.kill(), w.wait()))
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        links = f'["uprobe:{libc}:malloc", "uretprobe:{libc}:malloc", "kprobe:do_sys_open", ' \
                '"uprobe:/nonexistent/lib.so:f"]'
        cfg = os.path.join(d, "links.alloy")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(libc=libc, url=f"http://127.0.0.1:{srv.port}")
                    .replace(f'u_probe_links = ["{libc}:malloc"]', f"probe_links = {links}")
                    .replace("off_cpu_threshold = 1.0", "off_cpu_threshold = 0"))
        p = np.nodeprof("check", cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        # Kernel probes attach where the kernel has kprobes; this one was built without them.
        self.assertIn("kprobe:do_sys_open\": this kernel has no kprobes (it was built without CONFIG_KPROBES)",
                      p.stderr)
        self.assertIn("/nonexistent/lib.so", p.stderr)
        port = np.free_port()
        log = open(os.path.join(d, "agent.log"), "w+")
        a = subprocess.Popen([np.NODEPROF, "run", "--config", cfg, "--http-listen", f"127.0.0.1:{port}"],
                             stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: (a.poll() is None and a.kill(), a.wait(), log.close()))
        up, deadline = None, time.time() + 40
        while time.time() < deadline and up is None:
            for push in srv.pushes():
                for series in push["series"]:
                    for prof in series["profiles"]:
                        if series["labels"].get("service_name") == "rounds" and prof["sample_types"][0][0] == "uprobe":
                            up = prof
            self.assertIsNone(a.poll(), "the agent exited")
            time.sleep(0.5)
        log.seek(0)
        self.assertIsNotNone(up, log.read()[-3000:])
        # calls are counted in malloc (its own frame leaf), returns where malloc returns to
        calls = sum(s["values"][0] for s in up["stacks"] if s["frames"][-1] == "malloc")
        returns = sum(s["values"][0] for s in up["stacks"] if s["frames"][-1] == "allocate")
        self.assertGreater(calls, 0, up["stacks"][:4])
        self.assertGreater(returns, 0, up["stacks"][:4])
        with urllib_get(port, "/debug/components?format=json") as body:
            comps = {c["component"]: c for c in json.loads(body)}
        ebpf = comps["pyroscope.ebpf.e"]
        self.assertEqual(ebpf["health"], "unhealthy", ebpf)
        self.assertIn("2 of 4 probe links could not be attached on this host", ebpf["message"])
        self.assertIn("kprobe:do_sys_open", ebpf["message"])
        self.assertIn("this kernel has no kprobes", ebpf["message"])
        log.seek(0)
        text = log.read()
        self.assertIn("/nonexistent/lib.so", text)


if __name__ == "__main__":
    unittest.main()
