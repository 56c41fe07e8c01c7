"""Kubernetes-style cgroup directories for tests: made on the host's cgroup v2 mount
(found in /proc/self/mountinfo, never assumed), processes moved into them, and
everything removed afterwards."""
import os
import time
import uuid


def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    raise AssertionError("no cgroup2 mount on this host")


def random_container_id():
    return (uuid.uuid4().hex + uuid.uuid4().hex)[:64]


class PodCgroups:
    """kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice/cri-containerd-<id>.scope"""

    def __init__(self, test, qos="burstable"):
        self.root = cgroup2_mount()
        self.made = []
        self.qos = qos
        test.addCleanup(self.cleanup)

    def container(self, container_id, pod_uid=None):
        pod_uid = (pod_uid or str(uuid.uuid4())).replace("-", "_")
        rel = (f"kubepods.slice/kubepods-{self.qos}.slice/kubepods-{self.qos}-pod{pod_uid}.slice/"
               f"cri-containerd-{container_id}.scope")
        path = self.root
        for part in rel.split("/"):
            path = os.path.join(path, part)
            if not os.path.isdir(path):
                os.mkdir(path)
                self.made.append(path)
        return path

    @staticmethod
    def move(path, pid):
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def cleanup(self):
        # Processes must leave a cgroup before it can be removed: move any left to the root.
        for path in reversed(self.made):
            try:
                with open(os.path.join(path, "cgroup.procs")) as f:
                    pids = [p for p in f.read().split() if p]
                for pid in pids:
                    try:
                        self.move(self.root, pid)
                    except OSError:
                        pass
            except OSError:
                pass
        for path in reversed(self.made):
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
