"""Symbolizing live and exited processes through the profiler's API (driven by
build/harness/symbols): JIT code named from perf maps (also inside a PID + mount namespace),
a library that exists only inside a container's root (still named after the process exited,
with its debug file in the container's build-ID tree), deleted and replaced libraries, and a
stripped Go PIE."""
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import np
import rootfs

# NP_SYMBOLS_HARNESS=build/asan/harness/symbols runs these under ASan/UBSan.
HARNESS = os.environ.get("NP_SYMBOLS_HARNESS") or os.path.join(np.ROOT, "build", "harness", "symbols")

JIT_C = r"""
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(void)
{
	unsigned char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	memset(p, 0xc3, 8192); /* ret */
	if (mprotect(p, 8192, PROT_READ | PROT_EXEC))
		return 1;
	printf("%d %lx\n", getpid(), (unsigned long)p);
	fflush(stdout);
	for (;;)
		pause();
}
"""

LIB_C = r"""
static __attribute__((noinline)) int hidden_helper(int x) { return x * 11 + 3; }
int secret_work(int x) { return hidden_helper(x) + 1; }
void *secret_helper_addr(void) { return (void *)hidden_helper; }
"""

DECOY_C = r"""
int decoy_a(int x) { return x * 3; }
int decoy_b(int x) { return x * 5; }
int decoy_c(int x) { return x * 7; }
"""

APP_C = r"""
#include <stdio.h>
#include <unistd.h>
extern int secret_work(int);
extern void *secret_helper_addr(void);
int main(void)
{
	printf("%d %lx %lx\n", getpid(), (unsigned long)(void *)secret_work, (unsigned long)secret_helper_addr());
	fflush(stdout);
	for (;;)
		pause();
}
"""

DLAPP_C = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h)
		return 1;
	void *(*helper)(void) = (void *(*)(void))dlsym(h, "secret_helper_addr");
	printf("%d %lx %lx\n", getpid(), (unsigned long)dlsym(h, "secret_work"), (unsigned long)helper());
	fflush(stdout);
	for (;;)
		pause();
}
"""

GO_SRC = r"""
package main

import (
	"fmt"
	"os"
	"reflect"
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
	fmt.Printf("%d %x\n", os.Getpid(), reflect.ValueOf((*Ledger).Settle).Pointer())
	for {
		l.Settle(1000)
		time.Sleep(10 * time.Millisecond)
	}
}
"""


def run(*cmd, **kw):
    return subprocess.run(list(map(str, cmd)), check=True, capture_output=True, text=True, **kw)


class Harness:
    """The symbolizer in a child process: one command per line, answers end with '.'."""

    def __init__(self, test, *args):
        self.p = subprocess.Popen([HARNESS, *map(str, args)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        test.addCleanup(self.close)

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = []
        while True:
            row = self.p.stdout.readline()
            if row == "":
                raise AssertionError("symbols-harness died: " + self.p.stderr.read())
            row = row.rstrip("\n")
            if row == ".":
                break
            if row.startswith("error\t"):
                raise AssertionError(row)
            out.append(row)
        return out

    def user(self, pid, addrs, gen=0, mode="none"):
        rows = self.cmd(f"user {pid} {gen} {mode} " + " ".join("%x" % a for a in addrs))
        return [r.split("\t") for r in rows]

    def stats(self):
        return [int(x) for x in self.cmd("stats")[0].split()]

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=30)
        err = self.p.stderr.read()
        if self.p.returncode != 0 or "Sanitizer" in err:
            raise AssertionError(f"symbols-harness exited {self.p.returncode}: {err[-3000:]}")


def start(test, argv, **kw):
    """Starts a fixture process that prints one line of facts, and returns (Popen, fields)."""
    p = subprocess.Popen(list(map(str, argv)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)

    def stop():
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL) if kw.get("start_new_session") else p.kill()
            p.wait()
    test.addCleanup(stop)
    line = p.stdout.readline()
    if not line:
        raise AssertionError(f"{argv} printed nothing: {p.stderr.read()}")
    return p, line.split()


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def random_build_id():
    return "%040x" % random.getrandbits(160)


class Processes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Not under /tmp: one test mounts a private tmpfs over /tmp.
        os.makedirs(os.path.join(np.ROOT, "build"), exist_ok=True)
        cls.dir = tempfile.mkdtemp(prefix="symtest-", dir=os.path.join(np.ROOT, "build"))

        def cc(name, src, *flags):
            path = os.path.join(cls.dir, name)
            with open(path + ".c", "w") as f:
                f.write(src)
            run("gcc", "-O1", "-g", "-o", path, path + ".c", *flags)
            return path
        cls.cc = staticmethod(cc)
        cls.jit = cc("jit", JIT_C)
        cls.lib_build_id = random_build_id()
        cls.lib = cc("libsecret.so", LIB_C, "-fPIC", "-shared", "-Wl,--build-id=0x" + cls.lib_build_id)
        cls.decoy = cc("libdecoy.so", DECOY_C, "-fPIC", "-shared")
        cls.app = cc("app", APP_C, "-L" + cls.dir, "-lsecret")
        cls.dlapp = cc("dlapp", DLAPP_C)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def test_perf_map_names_jit_code(self):
        p, (pid, base) = start(self, [self.jit])
        pid, base = int(pid), int(base, 16)
        mapfile = f"/tmp/perf-{pid}.map"
        self.addCleanup(lambda: os.path.exists(mapfile) and os.unlink(mapfile))
        with open(mapfile, "w") as f:
            f.write("%x 100 LazyCompile:~handler /srv/app.js:10\n" % base)
            f.write("0x%x 0x40 py::bar:/run/t.py\n" % (base + 0x200))
        h = Harness(self)
        h.cmd(f"note {pid} 0")
        rows = h.user(pid, [base + 0x10, base + 0x210, base + 0x1000])
        self.assertEqual([r[0] for r in rows], ["LazyCompile:~handler /srv/app.js:10", "py::bar:/run/t.py", "[unknown]"])
        self.assertEqual(rows[0][1], "[anon]")
        self.assertEqual(rows[0][2], "1")
        h.cmd("end")
        # The JIT moved code: a newer line overlapping the old entry replaces it entirely.
        with open(mapfile, "a") as f:
            f.write("%x 20 Builtin:newer\n" % (base + 0x8))
        rows = h.user(pid, [base + 0x10, base + 0x40, base + 0x210])
        self.assertEqual([r[0] for r in rows], ["Builtin:newer", "[unknown]", "py::bar:/run/t.py"])

    def test_perf_map_of_another_user_is_ignored(self):
        p, (pid, base) = start(self, [self.jit])
        pid, base = int(pid), int(base, 16)
        mapfile = f"/tmp/perf-{pid}.map"
        self.addCleanup(lambda: os.path.exists(mapfile) and os.unlink(mapfile))
        with open(mapfile, "w") as f:
            f.write("%x 100 planted_by_someone_else\n" % base)
        os.chown(mapfile, 12345, 12345)  # the process runs as root, the file is not its user's
        h = Harness(self)
        self.assertEqual(h.user(pid, [base + 4])[0][0], "[unknown]")
        h.cmd("end")
        os.chown(mapfile, os.getuid(), os.getgid())
        self.assertEqual(h.user(pid, [base + 4])[0][0], "planted_by_someone_else")

    def test_perf_map_inside_pid_and_mount_namespace(self):
        # The JIT sees itself as pid 1 and writes /tmp/perf-1.map in its own private /tmp. Its binary
        # is opened before the tmpfs hides /tmp (where a clone of this repository may live) and run
        # through that descriptor.
        script = f"exec 3<{self.jit} && mount -t tmpfs tmpfs /tmp && exec /proc/self/fd/3"
        p, (nspid, base) = start(self, ["unshare", "--pid", "--fork", "--mount", "sh", "-c", script],
                                 start_new_session=True)
        self.assertEqual(nspid, "1")
        base = int(base, 16)
        host_pid = children(p.pid)[0]
        with open(f"/proc/{host_pid}/root/tmp/perf-1.map", "w") as f:
            f.write("%x 80 Interpreted:ns_fn\n" % base)
        self.assertFalse(os.path.exists("/tmp/perf-1.map") and
                         "ns_fn" in open("/tmp/perf-1.map", errors="replace").read())
        h = Harness(self)
        h.cmd(f"note {host_pid} 0")
        self.assertEqual(h.user(host_pid, [base + 4])[0][0], "Interpreted:ns_fn")

    def test_library_only_inside_container_root(self):
        """The library and its debug file exist only in a private mount namespace; the process is
        noted while alive and its frames are named after it exited."""
        root = tempfile.mkdtemp(prefix="root-", dir=self.dir)
        debug = os.path.join(self.dir, "libsecret.debug")
        stripped = os.path.join(self.dir, "libsecret.stripped.so")
        shutil.copy(self.lib, stripped)
        run("objcopy", "--only-keep-debug", stripped, debug)
        run("strip", "--strip-all", stripped)
        deps = [d for d in rootfs.library_deps(self.app, env=dict(os.environ, LD_LIBRARY_PATH=self.dir))
                if "libsecret" not in d]
        bid = self.lib_build_id
        files = [(d, d) for d in deps] + [
            (self.app, "/app"), (stripped, "/opt/secret/lib/libsecret.so"),
            (debug, f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug")]
        script = rootfs.chroot_script(root, files, ["/app"], env=[("LD_LIBRARY_PATH", "/opt/secret/lib")])
        p, (_, work, helper) = start(self, ["unshare", "--mount", "sh", "-c", script])
        pid, work, helper = p.pid, int(work, 16), int(helper, 16)
        # Nothing of this exists on the host.
        self.assertEqual(os.listdir(root), [])
        self.assertFalse(os.path.exists("/opt/secret/lib/libsecret.so"))
        h = Harness(self)
        h.cmd(f"note {pid} 0")
        p.kill()
        p.wait()
        self.assertFalse(os.path.exists(f"/proc/{pid}"))
        rows = h.user(pid, [work + 1, helper + 1])
        self.assertEqual([r[0] for r in rows], ["secret_work", "hidden_helper"])
        self.assertEqual(rows[0][1], "/opt/secret/lib/libsecret.so")

    def test_deleted_and_replaced_library(self):
        lib = os.path.join(self.dir, "libdel.so")
        shutil.copy(self.lib, lib)
        p, (pid, work, helper) = start(self, [self.dlapp, lib])
        pid, work, helper = int(pid), int(work, 16), int(helper, 16)
        os.unlink(lib)
        shutil.copy(self.decoy, lib)  # a different file at the same path now
        h = Harness(self)
        rows = h.user(pid, [helper + 2, work + 2])
        self.assertEqual([r[0] for r in rows], ["hidden_helper", "secret_work"])
        self.assertEqual(rows[0][1], lib)

    def test_stripped_go_pie(self):
        src = os.path.join(self.dir, "ledger.go")
        with open(src, "w") as f:
            f.write(GO_SRC)
        out = os.path.join(self.dir, "ledger-pie")
        env = dict(os.environ, CGO_ENABLED="0", GO111MODULE="off")
        run("go", "build", "-buildmode=pie", "-ldflags=-s -w", "-o", out, src, env=env, cwd=self.dir)
        sections = run("readelf", "-SW", out).stdout
        self.assertIn(".data.rel.ro.gopclntab", sections)
        self.assertNotIn(".symtab", sections)
        p, (pid, pc) = start(self, [out])
        pid, pc = int(pid), int(pc, 16)
        h = Harness(self)
        h.cmd(f"note {pid} 0")
        rows = h.user(pid, [pc + 3, pc + 3])
        self.assertEqual([r[0] for r in rows], ["main.(*Ledger).Settle"] * 2)
        self.assertEqual(rows[0][1], out)
        self.assertLess(int(rows[0][3], 16), pc)  # the ELF vaddr, not the runtime address

    def test_processes_are_forgotten_and_caches_bounded(self):
        h = Harness(self, "--cache-bytes", 1)
        p, (pid, work, helper) = start(self, [self.dlapp, self.lib])
        pid, work = int(pid), int(work, 16)
        for _ in range(3):
            self.assertEqual(h.user(pid, [work])[0][0], "secret_work")
            h.cmd("end")
            cache_bytes, files, symbols, procs, lookups, unresolved = h.stats()
            self.assertEqual(symbols, 0)  # over budget: evicted at the end of the batch
            self.assertEqual(procs, 1)
        h.cmd(f"forget {pid}")
        h.cmd("end")
        self.assertEqual(h.stats()[3], 0)

    def test_kernel_frames(self):
        addr = None
        with open("/proc/kallsyms") as f:
            for line in f:
                a, t, name = line.split()[:3]
                if name == "do_sys_openat2" and t in "Tt":
                    addr = int(a, 16)
        self.assertTrue(addr, "do_sys_openat2 not in kallsyms (addresses hidden?)")
        h = Harness(self)
        rows = h.cmd("kernel %x %x" % (addr + 4, addr + 4))
        self.assertEqual([r.split("\t")[0] for r in rows], ["do_sys_openat2"] * 2)
        self.assertEqual(rows[0].split("\t")[1], "[kernel.kallsyms]")


if __name__ == "__main__":
    unittest.main()
