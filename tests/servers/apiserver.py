#!/usr/bin/env python3
"""A kube-apiserver stand-in for nodeprof's discovery tests (Python stdlib only).

It serves what every discovery.kubernetes role uses, the way the real apiserver does
(docs/specs/kubernetes.md §3):

* GET /api/v1/{pods,services,endpoints} (all namespaces) and
  /api/v1/namespaces/<ns>/{pods,services,endpoints}, /api/v1/nodes, /api/v1/namespaces,
  /apis/discovery.k8s.io/v1[/namespaces/<ns>]/endpointslices and
  /apis/networking.k8s.io/v1[/namespaces/<ns>]/ingresses (404 for any other path): LIST with fieldSelector / labelSelector honoured, paging with limit/continue (limit is
  ignored for resourceVersion=0, served "from the watch cache"), continue tokens that
  expire (HTTP 410) after a compaction; WATCH (watch=1) as a chunked stream of
  newline-terminated WatchEvent objects from a resourceVersion, with BOOKMARKs when
  allowWatchBookmarks=true, a clean end after timeoutSeconds, selector transitions sent
  as ADDED/DELETED, and 410 for a compacted resourceVersion (an ERROR event in a 200
  stream by default, or the HTTP status itself).
* TLS with the test's own certificates (optionally requiring client certificates),
  bearer tokens and basic auth checked on every request (401 Status otherwise).
* Failure injection: HTTP errors for the next requests (Status bodies as the apiserver
  writes them: 429 TooManyRequests with Retry-After and details.retryAfterSeconds, 500
  InternalError, 410 Expired), delays, slow ("trickled") responses, a watch that stalls
  mid-stream (sends nothing for a while, or until the client gives up), a connection cut in
  the middle of the next event or list, an ERROR 410 in the middle of a stream, dropping
  every open watch, over-long events.
* Restarts: down() stops serving (connections refused, or accepted and reset while
  counting them, as behind a load balancer), up() serves again on the same port with the
  same objects, optionally with a new certificate (a CA rotation).
* Accounting: every request (time, path, query, watch or not), the watches being served
  per resource path right now, and the most ever served at once per path
  (max_concurrent_watches): a client must never hold two watches of one resource.

Tests drive it in-process (ApiServer methods) or, standalone, through a small JSON
control API on a second, plain-HTTP localhost port:

    python3 apiserver.py --cert C --key K [--port P] --control-port CP [--token T]...
    POST /objects   {"kind": "pods", "object": {...}}        create or replace
    POST /delete    {"kind": "pods", "namespace": "ns", "name": "n"}
    POST /inject    {"op": "http_status", "status": 500, "count": 1, "on": "watch"}  (see inject())
    POST /compact   {}            POST /tokens {"tokens": [...]}    GET /requests
"""
import argparse
import base64
import bisect
import copy
import gzip
import http.server
import json
import select
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import uuid

WATCH_STREAM_OPS = {"cut_event", "error_410", "huge_event", "stall"}
# resource -> (kind, namespaced, apiVersion)
KINDS = {
    "pods": ("Pod", True, "v1"),
    "nodes": ("Node", False, "v1"),
    "namespaces": ("Namespace", False, "v1"),
    "services": ("Service", True, "v1"),
    "endpoints": ("Endpoints", True, "v1"),
    "endpointslices": ("EndpointSlice", True, "discovery.k8s.io/v1"),
    "ingresses": ("Ingress", True, "networking.k8s.io/v1"),
}
# The URL prefix of each apiVersion.
API_PREFIX = {"v1": ["api", "v1"], "discovery.k8s.io/v1": ["apis", "discovery.k8s.io", "v1"],
              "networking.k8s.io/v1": ["apis", "networking.k8s.io", "v1"]}

# Fields the real apiserver accepts in field selectors, per resource (others are a 400).
FIELDS = {
    "pods": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
        "spec.nodeName": lambda o: (o.get("spec") or {}).get("nodeName", ""),
        "spec.restartPolicy": lambda o: (o.get("spec") or {}).get("restartPolicy", ""),
        "spec.schedulerName": lambda o: (o.get("spec") or {}).get("schedulerName", ""),
        "spec.serviceAccountName": lambda o: (o.get("spec") or {}).get("serviceAccountName", ""),
        "status.phase": lambda o: (o.get("status") or {}).get("phase", ""),
        "status.podIP": lambda o: (o.get("status") or {}).get("podIP", ""),
    },
    "nodes": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "spec.unschedulable": lambda o: str(bool((o.get("spec") or {}).get("unschedulable", False))).lower(),
    },
    "namespaces": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "status.phase": lambda o: (o.get("status") or {}).get("phase", ""),
    },
    "services": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
        "spec.clusterIP": lambda o: (o.get("spec") or {}).get("clusterIP", ""),
        "spec.type": lambda o: (o.get("spec") or {}).get("type", ""),
    },
    "endpoints": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
    },
    "endpointslices": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
    },
    "ingresses": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
    },
}


class SelectorError(ValueError):
    pass


def parse_field_selector(sel, kind):
    """Returns a predicate; apimachinery's syntax (\\ escapes for , = \\)."""
    if not sel:
        return lambda o: True
    terms, cur, i = [], "", 0
    while i < len(sel):
        c = sel[i]
        if c == "\\" and i + 1 < len(sel):
            cur += sel[i:i + 2]
            i += 2
            continue
        if c == ",":
            terms.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    terms.append(cur)
    preds = []
    for t in terms:
        for op in ("!=", "==", "="):
            k = t.find(op)
            if k >= 0:
                key, val = t[:k], t[k + len(op):]
                break
        else:
            raise SelectorError(f"invalid selector: '{sel}'; can't understand '{t}'")
        out, esc = "", False
        for c in val:
            if esc:
                if c not in "\\,=":
                    raise SelectorError(f"invalid escape sequence in '{t}'")
                out += c
                esc = False
            elif c == "\\":
                esc = True
            elif c in ",=":
                raise SelectorError(f"unescaped '{c}' in '{t}'")
            else:
                out += c
        if key not in FIELDS[kind]:
            raise SelectorError(f'field label not supported: {key}')
        get = FIELDS[kind][key]
        preds.append((get, op != "!=", out))
    return lambda o: all((get(o) == v) == eq for get, eq, v in preds)


def parse_label_selector(sel):
    """Returns a predicate over a labels dict; =, ==, !=, in, notin, exists, !exists."""
    if not sel or not sel.strip():
        return lambda labels: True
    reqs, depth, cur = [], 0, ""
    for c in sel:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            reqs.append(cur)
            cur = ""
        else:
            cur += c
    reqs.append(cur)
    preds = []
    for r in reqs:
        r = r.strip()
        if not r:
            raise SelectorError(f"invalid label selector {sel!r}")
        words = r.replace("(", " ( ").replace(")", " ) ").split()
        if len(words) >= 3 and words[1] in ("in", "notin") and words[2] == "(" and words[-1] == ")":
            key, op = words[0], words[1]
            vals = {v for v in " ".join(words[3:-1]).replace(",", " ").split()}
            if not vals:
                raise SelectorError(f"invalid label selector {sel!r}: empty set")
            if op == "in":
                preds.append(lambda l, k=key, vs=vals: l.get(k) in vs)
            else:
                preds.append(lambda l, k=key, vs=vals: l.get(k) not in vs)
            continue
        for op in ("!=", "==", "="):
            k = r.find(op)
            if k >= 0:
                key, val = r[:k].strip(), r[k + len(op):].strip()
                if not key or " " in key or " " in val:
                    raise SelectorError(f"invalid label selector {sel!r}")
                if op == "!=":
                    preds.append(lambda l, k=key, v=val: l.get(k) != v)
                else:
                    preds.append(lambda l, k=key, v=val: l.get(k) == v)
                break
        else:
            if r.startswith("!"):
                key = r[1:].strip()
                preds.append(lambda l, k=key: k not in l)
            elif " " not in r:
                preds.append(lambda l, k=r: k in l)
            else:
                raise SelectorError(f"invalid label selector {sel!r}")
    return lambda labels: all(p(labels) for p in preds)


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class Selection:
    """What one request selects: a kind, maybe a namespace, field and label selectors."""

    def __init__(self, kind, namespace, field, label):
        self.kind = kind
        self.namespace = namespace
        self.field = parse_field_selector(field, kind)
        self.label = parse_label_selector(label)

    def matches(self, obj):
        if obj is None:
            return False
        md = obj["metadata"]
        if self.namespace is not None and md.get("namespace") != self.namespace:
            return False
        return self.field(obj) and self.label(md.get("labels") or {})


class QuietServer(http.server.ThreadingHTTPServer):
    """Clients that abort TLS handshakes (wrong CA tests) are expected: no tracebacks."""
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


class ApiServer:
    def __init__(self, cert, key, port=0, client_ca=None, tokens=(), basic=None, bookmark_interval=1.0):
        self.lock = threading.Condition()
        self.objects = {k: {} for k in KINDS}
        self.rv = 1000
        self.history = []  # (rv, kind, type, obj, old_obj), rv increasing
        self.history_rvs = []
        self.compacted_rv = 0
        self.tokens = set(tokens)
        self.basic = dict(basic or {})  # user -> password
        self.client_cns = set()  # client certificate CNs accepted (with client_ca)
        self.bookmark_interval = bookmark_interval
        self.expired_as_http_status = False
        self.watch_chunk_size = None  # split every event into chunks of this many bytes
        self.injections = []
        self.requests = []
        self.drop_generation = 0
        self.closing = False
        self.open_watches = 0
        self.active_watches = {}  # path -> {handler}: watches being served now
        self.max_concurrent_watches = {}  # path -> the most served at once
        self.reset_connections = 0  # accepted and reset while down(reset=True)
        self.max_history = 100000
        self._down_sock = None
        self.cert, self.key, self.client_ca = cert, key, client_ca

        self._listen(port)

    def _listen(self, port):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, self.key)
        if self.client_ca:
            ctx.load_verify_locations(self.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        self.ssl_ctx = ctx
        api = self

        class Handler(ApiHandler):
            server_api = api

        self.httpd = QuietServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.port = self.httpd.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # --- lifecycle
    def start(self):
        self.thread.start()
        return self

    def stop(self):
        with self.lock:
            self.closing = True
            self.lock.notify_all()
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None
        self._stop_resetting()

    def down(self, reset=False):
        """Stops serving, as a restarting apiserver: open watches are cut and new connections
        refused, or with reset=True accepted and reset at once (counted in reset_connections),
        as a load balancer in front of a restarting apiserver does."""
        self.stop()
        if reset:
            ls = socket.socket()
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("127.0.0.1", self.port))
            ls.listen(64)
            ls.settimeout(0.05)
            self._down_sock = ls

            def accept_and_reset():
                while self._down_sock is ls:
                    try:
                        c, _ = ls.accept()
                    except (socket.timeout, OSError):
                        continue
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    c.close()
                    with self.lock:
                        self.reset_connections += 1
                ls.close()

            self._down_thread = threading.Thread(target=accept_and_reset, daemon=True)
            self._down_thread.start()

    def _stop_resetting(self):
        if self._down_sock is not None:
            self._down_sock = None
            self._down_thread.join()

    def up(self, cert=None, key=None):
        """Serves again on the same port with the same objects; cert/key replace the serving
        certificate (e.g. one signed by a new CA)."""
        self._stop_resetting()
        if cert:
            self.cert, self.key = cert, key
        with self.lock:
            self.closing = False
        self._listen(self.port)
        return self.start()

    # --- objects
    def _next_rv(self):
        self.rv += 1
        return self.rv

    def _record(self, kind, typ, obj, old):
        self.history.append((self.rv, kind, typ, obj, old))
        self.history_rvs.append(self.rv)
        if len(self.history) > self.max_history:
            drop = len(self.history) - self.max_history
            self.compacted_rv = max(self.compacted_rv, self.history_rvs[drop - 1] + 1)
            del self.history[:drop]
            del self.history_rvs[:drop]
        self.lock.notify_all()

    @staticmethod
    def key_of(kind, obj):
        md = obj["metadata"]
        return (md.get("namespace", ""), md["name"]) if KINDS[kind][1] else ("", md["name"])

    def put(self, kind, obj):
        """Creates or replaces an object (ADDED / MODIFIED). Returns the stored copy."""
        obj = copy.deepcopy(obj)
        obj.setdefault("kind", KINDS[kind][0])
        obj.setdefault("apiVersion", KINDS[kind][2])
        md = obj.setdefault("metadata", {})
        if KINDS[kind][1]:
            md.setdefault("namespace", "default")
        md.setdefault("uid", str(uuid.uuid4()))
        md.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        with self.lock:
            key = self.key_of(kind, obj)
            old = self.objects[kind].get(key)
            md["resourceVersion"] = str(self._next_rv())
            self.objects[kind][key] = obj
            self._record(kind, "MODIFIED" if old else "ADDED", obj, old)
        return copy.deepcopy(obj)

    def delete(self, kind, namespace, name, record=True):
        """Deletes an object (DELETED). With record=False no watcher ever hears of it, as when
        the event was compacted away: only a relist can notice."""
        with self.lock:
            key = (namespace or "", name) if KINDS[kind][1] else ("", name)
            old = self.objects[kind].pop(key, None)
            if old is None:
                return False
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(self._next_rv())
            if record:
                self._record(kind, "DELETED", gone, old)
        return True

    def get(self, kind, namespace, name):
        with self.lock:
            key = (namespace or "", name) if KINDS[kind][1] else ("", name)
            o = self.objects[kind].get(key)
            return copy.deepcopy(o) if o else None

    def compact(self):
        """Every resourceVersion and continue token issued so far becomes too old (410)."""
        with self.lock:
            self.compacted_rv = self.rv + 1
            self.history.clear()
            self.history_rvs.clear()
            self._next_rv()
            self.lock.notify_all()

    def drop_watches(self):
        """Closes every open watch connection abruptly, between events."""
        with self.lock:
            self.drop_generation += 1
            self.lock.notify_all()

    def set_tokens(self, tokens):
        with self.lock:
            self.tokens = set(tokens)

    def inject(self, op, count=1, on="any", **kw):
        """Queues a failure for the next `count` matching requests (`on`: list, watch, any):
        http_status (status=N, reason, message, retry_after=S), delay (seconds=S, then serve normally),
        trickle (chunk=B, seconds=S between chunks), cut_event (watch: cut the next event
        in half and close), cut_list (list: send half the body and close), error_410
        (watch: an ERROR 410 event after the initial events), huge_event (watch: an
        ADDED event of bytes=N), hang (seconds=S without answering, then close), stall
        (watch: after the initial events send nothing for seconds=S, then go on).
        if_continue=True limits a list injection to requests carrying a continue token,
        path_contains=S to requests whose path contains S."""
        with self.lock:
            for _ in range(count):
                self.injections.append(dict(kw, op=op, on=on))
            self.lock.notify_all()

    def pending_watch_injection(self, path=""):
        """A stream injection (other than a cut, which waits for an event) is queued for a
        watch of path. Lock held."""
        return any(i["on"] in ("any", "watch") and i["op"] in WATCH_STREAM_OPS and i["op"] != "cut_event" and
                   (not i.get("path_contains") or i["path_contains"] in path) for i in self.injections)

    def clear_injections(self):
        with self.lock:
            self.injections.clear()

    def take_injection(self, is_watch, ops=None, has_continue=False, path=""):
        with self.lock:
            for i, inj in enumerate(self.injections):
                if inj["on"] not in ("any", "watch" if is_watch else "list"):
                    continue
                if inj.get("path_contains") and inj["path_contains"] not in path:
                    continue
                if ops and inj["op"] not in ops:
                    continue
                if inj.get("if_continue") and not has_continue:
                    continue
                return self.injections.pop(i)
        return None

    def wait_requests(self, pred, timeout=10.0):
        deadline = time.time() + timeout
        with self.lock:
            while time.time() < deadline:
                hits = [r for r in self.requests if pred(r)]
                if hits:
                    return hits
                self.lock.wait(0.05)
        return []

    def wait_open_watches(self, n=1, timeout=10.0):
        """Waits until at least n watch streams are being served (past their initial events)."""
        deadline = time.time() + timeout
        with self.lock:
            while self.open_watches < n and time.time() < deadline:
                self.lock.wait(0.02)
            return self.open_watches >= n

    def log_request(self, entry):
        with self.lock:
            self.requests.append(entry)
            self.lock.notify_all()

    # --- auth
    def authorized(self, headers, peer_cn):
        with self.lock:
            if not self.tokens and not self.basic and not self.client_cns:
                return True
            auth = headers.get("Authorization", "")
            if auth.startswith("Bearer ") and auth[7:] in self.tokens:
                return True
            if auth.startswith("Basic "):
                try:
                    user, _, pw = base64.b64decode(auth[6:]).decode().partition(":")
                except Exception:
                    return False
                if self.basic.get(user) == pw:
                    return True
            return peer_cn is not None and peer_cn in self.client_cns

    # --- LIST and WATCH bodies
    def list_body(self, sel, query):
        limit = int(query.get("limit", "0") or 0)
        rv_param = query.get("resourceVersion")
        cont = query.get("continue")
        with self.lock:
            list_rv, start = self.rv, None
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont.encode()).decode())
                    list_rv, start = int(tok["rv"]), tok["start"]
                except Exception:
                    return 400, status(400, "BadRequest", "continue key is not valid")
                if list_rv < self.compacted_rv:
                    return 410, status(410, "Expired", "The provided continue parameter is too old to display a "
                                       "consistent list result. You can start a new list without the continue "
                                       "parameter.")
            if rv_param == "0":
                limit = 0  # served from the watch cache: limit is ignored
            keys = sorted(k for k, o in self.objects[sel.kind].items() if sel.matches(o))
            if start is not None:
                keys = [k for k in keys if list(k) > start]
            more = None
            if limit and len(keys) > limit:
                keys = keys[:limit]
                more = base64.urlsafe_b64encode(json.dumps({"rv": list_rv, "start": list(keys[-1])}).encode()).decode()
            items = []
            for k in keys:
                o = copy.deepcopy(self.objects[sel.kind][k])
                o.pop("kind", None)  # raw list items carry no kind/apiVersion
                o.pop("apiVersion", None)
                items.append(o)
        md = {"resourceVersion": str(list_rv)}
        if more:
            md["continue"] = more
        return 200, {"kind": KINDS[sel.kind][0] + "List", "apiVersion": KINDS[sel.kind][2], "metadata": md,
                     "items": items}

    def events_after(self, sel, after_rv):
        """Events for a watcher after after_rv, with selector transitions. Lock held."""
        out = []
        i = bisect.bisect_right(self.history_rvs, after_rv)
        for rv, kind, typ, obj, old in self.history[i:]:
            if kind != sel.kind:
                continue
            now_in, was_in = sel.matches(obj), sel.matches(old)
            if typ == "DELETED":
                if was_in:
                    out.append((rv, "DELETED", obj))
            elif now_in and was_in:
                out.append((rv, "MODIFIED", obj))
            elif now_in:
                out.append((rv, "ADDED", obj))
            elif was_in:
                out.append((rv, "DELETED", obj))
        return out


def bookmark(kind, rv):
    o = {"kind": KINDS[kind][0], "apiVersion": KINDS[kind][2],
         "metadata": {"resourceVersion": str(rv), "creationTimestamp": None}}
    if kind == "pods":
        o["spec"] = {"containers": None}
        o["status"] = {}
    return {"type": "BOOKMARK", "object": o}


class ApiHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_api = None

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        # The TLS handshake happens here (not in accept) so a slow client cannot block the server.
        try:
            self.connection.settimeout(10)
            self.connection.do_handshake()
            self.connection.settimeout(None)
        except (ssl.SSLError, OSError):
            self.close_connection = True
            raise

    def peer_cn(self):
        try:
            cert = self.connection.getpeercert()
        except (ssl.SSLError, ValueError, AttributeError):
            return None
        if not cert:
            return None
        for rdn in cert.get("subject", ()):
            for k, v in rdn:
                if k == "commonName":
                    return v
        return None

    def send_json(self, code, obj, gzip_ok=False, headers=None):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if gzip_ok and len(body) > 1024:
            body = gzip.compress(body)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def client_gone(self):
        """The client closed a watch connection (it sends nothing else on it, so anything
        readable is its close) - noticed without waiting for the next write, so that the
        concurrent-watch accounting is exact."""
        try:
            if self.connection.pending():
                return False
            r, _, _ = select.select([self.connection.fileno()], [], [], 0)
            return bool(r)
        except (OSError, ValueError, AttributeError):
            return True

    def abort(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def route(self):
        u = urllib.parse.urlsplit(self.path)
        parts = [p for p in u.path.split("/") if p]
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
        for kind, (_, namespaced, version) in KINDS.items():
            prefix = API_PREFIX[version]
            if parts[:len(prefix)] != prefix:
                continue
            rest = parts[len(prefix):]
            if rest == [kind]:
                return kind, None, q
            if namespaced and len(rest) == 3 and rest[0] == "namespaces" and rest[2] == kind:
                return kind, rest[1], q
        return None, None, q

    def do_GET(self):
        api = self.server_api
        kind, ns, q = self.route()
        is_watch = q.get("watch") in ("1", "true")
        api.log_request({"path": self.path, "query": q, "watch": is_watch, "time": time.time(),
                         "authorization": self.headers.get("Authorization", ""),
                         "accept": self.headers.get("Accept", ""), "user_agent": self.headers.get("User-Agent", ""),
                         "header_names": sorted(k.lower() for k in self.headers.keys())})
        if not api.authorized(self.headers, self.peer_cn()):
            return self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        if kind is None:
            return self.send_json(404, status(404, "NotFound", "the server could not find the requested resource"))
        try:
            sel = Selection(kind, ns, q.get("fieldSelector", ""), q.get("labelSelector", ""))
        except SelectorError as e:
            return self.send_json(400, status(400, "BadRequest", str(e)))
        inj = api.take_injection(is_watch, ops={"http_status", "delay", "hang", "trickle", "cut_list"}
                                 if not is_watch else {"http_status", "delay", "hang"},
                                 has_continue=bool(q.get("continue")), path=self.path)
        if inj:
            if inj["op"] == "http_status":
                code = inj.get("status", 500)
                body = status(code, inj.get("reason", "InternalError"), inj.get("message", "injected failure"))
                extra = None
                if "retry_after" in inj:
                    # As the apiserver's priority and fairness filter answers: the header and
                    # details.retryAfterSeconds.
                    extra = {"Retry-After": str(inj["retry_after"])}
                    body["details"] = {"retryAfterSeconds": int(inj["retry_after"])}
                return self.send_json(code, body, headers=extra)
            if inj["op"] == "hang":
                time.sleep(inj.get("seconds", 5))
                return self.abort()
            if inj["op"] == "delay":
                time.sleep(inj.get("seconds", 1))
                inj = None
        if is_watch:
            return self.watch(sel, q)
        code, body = api.list_body(sel, q)
        if code != 200 or not inj:
            return self.send_json(code, body, gzip_ok="gzip" in self.headers.get("Accept-Encoding", ""))
        data = json.dumps(body).encode()
        if inj["op"] == "cut_list":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:len(data) // 2])
            return self.abort()
        # trickle: the body in small pieces, slowly (chunked)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        step = max(1, inj.get("chunk", 64))
        for i in range(0, len(data), step):
            self.write_chunk(data[i:i + step])
            time.sleep(inj.get("seconds", 0.01))
        self.wfile.write(b"0\r\n\r\n")

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def send_event(self, ev, chunk_size):
        line = (json.dumps(ev, separators=(",", ":")) + "\n").encode()
        if chunk_size:
            for i in range(0, len(line), chunk_size):
                self.write_chunk(line[i:i + chunk_size])
        else:
            self.write_chunk(line)

    def watch(self, sel, q):
        api = self.server_api
        rv_param = q.get("resourceVersion", "")
        timeout = float(q.get("timeoutSeconds") or 1800)
        bookmarks = q.get("allowWatchBookmarks") == "true"
        deadline = time.time() + timeout
        path = urllib.parse.urlsplit(self.path).path
        with api.lock:
            # A watch whose client has closed it (its FIN is in already: the client closes
            # before it asks again) is not counted, though its handler may not have noticed.
            others = api.active_watches.setdefault(path, set())
            live = 1 + sum(1 for h in others if not h.client_gone())
            api.max_concurrent_watches[path] = max(api.max_concurrent_watches.get(path, 0), live)
            others.add(self)
        try:
            return self._watch(sel, q, rv_param, timeout, bookmarks, deadline)
        finally:
            with api.lock:
                api.active_watches[path].discard(self)
                api.lock.notify_all()

    def _watch(self, sel, q, rv_param, timeout, bookmarks, deadline):
        api = self.server_api
        with api.lock:
            initial = []
            if rv_param in ("", "0"):
                start_rv = api.rv
                for o in sorted(api.objects[sel.kind].values(), key=lambda o: int(o["metadata"]["resourceVersion"])):
                    if sel.matches(o):
                        initial.append((start_rv, "ADDED", copy.deepcopy(o)))
            else:
                try:
                    start_rv = int(rv_param)
                except ValueError:
                    return self.send_json(400, status(400, "BadRequest", f"invalid resource version {rv_param!r}"))
            expired = rv_param not in ("", "0") and start_rv < api.compacted_rv
            generation = api.drop_generation
            compacted = api.compacted_rv
        counted = False
        try:
            if expired and api.expired_as_http_status:
                return self.send_json(410, status(410, "Expired", f"too old resource version: {start_rv} ({compacted})"))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if expired:
                self.send_event({"type": "ERROR", "object": status(410, "Expired",
                                 f"too old resource version: {start_rv} ({compacted})")}, None)
                self.wfile.write(b"0\r\n\r\n")
                return
            for _, typ, obj in initial:
                self.send_event({"type": typ, "object": obj}, api.watch_chunk_size)
            with api.lock:
                api.open_watches += 1
                counted = True
                api.lock.notify_all()
            last = start_rv
            next_bookmark = time.time() + api.bookmark_interval
            while True:
                with api.lock:
                    evs = api.events_after(sel, last)
                    while not evs and not api.closing and api.drop_generation == generation and \
                            not api.pending_watch_injection(self.path) and \
                            time.time() < min(deadline, next_bookmark if bookmarks else deadline):
                        api.lock.wait(min(0.05, max(0.0, deadline - time.time())))
                        evs = api.events_after(sel, last)
                        if self.client_gone():
                            break
                    closing, dropped = api.closing, api.drop_generation != generation
                    cur_rv = api.rv
                if closing or dropped or self.client_gone():
                    return self.abort()
                inj = api.take_injection(True, ops=WATCH_STREAM_OPS, path=self.path)
                if inj and inj["op"] == "stall":
                    # Nothing at all (no events, no bookmarks) for a while, on an open
                    # connection; then the stream goes on. A client may give up first.
                    until = time.time() + inj.get("seconds", 3600)
                    while time.time() < until and not self.client_gone():
                        with api.lock:
                            if api.closing or api.drop_generation != generation:
                                break
                        time.sleep(0.02)
                    if self.client_gone():
                        return self.abort()
                    continue
                if inj and inj["op"] == "error_410":
                    self.send_event({"type": "ERROR", "object": status(410, "Expired",
                                     f"too old resource version: {last} ({last + 1})")}, api.watch_chunk_size)
                    self.wfile.write(b"0\r\n\r\n")
                    return
                if inj and inj["op"] == "huge_event":
                    big = {"type": "ADDED", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {
                        "name": "huge", "namespace": "default", "resourceVersion": str(last),
                        "annotations": {"blob": "x" * inj.get("bytes", 9 << 20)}}}}
                    self.send_event(big, 1 << 20)
                    inj = None
                for i, (rv, typ, obj) in enumerate(evs):
                    ev = {"type": typ, "object": obj}
                    if inj and inj["op"] == "cut_event":
                        line = (json.dumps(ev, separators=(",", ":")) + "\n").encode()
                        half = line[:len(line) // 2]
                        self.wfile.write(b"%x\r\n%s" % (len(line), half))
                        return self.abort()
                    self.send_event(ev, api.watch_chunk_size)
                    last = rv
                if inj and inj["op"] == "cut_event" and not evs:
                    # Keep the injection for the next event.
                    with api.lock:
                        api.injections.insert(0, inj)
                    time.sleep(0.01)
                if time.time() >= deadline:
                    self.wfile.write(b"0\r\n\r\n")
                    return
                if bookmarks and time.time() >= next_bookmark:
                    if not evs:
                        last = max(last, cur_rv)
                    self.send_event(bookmark(sel.kind, last), api.watch_chunk_size)
                    next_bookmark = time.time() + api.bookmark_interval
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            if counted:
                with api.lock:
                    api.open_watches -= 1


class ControlHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    api = None

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/requests":
            with self.api.lock:
                return self.reply(200, self.api.requests)
        self.reply(404, {"error": "not found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
            if self.path == "/objects":
                return self.reply(200, self.api.put(body["kind"], body["object"]))
            if self.path == "/delete":
                return self.reply(200, {"deleted": self.api.delete(body["kind"], body.get("namespace"), body["name"])})
            if self.path == "/inject":
                self.api.inject(**body)
                return self.reply(200, {})
            if self.path == "/compact":
                self.api.compact()
                return self.reply(200, {})
            if self.path == "/drop":
                self.api.drop_watches()
                return self.reply(200, {})
            if self.path == "/tokens":
                self.api.set_tokens(body["tokens"])
                return self.reply(200, {})
        except (KeyError, TypeError, ValueError) as e:
            return self.reply(400, {"error": str(e)})
        self.reply(404, {"error": "not found"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--control-port", type=int, default=0)
    ap.add_argument("--token", action="append", default=[])
    ap.add_argument("--bookmark-interval", type=float, default=60.0)
    args = ap.parse_args()
    api = ApiServer(args.cert, args.key, args.port, tokens=args.token, bookmark_interval=args.bookmark_interval).start()

    class Ctl(ControlHandler):
        pass

    Ctl.api = api
    ctl = http.server.ThreadingHTTPServer(("127.0.0.1", args.control_port), Ctl)
    print(json.dumps({"url": api.url, "control": f"http://127.0.0.1:{ctl.server_address[1]}"}), flush=True)
    try:
        ctl.serve_forever()
    except KeyboardInterrupt:
        pass
    api.stop()


if __name__ == "__main__":
    sys.exit(main())
