"""agent/runtime/perl/layout against the perl this machine carries (Debian's 5.36, whose libperl
package installs its CORE headers): tests/perl/layout_probe.c, compiled against those headers
with perl's own compiler options (ExtUtils::Embed), prints every field of struct pl_layout with
offsetof/sizeof and the constants' values; build/harness/pl_layout prints nodeprof's table entry
for the same version. Any field that differs fails, as does one side lacking a field. The probe
also checks what the layout assumes of the build: threaded, 8-byte pointers, 4-byte line_t and
cv_flags_t. That the walker reads the right things from a live process (names, files and lines
the script's own backtrace gives) is tests/integration/test_perl_stacks.py."""
import os
import subprocess
import unittest

import np

HARNESS = os.environ.get("NODEPROF_PL_LAYOUT_HARNESS") or os.path.join(np.ROOT, "build", "harness", "pl_layout")
PROBE = os.path.join(np.ROOT, "tests", "perl", "layout_probe.c")
PERL = "/usr/bin/perl"


def fields(text):
    return dict(line.split(" ", 1) for line in text.splitlines() if line)


class PerlLayout(unittest.TestCase):
    def test_table_matches_the_installed_headers(self):
        ccopts = subprocess.run([PERL, "-MExtUtils::Embed", "-e", "ccopts"], check=True, capture_output=True,
                                text=True).stdout.split()
        exe = os.path.join(np.tmpdir(self), "probe")
        subprocess.run(["gcc", "-I", np.ROOT] + ccopts + [PROBE, "-o", exe], check=True)
        probe = fields(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)
        self.assertEqual((probe.pop("threaded"), probe.pop("pointer"), probe.pop("cv_flags_size"),
                          probe.pop("line_size")), ("1", "8", "4", "4"))
        major, minor = probe["version"].split()
        self.assertEqual(major, "5")
        ours = fields(subprocess.run([HARNESS, f"5.{minor}"], check=True, capture_output=True, text=True).stdout)
        self.assertEqual(ours, probe)
        # The probe is the installed perl's own: the interpreter says the same version.
        v = subprocess.run([PERL, "-e", "print $]"], check=True, capture_output=True, text=True).stdout
        self.assertEqual(int(v.split(".")[1][:3]), int(minor))


if __name__ == "__main__":
    unittest.main()
