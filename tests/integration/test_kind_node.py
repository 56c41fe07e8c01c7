"""A node that is itself a container, as kind makes it (issue 26), end to end: `nodeprof run`
with the Kubernetes example configuration and the test kube-apiserver, real busy processes in
a nested cgroup hierarchy made under this test's own directory of the cgroup v2 mount:

    <test root>/system.slice/docker-<node>.scope/kubelet.slice/kubelet-kubepods.slice/
      kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod<UID>.slice/
      cri-containerd-<container>.scope

Checked: every running pod is profiled under its own labels (not the node container's); a
process of one pod that moves itself into a nested `docker-<other pod's container>.scope`
stays under its own pod's labels; a container whose cgroup names another pod than the
apiserver's is refused and counted; and /debug/targets tells, per target, how many processes
matched and, when none, why."""
import json
import os
import secrets
import subprocess
import time
import unittest
import urllib.request

import cgroups
import np
import node as nodelib

INTERVAL = 3
BACKGROUND = True
# Its workloads spin 15% of the time: enough samples for every check, little CPU taken from the
# modules it runs beside.
BUSY = 15


def config(dirname):
    """docs/examples/kubernetes.alloy with a short collect interval."""
    with open(os.path.join(np.EXAMPLES, "kubernetes.alloy")) as f:
        text = f.read()
    marker = 'pyroscope.ebpf "local_pods" {\n'
    assert marker in text
    text = text.replace(marker, marker + f'  collect_interval = "{INTERVAL}s"\n')
    path = os.path.join(dirname, "kind.alloy")
    with open(path, "w") as f:
        f.write(text)
    return path


class KindNode(unittest.TestCase):
    def setUp(self):
        self.n = nodelib.Node(self, busy_percent=BUSY)
        self.root = f"nodeprof-kind-{secrets.token_hex(4)}"
        self.node_id = cgroups.new_container_id()

    def kind(self, uid, cid):
        return cgroups.kind_pod_path(self.root, self.node_id, uid, cid)

    def debug_targets(self):
        url = f"http://127.0.0.1:{self.n.http_port}/debug/targets?format=json"
        with urllib.request.urlopen(url, timeout=10) as r:
            rows = json.loads(r.read())
        return {r["labels"].get("pod"): r for r in rows
                if r["component"].startswith("pyroscope.ebpf") and "processes" in r}

    def wait_rows(self, pred, timeout, what):
        deadline, rows = time.time() + timeout, None
        while time.time() < deadline:
            try:
                rows = self.debug_targets()
                if pred(rows):
                    return rows
            except OSError:
                pass
            time.sleep(0.5)
        self.fail(f"timed out waiting for {what}: {json.dumps(rows, indent=1)}\n{self.n.agent_log()[-3000:]}")

    def test_pods_on_a_kind_node(self):
        n = self.n
        web = n.pod("web-0", namespace="shop", containers=("web",), running=("web",), labels={"app": "web"},
                    cgroup=self.kind)
        # db-0 runs no process of its own: its container ID is borrowed below.
        db = n.pod("db-0", namespace="shop", containers=("db",), labels={"app": "db"})
        # The apiserver says one UID, the cgroup path another.
        n.pod("odd-0", namespace="shop", containers=("odd",), running=("odd",), labels={"app": "odd"},
              cgroup=self.kind, cgroup_uid=cgroups.new_pod_uid())
        # A pod the apiserver does not show on this node: its container is "unmatched".
        stray_uid, stray_cid = cgroups.new_pod_uid(), cgroups.new_container_id()
        n.tree.make(self.kind(stray_uid, stray_cid))
        stray = n.run_in(self.kind(stray_uid, stray_cid))
        # idle-0 has no process at all.
        n.pod("idle-0", namespace="shop", containers=("idle",), labels={"app": "idle"})

        # A process of web-0 that moves itself into docker-<db's container>.scope nested in
        # its own container's scope, then runs the busy workload.
        web_rel = self.kind(n.api.get("pods", "shop", "web-0")["metadata"]["uid"], web["web"])
        nested = f"{web_rel}/docker-{db['db']}.scope"
        n.tree.make(nested)
        go = os.path.join(n.dir, "go")
        impostor = subprocess.Popen(["sh", "-c", f'while [ ! -e {go} ]; do sleep 0.05; done; '
                                     f'echo $$ > {cgroups.cgroup2_mount()}/{nested}/cgroup.procs && exec {n.split} 600'])
        self.addCleanup(lambda: (impostor.kill(), impostor.wait()))
        n.tree.move(impostor.pid, web_rel)
        open(go, "w").close()
        deadline = time.time() + 10
        while f"/{nested}\n" not in open(f"/proc/{impostor.pid}/cgroup").read():
            self.assertLess(time.time(), deadline, "the impostor did not move itself")
            time.sleep(0.05)

        # The tool explains the choice for the impostor.
        r = np.nodeprof("tools", "container-id", "--pid", impostor.pid, "--explain")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[-1], web["web"])
        self.assertIn(f"docker-{db['db']}.scope\": container below the pod's container: ignored", r.stdout)
        self.assertIn(f"docker-{self.node_id}.scope\": container around the pod", r.stdout)

        n.start_agent(config(n.dir))
        n.wait_for(lambda s: any(l["pod"] == "web-0" for _, l, _ in s), 4 * INTERVAL + 25, "web-0's profiles")
        time.sleep(2 * INTERVAL)
        for _, labels, prof in n.series():
            self.assertEqual(labels["pod"], "web-0", labels)
            self.assertEqual(labels["service_name"], "ebpf/shop/web")
            self.assertEqual(labels["app"], "web")
            self.assertGreater(nodelib.frames_total(prof, "heavy") + nodelib.frames_total(prof, "light"), 0)

        # Per target: web-0 has its process and the impostor; the others say why they have none.
        rows = self.wait_rows(lambda r: {"web-0", "db-0", "odd-0", "idle-0"} <= r.keys()
                              and r["idle-0"].get("reason") == "unmatched_container_ids", 4 * INTERVAL + 10,
                              "a row per target")
        self.assertEqual(rows["web-0"]["processes"], 2, rows["web-0"])
        self.assertNotIn("reason", rows["web-0"])
        self.assertEqual(rows["odd-0"]["processes"], 0)
        self.assertEqual(rows["odd-0"]["reason"], "pod_uid_mismatch", rows["odd-0"])
        self.assertEqual(rows["db-0"]["reason"], "unmatched_container_ids", rows["db-0"])
        examples = rows["idle-0"]["unmatched_processes"]
        self.assertTrue(examples)
        for e in examples:
            self.assertIn(e["container_id"], e["cgroup"])
        if len(examples) < 5:  # at most 5 are shown; other tests may run containers too
            self.assertIn({"pid": stray.pid, "container_id": stray_cid,
                           "cgroup": "/" + self.kind(stray_uid, stray_cid)}, examples)

        # The HTML page says the same.
        with urllib.request.urlopen(f"http://127.0.0.1:{n.http_port}/debug/targets", timeout=10) as r:
            html = r.read().decode()
        for text in ("pod_uid_mismatch", "unmatched_container_ids", "unmatched_processes", "ebpf/shop/web"):
            self.assertIn(text, html)

        m = n.metrics()
        self.assertEqual(m["nodeprof_target_mismatches_total"].value({"reason": "pod_uid"}), 1)
        self.assertEqual(m["nodeprof_targets_without_processes"].value(), 3)
        # One warning for the pod targets that matched nothing for 3 intervals, one log per
        # refused process.
        deadline = time.time() + 4 * INTERVAL + 10
        while "matched no process for 3 intervals" not in n.agent_log():
            self.assertLess(time.time(), deadline, n.agent_log()[-3000:])
            time.sleep(0.5)
        time.sleep(2 * INTERVAL)
        log = n.agent_log()
        self.assertEqual(log.count("its cgroup path names another pod"), 1, log[-3000:])
        warnings = [line for line in log.splitlines() if "matched no process for 3 intervals" in line]
        self.assertEqual(len(warnings), 1, warnings)
        self.assertIn("targets=3", warnings[0])
        self.assertIn("example_cgroup=", warnings[0])
        self.assertEqual(n.violations(), [])


if __name__ == "__main__":
    unittest.main()
