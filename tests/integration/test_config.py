"""Integration tests of the configuration commands through the real binary:
`nodeprof check`, `nodeprof run --config` (start, SIGHUP reload, invalid reload kept
out, shutdown) and `nodeprof tools targets`."""
import json
import os
import re
import signal
import subprocess
import time
import unittest

from np import EXAMPLES, NODEPROF, nodeprof, tmpdir

# `nodeprof check` and short runs against files of its own (10 s of wall time for about 1 s of
# CPU): tests/run.py runs it beside the others.
BACKGROUND = True


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


class Check(unittest.TestCase):
    def test_every_example_passes(self):
        names = sorted(n for n in os.listdir(EXAMPLES) if n.endswith(".alloy"))
        self.assertGreaterEqual(len(names), 3)
        for name in names:
            path = os.path.join(EXAMPLES, name)
            p = nodeprof("check", path)
            self.assertEqual(p.returncode, 0, f"{name}:\n{p.stderr}")
            self.assertRegex(p.stdout, r"^%s: OK: \d+ components: " % re.escape(path))
            self.assertEqual(p.stdout.count("\n"), 1)
            # Only warnings may be printed, each at a position.
            for line in p.stderr.splitlines():
                self.assertRegex(line, r"^%s:\d+:\d+: warning: " % re.escape(path))

    def test_summary_lists_components_in_file_order(self):
        path = os.path.join(EXAMPLES, "kubernetes.alloy")
        p = nodeprof("check", path, check=True)
        self.assertEqual(p.stdout, f"{path}: OK: 4 components: discovery.kubernetes.all_pods, "
                                   "discovery.relabel.local_pods, pyroscope.ebpf.local_pods, pyroscope.write.endpoint\n")

    def test_errors_are_all_reported_at_their_position(self):
        d = tmpdir(self)
        path = write(os.path.join(d, "bad.alloy"), """discovery.kubernetes "pods" {
  role = "pod"
  api_servr = "https://k8s"
}

discovery.relabel "x" {
  targets = discovery.kubernetes.pods.targetz
  rule {
    action = "Replace"
  }
}

pyroscope.ebpf "default" {
  forward_to = [pyroscope.write.w.receiver]
  sample_rate = "abc"
  demangle = "ful"
  cache_rounds = 3
}

pyroscope.write "w" {
  endpoint {
    url = "pyroscope:4040"
  }
}
pyroscope.write "w" { }
""")
        p = nodeprof("check", path)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, "")
        want = [
            '3:3: unrecognized attribute name "api_servr" in discovery.kubernetes.pods; did you mean "api_server"?',
            '7:39: component discovery.kubernetes.pods has no export named "targetz" (its exports: targets)',
            '9:14: action: invalid value "Replace"; did you mean "replace"?',
            '15:17: sample_rate: expected number, got string "abc"',
            '16:14: demangle: invalid value "ful"; did you mean "full"?',
            '17:3: warning: cache_rounds is deprecated and has no effect; remove it',
            '22:11: warning: url: "pyroscope:4040" must start with http:// or https://; every push to this endpoint '
            'will fail',
            '25:17: component "pyroscope.write.w" is already defined at %s:20:1' % path,
        ]
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), len(want), p.stderr)
        for line, w in zip(lines, want):
            self.assertTrue(line.startswith(f"{path}:{w}"), f"{line!r} does not start with {path}:{w!r}")

    def test_syntax_errors(self):
        d = tmpdir(self)
        path = write(os.path.join(d, "syntax.alloy"), 'a "x" {\n  b = [1 2]\n  c = \'single\'\n}\nx = 1 +\n')
        p = nodeprof("check", path)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.splitlines(), [
            f"{path}:2:10: missing ',' in expression list",
            f"{path}:3:7: illegal single-quoted string; use double quotes",
            f"{path}:6:1: expected expression, got end of file",
        ])

    def test_usage_and_unreadable_files(self):
        p = nodeprof("check")
        self.assertEqual(p.returncode, 2)
        self.assertIn("Usage: nodeprof check FILE", p.stderr)
        p = nodeprof("check", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("Usage: nodeprof check FILE", p.stdout)
        p = nodeprof("check", "/nonexistent/config.alloy")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "/nonexistent/config.alloy: cannot open: No such file or directory\n")
        d = tmpdir(self)
        big = write(os.path.join(d, "big.alloy"), "// " + "x" * (5 << 20) + "\n")
        p = nodeprof("check", big)
        self.assertEqual(p.returncode, 1)
        self.assertIn("file is larger than 4194304 bytes", p.stderr)

    def test_environment_is_read(self):
        d = tmpdir(self)
        path = write(os.path.join(d, "env.alloy"),
                     'discovery.docker "d" {\n  host = sys.env("NODEPROF_TEST_DOCKER_HOST")\n}\n')
        env = dict(os.environ, NODEPROF_TEST_DOCKER_HOST="unix:///run/docker.sock")
        self.assertEqual(nodeprof("check", path, env=env).returncode, 0)
        env["NODEPROF_TEST_DOCKER_HOST"] = "/run/docker.sock"
        p = nodeprof("check", path, env=env)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f'{path}:2:10: host: "/run/docker.sock" is not a URL', p.stderr)


    def test_alloy_defaults_written_out_pass(self):
        """Grafana's k8s-monitoring chart writes every unwinder switch as true (Alloy's
        default): check passes with exactly one warning, naming what nodeprof does instead.
        Alloy's livedebugging block, json logs and an unset env() URL load as in Alloy."""
        d = tmpdir(self)
        path = write(os.path.join(d, "k8s-monitoring.alloy"), K8S_MONITORING_EBPF)
        p = nodeprof("check", path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.splitlines(), [
            f"{path}:LINE:3: warning: "
            "dotnet_enabled = true: nodeprof has no unwinder for this runtime yet (Python, Perl, PHP, HotSpot, V8 and Ruby "
            "are the ones it has); it profiles these processes as native code (the runtime's own frames) and names JIT code "
            "from perf map files (/tmp/perf-PID.map, as .NET writes with DOTNET_PerfMapEnabled=1)"
            .replace("LINE", str(first_line(K8S_MONITORING_EBPF, "dotnet_enabled")))])

        path = write(os.path.join(d, "scenario.alloy"), """livedebugging {
  enabled = true
}
logging {
  level  = "debug"
  format = "json"
}
pyroscope.write "backend" {
  endpoint {
    url = env("NODEPROF_TEST_SURELY_UNSET")
  }
}
""")
        env = {k: v for k, v in os.environ.items() if k != "NODEPROF_TEST_SURELY_UNSET"}
        p = nodeprof("check", path, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, f"{path}: OK: 3 components: livedebugging, logging, pyroscope.write.backend\n")
        warnings = p.stderr.splitlines()
        self.assertEqual(len(warnings), 3, p.stderr)
        self.assertTrue(warnings[0].startswith(f"{path}:2:3: warning: livedebugging: nodeprof has no live debugging"))
        self.assertEqual(warnings[1], f"{path}:10:11: warning: env is deprecated; use sys.env instead")
        self.assertTrue(warnings[2].startswith(f"{path}:10:11: warning: url is empty"), warnings[2])

    def test_what_nodeprof_lacks_is_refused_off_default(self):
        # Every argument of pyroscope.ebpf runs (debug_info's too); what is still lacking, the
        # oauth2 JWT bearer grant, is refused with the why only away from its default.
        d = tmpdir(self)
        path = write(os.path.join(d, "off.alloy"), """pyroscope.ebpf "e" {
  forward_to = []
  off_cpu_threshold = 0.5
  debug_info {
    on_target_symbolization = false
    upload = true
  }
}
pyroscope.write "w" {
  endpoint {
    url = "http://127.0.0.1:4040"
    oauth2 {
      token_url = "https://idp/token"
      grant_type = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    }
  }
}
""")
        p = nodeprof("check", path)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertTrue(p.stderr.startswith(
            f"{path}:14:20: grant_type = \"urn:ietf:params:oauth:grant-type:jwt-bearer\" is not supported by nodeprof "
            "yet: the JWT bearer grant is not implemented"), p.stderr)


def first_line(text, needle):
    """The 1-based number of the first line of text that contains needle."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# The profiling feature of Grafana's k8s-monitoring chart, rendered with its default values.
K8S_MONITORING_EBPF = """discovery.kubernetes "ebpf_pods" {
  role = "pod"
  selectors {
    role  = "pod"
    field = "spec.nodeName=" + sys.env("HOSTNAME")
  }
}
discovery.relabel "ebpf_pods" {
  targets = discovery.kubernetes.ebpf_pods.targets
  rule {
    source_labels = ["__meta_kubernetes_pod_phase"]
    regex         = "Succeeded|Failed|Completed"
    action        = "drop"
  }
}
pyroscope.ebpf "ebpf_pods" {
  targets = discovery.relabel.ebpf_pods.output
  demangle = "none"
  python_enabled = true
  hotspot_enabled = true
  v8_enabled = true
  ruby_enabled = true
  php_enabled = true
  perl_enabled = true
  dotnet_enabled = true
  forward_to = [pyroscope.write.profiles_service.receiver]
}
pyroscope.write "profiles_service" {
  endpoint {
    url = "http://pyroscope.pyroscope.svc:4040"
    headers = {}
  }
  external_labels = {
    cluster = "k8s",
  }
}
"""


RELABEL_CHAIN = """logging {
  level = "debug"
}
discovery.relabel "a" {
  targets = [{"__address__" = "10.0.0.1:80", "job" = "web"}, {"__address__" = "10.0.0.2:80", "job" = "batch"}]
  rule {
    action = "drop"
    source_labels = ["job"]
    regex = "batch"
  }
}
discovery.relabel "b" {
  targets = discovery.relabel.a.output
  rule {
    target_label = "service_name"
    replacement = "svc-" + sys.env("NODEPROF_TEST_SUFFIX")
  }
}
"""


class Run(unittest.TestCase):
    def start(self, config, env=None):
        p = subprocess.Popen([NODEPROF, "run", "--config", config, "--http-listen", "127.0.0.1:0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        return p

    def read_until(self, p, pattern, timeout=10):
        """Reads stderr lines until one matches; returns all lines read."""
        lines = []
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = p.stderr.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
            if re.search(pattern, line):
                return lines
        self.fail(f"no line matching {pattern!r} within {timeout}s; got:\n" + "\n".join(lines))

    def test_bad_arguments(self):
        p = nodeprof("run", "--bogus")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unrecognized option '--bogus'", p.stderr)

    def test_invalid_file_does_not_start(self):
        d = tmpdir(self)
        path = write(os.path.join(d, "bad.alloy"), 'discovery.relabel "a" {\n  targets = 5\n}\n')
        p = nodeprof("run", "--config", path, "--http-listen", "127.0.0.1:0", timeout=10)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, f"{path}:2:13: targets: expected list(map(string)), got number 5\n")

    def test_components_without_a_runtime_are_refused(self):
        """Every example either runs (its components all have a runtime) or is refused with
        exactly one "not supported by `nodeprof run` yet" line per component lacking one."""
        for name in sorted(os.listdir(EXAMPLES)):
            path = os.path.join(EXAMPLES, name)
            p = subprocess.Popen([NODEPROF, "run", "--config", path, "--http-listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            try:
                out, err = p.communicate(timeout=2)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGTERM)
                out, err = p.communicate(timeout=10)
                self.assertEqual(p.returncode, 0, err)
                continue
            self.assertEqual(p.returncode, 1, err)
            lines = [l for l in err.splitlines() if ": warning: " not in l]
            self.assertTrue(lines, name)
            with open(path) as f:
                types = set(re.findall(r"^([a-z]+\.[a-z]+) \"", f.read(), re.M))
            for line in lines:
                m = re.match(r"^%s:\d+:1: ([a-z]+\.[a-z]+) is not supported by `nodeprof run` yet " % re.escape(path),
                             line)
                self.assertIsNotNone(m, line)
                self.assertIn(m.group(1), types)

    def test_sighup_reload(self):
        d = tmpdir(self)
        path = write(os.path.join(d, "run.alloy"), RELABEL_CHAIN)
        p = self.start(path, env=dict(os.environ, NODEPROF_TEST_SUFFIX="x"))
        lines = self.read_until(p, r'msg="nodeprof started"')
        started = [l for l in lines if 'msg="component started"' in l]
        self.assertEqual(len(started), 3, lines)
        self.assertTrue(all("level=info" in l for l in started))

        # A valid change: the kept components are updated in place, not restarted.
        write(path, RELABEL_CHAIN.replace('"job" = "batch"}]', '"job" = "batch"}, {"__address__" = "10.0.0.3:80"}]'))
        p.send_signal(signal.SIGHUP)
        lines = self.read_until(p, r'msg="configuration reloaded".*generation=2')
        self.assertTrue(any('msg="component updated" component_id=discovery.relabel.a' in l for l in lines), lines)
        self.assertTrue(any('msg="component updated" component_id=discovery.relabel.b' in l for l in lines), lines)
        self.assertFalse(any("component started" in l or "component stopped" in l for l in lines), lines)

        # An invalid file: errors logged with their position, the running graph stays.
        write(path, RELABEL_CHAIN.replace('regex = "batch"', 'regex = "(batch"'))
        p.send_signal(signal.SIGHUP)
        lines = self.read_until(p, r"reload failed")
        self.assertIn(f'{path}:9:13: error parsing regexp: missing closing ):', lines[-1])
        self.assertIsNone(p.poll())

        # Valid again (the first targets), with b removed: generation 3; b is stopped, and
        # a, still running from before the failed reload, is updated rather than started.
        chain_without_b = RELABEL_CHAIN.split('discovery.relabel "b"')[0]
        write(path, chain_without_b)
        p.send_signal(signal.SIGHUP)
        lines = self.read_until(p, r'msg="configuration reloaded".*generation=3')
        self.assertTrue(any('msg="component stopped" component_id=discovery.relabel.b' in l for l in lines), lines)
        self.assertTrue(any('msg="component updated" component_id=discovery.relabel.a' in l for l in lines), lines)
        self.assertFalse(any("component started" in l for l in lines), lines)

        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 0)
        self.assertIn('msg="shutting down" signal=SIGTERM', err)
        self.assertIn('msg="component stopped" component_id=discovery.relabel.a', err)

    def test_json_logs(self):
        """logging { format = "json" }: every stderr line is one JSON object with logfmt's
        fields in logfmt's order, from the first line to the last, through a reload that
        logs an error with quotes, a newline, a tab and non-ASCII text (invalid UTF-8 in
        values: tests/unit/test_util.c)."""
        d = tmpdir(self)
        cfg = RELABEL_CHAIN.replace('level = "debug"', 'level = "debug"\n  format = "json"')
        path = write(os.path.join(d, "run.alloy"), cfg)
        p = subprocess.Popen([NODEPROF, "run", "--config", path, "--http-listen", "127.0.0.1:0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=dict(os.environ, NODEPROF_TEST_SUFFIX="x"))
        self.addCleanup(lambda: p.poll() is None and p.kill())
        deadline, raw = time.time() + 10, []
        while time.time() < deadline:
            line = p.stderr.readline()
            self.assertTrue(line, b"".join(raw))
            raw.append(line)
            if b'"nodeprof started"' in line:
                break
        # A valid change (components updated: debug lines), then an invalid one.
        write(path, cfg.replace('"job" = "batch"}]', '"job" = "batch"}, {"__address__" = "10.0.0.3:80"}]'))
        p.send_signal(signal.SIGHUP)
        time.sleep(1)
        with open(path, "wb") as f:
            f.write(cfg.replace('regex = "batch"', 'regex = "(batch\\n\\t\\"é"').encode())
        p.send_signal(signal.SIGHUP)
        time.sleep(1)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 0, err)
        raw.extend(err.splitlines(keepends=True))
        objs = []
        for line in raw:
            self.assertTrue(line.endswith(b"\n"), line)
            # strict: invalid UTF-8 would raise; a repeated key is kept to be caught below
            pairs = json.loads(line.decode("utf-8"), object_pairs_hook=lambda kv: kv)
            self.assertIsInstance(pairs, list, line)
            keys = [k for k, _ in pairs]
            self.assertEqual(len(keys), len(set(keys)), f"repeated key in {line!r}")
            obj = dict(pairs)
            self.assertEqual(list(obj)[:4], ["ts", "level", "component", "msg"], line)
            self.assertRegex(obj["ts"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertIn(obj["level"], ("debug", "info", "warn", "error"))
            objs.append(obj)
        msgs = [o["msg"] for o in objs]
        self.assertIn("nodeprof started", msgs)
        self.assertIn("component started", msgs)
        self.assertTrue(any(o["level"] == "debug" for o in objs), msgs)  # the level applies too
        self.assertIn("component updated", msgs)
        failed = [o["err"] for o in objs if o["msg"] == "reload failed; the running configuration stays"]
        self.assertIn(f'{path}:10:13: error parsing regexp: missing closing ): `^(?s:(batch\n\t"é)$`', failed)
        self.assertEqual(objs[-1]["msg"], "component stopped")

    def test_sigint_stops(self):
        d = tmpdir(self)
        path = write(os.path.join(d, "run.alloy"), RELABEL_CHAIN)
        p = self.start(path)
        self.read_until(p, r'msg="nodeprof started"')
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=10)
        self.assertEqual(p.returncode, 0)


class ToolsTargets(unittest.TestCase):
    def test_relabel_chain(self):
        d = tmpdir(self)
        path = write(os.path.join(d, "t.alloy"), RELABEL_CHAIN)
        env = dict(os.environ, NODEPROF_TEST_SUFFIX="node-1")
        p = nodeprof("tools", "targets", "--config", path, "--component", "discovery.relabel.b", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout,
                         '[\n  {"__address__":"10.0.0.1:80","job":"web","service_name":"svc-node-1"}\n]\n')
        self.assertEqual(p.stderr, "")
        p = nodeprof("tools", "targets", "--config", path, "--component", "discovery.relabel.a", "--wait", "5s",
                     env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, '[\n  {"__address__":"10.0.0.1:80","job":"web"}\n]\n')

    def test_empty_output(self):
        d = tmpdir(self)
        path = write(os.path.join(d, "t.alloy"), 'discovery.relabel "a" {\n  targets = []\n}\n')
        p = nodeprof("tools", "targets", "--config", path, "--component", "discovery.relabel.a")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "[]\n")

    def test_errors(self):
        d = tmpdir(self)
        path = write(os.path.join(d, "t.alloy"), RELABEL_CHAIN + 'pyroscope.write "w" {\n}\n')
        p = nodeprof("tools", "targets", "--config", path, "--component", "discovery.relabel.zzz")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, f'{path}: component "discovery.relabel.zzz" is not defined (components with '
                                   'targets: discovery.relabel.a, discovery.relabel.b)\n')
        p = nodeprof("tools", "targets", "--config", path, "--component", "pyroscope.write.w")
        self.assertEqual(p.returncode, 1)
        self.assertIn('component "pyroscope.write.w" exports no targets', p.stderr)
        p = nodeprof("tools", "targets", "--config", path, "--component", "discovery.relabel.a", "--wait", "soon")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--wait soon:", p.stderr)
        p = nodeprof("tools", "targets", "--config", path, "--component", "discovery.relabel.a", "--wait", "-1s")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "nodeprof tools targets: --wait -1s: must not be negative\n")

    def test_unparsable_wait_is_a_usage_error(self):
        # The value of a --wait that did not parse used to be read anyway (uninitialised):
        # under memcheck any such read fails the run (exit 99).
        d = tmpdir(self)
        path = write(os.path.join(d, "t.alloy"), 'discovery.relabel "a" {\n  targets = []\n}\n')
        p = subprocess.run(["valgrind", "-q", "--error-exitcode=99", NODEPROF, "tools", "targets", "--config", path,
                            "--component", "discovery.relabel.a", "--wait", "garbage"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr, 'nodeprof tools targets: --wait garbage: invalid duration "garbage": '
                                   'expected a number at "garbage"\n')
        self.assertEqual(p.stdout, "")
        p = nodeprof("tools", "targets", "--config", path)
        self.assertEqual(p.returncode, 2)
        self.assertIn("Usage: nodeprof tools targets", p.stderr)
        bad = write(os.path.join(d, "bad.alloy"), 'discovery.relabel "a" {\n  targets = 1\n}\n')
        p = nodeprof("tools", "targets", "--config", bad, "--component", "discovery.relabel.a")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, f"{bad}:2:13: targets: expected list(map(string)), got number 1\n")


if __name__ == "__main__":
    unittest.main()
