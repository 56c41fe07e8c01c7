/* glibc's description of its threads: see glibc.h. */
#include "agent/runtime/glibc.h"

#include <stddef.h>
#include <unistd.h>

#include "agent/symbols/elf_file.h"

/* .dynsym of libc and ld.so are a few hundred KiB. */
#define SYMBOL_BYTES_MAX ((size_t)16 << 20)

struct file {
	int fd;
	Elf *e;
	struct sym_elf_info info;
	uint64_t bias;
};

static int open_file(struct symbolizer *sym, uint32_t pid, uint32_t gen, uint64_t start, struct file *f)
{
	int dfd;

	f->e = NULL;
	if (symbolizer_open_mapping(sym, pid, gen, start, &f->fd, &dfd) < 0)
		return -1;
	if (dfd >= 0)
		close(dfd);
	if (!(f->e = sym_elf_begin_fd(f->fd)) || sym_elf_info_read(f->e, &f->info) < 0) {
		if (f->e)
			elf_end(f->e);
		close(f->fd);
		return -1;
	}
	return 0;
}

static void close_file(struct file *f)
{
	elf_end(f->e);
	close(f->fd);
}

/* A libthread_db descriptor: {size in bits, count, offset} for a field, {size in bytes} for a
 * structure's size (_thread_db_sizeof_*, read with n = 1). */
static int descriptor_n(struct file *f, const char *name, uint32_t *d, size_t n)
{
	uint64_t addr, size;

	return sym_elf_find_symbol(f->e, f->fd, name, SYMBOL_BYTES_MAX, &addr, &size) < 0 ||
			       sym_elf_read_vaddr(f->fd, &f->info, addr, d, n * sizeof(uint32_t)) < 0 ?
		       -1 :
		       0;
}

static int descriptor(struct file *f, const char *name, uint32_t d[3])
{
	return descriptor_n(f, name, d, 3);
}

int rt_glibc_threads(struct symbolizer *sym, uint32_t pid, uint32_t gen, uint64_t libc_start, uint64_t ld_start,
		     uint64_t ld_bias, struct rt_glibc_threads *out)
{
	struct file libc, ld;
	uint32_t user[3], used[3], next[3], list[3], tid[3], spec[3], kd_size[1], kd_data[3];
	uint64_t rtld, size;
	int ok;

	if (open_file(sym, pid, gen, libc_start, &libc) < 0)
		return -1;
	ok = descriptor(&libc, "_thread_db_rtld_global__dl_stack_user", user) == 0 &&
	     descriptor(&libc, "_thread_db_rtld_global__dl_stack_used", used) == 0 &&
	     descriptor(&libc, "_thread_db_list_t_next", next) == 0 &&
	     descriptor(&libc, "_thread_db_pthread_list", list) == 0 &&
	     descriptor(&libc, "_thread_db_pthread_tid", tid) == 0 &&
	     descriptor(&libc, "_thread_db_pthread_specific", spec) == 0 &&
	     descriptor_n(&libc, "_thread_db_sizeof_pthread_key_data", kd_size, 1) == 0 &&
	     descriptor(&libc, "_thread_db_pthread_key_data_data", kd_data) == 0;
	close_file(&libc);
	/* What the readers assume: 8-byte pointers and list links, a 4-byte TID, an array of block
	 * pointers; anything else is not a glibc this code knows. */
	if (!ok || next[0] != 64 || tid[0] != 32 || kd_data[0] != 64 || spec[0] % 64 || !spec[0] ||
	    !kd_size[0] || kd_size[0] > 64 || list[2] > 4096 || tid[2] > 4096 || spec[2] > 4096)
		return -1;
	if (open_file(sym, pid, gen, ld_start, &ld) < 0)
		return -1;
	ok = sym_elf_find_symbol(ld.e, ld.fd, "_rtld_global", SYMBOL_BYTES_MAX, &rtld, &size) == 0 && user[2] + 16 <= size &&
	     used[2] + 16 <= size;
	close_file(&ld);
	if (!ok)
		return -1;
	out->lists[0] = rtld + ld_bias + user[2];
	out->lists[1] = rtld + ld_bias + used[2];
	out->list_next = next[2];
	out->pthread_list = list[2];
	out->pthread_tid = tid[2];
	out->pthread_specific = spec[2];
	out->key_data_size = kd_size[0];
	out->key_data_data = kd_data[2];
	return 0;
}

/* link_map's public head (elf/link.h): l_addr, l_name, l_ld, l_next. */
#define LINK_MAP_NEXT 24
/* Modules walked at most (a process controls its list: a cycle must end). */
#define LINK_MAPS_MAX 4096

int rt_glibc_static_tls(struct symbolizer *sym, uint32_t pid, uint32_t gen, uint64_t libc_start, uint64_t ld_start,
			uint64_t ld_bias, uint64_t l_addr, rt_mem_reader read, void *ud, uint64_t *tls_offset,
			const char **why)
{
	struct file libc, ld;
	uint32_t off[3];
	uint64_t r_debug, size, map, head[4], v;
	int ok;

	*why = "the C library has no _thread_db_link_map_l_tls_offset (not glibc, or stripped)";
	if (open_file(sym, pid, gen, libc_start, &libc) < 0)
		return -1;
	ok = descriptor(&libc, "_thread_db_link_map_l_tls_offset", off) == 0 && off[0] == 64 && off[2] < 4096;
	close_file(&libc);
	if (!ok)
		return -1;
	*why = "the dynamic loader has no _r_debug";
	if (open_file(sym, pid, gen, ld_start, &ld) < 0)
		return -1;
	ok = sym_elf_find_symbol(ld.e, ld.fd, "_r_debug", SYMBOL_BYTES_MAX, &r_debug, &size) == 0 && size >= 16;
	close_file(&ld);
	if (!ok)
		return -1;
	*why = "the library's link_map could not be read";
	if (read(ud, pid, r_debug + ld_bias + 8, &map, sizeof(map))) /* r_debug.r_map, after an int */
		return -1;
	for (int i = 0; map && i < LINK_MAPS_MAX; i++) {
		if (read(ud, pid, map, head, sizeof(head)))
			return -1;
		if (head[0] == l_addr) {
			if (read(ud, pid, map + off[2], &v, sizeof(v)))
				return -1;
			/* glibc's NO_TLS_OFFSET (0) and FORCED_DYNAMIC_TLS_OFFSET (-1, -2 in some
			 * releases): no place in the static block. */
			if (v == 0 || v >= ((uint64_t)1 << 31)) {
				*why = "the library's TLS is dynamic (dlopen'd): not supported yet";
				return -1;
			}
			*tls_offset = v;
			return 0;
		}
		map = head[LINK_MAP_NEXT / 8];
	}
	return -1;
}
