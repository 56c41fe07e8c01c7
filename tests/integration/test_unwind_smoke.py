"""The BPF unwinder end to end with real BPF: whole stacks of code built without frame pointers
(Debian's xz and python3.11, a -O2 -fomit-frame-pointer program) and of a library dlopen'ed
after the recording started."""
import os
import subprocess
import unittest

import np

OMIT = ("-O2", "-fomit-frame-pointer", "-g")

# A leaf and its caller, NAME_leaf and NAME_entry; the caller is not a tail call, so it stays on
# the stack below the leaf.
def leaf_pair(name):
    return r"""
static volatile unsigned long sink;
__attribute__((noinline)) unsigned long NAME_leaf(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i * i ^ sink;
	return s;
}
__attribute__((noinline)) unsigned long NAME_entry(unsigned long n)
{
	unsigned long s = NAME_leaf(n);
	sink += s;
	return s + 1;
}
""".replace("NAME_", name)


LEAFY = "#include <stdlib.h>\n" + leaf_pair("").replace("entry(", "function(") + r"""
int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	for (unsigned long r = 0; r < (unsigned long)(seconds * 20000); r++)
		sink += function(20000);
	return 0;
}
"""

LIB = leaf_pair("lib_")

LOADER = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static volatile unsigned long sink;
__attribute__((noinline)) void run_lib(unsigned long (*fn)(unsigned long), double seconds)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		sink += fn(20000);
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while (b.tv_sec - a.tv_sec + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
	sink += 1;
}
int main(int argc, char **argv)
{
	usleep((useconds_t)(atof(argv[2]) * 1e6)); /* the recording starts meanwhile */
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	run_lib((unsigned long (*)(unsigned long))dlsym(h, "lib_entry"), atof(argv[3]));
	return 0;
}
"""


def shares(stacks, want):
    """(samples whose frames satisfy want, all samples)."""
    total = sum(stacks.values())
    good = sum(c for s, c in stacks.items() if want(s.split(";")))
    return good, total


class UnwindSmokeTest(unittest.TestCase):
    def start(self, argv, **kw):
        p = subprocess.Popen(list(map(str, argv)), **kw)
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    def record(self, pid, seconds, rate=97):
        r = np.nodeprof("record", "--pid", pid, "--duration", f"{seconds}s", "--sample-rate", rate,
                        "--format", "folded", timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return np.parse_folded(r.stdout)

    def assert_reach_entry(self, stacks, what):
        good, total = shares(stacks, lambda f: "__libc_start_call_main" in f)
        self.assertGreater(total, 200, f"{what}: too few samples")
        top = sorted((c, s) for s, c in stacks.items() if "__libc_start_call_main" not in s)[-5:]
        self.assertGreaterEqual(good / total, 0.95,
                                f"{what}: {good}/{total} samples reach __libc_start_call_main; others: {top}")

    def test_debian_xz(self):
        w = self.start(["xz", "-9"], stdin=open("/dev/urandom", "rb"), stdout=subprocess.DEVNULL)
        self.assert_reach_entry(self.record(w.pid, 10), "xz -9")

    def test_debian_python(self):
        w = self.start(["/usr/bin/python3.11", "-c", "while True: sum(range(1000))"])
        self.assert_reach_entry(self.record(w.pid, 10), "python3.11")

    def test_omit_frame_pointer(self):
        exe = np.compile_c(self, LEAFY, "leafy", OMIT)
        w = self.start([exe, 30])
        stacks = self.record(w.pid, 5, 499)
        good, total = shares(stacks, lambda f: np.contains_run(f, ["main", "function", "leaf"]) and
                             "__libc_start_call_main" in f)
        self.assertGreater(total, 500)
        self.assertGreaterEqual(good / total, 0.95, f"{good}/{total} whole main;function;leaf: {list(stacks)[:5]}")

    def test_dlopen_after_start(self):
        d = np.tmpdir(self)
        src = os.path.join(d, "lib.c")
        with open(src, "w") as f:
            f.write(LIB)
        lib = os.path.join(d, "libspin.so")
        subprocess.run(["gcc", *OMIT, "-shared", "-fPIC", "-o", lib, src], check=True, capture_output=True)
        exe = np.compile_c(self, LOADER, "loader", OMIT, libs=("-ldl",))
        w = self.start([exe, lib, 1.5, 30])
        stacks = self.record(w.pid, 6, 499)
        in_lib = {s: c for s, c in stacks.items() if "lib_leaf" in s.split(";")}
        good, total = shares(in_lib, lambda f: np.contains_run(f, ["main", "run_lib", "lib_entry", "lib_leaf"]))
        self.assertGreater(total, 500, f"too few samples in the dlopen'ed library: {list(stacks)[:5]}")
        self.assertGreaterEqual(good / total, 0.95, f"{good}/{total} whole; others: "
                                f"{[s for s in in_lib if 'main' not in s.split(';')][:5]}")


if __name__ == "__main__":
    unittest.main()
