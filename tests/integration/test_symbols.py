"""Symbolization of real binaries built here: separate debug files (debuglink beside the binary,
in .debug/, in a build-ID tree; a wrong-CRC debuglink that must be ignored), MiniDebugInfo,
stripped Go binaries, C++ demangle modes, and `nodeprof tools symbolize`'s contract.
Every fixture is compiled by the test (gcc, g++, go, strip, objcopy, xz)."""
import os
import random
import shutil
import subprocess
import tempfile
import unittest

import np

PROG_C = r"""
#include <stdio.h>
static __attribute__((noinline)) int secret_local(int x) { return x * 7 + (x >> 3); }
__attribute__((noinline)) int exported_fn(int x) { return secret_local(x) + 1; }
int main(int argc, char **argv) { printf("%d\n", exported_fn(argc)); return 0; }
"""

GO_SRC = r"""
package main

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"time"
)

type Ledger struct{ total int }

//go:noinline
func (l *Ledger) Settle(n int) int {
	for i := 0; i < n; i++ {
		l.total += i
	}
	return l.total
}

func main() {
	l := &Ledger{}
	pc := reflect.ValueOf((*Ledger).Settle).Pointer()
	fmt.Printf("%x %s\n", pc, runtime.FuncForPC(pc).Name())
	if len(os.Args) > 1 {
		for {
			l.Settle(1000)
			time.Sleep(time.Millisecond)
		}
	}
}
"""

CXX_SRC = r"""
#include <vector>
namespace ns {
template <class T> struct Box {
	T v;
	bool operator<(const Box &o) const { return v < o.v; }
};
}
namespace {
__attribute__((noinline)) int foo() { return 42; }
}
int main(int argc, char **)
{
	std::vector<int> v;
	v.push_back(argc + 0); /* an rvalue: push_back(int&&) */
	ns::Box<double> a{1}, b{2};
	auto l = [](int x) { return x + 1; };
	return (a < b) + foo() + l(argc) + (int)v.size();
}
"""

# docs/specs/symbols.md §6.3: mangled -> (simplified, templates, full)
CXX_EXPECT = {
    "_ZNSt6vectorIiSaIiEE9push_backEOi": (
        "std::vector::push_back",
        "std::vector<int, std::allocator<int> >::push_back",
        "std::vector<int, std::allocator<int> >::push_back(int&&)"),
    "_ZNK2ns3BoxIdEltERKS1_": (
        "ns::Box::operator<", "ns::Box<double>::operator<",
        "ns::Box<double>::operator<(ns::Box<double> const&) const"),
    "_ZZ4mainENKUliE_clEi": (
        "main::{lambda(int)#1}::operator()", "main::{lambda(int)#1}::operator()",
        "main::{lambda(int)#1}::operator()(int) const"),
    "_ZN12_GLOBAL__N_13fooEv": (
        "(anonymous namespace)::foo", "(anonymous namespace)::foo", "(anonymous namespace)::foo()"),
}


def run(*cmd, **kw):
    return subprocess.run(list(map(str, cmd)), check=True, capture_output=True, text=True, **kw)


def nm_addrs(path, *flags):
    """name -> address (int) of the defined text symbols nm lists."""
    out = run("nm", *flags, path).stdout
    addrs = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWw":
            addrs[parts[2].split("@")[0]] = int(parts[0], 16)
    return addrs


def section_names(path):
    out = run("readelf", "-SW", path).stdout
    return {w for line in out.splitlines() for w in line.split() if w.startswith(".")}


def symbolize(path, addrs, mode=None):
    args = ["tools", "symbolize"] + (["--demangle", mode] if mode else []) + [path] + ["%x" % a for a in addrs]
    p = np.nodeprof(*args)
    if p.returncode != 0:
        raise AssertionError(f"tools symbolize failed ({p.returncode}): {p.stderr}")
    names = []
    for line, a in zip(p.stdout.splitlines(), addrs):
        addr, name = line.split(" ", 1)
        assert addr == "%x" % a, (addr, a)
        names.append(name)
    return names


def random_build_id():
    return "%040x" % random.getrandbits(160)


class DebugFiles(unittest.TestCase):
    """One C program, built in variants that differ only in where its symbols are."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nodeprof-sym-")
        cls.src = os.path.join(cls.dir, "prog.c")
        with open(cls.src, "w") as f:
            f.write(PROG_C)
        cls.cleanup_paths = []
        cls.preexisting = set()
        for d, dirs, _ in os.walk("/usr/lib/debug"):
            cls.preexisting.add(d)
            if d.count("/") > 5:
                dirs[:] = []

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)
        for p in cls.cleanup_paths:
            shutil.rmtree(p, True) if os.path.isdir(p) else (os.path.exists(p) and os.unlink(p))
            # Directories this test created under /usr/lib/debug, once empty.
            d = os.path.dirname(p)
            while d.startswith("/usr/lib/debug/") and d not in cls.preexisting:
                try:
                    os.rmdir(d)
                except OSError:
                    break
                d = os.path.dirname(d)

    def build(self, name, build_id=None, pie=True):
        """Compiles the program with a unique build ID; returns (path, build_id, nm addresses)."""
        d = os.path.join(self.dir, name)
        os.makedirs(d, exist_ok=True)
        out = os.path.join(d, "prog")
        build_id = build_id or random_build_id()
        run("gcc", "-O1", "-g", "-fno-inline", "-Wl,--build-id=0x" + build_id,
            *([] if pie else ["-no-pie", "-fno-pie"]), "-o", out, self.src)
        return out, build_id, nm_addrs(out)

    def strip_with_debug(self, path, debug_path, link=True):
        run("objcopy", "--only-keep-debug", path, debug_path)
        run("strip", "--strip-all", path)
        if link:
            run("objcopy", "--add-gnu-debuglink=" + debug_path, path)
        self.assertNotIn(".symtab", section_names(path))

    def test_unstripped_matches_nm(self):
        path, _, addrs = self.build("plain")
        names = symbolize(path, [addrs["secret_local"], addrs["exported_fn"] + 1, addrs["main"]])
        self.assertEqual(names, ["secret_local", "exported_fn", "main"])

    def test_non_pie_matches_nm(self):
        path, _, addrs = self.build("nopie", pie=False)
        self.assertGreaterEqual(addrs["main"], 0x400000)
        self.assertEqual(symbolize(path, [addrs["secret_local"] + 2]), ["secret_local"])

    def test_stripped_without_debug_info_is_unknown(self):
        path, _, addrs = self.build("bare")
        run("strip", "--strip-all", path)
        self.assertEqual(symbolize(path, [addrs["secret_local"]]), ["??"])

    def test_debuglink_beside_binary(self):
        path, _, addrs = self.build("linked")
        self.strip_with_debug(path, path + ".debug")
        self.assertEqual(symbolize(path, [addrs["secret_local"] + 1, addrs["exported_fn"]]),
                         ["secret_local", "exported_fn"])

    def test_debuglink_in_dot_debug_directory(self):
        path, _, addrs = self.build("dotdebug")
        os.makedirs(os.path.join(os.path.dirname(path), ".debug"))
        debug = os.path.join(os.path.dirname(path), ".debug", "prog.debug")
        self.strip_with_debug(path, debug)
        self.assertEqual(symbolize(path, [addrs["secret_local"]]), ["secret_local"])

    def test_debuglink_in_global_debug_directory(self):
        path, _, addrs = self.build("globaldir")
        debug = path + ".debug"
        self.strip_with_debug(path, debug)
        target = "/usr/lib/debug" + os.path.dirname(path)
        os.makedirs(target, exist_ok=True)
        self.cleanup_paths.append("/usr/lib/debug" + self.dir)
        shutil.move(debug, os.path.join(target, "prog.debug"))
        self.assertEqual(symbolize(path, [addrs["secret_local"]]), ["secret_local"])

    def test_build_id_tree(self):
        path, build_id, addrs = self.build("buildid")
        debug = path + ".debug"
        self.strip_with_debug(path, debug, link=False)
        tree = os.path.join("/usr/lib/debug/.build-id", build_id[:2])
        os.makedirs(tree, exist_ok=True)
        target = os.path.join(tree, build_id[2:] + ".debug")
        shutil.move(debug, target)
        self.cleanup_paths.append(target)
        self.assertEqual(symbolize(path, [addrs["secret_local"]]), ["secret_local"])

    def test_build_id_tree_file_with_other_build_id_is_ignored(self):
        path, build_id, addrs = self.build("buildid_wrong")
        other, _, _ = self.build("buildid_other")
        run("strip", "--strip-all", path)
        tree = os.path.join("/usr/lib/debug/.build-id", build_id[:2])
        os.makedirs(tree, exist_ok=True)
        target = os.path.join(tree, build_id[2:] + ".debug")
        run("objcopy", "--only-keep-debug", other, target)  # a debug file, but of another build
        self.cleanup_paths.append(target)
        self.assertEqual(symbolize(path, [addrs["secret_local"]]), ["??"])

    def test_wrong_crc_debuglink_is_ignored(self):
        path, _, addrs = self.build("badcrc")
        debug = path + ".debug"
        self.strip_with_debug(path, debug)
        with open(debug, "ab") as f:  # any change to the debug file breaks the CRC
            f.write(b"\0")
        self.assertEqual(symbolize(path, [addrs["secret_local"]]), ["??"])

    def test_minidebuginfo(self):
        path, _, addrs = self.build("mini")
        d = os.path.dirname(path)
        # gdb manual, "MiniDebugInfo": keep the function symbols that .dynsym lacks, xz them,
        # add them as .gnu_debugdata to the stripped binary.
        dyn = set(run("nm", "-D", "--format=posix", "--defined-only", path).stdout.split("\n"))
        dyn = {l.split()[0] for l in dyn if l.strip()}
        funcs = {l.split()[0] for l in run("nm", "--format=posix", "--defined-only", path).stdout.splitlines()
                 if len(l.split()) >= 2 and l.split()[1] in ("T", "t", "D")}
        keep = os.path.join(d, "keep_symbols")
        with open(keep, "w") as f:
            f.write("\n".join(sorted(funcs - dyn)) + "\n")
        mini = os.path.join(d, "mini_debuginfo")
        run("objcopy", "--only-keep-debug", path, mini)
        run("objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment",
            "--keep-symbols=" + keep, mini)
        run("xz", "-f", mini)
        run("strip", "--strip-all", "-R", ".comment", path)
        run("objcopy", "--add-section", ".gnu_debugdata=" + mini + ".xz", path)
        sections = section_names(path)
        self.assertIn(".gnu_debugdata", sections)
        self.assertNotIn(".symtab", sections)
        self.assertEqual(symbolize(path, [addrs["secret_local"], addrs["main"]]), ["secret_local", "main"])


class GoAndCxx(unittest.TestCase):
    def test_stripped_go_binary(self):
        d = np.tmpdir(self)
        src = os.path.join(d, "main.go")
        with open(src, "w") as f:
            f.write(GO_SRC)
        out = os.path.join(d, "ledger")
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod", GO111MODULE="off")
        run("go", "build", "-ldflags=-s -w", "-o", out, src, env=env, cwd=d)
        sections = section_names(out)
        self.assertNotIn(".symtab", sections)
        self.assertIn(".gopclntab", sections)
        pc, name = run(out).stdout.split()
        self.assertEqual(name, "main.(*Ledger).Settle")
        pc = int(pc, 16)  # non-PIE: the runtime pc is the ELF vaddr
        names = symbolize(out, [pc, pc + 5])
        self.assertEqual(names, ["main.(*Ledger).Settle"] * 2)

    def test_cxx_demangle_modes(self):
        d = np.tmpdir(self)
        src = os.path.join(d, "box.cc")
        with open(src, "w") as f:
            f.write(CXX_SRC)
        out = os.path.join(d, "box")
        run("g++", "-O0", "-std=c++17", "-o", out, src)
        addrs = nm_addrs(out)
        mangled = [m for m in CXX_EXPECT if m in addrs]
        self.assertEqual(sorted(mangled), sorted(CXX_EXPECT), "g++ did not emit the expected symbols")
        realloc = [m for m in addrs if m.startswith("_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJiEEEv")]
        self.assertTrue(realloc)
        probe = [addrs[m] for m in mangled] + [addrs[realloc[0]]]
        self.assertEqual(symbolize(out, probe), mangled + realloc[:1])
        self.assertEqual(symbolize(out, probe, "none"), mangled + realloc[:1])
        for i, mode in enumerate(("simplified", "templates", "full")):
            got = symbolize(out, probe, mode)
            self.assertEqual(got[:-1], [CXX_EXPECT[m][i] for m in mangled], mode)
        self.assertEqual(symbolize(out, probe[-1:], "simplified"), ["std::vector::_M_realloc_insert"])
        self.assertEqual(symbolize(out, probe[-1:], "templates"),
                         ["std::vector<int, std::allocator<int> >::_M_realloc_insert<int>"])


class ToolContract(unittest.TestCase):
    def test_errors_exit_1_or_2_with_a_message(self):
        # Exit 2: a usage error (the command line is wrong); 1: the file cannot be read.
        libc = "/lib/x86_64-linux-gnu/libc.so.6"
        cases = [
            (["tools", "symbolize"], 2, "missing ELF_FILE"),
            (["tools", "symbolize", libc], 2, "missing ADDR"),
            (["tools", "symbolize", "/nonexistent", "1000"], 1, "No such file"),
            (["tools", "symbolize", "/etc/hostname", "1000"], 1, "not an ELF file"),
            (["tools", "symbolize", "/tmp", "1000"], 1, "not a regular file"),
            (["tools", "symbolize", libc, "xyz"], 2, "invalid address"),
            (["tools", "symbolize", "--demangle", "fancy", libc, "1000"], 2, "none, simplified, templates, full"),
            (["tools", "symbolize", "--frobnicate", libc, "1000"], 2, "unrecognized option"),
        ]
        for args, status, msg in cases:
            p = np.nodeprof(*args)
            self.assertEqual(p.returncode, status, args)
            self.assertIn(msg, p.stderr, args)
            self.assertNotIn("Sanitizer", p.stderr)

    def test_echoes_addresses_as_given(self):
        libc = os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6")
        addrs = nm_addrs(libc, "-D")
        a = addrs["clock_nanosleep"]
        p = np.nodeprof("tools", "symbolize", libc, "0x%x" % a, "%X" % a, "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "0x%x clock_nanosleep\n%X clock_nanosleep\n1 ??\n" % (a, a))


if __name__ == "__main__":
    unittest.main()
