/* Test harness for agent/profile/ebpf_profiler: runs the pyroscope.ebpf engine on the
 * targets of a JSON file for a while and writes every profile it produces as
 * OUTDIR/N.pb.gz with its labels in OUTDIR/N.labels.json.
 *
 * usage: ebpf_profile TARGETS.json OUTDIR SECONDS [SAMPLE_RATE [COLLECT_INTERVAL]]
 * TARGETS.json may be rewritten while it runs: it is reloaded when its mtime changes. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/profile/ebpf_profiler.h"
#include "lib/duration.h"
#include "lib/targets_json.h"

static const char *outdir;
static int seq;

static int write_profile(void *ud, const struct np_labels *labels, void *gz, size_t len, struct np_err *err)
{
	char path[4096];
	FILE *f;
	json_t *j;

	(void)ud;
	snprintf(path, sizeof(path), "%s/%d.pb.gz", outdir, seq);
	f = fopen(path, "we");
	if (!f || fwrite(gz, 1, len, f) != len) {
		free(gz);
		if (f)
			fclose(f);
		return np_errno(err, "write %s", path);
	}
	fclose(f);
	free(gz);
	snprintf(path, sizeof(path), "%s/%d.labels.json", outdir, seq);
	j = np_labels_to_json(labels);
	if (!j || json_dump_file(j, path, JSON_SORT_KEYS)) {
		json_decref(j);
		return np_errf(err, "write %s", path);
	}
	json_decref(j);
	seq++;
	return 0;
}

static int load_targets(const char *path, struct np_targets *out, struct np_err *err)
{
	json_error_t jerr;
	json_t *j = json_load_file(path, 0, &jerr);
	int rc;

	if (!j)
		return np_errf(err, "%s:%d: %s", path, jerr.line, jerr.text);
	rc = np_targets_from_json(j, out, err);
	json_decref(j);
	return rc;
}

int main(int argc, char **argv)
{
	struct np_ebpf_config cfg;
	struct np_ebpf_profiler *p;
	struct np_profile_sink sink = { .append = write_profile };
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_err err;
	struct stat st;
	time_t mtime = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: %s TARGETS.json OUTDIR SECONDS [SAMPLE_RATE [COLLECT_INTERVAL]]\n", argv[0]);
		return 2;
	}
	outdir = argv[2];
	np_ebpf_config_defaults(&cfg);
	cfg.rescan_interval_ns = 500000000LL;
	if (argc > 4)
		cfg.sample_rate = (unsigned)atoi(argv[4]);
	if (argc > 5 && np_duration_parse(argv[5], &cfg.collect_interval_ns, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 2;
	}
	if (load_targets(argv[1], &ts, &err) || np_ebpf_profiler_start(&cfg, &sink, 1, &p, &err) ||
	    np_ebpf_profiler_set_targets(p, &ts, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	if (stat(argv[1], &st) == 0)
		mtime = st.st_mtime;
	for (int i = 0; i < atoi(argv[3]) * 10; i++) {
		usleep(100000);
		if (stat(argv[1], &st) == 0 && st.st_mtime != mtime) {
			mtime = st.st_mtime;
			np_targets_free(&ts);
			if (load_targets(argv[1], &ts, &err) || np_ebpf_profiler_set_targets(p, &ts, &err))
				fprintf(stderr, "reload: %s\n", err.msg);
		}
	}
	struct np_ebpf_stats stats;
	np_ebpf_profiler_get_stats(p, &stats);
	np_ebpf_profiler_stop(p); /* flushes the last interval: `written` counts it, `profiles` does not */
	printf("{\"written\":%d,\"profiles\":%llu,\"samples\":%llu,\"unattributed\":%llu,\"allowed_cgroups\":%zu,\"allowed_pids\":%zu,"
	       "\"active_targets\":%zu}\n",
	       seq, (unsigned long long)stats.profiles, (unsigned long long)stats.samples,
	       (unsigned long long)stats.unattributed, stats.allowed_cgroups, stats.allowed_pids, stats.active_targets);
	np_targets_free(&ts);
	return 0;
}
