"""discovery.docker against the Docker Engine API test server (tests/servers/docker_api.py)
on a unix socket, on TCP and over TLS: the labels of containers with several networks,
host networking, no ports, a shared network stack; filters; API version negotiation; the
server's failure modes; every HTTP client setting the component accepts (TLS with a test
CA, server_name, client certificates, http_headers, authorization, basic_auth, proxies
through tests/servers/http_proxy.py), each asserted where it arrives; the settings that
cannot apply to unix:// and tcp:// hosts refused by `nodeprof check`; and the docker
targets attributing a real process that runs in a docker-shaped cgroup.
"""
import copy
import json
import os
import subprocess
import sys
import time
import unittest

import cgroups
import k8s
import np

# Mostly waiting on its Docker Engine test server (30 s of wall time for 3 s of CPU), on sockets and
# ports of its own: tests/run.py runs it beside the others.
BACKGROUND = True

HARNESS = os.path.join(np.ROOT, "build", "harness", "discovery_harness")
SERVER = os.path.join(np.ROOT, "tests", "servers", "docker_api.py")
PROXY = os.path.join(np.ROOT, "tests", "servers", "http_proxy.py")
STATE = os.path.join(np.ROOT, "tests", "fixtures", "docker", "engine_state.json")

WEB = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2"
DB = "0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e"
NET_DEFAULT = "7189986ab399e144e52a71b7451b4e04e2158c044b4cd2f3ae26fc3a285d3798"
NET_BACKEND = "bfcf66a6b64f7d518f009e34290dc3f3c66a08164257ad1afc3bd31d75f656e8"


free_port = np.free_port


class EngineTest(unittest.TestCase):
    def setUp(self):
        self.dir = np.tmpdir(self)
        self.sock = os.path.join(self.dir, "docker.sock")
        self.state_path = os.path.join(self.dir, "state.json")
        self.log_path = os.path.join(self.dir, "requests.log")
        with open(STATE) as f:
            self.state = json.load(f)
        self.save()
        self.tcp_port = free_port()
        self.server = self.start([sys.executable, SERVER, "--socket", self.sock, "--state", self.state_path,
                                  "--log", self.log_path, "--tcp", f"127.0.0.1:{self.tcp_port}",
                                  *self.server_args()])

    def server_args(self):
        return []

    def start(self, argv):
        """Starts a test server that prints "ready"; it is stopped when the test ends."""
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.stop, p)
        if p.stdout.readline().strip() != "ready":
            p.kill()
            self.fail(f"{os.path.basename(argv[1])} did not start: " + p.stderr.read())
        return p

    @staticmethod
    def stop(p):
        p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()

    def save(self):
        with open(self.state_path, "w") as f:
            json.dump(self.state, f)

    def discover(self, *args, host=None, ok=True):
        p = subprocess.run([HARNESS, "docker", "--host", host or f"unix://{self.sock}", *map(str, args)],
                           capture_output=True, text=True, timeout=60)
        if ok:
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)
        self.assertEqual(p.returncode, 1, p.stdout)
        return p.stderr

    def requests(self):
        with open(self.log_path) as f:
            return [json.loads(line) for line in f]

    def named(self, targets, name):
        return [t for t in targets if t["__meta_docker_container_name"] == name]


class Labels(EngineTest):
    def test_default_arguments(self):
        targets = self.discover()
        names = [t["__meta_docker_container_name"] for t in targets]
        # web: 8080 published twice (IPv4 and IPv6 bindings) and 8443; udp 53 ignored
        self.assertEqual(names, ["/shop-web-1"] * 3 + ["/shop-db-1", "/node-agent", "/shop-db-exporter-1", "/lonely"])
        web = self.named(targets, "/shop-web-1")
        self.assertEqual(web[0], {
            "__address__": "172.19.0.2:8080",
            "__meta_docker_container_id": WEB,
            "__meta_docker_container_label_caf__owner": "ops",
            "__meta_docker_container_label_com_docker_compose_project": "shop",
            "__meta_docker_container_label_com_docker_compose_service": "web",
            "__meta_docker_container_label_com_docker_compose_version": "2.21.0",
            "__meta_docker_container_label_pyroscope_service": "web",
            "__meta_docker_container_name": "/shop-web-1",
            "__meta_docker_container_network_mode": "shop_default",
            "__meta_docker_network_id": NET_DEFAULT,
            "__meta_docker_network_ingress": "false",
            "__meta_docker_network_internal": "false",
            "__meta_docker_network_ip": "172.19.0.2",
            "__meta_docker_network_label_com_docker_compose_network": "default",
            "__meta_docker_network_label_com_docker_compose_project": "shop",
            "__meta_docker_network_name": "shop_default",
            "__meta_docker_network_scope": "local",
            "__meta_docker_port_private": "8080",
            "__meta_docker_port_public": "18080",
            "__meta_docker_port_public_ip": "0.0.0.0",
        })
        self.assertEqual(web[1]["__meta_docker_port_public_ip"], "::")
        self.assertEqual(web[2]["__address__"], "172.19.0.2:8443")
        self.assertNotIn("__meta_docker_port_public", web[2])
        # the stopped container is not listed
        self.assertEqual(self.named(targets, "/old-job"), [])

    def test_several_networks(self):
        db = self.named(self.discover(), "/shop-db-1")
        # match_first_network: the first network by name only
        self.assertEqual([(t["__meta_docker_network_name"], t["__address__"]) for t in db],
                         [("shop_backend", "172.21.0.2:5432")])
        self.assertEqual(db[0]["__meta_docker_network_internal"], "true")
        self.assertEqual(db[0]["__meta_docker_network_id"], NET_BACKEND)
        db = self.named(self.discover("--no-match-first-network"), "/shop-db-1")
        self.assertEqual([(t["__meta_docker_network_name"], t["__address__"]) for t in db],
                         [("shop_backend", "172.21.0.2:5432"), ("shop_default", "172.19.0.3:5432")])

    def test_shared_network_stack(self):
        targets = self.discover("--no-match-first-network")
        exporter = self.named(targets, "/shop-db-exporter-1")
        self.assertEqual([t["__address__"] for t in exporter], ["172.21.0.2:9187", "172.19.0.3:9187"])
        self.assertEqual(exporter[0]["__meta_docker_container_network_mode"], f"container:{DB}")

    def test_host_networking_and_no_ports(self):
        targets = self.discover()
        agent = self.named(targets, "/node-agent")
        self.assertEqual(len(agent), 1)
        self.assertEqual(agent[0]["__address__"], "localhost")
        self.assertEqual(agent[0]["__meta_docker_network_ip"], "")
        self.assertEqual(agent[0]["__meta_docker_container_network_mode"], "host")
        self.assertNotIn("__meta_docker_port_private", agent[0])
        self.assertEqual(self.named(targets, "/lonely")[0]["__address__"], "172.17.0.2:80")
        targets = self.discover("--host-networking-host", "node-7", "--port", "9100")
        self.assertEqual(self.named(targets, "/node-agent")[0]["__address__"], "node-7")
        self.assertEqual(self.named(targets, "/lonely")[0]["__address__"], "172.17.0.2:9100")
        self.assertEqual(self.named(targets, "/shop-web-1")[0]["__address__"], "172.19.0.2:8080")

    def test_state_changes_between_refreshes(self):
        self.assertEqual(len(self.discover()), 7)
        self.state["containers"][-1]["State"] = "running"  # /old-job starts
        self.state["containers"] = [c for c in self.state["containers"] if c["Names"] != ["/lonely"]]
        self.save()
        names = {t["__meta_docker_container_name"] for t in self.discover()}
        self.assertIn("/old-job", names)
        self.assertNotIn("/lonely", names)

    def test_tcp_host(self):
        targets = self.discover(host=f"tcp://127.0.0.1:{self.tcp_port}")
        self.assertEqual(len(targets), 7)
        self.assertEqual(self.requests()[-1]["headers"]["host"], f"127.0.0.1:{self.tcp_port}")


class Protocol(EngineTest):
    def test_filters_are_passed_to_the_engine(self):
        targets = self.discover("--filter", "label=com.docker.compose.service=db,com.docker.compose.project=shop")
        self.assertEqual({t["__meta_docker_container_name"] for t in targets}, {"/shop-db-1"})
        query = self.requests()[1]["query"]
        self.assertEqual(json.loads(query["filters"][0]),
                         {"label": {"com.docker.compose.service=db": True, "com.docker.compose.project=shop": True}})
        self.assertNotIn("all", query)
        targets = self.discover("--filter", "status=exited")
        self.assertEqual({t["__meta_docker_container_name"] for t in targets}, {"/old-job"})
        err = self.discover("--filter", "colour=blue", ok=False)
        self.assertIn("HTTP 400: invalid filter 'colour'", err)
        self.assertIn("error while listing containers", err)

    def test_no_filters_no_query(self):
        self.discover()
        self.assertEqual([(r["path"], r["query"]) for r in self.requests()],
                         [("/_ping", {}), ("/v1.41/containers/json", {}), ("/v1.41/networks", {})])
        self.assertTrue(self.requests()[0]["headers"]["user-agent"].startswith("nodeprof/"))

    def test_api_version_negotiation(self):
        for server_version, used in (("1.41", "1.41"), ("1.43", "1.43"), ("1.45", "1.43"), ("1.25", "1.25")):
            with self.subTest(server=server_version):
                self.state["api_version"] = server_version
                self.save()
                open(self.log_path, "w").close()
                self.assertEqual(len(self.discover()), 7)
                self.assertEqual(self.requests()[1]["path"], f"/v{used}/containers/json")
        self.state["api_version"] = "1.41"
        self.state["faults"] = {"ping": {"no_version_header": True}}
        self.save()
        open(self.log_path, "w").close()
        self.discover()
        self.assertEqual(self.requests()[1]["path"], "/v1.24/containers/json")

    def test_engine_refuses_our_version(self):
        self.state["min_api_version"] = "1.44"
        self.state["api_version"] = "1.45"
        self.save()
        err = self.discover(ok=False)
        self.assertIn("client version 1.43 is too old", err)


class Failures(EngineTest):
    def fault(self, name, **fault):
        self.state["faults"] = {name: fault}
        self.save()

    def test_server_errors(self):
        self.fault("containers", status=500, message="Cannot connect to containerd")
        err = self.discover(ok=False)
        self.assertIn("GET /v1.41/containers/json: HTTP 500: Cannot connect to containerd", err)
        self.fault("networks", status=503, message="busy")
        self.assertIn("error while computing network labels: GET /v1.41/networks: HTTP 503: busy",
                      self.discover(ok=False))
        self.fault("ping", status=500, message="down")
        self.assertIn("GET /_ping: HTTP 500: down", self.discover(ok=False))

    def test_malformed_and_oversized_answers(self):
        self.fault("containers", garbage=True)
        self.assertIn("container list: invalid JSON", self.discover(ok=False))
        self.fault("containers", huge=200000)
        self.assertIn("larger than 100000 bytes", self.discover("--max-response-bytes", 100000, ok=False))

    def test_slow_engine_times_out_after_the_refresh_interval(self):
        self.fault("containers", delay=5)
        start = time.monotonic()
        err = self.discover("--refresh-interval", "700ms", ok=False)
        self.assertLess(time.monotonic() - start, 4)
        self.assertIn("Timeout", err)

    def test_no_engine(self):
        err = self.discover(host=f"unix://{self.dir}/absent.sock", ok=False)
        self.assertIn("GET /_ping", err)
        self.assertIn("absent.sock", err)
        err = self.discover(host="unix://relative.sock", ok=False)
        self.assertIn("absolute path", err)

    def test_bearer_token_over_http(self):
        self.state["bearer_token"] = "s3cret-token"
        self.save()
        token = os.path.join(self.dir, "token")
        with open(token, "w") as f:
            f.write("  s3cret-token\n")
        targets = self.discover("--bearer-token-file", token, host=f"http://127.0.0.1:{self.tcp_port}")
        self.assertEqual(len(targets), 7)
        self.assertEqual(self.requests()[-1]["headers"]["authorization"], "Bearer s3cret-token")
        with open(token, "w") as f:
            f.write("wrong")
        err = self.discover("--bearer-token-file", token, host=f"http://127.0.0.1:{self.tcp_port}", ok=False)
        self.assertIn("HTTP 401", err)
        self.assertNotIn("wrong", err)
        # A unix:// host: Prometheus' docker SD (so Alloy) sends no credentials there, and
        # neither does nodeprof (check warns); the server, which wants the token, refuses.
        err = self.discover("--bearer-token-file", token, ok=False)
        self.assertIn("HTTP 401", err)
        last = self.requests()[-1]
        self.assertEqual(last["listener"], "unix")
        self.assertNotIn("authorization", last["headers"])


def no_proxy_env(**extra):
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy",
                                                                       "no_proxy")}
    env.update(extra)
    return env


class HttpsEngine(EngineTest):
    """The component as users write it (nodeprof tools targets on a config file), against
    the Engine also served over https with a test CA whose server certificate names only
    docker.test.internal, so that every TLS setting is needed to get through."""

    def server_args(self):
        self.pki = os.path.join(self.dir, "pki")
        os.makedirs(self.pki)
        self.ca, _ = k8s.make_ca(self.pki, "docker-ca")
        crt, key = k8s.make_cert(self.pki, "engine", "docker-ca", "docker.test.internal", ["DNS:docker.test.internal"])
        self.client_crt, self.client_key = k8s.make_cert(self.pki, "client", "docker-ca", "nodeprof", client=True)
        self.other_ca, _ = k8s.make_ca(self.pki, "other-ca")
        self.https_port = free_port()
        self.https = f"https://127.0.0.1:{self.https_port}"
        return ["--https", f"127.0.0.1:{self.https_port}", "--cert", crt, "--key", key, *self.server_extra()]

    def server_extra(self):
        return []

    def targets(self, body, ok=True, env=None):
        """Runs discovery.docker "d" { body } once; the targets, or the error output."""
        path = os.path.join(self.dir, "docker.alloy")
        with open(path, "w") as f:
            f.write('discovery.docker "d" {\n' + body + "\n}\n")
        # a failing refresh is reported at once but waited for until --wait ends
        p = np.nodeprof("tools", "targets", "--config", path, "--component", "discovery.docker.d",
                        "--wait", "10s" if ok else "3s", env=env or no_proxy_env(), timeout=60)
        if ok:
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        return p.stderr

    def tls(self, *lines):
        return "  tls_config {\n" + "".join(f"    {line}\n" for line in lines) + "  }\n"


class HttpClientSettings(HttpsEngine):

    def test_https_needs_the_ca_and_server_name(self):
        body = f'  host = "{self.https}"\n'
        ca = f'ca_file = "{self.ca}"'
        name = 'server_name = "docker.test.internal"'
        self.assertEqual(len(self.targets(body + self.tls(ca, name))), 7)
        self.assertEqual({r["listener"] for r in self.requests()}, {"https"})
        self.assertEqual(self.requests()[0]["headers"]["host"], f"127.0.0.1:{self.https_port}")
        self.assertIn("certificate", self.targets(body + self.tls(ca), ok=False))  # 127.0.0.1 is not in it
        self.assertIn("certificate", self.targets(body + self.tls(f'ca_file = "{self.other_ca}"', name), ok=False))
        self.assertIn("certificate", self.targets(body + self.tls(name), ok=False))  # system CAs only
        self.assertEqual(len(self.targets(body + self.tls("insecure_skip_verify = true"))), 7)
        self.assertEqual(len(self.targets(body + self.tls(ca, name, 'min_version = "TLS13"'))), 7)

    def test_http_headers_are_sent_on_every_transport(self):
        self.state["required_headers"] = {"foo": "foobar", "X-Multi": ["1", "2"]}
        self.save()
        headers = '  http_headers = {\n    "foo" = ["foobar"],\n    "X-Multi" = ["1", "2"],\n  }\n'
        for host in (f"unix://{self.sock}", f"tcp://127.0.0.1:{self.tcp_port}", f"http://127.0.0.1:{self.tcp_port}"):
            with self.subTest(host=host):
                open(self.log_path, "w").close()
                self.assertEqual(len(self.targets(f'  host = "{host}"\n' + headers)), 7)
                self.assertEqual(len(self.requests()), 3)
                self.assertTrue(all(r["headers"]["foo"] == "foobar" for r in self.requests()))
        self.assertEqual(len(self.targets(f'  host = "{self.https}"\n' + headers + self.tls(
            f'ca_file = "{self.ca}"', 'server_name = "docker.test.internal"'))), 7)
        err = self.targets(f'  host = "unix://{self.sock}"\n  http_headers = {{ "foo" = ["other"] }}\n', ok=False)
        self.assertIn("HTTP 400: missing or wrong header foo", err)
        self.assertNotIn("other", err)

    def test_authorization_and_basic_auth(self):
        creds = os.path.join(self.dir, "credentials")
        with open(creds, "w") as f:
            f.write("  s3cret\n")
        self.state["authorization"] = "Custom s3cret"
        self.save()
        https = f'  host = "{self.https}"\n' + self.tls(f'ca_file = "{self.ca}"', 'server_name = "docker.test.internal"')
        self.assertEqual(len(self.targets(https + '  authorization {\n    type = "Custom"\n'
                                                  f'    credentials_file = "{creds}"\n  }}\n')), 7)
        self.assertEqual(len(self.targets(https + '  authorization {\n    type = "Custom"\n'
                                                  '    credentials = "s3cret"\n  }\n')), 7)
        err = self.targets(https + '  authorization {\n    type = "Custom"\n    credentials = "wrong"\n  }\n',
                           ok=False)
        self.assertIn("HTTP 401", err)
        self.assertNotIn("wrong", err)
        self.state["authorization"] = "Basic dXNlcjpwYXNz"  # user:pass
        self.save()
        with open(creds, "w") as f:
            f.write("pass\n")
        self.assertEqual(len(self.targets(https + '  basic_auth {\n    username = "user"\n'
                                                  f'    password_file = "{creds}"\n  }}\n')), 7)
        os.unlink(creds)
        err = self.targets(https + f'  basic_auth {{\n    username = "user"\n    password_file = "{creds}"\n  }}\n',
                           ok=False)
        self.assertIn(f"basic_auth password_file: open {creds}", err)

    def test_proxy_url_tunnels_https_and_forwards_http(self):
        proxy_log = os.path.join(self.dir, "proxy.log")
        proxy_port = free_port()
        self.start([sys.executable, PROXY, "--listen", f"127.0.0.1:{proxy_port}", "--log", proxy_log,
                    "--require", "X-Proxy-Token=t0k"])
        proxy = f'  proxy_url = "http://127.0.0.1:{proxy_port}"\n'
        connect_header = '  proxy_connect_header = { "X-Proxy-Token" = ["t0k"] }\n'
        https = f'  host = "{self.https}"\n' + self.tls(f'ca_file = "{self.ca}"', 'server_name = "docker.test.internal"')

        def proxied():
            with open(proxy_log) as f:
                out = [json.loads(line) for line in f]
            open(proxy_log, "w").close()
            return out

        open(proxy_log, "w").close()
        self.assertEqual(len(self.targets(https + proxy + connect_header)), 7)
        seen = proxied()
        self.assertEqual({(r["method"], r["target"], r["headers"].get("x-proxy-token")) for r in seen},
                         {("CONNECT", f"127.0.0.1:{self.https_port}", "t0k")})
        self.assertEqual({r["listener"] for r in self.requests()}, {"https"})
        self.assertIn("407", self.targets(https + proxy, ok=False))  # the proxy wants its header
        proxied()
        # proxy_from_environment, as Go reads HTTPS_PROXY
        env = no_proxy_env(HTTPS_PROXY=f"http://127.0.0.1:{proxy_port}")
        self.assertEqual(len(self.targets(https + '  proxy_from_environment = true\n' + connect_header, env=env)), 7)
        self.assertEqual({r["method"] for r in proxied()}, {"CONNECT"})

        # http:// is forwarded, without the CONNECT-only header; no_proxy goes direct
        open_proxy_port = free_port()
        self.start([sys.executable, PROXY, "--listen", f"127.0.0.1:{open_proxy_port}", "--log", proxy_log])
        http = f'  host = "http://127.0.0.1:{self.tcp_port}"\n  proxy_url = "http://127.0.0.1:{open_proxy_port}"\n'
        self.assertEqual(len(self.targets(http + connect_header)), 7)
        seen = proxied()
        self.assertEqual([(r["method"], r["target"]) for r in seen][0], ("GET", f"http://127.0.0.1:{self.tcp_port}/_ping"))
        self.assertEqual(len(seen), 3)
        self.assertFalse([r for r in seen if "x-proxy-token" in r["headers"]], seen)
        self.assertEqual(self.requests()[-1]["listener"], "tcp")
        self.assertEqual(len(self.targets(http + '  no_proxy = "127.0.0.1"\n')), 7)
        self.assertEqual(proxied(), [])

    def test_check_warns_about_what_unix_and_tcp_hosts_ignore(self):
        path = os.path.join(self.dir, "bad.alloy")
        cases = (
            (f"unix://{self.sock}", f'  tls_config {{\n    ca_file = "{self.ca}"\n  }}\n', "3:3: tls_config",
             "unix://"),
            (f"unix://{self.sock}", '  proxy_url = "http://127.0.0.1:3128"\n', "3:3: proxy_url", "unix://"),
            (f"tcp://127.0.0.1:{self.tcp_port}", '  basic_auth {\n    username = "u"\n  }\n', "3:3: basic_auth",
             "tcp://"),
            (f"tcp://127.0.0.1:{self.tcp_port}", '  bearer_token = "t"\n', "3:3: bearer_token", "tcp://"),
        )
        for host, body, where, scheme in cases:
            with self.subTest(where=where):
                with open(path, "w") as f:
                    f.write(f'discovery.docker "d" {{\n  host = "{host}"\n{body}}}\n')
                p = np.nodeprof("check", path)
                self.assertEqual(p.returncode, 0, p.stderr)  # Alloy loads it: so does nodeprof
                self.assertIn(f"{path}:{where.split(': ')[0]}: warning: {where.split(': ')[1]} is ignored", p.stderr)
                self.assertIn(f"Prometheus' docker SD (which Alloy runs) reaches {scheme} hosts", p.stderr)
        # at their defaults, and for http(s):// hosts, the same settings are fine
        with open(path, "w") as f:
            f.write(f'discovery.docker "d" {{\n  host = "unix://{self.sock}"\n  proxy_from_environment = false\n'
                    '  follow_redirects = false\n  enable_http2 = false\n}\n')
        self.assertEqual(np.nodeprof("check", path).returncode, 0)


class ClientCertificate(HttpsEngine):
    """An Engine started with --tlsverify: only a client certificate of its CA gets in."""

    def server_extra(self):
        return ["--client-ca", self.ca]

    def test_client_certificate_from_files_and_pem(self):
        body = f'  host = "{self.https}"\n'
        with open(self.ca) as f:
            ca_pem = f.read()
        with open(self.client_key) as f:
            key_pem = f.read()
        common = ('server_name = "docker.test.internal"',)
        self.assertEqual(len(self.targets(body + self.tls(f'ca_file = "{self.ca}"', *common,
                                                          f'cert_file = "{self.client_crt}"',
                                                          f'key_file = "{self.client_key}"'))), 7)
        # PEM text as an Alloy string: json.dumps writes the escapes Alloy reads
        self.assertEqual(len(self.targets(body + self.tls(f"ca_pem = {json.dumps(ca_pem)}", *common,
                                                          f'cert_file = "{self.client_crt}"',
                                                          f"key_pem = {json.dumps(key_pem)}"))), 7)
        self.assertIn("GET /_ping", self.targets(body + self.tls(f'ca_file = "{self.ca}"', *common), ok=False))


class DockerTargetsAttributeProcesses(EngineTest):
    """Docker discovery output -> target set -> a real process in a docker-shaped cgroup."""

    def test_process_in_docker_scope_gets_the_container_target(self):
        mount = cgroups.cgroup2_mount()
        self.assertIsNotNone(mount)
        tree = cgroups.CgroupTree(mount)
        self.addCleanup(tree.cleanup)
        rel = cgroups.runtime_path("docker-systemd", "", WEB)
        tree.make(rel)
        inside = cgroups.spawn(self)
        tree.move(inside.pid, rel)
        outside = cgroups.spawn(self)
        targets_file = os.path.join(self.dir, "targets.json")
        with open(targets_file, "w") as f:
            json.dump(self.discover(), f)
        p = subprocess.run([HARNESS, "match", "--targets", targets_file, str(inside.pid), str(outside.pid)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [json.loads(line) for line in p.stdout.splitlines()]
        # three targets share the web container's ID: the last one wins, as in Alloy
        self.assertEqual(rows[0]["target"], {"__container_id__": WEB, "__name__": "process_cpu",
                                             "service_name": "/shop-web-1"})
        self.assertIsNone(rows[1]["target"])


if __name__ == "__main__":
    unittest.main()
