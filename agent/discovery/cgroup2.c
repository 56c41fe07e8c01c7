/* cgroup v2 mount discovery and cgroup IDs: see cgroup2.h. */
#include "agent/discovery/cgroup2.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* mountinfo escapes space, tab, newline and backslash as \ooo octal. Decodes in place. */
static void unescape_octal(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Splits one mountinfo line into its space-separated fields (in place). */
static size_t split_fields(char *line, char **fields, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	for (char *tok = strtok_r(line, " ", &save); tok && n < max; tok = strtok_r(NULL, " ", &save))
		fields[n++] = tok;
	return n;
}

int np_cgroup2_find_mount(const char *mountinfo_path, struct np_cgroup2_mount *out, struct np_err *err)
{
	const char *path = mountinfo_path ? mountinfo_path : "/proc/self/mountinfo";
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if (!f)
		return np_errno(err, "open %s", path);
	while (!found && getline(&line, &cap, f) >= 0) {
		char *fields[64];
		size_t n, dash;

		line[strcspn(line, "\n")] = '\0';
		n = split_fields(line, fields, sizeof(fields) / sizeof(fields[0]));
		/* id parent major:minor root mountpoint options [optional...] - fstype source super */
		for (dash = 6; dash < n && strcmp(fields[dash], "-") != 0; dash++)
			;
		if (n < 7 || dash + 1 >= n || strcmp(fields[dash + 1], "cgroup2") != 0)
			continue;
		unescape_octal(fields[3]);
		unescape_octal(fields[4]);
		if (strlen(fields[3]) >= sizeof(out->root) || strlen(fields[4]) >= sizeof(out->dir))
			continue;
		strcpy(out->root, fields[3]);
		strcpy(out->dir, fields[4]);
		found = 1;
	}
	free(line);
	fclose(f);
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
