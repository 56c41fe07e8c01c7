#!/usr/bin/env python3
"""Local store intake benchmark: what taking one pyroscope.ebpf profile into the UI's store
costs, the engine's built profile read in place (np_store_add_built) against the former path
(the gzipped pprof copied for the store's sink, gunzipped, decoded, reduced: np_store_add), on
the same profile (build/store/bench_intake, built -O2 by mk/store.mk). CPU time and
allocations per profile, best of several rounds. Writes bench/results/store.md.

  python3 bench/store/bench.py [--stacks 2000] [--rounds 7]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import lib  # noqa: E402

BIN = os.path.join(ROOT, "build", "store", "bench_intake")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stacks", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    subprocess.run(["make", "--no-print-directory", "-s", "build/store/bench_intake"], cwd=ROOT, check=True)
    rows = []
    for stacks in sorted({200, args.stacks}):
        p = subprocess.run([BIN, str(stacks), str(args.rounds)], capture_output=True, text=True, check=True)
        rows.append(json.loads(p.stdout))
    table = "\n".join(
        f"| {r['stacks']} stacks, {r['locations']} locations ({r['gz_bytes'] / 1024:.0f} KiB gzipped) "
        f"| {r['old_ns'] / 1e6:.2f} ms, {r['old_allocs']} allocations, {r['old_bytes'] / 1048576:.1f} MiB "
        f"| **{r['new_ns'] / 1e6:.2f} ms, {r['new_allocs']} allocations, {r['new_bytes'] / 1048576:.1f} MiB** "
        f"| {(r['old_ns'] - r['new_ns']) / 1e6:.2f} ms ({100 * (r['old_ns'] - r['new_ns']) / r['old_ns']:.0f} %) "
        f"| {r['encode_ns'] / 1e6:.2f} ms |"
        for r in rows)
    text = f"""# Local store intake benchmark

`python3 bench/store/bench.py --stacks {args.stacks} --rounds {args.rounds}` on {platform.node()} \
({os.cpu_count()} CPUs, {platform.machine()}, kernel {platform.release()}), {datetime.date.today()}.

What runs: `build/store/bench_intake`: one CPU profile of a busy target's interval as the engine
builds it (distinct stacks of 26 frames: 2 kernel frames, 24 native frames of 4 mappings from a
pool of 4,000 functions, one in eight unnamed), taken into the local store over and over (one
thread, CPU time of the process, best of {args.rounds} rounds of 20). Allocations are
malloc/calloc/realloc calls, interposed; MiB is what they asked for.

| profile | before: gzipped bytes copied, gunzip, decode, reduce (`np_store_add`) | now: built profile read in place (`np_store_add_built`) | saved per profile | encode + gzip (paid either way) |
|---|---|---|---|---|
{table}

Per collect interval (15 s by default) the saving is this per target profile. The encode +
gzip column is paid once per profile in both cases: pyroscope.write sends those bytes and
`pyroscope_ebpf_pprof_bytes_total` counts them.
"""
    lib.write_result("store", text)


if __name__ == "__main__":
    main()
