/* What the Go labels reader needs of a Go binary and of the kernel, each from untrusted bytes
 * (a binary's .go.buildinfo, the kernel's BTF), as pure parsers that tests and fuzzers feed
 * directly: the Go release that built a binary, the runtime offsets of that release
 * (docs/specs/go-labels.md §2), and the offset of task_struct.thread.fsbase. Stateless;
 * thread-safe. Prefix go_. */
#ifndef NP_RUNTIME_GO_LAYOUT_H
#define NP_RUNTIME_GO_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/go_labels.h"

/* The release a version string names ("go1.21.5", "go1.22rc1", "go1.19 X:nocoverageredesign"):
 * 0 with *minor set (1.minor), -1 for anything else ("devel ...", a Go 2). */
int go_parse_version(const char *s, size_t n, unsigned *minor);

/* The header of .go.buildinfo (sec[0..len)), which Go 1.13 and later write:
 *  1 and the version string inline (Go 1.18+: flags bit 2) in out (at most cap - 1 bytes, NUL
 *    ended);
 *  2 and *addr, the address of runtime.buildVersion's string header (older releases: a pointer
 *    of the header's pointer size, little endian only);
 * -1 when it is no buildinfo header this reads (big endian, 4-byte pointers, cut). */
int go_buildinfo(const uint8_t *sec, size_t len, char *out, size_t cap, uint64_t *addr);

/* The reader's offsets for Go 1.minor (amd64), kind NP_GO_LABELS_*; tls_g left 0. -1 outside
 * 1.13 to 1.25. */
int go_layout(unsigned minor, struct np_go_proc *out);

/* Reads len bytes at off of a BTF of known size (off + len within it): 0, or -1. */
typedef int (*go_btf_read)(void *ud, uint64_t off, void *buf, size_t len);
/* The reader of a BTF in memory (ud: its first byte). */
int go_btf_mem(void *ud, uint64_t off, void *buf, size_t len);

/* The byte offset of task_struct.thread.fsbase in the kernel's BTF (size bytes read through read,
 * as /sys/kernel/btf/vmlinux gives it; scanned a 64 KiB window at a time, not held whole): 0 and
 * *off, or -1 when the BTF is malformed, unreadable or has no such member (another architecture
 * names it otherwise). Also -1 when out of memory for the window. */
int go_btf_fsbase(go_btf_read read, void *ud, uint64_t size, uint32_t *off);

#endif
