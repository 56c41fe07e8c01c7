#!/usr/bin/env python3
"""Issue 19's benchmark: what naming Python frames costs, on busy interpreters.

Two copies of tests/integration/workloads/python_chain.py (a 10-frame Python chain under
the interpreter's own ~15 native frames, a generator and a method), one per CPU, recorded by
`nodeprof record` at 97 Hz for BENCH_SECONDS (default 20), with Python frames and with
--no-python (the native walk alone), in interleaved rounds, medians reported:
- the BPF program's time per sample (kernel.bpf_stats_enabled, the perf_event programs the
  recording holds, /proc/PID/fdinfo): the native walk plus, with Python, the thread-state
  lookup and one read per Python frame;
- nodeprof's own CPU (wait4 of the recording: user + system), which with Python includes
  finding the interpreter, reading each code object once and naming and merging every
  distinct stack;
- the share of samples carrying the whole Python chain.
The interpreters: Debian's python3.11, and the pyenv root's 3.9 (threads told by the C
library's descriptor) and 3.13 (offsets from _Py_DebugOffsets) where present.
Writes bench/results/python.md."""
import os
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
import stacks as st  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "20"))
HZ = 97
ROUNDS = 3
WORKLOAD = os.path.join(ROOT, "tests", "integration", "workloads", "python_chain.py")
PYENV = os.environ.get("PYENV_ROOT", "/root/.pyenv")
CHAIN = ["<module>", "loop", "gen"] + ["recurse"] * 6
PY_NAMES = set(CHAIN) | {"crunch", "Worker.crunch"}


def interpreters():
    out = {"python3.11 (Debian)": "/usr/bin/python3.11"}
    vdir = os.path.join(PYENV, "versions")
    for v in sorted(os.listdir(vdir)) if os.path.isdir(vdir) else []:
        for want in ("3.9.", "3.13."):
            exe = os.path.join(vdir, v, "bin", "python3")
            if v.startswith(want) and os.access(exe, os.X_OK):
                out[f"python{want[:-1]} (pyenv {v})"] = exe
    return out


def whole(f):
    py = [x for x in f if x in PY_NAMES]
    return py[:-1] == CHAIN and py[-1:] in (["crunch"], ["Worker.crunch"])


def one(exe, python, tmp):
    """(BPF ns per sample, nodeprof CPU s, samples, % whole chains)."""
    procs = [subprocess.Popen([exe, WORKLOAD, "chain", str(SECONDS + 60)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    out = os.path.join(tmp, "py.folded")
    watch = lib.BpfWatch()
    try:
        for p in procs:
            p.stdout.readline()  # "started": the interpreter is up
        argv = [np.NODEPROF, "record", "--duration", f"{SECONDS}s", "--sample-rate", str(HZ), "-o", out]
        for p in procs:
            argv += ["--pid", str(p.pid)]
        if not python:
            argv.append("--no-python")
        ru = lib.record_watched(argv, watch, "x")
    finally:
        for p in procs:
            p.kill()
            p.wait()
            p.stdout.close()
    with open(out) as f:
        stacks = np.parse_folded(f.read())
    n = st.total(stacks)
    return watch.per_sample_ns("x"), ru.cpu_s, n, st.share(stacks, whole)[2]


def main():
    if not os.path.exists(np.NODEPROF):
        sys.exit("build/nodeprof is missing: run `make bench`")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-python-") as tmp, lib.bpf_stats_held():
        for label, exe in interpreters().items():
            got = {True: [], False: []}
            for _ in range(ROUNDS):
                for python in (True, False):
                    got[python].append(one(exe, python, tmp))
            med = {k: [statistics.median(r[i] for r in v) for i in range(4)] for k, v in got.items()}
            rows.append((label, med[True], med[False]))
    lines = [
        "# Python frames: cost on busy interpreters",
        "",
        f"Two copies of python_chain.py (a 10-frame Python chain) per interpreter, one per CPU, "
        f"`nodeprof record` at {HZ} Hz for {SECONDS} s, with Python frames and with `--no-python`, "
        f"{ROUNDS} interleaved rounds, medians. BPF time: the perf_event programs' run time per "
        "sample (kernel.bpf_stats_enabled). nodeprof CPU: the recording process (user + system), "
        "finding the interpreter, reading code objects and naming every distinct stack included.",
        "",
        "| interpreter | BPF ns/sample, Python | BPF ns/sample, native only | Python's share | "
        "nodeprof CPU s, Python | nodeprof CPU s, native only | samples | whole Python chain |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, py, nat in rows:
        lines.append(f"| {label} | {py[0]:.0f} | {nat[0]:.0f} | {py[0] / nat[0]:.2f}x | {py[1]:.3f} | "
                     f"{nat[1]:.3f} | {py[2]:.0f} | {py[3]:.1f}% |")
    lines.append("")
    lib.write_result("python", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
