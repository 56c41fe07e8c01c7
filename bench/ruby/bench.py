#!/usr/bin/env python3
"""Issue 30's benchmark: what naming Ruby frames costs, on busy interpreters.

Two copies of tests/integration/workloads/ruby_chain.rb (a 13-frame Ruby chain with a class
method, a C method and a block, under the VM's own native frames), one per CPU, recorded by
`nodeprof record` at 97 Hz for BENCH_SECONDS (default 20), with Ruby frames and with --no-ruby
(the native walk alone), in interleaved rounds, medians reported:
- the BPF program's time per sample (kernel.bpf_stats_enabled, the perf_event programs the
  recording holds, /proc/PID/fdinfo): the native walk plus, with Ruby, finding the execution
  context and two to five reads per Ruby frame;
- nodeprof's own CPU (wait4 of the recording: user + system), which with Ruby includes finding
  the VM, reading each iseq and method entry once and naming and merging every distinct stack;
- the share of samples carrying the whole Ruby chain (with YJIT, whose code calls the leaf's
  Integer#* as a C method, that method's frame may follow it), and the share of Ruby frames fully named
  (not "[ruby]").
The interpreter: Debian's ruby3.1, with and without YJIT. Writes bench/results/ruby.md."""
import os
import re
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
WORKLOAD = os.path.join(ROOT, "tests", "integration", "workloads", "ruby_chain.rb")
CHAIN = ["<main>", "Worker.run", "Worker#crunch", "Integer#times", "block in Worker#crunch"] + \
    ["Worker#recurse"] * 6 + ["Worker#leaf"]
RUBY_NAME = re.compile(r"^(<main>|\[ruby\]|block (?:\(\d+ levels\) )?in .*|[A-Z][A-Za-z0-9_:]*[#.](?:[a-z_][A-Za-z0-9_?!=]*|[-+*/%<>=!~^&|\[\]]+))$")


def ruby_frames(f):
    return [x for x in f if RUBY_NAME.match(x)]


def one(argv_ruby, ruby, tmp):
    """(BPF ns per sample, nodeprof CPU s, samples, % whole chains, % Ruby frames named)."""
    procs = [subprocess.Popen(argv_ruby + [WORKLOAD, "chain", str(SECONDS + 60)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    out = os.path.join(tmp, "rb.folded")
    watch = lib.BpfWatch()
    try:
        for p in procs:
            p.stdout.readline()  # "started": the VM is up
        argv = [np.NODEPROF, "record", "--duration", f"{SECONDS}s", "--sample-rate", str(HZ), "-o", out]
        for p in procs:
            argv += ["--pid", str(p.pid)]
        if not ruby:
            argv.append("--no-ruby")
        ru = lib.record_watched(argv, watch, "x")
    finally:
        for p in procs:
            p.kill()
            p.wait()
            p.stdout.close()
    with open(out) as f:
        stacks = np.parse_folded(f.read())
    n = st.total(stacks)
    frames = sum(len(ruby_frames(st.frames(s))) * c for s, c in stacks.items())
    unnamed = sum(ruby_frames(st.frames(s)).count("[ruby]") * c for s, c in stacks.items())
    named = 100.0 * (frames - unnamed) / frames if frames else 0.0
    return (watch.per_sample_ns("x"), ru.cpu_s, n,
            st.share(stacks, lambda f: ruby_frames(f) in (CHAIN, CHAIN + ["Integer#*"]))[2], named)


def main():
    if not os.path.exists(np.NODEPROF):
        sys.exit("build/nodeprof is missing: run `make bench`")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-ruby-") as tmp, lib.bpf_stats_held():
        for label, argv in (("ruby3.1 (Debian)", ["/usr/bin/ruby3.1"]),
                            ("ruby3.1 --yjit (Debian)", ["/usr/bin/ruby3.1", "--yjit"])):
            got = {True: [], False: []}
            for _ in range(ROUNDS):
                for ruby in (True, False):
                    got[ruby].append(one(argv, ruby, tmp))
            med = {k: [statistics.median(r[i] for r in v) for i in range(5)] for k, v in got.items()}
            rows.append((label, med[True], med[False]))
    lines = [
        "# Ruby frames: cost on busy interpreters",
        "",
        f"Two copies of ruby_chain.rb (a 12-frame Ruby chain) per interpreter, one per CPU, "
        f"`nodeprof record` at {HZ} Hz for {SECONDS} s, with Ruby frames and with `--no-ruby`, "
        f"{ROUNDS} interleaved rounds, medians. BPF time: the perf_event programs' run time per "
        "sample (kernel.bpf_stats_enabled). nodeprof CPU: the recording process (user + system), "
        "finding the VM, reading iseqs and method entries and naming every distinct stack included. "
        "Named: the share of Ruby frames given a name (not `[ruby]`).",
        "",
        "| interpreter | BPF ns/sample, Ruby | BPF ns/sample, native only | Ruby's share | "
        "nodeprof CPU s, Ruby | nodeprof CPU s, native only | samples | whole Ruby chain | named |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, rb, nat in rows:
        lines.append(f"| {label} | {rb[0]:.0f} | {nat[0]:.0f} | {rb[0] / nat[0]:.2f}x | {rb[1]:.3f} | "
                     f"{nat[1]:.3f} | {rb[2]:.0f} | {rb[3]:.1f}% | {rb[4]:.1f}% |")
    lines.append("")
    lib.write_result("ruby", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
