"""`nodeprof run` as an operator sees it: the embedded default with its UI, /metrics,
health and readiness, reload over HTTP, one failing component not stopping the
others, a busy listen address, and SIGTERM."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import np
from np import free_port
import promtext


def get(port, path, method="GET", timeout=10):
    """(status, body text) of an HTTP request to the agent. A state change carries the
    non-simple Content-Type the agent requires of it (agent/http/guard.h)."""
    headers = {} if method in ("GET", "HEAD") else {"Content-Type": "application/json"}
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def pprofs(port, service):
    """pyroscope_ebpf_pprofs_total for a service_name (0 until its first profile)."""
    fam = promtext.parse(get(port, "/metrics")[1]).get("pyroscope_ebpf_pprofs_total")
    return (fam.value({"service_name": service}) if fam else None) or 0


def wait_pprofs(port, service, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline and not pprofs(port, service):
        time.sleep(0.5)
    return pprofs(port, service)


RELABEL_ONLY = """discovery.process "p" {
  refresh_interval = "1s"
}
discovery.relabel "r" {
  targets = discovery.process.p.targets
  rule {
    source_labels = ["__meta_process_exe"]
    regex = ".*/split"
    action = "keep"
  }
  rule {
    target_label = "service_name"
    replacement = "%s"
  }
}
pyroscope.ebpf "e" {
  targets = discovery.relabel.r.output
  forward_to = []
  collect_interval = "2s"
  sample_rate = 97
}
"""


def bpf_objects(pid):
    """(programs, maps) the process holds file descriptors of, from /proc/PID/fdinfo."""
    progs = maps = 0
    d = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                info = f.read()
        except OSError:
            continue  # closed meanwhile
        progs += "\nprog_type:" in "\n" + info
        maps += "\nmap_type:" in "\n" + info
    return progs, maps


class Run(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nodeprof-run-")
        cls.split = np.build_workload("split", cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def start(self, *args):
        port = free_port()
        log = open(os.path.join(np.tmpdir(self), "agent.log"), "w+")
        p = subprocess.Popen([np.NODEPROF, "run", "--http-listen", f"127.0.0.1:{port}", *args], stdout=log,
                             stderr=subprocess.STDOUT, text=True)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                if get(port, "/-/healthy", timeout=2)[0] == 200:
                    return p, port, log
            except OSError:
                pass
            if p.poll() is not None:
                log.seek(0)
                raise AssertionError(f"nodeprof run exited {p.returncode}: {log.read()}")
            time.sleep(0.2)
        raise AssertionError("the agent did not come up")

    def wait_ready(self, port, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, body = get(port, "/-/ready")
            if status == 200:
                return
            time.sleep(0.3)
        raise AssertionError(f"not ready: {body}")

    def workload(self):
        w = subprocess.Popen([self.split, "60"])
        self.addCleanup(lambda: (w.kill(), w.wait()))
        return w

    def test_embedded_default_profiles_the_host_for_the_ui(self):
        w = self.workload()
        p, port, _ = self.start()
        self.wait_ready(port)
        deadline, top = time.time() + 30, ""
        while time.time() < deadline:
            status, top = get(port, "/api/top?from=now-5m")
            if status == 200 and "heavy" in top:
                break
            time.sleep(1)
        self.assertIn("heavy", top)
        status, services = get(port, "/api/services?from=now-5m")
        self.assertEqual(status, 200)
        names = [s["name"] for s in json.loads(services)["services"]]
        self.assertIn("split", names, names)     # named after its executable by the embedded relabel rule
        status, page = get(port, "/")
        self.assertEqual(status, 200)
        self.assertIn("<html", page.lower())
        # The embedded default is an ordinary configuration that `check` accepts.
        r = subprocess.run([np.NODEPROF, "run", "--print-default-config"], capture_output=True, text=True)
        path = os.path.join(np.tmpdir(self), "default.alloy")
        with open(path, "w") as f:
            f.write(r.stdout)
        self.assertEqual(np.nodeprof("check", path).returncode, 0)
        # There is no file to reload.
        status, body = get(port, "/-/reload", method="POST")
        self.assertEqual(status, 400)
        self.assertIn("embedded default", body)
        t0 = time.time()
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=10), 0)
        self.assertLess(time.time() - t0, 5)
        w.kill()

    def test_metrics_and_debug_pages(self):
        self.workload()
        cfg = os.path.join(np.tmpdir(self), "c.alloy")
        with open(cfg, "w") as f:
            f.write(RELABEL_ONLY % "split-svc")
        _, port, _ = self.start("--config", cfg)
        self.wait_ready(port)
        self.assertTrue(wait_pprofs(port, "split-svc"))
        status, text = get(port, "/metrics")
        self.assertEqual(status, 200)
        fams = promtext.parse(text)
        for name, kind in (("pyroscope_ebpf_active_targets", "gauge"), ("pyroscope_ebpf_pprofs_total", "counter"),
                           ("pyroscope_ebpf_profiling_sessions_total", "counter"),
                           ("pyroscope_ebpf_profiling_sessions_failing_total", "counter"),
                           ("pyroscope_fanout_latency", "histogram"), ("nodeprof_ebpf_bpf_samples_lost_total", "counter"),
                           ("nodeprof_symbol_cache_bytes", "gauge"), ("process_resident_memory_bytes", "gauge"),
                           ("nodeprof_ebpf_stacks_map_entries", "gauge"), ("nodeprof_ebpf_stacks_map_capacity", "gauge"),
                           ("process_cpu_seconds_total", "counter")):
            self.assertIn(name, fams)
            self.assertEqual(fams[name].type, kind, name)
        self.assertGreaterEqual(fams["pyroscope_ebpf_pprofs_total"].value({"service_name": "split-svc"}), 1)
        self.assertEqual(fams["nodeprof_ebpf_bpf_samples_lost_total"].value(), 0)
        self.assertGreaterEqual(fams["pyroscope_ebpf_active_targets"].value(), 1)
        self.assertGreater(fams["nodeprof_ebpf_stacks_map_entries"].value(), 0)
        self.assertGreater(fams["nodeprof_ebpf_stacks_map_capacity"].value(),
                           fams["nodeprof_ebpf_stacks_map_entries"].value())
        for page in ("components", "targets", "profilers", "pid-cache", "elf-cache"):
            status, body = get(port, f"/debug/{page}?format=json")
            self.assertEqual(status, 200, page)
            json.loads(body)
            status, html = get(port, f"/debug/{page}")
            self.assertEqual(status, 200)
            self.assertIn("<table", html)
        comps = {c["component"]: c for c in json.loads(get(port, "/debug/components?format=json")[1])}
        self.assertEqual(comps["pyroscope.ebpf.e"]["health"], "healthy")
        prof = json.loads(get(port, "/debug/profilers?format=json")[1])[0]
        self.assertGreater(prof["symbol_cache_symbols"], 0)
        self.assertGreater(prof["pid_cache_capacity"], 0)
        # The caches' contents: the workload's process, and its executable's symbol table
        # (listed once the first interval has been collected).
        pids = json.loads(get(port, "/debug/pid-cache?format=json")[1])[0]["entries"]
        self.assertTrue(pids and all("container_id" in e for e in pids), pids)
        deadline = time.time() + 10
        while time.time() < deadline:
            tables = json.loads(get(port, "/debug/elf-cache?format=json")[1])[0]["entries"]
            if any(f.endswith("/split") for t in tables for f in t["files"]):
                break
            time.sleep(0.5)
        self.assertTrue(any(f.endswith("/split") for t in tables for f in t["files"]), tables)

    def test_memory_budgets_are_settings(self):
        """--symbol-memory, --unwind-memory, --process-memory and --runtime-memory set the
        budgets /metrics shows; the agent stays within them, evicting and counting."""
        self.workload()
        # node's symbol table (7.5 MiB of names) is more than a 3 MiB budget lets one build take
        # (an eighth). The symbol cache directory is a fresh one, so that it is built here: a
        # table loaded from the directory is mapped, and mapped tables are bounded by number.
        node = subprocess.Popen([shutil.which("node") or "/usr/bin/node", "-e", "for(;;){}"])
        self.addCleanup(lambda: (node.kill(), node.wait()))
        mib = 1 << 20
        tmp = np.tmpdir(self)
        cfg = np.default_config_file(tmp, os.path.join(tmp, "symb-cache"))
        _, port, _ = self.start("--config", cfg, "--symbol-memory", "3MiB", "--unwind-memory", "2MiB",
                                "--process-memory", "4MiB", "--runtime-memory", "1MiB")

        def kept_out(fams):
            ev, ref = fams.get("nodeprof_symbol_table_evictions_total"), fams.get("nodeprof_symbols_refused_total")
            return (ev.value() if ev else 0) + (ref.value({"reason": "table_bytes"}) if ref else 0)
        deadline, fams = time.time() + 30, {}
        while time.time() < deadline:
            fams = promtext.parse(get(port, "/metrics")[1])
            if kept_out(fams) > 0:
                break
            time.sleep(0.5)
        self.assertEqual(fams["nodeprof_symbol_cache_budget_bytes"].value(), 3 * mib)
        self.assertEqual(fams["nodeprof_unwind_bpf_budget_bytes"].value(), 2 * mib)
        self.assertEqual(fams["nodeprof_process_state_budget_bytes"].value(), 4 * mib)
        for rt in ("python", "perl", "php", "hotspot", "v8", "ruby"):
            self.assertEqual(fams["nodeprof_runtime_name_cache_budget_bytes"].value({"runtime": rt}), mib, rt)
        # What does not fit is left out (a table too large to build within the budget, or the
        # least recently used one evicted), and counted.
        self.assertGreater(kept_out(fams), 0)
        self.assertLessEqual(fams["nodeprof_symbol_cache_bytes"].value(), 3 * mib)
        self.assertLessEqual(fams["nodeprof_unwind_bpf_bytes"].value(), 2 * mib)
        # Loads put off while resident tables hold the unwind budget (test_unwind_budget) are counted
        # beside its evictions.
        for name in ("nodeprof_unwind_table_evictions_total", "nodeprof_unwind_table_deferred_total"):
            self.assertIn(name, fams)
        self.assertLessEqual(fams["nodeprof_process_state_bytes"].value(), 4 * mib)

    def test_memory_budget_below_the_minimum(self):
        for opt in ("--symbol-memory", "--unwind-memory", "--process-memory", "--runtime-memory"):
            for cmd in ("run", "record"):
                r = np.nodeprof(cmd, opt, "64k")
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(f"{opt} 64k: a budget is at least 1MiB", r.stderr)

    def test_reload_over_http_keeps_the_old_graph_on_error(self):
        self.workload()
        cfg = os.path.join(np.tmpdir(self), "c.alloy")
        with open(cfg, "w") as f:
            f.write(RELABEL_ONLY % "before")
        _, port, log = self.start("--config", cfg)
        self.wait_ready(port)
        with open(cfg, "w") as f:
            f.write(RELABEL_ONLY % "after")
        self.assertEqual(get(port, "/-/reload", method="POST")[0], 200)
        with open(cfg, "w") as f:
            f.write("pyroscope.ebpf \"e\" {\n  sample_rate = \"fast\"\n}\n")
        status, body = get(port, "/-/reload", method="POST")
        self.assertEqual(status, 400)
        self.assertIn("sample_rate", body)
        self.assertEqual(get(port, "/-/reload", method="GET")[0], 405)
        # Still running the valid configuration: profiles under the new name keep coming.
        self.assertTrue(wait_pprofs(port, "after"))
        self.assertEqual(get(port, "/-/healthy")[0], 200)

    def test_one_failing_component_does_not_stop_the_others(self):
        self.workload()
        cfg = os.path.join(np.tmpdir(self), "c.alloy")
        with open(cfg, "w") as f:
            f.write(RELABEL_ONLY % "svc" + 'discovery.docker "d" {\n  host = "unix:///nonexistent/docker.sock"\n}\n')
        _, port, _ = self.start("--config", cfg)
        deadline = time.time() + 20
        while time.time() < deadline:
            comps = {c["component"]: c for c in json.loads(get(port, "/debug/components?format=json")[1])}
            # The engine loads its BPF programs while docker's first connection fails at once.
            if comps.get("discovery.docker.d", {}).get("health") == "unhealthy" and \
                    comps.get("pyroscope.ebpf.e", {}).get("health") != "unknown":
                break
            time.sleep(0.5)
        self.assertEqual(comps["discovery.docker.d"]["health"], "unhealthy", comps)
        self.assertIn("docker.sock", comps["discovery.docker.d"]["message"])
        self.assertEqual(comps["pyroscope.ebpf.e"]["health"], "healthy")
        status, body = get(port, "/-/ready")
        self.assertEqual(status, 503)
        self.assertIn("discovery.docker.d", body)
        self.assertTrue(wait_pprofs(port, "svc"))

    def test_lazy_mode_loads_bpf_with_the_first_target(self):
        """lazy_mode = true, as Alloy documents it: no BPF program or map is loaded while
        there are no targets; the first target loads them and profiles follow. The agent
        is ready meanwhile (its profiler does what it was told: wait)."""
        exe = os.path.join(np.tmpdir(self), f"lazy-{os.getpid()}-{int(time.time())}")
        shutil.copy(self.split, exe)
        cfg = os.path.join(np.tmpdir(self), "c.alloy")
        with open(cfg, "w") as f:  # the profiler of this one executable: no other test's process matches
            f.write((RELABEL_ONLY % "lazy-svc").replace('".*/split"', f'"{exe}"')
                    .replace("sample_rate = 97", "sample_rate = 97\n  lazy_mode = true"))
        self.assertEqual(np.nodeprof("check", cfg).stderr, "")
        p, port, log = self.start("--config", cfg)
        self.wait_ready(port)
        time.sleep(2.5)  # two discovery passes, and a collect interval
        self.assertEqual(bpf_objects(p.pid), (0, 0))
        prof = json.loads(get(port, "/debug/profilers?format=json")[1])[0]
        self.assertTrue(prof["lazy_waiting"], prof)
        fams = promtext.parse(get(port, "/metrics")[1])
        self.assertEqual(fams["pyroscope_ebpf_profiling_sessions_total"].value() or 0, 0)
        self.assertEqual(fams["pyroscope_ebpf_active_targets"].value() or 0, 0)

        w = subprocess.Popen([exe, "60"])
        self.addCleanup(lambda: (w.kill(), w.wait()))
        self.assertTrue(wait_pprofs(port, "lazy-svc", timeout=30))
        progs, maps = bpf_objects(p.pid)
        self.assertGreater(progs, 0)
        self.assertGreater(maps, 0)
        prof = json.loads(get(port, "/debug/profilers?format=json")[1])[0]
        self.assertFalse(prof["lazy_waiting"], prof)
        fams = promtext.parse(get(port, "/metrics")[1])
        self.assertEqual(fams["pyroscope_ebpf_profiling_sessions_total"].value(), 1)
        log.seek(0)
        text = log.read()
        self.assertIn('msg="lazy mode enabled, waiting for targets to profile" component_id=pyroscope.ebpf.e', text)
        self.assertIn('msg="targets arrived; profiler started" component_id=pyroscope.ebpf.e targets=1', text)

    def test_unset_env_url_loads_and_every_push_fails(self):
        """url = env("UNSET") loads (Alloy validates no URL at load) and `check` passes; each
        push then fails at once, named in the log, counted as dropped."""
        self.workload()
        cfg = os.path.join(np.tmpdir(self), "c.alloy")
        with open(cfg, "w") as f:
            f.write((RELABEL_ONLY % "unset-url").replace("forward_to = []", "forward_to = [pyroscope.write.w.receiver]") +
                    'pyroscope.write "w" {\n  endpoint {\n    url = env("NODEPROF_TEST_SURELY_UNSET")\n  }\n}\n')
        env = {k: v for k, v in os.environ.items() if k != "NODEPROF_TEST_SURELY_UNSET"}
        r = subprocess.run([np.NODEPROF, "check", cfg], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warning: url is empty", r.stderr)
        _, port, log = self.start("--config", cfg)
        self.wait_ready(port)
        self.assertTrue(wait_pprofs(port, "unset-url"))
        deadline, dropped = time.time() + 20, 0
        while time.time() < deadline and not dropped:
            fams = promtext.parse(get(port, "/metrics")[1])
            dropped = fams["pyroscope_write_dropped_profiles_total"].value({"endpoint": ""}) or 0
            time.sleep(0.5)
        self.assertGreaterEqual(dropped, 1)
        self.assertEqual(fams["pyroscope_write_sent_profiles_total"].value({"endpoint": ""}) or 0, 0)
        self.assertEqual(fams["pyroscope_write_retries_total"].value({"endpoint": ""}) or 0, 0)
        log.seek(0)
        text = log.read()
        self.assertIn('msg="push rejected; not retried" endpoint="" status=none code=none '
                      'error="endpoint url \\"\\": not a valid URL (expected e.g. http://pyroscope:4040)"', text)

    def test_printed_url_opens_the_ui(self):
        # `--http-listen :PORT` is every interface: the URL printed for a person is one a
        # browser can open (it used to be http://PORT/).
        port = free_port()
        log = open(os.path.join(np.tmpdir(self), "agent.log"), "w+")
        self.addCleanup(log.close)
        p = subprocess.Popen([np.NODEPROF, "run", "--http-listen", f":{port}"], stdout=log,
                             stderr=subprocess.STDOUT, text=True)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        deadline, text = time.time() + 30, ""
        while time.time() < deadline and "(Ctrl-C stops)" not in text:
            self.assertIsNone(p.poll(), text)
            time.sleep(0.2)
            log.seek(0)
            text = log.read()
        url = f"http://127.0.0.1:{port}/"
        self.assertIn(f"open {url} (Ctrl-C stops)", text)
        self.assertIn(f"ui={url}", text)
        with urllib.request.urlopen(url, timeout=10) as r:
            self.assertEqual(r.status, 200)
            self.assertIn("<html", r.read().decode().lower())
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=10), 0)

    def test_busy_listen_address(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        self.addCleanup(s.close)
        r = np.nodeprof("run", "--http-listen", f"127.0.0.1:{s.getsockname()[1]}", timeout=20)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Address already in use", r.stderr)
        r = np.nodeprof("run", "--ui-memory", "lots", timeout=20)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--ui-memory", r.stderr)


if __name__ == "__main__":
    unittest.main()
