"""Kubernetes discovery: reaching the apiserver. TLS verification (wrong CA refused,
insecure only when asked, server_name), credentials (token files rotated on disk,
basic auth, authorization, client certificates), kubeconfig files, in-cluster service
accounts, proxies, and the configuration errors reported before anything starts."""
import base64
import os
import select
import socket
import socketserver
import subprocess
import threading
import time
import unittest

import k8s
from k8s import pod

# Mostly waiting on its kube-apiserver test servers (7 s of wall time for under 2 s of CPU), on
# ports of its own: tests/run.py runs it beside the others.
BACKGROUND = True


class ConnectProxy:
    """An HTTP CONNECT proxy on localhost that records the CONNECT requests it tunnels."""

    def __init__(self):
        self.connects = []
        outer = self

        class H(socketserver.BaseRequestHandler):
            def handle(self):
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = self.request.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                head = data.split(b"\r\n\r\n", 1)[0].decode()
                outer.connects.append(head)
                target = head.split()[1]
                host, port = target.rsplit(":", 1)
                up = socket.create_connection((host, int(port)))
                self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                socks = [self.request, up]
                try:
                    while True:
                        r, _, _ = select.select(socks, [], [], 5)
                        if not r:
                            continue
                        for s in r:
                            b = s.recv(65536)
                            if not b:
                                return
                            (up if s is self.request else self.request).sendall(b)
                except OSError:
                    pass
                finally:
                    up.close()

        self.srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


def b64file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


class Tls(k8s.Case):
    def test_wrong_ca_is_refused(self):
        srv = self.server()
        srv.put("pods", pod("a"))
        cfg = self.config(srv)
        cfg["tls_config"] = {"ca_file": self.pki.other_ca}
        h = k8s.Harness(self, self.tmp, cfg)
        h.wait_log("list failed")
        self.assertRegex(h.log(), r"SSL certificate problem|certificate verify failed")
        self.assertEqual(srv.requests, [], "no request may be sent over an unverified connection")
        time.sleep(0.3)
        self.assertIn(h.latest(), (None, []))

    def test_no_ca_means_system_roots_which_do_not_know_the_cluster(self):
        srv = self.server()
        cfg = self.config(srv)
        del cfg["tls_config"]
        h = k8s.Harness(self, self.tmp, cfg)
        h.wait_log("list failed")
        self.assertEqual(srv.requests, [])

    def test_insecure_skip_verify_only_when_set(self):
        srv = self.server()
        srv.put("pods", pod("a"))
        cfg = self.config(srv)
        cfg["tls_config"] = {"ca_file": self.pki.other_ca, "insecure_skip_verify": True}
        h = k8s.Harness(self, self.tmp, cfg)
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        self.assertIn("TLS certificate verification is disabled", h.log())

    def test_server_name_is_verified_instead_of_the_host(self):
        srv = self.server()
        srv.put("pods", pod("a"))
        cfg = self.config(srv)
        cfg["tls_config"]["server_name"] = "api.test.internal"
        h = k8s.Harness(self, self.tmp, cfg)
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        cfg["tls_config"]["server_name"] = "not-in-the-certificate.example"
        bad = k8s.Harness(self, self.tmp, cfg)
        bad.wait_log("list failed")
        self.assertRegex(bad.log(), r"SSL|certificate")

    def test_min_version_tls13(self):
        srv = self.server()
        srv.put("pods", pod("a"))
        cfg = self.config(srv)
        cfg["tls_config"]["min_version"] = "TLS13"
        h = k8s.Harness(self, self.tmp, cfg)
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])


class Credentials(k8s.Case):
    def test_token_rotated_on_disk_is_picked_up_after_401(self):
        srv = self.server(tokens=["old-token"])
        srv.put("pods", pod("a"))
        tok = self.token_file("old-token")
        cfg = self.config(srv, {"bearer_token_file": tok}, nodeprof={"credentials_reread": "1h"})
        h = k8s.Harness(self, self.tmp, cfg)
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        self.assertTrue(srv.wait_open_watches())
        # The kubelet rotates the projected token; the apiserver stops accepting the old one.
        with open(tok + ".new", "w") as f:
            f.write("new-token\n")
        os.rename(tok + ".new", tok)
        srv.set_tokens(["new-token"])
        srv.put("pods", pod("a", labels={"seen": "1"}))  # an established watch...
        h.wait_for(lambda ts: len(ts) == 1 and "__meta_kubernetes_pod_label_seen" in ts[0])
        srv.drop_watches()  # ...reconnects with the old token: 401, re-read, retry
        srv.put("pods", pod("b"))
        h.wait_for(lambda ts: k8s.names(ts) == ["a", "b"])
        auths = [r["authorization"] for r in srv.requests]
        self.assertIn("Bearer old-token", auths)
        self.assertEqual(auths[-1], "Bearer new-token")
        self.assertIn("HTTP 401", h.log())

    def test_token_file_is_reread_periodically(self):
        srv = self.server(tokens=["t1", "t2"])
        srv.put("pods", pod("a"))
        tok = self.token_file("t1")
        h = k8s.Harness(self, self.tmp, self.config(srv, {"bearer_token_file": tok},
                                                    nodeprof={"credentials_reread": "200ms"}))
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        with open(tok, "w") as f:
            f.write("t2\n")
        h.wait_log("credentials file changed")
        srv.put("pods", pod("a", labels={"seen": "1"}))
        h.wait_for(lambda ts: len(ts) == 1 and "__meta_kubernetes_pod_label_seen" in ts[0])
        srv.drop_watches()
        srv.wait_requests(lambda r: r["authorization"] == "Bearer t2")
        self.assertNotIn("HTTP 401", h.log())

    def test_basic_auth_password_file_and_headers(self):
        srv = self.server(tokens=[], basic={"nodeprof": "s3cret"})
        srv.put("pods", pod("a"))
        pw = os.path.join(self.tmp, "password")
        with open(pw, "w") as f:
            f.write("s3cret\n")
        cfg = self.config(srv, {"http_headers": {"X-Scope": ["team-a", "team-b"]},
                                "basic_auth": {"username": "nodeprof", "password_file": pw}})
        h = k8s.Harness(self, self.tmp, cfg)
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        self.assertTrue(srv.requests[0]["authorization"].startswith("Basic "))
        self.assertEqual(srv.requests[0]["accept"], "application/json")
        self.assertTrue(srv.requests[0]["user_agent"].startswith("nodeprof/"))
        self.assertNotIn("s3cret", h.log())

    def test_authorization_block_with_a_type(self):
        srv = self.server(tokens=["tok-4f9e2a"])
        srv.put("pods", pod("a"))
        cfg = self.config(srv, {"authorization": {"type": " Bearer ", "credentials": "tok-4f9e2a"}})
        h = k8s.Harness(self, self.tmp, cfg)
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        self.assertEqual(srv.requests[0]["authorization"], "Bearer tok-4f9e2a")
        self.assertNotIn("tok-4f9e2a", h.log())

    def test_client_certificate(self):
        srv = self.server(tokens=[], client_ca=self.pki.ca)
        srv.client_cns = {"nodeprof-client"}
        srv.put("pods", pod("a"))
        cfg = self.config(srv)
        del cfg["bearer_token_file"]
        with open(self.pki.client_crt) as c, open(self.pki.client_key) as k:
            cfg["tls_config"].update({"cert_pem": c.read(), "key_pem": k.read()})
        h = k8s.Harness(self, self.tmp, cfg)
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        cfg["tls_config"] = {"ca_file": self.pki.ca}  # no certificate: 401
        anon = k8s.Harness(self, self.tmp, cfg)
        anon.wait_log("HTTP 401")

    def test_proxy_url_and_connect_headers(self):
        srv = self.server()
        srv.put("pods", pod("a"))
        proxy = ConnectProxy()
        self.addCleanup(proxy.stop)
        h = self.harness(srv, {"proxy_url": proxy.url, "proxy_connect_header": {"Proxy-Note": ["hello"]}})
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        self.assertTrue(proxy.connects)
        self.assertIn(f"CONNECT 127.0.0.1:{srv.port}", proxy.connects[0])
        self.assertIn("Proxy-Note: hello", proxy.connects[0])
        # no_proxy bypasses it; proxy_from_environment takes HTTPS_PROXY.
        n = len(proxy.connects)
        direct = self.harness(srv, {"proxy_url": proxy.url, "no_proxy": "127.0.0.1"})
        direct.wait_for(lambda ts: k8s.names(ts) == ["a"])
        self.assertEqual(len(proxy.connects), n)
        env_proxy = self.harness(srv, {"proxy_from_environment": True}, env={"HTTPS_PROXY": proxy.url})
        env_proxy.wait_for(lambda ts: k8s.names(ts) == ["a"])
        self.assertGreater(len(proxy.connects), n)
        # Without proxy_from_environment the environment is ignored (as in Prometheus).
        n = len(proxy.connects)
        ignored = self.harness(srv, env={"HTTPS_PROXY": proxy.url})
        ignored.wait_for(lambda ts: k8s.names(ts) == ["a"])
        self.assertEqual(len(proxy.connects), n)


class Http2(k8s.Case):
    """The real apiserver speaks HTTP/2 (ALPN); curl multiplexes the watches on it."""

    def start_h2(self):
        binary = os.path.join(self.tmp, "h2apiserver")
        if not os.path.exists(binary):
            src = os.path.join(k8s.ROOT, "tests", "servers", "h2apiserver", "main.go")
            subprocess.run(["go", "build", "-o", binary, src], check=True, capture_output=True,
                           env=dict(os.environ, GOFLAGS="-mod=mod", GO111MODULE="off"))
        p = subprocess.Popen([binary, "-cert", self.pki.server_crt, "-key", self.pki.server_key, "-token", k8s.TOKEN],
                             stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (p.kill(), p.wait()))
        url = p.stdout.readline().split()[1]
        lines = []
        threading.Thread(target=lambda: [lines.append(line) for line in p.stdout], daemon=True).start()
        return url, lines

    def run_against(self, http2):
        url, lines = self.start_h2()
        cfg = {"role": "pod", "api_server": url, "bearer_token_file": self.token_file(), "enable_http2": http2,
               "tls_config": {"ca_file": self.pki.ca}, "nodeprof": dict(k8s.FAST, min_watch_timeout="1s")}
        h = k8s.Harness(self, self.tmp, cfg)
        h.wait_for(lambda ts: k8s.names(ts) == ["h2-a", "h2-b"])
        deadline = time.time() + 5
        while len([x for x in lines if "watch=1" in x]) < 2 and time.time() < deadline:
            time.sleep(0.05)  # a watch ended by its timeout is re-opened
        self.assertGreaterEqual(len([x for x in lines if "watch=1" in x]), 2, lines)
        return {x.split()[1] for x in lines}

    def test_http2_by_default(self):
        self.assertEqual(self.run_against(True), {"HTTP/2.0"})

    def test_http1_when_disabled(self):
        self.assertEqual(self.run_against(False), {"HTTP/1.1"})


class Sources(k8s.Case):
    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_kubeconfig_with_files(self):
        srv = self.server(tokens=["kc-token"])
        srv.put("pods", pod("a"))
        sub = os.path.join(self.tmp, "kc1")
        os.makedirs(sub, exist_ok=True)
        self.write("kc1/token", "kc-token\n")
        with open(self.pki.ca) as f:
            self.write("kc1/ca.crt", f.read())
        kc = self.write("kc1/config", f"""apiVersion: v1
kind: Config
current-context: test
clusters:
- name: other
  cluster: {{server: "https://192.0.2.1:6443"}}
- name: test
  cluster:
    server: {srv.url}
    certificate-authority: ca.crt
contexts:
- name: test
  context: {{cluster: test, user: me, namespace: ignored}}
users:
- name: me
  user:
    tokenFile: token
""")
        h = k8s.Harness(self, self.tmp, {"role": "pod", "kubeconfig_file": kc, "nodeprof": k8s.FAST})
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        self.assertEqual(srv.requests[0]["authorization"], "Bearer kc-token")
        self.assertIn("config=kubeconfig", h.log())

    def test_kubeconfig_with_embedded_data_and_client_certificate(self):
        srv = self.server(tokens=[], client_ca=self.pki.ca)
        srv.client_cns = {"nodeprof-client"}
        srv.put("pods", pod("a"))
        kc = self.write("kc2", f"""{{"apiVersion": "v1", "current-context": "c",
 "clusters": [{{"name": "k", "cluster": {{"server": "{srv.url}/",
   "certificate-authority-data": "{b64file(self.pki.ca)}", "tls-server-name": "kubernetes.default.svc"}}}}],
 "contexts": [{{"name": "c", "context": {{"cluster": "k", "user": "u"}}}}],
 "users": [{{"name": "u", "user": {{"client-certificate-data": "{b64file(self.pki.client_crt)}",
   "client-key-data": "{b64file(self.pki.client_key)}"}}}}]}}
""")
        h = k8s.Harness(self, self.tmp, {"role": "pod", "kubeconfig_file": kc, "nodeprof": k8s.FAST})
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])

    def test_kubeconfig_errors(self):
        cases = [
            ("users:\n- name: u\n  user:\n    exec: {command: aws}\ncurrent-context: c\ncontexts:\n- name: c\n"
             "  context: {cluster: k, user: u}\nclusters:\n- name: k\n  cluster: {server: 'https://x'}\n",
             '"exec" is not supported yet'),
            ("current-context: missing\ncontexts: []\n", 'context "missing" (current-context) is not defined'),
            ("clusters: [\n", "kubeconfig_file"),
        ]
        for text, msg in cases:
            kc = self.write("kc-bad", text)
            p = k8s.run_harness_once(self.tmp, {"role": "pod", "kubeconfig_file": kc})
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(msg, p.stderr)

    def test_in_cluster_service_account_and_own_namespace(self):
        srv = self.server(tokens=["sa-token"])
        srv.put("pods", pod("mine", namespace="monitoring"))
        srv.put("pods", pod("theirs", namespace="default"))
        sa = os.path.join(self.tmp, "sa")
        os.makedirs(sa, exist_ok=True)
        self.write("sa/token", "sa-token")
        self.write("sa/namespace", "monitoring")
        with open(self.pki.ca) as f:
            self.write("sa/ca.crt", f.read())
        env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(srv.port)}
        cfg = {"role": "pod", "namespaces": {"own_namespace": True},
               "nodeprof": dict(k8s.FAST, serviceaccount_dir=sa)}
        h = k8s.Harness(self, self.tmp, cfg, env=env)
        h.wait_for(lambda ts: k8s.names(ts) == ["mine"])
        self.assertEqual({r["path"].split("?")[0] for r in srv.requests}, {"/api/v1/namespaces/monitoring/pods"})
        self.assertEqual(srv.requests[0]["authorization"], "Bearer sa-token")
        self.assertIn("config=in-cluster", h.log())

    def test_in_cluster_needs_the_environment(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE")}
        p = k8s.run_harness_once(self.tmp, {"role": "pod"}, env=env)
        self.assertEqual(p.returncode, 1)
        self.assertIn("KUBERNETES_SERVICE_HOST", p.stderr)


class ConfigErrors(k8s.Case):
    def test_configuration_errors(self):
        ca = self.pki.ca
        base = {"role": "pod", "api_server": "https://127.0.0.1:1"}
        cases = [
            ({"role": "pods"}, 'unknown Kubernetes SD role "pods"'),
            ({}, "role is required"),
            # As in Alloy, the kubeconfig wins over api_server and HTTP client settings (they load)...
            (dict(base, kubeconfig_file="/nonexistent/kc"), "kubeconfig_file: open /nonexistent/kc"),
            ({"role": "pod", "kubeconfig_file": "/nonexistent/kc", "bearer_token": "x"}, "kubeconfig_file: open /nonexistent/kc"),
            # ...and in cluster they are ignored: the service account is used.
            ({"role": "service", "tls_config": {"ca_file": ca}}, "unable to load in-cluster configuration"),
            (dict(base, bearer_token="a", basic_auth={"username": "u"}),
             "at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file"),
            (dict(base, oauth2={"client_id": "x", "token_url": "http://t"}),
             "either oauth2 client_secret or client_secret_file must be configured"),
            (dict(base, authorization={"type": "Basic", "credentials": "x"}), 'use "basic_auth" block instead'),
            (dict(base, tls_config={"cert_file": "/c"}), "exactly one of key_pem or key_file"),
            (dict(base, tls_config={"min_version": "TLS14"}), "unknown TLS version: TLS14"),
            (dict(base, namespaces={"names": ["Bad_NS"]}), '"Bad_NS" is not a valid namespace name'),
            (dict(base, selectors=[{"role": "endpoint", "field": "a=b"}]), 'selectors: unknown role "endpoint"'),
            (dict(base, selectors=[{"role": "pod", "field": "spec.nodeName"}]), "invalid field selector"),
            (dict(base, selectors=[{"role": "pod", "field": "a=b=c"}]), "unescaped '='"),
            (dict(base, selectors=[{"role": "pod", "label": "app in (a"}]), "invalid label selector"),
            (dict(base, selectors=[{"role": "pod", "label": "-bad=x"}]), "is not a valid label key"),
            (dict(base, http_headers={"Authorization": ["x"]}), "http_headers: header Authorization is reserved"),
            (dict(base, no_proxy="10.0.0.0/8"), "if no_proxy is configured, proxy_url must also be configured"),
            (dict(base, proxy_from_environment=True, proxy_url="http://p:3128"),
             "if proxy_from_environment is configured, proxy_url must not be configured"),
            (dict(base, api_server="127.0.0.1:6443"), "must start with https:// or http://"),
            (dict(base, bearer_token_file="/nonexistent/token"), "open /nonexistent/token"),
        ]
        for cfg, msg in cases:
            with self.subTest(msg=msg):
                env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE")}
                p = k8s.run_harness_once(self.tmp, cfg, env=env)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn(msg, p.stderr)


if __name__ == "__main__":
    unittest.main()
