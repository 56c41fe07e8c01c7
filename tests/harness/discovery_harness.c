/* Test harness for agent/discovery, driven by tests/integration/test_containers*.py
 * until the agent's own commands expose these components:
 *
 *   discovery_harness docker --host H [--port N] [--host-networking-host S]
 *       [--no-match-first-network] [--filter NAME=V1,V2]... [--refresh-interval D]
 *       [--bearer-token-file F] [--max-response-bytes N]
 *   discovery_harness process [--join FILE] [--cgroup-path] [--no-exe] [--no-cwd]
 *       [--no-commandline] [--no-uid] [--no-username] [--no-container-id]
 *   discovery_harness match --targets FILE [--cache-size N] PID...
 *
 * docker and process print the targets as a JSON array; match prints one JSON object
 * per PID: {"pid", "container_id", "origin", "cgroup_path", "cgroup_id", "target"}
 * where target is the profile label set of the target the PID is attributed to, or
 * null. Errors go to stderr with exit status 1. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/attribution/cgroup2.h"
#include "agent/discovery/docker.h"
#include "agent/attribution/pid_cache.h"
#include "agent/discovery/process.h"
#include "agent/attribution/target.h"
#include "lib/duration.h"
#include "lib/targets_json.h"

static int die(const char *msg)
{
	fprintf(stderr, "discovery_harness: %s\n", msg);
	return 1;
}

static int print_targets(const struct np_targets *ts)
{
	char *s = np_targets_to_json_string(ts, 1);

	if (!s)
		return die("out of memory");
	printf("%s\n", s);
	free(s);
	return 0;
}

static int load_targets(const char *path, struct np_targets *out, struct np_err *err)
{
	json_error_t jerr;
	json_t *j = json_load_file(path, 0, &jerr);
	int rc;

	if (!j)
		return np_errf(err, "%s: %s", path, jerr.text);
	rc = np_targets_from_json(j, out, err);
	json_decref(j);
	return rc;
}

static int cmd_docker(int argc, char **argv)
{
	struct np_docker_config cfg;
	struct np_http_client_config http; /* owned */
	struct np_docker_filter filters[16];
	char *filter_values[16][16];
	struct np_targets out = NP_TARGETS_INIT;
	struct np_err err;
	int rc;

	np_docker_config_init(&cfg);
	np_http_client_config_init(&http);
	cfg.http = &http;
	cfg.filters = filters;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--no-match-first-network") == 0) {
			cfg.match_first_network = 0;
			continue;
		}
		if (!v)
			return die("option needs a value");
		i++;
		if (strcmp(a, "--host") == 0) {
			cfg.host = v;
		} else if (strcmp(a, "--port") == 0) {
			cfg.port = atoi(v);
		} else if (strcmp(a, "--host-networking-host") == 0) {
			cfg.host_networking_host = v;
		} else if (strcmp(a, "--bearer-token-file") == 0) {
			free(http.bearer_token_file);
			if (!(http.bearer_token_file = strdup(v)))
				return die("out of memory");
		} else if (strcmp(a, "--max-response-bytes") == 0) {
			cfg.max_response_bytes = strtoul(v, NULL, 10);
		} else if (strcmp(a, "--refresh-interval") == 0) {
			if (np_duration_parse(v, &cfg.refresh_interval_ns, &err) != 0)
				return die(err.msg);
		} else if (strcmp(a, "--filter") == 0) {
			struct np_docker_filter *f = &filters[cfg.n_filters];
			char *copy = strdup(v), *eq = copy ? strchr(copy, '=') : NULL, *save = NULL;
			if (!eq || cfg.n_filters == 16)
				return die("--filter NAME=V1,V2");
			*eq = '\0';
			f->name = copy;
			f->n_values = 0;
			for (char *t = strtok_r(eq + 1, ",", &save); t && f->n_values < 16; t = strtok_r(NULL, ",", &save))
				filter_values[cfg.n_filters][f->n_values++] = t;
			f->values = (const char *const *)filter_values[cfg.n_filters];
			cfg.n_filters++;
		} else {
			return die("unknown docker option");
		}
	}
	rc = np_docker_discover_once(&cfg, &out, &err);
	np_http_client_config_free(&http);
	if (rc != 0)
		return die(err.msg);
	rc = print_targets(&out);
	np_targets_free(&out);
	return rc;
}

static int cmd_process(int argc, char **argv)
{
	struct np_process_config cfg;
	struct np_targets join = NP_TARGETS_INIT, out = NP_TARGETS_INIT;
	struct np_process_scan_stats st;
	struct np_err err;
	int rc;

	np_process_config_init(&cfg);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--join") == 0 && i + 1 < argc) {
			if (load_targets(argv[++i], &join, &err) != 0)
				return die(err.msg);
			cfg.join = &join;
		} else if (strcmp(a, "--cgroup-path") == 0) {
			cfg.cgroup_path = 1;
		} else if (strcmp(a, "--no-exe") == 0) {
			cfg.exe = 0;
		} else if (strcmp(a, "--no-cwd") == 0) {
			cfg.cwd = 0;
		} else if (strcmp(a, "--no-commandline") == 0) {
			cfg.commandline = 0;
		} else if (strcmp(a, "--no-uid") == 0) {
			cfg.uid = 0;
		} else if (strcmp(a, "--no-username") == 0) {
			cfg.username = 0;
		} else if (strcmp(a, "--no-container-id") == 0) {
			cfg.container_id = 0;
		} else {
			return die("unknown process option");
		}
	}
	rc = np_process_discover_once(&cfg, &out, &st, &err);
	np_targets_free(&join);
	if (rc != 0)
		return die(err.msg);
	fprintf(stderr, "seen=%zu exported=%zu vanished=%zu failed=%zu\n", st.seen, st.exported, st.vanished, st.failed);
	rc = print_targets(&out);
	np_targets_free(&out);
	return rc;
}

static int cmd_match(int argc, char **argv)
{
	static const char *const origins[] = { "none", "unified", "v1" };
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_target_set *set = NULL;
	struct np_pid_cache *cache = NULL;
	struct np_cgroup2_mount mount, *mp = NULL;
	size_t cache_size = NP_PID_CACHE_DEFAULT_SIZE;
	const char *targets_path = NULL;
	struct np_err err;
	int i, rc = 1;

	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strcmp(argv[i], "--targets") == 0 && i + 1 < argc)
			targets_path = argv[++i];
		else if (strcmp(argv[i], "--cache-size") == 0 && i + 1 < argc)
			cache_size = strtoul(argv[++i], NULL, 10);
		else
			return die("match --targets FILE [--cache-size N] PID...");
	}
	if (!targets_path)
		return die("match needs --targets FILE");
	if (load_targets(targets_path, &ts, &err) != 0 || np_target_set_build(&ts, &set, &err) != 0) {
		np_targets_free(&ts);
		return die(err.msg);
	}
	if (np_cgroup2_find_mount(NULL, &mount, &err) == 0)
		mp = &mount;
	cache = np_pid_cache_new(cache_size, NULL, mp, &err);
	if (!cache) {
		die(err.msg);
		goto out;
	}
	for (; i < argc; i++) {
		uint32_t pid = (uint32_t)strtoul(argv[i], NULL, 10);
		char cid[NP_CONTAINER_ID_LEN + 1];
		enum np_cid_origin origin;
		struct np_buf path = NP_BUF_INIT;
		uint64_t cgid = 0;
		const struct np_target *t;
		json_t *row;
		char *s;

		if (np_pid_cache_container_id(cache, pid, cid, &origin, &err) != 0) {
			die(err.msg);
			goto out;
		}
		if (np_pid_cache_cgroup_path(cache, pid, &path, &err) != 0) {
			die(err.msg);
			goto out;
		}
		if (np_pid_cache_cgroup_id(cache, pid, &cgid, &err) != 0)
			cgid = 0;
		t = np_target_set_find(set, pid, cid);
		row = json_pack("{s:I, s:s, s:s, s:s, s:I, s:o}", "pid", (json_int_t)pid, "container_id", cid, "origin",
				origins[origin], "cgroup_path", path.p ? path.p : "", "cgroup_id", (json_int_t)cgid,
				"target", t ? np_labels_to_json(&t->labels) : json_null());
		np_buf_free(&path);
		s = row ? json_dumps(row, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(row);
		if (!s) {
			die("out of memory");
			goto out;
		}
		printf("%s\n", s);
		free(s);
	}
	rc = 0;
out:
	np_pid_cache_free(cache);
	np_target_set_free(set);
	np_targets_free(&ts);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return die("usage: discovery_harness docker|process|match ...");
	if (strcmp(argv[1], "docker") == 0)
		return cmd_docker(argc - 1, argv + 1);
	if (strcmp(argv[1], "process") == 0)
		return cmd_process(argc - 1, argv + 1);
	if (strcmp(argv[1], "match") == 0)
		return cmd_match(argc - 1, argv + 1);
	return die("unknown command");
}
