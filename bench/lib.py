"""Helpers for benchmarks: run a command and measure its CPU time and peak RSS,
toggle BPF run-time statistics, read a BPF program's run time per invocation."""
import contextlib
import ctypes
import json
import os
import resource
import subprocess
import tempfile
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODEPROF = os.path.join(ROOT, "build", "nodeprof")
RESULTS = os.path.join(ROOT, "bench", "results")


# build/bench-measure (bench/symbols/measure.c) runs every measured command: a child of Python
# inherits Python's peak RSS as its own ru_maxrss (the kernel carries the pre-exec address
# space's high-water mark across exec, and Python's is ~23 MB), so the command's own peak is
# measured from a small parent instead. It writes "WALL CPU RSS_KB" as the last line of stderr.
MEASURE = os.path.join(ROOT, "build", "bench-measure")


def measured(argv, out_file=os.devnull):
    """argv run under build/bench-measure (built on first use), its standard output to out_file."""
    if not os.path.exists(MEASURE):
        subprocess.run(["make", "--no-print-directory", "-s", "build/bench-measure"], cwd=ROOT, check=True)
    return [MEASURE, os.devnull, out_file] + list(argv)


def split_measured(stderr):
    """(the command's own stderr, max_rss_kb, cpu_s) from a measured() command's stderr."""
    head, _, last = stderr.rstrip("\n").rpartition("\n")
    _wall, cpu, rss = last.split()
    return head, int(rss), float(cpu)


def measure(argv, timeout=600, during=None, during_at=None):
    """Runs argv to completion; returns dict(cpu_s, max_rss_kb, wall_s, rc, stderr).
    `during(proc)` is called once `during_at` seconds after the start (e.g. to read BPF stats)."""
    t0 = time.time()
    p = subprocess.Popen(measured(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    extra = None
    if during:
        time.sleep(during_at)
        extra = during(p)
    _, status, _ = os.wait4(p.pid, 0)
    err, rss, cpu = split_measured(p.stderr.read())
    p.stderr.close()
    return {
        "cpu_s": cpu, "max_rss_kb": rss, "wall_s": time.time() - t0,
        "rc": os.waitstatus_to_exitcode(status), "stderr": err, "during": extra,
    }


def bpf_stats(enable):
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1" if enable else "0")


_SYS_BPF = 321           # x86-64
_BPF_ENABLE_STATS = 32   # enum bpf_cmd
_BPF_STATS_RUN_TIME = 0


@contextlib.contextmanager
def bpf_stats_held():
    """BPF run-time statistics on for as long as the block runs, whatever anyone writes to
    kernel.bpf_stats_enabled meanwhile (another benchmark ending turns the sysctl off): the
    kernel counts while a BPF_ENABLE_STATS file descriptor is open (Linux 5.8+)."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.c_uint32(_BPF_STATS_RUN_TIME)
    fd = libc.syscall(_SYS_BPF, _BPF_ENABLE_STATS, ctypes.byref(attr), ctypes.sizeof(attr))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"bpf(BPF_ENABLE_STATS): {os.strerror(err)}")
    try:
        yield
    finally:
        os.close(fd)


def bpf_prog_costs(prog_type=None):
    """{name: (run_cnt, run_time_ns)} for every loaded BPF program (of prog_type, if given)."""
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True, check=True).stdout
    costs = {}
    for prog in json.loads(out):
        if prog_type and prog.get("type") != prog_type:
            continue
        name = prog.get("name", "")
        cnt, ns = prog.get("run_cnt", 0), prog.get("run_time_ns", 0)
        c0, n0 = costs.get(name, (0, 0))
        costs[name] = (c0 + cnt, n0 + ns)
    return costs


def write_result(name, text):
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, name + ".md"), "w") as f:
        f.write(text)
    print(text, flush=True)


def bpf_fd_costs(pid):
    """{prog_id: (prog_type, run_cnt, run_time_ns)} of the BPF programs process pid holds open,
    from /proc/PID/fdinfo (the counters grow while kernel.bpf_stats_enabled is 1). Reading
    them by file descriptor keeps other loaders of programs of the same name out."""
    progs = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-prog":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:  # the fd closed, or the process exited, while we looked
            continue
        progs[int(info["prog_id"])] = (int(info["prog_type"]), int(info.get("run_cnt", 0)),
                                       int(info.get("run_time_ns", 0)))
    return progs


PERF_EVENT = 7  # BPF_PROG_TYPE_PERF_EVENT: the sampler (and any program it tail-calls)


class BpfWatch:
    """The run time of the BPF programs of each nodeprof, read while it runs (the last read
    is at most ~0.05 s before its programs go away)."""

    def __init__(self):
        self.last = {}

    def __call__(self, name, pid):
        costs = bpf_fd_costs(pid)
        if costs:
            self.last[name] = costs

    def total_ns(self, name):
        return sum(ns for _, _, ns in self.last.get(name, {}).values())

    def per_sample_ns(self, name):
        """Time of the perf_event programs per run of the one attached to the event (the one
        run most often; programs reached by tail calls are not counted as runs)."""
        progs = [(cnt, ns) for t, cnt, ns in self.last.get(name, {}).values() if t == PERF_EVENT]
        runs = max((cnt for cnt, _ in progs), default=0)
        return sum(ns for _, ns in progs) / runs if runs else float("nan")

    def runs(self, name):
        return max((cnt for t, cnt, _ in self.last.get(name, {}).values() if t == PERF_EVENT), default=0)


def record_watched(argv, watch, key, log=None):
    """Runs a `nodeprof record` argv to its end while watch (a BpfWatch) samples its BPF
    programs' run time under key; exits the benchmark with nodeprof's error when it fails.
    Its standard error goes to the file log (a temporary one when None: a pipe read only at
    the end would stall a chatty recording). Returns its resource usage: ru_utime + ru_stime as
    cpu_s, and ru_maxrss (KiB), measured by build/bench-measure (see MEASURE)."""
    with open(log, "w+") if log else tempfile.TemporaryFile("w+") as errf:
        rec = subprocess.Popen(measured(argv), stdout=subprocess.DEVNULL, stderr=errf, text=True)
        pid = None
        while True:
            got, status, _ = os.wait4(rec.pid, os.WNOHANG)
            if got:
                break
            if pid is None:  # nodeprof, the launcher's child, owns the BPF programs
                try:
                    with open(f"/proc/{rec.pid}/task/{rec.pid}/children") as f:
                        pid = int(f.read().split()[0])
                except (OSError, ValueError, IndexError):
                    pass
            if pid is not None:
                watch(key, pid)
            time.sleep(0.05)
        errf.seek(0)
        err, rss, cpu = split_measured(errf.read())
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"nodeprof record failed: {err}")
    return types.SimpleNamespace(cpu_s=cpu, ru_maxrss=rss)
