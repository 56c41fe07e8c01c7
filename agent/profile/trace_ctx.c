/* The shared trace context map of OBI (see trace_ctx.h): found, checked, or created and pinned.
 * A map of another layout at the path is refused rather than reused: the sampler would read
 * garbage as span IDs (or fail to load, for a smaller value). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/profile/trace_ctx.h"
#include "bpf/sampler_types.h"

#define TRACE_CTX_DIR "otel"
#define BPF_FS_MAGIC 0xcafe4a11 /* linux/magic.h */
#define TRACE_CTX_NAME "traces_ctx_v1"

int np_trace_ctx_path(const char *bpf_fs_root, char *out, size_t cap, struct np_err *err)
{
	size_t n = strlen(bpf_fs_root);
	const char *sep = n && bpf_fs_root[n - 1] == '/' ? "" : "/";

	if (!n)
		return np_errf(err, "bpf_fs_root is empty");
	if ((size_t)snprintf(out, cap, "%s%s" TRACE_CTX_DIR "/" TRACE_CTX_NAME, bpf_fs_root, sep) >= cap)
		return np_errf(err, "bpf_fs_root: longer than %zu bytes", cap - sizeof(TRACE_CTX_DIR "/" TRACE_CTX_NAME));
	return 0;
}

/* fd's map when it has the spec's layout; else closes fd and says why. */
static int check_layout(int fd, const char *path, struct np_err *err)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		np_errno(err, "read the map at %s", path);
		close(fd);
		return -1;
	}
	/* OBI's and the OpenTelemetry profiler's definition is an LRU hash; a plain hash of the same
	 * key and value is read the same way. */
	if ((info.type != BPF_MAP_TYPE_LRU_HASH && info.type != BPF_MAP_TYPE_HASH) || info.key_size != sizeof(__u64) ||
	    info.value_size != sizeof(struct np_trace_ctx)) {
		np_errf(err, "the map at %s is not a traces_ctx_v1 map (map type %u, %u-byte keys, %u-byte values; "
			     "a hash of 8-byte pid_tgid keys and 24-byte trace contexts expected)",
			path, info.type, info.key_size, info.value_size);
		close(fd);
		return -1;
	}
	return fd;
}

int np_trace_ctx_open(const char *bpf_fs_root, int *created, struct np_err *err)
{
	char path[4096], dir[4096];
	int fd;

	struct statfs fs;

	*created = 0;
	if (np_trace_ctx_path(bpf_fs_root, path, sizeof(path), err))
		return -1;
	/* Said up front: mkdir and pin fail on other file systems with errors that do not tell why. */
	if (statfs(bpf_fs_root, &fs))
		return np_errno(err, "bpf_fs_root %s", bpf_fs_root);
	if ((unsigned long)fs.f_type != BPF_FS_MAGIC)
		return np_errf(err, "bpf_fs_root %s is not on a BPF file system (mount one there: mount -t bpf bpf %s)",
			       bpf_fs_root, bpf_fs_root);
	/* Twice at most: OBI may pin its map between our look and our pin. */
	for (int attempt = 0; attempt < 2; attempt++) {
		fd = bpf_obj_get(path);
		if (fd >= 0)
			return check_layout(fd, path, err);
		if (errno != ENOENT)
			return np_errno(err, "open the pinned map %s", path);
		memcpy(dir, path, sizeof(dir));
		*strrchr(dir, '/') = '\0';
		int made_dir = mkdir(dir, 01700) == 0;
		if (!made_dir && errno != EEXIST)
			return np_errno(err, "create %s", dir);
		LIBBPF_OPTS(bpf_map_create_opts, o);
		fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, TRACE_CTX_NAME, sizeof(__u64), sizeof(struct np_trace_ctx),
				    NP_TRACE_CTX_ENTRIES, &o);
		if (fd < 0)
			return np_errno(err, "create the traces_ctx_v1 map");
		if (bpf_obj_pin(fd, path) == 0) {
			*created = 1;
			return fd;
		}
		int e = errno;
		close(fd);
		if (made_dir)
			(void)rmdir(dir);
		if (e != EEXIST) {
			errno = e;
			return np_errno(err, "pin the traces_ctx_v1 map at %s", path);
		}
	}
	return np_errf(err, "%s keeps appearing and disappearing", path);
}
