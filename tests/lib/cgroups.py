"""Real cgroups for tests: container-runtime-shaped cgroup directories (Kubernetes
systemd and cgroupfs slices, docker, CRI-O, conmon) created on this host's cgroup
mounts, processes moved into them, and everything removed afterwards.

Mounts are found in /proc/self/mountinfo, never assumed: on a unified host cgroup2
is /sys/fs/cgroup, on a hybrid host (such as the CI machine) /sys/fs/cgroup/unified.
Standard library only.
"""
import os
import secrets
import signal
import subprocess
import time


def _unescape(s):
    # mountinfo escapes space, tab, newline and backslash as \ooo
    out, i = [], 0
    while i < len(s):
        octal = s[i + 1:i + 4]
        if s[i] == "\\" and len(octal) == 3 and octal.isdigit():
            out.append(chr(int(octal, 8)))
            i += 4
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def _mounts():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            yield _unescape(fields[4]), fields[dash + 1], fields[dash + 3].split(",")


def cgroup2_mount():
    """The cgroup2 mount point, or None on a v1-only host."""
    for mnt, fstype, _ in _mounts():
        if fstype == "cgroup2":
            return mnt
    return None


def cgroup1_mount(controller):
    """The mount point of a cgroup v1 hierarchy with this controller, or None."""
    for mnt, fstype, opts in _mounts():
        if fstype == "cgroup" and controller in opts:
            return mnt
    return None


def new_container_id():
    return secrets.token_hex(32)


def new_pod_uid():
    h = secrets.token_hex(16)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def runtime_path(layout, pod_uid, cid, qos="burstable"):
    """The cgroup path (relative to the hierarchy root) a runtime gives a container."""
    u = pod_uid.replace("-", "_")
    systemd_pod = f"kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{u}.slice"
    return {
        "containerd-systemd": f"{systemd_pod}/cri-containerd-{cid}.scope",
        "crio-systemd": f"{systemd_pod}/crio-{cid}.scope",
        "crio-conmon": f"{systemd_pod}/crio-conmon-{cid}.scope",
        "containerd-cgroupfs": f"kubepods/{qos}/pod{pod_uid}/{cid}",
        "crio-cgroupfs": f"kubepods/{qos}/pod{pod_uid}/crio-{cid}",
        "docker-systemd": f"system.slice/docker-{cid}.scope",
        "docker-cgroupfs": f"docker/{cid}",
        "podman-child": f"machine.slice/libpod-{cid}.scope/container",
    }[layout]


def kind_pod_path(root, node_id, pod_uid, cid, qos="besteffort"):
    """A pod container's cgroup on a kind node (a docker container running systemd and a
    kubelet whose cgroup root is /kubelet), seen from the host, under `root`."""
    u = pod_uid.replace("-", "_")
    return (f"{root}/system.slice/docker-{node_id}.scope/kubelet.slice/kubelet-kubepods.slice/"
            f"kubelet-kubepods-{qos}.slice/kubelet-kubepods-{qos}-pod{u}.slice/cri-containerd-{cid}.scope")


class CgroupTree:
    """Directories created under one hierarchy; call cleanup() (or use addCleanup)."""

    def __init__(self, mount):
        self.mount = mount
        self.created = []

    def make(self, rel):
        path = self.mount
        for part in rel.strip("/").split("/"):
            path = os.path.join(path, part)
            if not os.path.isdir(path):
                os.mkdir(path)
                self.created.append(path)
        return path

    def move(self, pid, rel):
        with open(os.path.join(self.mount, rel.strip("/"), "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def cleanup(self):
        for path in reversed(self.created):
            procs = os.path.join(path, "cgroup.procs")
            # move stragglers (if any) back to the root so the directory can go
            try:
                with open(procs) as f:
                    pids = [p for p in f.read().split() if p]
            except OSError:
                pids = []
            for pid in pids:
                try:
                    with open(os.path.join(self.mount, "cgroup.procs"), "w") as f:
                        f.write(pid)
                except OSError:
                    pass
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
        self.created = []


def spawn(test, argv=("sleep", "60")):
    """A child process killed and reaped when the test ends."""
    p = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop():
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait()

    test.addCleanup(stop)
    return p
