#!/usr/bin/env python3
"""Issue 30's benchmark for PHP: what naming PHP frames costs, on busy PHP processes.

Two copies of tests/integration/workloads/php_chain.php (a 12-frame PHP chain: main ->
Worker::crunch -> recurse x6 -> array_map -> {closure} -> leaf -> spin, under the CLI's own
native frames), one per CPU, recorded by `nodeprof record` at 97 Hz for BENCH_SECONDS (default
20), with PHP frames and with --no-php (the native walk alone), in interleaved rounds, medians:
- the BPF program's time per sample (kernel.bpf_stats_enabled, the perf_event programs the
  recording holds): the native walk plus, with PHP, three reads per PHP frame;
- nodeprof's own CPU (wait4 of the recording: user + system), which with PHP includes finding
  the engine, reading each function once and naming and merging every distinct stack;
- the share of samples carrying the whole chain with every PHP frame named.
The processes: Debian's php8.2 CLI without opcache, and with opcache's tracing JIT.
Writes bench/results/php.md."""
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
PHP = "/usr/bin/php8.2"
WORKLOAD = os.path.join(ROOT, "tests", "integration", "workloads", "php_chain.php")
CHAIN = ["main", "Worker::crunch"] + ["recurse"] * 6 + ["array_map", "{closure}", "leaf", "spin"]
PHP_NAMES = set(CHAIN) | {"[php]"}
SETUPS = {
    "php8.2 CLI (Debian), no opcache": [PHP, "-n"],
    "php8.2 CLI (Debian), opcache tracing JIT": [PHP, "-n", "-d", "zend_extension=opcache.so", "-d",
                                                 "opcache.enable_cli=1", "-d", "opcache.jit_buffer_size=32M",
                                                 "-d", "opcache.jit=tracing"],
}


def whole(f):
    return [x for x in f if x in PHP_NAMES] == CHAIN


def one(cmd, php, tmp):
    """(BPF ns per sample, nodeprof CPU s, samples, % whole named chains)."""
    procs = [subprocess.Popen(cmd + [WORKLOAD, "chain", str(SECONDS + 60)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    out = os.path.join(tmp, "php.folded")
    watch = lib.BpfWatch()
    try:
        for p in procs:
            p.stdout.readline()  # "started": the script runs
        argv = [np.NODEPROF, "record", "--duration", f"{SECONDS}s", "--sample-rate", str(HZ), "-o", out]
        for p in procs:
            argv += ["--pid", str(p.pid)]
        if not php:
            argv.append("--no-php")
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
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-php-") as tmp, lib.bpf_stats_held():
        for label, cmd in SETUPS.items():
            got = {True: [], False: []}
            for _ in range(ROUNDS):
                for php in (True, False):
                    got[php].append(one(cmd, php, tmp))
            med = {k: [statistics.median(r[i] for r in v) for i in range(4)] for k, v in got.items()}
            rows.append((label, med[True], med[False]))
    lines = [
        "# PHP frames: cost on busy PHP processes",
        "",
        f"Two copies of php_chain.php (a 12-frame PHP chain) per setup, one per CPU, `nodeprof record` at "
        f"{HZ} Hz for {SECONDS} s, with PHP frames and with `--no-php`, {ROUNDS} interleaved rounds, medians. "
        "BPF time: the perf_event programs' run time per sample (kernel.bpf_stats_enabled). nodeprof CPU: "
        "the recording process (user + system), finding the engine, reading functions and naming every "
        "distinct stack included. Whole: samples whose PHP frames are the whole chain, every one named.",
        "",
        "| setup | BPF ns/sample, PHP | BPF ns/sample, native only | PHP's share | "
        "nodeprof CPU s, PHP | nodeprof CPU s, native only | samples | whole, named PHP chain |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, ph, nat in rows:
        lines.append(f"| {label} | {ph[0]:.0f} | {nat[0]:.0f} | {ph[0] / nat[0]:.2f}x | {ph[1]:.3f} | "
                     f"{nat[1]:.3f} | {ph[2]:.0f} | {ph[3]:.1f}% |")
    lines.append("")
    lib.write_result("php", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
