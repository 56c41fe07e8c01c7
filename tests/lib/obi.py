"""OpenTelemetry eBPF Instrumentation's side of trace correlation, for tests: OBI's traces_ctx_v1
map (docs/specs/trace-correlation.md), an LRU hash of pid_tgid -> {trace_id[16], span_id[8]}
pinned at BPF_FS_ROOT/otel/traces_ctx_v1, created, filled and read through the bpf(2) system
call. bpf_fs_root() gives a test a BPF file system of its own. Standard library only."""
import ctypes
import os
import platform
import struct
import tempfile

_NR_BPF = {"x86_64": 321, "aarch64": 280}[platform.machine()]
_MAP_CREATE, _MAP_LOOKUP, _MAP_UPDATE, _OBJ_PIN, _OBJ_GET, _OBJ_GET_INFO = 0, 1, 2, 6, 7, 15
MAP_TYPE_HASH, MAP_TYPE_LRU_HASH = 1, 9
ENTRIES = 1 << 14

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = _libc.syscall(ctypes.c_long(_NR_BPF), ctypes.c_long(cmd), buf, ctypes.c_uint(128))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r, buf


def bpf_fs_root(test):
    """A fresh BPF file system mounted on a temporary directory, unmounted (which drops everything
    pinned in it) and removed when the test ends: /sys/fs/bpf is not mounted on every machine,
    and a test's pins must not outlive it."""
    d = tempfile.mkdtemp(prefix="nodeprof-bpffs-")
    test.addCleanup(os.rmdir, d)
    if _libc.mount(b"bpf", d.encode(), b"bpf", 0, None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount a BPF file system on {d}: {os.strerror(e)}")
    test.addCleanup(_umount, d)
    return d


def _umount(d):
    if _libc.umount2(d.encode(), 2) != 0:  # MNT_DETACH: a pin still open elsewhere does not keep it
        e = ctypes.get_errno()
        raise OSError(e, f"unmount {d}: {os.strerror(e)}")


def map_path(root):
    return os.path.join(root, "otel", "traces_ctx_v1")


def create(root, map_type=MAP_TYPE_LRU_HASH, key_size=8, value_size=24):
    """Creates and pins at root the map as OBI does (mode 01700 on its directory); its fd."""
    os.makedirs(os.path.join(root, "otel"), mode=0o1700, exist_ok=True)
    fd, _ = _bpf(_MAP_CREATE, struct.pack("=7I16s", map_type, key_size, value_size, ENTRIES, 0, 0, 0,
                                          b"traces_ctx_v1"))
    path = ctypes.create_string_buffer(map_path(root).encode())
    _bpf(_OBJ_PIN, struct.pack("=QII", ctypes.addressof(path), fd, 0))
    return fd


def open_pinned(root):
    """The pinned map's fd (OSError when there is none)."""
    path = ctypes.create_string_buffer(map_path(root).encode())
    fd, _ = _bpf(_OBJ_GET, struct.pack("=QII", ctypes.addressof(path), 0, 0))
    return fd


def info(fd):
    """(map type, key size, value size, max entries, name) of the map fd."""
    out = ctypes.create_string_buffer(80)
    _bpf(_OBJ_GET_INFO, struct.pack("=IIQ", fd, 80, ctypes.addressof(out)))
    t, _id, k, v, n, _flags, name = struct.unpack_from("=6I16s", out.raw)
    return t, k, v, n, name.rstrip(b"\0").decode()


def pid_tgid(pid, tid):
    return (pid << 32) | tid


def set_span(fd, pid, tid, trace_id, span_id):
    """What OBI writes while thread tid of process pid serves span span_id of trace trace_id
    (bytes, 16 and 8)."""
    assert len(trace_id) == 16 and len(span_id) == 8
    key = ctypes.create_string_buffer(struct.pack("=Q", pid_tgid(pid, tid)), 8)
    val = ctypes.create_string_buffer(trace_id + span_id, 24)
    _bpf(_MAP_UPDATE, struct.pack("=IIQQQ", fd, 0, ctypes.addressof(key), ctypes.addressof(val), 0))
