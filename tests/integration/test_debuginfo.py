"""pyroscope.ebpf's debug_info block through `nodeprof run` and the test Pyroscope
(docs/specs/debuginfo.md): with on_target_symbolization = false the frames of a native
binary reach the server unnamed, as Alloy pushes them without its symbolizer: the binary's
mapping with its build ID and, on each Location, the address in the file that the server's
symbolizer names from the uploaded debug information; kernel frames stay named."""
import os
import subprocess
import time
import unittest

import agent_push
import np
import pprof  # noqa: F401  (puts tests/servers on sys.path)
from pyroscope import PyroscopeServer  # noqa: E402


def elf_functions(path):
    """[(start, end, name)] of the function symbols of an ELF file, from nm."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], check=True, capture_output=True, text=True).stdout
    funcs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in ("T", "t"):
            start, size = int(parts[0], 16), int(parts[1], 16)
            funcs.append((start, start + size, parts[3]))
    return funcs


class ServerSymbolization(unittest.TestCase):

    def pushed_locations(self, exe, args):
        """Every pushed stack of the workload as its locations (root first), after at least 16
        samples in the binary; every request checked against the protocol."""
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        agent_push.start(self, np.process_pipeline_config(".*split-dbg.*", "dbg", args, forward_url=srv.url),
                         [exe, "60"])
        deadline, stacks = time.time() + 40, []
        while time.time() < deadline and len(stacks) < 16:
            stacks = [s for push in srv.pushes() for series in push["series"] for prof in series["profiles"]
                      for s in prof["stacks"] if any(l["file"].endswith("split-dbg") for l in s["locations"])]
            time.sleep(1)
        for r in srv.all_requests():
            self.assertEqual(r["violations"], [], r)
        self.assertGreaterEqual(len(stacks), 16, stacks[:3])
        return stacks

    def test_native_frames_left_to_the_server(self):
        d = np.tmpdir(self)
        build_id = os.urandom(20).hex()
        exe = np.build_workload("split", d, ("-O0", "-fno-omit-frame-pointer", "-g", f"-Wl,--build-id=0x{build_id}"))
        os.rename(exe, os.path.join(d, "split-dbg"))
        exe = os.path.join(d, "split-dbg")
        funcs = elf_functions(exe)

        def function_at(addr):
            return next((n for s, e, n in funcs if s <= addr < e), None)

        stacks = self.pushed_locations(exe, {"debug_info": {"on_target_symbolization": "false"}})
        mine = [l for s in stacks for l in s["locations"] if l["file"].endswith("split-dbg")]
        # Each of the binary's Locations: no Line, its build ID, an address inside one of its
        # functions (the server's symbolizer names it from there), as Alloy pushes them.
        self.assertTrue(all(not l["named"] and l["build_id"] == build_id for l in mine), mine[:5])
        names = {function_at(l["address"]) for l in mine}
        self.assertNotIn(None, names, [hex(l["address"]) for l in mine if function_at(l["address"]) is None])
        self.assertTrue({"spin", "main"} <= names, names)
        # The leaf of most samples is spin, where the workload burns its time.
        leaves = [function_at(s["locations"][-1]["address"]) for s in stacks
                  if s["locations"][-1]["file"].endswith("split-dbg")]
        self.assertGreater(leaves.count("spin"), len(leaves) // 2, leaves)
        # Native frames of other files (libc, the vDSO, which Alloy leaves unnamed too) are
        # unnamed; the kernel's keep their names, as Alloy names them from kallsyms.
        others = [l for s in stacks for l in s["locations"] if not l["file"].endswith("split-dbg")]
        for l in others:
            if l["file"] == "vmlinux":
                self.assertTrue(l["named"], l)
            elif l["file"] == "[vdso]" or "libc" in os.path.basename(l["file"]):
                self.assertFalse(l["named"], l)
                self.assertTrue(l["build_id"], l)

    def test_named_by_default(self):
        d = np.tmpdir(self)
        exe = np.build_workload("split", d, ("-O0", "-fno-omit-frame-pointer", "-g"))
        os.rename(exe, os.path.join(d, "split-dbg"))
        stacks = self.pushed_locations(os.path.join(d, "split-dbg"), {})
        mine = [l for s in stacks for l in s["locations"] if l["file"].endswith("split-dbg")]
        self.assertTrue(all(l["named"] for l in mine), mine[:5])


if __name__ == "__main__":
    unittest.main()
