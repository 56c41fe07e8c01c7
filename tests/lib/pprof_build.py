"""Builds small pprof profiles (profile.proto field numbers of
docs/specs/pyroscope-push.md §1.2) for tests that feed the agent without BPF:
one function and location per frame name, of the kinds nodeprof pushes
(agent/pprof/builder.h): cpu/nanoseconds samples at a given rate, offcpu/nanoseconds
(no period type, period 1) or uprobe/count (period type uprobe/count, period 1)."""
import gzip
import time


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field_varint(num, v):
    return _varint(num << 3) + _varint(v)


def _field_bytes(num, b):
    return _varint(num << 3 | 2) + _varint(len(b)) + b


# kind: (sample type, unit), (period type, unit) or None, as the builder writes them.
KINDS = {
    "cpu": (("cpu", "nanoseconds"), ("cpu", "nanoseconds")),
    "offcpu": (("offcpu", "nanoseconds"), None),
    "uprobe": (("uprobe", "count"), ("uprobe", "count")),
}


def build(stacks, rate_hz=100, time_ns=None, duration_ns=10_000_000_000, compress=True, kind="cpu"):
    """stacks: {("leaf", ..., "root"): count}: samples for cpu, nanoseconds off CPU for
    offcpu, calls for uprobe. Returns gzipped (or plain) pprof bytes."""
    period = 1_000_000_000 // rate_hz if kind == "cpu" else 1
    sample_type, period_type = KINDS[kind]
    strings = [""]
    index = {"": 0}

    def s(x):
        if x not in index:
            index[x] = len(strings)
            strings.append(x)
        return index[x]

    st = _field_varint(1, s(sample_type[0])) + _field_varint(2, s(sample_type[1]))
    pt = _field_varint(1, s(period_type[0])) + _field_varint(2, s(period_type[1])) if period_type else None
    funcs = {}
    out = bytearray()
    out += _field_bytes(1, st)
    for stack, count in stacks.items():
        locs = []
        for name in stack:
            if name not in funcs:
                funcs[name] = len(funcs) + 1
            locs.append(funcs[name])
        packed = b"".join(_varint(x) for x in locs)
        out += _field_bytes(2, _field_bytes(1, packed) + _field_bytes(2, _varint(count * period)))
    for name, fid in funcs.items():
        out += _field_bytes(4, _field_varint(1, fid) + _field_bytes(4, _field_varint(1, fid)))
    for name, fid in funcs.items():
        out += _field_bytes(5, _field_varint(1, fid) + _field_varint(2, s(name)))
    for x in strings:
        out += _field_bytes(6, x.encode())
    now = time.time_ns() if time_ns is None else time_ns
    out += _field_varint(9, now - duration_ns)
    out += _field_varint(10, duration_ns)
    if pt:
        out += _field_bytes(11, pt)
    out += _field_varint(12, period)
    data = bytes(out)
    return gzip.compress(data) if compress else data
