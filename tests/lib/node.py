"""A simulated Kubernetes node for end-to-end tests, on one machine:

- the kube-apiserver test server (TLS with its own CA, a service-account bearer token)
  serving pods of this node and of another one;
- the service-account files and KUBERNETES_SERVICE_HOST/_PORT as a pod sees them, and
  HOSTNAME set to this node's name;
- the Pyroscope test server on port 4040 of a loopback address of its own (127.x.y.z), reachable
  as `pyroscope:4040`, so that two nodes (two test modules run side by side) never share it;
- real "containers": Kubernetes-shaped cgroups (cri-containerd scopes under kubepods
  slices, on the host's cgroup v2 mount) with real workloads in them.

nodeprof runs in a private mount namespace (unshare) where the service-account
directory and /etc/hosts are bind mounts of test files, so nothing on the host changes.
"""
import base64
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import cgroups
import k8s  # also puts tests/servers on sys.path
import np
import promtext

import apiserver  # noqa: E402  (tests/servers)
import pyroscope  # noqa: E402  (tests/servers)

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN = "sa-token-e2e"


class Node:
    def __init__(self, test, name="node-a", auth=None, busy_percent=100):
        """busy_percent: how busy each workload is (split's SPLIT_BUSY_PERCENT); modules that
        run beside the others (BACKGROUND) keep it low so as not to slow them."""
        self.test = test
        self.busy_percent = busy_percent
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="nodeprof-node-")
        test.addCleanup(shutil.rmtree, self.dir, True)
        self.pki = k8s.Pki(self.dir)
        self.api = apiserver.ApiServer(self.pki.server_crt, self.pki.server_key, tokens=[TOKEN]).start()
        test.addCleanup(self.api.stop)
        # The configurations say pyroscope:4040; the node's /etc/hosts says which address that is.
        self.pyro_host = "127.%d.%d.%d" % (os.getpid() >> 8 & 0xff, os.getpid() & 0xff, 2 + id(self) % 250)
        self.pyro = pyroscope.PyroscopeServer(host=self.pyro_host, port=4040, require_auth=auth).start()
        test.addCleanup(self.pyro.stop)
        self.sa = os.path.join(self.dir, "serviceaccount")
        os.makedirs(self.sa)
        for fname, content in (("token", TOKEN), ("namespace", "monitoring")):
            with open(os.path.join(self.sa, fname), "w") as f:
                f.write(content)
        shutil.copy(self.pki.ca, os.path.join(self.sa, "ca.crt"))
        self.hosts = os.path.join(self.dir, "hosts")
        with open(self.hosts, "w") as f:
            f.write(f"127.0.0.1 localhost\n{self.pyro_host} pyroscope\n::1 localhost\n")
        self.tree = cgroups.CgroupTree(cgroups.cgroup2_mount())
        test.addCleanup(self.tree.cleanup)
        self.workloads = {}
        self.split = np.build_workload("split", self.dir)
        self.agent = None

    # ---- pods and containers ----
    def pod(self, name, namespace="default", node=None, containers=("app",), running=(), phase="Running",
            labels=None, annotations=None, ip="10.1.0.1", cgroup=None, cgroup_uid=None):
        """Creates the pod on the apiserver; containers listed in `running` get a cgroup on
        this host with a busy workload in it. Returns {container: container id}.
        cgroup: a function (pod uid, container id) -> the container's cgroup path (default:
        containerd with the systemd driver at the root); cgroup_uid: the pod UID written in
        that path when it must differ from the apiserver's."""
        uid = cgroups.new_pod_uid()
        ids = {c: cgroups.new_container_id() for c in containers}
        for c in running:
            rel = (cgroup or (lambda u, cid: cgroups.runtime_path("containerd-systemd", u, cid)))(
                cgroup_uid or uid, ids[c])
            self.tree.make(rel)
            self.workloads[(namespace, name, c)] = self.run_in(rel)
        obj = k8s.pod(name, namespace=namespace, node=node or self.name, ip=ip,
                      containers=[(c, "img:1", ()) for c in containers], labels=labels, annotations=annotations,
                      phase=phase, statuses={c: "containerd://" + ids[c] for c in containers})
        obj["metadata"]["uid"] = uid
        self.api.put("pods", obj)
        return ids

    def run_in(self, rel):
        """A busy workload in cgroup `rel` (None: wherever the test runs)."""
        p = subprocess.Popen([self.split, "600"], env=dict(os.environ, SPLIT_BUSY_PERCENT=str(self.busy_percent)))
        self.test.addCleanup(lambda: (p.kill(), p.wait()))
        if rel:
            self.tree.move(p.pid, rel)
        return p

    def delete_pod(self, namespace, name):
        self.api.delete("pods", namespace, name)

    # ---- the agent ----
    def start_agent(self, config, env=None, binds=(), prefix=(), unshare=(), args=None):
        """Starts `nodeprof run --config CONFIG --http-listen 127.0.0.1:PORT` (self.http_port), or
        nodeprof ARGS, as a pod would see the node.
        binds: more (host path, mount point) pairs bind-mounted in the agent's mount namespace
        (missing mount points are made, and removed by the last test that uses them); prefix: a command that execs
        the agent (e.g. setpriv, to drop capabilities); unshare: more unshare(1) options
        (e.g. --cgroup, the cgroup namespace of an unprivileged container)."""
        binds = [(self.sa, SA_DIR), (self.hosts, "/etc/hosts"), *binds]
        for _, d in binds:
            _claim_mount_point(d)
            self.test.addCleanup(_release_mount_point, d)
        e = dict(os.environ, HOSTNAME=self.name, KUBERNETES_SERVICE_HOST="127.0.0.1",
                 KUBERNETES_SERVICE_PORT=str(self.api.port))
        for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
            e.pop(k, None)
        e.update(env or {})
        script = 'while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 1; shift 2; done; shift; exec "$@"'
        mounts = [x for pair in binds for x in pair]
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.http_port = sock.getsockname()[1]
        sock.close()
        self.log_path = os.path.join(self.dir, "agent.log")
        self.log = open(self.log_path, "w")
        if args is None:
            args = ["run", "--config", config, "--http-listen", f"127.0.0.1:{self.http_port}"]
        self.agent = subprocess.Popen(["unshare", "--mount", "--propagation", "private", *unshare, "--", "sh", "-c",
                                       script, "sh", *mounts, "--", *prefix, np.NODEPROF, *args],
                                      env=e, stdout=self.log, stderr=subprocess.STDOUT)
        self.test.addCleanup(self.stop_agent)
        return self.agent

    def stop_agent(self):
        if self.agent and self.agent.poll() is None:
            self.agent.send_signal(signal.SIGTERM)
            try:
                self.agent.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.agent.kill()
                self.agent.wait()

    def metrics(self):
        """The agent's /metrics, parsed."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=10) as r:
            return promtext.parse(r.read().decode())

    def agent_log(self):
        with open(self.log_path) as f:
            return f.read()

    # ---- what Pyroscope received ----
    def series(self):
        """[(receive time, labels dict, profile summary)] for every profile pushed."""
        out = []
        for push in self.pyro.pushes():
            for s in push["series"]:
                for prof in s["profiles"]:
                    out.append((push["time"], s["labels"], prof))
        return out

    def violations(self):
        """What the Pyroscope test server found wrong in the requests it received."""
        return [v for r in self.pyro.all_requests() for v in r["violations"]]

    def wait_for(self, pred, timeout, what):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.agent and self.agent.poll() is not None:
                raise AssertionError(f"nodeprof exited ({self.agent.returncode}):\n{self.agent_log()[-4000:]}")
            if pred(self.series()):
                return
            time.sleep(0.5)
        got = sorted({l.get("service_name", "?") for _, l, _ in self.series()})
        raise AssertionError(f"timed out waiting for {what}; services seen: {got}\nagent log:\n"
                             f"{self.agent_log()[-3000:]}")


# Mount points the agents' namespaces need that the host lacks (the service account directory)
# are made on the host, and shared: tests in other processes (modules that run beside each other,
# other clones) use the same path, and removing a directory that is a mount point in another
# namespace detaches that mount there. So they are counted, under a lock, across processes, and
# removed by the last user only (and only if a test made them).
_MOUNT_POINTS = "/run/nodeprof-test-mount-points.json"


def _mount_points_update(change):
    """Runs change(state) on the shared {path: {"users": n, "made": top or None}} under its lock."""
    with open(_MOUNT_POINTS + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(_MOUNT_POINTS) as f:
                state = json.load(f)
        except (OSError, ValueError):
            state = {}
        change(state)
        if not state:
            if os.path.exists(_MOUNT_POINTS):
                os.unlink(_MOUNT_POINTS)
            return
        with open(_MOUNT_POINTS + ".tmp", "w") as f:
            json.dump(state, f)
        os.replace(_MOUNT_POINTS + ".tmp", _MOUNT_POINTS)


def _claim_mount_point(d):
    def change(state):
        e = state.setdefault(d, {"users": 0, "made": None})
        if not os.path.exists(d):
            top = d
            while not os.path.isdir(os.path.dirname(top)):
                top = os.path.dirname(top)
            os.makedirs(d)
            e["made"] = top
        e["users"] += 1
    _mount_points_update(change)


def _release_mount_point(d):
    def change(state):
        e = state.get(d)
        if not e:
            return
        e["users"] -= 1
        if e["users"] <= 0:
            if e["made"]:
                _rmdirs(d, e["made"])
            del state[d]
    _mount_points_update(change)


def _rmdirs(path, stop):
    """Removes path and its parents up to stop (included) while they are empty."""
    while path.startswith(stop) and path != os.path.dirname(stop):
        try:
            os.rmdir(path)
        except OSError:
            return
        path = os.path.dirname(path)


def basic_auth(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def frames_total(profile, name):
    """Sum of the sample values of the stacks that contain function `name`."""
    return sum(st["values"][0] for st in profile["stacks"] if name in st["frames"])
