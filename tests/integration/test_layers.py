"""The folders are the layers of the architecture, and the includes keep them so: lib/ is the
bottom layer and includes nothing of ours above it; relabel/ and k8s/ stand on lib/ only
(neither reaches into agent/ nor into the other); agent/ may use all of them; bpf/ is the
kernel side and includes only its own headers. A test, so that a convenient include across
a layer fails here rather than in a review. Standard library only; reads `git ls-files`."""
import os
import re
import subprocess
import unittest

from np import ROOT

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# For each layer, the layers its files may include (besides their own folder).
ALLOWED = {
    "lib": set(),
    "relabel": {"lib"},
    "k8s": {"lib"},
    "agent": {"lib", "relabel", "k8s", "bpf"},
}


def sources():
    out = subprocess.run(["git", "ls-files", "-z", "--", "*.c", "*.h"], cwd=ROOT,
                         capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def layer_of(path):
    return path.split("/", 1)[0] if "/" in path else ""


def crossings(paths, read):
    """(file, included path) for every include that leaves the layers its file may use."""
    bad = []
    for path in paths:
        layer = layer_of(path)
        if layer == "bpf":
            for inc in INCLUDE.findall(read(path)):
                if "/" in inc:
                    bad.append((path, inc))
            continue
        if layer not in ALLOWED:
            continue
        for inc in INCLUDE.findall(read(path)):
            target = layer_of(inc)
            if not target:
                continue  # a header next to the file ("python.h" in bpf/, generated skeletons)
            if target != layer and target in set(ALLOWED) | {"bpf"} and target not in ALLOWED[layer]:
                bad.append((path, inc))
    return bad


def read_file(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


class Layers(unittest.TestCase):
    def test_every_include_stays_within_its_layers(self):
        paths = sources()
        self.assertTrue(any(p.startswith("lib/") for p in paths), "no lib/ sources found")
        bad = crossings(paths, read_file)
        self.assertEqual(bad, [], "includes across layers:\n" +
                         "\n".join("%s includes %s" % b for b in bad))

    def test_the_check_catches_a_crossing(self):
        # The rule itself, on made-up files, so the test above cannot pass by reading nothing.
        files = {
            "lib/a.c": '#include "lib/b.h"\n#include <stdio.h>\n',
            "lib/bad.c": '#include "agent/config/value.h"\n',
            "k8s/bad.c": '#include "relabel/relabel.h"\n',
            "relabel/ok.c": '#include "lib/error.h"\n',
            "agent/ok.c": '#include "k8s/pod.h"\n#include "relabel/relabel.h"\n',
            "bpf/x.bpf.c": '#include "sampler.h"\n#include "agent/x.h"\n',
        }
        bad = crossings(sorted(files), files.__getitem__)
        self.assertEqual(bad, [("bpf/x.bpf.c", "agent/x.h"), ("k8s/bad.c", "relabel/relabel.h"),
                               ("lib/bad.c", "agent/config/value.h")])


if __name__ == "__main__":
    unittest.main()
