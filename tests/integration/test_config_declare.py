"""Custom components at run time (issue 16): Grafana's k8s-monitoring chart renders its eBPF
profiling inside `declare "profiling"` and passes the Pyroscope destination in as an argument
(tests/configs/k8s-monitoring-profiling-ebpf.alloy, unchanged). On a simulated node (test
kube-apiserver, test Pyroscope, real cgroups, real BPF) the pyroscope.ebpf inside the custom
component profiles the annotated pod and its profiles reach Pyroscope with the chart's labels;
the components inside answer to the IDs Alloy gives them; a SIGHUP reload that changes the
declare updates them in place."""
import os
import re
import shutil
import signal
import time
import unittest

import np
import node as nodelib

CONFIG = os.path.join(np.ROOT, "tests", "configs", "k8s-monitoring-profiling-ebpf.alloy")
INTERVAL = 15  # the chart sets no collect_interval: Alloy's default
EBPF_ID = "profiling.feature/pyroscope.ebpf.ebpf_pods"
# Mostly waits for two 15 s intervals and asserts labels and deliveries: it runs beside the other
# modules (tests/run.py), its workloads spinning 15% of the time so as to take little of their CPU.
BACKGROUND = True
BUSY = 15


class K8sMonitoringProfiling(unittest.TestCase):
    def test_declared_profiling_pushes_labelled_profiles(self):
        n = nodelib.Node(self, busy_percent=BUSY)
        with open(n.hosts, "a") as f:
            f.write(f"{n.pyro_host} pyroscope.pyroscope.svc\n")   # the chart's destination URL
        n.pod("web-0", namespace="shop", containers=("web",), running=("web",),
              labels={"app.kubernetes.io/name": "webapp"},
              annotations={"profiles.grafana.com/cpu.ebpf.enabled": "true"})
        n.pod("quiet-0", namespace="shop", containers=("quiet",), running=("quiet",))  # not opted in

        # The components inside the instance answer to their Alloy IDs.
        d = np.tmpdir(self)
        config = os.path.join(d, "profiling.alloy")
        shutil.copy(CONFIG, config)
        n.start_agent(None, args=["tools", "targets", "--config", config, "--component",
                                  "profiling.feature/discovery.relabel.ebpf_pods", "--wait", "10s"])
        self.assertEqual(n.agent.wait(timeout=30), 0, n.agent_log())
        out = n.agent_log()
        self.assertIn('"service_name":"webapp"', out)
        self.assertIn('"service_instance_id":"shop.web-0.web"', out)
        self.assertNotIn("quiet-0", out)

        n.start_agent(config)
        n.wait_for(lambda s: any(l.get("service_name") == "webapp" for _, l, _ in s), INTERVAL + 30,
                   "a profile of the annotated pod")
        seen = n.series()
        for _, labels, prof in seen:
            self.assertEqual({k: labels.get(k) for k in ("service_name", "service_namespace", "service_instance_id",
                                                         "namespace", "pod", "container", "node", "source",
                                                         "cluster", "k8s_cluster_name", "__name__")},
                             {"service_name": "webapp", "service_namespace": "shop",
                              "service_instance_id": "shop.web-0.web", "namespace": "shop", "pod": "web-0",
                              "container": "web", "node": "node-a", "source": "alloy/pyroscope.ebpf",
                              "cluster": "profiling-cluster", "k8s_cluster_name": "profiling-cluster",
                              "__name__": "process_cpu"}, labels)
            self.assertEqual([k for k in labels if k.startswith("__") and k != "__name__"], [], labels)
            self.assertGreater(nodelib.frames_total(prof, "heavy") + nodelib.frames_total(prof, "light"), 0)
        self.assertEqual(n.violations(), [])
        log = n.agent_log()
        self.assertIn(f'msg="component started" component_id={EBPF_ID}', log)
        self.assertNotIn("level=error", log)

        # A reload that changes the declare's rules: the profiler inside is updated, not
        # restarted, and the next profiles carry the new label.
        with open(config) as f:
            text = f.read()
        with open(config, "w") as f:
            f.write(text.replace('replacement = "alloy/pyroscope.ebpf"', 'replacement = "reloaded"'))
        since = time.time()
        n.agent.send_signal(signal.SIGHUP)
        n.wait_for(lambda s: any(t > since and l.get("source") == "reloaded" for t, l, _ in s), INTERVAL + 30,
                   "a profile with the reloaded rules")
        log = n.agent_log()
        self.assertEqual(len(re.findall(f'msg="component started" component_id={re.escape(EBPF_ID)}', log)), 1, log)
        self.assertNotIn("level=error", log)


if __name__ == "__main__":
    unittest.main()
