"""A process in a container's root without a container engine: a private mount namespace
(`unshare --mount`) with a tmpfs over an empty directory, the program and the libraries it
needs copied in, and `chroot`. Nothing of that root is visible from the host, so whoever
reads the process's files has to go through /proc/PID/root."""
import os
import shlex
import subprocess


def library_deps(exe, env=None):
    """The absolute paths of the shared libraries (and the dynamic loader) exe needs, from ldd."""
    out = subprocess.run(["ldd", exe], check=True, capture_output=True, text=True, env=env).stdout
    deps = []
    for line in out.splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else (parts[0] if parts else "")
        if path.startswith("/"):
            deps.append(path)
    return deps


def chroot_script(root, files, argv, env=(), binds=()):
    """A shell script for `unshare --mount sh -c`: mounts a tmpfs on root, copies files
    ([(host path, path inside the root)]) into it, bind-mounts the directories binds
    ([(host directory, path inside the root)], read-only: an interpreter's library, too big
    to copy), then execs argv (inside the root) under chroot with the environment
    assignments env ([(NAME, value)]). The script's process becomes argv's process, so its
    PID is the PID to profile."""
    q = shlex.quote
    lines = ["set -e", f"mount -t tmpfs tmpfs {q(root)}"]
    for src, dst in files:
        inside = root + dst
        lines.append(f"mkdir -p {q(os.path.dirname(inside))}; cp {q(src)} {q(inside)}")
    for src, dst in binds:
        inside = root + dst
        lines.append(f"mkdir -p {q(inside)}; mount --bind -o ro {q(src)} {q(inside)}")
    lines += [f"export {name}={q(value)}" for name, value in env]
    lines.append("exec chroot " + q(root) + " " + " ".join(map(q, argv)))
    return "\n".join(lines) + "\n"
