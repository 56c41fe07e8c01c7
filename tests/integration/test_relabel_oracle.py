"""The relabel engine's Go semantics against Go itself.

tests/relabel/oracle/main.go answers with Go's regexp (on Prometheus' anchored
"^(?s:RE)$"), Regexp.Expand, ReplaceAllString, strings.ToLower/ToUpper, strconv.Quote
and unicode.SimpleFold; build/harness/relabel_oracle answers the same requests with the
C engine (PCRE2 translation, templates, ICU case mapping). Every answer must agree.

The local Go is 1.19 (Unicode 13) while Prometheus is built with a current Go
(Unicode 15, like ICU 72): Unicode comparisons are limited to code points Go 1.19
knows, and generated patterns avoid the syntax newer Go added ((?<name>), loose \\p names).
"""
import json
import os
import random
import subprocess
import unittest

import np

ORACLE_SRC = os.path.join(np.ROOT, "tests", "relabel", "oracle")
GO_BIN = os.path.join(np.ROOT, "build", "relabel", "go_oracle")
HARNESS = os.path.join(np.ROOT, "build", "harness", "relabel_oracle")


def hx(s):
    if isinstance(s, str):
        s = s.encode("utf-8")
    return s.hex()


def ask(binary, requests):
    data = "".join(json.dumps(r) + "\n" for r in requests)
    p = subprocess.run([binary], input=data, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"{binary} exited {p.returncode}: {p.stderr[-2000:]}")
    lines = p.stdout.splitlines()
    if len(lines) != len(requests):
        raise AssertionError(f"{binary}: {len(lines)} answers for {len(requests)} requests")
    return [json.loads(line) for line in lines]


# Pattern pieces: literals and escapes, classes, Unicode groups, anchors, flags.
ATOMS = [
    "a", "b", "c", "k", "s", "é", "K", "\u212a", "\u017f", "\u03c3", "\\.", "\\-", "\\n", "\\t", ".", "x",
    "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "[abc]", "[^a]", "[a-c]", "[[:alpha:]]", "[^[:space:]]",
    "[[:^digit:]k]", "\\pL", "\\p{Greek}", "\\PL", "\\p{^Lu}", "[\\p{Lu}\\d]", "[^\\pL\\n]", "\\x41",
    "\\x{e9}", "\\101", "\\0", "\\Qa.b\\E", "[]a]", "[a-]", "[\\-a]", "\\b", "\\B", "^", "$", "\\A", "\\z",
    "(?i:k)", "(?i:s)", "(?i:\u03c3)", "(?i:[a-c])", "(?i:\\W)", "(?i:[^k])", "{,5}", "a{,2}", "\\{",
    "(?-s:.)", "(?m:^)", "(?m:$)", "(?m:^b)", "[\\x{0}-\\x{10FFFF}]", "[^\\x00-\\x{10FFFF}]", "\\x{FFFD}",
]
FLAGS = ["(?i)", "(?s)", "(?-s)", "(?m)", "(?U)", "(?i-s)", "(?)"]
QUANTS = ["*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{0,2}?", "{2,}", "{0}", "{1,}?", "{0,1}"]

ALPHABET = ["a", "b", "c", "k", "K", "s", "S", "x", "é", "\u212a", "\u017f", "\u03c3", "\u03a3", "\u03c2",
            "0", "1", "_", "-", ".", " ", "\n", "\t", "\v", "\u0663"]
BAD_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80"]

TEMPLATES = ["$1", "${1}x", "$1x", "$0", "${2}", "$n1", "${n1}", "$$", "$", "${", "a$-b", "${01}", "$10",
             "x${1}y${2}z", "", "lit", "${n1}${n2}$2"]


def gen(rng, depth=0):
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice(ATOMS)
    if r < 0.45:
        return gen(rng, depth + 1) + gen(rng, depth + 1)
    if r < 0.55:
        return gen(rng, depth + 1) + "|" + (gen(rng, depth + 1) if rng.random() < 0.7 else "")
    if r < 0.65:
        return "(" + gen(rng, depth + 1) + ")"
    if r < 0.7:
        return "(?P<n%d>" % rng.randint(1, 2) + gen(rng, depth + 1) + ")"
    if r < 0.75:
        return rng.choice(FLAGS) + gen(rng, depth + 1)
    if r < 0.8:
        return "(?:" + gen(rng, depth + 1) + "|)"
    # A quantified group: the group keeps quantifiers from stacking (a syntax error).
    return "(" + ("?:" if rng.random() < 0.4 else "") + gen(rng, depth + 1) + ")" + rng.choice(QUANTS)


def subject(rng):
    out = b""
    for _ in range(rng.randint(0, 7)):
        if rng.random() < 0.04:
            out += rng.choice(BAD_BYTES)
        else:
            out += rng.choice(ALPHABET).encode("utf-8")
    return out


# Semantics the PCRE2 translation has to get right, each with telling subjects.
CURATED = [
    ("(|a)*", ["aa", "", "a"]), ("(a|)*", ["aa"]), ("(|a)+", ["aa", ""]), ("(a*)*", ["b", "", "aa"]),
    ("(a*)+", ["b", "aa"]), ("(a|b)*?c", ["abc"]), ("((a)|b)+", ["ab", "ba"]), ("(a|ab)(c|bcd)(d*)", ["abcd"]),
    ("(.*?)(\\d*)", ["ab12"]), ("(.+?)(\\:\\d+)?;(\\d+)", ["host:80;90", "host;1"]), ("f|o", ["foo", "f"]),
    ("a)|(b", ["xxb", "a", "b", "ab"]), ("(a)|b)|(c", ["a", "xb", "c"]), ("foo$", ["foo\n", "foo"]),
    ("(?m)foo$", ["foo\n"]), ("(?m)^b", ["a\nb"]), ("(?m)(^|a)*", ["a\n"]), ("a\\b", ["a", "aé", "ab"]),
    ("\\bé", ["é"]), ("\\s+", ["\v", " \t"]), ("[[:space:]]", ["\v"]), ("\\d", ["\u0663", "3"]),
    ("(?i)k", ["\u212a", "K"]), ("(?i)\u212a", ["k"]), ("(?i)ß", ["\u1e9e", "SS"]), ("(?i)\u0131", ["I", "i"]),
    ("(?i)\u0130", ["i", "I"]), ("(?i)[^\\W]", ["\u212a", "\u017f"]), ("(?i)\\W", ["\u212a", "\u017f", "-"]),
    ("(?i)\\pL", ["a"]), ("(?i)\\p{Lu}", ["a", "\u01c5"]), ("(?i)[[:upper:]]", ["a", "\u212a"]),
    ("\\PL", ["1"]), ("\\p{Greek}+", ["αβγ"]), (".", ["\xff", "é"]), ("a{,5}", ["a{,5}", "aaaaa"]),
    ("(?U)(a+)(a*)", ["aaa"]), ("(?U)(a+?)(a*)", ["aaa"]), ("(a){0}", ["", "a"]), ("(a?){2,3}", ["a", ""]),
    ("((a)|(b))+", ["ab", "ba"]), ("(?:(a)|b)*", ["ab"]), ("(a|)+b", ["aab"]), ("(a|){3,}", ["aaaa"]),
    ("(\\b)*a", ["a"]), ("()*", [""]), ("(^)*", [""]), ("(?:^|,)(a)", [",a", "a"]), ("\\x{D800}|a", ["a"]),
    ("[\\x{D7FF}-\\x{E000}]", ["\ud7ff".encode("utf-8", "surrogatepass").decode("utf-8", "ignore"), "\ue000"]),
    ("(?P<1x>a)", ["a"]), ("(?P<n1>a)(?P<n1>b)?", ["a", "ab"]), ("(?P<n1>x)?(?P<n1>a)", ["a", "xa"]),
    ("\\Q(a)\\E", ["(a)"]), ("[a-c-e]", ["-", "d"]), ("\\12", ["\n"]), ("(?s).", ["\n"]), ("(?-s).", ["\n"]),
]

ERRORS = [
    "abc(def", "a)", "a**", "a++", "a*+", "a{2}{3}", "a{2}*", "*", "(*)", "a|*", "(?=a)", "(?!a)", "(?>a)", "\\1", "(a)\\1", "\\Z", "\\C", "\\R", "\\h", "\\K", "\\G", "\\e", "a{1001}",
    "a{2,1}", "(a{10}){101}", "((a{10}){10}){11}", "a{1000}", "\\8", "\\xZZ", "\\x{110000}", "\\x{}", "\\x{zz}",
    "[[:foo:]]", "[z-a]", "\\p{Foo}", "\\pX", "[a", "[]", "(?P<>a)", "(?P<a-b>a)", "(?P=n)", "(?x)a",
    "(?i-)", "(?-)", "(?i", "(?#c)", "\\é", "x{1001,}", "(?P<name", "\\p{", "[\\d-z]", "\\", "a\\",
    "(?i)(?P<n>", "[[:alpha:]", "\\Q", "(((", ")))",
]


def build_go_oracle():
    """Builds tests/relabel/oracle with the local Go into GO_BIN."""
    os.makedirs(os.path.dirname(GO_BIN), exist_ok=True)
    env = dict(os.environ, GO111MODULE="off", GOFLAGS="")
    env.setdefault("GOCACHE", os.path.join(np.ROOT, "build", "go-cache"))
    p = subprocess.run(["go", "build", "-o", GO_BIN, "."], cwd=ORACLE_SRC, capture_output=True, text=True, env=env,
                       timeout=300)
    if p.returncode != 0:
        raise AssertionError("go build of the oracle failed:\n" + p.stderr)


class RelabelGoOracle(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(HARNESS):
            raise AssertionError(f"{HARNESS} is missing: run `make unit` first")
        build_go_oracle()

    def compare(self, requests):
        want = ask(GO_BIN, requests)
        got = ask(HARNESS, requests)
        failures = []
        for req, w, g in zip(requests, want, got):
            if w != g:
                failures.append(f"request {describe(req)}\n" + first_difference(w, g))
        if failures:
            self.fail(f"{len(failures)} of {len(requests)} answers differ:\n" + "\n".join(failures[:15]))

    def match_requests(self, patterns_and_subjects):
        reqs = []
        for pat, subjects in patterns_and_subjects:
            subs = [s if isinstance(s, bytes) else s.encode("utf-8") for s in subjects]
            reqs.append({"op": "match", "re": hx(pat), "subjects": [s.hex() for s in subs],
                         "tmpls": [hx(t) for t in TEMPLATES]})
        return reqs

    def test_curated_patterns(self):
        self.compare(self.match_requests(CURATED))

    def test_random_patterns(self):
        rng = random.Random(20261122)
        cases = [(gen(rng), [subject(rng) for _ in range(6)]) for _ in range(4000)]
        self.compare(self.match_requests(cases))

    def test_go_program_engine(self):
        """Go's own program and Pike VM (relabel/rx_pike.c), which answers whenever PCRE2
        cannot (patterns too large for it, values too long for its backtracking), on every
        curated and random pattern: submatch offsets must be Go's."""
        rng = random.Random(20261123)
        cases = CURATED + [(gen(rng), [subject(rng) for _ in range(6)]) for _ in range(3000)]
        reqs = self.match_requests(cases)
        want = ask(GO_BIN, reqs)
        got = ask(HARNESS, [dict(r, op="pike", tmpls=[]) for r in reqs])
        failures = []
        for req, w, g in zip(reqs, want, got):
            if w.get("err") or g.get("err"):
                if bool(w.get("err")) != bool(g.get("err")):
                    failures.append(f"{describe(req)}: go err {w.get('err')} pike err {g.get('err')}")
                continue
            for i, (a, b) in enumerate(zip(w["results"], g["results"])):
                if a["m"] != b["m"]:
                    failures.append(f"{describe(req)} subject {i}: go {a['m']} pike {b['m']}")
        self.assertEqual(failures[:15], [], f"{len(failures)} differ")

    def test_long_values_and_large_patterns(self):
        """What PCRE2 alone cannot do gets Go's answer: a 160 KB value through loops that
        exhaust the JIT stack, an alternation of 6000 names and 52 counted repeats of 1000
        (beyond PCRE2's compiled-size limit), catastrophic backtracking with groups."""
        big = "ab" * 80000
        names = "|".join("namespace-%d" % i for i in range(6000))
        counted = "".join("%s{1000}" % c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        cases = [("((a|b)*)", [big, big + "c"]), ("(?:(a)|b)*c?", [big]), ("(.*?)x", ["a" * 160000 + "x"]),
                 ("([ab]+)+", [big]), ("(" + names + ")", ["namespace-5999", "namespace-6000", "namespace-1"]),
                 (counted, ["".join(c * 1000 for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
                            "a"]),
                 ("(x+x+)+y|x*(z)", ["x" * 30 + "z", "x" * 30]), ("(\\pL{1000})", ["\u00e9" * 1000])]
        reqs = self.match_requests(cases)
        got = ask(HARNESS, reqs)
        for req, g in zip(reqs, got):
            self.assertIsNone(g.get("err"), describe(req)[:200])
            for r in g["results"]:
                self.assertNotIn("error", r, describe(req)[:200])
        self.compare(reqs)

    def test_error_messages(self):
        self.compare(self.match_requests([(p, ["a"]) for p in ERRORS]))

    def test_case_mapping_every_code_point(self):
        req = [{"op": "cases", "from": 0, "to": 0x1FFFF}]
        want, got = ask(GO_BIN, req)[0]["cps"], {c[0]: c for c in ask(HARNESS, req)[0]["cps"]}
        self.assertGreater(len(want), 80000)
        bad = [(w, got.get(w[0])) for w in want if got.get(w[0]) != w]
        self.assertEqual(bad[:20], [], f"{len(bad)} code points map differently")

    def test_fold_orbits(self):
        assigned = {c[0] for c in ask(GO_BIN, [{"op": "cases", "from": 0, "to": 0x1FFFF}])[0]["cps"]}
        req = [{"op": "fold", "from": 0, "to": 0x1FFFF}]
        want = {o[0]: o[1:] for o in ask(GO_BIN, req)[0]["orbits"]}
        got = {o[0]: [c for c in o[1:] if c in assigned] for o in ask(HARNESS, req)[0]["orbits"] if o[0] in assigned}
        got = {k: v for k, v in got.items() if len(v) > 1}
        self.assertGreater(len(want), 2000)
        diff = [(k, want.get(k), got.get(k)) for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
        self.assertEqual(diff[:20], [], f"{len(diff)} orbits differ")

    def test_strings_lower_upper_quote(self):
        samples = [b"", b"abc", b"ABC", b"\xce\xa3\xcf\x83\xcf\x82", "İıKſßǅǆ".encode(), b"a\xffb", b"\xc3",
                   b"\xed\xa0\x80", b"\xef\xbf\xbd", b"tab\there\n\"q\"\\", b"\x00\x01\x7f", "\u00a0\u200b\u2028".encode(),
                   "\U0001f600 \U000e0001".encode(), b"\xf4\x90\x80\x80", b"\xc0\x80", "ǈǉǊ".encode()]
        rng = random.Random(7)
        samples += [subject(rng) for _ in range(300)]
        self.compare([{"op": "str", "s": s.hex()} for s in samples])


def first_difference(w, g):
    """The first differing part of two answers, short enough to read."""
    if isinstance(w, dict) and isinstance(g, dict) and "results" in w and "results" in g:
        for i, (a, b) in enumerate(zip(w["results"], g["results"])):
            if a != b:
                keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
                return f"    subject {i}: " + "; ".join(f"{k}: go {a.get(k)} c {b.get(k)}" for k in keys)
    return f"    go: {str(w)[:600]}\n    c:  {str(g)[:600]}"


def describe(req):
    if req["op"] == "match":
        return "match " + repr(bytes.fromhex(req["re"]).decode("utf-8", "replace")) + " on " + \
            repr([bytes.fromhex(s) for s in req["subjects"]])
    return json.dumps(req)[:200]


if __name__ == "__main__":
    unittest.main()
