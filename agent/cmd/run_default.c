/* The embedded default configuration of `nodeprof run` without --config: profile
 * every process on this host for the local UI. It is an ordinary configuration, so
 * `nodeprof run --print-default-config > my.alloy` is a starting point for one's own. */
#include "agent/cmd/run_default.h"

const char np_default_config[] =
	"// nodeprof's embedded default: profile every process on this host and show it in the\n"
	"// local UI (nothing is sent anywhere). Each process is a target named after its\n"
	"// executable; processes started since the last scan are profiled as ebpf/unspecified\n"
	"// until the next one.\n"
	"discovery.process \"host\" {\n"
	"  refresh_interval = \"2s\"\n"
	"}\n"
	"\n"
	"discovery.relabel \"host\" {\n"
	"  targets = discovery.process.host.targets\n"
	"  rule {\n"
	"    source_labels = [\"__meta_process_exe\"]\n"
	"    regex = \".*/([^/]+)\"\n"
	"    target_label = \"service_name\"\n"
	"  }\n"
	"  rule {\n"
	"    source_labels = [\"__process_pid__\"]\n"
	"    target_label = \"pid\"\n"
	"  }\n"
	"}\n"
	"\n"
	"pyroscope.ebpf \"host\" {\n"
	"  targets          = discovery.relabel.host.output\n"
	"  targets_only     = false\n"
	"  sample_rate      = 49\n"
	"  collect_interval = \"5s\"\n"
	"  forward_to       = []\n"
	"}\n";
