"""A minimal WebSocket client (RFC 6455) for the tests: the opening handshake with
Sec-WebSocket-Accept verification, masked client frames, unmasked server frames of
any length, fragmentation, ping/pong and close. Standard library only."""
import base64
import hashlib
import os
import socket
import struct

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class HandshakeError(Exception):
    def __init__(self, status, headers):
        super().__init__(f"websocket handshake failed: {status}")
        self.status = status
        self.headers = headers


class Closed(Exception):
    pass


class WebSocket:
    def __init__(self, host, port, path="/ws", timeout=10.0, headers=None):
        """headers: extra request headers (e.g. Origin); a "Host" there replaces the real one."""
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        key = base64.b64encode(os.urandom(16)).decode()
        hdrs = {"Host": f"[{host}]:{port}" if ":" in host else f"{host}:{port}", **(headers or {})}
        extra = "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
        req = (f"GET {path} HTTP/1.1\r\n{extra}Upgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(req.encode())
        head = self._read_until(b"\r\n\r\n")
        lines = head.decode("iso-8859-1").split("\r\n")
        status = lines[0]
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        if not status.startswith("HTTP/1.1 101"):
            self.sock.close()
            raise HandshakeError(status, headers)
        want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        if headers.get("sec-websocket-accept") != want:
            self.sock.close()
            raise HandshakeError("bad Sec-WebSocket-Accept", headers)
        if headers.get("upgrade", "").lower() != "websocket":
            self.sock.close()
            raise HandshakeError("no Upgrade: websocket", headers)

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Closed("connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _read_until(self, marker):
        while marker not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Closed("connection closed during the handshake")
            self.buf += chunk
            if len(self.buf) > 65536:
                raise HandshakeError("response headers too long", {})
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def _send_frame(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def send_text(self, text):
        self._send_frame(0x1, text.encode())

    def _frame(self):
        b0, b1 = self._read(2)
        fin, opcode = b0 & 0x80, b0 & 0x0F
        if b0 & 0x70:
            raise ValueError("reserved bits set without an extension")
        if b1 & 0x80:
            raise ValueError("server frames must not be masked")
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._read(8))[0]
        return bool(fin), opcode, self._read(n)

    def recv(self, timeout=None):
        """The next text or binary message (str or bytes); raises socket.timeout or Closed."""
        if timeout is not None:
            self.sock.settimeout(timeout)
        parts, first = [], None
        while True:
            fin, opcode, payload = self._frame()
            if opcode == 0x9:  # ping
                self._send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            if opcode == 0x8:
                try:
                    self._send_frame(0x8, payload[:2])
                except OSError:
                    pass
                raise Closed(f"closed by the server: {payload[:2].hex()}")
            if opcode in (0x1, 0x2):
                first = opcode
                parts = [payload]
            elif opcode == 0x0:
                if first is None:
                    raise ValueError("continuation without a first frame")
                parts.append(payload)
            else:
                raise ValueError(f"unknown opcode {opcode}")
            if fin:
                data = b"".join(parts)
                return data.decode() if first == 0x1 else data

    def close(self):
        try:
            self._send_frame(0x8, struct.pack(">H", 1000))
        except OSError:
            pass
        self.sock.close()
