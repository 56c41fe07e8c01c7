"""The documents the code cites are in the repository, and the citations point at them:
no tracked file refers to the notes that used to live one directory up, outside it, every
`docs/...` file a tracked file names exists, every section cited as `docs/specs/FILE.md §N`
is a heading of that file, a spec is never cited by its bare name, and the links between the
documents resolve; every source folder has a README.md that names its files. Standard library
only; reads `git ls-files`."""
import os
import re
import subprocess
import unittest

from np import ROOT

# Built from parts so that this file does not match itself.
OUTSIDE = [("../" + "shared"), ('"..", ' + '"shared"')]

# A file of docs/ named in text: docs/specs/X.md, docs/examples/X.alloy (both folders are
# flat), docs/design.md, docs/conventions.md, or the folders themselves. Not preceded by
# "repo:" or a longer path (upstream files such as grafana/alloy:docs/sources/... are
# someone else's docs/), not followed by a deeper path.
DOC_PATH = re.compile(r"(?<![\w/:.@-])docs/(?:(?:specs|examples)(?:/[\w.-]+)?|design\.md|conventions\.md)(?![\w/-])")
# Section references right after a cited spec: "§2", "§§1-8", "§6-7", "§1.3 and §2",
# "§2, §7, §8 and §12" (a comment may continue on the next line).
SECTIONS = re.compile(r"^[\s*#/]*(§§?\s*\d+(?:\.\d+)*(?:(?:\s*(?:-|,|and)\s*)§?\d+(?:\.\d+)*)*)")
HEADING = re.compile(r"^#+\s+(\d+(?:\.\d+)*)\.?\s")
SPEC_NAMES = ("alloy-syntax", "container-id", "kubernetes", "pyroscope-push", "relabel", "symbols", "peers", "v8", "symb-cache")
BARE_SPEC = re.compile(r"(?<![\w/.(\[-])(%s)\.md\s*§" % "|".join(SPEC_NAMES))
MD_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
SELF = os.path.relpath(os.path.abspath(__file__), ROOT)


def tracked_files():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def read_text(path):
    """The file's text, or None for binary files (and symlinks to directories)."""
    try:
        with open(os.path.join(ROOT, path), "rb") as f:
            data = f.read()
    except (IsADirectoryError, FileNotFoundError):
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def headings(md_path):
    """The section numbers of a Markdown file's headings ("1", "1.2", ...)."""
    with open(md_path, encoding="utf-8") as f:
        return {m.group(1) for m in map(HEADING.match, f) if m}


def cited_sections(text):
    """The section numbers in a citation's tail: "§§1-8" gives 1..8, "§1.3 and §2" gives 1.3 and 2."""
    m = SECTIONS.match(text)
    if not m:
        return []
    nums = re.findall(r"\d+(?:\.\d+)*", m.group(1))
    out = list(nums)
    # A range of top-level sections ("§§1-8", "§6-7") stands for every section between.
    for a, b in re.findall(r"(\d+)\s*-\s*§?(\d+)(?![.\d])", m.group(1)):
        out += [str(i) for i in range(int(a), int(b) + 1)]
    return out


def without_code(md):
    """Markdown with code blocks and code spans blanked out (same length, same lines), so that
    a regex or a C expression in them is not read as a link."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    md = re.sub(r"(?ms)^```.*?^```", blank, md)
    return re.sub(r"`[^`\n]*`", blank, md)


def problems_in(path, text, root=ROOT):
    """Every problem with the references of one file's text, as "path:line: what" strings."""
    found = []

    def line_of(pos):
        return text.count("\n", 0, pos) + 1

    for bad in OUTSIDE:
        for m in re.finditer(re.escape(bad), text):
            found.append(f"{path}:{line_of(m.start())}: refers outside the repository ({bad}...)")
    for m in DOC_PATH.finditer(text):
        cited = m.group(0).rstrip(".")  # the end of a sentence
        if re.fullmatch(r"[A-Z]+\.md", os.path.basename(cited)):
            continue  # a placeholder: docs/specs/FILE.md
        target = os.path.join(root, cited)
        if not os.path.exists(target):
            found.append(f"{path}:{line_of(m.start())}: {cited} does not exist")
            continue
        if cited.startswith("docs/specs/") and cited.endswith(".md"):
            have = headings(target)
            for sec in cited_sections(text[m.end():m.end() + 80]):
                if sec not in have:
                    found.append(f"{path}:{line_of(m.start())}: {cited} has no section {sec}")
    if not path.startswith("docs/"):
        for m in BARE_SPEC.finditer(text):
            if not text[:m.start()].endswith("docs/specs/"):
                found.append(f"{path}:{line_of(m.start())}: cite {m.group(1)}.md as docs/specs/{m.group(1)}.md")
    if path.startswith("docs/") and path.endswith(".md"):
        here = os.path.dirname(os.path.join(root, path))
        for m in MD_LINK.finditer(without_code(text)):
            link = m.group(1)
            if re.match(r"^[a-z]+:", link):
                continue
            target = os.path.normpath(os.path.join(here, link))
            if not os.path.exists(target):
                found.append(f"{path}:{line_of(m.start())}: link {link} does not resolve")
            elif target.endswith(".md"):
                have = headings(target)
                for sec in cited_sections(text[m.end():m.end() + 80]):
                    if sec not in have:
                        found.append(f"{path}:{line_of(m.start())}: {link} has no section {sec}")
    return found


class Docs(unittest.TestCase):
    def test_every_reference_resolves_in_the_repository(self):
        found = []
        files = tracked_files()
        self.assertIn("docs/design.md", files)
        for path in files:
            if path == SELF:
                continue  # its own test cases are broken references on purpose
            text = read_text(path)
            if text is not None:
                found += problems_in(path, text)
        self.assertEqual(found, [], "\n" + "\n".join(found))

    def test_the_documents_exist(self):
        for name in ("design.md", "conventions.md", "specs/container-id.md", "specs/kubernetes.md",
                     "specs/pyroscope-push.md", "specs/relabel.md", "specs/symbols.md", "specs/alloy-syntax.md",
                     "examples/kubernetes.alloy", "examples/docker.alloy", "examples/grafana-agent-flow.alloy"):
            self.assertTrue(os.path.isfile(os.path.join(ROOT, "docs", name)), name)

    def test_the_checker_catches_what_it_should(self):
        # A check that cannot fail checks nothing: each kind of broken reference, in a made-up file.
        cases = {
            "x.c": ("/* see " + OUTSIDE[0] + "/specs/relabel.md */", "refers outside"),
            "x.py": ('P = os.path.join(ROOT, "..", ' + '"shared")', "refers outside"),
            "y.c": ("/* docs/specs/nonexistent.md §1 */", "does not exist"),
            "z.c": ("/* docs/examples/missing.alloy */", "does not exist"),
            "s.c": ("/* docs/specs/relabel.md §99 */", "has no section 99"),
            "t.c": ("/* docs/specs/relabel.md §§1-3 and §42 */", "has no section 42"),
            "u.h": ("/* (docs/specs/pyroscope-push.md\n * §9.9) */", "has no section 9.9"),
            "b.c": ("/* spec kubernetes.md §1 */", "cite kubernetes.md as docs/specs/kubernetes.md"),
            "docs/specs/l.md": ("see [there](nowhere.md)", "does not resolve"),
            "docs/specs/m.md": ("see [relabel.md](relabel.md) §77", "has no section 77"),
        }
        for path, (text, want) in cases.items():
            with self.subTest(path=path):
                found = problems_in(path, text)
                self.assertTrue(any(want in f for f in found), found)
        # And what is fine passes.
        fine = ("/* docs/specs/relabel.md §2, §7, §8 and §12; docs/specs/symbols.md §6-7; "
                "grafana/alloy:docs/sources/x.md; docs/examples/features/profiling/default; docs/examples */")
        self.assertEqual(problems_in("ok.c", fine), [])
        self.assertEqual(set(cited_sections(" §§1-3")), {"1", "2", "3"})


# Source files a document may name that are not ours on purpose ("no `vmlinux.h` is
# generated or committed").
NOT_OURS = {"vmlinux.h"}
SOURCE_NAME = re.compile(r"`([\w./-]+\.[ch])`")


def module_folders(files):
    """The folders the architecture is made of: the top-level code folders and agent/'s."""
    tops = {"lib", "k8s", "relabel", "bpf"}
    out = set()
    for f in files:
        parts = f.split("/")
        if parts[0] in tops and len(parts) > 1:
            out.add(parts[0])
        elif parts[0] == "agent" and len(parts) > 2:
            out.add("agent/" + parts[1])
    return sorted(out)


def section(text, heading):
    """The text under a `## heading`, up to the next heading of that level."""
    part = ("\n" + text).split("\n## " + heading + "\n", 1)
    return part[1].split("\n## ", 1)[0] if len(part) == 2 else ""


def map_problems(files, readme, design):
    """Module folders missing from README's "How it works" or design.md's "Modules", and
    source files the documents name that the tree does not have."""
    how, modules = section(readme, "How it works"), section(design, "Modules")
    bad = []
    for folder in module_folders(files):
        if "`%s/" % folder not in how:
            bad.append("README.md \"How it works\" does not name %s/" % folder)
        if "`%s/" % folder not in modules:
            bad.append("docs/design.md \"Modules\" does not name %s/" % folder)
    for doc, text in (("README.md", readme), ("docs/design.md", design)):
        bad += unknown_names(doc, text, files)
    return bad


def unknown_names(doc, text, files, skip=lambda name: False):
    """What doc's text names as a source file (SOURCE_NAME) that the tree does not have: a
    path must end one of files, a bare name must be some file's name; names not ours, and
    those skip says, are passed."""
    names = {f.rsplit("/", 1)[-1] for f in files}
    bad = []
    for name in SOURCE_NAME.findall(text):
        if name in NOT_OURS or skip(name):
            continue
        if "/" in name:
            missing = not any(f == name or f.endswith("/" + name) for f in files)
        else:
            missing = name not in names
        if missing:
            bad.append("%s names %s, which the tree does not have" % (doc, name))
    return bad


class TheMapMatchesTheTree(unittest.TestCase):
    def test_readme_and_design_name_every_module_and_only_real_files(self):
        files = set(tracked_files())
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        with open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8") as f:
            design = f.read()
        self.assertEqual(map_problems(files, readme, design), [])

    def test_the_map_check_catches_a_stale_map(self):
        files = {"lib/a.c", "agent/new/x.c", "agent/old/y.c", "k8s/pod.c"}
        readme = "## How it works\n| `lib/` | |\n| `agent/old/` | `gone.c` |\n| `k8s/` | |\n## Next\n"
        design = "## Modules\n`lib/` `agent/new/` `agent/old/` `k8s/pod.c` `k8s/node.c`\n"
        self.assertEqual(map_problems(files, readme, design), [
            'README.md "How it works" does not name agent/new/',
            "README.md names gone.c, which the tree does not have",
            "docs/design.md names k8s/node.c, which the tree does not have",
        ])


# The layers whose folders each have a README.md (docs/conventions.md, "C"). A language
# runtime's folder is described by agent/runtime/README.md, one line each, instead.
README_TOPS = ("lib", "relabel", "k8s", "bpf", "agent")
RUNTIME_ROOM = "agent/runtime"


def readme_folders(files):
    """The folders that must have a README.md: every folder of the layers that holds .c or .h
    files, except the runtimes' folders under agent/runtime/ (see readme_problems)."""
    out = set()
    for f in files:
        if not f.endswith((".c", ".h")) or f.split("/", 1)[0] not in README_TOPS:
            continue
        folder = os.path.dirname(f)
        if os.path.dirname(folder) != RUNTIME_ROOM:
            out.add(folder)
    return sorted(out)


def readme_problems(files, read):
    """What the folder READMEs miss: a README, a line for each .c file of the folder, a line for
    each subfolder that holds sources (`sub/`), and source files they name that the tree does not
    have. read(path) gives a tracked file's text."""
    bad = []
    source_dirs = {os.path.dirname(f) for f in files if f.endswith((".c", ".h"))}
    for folder in readme_folders(files):
        readme = folder + "/README.md"
        if readme not in files:
            bad.append("%s/ has no README.md" % folder)
            continue
        text = read(readme)
        for f in sorted(files):
            if os.path.dirname(f) == folder and f.endswith(".c"):
                base = os.path.basename(f)
                if "`%s`" % base not in text and "`%s`" % f not in text:
                    bad.append("%s does not name %s" % (readme, base))
        for sub in sorted({d for d in source_dirs if os.path.dirname(d) == folder}):
            if "`%s/`" % os.path.basename(sub) not in text and "`%s/`" % sub not in text:
                bad.append("%s does not name its folder %s/" % (readme, os.path.basename(sub)))
        # Generated by the build (build/gen/...), or a placeholder (`X.h`).
        bad += unknown_names(readme, text, files,
                             lambda name: name.startswith("build/") or re.fullmatch(r"[A-Z]+\.[ch]", name))
    return bad


class EveryFolderHasAReadme(unittest.TestCase):
    def test_every_source_folder_has_a_readme_that_names_its_files(self):
        files = set(tracked_files())
        self.assertIn("lib", readme_folders(files))
        self.assertIn(RUNTIME_ROOM, readme_folders(files))
        self.assertEqual(readme_problems(files, read_text), [])

    def test_the_readme_check_catches_a_missing_line(self):
        files = {"lib/a.c", "lib/a.h", "lib/new.c", "lib/README.md", "agent/x/y.c",
                 "agent/runtime/set.c", "agent/runtime/README.md", "agent/runtime/py/t.c",
                 "agent/runtime/go/u.c", "bpf/s.bpf.c", "bpf/README.md", "tests/unit/test_a.c"}
        texts = {"lib/README.md": "| `a.c` | a |\nsee `gone.h`, `agent/x/y.c`, `X.h` and `build/gen/g.h`\n",
                 "agent/runtime/README.md": "| `set.c` | |\n| `py/` | Python |\n",
                 "bpf/README.md": "| `s.bpf.c` | the program |\n"}
        self.assertEqual(readme_folders(files), ["agent/runtime", "agent/x", "bpf", "lib"])
        self.assertEqual(readme_problems(files, texts.get), [
            "agent/runtime/README.md does not name its folder go/",
            "agent/x/ has no README.md",
            "lib/README.md does not name new.c",
            "lib/README.md names gone.h, which the tree does not have",
        ])

if __name__ == "__main__":
    unittest.main()
