"""A parser for the Prometheus text exposition format 0.0.4, written from the format's
documentation (prometheus.io/docs/instrumenting/exposition_formats), for checking what
/metrics serves. It is strict where a scraper or the conventions are:

- "# HELP name text" (escapes \\\\ and \\n) and "# TYPE name type" at most once per family,
  TYPE before the family's first sample; other comments are ignored;
- samples "name{label="value",...} value [timestamp]" with label values escaped as \\\\,
  \\" and \\n; names and label names from the allowed alphabets; values as Go's
  ParseFloat reads them (+Inf, -Inf, NaN);
- a family's samples are contiguous, and no series (name + label set) appears twice;
- counters are named *_total; histograms have only *_bucket (with an "le" label),
  *_sum and *_count samples; per label set the buckets are cumulative, include
  le="+Inf", and +Inf equals _count.

parse(text) returns {family name: Family}; errors raise ValueError naming the line."""
import math
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


class Family:
    def __init__(self, name):
        self.name = name
        self.type = "untyped"
        self.help = None
        self.typed = False
        self.samples = []  # (sample name, {label: value}, float)

    def value(self, labels=None, suffix=""):
        """The value of the sample name+suffix with exactly these labels (None when absent)."""
        want = labels or {}
        for n, ls, v in self.samples:
            if n == self.name + suffix and ls == want:
                return v
        return None

    def __repr__(self):
        return f"Family({self.name}, {self.type}, {len(self.samples)} samples)"


def _unescape(s, allow_quote, lineno):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s):
                raise ValueError(f"line {lineno}: dangling backslash")
            n = s[i + 1]
            if n == "\\":
                out.append("\\")
            elif n == "n":
                out.append("\n")
            elif n == '"' and allow_quote:
                out.append('"')
            else:
                raise ValueError(f"line {lineno}: invalid escape \\{n}")
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _float(s, lineno):
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"line {lineno}: bad value {s!r}") from None


def _labels(s, i, lineno):
    """Parses {a="b",...} starting at s[i] == '{'; returns (dict, index after '}')."""
    labels = {}
    i += 1
    while True:
        while i < len(s) and s[i] == " ":
            i += 1
        if i < len(s) and s[i] == "}":
            return labels, i + 1
        m = LABEL.match(s, i)
        if not m:
            raise ValueError(f"line {lineno}: bad label name at column {i + 1}")
        name = m.group(0)
        i = m.end()
        if s[i:i + 2] != '="':
            raise ValueError(f"line {lineno}: expected =\" after label {name}")
        i += 2
        start = i
        while i < len(s) and s[i] != '"':
            i += 2 if s[i] == "\\" else 1
        if i >= len(s):
            raise ValueError(f"line {lineno}: unterminated label value")
        if name in labels:
            raise ValueError(f"line {lineno}: duplicate label {name}")
        labels[name] = _unescape(s[start:i], True, lineno)
        i += 1
        if i < len(s) and s[i] == ",":
            i += 1
        elif i < len(s) and s[i] == "}":
            return labels, i + 1
        else:
            raise ValueError(f"line {lineno}: expected , or }} after label {name}")


def _family_of(name, families):
    """The family a sample belongs to: itself, or a histogram/summary by suffix."""
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            if base in families and families[base].type in ("histogram", "summary"):
                return base
    return name


def parse(text):
    families = {}
    order = []  # family of each sample, to check contiguity
    seen_series = set()
    if text and not text.endswith("\n"):
        raise ValueError("the exposition must end with a newline")
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME.fullmatch(name):
                    raise ValueError(f"line {lineno}: bad metric name {name!r}")
                fam = families.setdefault(name, Family(name))
                if parts[1] == "HELP":
                    if fam.help is not None:
                        raise ValueError(f"line {lineno}: second HELP for {name}")
                    fam.help = _unescape(parts[3] if len(parts) > 3 else "", False, lineno)
                else:
                    t = parts[3].strip() if len(parts) > 3 else ""
                    if t not in TYPES:
                        raise ValueError(f"line {lineno}: unknown type {t!r}")
                    if fam.typed:
                        raise ValueError(f"line {lineno}: second TYPE for {name}")
                    if fam.samples:
                        raise ValueError(f"line {lineno}: TYPE for {name} after its samples")
                    fam.type, fam.typed = t, True
            continue
        m = NAME.match(line)
        if not m:
            raise ValueError(f"line {lineno}: bad sample {line!r}")
        sname = m.group(0)
        i = m.end()
        labels = {}
        if i < len(line) and line[i] == "{":
            labels, i = _labels(line, i, lineno)
        rest = line[i:].split()
        if len(rest) not in (1, 2) or line[i:i + 1] != " ":
            raise ValueError(f"line {lineno}: expected a value (and an optional timestamp)")
        value = _float(rest[0], lineno)
        if len(rest) == 2 and not re.fullmatch(r"-?[0-9]+", rest[1]):
            raise ValueError(f"line {lineno}: bad timestamp {rest[1]!r}")
        fname = _family_of(sname, families)
        fam = families.setdefault(fname, Family(fname))
        if order and order[-1] != fname and fname in order:
            raise ValueError(f"line {lineno}: samples of {fname} are not contiguous")
        order.append(fname)
        key = (sname, tuple(sorted(labels.items())))
        if key in seen_series:
            raise ValueError(f"line {lineno}: duplicate series {sname}{labels}")
        seen_series.add(key)
        fam.samples.append((sname, labels, value))
    for fam in families.values():
        _check_family(fam)
    return families


def _check_family(fam):
    if fam.type == "counter":
        if not fam.name.endswith("_total"):
            raise ValueError(f"counter {fam.name} is not named *_total")
        for n, _, v in fam.samples:
            if n != fam.name:
                raise ValueError(f"counter {fam.name} has a sample named {n}")
            if not (v >= 0):
                raise ValueError(f"counter {fam.name} has the value {v}")
    elif fam.type == "gauge":
        for n, _, _ in fam.samples:
            if n != fam.name:
                raise ValueError(f"gauge {fam.name} has a sample named {n}")
    elif fam.type == "histogram":
        groups = {}
        for n, ls, v in fam.samples:
            if n == fam.name + "_bucket":
                if "le" not in ls:
                    raise ValueError(f"histogram {fam.name}: bucket without le")
                rest = tuple(sorted((k, x) for k, x in ls.items() if k != "le"))
                groups.setdefault(rest, {"buckets": [], "sum": None, "count": None})["buckets"].append(
                    (_float(ls["le"], 0), v))
            elif n in (fam.name + "_sum", fam.name + "_count"):
                if "le" in ls:
                    raise ValueError(f"histogram {fam.name}: {n} with an le label")
                g = groups.setdefault(tuple(sorted(ls.items())), {"buckets": [], "sum": None, "count": None})
                g["sum" if n.endswith("_sum") else "count"] = v
            else:
                raise ValueError(f"histogram {fam.name} has a sample named {n}")
        for key, g in groups.items():
            b = g["buckets"]
            if not b or b[-1][0] != math.inf:
                raise ValueError(f"histogram {fam.name}{dict(key)}: no le=\"+Inf\" bucket (last)")
            if any(b[i][0] >= b[i + 1][0] for i in range(len(b) - 1)):
                raise ValueError(f"histogram {fam.name}{dict(key)}: le values are not increasing")
            if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
                raise ValueError(f"histogram {fam.name}{dict(key)}: buckets are not cumulative")
            if g["count"] is None or g["sum"] is None:
                raise ValueError(f"histogram {fam.name}{dict(key)}: _sum or _count missing")
            if g["count"] != b[-1][1]:
                raise ValueError(f"histogram {fam.name}{dict(key)}: _count {g['count']} != +Inf bucket {b[-1][1]}")
