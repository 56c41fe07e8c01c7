/* Unit tests for the debug info upload (agent/write/debuginfo.h): the RPC messages byte for
 * byte against the proto (debuginfo.v1alpha1), the parser of the server's answer on valid,
 * foreign and broken bytes, the OpenTelemetry file ID, and the uploader's bound: with one
 * worker stuck on a server that never answers, offers beyond the queue are dropped and
 * counted, a file already queued is not queued twice, and freeing the uploader aborts the
 * stuck call at once; what cache_size remembers, against a local server that wants no file;
 * the copy without .text (strip_text_section) of this test's own executable, read back with
 * libelf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <libelf.h>
#include <sys/mman.h>

#include "agent/write/debuginfo.h"
#include "agent/write/elf_strip.h"
#include "agent/write/internal.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "tests/unit/wait_test.h"

static void encodes_requests(void **state)
{
	(void)state;
	struct np_buf b = NP_BUF_INIT;
	/* file (1) { gnu_build_id (1) "ab12", name (4) "libc.so.6", type (5) 1 } */
	static const uint8_t want[] = { 0x0a, 0x13, 0x0a, 0x04, 'a', 'b', '1', '2', 0x22, 0x09, 'l', 'i', 'b',
					'c',  '.',  's',  'o',  '.',  '6', 0x28, 0x01 };
	np_debuginfo_encode_should_initiate(&b, "ab12", NULL, "libc.so.6", NP_DEBUGINFO_TYPE_EXECUTABLE_FULL);
	assert_false(b.failed);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.p, want, sizeof(want));
	/* with otel_file_id (3) "f1", type 2 (TYPE_EXECUTABLE_NO_TEXT) */
	static const uint8_t want2[] = { 0x0a, 0x0d, 0x0a, 0x02, 'a', 'b', 0x1a, 0x02, 'f', '1', 0x22, 0x01, 'x', 0x28, 0x02 };
	np_buf_reset(&b);
	np_debuginfo_encode_should_initiate(&b, "ab", "f1", "x", NP_DEBUGINFO_TYPE_EXECUTABLE_NO_TEXT);
	assert_int_equal(b.len, sizeof(want2));
	assert_memory_equal(b.p, want2, sizeof(want2));
	np_buf_reset(&b);
	np_debuginfo_encode_upload_finished(&b, "ab12");
	static const uint8_t fin[] = { 0x0a, 0x04, 'a', 'b', '1', '2' };
	assert_int_equal(b.len, sizeof(fin));
	assert_memory_equal(b.p, fin, sizeof(fin));
	np_buf_free(&b);
}

static void decodes_answers(void **state)
{
	(void)state;
	struct np_err err;
	char reason[8];
	int should;

	/* should_initiate_upload = true, reason "First time" (cut to the buffer) */
	static const uint8_t yes[] = { 0x08, 0x01, 0x12, 0x0a, 'F', 'i', 'r', 's', 't', ' ', 't', 'i', 'm', 'e' };
	assert_int_equal(np_debuginfo_decode_should_initiate(yes, sizeof(yes), &should, reason, sizeof(reason), &err), 0);
	assert_int_equal(should, 1);
	assert_string_equal(reason, "First t");
	/* the empty message: false, no reason (proto3 leaves defaults out) */
	assert_int_equal(np_debuginfo_decode_should_initiate("", 0, &should, reason, sizeof(reason), &err), 0);
	assert_int_equal(should, 0);
	assert_string_equal(reason, "");
	/* unknown fields of every wire type are skipped (a newer server) */
	static const uint8_t newer[] = { 0x18, 0x05, 0x21, 1, 2, 3, 4, 5, 6, 7, 8, 0x2d, 1, 2, 3, 4, 0x08, 0x02 };
	assert_int_equal(np_debuginfo_decode_should_initiate(newer, sizeof(newer), &should, reason, sizeof(reason), &err),
			 0);
	assert_int_equal(should, 1);
	/* broken: truncated varint, length past the end, group wire type, field 0, short fixed */
	static const uint8_t t1[] = { 0x08, 0x80 }, t2[] = { 0x12, 0x05, 'a' }, t3[] = { 0x0b }, t4[] = { 0x00, 0x01 },
			     t5[] = { 0x21, 1, 2 };
	const struct {
		const uint8_t *p;
		size_t n;
	} bad[] = { { t1, sizeof(t1) }, { t2, sizeof(t2) }, { t3, sizeof(t3) }, { t4, sizeof(t4) }, { t5, sizeof(t5) } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = '\0';
		assert_int_equal(np_debuginfo_decode_should_initiate(bad[i].p, bad[i].n, &should, reason, sizeof(reason), &err),
				 -1);
		assert_true(err.msg[0] != '\0');
	}
}

/* The OpenTelemetry FileID, against values computed with Python's hashlib: a file shorter than
 * 4 KiB (head and tail are the whole file) and one longer than 8 KiB. */
static void otel_file_ids(void **state)
{
	(void)state;
	struct np_err err;
	char id[33];
	uint8_t big[10240];
	int fd = memfd_create("fileid", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	assert_int_equal(np_debuginfo_otel_file_id(fd, id, &err), 0);
	assert_string_equal(id, "b2c90e0c61910efa8c079b70039694de");
	close(fd);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	fd = memfd_create("fileid", MFD_CLOEXEC);
	assert_int_equal(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
	assert_int_equal(np_debuginfo_otel_file_id(fd, id, &err), 0);
	assert_string_equal(id, "43a0e5b6c86a422f0e8c654be08b31f5");
	close(fd);
}

/* A listener that accepts connections (in its backlog) and never answers. */
static int silent_listener(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void bounded_and_never_blocking(void **state)
{
	(void)state;
	struct np_err merr;
	struct np_metrics *reg = np_metrics_new(&merr);
	struct np_write_endpoint ep;
	struct np_debuginfo_options o = { .cache_size = 16, .queue_size = 1, .workers = 1 };
	struct np_debuginfo_uploader *u = NULL;
	struct np_err err;
	uint64_t c[NP_DEBUGINFO__RESULTS];
	char url[64];
	int port, fd = silent_listener(&port);

	assert_non_null(reg);
	np_write_endpoint_init(&ep);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	ep.url = url;
	ep.remote_timeout_ns = 30 * NP_NSEC_PER_SEC; /* what a call waiting for the server would take */
	assert_int_equal(np_debuginfo_uploader_new(&ep, &o, reg, &u, &err), 0);
	ep.url = NULL;
	const char *ids[] = { "aa01", "aa02", "aa03", "aa04" };
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < 4; i++) {
			struct np_debuginfo_file f = { .build_id = ids[i], .name = "x", .open_path = "/proc/self/exe" };
			int64_t t0 = np_mono_ns();
			np_debuginfo_offer(u, &f);
			/* never waits for the server (2 s: room for Valgrind's thread scheduling) */
			assert_true(np_mono_ns() - t0 < 2 * NP_NSEC_PER_SEC);
		}
	np_debuginfo_uploader_counts(u, c);
	/* One in the worker (or still queued), one queued: at least two of the four dropped in
	 * the first round; the second round drops again those not held (the held ones are
	 * neither queued again nor dropped). */
	assert_true(c[NP_DEBUGINFO_DROPPED] >= 4 && c[NP_DEBUGINFO_DROPPED] <= 6);
	assert_int_equal(c[NP_DEBUGINFO_UPLOADED] + c[NP_DEBUGINFO_SKIPPED] + c[NP_DEBUGINFO_FAILED], 0);
	int64_t t0 = np_mono_ns();
	np_debuginfo_uploader_free(u); /* aborts the call the silent server holds */
	assert_true(np_mono_ns() - t0 < 3 * NP_NSEC_PER_SEC);
	close(fd);
	np_write_endpoint_free(&ep);
	np_metrics_free(reg);
}

/* The section named name in e, or NULL. */
static Elf_Scn *section(Elf *e, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	assert_int_equal(elf_getshdrstrndx(e, &shstrndx), 0);
	for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
		const char *n;
		if (gelf_getshdr(s, sh) && (n = elf_strptr(e, shstrndx, sh->sh_name)) && !strcmp(n, name))
			return s;
	}
	return NULL;
}

static void strips_text(void **state)
{
	(void)state;
	int src = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), out = memfd_create("strip-test", MFD_CLOEXEC);
	struct np_err err;
	GElf_Shdr a, b;
	struct stat st_src, st_out;

	assert_true(src >= 0 && out >= 0);
	assert_int_equal(np_elf_only_keep_debug(src, out, &err), 0);
	assert_int_equal(fstat(src, &st_src), 0);
	assert_int_equal(fstat(out, &st_out), 0);
	assert_true(st_out.st_size > 0 && st_out.st_size < st_src.st_size);
	Elf *e = elf_begin(src, ELF_C_READ, NULL), *c = elf_begin(out, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_non_null(c);
	size_t n_e, n_c;
	assert_int_equal(elf_getshdrnum(e, &n_e), 0);
	assert_int_equal(elf_getshdrnum(c, &n_c), 0);
	assert_int_equal(n_e, n_c); /* every section header stays, with its address and size */
	assert_non_null(section(e, ".text", &a));
	assert_non_null(section(c, ".text", &b));
	assert_int_equal(b.sh_type, SHT_NOBITS);
	assert_int_equal(a.sh_addr, b.sh_addr);
	assert_int_equal(a.sh_size, b.sh_size);
	/* the symbol table and the DWARF (unit tests are built with -g) keep their bytes */
	const char *kept[] = { ".symtab", ".strtab", ".debug_info", ".note.gnu.build-id" };
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		Elf_Scn *se = section(e, kept[i], &a), *sc = section(c, kept[i], &b);
		assert_non_null(se);
		assert_non_null(sc);
		assert_int_equal(a.sh_type, b.sh_type);
		Elf_Data *de = elf_rawdata(se, NULL), *dc = elf_rawdata(sc, NULL);
		assert_non_null(de);
		assert_non_null(dc);
		assert_int_equal(de->d_size, dc->d_size);
		assert_memory_equal(de->d_buf, dc->d_buf, de->d_size);
	}
	/* the only program headers left are the notes, at their notes' new place */
	size_t nph;
	assert_int_equal(elf_getphdrnum(c, &nph), 0);
	assert_true(nph >= 1);
	section(c, ".note.gnu.build-id", &b);
	int found = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		assert_non_null(gelf_getphdr(c, (int)i, &ph));
		assert_int_equal(ph.p_type, PT_NOTE);
		found |= ph.p_offset == b.sh_offset;
	}
	assert_true(found);
	elf_end(c);
	elf_end(e);
	/* not an ELF file */
	int junk = memfd_create("junk", MFD_CLOEXEC), out2 = memfd_create("out", MFD_CLOEXEC);
	assert_int_equal(write(junk, "#!/bin/sh\n", 10), 10);
	assert_int_equal(np_elf_only_keep_debug(junk, out2, &err), -1);
	close(junk);
	close(out2);
	close(src);
	close(out);
}

/* A debug info server that answers every ShouldInitiateUpload "no" (an empty message) and counts,
 * per build ID, how often it was asked. */
struct no_server {
	int fd, port;
	pthread_t thread;
	atomic_int asked[4]; /* build IDs "bb00".."bb03" */
	atomic_int total;
};

static void *no_server_main(void *arg)
{
	struct no_server *srv = arg;
	for (;;) {
		int c = accept(srv->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		char buf[8192];
		size_t len = 0;
		/* keep-alive: one request after another on the connection */
		for (;;) {
			char *end = NULL;
			ssize_t n;
			while (!(end = memmem(buf, len, "\r\n\r\n", 4)) && len < sizeof(buf) &&
			       (n = read(c, buf + len, sizeof(buf) - len)) > 0)
				len += (size_t)n;
			if (!end)
				break;
			char *cl = memmem(buf, (size_t)(end - buf), "Content-Length: ", 16);
			size_t body = cl ? strtoul(cl + 16, NULL, 10) : 0, have = len - (size_t)(end + 4 - buf);
			while (have < body && len < sizeof(buf) && (n = read(c, buf + len, sizeof(buf) - len)) > 0) {
				len += (size_t)n;
				have += (size_t)n;
			}
			for (int i = 0; i < 4; i++) {
				char id[5] = { 'b', 'b', '0', (char)('0' + i), 0 };
				if (memmem(end + 4, body, id, 4))
					atomic_fetch_add(&srv->asked[i], 1);
			}
			atomic_fetch_add(&srv->total, 1);
			static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/proto\r\nContent-Length: 0\r\n\r\n";
			if (write(c, ok, sizeof(ok) - 1) < 0)
				break;
			size_t used = (size_t)(end + 4 - buf) + body;
			memmove(buf, buf + used, len - used);
			len -= used;
		}
		close(c);
	}
}

struct skipped_at_least {
	struct np_debuginfo_uploader *u;
	uint64_t n;
};

/* The uploader settled n files the server did not want (not just sent the question). */
static int skipped_reached(void *ud)
{
	struct skipped_at_least *t = ud;
	uint64_t c[NP_DEBUGINFO__RESULTS];
	np_debuginfo_uploader_counts(t->u, c);
	return c[NP_DEBUGINFO_SKIPPED] >= t->n;
}

/* Whether offer i of settled_files_are_remembered reaches the server. */
static int asked_expected(int small, int i)
{
	return i < 3 || small;
}

/* What the settled set remembers (cache_size): with room for every file, each is asked about
 * once however often it is offered; with cache_size 2 (two generations of one), the oldest of
 * three settled files is forgotten and asked about again. */
static void settled_files_are_remembered(void **state)
{
	(void)state;
	for (int small = 0; small < 2; small++) {
		struct no_server srv = { 0 };
		struct np_err err;
		struct np_metrics *reg = np_metrics_new(&err);
		struct np_write_endpoint ep;
		struct np_debuginfo_options o = { .cache_size = small ? 2 : 100, .queue_size = 8, .workers = 1 };
		struct np_debuginfo_uploader *u = NULL;
		char url[64];
		srv.fd = silent_listener(&srv.port);
		assert_int_equal(pthread_create(&srv.thread, NULL, no_server_main, &srv), 0);
		np_write_endpoint_init(&ep);
		snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv.port);
		ep.url = url;
		assert_int_equal(np_debuginfo_uploader_new(&ep, &o, reg, &u, &err), 0);
		ep.url = NULL;
		/* bb00, bb01, bb02 in turn, each answered before the next is offered; then bb00 again */
		const char *order[] = { "bb00", "bb01", "bb02", "bb00", "bb01" };
		uint64_t settled = 0;
		for (int i = 0; i < 5; i++) {
			struct np_debuginfo_file f = { .build_id = order[i], .name = "x", .open_path = "/proc/self/exe" };
			np_debuginfo_offer(u, &f);
			/* a file asked about is settled within the wait; one remembered is never asked */
			struct skipped_at_least t = { u, settled + 1 };
			int asked = np_test_wait_until(skipped_reached, &t, asked_expected(small, i) ? 5000 : 300);
			assert_int_equal(asked, asked_expected(small, i));
			settled += (uint64_t)asked;
		}
		np_debuginfo_uploader_free(u);
		shutdown(srv.fd, SHUT_RDWR);
		close(srv.fd);
		pthread_join(srv.thread, NULL);
		np_write_endpoint_free(&ep);
		np_metrics_free(reg);
		if (small) { /* bb00 forgotten by bb02, then bb01 by bb00's return: each asked twice */
			assert_int_equal(atomic_load(&srv.asked[0]), 2);
			assert_int_equal(atomic_load(&srv.asked[1]), 2);
		} else {
			assert_int_equal(atomic_load(&srv.asked[0]), 1);
			assert_int_equal(atomic_load(&srv.asked[1]), 1);
		}
		assert_int_equal(atomic_load(&srv.asked[2]), 1);
	}
}

int main(void)
{
	np_log_set_level(NP_ERROR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(encodes_requests),
		cmocka_unit_test(decodes_answers),
		cmocka_unit_test(otel_file_ids),
		cmocka_unit_test(bounded_and_never_blocking),
		cmocka_unit_test(strips_text),
		cmocka_unit_test(settled_files_are_remembered),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
