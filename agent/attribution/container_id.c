/* Container IDs from /proc/PID/cgroup: see container_id.h. Hand-written rather than a
 * regex because the rule walks path segments looking for the pod's slice, with per-segment trimming,
 * which no single leftmost-first regex expresses, and because it runs for every new
 * PID the profiler sees. */
#include "agent/attribution/container_id.h"

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

/* A pod UID as the kubelet writes it in a cgroup name: 8-4-4-4-12 lowercase hex, the
 * separators '-' (cgroupfs driver) or '_' (systemd driver, where '-' nests slices),
 * copied with '-' separators as the API server shows it; or, for a static pod, the 32
 * hex digits of its config hash (the kubernetes.io/config.hash annotation). */
static int pod_uid_at(const char *s, size_t n, char uid[NP_POD_UID_LEN + 1])
{
	if (n == 32 && is_lower_hex(s, n)) {
		memcpy(uid, s, n);
		uid[n] = '\0';
		return 1;
	}
	char tmp[NP_POD_UID_LEN + 1];

	if (n != NP_POD_UID_LEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int sep = i == 8 || i == 13 || i == 18 || i == 23;
		if (sep ? (s[i] != '-' && s[i] != '_') : !is_lower_hex(s + i, 1))
			return 0; /* uid untouched: the caller goes on looking */
		tmp[i] = sep ? '-' : s[i];
	}
	tmp[n] = '\0';
	memcpy(uid, tmp, sizeof(tmp));
	return 1;
}

/* Whether a segment is a pod's slice (systemd driver: "<...kubepods...>-pod<UID>.slice",
 * also kind's "kubelet-kubepods-<qos>-pod<UID>.slice") or directory (cgroupfs driver:
 * "pod<UID>" below a "kubepods" directory). Only the part before a ':' counts, for
 * libcontainer's v1 form "kubepods-pod<UID>.slice:cri-containerd:<id>". */
static int pod_segment(const char *s, size_t n, int under_kubepods, char uid[NP_POD_UID_LEN + 1])
{
	const char *colon = memchr(s, ':', n);
	size_t m = colon ? (size_t)(colon - s) : n;

	if (m > 6 && memcmp(s + m - 6, ".slice", 6) == 0) {
		/* "<parent slices>-pod<UID>.slice": the UID is what follows the last "-pod". */
		for (size_t i = m - 6; i >= 4; i--) {
			if (memcmp(s + i - 4, "-pod", 4) != 0)
				continue;
			for (size_t k = 0; k + 8 <= i - 4; k++)
				if (memcmp(s + k, "kubepods", 8) == 0)
					return pod_uid_at(s + i, m - 6 - i, uid);
			return 0;
		}
		return 0;
	}
	return !colon && under_kubepods && n > 3 && memcmp(s, "pod", 3) == 0 && pod_uid_at(s + 3, n - 3, uid);
}

/* The path's segments, outermost first, and what the rule makes of them. */
struct path_walk {
	const char *path;
	size_t len, pos;
	const char *seg;
	size_t seg_len;
};

static int next_segment(struct path_walk *w)
{
	const char *slash;

	if (w->pos > w->len)
		return 0;
	w->seg = w->path + w->pos;
	slash = memchr(w->seg, '/', w->len - w->pos);
	w->seg_len = slash ? (size_t)(slash - w->seg) : w->len - w->pos;
	w->pos += w->seg_len + 1;
	return 1;
}

/* The answer for one path: see container_id.h. When ex is given, one line per segment
 * saying what it is (for `tools container-id --explain`). */
static void path_answer(const char *path, size_t len, struct np_cid_answer *a, struct np_buf *ex)
{
	struct path_walk w = { path, len, 0, NULL, 0 };
	char outer_id[NP_CONTAINER_ID_LEN + 1] = "", id[NP_CONTAINER_ID_LEN + 1];
	int under_kubepods = 0, pod_at = -1, n = 0, shown = 0;

	memset(a, 0, sizeof(*a));
	/* Pass 1: the outermost pod slice or directory. */
	while (next_segment(&w)) {
		if (pod_segment(w.seg, w.seg_len, under_kubepods, a->pod_uid)) {
			pod_at = n;
			break;
		}
		under_kubepods |= starts_with(w.seg, w.seg_len, "kubepods");
		n++;
	}
	a->pod = pod_at >= 0;
	w.pos = 0;
	n = 0;
	while (next_segment(&w)) {
		const char *what;
		int is_id = segment_id(w.seg, w.seg_len, id);
		if (n == pod_at) {
			/* The colon form names the pod and the container in one segment. */
			if (memchr(w.seg, ':', w.seg_len) && is_id) {
				memcpy(a->id, id, sizeof(id));
				what = "pod slice and container: this line's answer";
			} else {
				what = "pod slice";
			}
		} else if (pod_at >= 0 && n == pod_at + 1 && !a->id[0]) {
			if (is_id)
				memcpy(a->id, id, sizeof(id));
			what = is_id ? "container directly under the pod slice: this line's answer"
				     : "directly under the pod slice but not a container (a monitor or the pod's own "
				       "cgroup): the process is in no container of the pod";
		} else if (pod_at >= 0 && n > pod_at) {
			what = is_id ? "container below the pod's container: ignored (the container made it)"
				     : "below the pod's container: ignored";
		} else if (is_id && pod_at >= 0) {
			what = "container around the pod (a node that is a container, e.g. kind): ignored";
		} else if (is_id && !outer_id[0]) {
			memcpy(outer_id, id, sizeof(id));
			what = "outermost container (no pod slice in the path): this line's answer";
		} else if (is_id) {
			what = "container nested in the outermost one: ignored (the outer container made it)";
		} else {
			what = "not a container";
		}
		if (ex && w.seg_len) /* the empty segment before a leading '/' is not shown */
			np_buf_printf(ex, "    segment %d \"%.*s\": %s%s%s\n", ++shown, (int)w.seg_len, w.seg, what,
				      is_id ? ", ID " : "", is_id ? id : "");
		n++;
	}
	if (pod_at < 0)
		memcpy(a->id, outer_id, sizeof(outer_id));
}

int np_container_id_from_path(const char *path, size_t len, char id[NP_CONTAINER_ID_LEN + 1])
{
	struct np_cid_answer a;

	path_answer(path, len, &a, NULL);
	memcpy(id, a.id, sizeof(a.id));
	return id[0] != '\0';
}

void np_cgroup_path_answer(const char *path, size_t len, struct np_cid_answer *a)
{
	path_answer(path, len, a, NULL);
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

/* Ranks a line's answer: a pod line with a container beats one without a pod, which
 * beats nothing; among equals the unified line wins, then the first v1 line. A pod
 * line without a container (conmon, the pod's own cgroup) still outranks lines without
 * a pod, so that a kind node's container is never answered for a pod's process. */
static int rank(const struct np_cid_answer *a, int unified)
{
	if (a->pod)
		return (a->id[0] ? 6 : 4) + unified;
	return a->id[0] ? 2 + unified : 0;
}

static enum np_cid_origin from_cgroup(const char *text, size_t len, struct np_cid_answer *best, struct np_buf *ex)
{
	const char *line;
	size_t line_len, pos = 0;
	int best_rank = 0, best_line = 0, n = 0;
	enum np_cid_origin origin = NP_CID_NONE;

	memset(best, 0, sizeof(*best));
	while (next_line(text, len, &pos, &line, &line_len)) {
		struct cgroup_line cl;
		struct np_cid_answer a;
		int r;

		n++;
		if (!split_line(line, line_len, &cl)) {
			if (ex)
				np_buf_printf(ex, "line %d: not hier:controllers:path, skipped\n", n);
			continue;
		}
		if (ex)
			np_buf_printf(ex, "line %d (%s): %.*s\n", n, cl.unified ? "cgroup v2" : "cgroup v1",
				      (int)cl.path_len, cl.path);
		path_answer(cl.path, cl.path_len, &a, ex);
		r = rank(&a, cl.unified);
		if (ex)
			np_buf_printf(ex, "    gives %s%s%s\n", a.id[0] ? a.id : "no container",
				      a.pod ? ", pod UID " : "", a.pod ? a.pod_uid : "");
		if (r > best_rank) {
			best_rank = r;
			best_line = n;
			*best = a;
			origin = cl.unified ? NP_CID_UNIFIED : NP_CID_V1;
		}
	}
	if (!best->id[0])
		origin = NP_CID_NONE;
	if (ex) {
		if (best->id[0])
			np_buf_printf(ex, "chosen: %s from line %d (%s)\n", best->id, best_line,
				      best->pod ? "the container directly under the pod's slice; a line that shows a pod "
						  "slice wins over one that does not, then the v2 line over v1 lines"
						: "no line shows a pod slice: the outermost container level, the one "
						  "the host's runtime created; the v2 line wins over v1 lines");
		else if (best->pod)
			np_buf_printf(ex, "chosen: no container: line %d shows pod %s but nothing directly under "
				      "its slice is a container\n", best_line, best->pod_uid);
		else
			np_buf_puts(ex, "chosen: no container: no line names one\n");
	}
	return origin;
}

enum np_cid_origin np_container_id_from_cgroup(const char *text, size_t len, char id[NP_CONTAINER_ID_LEN + 1])
{
	struct np_cid_answer a;
	enum np_cid_origin o = from_cgroup(text, len, &a, NULL);

	memcpy(id, a.id, sizeof(a.id));
	return o;
}

enum np_cid_origin np_cgroup_answer(const char *text, size_t len, struct np_cid_answer *a)
{
	return from_cgroup(text, len, a, NULL);
}

int np_container_id_explain(const char *text, size_t len, struct np_buf *out, struct np_cid_answer *a,
			    struct np_err *err)
{
	from_cgroup(text, len, a, out);
	return out->failed ? np_errf(err, "out of memory explaining the cgroup file") : 0;
}

void np_cgroup_info_free(struct np_cgroup_info *ci)
{
	free(ci->unified_path);
	free(ci->lines);
	ci->unified_path = ci->lines = NULL;
	ci->container_id[0] = '\0';
	ci->pod_uid[0] = '\0';
	ci->origin = NP_CID_NONE;
}

int np_cgroup_info_parse(const char *text, size_t len, struct np_cgroup_info *ci, struct np_err *err)
{
	struct np_buf joined = NP_BUF_INIT;
	int first = 1;
	const char *line;
	size_t line_len, pos = 0;
	struct np_cid_answer a;

	np_cgroup_info_free(ci);
	ci->origin = from_cgroup(text, len, &a, NULL);
	memcpy(ci->container_id, a.id, sizeof(a.id));
	memcpy(ci->pod_uid, a.pod ? a.pod_uid : "", a.pod ? sizeof(a.pod_uid) : 1);
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
