#!/usr/bin/env python3
"""make docker-check: builds the image the Dockerfile describes without a Docker engine, and
starts the result.

Each stage's FROM debian:12 / debian:12-slim becomes a fresh Debian 12 root made by
debootstrap (minbase, what the official images are made of) from the mirror apt is
configured with here, with the official images' apt sources. The Dockerfile's
instructions are then applied in order, read from the Dockerfile itself: ARG and ENV
(with ${VAR} substitution), WORKDIR, COPY (the build context minus .dockerignore, or
--from another stage), RUN (through /bin/sh -c in a chroot with /proc, /sys and /dev
mounted in a private mount namespace, with the ARG and ENV variables), LABEL, EXPOSE,
USER, ENTRYPOINT and CMD. Any other instruction is an error.

Then the final root is checked: no library of the entrypoint is missing (ldd),
`ENTRYPOINT --version` and `ENTRYPOINT check CONFIG` on the chart's default configuration
run as an unprivileged user, and `ENTRYPOINT run` (the embedded default, sampling this
host) answers /-/ready and /-/healthy, as the DaemonSet's probes ask.

Usage: docker_check.py [--workdir DIR] [--keep]     (default DIR: build/docker-check)
The debootstrap downloads are cached in DIR/cache, so a second run takes less time."""
import argparse
import fnmatch
import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGES = {"debian:12": "bookworm", "debian:12-slim": "bookworm"}
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
UNPRIVILEGED = "65534:65534"


class DockerfileError(Exception):
    pass


def say(msg):
    print(f"docker-check: {msg}", flush=True)


# ---- the Dockerfile ----

def instructions(text):
    """[(line number, INSTRUCTION, arguments)] with line continuations joined and
    comments (including parser directives) dropped."""
    out, cur, start = [], "", 0
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not cur and (not stripped or stripped.startswith("#")):
            continue
        if cur and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction are dropped, as Docker does
        if not cur:
            start = n
        if stripped.endswith("\\"):
            cur += stripped[:-1] + " "
            continue
        cur += stripped
        word, _, rest = cur.partition(" ")
        out.append((start, word.upper(), rest.strip()))
        cur = ""
    if cur:
        raise DockerfileError("the Dockerfile ends inside a continued line")
    return out


VAR = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")


def substitute(s, env):
    """Docker's ${VAR}, $VAR and ${VAR:-default} substitution."""
    def repl(m):
        name = m.group(1) or m.group(3)
        if m.group(2) is not None:
            return env.get(name) or m.group(2)
        return env.get(name, "")
    return VAR.sub(repl, s)


def words(s, env):
    """Shell-like splitting of an instruction's arguments, then substitution."""
    return [substitute(w, env) for w in shlex.split(s)]


def assignments(rest, env):
    """KEY=VALUE pairs (ARG, ENV, LABEL); ENV's legacy `KEY VALUE` form too."""
    parts = shlex.split(rest)
    if parts and "=" not in parts[0]:
        if len(parts) == 1:
            return [(parts[0], None)]
        return [(parts[0], substitute(rest.split(None, 1)[1], env))]
    out = []
    for p in parts:
        k, _, v = p.partition("=")
        out.append((k, substitute(v, env)))
    return out


def exec_form(rest, what):
    try:
        value = json.loads(rest)
    except json.JSONDecodeError:
        raise DockerfileError(f"{what}: only the JSON (exec) form is supported: {rest}")
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise DockerfileError(f"{what}: not a JSON list of strings: {rest}")
    return value


# ---- roots ----

def apt_mirrors():
    """{suite: URI} of the Debian archive as apt is configured here (deb822 and one-line)."""
    mirrors = {}
    files = glob.glob("/etc/apt/sources.list") + sorted(glob.glob("/etc/apt/sources.list.d/*.list")) + \
        sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))
    for path in files:
        with open(path) as f:
            text = f.read()
        if path.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                fields = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line:
                        continue
                    k, _, v = line.partition(":")
                    fields[k.strip().lower()] = v.split()
                if "deb" in fields.get("types", []) and "main" in fields.get("components", []) \
                        and fields.get("enabled", ["yes"])[0] != "no":
                    for suite in fields.get("suites", []):
                        mirrors.setdefault(suite, fields["uris"][0])
        else:
            for line in text.splitlines():
                m = re.match(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)$", line.strip())
                if m and "main" in m.group(3).split():
                    mirrors.setdefault(m.group(2), m.group(1))
    return mirrors


def apt_settings():
    """apt settings of this machine a root needs to use the same mirror (a snapshot mirror's
    Release files may be past their Valid-Until)."""
    p = subprocess.run(["apt-config", "dump"], capture_output=True, text=True, check=True)
    keep = [line for line in p.stdout.splitlines()
            if re.match(r'^Acquire::(Check-Valid-Until|Check-Date|https?::Proxy) ', line)]
    return "\n".join(keep) + "\n" if keep else ""


def run(cmd, env=None, log=None, check=True):
    """Runs a command in its own process group (killed whole if we are interrupted),
    streaming its output with a prefix when log; fails with its last lines."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         errors="replace", start_new_session=True)
    tail = []
    try:
        for line in p.stdout:
            tail = (tail + [line.rstrip()])[-40:]
            if log:
                print(f"    {line.rstrip()}", flush=True)
        p.wait()
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])}... exited {p.returncode}:\n" + "\n".join(tail))
    return p.returncode, "\n".join(tail)


def make_root(image, path, cache, mirrors):
    suite = IMAGES.get(image)
    if not suite:
        raise DockerfileError(f"FROM {image}: docker-check makes roots for {', '.join(IMAGES)} only")
    if suite not in mirrors:
        raise RuntimeError(f"apt has no source for {suite} main here")
    os.makedirs(cache, exist_ok=True)
    tarball = os.path.join(cache, f"{suite}-minbase.tgz")
    if not os.path.exists(tarball):
        say(f"downloading Debian {suite} (minbase) from {mirrors[suite]} (once; cached in {tarball})")
        tmp = path + ".download"
        shutil.rmtree(tmp, ignore_errors=True)
        run(["debootstrap", "--variant=minbase", f"--make-tarball={tarball}.tmp", suite, tmp, mirrors[suite]])
        shutil.rmtree(tmp, ignore_errors=True)
        os.rename(tarball + ".tmp", tarball)
    say(f"FROM {image}: debootstrap {suite} into {path}")
    shutil.rmtree(path, ignore_errors=True)
    run(["debootstrap", "--variant=minbase", f"--unpack-tarball={tarball}", suite, path, mirrors[suite]])
    # The official images' apt sources, on this machine's mirrors.
    sources = []
    for s in (suite, f"{suite}-updates", f"{suite}-security"):
        if s in mirrors:
            sources.append(f"Types: deb\nURIs: {mirrors[s]}\nSuites: {s}\nComponents: main\n"
                           "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    with open(os.path.join(path, "etc/apt/sources.list.d/debian.sources"), "w") as f:
        f.write("\n".join(sources))
    if os.path.exists(os.path.join(path, "etc/apt/sources.list")):
        os.remove(os.path.join(path, "etc/apt/sources.list"))
    settings = apt_settings()
    if settings:
        with open(os.path.join(path, "etc/apt/apt.conf.d/99docker-check-mirror"), "w") as f:
            f.write(settings)
    # What the official images add to a minbase root (debuerreotype): apt keeps no .deb
    # files; -slim also leaves out documentation, man pages and translations.
    with open(os.path.join(path, "etc/apt/apt.conf.d/docker-clean"), "w") as f:
        f.write('DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };\n'
                'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };\n'
                'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";\n')
    for pattern in ("var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*"):
        for name in glob.glob(os.path.join(path, pattern)):
            if os.path.isfile(name):
                os.remove(name)
    if image.endswith("-slim"):
        for d in ("usr/share/man", "usr/share/groff", "usr/share/info", "usr/share/lintian", "usr/share/linda",
                  "usr/share/locale"):
            for name in glob.glob(os.path.join(path, d, "*")):
                shutil.rmtree(name) if os.path.isdir(name) and not os.path.islink(name) else os.remove(name)
        for doc in glob.glob(os.path.join(path, "usr/share/doc/*")):
            if os.path.islink(doc) or not os.path.isdir(doc):
                continue
            for name in os.listdir(doc):
                full = os.path.join(doc, name)
                if name != "copyright":
                    shutil.rmtree(full) if os.path.isdir(full) and not os.path.islink(full) else os.remove(full)
        os.makedirs(os.path.join(path, "etc/dpkg/dpkg.cfg.d"), exist_ok=True)
        with open(os.path.join(path, "etc/dpkg/dpkg.cfg.d/docker"), "w") as f:
            f.write("path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\n"
                    "path-exclude /usr/share/man/*\npath-exclude /usr/share/groff/*\npath-exclude /usr/share/info/*\n"
                    "path-exclude /usr/share/lintian/*\npath-exclude /usr/share/linda/*\n"
                    "path-exclude /usr/share/locale/*\n")
    # What the engine provides to every container.
    for name in ("resolv.conf", "hosts"):
        shutil.copy(os.path.join("/etc", name), os.path.join(path, "etc", name))


def chroot_cmd(root, argv, workdir="/", user=None):
    """argv run in root under a private mount namespace with /proc, /sys and /dev mounted
    (they vanish with the namespace: nothing is left mounted on the host)."""
    script = ('R="$1"; shift; mount -t proc proc "$R/proc" && mount --rbind /sys "$R/sys" && '
              'mount --make-rslave "$R/sys" && mount --rbind /dev "$R/dev" && mount --make-rslave "$R/dev" && '
              'exec "$@"')
    userspec = [f"--userspec={user}"] if user else []
    inner = ["/bin/sh", "-c", 'cd "$0" && exec "$@"', workdir, *argv]
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", root,
            "chroot", *userspec, root, *inner]


def ignored(rel, patterns):
    """.dockerignore matching: a pattern excludes the path it matches and everything under
    it; a leading **/ matches any number of directories, none included."""
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        for p in patterns:
            if fnmatch.fnmatch(prefix, p) or (p.startswith("**/") and fnmatch.fnmatch(prefix, p[3:])):
                return True
    return False


def dockerignore():
    path = os.path.join(ROOT, ".dockerignore")
    patterns = []
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("!"):
                raise DockerfileError(".dockerignore: exceptions (!) are not supported by docker-check")
            patterns.append(line.strip("/"))
    return patterns


def copy_into(src, dst):
    """cp -a src dst (src a file or directory's contents when dst is a directory)."""
    if os.path.isdir(src) and not os.path.islink(src):
        os.makedirs(dst, exist_ok=True)
        for name in os.listdir(src):
            copy_into(os.path.join(src, name), os.path.join(dst, name))
    elif os.path.islink(src):
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(os.readlink(src), dst)
    else:
        shutil.copy2(src, dst)


def copy_context(root, srcs, dest, patterns):
    copied = 0
    for src in srcs:
        base = os.path.normpath(os.path.join(ROOT, src))
        if not (base == ROOT or base.startswith(ROOT + os.sep)):
            raise DockerfileError(f"COPY {src}: outside the build context")
        for dirpath, dirnames, filenames in os.walk(base):
            rel_dir = os.path.relpath(dirpath, ROOT)
            dirnames[:] = [d for d in dirnames if not ignored(os.path.normpath(os.path.join(rel_dir, d)), patterns)]
            for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                rel = os.path.normpath(os.path.join(rel_dir, name))
                if ignored(rel, patterns):
                    continue
                target = os.path.join(dest, os.path.relpath(os.path.join(dirpath, name), base))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                copy_into(os.path.join(dirpath, name), target)
                copied += 1
    return copied


# ---- the build ----

class Stage:
    def __init__(self, name, image, root):
        self.name, self.image, self.root = name, image, root
        self.env = {}          # ENV
        self.args = {}         # ARG values in scope
        self.workdir = "/"
        self.user = None
        self.entrypoint = self.cmd = None
        self.labels = {}
        self.exposed = []

    def path(self, p):
        p = p if p.startswith("/") else os.path.join(self.workdir, p)
        return os.path.join(self.root, p.lstrip("/"))

    def run_env(self):
        env = {"PATH": DEFAULT_PATH, "HOME": "/root", "HOSTNAME": "docker-check"}
        env.update(self.args)
        env.update(self.env)
        return env


def build(dockerfile, workdir, cache):
    steps = instructions(open(dockerfile).read())
    mirrors = apt_mirrors()
    patterns = dockerignore()
    global_args = {}
    stages = []
    st = None
    for i, (line, ins, rest) in enumerate(steps):
        where = f"Dockerfile:{line} {ins}"
        if ins == "FROM":
            parts = rest.split()
            image = substitute(parts[0], global_args)
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else str(len(stages))
            if len(parts) not in (1, 3):
                raise DockerfileError(f"{where}: FROM IMAGE [AS NAME] expected")
            st = Stage(name, image, os.path.join(workdir, f"stage-{len(stages)}-{name}"))
            stages.append(st)
            make_root(image, st.root, cache, mirrors)
            continue
        if ins == "ARG":
            for k, v in assignments(rest, (st.args if st else global_args)):
                if st is None:
                    global_args[k] = v or ""
                else:
                    st.args[k] = v if v is not None else global_args.get(k, "")
            continue
        if st is None:
            raise DockerfileError(f"{where}: only ARG may come before FROM")
        scope = dict(st.args, **st.env)
        say(f"[{st.name}] {ins} {rest[:110]}{'...' if len(rest) > 110 else ''}")
        if ins == "ENV":
            for k, v in assignments(rest, scope):
                st.env[k] = v or ""
        elif ins == "LABEL":
            st.labels.update(dict(assignments(rest, scope)))
        elif ins == "WORKDIR":
            st.workdir = os.path.join(st.workdir, substitute(rest, scope))
            os.makedirs(st.path(st.workdir), exist_ok=True)
        elif ins == "USER":
            st.user = substitute(rest, scope)
        elif ins == "EXPOSE":
            st.exposed += words(rest, scope)
        elif ins in ("ENTRYPOINT", "CMD"):
            setattr(st, ins.lower(), exec_form(rest, where))
        elif ins == "COPY":
            args = words(rest, scope)
            src_stage = None
            while args and args[0].startswith("--"):
                flag = args.pop(0)
                if flag.startswith("--from="):
                    ref = flag[7:]
                    src_stage = next((s for s in stages if s.name == ref), None)
                    if not src_stage:
                        raise DockerfileError(f"{where}: no stage {ref}")
                else:
                    raise DockerfileError(f"{where}: {flag} is not supported by docker-check")
            if len(args) < 2:
                raise DockerfileError(f"{where}: COPY SRC... DEST expected")
            *srcs, dest = args
            dest_dir = dest.endswith("/") or dest in (".", "./") or len(srcs) > 1
            target = st.path(dest)
            if src_stage:
                for src in srcs:
                    s = src_stage.path(src)
                    if not os.path.lexists(s):
                        raise DockerfileError(f"{where}: {src} does not exist in stage {src_stage.name}")
                    t = os.path.join(target, os.path.basename(src)) if dest_dir and not os.path.isdir(s) else target
                    os.makedirs(os.path.dirname(t.rstrip("/")), exist_ok=True)
                    copy_into(s, t)
            else:
                n = copy_context(st.root, srcs, target, patterns)
                say(f"[{st.name}]   {n} files of the build context copied")
        elif ins == "RUN":
            if rest.startswith("["):
                argv = exec_form(rest, where)
            else:
                argv = ["/bin/sh", "-c", rest]
            started = time.time()
            rc, tail = run(chroot_cmd(st.root, argv, st.workdir, st.user), env=st.run_env(), log=True,
                           check=False)
            if rc != 0:
                raise RuntimeError(f"{where} failed (exit {rc})")
            say(f"[{st.name}]   done in {time.time() - started:.0f}s")
        else:
            raise DockerfileError(f"{where}: instruction not supported by docker-check")
    if not stages:
        raise DockerfileError("no FROM in the Dockerfile")
    return stages


# ---- the result ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(port, path):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def check_image(final, workdir):
    entry = final.entrypoint
    if not entry:
        raise RuntimeError("the final stage has no ENTRYPOINT")
    binary = entry[0]
    say(f"image: ENTRYPOINT {entry}, CMD {final.cmd}, labels {sorted(final.labels)}")
    env = final.run_env()
    rc, out = run(chroot_cmd(final.root, ["ldd", binary]), env=env, check=False)
    if rc != 0 or "not found" in out:
        raise RuntimeError(f"ldd {binary} in the runtime root:\n{out}")
    say("no library is missing (ldd)")
    rc, out = run(chroot_cmd(final.root, entry + ["--version"], user=UNPRIVILEGED), env=env, check=False)
    if rc != 0:
        raise RuntimeError(f"{binary} --version as {UNPRIVILEGED} exited {rc}:\n{out}")
    say(f"{binary} --version as {UNPRIVILEGED}: {out.strip()}")
    # The chart's default configuration, where the DaemonSet mounts it.
    render = os.path.join(ROOT, "build", "chart", "render")
    p = subprocess.run([render, "--format", "json", os.path.join(ROOT, "charts", "nodeprof")], capture_output=True,
                       text=True, check=True)
    manifests = json.loads(p.stdout)["manifests"]
    config = next(m["object"]["data"]["config.alloy"] for m in manifests if m["object"]["kind"] == "ConfigMap")
    ds = next(m["object"] for m in manifests if m["object"]["kind"] == "DaemonSet")
    args = ds["spec"]["template"]["spec"]["containers"][0]["args"]
    cfg_path = args[args.index("--config") + 1]
    os.makedirs(final.path(os.path.dirname(cfg_path)), exist_ok=True)
    with open(final.path(cfg_path), "w") as f:
        f.write(config)
    rc, out = run(chroot_cmd(final.root, entry + ["check", cfg_path], user=UNPRIVILEGED), env=env, check=False)
    if rc != 0:
        raise RuntimeError(f"{binary} check {cfg_path} (the chart's default configuration) exited {rc}:\n{out}")
    say(f"check of the chart's default configuration as {UNPRIVILEGED}: {out.strip().splitlines()[-1]}")
    # The agent itself, from the root, on its embedded default (this host's processes).
    port = free_port()
    log_path = os.path.join(workdir, "agent.log")
    with open(log_path, "w") as log:
        agent = subprocess.Popen(chroot_cmd(final.root, entry + ["run", "--http-listen", f"127.0.0.1:{port}"]),
                                 env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, ready = time.time() + 30, None
        while time.time() < deadline and agent.poll() is None:
            ready = http_status(port, "/-/ready")
            if ready == 200:
                break
            time.sleep(0.3)
        healthy = http_status(port, "/-/healthy")
        if ready != 200 or healthy != 200:
            raise RuntimeError(f"the agent in the runtime root: /-/ready {ready}, /-/healthy {healthy}:\n"
                               + open(log_path).read()[-3000:])
        say(f"{binary} run from the runtime root: /-/ready {ready}, /-/healthy {healthy}")
    finally:
        if agent.poll() is None:
            os.killpg(agent.pid, signal.SIGTERM)
            try:
                agent.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(agent.pid, signal.SIGKILL)
                agent.wait()
    def mb(path):
        return int(subprocess.run(["du", "-sm", path], capture_output=True, text=True).stdout.split()[0])
    base = os.path.join(workdir, "base-" + final.name)
    make_root(final.image, base, os.path.join(workdir, "cache"), apt_mirrors())
    say(f"runtime root: {mb(final.root)} MB, of which {mb(base)} MB are the bare {final.image} root")
    shutil.rmtree(base, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "docker-check"))
    ap.add_argument("--keep", action="store_true", help="leave the stage roots in WORKDIR")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("docker-check: needs root (debootstrap, chroot, mounts)")

    def interrupted(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    started = time.time()
    os.makedirs(a.workdir, exist_ok=True)
    stages = []
    try:
        stages = build(os.path.join(ROOT, "Dockerfile"), a.workdir, os.path.join(a.workdir, "cache"))
        check_image(stages[-1], a.workdir)
    except (DockerfileError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"docker-check: FAILED: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        if not a.keep:
            for st in stages:
                shutil.rmtree(st.root, ignore_errors=True)
    say(f"OK in {time.time() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
