#!/usr/bin/env python3
"""Issue 27's benchmark: what walking (and naming) Java frames costs, on a busy JVM.

One JVM per round running tests/integration/workloads/java/WalkChain.java (Debian's OpenJDK 17,
warmed up BENCH_WARMUP seconds so the chain is compiled), recorded by `nodeprof record` at 97
Hz for BENCH_SECONDS (default 20), with Java frames and with --no-java (the native walk of the
same JVM, which stops at the first Java frame), in interleaved rounds, medians reported:
- the BPF program's time per sample (kernel.bpf_stats_enabled, the perf_event programs the
  recording holds): the native walk plus, with Java, the HotSpot step of every Java frame;
- nodeprof's own CPU (wait4 of the recording: user + system) and peak memory (ru_maxrss, through build/bench-measure),
  which with Java include finding the JVM and reading its self-description;
- the share of the busy thread's samples (those with Java frames) walked whole (from
  start_thread through JavaCalls::call_helper into Java frames, nothing unnamed on the way),
  and the share fully named (no Java frame left "[unknown java]").
Writes bench/results/java.md."""
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
WARMUP = int(os.environ.get("BENCH_WARMUP", "5"))
HZ = 97
ROUNDS = 3
JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
SOURCE = os.path.join(ROOT, "tests", "integration", "workloads", "java", "WalkChain.java")
UNNAMED = "[unknown java]"
CALL_HELPER = "_ZN9JavaCalls11call_helper"


def java(f):
    """The Java frames of a stack: every frame the tracker made of two tagged words is named as
    a Java method or "[unknown java]"; libjvm's native frames are mangled (--demangle none)."""
    start = next((i for i, x in enumerate(f) if x.startswith(CALL_HELPER)), -1)
    if start < 0:
        return []
    return [x for x in f[start + 1:] if x == UNNAMED or ("." in x and not x.startswith("_Z"))]


def whole(f):
    root = f[1:] if f and f[0] == "clone3" else f
    return bool(root) and root[0] == "start_thread" and bool(java(f)) and "[unknown]" not in f


def one(classes, with_java, tmp):
    """(BPF ns per sample, nodeprof CPU s, peak RSS MiB, samples, % busy whole, % busy named)."""
    p = subprocess.Popen([os.path.join(JDK, "bin", "java"), "-cp", classes, "WalkChain"], stdout=subprocess.PIPE,
                         text=True)
    out = os.path.join(tmp, "java.folded")
    watch = lib.BpfWatch()
    try:
        p.stdout.readline()  # "ready"
        time.sleep(WARMUP)
        argv = [np.NODEPROF, "record", "--duration", f"{SECONDS}s", "--sample-rate", str(HZ), "--pid", str(p.pid),
                "--demangle", "none", "-o", out]
        if not with_java:
            argv.append("--no-java")
        ru = lib.record_watched(argv, watch, "x")
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
    with open(out) as f:
        stacks = np.parse_folded(f.read())
    busy = lambda f: CALL_HELPER in ";".join(f) and len(f) > 8  # noqa: E731
    named = lambda f: whole(f) and UNNAMED not in f  # noqa: E731
    return (watch.per_sample_ns("x"), ru.cpu_s, ru.ru_maxrss / 1024, st.total(stacks),
            st.share(stacks, whole, among=busy)[2], st.share(stacks, named, among=busy)[2])


def main():
    if not os.path.exists(np.NODEPROF):
        sys.exit("build/nodeprof is missing: run `make bench`")
    with tempfile.TemporaryDirectory(prefix="bench-java-") as tmp, lib.bpf_stats_held():
        classes = os.path.join(tmp, "classes")
        subprocess.run([os.path.join(JDK, "bin", "javac"), "-d", classes, SOURCE], check=True)
        got = {True: [], False: []}
        for _ in range(ROUNDS):
            for with_java in (True, False):
                got[with_java].append(one(classes, with_java, tmp))
        med = {k: [statistics.median(r[i] for r in v) for i in range(6)] for k, v in got.items()}
    j, nat = med[True], med[False]
    lines = [
        "# Java frames: cost on a busy JVM",
        "",
        f"One JVM (OpenJDK 17, WalkChain.java: Thread.run -> lambda -> Worker.crunch -> recurse x5 -> leaf -> "
        f"spin, warmed up {WARMUP} s), `nodeprof record` at {HZ} Hz for {SECONDS} s, with Java frames and with "
        f"`--no-java` (the native walk of the same JVM, which stops at the first Java frame), {ROUNDS} interleaved "
        "rounds, medians. BPF time: the perf_event programs' run time per sample (kernel.bpf_stats_enabled). "
        "nodeprof CPU and peak RSS: the recording process. Busy samples: those that reach libjvm's "
        "JavaCalls::call_helper; whole: from start_thread into Java frames with no frame unnamed; named: whole "
        "and no Java frame left `[unknown java]`.",
        "",
        "| | BPF ns/sample | nodeprof CPU s | nodeprof peak RSS MiB | samples | busy samples whole | "
        "busy samples fully named |",
        "|---|---|---|---|---|---|---|",
        f"| Java frames | {j[0]:.0f} | {j[1]:.3f} | {j[2]:.1f} | {j[3]:.0f} | {j[4]:.1f}% | {j[5]:.1f}% |",
        f"| --no-java | {nat[0]:.0f} | {nat[1]:.3f} | {nat[2]:.1f} | {nat[3]:.0f} | {nat[4]:.1f}% | {nat[5]:.1f}% |",
        "",
        f"Java walk / native walk, BPF time per sample: {j[0] / nat[0]:.2f}x.",
        "",
    ]
    lib.write_result("java", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
