"""The agent's HTTP server, local profile store and UI API through build/harness/http_ui,
fed with generated pprof (no BPF here; test_http_ui.py profiles a real workload):
status codes and content types of every endpoint, 404/405/411/413, /metrics through a
strict text-format parser, readiness and reload, debug pages, the JSON API and the pprof
download, the WebSocket update, listen errors, IPv6 and shutdown."""
import gzip
import json
import math
import os
import signal
import socket
import subprocess
import time
import unittest

import pprof
import promtext
from http_ui_harness import HARNESS, Harness
from np import tmpdir
from pprof_build import build
from wsclient import HandshakeError, WebSocket

# State changes need a Content-Type no web form can send (agent/http/guard.h).
PPROF = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}
HOT = ("nodeprof_test_hot_leaf", "compute", "main")
COLD = ("nodeprof_test_cold_leaf", "main")


def push(h, service, stacks, pid=None, **kw):
    q = f"/harness/pprof?service={service}" + (f"&pid={pid}" if pid else "")
    return h.request("POST", q, body=build(stacks, **kw), headers=PPROF)


class Endpoints(unittest.TestCase):
    def setUp(self):
        self.h = Harness(self, "--max-body", 65536)

    def test_health_and_ready(self):
        st, hd, body = self.h.get("/-/healthy")
        self.assertEqual(st, 200)
        self.assertTrue(hd["content-type"].startswith("text/plain"))
        self.assertIn(b"Healthy", body)
        st, _, body = self.h.get("/-/ready")
        self.assertEqual(st, 200, body)

    def test_unknown_paths_and_methods(self):
        for path in ("/nope", "/api", "/api/nope", "/metricsx", "/ui/nope.js", "/debug/nope"):
            st, _, _ = self.h.get(path)
            self.assertEqual(st, 404, path)
        st, hd, body = self.h.request("POST", "/metrics", body=b"x")
        self.assertEqual(st, 405)
        self.assertEqual(hd["allow"], "GET")
        st, hd, _ = self.h.request("DELETE", "/api/top")
        self.assertEqual(st, 405)
        st, hd, _ = self.h.get("/-/reload")
        self.assertEqual(st, 405)
        self.assertIn("POST", hd["allow"])

    def test_body_limit(self):
        st, hd, body = self.h.request("POST", "/harness/pprof?service=x", body=b"\0" * 70000, headers=PPROF)
        self.assertEqual(st, 413, body)
        self.assertEqual(hd.get("connection"), "close")
        # Just under the limit is read and handed to the handler (which rejects garbage with 400).
        st, _, body = self.h.request("POST", "/harness/pprof?service=x", body=b"\0" * 65536, headers=PPROF)
        self.assertEqual(st, 400, body)
        self.assertIn(b"pprof", body)
        # A chunked body has no length to check first.
        st, _, _ = self.h.request("POST", "/harness/pprof?service=x", body=iter([b"abc"]),
                                  headers={"Transfer-Encoding": "chunked", **PPROF})
        self.assertEqual(st, 411)
        # The server still serves after all that.
        self.assertEqual(self.h.get("/-/healthy")[0], 200)

    def test_one_request_per_connection_and_head(self):
        """Each answer closes its connection (no keep-alive, so nothing is pipelined: see
        on_http); clients such as http.client simply reconnect."""
        import http.client
        c = http.client.HTTPConnection(self.h.host, self.h.port, timeout=5)
        for _ in range(3):
            c.request("GET", "/-/healthy")
            r = c.getresponse()
            self.assertEqual(r.status, 200)
            self.assertEqual(r.getheader("connection"), "close")
            r.read()
        c.request("HEAD", "/api/services")
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        self.assertEqual(r.read(), b"")
        self.assertGreater(int(r.getheader("content-length")), 0)
        c.close()

    def test_reload_without_targets_is_400(self):
        st, _, body = self.h.request("POST", "/-/reload", headers=JSON)
        self.assertEqual(st, 400)
        self.assertIn(b"no targets file", body)

    def test_debug_pages(self):
        st, hd, body = self.h.get("/debug/")
        self.assertEqual(st, 200)
        self.assertTrue(hd["content-type"].startswith("text/html"))
        self.assertIn(b'href="/debug/targets"', body)
        self.assertIn(b'href="/debug/store"', body)
        st, hd, body = self.h.get("/debug/?format=json")
        names = [p["name"] for p in json.loads(body)]
        self.assertEqual(sorted(names), ["store", "targets"])
        push(self.h, "dbg<svc>", {HOT: 3})
        st, hd, body = self.h.get("/debug/store")
        self.assertEqual(st, 200)
        self.assertTrue(hd["content-type"].startswith("text/html"))
        self.assertIn(b"<table", body)
        self.assertIn(b"budget_bytes", body)
        st, hd, body = self.h.get("/debug/store?format=json")
        self.assertEqual(hd["content-type"], "application/json")
        stats = json.loads(body)
        self.assertEqual(stats["profiles"], 1)
        self.assertLessEqual(stats["bytes"], stats["budget_bytes"])
        self.assertEqual(self.h.get("/debug/store?format=xml")[0], 400)

    def test_ui_assets(self):
        st, hd, body = self.h.get("/")
        self.assertEqual(st, 200)
        self.assertEqual(hd["content-type"], "text/html; charset=utf-8")
        self.assertIn("script-src 'self'", hd["content-security-policy"])
        self.assertIn(b'<script src="/ui/app.js">', body)
        # everything the page loads is local: no http(s):// URL outside comments
        self.assertNotIn(b"https://", body)
        st, hd, js = self.h.get("/ui/app.js")
        self.assertEqual(st, 200)
        self.assertTrue(hd["content-type"].startswith("text/javascript"))
        self.assertIn(b"/api/flamegraph", js)
        st, hd, css = self.h.get("/ui/style.css")
        self.assertTrue(hd["content-type"].startswith("text/css"))
        with open(os.path.join(os.path.dirname(HARNESS), "..", "..", "agent", "ui", "assets", "app.js"), "rb") as f:
            self.assertEqual(f.read(), js, "the embedded app.js differs from the source: rebuild")


class Metrics(unittest.TestCase):
    def test_metrics_parse_and_have_the_families(self):
        h = Harness(self)
        push(h, "m-svc", {HOT: 2})
        st, hd, body = h.get("/metrics")
        self.assertEqual(st, 200)
        self.assertEqual(hd["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        fams = promtext.parse(body.decode())
        # (the service_name-labelled pyroscope_ebpf_pprof* families have series, hence lines,
        # only once the engine made a profile: test_http_ui.py checks them)
        types = {
            "pyroscope_ebpf_active_targets": "gauge",
            "pyroscope_ebpf_pprofs_dropped_total": "counter",
            "pyroscope_ebpf_profiling_sessions_total": "counter",
            "pyroscope_ebpf_profiling_sessions_failing_total": "counter",
            "pyroscope_fanout_latency": "histogram",
            "nodeprof_ebpf_bpf_samples_lost_total": "counter",
            "process_cpu_seconds_total": "counter",
            "process_resident_memory_bytes": "gauge",
            "process_virtual_memory_bytes": "gauge",
            "process_start_time_seconds": "gauge",
            "process_open_fds": "gauge",
            "process_max_fds": "gauge",
        }
        for name, t in types.items():
            self.assertIn(name, fams, name)
            self.assertEqual(fams[name].type, t, name)
            self.assertTrue(fams[name].help, name)
        self.assertEqual(fams["pyroscope_ebpf_active_targets"].help,
                         "Current number of active targets being tracked by the ebpf component")
        rss = fams["process_resident_memory_bytes"].value()
        self.assertGreater(rss, 1 << 20)
        self.assertLess(rss, 1 << 30)
        self.assertGreater(fams["process_virtual_memory_bytes"].value(), rss)
        start = fams["process_start_time_seconds"].value()
        self.assertLess(abs(start - time.time()), 120)
        fds, max_fds = fams["process_open_fds"].value(), fams["process_max_fds"].value()
        self.assertGreater(fds, 2)
        self.assertLessEqual(fds, max_fds)
        # the histogram has the full bucket set with +Inf
        les = [ls["le"] for n, ls, _ in fams["pyroscope_fanout_latency"].samples if n.endswith("_bucket")]
        self.assertEqual(les[-1], "+Inf")
        self.assertIn("0.005", les)
        # CPU only goes up between scrapes
        cpu1 = fams["process_cpu_seconds_total"].value()
        x = 0
        for i in range(2_000_000):
            x += i
        _, _, body2 = h.get("/metrics")
        cpu2 = promtext.parse(body2.decode())["process_cpu_seconds_total"].value()
        self.assertGreaterEqual(cpu2, cpu1)

    def test_parser_rejects_what_it_must(self):
        bad = [
            "# TYPE a_total counter\na_total -1\n",
            "# TYPE a counter\na 1\n",
            "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
            "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
            "x{a=\"b\\q\"} 1\n",
            "x{a=\"b\"} 1\nx{a=\"b\"} 2\n",
            "x 1\ny 1\nx{a=\"c\"} 1\n",
            "x 1\n# TYPE x gauge\n",
            "x 1",
        ]
        for text in bad:
            with self.assertRaises(ValueError, msg=text):
                promtext.parse(text)
        ok = promtext.parse('# HELP g a \\\\ b\\nc\n# TYPE g gauge\ng{l="q\\"\\\\\\n"} NaN\n'
                            '# TYPE h histogram\nh_bucket{le="0.5"} 1\nh_bucket{le="+Inf"} 2\nh_sum 3.5\nh_count 2\n')
        self.assertEqual(ok["g"].help, "a \\ b\nc")
        self.assertEqual(ok["g"].samples[0][1], {"l": 'q"\\\n'})
        self.assertTrue(math.isnan(ok["g"].value({"l": 'q"\\\n'})))
        self.assertEqual(ok["h"].value(suffix="_count"), 2)


class Ready(unittest.TestCase):
    def test_ready_after_delay_and_reload(self):
        d = tmpdir(self)
        targets = os.path.join(d, "targets.json")
        with open(targets, "w") as f:
            json.dump([{"__process_pid__": str(os.getpid()), "service_name": "self"}], f)
        h = Harness(self, "--targets", targets, "--ready-after", "1500ms", "--collect-interval", "1s")
        st, _, body = h.get("/-/ready")
        self.assertEqual(st, 503)
        self.assertIn(b"not ready", body)
        deadline = time.time() + 15
        while time.time() < deadline and st != 200:
            time.sleep(0.2)
            st, _, body = h.get("/-/ready")
        self.assertEqual(st, 200, body)
        # reload: a valid file is applied and shows on the debug page
        with open(targets, "w") as f:
            json.dump([{"__process_pid__": "1", "service_name": "init"}], f)
        st, _, body = h.request("POST", "/-/reload", headers=JSON)
        self.assertEqual(st, 200, body)
        st, _, body = h.get("/debug/targets?format=json")
        self.assertEqual(json.loads(body), [{"__process_pid__": "1", "service_name": "init"}])
        # an invalid one is refused with the reason and changes nothing
        with open(targets, "w") as f:
            f.write('[{"service_name": 5}]')
        st, _, body = h.request("POST", "/-/reload", headers=JSON)
        self.assertEqual(st, 400)
        self.assertIn(b"must be a string", body)
        st, _, body = h.get("/debug/targets?format=json")
        self.assertEqual(json.loads(body)[0]["service_name"], "init")
        # the engine's metrics come from the real profiler
        fams = promtext.parse(h.get("/metrics")[2].decode())
        self.assertEqual(fams["pyroscope_ebpf_active_targets"].value(), 1)
        self.assertGreaterEqual(fams["pyroscope_ebpf_profiling_sessions_total"].value(), 1)


class Api(unittest.TestCase):
    def setUp(self):
        self.h = Harness(self)
        self.assertEqual(push(self.h, "alpha", {HOT: 30, COLD: 10}, pid=11)[0], 200)
        self.assertEqual(push(self.h, "alpha", {HOT: 10}, pid=12)[0], 200)
        self.assertEqual(push(self.h, "beta", {COLD: 5}, pid=13)[0], 200)

    def get_json(self, path):
        st, hd, body = self.h.get(path)
        self.assertEqual(st, 200, body)
        self.assertEqual(hd["content-type"], "application/json")
        return json.loads(body)

    def test_services(self):
        s = self.get_json("/api/services")
        by = {x["name"]: x for x in s["services"]}
        self.assertEqual(set(by), {"alpha", "beta"})
        self.assertEqual(by["alpha"]["total"], 50 * 10_000_000)
        self.assertEqual([p["id"] for p in by["alpha"]["processes"]], ["pid:11", "pid:12"])
        self.assertEqual(by["alpha"]["processes"][0]["pid"], 11)

    def test_flamegraph(self):
        fg = self.get_json("/api/flamegraph?from=now-5m&until=now&group=none")
        self.assertEqual(fg["unit"], "nanoseconds")
        tree = fg["tree"]
        self.assertEqual(tree["name"], "total")
        self.assertEqual(tree["total"], 55 * 10_000_000)
        main = [c for c in tree["children"] if c["name"] == "main"][0]
        compute = [c for c in main["children"] if c["name"] == "compute"][0]
        self.assertEqual(compute["total"], 40 * 10_000_000)
        self.assertEqual(compute["children"][0]["name"], HOT[0])
        self.assertEqual(compute["children"][0]["self"], 40 * 10_000_000)
        fg = self.get_json("/api/flamegraph?service=alpha&process=pid:12")
        self.assertEqual(fg["total"], 10 * 10_000_000)
        fg = self.get_json("/api/flamegraph?group=service")
        self.assertEqual(sorted(c["name"] for c in fg["tree"]["children"]), ["alpha", "beta"])
        for bad in ("from=yesterday", "until=now-xyz", "from=now&until=now-1h", "group=nope", "max_nodes=0"):
            st, _, body = self.h.get("/api/flamegraph?" + bad)
            self.assertEqual(st, 400, bad)

    def test_top_and_timeline(self):
        top = self.get_json("/api/top?service=alpha")
        self.assertEqual(top["functions"][0]["name"], HOT[0])
        self.assertEqual(top["functions"][0]["self"], 40 * 10_000_000)
        main = [f for f in top["functions"] if f["name"] == "main"][0]
        self.assertEqual(main["total"], 50 * 10_000_000)
        self.assertEqual(main["self"], 0)
        self.assertEqual(len(self.get_json("/api/top?limit=1")["functions"]), 1)
        tl = self.get_json("/api/timeline?from=now-1m")
        self.assertEqual(sum(p[1] for p in tl["points"]), 55 * 10_000_000)

    def test_pprof_download(self):
        st, hd, body = self.h.get("/api/pprof?service=alpha")
        self.assertEqual(st, 200)
        self.assertEqual(hd["content-type"], "application/octet-stream")
        self.assertRegex(hd["content-disposition"], r'^attachment; filename="nodeprof-alpha-\d{8}T\d{6}Z\.pb\.gz"$')
        self.assertEqual(body[:2], b"\x1f\x8b")
        p = pprof.decode(body, ingest=False)  # the range is synthetic: only its format is checked
        st_names = [p["string_table"][p["sample_type"][0][k]] for k in (0, 1)]
        self.assertEqual(st_names, ["cpu", "nanoseconds"])
        self.assertEqual(sum(s["value"][0] for s in p["sample"]), 50 * 10_000_000)
        st, _, body = self.h.get("/api/pprof?service=nobody")
        self.assertEqual(st, 404)
        self.assertIn(b"no samples", body)

    def test_bad_profiles_are_refused(self):
        st, _, body = self.h.request("POST", "/harness/pprof?service=x", body=b"\x1f\x8bgarbage", headers=PPROF)
        self.assertEqual(st, 400)
        st, _, body = self.h.request("POST", "/harness/pprof?service=x", body=gzip.compress(b"\x0a\x02\x08\x01"),
                                      headers=PPROF)
        self.assertEqual(st, 400)
        stats = self.get_json("/api/stats")
        self.assertEqual(stats["rejected"], 2)
        self.assertEqual(stats["profiles"], 3)


class Live(unittest.TestCase):
    def test_websocket_update_after_a_profile(self):
        h = Harness(self, "--notify-interval", "100ms")
        ws = WebSocket(h.host, h.port, "/ws")
        self.addCleanup(ws.close)
        time.sleep(0.2)
        push(h, "live-svc", {HOT: 1})
        msg = json.loads(ws.recv(timeout=5))
        self.assertEqual(msg["type"], "profiles")
        self.assertEqual(msg["services"], ["live-svc"])
        self.assertGreaterEqual(msg["count"], 1)
        # a burst is coalesced into few messages
        for _ in range(20):
            push(h, "live-svc", {COLD: 1})
        got = 0
        deadline = time.time() + 2
        while time.time() < deadline:
            try:
                got += json.loads(ws.recv(timeout=0.5))["count"]
            except socket.timeout:
                break
        self.assertEqual(got, 20)
        # upgrades elsewhere are refused
        with self.assertRaises(HandshakeError) as e:
            WebSocket(h.host, h.port, "/metrics")
        self.assertIn(" 404 ", e.exception.status)


class Listen(unittest.TestCase):
    def test_address_in_use_and_invalid(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        self.addCleanup(s.close)
        port = s.getsockname()[1]
        p = subprocess.run([HARNESS, "--listen", f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"listen 127.0.0.1:{port}", p.stderr)
        self.assertIn("Address already in use", p.stderr)
        for bad, why in (("localhost", "expected host:port"), ("1.2.3.4:99999", "port must be"),
                         ("::1:80", "[addr]:port"), ("192.0.2.1:80", "Cannot assign requested address")):
            p = subprocess.run([HARNESS, "--listen", bad], capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 1, bad)
            self.assertIn(why, p.stderr, bad)

    def test_ipv6_and_clean_shutdown(self):
        h = Harness(self, listen="[::1]:0")
        self.assertEqual(h.host, "::1")
        st, _, _ = h.get("/-/healthy")
        self.assertEqual(st, 200)
        push(h, "v6", {HOT: 1})
        ws = WebSocket(h.host, h.port)
        rc, took, out = h.stop()
        ws.close()
        self.assertEqual(rc, 0, h.stderr)
        self.assertLess(took, 5)
        self.assertEqual(json.loads(out.strip().splitlines()[-1])["profiles"], 1)


if __name__ == "__main__":
    unittest.main()
