"""oauth2 blocks (client credentials) in the HTTP client settings, against the token server of
tests/servers/oauth2.py: pyroscope.write delivers with the issued token (push harness and
`nodeprof run` on a real configuration), the token is refreshed after it expires, the client
authentication style is detected and kept, a rotated client_secret_file takes effect, a wrong
secret or scope gives the endpoint's error and counted drops, discovery.kubernetes lists pods
from an apiserver that requires the token (token endpoint over TLS with its own CA), and
`nodeprof check` accepts the documented arguments."""
import json
import os
import threading
import time
import unittest
import urllib.parse

import k8s
import np
from k8s import pod
from oauth2 import TokenServer
from pyroscope import PyroscopeServer
from write_harness import metric, profile, run_push

# Mostly waiting on its token, Pyroscope and apiserver test servers (20 s of wall time for 3 s of
# CPU), all on ports of their own: tests/run.py runs it beside the others.
BACKGROUND = True

FAST = {"min_backoff_period": "10ms", "max_backoff_period": "100ms"}
CLIENT, SECRET = "nodeprof-agent", "s3cr3t/with+chars"


class Base(unittest.TestCase):
    def token_server(self, **kw):
        kw.setdefault("clients", {CLIENT: {"secret": SECRET, "scopes": ["profiles:write", "pods:read"]}})
        srv = TokenServer(**kw).start()
        self.addCleanup(srv.stop)
        return srv

    def pyroscope(self, tokens):
        srv = PyroscopeServer(require_auth=tokens.authorization_ok).start()
        self.addCleanup(srv.stop)
        return srv

    def endpoint(self, pyro, tokens, **oauth2):
        o = {"client_id": CLIENT, "client_secret": SECRET, "token_url": tokens.url, "scopes": ["profiles:write"]}
        o.update(oauth2)
        return {"url": pyro.url, "oauth2": o, **FAST}


class Write(Base):
    def test_delivers_with_the_issued_token(self):
        tokens = self.token_server()
        pyro = self.pyroscope(tokens)
        ep = self.endpoint(pyro, tokens, endpoint_params={"audience": "pyroscope"})
        res, _ = run_push(self, {"write": {"endpoint": [ep]}, "profiles": [profile({"__name__": "process_cpu"})],
                                 "rounds": 3, "wait_idle": "10s"})
        self.assertEqual([r["status"] for r in pyro.all_requests()], [200, 200, 200])
        self.assertEqual(metric(res, "pyroscope_write_sent_profiles_total", endpoint=pyro.url), 3)
        # One token for all three pushes, asked with HTTP Basic first (x/oauth2's auto-detection).
        reqs = tokens.requests()
        self.assertEqual(len(reqs), 1, reqs)
        self.assertEqual(reqs[0]["method"], "basic")
        self.assertEqual(reqs[0]["form"], {"grant_type": "client_credentials", "scope": "profiles:write",
                                           "audience": "pyroscope"})
        self.assertEqual(reqs[0]["body"], "audience=pyroscope&grant_type=client_credentials&scope=profiles%3Awrite")
        self.assertEqual(reqs[0]["user_agent"], "nodeprof/0.1.0")
        auth = {r["headers"]["authorization"] for r in pyro.all_requests()}
        self.assertEqual(auth, {"Bearer " + reqs[0]["token"]})

    def test_token_refreshed_after_expiry(self):
        # Valid for 11 s, used until 10 s before expiry: each push 1.5 s apart needs a new token.
        tokens = self.token_server(expires_in=11)
        pyro = self.pyroscope(tokens)
        res, _ = run_push(self, {"write": {"endpoint": [self.endpoint(pyro, tokens)]},
                                 "profiles": [profile({"__name__": "process_cpu"})], "rounds": 3,
                                 "interval": "1500ms", "wait_idle": "10s"})
        self.assertEqual(metric(res, "pyroscope_write_sent_profiles_total", endpoint=pyro.url), 3)
        self.assertEqual(tokens.issued(), 3)
        used = [r["headers"]["authorization"] for r in pyro.all_requests()]
        self.assertEqual(len(set(used)), 3, used)

    def test_cached_until_expiry(self):
        tokens = self.token_server(expires_in=60)
        pyro = self.pyroscope(tokens)
        run_push(self, {"write": {"endpoint": [self.endpoint(pyro, tokens)]},
                        "profiles": [profile({"__name__": "process_cpu"})], "rounds": 3, "interval": "500ms",
                        "wait_idle": "10s"})
        self.assertEqual(tokens.issued(), 1)
        self.assertEqual(len(pyro.pushes()), 3)

    def test_wrong_secret_is_a_clear_error_and_counted_drops(self):
        tokens = self.token_server()
        pyro = self.pyroscope(tokens)
        ep = dict(self.endpoint(pyro, tokens, client_secret="wrong"), max_backoff_retries=2)
        res, err = run_push(self, {"write": {"endpoint": [ep]}, "profiles": [profile({"__name__": "process_cpu"})],
                                   "rounds": 2, "wait_idle": "10s"})
        self.assertEqual(pyro.all_requests(), [])
        self.assertEqual(metric(res, "pyroscope_write_sent_profiles_total", endpoint=pyro.url), 0)
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=pyro.url), 2)
        self.assertIn(f'oauth2: token request to {tokens.url}: \\"invalid_client\\" '
                      '\\"Client authentication failed\\"', err)
        self.assertNotIn("wrong", err)  # the secret is never logged
        # Each attempt tried Basic, then the body parameters, as x/oauth2 does.
        methods = [r["method"] for r in tokens.requests()]
        self.assertEqual(methods[:2], ["basic", "post"])
        self.assertEqual(tokens.issued(), 0)

    def test_invalid_scope_is_reported(self):
        tokens = self.token_server()
        pyro = self.pyroscope(tokens)
        ep = dict(self.endpoint(pyro, tokens, scopes=["admin"]), max_backoff_retries=1)
        res, err = run_push(self, {"write": {"endpoint": [ep]}, "profiles": [profile({"__name__": "process_cpu"})],
                                   "wait_idle": "10s"})
        self.assertIn('\\"invalid_scope\\"', err)
        self.assertEqual(metric(res, "pyroscope_write_dropped_profiles_total", endpoint=pyro.url), 1)

    def test_body_credentials_detected_and_kept(self):
        # A server that takes client_secret_post only: Basic fails, the body works, and the
        # next token is asked the same way at once. The answer is form-encoded.
        tokens = self.token_server(auth_methods=("post",), expires_in=11, response_format="form")
        pyro = self.pyroscope(tokens)
        run_push(self, {"write": {"endpoint": [self.endpoint(pyro, tokens)]},
                        "profiles": [profile({"__name__": "process_cpu"})], "rounds": 2, "interval": "1500ms",
                        "wait_idle": "10s"})
        self.assertEqual(len(pyro.pushes()), 2)
        self.assertEqual([(r["method"], r["status"]) for r in tokens.requests()],
                         [("basic", 401), ("post", 200), ("post", 200)])
        form = tokens.requests()[1]["form"]
        self.assertEqual((form["client_id"], form["client_secret"]), (CLIENT, SECRET))

    def test_rotated_client_secret_file_takes_effect(self):
        d = np.tmpdir(self)
        path = os.path.join(d, "secret")
        with open(path, "w") as f:
            f.write(SECRET + "\n")
        tokens = self.token_server()
        pyro = self.pyroscope(tokens)
        ep = self.endpoint(pyro, tokens, client_secret_file=path)
        del ep["oauth2"]["client_secret"]

        def rotate():
            time.sleep(1.0)
            tokens.set_secret(CLIENT, "rotated")
            with open(path + ".new", "w") as f:
                f.write("  rotated  \n")
            os.rename(path + ".new", path)

        t = threading.Thread(target=rotate)
        t.start()
        res, _ = run_push(self, {"write": {"endpoint": [ep]}, "profiles": [profile({"__name__": "process_cpu"})],
                                 "rounds": 3, "interval": "1s", "wait_idle": "10s"})
        t.join()
        self.assertEqual(metric(res, "pyroscope_write_sent_profiles_total", endpoint=pyro.url), 3)
        ok = [r for r in tokens.requests() if r["status"] == 200]
        self.assertEqual(len(ok), 2, tokens.requests())  # a new token for the new secret only
        self.assertEqual(base_secret(ok[1]), "rotated")


def base_secret(record):
    import base64
    raw = base64.b64decode(record["authorization"].split(" ", 1)[1]).decode()
    return urllib.parse.unquote_plus(raw.partition(":")[2])


class Kubernetes(k8s.Case, Base):
    def test_lists_pods_with_a_token_from_a_tls_token_endpoint(self):
        tokens = self.token_server(tls_cert=self.pki.server_crt, tls_key=self.pki.server_key)
        srv = self.server(tokens=[])
        srv.set_tokens(["not-issued"])  # only issued tokens open the apiserver
        tokens.on_issue.append(lambda _t: srv.set_tokens(tokens.valid_tokens()))
        srv.put("pods", pod("web-0", ip="10.0.0.7", containers=(("app", "img:1", ((8080, "http", "TCP"),)),)))
        o = {"client_id": CLIENT, "client_secret": SECRET, "token_url": tokens.url, "scopes": ["pods:read"],
             "tls_config": {"ca_file": self.pki.ca}}
        h = self.harness(srv, {"oauth2": o})
        targets = h.wait_for(lambda ts: any(t.get("__address__") == "10.0.0.7:8080" for t in ts))
        self.assertTrue(targets)
        self.assertEqual(tokens.issued(), 1)
        reqs = list(srv.requests)
        self.assertTrue(reqs and all(tokens.authorization_ok(r["authorization"]) for r in reqs), reqs)

    def test_wrong_secret_logged_and_retried(self):
        tokens = self.token_server()
        srv = self.server(tokens=["x"])
        o = {"client_id": CLIENT, "client_secret": "nope", "token_url": tokens.url}
        h = self.harness(srv, {"oauth2": o})
        h.wait_log('\\"invalid_client\\" \\"Client authentication failed\\"')
        self.assertEqual(srv.requests, [])


ALLOY = """discovery.kubernetes "pods" {
  role       = "pod"
  api_server = "%(api)s"
  tls_config {
    ca_file = "%(ca)s"
  }
  oauth2 {
    client_id          = "%(client)s"
    client_secret_file = "%(secret_file)s"
    token_url          = "%(token_url)s"
    scopes             = ["pods:read"]
    endpoint_params    = { audience = "kubernetes" }
    tls_config {
      ca_file = "%(ca)s"
    }
  }
}
"""

RUN_CONFIG = """discovery.process "p" {
  refresh_interval = "1s"
}
discovery.relabel "r" {
  targets = discovery.process.p.targets
  rule {
    source_labels = ["__meta_process_exe"]
    regex = ".*/split"
    action = "keep"
  }
  rule {
    target_label = "service_name"
    replacement = "oauth2-svc"
  }
}
pyroscope.ebpf "e" {
  targets = discovery.relabel.r.output
  forward_to = [pyroscope.write.w.receiver]
  collect_interval = "2s"
}
pyroscope.write "w" {
  endpoint {
    url = "%(url)s"
    oauth2 {
      client_id     = "%(client)s"
      client_secret = "%(secret)s"
      token_url     = "%(token_url)s"
      scopes        = ["profiles:write"]
    }
  }
}
"""


class Config(Base):
    def write(self, text):
        path = os.path.join(np.tmpdir(self), "config.alloy")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_check_accepts_the_documented_arguments(self):
        d = np.tmpdir(self)
        secret = os.path.join(d, "secret")
        open(secret, "w").write(SECRET)
        cfg = ALLOY % {"api": "https://127.0.0.1:6443", "ca": "/etc/ssl/certs/ca-certificates.crt", "client": CLIENT,
                       "secret_file": secret, "token_url": "https://idp.example/oauth2/token"}
        cfg += """pyroscope.write "w" {
  endpoint {
    url = "https://pyroscope.example"
    oauth2 {
      client_id              = "id"
      client_secret          = "s"
      token_url              = "https://idp.example/oauth2/token"
      proxy_url              = "http://proxy.example:3128"
      no_proxy               = "10.0.0.0/8"
      proxy_connect_header   = { "X-Proxy-Auth" = ["p"] }
      grant_type             = "client_credentials"
    }
  }
}
discovery.docker "d" {
  host = "http://docker.example:2375"
  oauth2 {
    client_id = "id"
    client_secret = "s"
    token_url = "https://idp.example/oauth2/token"
  }
}
"""
        p = np.nodeprof("check", self.write(cfg))
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_check_reports_alloy_validation_errors(self):
        block = '    oauth2 {\n      client_id = "id"\n%s      token_url = "http://t"\n    }\n'
        path = self.write('pyroscope.write "w" {\n  endpoint {\n    url = "http://p"\n    bearer_token = "t"\n' +
                          block % '      client_secret = "s"\n' + '  }\n}\n')
        p = np.nodeprof("check", path)
        self.assertEqual((p.returncode, p.stderr),
                         (1, f"{path}:5:5: at most one of basic_auth, authorization, oauth2, bearer_token & "
                             "bearer_token_file must be configured\n"))
        path = self.write('pyroscope.write "w" {\n  endpoint {\n    url = "http://p"\n' + block % '' + '  }\n}\n')
        p = np.nodeprof("check", path)
        self.assertEqual((p.returncode, p.stderr),
                         (1, f"{path}:4:5: either oauth2 client_secret or client_secret_file must be configured\n"))

    def test_run_pushes_profiles_with_the_token(self):
        import subprocess
        import socket
        d = np.tmpdir(self)
        split = np.build_workload("split", d)
        w = subprocess.Popen([split, "60"], env=dict(os.environ, SPLIT_BUSY_PERCENT="15"))  # beside others
        self.addCleanup(lambda: (w.kill(), w.wait()))
        tokens = self.token_server()
        pyro = self.pyroscope(tokens)
        cfg = self.write(RUN_CONFIG % {"url": pyro.url, "client": CLIENT, "secret": SECRET,
                                       "token_url": tokens.url})
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        log = open(os.path.join(d, "agent.log"), "w+")
        p = subprocess.Popen([np.NODEPROF, "run", "--http-listen", f"127.0.0.1:{port}", "--config", cfg],
                             stdout=log, stderr=subprocess.STDOUT, text=True)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        deadline = time.time() + 30
        while time.time() < deadline and not pyro.pushes():
            if p.poll() is not None:
                log.seek(0)
                self.fail("nodeprof run exited %d:\n%s" % (p.returncode, log.read()[-3000:]))
            time.sleep(0.5)
        log.seek(0)
        pushes = pyro.pushes()
        self.assertTrue(pushes, log.read()[-3000:])
        self.assertEqual(pushes[0]["series"][0]["labels"]["service_name"], "oauth2-svc")
        self.assertEqual(tokens.issued(), 1)
        self.assertTrue(all(tokens.authorization_ok(r["headers"]["authorization"]) for r in pyro.all_requests()))


if __name__ == "__main__":
    unittest.main()
