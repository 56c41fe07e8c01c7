#!/usr/bin/env python3
"""Runs the benchmarks: every bench/<name>/bench.py (or the ones named on the command
line). Each writes its results to bench/results/<name>.md and prints them; the README
quotes those files. Benchmarks measure; tests assert. Nothing here runs in `make test`."""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    names = sys.argv[1:]
    scripts = sorted(glob.glob(os.path.join(ROOT, "bench", "*", "bench.py")))
    failed = 0
    for s in scripts:
        name = os.path.basename(os.path.dirname(s))
        if names and name not in names:
            continue
        print(f"== bench {name}", flush=True)
        r = subprocess.run([sys.executable, s], cwd=ROOT)
        if r.returncode:
            print(f"bench {name} failed (exit {r.returncode})", flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
