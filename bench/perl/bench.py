#!/usr/bin/env python3
"""Issue 30's benchmark for Perl: what naming Perl frames costs, on busy interpreters.

Two copies of tests/integration/workloads/perl_chain.pl (a 10-frame Perl chain, <main> to spin,
under perl's own few native frames), one per CPU, under Debian's perl 5.36, recorded by
`nodeprof record` at 97 Hz for BENCH_SECONDS (default 20), with Perl frames and with --no-perl
(the native walk alone), in interleaved rounds, medians reported:
- the BPF program's time per sample (kernel.bpf_stats_enabled, the perf_event programs the
  recording holds): the native walk plus, with Perl, the context stack's walk (one read per
  context, three per sub frame);
- nodeprof's own CPU (wait4 of the recording: user + system), which with Perl includes finding
  the interpreter, reading each sub's name once and naming and merging every distinct stack;
- the share of samples fully named: the whole chain, every frame named (no "[perl]").
Writes bench/results/perl.md."""
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import lib  # noqa: E402
import np  # noqa: E402
import stacks as st  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "20"))
HZ = 97
ROUNDS = 3
PERL = "/usr/bin/perl"
WORKLOAD = os.path.join(ROOT, "tests", "integration", "workloads", "perl_chain.pl")
CHAIN = ["<main>", "main::main", "Worker::crunch"] + ["main::recurse"] * 5 + ["main::leaf", "main::spin"]
NAMES = set(CHAIN) | {"[perl]", "(eval)"}


def whole(f):
    return [x for x in f if x in NAMES] == CHAIN


def one(perl, tmp):
    """(BPF ns per sample, nodeprof CPU s, samples, % fully named)."""
    procs = [subprocess.Popen([PERL, WORKLOAD, "chain", str(SECONDS + 60)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    out = os.path.join(tmp, "perl.folded")
    watch = lib.BpfWatch()
    try:
        for p in procs:
            p.stdout.readline()  # "started": the script runs
        argv = [np.NODEPROF, "record", "--duration", f"{SECONDS}s", "--sample-rate", str(HZ), "-o", out]
        for p in procs:
            argv += ["--pid", str(p.pid)]
        if not perl:
            argv.append("--no-perl")
        ru = lib.record_watched(argv, watch, "x")
    finally:
        for p in procs:
            p.kill()
            p.wait()
            p.stdout.close()
    with open(out) as f:
        stacks = np.parse_folded(f.read())
    return watch.per_sample_ns("x"), ru.cpu_s, st.total(stacks), st.share(stacks, whole)[2]


def main():
    if not os.path.exists(np.NODEPROF):
        sys.exit("build/nodeprof is missing: run `make bench`")
    got = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="bench-perl-") as tmp, lib.bpf_stats_held():
        for _ in range(ROUNDS):
            for perl in (True, False):
                got[perl].append(one(perl, tmp))
    med = {k: [statistics.median(r[i] for r in v) for i in range(4)] for k, v in got.items()}
    pl, nat = med[True], med[False]
    lines = [
        "# Perl frames: cost on busy interpreters",
        "",
        f"Two copies of perl_chain.pl (a 10-frame Perl chain) under Debian's perl 5.36, one per CPU, "
        f"`nodeprof record` at {HZ} Hz for {SECONDS} s, with Perl frames and with `--no-perl`, "
        f"{ROUNDS} interleaved rounds, medians. BPF time: the perf_event programs' run time per "
        "sample (kernel.bpf_stats_enabled). nodeprof CPU: the recording process (user + system), "
        "finding the interpreter, reading sub names and naming every distinct stack included. "
        "Fully named: samples carrying the whole chain with every frame named.",
        "",
        "| interpreter | BPF ns/sample, Perl | BPF ns/sample, native only | Perl's share | "
        "nodeprof CPU s, Perl | nodeprof CPU s, native only | samples | fully named |",
        "|---|---|---|---|---|---|---|---|",
        f"| perl 5.36 (Debian) | {pl[0]:.0f} | {nat[0]:.0f} | {pl[0] / nat[0]:.2f}x | {pl[1]:.3f} | "
        f"{nat[1]:.3f} | {pl[2]:.0f} | {pl[3]:.1f}% |",
        "",
    ]
    lib.write_result("perl", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
