"""A FastCGI client for the PHP tests: one GET request to a php-fpm pool over its Unix socket
(the FastCGI 1.0 specification's records: BEGIN_REQUEST as a responder, PARAMS, an empty STDIN,
then STDOUT records until END_REQUEST). Standard library only."""
import socket
import struct

VERSION = 1
BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT, STDERR = 1, 3, 4, 5, 6, 7
RESPONDER = 1


def _record(kind, body, request_id=1):
    return struct.pack(">BBHHBx", VERSION, kind, request_id, len(body), 0) + body


def _length(n):
    return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)


def _params(params):
    out = b""
    for k, v in params.items():
        k, v = k.encode(), v.encode()
        out += _length(len(k)) + _length(len(v)) + k + v
    return out


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("php-fpm closed the connection mid-record")
        buf += chunk
    return buf


def get(sock_path, script, query="", timeout=30):
    """GET script (an absolute path) with query from the pool at sock_path: (stdout bytes,
    stderr bytes, the application's exit status)."""
    params = {
        "GATEWAY_INTERFACE": "FastCGI/1.0",
        "REQUEST_METHOD": "GET",
        "SCRIPT_FILENAME": script,
        "SCRIPT_NAME": "/" + script.rsplit("/", 1)[-1],
        "REQUEST_URI": "/" + script.rsplit("/", 1)[-1] + ("?" + query if query else ""),
        "QUERY_STRING": query,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_LENGTH": "0",
    }
    out, err = b"", b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(sock_path)
        p = _params(params)
        s.sendall(_record(BEGIN_REQUEST, struct.pack(">HB5x", RESPONDER, 0)) + _record(PARAMS, p) +
                  _record(PARAMS, b"") + _record(STDIN, b""))
        while True:
            _, kind, _, length, padding = struct.unpack(">BBHHBx", _recv_exact(s, 8))
            body = _recv_exact(s, length + padding)[:length]
            if kind == STDOUT:
                out += body
            elif kind == STDERR:
                err += body
            elif kind == END_REQUEST:
                return out, err, struct.unpack(">I", body[:4])[0]
