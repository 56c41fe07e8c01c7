/* The code regions of JIT runtimes: see jit.h. */
#include "agent/runtime/jit.h"

#include <bpf/bpf.h>

int rt_jit_set(struct rt_jit *j, uint32_t pid, const struct np_rt_jit_proc *v, struct np_err *err)
{
	struct np_rt_jit_proc old;
	int had;

	if (j->fd < 0 || !j->live)
		return np_errf(err, "the BPF program has no rt_jit_procs map");
	if (v->runtime == 0 || v->runtime >= NP_RT_MAX || v->nranges == 0 || v->nranges > NP_RT_JIT_RANGES)
		return np_errf(err, "pid %u: bad JIT regions (runtime %u, %u ranges)", pid, v->runtime, v->nranges);
	for (unsigned i = 0; i < v->nranges; i++)
		if (v->start[i] >= v->end[i])
			return np_errf(err, "pid %u: empty JIT region %#llx-%#llx", pid,
				       (unsigned long long)v->start[i], (unsigned long long)v->end[i]);
	had = bpf_map_lookup_elem(j->fd, &pid, &old) == 0;
	if (bpf_map_update_elem(j->fd, &pid, v, BPF_ANY))
		return np_errno(err, "tell the walker about JIT code of pid %u", pid);
	if (!had)
		*j->live = ++j->n;
	return 0;
}

void rt_jit_forget(struct rt_jit *j, uint32_t pid)
{
	if (j->fd < 0 || !j->live)
		return;
	if (bpf_map_delete_elem(j->fd, &pid) == 0 && j->n > 0)
		*j->live = --j->n;
}

struct rt_proc *rt_jit_take(struct rt_jit *j, struct rt_procs *procs, uint32_t pid, uint32_t gen, const void *value,
			    const struct np_rt_jit_proc *region, struct np_err *err)
{
	struct rt_proc *p;

	if (bpf_map_update_elem(procs->map_fd, &pid, value, BPF_ANY)) {
		np_errno(err, "tell the walker about pid %u, one of the %s", pid, procs->what);
		return NULL;
	}
	if (rt_jit_set(j, pid, region, err)) {
		(void)bpf_map_delete_elem(procs->map_fd, &pid);
		return NULL;
	}
	if (!(p = rt_procs_add(procs, pid, gen, err))) {
		rt_jit_forget(j, pid);
		(void)bpf_map_delete_elem(procs->map_fd, &pid);
	}
	return p;
}

void rt_jit_drop(struct rt_jit *j, struct rt_procs *procs, struct rt_proc *p)
{
	if (!p || !p->live)
		return;
	rt_jit_forget(j, p->pid);
	rt_procs_forget(procs, p);
}
