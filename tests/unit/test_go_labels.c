/* Unit tests for the Go labels parsers: a sample's labels record as BPF writes it
 * (agent/profile/go_labels.c: sorted, distinct, cut UTF-8 trimmed, malformed records refused),
 * .go.buildinfo's two header forms and Go version strings, the per-release offsets, and the fs
 * base offset from BTF (a hand-made BTF, and the running kernel's, checked against libbpf's
 * own lookup). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <bpf/btf.h>
#include <linux/btf.h>

#include "agent/profile/go_labels.h"
#include "agent/runtime/go/layout.h"
#include "lib/error.h"
#include "lib/file.h"

static void put(struct np_go_labels *r, const char *k, size_t kl, const char *v, size_t vl)
{
	struct np_go_label *l = &r->l[r->n++];

	memcpy(l->key, k, kl);
	memcpy(l->val, v, vl);
	l->key_len = (uint8_t)kl;
	l->val_len = (uint8_t)vl;
}

static void decode_record(void **state)
{
	uint64_t words[NP_MAX_STACK_DEPTH] = { 0 };
	struct np_go_labels *r = (struct np_go_labels *)words;
	struct np_go_label_set s;

	(void)state;
	r->magic = NP_GO_LABELS_MAGIC;
	put(r, "worker", 6, "beta", 4);
	put(r, "tier", 4, "gold", 4);
	put(r, "worker", 6, "other", 5); /* a key twice (a cut key equal to another) */
	put(r, "", 0, "x", 1);		 /* an empty key */
	put(r, "caf\xc3\xa9", 5, "\xc3\xa9t\xc3", 4); /* a value cut inside its last rune */
	put(r, "bad", 3, "a\xffz", 3);
	r->cut = 1;
	assert_int_equal(np_go_labels_decode(words, NP_GO_LABELS_WORDS, &s), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.cut, 1);
	assert_string_equal(s.l[0].key, "bad");
	assert_string_equal(s.l[0].val, "a?z");
	assert_string_equal(s.l[1].key, "caf\xc3\xa9");
	assert_string_equal(s.l[1].val, "\xc3\xa9t");
	assert_string_equal(s.l[2].key, "tier");
	assert_string_equal(s.l[2].val, "gold");
	assert_string_equal(s.l[3].key, "worker");
	assert_true(!strcmp(s.l[3].val, "beta") || !strcmp(s.l[3].val, "other"));
}

static void decode_refuses(void **state)
{
	uint64_t words[NP_MAX_STACK_DEPTH] = { 0 };
	struct np_go_labels *r = (struct np_go_labels *)words;
	struct np_go_label_set s;

	(void)state;
	r->magic = NP_GO_LABELS_MAGIC;
	put(r, "k", 1, "v", 1);
	assert_int_equal(np_go_labels_decode(words, NP_GO_LABELS_WORDS - 1, &s), -1); /* short */
	assert_int_equal(s.n, 0);
	r->magic = 1;
	assert_int_equal(np_go_labels_decode(words, NP_GO_LABELS_WORDS, &s), -1);
	r->magic = NP_GO_LABELS_MAGIC;
	r->n = NP_GO_LABELS_MAX + 1;
	assert_int_equal(np_go_labels_decode(words, NP_GO_LABELS_WORDS, &s), -1);
	/* Lengths beyond their rooms: the label is dropped. */
	r->n = 1;
	r->l[0].key_len = NP_GO_LABEL_KEY;
	assert_int_equal(np_go_labels_decode(words, NP_GO_LABELS_WORDS, &s), 0);
	assert_int_equal(s.n, 0);
	r->l[0].key_len = 1;
	r->l[0].val_len = NP_GO_LABEL_VAL;
	assert_int_equal(np_go_labels_decode(words, NP_GO_LABELS_WORDS, &s), 0);
	assert_int_equal(s.n, 0);
}

static void versions(void **state)
{
	unsigned m = 0;

	(void)state;
	assert_int_equal(go_parse_version("go1.19.8", 8, &m), 0);
	assert_int_equal(m, 19);
	assert_int_equal(go_parse_version("go1.22rc1", 9, &m), 0);
	assert_int_equal(m, 22);
	assert_int_equal(go_parse_version("go1.13", 6, &m), 0);
	assert_int_equal(m, 13);
	assert_int_equal(go_parse_version("go1.21 X:nocoverageredesign", 27, &m), 0);
	assert_int_equal(m, 21);
	assert_int_equal(go_parse_version("devel go1.23-abc", 16, &m), -1);
	assert_int_equal(go_parse_version("go2.1", 5, &m), -1);
	assert_int_equal(go_parse_version("go1.", 4, &m), -1);
	assert_int_equal(go_parse_version("go1.x", 5, &m), -1);
	assert_int_equal(go_parse_version("go1.19x", 7, &m), -1);
}

static void buildinfo(void **state)
{
	uint8_t sec[64] = "\xff Go buildinf:";
	char v[16];
	uint64_t addr = 0;

	(void)state;
	/* Go 1.18+: inline, varint-prefixed. */
	sec[14] = 8;
	sec[15] = 2;
	sec[32] = 8;
	memcpy(sec + 33, "go1.19.8", 8);
	assert_int_equal(go_buildinfo(sec, 41, v, sizeof(v), &addr), 1);
	assert_string_equal(v, "go1.19.8");
	assert_int_equal(go_buildinfo(sec, 40, v, sizeof(v), &addr), -1); /* string cut */
	assert_int_equal(go_buildinfo(sec, 41, v, 5, &addr), 1);	  /* cut to the room */
	assert_string_equal(v, "go1.");
	sec[32] = 0x80; /* a varint that never ends */
	memset(sec + 33, 0x80, 31);
	assert_int_equal(go_buildinfo(sec, 64, v, sizeof(v), &addr), -1);
	/* Before 1.18: the address of runtime.buildVersion. */
	sec[15] = 0;
	memcpy(sec + 16, "\x10\x32\x54\x00\x00\x00\x00\x00", 8);
	assert_int_equal(go_buildinfo(sec, 32, v, sizeof(v), &addr), 2);
	assert_int_equal(addr, 0x543210);
	sec[14] = 4;
	assert_int_equal(go_buildinfo(sec, 32, v, sizeof(v), &addr), -1);
	sec[14] = 8;
	sec[15] = 1; /* big endian */
	assert_int_equal(go_buildinfo(sec, 32, v, sizeof(v), &addr), -1);
	sec[15] = 0;
	sec[0] = 0;
	assert_int_equal(go_buildinfo(sec, 32, v, sizeof(v), &addr), -1);
	assert_int_equal(go_buildinfo(sec, 31, v, sizeof(v), &addr), -1);
}

static void layouts(void **state)
{
	struct np_go_proc p;

	(void)state;
	assert_int_equal(go_layout(12, &p), -1);
	assert_int_equal(go_layout(26, &p), -1);
	for (unsigned m = 13; m <= 25; m++) {
		assert_int_equal(go_layout(m, &p), 0);
		assert_int_equal(p.g_m, 48);
		assert_int_equal(p.m_curg, m >= 25 ? 184 : 192);
		assert_int_equal(p.kind, m >= 24 ? NP_GO_LABELS_SLICE : NP_GO_LABELS_HMAP);
	}
	assert_int_equal((go_layout(16, &p), p.g_labels), 344);
	assert_int_equal((go_layout(19, &p), p.g_labels), 360);
	assert_int_equal((go_layout(19, &p), p.hmap_buckets), 16);
	assert_int_equal((go_layout(19, &p), p.hmap_b), 9);
	assert_int_equal((go_layout(21, &p), p.g_labels), 344);
	assert_int_equal((go_layout(23, &p), p.g_labels), 352);
	assert_int_equal((go_layout(24, &p), p.g_labels), 352);
	assert_int_equal((go_layout(25, &p), p.g_labels), 344);
}

/* A BTF of: 1 int, 2 struct thread_struct { long a; long fsbase; }, 3 struct task_struct { int x;
 * struct thread_struct thread (at byte 64); } with kflag bitfield offsets. */
struct mini_btf {
	struct btf_header h;
	uint8_t types[256];
	char strs[64];
};

static size_t mini(uint8_t *out, int thread_type)
{
	static const char strs[] = "\0int\0thread_struct\0a\0fsbase\0task_struct\0x\0thread";
	uint32_t t[] = {
		/* 1: int */ 1, BTF_KIND_INT << 24, 8, 64,
		/* 2: thread_struct */ 5, BTF_KIND_STRUCT << 24 | 2, 16, 19, 1, 0, 21, 1, 64,
		/* 3: task_struct, kflag */ 28, 1u << 31 | BTF_KIND_STRUCT << 24 | 2, 200, 40, 1, 0, 42, (uint32_t)thread_type,
		64 * 8,
	};
	struct btf_header h = { .magic = BTF_MAGIC, .version = 1, .hdr_len = sizeof(h), .type_off = 0,
				.type_len = sizeof(t), .str_off = sizeof(t), .str_len = sizeof(strs) };

	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), t, sizeof(t));
	memcpy(out + sizeof(h) + sizeof(t), strs, sizeof(strs));
	return sizeof(h) + sizeof(t) + sizeof(strs);
}

static void btf_fsbase(void **state)
{
	uint8_t b[512];
	size_t n = mini(b, 2);
	uint32_t off = 0;

	(void)state;
	assert_int_equal(go_btf_fsbase(go_btf_mem, b, n, &off), 0);
	assert_int_equal(off, 64 + 8);
	for (size_t cut = 0; cut < n; cut++)
		assert_int_equal(go_btf_fsbase(go_btf_mem, b, cut, &off), -1);
	n = mini(b, 1); /* thread is not the thread_struct */
	assert_int_equal(go_btf_fsbase(go_btf_mem, b, n, &off), -1);
}

/* The running kernel's: the same offset as libbpf finds. */
static void btf_kernel(void **state)
{
	struct np_err err;
	size_t len;
	char *raw = np_read_file("/sys/kernel/btf/vmlinux", 64u << 20, &len, &err);
	struct btf *btf;
	uint32_t off = 0, want = 0;
	int id;

	(void)state;
	assert_non_null(raw);
	assert_int_equal(go_btf_fsbase(go_btf_mem, raw, len, &off), 0);
	free(raw);
	btf = btf__load_vmlinux_btf();
	assert_non_null(btf);
	id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
	assert_true(id > 0);
	const struct btf_type *t = btf__type_by_id(btf, (uint32_t)id);
	const struct btf_member *m = btf_members(t);
	for (unsigned i = 0; i < btf_vlen(t); i++, m++) {
		if (strcmp(btf__name_by_offset(btf, m->name_off), "thread"))
			continue;
		const struct btf_type *ts = btf__type_by_id(btf, m->type);
		const struct btf_member *f = btf_members(ts);
		for (unsigned j = 0; j < btf_vlen(ts); j++, f++)
			if (!strcmp(btf__name_by_offset(btf, f->name_off), "fsbase"))
				want = (btf_member_bit_offset(t, i) + btf_member_bit_offset(ts, j)) / 8;
	}
	btf__free(btf);
	assert_true(want > 0);
	assert_int_equal(off, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decode_record), cmocka_unit_test(decode_refuses), cmocka_unit_test(versions),
		cmocka_unit_test(buildinfo),	 cmocka_unit_test(layouts),	    cmocka_unit_test(btf_fsbase),
		cmocka_unit_test(btf_kernel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
