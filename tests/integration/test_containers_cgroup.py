"""Container IDs, target matching and discovery.process on real processes in real,
runtime-shaped cgroups created on this host's cgroup mounts (found in
/proc/self/mountinfo) and removed afterwards:
  - `nodeprof tools container-id` for every runtime layout, on cgroup v2 and, on a
    hybrid host, on a cgroup v1 hierarchy;
  - the profiler's attribution chain (PID cache -> target set) for a process inside a
    container cgroup and one outside, including the cgroup v2 ID;
  - discovery.process labels and join for those processes.
"""
import json
import os
import subprocess
import tempfile
import threading
import unittest

import cgroups
import np

HARNESS = os.path.join(np.ROOT, "build", "harness", "discovery_harness")


def harness(*args, check=True):
    p = subprocess.run([HARNESS, *map(str, args)], capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"discovery_harness {' '.join(map(str, args))} exited {p.returncode}: {p.stderr}")
    return p


class V2Base(unittest.TestCase):
    def setUp(self):
        mount = cgroups.cgroup2_mount()
        self.assertIsNotNone(mount, "this host has no cgroup2 mount")
        self.tree = cgroups.CgroupTree(mount)
        self.addCleanup(self.tree.cleanup)

    def in_container(self, layout, cid=None, pod_uid=None):
        """A sleeping process moved into a new container cgroup; returns (proc, cid, rel)."""
        cid = cid or cgroups.new_container_id()
        rel = cgroups.runtime_path(layout, pod_uid or cgroups.new_pod_uid(), cid)
        self.tree.make(rel)
        proc = cgroups.spawn(self)
        self.tree.move(proc.pid, rel)
        return proc, cid, rel


class ContainerIdTool(V2Base):
    def test_every_runtime_layout_on_cgroup_v2(self):
        for layout in ("containerd-systemd", "crio-systemd", "containerd-cgroupfs", "crio-cgroupfs",
                       "docker-systemd", "docker-cgroupfs", "podman-child"):
            with self.subTest(layout=layout):
                proc, cid, rel = self.in_container(layout)
                with open(f"/proc/{proc.pid}/cgroup") as f:
                    self.assertIn(f"0::/{rel}\n", f.read())
                r = np.nodeprof("tools", "container-id", "--pid", proc.pid)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout, cid + "\n")

    def test_kind_node_layout_and_explain(self):
        """A pod on a node that is a container (kind), made under this test's own directory:
        the pod's container, not the node's, and --explain says why, segment by segment."""
        root, node, uid = f"nodeprof-cid-{cgroups.new_container_id()[:8]}", cgroups.new_container_id(), cgroups.new_pod_uid()
        cid, other = cgroups.new_container_id(), cgroups.new_container_id()
        rel = cgroups.kind_pod_path(root, node, uid, cid)
        for path in (rel, f"{rel}/docker-{other}.scope"):
            self.tree.make(path)
            proc = cgroups.spawn(self)
            self.tree.move(proc.pid, path)
            r = np.nodeprof("tools", "container-id", "--pid", proc.pid)
            self.assertEqual((r.returncode, r.stdout), (0, cid + "\n"), r.stderr)
            r = np.nodeprof("tools", "container-id", "--pid", proc.pid, "--explain")
            self.assertEqual(r.returncode, 0, r.stderr)
            out = r.stdout.splitlines()
            self.assertEqual(out[0], f"file: /proc/{proc.pid}/cgroup")
            self.assertEqual(out[-1], cid)
            self.assertIn("line 1 (", r.stdout)
            self.assertIn(f"cgroup v2): /{path}", r.stdout)
            self.assertIn(f'"docker-{node}.scope": container around the pod (a node that is a container, e.g. kind): '
                          f"ignored, ID {node}", r.stdout)
            self.assertIn(f'"kubelet-kubepods-besteffort-pod{uid.replace("-", "_")}.slice": pod slice', r.stdout)
            self.assertIn(f'"cri-containerd-{cid}.scope": container directly under the pod slice', r.stdout)
            self.assertIn(f"chosen: {cid} from line", r.stdout)
        self.assertIn(f'"docker-{other}.scope": container below the pod\'s container: ignored', r.stdout)
        # --explain also works on a saved file, and on a process in no container
        r = np.nodeprof("tools", "container-id", "--pid", cgroups.spawn(self).pid, "--explain")
        self.assertEqual(r.returncode, 1)
        self.assertIn("chosen: no container", r.stdout)

    def test_conmon_scope_is_not_a_container(self):
        proc, cid, _ = self.in_container("crio-conmon")
        r = np.nodeprof("tools", "container-id", "--pid", proc.pid)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertIn(f"process {proc.pid} is not in a container", r.stderr)

    def test_process_outside_any_container(self):
        proc = cgroups.spawn(self)
        r = np.nodeprof("tools", "container-id", "--pid", proc.pid)
        self.assertEqual(r.returncode, 1)
        self.assertIn("is not in a container", r.stderr)

    def test_cgroup_file_of_a_real_process(self):
        proc, cid, _ = self.in_container("containerd-systemd")
        d = np.tmpdir(self)
        saved = os.path.join(d, "cgroup")
        with open(f"/proc/{proc.pid}/cgroup") as src, open(saved, "w") as dst:
            dst.write(src.read())
        r = np.nodeprof("tools", "container-id", "--cgroup-file", saved)
        self.assertEqual((r.returncode, r.stdout), (0, cid + "\n"), r.stderr)

    def test_bad_arguments(self):
        for args, fragment in ((("--pid",), "--pid needs a value"),
                               (("--pid", "12x"), "not a process ID"),
                               (("--pid", "0"), "not a process ID"),
                               (("--pid", "1", "--cgroup-file", "/x"), "exactly one of"),
                               ((), "exactly one of"),
                               (("--bogus",), "unrecognized option"),
                               (("--pid", "1", "--explain", "--explain"), "--explain given twice")):
            with self.subTest(args=args):
                r = np.nodeprof("tools", "container-id", *args)
                self.assertEqual(r.returncode, 2)
                self.assertIn(fragment, r.stderr)
        r = np.nodeprof("tools", "container-id", "--pid", "4194305")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no process with PID 4194305", r.stderr)
        r = np.nodeprof("tools", "container-id", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--cgroup-file", r.stdout)


class HybridV1(unittest.TestCase):
    """On a hybrid host the unified line may show a shared service while a v1
    controller line shows the container (coroot's case in the fixture)."""

    def test_container_only_on_a_v1_hierarchy(self):
        mount = cgroups.cgroup1_mount("pids")
        self.assertIsNotNone(mount, "this host has no cgroup v1 pids hierarchy (not a hybrid host)")
        tree = cgroups.CgroupTree(mount)
        self.addCleanup(tree.cleanup)
        cid = cgroups.new_container_id()
        rel = cgroups.runtime_path("containerd-cgroupfs", cgroups.new_pod_uid(), cid)
        tree.make(rel)
        proc = cgroups.spawn(self)
        tree.move(proc.pid, rel)
        r = np.nodeprof("tools", "container-id", "--pid", proc.pid)
        self.assertEqual((r.returncode, r.stdout), (0, cid + "\n"), r.stderr)
        out = harness("match", "--targets", self.targets_file(cid), proc.pid).stdout
        row = json.loads(out)
        self.assertEqual(row["origin"], "v1")
        self.assertEqual(row["target"]["__container_id__"], cid)

    def targets_file(self, cid):
        d = np.tmpdir(self)
        path = os.path.join(d, "targets.json")
        with open(path, "w") as f:
            json.dump([{"__container_id__": cid, "job": "v1"}], f)
        return path


class Attribution(V2Base):
    """The profiler's chain: a PID -> its container ID (PID cache) -> its target."""

    def write_targets(self, targets):
        path = os.path.join(np.tmpdir(self), "targets.json")
        with open(path, "w") as f:
            json.dump(targets, f)
        return path

    def test_container_target_gets_its_process_and_no_other(self):
        pod = cgroups.new_pod_uid()
        inside, cid, rel = self.in_container("containerd-systemd", pod_uid=pod)
        sibling, cid2, _ = self.in_container("containerd-systemd", pod_uid=pod)
        outside = cgroups.spawn(self)
        targets = self.write_targets([
            {"__meta_kubernetes_namespace": "shop", "__meta_kubernetes_pod_name": "web-0",
             "__meta_kubernetes_pod_container_name": "app", "__meta_kubernetes_pod_container_id": f"containerd://{cid}",
             "__address__": "10.0.0.1:80", "namespace": "shop", "pod": "web-0"},
            {"__meta_kubernetes_pod_container_id": f"cri-o://{cid2}", "service_name": "sidecar"},
            {"__meta_kubernetes_pod_container_id": "rkt://whatever", "job": "never"},
        ])
        rows = [json.loads(line) for line in
                harness("match", "--targets", targets, inside.pid, sibling.pid, outside.pid).stdout.splitlines()]
        self.assertEqual(len(rows), 3)
        st = os.stat(os.path.join(cgroups.cgroup2_mount(), rel))
        self.assertEqual(rows[0], {
            "pid": inside.pid, "container_id": cid, "origin": "unified", "cgroup_path": "/" + rel,
            "cgroup_id": st.st_ino,
            "target": {"__container_id__": cid, "__name__": "process_cpu", "namespace": "shop", "pod": "web-0",
                       "service_name": "ebpf/shop/app"}})
        self.assertEqual(rows[1]["target"],
                         {"__container_id__": cid2, "__name__": "process_cpu", "service_name": "sidecar"})
        self.assertEqual(rows[2]["container_id"], "")
        self.assertEqual(rows[2]["origin"], "none")
        self.assertIsNone(rows[2]["target"])

    def test_pid_target_wins_over_container_target(self):
        proc, cid, _ = self.in_container("crio-systemd")
        other, _, _ = self.in_container("crio-systemd", cid=None)
        targets = self.write_targets([
            {"__container_id__": cid, "which": "container"},
            {"__process_pid__": str(proc.pid), "__container_id__": cid, "which": "pid"},
        ])
        rows = [json.loads(line) for line in harness("match", "--targets", targets, proc.pid, other.pid).stdout.splitlines()]
        self.assertEqual(rows[0]["target"],
                         {"__name__": "process_cpu", "__process_pid__": str(proc.pid), "service_name": "unspecified",
                          "which": "pid"})
        self.assertIsNone(rows[1]["target"])

    def test_cache_of_one_entry_still_answers_right(self):
        procs = [self.in_container("docker-systemd") for _ in range(3)]
        targets = self.write_targets([{"__meta_docker_container_id": cid, "__meta_docker_container_name": f"/c{i}"}
                                      for i, (_, cid, _) in enumerate(procs)])
        pids = [p.pid for p, _, _ in procs] * 2
        rows = [json.loads(line) for line in
                harness("match", "--targets", targets, "--cache-size", 1, *pids).stdout.splitlines()]
        self.assertEqual([r["target"]["service_name"] for r in rows], ["/c0", "/c1", "/c2"] * 2)


class ProcessDiscovery(V2Base):
    def scan(self, *args):
        p = harness("process", *args)
        return json.loads(p.stdout), p.stderr

    def by_pid(self, targets, pid):
        found = [t for t in targets if t.get("__process_pid__") == str(pid)]
        self.assertEqual(len(found), 1, f"PID {pid} found {len(found)} times")
        return found[0]

    def test_labels_of_processes_inside_and_outside_a_container(self):
        inside, cid, rel = self.in_container("containerd-systemd")
        outside = cgroups.spawn(self, ("sleep", "61"))
        targets, _ = self.scan("--cgroup-path")
        t = self.by_pid(targets, inside.pid)
        sleep = os.path.realpath("/proc/%d/exe" % inside.pid)
        self.assertEqual(t["__meta_process_exe"], sleep)
        self.assertEqual(t["__meta_process_cwd"], os.getcwd())
        self.assertEqual(t["__meta_process_commandline"], "sleep 60")
        self.assertEqual(t["__meta_process_uid"], str(os.getuid()))
        self.assertEqual(t["__meta_process_username"], "root")
        self.assertEqual(t["__container_id__"], cid)
        self.assertIn(f"0::/{rel}", t["__meta_process_cgroup_path"].split("|"))
        u = self.by_pid(targets, outside.pid)
        self.assertNotIn("__container_id__", u)
        self.assertEqual(u["__meta_process_commandline"], "sleep 61")
        # kernel threads have no exe and are not targets
        self.assertFalse(any(t.get("__process_pid__") == "2" for t in targets))

    def test_join_with_kubernetes_targets(self):
        inside, cid, _ = self.in_container("containerd-systemd")
        join = os.path.join(np.tmpdir(self), "join.json")
        with open(join, "w") as f:
            json.dump([{"__meta_kubernetes_pod_container_id": f"containerd://{cid}", "pod": "web-0"},
                       {"__meta_kubernetes_pod_container_id": "containerd://" + "0" * 64, "pod": "elsewhere"}], f)
        targets, _ = self.scan("--join", join)
        t = self.by_pid(targets, inside.pid)
        self.assertEqual(t["pod"], "web-0")
        self.assertEqual(t["__container_id__"], cid)
        # every join target with an ID also passes through on its own (Alloy's join)
        self.assertEqual(sorted(x["pod"] for x in targets if "__process_pid__" not in x), ["elsewhere", "web-0"])

    def test_processes_vanishing_mid_scan(self):
        stop = threading.Event()

        def churn():
            while not stop.is_set():
                subprocess.run(["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do true & done; wait"])

        threads = [threading.Thread(target=churn) for _ in range(2)]
        for th in threads:
            th.start()
        try:
            for _ in range(15):
                targets, stats = self.scan("--cgroup-path")
                self.assertTrue(any(t["__process_pid__"] == str(os.getpid()) for t in targets))
                for t in targets:
                    self.assertTrue(t["__process_pid__"].isdigit())
        finally:
            stop.set()
            for th in threads:
                th.join()


if __name__ == "__main__":
    unittest.main()
