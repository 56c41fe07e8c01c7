#!/usr/bin/env python3
"""Issue 17's benchmark: whole stacks without frame pointers, nodeprof against
`perf record --call-graph dwarf` + `perf script`, side by side in one run on the same busy
processes (tests/lib/stacks.py records both and judges both alike).

1. Share of samples reaching the entry (__libc_start_call_main) and CPU of the whole job, for
   the -O2 -fomit-frame-pointer 3:1 program, the C++ recursion (100 frames), Debian's
   `xz -9` and `/usr/bin/python3.11`, two processes at a time (one per CPU), BENCH_SECONDS
   each (default 40) at 97 Hz. nodeprof's job: its process's CPU (wait4) plus the run time
   of every BPF program it holds (BPF run-time statistics, /proc/PID/fdinfo): in-kernel
   work is charged to the sampled processes, so it is counted here. perf's job: perf record
   + perf script. perf's own in-kernel sampling work (copying 8 KiB of user stack per
   sample) is charged to the sampled processes and cannot be measured the same way; it is
   left out, which favours perf.
2. The BPF program's time per sample on ~24-frame stacks of the same C++ recursion built
   with frame pointers (-O2 -fno-omit-frame-pointer) and without (-O2 -fomit-frame-pointer,
   the stacks an unwind table has to walk); both CPUs busy with two copies, so nearly every
   tick samples a recorded process.
3. Unwind-table bytes in the agent and in BPF maps: `nodeprof run` (the embedded default,
   every process on this machine) for a while, then every /metrics series whose name says
   "unwind"; "not available" when the agent exposes none.
Writes bench/results/unwind_stacks.md. UNWIND_BENCH_ONLY=per_sample runs section 2 alone and
prints its rows without writing the results file (for measuring a change to the walker)."""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import lib  # noqa: E402
import np  # noqa: E402
import stacks as st  # noqa: E402
import unwind_workloads as uw  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "40"))
HZ = 97
SHALLOW = 18    # recursion levels: + burn, Walker::run, main, libc's two frames, _start = 24 frames


def build(tmp):
    exes = {
        "split": uw.build("split.c", os.path.join(tmp, "split")),
        "recurse": uw.build("unwind_recurse.cc", os.path.join(tmp, "recurse")),
        "recurse_fp": uw.build("unwind_recurse.cc", os.path.join(tmp, "recurse-fp"), frame_pointers=True),
    }
    return exes, uw.compressor_input(os.path.join(tmp, "input.txt"))


def whole_stacks(exes, text, tmp):
    """Section 1: {name: (Job, BpfWatch)}."""
    pairs = [
        {"split (-O2, 3:1)": [exes["split"], SECONDS + 60],
         "C++ recursion (100 frames)": [exes["recurse"], 100, SECONDS + 60]},
        {"xz -9": uw.xz_argv(text), "python3.11": uw.python_argv(SECONDS + 60)},
    ]
    out = {}
    for i, pair in enumerate(pairs):
        procs = {name: subprocess.Popen(list(map(str, argv)), stdout=subprocess.DEVNULL) for name, argv in pair.items()}
        watch = lib.BpfWatch()
        try:
            time.sleep(0.5)
            work = os.path.join(tmp, f"pair{i}")
            os.makedirs(work)
            jobs = st.record_both({n: p.pid for n, p in procs.items()}, SECONDS, work, hz=HZ, poll=watch)
        finally:
            for p in procs.values():
                p.kill()
                p.wait()
        for name, job in jobs.items():
            if job.nodeprof_rc != 0 or job.perf_rc != 0:
                sys.exit(f"{name}: nodeprof exited {job.nodeprof_rc}: {job.nodeprof_log[-1500:]}\n"
                         f"perf exited {job.perf_rc}: {job.perf_log[-1500:]}")
            out[name] = (job, watch)
    return out


def frames_median(stacks):
    lens = []
    for s, c in stacks.items():
        lens += [len(st.frames(s))] * c
    return statistics.median(lens) if lens else 0


ROUNDS = 3  # section 2: interleaved rounds, medians reported (the machine's speed drifts)
BPFTRACE_FP = "bpftrace, frame pointers (its ustack: the kernel's frame-pointer walk)"


def record_per_sample(tool, exe, seconds, tmp):
    """One section-2 run: two copies of exe at depth SHALLOW recorded by tool ("nodeprof" or
    "bpftrace") for seconds; (BPF ns per run, per kept sample, runs, samples kept, stacks or None)."""
    procs = [subprocess.Popen([exe, str(SHALLOW), str(seconds + 60)], stdout=subprocess.DEVNULL) for _ in range(2)]
    watch = lib.BpfWatch()
    out = os.path.join(tmp, "per-sample.out")
    try:
        time.sleep(0.5)
        if tool == "nodeprof":
            argv = [np.NODEPROF, "record", "--duration", f"{seconds}s", "--sample-rate", str(HZ), "-o", out]
            for p in procs:
                argv += ["--pid", str(p.pid)]
        else:
            pred = " || ".join(f"pid == {p.pid}" for p in procs)
            argv = ["bpftrace", "-e", f"profile:hz:{HZ} /{pred}/ {{ @[pid, ustack, kstack] = count(); }} "
                                      f"interval:s:{seconds} {{ exit(); }}"]
        with open(out if tool == "bpftrace" else os.devnull, "w") as sink:
            rec = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE, text=True)
            while rec.poll() is None:
                watch("x", rec.pid)
                time.sleep(0.05)
        err = rec.stderr.read()
        if rec.returncode != 0:
            sys.exit(f"{tool} failed: {err}")
    finally:
        for p in procs:
            p.kill()
            p.wait()
    with open(out) as f:
        text = f.read()
    if tool == "nodeprof":
        stacks = np.parse_folded(text)
        kept = st.total(stacks)
    else:  # bpftrace prints each distinct key as "@[pid, <frames>, <frames>]: N" over several lines
        stacks = None
        kept = sum(int(m) for m in re.findall(r"\]: (\d+)$", text, re.M))
    runs = watch.runs("x")
    total = watch.total_ns("x")
    return watch.per_sample_ns("x"), (total / kept if kept else float("nan")), runs, kept, stacks


def bpf_per_sample(exes, tmp):
    """Section 2: {label: (ns per run, ns per kept sample, runs, samples, median frames, % reaching
    the entry or None)}, medians over ROUNDS interleaved rounds."""
    seconds = max(5, SECONDS // 4)
    cases = [("frame pointers (-O2 -fno-omit-frame-pointer)", "nodeprof", exes["recurse_fp"]),
             (BPFTRACE_FP, "bpftrace", exes["recurse_fp"]),
             ("no frame pointers (-O2 -fomit-frame-pointer)", "nodeprof", exes["recurse"])]
    got = {label: [] for label, _, _ in cases}
    for _ in range(ROUNDS):
        for label, tool, exe in cases:
            got[label].append(record_per_sample(tool, exe, seconds, tmp))
    out = {}
    for label, tool, _ in cases:
        rs = got[label]
        med = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
        merged = {}
        for r in rs:
            for s, c in (r[4] or {}).items():
                merged[s] = merged.get(s, 0) + c
        pct = st.share(merged, st.has(st.ENTRY))[2] if tool == "nodeprof" else None
        out[label] = (med(0), med(1), med(2), med(3), frames_median(merged) if merged else None, pct)
    return out


def unwind_memory(exes, text):
    """Section 3: (the agent's unwind series from /metrics or None, its peak RSS in MB). The
    four workloads of section 1 run meanwhile, so their files' tables are built and loaded
    (tables are built for what is sampled, not for every file mapped)."""
    port = np.free_port()
    seconds = max(10, SECONDS // 2)
    busy = [subprocess.Popen(list(map(str, argv)), stdout=subprocess.DEVNULL) for argv in
            ([exes["split"], seconds + 60], [exes["recurse"], 100, seconds + 60], uw.xz_argv(text),
             uw.python_argv(seconds + 60))]
    p = subprocess.Popen([np.NODEPROF, "run", "--http-listen", f"127.0.0.1:{port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(seconds)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        with open(f"/proc/{p.pid}/status") as f:
            hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    finally:
        p.terminate()
        p.wait(timeout=30)
        for b in busy:
            b.kill()
            b.wait()
    series = [line for line in text.splitlines() if not line.startswith("#") and "unwind" in line.split("{")[0].split()[0]]
    return (series or None), hwm / 1024, seconds


def main():
    if os.geteuid() != 0:
        sys.exit("the unwinding benchmark needs root")
    with tempfile.TemporaryDirectory(prefix="bench-unwind-", dir=os.path.join(ROOT, "build")) as tmp:
        exes, text = build(tmp)
        if os.environ.get("UNWIND_BENCH_ONLY") == "per_sample":
            with lib.bpf_stats_held():
                per_sample = bpf_per_sample(exes, tmp)
            for label, (ns, per_kept, runs, n, frames, pct) in per_sample.items():
                print(f"{label}: {ns:.0f} ns per run, {per_kept:.0f} ns per kept sample, {runs} runs, "
                      f"{n} samples kept" + (f", {frames:.0f} median frames, {pct:.1f}% reaching the entry"
                                              if pct is not None else ""))
            return
        with lib.bpf_stats_held():
            whole = whole_stacks(exes, text, tmp)
            per_sample = bpf_per_sample(exes, tmp)
        series, rss_mb, run_seconds = unwind_memory(exes, text)

    rows, tn, tp = [], 0.0, 0.0
    for name, (job, watch) in whole.items():
        _, n_np, pct_np = st.share(job.nodeprof, st.has(st.ENTRY))
        _, n_perf, pct_perf = st.share(job.perf, st.has(st.ENTRY))
        bpf_s = watch.total_ns(name) / 1e9
        if bpf_s <= 0:
            sys.exit(f"{name}: no BPF run time was counted for nodeprof's programs")
        np_cost = job.nodeprof_cpu + bpf_s
        perf_cost = job.perf_record_cpu + job.perf_script_cpu
        tn, tp = tn + np_cost, tp + perf_cost
        rows.append(f"| {name} | {pct_np:.1f}% of {n_np} | {pct_perf:.1f}% of {n_perf} | "
                    f"{job.nodeprof_cpu:.2f} + {bpf_s:.3f} BPF = {np_cost:.2f} s | "
                    f"{job.perf_record_cpu:.2f} + {job.perf_script_cpu:.2f} = {perf_cost:.2f} s | "
                    f"{np_cost / perf_cost:.2f}x |")
    ps = []
    for label, (ns, per_kept, runs, n, frames, pct) in per_sample.items():
        if not runs:
            sys.exit(f"{label}: no BPF runs were counted")
        ps.append(f"| {label} | {ns:.0f} ns | {per_kept:.0f} ns | {runs} | {n} | "
                  + (f"{frames:.0f} | {pct:.1f}% |" if pct is not None else "| |"))
    fp, bt, nofp = per_sample.values()
    fp_ns, bt_kept, nofp_ns, nofp_pct = fp[0], bt[1], nofp[0], nofp[5]
    caveat = "" if nofp_pct >= 99 else (
        f" Only {nofp_pct:.1f}% of the stacks without frame pointers were whole: this is the cost of the walk "
        "nodeprof does today on them, not of a table walk.")
    mem = ("\n".join(f"    {s}" for s in series) if series else
           "not available: nodeprof's /metrics has no series about unwind tables")
    load = os.getloadavg()[2]
    text = f"""# Whole stacks without frame pointers (issue 17)

`python3 bench/run.py unwind_stacks` (`bench/unwind_stacks/bench.py`); {os.cpu_count()} CPUs,
{HZ} Hz, {SECONDS} s per recording (BENCH_SECONDS); {np.nodeprof("--version").stdout.strip()};
load average over the last 15 minutes at the end: {load:.1f} (other work on the machine
shares the CPUs with the workloads and is sampled, as ticks outside the recorded processes).

## Share of samples reaching {st.ENTRY}, and CPU of the whole job

Two busy processes at a time, each recorded by `nodeprof record --pid` and by
`perf record --call-graph dwarf -p` (8 KiB of stack per sample) at the same time. nodeprof:
CPU of its process + run time of its BPF programs. perf: CPU of perf record + perf script.

| process | nodeprof: samples reaching the entry | perf | nodeprof CPU | perf CPU | ratio |
|---|---|---|---|---|---|
{chr(10).join(rows)}
| all | | | {tn:.2f} s | {tp:.2f} s | {tn / tp:.2f}x |

Targets: reaching the entry equal to perf's and >= 99%; cost <= 0.4x perf's.

## BPF time per sample, ~24-frame stacks

The C++ recursion at depth {SHALLOW}, two copies (both CPUs busy), recorded by one `nodeprof record`
(or one `bpftrace -e 'profile:hz:{HZ} /pid == A || pid == B/ {{ @[pid, ustack, kstack] = count(); }}'`):
run time of the perf_event programs / runs of the attached one (it runs on every tick of every
CPU, also when another process is running there; "samples kept" are the recorded ones). The three
recordings take turns, {ROUNDS} rounds of {max(5, SECONDS // 4)} s each, medians shown: the machine's
speed drifts between minutes more than the differences measured here.

| build | BPF per run | BPF per kept sample (all runs' time / samples kept) | runs | samples kept | median frames per stack | reaching the entry |
|---|---|---|---|---|---|---|
{chr(10).join(ps)}

Without frame pointers / with, per run: {nofp_ns / fp_ns:.2f}x (target <= 2x, at whole stacks).{caveat}
With frame pointers, nodeprof / bpftrace per kept sample: {fp[1] / bt_kept:.2f}x (target <= 1x; bpftrace's
walk is the kernel's frame-pointer walk, which nodeprof also did before it had unwind tables).

## Unwind-table memory

`nodeprof run` (embedded default: every process on this machine) for {run_seconds} s while the
four workloads above run: peak RSS
{rss_mb:.1f} MB (target <= 20 MB). Unwind tables in the agent and in BPF maps:
{mem}
"""
    lib.write_result("unwind_stacks", text)


if __name__ == "__main__":
    main()
