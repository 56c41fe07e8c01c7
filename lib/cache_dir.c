/* A bounded directory of cache files, and the checksummed writer of one (see cache_dir.h). */
#include "lib/cache_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/checksum.h"
#include "lib/log.h"

#define TMP_PREFIX ".tmp."
#define STALE_TMP_SECONDS 3600 /* a temp file this old was left by an agent that died */
#define SCAN_MAX 65536         /* directory entries looked at per scan */
#define MAX_SUFFIX 8
#define WRITE_PIECE ((size_t)16 << 10)

struct np_cache_dir {
	int dirfd;
	char *path; /* owned, for messages */
	const struct np_cache_dir_kind *kind;
	size_t max_entries;
	int invalid_logged, store_logged;
	struct np_cache_dir_stats st;
};

/* The file name of key, or -1 when key has characters a file name must not carry. Build IDs
 * are hex; identities are "file:DEV:INO:SIZE:MTIME" (':' becomes '-'). */
static int file_name(const struct np_cache_dir *d, const char *key, char *out, size_t size)
{
	size_t n = strlen(key), sl = strlen(d->kind->suffix);
	if (n == 0 || n > NP_CACHE_DIR_MAX_KEY || n + sl + 1 > size)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char ch = key[i];
		if (ch == ':')
			ch = '-';
		else if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
			return -1;
		out[i] = ch;
	}
	memcpy(out + n, d->kind->suffix, sl + 1);
	return 0;
}

struct entry {
	struct timespec mtime;
	char *name;
};

static int cmp_mtime(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Counts this kind's files, removes stale temp files and, over max_entries, the least recently
 * used files of this kind (mtime order: a hit touches its file). */
static int scan(struct np_cache_dir *c, struct np_err *err)
{
	int fd = dup(c->dirfd);
	if (fd < 0)
		return np_errno(err, "%s %s", c->kind->what, c->path);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return np_errno(err, "%s %s", c->kind->what, c->path);
	}
	rewinddir(d);
	struct entry *v = NULL;
	size_t n = 0, cap = 0, seen = 0;
	time_t now = time(NULL);
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d)) && seen++ < SCAN_MAX) {
		struct stat st;
		if (de->d_name[0] == '.' && strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
			continue;
		if (fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0) {
			if (st.st_mtime + STALE_TMP_SECONDS < now)
				unlinkat(c->dirfd, de->d_name, 0);
			continue;
		}
		if (!has_suffix(de->d_name, c->kind->suffix))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct entry *nv = realloc(v, nc * sizeof(*v));
			if (!nv) {
				rc = np_errf(err, "%s: out of memory", c->kind->what);
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n].mtime = st.st_mtim;
		v[n].name = strdup(de->d_name);
		if (!v[n].name) {
			rc = np_errf(err, "%s: out of memory", c->kind->what);
			break;
		}
		n++;
	}
	closedir(d);
	size_t files = n;
	if (rc == 0 && n > c->max_entries) {
		qsort(v, n, sizeof(*v), cmp_mtime);
		for (size_t i = 0; i < n - c->max_entries; i++)
			if (unlinkat(c->dirfd, v[i].name, 0) == 0) {
				c->st.evicted++;
				files--;
			}
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	if (rc == 0)
		c->st.files = files;
	return rc;
}

int np_cache_dir_open(const char *path, const struct np_cache_dir_kind *kind, size_t max_entries,
                      struct np_cache_dir **out, struct np_err *err)
{
	const char *what = kind->what;
	if (!path || !*path)
		return np_errf(err, "%s: no directory given", what);
	if (strlen(kind->suffix) > MAX_SUFFIX)
		return np_errf(err, "%s: suffix %s too long", what, kind->suffix);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return np_errno(err, "%s %s: mkdir", what, path);
	/* O_NOFOLLOW: a symlink planted at the path (/tmp is everyone's) is refused, not followed. */
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return np_errno(err, "%s %s", what, path);
	struct stat st;
	if (fstat(dfd, &st) < 0) {
		np_errno(err, "%s %s", what, path);
		close(dfd);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		close(dfd);
		return np_errf(err, "%s %s: owned by uid %u, not by the agent (uid %u): another user could "
		                    "write tables the agent would trust",
		               what, path, (unsigned)st.st_uid, (unsigned)geteuid());
	}
	if ((st.st_mode & 077) && fchmod(dfd, 0700) < 0) {
		np_errno(err, "%s %s: chmod 0700", what, path);
		close(dfd);
		return -1;
	}
	/* Writable? A read-only mount passes every check above. */
	char probe[64];
	snprintf(probe, sizeof(probe), TMP_PREFIX "probe.%ld", (long)getpid());
	int pfd = openat(dfd, probe, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (pfd < 0) {
		np_errno(err, "%s %s: cannot create files", what, path);
		close(dfd);
		return -1;
	}
	close(pfd);
	unlinkat(dfd, probe, 0);
	struct np_cache_dir *c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path))) {
		free(c);
		close(dfd);
		return np_errf(err, "%s: out of memory", what);
	}
	c->dirfd = dfd;
	c->kind = kind;
	c->max_entries = max_entries;
	c->st.max_entries = max_entries;
	if (scan(c, err) < 0) {
		np_cache_dir_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

void np_cache_dir_free(struct np_cache_dir *c)
{
	if (!c)
		return;
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->path);
	free(c);
}

static void refuse_name(struct np_cache_dir *c, const char *name, const char *why)
{
	unlinkat(c->dirfd, name, 0);
	c->st.invalid++;
	if (!c->invalid_logged) {
		c->invalid_logged = 1;
		char msg[160];
		snprintf(msg, sizeof(msg), "%s file refused and rebuilt (logged once; counted in %s)", c->kind->what,
		         c->kind->invalid_metric);
		np_log(NP_WARN, c->kind->component, msg, "dir", c->path, "file", name, "reason", why, NULL);
	}
}

void np_cache_dir_refuse(struct np_cache_dir *c, const char *key, const char *why)
{
	char name[NP_CACHE_DIR_MAX_KEY + MAX_SUFFIX + 1];
	if (file_name(c, key, name, sizeof(name)) == 0)
		refuse_name(c, name, why);
}

int np_cache_dir_open_file(struct np_cache_dir *c, const char *key, uint64_t min_size, uint64_t max_size, int *out_fd,
                           uint64_t *size)
{
	char name[NP_CACHE_DIR_MAX_KEY + MAX_SUFFIX + 1];
	*out_fd = -1;
	if (file_name(c, key, name, sizeof(name)) < 0)
		return 0;
	int fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			refuse_name(c, name, "a symlink");
		return 0;
	}
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) < 0)
		why = "cannot stat";
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_uid != geteuid() || (st.st_mode & 022))
		why = "not owned by the agent, or writable by others";
	else if (st.st_nlink != 1)
		why = "hard-linked";
	else if ((uint64_t)st.st_size < min_size || (uint64_t)st.st_size > max_size)
		why = "size out of range";
	if (why) {
		close(fd);
		refuse_name(c, name, why);
		return 0;
	}
	*out_fd = fd;
	*size = (uint64_t)st.st_size;
	return 1;
}

void np_cache_dir_touch(int fd)
{
	futimens(fd, NULL);
}

static void store_failed(struct np_cache_dir *c, const char *why)
{
	c->st.store_failed++;
	if (!c->store_logged) {
		c->store_logged = 1;
		char msg[200];
		snprintf(msg, sizeof(msg), "cannot write a %s file; %s (logged once; counted in %s)", c->kind->what,
		         c->kind->kept, c->kind->store_metric);
		np_log(NP_WARN, c->kind->component, msg, "dir", c->path, "error", why, NULL);
	}
}

int np_cache_dir_store(struct np_cache_dir *c, const char *key, int (*write_fn)(int fd, void *arg, struct np_err *err),
                       void *arg, int *written, struct np_err *err)
{
	char name[NP_CACHE_DIR_MAX_KEY + MAX_SUFFIX + 1], tmp[sizeof(name) + 48];
	if (written)
		*written = -1;
	if (file_name(c, key, name, sizeof(name)) < 0)
		return 0;
	/* Unique among the agents sharing the directory (pid) and the caches of one agent (several
	 * pyroscope.ebpf components: one counter for the process). */
	static _Atomic unsigned tmp_seq;
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%ld.%u.%s", (long)getpid(), tmp_seq++, name);
	int fd = openat(c->dirfd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		store_failed(c, strerror(errno));
		return 0;
	}
	struct np_err werr;
	int rc = write_fn(fd, arg, &werr), rfd = -1;
	if (close(fd) < 0 && rc == 0)
		rc = np_errno(&werr, "close");
	/* Opened by its temporary name, which only this process uses, before it is renamed. */
	if (rc == 0 && written && (rfd = openat(c->dirfd, tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		rc = np_errno(&werr, "open what was written");
	if (rc == 0 && renameat(c->dirfd, tmp, c->dirfd, name) < 0)
		rc = np_errno(&werr, "rename");
	if (rc < 0) {
		if (rfd >= 0)
			close(rfd);
		unlinkat(c->dirfd, tmp, 0);
		store_failed(c, werr.msg);
		return 0;
	}
	if (scan(c, err) < 0) {
		if (rfd >= 0)
			close(rfd);
		return -1;
	}
	if (written)
		*written = rfd;
	return 1;
}

void np_cache_dir_stats(const struct np_cache_dir *c, struct np_cache_dir_stats *out)
{
	*out = c->st;
}

const char *np_cache_dir_path(const struct np_cache_dir *c)
{
	return c->path;
}

/* ---- writing one file ---- */

int np_cache_writer_begin(struct np_cache_writer *w, int fd, size_t hdr_len, struct np_err *err)
{
	static const char zeros[256];
	if (hdr_len > sizeof(zeros))
		return np_errf(err, "cache file header of %zu bytes", hdr_len);
	*w = (struct np_cache_writer){ .fd = fd, .crc = NP_CRC32C_INIT, .off = 0, .hdr_len = hdr_len };
	/* The header goes last, with the checksum: until then the file has a zero magic. */
	if (write(fd, zeros, hdr_len) != (ssize_t)hdr_len)
		return np_errno(err, "write");
	w->off = hdr_len;
	return 0;
}

int np_cache_writer_put(struct np_cache_writer *w, const void *data, size_t len, struct np_err *err)
{
	const unsigned char *p = data;
	w->crc = np_crc32c(w->crc, p, len);
	w->off += len;
	while (len) {
		/* Small writes: the page cache then holds the file in small folios, and a lookup
		 * through a mapping of it faults in a few pages, not a 2 MiB folio whole (a kernel
		 * maps a large folio's pages together). */
		ssize_t r = write(w->fd, p, len < WRITE_PIECE ? len : WRITE_PIECE);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return np_errno(err, "write");
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int np_cache_writer_pad_to(struct np_cache_writer *w, uint64_t at, struct np_err *err)
{
	static const char zeros[8];
	return at > w->off ? np_cache_writer_put(w, zeros, (size_t)(at - w->off), err) : 0;
}

int np_cache_writer_finish(struct np_cache_writer *w, void *hdr, size_t crc_at, struct np_err *err)
{
	uint32_t zero = 0, crc;
	if (crc_at + sizeof(crc) > w->hdr_len)
		return np_errf(err, "cache file header: crc field outside it");
	memcpy((char *)hdr + crc_at, &zero, sizeof(zero));
	crc = np_crc32c_combine(np_crc32c(NP_CRC32C_INIT, hdr, w->hdr_len), w->crc, w->off - w->hdr_len);
	memcpy((char *)hdr + crc_at, &crc, sizeof(crc));
	if (pwrite(w->fd, hdr, w->hdr_len, 0) != (ssize_t)w->hdr_len)
		return np_errno(err, "write header");
	return 0;
}
