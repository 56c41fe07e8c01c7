/* The local store's intake, per profile, the way the engine hands a profile over now
 * (np_store_add_built: the builder read in place) and the way it did before (the gzipped
 * pprof copied for the store's sink, then np_store_add: gunzip, decode, reduce), on the
 * same built profile; and, for scale, what encoding and gzipping it costs (paid once per
 * profile either way, for pyroscope.write and the bytes metric).
 *
 * The profile is a busy target's interval: STACKS distinct stacks of DEPTH frames drawn
 * from a pool of native frames of a few mappings (one in eight unnamed, as frames of
 * files without symbols are), plus kernel frames. Allocations are counted by
 * bench/alloc_count.c. Prints one JSON object. Usage: bench_intake [STACKS] [ROUNDS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/pprof/builder.h"
#include "agent/pprof/gzip.h"
#include "agent/ui/store.h"
#include "bench/alloc_count.h"

#define DEPTH 24
#define POOL 4000
#define SEC 1000000000LL

static int64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static int64_t wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static int die(const char *what, const struct np_err *err)
{
	fprintf(stderr, "bench_intake: %s: %s\n", what, err->msg);
	return 1;
}

static int build(size_t stacks, int64_t start, struct np_pprof_builder **out, struct np_err *err)
{
	static char names[POOL][32];
	static const char *const files[] = { "/usr/bin/server", "/usr/lib/x86_64-linux-gnu/libc.so.6",
					     "/usr/lib/libssl.so.3", "/usr/lib/libz.so.1" };
	struct np_pprof_frame fr[DEPTH + 2];
	unsigned seed = 12345;

	if (np_pprof_new(97, start, out, err))
		return -1;
	for (size_t i = 0; i < POOL; i++)
		snprintf(names[i], sizeof(names[i]), "ns::func_%zu(int)", i);
	for (size_t s = 0; s < stacks; s++) {
		size_t n = 0;
		fr[n++] = (struct np_pprof_frame){ .function = "do_syscall_64" };
		fr[n++] = (struct np_pprof_frame){ .function = "entry_SYSCALL_64" };
		for (size_t d = 0; d < DEPTH; d++) {
			/* Roots are shared (d small: few choices), leaves spread over the pool. */
			seed = seed * 1103515245u + 12345u;
			size_t k = d < 4 ? d * 7 + (seed >> 16) % 3 : (seed >> 8) % POOL;
			fr[n++] = (struct np_pprof_frame){ .function = names[k],
							   .mapping_file = files[k % 4],
							   .build_id = "4f1c2a9be0d3c8a1",
							   .map_start = 0x400000,
							   .map_limit = 0x900000,
							   .address = 0x400000 + k * 64,
							   .unnamed = k % 8 == 7 };
		}
		if (np_pprof_add(*out, fr, n, 1 + s % 13, err))
			return -1;
	}
	return 0;
}

struct cost {
	int64_t ns;
	unsigned long long allocs, bytes;
};

static void start(struct cost *c)
{
	c->allocs = atomic_load(&bench_allocs);
	c->bytes = atomic_load(&bench_alloc_bytes);
	c->ns = cpu_ns();
}

static void stop(struct cost *c, struct cost *best, int iters)
{
	c->ns = (cpu_ns() - c->ns) / iters;
	c->allocs = (atomic_load(&bench_allocs) - c->allocs) / (unsigned)iters;
	c->bytes = (atomic_load(&bench_alloc_bytes) - c->bytes) / (unsigned)iters;
	if (!best->ns || c->ns < best->ns)
		*best = *c;
}

int main(int argc, char **argv)
{
	size_t stacks = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;
	int rounds = argc > 2 ? atoi(argv[2]) : 7, iters = 20;
	struct np_pprof_builder *b;
	struct np_store *s;
	struct np_labels ls = NP_LABELS_INIT;
	struct np_buf raw = NP_BUF_INIT, gz = NP_BUF_INIT;
	struct cost enc = { 0 }, old = { 0 }, now = { 0 }, c;
	struct np_err err;
	int64_t t = wall() - 20 * SEC;

	if (build(stacks, t, &b, &err) || np_store_new(NULL, &s, &err) ||
	    np_labels_set(&ls, "service_name", "bench", &err) || np_labels_set(&ls, "__process_pid__", "1", &err))
		return die("setup", &err);
	for (int r = 0; r < rounds; r++) {
		start(&c);
		for (int i = 0; i < iters; i++) {
			np_buf_reset(&raw);
			np_buf_reset(&gz);
			if (np_pprof_encode(b, 15 * SEC, &raw, &err) || np_gzip(raw.p, raw.len, 1, &gz, &err))
				return die("encode", &err);
		}
		stop(&c, &enc, iters);
		start(&c);
		for (int i = 0; i < iters; i++) {
			void *copy = malloc(gz.len);
			memcpy(copy, gz.p, gz.len);
			if (np_store_add(s, &ls, copy, gz.len, &err))
				return die("np_store_add", &err);
		}
		stop(&c, &old, iters);
		start(&c);
		for (int i = 0; i < iters; i++)
			if (np_store_add_built(s, &ls, b, 15 * SEC, &err))
				return die("np_store_add_built", &err);
		stop(&c, &now, iters);
	}
	printf("{\"stacks\":%zu,\"locations\":%zu,\"samples\":%llu,\"pprof_bytes\":%zu,\"gz_bytes\":%zu,"
	       "\"encode_ns\":%lld,\"encode_allocs\":%llu,\"old_ns\":%lld,\"old_allocs\":%llu,\"old_bytes\":%llu,"
	       "\"new_ns\":%lld,\"new_allocs\":%llu,\"new_bytes\":%llu,\"rounds\":%d,\"iters\":%d}\n",
	       np_pprof_sample_count(b), np_pprof_location_count(b), (unsigned long long)np_pprof_total(b), raw.len,
	       gz.len, (long long)enc.ns, enc.allocs, (long long)old.ns, old.allocs, old.bytes, (long long)now.ns,
	       now.allocs, now.bytes, rounds, iters);
	np_buf_free(&raw);
	np_buf_free(&gz);
	np_labels_free(&ls);
	np_pprof_free(b);
	np_store_free(s);
	return 0;
}
