/* Unit tests for component validation (what `nodeprof check` reports): the example
 * configurations (docs/examples), every component type's arguments, defaults and
 * cross-argument rules, references between components, and the decoded arguments adapters
 * read (their args structs, and the by-name accessors of validate hooks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/config/component.h"
#include "agent/discovery/docker_component.h"
#include "agent/discovery/process_component.h"
#include "agent/profile/ebpf_component.h"
#include "agent/write/write_component.h"
#include "lib/duration.h"
#include "tests/unit/config_test.h"

#define RUN(c) RUN_CHECK_CASES(c)

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[65536];
	size_t n;

	if (!f)
		fail_msg("cannot open %s (tests run from the repository root)", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* Every file of docs/examples passes check (warnings allowed). */
static void examples_pass(void **state)
{
	static const struct {
		const char *file, *summary, *diags;
	} ex[] = {
		{ "docs/examples/kubernetes.alloy",
		  "4 components: discovery.kubernetes.all_pods, discovery.relabel.local_pods, pyroscope.ebpf.local_pods, "
		  "pyroscope.write.endpoint",
		  "" },
		{ "docs/examples/docker.alloy",
		  "4 components: discovery.docker.linux, discovery.relabel.local_containers, pyroscope.write.staging, "
		  "pyroscope.ebpf.default",
		  "" },
		{ "docs/examples/grafana-agent-flow.alloy",
		  "3 components: discovery.kubernetes.local_pods, pyroscope.ebpf.instance, pyroscope.write.endpoint",
		  "7:32: warning: env is deprecated; use sys.env instead" },
	};
	for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
		struct cfg_diags d;
		cfg_diags_init(&d, "t");
		struct cfg_graph *g = cfg_graph_load_file(ex[i].file, &d);
		char *text = diags_text(&d);
		if (!g)
			fail_msg("%s:\n%s", ex[i].file, text);
		assert_string_equal(text, ex[i].diags);
		struct np_buf b = NP_BUF_INIT;
		cfg_graph_summary(g, &b);
		assert_string_equal(b.p, ex[i].summary);
		np_buf_free(&b);
		free(text);
		cfg_graph_free(g);
		cfg_diags_free(&d);
	}
}

/* The Kubernetes example's edges and order: discovery, then relabel, then the writer
 * before the profiler that forwards to it. */
static void example_graph_shape(void **state)
{
	struct cfg_diags d;
	cfg_diags_init(&d, "t");
	const char *src = read_file("docs/examples/kubernetes.alloy");
	struct cfg_graph *g = cfg_graph_load_source("t", src, strlen(src), &d);
	assert_non_null(g);
	long k8s = cfg_graph_find(g, "discovery.kubernetes.all_pods"), rl = cfg_graph_find(g, "discovery.relabel.local_pods");
	long ebpf = cfg_graph_find(g, "pyroscope.ebpf.local_pods"), w = cfg_graph_find(g, "pyroscope.write.endpoint");
	assert_true(k8s >= 0 && rl >= 0 && ebpf >= 0 && w >= 0);
	assert_int_equal(g->nodes[rl].n_deps, 1);
	assert_int_equal(g->nodes[rl].deps[0].to, k8s);
	assert_int_equal(g->nodes[ebpf].n_deps, 2);
	size_t pos[8];
	for (size_t i = 0; i < g->n; i++)
		pos[g->order[i]] = i;
	assert_true(pos[k8s] < pos[rl] && pos[rl] < pos[ebpf] && pos[w] < pos[ebpf]);

	/* The check-time arguments: defaults, and the references as unknown values. */
	const struct cfg_args *a = g->nodes[ebpf].args;
	const struct cfg_ebpf_args *ea = a->fields;
	assert_int_equal(ea->sample_rate, 19);
	assert_int_equal(ea->collect_interval, 15 * NP_NSEC_PER_SEC);
	assert_string_equal(ea->demangle, "none");
	assert_string_equal(cfg_args_str(a, "comm"), "none");
	assert_true(ea->kernel_frames);
	assert_false(cfg_args_bool(a, "pid_label"));
	assert_true(ea->targets_only);
	assert_true(cfg_args_is_unknown(a, "targets"));
	assert_int_equal(ea->targets->n, 0);
	const struct cfg_write_args *wa = g->nodes[w].args->fields;
	assert_int_equal(wa->endpoint.n, 1);
	const struct cfg_write_endpoint_args *epa = wa->endpoint.v[0];
	const struct cfg_args *ep = cfg_args_block(g->nodes[w].args, "endpoint", 0);
	assert_string_equal(epa->url, "http://pyroscope:4040");
	assert_int_equal(epa->remote_timeout, 10 * NP_NSEC_PER_SEC);
	assert_int_equal(epa->min_backoff_period, 500 * 1000 * 1000);
	assert_int_equal(epa->max_backoff_period, 300 * NP_NSEC_PER_SEC);
	assert_int_equal(epa->max_backoff_retries, 10);
	assert_true(epa->retry_on_http_429);
	assert_true(cfg_args_bool(ep, "enable_http2"));
	assert_true(cfg_args_bool(ep, "follow_redirects"));
	assert_false(cfg_args_has(ep, "bearer_token"));
	assert_null(cfg_args_str(ep, "bearer_token"));
	assert_true(epa->http.enable_http2);
	assert_true(epa->http.follow_redirects);
	assert_null(epa->http.bearer_token);
	assert_null(epa->http.basic_auth);
	cfg_graph_free(g);
	cfg_diags_free(&d);
}

static void check_default(const char *where, const struct cfg_schema *s)
{
	for (size_t i = 0; s->attrs && s->attrs[i].name; i++) {
		const struct cfg_attr *at = &s->attrs[i];
		/* Their messages say why: a note is part of them. */
		if ((at->flags & (CFG_UNSUPPORTED | CFG_WARN_AT_DEFAULT)) && !at->note)
			fail_msg("%s: %s is unsupported or warned about, but has no note saying why", where, at->name);
		if (!at->def)
			continue;
		struct cfg_arena arena = { 0 };
		struct cfg_diags d;
		struct cfg_eval ev = { 0 };
		cfg_diags_init(&d, "default");
		ev.d = &d;
		struct cfg_expr *e = cfg_parse_expr(&arena, at->def, strlen(at->def), &d);
		struct cfg_value *v = e ? cfg_eval(&ev, e) : NULL;
		struct cfg_value *c = v ? cfg_convert(at->type, v, CFG_NOPOS, at->name, &d) : NULL;
		if (!c)
			fail_msg("%s: default of %s (%s) is invalid: %s", where, at->name, at->def, d.n ? d.v[0].msg : "?");
		if (at->one_of && c->kind == CFG_V_STRING) {
			int found = 0;
			for (size_t k = 0; at->one_of[k]; k++)
				found |= strcmp(at->one_of[k], c->u.str.s) == 0;
			if (!found)
				fail_msg("%s: default of %s is not one of its allowed values", where, at->name);
		}
		cfg_unref(v);
		cfg_unref(c);
		cfg_arena_free(&arena);
		cfg_diags_free(&d);
	}
	for (size_t i = 0; s->blocks && s->blocks[i].name; i++)
		check_default(s->blocks[i].name, s->blocks[i].schema);
}

/* Every default of every registered schema parses and has its declared type. */
static void schema_defaults_are_valid(void **state)
{
	const struct cfg_component_type *types[32];
	size_t n = cfg_registry_list(types, 32);

	assert_true(n >= 7);
	for (size_t i = 0; i < n; i++)
		check_default(types[i]->name, types[i]->args);
}

/* An empty component body gets every default the reference documents. */
static void documented_defaults(void **state)
{
	struct cfg_diags d;
	cfg_diags_init(&d, "t");
	const char *src = "discovery.docker \"d\" {\n  host = \"unix:///var/run/docker.sock\"\n}\n"
			  "discovery.process \"p\" { }\n"
			  "pyroscope.ebpf \"e\" {\n  forward_to = []\n}\n";
	struct cfg_graph *g = cfg_graph_load_source("t", src, strlen(src), &d);
	assert_non_null(g);
	const struct cfg_docker_args *dk = g->nodes[0].args->fields;
	const struct cfg_process_args *pr = g->nodes[1].args->fields;
	const struct cfg_args *eb = g->nodes[2].args;
	const struct cfg_ebpf_args *ebf = eb->fields;
	assert_int_equal(dk->port, 80);
	assert_string_equal(dk->host_networking_host, "localhost");
	assert_int_equal(dk->refresh_interval, 60 * NP_NSEC_PER_SEC);
	assert_true(dk->match_first_network);
	assert_int_equal(pr->refresh_interval, 60 * NP_NSEC_PER_SEC);
	assert_null(pr->discover_config);
	assert_int_equal(ebf->sample_rate, 19);
	assert_true(ebf->off_cpu_threshold == 0);
	assert_string_equal(cfg_args_str(eb, "bpf_fs_root"), "/sys/fs/bpf/");
	assert_true(ebf->runtime_enabled.python);
	assert_true(ebf->runtime_enabled.go);
	assert_false(ebf->lazy_mode);
	assert_int_equal(cfg_args_list_len(eb, "probe_links"), 0);
	assert_int_equal(ebf->forward_to.n, 0);
	assert_int_equal(ebf->u_probe_links.n, 0);
	assert_int_equal(ebf->container_id_cache_size, 1024);
	cfg_graph_free(g);
	cfg_diags_free(&d);
}

/* Values written in the file, in the components' args structs (the embedded HTTP
 * client block's too), and through the by-name accessors the validate hooks use. */
static void accessors(void **state)
{
	struct cfg_diags d;
	cfg_diags_init(&d, "t");
	const char *src =
		"discovery.docker \"d\" {\n"
		"  host = \"unix:///run/docker.sock\"\n"
		"  port = \"8080\"\n" /* numeric strings convert, as Alloy's decoder does */
		"  refresh_interval = \"1m30s\"\n"
		"  http_headers = { \"X-A\" = [\"s1\", \"s2\"], \"X-B\" = [] }\n"
		"  filter {\n    name = \"label\"\n    values = [\"a=b\", 1]\n  }\n"
		"  filter {\n    name = \"status\"\n    values = [\"running\"]\n  }\n"
		"}\n"
		"discovery.process \"p\" {\n"
		"  join = [{ \"__container_id__\" = \"abc\", n = 5 }]\n"
		"  discover_config {\n    cgroup_path = true\n  }\n"
		"}\n"
		"pyroscope.write \"w\" {\n"
		"  external_labels = { cluster = \"c1\", env = 7 }\n"
		"  endpoint {\n    url = \"http://a\"\n    headers = { \"X-Scope-OrgID\" = \"team\" }\n"
		"    basic_auth {\n      username = \"u\"\n      password = \"p\" + \"w\"\n    }\n  }\n"
		"}\n";
	struct cfg_graph *g = cfg_graph_load_source("t", src, strlen(src), &d);
	if (!g)
		fail_msg("%s", diags_text(&d));
	const struct cfg_args *dk = g->nodes[0].args, *w = g->nodes[2].args;
	const struct cfg_docker_args *dka = dk->fields;
	const struct cfg_process_args *pr = g->nodes[1].args->fields;
	const struct cfg_write_args *wa = w->fields;
	assert_int_equal(dka->port, 8080);
	assert_int_equal(dka->refresh_interval, 90 * NP_NSEC_PER_SEC);
	assert_int_equal(dka->http.http_headers.n, 2);
	assert_string_equal(dka->http.http_headers.keys[0], "X-A");
	assert_int_equal(dka->http.http_headers.values[0].n, 2);
	assert_string_equal(dka->http.http_headers.values[0].v[1], "s2");
	assert_int_equal(cfg_args_map_len(dk, "http_headers"), 2);
	assert_string_equal(cfg_args_map_key(dk, "http_headers", 0), "X-A");
	const struct cfg_value *hv = cfg_args_get(dk, "http_headers")->u.obj.v[0].val;
	assert_int_equal(cfg_array_len(hv), 2);
	assert_int_equal(hv->u.arr.v[1]->kind, CFG_V_SECRET);
	assert_string_equal(hv->u.arr.v[1]->u.str.s, "s2");
	assert_int_equal(dka->filter.n, 2);
	const struct cfg_docker_filter_args *f0a = dka->filter.v[0], *f1a = dka->filter.v[1];
	assert_string_equal(f0a->name, "label");
	assert_int_equal(f0a->values.n, 2);
	assert_string_equal(f0a->values.v[1], "1");
	assert_string_equal(f1a->values.v[0], "running");
	const struct cfg_args *f0 = cfg_args_block(dk, "filter", 0);
	assert_null(cfg_args_block(dk, "filter", 2));
	assert_int_equal(cfg_args_pos(f0, "name").line, 7);
	assert_int_equal(cfg_args_pos(f0, "name").col, 12);
	assert_int_equal(cfg_args_name_pos(f0, "name").col, 5);

	const struct np_targets *join = pr->join;
	assert_int_equal(join->n, 1);
	assert_string_equal(np_labels_get(&join->v[0], "__container_id__"), "abc");
	assert_string_equal(np_labels_get(&join->v[0], "n"), "5");
	const struct cfg_process_discover_args *dc = pr->discover_config;
	assert_true(dc->cgroup_path);
	assert_true(dc->exe);
	assert_true(dc->uid);

	assert_int_equal(wa->external_labels.n, 2);
	assert_string_equal(wa->external_labels.keys[1], "env");
	assert_string_equal(wa->external_labels.values[1], "7");
	assert_null(wa->tracing);
	const struct cfg_write_endpoint_args *epa = wa->endpoint.v[0];
	assert_string_equal(epa->headers.keys[0], "X-Scope-OrgID");
	assert_string_equal(epa->headers.values[0], "team");
	const struct cfg_args *ep = cfg_args_block(w, "endpoint", 0);
	const struct cfg_args *ba = cfg_args_block(ep, "basic_auth", 0);
	assert_string_equal(cfg_args_str(ba, "password"), "pw");
	const struct cfg_basic_auth_args *baa = epa->http.basic_auth;
	assert_ptr_equal(baa, ba->fields);
	assert_string_equal(baa->password, "pw");
	assert_int_equal(cfg_args_get(ba, "password")->kind, CFG_V_SECRET);

	/* A name the schema does not declare is a programming error: zero value. */
	assert_null(cfg_args_str(ep, "no_such_attribute"));
	assert_false(cfg_args_has(ep, "no_such_attribute"));
	cfg_graph_free(g);
	cfg_diags_free(&d);
}

static void component_errors(void **state)
{
	static const struct ccase cases[] = {
		/* unknown names, with suggestions or the list of valid names */
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  sample_rat = 1\n}",
		  "3:3: unrecognized attribute name \"sample_rat\" in pyroscope.ebpf.e; did you mean \"sample_rate\"?" },
		{ "discovery.process \"p\" {\n  xyz = 1\n}",
		  "2:3: unrecognized attribute name \"xyz\" in discovery.process.p (valid: join, refresh_interval, "
		  "discover_config { })" },
		{ "discovery.process \"p\" {\n  discover_config {\n    exe = true\n  }\n  discover_confi { }\n}",
		  "5:3: unrecognized block name \"discover_confi\" in discovery.process.p; did you mean \"discover_config\"?" },
		{ "discovery.relabel \"r\" {\n  targets = [{a = \"b\"}]\n  rule \"x\" { }\n  rule = 1\n  targets = []\n}",
		  "3:8: block \"rule\" does not support specifying labels\n"
		  "4:3: \"rule\" must be a block, but is used as an attribute\n"
		  "5:3: attribute \"targets\" may only be provided once" },
		{ "discovery.relabel \"r\" {\n  targets { }\n}",
		  "1:1: missing required attribute \"targets\" in discovery.relabel.r\n"
		  "2:3: \"targets\" must be an attribute, but is used as a block" },
		{ "pyroscope.write \"w\" {\n  tracing { }\n  tracing { }\n}", "3:3: block \"tracing\" may only be specified once" },
		{ "pyroscope.write \"w\" {\n  endpoint { }\n}", "2:3: missing required attribute \"url\" in endpoint" },
		/* types and conversions */
		{ "discovery.process \"p\" {\n  join = [{\"a\" = 1}, \"x\"]\n  refresh_interval = 30\n  discover_config { cwd = "
		  "\"yes\" }\n}",
		  "2:10: join[1]: expected map(string), got string \"x\"\n"
		  "3:22: refresh_interval: expected a duration string such as \"15s\" or \"1m30s\", got number\n"
		  "4:27: cwd: expected bool, got string \"yes\"" },
		{ "pyroscope.ebpf \"e\" {\n  forward_to = [pyroscope.write.w.receiver, \"x\"]\n  collect_interval = \"15\"\n  "
		  "sample_rate = 1.5\n  container_id_cache_size = -1\n}\npyroscope.write \"w\" {}",
		  "2:16: forward_to[1]: expected ProfilesReceiver, got string \"x\"\n"
		  "3:22: collect_interval: invalid duration \"15\": missing or unknown unit (use ns, us, ms, s, m or h)\n"
		  "4:17: sample_rate: expected an integer, got 1.5\n"
		  "5:29: container_id_cache_size: must not be negative, got -1" },
		{ "pyroscope.ebpf \"e\" {\n  forward_to = null\n  sample_rate = null\n}",
		  "3:17: sample_rate must be between 1 and 10000, got 0" }, /* null is the zero value, as in Alloy */
		/* arguments are C strings: a NUL byte would silently cut them */
		{ "discovery.relabel \"a\" {\n  targets = [{a = \"x\\x00y\"}]\n}\ndiscovery.docker \"d\" {\n  host = "
		  "\"unix:///a\\000b\"\n  bearer_token = \"a\\x00\"\n}",
		  "2:13: targets[0][\"a\"]: the string contains a NUL byte, which nodeprof cannot pass on\n"
		  "5:10: host: the string contains a NUL byte, which nodeprof cannot pass on\n"
		  "6:18: bearer_token: the string contains a NUL byte, which nodeprof cannot pass on" },
		/* ranges and allowed values */
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  sample_rate = 0\n  off_cpu_threshold = 2\n  demangle = \"ful\"\n  "
		  "comm = \"labels\"\n  collect_interval = \"-1s\"\n}",
		  "3:17: sample_rate must be between 1 and 10000, got 0\n"
		  "4:23: off_cpu_threshold must be between 0 and 1, got 2\n"
		  "5:14: demangle: invalid value \"ful\"; did you mean \"full\"? (expected \"none\", \"simplified\", \"templates\" or "
		  "\"full\")\n"
		  "6:10: comm: invalid value \"labels\"; did you mean \"label\"? (expected \"none\", \"label\", \"stackframe\", \"both\" "
		  "or \"\")\n"
		  "7:22: collect_interval must be greater than 0s and at most 1h0m0s, got \"-1s\"" },
		/* deprecated no-ops (accepted), then what nodeprof cannot honour (errors) */
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  cache_rounds = 3\n  collect_kernel_profile = false\n  python_enabled "
		  "= false\n  dotnet_enabled = true\n  symb_cache_size = 0\n}",
		  "3:3: warning: cache_rounds is deprecated and has no effect; remove it\n"
		  "4:3: warning: collect_kernel_profile is deprecated and has no effect: use kernel_frames; remove it\n"
		  "6:3: warning: dotnet_enabled = true: nodeprof has no unwinder for this runtime yet (Python, Perl, PHP, HotSpot, V8 "
		  "and Ruby are the ones it has); it profiles these processes as native code (the runtime's own frames) and names JIT code from "
		  "perf map files (/tmp/perf-PID.map, as .NET writes with DOTNET_PerfMapEnabled=1)\n"
		  "7:21: symb_cache_size must be between 1 and 1048576, got 0" },
		/* the on-disk symbol cache's arguments are honoured */
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  symb_cache_path = \"/var/cache/nodeprof\"\n  symb_cache_size = 4\n}",
		  "" },
		/* debug info upload runs */
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  off_cpu_threshold = 0.5\n  load_probe "
		  "= true\n  debug_info { upload = true }\n}",
		  "" },
		/* off-CPU time and uprobes run: a link's syntax is an error, a file or symbol this host lacks
		 * a warning (the configuration may be checked on another host) */
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  off_cpu_threshold = 0.5\n  load_probe = true\n"
		  "  u_probe_links = [\"x\", \"/nonexistent/lib.so:f\"]\n}",
		  "5:19: u_probe_links: \"x\": a probe link is FILE:SYMBOL, e.g. /usr/lib/x86_64-linux-gnu/libc.so.6:malloc\n"
		  "5:19: warning: u_probe_links: /nonexistent/lib.so: No such file or directory on this host; where the "
		  "agent runs, the link is attached wherever the file is, and the component says which links it could "
		  "not attach" },
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  probe_links = [\"uretprobe:/nonexistent/lib.so:f\", "
		  "\"kprobe:a:b\"]\n  u_probe_links = [\"/x:y\"]\n}",
		  "3:17: warning: probe_links: /nonexistent/lib.so: No such file or directory on this host; where the agent "
		  "runs, the link is attached wherever the file is, and the component says which links it could not attach\n"
		  "3:17: probe_links: \"kprobe:a:b\": a kernel probe link is kprobe:SYMBOL, e.g. kprobe:do_sys_open\n"
		  "4:19: warning: u_probe_links: /x: No such file or directory on this host; where the agent runs, the link "
		  "is attached wherever the file is, and the component says which links it could not attach\n"
		  "4:19: warning: u_probe_links is ignored when probe_links is set (as in Alloy)" },
		/* switched off, not-implemented features are fine */
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  off_cpu_threshold = 0\n  probe_links = []\n  load_probe = false\n  "
		  "python_enabled = false\n}",
		  "" },
		{ "logging {\n  level = \"verbose\"\n  format = \"xml\"\n  destination = \"windows_event_log\"\n  write_to = "
		  "[1]\n}\nlogging \"x\" {}",
		  "2:11: level: invalid value \"verbose\"; expected \"debug\", \"info\", \"warn\", \"error\" or \"\"\n"
		  "3:12: format: invalid value \"xml\"; expected \"logfmt\", \"json\" or \"\"\n"
		  "4:17: destination = \"windows_event_log\" is not supported by nodeprof yet: nodeprof runs on Linux and logs "
		  "to stderr (Alloy, too, refuses windows_event_log outside a Windows service)\n"
		  "5:14: write_to = [...] is not supported by nodeprof yet: there are no log receivers in nodeprof\n"
		  "7:9: block \"logging\" does not support specifying labels" },
		/* Alloy's defaults written out, and "" for its text enums */
		{ "logging {\n  level = \"\"\n  format = \"json\"\n  destination = \"stderr\"\n  write_to = []\n}", "" },
		/* oauth2: the client-credentials grant; the JWT bearer grant's arguments only at their defaults */
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"http://a\"\n    oauth2 {\n      client_id = \"x\"\n"
		  "      client_secret = \"s\"\n      token_url = \"https://idp/token\"\n      scopes = [\"a\", \"b\"]\n"
		  "      endpoint_params = { audience = \"p\" }\n      grant_type = \"client_credentials\"\n"
		  "      signature_algorithm = \"RS256\"\n      iss = \"\"\n      tls_config { insecure_skip_verify = true }\n"
		  "    }\n  }\n}",
		  "" },
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"http://a\"\n    oauth2 {\n      client_id = \"x\"\n"
		  "      token_url = \"https://idp/token\"\n      grant_type = \"urn:ietf:params:oauth:grant-type:jwt-bearer\"\n"
		  "      client_certificate_key = \"k\"\n    }\n  }\n}",
		  "7:20: grant_type = \"urn:ietf:params:oauth:grant-type:jwt-bearer\" is not supported by nodeprof yet: the JWT "
		  "bearer grant is not implemented; use client_credentials\n"
		  "8:32: client_certificate_key = (secret) is not supported by nodeprof yet: used by the JWT bearer grant "
		  "(urn:ietf:params:oauth:grant-type:jwt-bearer), which nodeprof does not implement" },
	};
	RUN(cases);
}

/* Cross-argument rules: Alloy's HTTPClientConfig.Validate, TLS pairs, Prometheus'
 * kubernetes SD rules, selectors, URLs, backoff order, label names. */
static void cross_argument_rules(void **state)
{
	static const struct ccase cases[] = {
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"http://p\"\n    bearer_token = \"x\"\n    basic_auth { username "
		  "= \"a\" }\n  }\n}",
		  "5:5: at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file must be configured" },
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"http://p\"\n    bearer_token = \"x\"\n    oauth2 {\n"
		  "      client_id = \"i\"\n      client_secret = \"s\"\n      token_url = \"http://t\"\n    }\n  }\n}",
		  "5:5: at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file must be configured" },
		{ "discovery.kubernetes \"k\" {\n  role = \"pod\"\n  api_server = \"https://k\"\n  oauth2 {\n    token_url = \"\"\n"
		  "    client_secret = \"s\"\n    client_secret_file = \"/f\"\n    no_proxy = \"x\"\n  }\n}",
		  "4:3: oauth2 client_id must be configured\n"
		  "4:3: oauth2 token_url must be configured\n"
		  "7:5: at most one of oauth2 client_secret & client_secret_file must be configured\n"
		  "8:5: if no_proxy is configured, proxy_url must also be configured" },
		{ "discovery.docker \"d\" {\n  host = \"http://d:2375\"\n  oauth2 {\n    client_id = \"i\"\n    token_url = \"http://t\"\n"
		  "  }\n}",
		  "3:3: either oauth2 client_secret or client_secret_file must be configured" },
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"http://p\"\n    bearer_token = \"\"\n    basic_auth { username "
		  "= \"a\" }\n  }\n}",
		  "" }, /* an empty bearer_token does not count, as in Alloy */
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"http://p:4040\"\n    min_backoff_period = \"10m\"\n    "
		  "http_headers = { \"authorization\" = [\"x\"] }\n    proxy_from_environment = true\n    no_proxy = \"a\"\n  }\n}",
		  "4:5: min_backoff_period must not be longer than max_backoff_period\n"
		  "5:20: setting header \"Authorization\" is not allowed\n"
		  "7:5: if proxy_from_environment is configured, no_proxy must not be configured\n"
		  "7:5: if no_proxy is configured, proxy_url must also be configured" },
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"http://p\"\n    proxy_url = \"http://proxy:3128\"\n    "
		  "proxy_from_environment = true\n    proxy_connect_header = { a = [\"b\"] }\n  }\n}",
		  "4:5: if proxy_from_environment is configured, proxy_url must not be configured" },
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"http://p\"\n    proxy_connect_header = { a = [\"b\"] }\n    "
		  "no_proxy = \"x\"\n  }\n}",
		  "4:5: if proxy_connect_header is configured, proxy_url or proxy_from_environment must also be configured\n"
		  "5:5: if no_proxy is configured, proxy_url must also be configured" },
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"http://p\"\n    tls_config {\n      ca_pem = \"a\"\n      "
		  "ca_file = \"b\"\n      cert_file = \"c\"\n    }\n  }\n}",
		  "4:5: exactly one of key_pem or key_file must be configured when a client certificate is configured\n"
		  "6:7: at most one of ca_pem and ca_file must be configured" },
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"ftp://p\"\n    basic_auth {\n      password = \"p\"\n      "
		  "password_file = \"/f\"\n    }\n  }\n  endpoint {\n    url = \"https://\"\n    authorization {\n      type = "
		  "\"Basic\"\n    }\n  }\n}",
		  "6:7: at most one of basic_auth password & password_file must be configured\n"
		  "12:14: authorization type cannot be set to \"basic\", use \"basic_auth\" block instead" },
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"ftp://p\"\n  }\n  endpoint {\n    url = \"https://\"\n  }\n}",
		  "3:11: warning: url: \"ftp://p\" must start with http:// or https://; every push to this endpoint will fail "
		  "(use e.g. http://pyroscope:4040)\n"
		  "6:11: warning: url: \"https://\" has no host; every push to this endpoint will fail (use e.g. "
		  "http://pyroscope:4040)" },
		/* Alloy loads any url (write.go validates none); an unset env() gives "" */
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = sys.env(\"NODEPROF_TEST_SURELY_UNSET\")\n  }\n}",
		  "3:11: warning: url is empty (an unset environment variable?); every push to this endpoint will fail until "
		  "it is set, e.g. to http://pyroscope:4040" },
		{ "pyroscope.write \"w\" {\n  external_labels = { \"bad-name\" = \"x\", cluster = \"c\", \"9x\" = \"y\" }\n}",
		  "2:21: external_labels: invalid label name \"9x\" (letters, digits, _ and ., not starting with a digit)\n"
		  "2:21: external_labels: invalid label name \"bad-name\" (letters, digits, _ and ., not starting with a digit)" },
		/* What Alloy loads and ignores loads, with a warning (Prometheus' own loader would refuse it). */
		{ "discovery.kubernetes \"k\" {\n  role = \"node\"\n  kubeconfig_file = \"/k\"\n  api_server = \"https://x\"\n  "
		  "namespaces { own_namespace = true }\n  attach_metadata { node = true }\n}",
		  "4:3: warning: api_server is ignored: kubeconfig_file takes precedence (as in Alloy); remove one of them\n"
		  "5:16: warning: own_namespace is ignored with kubeconfig_file: the pod's namespace is known only in cluster "
		  "(as in Alloy); with no names, no namespace is watched and nothing is discovered\n"
		  "6:21: warning: attach_metadata.node has no effect with role \"node\" (only pod, endpoints and endpointslice "
		  "targets get node metadata, as in Alloy)" },
		{ "discovery.kubernetes \"k\" {\n  role = \"pod\"\n  api_server = \"x\"\n  selectors {\n    role = \"service\"\n  }\n}",
		  "3:16: api_server: invalid URL \"x\" (expected https://host[:port] or http://host[:port])\n"
		  "5:12: warning: the service selector has no effect with role \"pod\", which reads only pod, node selectors "
		  "(Alloy ignores it too); remove it" },
		{ "discovery.kubernetes \"k\" {\n  role = \"endpoints\"\n  bearer_token = \"x\"\n  selectors {\n    role = \"pod\"\n  "
		  "}\n  selectors {\n    role = \"pod\"\n  }\n  selectors {\n    role = \"endpointslice\"\n  }\n}",
		  "1:1: warning: the HTTP client settings are ignored without api_server: in cluster, the service account "
		  "token and CA are used (as in Alloy); set api_server to use them\n"
		  "4:3: warning: duplicated selector role: pod; only the last one is used (as in Alloy)\n"
		  "11:12: warning: the endpointslice selector has no effect with role \"endpoints\", which reads only pod, "
		  "service, endpoints selectors (Alloy ignores it too); remove it" },
		/* Alloy's own test (TestAlloyConfig): kubeconfig_file with http_headers. */
		{ "discovery.kubernetes \"k\" {\n  role = \"pod\"\n  kubeconfig_file = \"/etc/k8s/kubeconfig.yaml\"\n  "
		  "http_headers = {\n    \"foo\" = [\"foobar\"],\n  }\n}",
		  "3:3: warning: the HTTP client settings are ignored with kubeconfig_file: the kubeconfig's server, "
		  "credentials and TLS settings are used (as in Alloy)" },
		{ "discovery.kubernetes \"k\" {\n  role = \"node\"\n  attach_metadata {\n    namespace = true\n  }\n}",
		  "4:5: warning: attach_metadata.namespace has no effect with role \"node\" (nodes have no namespace)" },
		{ "discovery.kubernetes \"k\" {\n  role = \"node\"\n  selectors {\n    role = \"nodes\"\n  }\n}",
		  "4:12: role: invalid value \"nodes\"; did you mean \"node\"? (expected \"pod\", \"node\", \"service\", "
		  "\"endpoints\", \"endpointslice\" or \"ingress\")" },
		{ "discovery.kubernetes \"k\" {\n  role = \"pod\"\n  selectors {\n    role = \"pod\"\n    field = \"spec.nodeName\"\n    "
		  "label = \"app in (a,b\"\n  }\n}",
		  "5:13: invalid field selector \"spec.nodeName\": can't understand \"spec.nodeName\"\n"
		  "6:13: invalid label selector \"app in (a,b\": expected a value or ')' at position 11" },
		{ "discovery.kubernetes \"k\" {\n  role = \"pod\"\n  api_server = \"https://k:6443\"\n  bearer_token_file = \"/t\"\n  "
		  "selectors {\n    role = \"pod\"\n    field = \"spec.nodeName=n1,status.phase!=Failed\"\n    label = \"app in (a, "
		  "b),!canary,tier=web,env!=dev,team\"\n  }\n  selectors {\n    role = \"node\"\n    label = "
		  "\"kubernetes.io/os=linux\"\n  }\n}",
		  "" },
		{ "discovery.docker \"d\" {\n  host = \"ssh://x\"\n}\ndiscovery.docker \"e\" {\n  host = \"\"\n}\ndiscovery.docker "
		  "\"f\" {\n  host = \"/var/run/docker.sock\"\n}",
		  "2:10: host: unsupported scheme in \"ssh://x\"; expected unix://, tcp://, http:// or https://\n"
		  "5:10: host must not be empty\n"
		  "8:10: host: \"/var/run/docker.sock\" is not a URL; expected unix:///path/to/docker.sock or tcp://host:port" },
		{ "discovery.docker \"d\" {\n  host = \"tcp://h:2375\"\n  port = 70000\n  filter { name = \"x\" }\n}",
		  "3:10: port must be between 0 and 65535, got 70000\n"
		  "4:3: missing required attribute \"values\" in filter" },
	};
	RUN(cases);
}

/* Rule blocks are compiled at check time; each bad rule is reported at its
 * offending attribute. */
/* Decodes "x {\n  NAME = DEF\n}" against s: no error may point at line 2. */
static void default_accepted(const char *where, const struct cfg_schema *s)
{
	for (size_t i = 0; s->attrs && s->attrs[i].name; i++) {
		const struct cfg_attr *at = &s->attrs[i];
		char src[512];
		struct cfg_diags d;
		struct cfg_eval ev = { 0 };
		if (!at->def)
			continue;
		snprintf(src, sizeof(src), "x {\n  %s = %s\n}\n", at->name, at->def);
		cfg_diags_init(&d, "t");
		ev.d = &d;
		struct cfg_file *f = cfg_parse("t", src, strlen(src), &d);
		assert_non_null(f);
		struct cfg_args *a = cfg_decode(s, &f->body.v[0]->body, f->body.v[0]->pos, where, &ev, &d);
		for (size_t k = 0; k < d.n; k++)
			if (d.v[k].severity == CFG_ERROR && d.v[k].pos.line == 2)
				fail_msg("%s: %s = %s (Alloy's default) is refused: %s", where, at->name, at->def, d.v[k].msg);
		cfg_args_free(a);
		cfg_file_free(f);
		cfg_diags_free(&d);
	}
	for (size_t i = 0; s->blocks && s->blocks[i].name; i++)
		if (!(s->blocks[i].flags & CFG_UNSUPPORTED))
			default_accepted(s->blocks[i].name, s->blocks[i].schema);
}

/* A setting whose value is Alloy's default is never an error: every attribute of every
 * registered schema, nested blocks included, written out with its declared default. */
static void alloy_defaults_are_never_errors(void **state)
{
	const struct cfg_component_type *types[32];
	size_t n = cfg_registry_list(types, 32);

	for (size_t i = 0; i < n; i++)
		default_accepted(types[i]->name, types[i]->args);
}

/* What nodeprof lacks is refused, with the why, only away from Alloy's default; equal
 * values in another spelling ("120s" for "2m", "" for an enum's default) are the default. */
static void unsupported_only_off_default(void **state)
{
	static const struct ccase cases[] = {
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  go_enabled = false\n  comm = \"label\"\n  pid_label = true\n  "
		  "reporter_unsymbolized_stubs = true\n  debug_info {\n"
		  "    on_target_symbolization = false\n    cache_size = 1\n    strip_text_section = true\n    queue_size = 1\n"
		  "    worker_num = 1\n  }\n}",
		  "" },
		{ "pyroscope.write \"w\" {\n  endpoint {\n    url = \"http://p\"\n    debug_info_upload_timeout = \"5m\"\n  }\n  "
		  "endpoint {\n    url = \"http://q\"\n    debug_info_upload_timeout = \"120s\"\n  }\n}",
		  "" },
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  comm = \"\"\n  no_kernel_version_check = true\n  lazy_mode = true\n"
		  "  obi_process_context_enabled = false\n  python_enabled = false\n  debug_info {\n    upload = false\n  }\n}",
		  "" },
		/* trace correlation (Alloy's own test configuration, ebpf_linux_test.go): accepted as it is */
		{ "pyroscope.ebpf \"e\" {\n  forward_to = []\n  obi_process_context_enabled = true\n  no_kernel_version_check = "
		  "false\n  bpf_fs_root = \"/sys/fs/bpf/custom\"\n}",
		  "" },
	};
	RUN(cases);
}

/* The eBPF block of Grafana's k8s-monitoring chart (its profiling feature, default
 * values): every unwinder switch written as true. It passes with exactly one warning. */
static void k8s_monitoring_ebpf_block(void **state)
{
	static const struct ccase cases[] = {
		{ "discovery.relabel \"ebpf_pods\" {\n  targets = []\n}\n"
		  "pyroscope.ebpf \"ebpf_pods\" {\n  targets = discovery.relabel.ebpf_pods.output\n  demangle = \"none\"\n"
		  "  python_enabled = true\n  hotspot_enabled = true\n  v8_enabled = true\n  ruby_enabled = true\n"
		  "  php_enabled = true\n  perl_enabled = true\n  dotnet_enabled = true\n  go_enabled = true\n"
		  "  forward_to = [pyroscope.write.profiles_service.receiver]\n}\n"
		  "pyroscope.write \"profiles_service\" {\n  endpoint {\n    url = \"http://pyroscope.pyroscope.svc:4040\"\n"
		  "    headers = {}\n  }\n  external_labels = {\n    cluster = \"k8s\",\n  }\n}",
		  "13:3: warning: dotnet_enabled = true: "
		  "nodeprof has no unwinder for this runtime yet (Python, Perl, PHP, HotSpot, V8 and Ruby are the ones it has); it profiles these "
		  "processes as native code (the runtime's own frames) and names JIT code from perf map files "
		  "(/tmp/perf-PID.map, as .NET writes with DOTNET_PerfMapEnabled=1)" },
	};
	RUN(cases);
}

/* Alloy's top-level livedebugging block: accepted, warned about when enabled. */
static void livedebugging_block(void **state)
{
	static const struct ccase cases[] = {
		{ "livedebugging {\n  enabled = true\n}",
		  "2:3: warning: livedebugging: nodeprof has no live debugging stream of component data; its local UI (the "
		  "--http-listen address) always shows the live flame graph of what is profiled" },
		{ "livedebugging {\n  enabled = false\n}\n", "" },
		{ "livedebugging { }\n", "" },
		{ "livedebugging \"x\" { }\nlivedebugging {\n  enabled = 1\n}",
		  "1:15: block \"livedebugging\" does not support specifying labels\n3:13: enabled: expected bool, got number 1" },
	};
	RUN(cases);
}

static void relabel_rules(void **state)
{
	static const struct ccase cases[] = {
		{ "discovery.relabel \"r\" {\n  targets = []\n  rule {\n    action = \"hashmod\"\n    target_label = \"x\"\n  }\n  "
		  "rule {\n    action = \"labelmap\"\n    regex = \"(.*\"\n  }\n  rule {\n    action = \"Replace\"\n  }\n  rule {\n    "
		  "action = \"lowercase\"\n    target_label = \"x\"\n    replacement = \"y\"\n  }\n}",
		  "3:3: relabel configuration for hashmod requires non-zero modulus\n"
		  "9:13: error parsing regexp: missing closing ): `^(?s:(.*)$`\n"
		  "12:14: action: invalid value \"Replace\"; did you mean \"replace\"? (expected \"replace\", \"keep\", \"drop\", "
		  "\"keepequal\", \"dropequal\", \"hashmod\", \"labelmap\", \"labeldrop\", \"labelkeep\", \"lowercase\" or "
		  "\"uppercase\")\n"
		  "17:19: 'replacement' can not be set for lowercase action" },
		{ "discovery.relabel \"r\" {\n  targets = []\n  rule {\n    action = \"replace\"\n  }\n}",
		  "4:14: relabel configuration for replace action requires 'target_label' value" },
		{ "discovery.relabel \"r\" {\n  targets = []\n  rule {\n    action = \"keepequal\"\n    source_labels = [\"a\"]\n    "
		  "target_label = \"b\"\n    regex = \"(.*)\"\n  }\n}",
		  "" }, /* Alloy accepts an explicit default regex here (docs/specs/relabel.md §12) */
		{ "discovery.relabel \"r\" {\n  targets = []\n  rule {\n    source_labels = [\"a\"]\n    target_label = "
		  "\"utf-8.label${1}\"\n  }\n}",
		  "5:20: \"utf-8.label${1}\" is invalid 'target_label' for replace action" }, /* Alloy's Validate rejects it (Prometheus accepts it): Alloy's rules win */
		{ "discovery.relabel \"r\" {\n  targets = []\n  rule {\n    source_labels = [\"a\"]\n    target_label = "
		  "\"x\"\n    separator = \"\"\n    regex = \"\"\n    replacement = \"\"\n  }\n}",
		  "" },
	};
	RUN(cases);
}

static void references_and_structure(void **state)
{
	static const struct ccase cases[] = {
		{ "discovery.relabel \"a\" {\n  targets = discovery.relabel.nope.output\n}\ndiscovery.relabel \"b\" {\n  targets = "
		  "discovery.relabel.a\n}\ndiscovery.relabel \"c\" {\n  targets = discovery.relabel.a.rules\n}\ndiscovery.relabel "
		  "\"d\" {\n  targets = foo.bar.x.y\n}\ndiscovery.relabel \"e\" {\n  targets = discovery.foo.x.y\n}\npyroscope.ebpf "
		  "\"f\" {\n  forward_to = [discovery.relabel.a.output]\n}\ndiscovery.relabel \"g\" {\n  targets = "
		  "discovery.relabel.a.outptu\n}\npyroscope.ebpf \"h\" {\n  forward_to = [pyroscope.ebpf.f.x]\n}",
		  "2:13: component \"discovery.relabel.nope\" is not defined in this file\n"
		  "5:31: discovery.relabel.a is a component, not a value; use one of its exports: output, rules\n"
		  "8:13: targets: expected list(map(string)), got RelabelRules\n"
		  "11:13: identifier \"foo\" does not exist\n"
		  "14:13: reference to an unknown component type in \"discovery.foo\"\n"
		  "17:16: forward_to[0]: expected ProfilesReceiver, got list(map(string))\n"
		  "20:33: component discovery.relabel.a has no export named \"outptu\" (its exports: output, rules)\n"
		  "23:34: component pyroscope.ebpf.f has no export named \"x\" (it exports nothing)" },
		{ "pyroscope.ebpf \"a\" {\n  forward_to = []\n  targets = discovery.relabel.b.output\n}\ndiscovery.relabel \"b\" {\n  "
		  "targets = discovery.relabel.c.output\n}\ndiscovery.relabel \"c\" {\n  targets = "
		  "array.concat(discovery.relabel.b.output, [])\n}",
		  "6:13: cycle in component references: discovery.relabel.b -> discovery.relabel.c -> discovery.relabel.b" },
		{ "discovery.relabel \"a\" {\n  targets = discovery.relabel.a.output\n}",
		  "2:13: cycle in component references: discovery.relabel.a -> discovery.relabel.a" },
		{ "pyroscope.write {}\ndiscovery.relabel \"\" { targets = [] }\ndiscovery.kubernete \"x\" {}\nprometheus.scrape \"x\" "
		  "{}\nx = 1\nlogging {\n}\nlogging {\n}\npyroscope.write \"w\" {}\npyroscope.write \"w\" {}",
		  "1:1: component \"pyroscope.write\" must have a label, e.g. pyroscope.write \"default\" { ... }\n"
		  "2:19: component \"discovery.relabel\" must have a label, e.g. discovery.relabel \"default\" { ... }\n"
		  "3:1: unknown component \"discovery.kubernete\"; did you mean \"discovery.kubernetes\"?\n"
		  "4:1: component \"prometheus.scrape\" is not supported by nodeprof (supported: discovery.docker, "
		  "discovery.kubernetes, discovery.process, discovery.relabel, livedebugging, logging, pyroscope.ebpf, pyroscope.write)\n"
		  "5:1: attributes are not allowed at the top level; \"x\" must be inside a component block\n"
		  "8:1: component \"logging\" is already defined at t:6:1\n"
		  "11:17: component \"pyroscope.write.w\" is already defined at t:10:1" },
		/* Expressions over references: types flow statically. */
		{ "discovery.relabel \"a\" {\n  targets = array.concat(discovery.relabel.b.output, [{ x = \"1\" }])\n}\n"
		  "discovery.relabel \"b\" {\n  targets = []\n  rule {\n    target_label = \"t\"\n    replacement = "
		  "discovery.relabel.a.output[0].x + \"-suffix\"\n  }\n}",
		  "2:26: cycle in component references: discovery.relabel.a -> discovery.relabel.b -> discovery.relabel.a" },
		{ "discovery.relabel \"a\" {\n  targets = []\n}\ndiscovery.relabel \"b\" {\n  targets = []\n  rule {\n    "
		  "target_label = \"t\"\n    replacement = discovery.relabel.a.output[0].x + \"-suffix\"\n  }\n}",
		  "" },
		{ "discovery.relabel \"a\" {\n  targets = []\n}\ndiscovery.relabel \"b\" {\n  targets = []\n  rule {\n    "
		  "target_label = \"t\"\n    modulus = discovery.relabel.a.output\n  }\n}",
		  "8:15: modulus: expected number, got list(map(string))" },
	};
	RUN(cases);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(examples_pass),
		cmocka_unit_test(example_graph_shape),
		cmocka_unit_test(schema_defaults_are_valid),
		cmocka_unit_test(documented_defaults),
		cmocka_unit_test(accessors),
		cmocka_unit_test(component_errors),
		cmocka_unit_test(cross_argument_rules),
		cmocka_unit_test(alloy_defaults_are_never_errors),
		cmocka_unit_test(unsupported_only_off_default),
		cmocka_unit_test(k8s_monitoring_ebpf_block),
		cmocka_unit_test(livedebugging_block),
		cmocka_unit_test(relabel_rules),
		cmocka_unit_test(references_and_structure),
	};
	return cmocka_run_group_tests_name("config_check", tests, NULL, NULL);
}
