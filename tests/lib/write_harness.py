"""Helpers for the pyroscope.write integration tests: running the push harness
(build/harness/push, see tests/harness/push.c) and reading the metrics it reports."""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(ROOT, "build", "harness", "push")
sys.path.insert(0, os.path.join(ROOT, "tests", "servers"))


def run_push(test, spec, timeout=120, env=None, check=True):
    """Runs the harness with a spec dict; returns (result dict, stderr text)."""
    fd, path = tempfile.mkstemp(prefix="np-push-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(spec, f)
    test.addCleanup(os.unlink, path)
    p = subprocess.run([HARNESS, path], capture_output=True, text=True, timeout=timeout, env=env)
    try:
        result = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise AssertionError(f"harness printed no result (exit {p.returncode}):\n{p.stdout}\n{p.stderr[-3000:]}")
    if check and p.returncode != 0:
        raise AssertionError(f"harness failed: {result.get('error')}\n{p.stderr[-3000:]}")
    return result, p.stderr


def parse_metrics(text):
    """Prometheus text -> {'name{labels}': value}; also checks every line is well formed."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)', line)
        if not m:
            raise AssertionError(f"malformed metrics line: {line!r}")
        out[m.group(1)] = float(m.group(2))
    return out


def metric(result, name, **labels):
    """The value of one series from a harness result's metrics; 0 when absent."""
    key = name
    if labels:
        key += "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
    return parse_metrics(result["metrics"]).get(key, 0.0)


def profile(labels, stacks=None, pad_bytes=0):
    return {"labels": labels, "stacks": stacks or [{"frames": ["main", "work"], "count": 1}], "pad_bytes": pad_bytes}
