"""Helpers for the Kubernetes discovery tests and benchmark: certificates made with the
openssl CLI, the kube-apiserver test server, and the discovery harness
(build/harness/k8s_targets) whose stdout carries one JSON target list per change."""
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "servers"))
# NODEPROF_K8S_HARNESS runs the tests against another build (e.g. build/asan/harness/k8s_targets).
HARNESS = os.environ.get("NODEPROF_K8S_HARNESS") or os.path.join(ROOT, "build", "harness", "k8s_targets")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "k8s")

import apiserver  # noqa: E402  (tests/servers)


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2", "-subj", f"/CN={name}", cwd=d)
    return os.path.join(d, f"{name}.crt"), os.path.join(d, f"{name}.key")


def make_cert(d, name, ca, cn, sans=None, client=False):
    """A leaf certificate for cn signed by ca (name of a make_ca pair); returns (crt, key)."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=d)
    ext = os.path.join(d, f"{name}.ext")
    with open(ext, "w") as f:
        if sans:
            f.write("subjectAltName=" + ",".join(sans) + "\n")
        f.write("extendedKeyUsage=" + ("clientAuth" if client else "serverAuth") + "\n")
        f.write("basicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "2", "-extfile", ext, cwd=d)
    return os.path.join(d, f"{name}.crt"), os.path.join(d, f"{name}.key")


class Pki:
    """A cluster CA with a server certificate for 127.0.0.1 / kubernetes.default.svc, a
    client certificate, and an unrelated CA (for the wrong-CA test)."""

    def __init__(self, d):
        self.dir = d
        self.ca, _ = make_ca(d, "cluster-ca")
        self.server_crt, self.server_key = make_cert(
            d, "apiserver", "cluster-ca", "kube-apiserver",
            ["IP:127.0.0.1", "DNS:localhost", "DNS:kubernetes.default.svc", "DNS:api.test.internal"])
        self.client_crt, self.client_key = make_cert(d, "client", "cluster-ca", "nodeprof-client", client=True)
        self.other_ca, _ = make_ca(d, "other-ca")


def start_server(pki, **kw):
    return apiserver.ApiServer(pki.server_crt, pki.server_key, **kw).start()


def fixture_pods(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)["items"]


def pod(name, namespace="default", node="node-a", ip="10.0.0.1", containers=(("app", "img:1", ()),),
        labels=None, annotations=None, phase="Running", init=(), statuses=None, owner=None):
    """A minimal pod object as the apiserver returns it. containers: (name, image, ports)
    with ports a list of (number, name, protocol)."""
    def cspec(c):
        out = {"name": c[0], "image": c[1]}
        if c[2]:
            out["ports"] = [{"containerPort": p[0], **({"name": p[1]} if p[1] else {}), "protocol": p[2]}
                            for p in c[2]]
        return out
    md = {"name": name, "namespace": namespace}
    if labels:
        md["labels"] = labels
    if annotations:
        md["annotations"] = annotations
    if owner:
        md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "u-" + owner[1],
                                  "controller": True}]
    st = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if phase == "Running" else "False"}]}
    if ip:
        st["podIP"] = ip
        st["hostIP"] = "192.168.0.10"
    statuses = statuses or {}
    st["containerStatuses"] = [{"name": c[0], "containerID": statuses[c[0]]} for c in containers if c[0] in statuses]
    if init:
        st["initContainerStatuses"] = [{"name": c[0], "containerID": statuses[c[0]]} for c in init
                                       if c[0] in statuses]
    spec = {"nodeName": node, "containers": [cspec(c) for c in containers]}
    if init:
        spec["initContainers"] = [cspec(c) for c in init]
    return {"metadata": md, "spec": spec, "status": st}


_seq = itertools.count()


class Harness:
    """Runs the discovery harness with a config; collects the target lists it prints."""

    def __init__(self, test, workdir, config, env=None, log_level="debug"):
        n = next(_seq)
        self.path = os.path.join(workdir, f"k8s-config-{n}.json")
        with open(self.path, "w") as f:
            json.dump(config, f)
        self.stderr_path = os.path.join(workdir, f"k8s-stderr-{n}.log")
        self.errf = open(self.stderr_path, "w")
        e = dict(os.environ, NODEPROF_LOG_LEVEL=log_level)
        for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
            e.pop(k, None)
        e.update(env or {})
        self.proc = subprocess.Popen([HARNESS, self.path], stdout=subprocess.PIPE, stderr=self.errf, env=e,
                                     text=True)
        self.lines = queue.Queue()
        self.history = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        test.addCleanup(self.stop)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def latest(self):
        while True:
            try:
                item = self.lines.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self.history.append(item)
        return self.history[-1] if self.history else None

    def wait_for(self, pred, timeout=15.0, what="targets"):
        """Returns the first target list (in order) satisfying pred; fails on timeout."""
        deadline = time.time() + timeout
        checked = 0
        while True:
            self.latest()
            while checked < len(self.history):
                if pred(self.history[checked]):
                    return self.history[checked]
                checked += 1
            left = deadline - time.time()
            if left <= 0:
                break
            try:
                item = self.lines.get(timeout=min(left, 0.1))
                if item is not None:
                    self.history.append(item)
                elif self.proc.poll() is not None:
                    break
            except queue.Empty:
                pass
        raise AssertionError(f"timed out waiting for {what}; last output: "
                             f"{json.dumps(self.history[-1] if self.history else None)[:3000]}\n"
                             f"harness log (tail):\n{self.log()[-4000:]}")

    def log(self):
        if not self.errf.closed:
            self.errf.flush()
        with open(self.stderr_path) as f:
            return f.read()

    def wait_log(self, text, timeout=15.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text in self.log():
                return
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not logged; harness log (tail):\n{self.log()[-4000:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("the harness did not stop within 10 s of SIGTERM")
        if not self.errf.closed:
            self.errf.close()
            log = self.log()
            # A clean stop exits 0; sanitizer builds report leaks and errors here.
            if self.proc.returncode != 0 or "Sanitizer" in log or "runtime error:" in log:
                raise AssertionError(f"the harness exited with {self.proc.returncode}:\n{log[-6000:]}")
        return self.proc.returncode


def run_harness_once(workdir, config, timeout=10, env=None):
    """Runs the harness expecting it to exit by itself (configuration errors)."""
    path = os.path.join(workdir, "k8s-config-once.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return subprocess.run([HARNESS, path], capture_output=True, text=True, timeout=timeout, env=env)


def by_address(targets):
    return {(t["__address__"], t.get("__meta_kubernetes_pod_container_name")): t for t in targets}


def names(targets):
    return sorted({t["__meta_kubernetes_pod_name"] for t in targets})


# Timings that keep tests quick: publish 20 ms after the last change (100 ms at most).
FAST = {"debounce_quiet": "20ms", "debounce_max": "100ms", "initial_wait": "2s", "min_watch_timeout": "30s"}
TOKEN = "secret-token-1"


class Case(unittest.TestCase):
    """One PKI per test class; a server and a harness per test."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="nodeprof-k8s-")
        cls.pki = Pki(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def server(self, **kw):
        kw.setdefault("tokens", [TOKEN])
        srv = start_server(self.pki, **kw)
        self.addCleanup(srv.stop)
        return srv

    def token_file(self, value=TOKEN):
        path = os.path.join(self.tmp, f"token-{self.id()}")
        with open(path, "w") as f:
            f.write(value + "\n")
        return path

    def config(self, srv, extra=None, nodeprof=None):
        cfg = {"role": "pod", "api_server": srv.url, "tls_config": {"ca_file": self.pki.ca},
               "nodeprof": dict(FAST, **(nodeprof or {}))}
        cfg.update(extra or {})
        if not any(k in cfg for k in ("bearer_token_file", "bearer_token", "basic_auth", "authorization", "oauth2")):
            cfg["bearer_token_file"] = self.token_file()
        return cfg

    def harness(self, srv, extra=None, nodeprof=None, env=None):
        return Harness(self, self.tmp, self.config(srv, extra, nodeprof), env=env)
