/* Container IDs from /proc/PID/cgroup: see container_id.h. Hand-written rather than a
 * regex because the rule walks path segments right to left with per-segment trimming,
 * which no single leftmost-first regex expresses, and because it runs for every new
 * PID the profiler sees. */
#include "agent/discovery/container_id.h"

#include "lib/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/strbuf.h"

static int starts_with(const char *s, size_t n, const char *prefix)
{
	size_t pn = strlen(prefix);

	return n >= pn && memcmp(s, prefix, pn) == 0;
}

static int is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
	}
	return 1;
}

/* One path segment, step 2 of the rule. */
static int segment_id(const char *s, size_t n, char id[NP_CONTAINER_ID_LEN + 1])
{
	/* Only one prefix is dropped; "libpod-payload-" must be tried before "libpod-". */
	static const char *const prefixes[] = { "cri-containerd-", "containerd-", "docker-",
						"crio-", "libpod-payload-", "libpod-" };

	while (n > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	/* conmon monitors a container from the host's namespaces: it is not the workload. */
	if (starts_with(s, n, "crio-conmon-") || starts_with(s, n, "libpod-conmon-"))
		return 0;
	/* libcontainer's systemd form "<slice>:<prefix>:<id>" keeps the ID after the last ':'. */
	for (size_t i = n; i > 0; i--) {
		if (s[i - 1] == ':') {
			s += i;
			n -= i;
			break;
		}
	}
	if (n >= 6 && memcmp(s + n - 6, ".scope", 6) == 0)
		n -= 6;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (starts_with(s, n, prefixes[i])) {
			size_t pn = strlen(prefixes[i]);
			s += pn;
			n -= pn;
			break;
		}
	}
	if (n != NP_CONTAINER_ID_LEN || !is_lower_hex(s, n))
		return 0;
	memcpy(id, s, NP_CONTAINER_ID_LEN);
	id[NP_CONTAINER_ID_LEN] = '\0';
	return 1;
}

int np_container_id_from_path(const char *path, size_t len, char id[NP_CONTAINER_ID_LEN + 1])
{
	size_t start = 0;

	id[0] = '\0';
	/* Segments from the first: the outermost container level is the one its runtime
	 * created; whatever lies below it (a delegated subtree) the container itself made. */
	while (start <= len) {
		const char *slash = memchr(path + start, '/', len - start);
		size_t end = slash ? (size_t)(slash - path) : len;
		if (segment_id(path + start, end - start, id))
			return 1;
		start = end + 1;
	}
	return 0;
}

/* A line split as hier:controllers:path. Returns 0 when the line is not cgroup-shaped. */
struct cgroup_line {
	const char *controllers, *path;
	size_t controllers_len, path_len;
	int unified;
};

static int split_line(const char *line, size_t n, struct cgroup_line *out)
{
	const char *c1, *c2;

	if (n > 0 && line[n - 1] == '\r')
		n--;
	c1 = memchr(line, ':', n);
	if (!c1 || c1 == line)
		return 0;
	for (const char *p = line; p < c1; p++)
		if (*p < '0' || *p > '9')
			return 0;
	c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line));
	if (!c2)
		return 0;
	out->controllers = c1 + 1;
	out->controllers_len = (size_t)(c2 - c1 - 1);
	out->path = c2 + 1;
	out->path_len = n - (size_t)(c2 + 1 - line);
	out->unified = (c1 - line == 1 && line[0] == '0' && out->controllers_len == 0);
	return 1;
}

/* Line iteration as Go's bufio.Scanner does it: a final line needs no newline, and a
 * trailing newline does not make an extra empty line. Returns 0 when there is none left. */
static int next_line(const char *text, size_t len, size_t *pos, const char **line, size_t *line_len)
{
	const char *nl;

	if (*pos >= len)
		return 0;
	*line = text + *pos;
	nl = memchr(*line, '\n', len - *pos);
	*line_len = nl ? (size_t)(nl - *line) : len - *pos;
	*pos += *line_len + 1;
	return 1;
}

enum np_cid_origin np_container_id_from_cgroup(const char *text, size_t len, char id[NP_CONTAINER_ID_LEN + 1])
{
	char v1_id[NP_CONTAINER_ID_LEN + 1] = "";
	const char *line;
	size_t line_len, pos = 0;

	id[0] = '\0';
	while (next_line(text, len, &pos, &line, &line_len)) {
		struct cgroup_line cl;
		char found[NP_CONTAINER_ID_LEN + 1];

		if (!split_line(line, line_len, &cl))
			continue;
		if (!np_container_id_from_path(cl.path, cl.path_len, found))
			continue;
		if (cl.unified) {
			memcpy(id, found, sizeof(found));
			return NP_CID_UNIFIED;
		}
		if (!v1_id[0])
			memcpy(v1_id, found, sizeof(found));
	}
	if (v1_id[0]) {
		memcpy(id, v1_id, sizeof(v1_id));
		return NP_CID_V1;
	}
	return NP_CID_NONE;
}

void np_cgroup_info_free(struct np_cgroup_info *ci)
{
	free(ci->unified_path);
	free(ci->lines);
	ci->unified_path = ci->lines = NULL;
	ci->container_id[0] = '\0';
	ci->origin = NP_CID_NONE;
}

int np_cgroup_info_parse(const char *text, size_t len, struct np_cgroup_info *ci, struct np_err *err)
{
	struct np_buf joined = NP_BUF_INIT;
	int first = 1;
	const char *line;
	size_t line_len, pos = 0;

	np_cgroup_info_free(ci);
	ci->origin = np_container_id_from_cgroup(text, len, ci->container_id);
	while (next_line(text, len, &pos, &line, &line_len)) {
		struct cgroup_line cl;
		size_t n = line_len;

		if (n > 0 && line[n - 1] == '\r')
			n--;
		if (!first)
			np_buf_putc(&joined, '|');
		first = 0;
		np_buf_append(&joined, line, n);
		if (!ci->unified_path && split_line(line, line_len, &cl) && cl.unified) {
			ci->unified_path = strndup(cl.path, cl.path_len);
			if (!ci->unified_path) {
				np_buf_free(&joined);
				return np_errf(err, "out of memory parsing cgroup file");
			}
		}
	}
	if (joined.failed) {
		np_buf_free(&joined);
		np_cgroup_info_free(ci);
		return np_errf(err, "out of memory parsing cgroup file");
	}
	ci->lines = np_buf_steal(&joined, NULL);
	if (!ci->lines) {
		np_cgroup_info_free(ci);
		return np_errf(err, "out of memory parsing cgroup file");
	}
	return 0;
}

char *np_cgroup_file_read(const char *path, size_t *len, struct np_err *err)
{
	return np_read_file(path, NP_CGROUP_FILE_MAX, len, err);
}

int np_cgroup_info_read(const char *proc_dir, pid_t pid, struct np_cgroup_info *ci, struct np_err *err)
{
	char path[512];
	size_t len;
	char *text;
	int rc;

	snprintf(path, sizeof(path), "%s/%d/cgroup", proc_dir ? proc_dir : "/proc", (int)pid);
	text = np_cgroup_file_read(path, &len, err);
	if (!text)
		return -1;
	rc = np_cgroup_info_parse(text, len, ci, err);
	free(text);
	return rc;
}
