#!/usr/bin/env python3
"""Issue 20's benchmark: what off-CPU time and uprobes cost.

1. Off-CPU: bench/offcpu/switcher.c makes SWITCH_RATE (50,000) voluntary context switches per
   second on this host (two threads handing a byte through pipes); `nodeprof record --off-cpu`
   on it for BENCH_SECONDS (default 10) at off_cpu_threshold 0.01, 0.1 and 1, ROUNDS rounds
   interleaved, medians: the BPF programs' run time (kernel.bpf_stats_enabled, the raw
   tracepoint programs the recording holds: sched_switch on every switch of the machine,
   sys_exit on every system call return) per switch seen and per switch recorded, and
   nodeprof's own CPU (wait4) for the whole recording. The host's switch rate is read from
   /proc/stat meanwhile.
2. Uprobes: bench/offcpu/mallocs.c makes MALLOC_CALLS malloc/free pairs; its own time for them,
   unprobed, under `nodeprof record --uprobe libc:malloc`, and under bpftrace counting the same
   uprobe by user stack (`uprobe:LIBC:malloc /pid == P/ { @[ustack] = count(); }`), in turns;
   the cost per call is the difference to the unprobed time divided by the calls.
Writes bench/results/offcpu.md."""
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
import np  # noqa: E402
import rootfs  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
SWITCH_RATE = 50000
THRESHOLDS = (0.01, 0.1, 1.0)
ROUNDS = 3
MALLOC_CALLS = 2000000
RAW_TRACEPOINT = 17  # BPF_PROG_TYPE_RAW_TRACEPOINT
KPROBE = 2           # BPF_PROG_TYPE_KPROBE (uprobes)


def build(tmp, name):
    exe = os.path.join(tmp, name)
    subprocess.run(["gcc", "-O2", "-fno-omit-frame-pointer", "-pthread", "-o", exe,
                    os.path.join(ROOT, "bench", "offcpu", name + ".c")], check=True)
    return exe


def ctxt():
    with open("/proc/stat") as f:
        return int(re.search(r"^ctxt (\d+)", f.read(), re.M).group(1))


def stat_values(text, metric):
    return {m.group(1): float(m.group(2)) for m in re.finditer(metric + r'\{event="(\w+)"\} ([0-9.e+]+)', text)}


def offcpu_once(switcher, threshold, tmp):
    """(BPF ns per switch seen, per switch recorded, nodeprof CPU s, host switches/s, recorded)."""
    w = subprocess.Popen([switcher, str(SWITCH_RATE), str(SECONDS + 30)], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        out = os.path.join(tmp, "offcpu.folded")
        argv = [np.NODEPROF, "record", "--pid", str(w.pid), "--duration", f"{SECONDS}s", "--off-cpu-threshold",
                str(threshold), "--log-level", "debug", "-o", out]
        c0, t0 = ctxt(), time.time()
        # The debug log (the verifier's included) is large: a file, not a pipe nobody reads meanwhile.
        log = open(os.path.join(tmp, "offcpu.log"), "w+")
        rec = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, text=True)
        costs = {}
        while True:
            got, status, ru = os.wait4(rec.pid, os.WNOHANG)
            if got:
                break
            c = lib.bpf_fd_costs(rec.pid)
            if c:
                costs = c
            time.sleep(0.05)
        rate = (ctxt() - c0) / (time.time() - t0)
        log.seek(0)
        err = log.read()
        log.close()
        if os.waitstatus_to_exitcode(status):
            sys.exit(f"nodeprof record failed: {err}")
    finally:
        w.kill()
        w.wait()
    ns = sum(t for typ, _, t in costs.values() if typ == RAW_TRACEPOINT)
    switches = max((cnt for typ, cnt, _ in costs.values() if typ == RAW_TRACEPOINT), default=0)
    recorded = sum(int(v) for v in re.findall(r"switch_recorded=(\d+)", err)) or None
    with open(out) as f:
        kept = sum(int(line.rsplit(" ", 1)[1]) for line in f if line.strip())
    return (ns / switches if switches else float("nan"), ns / recorded if recorded else float("nan"),
            ru.ru_utime + ru.ru_stime, rate, recorded or 0, kept / 1e9)


def mallocs_once(exe, tool, libc, tmp):
    """The workload's own nanoseconds for MALLOC_CALLS calls under tool (None, nodeprof, bpftrace)."""
    w = subprocess.Popen([exe, str(MALLOC_CALLS), "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    rec = None
    try:
        if tool == "nodeprof":
            rec = subprocess.Popen([np.NODEPROF, "record", "--pid", str(w.pid), "--duration", "120s", "--uprobe",
                                    f"{libc}:malloc", "-o", os.path.join(tmp, "u.folded")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            ready = "recording"
        elif tool == "bpftrace":
            rec = subprocess.Popen(["bpftrace", "-e", f"uprobe:{libc}:malloc /pid == {w.pid}/ {{ @[ustack] = count(); }}"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
            ready = None
        if rec:
            if ready:
                line = rec.stderr.readline()
                if ready not in line:
                    sys.exit(f"nodeprof record: {line}{rec.stderr.read()}")
            else:
                # bpftrace says nothing when attached: wait until it holds its uprobe program.
                deadline = time.time() + 30
                while time.time() < deadline and not any(t == KPROBE for t, _, _ in lib.bpf_fd_costs(rec.pid).values()):
                    time.sleep(0.05)
                time.sleep(0.5)
        w.stdin.write("go\n")
        w.stdin.flush()
        ns = int(w.stdout.readline())
    finally:
        w.kill()
        w.wait()
        if rec:
            rec.terminate()
            rec.wait()
    return ns


def main():
    if not os.path.exists(np.NODEPROF):
        sys.exit("build/nodeprof is missing: run `make bench`")
    lines = ["# Off-CPU time and uprobes: cost", ""]
    with tempfile.TemporaryDirectory(prefix="bench-offcpu-") as tmp, lib.bpf_stats_held():
        switcher, mallocs = build(tmp, "switcher"), build(tmp, "mallocs")
        libc = next(p for p in rootfs.library_deps(mallocs) if os.path.basename(p) == "libc.so.6")
        got = {t: [] for t in THRESHOLDS}
        for _ in range(ROUNDS):
            for t in THRESHOLDS:
                got[t].append(offcpu_once(switcher, t, tmp))
        lines += [
            f"Off-CPU: switcher.c at {SWITCH_RATE} voluntary switches/s, `nodeprof record --off-cpu-threshold T` "
            f"for {SECONDS} s, {ROUNDS} interleaved rounds, medians. BPF: the raw tracepoint programs' run time "
            "(sched_switch runs on every switch of the machine, sys_exit on every system call return).",
            "",
            "| threshold | host switches/s | switches recorded | BPF ns per switch (all programs / sched_switch runs) | "
            "BPF ns per recorded switch | nodeprof CPU s | off-CPU time recorded (s) |",
            "|---|---|---|---|---|---|---|",
        ]
        for t in THRESHOLDS:
            med = [statistics.median(r[i] for r in got[t]) for i in range(6)]
            lines.append(f"| {t} | {med[3]:.0f} | {med[4]:.0f} | {med[0]:.0f} | {med[1]:.0f} | {med[2]:.3f} | "
                         f"{med[5]:.2f} |")
        runs = {k: [] for k in ("plain", "nodeprof", "bpftrace")}
        for _ in range(ROUNDS):
            runs["plain"].append(mallocs_once(mallocs, None, libc, tmp))
            runs["nodeprof"].append(mallocs_once(mallocs, "nodeprof", libc, tmp))
            runs["bpftrace"].append(mallocs_once(mallocs, "bpftrace", libc, tmp))
        plain = statistics.median(runs["plain"])
        lines += [
            "",
            f"Uprobes: mallocs.c, {MALLOC_CALLS} malloc/free pairs (main -> work -> malloc), its own time, "
            f"{ROUNDS} rounds in turns, medians; per call = (probed - unprobed) / calls.",
            "",
            "| probe | workload ms | ns per probed call | ratio to bpftrace |",
            "|---|---|---|---|",
            f"| none | {plain / 1e6:.1f} | | |",
        ]
        per = {k: (statistics.median(runs[k]) - plain) / MALLOC_CALLS for k in ("nodeprof", "bpftrace")}
        lines.append(f"| `nodeprof record --uprobe` (whole user stack, unwind tables) | "
                     f"{statistics.median(runs['nodeprof']) / 1e6:.1f} | {per['nodeprof']:.0f} | "
                     f"{per['nodeprof'] / per['bpftrace']:.2f}x |")
        lines.append(f"| `bpftrace uprobe ... @[ustack] = count()` (frame pointers) | "
                     f"{statistics.median(runs['bpftrace']) / 1e6:.1f} | {per['bpftrace']:.0f} | 1.00x |")
    lib.write_result("offcpu", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
