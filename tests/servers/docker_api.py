#!/usr/bin/env python3
"""A Docker Engine API test server (the part discovery.docker uses), on a unix socket
and optionally TCP. Standard library only.

Endpoints, as the Engine serves them (https://docs.docker.com/engine/api/v1.43/):
  GET|HEAD /_ping                      "OK" with Api-Version, Ostype, Server headers
  GET /[vX.Y/]containers/json          ?all=1|true, ?filters={"label":{"k=v":true},...}
  GET /[vX.Y/]networks                 the network list
Version rules: a path version newer than the server's Api-Version is refused with 400
"client version X is too new...", older than min_api_version with 400 "...too old...".
Unknown filter names are refused with 400 "invalid filter 'x'", as the Engine does;
filters the Engine knows but this server does not implement are refused with 400 too,
saying so, rather than ignored. Errors are JSON {"message": "..."}.

State comes from a JSON file re-read on every request, so a test changes the daemon by
rewriting the file:
  {"api_version": "1.41", "min_api_version": "1.12",
   "containers": [...Engine container objects, with "State"...],
   "networks": [...Engine network objects...],
   "bearer_token": "s3cret"          (optional: require Authorization: Bearer s3cret)
   "authorization": "Custom s3cret"  (optional: require exactly this Authorization value)
   "required_headers": {"X-A": "1"}  (optional: refuse with 400 a request without every one
                                      of these headers, as a gateway in front of the Engine
                                      would; a header listed twice must carry each value)
   "faults": {"<ping|containers|networks>": {"status": 500, "message": "boom"}
                                        or {"garbage": true} (invalid JSON body)
                                        or {"delay": 3.0} (seconds before answering)
                                        or {"huge": 1000000} (a body of this many bytes)
                                        or {"no_version_header": true} (ping only)}}
Every request is appended to --log as one JSON line {method, path, query, headers,
listener} (listener: "unix", "tcp" or "https").

Usage: docker_api.py --socket PATH --state FILE [--tcp HOST:PORT] [--log FILE]
                     [--https HOST:PORT --cert FILE --key FILE [--client-ca FILE]]
--https serves the same API over TLS (with --client-ca, a client certificate signed by
that CA is required, as dockerd --tlsverify does). Prints "ready" on stdout once listening.
"""
import argparse
import http.server
import json
import os
import re
import socket
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse

KNOWN_FILTERS = {"ancestor", "before", "expose", "exited", "health", "id", "isolation", "is-task", "label",
                 "name", "network", "publish", "since", "status", "volume"}
IMPLEMENTED_FILTERS = {"id", "label", "name", "network", "status"}


def version_tuple(v):
    major, minor = v.split(".", 1)
    return int(major), int(minor)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "Docker/24.0.7"
    sys_version = "(linux)"

    def address_string(self):
        return "unix"

    def log_message(self, fmt, *args):
        pass

    # ---- helpers ----
    def state(self):
        with open(self.server.state_path) as f:
            return json.load(f)

    def send_body(self, status, body, st, content_type="application/json", version_header=True):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        if version_header:
            self.send_header("Api-Version", st.get("api_version", "1.43"))
        self.send_header("Docker-Experimental", "false")
        self.send_header("Ostype", "linux")
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_json(self, status, obj, st):
        self.send_body(status, json.dumps(obj) + "\n", st)

    def error(self, status, message, st):
        self.send_json(status, {"message": message}, st)

    def apply_fault(self, name, st):
        """Returns True when the fault answered the request."""
        fault = st.get("faults", {}).get(name)
        if not fault:
            return False
        if "delay" in fault:
            time.sleep(fault["delay"])
            return False
        if "status" in fault:
            self.error(fault["status"], fault.get("message", "injected failure"), st)
            return True
        if fault.get("garbage"):
            self.send_body(200, '[{"Id": "abc", "Names": ["/x"', st)
            return True
        if "huge" in fault:
            self.send_body(200, "[" + " " * int(fault["huge"]) + "]", st)
            return True
        return False

    # ---- routing ----
    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        with self.server.log_lock:
            if self.server.log_path:
                with open(self.server.log_path, "a") as f:
                    f.write(json.dumps({"method": self.command, "path": url.path, "query": query,
                                        "headers": {k.lower(): v for k, v in self.headers.items()},
                                        "listener": self.server.listener}) + "\n")
        try:
            st = self.state()
        except (OSError, ValueError) as e:
            self.send_body(500, json.dumps({"message": f"test server state: {e}"}), {})
            return
        token = st.get("bearer_token")
        if token and self.headers.get("Authorization") != f"Bearer {token}":
            self.error(401, "unauthorized", st)
            return
        authorization = st.get("authorization")
        if authorization and self.headers.get("Authorization") != authorization:
            self.error(401, "unauthorized", st)
            return
        for name, want in st.get("required_headers", {}).items():
            have = self.headers.get_all(name) or []
            if sorted(have) != sorted(want if isinstance(want, list) else [want]):
                self.error(400, f"missing or wrong header {name}", st)
                return
        path = url.path
        if path == "/_ping":
            if self.apply_fault("ping", st):
                return
            no_version = st.get("faults", {}).get("ping", {}).get("no_version_header", False)
            self.send_body(200, "OK", st, content_type="text/plain; charset=utf-8", version_header=not no_version)
            return
        m = re.match(r"^/v([0-9]+\.[0-9]+)(/.*)$", path)
        if m:
            version, path = m.group(1), m.group(2)
            if version_tuple(version) > version_tuple(st.get("api_version", "1.43")):
                self.error(400, f"client version {version} is too new. Maximum supported API version is "
                                f"{st.get('api_version', '1.43')}", st)
                return
            if version_tuple(version) < version_tuple(st.get("min_api_version", "1.12")):
                self.error(400, f"client version {version} is too old. Minimum supported API version is "
                                f"{st.get('min_api_version', '1.12')}, please upgrade your client to a newer version",
                           st)
                return
        if path == "/containers/json":
            if self.apply_fault("containers", st):
                return
            self.list_containers(query, st)
        elif path == "/networks":
            if self.apply_fault("networks", st):
                return
            self.send_json(200, st.get("networks", []), st)
        else:
            self.error(404, "page not found", st)

    def list_containers(self, query, st):
        show_all = query.get("all", ["0"])[-1] in ("1", "true", "True")
        filters = {}
        if "filters" in query:
            try:
                raw = json.loads(query["filters"][-1])
            except ValueError as e:
                self.error(400, f"invalid filter: {e}", st)
                return
            for name, values in raw.items():
                # {"k": {"v": true}} (current) or {"k": ["v"]} (legacy) forms
                filters[name] = list(values.keys()) if isinstance(values, dict) else list(values)
        for name in filters:
            if name not in KNOWN_FILTERS:
                self.error(400, f"invalid filter '{name}'", st)
                return
            if name not in IMPLEMENTED_FILTERS:
                self.error(400, f"test server: filter '{name}' is not implemented", st)
                return
        out = []
        for c in st.get("containers", []):
            state = c.get("State", "running")
            if "status" in filters:
                if state not in filters["status"]:
                    continue
            elif not show_all and state != "running":
                continue
            if "id" in filters and not any(re.search(v, c.get("Id", "")) or v == c.get("Id") for v in filters["id"]):
                continue
            names = c.get("Names") or []
            if "name" in filters and not any(re.search(v, n) for v in filters["name"] for n in names):
                continue
            labels = c.get("Labels") or {}
            ok = True
            for kv in filters.get("label", []):
                k, sep, v = kv.partition("=")
                if k not in labels or (sep and labels[k] != v):
                    ok = False
            if not ok:
                continue
            if "network" in filters:
                nets = (c.get("NetworkSettings") or {}).get("Networks") or {}
                ids = {n.get("NetworkID") for n in nets.values() if n}
                if not any(v in nets or v in ids for v in filters["network"]):
                    continue
            out.append(c)
        self.send_json(200, out, st)


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class TCPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class TLSServer(TCPServer):
    """TLS per connection, in the handler's thread: a client that never finishes its
    handshake blocks only itself."""

    def finish_request(self, request, client_address):
        try:
            request = self.ssl_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            request.close()
            return
        super().finish_request(request, client_address)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--tcp", default="")
    ap.add_argument("--log", default="")
    ap.add_argument("--https", default="")
    ap.add_argument("--cert", default="")
    ap.add_argument("--key", default="")
    ap.add_argument("--client-ca", default="")
    args = ap.parse_args()
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    servers = [UnixServer(args.socket, Handler)]
    servers[0].listener = "unix"
    if args.tcp:
        host, port = args.tcp.rsplit(":", 1)
        servers.append(TCPServer((host, int(port)), Handler))
        servers[-1].listener = "tcp"
    if args.https:
        host, port = args.https.rsplit(":", 1)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
        if args.client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(args.client_ca)
        tls = TLSServer((host, int(port)), Handler)
        tls.ssl_context = ctx
        tls.listener = "https"
        servers.append(tls)
    for s in servers:
        s.state_path = args.state
        s.log_path = args.log
        s.log_lock = threading.Lock()
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
