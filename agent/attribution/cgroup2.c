/* cgroup v2 mount discovery and cgroup IDs: see cgroup2.h. */
#include "agent/attribution/cgroup2.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "lib/file.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* mountinfo escapes space, tab, newline and backslash as \ooo octal. Decodes s[0..n) into
 * out (cap bytes with the NUL); 0 when it does not fit or would hold a NUL. */
static int unescape_octal(const char *s, size_t n, char *out, size_t cap)
{
	size_t w = 0;

	for (size_t r = 0; r < n; r++) {
		char c = s[r];
		if (c == '\\' && n - r > 3 && s[r + 1] >= '0' && s[r + 1] <= '3' &&
		    s[r + 2] >= '0' && s[r + 2] <= '7' && s[r + 3] >= '0' && s[r + 3] <= '7') {
			c = (char)((s[r + 1] - '0') * 64 + (s[r + 2] - '0') * 8 + (s[r + 3] - '0'));
			r += 3;
		}
		if (c == '\0' || w + 1 >= cap)
			return 0;
		out[w++] = c;
	}
	out[w] = '\0';
	return 1;
}

#define MAX_FIELDS 64

int np_cgroup2_mount_parse(const char *text, size_t len, struct np_cgroup2_mount *out)
{
	size_t pos = 0;

	while (pos < len) {
		const char *line = text + pos, *eol = memchr(line, '\n', len - pos);
		size_t ll = eol ? (size_t)(eol - line) : len - pos, n = 0, dash;
		const char *f[MAX_FIELDS];
		size_t fl[MAX_FIELDS];

		pos += ll + 1;
		/* id parent major:minor root mountpoint options [optional...] - fstype source super */
		for (size_t i = 0; i < ll && n < MAX_FIELDS;) {
			while (i < ll && line[i] == ' ')
				i++;
			if (i == ll)
				break;
			size_t start = i;
			while (i < ll && line[i] != ' ')
				i++;
			f[n] = line + start;
			fl[n++] = i - start;
		}
		for (dash = 6; dash < n && !(fl[dash] == 1 && f[dash][0] == '-'); dash++)
			;
		if (n < 7 || dash + 1 >= n || fl[dash + 1] != 7 || memcmp(f[dash + 1], "cgroup2", 7) != 0)
			continue;
		if (!unescape_octal(f[3], fl[3], out->root, sizeof(out->root)) ||
		    !unescape_octal(f[4], fl[4], out->dir, sizeof(out->dir)))
			continue;
		return 1;
	}
	return 0;
}

/* /proc/self/mountinfo grows with the mounts of this namespace; this is far above a busy node's. */
#define MOUNTINFO_MAX (16u << 20)

int np_cgroup2_find_mount(const char *mountinfo_path, struct np_cgroup2_mount *out, struct np_err *err)
{
	const char *path = mountinfo_path ? mountinfo_path : "/proc/self/mountinfo";
	size_t len;
	char *text = np_read_file(path, MOUNTINFO_MAX, &len, err);
	int found;

	if (!text)
		return -1;
	found = np_cgroup2_mount_parse(text, len, out);
	free(text);
	if (!found) {
		np_errf(err, "no cgroup2 mount in %s", path);
		err->code = ENOENT;
		return -1;
	}
	return 0;
}

int np_cgroup2_dir(const struct np_cgroup2_mount *m, const char *path, char *out, size_t cap, struct np_err *err)
{
	size_t rlen = strlen(m->root);
	const char *rest;
	int n;

	if (path[0] != '/' || strncmp(path, "/..", 3) == 0)
		return np_errf(err, "cgroup path \"%s\" is not in this cgroup namespace", path);
	if (strcmp(m->root, "/") == 0) {
		rest = path;
	} else {
		if (strncmp(path, m->root, rlen) != 0 || (path[rlen] != '/' && path[rlen] != '\0'))
			return np_errf(err, "cgroup path \"%s\" is outside the cgroup2 mount's root \"%s\"", path,
				       m->root);
		rest = path + rlen;
	}
	if (strcmp(rest, "/") == 0)
		rest = "";
	n = snprintf(out, cap, "%s%s", m->dir, rest);
	if (n < 0 || (size_t)n >= cap)
		return np_errf(err, "cgroup path \"%s\" is too long", path);
	return 0;
}

int np_cgroup2_id(const char *dir, uint64_t *id, struct np_err *err)
{
	union {
		struct file_handle fh;
		char space[sizeof(struct file_handle) + 16];
	} h;
	int mount_id;
	struct stat st;
	struct statfs sfs;

	/* Other file systems have handles of the same size that mean something else. */
	if (statfs(dir, &sfs) != 0)
		return np_errno(err, "statfs %s", dir);
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return np_errf(err, "%s is not on a cgroup2 file system", dir);
	h.fh.handle_bytes = 16;
	if (name_to_handle_at(AT_FDCWD, dir, &h.fh, &mount_id, 0) == 0 && h.fh.handle_bytes == sizeof(uint64_t)) {
		memcpy(id, h.fh.f_handle, sizeof(uint64_t));
		return 0;
	}
	if (stat(dir, &st) != 0)
		return np_errno(err, "stat %s", dir);
	if (!S_ISDIR(st.st_mode))
		return np_errf(err, "%s is not a cgroup directory", dir);
	*id = (uint64_t)st.st_ino;
	return 0;
}
