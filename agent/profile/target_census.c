/* Processes per target and why a target has none: see target_census.h. */
#include "agent/profile/target_census.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/intern.h"
#include "lib/json_writer.h"
#include "lib/log.h"

/* What is kept about a target key from one census to the next. */
struct key_state {
	int ever;	     /* processes were seen once */
	int empty_intervals; /* collect intervals in a row without a process */
};

struct example {
	uint32_t pid;
	char id[NP_CONTAINER_ID_LEN + 1];
	char *cgroup; /* owned */
};

struct np_census {
	char component[128];
	struct np_intern keys; /* target keys of the last census */
	struct key_state *state;
	struct np_intern mismatched; /* u32 PIDs refused at the last census (logged once each) */
	uint64_t mismatches;
	size_t without;
	int warned; /* the no-process warning was logged, and some target still qualifies */
	char *rows; /* owned JSON text of the last census */
};

struct np_census *np_census_new(const char *component, struct np_err *err)
{
	struct np_census *c = calloc(1, sizeof(*c));

	if (!c) {
		np_errf(err, "out of memory");
		return NULL;
	}
	snprintf(c->component, sizeof(c->component), "%s", component);
	return c;
}

void np_census_free(struct np_census *c)
{
	if (!c)
		return;
	np_intern_free(&c->keys);
	np_intern_free(&c->mismatched);
	free(c->state);
	free(c->rows);
	free(c);
}

/* A target's key as text: its container ID, or "pid:N". */
static void key_of(const struct np_target *t, char *buf, size_t cap)
{
	if (t->pid)
		snprintf(buf, cap, "pid:%u", t->pid);
	else
		snprintf(buf, cap, "%s", t->container_id ? t->container_id : "");
}

/* One census's counts, per target index. */
struct tally {
	size_t n;
	uint32_t *processes, *refused;
	char (*refused_uid)[NP_POD_UID_LEN + 1]; /* the pod UID a refused process showed */
	struct np_intern unmatched_ids;		 /* container IDs of this node no target has */
	struct example examples[NP_CENSUS_EXAMPLES];
	size_t nexamples;
	struct np_intern refused_pids;
};

static void tally_free(struct tally *t)
{
	free(t->processes);
	free(t->refused);
	free(t->refused_uid);
	np_intern_free(&t->unmatched_ids);
	np_intern_free(&t->refused_pids);
	for (size_t i = 0; i < t->nexamples; i++)
		free(t->examples[i].cgroup);
}

static int count_process(struct np_census *c, struct tally *ty, const struct np_target_set *targets,
			 struct np_pid_cache *pids, uint32_t pid, struct np_err *err)
{
	char id[NP_CONTAINER_ID_LEN + 1], uid[NP_POD_UID_LEN + 1];
	const struct np_target *t;
	struct np_err gone;
	size_t i;
	int added;

	/* A process that exits meanwhile is simply not counted. */
	if (np_pid_cache_container_id(pids, pid, id, NULL, &gone) || !id[0] || np_pid_cache_pod_uid(pids, pid, uid, &gone))
		return 0;
	t = np_target_set_find_container(targets, id);
	if (!t) {
		if (!np_intern_add(&ty->unmatched_ids, id, strlen(id), &added))
			return np_errf(err, "out of memory counting processes");
		if (added && ty->nexamples < NP_CENSUS_EXAMPLES) {
			struct example *e = &ty->examples[ty->nexamples];
			struct np_buf path = NP_BUF_INIT;
			if (np_pid_cache_cgroup_path(pids, pid, &path, &gone) == 0 && !path.failed) {
				e->pid = pid;
				memcpy(e->id, id, sizeof(id));
				e->cgroup = np_buf_steal(&path, NULL);
				if (!e->cgroup)
					return np_errf(err, "out of memory counting processes");
				ty->nexamples++;
			}
			np_buf_free(&path);
		}
		return 0;
	}
	i = (size_t)(t - np_target_set_at(targets, 0));
	if (np_target_pod_ok(t, uid)) {
		ty->processes[i]++;
		return 0;
	}
	ty->refused[i]++;
	memcpy(ty->refused_uid[i], uid, sizeof(uid));
	if (!np_intern_add(&ty->refused_pids, &pid, sizeof(pid), NULL))
		return np_errf(err, "out of memory counting processes");
	if (!np_intern_find(&c->mismatched, &pid, sizeof(pid))) {
		c->mismatches++;
		np_log(NP_WARN, "pyroscope.ebpf",
		       "a process has a target's container ID but its cgroup path names another pod: not given the "
		       "target's labels (logged once per process; counted in "
		       "nodeprof_target_mismatches_total{reason=\"pod_uid\"})",
		       "component_id", c->component, "pid", NP_LOG_INT(pid), "container_id", id, "cgroup_pod_uid", uid,
		       "target_pod_uid", t->pod_uid, "service_name", t->service_name, NULL);
	}
	return 0;
}

static int scan(struct np_census *c, struct tally *ty, const struct np_target_set *targets,
		struct np_pid_cache *pids, const char *proc_dir, struct np_err *err)
{
	DIR *d = opendir(proc_dir ? proc_dir : "/proc");
	struct dirent *e;
	int rc = 0;

	if (!d)
		return np_errno(err, "open %s", proc_dir ? proc_dir : "/proc");
	while (rc == 0 && (e = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(e->d_name, &end, 10);
		if (*end || pid == 0 || pid > UINT32_MAX)
			continue;
		rc = count_process(c, ty, targets, pids, (uint32_t)pid, err);
	}
	closedir(d);
	return rc;
}

static int pid_alive(const char *proc_dir, uint32_t pid)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%u", proc_dir ? proc_dir : "/proc", pid);
	return stat(path, &st) == 0;
}

/* Why target i has no process, as a reason code and a sentence. */
static const char *why_none(const struct tally *ty, size_t i, const struct key_state *ks, const struct np_target *t,
			    struct np_buf *detail)
{
	if (ty->refused[i]) {
		np_buf_printf(detail,
			      "%u process(es) have this container ID but their cgroup path names pod %s, not the "
			      "target's pod %s: refused the target's labels",
			      ty->refused[i], ty->refused_uid[i], t->pod_uid ? t->pod_uid : "");
		return "pod_uid_mismatch";
	}
	if (ks->ever) {
		np_buf_puts(detail, t->pid ? "the process matched earlier and is gone"
					   : "processes matched earlier and none is left (the container exited, or "
					     "restarted under a new ID that discovery has not shown yet)");
		return "process_gone";
	}
	if (t->pid) {
		np_buf_puts(detail, "no process with this PID");
		return "no_process";
	}
	if (ty->unmatched_ids.n) {
		np_buf_printf(detail,
			      "no process with this container ID on this node, while processes run in %zu container "
			      "ID(s) that no target has (examples below): compare their cgroup paths with "
			      "`nodeprof tools container-id --pid PID --explain`",
			      (size_t)ty->unmatched_ids.n);
		return "unmatched_container_ids";
	}
	np_buf_puts(detail, "no process with this container ID on this node (not running here, or not started yet)");
	return "no_process";
}

static void write_row(struct np_json *j, const struct np_census *c, const struct np_target *t, const struct tally *ty,
		      size_t i, const struct key_state *ks)
{
	np_json_obj_begin(j);
	np_json_kv_str(j, "component", c->component);
	np_json_key(j, "labels");
	np_json_obj_begin(j);
	for (size_t k = 0; k < t->labels.n; k++)
		np_json_kv_str(j, t->labels.v[k].name, t->labels.v[k].value);
	np_json_obj_end(j);
	np_json_kv_u64(j, "processes", ty->processes[i]);
	if (!ty->processes[i]) {
		struct np_buf detail = NP_BUF_INIT;
		const char *reason = why_none(ty, i, ks, t, &detail);
		np_json_kv_str(j, "reason", reason);
		np_json_kv_str(j, "detail", detail.p ? detail.p : "");
		np_buf_free(&detail);
		if (strcmp(reason, "unmatched_container_ids") == 0) {
			np_json_key(j, "unmatched_processes");
			np_json_arr_begin(j);
			for (size_t k = 0; k < ty->nexamples; k++) {
				np_json_obj_begin(j);
				np_json_kv_u64(j, "pid", ty->examples[k].pid);
				np_json_kv_str(j, "container_id", ty->examples[k].id);
				np_json_kv_str(j, "cgroup", ty->examples[k].cgroup);
				np_json_obj_end(j);
			}
			np_json_arr_end(j);
		}
	}
	np_json_obj_end(j);
}

/* Whether a target is one the warning is about: a pod target without a process for
 * NP_CENSUS_WARN_INTERVALS intervals while processes run in containers no target has. */
static int stuck(const struct np_target *t, const struct tally *ty, const struct key_state *ks)
{
	return t->pod_uid && ks->empty_intervals >= NP_CENSUS_WARN_INTERVALS && ty->unmatched_ids.n && ty->nexamples;
}

/* One warning for all such targets, naming the first; told again only after none was left. */
static void warn_stuck(struct np_census *c, const struct np_target *t, size_t nstuck, const struct tally *ty)
{
	const struct example *e = &ty->examples[0];

	np_log(NP_WARN, "pyroscope.ebpf",
	       "pod targets have matched no process for 3 intervals while processes run in containers no target "
	       "has; see /debug/targets and `nodeprof tools container-id --pid PID --explain` (logged once; "
	       "nodeprof_targets_without_processes)",
	       "component_id", c->component, "targets", NP_LOG_INT(nstuck), "service_name", t->service_name,
	       "container_id", t->container_id, "pod_uid", t->pod_uid, "unmatched_container_ids",
	       NP_LOG_INT(ty->unmatched_ids.n), "example_pid", NP_LOG_INT(e->pid), "example_container_id", e->id,
	       "example_cgroup", e->cgroup, NULL);
}

int np_census_run(struct np_census *c, const struct np_target_set *targets, struct np_pid_cache *pids,
		  const char *proc_dir, int interval, struct np_err *err)
{
	size_t n = targets ? np_target_set_count(targets) : 0;
	struct tally ty = { .n = n };
	struct np_intern keys = { 0 };
	struct key_state *state = NULL;
	struct np_buf rows = NP_BUF_INIT;
	struct np_json j;
	size_t without = 0, nstuck = 0;
	const struct np_target *first_stuck = NULL;
	int rc = -1;

	ty.processes = calloc(n + 1, sizeof(*ty.processes));
	ty.refused = calloc(n + 1, sizeof(*ty.refused));
	ty.refused_uid = calloc(n + 1, sizeof(*ty.refused_uid));
	state = calloc(n + 1, sizeof(*state));
	if (!ty.processes || !ty.refused || !ty.refused_uid || !state) {
		np_errf(err, "out of memory counting processes");
		goto out;
	}
	if (n && np_target_set_count_containers(targets) && scan(c, &ty, targets, pids, proc_dir, err))
		goto out;
	np_json_init(&j, &rows);
	for (size_t i = 0; i < n; i++) {
		const struct np_target *t = np_target_set_at(targets, i);
		char key[80];
		uint32_t old, id;
		int added;
		key_of(t, key, sizeof(key));
		if (t->pid)
			ty.processes[i] = (uint32_t)pid_alive(proc_dir, t->pid);
		id = np_intern_add(&keys, key, strlen(key), &added);
		if (!id) {
			np_errf(err, "out of memory counting processes");
			goto out;
		}
		if (added && (old = np_intern_find(&c->keys, key, strlen(key))))
			state[id - 1] = c->state[old - 1];
		if (ty.processes[i]) {
			state[id - 1] = (struct key_state){ .ever = 1 };
		} else {
			without++;
			state[id - 1].empty_intervals += interval;
			if (stuck(t, &ty, &state[id - 1]) && !nstuck++)
				first_stuck = t;
		}
		write_row(&j, c, t, &ty, i, &state[id - 1]);
	}
	if (rows.failed) {
		np_errf(err, "out of memory listing targets");
		goto out;
	}
	if (nstuck && !c->warned)
		warn_stuck(c, first_stuck, nstuck, &ty);
	c->warned = nstuck != 0;
	np_intern_free(&c->keys);
	free(c->state);
	c->keys = keys;
	c->state = state;
	memset(&keys, 0, sizeof(keys));
	state = NULL;
	/* Only the PIDs refused now stay logged: a new process on a reused PID is told again. */
	np_intern_free(&c->mismatched);
	c->mismatched = ty.refused_pids;
	memset(&ty.refused_pids, 0, sizeof(ty.refused_pids));
	c->without = without;
	free(c->rows);
	c->rows = np_buf_steal(&rows, NULL);
	rc = 0;
out:
	np_buf_free(&rows);
	np_intern_free(&keys);
	free(state);
	tally_free(&ty);
	return rc;
}

int np_census_rows(const struct np_census *c, struct np_buf *out, struct np_err *err)
{
	if (c->rows)
		np_buf_puts(out, c->rows);
	return out->failed ? np_errf(err, "out of memory") : 0;
}

size_t np_census_without_processes(const struct np_census *c)
{
	return c->without;
}

uint64_t np_census_mismatches(const struct np_census *c)
{
	return c->mismatches;
}
