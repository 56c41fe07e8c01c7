/* discovery.process: see process.h. */
#include "agent/discovery/process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/attribution/container_id.h"
#include "agent/attribution/target.h"
#include "lib/file.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/log.h"
#include "lib/procfs_text.h"
#include "lib/strbuf.h"

#define LINK_MAX_BYTES (64 * 1024) /* procfs links are d_path()s: at most a page in practice */
#define STATUS_MAX_BYTES (64 * 1024) /* /proc/PID/status is about 1.5 KiB */

void np_process_config_init(struct np_process_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->exe = cfg->cwd = cfg->commandline = cfg->uid = cfg->username = cfg->container_id = 1;
	cfg->cgroup_path = 0;
	cfg->refresh_interval_ns = 60LL * 1000000000LL;
	cfg->max_commandline_bytes = 64 * 1024;
}

int np_process_config_validate(const struct np_process_config *cfg, struct np_err *err)
{
	if (cfg->refresh_interval_ns <= 0)
		return np_errf(err, "refresh_interval must be greater than 0");
	if (cfg->max_commandline_bytes == 0)
		return np_errf(err, "max_commandline_bytes must be greater than 0");
	return 0;
}

int np_process_check_argument(const char *block, const char *name, int is_block, struct np_err *err)
{
	static const char *const top_attrs[] = { "join", "refresh_interval" };
	static const char *const dc_attrs[] = { "exe", "cwd", "commandline", "uid", "username", "container_id",
						"cgroup_path" };

	if (!block) {
		if (is_block && strcmp(name, "discover_config") == 0)
			return 0;
		for (size_t i = 0; !is_block && i < sizeof(top_attrs) / sizeof(top_attrs[0]); i++)
			if (strcmp(name, top_attrs[i]) == 0)
				return 0;
		if (!is_block && strcmp(name, "cgroup_id_regex") == 0)
			return np_errf(err, "discovery.process: argument \"cgroup_id_regex\" is not supported by "
					    "nodeprof; use discover_config { cgroup_path = true } and a relabel rule");
		return np_errf(err, "discovery.process: unknown %s \"%s\"", is_block ? "block" : "argument", name);
	}
	if (strcmp(block, "discover_config") != 0)
		return np_errf(err, "discovery.process: unknown block \"%s\"", block);
	for (size_t i = 0; !is_block && i < sizeof(dc_attrs) / sizeof(dc_attrs[0]); i++)
		if (strcmp(name, dc_attrs[i]) == 0)
			return 0;
	if (!is_block && strcmp(name, "cgroup_id") == 0)
		return np_errf(err, "discovery.process: discover_config argument \"cgroup_id\" is not supported by "
				    "nodeprof; use cgroup_path");
	return np_errf(err, "discovery.process: discover_config has no %s \"%s\"", is_block ? "block" : "argument",
		       name);
}

/* ---- reading one process ---- */

static int gone(int e)
{
	return e == ENOENT || e == ESRCH;
}

/* readlink into a growing buffer; the result is NUL-terminated in *out (reused). */
static int read_link(const char *path, struct np_buf *out, struct np_err *err)
{
	size_t cap = 256;

	while (1) {
		ssize_t n;
		np_buf_reset(out);
		if (np_buf_reserve(out, cap) != 0) {
			np_errf(err, "readlink %s: out of memory", path);
			err->code = ENOMEM;
			return -1;
		}
		n = readlink(path, out->p, cap);
		if (n < 0)
			return np_errno(err, "readlink %s", path);
		if ((size_t)n < cap) {
			out->len = (size_t)n;
			out->p[n] = '\0';
			return 0;
		}
		if (cap >= LINK_MAX_BYTES) {
			np_errf(err, "readlink %s: target longer than %d bytes", path, LINK_MAX_BYTES);
			err->code = ENAMETOOLONG;
			return -1;
		}
		cap *= 4;
	}
}

/* /proc/PID/cmdline joined as gopsutil joins it (procfs_text.h), at most max bytes read. */
static int read_cmdline(const char *path, size_t max, struct np_buf *out, struct np_err *err)
{
	struct np_cmdline_join j = NP_CMDLINE_JOIN_INIT;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	size_t len;
	int truncated;
	char *raw;

	np_buf_reset(out);
	if (fd < 0)
		return np_errno(err, "open %s", path);
	raw = np_read_fd(fd, path, max, 1, &len, &truncated, err);
	close(fd);
	if (!raw)
		return -1;
	np_procfs_cmdline_feed(&j, raw, len, out);
	free(raw);
	if (out->failed) {
		np_errf(err, "read %s: out of memory", path);
		err->code = ENOMEM;
		return -1;
	}
	return 0;
}

/* The real UID from the "Uid:" line of /proc/PID/status. */
static int read_uid(const char *path, unsigned long *uid, struct np_err *err)
{
	size_t len;
	char *text = np_read_file(path, STATUS_MAX_BYTES, &len, err);
	int found;

	if (!text)
		return -1;
	found = np_procfs_status_uid(text, len, uid);
	free(text);
	if (!found)
		return np_errf(err, "%s: no Uid line", path);
	return 0;
}

/* UID -> user name lookups for one scan (NSS may be slow; processes share few UIDs). */
struct user_cache {
	struct {
		unsigned long uid;
		char *name; /* owned; "" when the UID has no user */
	} *v;
	size_t n, cap;
};

static const char *user_name(struct user_cache *uc, unsigned long uid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	char *name;

	for (size_t i = 0; i < uc->n; i++)
		if (uc->v[i].uid == uid)
			return uc->v[i].name;
	if (getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res) != 0 || !res)
		name = strdup("");
	else
		name = strdup(res->pw_name);
	if (!name)
		return NULL;
	if (np_grow((void **)&uc->v, &uc->cap, uc->n + 1, sizeof(uc->v[0])) != 0) {
		free(name);
		return NULL;
	}
	uc->v[uc->n].uid = uid;
	uc->v[uc->n].name = name;
	uc->n++;
	return name;
}

static void user_cache_free(struct user_cache *uc)
{
	for (size_t i = 0; i < uc->n; i++)
		free(uc->v[i].name);
	free(uc->v);
}

struct scan {
	const struct np_process_config *cfg;
	const char *proc;
	struct np_buf text; /* scratch for link targets and command lines */
	struct user_cache users;
	struct np_process_scan_stats *stats;
};

/* Records why a process was skipped; returns 1 (skip), or -1 with err = why when
 * memory ran out. */
static int skip(struct scan *sc, const struct np_err *why, struct np_err *err)
{
	if (gone(why->code)) {
		sc->stats->vanished++;
		return 1;
	}
	if (why->code == ENOMEM) {
		*err = *why;
		return -1;
	}
	if (!sc->stats->failed++) {
		size_t n = strnlen(why->msg, sizeof(sc->stats->first_failure) - 1);
		memcpy(sc->stats->first_failure, why->msg, n);
		sc->stats->first_failure[n] = '\0';
	}
	return 1;
}

/* Builds the target of one process into ls. Returns 0 (ls filled), 1 (skipped) or -1. */
static int read_process(struct scan *sc, unsigned long pid, struct np_labels *ls, struct np_err *err)
{
	const struct np_process_config *cfg = sc->cfg;
	char path[512], num[24];
	struct np_err why;
	unsigned long uid = 0;
	int have_uid = 0;

	snprintf(num, sizeof(num), "%lu", pid);
	if (np_labels_set(ls, NP_LABEL_PROCESS_PID, num, err) != 0)
		return -1;
	const struct {
		int wanted;
		const char *file, *label;
	} links[] = { { cfg->exe, "exe", "__meta_process_exe" }, { cfg->cwd, "cwd", "__meta_process_cwd" } };
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		if (!links[i].wanted)
			continue;
		snprintf(path, sizeof(path), "%s/%lu/%s", sc->proc, pid, links[i].file);
		if (read_link(path, &sc->text, &why) != 0)
			return skip(sc, &why, err);
		if (sc->text.len && np_labels_set(ls, links[i].label, sc->text.p, err) != 0)
			return -1;
	}
	if (cfg->commandline) {
		snprintf(path, sizeof(path), "%s/%lu/cmdline", sc->proc, pid);
		if (read_cmdline(path, cfg->max_commandline_bytes, &sc->text, &why) != 0)
			return skip(sc, &why, err);
		if (sc->text.len && np_labels_set(ls, "__meta_process_commandline", sc->text.p, err) != 0)
			return -1;
	}
	if (cfg->uid || cfg->username) {
		snprintf(path, sizeof(path), "%s/%lu/status", sc->proc, pid);
		have_uid = read_uid(path, &uid, &why) == 0;
	}
	if (have_uid && cfg->username) {
		const char *name = user_name(&sc->users, uid);
		if (!name)
			return np_errf(err, "out of memory looking up user names");
		if (*name && np_labels_set(ls, "__meta_process_username", name, err) != 0)
			return -1;
	}
	if (have_uid && cfg->uid) {
		snprintf(num, sizeof(num), "%lu", uid);
		if (np_labels_set(ls, "__meta_process_uid", num, err) != 0)
			return -1;
	}
	if (cfg->container_id || cfg->cgroup_path) {
		struct np_cgroup_info ci = NP_CGROUP_INFO_INIT;
		int rc = 0;

		if (np_cgroup_info_read(sc->proc, (pid_t)pid, &ci, &why) != 0)
			return skip(sc, &why, err);
		if (cfg->container_id && ci.container_id[0])
			rc = np_labels_set(ls, NP_LABEL_CONTAINER_ID, ci.container_id, err);
		if (rc == 0 && cfg->cgroup_path && ci.lines[0])
			rc = np_labels_set(ls, "__meta_process_cgroup_path", ci.lines, err);
		np_cgroup_info_free(&ci);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* The numeric entries of the proc directory, sorted. Caller frees *pids. */
static int list_pids(const char *proc, unsigned long **pids, size_t *n, struct np_err *err)
{
	DIR *d = opendir(proc);
	struct dirent *de;
	size_t cap = 0;

	*pids = NULL;
	*n = 0;
	if (!d)
		return np_errno(err, "open %s", proc);
	while ((errno = 0, de = readdir(d))) {
		char *end;
		unsigned long pid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = strtoul(de->d_name, &end, 10);
		if (*end)
			continue;
		if (np_grow((void **)pids, &cap, *n + 1, sizeof(**pids)) != 0) {
			closedir(d);
			free(*pids);
			*pids = NULL;
			return np_errf(err, "out of memory listing %s", proc);
		}
		(*pids)[(*n)++] = pid;
	}
	if (errno) {
		np_errno(err, "read %s", proc);
		closedir(d);
		free(*pids);
		*pids = NULL;
		return -1;
	}
	closedir(d);
	qsort(*pids, *n, sizeof(**pids), cmp_pid);
	return 0;
}

int np_process_discover_once(const struct np_process_config *cfg, struct np_targets *out,
			     struct np_process_scan_stats *stats, struct np_err *err)
{
	struct np_process_scan_stats local;
	struct np_targets found = NP_TARGETS_INIT;
	struct scan sc = { .cfg = cfg, .proc = cfg->proc_dir ? cfg->proc_dir : "/proc" };
	unsigned long *pids;
	size_t n;
	int rc = -1;

	if (np_process_config_validate(cfg, err) != 0)
		return np_err_wrap(err, "discovery.process");
	sc.stats = stats ? stats : &local;
	memset(sc.stats, 0, sizeof(*sc.stats));
	if (list_pids(sc.proc, &pids, &n, err) != 0)
		return np_err_wrap(err, "discovery.process");
	for (size_t i = 0; i < n; i++) {
		struct np_labels ls = NP_LABELS_INIT;
		int r;

		sc.stats->seen++;
		r = read_process(&sc, pids[i], &ls, err);
		if (r == 0) {
			if (np_targets_push(&found, &ls, err) != 0) {
				np_labels_free(&ls);
				goto out;
			}
			sc.stats->exported++;
			continue;
		}
		np_labels_free(&ls);
		if (r < 0) {
			np_err_wrap(err, "discovery.process: PID %lu", pids[i]);
			goto out;
		}
	}
	/* Debug only: a periodic caller sees the same failures every scan and decides
	 * what is worth a warning (process_component.c warns when they change). */
	if (sc.stats->failed)
		np_log(NP_DEBUG, "discovery.process", "processes skipped", "count", NP_LOG_INT(sc.stats->failed),
		       "example", sc.stats->first_failure, NULL);
	if (cfg->join) {
		rc = np_process_join(&found, cfg->join, out, err);
	} else {
		rc = 0;
		for (size_t i = 0; rc == 0 && i < found.n; i++)
			rc = np_targets_push(out, &found.v[i], err);
	}
out:
	free(pids);
	np_buf_free(&sc.text);
	user_cache_free(&sc.users);
	np_targets_free(&found);
	return rc;
}

/* ---- join ---- */

/* Appends a copy of ls to out. */
static int push_copy(struct np_targets *out, const struct np_labels *ls, struct np_err *err)
{
	struct np_labels copy = NP_LABELS_INIT;

	if (np_labels_copy(&copy, ls, err) != 0)
		return -1;
	if (np_targets_push(out, &copy, err) != 0) {
		np_labels_free(&copy);
		return -1;
	}
	return 0;
}

int np_process_join(const struct np_targets *processes, const struct np_targets *containers, struct np_targets *out,
		    struct np_err *err)
{
	/* Container ID -> id (lib/intern.h); last[id - 1]: index of the last container target
	 * with that ID, the one whose labels a process joins. */
	struct np_intern ids = NP_INTERN_INIT;
	size_t *last = malloc((containers->n ? containers->n : 1) * sizeof(*last));
	uint8_t *first = calloc(containers->n ? containers->n : 1, 1); /* first[i]: container i is the first with its ID */
	int rc = -1;

	if (!last || !first) {
		np_errf(err, "out of memory joining targets");
		goto out;
	}
	for (size_t i = 0; i < containers->n; i++) {
		const char *cid = np_target_join_container_id(&containers->v[i]);
		uint32_t id;
		int added;

		if (!cid) {
			if (push_copy(out, &containers->v[i], err) != 0)
				goto out;
			continue;
		}
		id = np_intern_add(&ids, cid, strlen(cid), &added);
		if (!id) {
			np_errf(err, "out of memory joining targets");
			goto out;
		}
		first[i] = (uint8_t)added;
		last[id - 1] = i;
	}
	for (size_t i = 0; i < processes->n; i++) {
		const struct np_labels *p = &processes->v[i];
		const char *cid = np_target_join_container_id(p);
		uint32_t id = cid ? np_intern_find(&ids, cid, strlen(cid)) : 0;
		struct np_labels merged = NP_LABELS_INIT;
		const struct np_labels *c;

		if (!id) {
			if (push_copy(out, p, err) != 0)
				goto out;
			continue;
		}
		c = &containers->v[last[id - 1]];
		if (np_labels_copy(&merged, p, err) != 0)
			goto out;
		for (size_t j = 0; j < c->n; j++) {
			if (!c->v[j].value[0]) {
				np_labels_del(&merged, c->v[j].name);
				continue;
			}
			if (np_labels_set(&merged, c->v[j].name, c->v[j].value, err) != 0) {
				np_labels_free(&merged);
				goto out;
			}
		}
		if (np_targets_push(out, &merged, err) != 0) {
			np_labels_free(&merged);
			goto out;
		}
	}
	for (size_t i = 0; i < containers->n; i++) {
		if (!first[i])
			continue;
		const char *cid = np_target_join_container_id(&containers->v[i]);
		if (push_copy(out, &containers->v[last[np_intern_find(&ids, cid, strlen(cid)) - 1]], err) != 0)
			goto out;
	}
	rc = 0;
out:
	np_intern_free(&ids);
	free(last);
	free(first);
	return rc;
}
