"""The Helm chart (charts/nodeprof), its plain manifests (deploy/nodeprof.yaml) and the
Dockerfile's runtime package list.

The chart is rendered as `helm template` renders it (tests/chart/render.go: Go's
text/template with sprig, values coalesced as Helm does, values.schema.json checked with
gojsonschema, objects parsed with sigs.k8s.io/yaml) for the default values and for every
option; the objects are checked field by field; every configuration the chart generates
goes through `nodeprof check`, and through `nodeprof tools relabel` to show what its rules
do. Generated configurations also run on a simulated node (tests/lib/node.py): discovery
against the kube-apiserver test server (and the requests it made against the chart's
ClusterRole), and the agent pushing to the Pyroscope test server with the credentials the
chart mounts, with root's capabilities or only the chart's capability list."""
import json
import os
import random
import re
import shutil
import subprocess
import time
import unittest
import urllib.error
import urllib.request

import cgroups
import chart
import node as nodelib
import np

EXAMPLE = os.path.join(np.EXAMPLES, "kubernetes.alloy")
AUTH_DIR = "/var/run/secrets/nodeprof/pyroscope"
ENABLED = "__meta_kubernetes_pod_annotation_profiles_grafana_com_cpu_ebpf_enabled"
SERVICE_ANNOTATION = "__meta_kubernetes_pod_annotation_pyroscope_io_service_name"


def setUpModule():
    chart.build_renderer()


def check_config(test, text):
    """`nodeprof check` must accept a configuration the chart generated."""
    d = np.tmpdir(test)
    path = os.path.join(d, "config.alloy")
    with open(path, "w") as f:
        f.write(text)
    p = np.nodeprof("check", path)
    if p.returncode != 0:
        numbered = "\n".join(f"{i + 1:4} {line}" for i, line in enumerate(text.splitlines()))
        test.fail(f"nodeprof check rejected the generated configuration:\n{p.stderr}\n{numbered}")
    return path


def block(text, header):
    """The body of the block that starts with header (e.g. 'discovery.relabel "local_pods"'),
    found by matching braces outside strings."""
    start = text.index(header + " {") + len(header) + 2
    depth, i, in_str = 1, start, False
    while depth:
        c = text[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        i += 1
    return text[start:i - 1]


def relabel_rules(config):
    """The rule blocks of the configuration's discovery.relabel component, as a RULES_FILE."""
    body = block(config, 'discovery.relabel "local_pods"')
    return "\n".join(line for line in body.splitlines() if not line.strip().startswith("targets"))


def relabel(test, rules, targets):
    d = np.tmpdir(test)
    path = os.path.join(d, "rules.alloy")
    with open(path, "w") as f:
        f.write(rules)
    p = np.nodeprof("tools", "relabel", path, input=json.dumps(targets))
    test.assertEqual(p.returncode, 0, p.stderr)
    return json.loads(p.stdout)


def target(ns, pod, container, labels=None, annotations=None, phase="Running"):
    """A target as discovery.kubernetes exports it (the labels the rules read)."""
    t = {"__address__": "10.0.0.1", "__meta_kubernetes_namespace": ns, "__meta_kubernetes_pod_name": pod,
         "__meta_kubernetes_pod_container_name": container, "__meta_kubernetes_pod_node_name": "node-a",
         "__meta_kubernetes_pod_phase": phase,
         "__meta_kubernetes_pod_container_id": "containerd://" + "ab" * 32}
    for k, v in (labels or {}).items():
        t["__meta_kubernetes_pod_label_" + re.sub("[^a-zA-Z0-9_]", "_", k)] = v
    for k, v in (annotations or {}).items():
        name = re.sub("[^a-zA-Z0-9_]", "_", k)
        t["__meta_kubernetes_pod_annotation_" + name] = v
        t["__meta_kubernetes_pod_annotationpresent_" + name] = "true"
    return t


TARGETS = [
    target("shop", "cart-0", "cart", labels={"app": "cart", "app.kubernetes.io/name": "cart"}),
    target("shop", "web-0", "web", labels={"app": "web"}, annotations={"pyroscope.io/service_name": "storefront"}),
    target("shop", "web-0", "sidecar", labels={"app": "web"}, annotations={"pyroscope.io/service_name": ""}),
    target("shop", "quiet-0", "quiet", annotations={"profiles.grafana.com/cpu.ebpf.enabled": "false"}),
    target("batch", "job-0", "job", annotations={"profiles.grafana.com/cpu.ebpf.enabled": "true"}),
    target("batch", "done-0", "done", phase="Succeeded"),
    target("kube-system", "dns-0", "coredns", labels={"k8s-app": "kube-dns"}),
]


def services(targets):
    return sorted(t["service_name"] for t in targets)


class ChartObjects(unittest.TestCase):
    """The objects of the chart, rendered with the default values and with each option."""

    def test_default_objects(self):
        r = chart.render(namespace="monitoring")
        self.assertEqual(r.kinds(), ["ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "DaemonSet"])
        for o in r.objects:
            self.assertEqual(o["metadata"]["name"], "nodeprof")
            if o["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
                self.assertEqual(o["metadata"]["namespace"], "monitoring")
            self.assertEqual(o["metadata"]["labels"]["app.kubernetes.io/version"], makefile_version())
        ds = r.daemonset
        self.assertEqual(ds["apiVersion"], "apps/v1")
        tmpl = ds["spec"]["template"]
        self.assertEqual(ds["spec"]["selector"]["matchLabels"],
                         {"app.kubernetes.io/name": "nodeprof", "app.kubernetes.io/instance": "nodeprof"})
        self.assertLessEqual(ds["spec"]["selector"]["matchLabels"].items(), tmpl["metadata"]["labels"].items())
        self.assertEqual(ds["spec"]["updateStrategy"], {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})
        pod, c = r.pod, r.container
        self.assertIs(pod["hostPID"], True)
        self.assertNotIn("hostNetwork", pod)
        self.assertEqual(pod["serviceAccountName"], r.one("ServiceAccount")["metadata"]["name"])
        self.assertIs(pod["automountServiceAccountToken"], True)
        self.assertEqual(pod["tolerations"], [{"operator": "Exists"}])
        self.assertEqual(pod["nodeSelector"], {"kubernetes.io/os": "linux"})
        # The image runs the agent on the configuration file of the ConfigMap: the UI, its API,
        # the debug pages and reload on the pod's loopback only (kubectl port-forward reaches
        # it), /metrics and health on every address of the pod for the kubelet's probes and
        # scrapers.
        self.assertEqual(c["image"], "nodeprof:" + makefile_version())
        self.assertEqual(c["args"], ["run", "--config", "/etc/nodeprof/config.alloy", "--http-listen", "127.0.0.1:4100",
                                     "--metrics-listen", "0.0.0.0:4101", "--log-level", "info"])
        self.assertEqual(c["env"], [{"name": "HOSTNAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}])
        self.assertEqual(c["ports"], [{"name": "metrics", "containerPort": 4101, "protocol": "TCP"}])
        self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/-/ready", "port": "metrics"})
        self.assertEqual(c["livenessProbe"]["httpGet"], {"path": "/-/healthy", "port": "metrics"})
        self.assertIn("memory", c["resources"]["limits"])
        self.assertIn("memory", c["resources"]["requests"])
        sc = c["securityContext"]
        self.assertEqual(sc, {"privileged": True, "runAsUser": 0, "runAsNonRoot": False, "readOnlyRootFilesystem": True})
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        self.assertEqual(set(mounts), set(volumes))
        self.assertEqual(mounts["config"], {"name": "config", "mountPath": "/etc/nodeprof", "readOnly": True})
        self.assertEqual(volumes["config"]["configMap"]["name"], r.one("ConfigMap")["metadata"]["name"])
        self.assertEqual(mounts["cgroup"], {"name": "cgroup", "mountPath": "/sys/fs/cgroup", "readOnly": True})
        self.assertEqual(volumes["cgroup"]["hostPath"], {"path": "/sys/fs/cgroup", "type": "Directory"})
        self.assertEqual(set(mounts), {"config", "cgroup"})
        # RBAC: pods only, bound to the service account.
        self.assertEqual(r.one("ClusterRole")["rules"],
                         [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}])
        crb = r.one("ClusterRoleBinding")
        self.assertEqual(crb["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                          "name": r.one("ClusterRole")["metadata"]["name"]})
        self.assertEqual(crb["subjects"], [{"kind": "ServiceAccount", "name": pod["serviceAccountName"],
                                            "namespace": "monitoring"}])
        check_config(self, r.config)
        self.assertIn("kubectl -n monitoring rollout status daemonset/nodeprof", r.notes)
        self.assertIn('profiles.grafana.com/cpu.ebpf.enabled: "false"', r.notes)
        self.assertIn("kubectl -n monitoring port-forward daemonset/nodeprof 4100", r.notes)
        self.assertIn("loopback only", r.notes)

    def test_config_checksum_rolls_the_pods_on_config_changes_only(self):
        base = chart.render()
        # Helm's sha256sum of the ConfigMap template's output (the text and its final newline).
        self.assertEqual(base.checksum(), chart.sha256(base.text("ConfigMap") + "\n"))
        other_resources = chart.render({"resources": {"limits": {"memory": "1Gi"}}, "podLabels": {"a": "b"}})
        self.assertEqual(other_resources.checksum(), base.checksum())
        self.assertEqual(other_resources.container["resources"]["limits"], {"memory": "1Gi"})
        self.assertEqual(other_resources.daemonset["spec"]["template"]["metadata"]["labels"]["a"], "b")
        for values in ({"profiling": {"sampleRate": 49}}, {"pyroscope": {"tenant": "t1"}},
                       {"configOverride": open(EXAMPLE).read()}):
            self.assertNotEqual(chart.render(values).checksum(), base.checksum(), values)

    def test_default_pipeline_is_the_kubernetes_example_plus_annotations(self):
        """On pods without the two annotations the generated rules do exactly what the rules of
        docs/examples/kubernetes.alloy do; the annotations then opt out and name services."""
        config = chart.render().config
        got = relabel(self, relabel_rules(config), TARGETS)
        want = relabel(self, relabel_rules(open(EXAMPLE).read()), TARGETS)
        plain = [t for t in want if t["pod"] not in ("web-0", "quiet-0", "job-0")]
        self.assertEqual([t for t in got if t["pod"] not in ("web-0", "quiet-0", "job-0")], plain)
        self.assertEqual(services(got), ["ebpf/batch/job", "ebpf/kube-system/coredns", "ebpf/shop/cart",
                                         "ebpf/shop/sidecar", "storefront"])
        self.assertIn("ebpf/shop/quiet", services(want))       # the example has no opt-out
        for t in got:
            self.assertEqual(t["node"], "node-a")
            self.assertEqual(t["namespace"], t["__meta_kubernetes_namespace"])
            self.assertEqual(t["container"], t["__meta_kubernetes_pod_container_name"])
        # The pipeline of the example: same components, wired the same way.
        for header in ('discovery.kubernetes "all_pods"', 'discovery.relabel "local_pods"',
                       'pyroscope.ebpf "local_pods"', 'pyroscope.write "endpoint"'):
            self.assertIn(header + " {", config)
        self.assertIn('field = "spec.nodeName=" + sys.env("HOSTNAME")', config)

    def test_opt_in(self):
        r = chart.render({"discovery": {"mode": "opt-in"}})
        check_config(self, r.config)
        got = relabel(self, relabel_rules(r.config), TARGETS)
        self.assertEqual(services(got), ["ebpf/batch/job"])
        self.assertIn('profiles.grafana.com/cpu.ebpf.enabled: "true"', r.notes)

    def test_namespaces_include_and_exclude(self):
        r = chart.render({"discovery": {"namespaces": ["shop", "batch"]}})
        check_config(self, r.config)
        kube = block(r.config, 'discovery.kubernetes "all_pods"')
        self.assertIn("namespaces {", kube)
        self.assertRegex(kube, r'names\s*=\s*\["shop",\s*"batch"\]')
        self.assertIn("Namespaces profiled: shop, batch.", r.notes)
        r = chart.render({"discovery": {"excludeNamespaces": ["kube-system", "batch"]}})
        check_config(self, r.config)
        self.assertNotIn("namespaces {", r.config)
        got = relabel(self, relabel_rules(r.config), TARGETS)
        self.assertEqual({t["namespace"] for t in got}, {"shop"})
        self.assertIn("Namespaces left out: kube-system, batch.", r.notes)

    def test_extra_relabel_rules(self):
        tricky = 'a "quoted" \\back\\slash ü ${1} {x}'
        rules = [
            {"action": "replace", "source_labels": ["__meta_kubernetes_pod_label_app"], "regex": "(.+)",
             "target_label": "team", "replacement": "team-$1"},
            {"action": "drop", "source_labels": ["namespace"], "regex": "kube-.*"},
            {"action": "replace", "source_labels": ["pod"], "separator": ";", "regex": "(c.*)-\\d+",
             "target_label": "odd", "replacement": tricky},
            {"action": "hashmod", "source_labels": ["pod"], "modulus": 4, "target_label": "shard"},
            {"action": "labeldrop", "regex": "app_kubernetes_io_.*"},
        ]
        r = chart.render({"discovery": {"extraRelabelRules": rules}})
        check_config(self, r.config)
        got = relabel(self, relabel_rules(r.config), TARGETS)
        by_service = {t["service_name"]: t for t in got}
        self.assertNotIn("ebpf/kube-system/coredns", by_service)
        self.assertEqual(by_service["ebpf/shop/cart"]["team"], "team-cart")
        self.assertEqual(by_service["ebpf/shop/cart"]["odd"], tricky.replace("${1}", "cart"))
        self.assertNotIn("odd", by_service["storefront"])
        self.assertNotIn("app_kubernetes_io_name", by_service["ebpf/shop/cart"])
        self.assertEqual(by_service["ebpf/shop/cart"]["app"], "cart")
        self.assertTrue(all(t["shard"] in "0123" for t in got))

    def test_profiling_values(self):
        r = chart.render({"profiling": {"sampleRate": 10000, "collectInterval": "1m", "demangle": "full"}})
        check_config(self, r.config)
        ebpf = block(r.config, 'pyroscope.ebpf "local_pods"')
        self.assertRegex(ebpf, r"\bsample_rate\s*=\s*10000\n")     # an integer, not Go's 1e+04
        self.assertRegex(ebpf, r'collect_interval\s*=\s*"1m"')
        self.assertRegex(ebpf, r'demangle\s*=\s*"full"')

    def test_auth_basic_from_secret(self):
        r = chart.render({"pyroscope": {"url": "https://profiles.example.com", "auth": {
            "type": "basic", "existingSecret": "pyroscope-creds", "username": "12345", "passwordKey": "api-key"}}})
        check_config(self, r.config)
        write = block(r.config, 'pyroscope.write "endpoint"')
        self.assertRegex(write, r'url\s*=\s*"https://profiles.example.com"')
        auth = block(write, "basic_auth")
        self.assertRegex(auth, r'username\s*=\s*"12345"')
        self.assertRegex(auth, r'password_file\s*=\s*"%s/password"' % AUTH_DIR)
        self.assertNotRegex(auth, r"\bpassword\s*=")
        self.assert_secret_mounted(r, "pyroscope-creds", "api-key", "password")

    def test_auth_bearer_from_secret(self):
        r = chart.render({"pyroscope": {"auth": {"type": "bearer", "existingSecret": "tok", "tokenKey": "t.k"}}})
        check_config(self, r.config)
        write = block(r.config, 'pyroscope.write "endpoint"')
        self.assertRegex(write, r'bearer_token_file\s*=\s*"%s/token"' % AUTH_DIR)
        self.assertNotIn("basic_auth", write)
        self.assert_secret_mounted(r, "tok", "t.k", "token")

    def assert_secret_mounted(self, r, secret, key, path):
        mounts = {m["name"]: m for m in r.container["volumeMounts"]}
        volumes = {v["name"]: v for v in r.pod["volumes"]}
        self.assertEqual(mounts["pyroscope-auth"], {"name": "pyroscope-auth", "mountPath": AUTH_DIR, "readOnly": True})
        # Only the one key, readable by the agent (root) only.
        self.assertEqual(volumes["pyroscope-auth"]["secret"], {"secretName": secret, "defaultMode": 0o400,
                                                               "items": [{"key": key, "path": path}]})
        self.assertNotIn("Secret", r.kinds())

    def test_tenant_and_external_labels(self):
        labels = {"cluster": "prod-eu", "region": 'e"u \\ ü', "a.b": "c"}
        r = chart.render({"pyroscope": {"tenant": "team-a", "externalLabels": labels}})
        check_config(self, r.config)
        write = block(r.config, 'pyroscope.write "endpoint"')
        self.assertRegex(block(write, "endpoint"), r'"X-Scope-OrgID"\s*=\s*"team-a"')
        ext = write[write.index("external_labels"):]
        for k, v in labels.items():
            self.assertIn(f"{json.dumps(k)} = {json.dumps(v, ensure_ascii=False)}", ext)
        self.assertIn("(tenant team-a)", r.notes)

    def test_attach_metadata_grants_rbac(self):
        for node, ns in ((True, False), (False, True), (True, True)):
            r = chart.render({"discovery": {"attachMetadata": {"node": node, "namespace": ns}}})
            check_config(self, r.config)
            am = block(r.config, "attach_metadata")
            self.assertRegex(am, r"node\s*=\s*%s" % str(node).lower())
            self.assertRegex(am, r"namespace\s*=\s*%s" % str(ns).lower())
            resources = [rule["resources"] for rule in r.one("ClusterRole")["rules"]]
            self.assertEqual(resources, [["pods"]] + [["nodes"]] * node + [["namespaces"]] * ns)
            for rule in r.one("ClusterRole")["rules"]:
                self.assertEqual((rule["apiGroups"], rule["verbs"]), ([""], ["get", "list", "watch"]))

    def test_config_override(self):
        override = open(EXAMPLE).read()
        r = chart.render({"configOverride": override, "profiling": {"sampleRate": 7}})
        # Helm trims each manifest, so the ConfigMap's last value loses its final newlines.
        self.assertEqual(r.config, override.rstrip("\n"))
        check_config(self, r.config)
        # Text YAML could mangle: leading spaces, tabs, trailing spaces, quotes, template-like text.
        odd = '  // indented first line\n\t// a tab\n' + override.rstrip() + '   \n// "{{ .Values }}"'
        r = chart.render({"configOverride": odd})
        self.assertEqual(r.config, odd)
        check_config(self, r.config)
        self.assertIn("configOverride", r.notes)

    def test_capabilities_instead_of_privileged(self):
        r = chart.render({"securityContext": {"privileged": False}})
        sc = r.container["securityContext"]
        self.assertEqual(sc["privileged"], False)
        self.assertEqual(sc["allowPrivilegeEscalation"], False)
        self.assertEqual(sc["runAsUser"], 0)
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"],
                                              "add": ["BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "SYSLOG"]})
        self.assertIs(r.pod["hostPID"], True)

    def test_service_and_podmonitor(self):
        r = chart.render({"service": {"enabled": True}, "podMonitor": {"enabled": True, "labels": {"release": "kps"},
                                                                       "interval": "15s"}})
        svc, pm = r.one("Service"), r.one("PodMonitor")
        selector = r.daemonset["spec"]["selector"]["matchLabels"]
        self.assertEqual(svc["spec"]["selector"], selector)
        self.assertEqual(svc["spec"]["clusterIP"], "None")
        self.assertEqual(svc["spec"]["ports"], [{"name": "metrics", "port": 4101, "targetPort": "metrics",
                                                 "protocol": "TCP"}])
        self.assertEqual(pm["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(pm["spec"]["selector"], {"matchLabels": selector})
        self.assertEqual(pm["metadata"]["labels"]["release"], "kps")
        (ep,) = pm["spec"]["podMetricsEndpoints"]
        self.assertEqual((ep["port"], ep["path"], ep["interval"]), ("metrics", "/metrics", "15s"))
        self.assertEqual(r.kinds()[-1], "PodMonitor")          # Helm installs unknown kinds last
        self.assertIn("PodMonitor", r.notes)
        r = chart.render({"service": {"enabled": False}, "podMonitor": {"enabled": False},
                          "http": {"port": 9100, "metricsPort": 9101},
                          "logLevel": "debug", "extraArgs": ["--ui-memory", "16MiB"]})
        self.assertNotIn("Service", r.kinds())
        self.assertNotIn("PodMonitor", r.kinds())
        self.assertEqual(r.container["args"][4:], ["127.0.0.1:9100", "--metrics-listen", "0.0.0.0:9101", "--log-level",
                                                   "debug", "--ui-memory", "16MiB"])
        self.assertEqual(r.container["ports"], [{"name": "metrics", "containerPort": 9101, "protocol": "TCP"}])

    def test_ui_exposure_and_allowed_hosts(self):
        """http.exposeUI puts the UI on the pod's addresses (and declares its port);
        allowedHosts become --http-allowed-host flags that `nodeprof run` accepts."""
        r = chart.render({"http": {"exposeUI": True, "allowedHosts": ["profiles.example.com", "UI.Example.com."]}})
        args = r.container["args"]
        self.assertEqual(args[3:11], ["--http-listen", "0.0.0.0:4100", "--metrics-listen", "0.0.0.0:4101",
                                      "--http-allowed-host", "profiles.example.com", "--http-allowed-host",
                                      "UI.Example.com."])
        self.assertEqual(r.container["ports"], [{"name": "metrics", "containerPort": 4101, "protocol": "TCP"},
                                                {"name": "http", "containerPort": 4100, "protocol": "TCP"}])
        self.assertEqual(r.container["readinessProbe"]["httpGet"]["port"], "metrics")
        self.assertIn("of every agent's pod address", r.notes)
        p = np.nodeprof("run", *args[3:11], "--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = chart.run_render({"http": {"port": 4101}})
        self.assertEqual(p.returncode, 1)
        self.assertIn("http.port and http.metricsPort must differ (both are 4101)", p.stderr)

    def test_network_policy(self):
        self.assertNotIn("NetworkPolicy", chart.render().kinds())
        peers = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                  "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}]
        r = chart.render({"networkPolicy": {"enabled": True, "from": peers}}, namespace="monitoring")
        netpol = r.one("NetworkPolicy")
        self.assertEqual(netpol["apiVersion"], "networking.k8s.io/v1")
        self.assertEqual(netpol["metadata"]["namespace"], "monitoring")
        self.assertEqual(netpol["spec"]["podSelector"], {"matchLabels": r.daemonset["spec"]["selector"]["matchLabels"]})
        self.assertEqual(netpol["spec"]["policyTypes"], ["Ingress"])
        # The metrics port only (the UI is on the loopback, which no policy governs), from the peers.
        self.assertEqual(netpol["spec"]["ingress"], [{"ports": [{"port": "metrics", "protocol": "TCP"}], "from": peers}])
        self.assertIn("admitted by the NetworkPolicy nodeprof", r.notes)
        # With the UI exposed its port is admitted too; without peers, from any source.
        r = chart.render({"networkPolicy": {"enabled": True}, "http": {"exposeUI": True}})
        self.assertEqual(r.one("NetworkPolicy")["spec"]["ingress"],
                         [{"ports": [{"port": "metrics", "protocol": "TCP"}, {"port": "http", "protocol": "TCP"}]}])
        ports = {p["name"] for p in r.container["ports"]}
        self.assertEqual(ports, {"metrics", "http"})     # named ports the policy refers to exist

    def test_names_and_release(self):
        self.assertEqual(chart.render(release="prod").daemonset["metadata"]["name"], "prod-nodeprof")
        self.assertEqual(chart.render(release="nodeprof-eu").daemonset["metadata"]["name"], "nodeprof-eu")
        r = chart.render({"fullnameOverride": "np", "serviceAccount": {"create": False, "name": "existing"},
                          "rbac": {"create": False}, "image": {"repository": "reg.example/np", "tag": "dev"}})
        self.assertEqual(r.kinds(), ["ConfigMap", "DaemonSet"])
        self.assertEqual(r.daemonset["metadata"]["name"], "np")
        self.assertEqual(r.pod["serviceAccountName"], "existing")
        self.assertEqual(r.container["image"], "reg.example/np:dev")
        digest = "sha256:" + "0" * 64
        self.assertEqual(chart.render({"image": {"digest": digest}}).container["image"], "nodeprof@" + digest)

    def test_extra_pod_settings(self):
        r = chart.render({"extraEnv": [{"name": "NODEPROF_LOG_LEVEL", "value": "debug"}],
                          "extraVolumes": [{"name": "debug", "hostPath": {"path": "/usr/lib/debug"}}],
                          "extraVolumeMounts": [{"name": "debug", "mountPath": "/usr/lib/debug", "readOnly": True}],
                          "priorityClassName": "system-node-critical", "tolerations": [],
                          "imagePullSecrets": [{"name": "regcred"}], "podAnnotations": {"x": "y"}})
        self.assertEqual(r.container["env"][1], {"name": "NODEPROF_LOG_LEVEL", "value": "debug"})
        self.assertEqual(r.container["volumeMounts"][-1]["name"], "debug")
        self.assertEqual(r.pod["volumes"][-1]["hostPath"], {"path": "/usr/lib/debug"})
        self.assertEqual(r.pod["priorityClassName"], "system-node-critical")
        self.assertEqual(r.pod["imagePullSecrets"], [{"name": "regcred"}])
        self.assertNotIn("tolerations", r.pod)
        self.assertEqual(r.daemonset["spec"]["template"]["metadata"]["annotations"]["x"], "y")


class Renderer(unittest.TestCase):
    """tests/chart/render.go does what Helm does, on a chart made to show Helm's semantics
    (tests/chart/fixture): number formatting, <no value>, include, tpl, required, .Template,
    .Release, .Chart, values coalescing and merging, document splitting, install order."""

    FIXTURE = os.path.join(np.ROOT, "tests", "chart", "fixture")

    def render(self, *values, release="rel", expect_ok=True):
        d = np.tmpdir(self)
        args = [chart.RENDER, "--format", "json", "--release-name", release, "--namespace", "ns"]
        for i, v in enumerate(values):
            path = os.path.join(d, f"v{i}.yaml")
            with open(path, "w") as f:
                f.write(v)
            args += ["-f", path]
        p = subprocess.run(args + [self.FIXTURE], capture_output=True, text=True, timeout=60)
        if expect_ok:
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)["manifests"]
        self.assertEqual(p.returncode, 1)
        return p.stderr

    def test_helm_semantics(self):
        ms = self.render("nested:\n  drop: null\n  table:\n    b: 2\nlist: [3]\nname: first\n",
                         "name: second\nnested:\n  table:\n    c: 3\n")
        self.assertEqual([(m["object"]["kind"], m["source"]) for m in ms], [
            ("ServiceAccount", "fixture/templates/a-service.yaml"),
            ("ConfigMap", "fixture/templates/b-configmap.yaml"),
            ("Service", "fixture/templates/a-service.yaml"),
            ("Aardvark", "fixture/templates/c-custom.yaml"),
            ("Zebra", "fixture/templates/c-custom.yaml")])
        cm = ms[1]["object"]
        self.assertEqual(cm["metadata"]["name"], "fixture-1.2.3-4.5")
        self.assertEqual(cm["data"], {
            "big": "1e+06",                       # values are float64, printed with %v
            "bigInt": "1000000",
            "missing": "",                        # <no value> is removed
            "include": "second@ns",
            "tpl": "hello second from rel",
            "template": "fixture/templates/b-configmap.yaml",
            "basePath": "fixture/templates",
            "keep": "default",
            "drop": "removed",                    # null deletes the default
            "table": '{"a":1,"b":2,"c":3}',       # tables merge, across -f files too
            "list": "[3]",                        # lists are replaced
            "revision": "1 true Helm",
        })
        self.assertEqual(ms[4]["object"]["metadata"]["name"], "second")

    def test_required_and_yaml_errors(self):
        self.assertIn("name is required", self.render('name: ""\n', expect_ok=False))
        self.assertIn("failed to parse", self.render("name: [\n", expect_ok=False))


# Values the schema must reject (each is merged over the defaults), and the field the
# error must name.
BAD_VALUES = [
    ({"profiling": {"sampleRate": "97"}}, "profiling.sampleRate"),
    ({"profiling": {"sampleRate": 0}}, "profiling.sampleRate"),
    ({"profiling": {"sampleRate": 97.5}}, "profiling.sampleRate"),
    ({"profiling": {"collectInterval": "2h"}}, "profiling.collectInterval"),
    ({"profiling": {"collectInterval": 15}}, "profiling.collectInterval"),
    ({"profiling": {"demangle": "yes"}}, "profiling.demangle"),
    ({"discovery": {"mode": "annotated"}}, "discovery.mode"),
    ({"discovery": {"namespaces": "default"}}, "discovery.namespaces"),
    ({"discovery": {"namespaces": ["Bad_NS"]}}, "discovery.namespaces.0"),
    ({"discovery": {"excludeNamespaces": ["a|b"]}}, "discovery.excludeNamespaces.0"),
    ({"discovery": {"attachMetadata": {"node": "yes"}}}, "discovery.attachMetadata.node"),
    ({"discovery": {"extraRelabelRules": [{"action": "replace", "regex": "x"}]}}, "discovery.extraRelabelRules.0"),
    ({"discovery": {"extraRelabelRules": [{"action": "hashmod", "target_label": "s"}]}},
     "discovery.extraRelabelRules.0"),
    ({"discovery": {"extraRelabelRules": [{"action": "Replace", "target_label": "s"}]}},
     "discovery.extraRelabelRules.0.action"),
    ({"discovery": {"extraRelabelRules": [{"action": "drop", "sourceLabels": ["a"]}]}},
     "discovery.extraRelabelRules.0"),
    ({"discovery": {"extraRelabelRules": [{"action": "drop", "source_labels": "a"}]}},
     "discovery.extraRelabelRules.0.source_labels"),
    ({"pyroscope": {"url": "pyroscope:4040"}}, "pyroscope.url"),
    ({"pyroscope": {"tenant": "a b"}}, "pyroscope.tenant"),
    ({"pyroscope": {"externalLabels": {"1x": "a"}}}, "pyroscope.externalLabels"),
    ({"pyroscope": {"externalLabels": {"a": 1}}}, "pyroscope.externalLabels.a"),
    ({"pyroscope": {"auth": {"type": "basic", "username": "u"}}}, "pyroscope.auth"),
    ({"pyroscope": {"auth": {"type": "basic", "existingSecret": "s"}}}, "pyroscope.auth"),
    ({"pyroscope": {"auth": {"type": "bearer", "existingSecret": "Not_A_Name"}}}, "pyroscope.auth.existingSecret"),
    ({"pyroscope": {"auth": {"type": "token"}}}, "pyroscope.auth.type"),
    ({"pyroscope": {"password": "secret"}}, "pyroscope"),
    ({"pyroscop": {}}, "(root)"),
    ({"http": {"port": 70000}}, "http.port"),
    ({"http": {"metricsPort": 0}}, "http.metricsPort"),
    ({"http": {"exposeUI": "true"}}, "http.exposeUI"),
    ({"http": {"allowedHosts": ["evil.example.com:80"]}}, "http.allowedHosts.0"),
    ({"http": {"allowedHosts": ["*.example.com"]}}, "http.allowedHosts.0"),
    ({"http": {"allowedHosts": "a.example.com"}}, "http.allowedHosts"),
    ({"networkPolicy": {"enabled": "yes"}}, "networkPolicy.enabled"),
    ({"networkPolicy": {"from": [["monitoring"]]}}, "networkPolicy.from.0"),
    ({"networkPolicy": {"ingress": []}}, "networkPolicy"),
    ({"securityContext": {"capabilities": "BPF"}}, "securityContext.capabilities"),
    ({"securityContext": {"privileged": "false"}}, "securityContext.privileged"),
    ({"image": {"digest": "latest"}}, "image.digest"),
    ({"resources": {"limits": []}}, "resources.limits"),
    ({"configOverride": {"a": 1}}, "configOverride"),
]


class Schema(unittest.TestCase):
    """values.schema.json refuses wrong types and values before anything is rendered."""

    def test_rejects(self):
        for values, field in BAD_VALUES:
            p = chart.run_render(values)
            self.assertEqual(p.returncode, 1, f"accepted {values}")
            self.assertIn("values don't meet the specifications of the schema", p.stderr, values)
            self.assertIn(f"- {field}", p.stderr, f"{values}: {p.stderr}")

    def test_template_checks_without_the_schema(self):
        """With helm's --skip-schema-validation the templates still refuse incomplete auth."""
        skip = ["--skip-schema-validation"]
        p = chart.run_render({"pyroscope": {"auth": {"type": "basic", "username": "u"}}}, extra_args=skip)
        self.assertEqual(p.returncode, 1)
        self.assertIn("pyroscope.auth.existingSecret: the name of the Secret holding the password", p.stderr)
        p = chart.run_render({"pyroscope": {"auth": {"type": "bearer"}}}, extra_args=skip)
        self.assertIn("pyroscope.auth.existingSecret: the name of the Secret holding the token", p.stderr)
        # null removes a default (Helm's coalescing).
        p = chart.run_render({"pyroscope": {"auth": {"type": "basic", "existingSecret": "s", "username": None}}},
                             extra_args=skip)
        self.assertEqual(p.returncode, 1)
        self.assertIn("pyroscope.auth.username: basic auth needs a user name", p.stderr)

    def test_accepts_the_documented_shapes(self):
        chart.render({"pyroscope": {"auth": {"type": "none", "existingSecret": ""}},
                      "resources": {"requests": {"cpu": 0.1, "memory": "64Mi"}, "limits": {"memory": 268435456}},
                      "profiling": {"collectInterval": "3600s"}, "podMonitor": {"scrapeTimeout": "1m30s"}})


class EveryConfiguration(unittest.TestCase):
    """Every configuration the chart can generate passes `nodeprof check`: all combinations
    of the options that change the configuration's shape, then random values of every
    option within the schema, strings chosen to stress quoting."""

    def test_combinations(self):
        auths = [{"type": "none"}, {"type": "basic", "existingSecret": "s", "username": "u"},
                 {"type": "bearer", "existingSecret": "s"}]
        n = 0
        for mode in ("opt-out", "opt-in"):
            for auth in auths:
                for tenant in ("", "t"):
                    for labels in ({}, {"cluster": "c"}):
                        for ns, ex in (([], []), (["a"], []), ([], ["b"]), (["a", "c"], ["b"])):
                            for node, nsmeta in ((False, False), (True, True)):
                                values = {"pyroscope": {"auth": auth, "tenant": tenant, "externalLabels": labels},
                                          "discovery": {"mode": mode, "namespaces": ns, "excludeNamespaces": ex,
                                                        "attachMetadata": {"node": node, "namespace": nsmeta}}}
                                self.check_many(values)
                                n += 1
        self.flush()
        self.assertEqual(n, 192)

    def test_random_values(self):
        """Values drawn with no regard for the schema: whatever the schema accepts must give
        a configuration `nodeprof check` accepts (the schema is no looser than the agent).
        Regular expressions are drawn valid: their syntax is the agent's to check."""
        rng = random.Random(11)
        weird = ['"', "\\", "\\n", "ü", "${1}", "$1", "{{ .Values }}", "'", "`", "\t", "//", "/*", "é\u2028", ";"]

        def s():
            return "".join(rng.choice(weird + ["a", "b", "-", " ", "_"]) for _ in range(rng.randint(0, 6)))

        def name():
            return sometimes_bad(["a", "x_1", "service_name", "__meta_x", "_"], ["1a", "a.b", "", "${1}", "a-b"])

        def maybe(d, key, value, p=0.5):
            if rng.random() < p:
                d[key] = value

        def sometimes_bad(good, bad, p_bad=0.08):
            return rng.choice(bad) if rng.random() < p_bad else rng.choice(good)

        accepted = rejected = 0
        for _ in range(200):
            rules = []
            for _ in range(rng.randint(0, 3)):
                action = rng.choice(["replace", "keep", "drop", "hashmod", "labelmap", "labeldrop", "labelkeep",
                                     "lowercase", "uppercase", "keepequal", "dropequal"])
                rule = {"action": action}
                # Mostly the fields the action takes, sometimes any field.
                careless = rng.random() < 0.3
                takes_target = action in ("replace", "hashmod", "lowercase", "uppercase", "keepequal", "dropequal")
                if careless or action not in ("labeldrop", "labelkeep"):
                    maybe(rule, "source_labels", [name() for _ in range(rng.randint(0, 2))], 0.8)
                if careless or action not in ("labeldrop", "labelkeep", "keepequal", "dropequal"):
                    maybe(rule, "separator", rng.choice([";", "", s()]), 0.3)
                if careless or action not in ("keepequal", "dropequal"):
                    maybe(rule, "regex", rng.choice(["(.*)", "a\\d+", "x{2,3}", "[\"\\\\]", "ü(.+)", "(?i)abc", ""]))
                if careless or takes_target:
                    maybe(rule, "target_label", sometimes_bad(["x", "service_name", "${1}_y", "a.b"], [""]),
                          0.5 if careless else 0.95)
                if careless or action in ("replace", "labelmap"):
                    maybe(rule, "replacement", rng.choice(["$1", s(), "${1}_x"]) if action != "labelmap"
                          else sometimes_bad(["$1", "k_$1", "${1}"], [""]), 0.5)
                if careless or action == "hashmod":
                    maybe(rule, "modulus", sometimes_bad([1, 7, 1000], [0]), 0.3 if careless else 0.95)
                rules.append(rule)
            values = {
                "pyroscope": {"url": sometimes_bad(["http://p:4040", "https://x.example.com/base", "http://[::1]:1"],
                                                   ["p:4040", "http://"]),
                              "tenant": sometimes_bad(["", "t", "a.b_c-1", "x" * 150], ["a b", "x" * 151]),
                              "externalLabels": {name(): s() for _ in range(rng.randint(0, 2))},
                              "auth": rng.choice([{"type": "none"},
                                                  {"type": "basic", "existingSecret": "s", "username": s()},
                                                  {"type": "bearer", "existingSecret": "s"}])},
                "profiling": {"sampleRate": sometimes_bad([1, 97, 10000], [0, 10001]),
                              "collectInterval": sometimes_bad(["1s", "15s", "999s", "3600s", "1m", "60m", "1h"],
                                                               ["3601s", "0s", "61m", "2h", "1m30s"]),
                              "demangle": rng.choice(["none", "simplified", "templates", "full"])},
                "discovery": {"mode": rng.choice(["opt-in", "opt-out"]),
                              "namespaces": rng.sample(["a", "b-1", "c9"], rng.randint(0, 3)),
                              "excludeNamespaces": rng.sample(["kube-system", "d"], rng.randint(0, 2)),
                              "attachMetadata": {"node": rng.random() < 0.5, "namespace": rng.random() < 0.5},
                              "extraRelabelRules": rules},
            }
            p = chart.run_render(values)
            if p.returncode != 0:
                self.assertIn("values don't meet the specifications of the schema", p.stderr, values)
                rejected += 1
                continue
            self.check_many(values)
            accepted += 1
        self.flush()
        self.assertGreater(accepted, 60)
        self.assertGreater(rejected, 40)

    # Configurations are checked in one go: `nodeprof check` once per file, in a shell loop.
    def check_many(self, values):
        if not hasattr(self, "pending"):
            self.pending = []
            self.dir = np.tmpdir(self)
        r = chart.render(values)
        path = os.path.join(self.dir, f"c{len(self.pending)}.alloy")
        with open(path, "w") as f:
            f.write(r.config)
        self.pending.append((path, values))

    def flush(self):
        for path, values in self.pending:
            p = np.nodeprof("check", path)
            if p.returncode != 0:
                self.fail(f"nodeprof check rejected the configuration for {json.dumps(values)}:\n{p.stderr}\n"
                          + open(path).read())
        self.pending = []


def makefile_version():
    with open(os.path.join(np.ROOT, "Makefile")) as f:
        return re.search(r"^VERSION := (\S+)$", f.read(), re.M).group(1)


def dockerfile_arg(name):
    with open(os.path.join(np.ROOT, "Dockerfile")) as f:
        text = f.read().replace("\\\n", " ")
    m = re.search(r'^ARG %s=("([^"]*)"|(\S*))' % name, text, re.M)
    return (m.group(2) if m.group(2) is not None else m.group(3)).split()


def owner_package(path):
    """The Debian package that installed a file (merged /usr: either spelling)."""
    candidates = [path, os.path.realpath(path)]
    for c in list(candidates):
        candidates.append(c[4:] if c.startswith("/usr/") else "/usr" + c)
    for c in candidates:
        p = subprocess.run(["dpkg", "-S", c], capture_output=True, text=True)
        if p.returncode == 0:
            return p.stdout.split(":")[0]
    raise AssertionError(f"no Debian package owns {path}")


class Shipping(unittest.TestCase):
    """deploy/nodeprof.yaml, the versions and the Dockerfile's runtime libraries."""

    def test_plain_manifests_are_up_to_date(self):
        out = os.path.join(np.tmpdir(self), "nodeprof.yaml")
        p = subprocess.run(["make", "--no-print-directory", "-s", "manifests", f"MANIFESTS_OUT={out}"], cwd=np.ROOT,
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f, open(os.path.join(np.ROOT, "deploy", "nodeprof.yaml")) as g:
            self.assertEqual(g.read(), f.read(), "deploy/nodeprof.yaml is stale: run `make manifests`")
        # It is the default rendering into the namespace nodeprof, with that namespace first.
        r = chart.render(namespace="nodeprof", extra_args=["--namespace-object"])
        self.assertEqual(r.kinds()[0], "Namespace")
        with open(out) as f:
            text = f.read()
        self.assertIn("kubectl apply -f deploy/nodeprof.yaml", text)
        for m in r.manifests:
            self.assertIn(m["text"], text)

    def test_versions_agree(self):
        with open(os.path.join(chart.CHART, "Chart.yaml")) as f:
            app_version = re.search(r'^appVersion: "(.*)"$', f.read(), re.M).group(1)
        self.assertEqual(app_version, makefile_version())
        self.assertEqual(dockerfile_arg("VERSION"), [makefile_version()])
        p = np.nodeprof("--version")
        self.assertIn(makefile_version(), p.stdout + p.stderr)

    def test_runtime_packages_are_the_linked_libraries(self):
        """RUNTIME_PACKAGES in the Dockerfile = the packages owning what build/nodeprof links
        or loads on demand (ICU: lib/icu.c dlopens the soname it was built for)."""
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]",
                            subprocess.run(["readelf", "-d", np.NODEPROF], capture_output=True, text=True).stdout)
        ldd = subprocess.run(["ldd", np.NODEPROF], capture_output=True, text=True).stdout
        paths = dict(re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M))
        self.assertTrue(needed)
        with open(np.NODEPROF, "rb") as f:
            dlopened = sorted({m.decode() for m in re.findall(rb"libicuuc\.so\.[0-9]+", f.read())})
        self.assertEqual(len(dlopened), 1, f"the ICU soname in {np.NODEPROF}: {dlopened}")
        cache = subprocess.run([shutil.which("ldconfig") or "/sbin/ldconfig", "-p"], capture_output=True,
                               text=True).stdout
        for lib in dlopened:
            found = re.findall(r"^\s*%s \(.*\) => (\S+)$" % re.escape(lib), cache, re.M)
            self.assertTrue(found, f"{lib} is not in the ld.so cache")
            paths[lib] = found[0]
        needed += dlopened
        missing = [lib for lib in needed if lib not in paths]
        self.assertEqual(missing, [], ldd)
        want = {owner_package(paths[lib]) for lib in needed}
        got = set(dockerfile_arg("RUNTIME_PACKAGES")) - {"ca-certificates"}
        self.assertEqual(got, want, "the Dockerfile's RUNTIME_PACKAGES must list exactly the packages of "
                                    f"the linked libraries: add {sorted(want - got)}, remove {sorted(got - want)}")

    def test_image_defaults_match_the_chart(self):
        with open(os.path.join(np.ROOT, "Dockerfile")) as f:
            text = f.read()
        entry = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M).group(1))
        cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))
        # The image's default command is the chart's, less the log level (info by default).
        self.assertEqual(cmd + ["--log-level", "info"], chart.render().container["args"])
        self.assertEqual(entry, ["/usr/local/bin/nodeprof"])


# ---- on a simulated node ----

def rbac_allows(rules, resource, verb):
    return any("" in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules)


def request_permission(req):
    """(resource, verb) of a core-API request, as the authorizer sees it."""
    parts = req["path"].split("?")[0].strip("/").split("/")
    assert parts[:2] == ["api", "v1"], req["path"]
    p = parts[2:]
    if p[0] == "namespaces" and len(p) >= 3:
        resource, name = p[2], (p[3] if len(p) > 3 else None)
    else:
        resource, name = p[0], (p[1] if len(p) > 1 else None)
    return resource, "watch" if req["watch"] else "get" if name else "list"


class OnNode(unittest.TestCase):
    """Generated configurations run as they would in the DaemonSet's pod."""

    def targets(self, n, values):
        """The targets discovery.relabel.local_pods exports for the rendered configuration,
        from `nodeprof tools targets` run in the pod's view (in-cluster service account,
        HOSTNAME = node name); also checks every apiserver request against the ClusterRole."""
        r = chart.render(values)
        cfg = check_config(self, r.config)
        before = len(n.api.requests)
        agent = n.start_agent(cfg, args=["tools", "targets", "--config", cfg, "--component",
                                         "discovery.relabel.local_pods", "--wait", "10s"])
        agent.wait(30)
        log = n.agent_log()
        self.assertEqual(agent.returncode, 0, log)
        rules = r.one("ClusterRole")["rules"]
        for req in n.api.requests[before:]:
            resource, verb = request_permission(req)
            self.assertTrue(rbac_allows(rules, resource, verb), f"{req['path']} needs {verb} on {resource}; "
                                                                f"the ClusterRole has {rules}")
        return json.loads(log[log.index("["):log.rindex("]") + 1])

    def test_discovery_and_rbac(self):
        n = nodelib.Node(self)
        n.pod("cart-0", namespace="shop", containers=("cart",), labels={"app": "cart"})
        n.pod("web-0", namespace="shop", containers=("web",), annotations={"pyroscope.io/service_name": "storefront"})
        n.pod("quiet-0", namespace="shop", containers=("q",), annotations={"profiles.grafana.com/cpu.ebpf.enabled":
                                                                              "false"})
        n.pod("job-0", namespace="batch", containers=("job",),
              annotations={"profiles.grafana.com/cpu.ebpf.enabled": "true"})
        n.pod("done-0", namespace="batch", containers=("done",), phase="Succeeded")
        n.pod("dns-0", namespace="kube-system", containers=("coredns",))
        n.pod("cart-1", namespace="shop", node="node-b", containers=("cart",))
        n.api.put("nodes", {"metadata": {"name": "node-a", "labels": {"zone": "z1"}}})
        n.api.put("namespaces", {"metadata": {"name": "shop", "labels": {"team": "t-shop"}}})

        got = self.targets(n, None)
        self.assertEqual(services(got), ["ebpf/batch/job", "ebpf/kube-system/coredns", "ebpf/shop/cart", "storefront"])
        self.assertEqual({t["node"] for t in got}, {"node-a"})
        self.assertEqual(services(self.targets(n, {"discovery": {"mode": "opt-in"}})), ["ebpf/batch/job"])
        got = self.targets(n, {"discovery": {"namespaces": ["shop", "kube-system"], "excludeNamespaces": ["kube-system"]}})
        self.assertEqual(services(got), ["ebpf/shop/cart", "storefront"])
        got = self.targets(n, {"discovery": {
            "attachMetadata": {"node": True, "namespace": True},
            "extraRelabelRules": [
                {"action": "replace", "source_labels": ["__meta_kubernetes_node_label_zone"], "target_label": "zone"},
                {"action": "replace", "source_labels": ["__meta_kubernetes_namespace_label_team"], "regex": "(.+)",
                 "target_label": "team"}]}})
        self.assertEqual({t["zone"] for t in got}, {"z1"})
        self.assertEqual({t["service_name"]: t.get("team") for t in got}["ebpf/shop/cart"], "t-shop")
        self.assertTrue(any("/api/v1/nodes" in r["path"] for r in n.api.requests))
        self.assertTrue(any("/api/v1/namespaces?" in r["path"] or r["path"] == "/api/v1/namespaces"
                            for r in n.api.requests))

    def push_scenario(self, values, auth_header, secret_file, secret_value, user=None, **agent_kw):
        """Runs the agent on the rendered configuration with the Secret's file where the
        DaemonSet mounts it, until profiles of the annotated pod arrive; returns the node.
        user: run that pod's workload as this uid, from an executable only it can read."""
        n = nodelib.Node(self, auth=auth_header)
        n.pyro.multitenancy = True
        ids = n.pod("web-0", namespace="shop", containers=("web",), running=() if user else ("web",),
                    annotations={"pyroscope.io/service_name": "storefront",
                                 "profiles.grafana.com/cpu.ebpf.enabled": "true"})
        if user:
            exe = os.path.join(n.dir, "private", "split")
            os.makedirs(os.path.dirname(exe), mode=0o755)
            shutil.copy(n.split, exe)
            os.chown(exe, user, user)
            os.chmod(exe, 0o700)
            rel = cgroups.runtime_path("containerd-systemd", n.api.get("pods", "shop", "web-0")["metadata"]["uid"],
                                       ids["web"])
            n.tree.make(rel)
            proc = subprocess.Popen(["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", exe, "600"])
            self.addCleanup(lambda: (proc.kill(), proc.wait()))
            n.tree.move(proc.pid, rel)
        n.pod("cart-0", namespace="shop", containers=("cart",), running=("cart",))
        r = chart.render(values)
        cfg = check_config(self, r.config)
        secret_dir = os.path.join(n.dir, "secret")
        os.makedirs(secret_dir)
        with open(os.path.join(secret_dir, secret_file), "w") as f:
            f.write(secret_value + "\n")
        # The container's arguments, with the configuration file where this test wrote it
        # and the pod's address replaced by a free port of the loopback.
        # The container's arguments, with the configuration file where this test wrote it,
        # the pod's loopback a free port of 127.0.0.1 and the pod's address 127.0.0.2.
        args = r.container["args"]
        self.assertEqual(args[:8], ["run", "--config", "/etc/nodeprof/config.alloy", "--http-listen",
                                    "127.0.0.1:4100", "--metrics-listen", "0.0.0.0:4101", "--log-level"])
        port, mport = free_port(), free_port()
        args = args[:2] + [cfg, args[3], f"127.0.0.1:{port}", args[5], f"127.0.0.2:{mport}"] + args[7:]
        n.start_agent(cfg, binds=[(secret_dir, AUTH_DIR)], args=args, **agent_kw)
        # What the kubelet's probes and the PodMonitor ask for, on the pod's address.
        probes = {c: r.container[c]["httpGet"]["path"] for c in ("readinessProbe", "livenessProbe")}
        self.assertEqual(http_get(mport, probes["readinessProbe"], until=200, timeout=20, host="127.0.0.2")[0], 200,
                         n.agent_log())
        self.assertEqual(http_get(mport, probes["livenessProbe"], host="127.0.0.2")[0], 200)
        # Other pods see neither the UI nor the debug pages there; port-forward (loopback) does.
        self.assertIsNone(http_get(port, "/", host="127.0.0.2")[0])
        for path in ("/", "/debug/targets", "/api/services"):
            self.assertEqual(http_get(mport, path, host="127.0.0.2")[0], 404, path)
            self.assertEqual(http_get(port, path)[0], 200, path)
        # Symbolized stacks of the workload (its known functions), not only samples.
        n.wait_for(lambda s: any(l["service_name"] == "storefront" and nodelib.frames_total(p, "heavy") > 0
                                 for _, l, p in s), 40, "the annotated pod's symbolized profiles")
        for _, labels, _ in n.series():
            self.assertEqual((labels["service_name"], labels["pod"], labels["namespace"], labels["container"]),
                             ("storefront", "web-0", "shop", "web"))
        self.assertEqual(n.violations(), [])
        status, body = http_get(mport, "/metrics", host="127.0.0.2")
        self.assertEqual(status, 200)
        self.metrics = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\w+) (\S+)$", body, re.M)}
        self.assertIn("nodeprof_ebpf_allowed_cgroups", self.metrics)
        return n

    def test_push_with_basic_auth_tenant_and_labels(self):
        values = {"pyroscope": {"url": "http://pyroscope:4040", "tenant": "team-a",
                                "externalLabels": {"cluster": "test-cluster"},
                                "auth": {"type": "basic", "existingSecret": "creds", "username": "profiler"}},
                  "profiling": {"collectInterval": "1s"}, "discovery": {"mode": "opt-in"}}
        n = self.push_scenario(values, nodelib.basic_auth("profiler", "s3cret"), "password", "s3cret")
        for _, labels, _ in n.series():
            self.assertEqual(labels["cluster"], "test-cluster")
        ok = [r for r in n.pyro.all_requests() if r["status"] == 200]
        self.assertTrue(ok)
        self.assertEqual({r["headers"].get("x-scope-orgid") for r in ok}, {"team-a"})

    def test_push_with_capabilities_only(self):
        """securityContext.privileged=false: only the chart's capabilities (bounding set, as
        the container runtime grants them), no privilege escalation, and a cgroup namespace
        of its own (what runtimes give unprivileged containers on cgroup v2), profiling a
        process of another user whose executable only that user can read."""
        caps = chart.render({"securityContext": {"privileged": False}}).container["securityContext"]["capabilities"]
        bounding = "-all," + ",".join("+" + c.lower() for c in caps["add"])
        values = {"pyroscope": {"url": "http://pyroscope:4040", "tenant": "t",
                                "auth": {"type": "bearer", "existingSecret": "tok"}},
                  "profiling": {"collectInterval": "1s"}, "discovery": {"mode": "opt-in"}}
        n = self.push_scenario(values, "Bearer tok-123", "token", "tok-123", user=1000,
                               prefix=["setpriv", "--bounding-set", bounding, "--inh-caps", "-all", "--no-new-privs",
                                       "--"], unshare=["--cgroup"])
        # From its own cgroup namespace the agent still samples the container by cgroup ID
        # (the host's cgroup tree is visible, as the chart's /sys/fs/cgroup mount makes it).
        metrics = self.metrics
        self.assertEqual((metrics["nodeprof_ebpf_allowed_cgroups"], metrics["nodeprof_ebpf_allowed_pids"]), (1, 0))
        status = open(f"/proc/{n.agent.pid}/status").read()
        eff = int(re.search(r"^CapEff:\s*(\S+)", status, re.M).group(1), 16)
        self.assertEqual(eff, sum(1 << CAP_NUMBERS[c] for c in caps["add"]), status)


NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


free_port = np.free_port


def http_get(port, path, until=None, timeout=0, host="127.0.0.1"):
    """(status, body) of GET http://host:port/path (status None when the connection
    fails); with until, retried until that status or the timeout."""
    deadline = time.time() + timeout
    while True:
        try:
            with NO_PROXY.open(f"http://{host}:{port}{path}", timeout=5) as resp:
                result = resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            result = e.code, e.read().decode()
        except OSError as e:
            result = None, str(e)
        if until is None or result[0] == until or time.time() > deadline:
            return result
        time.sleep(0.2)


CAP_NUMBERS = {"DAC_READ_SEARCH": 2, "SYS_PTRACE": 19, "SYS_ADMIN": 21, "SYS_RESOURCE": 24, "SYSLOG": 34,
               "PERFMON": 38, "BPF": 39, "CHECKPOINT_RESTORE": 40}


if __name__ == "__main__":
    unittest.main()
