"""pyroscope.ebpf's engine on real cgroups: a container target gets exactly its
container's samples, a PID target its process's, and everything else is not sampled."""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

import agent_push
import cgroups
import np
import pprof
import stacks as st
from pyroscope import PyroscopeServer  # noqa: E402  (pprof puts tests/servers on sys.path)

HARNESS = os.path.join(np.ROOT, "build", "harness", "ebpf_profile")


def profiles(outdir):
    """[(labels, folded)] for every profile the harness wrote."""
    out = []
    for gz in sorted(glob.glob(os.path.join(outdir, "*.pb.gz"))):
        with open(gz, "rb") as f:
            p = pprof.decode(f.read())
        with open(gz.replace(".pb.gz", ".labels.json")) as f:
            out.append((json.load(f), pprof.folded(p)))
    return out


def total(folded, name):
    return sum(v for k, v in folded.items() if name in k.split(";"))


class ProfileTargetsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nodeprof-targets-")
        cls.split = np.build_workload("split", cls.dir)
        cls.short = np.build_workload("short_lived", cls.dir)
        cls.syscalls = np.build_workload("syscalls", cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def start(self, *argv, cgroup=None):
        p = subprocess.Popen(list(map(str, argv)))
        self.addCleanup(lambda: (p.kill(), p.wait()))
        if cgroup:
            self.tree.move(p.pid, cgroup)
        return p

    def container_cgroup(self):
        """A containerd-under-systemd container cgroup on the v2 mount: (container id, relative path)."""
        self.tree = cgroups.CgroupTree(cgroups.cgroup2_mount())
        self.addCleanup(self.tree.cleanup)
        cid = cgroups.new_container_id()
        rel = cgroups.runtime_path("containerd-systemd", cgroups.new_pod_uid(), cid)
        self.tree.make(rel)
        return cid, rel

    def run_harness(self, targets, seconds, outdir, rate=99, interval="2s"):
        tfile = os.path.join(outdir, "targets.json")
        with open(tfile, "w") as f:
            json.dump(targets, f)
        r = subprocess.run([HARNESS, tfile, outdir, str(seconds), str(rate), interval], capture_output=True,
                           text=True, timeout=seconds + 60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_container_and_pid_targets(self):
        cid, scope = self.container_cgroup()
        self.start(self.split, 20, cgroup=scope)
        self.start(self.short, 20)                           # matches no target
        by_pid = self.start(self.syscalls, 20)               # a __process_pid__ target
        targets = [
            {"__meta_kubernetes_pod_container_id": f"containerd://{cid}", "__meta_kubernetes_namespace": "shop",
             "__meta_kubernetes_pod_container_name": "cart", "__meta_kubernetes_pod_name": "cart-0",
             "pod": "cart-0"},
            {"__process_pid__": str(by_pid.pid), "service_name": "by-pid"},
            {"__meta_kubernetes_pod_container_id": "containerd://" + "f" * 64, "pod": "not-running"},
        ]
        out = np.tmpdir(self)
        stats = self.run_harness(targets, 5, out)
        got = profiles(out)
        self.assertGreaterEqual(stats["written"], 2, stats)
        containers = [(l, f) for l, f in got if l.get("__container_id__") == cid]
        pids = [(l, f) for l, f in got if l.get("__process_pid__") == str(by_pid.pid)]
        self.assertTrue(containers and pids, [l for l, _ in got])
        for labels, _ in containers:
            self.assertEqual(labels["service_name"], "ebpf/shop/cart")
            self.assertEqual(labels["__name__"], "process_cpu")
            self.assertEqual(labels["pod"], "cart-0")
            self.assertFalse([k for k in labels if k.startswith("__meta")], labels)
        for labels, _ in pids:
            self.assertEqual(labels["service_name"], "by-pid")
        heavy = sum(total(f, "heavy") for _, f in containers)
        light = sum(total(f, "light") for _, f in containers)
        self.assertGreater(heavy + light, 100)
        self.assertLess(abs(100.0 * heavy / (heavy + light) - 75), 8)
        self.assertGreater(sum(total(f, "main") for _, f in pids), 50)
        for labels, f in got:
            self.assertEqual(total(f, "short_lived_work"), 0, f"the process outside every target was profiled: {labels}")
            self.assertFalse(labels.get("__container_id__") == "f" * 64)
        # Each profile holds only its own process's functions.
        for _, f in containers:
            self.assertEqual(total(f, "write_zeros"), 0)
        for _, f in pids:
            self.assertEqual(total(f, "heavy"), 0)
        self.assertEqual(stats["allowed_cgroups"], 1, stats)
        self.assertEqual(stats["allowed_pids"], 1, stats)
        self.assertEqual(stats["unattributed"], 0, stats)
        # What is pushed carries, as Alloy's profiles do, the workload's build ID on one
        # Mapping per file and each Location's ELF address (nm's address of its function).
        notes = subprocess.run(["readelf", "-n", self.split], check=True, capture_output=True, text=True).stdout
        build_id = notes.split("Build ID:")[1].split()[0]
        syms = {}
        for line in subprocess.run(["nm", self.split], check=True, capture_output=True, text=True).stdout.split("\n"):
            parts = line.split()
            if len(parts) == 3 and parts[1] in "Tt":
                syms[parts[2]] = int(parts[0], 16)
        checked = 0
        for gz in glob.glob(os.path.join(out, "*.pb.gz")):
            with open(gz, "rb") as f:
                p = pprof.decode(f.read())
            st = p["string_table"]
            mine = [m for m in p["mapping"].values() if st[m["filename"]] == self.split]
            self.assertLessEqual(len(mine), 1)
            for m in mine:
                self.assertEqual(st[m["build_id"]], build_id)
                for loc in p["location"].values():
                    if loc["mapping_id"] != m["id"] or not loc["line"]:
                        continue
                    name = st[p["function"][loc["line"][0]["function_id"]]["name"]]
                    self.assertTrue(m["memory_start"] <= loc["address"] < m["memory_limit"])
                    if name in ("spin", "heavy", "light"):
                        self.assertTrue(0 <= loc["address"] - syms[name] < 0x200, (name, hex(loc["address"])))
                        checked += 1
        self.assertGreater(checked, 0)

    def test_process_started_later_in_a_known_container(self):
        cid, scope = self.container_cgroup()
        procs = os.path.join(self.tree.mount, scope, "cgroup.procs")
        out = np.tmpdir(self)
        tfile = os.path.join(out, "targets.json")
        with open(tfile, "w") as f:
            json.dump([{"__container_id__": cid, "service_name": "late"}], f)
        h = subprocess.Popen([HARNESS, tfile, out, "4", "99", "1s"], stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (h.kill(), h.wait()))
        time.sleep(1.5)
        # A new process in the container's cgroup is sampled from its first tick: the
        # cgroup is already allowed, no rescan is needed. It exits before the next drain.
        w = subprocess.Popen(["/bin/sh", "-c", f"echo $$ > {procs} && exec {self.short} 0.8"])
        w.wait()
        h.communicate(timeout=60)
        got = profiles(out)
        self.assertGreater(sum(total(f, "short_lived_work") for l, f in got if l["service_name"] == "late"), 20,
                           [l for l, _ in got])


class PushedSamples(unittest.TestCase):
    """What Alloy's reporter does with a sample, through `nodeprof run` and the test Pyroscope, on
    a stripped binary with a build ID of its own: reporter_unsymbolized_stubs names its frames
    "$ FILE + 0xADDR" (without it they carry no Line and the server names them from the address,
    "FILE!0xADDR", its fallback), pid_label gives each sample the label pid=<PID>, and comm =
    "both" the thread's name as a label and as the root frame."""

    def pushed(self, args):
        """{stack: times pushed} and the set of each stack's labels, pushed for the workload."""
        d = np.tmpdir(self)
        exe = os.path.join(d, "split-stripped")
        # Stripped, and with a build ID of its own: a symbol table cached for another build of
        # split (same code, same ID) would name its frames.
        shutil.copy(np.build_workload("split", d, ("-O0", "-fno-omit-frame-pointer", "-s",
                                                   "-Wl,--build-id=0x" + os.urandom(20).hex())), exe)
        srv = PyroscopeServer().start()
        self.addCleanup(srv.stop)
        self.port, _ = agent_push.start(self, np.process_pipeline_config(".*split-stripped.*", "pushed", args,
                                                                          forward_url=srv.url), [exe, "60"])
        deadline, stacks, labels = time.time() + 40, {}, set()
        while time.time() < deadline and sum(stacks.values()) < 16:
            stacks, labels = {}, set()
            for push in srv.pushes():
                for series in push["series"]:
                    for prof in series["profiles"]:
                        for s in prof["stacks"]:
                            if any("split-stripped" in f for f in s["frames"]):
                                k = ";".join(s["frames"])
                                stacks[k] = stacks.get(k, 0) + 1
                                labels.add(tuple(sorted(s["labels"].items())))
            time.sleep(1)
        for r in srv.all_requests():
            self.assertEqual(r["violations"], [], r)
        self.assertGreaterEqual(sum(stacks.values()), 16, stacks)
        return stacks, labels

    def test_stubs_comm_and_pid_label(self):

        def named(stacks, pattern, skip=0):
            """Whether the stripped binary has frames, and every one in every stack is named by pattern."""
            mine = [f for k in stacks for f in k.split(";")[skip:] if "split-stripped" in f]
            return bool(mine) and all(re.fullmatch(pattern, f) for f in mine)
        on, labels = self.pushed({"reporter_unsymbolized_stubs": "true", "pid_label": "true", "comm": '"both"'})
        # comm = "both": the thread's name is the root frame and a label
        self.assertTrue(all(k.split(";")[0] == "split-stripped" for k in on), st.top(on))
        self.assertTrue(named(on, r"\$ split-stripped \+ 0x[0-9a-f]+", skip=1), st.top(on))
        self.assertEqual(len(labels), 1, labels)
        ((cname, comm), (pname, pid)) = labels.pop()
        self.assertEqual((cname, comm, pname), ("comm", "split-stripped", "pid"))
        with open(f"/proc/{pid}/comm") as f:
            self.assertEqual(f.read().strip(), "split-stripped")
        # The local UI splits series by the samples' labels as Pyroscope does: the process is
        # the one pid_label names, with its comm.
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/services", timeout=10) as r:
            services = {v["name"]: v["processes"] for v in json.load(r)["services"]}
        self.assertEqual([(p["id"], p["pid"]) for p in services.get("pushed", [])],
                         [(f"pid:{pid} comm=split-stripped", int(pid))], services)
        off, labels = self.pushed({})
        self.assertTrue(named(off, r"split-stripped!0x[0-9a-f]+"), st.top(off))
        self.assertTrue(all(k.split(";")[0] != "split-stripped" for k in off), st.top(off))
        self.assertEqual(labels, {()})


if __name__ == "__main__":
    unittest.main()
