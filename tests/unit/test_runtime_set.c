/* Unit tests for the language runtime interface (agent/runtime/): the registry's rows, the tag
 * scheme of runtime frame words (bpf/runtime.h), and the dispatch of processes and samples to the
 * runtimes of a set, with a fake JIT runtime and a fake interpreter-chain runtime registered in a
 * table of the test's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <bpf/bpf.h>

#include "agent/runtime/runtime.h"
#include "agent/runtime/set.h"

/* Test ids: any free ones below NP_RT_MAX. */
#define FAKE_JIT 20
#define FAKE_CHAIN 21
#define KNOWN_PID 7
#define KNOWN_GEN 3

struct fake {
	int open_fail, closed, processes, exits, batches;
	struct rt_jit *jit; /* the set's JIT regions, as open got them */
	uint32_t last_pid, last_gen;
	uint64_t unknown;
	char names[8][32];
};
static struct fake jit_state, chain_state;
static int closes;

static int fake_open(const struct rt_env *env, void **out, struct np_err *err, struct fake *f)
{
	if (f->open_fail)
		return np_errf(err, "cannot open");
	f->jit = env->jit;
	*out = f;
	return 0;
}
static int jit_open(const struct rt_env *env, void **out, struct np_err *err)
{
	return fake_open(env, out, err, &jit_state);
}
static int chain_open(const struct rt_env *env, void **out, struct np_err *err)
{
	return fake_open(env, out, err, &chain_state);
}
static void fake_close(void *rt)
{
	((struct fake *)rt)->closed++;
	closes++;
}
static int fake_process(void *rt, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct fake *f = rt;

	if (pid == 666)
		return np_errf(err, "out of memory");
	f->processes++;
	f->last_pid = pid;
	f->last_gen = gen;
	/* The JIT runtime finds its code cache in every process it is told about. */
	if (f == &jit_state && pid >= 4000) { /* the pids of jit_regions_reach_the_walker_map */
		struct np_rt_jit_proc v = { .gen = gen, .runtime = FAKE_JIT, .nranges = 1 };
		v.start[0] = 0x7f0000000000ULL + pid * 0x10000ULL;
		v.end[0] = v.start[0] + 0x8000;
		return rt_jit_set(f->jit, pid, &v, err);
	}
	return 0;
}
static void fake_exit(void *rt, uint32_t pid)
{
	struct fake *f = rt;

	f->exits++;
	f->last_pid = pid;
	if (f == &jit_state)
		rt_jit_forget(f->jit, pid);
}
static void fake_end_batch(void *rt)
{
	((struct fake *)rt)->batches++;
}
static void fake_stats(const void *rt, struct rt_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->processes = (size_t)((const struct fake *)rt)->processes;
	out->name_read_failures = ((const struct fake *)rt)->unknown;
}

static struct sym_frame frame(const char *name)
{
	return (struct sym_frame){ .name = name, .resolved = 1 };
}

/* Payload 1: a method that inlined another (two frames); 2: a frame spread over two words (the
 * first with NP_RT_MORE); 3: a word it cannot name ("[unknown fake]"); 4: asks for an absurd
 * word count (must not be believed). */
static int jit_name_words(void *rt, uint32_t pid, uint32_t gen, const uint64_t *words, size_t n_words, size_t *used,
			  struct sym_frame *out, size_t room, size_t *n_out, struct np_err *err)
{
	struct fake *f = rt;
	uint64_t payload = words[0] & NP_RT_PAYLOAD;

	(void)err;
	if (pid != KNOWN_PID || gen != KNOWN_GEN)
		return 0;
	*used = 1;
	*n_out = 0;
	switch (payload) {
	case 1:
		if (room >= 1)
			out[(*n_out)++] = frame("inlined");
		if (room >= 2)
			out[(*n_out)++] = frame("outer");
		break;
	case 2:
		assert_true(words[0] & NP_RT_MORE);
		assert_true(n_words >= 2);
		assert_int_equal(np_rt_word_id(words[1]), FAKE_JIT);
		*used = 2;
		if (room >= 1) {
			snprintf(f->names[0], sizeof(f->names[0]), "two_words_%llu",
				 (unsigned long long)(words[1] & NP_RT_PAYLOAD));
			out[(*n_out)++] = frame(f->names[0]);
		}
		break;
	case 4:
		*used = n_words + 1;
		break;
	default:
		f->unknown++;
		if (room >= 1)
			out[(*n_out)++] = frame("[unknown fake]");
	}
	return 1;
}

/* Knows (KNOWN_PID, KNOWN_GEN) only: puts its frames at the root end. */
static int chain_merge(void *rt, uint32_t pid, uint32_t gen, const struct sym_frame *native, size_t n_native,
		       int native_cut, const uint64_t *words, size_t n_words, struct sym_frame *out, size_t *n_out,
		       struct np_err *err)
{
	static const char *const names[] = { "vm_leaf", "vm_root" };

	(void)rt;
	(void)native_cut;
	(void)err;
	if (pid != KNOWN_PID || gen != KNOWN_GEN)
		return 0;
	memcpy(out, native, n_native * sizeof(*out));
	for (size_t i = 0; i < n_words; i++)
		out[n_native + i] = frame(names[words[i] & 1]);
	*n_out = n_native + n_words;
	return 1;
}

static const struct rt_counter no_counters[1];
static const struct rt_ops jit_ops = {
	.open = jit_open,
	.close = fake_close,
	.process = fake_process,
	.exit = fake_exit,
	.name_words = jit_name_words,
	.end_batch = fake_end_batch,
	.stats = fake_stats,
	.counters = no_counters,
};
static const struct rt_ops chain_ops = {
	.open = chain_open,
	.close = fake_close,
	.process = fake_process,
	.exit = fake_exit,
	.merge = chain_merge,
	.end_batch = fake_end_batch,
	.stats = fake_stats,
	.counters = no_counters,
};
static const struct rt_info table[] = {
	{ .id = NP_RT_HOTSPOT, .name = "later", .config = "later_enabled" }, /* no ops: never opened */
	{ .id = FAKE_JIT, .name = "fakejit", .config = "fakejit_enabled", .flag = "no-fakejit", .ops = &jit_ops },
	{ .id = FAKE_CHAIN, .name = "fakevm", .config = "fakevm_enabled", .flag = "no-fakevm", .ops = &chain_ops },
};
#define ALL ((1u << FAKE_JIT) | (1u << FAKE_CHAIN) | (1u << NP_RT_HOTSPOT))

static int setup(void **state)
{
	(void)state;
	memset(&jit_state, 0, sizeof(jit_state));
	memset(&chain_state, 0, sizeof(chain_state));
	closes = 0;
	return 0;
}

static void open_set(struct rt_set *set, uint32_t mask)
{
	struct rt_env env = { 0 };
	struct np_err err;

	assert_int_equal(rt_set_open(set, table, sizeof(table) / sizeof(table[0]), mask, &env, &err), 0);
}

static void registry_rows(void **state)
{
	const struct rt_info *py = rt_find(NP_RT_PYTHON), *hs = rt_find(NP_RT_HOTSPOT), *perl = rt_find(NP_RT_PERL);
	uint32_t seen = 0;

	(void)state;
	assert_non_null(py);
	assert_string_equal(py->name, "python");
	assert_string_equal(py->config, "python_enabled");
	assert_string_equal(py->flag, "no-python");
	assert_ptr_equal(py->ops, &rt_python_ops);
	assert_non_null(py->ops->merge);
	assert_null(py->ops->name_words);
	/* A JIT runtime: names the words its BPF step wrote, merges nothing. */
	assert_non_null(hs);
	assert_string_equal(hs->config, "hotspot_enabled");
	assert_string_equal(hs->flag, "no-java");
	assert_ptr_equal(hs->ops, &rt_hotspot_ops);
	assert_non_null(hs->ops->name_words);
	assert_null(hs->ops->merge);
	/* Perl: an interpreter-chain runtime like Python. */
	assert_non_null(perl);
	assert_string_equal(perl->config, "perl_enabled");
	assert_ptr_equal(perl->ops, &rt_perl_ops);
	assert_string_equal(perl->flag, "no-perl");
	assert_non_null(perl->ops->merge);
	assert_null(perl->ops->name_words);
	/* Not implemented yet: accepted as a switch, no ops, no record flag. */
	assert_null(rt_find(NP_RT_DOTNET)->ops);
	assert_null(rt_find(NP_RT_DOTNET)->flag);
	assert_null(rt_find(0));
	assert_null(rt_find(NP_RT_MAX - 1));
	assert_int_equal(rt_supported_mask(), (1u << NP_RT_PYTHON) | (1u << NP_RT_PERL) | (1u << NP_RT_PHP) |
						 (1u << NP_RT_HOTSPOT) | (1u << NP_RT_V8) | (1u << NP_RT_RUBY) |
						 (1u << NP_RT_GO));
	/* Go: no frames of its own (neither kind), its goroutines' labels. */
	assert_string_equal(rt_find(NP_RT_GO)->config, "go_enabled");
	assert_string_equal(rt_find(NP_RT_GO)->flag, "no-go");
	assert_ptr_equal(rt_find(NP_RT_GO)->ops, &rt_go_ops);
	assert_null(rt_find(NP_RT_GO)->ops->merge);
	assert_null(rt_find(NP_RT_GO)->ops->name_words);
	assert_string_equal(rt_find(NP_RT_RUBY)->flag, "no-ruby");
	assert_non_null(rt_find(NP_RT_RUBY)->ops->merge);
	assert_string_equal(rt_find(NP_RT_PHP)->flag, "no-php");
	assert_non_null(rt_find(NP_RT_PHP)->ops->merge);
	assert_string_equal(rt_find(NP_RT_V8)->flag, "no-v8");
	assert_non_null(rt_find(NP_RT_V8)->ops->name_words);
	for (size_t i = 0; i < rt_registry_n; i++) {
		uint32_t id = rt_registry[i].id;
		assert_true(id > 0 && id < NP_RT_MAX);
		assert_false(seen & (1u << id)); /* one row per id */
		seen |= 1u << id;
		assert_true(!rt_registry[i].ops == !rt_registry[i].flag);
	}
	assert_int_equal(rt_registry_n, 8);
}

static void word_tags(void **state)
{
	uint64_t w = np_rt_word(FAKE_JIT, 0x7fffdeadbeefULL, 0), m = np_rt_word(NP_RT_HOTSPOT, NP_RT_PAYLOAD, 1);

	(void)state;
	assert_int_equal(np_rt_word_id(w), FAKE_JIT);
	assert_int_equal(w & NP_RT_PAYLOAD, 0x7fffdeadbeefULL);
	assert_false(w & NP_RT_MORE);
	assert_int_equal(np_rt_word_id(m), NP_RT_HOTSPOT);
	assert_true(m & NP_RT_MORE);
	assert_int_equal(m & NP_RT_PAYLOAD, NP_RT_PAYLOAD);
	/* A payload wider than 57 bits cannot spill into the id or the flag. */
	assert_int_equal(np_rt_word_id(np_rt_word(1, ~0ULL, 0)), 1);
	assert_false(np_rt_word(1, ~0ULL, 0) & NP_RT_MORE);
	/* Every user address (47 bits) is native. */
	assert_int_equal(np_rt_word_id(0x7fffffffffffULL), 0);
	assert_int_equal(np_rt_word_id(0x401000ULL), 0);
}

static void opens_the_runtimes_asked_for(void **state)
{
	struct rt_set set;
	struct rt_env env = { 0 };
	struct np_err err;

	(void)state;
	open_set(&set, 1u << FAKE_CHAIN);
	assert_int_equal(set.on, 1u << FAKE_CHAIN);
	assert_false(set.jit);
	rt_set_close(&set);
	assert_int_equal(chain_state.closed, 1);
	assert_int_equal(jit_state.closed, 0);

	/* A runtime that fails to open leaves nothing open, and says which. */
	chain_state.open_fail = 1;
	assert_int_equal(rt_set_open(&set, table, sizeof(table) / sizeof(table[0]), ALL, &env, &err), -1);
	assert_non_null(strstr(err.msg, "fakevm: cannot open"));
	assert_int_equal(jit_state.closed, 1); /* the one opened before it */
	assert_int_equal(set.on, 0);
}

static void processes_go_to_every_runtime(void **state)
{
	struct rt_set set;
	struct rt_stats st[NP_RT_MAX];
	struct np_err err;

	(void)state;
	open_set(&set, ALL);
	assert_int_equal(set.on, (1u << FAKE_JIT) | (1u << FAKE_CHAIN));
	assert_int_equal(rt_set_process(&set, 42, 9, &err), 0);
	assert_int_equal(jit_state.last_pid, 42);
	assert_int_equal(chain_state.last_gen, 9);
	assert_int_equal(rt_set_process(&set, 666, 1, &err), -1);
	assert_non_null(strstr(err.msg, "fakejit: out of memory"));
	rt_set_exit(&set, 43);
	assert_int_equal(jit_state.exits + chain_state.exits, 2);
	assert_int_equal(chain_state.last_pid, 43);
	rt_set_end_batch(&set);
	assert_int_equal(jit_state.batches + chain_state.batches, 2);
	rt_set_stats(&set, st);
	assert_int_equal(st[FAKE_JIT].processes, 1);
	assert_int_equal(st[FAKE_CHAIN].processes, 1);
	assert_int_equal(st[NP_RT_PYTHON].processes, 0);
	rt_set_close(&set);
	assert_int_equal(closes, 2);
}

static void jit_words_become_named_frames(void **state)
{
	struct rt_set set;
	struct np_err err;
	const uint64_t words[] = {
		0x401000,			     /* native leaf */
		np_rt_word(FAKE_JIT, 1, 0),	     /* inlined: two frames */
		np_rt_word(FAKE_JIT, 2, 1),	     /* one frame over two words */
		np_rt_word(FAKE_JIT, 99, 0),	     /* its continuation word */
		np_rt_word(FAKE_JIT, 3, 0),	     /* unknown to the runtime */
		np_rt_word(NP_RT_HOTSPOT, 1, 0),     /* a runtime that is not open: native */
		np_rt_word(FAKE_JIT, 4, 0),	     /* a runtime answer out of bounds: native */
		0x402000,			     /* native root */
	};
	struct sym_frame native[8], out[16];
	const char *const want[] = { "n0", "inlined", "outer", "two_words_99", "[unknown fake]", "n5", "n6", "n7" };
	static char names[8][16];
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 8; i++) {
		snprintf(names[i], sizeof(names[i]), "n%d", i);
		native[i] = frame(names[i]);
	}
	open_set(&set, ALL);
	assert_true(rt_set_has_jit(&set, words, 8));
	assert_false(rt_set_has_jit(&set, words + 5, 1)); /* hotspot's tag: not open */
	assert_int_equal(rt_set_name_jit(&set, KNOWN_PID, KNOWN_GEN, words, native, 8, out, 16, &n, &err), 0);
	assert_int_equal(n, 8);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(out[i].name, want[i]);
	assert_int_equal(jit_state.unknown, 1);

	/* Another process (or incarnation): the runtime does not claim it, every word stays native. */
	assert_int_equal(rt_set_name_jit(&set, KNOWN_PID, KNOWN_GEN + 1, words, native, 8, out, 16, &n, &err), 0);
	assert_int_equal(n, 8);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(out[i].name, names[i]);

	/* No room for the whole stack: the root end is cut and the runtime's dropped frames counted. */
	assert_int_equal(rt_set_name_jit(&set, KNOWN_PID, KNOWN_GEN, words, native, 8, out, 2, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[1].name, "inlined");
	assert_int_equal(set.dropped[FAKE_JIT], 4); /* its words after the cut */
	rt_set_close(&set);

	/* A set without a JIT runtime never looks at the words. */
	open_set(&set, 1u << FAKE_CHAIN);
	assert_false(rt_set_has_jit(&set, words, 8));
	rt_set_close(&set);
}

/* A real BPF map stands for the sampler's rt_jit_procs, a variable for its rt_jit_live. */
static int jit_map_fd = -1;
static volatile uint32_t jit_live;
static int env_map_fd(void *ud, const char *name)
{
	(void)ud;
	return strcmp(name, "rt_jit_procs") ? -1 : jit_map_fd;
}
static volatile uint32_t *env_bss_u32(void *ud, const char *name)
{
	(void)ud;
	return strcmp(name, "rt_jit_live") ? NULL : &jit_live;
}

/* A JIT runtime taking a process on: its layout, regions and record together, undone in order
 * when one fails; and given up. */
static void jit_take_and_drop(void **state)
{
	volatile uint32_t live = 0;
	struct rt_jit j = { .live = &live };
	struct rt_procs procs;
	struct np_rt_jit_proc region = { .gen = 3, .runtime = FAKE_JIT, .nranges = 1, .start = { 0x1000 }, .end = { 0x2000 } };
	struct np_err err;
	uint64_t layout = 0x1234, got;
	uint32_t pid = 77;

	(void)state;
	j.fd = bpf_map_create(BPF_MAP_TYPE_HASH, "rt_jit_take", sizeof(uint32_t), sizeof(struct np_rt_jit_proc), 16, NULL);
	int procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "rt_procs_take", sizeof(uint32_t), sizeof(uint64_t), 16, NULL);
	assert_true(j.fd >= 0 && procs_fd >= 0);
	rt_procs_init(&procs, sizeof(struct rt_proc), procs_fd, NULL, "fake processes");
	struct rt_proc *p = rt_jit_take(&j, &procs, pid, 3, &layout, &region, &err);
	assert_non_null(p);
	assert_int_equal(p->gen, 3);
	assert_int_equal(live, 1);
	assert_int_equal(procs.live, 1);
	assert_int_equal(bpf_map_lookup_elem(procs_fd, &pid, &got), 0);
	assert_int_equal(got, 0x1234);
	/* Regions the walker cannot use: nothing of the process is left behind. */
	region.nranges = 0;
	assert_null(rt_jit_take(&j, &procs, pid + 1, 1, &layout, &region, &err));
	uint32_t other = pid + 1;
	assert_int_not_equal(bpf_map_lookup_elem(procs_fd, &other, &got), 0);
	assert_int_equal(live, 1);
	rt_jit_drop(&j, &procs, p);
	rt_jit_drop(&j, &procs, p); /* twice: once */
	rt_jit_drop(&j, &procs, NULL);
	assert_int_equal(live, 0);
	assert_int_equal(procs.live, 0);
	assert_int_not_equal(bpf_map_lookup_elem(procs_fd, &pid, &got), 0);
	assert_int_not_equal(bpf_map_lookup_elem(j.fd, &pid, &region), 0);
	rt_procs_free(&procs);
	close(procs_fd);
	close(j.fd);
}

static void jit_regions_reach_the_walker_map(void **state)
{
	struct rt_env env = { .map_fd = env_map_fd, .bss_u32 = env_bss_u32 };
	struct np_rt_jit_proc v;
	struct rt_set set;
	struct np_err err;
	uint32_t pid = 4242;

	(void)state;
	jit_map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "rt_jit_test", sizeof(uint32_t), sizeof(struct np_rt_jit_proc),
				    16, NULL);
	assert_true(jit_map_fd >= 0); /* tests run as root with BPF */
	jit_live = 0;
	assert_int_equal(rt_set_open(&set, table, sizeof(table) / sizeof(table[0]), ALL, &env, &err), 0);
	assert_ptr_equal(jit_state.jit, &set.jit_regions);
	assert_int_equal(rt_set_process(&set, pid, 5, &err), 0);
	assert_int_equal(rt_set_process(&set, pid + 1, 1, &err), 0);
	assert_int_equal(jit_live, 2);
	assert_int_equal(bpf_map_lookup_elem(jit_map_fd, &pid, &v), 0);
	assert_int_equal(v.gen, 5);
	assert_int_equal(v.runtime, FAKE_JIT);
	assert_int_equal(v.nranges, 1);
	assert_int_equal(v.start[0], 0x7f0000000000ULL + pid * 0x10000ULL);
	/* An exec: the entry is replaced, not counted twice. */
	assert_int_equal(rt_set_process(&set, pid, 6, &err), 0);
	assert_int_equal(jit_live, 2);
	assert_int_equal(bpf_map_lookup_elem(jit_map_fd, &pid, &v), 0);
	assert_int_equal(v.gen, 6);
	rt_set_exit(&set, pid);
	rt_set_exit(&set, pid); /* twice: counted once */
	assert_int_equal(jit_live, 1);
	assert_int_not_equal(bpf_map_lookup_elem(jit_map_fd, &pid, &v), 0);
	/* Malformed regions are refused before they reach the walker. */
	v = (struct np_rt_jit_proc){ .gen = 1, .runtime = FAKE_JIT, .nranges = NP_RT_JIT_RANGES + 1 };
	assert_int_equal(rt_jit_set(&set.jit_regions, 1, &v, &err), -1);
	v.nranges = 1;
	v.start[0] = v.end[0] = 0x1000;
	assert_int_equal(rt_jit_set(&set.jit_regions, 1, &v, &err), -1);
	assert_int_equal(jit_live, 1);
	rt_set_close(&set);
	close(jit_map_fd);
	jit_map_fd = -1;

	/* Without the walker's map (no BPF program), a JIT runtime is told so. */
	open_set(&set, ALL);
	assert_int_equal(rt_set_process(&set, pid, 1, &err), -1);
	assert_non_null(strstr(err.msg, "rt_jit_procs"));
	rt_set_close(&set);
}

static void chain_stacks_merge_in_their_process_only(void **state)
{
	struct rt_set set;
	struct np_err err;
	const uint64_t words[] = { 0, 1 };
	struct sym_frame native[2] = { frame("leaf"), frame("main") }, out[4];
	size_t n = 0;

	(void)state;
	open_set(&set, ALL);
	assert_int_equal(rt_set_merge(&set, KNOWN_PID, KNOWN_GEN, native, 2, 0, words, 2, out, &n, &err), 0);
	assert_int_equal(n, 4);
	assert_string_equal(out[2].name, "vm_leaf");
	assert_string_equal(out[3].name, "vm_root");
	/* Not its process: the native stack as it is. */
	assert_int_equal(rt_set_merge(&set, 8, KNOWN_GEN, native, 2, 0, words, 2, out, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].name, "leaf");
	assert_string_equal(out[1].name, "main");
	rt_set_close(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(registry_rows),
		cmocka_unit_test(word_tags),
		cmocka_unit_test_setup(opens_the_runtimes_asked_for, setup),
		cmocka_unit_test_setup(processes_go_to_every_runtime, setup),
		cmocka_unit_test_setup(jit_words_become_named_frames, setup),
		cmocka_unit_test_setup(chain_stacks_merge_in_their_process_only, setup),
		cmocka_unit_test_setup(jit_regions_reach_the_walker_map, setup),
		cmocka_unit_test(jit_take_and_drop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
