"""discovery.docker against the Docker Engine API test server (tests/servers/docker_api.py)
on a unix socket and on TCP: the labels of containers with several networks, host
networking, no ports, a shared network stack; filters; API version negotiation; the
server's failure modes; and the docker targets attributing a real process that runs in
a docker-shaped cgroup.
"""
import copy
import json
import os
import socket
import subprocess
import sys
import time
import unittest

import cgroups
import np

HARNESS = os.path.join(np.ROOT, "build", "harness", "discovery_harness")
SERVER = os.path.join(np.ROOT, "tests", "servers", "docker_api.py")
STATE = os.path.join(np.ROOT, "tests", "fixtures", "docker", "engine_state.json")

WEB = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2"
DB = "0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e"
NET_DEFAULT = "7189986ab399e144e52a71b7451b4e04e2158c044b4cd2f3ae26fc3a285d3798"
NET_BACKEND = "bfcf66a6b64f7d518f009e34290dc3f3c66a08164257ad1afc3bd31d75f656e8"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
        self.server = subprocess.Popen(
            [sys.executable, SERVER, "--socket", self.sock, "--state", self.state_path, "--log", self.log_path,
             "--tcp", f"127.0.0.1:{self.tcp_port}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.stop_server)
        if self.server.stdout.readline().strip() != "ready":
            self.server.kill()
            self.fail("docker_api.py did not start: " + self.server.stderr.read())

    def stop_server(self):
        self.server.kill()
        self.server.wait()
        self.server.stdout.close()
        self.server.stderr.close()

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
        err = self.discover("--bearer-token-file", token, ok=False)  # unix:// host
        self.assertIn("only used with http:// and https://", err)


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
