#!/usr/bin/env python3
"""An OAuth 2.0 authorization server's token endpoint for tests (Python standard library only):
the client credentials grant of RFC 6749 §4.4 as the RFC states it.

* POST only, body application/x-www-form-urlencoded (else 400 invalid_request); GET is 405.
* Client authentication (§2.3.1) by HTTP Basic (client_id and client_secret form-urlencoded, then
  base64) or by client_id/client_secret in the body; both at once is 400 invalid_request. Which
  methods the client is registered for is configurable ("basic", "post"), so a client that tries
  the wrong one is refused. A failed authentication is 401 invalid_client (with WWW-Authenticate
  when the Authorization header was used), with a JSON error body (§5.2).
* grant_type other than client_credentials: 400 unsupported_grant_type; a missing one 400
  invalid_request. A requested scope outside the client's scopes: 400 invalid_scope.
* Success (§5.1): 200, Cache-Control: no-store, Pragma: no-cache, JSON (or, with
  response_format="form", application/x-www-form-urlencoded) with access_token, token_type
  "Bearer", expires_in (omitted when None) and the granted scope.
* Issued tokens are random, counted, and expire after expires_in seconds; valid(token) and
  authorization_ok("Bearer <token>") tell the resource servers of the tests whether a token is
  good; on_issue callbacks run after each issue. requests() lists what clients sent.

In-process use:   srv = TokenServer(clients={"id": {"secret": "s", "scopes": ["a"]}}).start()
                  srv.url (the token URL), srv.issued(), srv.requests(), srv.stop()
Standalone:       oauth2.py --port 8080 --client ID:SECRET [--expires-in 3600] [--tls-cert C --tls-key K]
"""
import argparse
import base64
import http.server
import json
import secrets
import ssl
import threading
import time
import urllib.parse

TOKEN_PATH = "/oauth2/token"


class TokenServer:
    def __init__(self, clients=None, expires_in=3600, auth_methods=("basic", "post"), response_format="json",
                 port=0, host="127.0.0.1", tls_cert=None, tls_key=None):
        # clients: {client_id: {"secret": str, "scopes": [str] or None (any)}}
        self.clients = clients or {}
        self.expires_in = expires_in
        self.auth_methods = set(auth_methods)
        self.response_format = response_format
        self.host, self.port = host, port
        self.tls_cert, self.tls_key = tls_cert, tls_key
        self.lock = threading.Lock()
        self.tokens = {}  # token -> expiry (time.time()), None: never
        self.log = []
        self.on_issue = []
        self.httpd = None

    # --- what the tests ask
    @property
    def url(self):
        scheme = "https" if self.tls_cert else "http"
        return f"{scheme}://{self.host}:{self.httpd.server_address[1]}{TOKEN_PATH}"

    def issued(self):
        with self.lock:
            return len(self.tokens)

    def requests(self):
        with self.lock:
            return list(self.log)

    def set_secret(self, client_id, secret):
        with self.lock:
            self.clients[client_id]["secret"] = secret

    def valid(self, token):
        with self.lock:
            if token not in self.tokens:
                return False
            exp = self.tokens[token]
            return exp is None or time.time() < exp

    def valid_tokens(self):
        with self.lock:
            now = time.time()
            return [t for t, exp in self.tokens.items() if exp is None or now < exp]

    def authorization_ok(self, value):
        return bool(value) and value.startswith("Bearer ") and self.valid(value[7:])

    # --- the protocol
    def _authenticate(self, headers, form):
        """(client_id, error response or None, method)."""
        auth = headers.get("Authorization")
        body_id = form.get("client_id")
        body_secret = form.get("client_secret")
        if auth and (body_secret is not None):
            return None, (400, {"error": "invalid_request",
                                "error_description": "more than one client authentication method"}, None), "both"
        if auth:
            scheme, _, cred = auth.partition(" ")
            if scheme.lower() != "basic":
                return None, (401, {"error": "invalid_client", "error_description": "unsupported authentication"},
                              'Basic realm="oauth2"'), "other"
            try:
                raw = base64.b64decode(cred, validate=True).decode()
                cid, sep, sec = raw.partition(":")
                if not sep:
                    raise ValueError("no colon")
                cid, sec = urllib.parse.unquote_plus(cid), urllib.parse.unquote_plus(sec)
            except (ValueError, UnicodeDecodeError):
                return None, (401, {"error": "invalid_client", "error_description": "malformed credentials"},
                              'Basic realm="oauth2"'), "basic"
            method = "basic"
        else:
            cid, sec, method = body_id, body_secret, "post"
        client = self.clients.get(cid)
        if cid is None or client is None or method not in self.auth_methods or client["secret"] != sec:
            return None, (401, {"error": "invalid_client", "error_description": "Client authentication failed"},
                          'Basic realm="oauth2"' if method == "basic" else None), method
        return cid, None, method

    def handle(self, h):
        if h.path.split("?")[0] != TOKEN_PATH:
            return h.reply(404, {"error": "not_found"})
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length).decode("utf-8", "replace")
        ctype = (h.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        record = {"body": raw, "content_type": ctype, "authorization": h.headers.get("Authorization"),
                  "user_agent": h.headers.get("User-Agent")}
        with self.lock:
            self.log.append(record)
        if ctype != "application/x-www-form-urlencoded":
            record["status"] = 400
            return h.reply(400, {"error": "invalid_request", "error_description": "form body required"})
        pairs = urllib.parse.parse_qsl(raw, keep_blank_values=True)
        form = {}
        for k, v in pairs:
            if k in form:  # §3.2: parameters MUST NOT be included more than once
                record["status"] = 400
                return h.reply(400, {"error": "invalid_request", "error_description": f"repeated parameter {k}"})
            form[k] = v
        record["form"] = form
        cid, failure, method = self._authenticate(h.headers, form)
        record["method"] = method
        if failure:
            status, body, challenge = failure
            record["status"] = status
            return h.reply(status, body, {"WWW-Authenticate": challenge} if challenge else None)
        grant = form.get("grant_type")
        if grant is None:
            record["status"] = 400
            return h.reply(400, {"error": "invalid_request", "error_description": "grant_type is required"})
        if grant != "client_credentials":
            record["status"] = 400
            return h.reply(400, {"error": "unsupported_grant_type"})
        allowed = self.clients[cid].get("scopes")
        wanted = form.get("scope", "").split()
        if allowed is not None and any(s not in allowed for s in wanted):
            record["status"] = 400
            return h.reply(400, {"error": "invalid_scope",
                                 "error_description": f"scope {' '.join(wanted)!r} is not allowed"})
        token = secrets.token_urlsafe(24)
        with self.lock:
            self.tokens[token] = None if self.expires_in is None else time.time() + self.expires_in
        record["status"] = 200
        record["token"] = token
        out = {"access_token": token, "token_type": "Bearer"}
        if self.expires_in is not None:
            out["expires_in"] = self.expires_in
        if wanted:
            out["scope"] = " ".join(wanted)
        for fn in list(self.on_issue):
            fn(token)
        h.reply(200, out, {"Cache-Control": "no-store", "Pragma": "no-cache"}, form=self.response_format == "form")

    # --- lifecycle
    def start(self):
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def reply(self, status, obj, headers=None, form=False):
                if form:
                    body, ctype = urllib.parse.urlencode(obj).encode(), "application/x-www-form-urlencoded"
                else:
                    body, ctype = json.dumps(obj).encode(), "application/json;charset=UTF-8"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                outer.handle(self)

            def do_GET(self):
                self.reply(405, {"error": "invalid_request", "error_description": "use POST"}, {"Allow": "POST"})

        self.httpd = http.server.ThreadingHTTPServer((self.host, self.port), H)
        self.httpd.daemon_threads = True
        if self.tls_cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(self.tls_cert, self.tls_key)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--client", action="append", default=[], help="ID:SECRET")
    ap.add_argument("--expires-in", type=int, default=3600)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    args = ap.parse_args()
    clients = {c.partition(":")[0]: {"secret": c.partition(":")[2], "scopes": None} for c in args.client}
    srv = TokenServer(clients, args.expires_in, port=args.port, host=args.host, tls_cert=args.tls_cert,
                      tls_key=args.tls_key).start()
    print(srv.url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
