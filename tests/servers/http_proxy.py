#!/usr/bin/env python3
"""A tiny HTTP proxy for the tests of proxy_url and proxy_connect_header, on loopback
only. Standard library only.

It speaks the two forms a client uses (RFC 9110 §9.3.6, RFC 9112 §3.2.2):
  CONNECT host:port HTTP/1.1       a tunnel (for https:// targets): "200 Connection
                                   established", then bytes both ways until one side closes
  GET http://host:port/path ...    forwarded (for http:// targets): the request goes on in
                                   origin form with Connection: close, the Proxy-* headers
                                   removed, and the answer comes back unchanged
Only GET and HEAD are forwarded (501 otherwise); only targets on 127.0.0.1, ::1 or
localhost are reached (403 otherwise), so a test can never leave the machine.
With --require NAME=VALUE (repeatable) a request without each of these headers gets
"407 Proxy Authentication Required", as a proxy that wants credentials answers.
Every request is appended to --log as one JSON line {method, target, headers}.

Usage: http_proxy.py --listen 127.0.0.1:PORT [--log FILE] [--require NAME=VALUE]...
Prints "ready" on stdout once listening.
"""
import argparse
import json
import select
import socket
import socketserver
import sys
import threading
import time
import urllib.parse

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
MAX_HEAD = 64 * 1024


class Handler(socketserver.StreamRequestHandler):
    def reply(self, status, reason):
        body = f"{status} {reason}\n".encode()
        self.wfile.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                         f"Connection: close\r\n\r\n".encode() + body)

    def read_head(self):
        """The request line and the header lines, or None when the client went away."""
        line = self.rfile.readline(MAX_HEAD)
        if not line:
            return None
        headers, size = [], len(line)
        while True:
            h = self.rfile.readline(MAX_HEAD)
            size += len(h)
            if not h or h in (b"\r\n", b"\n") or size > MAX_HEAD:
                break
            name, _, value = h.decode("latin-1").partition(":")
            headers.append((name.strip(), value.strip()))
        return line.decode("latin-1").split(), headers

    def handle(self):
        head = self.read_head()
        if not head or len(head[0]) != 3:
            return
        (method, target, _), headers = head
        with self.server.log_lock:
            if self.server.log_path:
                with open(self.server.log_path, "a") as f:
                    f.write(json.dumps({"method": method, "target": target,
                                        "headers": {k.lower(): v for k, v in headers}}) + "\n")
        have = {(k.lower(), v) for k, v in headers}
        if any((k.lower(), v) not in have for k, v in self.server.required):
            self.reply(407, "Proxy Authentication Required")
            return
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            self.tunnel(host.strip("[]"), port)
        elif method in ("GET", "HEAD") and target.startswith("http://"):
            self.forward(method, target, headers)
        else:
            self.reply(501, "Not Implemented")

    def upstream(self, host, port):
        if host not in LOOPBACK or not port.isdigit():
            self.reply(403, "Forbidden")
            return None
        try:
            return socket.create_connection((host, int(port)), timeout=10)
        except OSError:
            self.reply(502, "Bad Gateway")
            return None

    def tunnel(self, host, port):
        up = self.upstream(host, port)
        if not up:
            return
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        self.pipe(self.connection, up)

    def forward(self, method, target, headers):
        url = urllib.parse.urlsplit(target)
        up = self.upstream(url.hostname or "", str(url.port or 80))
        if not up:
            return
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        lines = [f"{method} {path} HTTP/1.1"]
        lines += [f"{k}: {v}" for k, v in headers if not k.lower().startswith("proxy-") and k.lower() != "connection"]
        lines.append("Connection: close")
        up.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        self.pipe(self.connection, up)

    def pipe(self, client, up):
        """Copies bytes both ways until either side closes."""
        socks = [client, up]
        try:
            while True:
                ready, _, _ = select.select(socks, [], [], 30)
                if not ready:
                    return
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    (up if s is client else client).sendall(data)
        except OSError:
            pass
        finally:
            up.close()


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--log", default="")
    ap.add_argument("--require", action="append", default=[])
    args = ap.parse_args()
    host, port = args.listen.rsplit(":", 1)
    if host not in LOOPBACK:
        sys.exit("http_proxy.py listens on loopback only")
    srv = Server((host, int(port)), Handler)
    srv.log_path = args.log
    srv.log_lock = threading.Lock()
    srv.required = [tuple(r.split("=", 1)) for r in args.require]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print("ready", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
