"""Helpers for the chart tests: the Helm-faithful renderer (tests/chart/render.go, built in
GOPATH mode from Debian's Go packages), rendering with values, and reading the result."""
import hashlib
import json
import os
import subprocess
import tempfile

import np

CHART = os.path.join(np.ROOT, "charts", "nodeprof")
RENDER = os.path.join(np.ROOT, "build", "chart", "render")
RENDER_SRC = os.path.join(np.ROOT, "tests", "chart", "render.go")
GO_ENV = {"GOPATH": "/usr/share/gocode", "GO111MODULE": "off", "GOFLAGS": ""}


def build_renderer():
    """Builds build/chart/render when it is missing or older than its source."""
    if os.path.exists(RENDER) and os.path.getmtime(RENDER) >= os.path.getmtime(RENDER_SRC):
        return
    os.makedirs(os.path.dirname(RENDER), exist_ok=True)
    env = dict(os.environ, **GO_ENV)
    env.setdefault("GOCACHE", os.path.join(np.ROOT, "build", "go-cache"))
    p = subprocess.run(["go", "build", "-o", RENDER, RENDER_SRC], capture_output=True, text=True, env=env,
                       timeout=300)
    if p.returncode != 0:
        raise AssertionError("go build of the chart renderer failed:\n" + p.stderr)


class Rendered:
    """The objects of one rendering, in Helm's install order."""

    def __init__(self, out):
        self.manifests = out["manifests"]
        self.objects = [m["object"] for m in self.manifests]
        self.notes = out["notes"]

    def kinds(self):
        return [o["kind"] for o in self.objects]

    def one(self, kind):
        found = [o for o in self.objects if o["kind"] == kind]
        if len(found) != 1:
            raise AssertionError(f"{len(found)} objects of kind {kind} (kinds: {self.kinds()})")
        return found[0]

    def text(self, kind):
        return next(m["text"] for m in self.manifests if m["object"]["kind"] == kind)

    @property
    def config(self):
        return self.one("ConfigMap")["data"]["config.alloy"]

    @property
    def daemonset(self):
        return self.one("DaemonSet")

    @property
    def pod(self):
        return self.daemonset["spec"]["template"]["spec"]

    @property
    def container(self):
        (c,) = self.pod["containers"]
        return c

    def checksum(self):
        return self.daemonset["spec"]["template"]["metadata"]["annotations"]["checksum/config"]


def run_render(values=None, release="nodeprof", namespace="monitoring", extra_args=()):
    """Runs the renderer with values (a dict, written as JSON: JSON is YAML); returns the
    CompletedProcess."""
    args = [RENDER, "--format", "json", "--release-name", release, "--namespace", namespace, *extra_args]
    with tempfile.TemporaryDirectory(prefix="nodeprof-chart-") as d:
        if values is not None:
            path = os.path.join(d, "values.json")
            with open(path, "w") as f:
                json.dump(values, f)
            args += ["-f", path]
        return subprocess.run(args + [CHART], capture_output=True, text=True, timeout=60)


def render(values=None, **kw):
    p = run_render(values, **kw)
    if p.returncode != 0:
        raise AssertionError(f"rendering failed for {json.dumps(values)}:\n{p.stderr}")
    return Rendered(json.loads(p.stdout))


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()
