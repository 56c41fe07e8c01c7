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


class DevTools:
    """A headless Chromium driven over the DevTools protocol (through tests/lib/wsclient.py):
    navigate, evaluate JavaScript, wait for a condition. Use as a context manager."""

    def __init__(self, size=(1400, 1000)):
        self.size = size

    def __enter__(self):
        import json
        import re
        import select
        import time
        import urllib.request
        from wsclient import WebSocket
        self.profile = tempfile.mkdtemp(prefix="nodeprof-chromium-")
        self.proc = subprocess.Popen([binary(), *FLAGS, f"--user-data-dir={self.profile}",
                                      f"--window-size={self.size[0]},{self.size[1]}",
                                      "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                                      "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port, deadline, err = None, time.time() + 30, b""
        while port is None and time.time() < deadline:
            r, _, _ = select.select([self.proc.stderr], [], [], 0.5)
            if r:
                line = self.proc.stderr.readline()
                if not line:
                    break
                err += line
                m = re.search(rb"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
                if m:
                    port = int(m.group(1))
        if port is None:
            self.__exit__(None, None, None)
            raise AssertionError("chromium did not start its DevTools endpoint: " + err.decode(errors="replace")[-2000:])
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = [p for p in pages if p.get("type") == "page"][0]
        path = page["webSocketDebuggerUrl"].split(f"127.0.0.1:{port}", 1)[1]
        self.ws = WebSocket("127.0.0.1", port, path, timeout=30)
        self.next_id = 0
        return self

    def __exit__(self, *exc):
        if getattr(self, "ws", None):
            self.ws.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method, **params):
        import json
        self.next_id += 1
        my = self.next_id
        self.ws.send_text(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=30))
            if msg.get("id") == my:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"JavaScript error in {expr!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def navigate(self, url):
        self.call("Page.navigate", url=url)

    def wait(self, expr, timeout=15):
        import time
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                v = self.eval(expr)
            except AssertionError:
                v = None
            if v:
                return v
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {expr}")
