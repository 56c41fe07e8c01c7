"""agent/runtime/php/layout against the PHP this machine carries: tests/php/layout_probe.c,
compiled against php8.2-dev's Zend headers (`php-config --includes`) with our table, checks every
offset of the table's row for that version with offsetof (and the constants bpf/php.h states:
ZEND_CALL_TOP, the function types), for the same PHP minor as the php8.2 and php-fpm8.2 the stack
tests profile. The other versions' rows (7.3 to 8.4) come from their branches' headers
(docs/specs/php.md §2); a live check of 8.2 is test_php_stacks, whose names, files and lines
the walker and namer read through this table."""
import os
import subprocess
import unittest

import np

PROBE = os.path.join(np.ROOT, "tests", "php", "layout_probe.c")
LAYOUT = os.path.join(np.ROOT, "agent", "runtime", "php", "layout.c")


def version(argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


class PhpLayout(unittest.TestCase):
    def test_table_matches_the_headers(self):
        includes = version(["php-config", "--includes"]).split()
        headers = version(["php-config", "--version"])
        for exe in ("/usr/bin/php8.2", "/usr/sbin/php-fpm8.2"):
            v = version([exe, "-n", "-v"] if "fpm" in exe else [exe, "-n", "-r", "echo PHP_VERSION;"])
            if "fpm" in exe:
                v = v.split()[1]
            self.assertEqual(v.split(".")[:2], headers.split(".")[:2], f"{exe} is {v}, the headers {headers}")
        d = np.tmpdir(self)
        exe = os.path.join(d, "layout_probe")
        p = subprocess.run(["gcc", "-std=gnu11", "-D_GNU_SOURCE", "-I", np.ROOT, *includes, "-o", exe, PROBE, LAYOUT],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run([exe], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.strip(), "ok PHP " + ".".join(headers.split(".")[:2]))


if __name__ == "__main__":
    unittest.main()
