"""pyroscope.write against the Pyroscope test server (tests/servers/pyroscope.py): what arrives
(labels, stacks, protocol headers, auth, tenant), retries and what is not retried, TLS, proxies,
reloads, independent endpoints, shutdown flush, label limits. The 60 s outage is in
test_write_outage.py."""
import http.client
import http.server
import os
import subprocess
import threading
import time
import unittest
import urllib.parse

from write_harness import metric, profile, run_push
from np import tmpdir
from pyroscope import PyroscopeServer

# Mostly waiting on its Pyroscope test servers (11 s of wall time for under 1 s of CPU), on ports
# of its own: tests/run.py runs it beside the others.
BACKGROUND = True

VERSION = "0.1.0"
FAST = {"min_backoff_period": "10ms", "max_backoff_period": "100ms"}


def endpoint(srv, **kw):
    ep = {"url": srv.url, **FAST}
    ep.update(kw)
    return ep


class Base(unittest.TestCase):
    def server(self, **kw):
        srv = PyroscopeServer(**kw).start()
        self.addCleanup(srv.stop)
        return srv

    def assertNoViolations(self, srv):
        for r in srv.all_requests():
            self.assertEqual(r["violations"], [], r)


class Delivery(Base):
    def test_labels_and_stacks_arrive_intact(self):
        srv = self.server()
        stacks = [{"frames": ["main", "run", "compute"], "count": 5},
                  {"frames": ["main", "run", "io_wait", "read"], "count": 2},
                  {"frames": ["start_thread", "worker"], "count": 1}]
        labels = {"__name__": "process_cpu", "service_name": "shop/web", "namespace": "shop", "pod": "web-0",
                  "container": "app", "seq": "{n}", "__meta_kubernetes_pod_uid": "uid-1",
                  "__container_id__": "abc123", "__delta__": "false", "region": "from-target", "empty": ""}
        res, _ = run_push(self, {"write": {"external_labels": {"region": "eu-1", "cluster": "prod"},
                                           "endpoint": [endpoint(srv)]},
                                 "profiles": [profile(labels, stacks)], "rounds": 3})
        pushes = srv.pushes()
        self.assertEqual(len(pushes), 3)
        self.assertNoViolations(srv)
        for i, push in enumerate(sorted(pushes, key=lambda p: int(p["series"][0]["labels"]["seq"]))):
            self.assertEqual(len(push["series"]), 1)
            series = push["series"][0]
            want = [("__delta__", "false"), ("__name__", "process_cpu"), ("cluster", "prod"), ("container", "app"),
                    ("namespace", "shop"), ("pod", "web-0"), ("region", "eu-1"), ("seq", str(i)),
                    ("service_name", "shop/web")]
            self.assertEqual([tuple(l) for l in series["label_list"]], want)  # sorted, __ dropped, external win
            self.assertEqual(len(series["profiles"]), 1)
            prof = series["profiles"][0]
            self.assertTrue(prof["gzip"])
            self.assertEqual(prof["id"], "")
            self.assertEqual(prof["sample_types"], [["cpu", "nanoseconds"]])
            self.assertEqual(prof["period_type"], ["cpu", "nanoseconds"])
            period = 10**9 // 97
            self.assertEqual(prof["period"], period)
            got = sorted((s["frames"], s["values"]) for s in prof["stacks"])
            self.assertEqual(got, sorted((s["frames"], [s["count"] * period]) for s in stacks))
        url = srv.url
        self.assertEqual(metric(res, "pyroscope_write_sent_profiles_total", endpoint=url), 3)
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=url), 0)
        sent_bytes = sum(p["series"][0]["profiles"][0]["compressed_len"] for p in pushes)
        self.assertEqual(metric(res, "pyroscope_write_sent_bytes_total", endpoint=url), sent_bytes)
        self.assertEqual(metric(res, "pyroscope_fanout_latency_count"), 3)
        self.assertEqual(metric(res, "pyroscope_write_latency_count", endpoint="-", type="push_total"), 3)
        self.assertEqual(metric(res, "pyroscope_write_latency_count", endpoint=url, type="push_endpoint"), 3)
        self.assertEqual(metric(res, "pyroscope_write_latency_count", endpoint=url, type="push_downstream"), 3)

    def test_connect_protocol_headers(self):
        srv = self.server()
        run_push(self, {"write": {"endpoint": [endpoint(srv, url=srv.url + "//", remote_timeout="3s",
                                                        headers={"X-Scope-OrgID": "team-a"})]},
                        "profiles": [profile({"__name__": "process_cpu"})], "wait_idle": "5s"})
        reqs = srv.all_requests()
        self.assertEqual(len(reqs), 1)
        h = reqs[0]["headers"]
        self.assertEqual(h["content-type"], "application/proto")
        self.assertEqual(h["connect-protocol-version"], "1")
        self.assertEqual(h["user-agent"], f"nodeprof/{VERSION}")
        self.assertEqual(h["x-scope-orgid"], "team-a")
        self.assertTrue(0 < int(h["connect-timeout-ms"]) <= 3000, h["connect-timeout-ms"])
        self.assertNotIn("content-encoding", h)
        self.assertNotIn("expect", h)
        self.assertNotIn("authorization", h)
        self.assertEqual(reqs[0]["status"], 200)

    def test_label_limits_fixed_before_sending(self):
        srv = self.server()
        labels = {"__name__": "process_cpu", "service_name": "svc", "app/name": "x", "big": "v" * 3000,
                  **{f"l{i:02d}": "v" for i in range(40)}}
        res, err = run_push(self, {"write": {"endpoint": [endpoint(srv)]}, "profiles": [profile(labels)],
                                   "wait_idle": "5s"})
        self.assertNoViolations(srv)
        self.assertEqual([r["status"] for r in srv.all_requests()], [200])
        got = srv.pushes()[0]["series"][0]["labels"]
        self.assertEqual(len(got), 30)
        self.assertEqual(got["app_name"], "x")
        self.assertEqual(len(got["big"]), 2048)
        for reason in ("invalid_label_name", "label_value_too_long", "too_many_labels"):
            self.assertEqual(metric(res, "pyroscope_write_fixed_profiles_total", reason=reason), 1, reason)
        self.assertIn("changed profile labels", err)

    def test_unfixable_labels_never_sent(self):
        srv = self.server()
        res, err = run_push(self, {"write": {"endpoint": [endpoint(srv)]},
                                   "profiles": [profile({"service_name": "svc"})], "wait_idle": "2s"})
        self.assertEqual(res["append_failures"], 1)
        self.assertIn("__name__", res["append_errors"][0])
        self.assertEqual(srv.all_requests(), [])
        self.assertEqual(metric(res, "pyroscope_write_rejected_profiles_total", reason="missing_name"), 1)


class Auth(Base):
    def test_basic_auth_password_file_rotation_and_tenant(self):
        d = tmpdir(self)
        pw = os.path.join(d, "password")
        with open(pw, "w") as f:
            f.write("s3cret-one\n")  # trailing newline is trimmed, as Prometheus does
        import base64
        cred = lambda p: "Basic " + base64.b64encode(f"alice:{p}".encode()).decode()
        srv = self.server(require_auth=cred("s3cret-one"), multitenancy=True)
        result = {}

        def rotate():
            deadline = time.time() + 10
            while not srv.pushes() and time.time() < deadline:
                time.sleep(0.01)
            with open(pw + ".new", "w") as f:
                f.write("s3cret-two")
            os.rename(pw + ".new", pw)
            srv.require_auth = cred("s3cret-two")
            result["rotated"] = True

        t = threading.Thread(target=rotate)
        t.start()
        res, err = run_push(self, {"write": {"endpoint": [endpoint(
            srv, basic_auth={"username": "alice", "password_file": pw}, headers={"X-Scope-OrgID": "team-a"})]},
            "profiles": [profile({"__name__": "process_cpu"})], "rounds": 2, "interval": "1500ms",
            "wait_idle": "5s"})
        t.join()
        self.assertTrue(result.get("rotated"))
        pushes = srv.pushes()
        self.assertEqual(len(pushes), 2, [r["status"] for r in srv.all_requests()])
        self.assertEqual(pushes[0]["headers"]["authorization"], cred("s3cret-one"))
        self.assertEqual(pushes[1]["headers"]["authorization"], cred("s3cret-two"))
        self.assertEqual({p["headers"]["x-scope-orgid"] for p in pushes}, {"team-a"})
        self.assertNotIn("s3cret", err)

    def test_bearer_tokens_authorization_and_http_headers(self):
        d = tmpdir(self)
        tok = os.path.join(d, "token")
        with open(tok, "w") as f:
            f.write("  file-token \n")
        srv = self.server()
        run_push(self, {"write": {"endpoint": [
            endpoint(srv, name="a", bearer_token="inline-token"),
            endpoint(srv, name="b", bearer_token_file=tok),
            endpoint(srv, name="c", authorization={"type": "Token", "credentials": "custom"},
                     http_headers={"X-Multi": ["one", "two"]}),
        ]}, "profiles": [profile({"__name__": "process_cpu"})], "wait_idle": "5s"})
        auths = sorted(p["headers"]["authorization"] for p in srv.pushes())
        self.assertEqual(auths, ["Bearer file-token", "Bearer inline-token", "Token custom"])
        multi = [p for p in srv.pushes() if p["headers"]["authorization"] == "Token custom"][0]
        self.assertEqual([v for k, v in multi["header_list"] if k.lower() == "x-multi"], ["one", "two"])

    def test_wrong_credentials_not_retried(self):
        srv = self.server(require_auth="Bearer right")
        res, err = run_push(self, {"write": {"endpoint": [endpoint(srv, bearer_token="wrong-token")]},
                                   "profiles": [profile({"__name__": "process_cpu"})], "wait_idle": "3s"})
        self.assertEqual([r["status"] for r in srv.all_requests()], [401])
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=srv.url), 1)
        self.assertEqual(metric(res, "pyroscope_write_retries_total", endpoint=srv.url), 0)
        self.assertIn("unauthenticated", err)
        self.assertNotIn("wrong-token", err)


class Retries(Base):
    def test_503_twice_then_success_delivers_once(self):
        srv = self.server()
        srv.push_actions([{"status": 503}, {"status": 503}])
        res, _ = run_push(self, {"write": {"endpoint": [endpoint(srv)]},
                                 "profiles": [profile({"__name__": "process_cpu", "seq": "{n}"})],
                                 "wait_idle": "5s"})
        self.assertEqual([r["status"] for r in srv.all_requests()], [503, 503, 200])
        self.assertEqual([p["series"][0]["labels"]["seq"] for p in srv.pushes()], ["0"])
        url = srv.url
        self.assertEqual(metric(res, "pyroscope_write_retries_total", endpoint=url), 2)
        self.assertEqual(metric(res, "pyroscope_write_sent_profiles_total", endpoint=url), 1)
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=url), 0)
        self.assertEqual(metric(res, "pyroscope_write_latency_count", endpoint=url, type="push_downstream"), 3)
        self.assertEqual(metric(res, "pyroscope_write_latency_count", endpoint=url, type="push_endpoint"), 1)

    def test_400_not_retried_and_logged_once(self):
        srv = self.server()
        srv.default_action = {"status": 400, "message": "profile_size_limit: too big for this tenant"}
        res, err = run_push(self, {"write": {"endpoint": [endpoint(srv)]},
                                   "profiles": [profile({"__name__": "process_cpu"})], "rounds": 3,
                                   "wait_idle": "5s"})
        self.assertEqual([r["status"] for r in srv.all_requests()], [400, 400, 400])
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=srv.url), 3)
        self.assertEqual(metric(res, "pyroscope_write_retries_total", endpoint=srv.url), 0)
        self.assertEqual(err.count("too big for this tenant"), 1, err)

    def test_429_follows_retry_on_http_429_and_retry_after(self):
        srv = self.server()
        srv.push_actions([{"status": 429}])
        res, _ = run_push(self, {"write": {"endpoint": [endpoint(srv, retry_on_http_429=False)]},
                                 "profiles": [profile({"__name__": "process_cpu"})], "wait_idle": "3s"})
        self.assertEqual([r["status"] for r in srv.all_requests()], [429])
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=srv.url), 1)

        srv.reset()
        srv.push_actions([{"status": 429, "retry_after": "1"}])
        run_push(self, {"write": {"endpoint": [endpoint(srv, max_backoff_period="5s")]},
                        "profiles": [profile({"__name__": "process_cpu"})], "wait_idle": "5s"})
        reqs = srv.all_requests()
        self.assertEqual([r["status"] for r in reqs], [429, 200])
        self.assertGreaterEqual(reqs[1]["time"] - reqs[0]["time"], 0.95)  # Retry-After is a floor

    def test_dropped_connection_hang_and_proxy_error_are_retried(self):
        srv = self.server()
        srv.push_actions([{"drop": True}, {"hang": 5}, {"raw_status": 502, "body": "<html>bad gateway</html>"}])
        res, err = run_push(self, {"write": {"endpoint": [endpoint(srv, remote_timeout="1s")]},
                                   "profiles": [profile({"__name__": "process_cpu"})], "wait_idle": "10s"})
        reqs = srv.all_requests()
        self.assertEqual([r["status"] for r in reqs], ["dropped", "hung", 502, 200])
        self.assertGreaterEqual(reqs[2]["time"] - reqs[1]["time"], 0.95)  # the 1 s timeout ended the hang
        self.assertEqual(len(srv.pushes()), 1)
        self.assertEqual(metric(res, "pyroscope_write_retries_total", endpoint=srv.url), 3)
        self.assertIn("bad gateway", err)

    def test_retries_give_up_after_max_backoff_retries(self):
        srv = self.server()
        srv.default_action = {"status": 503}
        res, err = run_push(self, {"write": {"endpoint": [endpoint(srv, max_backoff_retries=3)]},
                                   "profiles": [profile({"__name__": "process_cpu"})], "wait_idle": "5s"})
        self.assertEqual(len(srv.all_requests()), 3)  # dskit: 3 attempts, 2 sleeps
        self.assertEqual(metric(res, "pyroscope_write_retries_total", endpoint=srv.url), 2)
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=srv.url), 1)
        self.assertIn("giving up", err)


class Transport(Base):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.pki = tempfile.mkdtemp(prefix="np-write-pki-")
        d = cls.pki

        def ossl(*args):
            subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        ossl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=np-test-ca")
        for name, ext in (("server", "subjectAltName=DNS:pyroscope.test"), ("client", "extendedKeyUsage=clientAuth")):
            ossl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
            with open(os.path.join(d, f"{name}.ext"), "w") as f:
                f.write(ext + "\n")
            ossl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.pki, True)

    def test_tls_server_name_ca_file_and_client_certificate(self):
        p = lambda n: os.path.join(self.pki, n)
        srv = self.server(tls_cert=p("server.crt"), tls_key=p("server.key"), client_ca=p("ca.crt"))
        tls = {"ca_file": p("ca.crt"), "server_name": "pyroscope.test", "cert_file": p("client.crt"),
               "key_file": p("client.key"), "min_version": "TLS12"}
        res, _ = run_push(self, {"write": {"endpoint": [endpoint(srv, tls_config=tls)]},
                                 "profiles": [profile({"__name__": "process_cpu"})], "wait_idle": "5s"})
        self.assertEqual(len(srv.pushes()), 1)
        self.assertEqual(srv.pushes()[0]["headers"]["host"], f"127.0.0.1:{srv.port}")

        # The certificate names pyroscope.test, not 127.0.0.1: without server_name it must fail.
        srv.reset()
        with open(p("ca.crt")) as f:
            ca_pem = f.read()
        tls = {"ca_pem": ca_pem, "cert_file": p("client.crt"), "key_file": p("client.key")}
        res, err = run_push(self, {"write": {"endpoint": [endpoint(srv, tls_config=tls, max_backoff_retries=2)]},
                                   "profiles": [profile({"__name__": "process_cpu"})], "wait_idle": "5s"})
        self.assertEqual(srv.pushes(), [])
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=srv.url), 1)
        self.assertIn("certificate", err.lower())

    def test_redirects_followed_only_when_enabled(self):
        target = self.server()
        srv = self.server()
        srv.push_actions([{"redirect": target.url + "/push.v1.PusherService/Push", "redirect_status": 307}] * 2)
        run_push(self, {"write": {"endpoint": [endpoint(srv)]}, "profiles": [profile({"__name__": "process_cpu"})],
                        "wait_idle": "5s"})
        self.assertEqual(len(target.pushes()), 1)  # 307 keeps the method and the body
        res, err = run_push(self, {"write": {"endpoint": [endpoint(srv, follow_redirects=False)]},
                                   "profiles": [profile({"__name__": "process_cpu"})], "wait_idle": "5s"})
        self.assertEqual(len(target.pushes()), 1)
        self.assertEqual([r["status"] for r in srv.all_requests()], [307, 307])  # not retried
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=srv.url), 1)

    def _proxy(self):
        seen = []

        class Proxy(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                u = urllib.parse.urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                seen.append(self.path)
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
                hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "host")}
                c.request("POST", u.path, body, hdrs)
                r = c.getresponse()
                data = r.read()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return f"http://127.0.0.1:{srv.server_address[1]}", seen

    def test_proxy_url_and_proxy_from_environment(self):
        srv = self.server()
        proxy, seen = self._proxy()
        prof = [profile({"__name__": "process_cpu"})]
        run_push(self, {"write": {"endpoint": [endpoint(srv, proxy_url=proxy)]}, "profiles": prof,
                        "wait_idle": "5s"})
        self.assertEqual(seen, [srv.url + "/push.v1.PusherService/Push"])
        # no_proxy bypasses it.
        run_push(self, {"write": {"endpoint": [endpoint(srv, proxy_url=proxy, no_proxy="127.0.0.1")]},
                        "profiles": prof, "wait_idle": "5s"})
        self.assertEqual(len(seen), 1)
        # The environment is read only when proxy_from_environment is set (Go reads HTTP_PROXY too).
        env = dict(os.environ, HTTP_PROXY=proxy, http_proxy=proxy)
        env.pop("NO_PROXY", None)
        env.pop("no_proxy", None)
        run_push(self, {"write": {"endpoint": [endpoint(srv)]}, "profiles": prof, "wait_idle": "5s"}, env=env)
        self.assertEqual(len(seen), 1)
        run_push(self, {"write": {"endpoint": [endpoint(srv, proxy_from_environment=True)]}, "profiles": prof,
                        "wait_idle": "5s"}, env=env)
        self.assertEqual(len(seen), 2)
        self.assertEqual(len(srv.pushes()), 4)


class Lifecycle(Base):
    def test_reload_keeps_queue_and_applies_new_settings(self):
        srv = self.server()
        srv.push_actions([{"status": 503}] * 3)
        old = endpoint(srv, name="main", min_backoff_period="300ms", max_backoff_period="300ms",
                       headers={"X-Scope-OrgID": "old"})
        new = dict(old, headers={"X-Scope-OrgID": "new"})
        res, _ = run_push(self, {"write": {"endpoint": [old]},
                                 "profiles": [profile({"__name__": "process_cpu", "seq": "{n}"})], "rounds": 3,
                                 "updates": [{"after": 3, "write": {"endpoint": [new]}}], "wait_idle": "10s"})
        pushes = srv.pushes()
        self.assertEqual(sorted(p["series"][0]["labels"]["seq"] for p in pushes), ["0", "1", "2"])
        self.assertEqual({p["headers"]["x-scope-orgid"] for p in pushes}, {"new"})
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=srv.url), 0)

    def test_endpoints_are_independent(self):
        good = self.server()
        down = self.server()
        down.stop()  # refused connections from here on
        res, _ = run_push(self, {"write": {"endpoint": [endpoint(down, min_backoff_period="1s"), endpoint(good)]},
                                 "profiles": [profile({"__name__": "process_cpu", "seq": "{n}"})], "rounds": 5,
                                 "shutdown_flush": "1s"})
        self.assertEqual(len(good.pushes()), 5)
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=down.url), 5)
        self.assertEqual(metric(res, "pyroscope_write_sent_profiles_total", endpoint=good.url), 5)

    def test_shutdown_flushes_queue_within_limit(self):
        srv = self.server()
        srv.default_action = {"slow": 0.2}
        res, _ = run_push(self, {"write": {"endpoint": [endpoint(srv)]},
                                 "profiles": [profile({"__name__": "process_cpu"})], "rounds": 5,
                                 "shutdown_flush": "10s"})
        self.assertEqual(len(srv.pushes()), 5)
        self.assertGreaterEqual(res["shutdown_ms"], 900)

        srv.reset()
        srv.default_action = {"hang": 30}
        t0 = time.time()
        res, err = run_push(self, {"write": {"endpoint": [endpoint(srv, remote_timeout="20s")]},
                                   "profiles": [profile({"__name__": "process_cpu"})], "rounds": 3,
                                   "shutdown_flush": "1s"})
        self.assertLess(time.time() - t0, 6)
        self.assertLess(res["shutdown_ms"], 2500)  # 1 s flush limit, not the 20 s remote_timeout
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=srv.url), 3)
        self.assertIn("not delivered before shutdown", err)


if __name__ == "__main__":
    unittest.main()
