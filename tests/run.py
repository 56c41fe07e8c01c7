#!/usr/bin/env python3
"""Runs every nodeprof test and prints one summary line: "N passed, N failed".

Suites, in order:
  unit         build/tests/test_*            (cmocka, TAP output, one result per test case)
  asan         build/asan/tests/test_*       (the same tests under AddressSanitizer + UBSan)
  valgrind     build/tests/test_*            (the same tests under Valgrind's memcheck, for reads of
                                              uninitialised memory, which ASan does not see)
  fuzz         build/fuzz/fuzzers/fuzz_*     (libFuzzer, a short run each; `make fuzz` runs long)
  integration  tests/integration/test_*.py   (unittest modules; real BPF, real processes, test servers)

A test module that mostly waits (e.g. a 60 s server outage) and is safe beside anything
else says so with a line `BACKGROUND = True`; it starts before the unit suites and runs
alongside them (and the rest). Every other integration module runs one at a time (CPU-split
assertions need a quiet machine).

Nothing is skipped for want of root or BPF: those tests fail instead, so CI cannot pass
without exercising them. Options: --only SUITE[,SUITE], -k SUBSTRING (filters test files),
--fuzz-seconds N, --fuzz-runs N (a smoke run stops after N mutated inputs or N seconds,
whichever comes first), --fuzz-record FILE (`make fuzz`: the campaign's statistics and findings
per target, as a Markdown table, e.g. bench/results/fuzz.md).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITES = ["unit", "asan", "valgrind", "fuzz", "integration"]


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def record(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}", flush=True)
        else:
            self.failed += 1
            self.failures.append(name)
            print(f"FAIL {name}", flush=True)
            if detail:
                print("\n".join("    " + line for line in detail.rstrip().splitlines()[-60:]), flush=True)


# Memcheck on the plain unit build: leaks are ASan's job; any error fails the binary.
VALGRIND = ["valgrind", "-q", "--error-exitcode=99", "--leak-check=no",
            "--suppressions=" + os.path.join(ROOT, "tests/valgrind.supp")]


# Unit tests left out of the valgrind suite (they run in "unit" and "asan" like every other):
VALGRIND_WITHOUT = {
    # 720 profiles to fill the store's budget many times over: 82 s under Valgrind, where the
    # RSS it checks means nothing; test_store runs the same store code under Valgrind.
    "test_store_long",
    # Valgrind's model of the bpf() syscall reads attribute fields libbpf leaves out (false
    # reports) and gets map iteration wrong.
    "test_unwind_loader",
    "test_runtime_set",  # the same, for the rt_jit_procs map it creates
    "test_runtime_procs",  # the same, for the walker map it creates
    # Symbolizes its own process through /proc/self/maps, which under Valgrind describe
    # Valgrind's loader and its copy of the program, not what the test expects.
    "test_sym_symbolizer",
    # Its retention cases insert millions of samples: five minutes under Valgrind.
    "test_store",
}


def exec_tap(argv, timeout):
    """Runs one TAP test binary: the CompletedProcess, or None after timeout seconds."""
    env = dict(os.environ, CMOCKA_MESSAGE_OUTPUT="TAP")
    # ASan reports leaks at exit; halt on the first UBSan finding so it counts as a failure.
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None


def run_tap(binary, label, tally, timeout, p=None):
    """Records the results of a TAP test binary (run here, or already run: p)."""
    if p is None:
        p = exec_tap([binary], timeout)
    if p is None:
        tally.record(f"{label} (timeout after {timeout}s)", False)
        return
    seen = 0
    last_detail = []
    lines = p.stdout.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(ok|not ok) \d+ - (.*)$", line)
        if not m:
            continue
        seen += 1
        detail = ""
        if m.group(1) == "not ok":
            j = i + 1
            last_detail = []
            while j < len(lines) and lines[j].startswith("#"):
                last_detail.append(lines[j])
                j += 1
            detail = "\n".join(last_detail)
        tally.record(f"{label}/{m.group(2)}", m.group(1) == "ok", detail)
    if p.returncode != 0 and (seen == 0 or "not ok" not in p.stdout):
        # A crash, a sanitizer report or a leak after the cases passed.
        tally.record(f"{label} (exit status {p.returncode})", False, p.stdout[-3000:] + p.stderr[-6000:])
    elif seen == 0:
        tally.record(f"{label} (no test cases ran)", False, p.stderr[-3000:])


def suite_unit(tally, build, label, filt, lanes=1):
    """The unit binaries of build, lanes at a time (the sanitizer build's are single-threaded and
    several times slower: two at a time, as under Valgrind)."""
    from concurrent.futures import ThreadPoolExecutor
    bins = sorted(glob.glob(os.path.join(ROOT, build, "tests", "test_*")))
    if not bins:
        tally.record(f"{label}: no unit test binaries in {build}/tests (did the build run?)", False)
    bins = [b for b in bins if not filt or filt in os.path.basename(b)]
    with ThreadPoolExecutor(max_workers=lanes) as pool:
        runs = [pool.submit(exec_tap, [b], 300) for b in bins]
        for b, r in zip(bins, runs):
            run_tap(b, f"{label}/{os.path.basename(b)}", tally, 300, r.result())


def suite_valgrind(tally, filt):
    """The unit binaries under Valgrind, two at a time (each is single-threaded and slow there)."""
    from concurrent.futures import ThreadPoolExecutor
    bins = [b for b in sorted(glob.glob(os.path.join(ROOT, "build", "tests", "test_*")))
            if (not filt or filt in os.path.basename(b)) and os.path.basename(b) not in VALGRIND_WITHOUT]
    if not bins and not filt:
        tally.record("valgrind: no unit test binaries in build/tests (did the build run?)", False)
    timeout = 600
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [pool.submit(exec_tap, VALGRIND + [b], timeout) for b in bins]
        for b, r in zip(bins, runs):
            run_tap(b, f"valgrind/{os.path.basename(b)}", tally, timeout, r.result())


FUZZ_STAT = re.compile(r"^stat::(\w+):\s+(\d+)", re.M)
FUZZ_PROGRESS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/(\S+)", re.M)


def fuzz_summary(name, seconds, returncode, stderr, artifacts):
    """What one libFuzzer run did, from its final statistics (-print_final_stats=1) and its
    last progress line (cov: edges covered, ft: features)."""
    stats = {k: int(v) for k, v in FUZZ_STAT.findall(stderr)}
    progress = FUZZ_PROGRESS.findall(stderr)
    last = progress[-1] if progress else None
    found = [ln.strip() for ln in stderr.splitlines() if ln.startswith("SUMMARY: ")]
    crash_files = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(artifacts, "*")))
    return {
        "name": name, "seconds": seconds, "exit": returncode,
        "executions": stats.get("number_of_executed_units", int(last[0]) if last else 0),
        "exec_per_sec": stats.get("average_exec_per_sec", 0),
        "cov": int(last[1]) if last else 0, "ft": int(last[2]) if last else 0,
        "corpus": f"{last[3]} ({last[4]})" if last else "?",
        "new_units": stats.get("new_units_added", 0), "peak_rss_mb": stats.get("peak_rss_mb", 0),
        "findings": found or ([f"exit status {returncode}"] if returncode else []),
        "artifacts": crash_files,
    }


def write_fuzz_record(path, runs, seconds):
    """bench/results/fuzz.md: regenerated by every `make fuzz` (never edited by hand)."""
    lines = [
        "# Fuzzing campaign",
        "",
        f"Written by `make fuzz FUZZ_SECONDS={seconds}` (tests/run.py --fuzz-record) on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, one target at a time.",
        "Each target runs for FUZZ_SECONDS from its seed corpus (tests/fuzz/corpus/NAME) plus the corpus kept by",
        "earlier runs (build/fuzz/corpus/NAME), built with ASan + UBSan and -fno-sanitize-recover=all, so",
        "undefined behaviour stops the run as a finding. cov = edges covered, ft = features (libFuzzer's final",
        "counts); findings are the sanitizer or libFuzzer summaries, with the input saved under",
        "build/fuzz/artifacts/NAME/.",
        "",
        "| target | seconds | executions | exec/s | cov | ft | corpus (units) | new units | peak RSS MB | findings |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in runs:
        lines.append(f"| {r['name']} | {r['seconds']} | {r['executions']} | {r['exec_per_sec']} | {r['cov']} | "
                     f"{r['ft']} | {r['corpus']} | {r['new_units']} | {r['peak_rss_mb']} | "
                     f"{len(r['findings']) or 'none'} |")
    found = [r for r in runs if r["findings"]]
    lines += ["", "## Findings", ""]
    if not found:
        lines.append("None: every target ran its full time without a sanitizer report, crash, leak, timeout or "
                     "out-of-memory.")
    for r in found:
        lines.append(f"- **{r['name']}** (exit {r['exit']}): " + "; ".join(r["findings"]) +
                     (f" — input: {', '.join(r['artifacts'])}" if r["artifacts"] else ""))
    with open(os.path.join(ROOT, path), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"fuzz campaign recorded in {path}", flush=True)


def run_fuzzer(f, seconds, env, runs=0):
    """One libFuzzer run of f for seconds (and at most runs inputs after the seeds, when runs > 0):
    (ok, failure detail, summary for the record)."""
    name = os.path.basename(f)
    seeds = os.path.join(ROOT, "tests/fuzz/corpus", name)
    work = os.path.join(ROOT, "build/fuzz/corpus", name)
    artifacts = os.path.join(ROOT, "build/fuzz/artifacts", name)
    os.makedirs(work, exist_ok=True)
    shutil.rmtree(artifacts, ignore_errors=True)
    os.makedirs(artifacts)
    cmd = [f, f"-max_total_time={seconds}", "-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1",
           f"-artifact_prefix={artifacts}/", work]
    if runs > 0:
        cmd.insert(1, f"-runs={runs}")
    if os.path.isdir(seeds):
        cmd.append(seeds)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        detail = f"fuzzer did not stop within {seconds + 120}s"
        return False, detail, {"name": name, "seconds": seconds, "exit": "timeout", "executions": 0,
                               "exec_per_sec": 0, "cov": 0, "ft": 0, "corpus": "?", "new_units": 0,
                               "peak_rss_mb": 0, "findings": [detail], "artifacts": []}
    ok = p.returncode == 0
    return ok, "" if ok else p.stderr[-6000:], fuzz_summary(name, seconds, p.returncode, p.stderr, artifacts)


def suite_fuzz(tally, seconds, filt, record=None, max_runs=0):
    """Every fuzz target for seconds: two at a time for the smoke run of make test, one at a
    time for a recorded campaign (its exec/s figures are then each target's own). The smoke run
    also stops after max_runs inputs (its seeds, then max_runs mutations): libFuzzer checks its time limit
    once a second, so a 1 s limit alone ran 1-2 s a target (47 s for 44 targets)."""
    from concurrent.futures import ThreadPoolExecutor
    fuzzers = [f for f in sorted(glob.glob(os.path.join(ROOT, "build/fuzz/fuzzers/fuzz_*")))
               if not filt or filt in os.path.basename(f)]
    if not fuzzers and not filt and glob.glob(os.path.join(ROOT, "tests/fuzz/fuzz_*.c")):
        tally.record("fuzz: fuzz targets exist but none were built (run make fuzz-build)", False)
    env = dict(os.environ)
    # A sanitizer finding must end the run with a non-zero status (the build already
    # makes UBSan abort; these keep a user's environment from turning that off).
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    runs = []
    with ThreadPoolExecutor(max_workers=1 if record else 2) as pool:
        results = [pool.submit(run_fuzzer, f, seconds, env, 0 if record else max_runs) for f in fuzzers]
        for f, r in zip(fuzzers, results):
            ok, detail, summary = r.result()
            runs.append(summary)
            tally.record(f"fuzz/{os.path.basename(f)} ({seconds}s" + (f", {max_runs} runs)" if max_runs and not record else ")"),
                         ok, detail)
    if record and runs:
        write_fuzz_record(record, runs, seconds)


def _integration_cmd(f):
    return [sys.executable, os.path.join(ROOT, "tests/lib/unit_runner.py"), f]


def _collect(tally, name, stdout, stderr, returncode, started, ended=None):
    results = None
    for line in reversed(stdout.splitlines()):
        if line.startswith("@@RESULTS "):
            results = json.loads(line[len("@@RESULTS "):])
            break
    if results is None:
        tally.record(f"integration/{name} (runner crashed, exit {returncode})", False, stdout[-3000:] + stderr[-5000:])
        return
    for r in results:
        tally.record(f"integration/{name}/{r['name']}", r["ok"], r.get("detail", ""))
    if ended is None:
        print(f"     ({name}: {time.time() - started:.1f}s)", flush=True)
    else:
        print(f"     ({name}: {ended - started:.1f}s, in the background)", flush=True)


def _is_background(path):
    with open(path) as f:
        return any(line.strip() == "BACKGROUND = True" for line in f)


def integration_files(filt):
    return [f for f in sorted(glob.glob(os.path.join(ROOT, "tests/integration/test_*.py")))
            if not filt or filt in os.path.basename(f)]


def start_background(filt):
    """Starts the integration modules that mostly wait (BACKGROUND = True); main() does it
    before the unit, sanitizer and fuzz suites, which they then run beside."""
    background = []
    for f in integration_files(filt):
        if _is_background(f):
            # Output goes to files, not pipes: nobody reads a pipe until the module ends, and a
            # module that fills one would block there for as long as the others run.
            outs = tuple(tempfile.TemporaryFile("w+") for _ in range(2))
            p = subprocess.Popen(_integration_cmd(f), stdout=outs[0], stderr=outs[1], text=True, cwd=ROOT)
            # Its own end, for the log: modules are collected only after the foreground ones.
            p.ended = None
            threading.Thread(target=lambda p=p: (p.wait(), setattr(p, "ended", time.time())), daemon=True).start()
            background.append((f, time.time(), outs, p))
    return background


def suite_integration(tally, filt, background):
    running = [os.path.basename(b[0])[:-3] for b in background if b[3].poll() is None]
    if running:
        # They then share the machine with the foreground modules: worth knowing when one of
        # those fails on a share of CPU.
        print(f"still running in the background: {', '.join(running)}", flush=True)
    for f in integration_files(filt):
        if any(f == b[0] for b in background):
            continue
        name = os.path.basename(f)[:-3]
        start = time.time()
        try:
            p = subprocess.run(_integration_cmd(f), capture_output=True, text=True, timeout=900, cwd=ROOT)
        except subprocess.TimeoutExpired as e:
            tally.record(f"integration/{name} (timeout after 900s)", False,
                         (e.stderr or b"").decode(errors="replace")[-4000:] if isinstance(e.stderr, bytes) else "")
            continue
        _collect(tally, name, p.stdout, p.stderr, p.returncode, start)
    for f, start, outs, p in background:
        name = os.path.basename(f)[:-3]
        try:
            p.wait(timeout=max(1, 900 - (time.time() - start)))
            timed_out = False
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            timed_out = True
        for o in outs:
            o.seek(0)
        out, err = outs[0].read(), outs[1].read()
        for o in outs:
            o.close()
        if timed_out:
            tally.record(f"integration/{name} (timeout after 900s)", False, err[-4000:])
            continue
        _collect(tally, name, out, err, p.returncode, start, p.ended)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("-k", default="")
    ap.add_argument("--fuzz-seconds", type=int, default=int(os.environ.get("FUZZ_SMOKE_SECONDS", "1")))
    ap.add_argument("--fuzz-runs", type=int, default=int(os.environ.get("FUZZ_SMOKE_RUNS", "5000")),
                    help="a smoke run's bound on mutated inputs (0: time only); not used with --fuzz-record")
    ap.add_argument("--fuzz-record", default="", help="write the fuzz campaign's results to this file")
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s] or SUITES
    for s in only:
        if s not in SUITES:
            ap.error(f"unknown suite {s}; choose from {', '.join(SUITES)}")
    if os.geteuid() != 0:
        print("note: not running as root; BPF and cgroup tests will fail (they never skip)", flush=True)
    tally = Tally()
    start = time.time()
    background = start_background(args.k) if "integration" in only else []
    if "unit" in only:
        suite_unit(tally, "build", "unit", args.k)
    if "asan" in only:
        suite_unit(tally, "build/asan", "asan", args.k, lanes=2)
    if "valgrind" in only:
        suite_valgrind(tally, args.k)
    if "fuzz" in only:
        suite_fuzz(tally, args.fuzz_seconds, args.k, args.fuzz_record, args.fuzz_runs)
    if "integration" in only:
        suite_integration(tally, args.k, background)
    print(f"\ntotal time {time.time() - start:.0f}s", flush=True)
    if tally.failures:
        print("failed:\n" + "\n".join("  " + f for f in tally.failures), flush=True)
    print(f"{tally.passed} passed, {tally.failed} failed", flush=True)
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
