"""agent/runtime/ruby/detect.c's layout against the Ruby this machine carries: every field whose
offset or constant Ruby's public headers give (RString, RArray, st_table; ruby3.1-dev's
include/ruby/), from tests/ruby/layout_probe.c compiled against them, must equal the table's
(build/harness/rb_layout); the probe also checks at compile time the object types and flags the
namer and the walker take as fixed. 3.2 - 3.4's public-header fields, transcribed by
tests/ruby/gen_layouts.py (no package installs those headers), are checked to be the table's. The
fields of the VM's internal structures (vm_core.h, not
installed) are checked by tests/integration/test_ruby_stacks.py, which reads its workload's own
names, files and lines through every one of them. NODEPROF_RB_LAYOUT_HARNESS runs against another
build of the harness."""
import json
import os
import subprocess
import sys
import unittest

import np

HARNESS = os.environ.get("NODEPROF_RB_LAYOUT_HARNESS") or os.path.join(np.ROOT, "build", "harness", "rb_layout")
PROBE = os.path.join(np.ROOT, "tests", "ruby", "layout_probe.c")
VERSIONS = ["3.1"]  # the versions the table has whose headers are installed (DEB_TEST_PACKAGES)
# The versions the table has whose public headers Debian does not carry: tests/ruby/gen_layouts.py
# takes their public-header fields from the installed 3.1 headers (RString, RArray and st_table
# did not change from 2.5 to 3.1), which this checks the table still says.
AS_INSTALLED = {"2.5": "3.1", "2.6": "3.1", "2.7": "3.1", "3.0": "3.1"}
# The versions whose RString and RArray are variable-width allocation's (3.2 on), which no package
# installs: tests/ruby/gen_layouts.py transcribes them from their headers (PUBLIC_VWA there); this
# checks the table says the same, and that the structures hold together for the namer's reads.
VWA = ["3.2", "3.3", "3.4"]


class RubyLayout(unittest.TestCase):
    def test_public_header_fields(self):
        for version in VERSIONS:
            with self.subTest(ruby=version):
                cflags = subprocess.run(["pkg-config", "--cflags", f"ruby-{version}"], check=True,
                                        capture_output=True, text=True).stdout.split()
                exe = os.path.join(np.tmpdir(self), "probe")
                subprocess.run(["cc", *cflags, "-o", exe, PROBE], check=True)
                headers = json.loads(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)
                ours = json.loads(subprocess.run([HARNESS, version], check=True, capture_output=True,
                                                 text=True).stdout)
                self.assertGreaterEqual(len(headers), 10)
                for field, value in headers.items():
                    self.assertIn(field, ours)
                    self.assertEqual(ours[field], value, f"Ruby {version}: {field}")

    def test_public_fields_of_versions_without_headers(self):
        for version, installed in AS_INSTALLED.items():
            with self.subTest(ruby=version):
                cflags = subprocess.run(["pkg-config", "--cflags", f"ruby-{installed}"], check=True,
                                        capture_output=True, text=True).stdout.split()
                exe = os.path.join(np.tmpdir(self), "probe")
                subprocess.run(["cc", *cflags, "-o", exe, PROBE], check=True)
                headers = json.loads(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)
                ours = json.loads(subprocess.run([HARNESS, version], check=True, capture_output=True,
                                                 text=True).stdout)
                for field, value in headers.items():
                    if field not in ("major", "minor"):
                        self.assertEqual(ours[field], value, f"Ruby {version}: {field}")

    def test_public_fields_of_variable_width_versions(self):
        sys.path.insert(0, os.path.join(np.ROOT, "tests", "ruby"))
        try:
            import gen_layouts
        finally:
            sys.path.pop(0)
        for version in VWA:
            with self.subTest(ruby=version):
                ours = json.loads(subprocess.run([HARNESS, version], check=True, capture_output=True,
                                                 text=True).stdout)
                for field, value in gen_layouts.PUBLIC_VWA.items():
                    self.assertEqual(ours[field], value, f"Ruby {version}: {field}")
                # One length for both forms of a string; a heap array's pointer after its length
                # and capacity; the embedded bytes where the heap pointer would be.
                self.assertEqual(ours["str_len"], ours["str_heap_len"])
                self.assertEqual(ours["str_embed_ary"], ours["str_heap_ptr"])
                self.assertEqual(ours["ary_heap_ptr"], ours["ary_heap_len"] + 16)

    def test_the_table_has_no_other_version(self):
        # A version added to the table must be added above, with its headers, to be checked.
        for major, minor in ((2, 4), (3, 5)):
            p = subprocess.run([HARNESS, f"{major}.{minor}"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 1, f"{major}.{minor} is in the table: add it to VERSIONS")


if __name__ == "__main__":
    unittest.main()
