/* The Ruby side of the profiler: rt_ruby_ops (agent/runtime/runtime.h). Finds CRuby in processes
 * (detect.h), tells the BPF walker (bpf/ruby.h) where each process's VM lies and how its
 * structures are laid out (the ruby_procs map), and names and merges the Ruby frames of
 * samples (namer.h, merge.h). State owned by the collector; its thread only. */
#ifndef NP_RUBY_TRACKER_H
#define NP_RUBY_TRACKER_H

#include "agent/runtime/runtime.h"

#endif
