"""Differential test of whole rule lists: random rules and targets through
`nodeprof tools relabel` against the expected result computed by the Go oracle's
"process" op (tests/relabel/oracle/process.go: Prometheus' relabeling semantics and
Alloy's rule validation, written from their documentation and source, on Go's own
regexp, strings and md5).

Every action, separators (empty, multi-character, newline), missing and empty labels,
Unicode values and label names, `$` templates, anchors and newlines, and long values
(beyond what PCRE2's JIT stack holds). The seed is printed with every failure; set
RELABEL_DIFF_SEED to replay one, RELABEL_DIFF_CASES for more or fewer rule lists.

The local Go is 1.19 (Unicode 13, no (?<name>), old \\p names) while Prometheus is built
with Go >= 1.25: the generator keeps to what both agree on, and the points where they
differ are fixed cases below with Go 1.25's results written out.
"""
import json
import os
import random
import subprocess
import sys
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import np  # noqa: E402
from test_relabel_oracle import GO_BIN, build_go_oracle, gen  # noqa: E402
from test_tools_relabel import alloy_string  # noqa: E402

ACTIONS = ["replace", "keep", "drop", "hashmod", "labelmap", "labeldrop", "labelkeep", "lowercase", "uppercase",
           "keepequal", "dropequal"]
NAMES = ["a", "b", "c", "job", "__meta_x", "l_app", "l_tier", "x.y", "\u00e9", "n\u00fc", "\u03c3a", "pod-name"]
VALUES = ["", "1", "x", "foo", "Foo", "FOO", "a;b", ";", "line1\nline2", "\n", "\u00e9", "\u03a3\u0391\u03a3",
          "\u017fK\u212a", "$1", "${1}", "a b", "\u00df", "web-7d9f", "10.1.2.3:80", "l_app", "abab", "ab\nab"]
REGEXES = ["(.*)", "(.+)", "", "x", "foo", "(f)(o+)", "(?i)foo", "a;(.*)", "(.*);(.*)", "line1.*line2", "^foo$",
           "foo$", "(?m)^line2$", "(?-s)line1.*", "l_(.+)", "(.)(.*)", "[a-z]+", "\\d+", "(?U)(.+)(.*)", "(|a)*",
           "\u00e9|\u03c3", "(?i)\u03c3", "(a|b)*", "(?P<n>.)(.*)", "x{2,3}", "[[:alpha:]]+", "\\pL+", "(.*)x",
           "(?i)(\u017f)(k)", "\\$1", "(.*?)(\\d*)", "(a|ab)(c|bcd)(d*)", "((a)|b)+", "(ab)*", "__meta_(.*)",
           "[^;]*;(.*)", "(\\w+)\\.(\\w+)", "(?s)(.*)\\n(.*)", "(\\p{Greek}+)(.*)", ".*[^.]"]
TARGETS = ["t", "a", "b", "${1}", "$1", "t_${1}", "x.y", "\u00e9", "${2}x", "l_$1", "__tmp", "$n", "${n}_x", "1x",
           "t$"]
REPLACEMENTS = ["$1", "${1}", "", "v", "$2-$1", "$$", "${n}", "x$0", "$1x", "lit", "${1}_${2}", "\u00e9$1",
                "$", "new_$1"]
SEPARATORS = [";", "", ",", ";;", "\n", "\u00e9"]


def long_value(rng):
    """A value long enough that PCRE2's JIT stack runs out on loops over it."""
    return rng.choice(["ab", "a", "x;", "\u00e9a"]) * rng.randint(20000, 90000)


def gen_rule(rng):
    """A rule, valid most of the time: fields an action refuses are written rarely."""
    r = {}
    if rng.random() < 0.9:
        r["action"] = rng.choice(ACTIONS)
    a = r.get("action", "replace")
    label_only = a in ("labeldrop", "labelkeep")
    equal = a in ("keepequal", "dropequal")
    if rng.random() < (0.03 if label_only else 0.2 if a == "labelmap" else 0.85):
        r["source_labels"] = [rng.choice(NAMES + [""]) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
    if rng.random() < (0.03 if label_only or equal else 0.25):
        r["separator"] = rng.choice(SEPARATORS)
    if rng.random() < (0.05 if equal else 0.8):
        r["regex"] = rng.choice(REGEXES) if rng.random() < 0.7 else gen(rng)
    if a == "hashmod" or rng.random() < 0.02:
        r["modulus"] = rng.choice([1, 2, 7, 1000, 2 ** 32, 2 ** 63 - 1]) if rng.random() < 0.97 else 0
    if rng.random() < (0.97 if a in ("replace", "hashmod", "lowercase", "uppercase", "keepequal", "dropequal")
                       else 0.03):
        r["target_label"] = rng.choice(TARGETS + NAMES)
    if rng.random() < (0.6 if a in ("replace", "labelmap") else 0.03):
        r["replacement"] = rng.choice(REPLACEMENTS)
    return r


def gen_target(rng):
    t = {}
    for _ in range(rng.randint(0, 6)):
        t[rng.choice(NAMES)] = long_value(rng) if rng.random() < 0.01 else rng.choice(VALUES)
    return t


def rules_file(rules):
    blocks = []
    for r in rules:
        lines = ["rule {"]
        for k, v in r.items():
            if k == "source_labels":
                lines.append("  source_labels = [%s]" % ", ".join(alloy_string(x) for x in v))
            elif k == "modulus":
                lines.append("  modulus = %d" % v)
            else:
                lines.append("  %s = %s" % (k, alloy_string(v)))
        lines.append("}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks) + "\n"


def oracle(requests):
    data = "".join(json.dumps(r) + "\n" for r in requests)
    p = subprocess.run([GO_BIN], input=data, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"oracle exited {p.returncode}: {p.stderr[-2000:]}")
    return [json.loads(line) for line in p.stdout.splitlines()]


def run_tool(directory, index, rules, targets):
    """(error text or None, output list) from `nodeprof tools relabel`."""
    path = os.path.join(directory, "rules%d.alloy" % index)
    with open(path, "w") as f:
        f.write(rules_file(rules))
    p = np.nodeprof("tools", "relabel", path, input=json.dumps(targets))
    if p.returncode != 0:
        return p.stderr.strip() or f"exit {p.returncode}", None
    return None, json.loads(p.stdout)


def short(x, n=300):
    s = json.dumps(x, ensure_ascii=False)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} chars)"


class RelabelDifferential(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        build_go_oracle()

    def test_random_rule_lists(self):
        seed = int(os.environ.get("RELABEL_DIFF_SEED", int(time.time())))
        n = int(os.environ.get("RELABEL_DIFF_CASES", "1200"))
        rng = random.Random(seed)
        cases = [([gen_rule(rng) for _ in range(rng.randint(1, 4))], [gen_target(rng) for _ in range(4)])
                 for _ in range(n)]
        want = oracle([{"op": "process", "rules": r, "targets": t} for r, t in cases])
        d = np.tmpdir(self)
        with ThreadPoolExecutor(max_workers=2) as pool:
            got = list(pool.map(lambda i: run_tool(d, i, *cases[i]), range(n)))
        failures, compared, errors, ambiguous = [], 0, 0, 0
        for i, ((rules, targets), w, (gerr, gout)) in enumerate(zip(cases, want, got)):
            if w.get("ambiguous"):
                ambiguous += 1
                continue
            if w["err"] is not None:
                errors += 1
                # Same message, at the rule's position (the action's spelling is checked by
                # the config schema with a message of its own).
                msg = w["err"].split(": ", 1)[1]
                if gerr is None or (msg not in gerr and "unrecognized action type" not in msg):
                    failures.append(f"case {i}: oracle refuses ({w['err']}), nodeprof says {gerr}\n"
                                    f"  rules {short(rules)}")
                continue
            if gerr is not None:
                failures.append(f"case {i}: nodeprof refuses: {gerr[-300:]}\n  rules {short(rules)}")
                continue
            compared += len(targets)
            if gout != w["out"]:
                failures.append(f"case {i}:\n  rules {short(rules)}\n  targets {short(targets)}\n"
                                f"  want {short(w['out'])}\n  got  {short(gout)}")
        self.assertEqual(failures[:8], [], f"seed {seed} (RELABEL_DIFF_SEED={seed} replays it): "
                                           f"{len(failures)} of {n} rule lists differ")
        # The generator must mostly produce valid, unambiguous rule lists.
        self.assertGreater(compared, n * 2, f"seed {seed}: only {compared} targets compared")
        self.assertGreater(errors, n // 50, f"seed {seed}: too few invalid rule lists ({errors})")
        self.assertLess(ambiguous, n // 10, f"seed {seed}: {ambiguous} ambiguous rule lists")

    def test_fixed_regressions(self):
        """The differences seen against Prometheus 3 on Go 1.26 (issue 16), with Go 1.25+'s
        results written out where the local Go 1.19 would answer differently."""
        d = np.tmpdir(self)
        big = "ab" * 80000
        names = "|".join("namespace-%d" % i for i in range(6000))
        cases = [
            # keepequal/dropequal with no source_labels compare with "".
            ([{"action": "keepequal", "target_label": "m"}], [{"a": "1"}, {"a": "1", "m": "x"}], [{"a": "1"}]),
            ([{"action": "dropequal", "target_label": "m"}], [{"a": "1"}, {"a": "1", "m": "x"}],
             [{"a": "1", "m": "x"}]),
            # \p{C} holds unassigned code points; (?i)\p{LC} is not case-folded (U+0345 stays out).
            ([{"source_labels": ["a"], "regex": "\\p{C}", "action": "keep"}], [{"a": "\u0378"}, {"a": "b"}],
             [{"a": "\u0378"}]),
            ([{"source_labels": ["a"], "regex": "(?i)\\p{LC}", "action": "drop"}], [{"a": "\u0345"}, {"a": "b"}],
             [{"a": "\u0345"}]),
            # Long values: Go's answer, groups included, not a dropped target.
            ([{"source_labels": ["a"], "regex": "(?:(a)|b)*", "target_label": "t"}], [{"a": big}],
             [{"a": big, "t": "a"}]),
            ([{"source_labels": ["a"], "regex": "((?:a|b)*)c?", "target_label": "n", "replacement": "ok"}],
             [{"a": big}], [{"a": big, "n": "ok"}]),
            # A regexp beyond PCRE2's compiled-size limit.
            ([{"source_labels": ["ns"], "regex": names, "action": "keep"}],
             [{"ns": "namespace-5999"}, {"ns": "namespace-6000"}], [{"ns": "namespace-5999"}]),
            # Alloy decodes source_labels = [""] (Prometheus' loader refuses it).
            ([{"source_labels": ["", "a"], "separator": "-", "target_label": "j"}], [{"a": "1"}],
             [{"a": "1", "j": "-1"}]),
        ]
        for i, (rules, targets, want) in enumerate(cases):
            with self.subTest(i=i, rules=short(rules, 120)):
                err, got = run_tool(d, i, rules, targets)
                self.assertIsNone(err)
                self.assertEqual(got, want)
        for i, pattern in enumerate(["\\p{Old_Italic}", "\\p{SignWriting}", "\\p{Grek}"]):
            with self.subTest(pattern=pattern):
                err, _ = run_tool(d, 100 + i, [{"regex": pattern, "action": "keep"}], [])
                self.assertIsNotNone(err)
                self.assertIn("error parsing regexp: invalid character class range: `%s`" % pattern, err)


if __name__ == "__main__":
    unittest.main()
