"""Copies of the node binary, each with a build ID of its own: the shape of a node running many
different large programs (issue 29), for the tests of table builds (test_scale,
test_symbol_worker, test_unwind_budget) and bench/scale."""
import shutil
import os
import struct
import subprocess
import time

NODE = "/usr/bin/node"


def busy_js(ms):
    """A script that keeps node busy ms milliseconds of every 100."""
    return ("setInterval(()=>{const t=Date.now(); let x=0; while(Date.now()-t<%d) x+=Math.sqrt(x+1);}, 100)"
            % ms)


def start_busy_copies(test, directory, count, busy_ms=30):
    """count copies of node in directory (node0...), each with its own build ID and running
    busy_js(busy_ms), stopped by their PIDs when the test ends: their Popen objects."""
    procs = []
    for i in range(count):
        exe = os.path.join(directory, f"node{i}")
        copy_with_build_id(NODE, exe, i)
        p = subprocess.Popen([exe, "-e", busy_js(busy_ms)], cwd=directory, stdout=subprocess.DEVNULL)
        procs.append(p)
        test.addCleanup(lambda p=p: (p.kill(), p.wait()))
    time.sleep(0.5)
    return procs


def copy_with_build_id(src, dst, i):
    """A copy of src whose GNU build ID differs in its last 4 bytes."""
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o755)
    with open(dst, "r+b") as f:
        head = f.read(1 << 20)
        at = head.find(struct.pack("<III", 4, 20, 3) + b"GNU\0")
        if at < 0:
            raise AssertionError(f"{src}: no 20-byte GNU build ID note in its first MiB")
        f.seek(at + 16 + 16)
        f.write(struct.pack("<I", 0x7e57c0de + i))


def record_copies(procs, seconds, *options):
    """`nodeprof record` of the processes procs for seconds, with options: its result (returncode
    checked by the caller) and its wall time."""
    import np  # tests/lib/np.py: imported here, bench/scale uses this module without it
    args = ["record", "--duration", f"{seconds}s", *options]
    for p in procs:
        args += ["--pid", str(p.pid)]
    t0 = time.monotonic()
    r = np.nodeprof(*args, timeout=60)
    return r, time.monotonic() - t0
