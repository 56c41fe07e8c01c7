"""The workloads of issue 17's test and benchmark (tests/integration/workloads/unwind_*),
built the same way for both: with the system compilers, -O2 and, unless asked otherwise,
-fomit-frame-pointer, warnings as errors; and the command lines of the Debian programs
(xz, gzip, python3.11) kept busy for as long as a recording needs."""
import base64
import os
import random
import subprocess

import np

NO_FP = ("-O2", "-fomit-frame-pointer")
FP = ("-O2", "-fno-omit-frame-pointer")
STRICT = ("-Wall", "-Wextra", "-Werror")
PYTHON = "/usr/bin/python3.11"  # Debian's, not a pyenv shim that PATH may find first
PYTHON_BUSY = os.path.join(np.WORKLOADS, "unwind_busy.py")


def build(src, out, *flags, frame_pointers=False):
    """Compiles workloads/src (C with gcc, C++ with g++) to out; returns out."""
    compiler = "g++" if src.endswith(".cc") else "gcc"
    opt = FP if frame_pointers else NO_FP
    subprocess.run([compiler, *opt, *STRICT, "-o", out, os.path.join(np.WORKLOADS, src), *flags],
                   check=True, capture_output=True, text=True)
    return out


def compressor_input(path):
    """4 MiB of text for xz and gzip: 3 MiB of (seeded) random bytes as base64, the same
    every run."""
    with open(path, "wb") as f:
        f.write(base64.encodebytes(random.Random(17).randbytes(3 << 20)))
    return path


def xz_argv(text, copies=200):
    """xz -9 on one thread through copies of text (about 2 s each), to stdout."""
    return ["xz", "-9", "-T1", "-c"] + [text] * copies


def gzip_argv(text, copies=400):
    """gzip -9 through copies of text (about 0.2 s each), to stdout."""
    return ["gzip", "-9", "-c"] + [text] * copies


def python_argv(seconds):
    return [PYTHON, PYTHON_BUSY, str(seconds)]
