/* The OpenTelemetry process and thread contexts: see otel_ctx.h. */
#include "agent/profile/otel_ctx.h"

#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/pprof/proto.h"
#include "agent/runtime/fsbase.h"
#include "agent/runtime/glibc.h"
#include "agent/runtime/procs.h"
#include "agent/symbols/elf_file.h"
#include "agent/symbols/maps.h"
#include "bpf/sampler_types.h"
#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/lines.h"
#include "lib/log.h"

#define SIGNATURE "OTEL_CTX"
#define VERSION 2
#define READ_TRIES 3
#define TLS_SYMBOL "otel_thread_ctx_v1"
#define SCHEMA_KEY "threadlocal.schema_version"
/* A process's maps read for the context: bounded (a process controls their size). */
#define MAPS_MAX_BYTES ((size_t)16 << 20)
#define MAPS_MAX_LINE 4096
/* A process seen without a context is looked at again (OTEP 4719: readers poll), first after
 * POLL_NS, then at doubling intervals up to POLL_MAX_NS (most processes never publish one: their
 * maps are not re-read every few seconds), at most POLL_BATCH of them per drain. */
#define POLL_NS (10LL * 1000000000LL)
#define POLL_MAX_NS (160LL * 1000000000LL)
#define POLL_BATCH 32
/* .dynsym of the files searched for otel_thread_ctx_v1. */
#define SYMBOL_BYTES_MAX ((size_t)64 << 20)
/* Files of a process searched for the variable (its program and libraries). */
#define FILES_MAX 512

static uint32_t le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v)); /* host order: the process wrote it on this machine */
	return v;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

int np_otel_ctx_header_parse(const uint8_t *b, size_t n, struct np_otel_ctx_header *out)
{
	if (n < NP_OTEL_CTX_HEADER || memcmp(b, SIGNATURE, 8) != 0)
		return -1;
	out->version = le32(b + 8);
	out->payload_size = le32(b + 12);
	out->published_at_ns = le64(b + 16);
	out->payload = le64(b + 24);
	if (out->version != VERSION || out->payload_size == 0 || out->payload_size > NP_OTEL_CTX_PAYLOAD_MAX ||
	    out->published_at_ns == 0)
		return -1;
	return 0;
}


/* KeyValue { string key = 1; AnyValue value = 2; }, AnyValue { string string_value = 1; ... }:
 * 1 when the key is key, with its string value in *val (val->sub NULL when the value is no
 * string), 0 when it is another key, -1 when malformed. */
static int keyvalue_string(const struct pb_field *kv, const char *key, struct pb_field *val)
{
	struct pb_reader r = { kv->sub, kv->sub + kv->sublen }, any = { NULL, NULL };
	struct pb_field f, k = { 0 };
	int have_key = 0, have_str = 0, rc;

	while ((rc = pb_read_field(&r, &f)) > 0) {
		if (f.num == 1 && f.wire == PB_LEN) {
			k = f;
			have_key = 1;
		} else if (f.num == 2 && f.wire == PB_LEN) {
			any = (struct pb_reader){ f.sub, f.sub + f.sublen };
		}
	}
	if (rc < 0)
		return -1;
	if (!have_key || k.sublen != strlen(key) || memcmp(k.sub, key, k.sublen) != 0)
		return 0;
	/* AnyValue is a oneof: the last of its members set wins. */
	while ((rc = pb_read_field(&any, &f)) > 0) {
		if (f.num == 1 && f.wire == PB_LEN) {
			*val = f;
			have_str = 1;
		} else if (f.num >= 2 && f.num <= 7) {
			have_str = 0;
		}
	}
	if (rc < 0)
		return -1;
	if (!have_str)
		*val = (struct pb_field){ 0 };
	return 1;
}

int np_otel_ctx_schema(const uint8_t *p, size_t n, char *schema, size_t cap)
{
	struct pb_reader r = { p, p + n };
	struct pb_field f, val = { 0 };
	int rc, found = 0;

	if (cap)
		schema[0] = '\0';
	while ((rc = pb_read_field(&r, &f)) > 0) {
		if (f.num != 2 || f.wire != PB_LEN) /* ProcessContext.attributes; the resource is not needed here */
			continue;
		struct pb_field kv_val = { 0 };
		int k = keyvalue_string(&f, SCHEMA_KEY, &kv_val);
		if (k < 0)
			return -1;
		if (k) {
			val = kv_val;
			found = 1;
		}
	}
	if (rc < 0)
		return -1;
	if (!found || !val.sub || val.sublen >= cap || memchr(val.sub, '\0', val.sublen))
		return 0;
	memcpy(schema, val.sub, val.sublen);
	schema[val.sublen] = '\0';
	return 1;
}

int np_otel_ctx_read(rt_mem_reader read, void *ud, uint32_t pid, uint64_t addr, char *schema, size_t cap)
{
	uint8_t raw[NP_OTEL_CTX_HEADER];
	uint8_t *payload = NULL;
	struct np_otel_ctx_header h;
	uint64_t again;
	int rc = -1;

	for (int i = 0; i < READ_TRIES && rc < 0; i++) {
		if (read(ud, pid, addr, raw, sizeof(raw)) || np_otel_ctx_header_parse(raw, sizeof(raw), &h))
			continue; /* not published, or an update in progress */
		uint8_t *p = realloc(payload, h.payload_size);
		if (!p)
			break;
		payload = p;
		if (read(ud, pid, h.payload, payload, h.payload_size) ||
		    read(ud, pid, addr + 16, &again, sizeof(again)) || again != h.published_at_ns)
			continue;
		int s = np_otel_ctx_schema(payload, h.payload_size, schema, cap);
		rc = s < 0 ? -1 : s;
		if (s < 0)
			break; /* a consistent read of a bad payload: reading again will not help */
	}
	free(payload);
	return rc;
}

int np_otel_ctx_maps_line(const char *line, size_t len, uint64_t *start)
{
	/* With the kernel's " (deleted)" taken off a memfd's name (sym_maps_line_parse). */
	static const char *const names[] = { "/memfd:OTEL_CTX", "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]" };
	struct sym_maps_line l;

	if (sym_maps_line_parse(line, len, &l) < 0 || l.perms[0] != 'r' || l.perms[2] == 'x')
		return 0;
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (l.path_len == strlen(names[k]) && memcmp(l.path, names[k], l.path_len) == 0) {
			*start = l.start;
			return 1;
		}
	return 0;
}

int np_otel_ctx_schema_tls(const char *schema)
{
	/* OTEP 4947: "tlsdesc_v1_dev" while it was a draft, "tls_v1" once merged; both name the
	 * same variable and record. */
	return strcmp(schema, "tlsdesc_v1_dev") == 0 || strcmp(schema, "tls_v1") == 0;
}

struct pending {
	uint32_t pid, gen;
	int64_t next_ns, wait_ns; /* the next look, and the wait after it */
};

struct np_otel_ctx {
	struct symbolizer *sym; /* borrowed */
	int map_fd;		/* borrowed */
	volatile uint32_t *fsbase_off; /* borrowed: the sampler's otel_fsbase_off */
	int fsbase_state;	/* 0 not looked for yet, 1 found, -1 not available (logged once) */
	struct rt_procs procs;	/* otel_procs' processes, and the reasons others cannot be read */
	struct pending *pending; /* owned: processes seen without a context, looked at again */
	size_t n_pending, cap_pending;
};

int np_otel_ctx_new(struct symbolizer *sym, int map_fd, volatile uint32_t *fsbase_off, struct np_otel_ctx **out,
		    struct np_err *err)
{
	struct np_otel_ctx *t;

	if (map_fd < 0 || !fsbase_off)
		return np_errf(err, "the BPF program has no otel_procs map or otel_fsbase_off");
	if (!(t = calloc(1, sizeof(*t))))
		return np_errf(err, "out of memory");
	t->sym = sym;
	t->map_fd = map_fd;
	t->fsbase_off = fsbase_off;
	rt_procs_init(&t->procs, sizeof(struct rt_proc), map_fd, NULL, "OpenTelemetry thread contexts");
	*out = t;
	return 0;
}

void np_otel_ctx_free(struct np_otel_ctx *t)
{
	if (!t)
		return;
	rt_procs_free(&t->procs);
	free(t->pending);
	free(t);
}

static int on_maps_line(void *ud, const char *line, size_t len, struct np_err *err)
{
	(void)err;
	return np_otel_ctx_maps_line(line, len, ud); /* 1 stops at the first */
}

/* The address of pid's published context: 1 and *addr, 0 when it maps none (or is gone). */
static int find_mapping(uint32_t pid, uint64_t *addr)
{
	struct np_lines_opts o = { .max_bytes = MAPS_MAX_BYTES, .max_line = MAPS_MAX_LINE };
	struct np_lines_result res;
	struct np_err e;
	char path[32];
	int fd, rc;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	rc = np_read_lines(fd, &o, on_maps_line, addr, &res, &e);
	close(fd);
	return rc == 0 && res.stopped;
}

int np_otel_ctx_exec_tls_off(uint64_t memsz, uint64_t align, uint64_t vaddr, uint64_t value, int32_t *off)
{
	if (!align)
		align = 1;
	/* The block starts aligned below the thread pointer only when the segment is aligned in
	 * the file too (glibc otherwise shifts it by the misalignment; no linker writes that). */
	if ((align & (align - 1)) || vaddr % align || memsz > (1u << 20) || value > memsz || memsz - value < 8)
		return -1;
	uint64_t block = (memsz + align - 1) & ~(align - 1);
	*off = (int32_t)((int64_t)value - (int64_t)block);
	return 0;
}

/* Looks for otel_thread_ctx_v1 in the open file: 1 and *off in the program (is_exec); 2 and
 * *value (its offset in the library's TLS segment) in a library; 0 when the file has no such
 * symbol; -1 (why set) when it has one that cannot be read. */
static int file_tls(int fd, int is_exec, int32_t *off, uint64_t *lib_value, char *why, size_t why_len)
{
	GElf_Phdr tls = { 0 };
	uint64_t value, size;
	size_t n;
	int have = 0, rc = 0;
	Elf *e = sym_elf_begin_fd(fd);

	if (!e)
		return 0;
	if (sym_elf_find_symbol(e, fd, TLS_SYMBOL, SYMBOL_BYTES_MAX, &value, &size) < 0)
		goto out;
	rc = -1;
	if (elf_getphdrnum(e, &n)) {
		snprintf(why, why_len, "its program headers cannot be read");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_TLS) {
			tls = ph;
			have = 1;
		}
	}
	if (!is_exec && have && tls.p_memsz <= (1u << 20) && value <= tls.p_memsz && tls.p_memsz - value >= 8) {
		*lib_value = value;
		rc = 2;
		goto out;
	}
	if (!have || !is_exec || np_otel_ctx_exec_tls_off(tls.p_memsz, tls.p_align, tls.p_vaddr, value, off)) {
		snprintf(why, why_len, TLS_SYMBOL " is not a pointer in its file's TLS segment");
		goto out;
	}
	rc = 1;
out:
	elf_end(e);
	return rc;
}

struct scan {
	struct np_otel_ctx *t;
	uint32_t pid, gen;
	size_t files;
	int found; /* 1 found in the program, 2 in a library, -1 found where it cannot be read */
	int32_t off;	 /* found 1: the variable from the thread pointer */
	uint64_t value;	 /* found 2: the variable in the library's TLS segment */
	uint64_t lib_bias; /* found 2: the library's load bias (its link_map's l_addr) */
	uint64_t libc_start, ld_start, ld_bias; /* glibc's C library and loader, 0 when not seen */
	char *why;
	size_t why_len;
};

/* Each file mapped executable (the program first: it is mapped below its libraries). */
static int on_mapping(void *ud, const struct sym_exec_mapping *m, struct np_err *err)
{
	struct scan *s = ud;
	int fd, dfd;

	(void)err;
	if (!m->key || !m->path || !m->path[0] || s->files >= FILES_MAX)
		return 0;
	int is_exec = s->files++ == 0;
	const char *base = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
	if (!s->libc_start && !strcmp(base, "libc.so.6"))
		s->libc_start = m->start;
	if (!s->ld_start && !strncmp(base, "ld-linux-", 9)) {
		s->ld_start = m->start;
		s->ld_bias = m->bias;
	}
	if (s->found || symbolizer_open_mapping(s->t->sym, s->pid, s->gen, m->start, &fd, &dfd) < 0)
		return 0;
	if (dfd >= 0)
		close(dfd);
	int r = file_tls(fd, is_exec, &s->off, &s->value, s->why, s->why_len);
	close(fd);
	if (r)
		s->found = r;
	if (r == 2)
		s->lib_bias = m->bias;
	return 0;
}

static int need_fsbase(struct np_otel_ctx *t)
{
	uint32_t off;
	const char *why;

	if (t->fsbase_state)
		return t->fsbase_state > 0 ? 0 : -1;
	if (rt_fsbase_off(&off, &why)) {
		np_log(NP_WARN, "otel_ctx", "OpenTelemetry thread contexts not supported on this kernel", "reason", why,
		       NULL);
		t->fsbase_state = -1;
		return -1;
	}
	*t->fsbase_off = off;
	t->fsbase_state = 1;
	return 0;
}

static void forget_pending(struct np_otel_ctx *t, uint32_t pid)
{
	for (size_t i = 0; i < t->n_pending; i++)
		if (t->pending[i].pid == pid) {
			t->pending[i] = t->pending[--t->n_pending];
			return;
		}
}

static int add_pending(struct np_otel_ctx *t, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct pending q = { pid, gen, np_mono_ns() + POLL_NS, 2 * POLL_NS };

	for (size_t i = 0; i < t->n_pending; i++)
		if (t->pending[i].pid == pid) {
			t->pending[i] = q; /* exec'd or mapped files: a fresh start */
			return 0;
		}
	if (np_grow((void **)&t->pending, &t->cap_pending, t->n_pending + 1, sizeof(*t->pending)))
		return np_errf(err, "out of memory");
	t->pending[t->n_pending++] = q;
	return 0;
}

/* The variable of a library in static TLS from the thread pointer, into s->off: 0, or -1 (why set). */
static int lib_tls(struct scan *s, char *why, size_t why_len)
{
	uint64_t tls_offset;
	const char *reason = "glibc's C library or dynamic loader is not mapped (musl, a static program)";

	if (s->libc_start && s->ld_start &&
	    rt_glibc_static_tls(s->t->sym, s->pid, s->gen, s->libc_start, s->ld_start, s->ld_bias, s->lib_bias,
				rt_process_mem, NULL, &tls_offset, &reason) == 0) {
		s->off = (int32_t)((int64_t)s->value - (int64_t)tls_offset);
		return 0;
	}
	snprintf(why, why_len, TLS_SYMBOL " is in a library: %s", reason);
	return -1;
}

/* 1 when (pid, gen) was told to the sampler, 0 when it has no context (yet), -1 on a hard
 * failure; *unsupported when it publishes one that cannot be read (why set, counted). */
static int detect(struct np_otel_ctx *t, uint32_t pid, uint32_t gen, int *unsupported, struct np_err *err)
{
	char schema[NP_OTEL_CTX_SCHEMA_MAX], why[256] = "";
	uint64_t addr;
	struct scan s = { .t = t, .pid = pid, .gen = gen, .why = why, .why_len = sizeof(why) };

	*unsupported = 0;
	if (!find_mapping(pid, &addr) || np_otel_ctx_read(rt_process_mem, NULL, pid, addr, schema, sizeof(schema)) <= 0)
		return 0;
	if (!strcmp(schema, "go_pprof_labels_v1")) {
		/* A Go program's context is its goroutines' pprof labels, which the Go runtime reader
		 * reads (go_enabled): nothing for this one to do, and nothing to warn about. */
		*unsupported = 1;
		return 0;
	}
	if (!np_otel_ctx_schema_tls(schema)) {
		/* Not the schema itself in the reason: reasons are kept, and a process chooses it. */
		snprintf(why, sizeof(why), "its thread-local schema is none of tls_v1, tlsdesc_v1_dev");
	} else {
		if (symbolizer_exec_mappings(t->sym, pid, gen, 0, on_mapping, &s, err) < 0)
			return -1;
		if (s.found == 0)
			snprintf(why, sizeof(why), "it announces a thread context but exports no " TLS_SYMBOL);
		else if (s.found == 2 && lib_tls(&s, why, sizeof(why)))
			; /* why set */
		else if (s.found > 0 && need_fsbase(t))
			snprintf(why, sizeof(why), "the kernel's BTF does not give the threads' fs base");
	}
	if (why[0]) {
		*unsupported = 1;
		rt_procs_unsupported(&t->procs, pid, "otel_ctx", "cannot read this process's OpenTelemetry thread context",
				     why);
		return 0;
	}
	struct np_otel_proc v = { .gen = gen, .tls_off = s.off };
	if (bpf_map_update_elem(t->map_fd, &pid, &v, BPF_ANY))
		return np_errno(err, "tell the sampler about the thread context of pid %u", pid);
	if (!rt_procs_add(&t->procs, pid, gen, err)) {
		(void)bpf_map_delete_elem(t->map_fd, &pid);
		return -1;
	}
	np_log(NP_DEBUG, "otel_ctx", "reading OpenTelemetry thread contexts", "pid", NP_LOG_INT(pid), "schema", schema,
	       NULL);
	return 1;
}

int np_otel_ctx_process(struct np_otel_ctx *t, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct rt_proc *p = rt_procs_find(&t->procs, pid);
	int unsupported, r;

	if (p && p->live && p->gen == gen)
		return 0; /* known: the variable's place is fixed for the incarnation */
	rt_procs_forget(&t->procs, p); /* exec'd: looked at anew */
	r = detect(t, pid, gen, &unsupported, err);
	if (r < 0)
		return -1;
	if (r || unsupported) {
		forget_pending(t, pid);
		return 0;
	}
	return add_pending(t, pid, gen, err);
}

void np_otel_ctx_exit(struct np_otel_ctx *t, uint32_t pid)
{
	rt_procs_forget(&t->procs, rt_procs_find(&t->procs, pid));
	forget_pending(t, pid);
}

int np_otel_ctx_poll(struct np_otel_ctx *t, struct np_err *err)
{
	int64_t now = np_mono_ns();
	int looked = 0;

	for (size_t i = 0; i < t->n_pending && looked < POLL_BATCH;) {
		struct pending *q = &t->pending[i];
		if (q->next_ns > now) {
			i++;
			continue;
		}
		looked++;
		int unsupported, r = detect(t, q->pid, q->gen, &unsupported, err);
		if (r < 0)
			return -1;
		if (r || unsupported) {
			t->pending[i] = t->pending[--t->n_pending];
			continue;
		}
		q->next_ns = now + q->wait_ns;
		q->wait_ns = q->wait_ns * 2 > POLL_MAX_NS ? POLL_MAX_NS : q->wait_ns * 2;
		i++;
	}
	return 0;
}

void np_otel_ctx_stats(const struct np_otel_ctx *t, size_t *processes, uint64_t *unsupported)
{
	*processes = t->procs.live;
	*unsupported = t->procs.unsupported;
}
