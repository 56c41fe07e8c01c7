#!/usr/bin/env python3
"""Issue 2's benchmark: profile every CPU at 97 Hz for 20 s while both CPUs are busy,
nodeprof (`record`, whole host) side by side with
  bpftrace -e 'profile:hz:97 { @[pid, ustack, kstack] = count(); }'
doing the same job (sample, aggregate, symbolize, print). Reports CPU seconds and peak
RSS of each process, the BPF program's own cost per sample (kernel.bpf_stats_enabled:
run_time_ns / run_cnt) and samples lost. Runs each tool RUNS times and keeps the median."""
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import lib  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "20"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
HZ = 97


def busy_workers(tmp):
    src = os.path.join(lib.ROOT, "tests", "integration", "workloads", "split.c")
    exe = os.path.join(tmp, "split")
    subprocess.run(["gcc", "-O0", "-fno-omit-frame-pointer", "-o", exe, src], check=True)
    n = os.cpu_count() or 2
    return [subprocess.Popen([exe, str(SECONDS * RUNS * 3 + 60)]) for _ in range(n)]


def prog_cost(match):
    """Average run time per invocation of the perf_event programs whose name `match` accepts."""
    def read(_proc):
        costs = lib.bpf_prog_costs(prog_type="perf_event")
        cnt = sum(c for name, (c, _) in costs.items() if match(name))
        ns = sum(t for name, (_, t) in costs.items() if match(name))
        return (ns / cnt) if cnt else None
    return read


def run_nodeprof():
    r = lib.measure([lib.NODEPROF, "record", "--duration", f"{SECONDS}s", "--sample-rate", str(HZ), "-o", "/dev/null"],
                    during=prog_cost(lambda n: n == "np_sample"), during_at=SECONDS - 3)
    if r["rc"] != 0:
        sys.exit(f"nodeprof failed: {r['stderr']}")
    m = re.search(r"(\d+) samples", r["stderr"])
    lost = re.search(r"warning: (\d+) samples lost", r["stderr"])
    r["samples"] = int(m.group(1)) if m else 0
    r["lost"] = int(lost.group(1)) if lost else 0
    return r


def run_bpftrace():
    prog = f"profile:hz:{HZ} {{ @[pid, ustack, kstack] = count(); }} interval:s:{SECONDS} {{ exit(); }}"
    r = lib.measure(["bpftrace", "-e", prog], during=prog_cost(lambda n: not n.startswith("np_")), during_at=SECONDS - 3)
    if r["rc"] != 0:
        sys.exit(f"bpftrace failed: {r['stderr']}")
    return r


def main():
    if os.geteuid() != 0:
        sys.exit("the sampler benchmark needs root")
    with tempfile.TemporaryDirectory() as tmp:
        workers = busy_workers(tmp)
        lib.bpf_stats(True)
        try:
            runs = {"nodeprof": [], "bpftrace": []}
            for _ in range(RUNS):
                runs["nodeprof"].append(run_nodeprof())
                runs["bpftrace"].append(run_bpftrace())
        finally:
            lib.bpf_stats(False)
            for w in workers:
                w.kill()
                w.wait()

    def med(tool, key):
        vals = [r[key] for r in runs[tool] if r.get(key) is not None]
        return statistics.median(vals) if vals else float("nan")

    n_cpu, b_cpu = med("nodeprof", "cpu_s"), med("bpftrace", "cpu_s")
    n_rss, b_rss = med("nodeprof", "max_rss_kb") / 1024, med("bpftrace", "max_rss_kb") / 1024
    n_bpf, b_bpf = med("nodeprof", "during"), med("bpftrace", "during")
    text = f"""# Sampler benchmark (issue 2)

Whole host, {os.cpu_count()} CPUs busy, {HZ} Hz, {SECONDS} s per run, median of {RUNS} runs
(`make bench BENCH_ARGS=sampler`; `bench/sampler/bench.py`).

| | nodeprof record | bpftrace | ratio |
|---|---|---|---|
| CPU seconds (user+sys of the tool) | {n_cpu:.3f} | {b_cpu:.3f} | {n_cpu / b_cpu:.2f}x |
| peak RSS | {n_rss:.1f} MB | {b_rss:.1f} MB | {n_rss / b_rss:.2f}x |
| BPF program cost per sample | {n_bpf:.0f} ns | {b_bpf:.0f} ns | {n_bpf / b_bpf:.2f}x |
| samples kept (nodeprof) | {med("nodeprof", "samples"):.0f} | | |
| samples lost (nodeprof) | {med("nodeprof", "lost"):.0f} | | |

Targets: CPU <= 0.5x bpftrace, peak RSS <= 20 MB, lost = 0.
"""
    lib.write_result("sampler", text)
    # bpftrace names its perf_event program after the probe ("97" for profile:hz:97).


if __name__ == "__main__":
    main()
