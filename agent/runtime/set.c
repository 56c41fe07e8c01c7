/* The runtimes of a collector and the dispatch to them: see set.h. */
#include "agent/runtime/set.h"

#include <string.h>

int rt_set_open(struct rt_set *set, const struct rt_info *table, size_t n, uint32_t mask, const struct rt_env *env,
		struct np_err *err)
{
	struct rt_env e = *env;

	memset(set, 0, sizeof(*set));
	set->jit_regions.fd = env->map_fd ? env->map_fd(env->ud, "rt_jit_procs") : -1;
	set->jit_regions.live = env->bss_u32 ? env->bss_u32(env->ud, "rt_jit_live") : NULL;
	e.jit = &set->jit_regions;
	for (size_t i = 0; i < n; i++) {
		const struct rt_info *r = &table[i];
		if (!r->ops || r->id == 0 || r->id >= NP_RT_MAX || !(mask & (1u << r->id)) || set->rows[r->id])
			continue;
		if (r->ops->open(&e, &set->state[r->id], err)) {
			rt_set_close(set);
			return np_err_wrap(err, "%s", r->name);
		}
		set->rows[r->id] = r;
		set->on |= 1u << r->id;
		if (r->ops->name_words)
			set->jit = 1;
	}
	return 0;
}

void rt_set_close(struct rt_set *set)
{
	for (uint32_t id = 0; id < NP_RT_MAX; id++)
		if (set->rows[id])
			set->rows[id]->ops->close(set->state[id]);
	memset(set, 0, sizeof(*set));
}

int rt_set_process(struct rt_set *set, uint32_t pid, uint32_t gen, struct np_err *err)
{
	for (uint32_t id = 0; id < NP_RT_MAX; id++)
		if (set->rows[id] && set->rows[id]->ops->process(set->state[id], pid, gen, err))
			return np_err_wrap(err, "%s", set->rows[id]->name);
	return 0;
}

void rt_set_exit(struct rt_set *set, uint32_t pid)
{
	for (uint32_t id = 0; id < NP_RT_MAX; id++)
		if (set->rows[id])
			set->rows[id]->ops->exit(set->state[id], pid);
}

void rt_set_end_batch(struct rt_set *set)
{
	for (uint32_t id = 0; id < NP_RT_MAX; id++)
		if (set->rows[id])
			set->rows[id]->ops->end_batch(set->state[id]);
}

/* The open JIT runtime a word's tag names, or 0. */
static uint32_t jit_owner(const struct rt_set *set, uint64_t w)
{
	uint32_t id = np_rt_word_id(w);

	return id && set->rows[id] && set->rows[id]->ops->name_words ? id : 0;
}

int rt_set_has_jit(const struct rt_set *set, const uint64_t *words, size_t n)
{
	if (!set->jit)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (jit_owner(set, words[i]))
			return 1;
	return 0;
}

int rt_set_name_jit(struct rt_set *set, uint32_t pid, uint32_t gen, const uint64_t *words,
		    const struct sym_frame *native, size_t n, struct sym_frame *out, size_t room, size_t *n_out,
		    struct np_err *err)
{
	size_t k = 0, i = 0;

	while (i < n) {
		uint32_t id;
		if (k == room) {
			/* No room left: the rest is the root end, cut (a runtime's words counted). */
			for (; i < n; i++)
				if ((id = jit_owner(set, words[i])))
					set->dropped[id]++;
			break;
		}
		id = jit_owner(set, words[i]);
		if (id) {
			size_t used = 0, got = 0;
			int rc = set->rows[id]->ops->name_words(set->state[id], pid, gen, words + i, n - i, &used,
								out + k, room - k, &got, err);
			if (rc < 0)
				return np_err_wrap(err, "%s", set->rows[id]->name);
			/* A runtime that answers out of bounds is not believed: the words stay native. */
			if (rc > 0 && used >= 1 && used <= n - i && got <= room - k) {
				k += got;
				i += used;
				continue;
			}
		}
		out[k++] = native[i++];
	}
	*n_out = k;
	return 0;
}

int rt_set_merge(struct rt_set *set, uint32_t pid, uint32_t gen, const struct sym_frame *native, size_t n_native,
		 int native_cut, const uint64_t *words, size_t n_words, struct sym_frame *out, size_t *n_out,
		 struct np_err *err)
{
	for (uint32_t id = 0; n_words && id < NP_RT_MAX; id++) {
		const struct rt_info *r = set->rows[id];
		int rc;
		if (!r || !r->ops->merge)
			continue;
		rc = r->ops->merge(set->state[id], pid, gen, native, n_native, native_cut, words, n_words, out, n_out,
				   err);
		if (rc < 0)
			return np_err_wrap(err, "%s", r->name);
		if (rc > 0)
			return 0;
	}
	memcpy(out, native, n_native * sizeof(*out));
	*n_out = n_native;
	return 0;
}

void rt_set_stats(const struct rt_set *set, struct rt_stats out[NP_RT_MAX])
{
	memset(out, 0, NP_RT_MAX * sizeof(*out));
	for (uint32_t id = 0; id < NP_RT_MAX; id++) {
		if (!set->rows[id])
			continue;
		set->rows[id]->ops->stats(set->state[id], &out[id]);
		out[id].frames_dropped += set->dropped[id];
	}
}

void rt_stats_add(struct rt_stats *sum, const struct rt_stats *s)
{
	sum->processes += s->processes;
	sum->unsupported += s->unsupported;
	sum->names += s->names;
	sum->name_bytes += s->name_bytes;
	sum->name_budget += s->name_budget;
	sum->name_reads += s->name_reads;
	sum->name_read_failures += s->name_read_failures;
	sum->frames_dropped += s->frames_dropped;
	sum->frames_inlined += s->frames_inlined;
}
