"""Kubernetes discovery: the targets built from pods, label for label (docs/specs/kubernetes.md §1),
through the real path: test kube-apiserver (TLS, token) -> list+watch -> harness JSON.

The expected label sets below are written from the spec's rules and the fixture files,
not produced by the code under test."""
import json
import os
import unittest

import k8s
from k8s import pod

# The annotation of the minikube fixture, byte for byte (JSON with an embedded newline).
with open(os.path.join(k8s.FIXTURES, "pods-minikube-docker-initcontainer.json")) as f:
    LAST_APPLIED = json.load(f)["items"][0]["metadata"]["annotations"][
        "kubectl.kubernetes.io/last-applied-configuration"]


class FixtureTargets(k8s.Case):
    def test_kind_containerd_replicaset(self):
        srv = self.server()
        for p in k8s.fixture_pods("pods-kind-containerd-replicaset.json"):
            srv.put("pods", p)
        h = self.harness(srv)
        got = h.wait_for(lambda ts: len(ts) == 1)
        h.wait_log("synced")
        self.assertEqual(got, [{
            "__address__": "10.244.0.5",
            "__meta_kubernetes_namespace": "default",
            "__meta_kubernetes_pod_name": "random-pod-75b66db9b9-nqhp8",
            "__meta_kubernetes_pod_uid": "e00af024-67ca-440d-9714-999cf8617d58",
            "__meta_kubernetes_pod_ip": "10.244.0.5",
            "__meta_kubernetes_pod_host_ip": "172.18.0.2",
            "__meta_kubernetes_pod_node_name": "chart-testing-control-plane",
            "__meta_kubernetes_pod_phase": "Running",
            "__meta_kubernetes_pod_ready": "true",
            "__meta_kubernetes_pod_label_app_kubernetes_io_appname": "random-pod",
            "__meta_kubernetes_pod_labelpresent_app_kubernetes_io_appname": "true",
            "__meta_kubernetes_pod_label_pod_template_hash": "75b66db9b9",
            "__meta_kubernetes_pod_labelpresent_pod_template_hash": "true",
            "__meta_kubernetes_pod_controller_kind": "ReplicaSet",
            "__meta_kubernetes_pod_controller_name": "random-pod-75b66db9b9",
            "__meta_kubernetes_pod_container_name": "random-pod",
            "__meta_kubernetes_pod_container_image": "random-pod/server:1.27.0-alpine",
            "__meta_kubernetes_pod_container_id":
                "containerd://58e668ba55950e6d08340f496f5e7f33f3d92cbfcbf366ce5e5f5c50a3926c71",
            "__meta_kubernetes_pod_container_init": "false",
        }])

    def test_minikube_docker_init_container(self):
        """docs/specs/kubernetes.md §1.5's worked example: bare pod, Pending with an IP, port 80 without a container
        ID, then the init container (with its docker ID, not lastState's)."""
        srv = self.server()
        for p in k8s.fixture_pods("pods-minikube-docker-initcontainer.json"):
            srv.put("pods", p)
        h = self.harness(srv)
        got = h.wait_for(lambda ts: len(ts) == 2)
        group = {
            "__meta_kubernetes_namespace": "message-pod-init-crashloop-backoff",
            "__meta_kubernetes_pod_name": "init-demo2",
            "__meta_kubernetes_pod_uid": "5a560e83-c634-4c91-b308-510ee692ed6a",
            "__meta_kubernetes_pod_ip": "172.17.0.3",
            "__meta_kubernetes_pod_host_ip": "192.168.49.2",
            "__meta_kubernetes_pod_node_name": "minikube",
            "__meta_kubernetes_pod_phase": "Pending",
            "__meta_kubernetes_pod_ready": "false",
            "__meta_kubernetes_pod_annotation_kubectl_kubernetes_io_last_applied_configuration": LAST_APPLIED,
            "__meta_kubernetes_pod_annotationpresent_kubectl_kubernetes_io_last_applied_configuration": "true",
        }
        self.assertTrue(LAST_APPLIED.endswith("}\n"))
        self.assertEqual(got, [
            dict(group, **{
                "__address__": "172.17.0.3:80",
                "__meta_kubernetes_pod_container_name": "nginx",
                "__meta_kubernetes_pod_container_image": "nginx",
                "__meta_kubernetes_pod_container_id": "",
                "__meta_kubernetes_pod_container_init": "false",
                "__meta_kubernetes_pod_container_port_number": "80",
                "__meta_kubernetes_pod_container_port_name": "",
                "__meta_kubernetes_pod_container_port_protocol": "TCP",
            }),
            dict(group, **{
                "__address__": "172.17.0.3",
                "__meta_kubernetes_pod_container_name": "install",
                "__meta_kubernetes_pod_container_image": "busybox:1.28",
                "__meta_kubernetes_pod_container_id":
                    "docker://b201927f10154b9ab9913f65aa13b46e5eeed74b8efff500d11e3f08af09621b",
                "__meta_kubernetes_pod_container_init": "true",
            }),
        ])

    def test_pending_without_ip_has_no_targets(self):
        srv = self.server()
        for p in k8s.fixture_pods("pods-pending-noip-4initcontainers.json"):
            srv.put("pods", p)
        srv.put("pods", pod("marker", ip="10.9.9.9"))
        h = self.harness(srv)
        got = h.wait_for(lambda ts: len(ts) >= 1)
        self.assertEqual(k8s.names(got), ["marker"], "the unscheduled pod (no podIP) must yield no target")
        self.assertEqual(len(got), 1)

    def test_job_failed_oomkilled(self):
        srv = self.server()
        for p in k8s.fixture_pods("pods-job-failed-oomkilled.json"):
            srv.put("pods", p)
        h = self.harness(srv)
        got = h.wait_for(lambda ts: len(ts) == 1)
        self.assertEqual(got, [{
            "__address__": "172.17.0.3",
            "__meta_kubernetes_namespace": "message-oomkill-pod",
            "__meta_kubernetes_pod_name": "oom-kill-job3-gbb89",
            "__meta_kubernetes_pod_uid": "c8d3f094-b80c-4ff8-aff7-f0e624f1bf3a",
            "__meta_kubernetes_pod_ip": "172.17.0.3",
            "__meta_kubernetes_pod_host_ip": "192.168.49.2",
            "__meta_kubernetes_pod_node_name": "minikube",
            "__meta_kubernetes_pod_phase": "Failed",
            "__meta_kubernetes_pod_ready": "false",
            "__meta_kubernetes_pod_label_controller_uid": "a85295e8-54e4-40a4-aeb0-b47c19f1a69f",
            "__meta_kubernetes_pod_labelpresent_controller_uid": "true",
            "__meta_kubernetes_pod_label_job_name": "oom-kill-job3",
            "__meta_kubernetes_pod_labelpresent_job_name": "true",
            "__meta_kubernetes_pod_controller_kind": "Job",
            "__meta_kubernetes_pod_controller_name": "oom-kill-job3",
            "__meta_kubernetes_pod_container_name": "memory-eater",
            "__meta_kubernetes_pod_container_image":
                "us-central1-docker.pkg.dev/genuine-flight-317411/devel/memory-eater:1.0",
            "__meta_kubernetes_pod_container_id":
                "docker://84d3d308bb9a5765e637884194e718d297046f156a377cf6145a9397d5e469b7",
            "__meta_kubernetes_pod_container_init": "false",
        }])


class Shapes(k8s.Case):
    def test_ports_ipv6_ephemeral_and_last_state(self):
        p = pod("multi", ip="fd00::17", containers=(
            ("web", "nginx:1", ((8080, "http", "TCP"), (8443, "", "TCP"), (53, "dns", "UDP"))),
            ("side", "busybox", ())), init=(("sidecar", "envoy", ((9901, "admin", "TCP"),)),),
            statuses={"web": "cri-o://" + "a" * 64, "sidecar": "containerd://" + "b" * 64})
        p["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox"}]
        # The previous instance's ID in lastState must not be used.
        p["status"]["containerStatuses"].append({"name": "side", "lastState": {
            "terminated": {"containerID": "containerd://" + "c" * 64}}})
        srv = self.server()
        srv.put("pods", p)
        h = self.harness(srv)
        got = h.wait_for(lambda ts: len(ts) == 5)
        self.assertEqual([(t["__address__"], t["__meta_kubernetes_pod_container_name"],
                           t.get("__meta_kubernetes_pod_container_port_name"),
                           t.get("__meta_kubernetes_pod_container_port_protocol"),
                           t["__meta_kubernetes_pod_container_id"], t["__meta_kubernetes_pod_container_init"])
                          for t in got], [
            ("[fd00::17]:8080", "web", "http", "TCP", "cri-o://" + "a" * 64, "false"),
            ("[fd00::17]:8443", "web", "", "TCP", "cri-o://" + "a" * 64, "false"),
            ("[fd00::17]:53", "web", "dns", "UDP", "cri-o://" + "a" * 64, "false"),
            ("fd00::17", "side", None, None, "", "false"),
            ("[fd00::17]:9901", "sidecar", "admin", "TCP", "containerd://" + "b" * 64, "true"),
        ])
        self.assertNotIn("debugger", json.dumps(got))

    def test_label_sanitizing_and_collisions(self):
        srv = self.server()
        srv.put("pods", pod("san", labels={"app.kubernetes.io/name": "x", "a.b": "dot", "a/b": "slash", "a_b": "under",
                                           "caf\u00e9": "utf8"},
                           annotations={"pyroscope.io/service_name": "svc", "multi\nline": "v"}))
        h = self.harness(srv)
        t = h.wait_for(lambda ts: len(ts) == 1)[0]
        self.assertEqual(t["__meta_kubernetes_pod_label_app_kubernetes_io_name"], "x")
        # One '_' per rune ("é" is one rune, two bytes).
        self.assertEqual(t["__meta_kubernetes_pod_label_caf_"], "utf8")
        # a.b, a/b and a_b all sanitize to a_b: the greatest key (a_b) wins, every time.
        self.assertEqual(t["__meta_kubernetes_pod_label_a_b"], "under")
        self.assertEqual(t["__meta_kubernetes_pod_annotation_pyroscope_io_service_name"], "svc")
        self.assertEqual(t["__meta_kubernetes_pod_annotationpresent_multi_line"], "true")
        self.assertNotIn("__meta_kubernetes_pod_controller_kind", t)

    def test_add_modify_delete(self):
        srv = self.server()
        srv.put("pods", pod("a", ip="10.0.0.1"))
        h = self.harness(srv)
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        # ADDED
        srv.put("pods", pod("b", ip="10.0.0.2", containers=(("app", "img:1", ((80, "", "TCP"),)),)))
        got = h.wait_for(lambda ts: k8s.names(ts) == ["a", "b"])
        self.assertEqual(got[1]["__address__"], "10.0.0.2:80")
        # MODIFIED: a container restart brings a new container ID; a label changes.
        b = pod("b", ip="10.0.0.2", containers=(("app", "img:1", ((80, "", "TCP"),)),), labels={"tier": "web"},
                statuses={"app": "containerd://" + "d" * 64})
        srv.put("pods", b)
        got = h.wait_for(lambda ts: len(ts) == 2 and ts[1].get("__meta_kubernetes_pod_label_tier") == "web")
        self.assertEqual(got[1]["__meta_kubernetes_pod_container_id"], "containerd://" + "d" * 64)
        # Graceful deletion: deletionTimestamp set, containers still running: still a target.
        b["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:30Z"
        b["metadata"]["labels"]["gen"] = "2"
        srv.put("pods", b)
        h.wait_for(lambda ts: len(ts) == 2 and ts[1].get("__meta_kubernetes_pod_label_gen") == "2")
        # DELETED
        srv.delete("pods", "default", "b")
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        # Evicted: the pod stays but loses its IP: its targets go.
        srv.put("pods", pod("a", ip=None, phase="Failed"))
        h.wait_for(lambda ts: ts == [])

    def test_field_and_label_selectors_sent_and_honoured(self):
        srv = self.server()
        srv.put("pods", pod("on-a", node="node-a", labels={"app": "x"}))
        srv.put("pods", pod("on-b", node="node-b", labels={"app": "x"}))
        srv.put("pods", pod("on-a-other", node="node-a", labels={"app": "y"}))
        h = self.harness(srv, {"selectors": [{"role": "pod", "field": "spec.nodeName=node-a", "label": "app in (x)"}]})
        h.wait_for(lambda ts: k8s.names(ts) == ["on-a"])
        reqs = srv.wait_requests(lambda r: r["watch"])
        self.assertEqual(reqs[0]["query"]["fieldSelector"], "spec.nodeName=node-a")
        self.assertEqual(reqs[0]["query"]["labelSelector"], "app in (x)")
        # A pod moving onto the selection arrives as ADDED, one leaving it as DELETED.
        srv.put("pods", pod("on-a-other", node="node-a", labels={"app": "x"}))
        h.wait_for(lambda ts: k8s.names(ts) == ["on-a", "on-a-other"])
        srv.put("pods", pod("on-a", node="node-a", labels={"app": "z"}))
        h.wait_for(lambda ts: k8s.names(ts) == ["on-a-other"])

    def test_namespaces_are_watched_one_by_one(self):
        srv = self.server()
        for ns in ("ns1", "ns2", "ns3"):
            srv.put("pods", pod("p-" + ns, namespace=ns))
        h = self.harness(srv, {"namespaces": {"names": ["ns2", "ns1", "ns2"]}})
        got = h.wait_for(lambda ts: len(ts) == 2)
        self.assertEqual(k8s.names(got), ["p-ns1", "p-ns2"])
        paths = {r["path"].split("?")[0] for r in srv.requests}
        self.assertEqual(paths, {"/api/v1/namespaces/ns1/pods", "/api/v1/namespaces/ns2/pods"})

    def test_readiness_waits_for_every_namespace(self):
        srv = self.server()
        srv.put("pods", pod("p1", namespace="ns1"))
        srv.put("pods", pod("p2", namespace="ns2"))
        srv.inject("http_status", status=403, reason="Forbidden", on="list", count=1000, path_contains="/ns2/",
                   message='pods is forbidden: User "system:serviceaccount:x:y" cannot list resource "pods"')
        h = self.harness(srv, {"namespaces": {"names": ["ns1", "ns2"]}}, nodeprof={"initial_wait": "300ms"})
        # The namespace that works is published after the initial wait; readiness waits.
        h.wait_for(lambda ts: k8s.names(ts) == ["p1"])
        h.wait_log("list forbidden (RBAC")
        self.assertNotIn("synced", h.log())
        srv.clear_injections()
        h.wait_for(lambda ts: k8s.names(ts) == ["p1", "p2"])
        h.wait_log("synced")

    def test_attach_metadata_node_and_namespace(self):
        srv = self.server()
        srv.put("nodes", {"metadata": {"name": "node-a", "labels": {"topology.kubernetes.io/zone": "z1"},
                                       "annotations": {"note": "n"}}})
        srv.put("nodes", {"metadata": {"name": "node-b", "labels": {"topology.kubernetes.io/zone": "z2"}}})
        srv.put("namespaces", {"metadata": {"name": "default", "labels": {"team": "core"}}})
        srv.put("pods", pod("pa", node="node-a"))
        srv.put("pods", pod("pb", node="node-b"))
        h = self.harness(srv, {"attach_metadata": {"node": True, "namespace": True},
                               "selectors": [{"role": "node", "label": "topology.kubernetes.io/zone=z1"}]})
        got = h.wait_for(lambda ts: len(ts) == 1)
        t = got[0]
        # pb's node is outside the node selection: no targets for it (Prometheus filters them).
        self.assertEqual(t["__meta_kubernetes_pod_name"], "pa")
        self.assertEqual(t["__meta_kubernetes_node_name"], "node-a")
        self.assertEqual(t["__meta_kubernetes_node_label_topology_kubernetes_io_zone"], "z1")
        self.assertEqual(t["__meta_kubernetes_node_labelpresent_topology_kubernetes_io_zone"], "true")
        self.assertEqual(t["__meta_kubernetes_node_annotation_note"], "n")
        self.assertEqual(t["__meta_kubernetes_namespace_label_team"], "core")
        self.assertEqual(t["__meta_kubernetes_namespace_labelpresent_team"], "true")
        self.assertNotIn("__meta_kubernetes_namespace_name", t)
        # A node label change re-labels its pods.
        srv.put("nodes", {"metadata": {"name": "node-a", "labels": {"topology.kubernetes.io/zone": "z1",
                                                                    "pool": "big"}}})
        h.wait_for(lambda ts: len(ts) == 1 and ts[0].get("__meta_kubernetes_node_label_pool") == "big")

    def test_node_watch_narrowed_to_this_node(self):
        srv = self.server()
        srv.put("nodes", {"metadata": {"name": "node-a"}})
        srv.put("nodes", {"metadata": {"name": "node-b"}})
        srv.put("pods", pod("pa", node="node-a"))
        h = self.harness(srv, {"attach_metadata": {"node": True},
                               "selectors": [{"role": "pod", "field": "spec.nodeName=node-a"}]})
        h.wait_for(lambda ts: len(ts) == 1 and ts[0]["__meta_kubernetes_node_name"] == "node-a")
        node_lists = [r for r in srv.requests if r["path"].startswith("/api/v1/nodes")]
        self.assertTrue(node_lists)
        self.assertTrue(all(r["query"].get("fieldSelector") == "metadata.name=node-a" for r in node_lists))


if __name__ == "__main__":
    unittest.main()
