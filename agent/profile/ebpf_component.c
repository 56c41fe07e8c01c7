/* pyroscope.ebpf as a component: the arguments configure the engine
 * (agent/profile/ebpf_profiler.h); forward_to's receivers (and the agent's local
 * store, when `nodeprof run` serves the UI) are its sinks. New targets or
 * receivers are handed to the running engine; a change of sample_rate,
 * collect_interval, demangle, kernel_frames, targets_only, verbose_mode or
 * container_id_cache_size restarts it (most of those shape the BPF maps and the
 * caches; a restart flushes the current interval first, so nothing is lost). */
#include <stdlib.h>
#include <string.h>

#include "agent/config/component.h"
#include "agent/config/types/types.h"
#include "agent/profile/ebpf_component.h"
#include "agent/profile/ebpf_profiler.h"

#define MAX_RECEIVERS 64

static struct np_profile_sink local_sink; /* set once by `nodeprof run`, before any component starts */

void np_ebpf_component_set_local_sink(const struct np_profile_sink *sink)
{
	local_sink = sink ? *sink : (struct np_profile_sink){ 0 };
}

struct ebpf_component {
	struct cfg_component *c;
	struct np_ebpf_profiler *engine;
	struct np_ebpf_config cfg; /* as started; name points into id */
	char id[256];
};

static int read_config(const struct cfg_args *a, struct np_ebpf_config *cfg, const char *id, struct np_err *err)
{
	np_ebpf_config_defaults(cfg);
	cfg->name = id;
	cfg->sample_rate = (unsigned)cfg_args_int(a, "sample_rate");
	cfg->collect_interval_ns = cfg_args_duration(a, "collect_interval");
	cfg->kernel_frames = cfg_args_bool(a, "kernel_frames");
	cfg->targets_only = cfg_args_bool(a, "targets_only");
	cfg->verbose = cfg_args_bool(a, "verbose_mode");
	cfg->container_id_cache_size = (size_t)cfg_args_uint(a, "container_id_cache_size");
	return sym_demangle_parse(cfg_args_str(a, "demangle"), &cfg->demangle, err);
}

/* The settings that need a new engine when they change. */
static int same_engine(const struct np_ebpf_config *a, const struct np_ebpf_config *b)
{
	return a->sample_rate == b->sample_rate && a->collect_interval_ns == b->collect_interval_ns &&
	       a->demangle == b->demangle && a->kernel_frames == b->kernel_frames &&
	       a->targets_only == b->targets_only && a->container_id_cache_size == b->container_id_cache_size &&
	       a->verbose == b->verbose;
}

static size_t read_sinks(const struct cfg_args *a, struct np_profile_sink *out)
{
	void *caps[MAX_RECEIVERS];
	size_t n = cfg_args_capsules(a, "forward_to", caps, MAX_RECEIVERS), k = 0;

	for (size_t i = 0; i < n; i++)
		if (caps[i])
			out[k++] = *(const struct np_profile_sink *)caps[i];
	if (local_sink.append)
		out[k++] = local_sink;
	return k;
}

static int start_engine(struct ebpf_component *ec, const struct cfg_args *args, struct np_err *err)
{
	struct np_profile_sink sinks[MAX_RECEIVERS + 1];
	size_t nsinks = read_sinks(args, sinks);
	const struct np_targets *targets = cfg_args_targets(args, "targets");

	if (np_ebpf_profiler_start(&ec->cfg, sinks, nsinks, &ec->engine, err))
		return -1;
	if (targets && np_ebpf_profiler_set_targets(ec->engine, targets, err)) {
		np_ebpf_profiler_stop(ec->engine);
		ec->engine = NULL;
		return -1;
	}
	return 0;
}

static int start(struct cfg_component *c, const struct cfg_args *args, void **state, struct np_err *err)
{
	struct ebpf_component *ec = calloc(1, sizeof(*ec));

	if (!ec)
		return np_errf(err, "out of memory");
	ec->c = c;
	snprintf(ec->id, sizeof(ec->id), "%s", cfg_component_id(c));
	if (read_config(args, &ec->cfg, ec->id, err) || start_engine(ec, args, err)) {
		free(ec);
		return -1;
	}
	*state = ec;
	return 0;
}

static int update(void *state, const struct cfg_args *args, struct np_err *err)
{
	struct ebpf_component *ec = state;
	struct np_ebpf_config cfg;
	struct np_profile_sink sinks[MAX_RECEIVERS + 1];
	const struct np_targets *targets;
	size_t nsinks;

	if (read_config(args, &cfg, ec->id, err))
		return -1;
	if (!same_engine(&cfg, &ec->cfg)) {
		struct np_ebpf_profiler *old = ec->engine;
		struct np_ebpf_config old_cfg = ec->cfg;
		ec->cfg = cfg;
		if (start_engine(ec, args, err)) {
			/* Keep profiling with the previous settings. */
			ec->engine = old;
			ec->cfg = old_cfg;
			return -1;
		}
		np_ebpf_profiler_stop(old); /* flushes the old engine's last interval */
		return 0;
	}
	nsinks = read_sinks(args, sinks);
	targets = cfg_args_targets(args, "targets");
	if (np_ebpf_profiler_set_sinks(ec->engine, sinks, nsinks, err))
		return -1;
	if (targets && np_ebpf_profiler_set_targets(ec->engine, targets, err))
		return -1;
	return 0;
}

static void stop(void *state)
{
	struct ebpf_component *ec = state;

	np_ebpf_profiler_stop(ec->engine);
	free(ec);
}

const struct cfg_component_ops cfg_ops_pyroscope_ebpf = { start, update, stop };
