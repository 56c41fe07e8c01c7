"""`nodeprof run` on a workload, for the runtime tests (Python, Java, Node.js): the workload
started before the agent, as on a node; for Java and Node.js, the stacks pushed to the Pyroscope
test server gathered until enough samples carry what the test looks for, every request checked
against the protocol; the agent's /metrics, and one runtime's series in them."""
import os
import subprocess
import time
import urllib.request

import np
import pprof  # noqa: F401  (puts tests/servers on sys.path)
import promtext
import stacks as st
from pyroscope import PyroscopeServer  # noqa: E402


def start(test, config, workload, env=None):
    """The workload (argv), then `nodeprof run` on config (Alloy text, which `nodeprof check`
    must pass) on a port of its own; both stopped when the test ends. Returns (port, agent)."""
    d = np.tmpdir(test)
    cfg = os.path.join(d, "agent.alloy")
    with open(cfg, "w") as f:
        f.write(config)
    p = np.nodeprof("check", cfg)
    test.assertEqual(p.returncode, 0, p.stderr)
    w = subprocess.Popen(workload, stdout=subprocess.DEVNULL, env=env)
    test.addCleanup(lambda: (w.kill(), w.wait()))
    port = np.free_port()
    log = open(os.path.join(d, "agent.log"), "w+")
    a = subprocess.Popen([np.NODEPROF, "run", "--config", cfg, "--http-listen", f"127.0.0.1:{port}"],
                         stdout=log, stderr=subprocess.STDOUT)
    test.addCleanup(lambda: (a.poll() is None and a.kill(), a.wait(), log.close()))
    return port, a


def metrics(port):
    """The agent's /metrics as promtext families."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return promtext.parse(r.read().decode())


def run(test, cmdline_regex, service, ebpf_args, workload, keep, min_samples, hz=97, deadline=40, env=None,
        after_start=None, with_labels=False):
    """The agent on np.process_pipeline_config(cmdline_regex, service, ebpf_args) forwarding to
    the server; workload the argv of the program profiled; keep(stack) whether a pushed stack
    ("root;...;leaf") counts; after_start(port, agent), when given, runs once the agent started
    (e.g. to let a workload go on only then). Returns ({stack: samples} of the kept stacks,
    /metrics as promtext families; with_labels: keyed by (stack, sorted (name, value) sample
    labels) instead); fails the test when fewer than min_samples were pushed
    within deadline seconds or the agent exited."""
    srv = PyroscopeServer().start()
    test.addCleanup(srv.stop)
    port, a = start(test, np.process_pipeline_config(cmdline_regex, service, ebpf_args, forward_url=srv.url),
                    workload, env)
    if after_start:
        after_start(port, a)
    end, agg = time.time() + deadline, {}
    while time.time() < end and st.total(agg) < min_samples:
        agg = {}
        for push in srv.pushes():
            for series in push["series"]:
                for prof in series["profiles"]:
                    for s in prof["stacks"]:
                        k = ";".join(s["frames"])
                        if keep(k):
                            if with_labels:
                                k = (k, tuple(sorted(s["labels"].items())))
                            agg[k] = agg.get(k, 0) + s["values"][0] // (10**9 // hz)
        test.assertIsNone(a.poll(), "the agent exited")
        time.sleep(1)
    for r in srv.all_requests():
        test.assertEqual(r["violations"], [], r)
    fams = metrics(port)
    test.assertGreaterEqual(st.total(agg), min_samples, f"few samples pushed:\n{st.top({str(k): v for k, v in agg.items()})}")
    return agg, fams


def runtime_metric(test, metrics, runtime, name, **labels):
    """The value of /metrics family name for runtime (its runtime label) and labels."""
    fam = metrics.get(name)
    test.assertIsNotNone(fam, f"/metrics has no {name}")
    return fam.value(dict(runtime=runtime, **labels))
