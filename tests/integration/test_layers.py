"""The folders are the layers of the architecture, and the includes keep them so: lib/ is the
bottom layer and includes nothing of ours above it; relabel/ and k8s/ stand on lib/ only
(neither reaches into agent/ nor into the other); agent/ may use all of them; bpf/ is the
kernel side and includes only its own headers. Inside agent/, the folders are layers too
(AGENT_FLOORS, docs/design.md "Modules"): a folder includes only the floors below its own,
never a folder beside it on the same floor. A test, so that a convenient include across a layer
fails here rather than in a review. Standard library only; reads `git ls-files`."""
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


# agent/ from the top down: each entry is one floor (folders, or a file directly in agent/);
# a floor may include any floor below it, and nothing beside or above it.
AGENT_FLOORS = [
    {"main.c"},
    {"cmd"},
    {"components.c"},                              # the table of built-in components
    {"profile", "discovery", "write", "ui"},       # the components' modules and the local UI
    {"config"},                                    # the language and the component interface
    {"attribution", "runtime", "unwind"},
    {"symbols"},
    {"pprof", "http"},
]


def agent_room(path):
    """The folder (or top-level file) of agent/ that path lies in; None outside agent/."""
    parts = path.split("/")
    return parts[1] if len(parts) > 1 and parts[0] == "agent" else None


def agent_floor(room):
    for i, floor in enumerate(AGENT_FLOORS):
        if room in floor:
            return i
    return None


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
            elif layer == "agent" == target and not agent_include_ok(path, inc):
                bad.append((path, inc))
    return bad


def agent_include_ok(path, inc):
    """Whether agent file path may include agent header inc (AGENT_FLOORS); a room of agent/
    missing from the floors is refused, so that a new folder must be given its floor."""
    src, dst = agent_room(path), agent_room(inc)
    if src == dst:
        return True
    f_src, f_dst = agent_floor(src), agent_floor(dst)
    return f_src is not None and f_dst is not None and f_dst > f_src


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
            "agent/profile/ok.c": '#include "agent/config/component.h"\n#include "agent/profile/sampler.h"\n',
            "agent/unwind/up.h": '#include "agent/profile/sampler.h"\n',        # a floor above
            "agent/write/beside.c": '#include "agent/profile/ebpf_profiler.h"\n',  # the same floor
            "agent/newroom/x.c": '#include "agent/symbols/symbolizer.h"\n',      # a room without a floor
            "bpf/x.bpf.c": '#include "sampler_types.h"\n#include "agent/x.h"\n',
        }
        bad = crossings(sorted(files), files.__getitem__)
        self.assertEqual(bad, [("agent/newroom/x.c", "agent/symbols/symbolizer.h"),
                               ("agent/unwind/up.h", "agent/profile/sampler.h"),
                               ("agent/write/beside.c", "agent/profile/ebpf_profiler.h"),
                               ("bpf/x.bpf.c", "agent/x.h"), ("k8s/bad.c", "relabel/relabel.h"),
                               ("lib/bad.c", "agent/config/value.h")])

    def test_every_room_of_agent_has_a_floor(self):
        rooms = {agent_room(p) for p in sources() if p.startswith("agent/")}
        self.assertEqual(sorted(r for r in rooms if agent_floor(r) is None), [])

    def test_a_runtime_is_its_folder_its_header_and_its_row(self):
        # NP_RUNTIME_LIST (bpf/runtime.h) is the one table of runtimes: a row with a BPF side has
        # its header bpf/<ident>.h and its folder agent/runtime/<ident>/, and nothing outside
        # them names a runtime's files, so adding one touches only those three places.
        rows = re.findall(r"^\s*X\((\w+), (\w+), (\d+), (CHAIN|JIT|NONE),", read_file("bpf/runtime.h"), re.M)
        self.assertGreaterEqual(len(rows), 6, rows)
        paths = sources()
        for ident, _, _, kind in rows:
            if kind == "NONE":
                continue
            self.assertIn("bpf/%s.h" % ident, paths, ident)
            own = "agent/runtime/%s/" % ident
            self.assertTrue(any(p.startswith(own) for p in paths), ident)
            for p in paths:
                if p.startswith(own) or p.startswith("tests/") or p == "bpf/%s.h" % ident:
                    continue
                for inc in INCLUDE.findall(read_file(p)):
                    self.assertFalse(inc.startswith(own) or inc in ("%s.h" % ident, "bpf/%s.h" % ident),
                                     "%s includes %s: only the table may name a runtime" % (p, inc))


if __name__ == "__main__":
    unittest.main()
