"""`nodeprof run` pushing a workload's stacks to the Pyroscope test server, for the runtime tests
(Java, Node.js): the server, the workload and the agent started in that order (the workload
before the agent, as on a node), the stacks pushed gathered until enough samples carry what the
test looks for, every request checked against the protocol, and the agent's /metrics read at the
end."""
import os
import subprocess
import time
import urllib.request

import np
import pprof  # noqa: F401  (puts tests/servers on sys.path)
import promtext
import stacks as st
from pyroscope import PyroscopeServer  # noqa: E402


def run(test, config, workload, keep, min_samples, hz=97, deadline=40, env=None):
    """config(url) is the Alloy configuration forwarding to the server at url; workload the argv
    of the program profiled; keep(stack) whether a pushed stack ("root;...;leaf") counts. Returns
    ({stack: samples} of the kept stacks, /metrics as promtext families); fails the test when
    fewer than min_samples were pushed within deadline seconds or the agent exited."""
    d = np.tmpdir(test)
    srv = PyroscopeServer().start()
    test.addCleanup(srv.stop)
    cfg = os.path.join(d, "agent.alloy")
    with open(cfg, "w") as f:
        f.write(config(srv.url))
    p = np.nodeprof("check", cfg)
    test.assertEqual(p.returncode, 0, p.stderr)
    w = subprocess.Popen(workload, stdout=subprocess.DEVNULL, env=env)
    test.addCleanup(lambda: (w.kill(), w.wait()))
    port = np.free_port()
    log = open(os.path.join(d, "agent.log"), "w+")
    a = subprocess.Popen([np.NODEPROF, "run", "--config", cfg, "--http-listen", f"127.0.0.1:{port}"],
                         stdout=log, stderr=subprocess.STDOUT)
    test.addCleanup(lambda: (a.poll() is None and a.kill(), a.wait(), log.close()))
    end, agg = time.time() + deadline, {}
    while time.time() < end and st.total(agg) < min_samples:
        agg = {}
        for push in srv.pushes():
            for series in push["series"]:
                for prof in series["profiles"]:
                    for s in prof["stacks"]:
                        k = ";".join(s["frames"])
                        if keep(k):
                            agg[k] = agg.get(k, 0) + s["values"][0] // (10**9 // hz)
        test.assertIsNone(a.poll(), "the agent exited")
        time.sleep(1)
    for r in srv.all_requests():
        test.assertEqual(r["violations"], [], r)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        metrics = promtext.parse(r.read().decode())
    test.assertGreaterEqual(st.total(agg), min_samples, f"few samples pushed:\n{st.top(agg)}")
    return agg, metrics


def runtime_metric(test, metrics, runtime, name, **labels):
    """The value of /metrics family name for runtime (its runtime label) and labels."""
    fam = metrics.get(name)
    test.assertIsNotNone(fam, f"/metrics has no {name}")
    return fam.value(dict(runtime=runtime, **labels))
