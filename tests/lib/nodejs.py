"""Node.js for the tests of agent/runtime/v8: the image's node, Debian's Node 18 (a libnode.so.108
build extracted into build/node18/root by `make node18`) run in a container root of its own, the
JavaScript workloads (tests/integration/workloads/js/), and V8's own view of a program's stack
(`node --cpu-prof`), which the sampled frames are checked against."""
import glob
import json
import os
import shutil
import subprocess
import time

import np
import rootfs

NODE = shutil.which("node") or "/usr/bin/node"
JS = os.path.join(np.WORKLOADS, "js")
CHAIN = os.path.join(JS, "chain.js")
CHURN = os.path.join(JS, "churn.js")
ESM = os.path.join(JS, "esm.mjs")
INLINE = os.path.join(JS, "inline.js")
NODE18_ROOT = os.path.join(np.ROOT, "build", "node18", "root")
# V8 flags that keep every function interpreted (Ignition): no TurboFan, Sparkplug or Maglev.
INTERPRETED = ["--no-opt", "--no-sparkplug", "--no-maglev"]
# What leaf's callers in chain.js are, leaf first (Error().stack's names; V8's CPU profiler names
# a method by the function alone, which is what a profile can know: see docs/specs/v8.md §4.3).
CHAIN_NAMES = ["leaf"] + ["recurse"] * 6 + ["step", "crunch", "main"]


def ensure_node18():
    """Extracts Debian's Node 18 beside the image's node when it is not there yet."""
    if not os.path.exists(os.path.join(NODE18_ROOT, "usr", "bin", "node")):
        subprocess.run(["make", "-C", np.ROOT, "--no-print-directory", "node18"], check=True,
                       capture_output=True, timeout=600)


def node18_script(root, script, flags):
    """A shell script that runs script (at /app/<name>) under Node 18 in a container root made
    at root (rootfs.chroot_script): run it with `unshare --mount sh -c`."""
    lib = os.path.join(NODE18_ROOT, "usr", "lib", "x86_64-linux-gnu", "libnode.so.108")
    exe = os.path.join(NODE18_ROOT, "usr", "bin", "node")
    env = {**os.environ, "LD_LIBRARY_PATH": os.path.dirname(lib)}
    libs = [p for p in rootfs.library_deps(exe, env=env) if not p.startswith(NODE18_ROOT)]
    inside = "/app/" + os.path.basename(script)
    files = [(script, inside), (exe, "/usr/bin/node"), (lib, "/usr/lib/x86_64-linux-gnu/libnode.so.108")]
    files += [(p, p) for p in libs]
    return rootfs.chroot_script(root, files, ["/usr/bin/node", *flags, inside],
                                binds=[(os.path.join(NODE18_ROOT, "usr", "share", "nodejs"), "/usr/share/nodejs")])


def cpu_prof_chain(workdir, leaf="leaf", script=CHAIN, seconds=2):
    """V8's CPU profiler's view of script (run for seconds with `node --cpu-prof`): the chain of
    function names from the first sampled leaf node to the root, leaf first, and that node's
    callFrame (url, lineNumber 0-based)."""
    subprocess.run([NODE, "--cpu-prof", "--cpu-prof-dir", workdir, script],
                   env={**os.environ, "CHAIN_SECONDS": str(seconds)}, check=True, capture_output=True, timeout=60)
    prof = json.load(open(glob.glob(os.path.join(workdir, "*.cpuprofile"))[0]))
    nodes = {n["id"]: n for n in prof["nodes"]}
    parent = {c: n["id"] for n in prof["nodes"] for c in n.get("children", [])}
    leaves = [n for n in prof["nodes"] if n["callFrame"]["functionName"] == leaf and n.get("hitCount")]
    if not leaves:
        raise AssertionError(f"--cpu-prof never sampled {leaf}")
    chain, at = [], leaves[0]["id"]
    while at in nodes:
        chain.append(nodes[at]["callFrame"]["functionName"])
        at = parent.get(at)
    return chain, leaves[0]["callFrame"]


def read_line(proc, deadline=30):
    """The workload's next stdout line (JSON), waiting at most deadline seconds."""
    end = time.monotonic() + deadline
    line = ""
    os.set_blocking(proc.stdout.fileno(), False)
    while time.monotonic() < end:
        chunk = proc.stdout.readline()
        if chunk:
            line += chunk
            if line.endswith("\n"):
                return json.loads(line)
        elif proc.poll() is not None:
            raise AssertionError(f"workload exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        else:
            time.sleep(0.05)
    raise AssertionError("workload printed nothing in time")
