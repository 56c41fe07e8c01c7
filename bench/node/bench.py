#!/usr/bin/env python3
"""Issue 8's numbers: the simulated node of tests/integration/test_e2e_kubernetes.py with
100 pods (10 of them busy, the rest idle processes in their containers' cgroups),
`nodeprof run --config docs/examples/kubernetes.alloy` unchanged at the default
19 Hz and 15 s collect interval. Reports the agent's peak RSS, its CPU as a share of one
core (and seconds per hour), and the profiles and bytes Pyroscope received per interval.
BENCH_SECONDS (default 180) sets how long the agent runs after its first profile; BENCH_SMAPS=FILE
saves its /proc/PID/smaps at the end."""
import os
import subprocess
import sys
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import lib  # noqa: E402
import node as nodelib  # noqa: E402
import np  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "180"))
PODS, BUSY = 100, 10


def proc_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def rss_by_mapping(pid, top=8):
    """Resident kB per mapped file (anonymous memory under "[anon]"), largest first."""
    sizes, name = {}, "[anon]"
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and not line.startswith(("Rss", "Size")):
                name = os.path.basename(head[5]) if len(head) > 5 and head[5].startswith("/") else "[anon]"
            elif head[0] == "Rss:":
                sizes[name] = sizes.get(name, 0) + int(head[1])
    return sorted(sizes.items(), key=lambda kv: -kv[1])[:top]


class Bench(unittest.TestCase):
    def runTest(self):
        n = nodelib.Node(self)
        idle = os.path.join(n.dir, "idle")
        subprocess.run(["gcc", "-O2", "-o", idle, "-x", "c", "-"], input=b"#include <unistd.h>\nint main(void){for(;;)pause();}\n",
                       check=True)
        for i in range(PODS):
            busy = i < BUSY
            ids = n.pod(f"app-{i}", namespace=f"ns-{i % 10}", containers=("main",), running=("main",) if busy else (),
                        labels={"app": f"app-{i}", "team": f"t{i % 7}"})
            if not busy:
                import cgroups
                rel = cgroups.runtime_path("containerd-systemd", cgroups.new_pod_uid(), ids["main"])
                n.tree.make(rel)
                p = subprocess.Popen([idle])
                self.addCleanup(lambda p=p: (p.kill(), p.wait()))
                n.tree.move(p.pid, rel)
        agent = n.start_agent(os.path.join(np.EXAMPLES, "kubernetes.alloy"))
        n.wait_for(lambda s: len(s) > 0, 60, "the first profile")
        t0, c0 = time.time(), proc_cpu_seconds(agent.pid)
        pushes0 = len(n.series())
        time.sleep(SECONDS)
        t1, c1 = time.time(), proc_cpu_seconds(agent.pid)
        hwm = proc_status(agent.pid, "VmHWM") / 1024
        rss = proc_status(agent.pid, "VmRSS") / 1024
        anon, file = proc_status(agent.pid, "RssAnon") / 1024, proc_status(agent.pid, "RssFile") / 1024
        if os.environ.get("BENCH_SMAPS"):  # the whole map, to see where the memory is
            with open(f"/proc/{agent.pid}/smaps") as src, open(os.environ["BENCH_SMAPS"], "w") as dst:
                dst.write(src.read())
        import json
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{n.http_port}/api/stats", timeout=10) as r:
            store = json.load(r)
        import promtext
        with urllib.request.urlopen(f"http://127.0.0.1:{n.http_port}/metrics", timeout=10) as r:
            fams = promtext.parse(r.read().decode())
        unwind = {name: sum(v for _, _, v in fams[name].samples) for name in ("nodeprof_unwind_tables", "nodeprof_unwind_bpf_bytes",
                                                             "nodeprof_unwind_mapping_entries", "nodeprof_unwind_processes")}
        largest = ", ".join(f"{n} {kb / 1024:.1f}" for n, kb in rss_by_mapping(agent.pid))
        series = n.series()[pushes0:]
        intervals = (t1 - t0) / 15
        nbytes = sum(p["compressed_len"] for _, _, p in series)
        share = 100 * (c1 - c0) / (t1 - t0)
        services = len({l["service_name"] for _, l, _ in series})
        lib.write_result("node", f"""# Simulated node benchmark (issue 8)

`nodeprof run --config docs/examples/kubernetes.alloy` (unchanged: 19 Hz, 15 s interval) on a
simulated node with {PODS} pods ({BUSY} busy, {PODS - BUSY} idle processes in their containers' cgroups),
measured for {t1 - t0:.0f} s after the first profile (`make bench BENCH_ARGS=node`; `bench/node/bench.py`).

| | measured | target |
|---|---|---|
| agent peak RSS (VmHWM) | {hwm:.1f} MB (now {rss:.1f} MB) | <= 20 MB |
| agent CPU | {share:.3f}% of one core ({(c1 - c0) / (t1 - t0) * 3600:.1f} CPU-s per hour) | <= 0.2% |
| profiles sent per interval | {len(series) / intervals:.1f} ({services} series) | |
| bytes sent per interval (gzipped pprof) | {nbytes / intervals / 1024:.1f} KiB | |

At the end, {rss:.1f} MB resident: {anon:.1f} MB anonymous (heap, BPF maps' pages, stacks) and {file:.1f} MB
of mapped files (the binary and its shared libraries' pages). Largest, in MB: {largest}.
Unwind tables at the end: {unwind["nodeprof_unwind_tables"]:.0f} tables in {unwind["nodeprof_unwind_bpf_bytes"] / 1024:.0f} KiB of BPF maps
(the agent keeps none once loaded), {unwind["nodeprof_unwind_mapping_entries"]:.0f} mapping entries for
{unwind["nodeprof_unwind_processes"]:.0f} processes.
The local UI's store held {store["bytes"] / 1024:.0f} KiB of its {store["budget_bytes"] / 1048576:.0f} MiB budget (`--ui-memory`; it keeps
the last hour at most, and evicts the oldest profiles when full).
""")


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("the node benchmark needs root")
    r = unittest.TextTestRunner(verbosity=0).run(Bench())
    sys.exit(0 if r.wasSuccessful() else 1)
