"""Folded stacks from two profilers, judged the same way: `nodeprof record --format folded`
and the reference, `perf record --call-graph dwarf` + `perf script`, turned into the same
{"root;...;leaf": count} form, and the measures the unwinding tests and benchmark apply to
both (share of samples that reach a frame, a CPU split between two callers, recursion
depth). Standard library only: bench/ imports it too."""
import collections
import os
import re
import subprocess
import time

import np

# The deepest stack either tool reports: nodeprof's NP_MAX_STACK_DEPTH (bpf/sampler_types.h) and
# perf's default kernel.perf_event_max_stack. perf script is told the same bound.
MAX_FRAMES = 127
# Where every thread glibc starts the program in leads: the frame that says a stack is whole.
ENTRY = "__libc_start_call_main"


def frames(stack):
    """The frames of a folded stack, root first."""
    return stack.split(";")


def total(stacks, where=None):
    """Samples in stacks, or in the stacks whose frame list satisfies where(frames)."""
    return sum(c for s, c in stacks.items() if where is None or where(frames(s)))


def share(stacks, hit, among=None):
    """(hits, n, percent): of the n samples whose frames satisfy among (all when None), the
    ones that also satisfy hit. percent is 0 when n is 0."""
    n = hits = 0
    for s, c in stacks.items():
        f = frames(s)
        if among is not None and not among(f):
            continue
        n += c
        if hit(f):
            hits += c
    return hits, n, (100.0 * hits / n if n else 0.0)


def has(name):
    """A predicate: the stack has a frame named name."""
    return lambda f: name in f


def has_run(*run):
    """A predicate: the stack has the frames run, one right after the other (root first)."""
    run = list(run)
    return lambda f: np.contains_run(f, run)


def any_of(*preds):
    return lambda f: any(p(f) for p in preds)


def longest_run(f, name):
    """The largest number of consecutive frames named name."""
    best = cur = 0
    for x in f:
        cur = cur + 1 if x == name else 0
        best = max(best, cur)
    return best


def depth_histogram(stacks, name):
    """{consecutive frames named name: samples} over the stacks that contain name."""
    h = collections.Counter()
    for s, c in stacks.items():
        n = longest_run(frames(s), name)
        if n:
            h[n] += c
    return dict(h)


def top(stacks, n=5, where=None):
    """The n heaviest stacks (of those whose frames satisfy where, when given) as text, for
    failure messages; long stacks are shortened."""
    rows = sorted(((s, c) for s, c in stacks.items() if where is None or where(frames(s))),
                  key=lambda kv: -kv[1])[:n]

    def short(s):
        f = frames(s)
        return s if len(f) <= 12 else ";".join(f[:4] + [f"...{len(f) - 8} frames..."] + f[-4:])
    return "\n".join(f"  {c:6d} {short(s)}" for s, c in rows)


# ---- perf, the reference ---------------------------------------------------------------

def perf_record_argv(pids, out, seconds, hz=97, buildid_dir=None):
    """argv of `perf record --call-graph dwarf` on pids for seconds (perf copies 8 KiB of user
    stack per sample, its default, enough for every workload here). buildid_dir keeps perf's copies
    of the sampled files (taken while the processes are alive, so files that exist only in
    a container's root can still be read by perf script) out of ~/.debug."""
    pre = ["perf"] + (["--buildid-dir", buildid_dir] if buildid_dir else [])
    return pre + ["record", "-q", "-F", str(hz), "--call-graph", "dwarf", "-o", out,
                  "-p", ",".join(map(str, pids)), "--", "sleep", str(seconds)]


def perf_script_argv(data, buildid_dir=None):
    """argv of the perf script that parse_perf_script reads: one header line per sample
    with its PID, one line per frame (address, symbol, file), leaf first. Names stay
    mangled and inlined frames are left out, as nodeprof names frames by default."""
    pre = ["perf"] + (["--buildid-dir", buildid_dir] if buildid_dir else [])
    return pre + ["script", "-i", data, "-F", "pid,ip,sym,dso", "--no-inline", "--no-demangle",
                  "--max-stack", str(MAX_FRAMES)]


def _perf_frame(line):
    """'  12d1 _ZN9Descender7descendEi (/tmp/x/recurse)' -> the frame's name. An unnamed
    frame is named as nodeprof names it, FILE+0xADDRESS (perf prints the address in the file; a caller's
    is its return address - 1, inside the call instruction)."""
    addr, _, rest = line.strip().partition(" ")
    sym, _, dso = rest.rpartition(" (")
    dso = dso[:-1] if dso.endswith(")") else dso
    if sym and sym != "[unknown]":
        return sym
    return f"{os.path.basename(dso) or '[unknown]'}+0x{addr}" if dso != "[unknown]" else "[unknown]"


def parse_perf_script(text):
    """{pid: {folded stack: count}} from perf_script_argv's output (leaf first per sample;
    folded stacks are root first)."""
    out = collections.defaultdict(collections.Counter)
    pid, cur = None, []

    def flush():
        if pid is not None:
            out[pid][";".join(reversed(cur)) or "[unknown]"] += 1
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[0] in " \t" and pid is not None and line.strip()[0] in "0123456789abcdef" and "(" in line:
            cur.append(_perf_frame(line))
            continue
        flush()
        pid, cur = int(line.split()[0]), []
    flush()
    return {p: dict(c) for p, c in out.items()}


# ---- nodeprof ----------------------------------------------------------------------------

def nodeprof_record_argv(pid, seconds, hz=97, out=None):
    """argv of `nodeprof record` on one process, folded output to out (stdout when None)."""
    argv = [np.NODEPROF, "record", "--pid", str(pid), "--duration", f"{seconds}s",
            "--sample-rate", str(hz), "--format", "folded", "--demangle", "none"]  # as perf script --no-demangle
    return argv + (["-o", out] if out else [])


# ---- both at once ---------------------------------------------------------------------------

def _cpu(ru):
    return ru.ru_utime + ru.ru_stime


class Job:
    """One process profiled by both tools: their stacks, exit codes, logs and CPU seconds
    (user + system, from wait4 of each tool's own process)."""

    def __init__(self, name, pid, workdir):
        self.name, self.pid = name, pid
        self.base = os.path.join(workdir, re.sub(r"[^A-Za-z0-9_.-]+", "_", name))  # its files, + suffix
        self.perf = self.nodeprof = None
        self.nodeprof_rc = self.perf_rc = None
        self.nodeprof_log = self.perf_log = ""
        self.nodeprof_cpu = self.perf_record_cpu = self.perf_script_cpu = 0.0
        self.nodeprof_started = None  # time.time() when nodeprof said it is recording


def record_both(procs, seconds, workdir, hz=97, poll=None):
    """Profiles every process of procs ({name: pid}) for seconds with, at the same time, one
    `nodeprof record --pid` and one `perf record --call-graph dwarf -p` per process, then
    runs perf script on each perf.data. poll(name, nodeprof_pid), when given, is called about
    every 0.05 s while that nodeprof runs (the benchmark reads its BPF programs' run time).
    Returns {name: Job}."""
    jobs = {name: Job(name, pid, workdir) for name, pid in procs.items()}
    bid = os.path.join(workdir, "perf-buildids")
    running = {}  # child pid -> (job, tool, log path)
    for job in jobs.values():
        base = job.base
        for tool, argv in (("nodeprof", nodeprof_record_argv(job.pid, seconds, hz, base + ".folded")),
                           ("perf", perf_record_argv([job.pid], base + ".perf.data", seconds, hz, bid))):
            log = f"{base}.{tool}.log"
            with open(log, "w") as lf:
                p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=lf)
            running[p.pid] = (job, tool, log)
    deadline = time.time() + seconds + 120
    while running:
        for child in list(running):
            job, tool, log = running[child]
            got, status, ru = os.wait4(child, os.WNOHANG)
            if got == 0:
                if time.time() > deadline:
                    os.kill(child, 9)
                elif tool == "nodeprof":
                    if job.nodeprof_started is None and os.path.getsize(log) > 0:
                        job.nodeprof_started = time.time()
                    if poll:
                        poll(job.name, child)
                continue
            del running[child]
            with open(log) as f:
                text = f.read()
            rc = os.waitstatus_to_exitcode(status)
            if tool == "nodeprof":
                job.nodeprof_rc, job.nodeprof_log, job.nodeprof_cpu = rc, text, _cpu(ru)
            else:
                job.perf_rc, job.perf_log, job.perf_record_cpu = rc, text, _cpu(ru)
        time.sleep(0.05)
    for job in jobs.values():
        base = job.base
        if job.nodeprof_rc == 0:
            with open(base + ".folded") as f:
                job.nodeprof = np.parse_folded(f.read())
        if job.perf_rc == 0:
            out = base + ".perf.txt"
            with open(out, "w") as f:
                p = subprocess.Popen(perf_script_argv(base + ".perf.data", bid), stdout=f, stderr=subprocess.PIPE,
                                     text=True)
                err = p.stderr.read()
                _, status, ru = os.wait4(p.pid, 0)
            job.perf_script_cpu = _cpu(ru)
            if os.waitstatus_to_exitcode(status) != 0:
                job.perf_rc, job.perf_log = os.waitstatus_to_exitcode(status), job.perf_log + err
                continue
            with open(out) as f:
                job.perf = parse_perf_script(f.read()).get(job.pid, {})
    return jobs
