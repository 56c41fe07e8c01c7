"""An independent decoder for pprof (profile.proto) used by the integration tests,
written from the field numbers of ../shared/specs/pyroscope-push.md §1.2 and sharing
no code with the agent. Accepts gzipped or plain bytes, packed or unpacked repeats."""
import gzip


def _varint(b, i):
    x = s = 0
    while True:
        if i >= len(b):
            raise ValueError("truncated varint")
        c = b[i]
        i += 1
        x |= (c & 0x7F) << s
        if not c & 0x80:
            return x, i
        s += 7
        if s > 70:
            raise ValueError("varint too long")


def fields(b):
    """Yields (field number, wire type, value) for one message; value is int or bytes."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise ValueError("truncated field")
            v, i = b[i:i + n], i + n
        elif wire == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wire == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"bad wire type {wire}")
        yield num, wire, v


def _repeated(wire, v):
    if wire == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def decode(data):
    """Returns a dict with string_table, sample_type, samples, mappings, locations, functions,
    period, period_type, time_nanos, duration_nanos. Raises ValueError on malformed input."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    p = {"string_table": [], "sample_type": [], "samples": [], "mappings": {}, "locations": {},
         "functions": {}, "period": 0, "period_type": None, "time_nanos": 0, "duration_nanos": 0}
    for num, wire, v in fields(data):
        if num == 1:
            p["sample_type"].append({n: x for n, _, x in fields(v)})
        elif num == 2:
            s = {"location_id": [], "value": [], "label": []}
            for n, w, x in fields(v):
                if n == 1:
                    s["location_id"] += _repeated(w, x)
                elif n == 2:
                    s["value"] += [_signed(y) for y in _repeated(w, x)]
                elif n == 3:
                    s["label"].append({k: y for k, _, y in fields(x)})
            p["samples"].append(s)
        elif num == 3:
            m = {n: x for n, _, x in fields(v)}
            p["mappings"][m.get(1, 0)] = m
        elif num == 4:
            loc = {"id": 0, "mapping_id": 0, "address": 0, "lines": []}
            for n, _, x in fields(v):
                if n == 1:
                    loc["id"] = x
                elif n == 2:
                    loc["mapping_id"] = x
                elif n == 3:
                    loc["address"] = x
                elif n == 4:
                    loc["lines"].append({k: y for k, _, y in fields(x)})
            p["locations"][loc["id"]] = loc
        elif num == 5:
            f = {n: x for n, _, x in fields(v)}
            p["functions"][f.get(1, 0)] = f
        elif num == 6:
            p["string_table"].append(v.decode("utf-8"))
        elif num == 9:
            p["time_nanos"] = _signed(v)
        elif num == 10:
            p["duration_nanos"] = _signed(v)
        elif num == 11:
            p["period_type"] = {n: x for n, _, x in fields(v)}
        elif num == 12:
            p["period"] = _signed(v)
    return p


def stacks(p):
    """[(function names leaf first, first value)] for every sample."""
    st = p["string_table"]
    out = []
    for s in p["samples"]:
        names = []
        for lid in s["location_id"]:
            loc = p["locations"][lid]
            for line in loc["lines"]:
                names.append(st[p["functions"][line[1]].get(2, 0)])
        out.append((names, s["value"][0] if s["value"] else 0))
    return out


def folded(p):
    """The profile as {"root;...;leaf": value}."""
    agg = {}
    for names, v in stacks(p):
        k = ";".join(reversed(names))
        agg[k] = agg.get(k, 0) + v
    return agg
