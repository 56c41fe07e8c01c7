"""What a web page in the user's browser, or a client on the pod network, can make
`nodeprof run` do (issue 18, "The HTTP server"), against the real binary with a
configuration that needs no BPF: DNS rebinding (foreign Host names refused, the names
scrapers, probes and port-forwards send accepted), cross-origin WebSocket upgrades and
state changes refused (and the configuration not reloaded), out-of-range numbers in
queries answered 400, and the metrics-only listener serving /metrics and health and
nothing else. After all of it the agent still serves, counted every refusal, logged
each reason once and exits 0 on SIGTERM."""
import http.client
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import np
import promtext
from wsclient import HandshakeError, WebSocket

CONFIG = """discovery.process "p" {
  refresh_interval = "1s"
}
discovery.relabel "%s" {
  targets = discovery.process.p.targets
  rule {
    target_label = "service_name"
    replacement = "x"
  }
}
"""
ALLOWED = "profiles.example.test"
JSON = {"Content-Type": "application/json"}


class Agent(unittest.TestCase):
    """One agent for the class (its start is most of the cost), with the UI on one
    loopback port and /metrics + health on another."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nodeprof-test-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        cls.config = os.path.join(cls.dir, "c.alloy")
        with open(cls.config, "w") as f:
            f.write(CONFIG % "before")
        cls.port, cls.mport = np.free_port(), np.free_port()
        cls.log = open(os.path.join(cls.dir, "agent.log"), "w+")
        cls.proc = subprocess.Popen([np.NODEPROF, "run", "--config", cls.config, "--http-listen",
                                     f"127.0.0.1:{cls.port}", "--metrics-listen", f"127.0.0.1:{cls.mport}",
                                     "--http-allowed-host", ALLOWED], stdout=cls.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                if request(cls.mport, "GET", "/-/ready")[0] == 200:
                    return
            except OSError:
                pass
            if cls.proc.poll() is not None:
                break
            time.sleep(0.1)
        cls.proc.kill()
        raise AssertionError(f"the agent did not come up: {cls.agent_log()}")

    @classmethod
    def tearDownClass(cls):
        """The agent survived every test: it exits 0 on SIGTERM, and logged each kind of
        refusal it counted once (not once per request)."""
        fam = promtext.parse(request(cls.mport, "GET", "/metrics")[2].decode())["nodeprof_http_refused_requests_total"]
        counted = {r: fam.value({"reason": r}) for r in ("host", "origin", "simple_request")}
        cls.proc.send_signal(signal.SIGTERM)
        try:
            rc = cls.proc.wait(timeout=10)
        finally:
            if cls.proc.poll() is None:
                cls.proc.kill()
                cls.proc.wait()
        log = cls.agent_log()
        cls.log.close()
        if rc != 0:
            raise AssertionError(f"nodeprof run exited {rc} after the tests: {log}")
        for reason, n in counted.items():
            logged = len(re.findall(rf'msg="request refused.*reason={reason} ', log))
            if logged != min(n, 1):
                raise AssertionError(f"{n} refusals of reason {reason} logged {logged} times, want once: {log}")

    @classmethod
    def agent_log(cls):
        cls.log.flush()
        with open(cls.log.name) as f:
            return f.read()

    def ui(self, method, path, **kw):
        return request(self.port, method, path, **kw)

    def refused(self, reason):
        fam = promtext.parse(request(self.mport, "GET", "/metrics")[2].decode())["nodeprof_http_refused_requests_total"]
        return fam.value({"reason": reason})

    def components(self):
        st, _, body = self.ui("GET", "/debug/components?format=json")
        self.assertEqual(st, 200, body)
        return sorted(re.findall(r'"component":"([^"]+)"', body.decode()))

    # ---- DNS rebinding ----

    def test_foreign_host_names_are_refused(self):
        before = self.refused("host")
        bad = ["evil.example.com", f"evil.example.com:{self.port}", "127.0.0.1.evil.example.com",
               "127.0.0.1@evil.example.com", "localhost.evil.example.com", f"{ALLOWED}.evil.example.com",
               "[::1", "localhost:99999", "local host", "evil.example.com:80:80", "*"]
        for host in bad:
            for path in ("/", "/api/services", "/debug/targets", "/debug/", "/ui/app.js"):
                st, _, body = self.ui("GET", path, host=host)
                self.assertEqual(st, 403, f"Host {host!r} {path}: {body[:200]}")
                self.assertIn(b"--http-allowed-host", body)
        self.assertEqual(self.refused("host") - before, len(bad) * 5)

    def test_own_names_and_what_probes_and_port_forwards_send_are_served(self):
        good = [f"127.0.0.1:{self.port}", "127.0.0.1", f"localhost:{self.port}", "localhost:8080",  # port-forward
                "LocalHost.", f"[::1]:{self.port}", "[::ffff:127.0.0.1]", "10.42.0.17:4100",  # a pod IP (kubelet)
                "app.localhost:3000", f"{ALLOWED}:443", ALLOWED.upper(), f"{os.uname().nodename}:{self.port}"]
        for host in good:
            st, hd, body = self.ui("GET", "/", host=host)
            self.assertEqual(st, 200, f"Host {host!r}: {body[:300]}")
            self.assertIn(b"<html", body.lower())
        # No Host at all: HTTP/1.0, never a browser.
        st, _, _ = self.ui("GET", "/api/stats", host=None, http10=True)
        self.assertEqual(st, 200)

    def test_metrics_and_health_answer_any_host(self):
        """Scrapers and probes address the agent by whatever name they were given; these
        pages hold no profiles and no pod labels."""
        for path in ("/metrics", "/-/healthy", "/-/ready"):
            st, _, body = self.ui("GET", path, host="scraper.monitoring.svc.cluster.local:4100")
            self.assertEqual(st, 200, body)

    # ---- cross-site requests ----

    def test_cross_origin_websocket_is_refused(self):
        before = self.refused("origin")
        host = f"127.0.0.1:{self.port}"
        for origin in ("http://evil.example.com", "null", "http://192.168.1.50:8000",   # another site, even at an IP
                       f"http://127.0.0.1:{self.port + 1}", f"https://evil.example.com:{self.port}",
                       f"ftp://127.0.0.1:{self.port}", f"http://127.0.0.1:{self.port}/path"):
            with self.assertRaises(HandshakeError, msg=origin) as cm:
                WebSocket("127.0.0.1", self.port, headers={"Origin": origin})
            self.assertIn("403", cm.exception.status, origin)
        # DNS rebinding: the rebound page's Origin matches its Host; the Host check stops it.
        with self.assertRaises(HandshakeError) as cm:
            WebSocket("127.0.0.1", self.port, headers={"Host": f"evil.example.com:{self.port}",
                                                       "Origin": f"http://evil.example.com:{self.port}"})
        self.assertIn("403", cm.exception.status)
        self.assertEqual(self.refused("origin") - before, 7)
        # The UI's own page (same origin), a port-forward and a client without Origin get 101.
        for headers in ({"Origin": f"http://{host}"}, {"Host": "localhost:8080", "Origin": "http://localhost:8080"},
                        {"Host": f"{ALLOWED}", "Origin": f"https://{ALLOWED}:443"}, {}):
            ws = WebSocket("127.0.0.1", self.port, headers=headers)
            ws.close()
        # A page of another site cannot read the API with its Origin either.
        st, _, _ = self.ui("GET", "/api/services", headers={"Origin": "http://evil.example.com"})
        self.assertEqual(st, 403)

    def test_cross_origin_and_simple_reloads_are_refused_and_change_nothing(self):
        self.assertEqual(self.components(), ["discovery.process.p", "discovery.relabel.before"])
        with open(self.config, "w") as f:
            f.write(CONFIG % "after")
        origin = f"http://127.0.0.1:{self.port}"
        cross = {"Sec-Fetch-Site": "cross-site"}  # what every current browser adds to another site's request
        attempts = [
            # what an HTML form or a no-cors fetch of another site can send
            ({"Content-Type": "text/plain", "Origin": "http://evil.example.com", **cross}, b"x"),
            ({"Content-Type": "text/plain", **cross}, b"x"),
            ({"Content-Type": " Text/Plain ; charset=utf-8", "Origin": origin}, b"x"),
            ({"Content-Type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-site"}, b"a=b"),
            ({"Content-Type": "multipart/form-data; boundary=x", **cross}, b"--x--"),
            (cross, None),
            ({"Sec-Fetch-Site": "same-origin"}, None),  # the UI's own, but a type a form can send
            # non-simple, but from another site (its preflight would have failed)
            ({"Content-Type": "application/json", "Origin": "http://evil.example.com"}, b"{}"),
            ({"Content-Type": "application/json", **cross}, b"{}"),
            ({"Content-Type": "application/json", "Host": "evil.example.com"}, b"{}"),
        ]
        for method in ("POST", "PUT"):
            for headers, body in attempts:
                headers = dict(headers)
                host = headers.pop("Host", f"127.0.0.1:{self.port}")
                st, _, text = self.ui(method, "/-/reload", headers=headers, body=body, host=host)
                self.assertEqual(st, 403, f"{method} {headers}: {text}")
        self.assertEqual(self.components(), ["discovery.process.p", "discovery.relabel.before"])
        self.assertNotIn("configuration reloaded", self.agent_log())
        # curl -X POST -H 'Content-Type: application/json', and the same from the UI's own origin.
        st, _, text = self.ui("POST", "/-/reload", headers=JSON)
        self.assertEqual(st, 200, text)
        self.assertEqual(self.components(), ["discovery.process.p", "discovery.relabel.after"])
        with open(self.config, "w") as f:
            f.write(CONFIG % "before")
        st, _, text = self.ui("POST", "/-/reload", headers={**JSON, "Origin": origin, "Sec-Fetch-Site": "same-origin"})
        self.assertEqual(st, 200, text)
        self.assertEqual(self.components(), ["discovery.process.p", "discovery.relabel.before"])
        # curl -X POST URL/-/reload, as Prometheus and Alloy users reload: neither an Origin nor a
        # Sec-Fetch-Site, so no web page sent it.
        with open(self.config, "w") as f:
            f.write(CONFIG % "after")
        r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                            f"http://127.0.0.1:{self.port}/-/reload"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.stdout, "200", r.stderr)
        self.assertEqual(self.components(), ["discovery.process.p", "discovery.relabel.after"])

    # ---- numbers ----

    def test_out_of_range_numbers_are_400(self):
        huge_fraction = "1." + "1" * 400 + "s"
        cases = {
            "from=now--2500000h": "without a sign",
            "from=now-%2B5m": "without a sign",
            "until=now-2500000h": "before 1970",
            "from=now-9000000000000000000ns": "before 1970",
            "from=now-99999999999h": "too large",
            f"from=now-{huge_fraction}": "too large",
            "from=now-5": "unit",
            "from=99999999999999999999": "milliseconds since the epoch",
            "from=9223372036855": "milliseconds since the epoch",
            "from=-1": "milliseconds since the epoch",
            "from=%2B5": "milliseconds since the epoch",
            "from=%205": "milliseconds since the epoch",
            "from=0x10": "milliseconds since the epoch",
            "until=1": "until must be after from",
        }
        for api in ("services", "flamegraph", "top", "timeline", "pprof"):
            for query, why in cases.items():
                st, _, body = self.ui("GET", f"/api/{api}?{query}")
                self.assertEqual(st, 400, f"/api/{api}?{query}: {body[:200]}")
                self.assertIn(why, body.decode(), query)
        sizes = {"max_nodes": ("0", "-1", "20001", "18446744073709551616", "1e3", "%2B5", "5%20"),
                 "limit": ("0", "100001", "99999999999999999999999")}
        for name, values in sizes.items():
            api = "flamegraph" if name == "max_nodes" else "top"
            for v in values:
                st, _, body = self.ui("GET", f"/api/{api}?{name}={v}")
                self.assertEqual(st, 400, f"{name}={v}: {body}")
                self.assertIn(f"{name} must be a number from 1 to", body.decode())
        # The largest time that fits, and in-range values, are served.
        for query in ("from=0&until=9223372036854", "from=now-15m&until=now", "from=now-1h30m&until=now-0s",
                      "from=now-1.5h", "max_nodes=20000", "max_nodes=1"):
            st, _, body = self.ui("GET", f"/api/flamegraph?{query}")
            self.assertEqual(st, 200, f"{query}: {body[:200]}")
        # A parameter is never dropped silently: too many, or one too long, is a 400.
        st, _, body = self.ui("GET", "/api/top?" + "&".join(f"p{i}=1" for i in range(33)))
        self.assertEqual(st, 400)
        self.assertIn(b"more than 32 query parameters", body)
        st, _, body = self.ui("GET", "/api/top?service=" + "a" * 4100)
        self.assertEqual(st, 400)
        self.assertIn(b"longer than", body)
        self.assertEqual(self.ui("GET", "/api/top?" + "&".join(f"p{i}=1" for i in range(32)))[0], 200)

    def test_listens_on_the_given_address_only(self):
        """127.0.0.1:PORT is the loopback's 127.0.0.1, not every interface (lws bound [::]
        for an IPv4 address): another address of the host, here 127.0.0.2, gets nothing."""
        for port in (self.port, self.mport):
            with self.assertRaises(ConnectionRefusedError):
                http.client.HTTPConnection("127.0.0.2", port, timeout=5).connect()

    def test_pipelined_request_without_its_body_does_not_stall_the_server(self):
        """Two requests in one packet, the second declaring a body that never comes, then
        EOF: lws 4.1 span at 100% CPU on it and answered nobody (probes failed, SIGTERM
        hung). The server now closes each connection after one answer."""
        import socket
        for second in (b"GET /y HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n",
                       b"POST /-/reload HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                       b"Content-Length: 5\r\n\r\n"):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            s.sendall(b"GET /-/healthy HTTP/1.1\r\nHost: a\r\n\r\n" + second)
            s.shutdown(socket.SHUT_WR)
            out = b""
            while chunk := s.recv(65536):        # EOF within the timeout: closed
                out += chunk
            s.close()
            self.assertTrue(out.startswith(b"HTTP/1.1 200"), out)
            self.assertIn(b"connection: close", out.lower())
            self.assertEqual(self.ui("GET", "/-/healthy")[0], 200)

    # ---- the metrics-only listener ----

    def test_metrics_listener_serves_metrics_and_health_only(self):
        st, hd, body = request(self.mport, "GET", "/metrics", host="10.42.0.17:4101")
        self.assertEqual(st, 200)
        self.assertIn("nodeprof_http_refused_requests_total", promtext.parse(body.decode()))
        for path in ("/-/healthy", "/-/ready"):
            self.assertEqual(request(self.mport, "GET", path)[0], 200, path)
        for path in ("/", "/api/services", "/api/pprof", "/debug/", "/debug/targets", "/ui/app.js", "/nope"):
            st, _, body = request(self.mport, "GET", path)
            self.assertEqual(st, 404, path)
            self.assertIn(b"/metrics, /-/healthy and /-/ready only", body)
        st, _, _ = request(self.mport, "POST", "/-/reload", headers=JSON, body=b"{}")
        self.assertEqual(st, 404)
        with self.assertRaises(HandshakeError) as cm:
            WebSocket("127.0.0.1", self.mport)
        self.assertIn("404", cm.exception.status)


class Flags(unittest.TestCase):
    def test_bad_flags_are_refused_with_what_to_fix(self):
        port = np.free_port()
        # Exit 2: a usage error (a value that cannot be right); 1: the port is taken.
        for args, status, want in (
                (["--http-allowed-host", "evil.example.com:80"], 2, "without a port"),
                (["--http-allowed-host", "*.example.com"], 2, "no wildcards"),
                (["--http-allowed-host", ""], 2, "empty host name"),
                (["--metrics-listen", f"127.0.0.1:{port}"], 1, "in use"),
                (["--metrics-listen", "nonsense"], 2, "expected host:port")):
            p = np.nodeprof("run", "--http-listen", f"127.0.0.1:{port}", *args, timeout=20)
            self.assertEqual(p.returncode, status, args)
            self.assertIn(want, p.stderr, args)
        help_text = np.nodeprof("run", "--help").stdout
        for flag in ("--metrics-listen ADDR", "--http-allowed-host NAME"):
            self.assertIn(flag, help_text)


def request(port, method, path, headers=None, body=None, host="", http10=False):
    """(status, {lower-case header: value}, body) of one request to 127.0.0.1:port.
    host: the Host header ("" = the real one, None = none)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    if http10:
        c._http_vsn, c._http_vsn_str = 10, "HTTP/1.0"
    try:
        c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if host == "":
            c.putheader("Host", f"127.0.0.1:{port}")
        elif host is not None:
            c.putheader("Host", host)
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        if body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


if __name__ == "__main__":
    unittest.main()
