"""The corpus of real configurations (tests/configs/, described by corpus.json): every file
passes `nodeprof check`; every file whose expected targets its source documents exports
them (`nodeprof tools targets`); every file runs under `nodeprof run` for a few seconds
against the test kube-apiserver, Pyroscope and Docker Engine servers, becomes ready, logs
no error and exits cleanly on SIGTERM.

Each agent runs in a private mount namespace where /run is an empty tmpfs holding the
service-account files and the Docker socket, and /etc/hosts maps the configs' host names
to 127.0.0.1, so nothing on the host changes (but /etc/k8s, made for the one file that
reads a kubeconfig there and removed afterwards)."""
import concurrent.futures
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import k8s  # also puts tests/servers on sys.path
import np

import apiserver  # noqa: E402  (tests/servers)
import pyroscope  # noqa: E402  (tests/servers)

# Mostly waiting on agents that run for a few seconds against its test servers (19 s of wall time
# for 3 s of CPU), on ports of its own: tests/run.py runs it beside the others.
BACKGROUND = True

CONFIGS = os.path.join(np.ROOT, "tests", "configs")
DOCKER_SERVER = os.path.join(np.ROOT, "tests", "servers", "docker_api.py")
DOCKER_STATE = os.path.join(np.ROOT, "tests", "fixtures", "docker", "engine_state.json")
TOKEN = "sa-token-corpus"
NODE = "node-a"
RUN_SECONDS = 2        # how long a config keeps running once ready
READY_TIMEOUT = 20
PARALLEL = 6           # agents at once (each loads its BPF programs)

with open(os.path.join(CONFIGS, "corpus.json")) as f:
    MANIFEST = json.load(f)
FILES = MANIFEST["files"]

GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "i686": "386", "armv7l": "arm"}.get(platform.machine(),
                                                                                    platform.machine())


def http_status(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def components(port):
    """{component id: its /debug/components row}, {} when the agent does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/debug/components?format=json", timeout=2) as r:
            return {c["component"]: c for c in json.load(r)}
    except (OSError, ValueError):
        return {}


def base_env(extra):
    e = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    e.update(extra)
    return e


def canonical(items):
    """A JSON array as a sorted list of canonical texts (for results in no set order)."""
    return sorted(json.dumps(x, sort_keys=True) for x in items)


def error_lines(log):
    return [line for line in log.splitlines() if "level=error" in line or "Sanitizer" in line
            or "runtime error:" in line]


class Corpus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nodeprof-corpus-")
        cls.cleanups = []
        try:
            cls._start_servers()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _start_servers(cls):
        d = cls.dir
        cls.pki = k8s.Pki(d)
        cls.api = apiserver.ApiServer(cls.pki.server_crt, cls.pki.server_key, tokens=[TOKEN]).start()
        cls.cleanups.append(cls.api.stop)
        cls.api.put("pods", k8s.pod("web-0", namespace="shop", node=NODE, labels={"app": "web"},
                                    annotations={"profiles.grafana.com/cpu.ebpf.enabled": "true"},
                                    containers=(("web", "img:1", ((8080, "http", "TCP"),)),),
                                    statuses={"web": "containerd://" + "a" * 64}))
        cls.api.put("pods", k8s.pod("db-0", namespace="data", node="node-b", containers=(("db", "img:1", ()),)))
        cls.pyro = pyroscope.PyroscopeServer(port=4040).start()
        cls.cleanups.append(cls.pyro.stop)

        cls.run_dir = os.path.join(d, "run")          # becomes /run in the agents' namespace
        sa = os.path.join(d, "serviceaccount")
        os.makedirs(sa)
        for name, content in (("token", TOKEN), ("namespace", "monitoring")):
            with open(os.path.join(sa, name), "w") as f:
                f.write(content)
        shutil.copy(cls.pki.ca, os.path.join(sa, "ca.crt"))
        cls.sa = sa

        state = os.path.join(d, "docker-state.json")
        shutil.copy(DOCKER_STATE, state)
        cls.docker_sock = os.path.join(d, "docker.sock")
        cls.docker = subprocess.Popen([sys.executable, DOCKER_SERVER, "--socket", cls.docker_sock, "--state", state],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        cls.cleanups.append(lambda: (cls.docker.kill(), cls.docker.wait(), cls.docker.stdout.close()))
        if cls.docker.stdout.readline().strip() != "ready":
            raise AssertionError("docker_api.py did not start")

        names = {"pyroscope", "pyroscope-receiver", "pyroscope-backend"}
        for entry in FILES.values():
            names.update(entry.get("hosts", ()))
        cls.hosts = os.path.join(d, "hosts")
        with open(cls.hosts, "w") as f:
            f.write("127.0.0.1 localhost " + " ".join(sorted(names)) + "\n::1 localhost\n")

        cls.kubeconfig = os.path.join(d, "kubeconfig.yaml")
        with open(cls.kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "test",
                       "clusters": [{"name": "test", "cluster": {"server": cls.api.url,
                                                                 "certificate-authority": cls.pki.ca}}],
                       "users": [{"name": "sa", "user": {"token": TOKEN}}],
                       "contexts": [{"name": "test", "context": {"cluster": "test", "user": "sa"}}]}, f)

    @classmethod
    def tearDownClass(cls):
        for fn in reversed(cls.cleanups):
            fn()
        shutil.rmtree(cls.dir, True)

    def env(self, name):
        return base_env(dict(FILES[name].get("env", {}), KUBERNETES_SERVICE_HOST="127.0.0.1",
                             KUBERNETES_SERVICE_PORT=str(self.api.port)))

    # ---- the manifest ----
    def test_manifest_lists_every_file(self):
        on_disk = sorted(n for n in os.listdir(CONFIGS) if n.endswith(".alloy"))
        self.assertEqual(on_disk, sorted(FILES))
        self.assertGreaterEqual(len(on_disk), 40)
        for name in on_disk:
            with open(os.path.join(CONFIGS, name)) as f:
                self.assertTrue(f.readline().startswith("// Source: "), f"{name}: no source header")
            for service in FILES[name]["services"]:
                self.assertIn(service, ("apiserver", "pyroscope", "docker"), name)

    # ---- nodeprof check ----
    def test_every_file_passes_check(self):
        failures = []
        for name in sorted(FILES):
            path = os.path.join(CONFIGS, name)
            p = np.nodeprof("check", path, env=self.env(name))
            bad = [line for line in p.stderr.splitlines() if ": warning: " not in line]
            if p.returncode != 0 or bad or not p.stdout.startswith(f"{path}: OK: "):
                failures.append(f"{name} (exit {p.returncode}):\n  " + "\n  ".join(bad or [p.stdout]))
        if failures:
            self.fail(f"{len(failures)} of the corpus:\n" + "\n".join(failures))

    # ---- documented results ----
    def expected_value(self, want):
        if isinstance(want, str):
            return want.replace("@hostname@", socket.gethostname()).replace("@goarch@", GOARCH)
        return want

    def test_documented_results(self):
        failures = []
        for name in sorted(n for n in FILES if "expect" in FILES[n]):
            expect = FILES[name]["expect"]
            p = np.nodeprof("tools", "targets", "--config", os.path.join(CONFIGS, name), "--component",
                            expect["component"], "--wait", "10s", env=self.env(name), timeout=30)
            if p.returncode != 0:
                failures.append(f"{name}: exit {p.returncode}: {p.stderr.strip()}")
                continue
            got = json.loads(p.stdout)
            if len(got) != len(expect["targets"]):
                failures.append(f"{name}: {len(got)} targets, want {len(expect['targets'])}: {got}")
                continue
            for g, w in zip(got, expect["targets"]):
                for label in sorted(set(g) | set(w)):
                    want = self.expected_value(w.get(label))
                    have = g.get(label)
                    if isinstance(want, dict):
                        ok = have is not None and canonical(json.loads(have)) == canonical(want["unordered_json"])
                    else:
                        ok = (have or "") == (want or "")   # an empty label is an absent one
                    if not ok:
                        failures.append(f"{name}: {label}: got {have!r}, want {want!r}")
        if failures:
            self.fail(f"{len(failures)} of the corpus:\n" + "\n".join(failures))

    # ---- nodeprof run ----
    def start_agent(self, name, workdir):
        """Starts nodeprof run on the file in its own mount namespace; returns (process, port, log path)."""
        entry = FILES[name]
        binds = [(self.hosts, "/etc/hosts")]
        for target, kind in entry.get("files", {}).items():
            self.assertEqual(kind, "kubeconfig", name)
            binds.append((self.kubeconfig, target))
        port = np.free_port()
        log_path = os.path.join(workdir, name + ".log")
        # /run (where /var/run points) becomes a tmpfs holding only what a pod sees there.
        script = ('mount -t tmpfs nodeprof-corpus /run && mkdir -p "$SA" && mount --bind "$SA_SRC" "$SA" && '
                  'touch /run/docker.sock && mount --bind "$DOCKER_SRC" /run/docker.sock && '
                  'while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 1; shift 2; done; shift; exec "$@"')
        env = dict(self.env(name), SA="/run/secrets/kubernetes.io/serviceaccount", SA_SRC=self.sa,
                   DOCKER_SRC=self.docker_sock)
        log = open(log_path, "w")
        proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh",
                                 *[x for pair in binds for x in pair], "--", np.NODEPROF, "run", "--config",
                                 os.path.join(CONFIGS, name), "--http-listen", f"127.0.0.1:{port}"],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return proc, port, log_path

    def run_one(self, name, workdir):
        """Runs one file; returns a list of what went wrong (empty when all is well). A file whose
        entry says a component is unhealthy on this host (its "unhealthy": {component: words of
        its message}) must run with exactly that component unhealthy, saying why."""
        proc, port, log_path = self.start_agent(name, workdir)
        problems = []
        unhealthy = FILES[name].get("unhealthy", {})
        try:
            deadline, status = time.time() + READY_TIMEOUT, None
            while time.time() < deadline and proc.poll() is None:
                status = http_status(port, "/-/ready")
                if status == 200:
                    break
                comps = components(port) if unhealthy else {}
                if comps and all(comps.get(c, {}).get("health") == "unhealthy" for c in unhealthy):
                    status = "as expected"
                    break
                time.sleep(0.2)
            if proc.poll() is not None:
                problems.append(f"exited {proc.returncode} before it was ready")
            elif unhealthy:
                comps = components(port)
                for c, words in unhealthy.items():
                    row = comps.get(c, {})
                    if row.get("health") != "unhealthy" or words not in row.get("message", ""):
                        problems.append(f"{c} should be unhealthy saying \"{words}\": {row}")
                for c, row in comps.items():
                    if c not in unhealthy and row.get("health") != "healthy":
                        problems.append(f"{c} is {row.get('health')}: {row}")
                time.sleep(RUN_SECONDS)
                if proc.poll() is not None:
                    problems.append(f"exited {proc.returncode} while running")
            elif status != 200:
                problems.append(f"not ready after {READY_TIMEOUT} s (/-/ready: {status}, "
                                f"/-/healthy: {http_status(port, '/-/healthy')})")
            else:
                time.sleep(RUN_SECONDS)
                if proc.poll() is not None:
                    problems.append(f"exited {proc.returncode} while running")
                elif http_status(port, "/-/healthy") != 200:
                    problems.append("/-/healthy is not 200 after running")
        finally:
            if proc.poll() is None:
                t0 = time.time()
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                    if time.time() - t0 > 5:
                        problems.append(f"took {time.time() - t0:.1f} s to exit after SIGTERM")
                    if proc.returncode != 0:
                        problems.append(f"exited {proc.returncode} after SIGTERM")
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                    problems.append("did not exit within 10 s of SIGTERM")
        with open(log_path) as f:
            log = f.read()
        problems += [f"logged: {line}" for line in error_lines(log)]
        if problems:
            problems.append("log (tail):\n" + log[-2500:])
        return problems

    def test_every_file_runs(self):
        workdir = np.tmpdir(self)
        made = []
        for entry in FILES.values():
            for target in entry.get("files", {}):
                top = os.path.dirname(target)
                if not os.path.isdir(top):
                    os.makedirs(top)
                    made.append(top)
                if not os.path.exists(target):
                    open(target, "w").close()
                    made.append(target)
        for path in made:      # cleanups run last-in first-out: files before their directory
            self.addCleanup(lambda p=path: os.rmdir(p) if os.path.isdir(p) else os.unlink(p))
        with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
            results = dict(zip(sorted(FILES), pool.map(lambda n: self.run_one(n, workdir), sorted(FILES))))
        failures = [f"{name}:\n  " + "\n  ".join(p) for name, p in results.items() if p]
        if failures:
            self.fail(f"{len(failures)} of the corpus:\n" + "\n".join(failures))


if __name__ == "__main__":
    unittest.main()
