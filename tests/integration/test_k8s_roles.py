"""discovery.kubernetes roles other than pod (node, service, endpoints, endpointslice,
ingress) through the real path: test kube-apiserver (TLS, token) -> list+watch ->
`nodeprof tools targets` (or the k8s_targets harness, for watch changes).

The expected label sets are the fixtures in tests/fixtures/k8s_roles/ (Prometheus'
own test cases and more, written out from its code; see the README there), compared
label by label; they are not produced by the code under test."""
import copy
import json
import os
import unittest

import k8s
import np
from k8s import pod

FIXTURES = os.path.join(k8s.ROOT, "tests", "fixtures", "k8s_roles")


def load_fixture(role):
    with open(os.path.join(FIXTURES, role + ".json")) as f:
        return json.load(f)


def flatten(groups):
    """Alloy's export of target groups: group labels, then each target's (the target's win)."""
    return [dict(g["labels"], **t) for g in groups for t in g["targets"]]


def canonical(targets):
    return sorted(targets, key=lambda t: json.dumps(t, sort_keys=True))


def requests_for(srv, resource):
    return [r for r in srv.requests if r["path"].split("?")[0].endswith("/" + resource)]


class Roles(k8s.Case):
    maxDiff = None

    def alloy(self, srv, role, body=""):
        """A config file with one discovery.kubernetes "k" of role against srv."""
        path = os.path.join(self.tmp, f"roles-{self.id()}.alloy")
        with open(path, "w") as f:
            f.write(f'discovery.kubernetes "k" {{\n  role = "{role}"\n  api_server = "{srv.url}"\n'
                    f'  bearer_token_file = "{self.token_file()}"\n  tls_config {{ ca_file = "{self.pki.ca}" }}\n'
                    f'{body}}}\n')
        return path

    def tool_targets(self, path):
        p = np.nodeprof("tools", "targets", "--config", path, "--component", "discovery.kubernetes.k", "--wait", "20s")
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def assert_targets(self, got, want):
        """Same targets, label by label (order does not matter)."""
        got, want = canonical(got), canonical(want)
        if got == want:
            return
        missing = [t for t in want if t not in got]
        extra = [t for t in got if t not in want]
        lines = []
        for w in missing:
            near = [g for g in extra if g.get("__address__") == w.get("__address__")]
            if near:
                g = near[0]
                for k in sorted(set(w) | set(g)):
                    if w.get(k) != g.get(k):
                        lines.append(f"  {w.get('__address__')}: {k}: want {w.get(k)!r}, got {g.get(k)!r}")
            else:
                lines.append(f"  missing target {json.dumps(w, sort_keys=True)}")
        self.assertEqual(got, want, "targets differ:\n" + "\n".join(lines))

    def serve_fixture(self, fx):
        srv = self.server()
        for resource, objs in fx["objects"].items():
            for o in objs:
                srv.put(resource, o)
        return srv

    def check_fixture(self, role):
        fx = load_fixture(role)
        srv = self.serve_fixture(fx)
        got = self.tool_targets(self.alloy(srv, role))
        self.assert_targets(got, flatten(fx["expected"]))
        return srv

    # --- every role, label by label

    def test_node_role(self):
        srv = self.check_fixture("node")
        self.assertEqual({r["path"].split("?")[0] for r in srv.requests}, {"/api/v1/nodes"})

    def test_service_role(self):
        srv = self.check_fixture("service")
        self.assertEqual({r["path"].split("?")[0] for r in srv.requests}, {"/api/v1/services"})

    def test_ingress_role(self):
        srv = self.check_fixture("ingress")
        self.assertEqual({r["path"].split("?")[0] for r in srv.requests}, {"/apis/networking.k8s.io/v1/ingresses"})

    def test_endpoints_role(self):
        srv = self.check_fixture("endpoints")
        # Endpoints, and the services and pods whose labels join them: nothing else.
        self.assertEqual({r["path"].split("?")[0] for r in srv.requests},
                         {"/api/v1/endpoints", "/api/v1/services", "/api/v1/pods"})

    def test_endpointslice_role(self):
        srv = self.check_fixture("endpointslice")
        self.assertEqual({r["path"].split("?")[0] for r in srv.requests},
                         {"/apis/discovery.k8s.io/v1/endpointslices", "/api/v1/services", "/api/v1/pods"})

    # --- namespaces, selectors and attach_metadata

    def test_namespaces_are_watched_one_by_one(self):
        fx = load_fixture("service")
        srv = self.serve_fixture(fx)
        got = self.tool_targets(self.alloy(srv, "service", '  namespaces { names = ["ns2", "ns2", "absent"] }\n'))
        self.assert_targets(got, flatten([g for g in fx["expected"]
                                          if g["labels"].get("__meta_kubernetes_namespace") == "ns2"]))
        paths = {r["path"].split("?")[0] for r in srv.requests}
        self.assertEqual(paths, {"/api/v1/namespaces/ns2/services", "/api/v1/namespaces/absent/services"})

    def test_selectors_per_role(self):
        fx = load_fixture("endpoints")
        srv = self.serve_fixture(fx)
        # The pod selector filters the pods whose labels join the targets; the service and
        # endpoints selectors go to their own list+watches.
        got = self.tool_targets(self.alloy(srv, "endpoints",
                                           '  selectors {\n    role = "pod"\n    label = "app=dns"\n  }\n'
                                           '  selectors {\n    role = "endpoints"\n    field = "metadata.name!=withpod"\n  }\n'
                                           '  selectors {\n    role = "service"\n    label = "app/name=none"\n  }\n'))
        want = [g for g in fx["expected"] if g["labels"]["__meta_kubernetes_endpoints_name"] != "withpod"]
        want = copy.deepcopy(want)
        for k in list(want[0]["labels"]):
            if k.startswith("__meta_kubernetes_service_"):
                del want[0]["labels"][k]
        self.assert_targets(got, flatten(want))
        q = {r["path"].split("?")[0]: r["query"] for r in srv.requests if not r["watch"]}
        self.assertEqual(q["/api/v1/pods"].get("labelSelector"), "app=dns")
        self.assertEqual(q["/api/v1/endpoints"].get("fieldSelector"), "metadata.name!=withpod")
        self.assertEqual(q["/api/v1/services"].get("labelSelector"), "app/name=none")

    def test_node_role_selector(self):
        srv = self.serve_fixture(load_fixture("node"))
        got = self.tool_targets(self.alloy(srv, "node", '  selectors {\n    role = "node"\n    label = "test-label"\n  }\n'))
        self.assertEqual([t["instance"] for t in got], ["test"])

    def test_attach_metadata_endpointslice(self):
        srv = self.server()
        srv.put("nodes", {"metadata": {"name": "testnode", "labels": {"zone": "a"}}})
        srv.put("namespaces", {"metadata": {"name": "pods", "labels": {"team": "x"}}})
        fx = load_fixture("endpointslice")
        for resource, objs in fx["objects"].items():
            for o in objs:
                if o["metadata"]["namespace"] == "pods":
                    srv.put(resource, o)
        got = self.tool_targets(self.alloy(srv, "endpointslice", "  attach_metadata {\n    node = true\n"
                                           "    namespace = true\n  }\n"))
        self.assertEqual(len(got), 2)
        by_addr = {t["__address__"]: t for t in got}
        # The endpoint's node (nodeName) on its target; the namespace's labels on every target.
        self.assertEqual(by_addr["4.3.2.1:9000"]["__meta_kubernetes_node_name"], "testnode")
        self.assertEqual(by_addr["4.3.2.1:9000"]["__meta_kubernetes_node_label_zone"], "a")
        self.assertNotIn("__meta_kubernetes_node_name", by_addr["1.2.3.4:9001"])
        for t in got:
            self.assertEqual(t["__meta_kubernetes_namespace_label_team"], "x")

    def test_attach_metadata_is_watched_only_where_the_role_reads_it(self):
        srv = self.serve_fixture(load_fixture("service"))
        srv.put("namespaces", {"metadata": {"name": "ns2", "annotations": {"owner": "me"}}})
        p = self.alloy(srv, "service", "  attach_metadata {\n    node = true\n    namespace = true\n  }\n")
        check = np.nodeprof("check", p)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertIn('attach_metadata.node has no effect with role "service"', check.stdout + check.stderr)
        got = self.tool_targets(p)
        ns2 = [t for t in got if t["__meta_kubernetes_namespace"] == "ns2"]
        self.assertTrue(ns2)
        for t in ns2:
            self.assertEqual(t["__meta_kubernetes_namespace_annotation_owner"], "me")
        self.assertEqual({r["path"].split("?")[0] for r in srv.requests}, {"/api/v1/services", "/api/v1/namespaces"})

    def test_alloy_loads_what_prometheus_refuses(self):
        """Alloy's TestAlloyConfig: kubeconfig_file with http_headers loads (the headers are
        ignored, as in Alloy); so do api_server next to it and unread selectors."""
        srv = self.server()
        kc = os.path.join(self.tmp, "kubeconfig-roles.yaml")
        with open(kc, "w") as f:
            f.write(f"apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {srv.url}\n"
                    f"    certificate-authority: {self.pki.ca}\nusers:\n- name: u\n  user:\n    token: {k8s.TOKEN}\n"
                    "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n")
        srv.put("services", {"metadata": {"name": "s", "namespace": "default"}, "spec": {"ports": [{"port": 1}]}})
        path = os.path.join(self.tmp, "alloy-kubeconfig.alloy")
        with open(path, "w") as f:
            f.write(f'discovery.kubernetes "k" {{\n  role = "service"\n  kubeconfig_file = "{kc}"\n'
                    f'  api_server = "https://127.0.0.1:1"\n  http_headers = {{\n    "foo" = ["foobar"],\n  }}\n'
                    '  selectors {\n    role = "pod"\n  }\n}\n')
        check = np.nodeprof("check", path)
        self.assertEqual(check.returncode, 0, check.stderr)
        got = self.tool_targets(path)
        self.assertEqual([t["__address__"] for t in got], ["s.default.svc:1"])
        self.assertTrue(srv.requests)
        self.assertTrue(all("foo" not in r["header_names"] and "authorization" in r["header_names"]
                            for r in srv.requests))

    # --- watch: adds, updates, deletes, relists

    def harness(self, srv, role, extra=None):
        return super().harness(srv, dict({"role": role}, **(extra or {})))

    def test_watch_node_and_ingress_changes(self):
        srv = self.server()
        node = load_fixture("node")["objects"]["nodes"][0]
        srv.put("nodes", node)
        h = self.harness(srv, "node")
        h.wait_for(lambda ts: [t["instance"] for t in ts] == ["test"])
        n2 = copy.deepcopy(node)
        n2["metadata"]["name"] = "zz"
        srv.put("nodes", n2)
        h.wait_for(lambda ts: [t["instance"] for t in ts] == ["test", "zz"])
        n2["status"]["addresses"] = [{"type": "ExternalIP", "address": "8.8.8.8"}]
        srv.put("nodes", n2)
        h.wait_for(lambda ts: [t["__address__"] for t in ts] == ["1.2.3.4:10250", "8.8.8.8:10250"])
        srv.delete("nodes", None, "test")
        h.wait_for(lambda ts: [t["instance"] for t in ts] == ["zz"])

        srv2 = self.server()
        ing = load_fixture("ingress")["objects"]["ingresses"][0]
        srv2.put("ingresses", ing)
        h2 = self.harness(srv2, "ingress")
        h2.wait_for(lambda ts: len(ts) == 3 and all(t["__meta_kubernetes_ingress_scheme"] == "http" for t in ts))
        ing["spec"]["tls"] = [{"hosts": ["*.example.com"]}]
        srv2.put("ingresses", ing)
        h2.wait_for(lambda ts: sorted(t["__meta_kubernetes_ingress_scheme"] for t in ts) == ["http", "http", "https"])
        srv2.delete("ingresses", "default", "testingress")
        h2.wait_for(lambda ts: ts == [])

    def test_watch_endpoints_follow_pods_and_services(self):
        """Endpoints targets are joined with the current pods and services: a pod or a
        service that changes later changes them too."""
        fx = load_fixture("endpoints")
        srv = self.server()
        ep = next(e for e in fx["objects"]["endpoints"] if e["metadata"]["name"] == "proto")
        srv.put("endpoints", ep)
        h = self.harness(srv, "endpoints")
        # The pod is not there yet: the target has no pod labels.
        h.wait_for(lambda ts: len(ts) == 1 and "__meta_kubernetes_pod_name" not in ts[0])
        p2 = next(p for p in fx["objects"]["pods"] if p["metadata"]["name"] == "p2")
        srv.put("pods", p2)
        h.wait_for(lambda ts: len(ts) == 1 and ts[0].get("__meta_kubernetes_pod_container_name") == "dns")
        p2 = copy.deepcopy(p2)
        p2["metadata"]["labels"]["app"] = "dns2"
        p2["spec"]["containers"][0]["ports"].append({"name": "metrics", "containerPort": 9153, "protocol": "TCP"})
        srv.put("pods", p2)
        got = h.wait_for(lambda ts: len(ts) == 2)
        self.assertEqual({t["__meta_kubernetes_pod_label_app"] for t in got}, {"dns2"})
        self.assertEqual(sorted(t["__address__"] for t in got), ["10.1.1.1:53", "10.1.1.1:9153"])
        srv.put("services", {"metadata": {"name": "proto", "namespace": "proto", "labels": {"k": "v"}},
                             "spec": {"ports": [{"port": 53}]}})
        h.wait_for(lambda ts: len(ts) == 2 and all(t.get("__meta_kubernetes_service_label_k") == "v" for t in ts))
        srv.delete("services", "proto", "proto")
        h.wait_for(lambda ts: len(ts) == 2 and not any("__meta_kubernetes_service_name" in t for t in ts))
        srv.delete("endpoints", "proto", "proto")
        h.wait_for(lambda ts: ts == [])

    def test_watch_endpointslice_410_relists(self):
        fx = load_fixture("endpointslice")
        srv = self.server()
        first = fx["objects"]["endpointslices"][0]
        srv.put("endpointslices", first)
        h = self.harness(srv, "endpointslice")
        h.wait_for(lambda ts: len(ts) == 4)
        self.assertTrue(srv.wait_open_watches(3))
        # A slice goes while we are not told; then the slices' watch expires: the relist finds out.
        srv.delete("endpointslices", "default", "testendpoints", record=False)
        srv.inject("error_410", on="watch", path_contains="endpointslices")
        noport = fx["objects"]["endpointslices"][-1]
        srv.put("endpointslices", noport)
        h.wait_for(lambda ts: [t["__address__"] for t in ts] == ["db.example.com"])
        self.assertIn("watch expired, relisting", h.log())

    def test_every_role_name_loads(self):
        srv = self.server()
        for role in ("pod", "node", "service", "endpoints", "endpointslice", "ingress"):
            p = np.nodeprof("check", self.alloy(srv, role))
            self.assertEqual(p.returncode, 0, f"{role}: {p.stdout}{p.stderr}")


if __name__ == "__main__":
    unittest.main()
