"""Headless Chromium (Debian's `chromium`, installed by make deps) for the UI tests: the
DOM after the page's scripts ran, and screenshots. Every run gets a fresh profile
directory and no network besides the page's own server."""
import os
import shutil
import subprocess
import tempfile

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--hide-scrollbars", "--mute-audio"]


def binary():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("chromium is not installed (make deps installs Debian's chromium)")


def _run(args, timeout):
    profile = tempfile.mkdtemp(prefix="nodeprof-chromium-")
    try:
        p = subprocess.run([binary(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                           timeout=timeout)
        return p
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def dump_dom(url, budget_ms=8000, size=(1400, 1000), timeout=90):
    """The serialized DOM once the page settled (virtual time budget)."""
    p = _run([f"--window-size={size[0]},{size[1]}", f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
             timeout)
    if p.returncode != 0:
        raise AssertionError(f"chromium --dump-dom exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
    return p.stdout.decode("utf-8", errors="replace")


def screenshot(url, path, budget_ms=8000, size=(1400, 1000), timeout=90):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.unlink(path)
    p = _run([f"--window-size={size[0]},{size[1]}", f"--virtual-time-budget={budget_ms}",
              f"--screenshot={path}", url], timeout)
    if p.returncode != 0 or not os.path.exists(path):
        raise AssertionError(f"chromium --screenshot exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
    return path
