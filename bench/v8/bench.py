#!/usr/bin/env python3
"""Issue 28's benchmark: what walking and naming JavaScript frames costs, on busy Node.js.

One Node 20 process per round running tests/integration/workloads/js/chain.js (main ->
Worker.crunch -> an anonymous function -> recurse x6 -> leaf, optimised by TurboFan after a
BENCH_WARMUP-second warm-up), recorded by `nodeprof record` at 97 Hz for BENCH_SECONDS (default
20), with JavaScript frames and with --no-v8 (the native walk of the same process, which steps
V8's frames with frame pointers and names them after V8's builtins or "[unknown]"), in
interleaved rounds, medians reported:
- the BPF program's time per sample (kernel.bpf_stats_enabled): the native walk plus, with V8,
  the V8 step of every frame no unwind table covers;
- nodeprof's own CPU (wait4: user + system) and peak memory (ru_maxrss, through build/bench-measure);
- the share of the busy thread's samples (the main thread's below V8's Execution entry) whose
  JavaScript frames are all named: the chain whole, nothing "[unknown]" or "[unknown js]";
- memory with more Node processes: peak RSS recording 8 processes against 1, and the name
  cache's bytes per process (names are kept per process: `--log-level debug`'s name_bytes).
Writes bench/results/v8.md."""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import lib  # noqa: E402
import nodejs  # noqa: E402
import np  # noqa: E402
import stacks as st  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "20"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "2"))
HZ = 97
ROUNDS = 3
MANY = 8
EXECUTION = "_ZN2v88internal9Execution"  # v8::internal::Execution::*: where C++ enters JavaScript
CHAIN = nodejs.CHAIN_NAMES[::-1]


def named(f):
    """The chain, whole from the process's entry, and no frame left unnamed."""
    return (np.contains_run(f, CHAIN) and f[0] in ("_start", st.ENTRY) and "[unknown]" not in f
            and "[unknown js]" not in f)


def start(n):
    procs = [subprocess.Popen([nodejs.NODE, nodejs.CHAIN], stdout=subprocess.PIPE, text=True) for _ in range(n)]
    for p in procs:
        nodejs.read_line(p)
    time.sleep(WARMUP)
    return procs


def record(procs, with_v8, tmp, watch=None):
    """(BPF ns per sample or 0, nodeprof CPU s, peak RSS MiB, stacks, name cache bytes) of one
    recording of procs."""
    out = os.path.join(tmp, "v8.folded")
    log = os.path.join(tmp, "v8.log")
    argv = [np.NODEPROF, "record", "--duration", f"{SECONDS}s", "--sample-rate", str(HZ), "--demangle", "none",
            "--no-kernel", "-o", out, "--log-level", "debug"]
    for p in procs:
        argv += ["--pid", str(p.pid)]
    if not with_v8:
        argv.append("--no-v8")
    watch = watch or lib.BpfWatch()
    ru = lib.record_watched(argv, watch, "x", log)
    with open(out) as f:
        stacks = np.parse_folded(f.read())
    with open(log) as f:
        m = re.search(r"runtime=v8 .* name_bytes=(\d+)", f.read())
    return watch.per_sample_ns("x"), ru.cpu_s, ru.ru_maxrss / 1024, stacks, int(m.group(1)) if m else 0


def stop(procs):
    for p in procs:
        p.kill()
        p.wait()
        p.stdout.close()


def one(with_v8, tmp):
    """(BPF ns per sample, nodeprof CPU s, peak RSS MiB, samples, % busy fully named)."""
    procs = start(1)
    try:
        ns, cpu, rss, stacks, _ = record(procs, with_v8, tmp)
    finally:
        stop(procs)
    busy = lambda f: any(x.startswith("_ZN4node5Start") for x in f) and any(x.startswith(EXECUTION) for x in f)  # noqa: E731
    return ns, cpu, rss, st.total(stacks), st.share(stacks, named, among=busy)[2]


def many(tmp):
    """(peak RSS MiB, name cache bytes) of a recording of MANY processes with V8 frames."""
    procs = start(MANY)
    try:
        r = record(procs, True, tmp)
        return r[2], r[4]
    finally:
        stop(procs)


def main():
    if not os.path.exists(np.NODEPROF):
        sys.exit("build/nodeprof is missing: run `make bench`")
    with tempfile.TemporaryDirectory(prefix="bench-v8-") as tmp, lib.bpf_stats_held():
        got = {True: [], False: []}
        for _ in range(ROUNDS):
            for with_v8 in (True, False):
                got[with_v8].append(one(with_v8, tmp))
        runs = [many(tmp) for _ in range(ROUNDS)]
        rss_many = statistics.median(r[0] for r in runs)
        names_many = statistics.median(r[1] for r in runs)
    med = {k: [statistics.median(r[i] for r in v) for i in range(5)] for k, v in got.items()}
    v, nat = med[True], med[False]
    lines = [
        "# JavaScript frames: cost on busy Node.js",
        "",
        f"One Node 20 process (chain.js: main -> Worker.crunch -> an anonymous function -> recurse x6 -> leaf, "
        f"optimised by TurboFan, warmed up {WARMUP} s), `nodeprof record` at {HZ} Hz for {SECONDS} s, with "
        "JavaScript frames and with `--no-v8` (the native walk of the same process, which steps V8's frames with "
        f"frame pointers and names them after V8's builtins or `[unknown]`), {ROUNDS} interleaved rounds, "
        "medians. BPF time: the perf_event programs' run time per sample (kernel.bpf_stats_enabled). nodeprof CPU "
        "and peak RSS: the recording process. Busy samples: the main thread's below V8's Execution entry; fully "
        "named: the chain whole from `_start`, with no frame `[unknown]` or `[unknown js]`.",
        "",
        "| | BPF ns/sample | nodeprof CPU s | nodeprof peak RSS MiB | samples | busy samples fully named |",
        "|---|---|---|---|---|---|",
        f"| JavaScript frames | {v[0]:.0f} | {v[1]:.3f} | {v[2]:.1f} | {v[3]:.0f} | {v[4]:.1f}% |",
        f"| --no-v8 | {nat[0]:.0f} | {nat[1]:.3f} | {nat[2]:.1f} | {nat[3]:.0f} | {nat[4]:.1f}% |",
        "",
        f"V8 walk / native walk, BPF time per sample: {v[0] / nat[0]:.2f}x.",
        "",
        f"Memory with more Node processes: recording {MANY} such processes peaks at {rss_many:.1f} MiB "
        f"(one: {v[2]:.1f} MiB; the peak is the node binary's tables, built once per build ID); the name cache "
        f"holds {names_many / MANY / 1024:.1f} KiB per process (names are kept per process incarnation).",
        "",
    ]
    lib.write_result("v8", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
