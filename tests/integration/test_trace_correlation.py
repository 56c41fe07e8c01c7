"""Trace correlation (docs/specs/trace-correlation.md): with OpenTelemetry eBPF Instrumentation
(OBI), as Alloy's pyroscope.ebpf does it, OBI keeps the span each thread serves in the map it
pins at BPF_FS_ROOT/otel/traces_ctx_v1; and with an OpenTelemetry SDK that publishes its process
context (OTEP 4719) and thread context (OTEP 4947, the thread-local otel_thread_ctx_v1). Samples
of a thread inside a span carry trace_id and span_id labels (lowercase hex) in the pushes, the
others none. Each test plays OBI itself (tests/lib/obi.py) on a BPF file system of its own, and
the SDK is a workload of its own (workloads/otel_thread_ctx.c), whose second thread is the one
"inside a span"."""
import os
import subprocess
import time
import unittest

import agent_push
import np
import obi
from pyroscope import PyroscopeServer

# It mostly waits for pushes: it runs beside the other modules (tests/run.py), its workloads'
# threads busy 15% of the time (workloads/pace.h) so that the modules measuring CPU shares keep
# the CPUs; its BPF file systems are its own temporary mounts.
BACKGROUND = True

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
SPAN = bytes.fromhex("b7ad6b7169203331")
# workloads/otel_thread_ctx.c's record
OTEL_TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
OTEL_SPAN = bytes.fromhex("00f067aa0ba902b7")
OTEL_FLAGS = ("-O0", "-fno-omit-frame-pointer", "-g", "-pthread",
              "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1")


def wait_file(test, path, deadline=20):
    end = time.time() + deadline
    while time.time() < end:
        if os.path.exists(path):
            with open(path) as f:
                return f.read()
        time.sleep(0.1)
    test.fail(f"{path} never appeared")


class TraceCorrelation(unittest.TestCase):

    def start(self, ebpf_args, workload="span_threads", flags=None, extra=(), env=None):
        """The workload (with its extra arguments; flags: gcc's, or a function of the build
        directory giving them) and the agent pushing to a test Pyroscope; (server, pid, tid of the
        thread in inside_span); self.agent_log is the agent's log file,
        self.port its HTTP port."""
        d = np.tmpdir(self)
        if callable(flags):
            flags = flags(d)
        exe = np.build_workload(workload, d, *([flags] if flags else []))
        tid_file = os.path.join(d, "tid")
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        self.port, agent = agent_push.start(self, np.process_pipeline_config(f".*{workload}.*", "spans", ebpf_args,
                                                                      forward_url=srv.url),
                                    [exe, "60", tid_file, *extra],
                                    env=dict(env or os.environ, WORKLOAD_BUSY_PERCENT="15"))
        self.agent_log = os.readlink(f"/proc/{agent.pid}/fd/1")
        tid = int(wait_file(self, tid_file))
        pid = int(open(f"/proc/{tid}/status").read().split("\nTgid:")[1].split()[0])
        return srv, pid, tid

    def labels_by_function(self, srv, after=0, need=8, deadline=40):
        """{"inside_span"/"outside_span": {labels tuple: samples}} over the pushes after the first
        `after` ones, once each function has need samples."""
        end = time.time() + deadline
        while True:
            out = {"inside_span": {}, "outside_span": {}}
            for push in srv.pushes()[after:]:
                for series in push["series"]:
                    for prof in series["profiles"]:
                        for s in prof["stacks"]:
                            for fn in out:
                                if any(f == fn or f.startswith(fn + " ") for f in s["frames"]):
                                    k = tuple(sorted(s["labels"].items()))
                                    out[fn][k] = out[fn].get(k, 0) + 1
            if all(sum(v.values()) >= need for v in out.values()) or time.time() > end:
                break
            time.sleep(1)
        for r in srv.all_requests():
            self.assertEqual(r["violations"], [], r)
        for fn, v in out.items():
            self.assertGreaterEqual(sum(v.values()), need, (fn, out))
        return out

    def log_lines(self, text):
        with open(self.agent_log) as f:
            return [line for line in f if text in line]

    def assert_correlated(self, got):
        want = (("span_id", SPAN.hex()), ("trace_id", TRACE.hex()))
        self.assertEqual(set(got["inside_span"]), {want}, got)
        self.assertEqual(set(got["outside_span"]), {()}, got)

    def test_obi_map_found(self):
        """OBI started first: its map is used; only the span's thread gets the labels."""
        root = obi.bpf_fs_root(self)
        fd = obi.create(root)
        self.addCleanup(os.close, fd)
        srv, pid, tid = self.start({"bpf_fs_root": f'"{root}"'})
        obi.set_span(fd, pid, tid, TRACE, SPAN)
        # the interval in progress when the span was set may hold samples of both kinds
        n = len(srv.pushes()) + 1
        self.assert_correlated(self.labels_by_function(srv, after=n))
        self.assertEqual(len(self.log_lines("using OBI's trace context map")), 1, open(self.agent_log).read())

    def test_obi_map_absent_is_created(self):
        """The profiler started first: it creates and pins the map of the spec's layout, which OBI
        (here the test) then fills; the trailing / of Alloy's default root is optional."""
        root = obi.bpf_fs_root(self)
        srv, pid, tid = self.start({"bpf_fs_root": f'"{root}/"', "obi_process_context_enabled": "true"})
        end = time.time() + 20
        while not os.path.exists(obi.map_path(root)) and time.time() < end:
            time.sleep(0.2)
        fd = obi.open_pinned(root)
        self.addCleanup(os.close, fd)
        self.assertEqual(obi.info(fd), (obi.MAP_TYPE_LRU_HASH, 8, 24, obi.ENTRIES, "traces_ctx_v1"))
        self.assertEqual(os.stat(os.path.dirname(obi.map_path(root))).st_mode & 0o7777, 0o1700)
        obi.set_span(fd, pid, tid, TRACE, SPAN)
        n = len(srv.pushes()) + 1
        self.assert_correlated(self.labels_by_function(srv, after=n))
        self.assertEqual(len(self.log_lines("created and pinned the trace context map")), 1,
                         open(self.agent_log).read())

    def test_off_or_unavailable_no_labels(self):
        """obi_process_context_enabled = false ignores a filled map; a bpf_fs_root on no BPF file
        system, or with a map of another layout at the path, leaves profiles without span IDs and
        the agent running, with the reason in its log."""
        root = obi.bpf_fs_root(self)
        fd = obi.create(root)
        self.addCleanup(os.close, fd)
        srv, pid, tid = self.start({"bpf_fs_root": f'"{root}"', "obi_process_context_enabled": "false"})
        obi.set_span(fd, pid, tid, TRACE, SPAN)
        got = self.labels_by_function(srv, after=len(srv.pushes()) + 1)
        self.assertEqual(set(got["inside_span"]) | set(got["outside_span"]), {()}, got)
        self.assertEqual(self.log_lines("trace context map"), [])

        for root, bpffs in ((np.tmpdir(self), False), (obi.bpf_fs_root(self), True)):
            if bpffs:
                bad = obi.create(root, map_type=obi.MAP_TYPE_HASH, value_size=16)
                self.addCleanup(os.close, bad)
            srv, pid, tid = self.start({"bpf_fs_root": f'"{root}"'})
            got = self.labels_by_function(srv)
            self.assertEqual(set(got["inside_span"]) | set(got["outside_span"]), {()}, got)
            # said once, with the reason
            why = "is not a traces_ctx_v1 map" if bpffs else "is not on a BPF file system"
            warned = self.log_lines("no trace correlation with OBI")
            self.assertEqual(len(warned), 1, open(self.agent_log).read())
            self.assertIn(why, warned[0])

    def test_otel_thread_ctx(self):
        """An SDK's thread context: the thread whose otel_thread_ctx_v1 points to a valid record
        gets its IDs, over OBI's entry for the same thread (the SDK's record is authoritative);
        the thread without a record gets OBI's entry (the fallback)."""
        root = obi.bpf_fs_root(self)
        fd = obi.create(root)
        self.addCleanup(os.close, fd)
        srv, pid, tid = self.start({"bpf_fs_root": f'"{root}"'}, "otel_thread_ctx", OTEL_FLAGS, ["1"])
        obi.set_span(fd, pid, tid, TRACE, SPAN)
        obi.set_span(fd, pid, pid, bytes(reversed(TRACE)), bytes(reversed(SPAN)))
        n = len(srv.pushes()) + 1
        got = self.labels_by_function(srv, after=n)
        self.assertEqual(set(got["inside_span"]), {(("span_id", OTEL_SPAN.hex()), ("trace_id", OTEL_TRACE.hex()))},
                         got)
        self.assertEqual(set(got["outside_span"]), {(("span_id", SPAN[::-1].hex()),
                                                     ("trace_id", TRACE[::-1].hex()))}, got)
        m = agent_push.metrics(self.port)
        self.assertEqual(m["nodeprof_otel_thread_ctx_processes"].value(), 1)
        self.assertEqual(m["nodeprof_otel_thread_ctx_unsupported_processes_total"].value(), 0)

    def test_otel_thread_ctx_in_library(self):
        """otel_thread_ctx_v1 defined in a library loaded at start-up (its static TLS block, found
        through ld.so's link_map), accessed with TLS descriptors as OTEP 4947 recommends."""
        def flags(d):
            subprocess.run(["gcc", "-O0", "-g", "-shared", "-fPIC", "-mtls-dialect=gnu2", "-o",
                            os.path.join(d, "libotelctx.so"),
                            os.path.join(np.WORKLOADS, "otel_thread_ctx_lib.c")], check=True, capture_output=True)
            return ("-O0", "-fno-omit-frame-pointer", "-g", "-pthread", "-DOTEL_CTX_LIB", "-Wl,--no-as-needed",
                    f"-L{d}", "-lotelctx", f"-Wl,-rpath,{d}")
        srv, pid, tid = self.start({"bpf_fs_root": f'"{obi.bpf_fs_root(self)}"'}, "otel_thread_ctx", flags, ["1"])
        # samples taken before the agent first saw the process carry no context
        got = self.labels_by_function(srv, after=len(srv.pushes()) + 1)
        self.assertEqual(set(got["inside_span"]), {(("span_id", OTEL_SPAN.hex()), ("trace_id", OTEL_TRACE.hex()))},
                         got)
        self.assertEqual(set(got["outside_span"]), {()}, got)

    def start_dlopen(self, dialect):
        """otel_thread_ctx.c with otel_thread_ctx_lib.c built with -mtls-dialect=dialect and
        dlopen'd at start-up; then as start. One per test: an agent profiles every such workload."""
        d = np.tmpdir(self)
        lib = os.path.join(d, "libotelctx.so")
        subprocess.run(["gcc", "-O0", "-g", "-shared", "-fPIC", f"-mtls-dialect={dialect}", "-o", lib,
                        os.path.join(np.WORKLOADS, "otel_thread_ctx_lib.c")], check=True, capture_output=True)
        flags = ("-O0", "-fno-omit-frame-pointer", "-g", "-pthread", "-DOTEL_CTX_DLOPEN", "-Wl,--no-as-needed",
                 "-ldl")
        return self.start({"bpf_fs_root": f'"{obi.bpf_fs_root(self)}"'}, "otel_thread_ctx", flags, ["1"],
                          env=dict(os.environ, OTEL_CTX_LIB=lib))

    def test_otel_thread_ctx_dlopen_static(self):
        """otel_thread_ctx_v1 in a library dlopen'd after start-up with TLS descriptors: glibc puts
        its block in the static TLS surplus when there is room, so it has an l_tls_offset, read as
        for a library loaded at start-up: labels."""
        srv, pid, tid = self.start_dlopen("gnu2")
        got = self.labels_by_function(srv, after=len(srv.pushes()) + 1)
        self.assertEqual(set(got["inside_span"]), {(("span_id", OTEL_SPAN.hex()), ("trace_id", OTEL_TRACE.hex()))},
                         got)
        self.assertEqual(set(got["outside_span"]), {()}, got)
        self.assertEqual(self.log_lines("cannot read this process's OpenTelemetry thread context"), [])
        self.assertEqual(agent_push.metrics(self.port)["nodeprof_otel_thread_ctx_processes"].value(), 1)

    def test_otel_thread_ctx_dlopen_dynamic_not_supported(self):
        """The same library with the traditional general dynamic model stays in dynamic TLS (reached
        through each thread's DTV), which nodeprof does not read yet: no labels, one warning with
        the reason, the process counted."""
        srv, pid, tid = self.start_dlopen("gnu")
        got = self.labels_by_function(srv)
        self.assertEqual(set(got["inside_span"]) | set(got["outside_span"]), {()}, got)
        warned = self.log_lines("cannot read this process's OpenTelemetry thread context")
        self.assertEqual(len(warned), 1, open(self.agent_log).read())
        self.assertIn("dynamic", warned[0])
        m = agent_push.metrics(self.port)
        self.assertEqual(m["nodeprof_otel_thread_ctx_unsupported_processes_total"].value(), 1)
        self.assertEqual(m["nodeprof_otel_thread_ctx_processes"].value(), 0)

    def test_otel_thread_ctx_published_late(self):
        """A process context published after the process was first sampled is found by the
        agent's next look (10 s after it first saw the process)."""
        srv, pid, tid = self.start({"bpf_fs_root": f'"{obi.bpf_fs_root(self)}"'}, "otel_thread_ctx", OTEL_FLAGS,
                                   ["1", "3"])
        time.sleep(16)
        got = self.labels_by_function(srv, after=len(srv.pushes()) + 1)
        self.assertEqual(set(got["inside_span"]), {(("span_id", OTEL_SPAN.hex()), ("trace_id", OTEL_TRACE.hex()))},
                         got)
        self.assertEqual(set(got["outside_span"]), {()}, got)

    def test_otel_thread_ctx_invalid_or_off(self):
        """A record whose valid byte is 0 gives no labels; obi_process_context_enabled = false
        reads no thread context."""
        for args, valid in (({}, "0"), ({"obi_process_context_enabled": "false"}, "1")):
            with self.subTest(args=args, valid=valid):
                args = dict(args, bpf_fs_root=f'"{obi.bpf_fs_root(self)}"')
                srv, pid, tid = self.start(args, "otel_thread_ctx", OTEL_FLAGS, [valid])
                got = self.labels_by_function(srv)
                self.assertEqual(set(got["inside_span"]) | set(got["outside_span"]), {()}, got)


if __name__ == "__main__":
    unittest.main()
