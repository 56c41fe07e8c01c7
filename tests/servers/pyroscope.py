#!/usr/bin/env python3
"""A Pyroscope push endpoint for tests (Python standard library only).

It speaks the Connect unary protocol of POST /push.v1.PusherService/Push as Pyroscope serves it
(docs/specs/pyroscope-push.md §1): it decodes the protobuf (or JSON) PushRequest and the gzipped
pprof inside with its own decoder, applies the server-side validation of §1.5, answers with Connect
status codes and JSON error bodies, and records what it received for the tests to query.

Failure injection: a queue of actions consumed one per push request (then `default_action`):
  {"status": 503}                      Connect error (code from the status, or "code": "...")
  {"status": 429, "retry_after": "1"}  ... with a Retry-After header
  {"raw_status": 502, "body": "..."}   a non-Connect error, as a proxy would send
  {"hang": 30}                         read the request, answer nothing for 30 s, then close
  {"slow": 0.5}                        answer normally after 0.5 s
  {"drop": true}                       read the request, close the connection without a response
  {"redirect": URL, "redirect_status": 307}   answer a redirect to URL
Debug info API (debuginfo.v1alpha1.DebuginfoService, as pkg/debuginfo/store.go serves it; spec
docs/specs/debuginfo.md): ShouldInitiateUpload and UploadFinished as Connect unary calls with the
proto codec, the file itself as a plain POST to .../Upload/<build ID>, with Pyroscope's answers:
true the first time (and for a stale upload), false with its reason while an upload is in
progress or once it finished, 412 for an upload not announced, failed_precondition for a finish
without the file. Failure injection: a queue per method (srv.debuginfo_actions(method, [...]),
consumed one per request of that method) of {"status": 503} (Connect error; a plain HTTP error for
Upload), {"slow": 2}, {"should": false, "reason": "..."} (ShouldInitiateUpload's answer).
srv.debuginfo() gives {build ID: {"state", "name", "type", "otel_file_id", "size", "data"}} and
srv.debuginfo_requests() every call (method, build ID, status, violations).
Server checks: "require_auth" (exact Authorization value, or a predicate on it such as
TokenServer.authorization_ok of tests/servers/oauth2.py), "multitenancy" (X-Scope-OrgID required,
as -auth.multitenancy-enabled).

In-process use:   srv = PyroscopeServer(); srv.start(); ... srv.pushes(); srv.stop()
Standalone:       pyroscope.py --port 4040 [--tls-cert C --tls-key K [--client-ca CA]]
                  control: GET /-/received, POST /-/actions (JSON list), POST /-/reset
"""
import argparse
import base64
import gzip
import http.server
import io
import json
import os
import socket
import ssl
import sys
import threading
import time
import zlib

PUSH_PATH = "/push.v1.PusherService/Push"
DEBUGINFO_PREFIX = "/debuginfo.v1alpha1.DebuginfoService/"
# pkg/debuginfo/store.go's reasons
REASON_FIRST_TIME = "First time we see this Build ID, therefore please upload!"
REASON_STALE = "A previous upload was started but not finished and is now stale, so it can be retried."
REASON_IN_PROGRESS = "A previous upload is still in-progress and not stale yet (only stale uploads can be retried)."
REASON_EXISTS = "Debuginfo already exists and is not marked as invalid, therefore no new upload is needed."
REASON_EMPTY = "Empty GNU build ID, therefore no upload is needed."
MAX_PROFILE_BYTES = 4 << 20  # validation.max-profile-size-bytes
MAX_LABELS = 30
MAX_NAME_LEN = 1024
MAX_VALUE_LEN = 2048
MAX_SAMPLES = 16000
STATUS_CODES = {400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied", 404: "not_found",
                408: "deadline_exceeded", 409: "aborted", 413: "resource_exhausted", 415: "unimplemented",
                429: "resource_exhausted", 499: "canceled", 500: "internal", 501: "unimplemented",
                502: "unavailable", 503: "unavailable", 504: "deadline_exceeded"}
CODE_STATUS = {"canceled": 499, "unknown": 500, "invalid_argument": 400, "deadline_exceeded": 504,
               "not_found": 404, "already_exists": 409, "permission_denied": 403, "resource_exhausted": 429,
               "failed_precondition": 400, "aborted": 409, "out_of_range": 400, "unimplemented": 501,
               "internal": 500, "unavailable": 503, "data_loss": 500, "unauthenticated": 401}


class Reject(Exception):
    """A request the real server would refuse: HTTP status, Connect code, message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


# ---------------------------------------------------------------------------------------------
# Protobuf wire format (independent of the C encoder under test)

def read_varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint too long")


def fields(buf):
    """Yields (field number, wire type, value) for each field of a message."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ValueError("field number 0")
        if wt == 0:
            v, pos = read_varint(buf, pos)
        elif wt == 1:
            if pos + 8 > len(buf):
                raise ValueError("truncated fixed64")
            v = int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        elif wt == 2:
            n, pos = read_varint(buf, pos)
            if pos + n > len(buf):
                raise ValueError("truncated length-delimited field")
            v = bytes(buf[pos:pos + n])
            pos += n
        elif wt == 5:
            if pos + 4 > len(buf):
                raise ValueError("truncated fixed32")
            v = int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wt}")
        yield num, wt, v


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def repeated_ints(wt, v, out, signed=False):
    """Appends a repeated scalar field, packed (wire type 2) or not."""
    if wt == 2:
        pos = 0
        while pos < len(v):
            x, pos = read_varint(v, pos)
            out.append(signed64(x) if signed else x)
    elif wt == 0:
        out.append(signed64(v) if signed else v)
    else:
        raise ValueError("bad wire type for a repeated integer")


def utf8(b, what):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise Reject("invalid_argument", f"{what} is not valid UTF-8")


def decode_push_request(body):
    """PushRequest -> list of series {labels: [(name, value)], samples: [(raw, id)], annotations}."""
    series = []
    for num, wt, v in fields(body):
        if num != 1:
            continue
        if wt != 2:
            raise ValueError("PushRequest.series must be length-delimited")
        s = {"labels": [], "samples": [], "annotations": []}
        for n2, wt2, v2 in fields(v):
            if wt2 != 2:
                raise ValueError("RawProfileSeries fields must be length-delimited")
            if n2 in (1, 3):  # LabelPair / ProfileAnnotation: 1 name|key, 2 value
                name = value = b""
                for n3, wt3, v3 in fields(v2):
                    if wt3 != 2:
                        raise ValueError("label fields must be strings")
                    if n3 == 1:
                        name = v3
                    elif n3 == 2:
                        value = v3
                (s["labels"] if n2 == 1 else s["annotations"]).append(
                    (utf8(name, "label name"), utf8(value, "label value")))
            elif n2 == 2:
                raw, pid = b"", b""
                for n3, wt3, v3 in fields(v2):
                    if wt3 != 2:
                        raise ValueError("RawSample fields must be bytes")
                    if n3 == 1:
                        raw = v3
                    elif n3 == 2:
                        pid = v3
                s["samples"].append((raw, utf8(pid, "ID")))
        series.append(s)
    return series


def decode_push_json(body):
    doc = json.loads(body)
    series = []
    for s in doc.get("series", []):
        samples = []
        for smp in s.get("samples", []):
            raw = smp.get("rawProfile", smp.get("raw_profile", ""))
            samples.append((base64.b64decode(raw), smp.get("ID", "")))
        series.append({"labels": [(l.get("name", ""), l.get("value", "")) for l in s.get("labels", [])],
                       "samples": samples, "annotations": s.get("annotations", [])})
    return series


def decode_profile(data):
    """pprof Profile -> dict; raises Reject(malformed) like pkg/validation.ValidateProfile."""
    p = {"sample_type": [], "sample": [], "mapping": {}, "location": {}, "function": {}, "string_table": [],
         "time_nanos": 0, "duration_nanos": 0, "period_type": None, "period": 0, "comment": [],
         "default_sample_type": 0}

    def value_type(b):
        t = u = 0
        for n, wt, v in fields(b):
            if n == 1:
                t = signed64(v)
            elif n == 2:
                u = signed64(v)
        return (t, u)

    for num, wt, v in fields(data):
        if num == 1:
            p["sample_type"].append(value_type(v))
        elif num == 2:
            s = {"location_id": [], "value": [], "label": []}
            for n, wt2, v2 in fields(v):
                if n == 1:
                    repeated_ints(wt2, v2, s["location_id"])
                elif n == 2:
                    repeated_ints(wt2, v2, s["value"], signed=True)
                elif n == 3:
                    lab = {"key": 0, "str": 0, "num": 0, "num_unit": 0}
                    for n3, _, v3 in fields(v2):
                        if n3 in (1, 2, 3, 4):
                            lab[("key", "str", "num", "num_unit")[n3 - 1]] = signed64(v3)
                    s["label"].append(lab)
            p["sample"].append(s)
        elif num == 3:
            m = {"id": 0, "memory_start": 0, "memory_limit": 0, "file_offset": 0, "filename": 0, "build_id": 0,
                 "has_functions": False}
            for n, _, v2 in fields(v):
                if 1 <= n <= 6:
                    m[("id", "memory_start", "memory_limit", "file_offset", "filename", "build_id")[n - 1]] = v2
                elif n == 7:
                    m["has_functions"] = bool(v2)
            p["mapping"][m["id"]] = m
        elif num == 4:
            loc = {"id": 0, "mapping_id": 0, "address": 0, "line": []}
            for n, _, v2 in fields(v):
                if n == 1:
                    loc["id"] = v2
                elif n == 2:
                    loc["mapping_id"] = v2
                elif n == 3:
                    loc["address"] = v2
                elif n == 4:
                    line = {"function_id": 0, "line": 0}
                    for n3, _, v3 in fields(v2):
                        if n3 == 1:
                            line["function_id"] = v3
                        elif n3 == 2:
                            line["line"] = signed64(v3)
                    loc["line"].append(line)
            if loc["id"] == 0:
                raise Reject("invalid_argument", "malformed profile: location id 0")
            p["location"][loc["id"]] = loc
        elif num == 5:
            fn = {"id": 0, "name": 0, "system_name": 0, "filename": 0, "start_line": 0}
            for n, _, v2 in fields(v):
                if 1 <= n <= 5:
                    fn[("id", "name", "system_name", "filename", "start_line")[n - 1]] = signed64(v2)
            if fn["id"] == 0:
                raise Reject("invalid_argument", "malformed profile: function id 0")
            p["function"][fn["id"]] = fn
        elif num == 6:
            p["string_table"].append(utf8(v, "string table entry"))
        elif num == 9:
            p["time_nanos"] = signed64(v)
        elif num == 10:
            p["duration_nanos"] = signed64(v)
        elif num == 11:
            p["period_type"] = value_type(v)
        elif num == 12:
            p["period"] = signed64(v)
        elif num == 13:
            repeated_ints(wt, v, p["comment"], signed=True)
        elif num == 14:
            p["default_sample_type"] = signed64(v)
    return p


def validate_profile(p, ingest=True):
    """The server's checks; ingest=False leaves out the ingestion window (a profile
    that is only read, such as a download, may be of any time)."""
    st = p["string_table"]

    def s(i, what):
        if not 0 <= i < len(st):
            raise Reject("invalid_argument", f"malformed profile: {what} string index {i} out of range")
        return st[i]

    if not st or st[0] != "":
        raise Reject("invalid_argument", "malformed profile: string_table[0] must be empty")
    if not p["sample_type"]:
        raise Reject("invalid_argument", "malformed profile: no sample_type")
    for t, u in p["sample_type"]:
        if "-" in s(t, "sample type") or "-" in s(u, "sample unit"):
            raise Reject("invalid_argument", "malformed profile: sample type contains '-'")
    if len(p["sample"]) > MAX_SAMPLES:
        raise Reject("invalid_argument", f"samples_limit: {len(p['sample'])} > {MAX_SAMPLES}")
    for smp in p["sample"]:
        if len(smp["value"]) != len(p["sample_type"]):
            raise Reject("invalid_argument", "malformed profile: len(value) != len(sample_type)")
        for lid in smp["location_id"]:
            if lid not in p["location"]:
                raise Reject("invalid_argument", f"malformed profile: unknown location id {lid}")
        for lab in smp["label"]:
            s(lab["key"], "label key")
            s(lab["str"], "label value")
    for loc in p["location"].values():
        for line in loc["line"]:
            if line["function_id"] not in p["function"]:
                raise Reject("invalid_argument", f"malformed profile: unknown function id {line['function_id']}")
    for fn in p["function"].values():
        s(fn["name"], "function name")
        s(fn["system_name"], "function system name")
        s(fn["filename"], "function file name")
    for m in p["mapping"].values():
        s(m["filename"], "mapping file name")
        s(m["build_id"], "mapping build id")
    if ingest and p["time_nanos"]:
        now = time.time_ns()
        if p["time_nanos"] < now - 3600 * 10**9 or p["time_nanos"] > now + 600 * 10**9:
            raise Reject("invalid_argument", "not_in_ingestion_window")


def summarize_profile(p, raw, gzipped, uncompressed_len):
    st = p["string_table"]

    def frames(smp):
        names = []
        for lid in smp["location_id"]:  # leaf first
            loc = p["location"][lid]
            if loc["line"]:
                for line in reversed(loc["line"]):  # inlined: the last line is the caller
                    names.append(st[p["function"][line["function_id"]]["name"]])
            else:
                # What Pyroscope shows for a Location it cannot symbolize
                # (pkg/model/symbolref FallbackSymbolName): "binary!0xADDR".
                m = p["mapping"].get(loc["mapping_id"])
                binary = os.path.basename(st[m["filename"]]) if m and 0 <= m["filename"] < len(st) else ""
                names.append("%s!0x%x" % (binary or "unknown", loc["address"]))
        return list(reversed(names))  # root first

    def locations(smp):
        """Each Location of the sample, root first: its mapping's file and build ID, its address,
        and whether it carries a Line (what the server's symbolizer skips)."""
        out = []
        for lid in smp["location_id"]:
            loc = p["location"][lid]
            m = p["mapping"].get(loc["mapping_id"])
            name = (lambda i: st[i] if m and 0 <= i < len(st) else "")
            out.append({"file": name(m["filename"]) if m else "", "build_id": name(m["build_id"]) if m else "",
                        "address": loc["address"], "named": bool(loc["line"])})
        return list(reversed(out))

    return {
        "sample_types": [[st[t], st[u]] for t, u in p["sample_type"]],
        "period_type": [st[p["period_type"][0]], st[p["period_type"][1]]] if p["period_type"] else None,
        "period": p["period"],
        "time_nanos": p["time_nanos"],
        "duration_nanos": p["duration_nanos"],
        "stacks": [{"frames": frames(smp), "locations": locations(smp), "values": smp["value"],
                    "labels": {st[l["key"]]: st[l["str"]] for l in smp["label"] if l["str"]}}
                   for smp in p["sample"]],
        "comments": [st[i] for i in p["comment"] if 0 <= i < len(st)],
        "gzip": gzipped,
        "compressed_len": len(raw),
        "uncompressed_len": uncompressed_len,
    }


def gunzip_limited(raw, limit):
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(raw, limit + 1)
    if len(out) > limit or d.unconsumed_tail:
        raise Reject("invalid_argument", f"profile_size_limit: uncompressed profile exceeds {limit} bytes")
    if not d.eof:
        raise Reject("invalid_argument", "malformed profile: truncated gzip stream")
    return out


def valid_label_name(name):
    return name != "" and all(c.isascii() and (c.isalnum() or c in "_.") for c in name)


def check_series_labels(labels):
    """Server validation (docs/specs/pyroscope-push.md §1.5) of one series' labels; returns
    (labels dict, client notes)."""
    notes = []
    names = [n for n, _ in labels]
    if not labels:
        raise Reject("invalid_argument", "missing labels")
    if names != sorted(names):
        notes.append("labels not sorted")
    if len(set(names)) != len(names):
        raise Reject("invalid_argument", "duplicate_label_names")
    d = dict(labels)
    count = len(labels) + (0 if d.get("service_name") else 1)  # the server adds service_name
    if count > MAX_LABELS:
        raise Reject("invalid_argument", f"max_label_names_per_series: {count} > {MAX_LABELS}")
    if not d.get("__name__"):
        raise Reject("invalid_argument", "invalid_labels: invalid metric name")
    for n, v in labels:
        if len(n.encode()) > MAX_NAME_LEN:
            raise Reject("invalid_argument", f"label_name_too_long: {n[:40]}")
        if len(v.encode()) > MAX_VALUE_LEN:
            raise Reject("invalid_argument", f"label_value_too_long: {n}")
        if n.startswith("__") and n not in ("__name__", "__delta__"):
            notes.append(f"reserved label {n} sent (Alloy drops it)")
        elif n != "__name__" and not valid_label_name(n):
            notes.append(f"label name {n!r} outside [A-Za-z0-9_.]")
    return d, notes


# ---------------------------------------------------------------------------------------------
# HTTP

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pyroscope-test"

    def log_message(self, fmt, *args):  # quiet; the tests query the records instead
        pass

    def setup(self):
        super().setup()
        self.server.owner._track(self.connection, True)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, False)

    def _read_body(self, limit):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = io.BytesIO()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out.getvalue()
                out.write(self.rfile.read(size))
                self.rfile.readline()
                if out.tell() > limit:
                    raise Reject("resource_exhausted", "request body too large")
        n = int(self.headers.get("Content-Length", "0"))
        if n > limit:
            self.rfile.read(n)
            raise Reject("resource_exhausted", "request body too large")
        return self.rfile.read(n)

    def _send(self, status, body=b"", ctype="application/proto", extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _connect_error(self, code, message, status=None, extra=None):
        body = json.dumps({"code": code, "message": message}).encode()
        self._send(status or CODE_STATUS.get(code, 500), body, "application/json", extra)

    def do_GET(self):
        owner = self.server.owner
        if self.path == "/-/received":
            self._send(200, json.dumps(owner.snapshot()).encode(), "application/json")
        elif self.path == "/-/ready":
            self._send(200, b"ready", "text/plain")
        elif self.path == PUSH_PATH:
            self._send(405, b"", "text/plain", {"Allow": "POST"})
        else:
            self._send(404, b"404 page not found\n", "text/plain")

    def do_POST(self):
        owner = self.server.owner
        if self.path in ("/-/actions", "/-/reset"):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path == "/-/reset":
                owner.reset()
            else:
                owner.push_actions(json.loads(body or b"[]"))
            self._send(200, b"{}", "application/json")
            return
        if self.path.startswith(DEBUGINFO_PREFIX):
            owner.handle_debuginfo(self)
            return
        if self.path != PUSH_PATH:
            self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            self._send(404, b"404 page not found\n", "text/plain")
            return
        owner.handle_push(self)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


class PyroscopeServer:
    def __init__(self, port=0, host="127.0.0.1", tls_cert=None, tls_key=None, client_ca=None,
                 require_auth=None, multitenancy=False, body_limit=256 << 20):
        self.host, self.port = host, port
        self.tls = (tls_cert, tls_key, client_ca)
        self.require_auth = require_auth
        self.multitenancy = multitenancy
        self.body_limit = body_limit
        self.default_action = {}
        self._lock = threading.Lock()
        self._conns = set()
        self._srv = None
        self._stop_event = threading.Event()
        self._answer_lock = threading.Lock()
        self.reset()

    # -- control --
    def reset(self):
        with self._lock:
            self.actions = []
            self.requests = []   # every push request: headers, answer, violations
            self._pushes = []    # accepted pushes, decoded
            self._di_actions = {}   # debug info method: [action]
            self._di_requests = []  # every debug info call
            self._di = {}           # build ID: {"state", "name", "type", "started", "size", "data"}
        self.debuginfo_stale_s = 900  # an upload not finished after this is stale (Pyroscope's 15 min)

    def debuginfo_actions(self, method, actions):
        with self._lock:
            self._di_actions.setdefault(method, []).extend(actions)

    def debuginfo(self):
        with self._lock:
            return {k: dict(v) for k, v in self._di.items()}

    def debuginfo_requests(self):
        with self._lock:
            return list(self._di_requests)

    def push_actions(self, actions):
        with self._lock:
            self.actions.extend(actions)

    def pushes(self):
        with self._lock:
            return list(self._pushes)

    def all_requests(self):
        with self._lock:
            return list(self.requests)

    def snapshot(self):
        with self._lock:
            return {"pushes": [{k: v for k, v in p.items()} for p in self._pushes],
                    "requests": list(self.requests)}

    def start(self):
        self._stop_event.clear()
        self._srv = _Server((self.host, self.port), Handler)
        self._srv.owner = self
        if self.tls[0]:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(self.tls[0], self.tls[1])
            if self.tls[2]:
                ctx.load_verify_locations(self.tls[2])
                ctx.verify_mode = ssl.CERT_REQUIRED
            self._srv.socket = ctx.wrap_socket(self._srv.socket, server_side=True)
        self.port = self._srv.server_address[1]
        threading.Thread(target=self._srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self):
        """Stops listening and cuts every open connection, like a crashed server (a push being kept
        and answered is finished first: see _answer_lock)."""
        if not self._srv:
            return
        self._stop_event.set()
        with self._answer_lock:  # a push being kept and answered is finished first
            pass
        self._srv.shutdown()
        self._srv.server_close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._srv = None

    @property
    def url(self):
        return f"{'https' if self.tls[0] else 'http'}://{self.host}:{self.port}"

    def _track(self, conn, add):
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    # -- the debug info API --
    def handle_debuginfo(self, h):
        method, _, arg = h.path[len(DEBUGINFO_PREFIX):].partition("/")
        headers = {k.lower(): v for k, v in h.headers.items()}
        record = {"time": time.time(), "method": method, "build_id": arg or None, "headers": headers,
                  "status": None, "violations": []}
        with self._lock:
            self._di_requests.append(record)
            queue = self._di_actions.get(method) or []
            action = queue.pop(0) if queue else {}
        try:
            body = h._read_body(self.body_limit)
        except Reject as r:
            record["status"] = 429
            h._connect_error(r.code, r.message)
            return
        record["size"] = len(body)
        if action.get("slow"):
            self._stop_event.wait(float(action["slow"]))
        if "status" in action:
            record["status"] = action["status"]
            if method == "Upload":
                h._send(action["status"], b"injected\n", "text/plain")
            else:
                h._connect_error(action.get("code") or STATUS_CODES.get(action["status"], "unknown"),
                                 f"injected {action['status']}", action["status"])
            return
        if method == "Upload" and arg:
            return self._di_upload(h, record, arg, body)
        if method not in ("ShouldInitiateUpload", "UploadFinished") or arg:
            record["status"] = 404
            h._send(404, b"404 page not found\n", "text/plain")
            return
        # the Connect unary protocol with the proto codec, as connect-go's client sends it
        if headers.get("content-type") != "application/proto":
            record["violations"].append(f"content-type {headers.get('content-type')!r}")
        if headers.get("connect-protocol-version") != "1":
            record["violations"].append("no connect-protocol-version: 1")
        try:
            if method == "ShouldInitiateUpload":
                out = self._di_should(record, body, action)
            else:
                out = self._di_finished(record, body)
        except Reject as r:
            record["status"] = CODE_STATUS.get(r.code, 400)
            h._connect_error(r.code, r.message)
            return
        except ValueError as e:
            record["status"] = 400
            record["violations"].append(f"unmarshal: {e}")
            h._connect_error("invalid_argument", f"unmarshal: {e}")
            return
        record["status"] = 200
        h._send(200, out, "application/proto")

    def _di_should(self, record, body, action):
        md = {"gnu_build_id": "", "go_build_id": "", "otel_file_id": "", "name": "", "type": 0}
        for num, wt, v in fields(body):
            if num == 1 and wt == 2:
                for n2, w2, v2 in fields(v):
                    if w2 == 2 and n2 in (1, 2, 3, 4):
                        md[("gnu_build_id", "go_build_id", "otel_file_id", "name")[n2 - 1]] = utf8(v2, "file")
                    elif n2 == 5 and w2 == 0:
                        md["type"] = v2
        record["build_id"], record["file"] = md["gnu_build_id"], md
        bid = md["gnu_build_id"]
        with self._lock:
            if "should" in action:
                should, reason = bool(action["should"]), action.get("reason", "injected")
            elif not bid:
                should, reason = False, REASON_EMPTY
            elif not all(c in "0123456789abcdef" for c in bid) or md["type"] not in (1, 2):
                raise Reject("invalid_argument", f"invalid request: build ID {bid!r} type {md['type']}")
            else:
                cur = self._di.get(bid)
                if cur is None:
                    should, reason = True, REASON_FIRST_TIME
                elif cur["state"] == "uploading" and time.time() - cur["started"] > self.debuginfo_stale_s:
                    should, reason = True, REASON_STALE
                elif cur["state"] == "uploading":
                    should, reason = False, REASON_IN_PROGRESS
                else:
                    should, reason = False, REASON_EXISTS
                if should:
                    self._di[bid] = {"state": "uploading", "name": md["name"], "type": md["type"],
                                     "otel_file_id": md["otel_file_id"],
                                     "started": time.time(), "size": None, "data": None}
        record["answer"] = (should, reason)
        r = reason.encode()
        n, size = len(r), b""
        while True:
            size += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
            n >>= 7
            if not n:
                break
        return (b"\x08\x01" if should else b"") + (b"\x12" + size + r if r else b"")

    def _di_upload(self, h, record, bid, body):
        if h.headers.get("Content-Type"):
            record["violations"].append(f"upload with content-type {h.headers.get('Content-Type')!r}")
        with self._lock:
            cur = self._di.get(bid)
            if cur is None or cur["state"] != "uploading":
                record["status"] = 412
            else:
                cur["data"], cur["size"] = body, len(body)
                record["status"] = 200
        if record["status"] == 412:
            h._send(412, b"no pending upload for this build ID\n", "text/plain")
        else:
            h._send(200, b"", "text/plain")

    def _di_finished(self, record, body):
        bid = ""
        for num, wt, v in fields(body):
            if num == 1 and wt == 2:
                bid = utf8(v, "gnu_build_id")
        record["build_id"] = bid
        with self._lock:
            cur = self._di.get(bid)
            if cur is None:
                raise Reject("not_found", f"no upload metadata found for build ID {bid}")
            if cur["state"] != "uploading":
                raise Reject("failed_precondition", "upload is not in uploading state")
            if cur["data"] is None:
                raise Reject("failed_precondition", f"no uploaded file found for build ID {bid}")
            cur["state"] = "uploaded"
        return b""

    # -- the push handler --
    def handle_push(self, h):
        started = time.time()
        headers = {k.lower(): v for k, v in h.headers.items()}
        record = {"time": started, "headers": headers, "header_list": list(h.headers.items()), "status": None,
                  "violations": [], "action": None}
        with self._lock:
            self.requests.append(record)
            action = self.actions.pop(0) if self.actions else dict(self.default_action)
        record["action"] = action
        try:
            body = h._read_body(self.body_limit)
        except Reject as r:
            record["status"] = 429
            h._connect_error(r.code, r.message)
            h.close_connection = True
            return
        if action.get("drop"):
            record["status"] = "dropped"
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if action.get("hang"):
            record["status"] = "hung"
            self._stop_event.wait(float(action["hang"]))
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if action.get("slow"):
            self._stop_event.wait(float(action["slow"]))
        if "redirect" in action:
            record["status"] = action.get("redirect_status", 307)
            h._send(record["status"], b"", "text/plain", {"Location": action["redirect"]})
            return
        if "raw_status" in action:
            record["status"] = action["raw_status"]
            h._send(action["raw_status"], action.get("body", "").encode(), "text/plain")
            return
        if "status" in action:
            status = action["status"]
            code = action.get("code") or STATUS_CODES.get(status, "unknown")
            extra = {"Retry-After": str(action["retry_after"])} if "retry_after" in action else None
            record["status"] = status
            h._connect_error(code, action.get("message", f"injected {status}"), status, extra)
            return
        try:
            push = self._decode_and_check(headers, body, record)
        except Reject as r:
            record["status"] = CODE_STATUS.get(r.code, 400)
            record["violations"].append(r.message)
            extra = {"Accept-Post": "application/json, application/proto"} if r.code == "unimplemented" and \
                "content-type" in r.message else None
            h._connect_error(r.code, r.message, 415 if extra else None, extra)
            return
        except (ValueError, json.JSONDecodeError) as e:
            record["status"] = 400
            record["violations"].append(f"unmarshal: {e}")
            h._connect_error("invalid_argument", f"unmarshal: {e}")
            return
        ctype = headers.get("content-type", "application/proto")
        # Kept and answered as one step that stop() waits for: a push is either kept and its
        # answer sent, or cut off unkept. (A crash between the two would leave a push kept that
        # its client counts as failed, which no client can tell apart from a lost one: the
        # outage tests count pushes against the agent's sent metric.)
        with self._answer_lock:
            if self._stop_event.is_set():
                record["status"] = "cut"
                return
            record["status"] = 200
            with self._lock:
                self._pushes.append(push)
            h._send(200, b"{}" if ctype.startswith("application/json") else b"", ctype)

    def _decode_and_check(self, headers, body, record):
        ctype = headers.get("content-type", "")
        if ctype not in ("application/proto", "application/json", "application/json; charset=utf-8"):
            raise Reject("unimplemented", f"invalid content-type: {ctype!r}")
        cpv = headers.get("connect-protocol-version")
        if cpv is not None and cpv != "1":
            raise Reject("invalid_argument", f"connect-protocol-version must be \"1\": got {cpv!r}")
        cto = headers.get("connect-timeout-ms")
        if cto is not None and not (cto.isdigit() and 0 < len(cto) <= 10):
            raise Reject("invalid_argument", f"protocol error: invalid timeout {cto!r}")
        enc = headers.get("content-encoding", "identity")
        if enc == "gzip":
            body = gzip.decompress(body)
        elif enc != "identity":
            raise Reject("unimplemented", f"unknown compression {enc!r}")
        if self.multitenancy and not headers.get("x-scope-orgid"):
            raise Reject("unauthenticated", "no org id")
        if self.require_auth is not None and not (
                self.require_auth(headers.get("authorization")) if callable(self.require_auth)
                else headers.get("authorization") == self.require_auth):
            raise Reject("unauthenticated", "bad credentials")
        series = decode_push_json(body) if ctype.startswith("application/json") else decode_push_request(body)
        if not series or not any(s["samples"] for s in series):
            raise Reject("invalid_argument", "no profiles received")
        out = {"time": record["time"], "headers": headers, "header_list": record["header_list"], "series": []}
        for s in series:
            labels, notes = check_series_labels(s["labels"])
            record["violations"].extend(notes)
            if s["annotations"]:
                record["violations"].append("client sent annotations")
            profiles = []
            for raw, pid in s["samples"]:
                gz = raw[:2] == b"\x1f\x8b"
                data = gunzip_limited(raw, MAX_PROFILE_BYTES) if gz else raw
                if len(data) > MAX_PROFILE_BYTES:
                    raise Reject("invalid_argument", "profile_size_limit")
                p = decode_profile(data)
                validate_profile(p)
                summary = summarize_profile(p, raw, gz, len(data))
                summary["id"] = pid
                profiles.append(summary)
            out["series"].append({"labels": labels, "label_list": s["labels"], "profiles": profiles})
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=4040)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--client-ca")
    ap.add_argument("--require-auth")
    ap.add_argument("--multitenancy", action="store_true")
    args = ap.parse_args()
    srv = PyroscopeServer(args.port, args.host, args.tls_cert, args.tls_key, args.client_ca, args.require_auth,
                          args.multitenancy).start()
    print(f"listening on {srv.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    sys.exit(main())
