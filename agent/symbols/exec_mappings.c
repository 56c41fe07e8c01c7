/* The symbolizer's process snapshots seen by the unwinder: which file each executable mapping
 * holds (its table key and load bias), and a checked way back to that file. The snapshot and
 * the file cache are the symbolizer's own, so a process's maps are read and its files opened
 * once for both. */
#include <elf.h>
#include <libelf.h>
#include <unistd.h>

#include "agent/symbols/debugfile.h"
#include "agent/symbols/internal.h"

static struct sym_snapshot *snapshot_of(struct symbolizer *s, uint32_t pid, uint32_t gen, struct sym_proc **pp)
{
	struct sym_proc *p = sym_proc_find(s, pid);
	*pp = p;
	for (struct sym_snapshot *snap = p ? p->snaps : NULL; snap; snap = snap->next)
		if (snap->gen == gen)
			return snap;
	return NULL;
}

int symbolizer_exec_mappings(struct symbolizer *s, uint32_t pid, uint32_t gen, int refresh, sym_exec_mapping_cb cb,
                             void *ud, struct np_err *err)
{
	struct sym_proc *p;
	struct sym_snapshot *snap = snapshot_of(s, pid, gen, &p);
	if ((!snap || refresh) && sym_proc_snapshot(s, pid, gen, &p, &snap, err) < 0)
		return -1;
	if (!snap)
		return 0; /* gone */
	for (size_t i = 0; i < snap->maps.n; i++) {
		const struct sym_map *m = &snap->maps.v[i];
		struct sym_exec_mapping x = { .start = m->start, .end = m->end, .pgoff = m->pgoff, .kind = m->kind,
					  .path = sym_map_path(&snap->maps, m) };
		if (m->kind == SYM_MAP_FILE) {
			if (snap->st[i].state == MAP_UNRESOLVED && sym_mapping_resolve(s, p, snap, i, 0, err) < 0)
				return -1;
			const struct sym_elf *e = snap->st[i].elf;
			uint64_t vaddr;
			if (e && e->info.machine == EM_X86_64 &&
			    sym_translate(e->info.loads, e->info.nloads, m->start, m->pgoff, m->start, &vaddr) == 0) {
				x.key = e->key;
				x.bias = m->start - vaddr;
			}
		}
		if (cb(ud, &x, err) < 0)
			return -1;
	}
	return 0;
}

int symbolizer_open_mapping(struct symbolizer *s, uint32_t pid, uint32_t gen, uint64_t start, int *fd, int *debug_fd)
{
	struct sym_proc *p;
	struct sym_snapshot *snap = snapshot_of(s, pid, gen, &p);
	*fd = *debug_fd = -1;
	const struct sym_map *m = snap ? sym_maps_find(&snap->maps, start) : NULL;
	struct sym_elf *e = m ? snap->st[m - snap->maps.v].elf : NULL;
	if (!e || (*fd = sym_elf_open(s, e, pid)) < 0)
		return -1;
	struct sym_debug_file d;
	if (sym_debug_file_open(s, e, &d) == 0) {
		/* Only the descriptor: the caller reads it with pread (ELF_C_READ). */
		elf_end(d.elf);
		*debug_fd = d.fd;
	}
	return 0;
}
