"""pyroscope.ebpf's debug_info block through `nodeprof run` and the test Pyroscope
(docs/specs/debuginfo.md): with on_target_symbolization = false the frames of a native
binary reach the server unnamed, as Alloy pushes them without its symbolizer: the binary's
mapping with its build ID and, on each Location, the address in the file that the server's
symbolizer names from the uploaded debug information; kernel frames stay named. With upload =
true each binary seen in samples goes to the server once, through ShouldInitiateUpload, the
upload and UploadFinished, and a slow or failing server blocks no push."""
import hashlib
import os
import shutil
import struct
import subprocess
import time
import unittest
import urllib.request

import agent_push
import np
import pprof  # noqa: F401  (puts tests/servers on sys.path)
from pyroscope import PyroscopeServer  # noqa: E402

# It mostly waits (pushes, a slow server): it runs beside the other modules (tests/run.py), its
# split workloads busy 15% of the time so that the modules measuring CPU shares keep the CPUs.
BACKGROUND = True
PACED = dict(os.environ, SPLIT_BUSY_PERCENT="15")


GO_SPIN = """package main

import "time"

//go:noinline
func spin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i ^ (s >> 3)
	}
	return s
}

// Busy 15% of the time, as the other workloads of this module (PACED): it runs beside the others.
func main() {
	t := 0
	for {
		start := time.Now()
		for time.Since(start) < 3*time.Millisecond {
			t += spin(100000)
		}
		time.Sleep(17 * time.Millisecond)
	}
}
"""


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
                         [exe, "60"], env=PACED)
        deadline, stacks = time.time() + 40, []
        while time.time() < deadline and len(stacks) < 16:
            stacks = [s for push in srv.pushes() for series in push["series"] for prof in series["profiles"]
                      for s in prof["stacks"] if any(l["file"].endswith("split-dbg") for l in s["locations"])]
            time.sleep(1)
        for r in srv.all_requests():
            self.assertEqual(r["violations"], [], r)
        self.assertGreaterEqual(len(stacks), 4, (len(srv.pushes()), stacks[:3]))
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

    def test_kernel_frames_stay_named(self):
        d = np.tmpdir(self)
        exe = np.build_workload("syscalls", d)
        os.rename(exe, os.path.join(d, "syscalls-dbg"))
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        agent_push.start(self, np.process_pipeline_config(".*syscalls-dbg.*", "sys", {
            "debug_info": {"on_target_symbolization": "false"}}, forward_url=srv.url),
            [os.path.join(d, "syscalls-dbg"), "60"])
        deadline, kernel = time.time() + 40, []
        while time.time() < deadline and len(kernel) < 16:
            kernel = [l for push in srv.pushes() for series in push["series"] for prof in series["profiles"]
                      for s in prof["stacks"] for l in s["locations"] if l["file"] == "vmlinux"]
            time.sleep(1)
        self.assertGreaterEqual(len(kernel), 16)
        self.assertTrue(all(l["named"] for l in kernel), [l for l in kernel if not l["named"]][:3])

    def test_go_frames_stay_named(self):
        # Alloy's Go support names a Go executable's frames from .gopclntab on the node even
        # without its symbolizer; the C frames of the same pushes are left to the server.
        d = np.tmpdir(self)
        src = os.path.join(d, "spin.go")
        with open(src, "w") as f:
            f.write(GO_SPIN)
        exe = os.path.join(d, "gospin-dbg")
        subprocess.run(["go", "build", "-o", exe, src], check=True, capture_output=True, cwd=d,
                       env=dict(os.environ, CGO_ENABLED="0", GO111MODULE="off", GOCACHE=os.path.join(d, "gocache")))
        def pushed(args):
            srv = PyroscopeServer().start()
            self.addCleanup(srv.stop)
            _, agent = agent_push.start(self, np.process_pipeline_config(".*gospin-dbg.*", "go", args,
                                                                         forward_url=srv.url), [exe])
            # A few distinct stacks are enough to see how they are named; a busy machine gets
            # them more slowly (the workload is paced), hence the long deadline.
            deadline, stacks = time.time() + 60, []
            while time.time() < deadline and len(stacks) < 4:
                stacks = [s for push in srv.pushes() for series in push["series"] for prof in series["profiles"]
                          for s in prof["stacks"] if any(l["file"].endswith("gospin-dbg") for l in s["locations"])]
                time.sleep(1)
            agent.kill()
            agent.wait()
            self.assertGreaterEqual(len(stacks), 4, (len(srv.pushes()), stacks[:3]))
            return stacks, [l for s in stacks for l in s["locations"] if l["file"].endswith("gospin-dbg")]

        stacks, mine = pushed({"debug_info": {"on_target_symbolization": "false"}})
        self.assertTrue(all(l["named"] for l in mine), [l for l in mine if not l["named"]][:5])
        self.assertTrue(any("main.spin" in s["frames"] for s in stacks), [s["frames"] for s in stacks[:3]])
        # go_enabled = false: Alloy has no Go support then, and the Go frames are native ones
        stacks, mine = pushed({"go_enabled": "false", "debug_info": {"on_target_symbolization": "false"}})
        self.assertTrue(all(not l["named"] for l in mine), [l for l in mine if l["named"]][:5])

    def test_named_by_default(self):
        d = np.tmpdir(self)
        exe = np.build_workload("split", d, ("-O0", "-fno-omit-frame-pointer", "-g"))
        os.rename(exe, os.path.join(d, "split-dbg"))
        stacks = self.pushed_locations(os.path.join(d, "split-dbg"), {})
        mine = [l for s in stacks for l in s["locations"] if l["file"].endswith("split-dbg")]
        self.assertTrue(all(l["named"] for l in mine), mine[:5])


class Check(unittest.TestCase):

    def test_the_block_is_accepted_and_checked(self):
        d = np.tmpdir(self)
        ok = os.path.join(d, "ok.alloy")
        with open(ok, "w") as f:
            f.write("""pyroscope.write "w" {
  endpoint {
    url = "http://127.0.0.1:4040"
    debug_info_upload_timeout = "30s"
  }
}
pyroscope.ebpf "e" {
  forward_to = [pyroscope.write.w.receiver]
  debug_info {
    on_target_symbolization = false
    upload = true
    cache_size = 1000
    queue_size = 8
    worker_num = 2
  }
}
""")
        p = np.nodeprof("check", ok)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        bad = os.path.join(d, "bad.alloy")
        with open(bad, "w") as f:
            f.write("""pyroscope.ebpf "e" {
  forward_to = []
  debug_info {
    upload = true
    strip_text_section = true
    worker_num = 0
  }
}
""")
        p = np.nodeprof("check", bad)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.splitlines(), [f"{bad}:6:18: worker_num must be between 1 and 256, got 0"])


def split_with_build_id(test):
    """split built with a build ID of its own (no other test or run shares it), as split-dbg."""
    d = np.tmpdir(test)
    build_id = os.urandom(20).hex()
    exe = np.build_workload("split", d, ("-O0", "-fno-omit-frame-pointer", "-g", f"-Wl,--build-id=0x{build_id}"))
    os.rename(exe, os.path.join(d, "split-dbg"))
    return os.path.join(d, "split-dbg"), build_id


def upload_counts(port):
    """pyroscope_ebpf_debug_info_uploads_total by result, summed over endpoints."""
    fam = agent_push.metrics(port).get("pyroscope_ebpf_debug_info_uploads_total")
    out = {}
    for _, labels, v in (fam.samples if fam else []):
        out[labels["result"]] = out.get(labels["result"], 0) + v
    return out


class Upload(unittest.TestCase):

    def start(self, args, srv):
        exe, build_id = split_with_build_id(self)
        port, self.agent = agent_push.start(self, np.process_pipeline_config(".*split-dbg.*", "dbg", args,
                                                                             forward_url=srv.url), [exe, "60"],
                                            env=PACED)
        return exe, build_id, port

    def wait(self, what, cond, seconds=40):
        deadline = time.time() + seconds
        while time.time() < deadline:
            got = cond()
            if got:
                return got
            time.sleep(0.5)
        self.fail(f"no {what} within {seconds} s")

    def calls(self, srv, build_id):
        return [r["method"] for r in srv.debuginfo_requests() if r["build_id"] == build_id]

    def test_each_binary_uploaded_once(self):
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        exe, build_id, port = self.start({"debug_info": {"upload": "true"}}, srv)
        self.wait("upload", lambda: srv.debuginfo().get(build_id, {}).get("state") == "uploaded")
        with open(exe, "rb") as f:
            self.assertEqual(srv.debuginfo()[build_id]["data"], f.read())
        self.assertEqual(srv.debuginfo()[build_id]["name"], "split-dbg")
        self.assertEqual(srv.debuginfo()[build_id]["type"], 1)  # TYPE_EXECUTABLE_FULL
        # the OpenTelemetry profiler's FileID (libpf.FileIDFromExecutableReader)
        with open(exe, "rb") as f:
            data = f.read()
        want = hashlib.sha256(data[:4096] + data[-4096:] + struct.pack(">Q", len(data))).hexdigest()[:32]
        self.assertEqual(srv.debuginfo()[build_id]["otel_file_id"], want)
        # More intervals with the same binary in every one: it is never offered to the server again.
        n = len(srv.pushes())
        self.wait("3 more pushes", lambda: len(srv.pushes()) >= n + 3)
        self.assertEqual(self.calls(srv, build_id), ["ShouldInitiateUpload", "Upload", "UploadFinished"])
        for r in srv.debuginfo_requests():
            self.assertEqual(r["violations"], [], r)
            self.assertEqual(r["status"], 200, r)
        counts = upload_counts(port)
        self.assertGreaterEqual(counts.get("uploaded", 0), 1, counts)
        self.assertEqual(counts.get("failed", 0), 0, counts)
        uploaded = sum(v["size"] for v in srv.debuginfo().values() if v["state"] == "uploaded")
        self.assertEqual(agent_push.metrics(port)["pyroscope_ebpf_debug_info_upload_bytes_total"].value(), uploaded)

    def test_debuglink_file_sent_instead(self):
        # As the OTel profiler's OpenDebugLink finds it: /usr/lib/debug + the binary's directory +
        # the .gnu_debuglink name, when its CRC matches; Alloy uploads that file instead.
        d = np.tmpdir(self)
        build_id = os.urandom(20).hex()
        exe = np.build_workload("split", d, ("-O0", "-fno-omit-frame-pointer", "-g", f"-Wl,--build-id=0x{build_id}"))
        debug_dir = "/usr/lib/debug" + d
        parent_made = not os.path.exists(os.path.dirname(debug_dir))
        os.makedirs(debug_dir)
        if parent_made:  # e.g. /usr/lib/debug/tmp: removed too when the test made it (and it is empty)
            self.addCleanup(lambda: os.path.isdir(os.path.dirname(debug_dir)) and not os.listdir(
                os.path.dirname(debug_dir)) and os.rmdir(os.path.dirname(debug_dir)))
        self.addCleanup(shutil.rmtree, debug_dir, True)
        debug = os.path.join(debug_dir, "split-dbg.debug")
        subprocess.run(["objcopy", "--only-keep-debug", exe, debug], check=True)
        subprocess.run(["objcopy", "--strip-debug", "--strip-unneeded", f"--add-gnu-debuglink={debug}", exe,
                        os.path.join(d, "split-dbg")], check=True)
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        agent_push.start(self, np.process_pipeline_config(".*split-dbg.*", "dbg", {"debug_info": {"upload": "true"}},
                                                          forward_url=srv.url), [os.path.join(d, "split-dbg"), "60"],
                         env=PACED)
        self.wait("upload", lambda: srv.debuginfo().get(build_id, {}).get("state") == "uploaded")
        with open(debug, "rb") as f:
            self.assertEqual(srv.debuginfo()[build_id]["data"], f.read())
        self.assertEqual(srv.debuginfo()[build_id]["name"], "split-dbg")

    def test_strip_text_section(self):
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        exe, build_id, port = self.start({"debug_info": {"upload": "true", "strip_text_section": "true"}}, srv)
        self.wait("upload", lambda: srv.debuginfo().get(build_id, {}).get("state") == "uploaded")
        got = srv.debuginfo()[build_id]
        self.assertEqual(got["type"], 2)  # TYPE_EXECUTABLE_NO_TEXT
        copy = os.path.join(np.tmpdir(self), "copy")
        with open(copy, "wb") as f:
            f.write(got["data"])
        self.assertLess(len(got["data"]), os.path.getsize(exe))
        # binutils read it: .text has no bytes but its address and size; the symbols, DWARF and
        # build ID are there, so the server names the binary's addresses from it.
        sections = subprocess.run(["readelf", "-SW", copy], check=True, capture_output=True, text=True)
        self.assertEqual(sections.stderr, "")
        text = next(l for l in sections.stdout.splitlines() if " .text " in l)
        self.assertIn("NOBITS", text)
        self.assertIn(" .debug_info ", sections.stdout)
        self.assertEqual(elf_functions(copy), elf_functions(exe))
        notes = subprocess.run(["readelf", "-nW", copy], check=True, capture_output=True, text=True).stdout
        self.assertIn(build_id, notes)
        lines = subprocess.run(["addr2line", "-f", "-e", copy, hex(next(s for s, e, n in elf_functions(exe) if n == "spin"))],
                               check=True, capture_output=True, text=True).stdout
        self.assertTrue(lines.startswith("spin\n") and "split.c:" in lines, lines)

    def test_server_has_it_or_fails(self):
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        # The first call of each kind fails: the file it was about is offered again in a later
        # interval. A file whose upload failed is "in progress" on the server until it is stale
        # (then ShouldInitiateUpload says yes again): stale at once here, so that every file
        # ends uploaded.
        srv.debuginfo_stale_s = 0
        srv.debuginfo_actions("ShouldInitiateUpload", [{"status": 503}])
        srv.debuginfo_actions("Upload", [{"status": 500}])
        srv.debuginfo_actions("UploadFinished", [{"status": 503}])
        exe, build_id, port = self.start({"debug_info": {"upload": "true"}}, srv)
        self.wait("upload after failures",
                  lambda: srv.debuginfo().get(build_id, {}).get("state") == "uploaded", seconds=60)
        self.wait("3 failures counted", lambda: upload_counts(port).get("failed", 0) >= 3)
        self.assertGreaterEqual(upload_counts(port).get("uploaded", 0), 1)
        failed = [r for r in srv.debuginfo_requests() if r["status"] not in (200, None)]
        self.assertEqual(sorted(r["method"] for r in failed), ["ShouldInitiateUpload", "Upload", "UploadFinished"])

    def test_reload_of_the_endpoint(self):
        # A changed pyroscope.write restarts its uploaders: the binary is asked about again, the
        # server has it, nothing is uploaded twice, and pushes go on.
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        exe, build_id, port = self.start({"debug_info": {"upload": "true"}}, srv)
        self.wait("upload", lambda: srv.debuginfo().get(build_id, {}).get("state") == "uploaded")
        cfg = self.agent.args[self.agent.args.index("--config") + 1]
        with open(cfg) as f:
            text = f.read()
        with open(cfg, "w") as f:
            f.write(text.replace(f'url = "{srv.url}"', f'url = "{srv.url}"\n    remote_timeout = "9s"'))
        req = urllib.request.Request(f"http://127.0.0.1:{port}/-/reload", data=b"", method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            self.assertEqual(r.status, 200)
        self.wait("the binary asked about again",
                  lambda: self.calls(srv, build_id).count("ShouldInitiateUpload") == 2)
        n = len(srv.pushes())
        self.wait("2 more pushes", lambda: len(srv.pushes()) >= n + 2)
        self.assertEqual(self.calls(srv, build_id),
                         ["ShouldInitiateUpload", "Upload", "UploadFinished", "ShouldInitiateUpload"])
        self.assertGreaterEqual(upload_counts(port).get("skipped", 0), 1)

    def test_server_wants_none(self):
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        srv.debuginfo_actions("ShouldInitiateUpload", [{"should": False, "reason": "DebugInfo upload disabled"}] * 50)
        exe, build_id, port = self.start({"debug_info": {"upload": "true"}}, srv)
        self.wait("ShouldInitiateUpload", lambda: self.calls(srv, build_id))
        n = len(srv.pushes())
        self.wait("3 more pushes", lambda: len(srv.pushes()) >= n + 3)
        # Asked once, answered no, settled: no upload, never asked again.
        self.assertEqual(self.calls(srv, build_id), ["ShouldInitiateUpload"])
        self.assertNotIn(build_id, srv.debuginfo())
        self.assertGreaterEqual(upload_counts(port).get("skipped", 0), 1)

    def test_slow_server_blocks_no_push(self):
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        # One worker, stuck for 30 s in the first call: pushes go on every 2 s meanwhile.
        srv.debuginfo_actions("ShouldInitiateUpload", [{"slow": 30}])
        exe, build_id, port = self.start({"debug_info": {"upload": "true", "worker_num": "1", "queue_size": "1"}},
                                         srv)
        self.wait("a debug info call", lambda: srv.debuginfo_requests())
        n = len(srv.pushes())
        t0 = time.time()
        self.wait("4 pushes during the slow call", lambda: len(srv.pushes()) >= n + 4, seconds=20)
        self.assertLess(time.time() - t0, 20)
        self.assertTrue(any(r["status"] is None for r in srv.debuginfo_requests()))  # still hanging


if __name__ == "__main__":
    unittest.main()
