"""Runs build/harness/http_ui (the HTTP server + local store + web UI harness) for the
integration tests, and talks HTTP to it with http.client."""
import http.client
import os
import select
import signal
import subprocess
import time

from np import ROOT

HARNESS = os.path.join(ROOT, "build", "harness", "http_ui")


class Harness:
    def __init__(self, test, *args, listen="127.0.0.1:0"):
        self.args = [HARNESS, "--listen", listen, *map(str, args)]
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        test.addCleanup(self._kill)
        self.host, self.port = self._wait_listening(15)
        self.final = None

    def _wait_listening(self, timeout):
        deadline = time.time() + timeout
        line = ""
        while time.time() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                line = self.proc.stdout.readline()
                if line.startswith("listening http://"):
                    hostport = line.strip()[len("listening http://"):].rstrip("/")
                    host, _, port = hostport.rpartition(":")
                    return host.strip("[]"), int(port)
                if not line:
                    break
            if self.proc.poll() is not None:
                break
        err = self.proc.stderr.read() if self.proc.poll() is not None else ""
        raise AssertionError(f"http_ui did not start: {line!r} {err}")

    def _kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f:
                f.close()

    def request(self, method, path, body=None, headers=None, timeout=10):
        """(status, {lower-case header: value}, body bytes)."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            c.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def url(self, path="/"):
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Signals the harness; returns (exit code, seconds it took, stdout after the listening line)."""
        start = time.time()
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=timeout)
        self.stderr = err
        return self.proc.returncode, time.time() - start, out
