"""pprof for the integration tests: decoded by the Pyroscope test server's decoder
(tests/servers/pyroscope.py, written from the field numbers of
docs/specs/pyroscope-push.md §1.2, sharing no code with the agent), and checked
with the server's own validation, so a profile that passes here would pass Pyroscope's."""
import gzip
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "servers"))
import pyroscope  # noqa: E402  (tests/servers)


def decode(data, ingest=True):
    """The profile as the server decodes it (gzipped or plain); raises on a malformed or
    invalid profile (ingest=False: of any time, as a download may be). Keys: string_table, sample_type [(type, unit)], sample, mapping,
    location, function, period, period_type (type, unit), time_nanos, duration_nanos."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    p = pyroscope.decode_profile(data)
    pyroscope.validate_profile(p, ingest)
    return p


def folded(p):
    """The profile as {"root;...;leaf": summed first value}."""
    agg = {}
    for st in pyroscope.summarize_profile(p, b"", False, 0)["stacks"]:
        k = ";".join(st["frames"])
        agg[k] = agg.get(k, 0) + st["values"][0]
    return agg
