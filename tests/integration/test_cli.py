"""The command line of every command through the real binary: an unknown option, an option
without its value and a missing or extra operand are usage errors (exit 2, one line
"nodeprof COMMAND: what is wrong", then the command's usage); a bad value is a usage error
in one line; --help lists every option the usage names, and the lists of commands come from
the same table as dispatching."""
import re
import unittest

from np import nodeprof

# Every command, with an option that takes a value (None: the command has none).
COMMANDS = [
    (["run"], "--config"),
    (["check"], None),
    (["record"], "--duration"),
    (["tools", "container-id"], "--pid"),
    (["tools", "relabel"], None),
    (["tools", "targets"], "--wait"),
    (["tools", "symbolize"], "--demangle"),
]


class UsageErrors(unittest.TestCase):
    def assert_usage_error(self, p, cmd, message):
        name = "nodeprof " + " ".join(cmd)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, "")
        lines = p.stderr.splitlines()
        self.assertEqual(lines[0], f"{name}: {message}", p.stderr)
        self.assertTrue(lines[1].startswith(f"Usage: {name} "), p.stderr)
        self.assertEqual(lines[-1], f"Run `{name} --help` for the options.", p.stderr)

    def test_unknown_option(self):
        for cmd, _ in COMMANDS:
            with self.subTest(cmd=cmd):
                p = nodeprof(*cmd, "--no-such-option", timeout=30)
                self.assert_usage_error(p, cmd, "unrecognized option '--no-such-option'")

    def test_missing_value(self):
        for cmd, opt in COMMANDS:
            if opt:
                with self.subTest(cmd=cmd):
                    p = nodeprof(*cmd, opt, timeout=30)
                    self.assert_usage_error(p, cmd, f"{opt} needs a value")

    def test_missing_and_extra_operands(self):
        self.assert_usage_error(nodeprof("check"), ["check"], "missing FILE")
        self.assert_usage_error(nodeprof("check", "a", "b"), ["check"], 'unexpected argument "b"')
        self.assert_usage_error(nodeprof("tools", "relabel"), ["tools", "relabel"], "missing RULES_FILE")
        self.assert_usage_error(nodeprof("record", "x"), ["record"], 'unexpected argument "x"')
        self.assert_usage_error(nodeprof("run", "x"), ["run"], 'unexpected argument "x"')
        self.assert_usage_error(nodeprof("tools", "targets", "--config", "x"), ["tools", "targets"],
                                "missing --component ID")

    def test_bad_values_are_one_line(self):
        for args, want in ((["record", "--sample-rate", "0"],
                            "nodeprof record: --sample-rate 0: expected a whole number of Hz from 1 to 100000\n"),
                           (["record", "--log-level", "loud"],
                            "nodeprof record: --log-level loud: use debug, info, warn or error\n"),
                           (["run", "--ui-memory", "lots"],
                            "nodeprof run: --ui-memory lots: use a size such as 64MiB, 4MiB or 0 (at most 1TiB)\n"),
                           (["run", "--http-listen", "localhost"],
                            'nodeprof run: --http-listen localhost: invalid listen address "localhost": '
                            "expected host:port\n"),
                           (["tools", "container-id", "--pid", "0"],
                            "nodeprof tools container-id: --pid 0: not a process ID (a whole number from 1 to "
                            "2147483647)\n")):
            with self.subTest(args=args):
                p = nodeprof(*args, timeout=30)
                self.assertEqual((p.returncode, p.stderr), (2, want))

    def test_unknown_commands(self):
        p = nodeprof("frobnicate")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, 'nodeprof: unknown command "frobnicate"; run `nodeprof --help` for the list of '
                                   "commands\n")
        p = nodeprof("tools", "frobnicate")
        self.assertEqual(p.returncode, 2)
        self.assertIn('nodeprof tools: unknown command "frobnicate"', p.stderr)
        for args in ([], ["tools"]):
            p = nodeprof(*args)
            self.assertEqual(p.returncode, 2)
            self.assertIn("Usage:", p.stderr)


class Help(unittest.TestCase):
    def test_every_option_of_the_usage_is_described(self):
        for cmd, _ in COMMANDS:
            with self.subTest(cmd=cmd):
                p = nodeprof(*cmd, "--help")
                self.assertEqual((p.returncode, p.stderr), (0, ""))
                usage, _, rest = p.stdout.partition("\n\n")
                self.assertTrue(usage.startswith("Usage: nodeprof " + " ".join(cmd) + " "), p.stdout)
                described = set(re.findall(r"^\s+(?:-\w, )?(--[\w-]+)", rest, re.M))
                self.assertIn("--help", described)
                for opt in re.findall(r"--[\w-]+", usage):
                    self.assertIn(opt, described, p.stdout)

    def test_lists_of_commands(self):
        top = nodeprof("--help")
        self.assertEqual(top.returncode, 0)
        for cmd, _ in COMMANDS:
            with self.subTest(cmd=cmd):
                listing = top.stdout if len(cmd) == 1 else nodeprof("tools", "--help").stdout
                self.assertRegex(listing, r"(?m)^  nodeprof %s " % re.escape(" ".join(cmd)))
                # The listed usage is the command's own.
                own = nodeprof(*cmd, "--help").stdout.splitlines()[0]
                self.assertIn(own[len("Usage: "):], listing)
        self.assertIn("  nodeprof tools TOOL [ARGS]\n", top.stdout)

    def test_defaults_stated_are_the_defaults(self):
        self.assertRegex(nodeprof("record", "--help").stdout, r"--duration D\s+how long to record.*\(default 10s\)")
        self.assertRegex(nodeprof("run", "--help").stdout, r"\(default 127\.0\.0\.1:4100;")
        self.assertRegex(nodeprof("tools", "targets", "--help").stdout, r"--wait DURATION\s+.*\(default 30s\)")
        self.assertEqual(nodeprof("--version").returncode, 0)


if __name__ == "__main__":
    unittest.main()
