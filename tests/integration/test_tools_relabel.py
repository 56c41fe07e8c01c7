"""`nodeprof tools relabel RULES_FILE` through the real binary: rule blocks in Alloy
syntax, targets as JSON on stdin, relabeled targets on stdout. Data-driven over
Prometheus's and Alloy's own test vectors (tests/fixtures/relabel-upstream.json), plus
the rules of the Kubernetes example (docs/examples/kubernetes.alloy) on pods shaped like the k8s fixtures."""
import json
import os
import unittest

from np import EXAMPLES, ROOT, nodeprof, tmpdir

VECTORS = os.path.join(ROOT, "tests", "fixtures", "relabel-upstream.json")


def alloy_string(s):
    """A Go-escaped double-quoted Alloy string."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def rules_to_alloy(rules):
    """The vector format (present key = written, absent = default) as rule blocks."""
    blocks = []
    for r in rules:
        lines = ["rule {"]
        for k, v in r.items():
            if k == "source_labels":
                lines.append(f"  source_labels = [{', '.join(alloy_string(x) for x in v)}]")
            elif k == "modulus":
                lines.append(f"  modulus = {int(v)}")
            else:
                lines.append(f"  {k} = {alloy_string(v)}")
        lines.append("}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks) + "\n"


# Alloy checks a replace target_label with `$` and a labelmap replacement with Prometheus'
# legacy template pattern (its Config.Validate), so this Prometheus 3 case is an error there.
ALLOY_REJECTS = {"prometheus TestRelabel #31: replace: UTF-8 target label name with ${1} (empty group)"}


def divergent(case):
    """Vectors about the points where Alloy's discovery.relabel and Prometheus differ
    (docs/specs/relabel.md §12): legacy name scheme, action spelling, templates.
    The tool speaks Alloy; these points have their own tests below."""
    if case.get("validation_scheme", "utf8") != "utf8" or case["name"] in ALLOY_REJECTS:
        return True
    for r in case.get("rules", []):
        a = r.get("action")
        if a is not None and a != "" and a != a.lower():
            return True
    return False


class ToolsRelabel(unittest.TestCase):
    def run_tool(self, rules_text, targets):
        d = tmpdir(self)
        path = os.path.join(d, "rules.alloy")
        with open(path, "w") as f:
            f.write(rules_text)
        inp = targets if isinstance(targets, str) else json.dumps(targets)
        return path, nodeprof("tools", "relabel", path, input=inp)

    def test_upstream_vectors(self):
        with open(VECTORS) as f:
            cases = json.load(f)
        ran = errors = 0
        for case in cases:
            if divergent(case):
                continue
            with self.subTest(case["name"]):
                path, p = self.run_tool(rules_to_alloy(case["rules"]), [case.get("input", {"a": "b"})])
                if case.get("error"):
                    self.assertEqual(p.returncode, 1, p.stdout)
                    self.assertRegex(p.stderr, r"^%s:\d+:\d+: " % path)
                    errors += 1
                    continue
                self.assertEqual(p.returncode, 0, p.stderr)
                got = json.loads(p.stdout)
                want = [] if case["output"] is None else [case["output"]]
                self.assertEqual(got, want)
                ran += 1
        self.assertGreater(ran, 30)
        self.assertGreater(errors, 15)

    def test_alloy_spelling_of_actions(self):
        _, p = self.run_tool('rule {\n  action = "Replace"\n  target_label = "x"\n}\n', [{"a": "b"}])
        self.assertEqual(p.returncode, 1)
        self.assertIn(':2:12: action: invalid value "Replace"; did you mean "replace"?', p.stderr)

    def test_alloy_validation(self):
        """Alloy's decoding and Config.Validate, not Prometheus' YAML loader."""
        _, p = self.run_tool('rule {\n  source_labels = [""]\n  target_label = "x"\n  replacement = "v${1}"\n}\n',
                             [{"a": "1"}])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout), [{"a": "1", "x": "v"}])
        for rule, msg in [
            ('target_label = "utf-8.label${1}"', ':2:18: "utf-8.label${1}" is invalid \'target_label\' for replace action'),
            ('action = "labelmap"\n  replacement = "a.b"', ':3:17: "a.b" is invalid \'replacement\' for labelmap action'),
            ('action = "keepequal"\n  target_label = "t"\n  regex = "x"',
             ":4:11: keepequal action requires only 'source_labels' and 'target_label', and no other fields"),
        ]:
            path, p = self.run_tool("rule {\n  %s\n}\n" % rule, [])
            self.assertEqual(p.returncode, 1)
            self.assertEqual(p.stderr.strip(), path + msg)
        # Written defaults are fine: keepequal with regex "(.*)" (Alloy compares values).
        _, p = self.run_tool('rule {\n  action = "keepequal"\n  source_labels = ["a"]\n  target_label = "b"\n'
                             '  regex = "(.*)"\n}\n', [{"a": "1", "b": "1"}, {"a": "1"}])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout), [{"a": "1", "b": "1"}])

    def test_kubernetes_example_rules(self):
        with open(os.path.join(EXAMPLES, "kubernetes.alloy")) as f:
            text = f.read()
        # The rule blocks of discovery.relabel "local_pods", verbatim.
        body = text.split('discovery.relabel "local_pods" {', 1)[1].split("\npyroscope.ebpf", 1)[0]
        rules = "rule {" + body.split("rule {", 1)[1].rsplit("}", 1)[0]
        pod = {
            "__meta_kubernetes_namespace": "shop",
            "__meta_kubernetes_pod_name": "web-7d9f-abcde",
            "__meta_kubernetes_pod_node_name": "node-a",
            "__meta_kubernetes_pod_container_name": "nginx",
            "__meta_kubernetes_pod_phase": "Running",
            "__meta_kubernetes_pod_label_app": "web",
            "__meta_kubernetes_pod_label_pod_template_hash": "7d9f",
            "__meta_kubernetes_pod_labelpresent_app": "true",
            "__address__": "10.1.2.3:80",
        }
        done = dict(pod, __meta_kubernetes_pod_phase="Succeeded", __meta_kubernetes_pod_name="job-1")
        failed = dict(pod, __meta_kubernetes_pod_phase="Failed", __meta_kubernetes_pod_name="job-2")
        _, p = self.run_tool(rules, [done, pod, failed])
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads(p.stdout)
        self.assertEqual(got, [dict(pod, service_name="ebpf/shop/nginx", app="web", pod_template_hash="7d9f",
                                    namespace="shop", pod="web-7d9f-abcde", node="node-a", container="nginx")])
        # Output: one target per line, labels sorted.
        self.assertEqual(p.stdout.count("\n"), 3)
        self.assertTrue(p.stdout.startswith('[\n  {"__address__":"10.1.2.3:80",'))

    def test_empty_values_are_absent_and_order_is_kept(self):
        rules = 'rule {\n  source_labels = ["a"]\n  regex = ""\n  action = "drop"\n}\n'
        _, p = self.run_tool(rules, [{"a": "", "n": "1"}, {"a": "x", "n": "2"}, {"n": "3"}, {"a": "y", "n": "4"}])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout), [{"a": "x", "n": "2"}, {"a": "y", "n": "4"}])

    def test_no_rules_and_no_targets(self):
        _, p = self.run_tool("// no rules\n", [{"a": "1"}])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout), [{"a": "1"}])
        _, p = self.run_tool('rule {\n  target_label = "x"\n  replacement = "y"\n}\n', [])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "[]\n")

    def test_bad_rules_file(self):
        path, p = self.run_tool('rule {\n  regex = "(a"\n}\nrules {\n}\nx = 1\n', [])
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr.splitlines(), [
            f"{path}:2:11: error parsing regexp: missing closing ): `^(?s:(a)$`",
            f'{path}:4:1: unrecognized block name "rules" in a rules file; did you mean "rule"?',
            f'{path}:6:1: unrecognized attribute name "x" in a rules file (valid: rule {{ }})',
        ])
        path, p = self.run_tool('rule {\n  regex = "(a"\n}\nrule {\n  action = "hashmod"\n  target_label = "h"\n}\n', [])
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.splitlines(), [
            f"{path}:2:11: error parsing regexp: missing closing ): `^(?s:(a)$`",
            f"{path}:4:1: relabel configuration for hashmod requires non-zero modulus",
        ])
        path, p = self.run_tool("rule {\n", [])
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, f"{path}:2:1: expected }}, got end of file\n")
        p = nodeprof("tools", "relabel", "/nonexistent/rules.alloy", input="[]")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "/nonexistent/rules.alloy: cannot open: No such file or directory\n")

    def test_bad_input(self):
        _, p = self.run_tool("", "[{\"a\": 1}]")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, 'stdin: target 0: label "a": value must be a string\n')
        _, p = self.run_tool("", "[{\"a\": ")
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"^stdin:1:\d+: invalid JSON: ")
        _, p = self.run_tool("", "{}")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "stdin: targets must be a JSON array of objects\n")

    def test_usage(self):
        p = nodeprof("tools", "relabel")
        self.assertEqual(p.returncode, 2)
        self.assertIn("Usage: nodeprof tools relabel RULES_FILE", p.stderr)


if __name__ == "__main__":
    unittest.main()
