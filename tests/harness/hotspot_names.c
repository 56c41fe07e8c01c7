/* Prints what agent/runtime/hotspot knows about a running JVM, for
 * tests/integration/test_hotspot_names.py to hold against the JVM's own view (jcmd):
 *
 *   hotspot_names vmstructs PID   detection and the self-description, as JSON:
 *                                 {"version", "major", "libjvm_start", "fields": {"Type::_f": offset},
 *                                  "statics": {"Type::_f": address}, "types": {"T": size},
 *                                  "int_constants": {...}, "long_constants": {...}, "stats": {...}}
 *
 *   hotspot_names names PID       every nmethod of the code cache, named as the profiler names
 *                                 compiled frames: {"version", "major", "heaps": [[low, high]],
 *                                  "nmethods": [{"addr", "compile_id", "level", "method", "const_method", "name", "file",
 *                                  "start_line", "chains": [[{"name", "file", "start_line", "line"}
 *                                  innermost first] one per distinct scope chain of its PcDescs]}],
 *                                  "errors": [...], "stats": {namer stats}}
 *                                 With ROUNDS (names PID ROUNDS), every compiled frame is named
 *                                 again ROUNDS times from the cache, and stats get
 *                                 "ns_per_compiled_frame"; stats always have "detect_ms".
 *   hotspot_names method PID ADDR [CONST_METHOD [BCI]]   one interpreted frame, as JSON
 *
 * Exit status 1 with a message on stderr when the process is not a JVM we can read. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/runtime/hotspot/codecache.h"
#include "agent/runtime/hotspot/detect.h"
#include "agent/runtime/hotspot/namer.h"

static int add_field(void *ud, const char *type, const char *field, const char *type_string, int is_static,
		     uint64_t value)
{
	json_t **objs = ud;
	char key[600];

	(void)type_string;
	snprintf(key, sizeof(key), "%s::%s", type, field);
	json_object_set_new(objs[is_static ? 1 : 0], key, json_integer((json_int_t)value));
	return 0;
}

static int add_value(void *ud, const char *name, int is_long, int64_t value)
{
	json_t **objs = ud;

	json_object_set_new(objs[is_long ? 1 : 0], name, json_integer((json_int_t)value));
	return 0;
}

static int dump_vmstructs(const struct hs_jvm *j)
{
	json_t *root = json_object(), *objs[2] = { json_object(), json_object() }, *ts = json_object(), *st = json_object();
	json_t *consts[2] = { json_object(), json_object() };
	struct hs_vm_stats s;

	hs_vm_each_field(j->vm, add_field, objs);
	hs_vm_each_type(j->vm, add_value, &ts);
	hs_vm_each_constant(j->vm, add_value, consts);
	json_object_set_new(root, "int_constants", consts[0]);
	json_object_set_new(root, "long_constants", consts[1]);
	hs_vm_stats(j->vm, &s);
	json_object_set_new(st, "fields", json_integer((json_int_t)s.fields));
	json_object_set_new(st, "types", json_integer((json_int_t)s.types));
	json_object_set_new(st, "int_constants", json_integer((json_int_t)s.int_constants));
	json_object_set_new(st, "long_constants", json_integer((json_int_t)s.long_constants));
	json_object_set_new(st, "skipped", json_integer((json_int_t)s.skipped));
	json_object_set_new(st, "bytes", json_integer((json_int_t)s.bytes));
	json_object_set_new(root, "version", json_string(j->version));
	json_object_set_new(root, "major", json_integer(j->major));
	json_object_set_new(root, "libjvm_start", json_integer((json_int_t)j->libjvm_start));
	json_object_set_new(root, "fields", objs[0]);
	json_object_set_new(root, "statics", objs[1]);
	json_object_set_new(root, "types", ts);
	json_object_set_new(root, "stats", st);
	json_dumpf(root, stdout, JSON_SORT_KEYS | JSON_COMPACT);
	putchar('\n');
	json_decref(root);
	return 0;
}

static json_t *frame_json(const struct sym_frame *f)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(f->name));
	json_object_set_new(o, "file", f->file ? json_string(f->file) : json_null());
	json_object_set_new(o, "start_line", json_integer(f->start_line));
	json_object_set_new(o, "line", json_integer(f->line));
	return o;
}

#define MAX_TIMED 65536

struct walk {
	struct hs_compiled_frame timed[MAX_TIMED]; /* every frame named, to name again timed */
	size_t ntimed;
	uint32_t pid;
	const struct hs_jvm *j;
	struct hs_namer *n;
	json_t *nmethods, *errors;
	uint64_t level_off;
	int failed;
};

#define MAX_PCS 65536

static int on_blob(void *ud, uint64_t blob)
{
	struct walk *w = ud;
	static uint64_t pcs[MAX_PCS];
	struct sym_frame f[HS_MAX_SCOPES];
	struct np_err err;
	uint32_t cid;
	uint8_t level = 0;
	size_t npcs, nf;
	json_t *chains, *o, *seen;

	if (hs_namer_read_compile_id(w->n, w->pid, &w->j->names, blob, &cid))
		return 0; /* not an nmethod: a stub, adapter, buffer... */
	if (w->level_off != UINT64_MAX)
		(void)hs_process_mem(NULL, w->pid, blob + w->level_off, &level, 1);
	/* The nmethod's Method* and its ConstMethod*, for naming it as an interpreted frame. */
	uint64_t method = 0, cm = 0;
	(void)hs_process_mem(NULL, w->pid, blob + w->j->names.nm_method.off, &method, 8);
	(void)hs_process_mem(NULL, w->pid, method + w->j->names.method_const_method.off, &cm, 8);
	if (hs_namer_nmethod_pcs(w->n, w->pid, 0, &w->j->names, blob, cid, pcs, MAX_PCS, &npcs, &err)) {
		w->failed = 1;
		return 1;
	}
	o = json_object();
	chains = json_array();
	seen = json_object();
	json_object_set_new(o, "addr", json_integer((json_int_t)blob));
	json_object_set_new(o, "compile_id", json_integer(cid));
	json_object_set_new(o, "level", json_integer(level));
	json_object_set_new(o, "method", json_integer((json_int_t)method));
	json_object_set_new(o, "const_method", json_integer((json_int_t)cm));
	for (size_t i = 0; i < npcs; i++) {
		struct hs_compiled_frame cf = { .nmethod = blob, .pc = pcs[i], .compile_id = cid };
		json_t *chain = json_array();
		if (w->ntimed < MAX_TIMED)
			w->timed[w->ntimed++] = cf;
		char *key;
		if (hs_namer_compiled(w->n, w->pid, 0, &w->j->names, &cf, f, HS_MAX_SCOPES, &nf, &err)) {
			w->failed = 1;
			json_decref(chain);
			break;
		}
		for (size_t k = 0; k < nf; k++)
			json_array_append_new(chain, frame_json(&f[k]));
		key = json_dumps(chain, JSON_COMPACT);
		if (key && !json_object_get(seen, key)) {
			json_object_set_new(seen, key, json_true());
			json_array_append(chains, chain);
		}
		free(key);
		json_decref(chain);
	}
	json_decref(seen);
	json_object_set_new(o, "chains", chains);
	/* The nmethod's own method: the outermost frame at its first instruction (native
	 * wrappers have no PcDescs but are named so too). */
	uint64_t code = 0;
	if (w->j->names.cb_code_is_offset) {
		uint32_t off = 0;
		(void)hs_process_mem(NULL, w->pid, blob + w->j->names.cb_code_begin.off, &off, 4);
		code = blob + off;
	} else {
		(void)hs_process_mem(NULL, w->pid, blob + w->j->names.cb_code_begin.off, &code, 8);
	}
	struct hs_compiled_frame root = { .nmethod = blob, .pc = code, .compile_id = cid };
	json_object_del(o, "name");
	json_object_del(o, "file");
	json_object_del(o, "start_line");
	if (hs_namer_compiled(w->n, w->pid, 0, &w->j->names, &root, f, HS_MAX_SCOPES, &nf, &err) == 0 && nf) {
		json_object_set_new(o, "name", json_string(f[nf - 1].name));
		json_object_set_new(o, "file", f[nf - 1].file ? json_string(f[nf - 1].file) : json_null());
		json_object_set_new(o, "start_line", json_integer(f[nf - 1].start_line));
	} else {
		json_object_set_new(o, "name", json_null());
	}
	json_array_append_new(w->nmethods, o);
	return 0;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int dump_names(uint32_t pid, const struct hs_jvm *j, unsigned rounds, double detect_ns)
{
	struct hs_code_heap heaps[HS_CC_MAX_HEAPS];
	struct hs_namer_stats ns;
	struct np_err err;
	size_t nh;
	json_t *root = json_object(), *jh = json_array(), *st = json_object();
	static struct walk w;
	double t0;

	w = (struct walk){ .pid = pid, .j = j, .nmethods = json_array(), .errors = json_array() };

	if (hs_vm_field_offset(j->vm, "nmethod", "_comp_level", &w.level_off))
		w.level_off = UINT64_MAX;
	if (hs_namer_new(0, &w.n, &err)) {
		fprintf(stderr, "hs_namer_new: %s\n", err.msg);
		return 1;
	}
	if (hs_code_heaps(hs_process_mem, NULL, pid, j->vm, heaps, HS_CC_MAX_HEAPS, &nh, &err)) {
		fprintf(stderr, "code heaps: %s\n", err.msg);
		hs_namer_free(w.n);
		return 1;
	}
	for (size_t i = 0; i < nh; i++) {
		json_t *pair = json_array();
		json_array_append_new(pair, json_integer((json_int_t)heaps[i].low));
		json_array_append_new(pair, json_integer((json_int_t)heaps[i].high));
		json_array_append_new(jh, pair);
		/* The JVM runs on meanwhile: a block freed under the walk ends that heap's walk. */
		if (hs_code_heap_blobs(hs_process_mem, NULL, pid, j->vm, &heaps[i], on_blob, &w, &err))
			json_array_append_new(w.errors, json_string(err.msg));
		if (w.failed)
			break;
	}
	/* Named again from the cache: what a sample's compiled frame costs once its nmethod is known. */
	if (rounds && w.ntimed && !w.failed) {
		struct sym_frame f[HS_MAX_SCOPES];
		size_t nf;
		t0 = now_ns();
		for (unsigned r = 0; r < rounds; r++)
			for (size_t i = 0; i < w.ntimed; i++)
				if (hs_namer_compiled(w.n, pid, 0, &j->names, &w.timed[i], f, HS_MAX_SCOPES, &nf, &err))
					return 1;
		json_object_set_new(st, "ns_per_compiled_frame",
				    json_real((now_ns() - t0) / ((double)rounds * (double)w.ntimed)));
	}
	json_object_set_new(st, "detect_ms", json_real(detect_ns / 1e6));
	hs_namer_stats(w.n, &ns);
	json_object_set_new(st, "methods", json_integer((json_int_t)ns.methods));
	json_object_set_new(st, "nmethods", json_integer((json_int_t)ns.nmethods));
	json_object_set_new(st, "bytes", json_integer((json_int_t)ns.bytes));
	json_object_set_new(st, "failed", json_integer((json_int_t)ns.failed));
	json_object_set_new(st, "stale", json_integer((json_int_t)ns.stale));
	json_object_set_new(st, "compiled", json_integer((json_int_t)ns.compiled));
	json_object_set_new(st, "inlined", json_integer((json_int_t)ns.inlined));
	json_object_set_new(root, "version", json_string(j->version));
	json_object_set_new(root, "major", json_integer(j->major));
	json_object_set_new(root, "heaps", jh);
	json_object_set_new(root, "nmethods", w.nmethods);
	json_object_set_new(root, "errors", w.errors);
	json_object_set_new(root, "stats", st);
	json_dumpf(root, stdout, JSON_SORT_KEYS | JSON_COMPACT);
	putchar('\n');
	json_decref(root);
	hs_namer_free(w.n);
	return w.failed;
}

static int name_method(uint32_t pid, const struct hs_jvm *j, int argc, char **argv)
{
	struct hs_interp_frame fr = { .bci = -1 };
	struct hs_namer *n;
	struct np_err err;
	struct sym_frame f;
	struct hs_namer_stats ns;
	json_t *o;

	fr.method = strtoull(argv[3], NULL, 0);
	if (argc > 4)
		fr.const_method = strtoull(argv[4], NULL, 0);
	if (argc > 5)
		fr.bci = (int32_t)strtol(argv[5], NULL, 0);
	if (hs_namer_new(0, &n, &err) || hs_namer_interpreted(n, pid, 0, &j->names, &fr, &f, &err)) {
		fprintf(stderr, "namer: %s\n", err.msg);
		return 1;
	}
	hs_namer_stats(n, &ns);
	o = frame_json(&f);
	json_object_set_new(o, "stale", json_integer((json_int_t)ns.stale));
	json_object_set_new(o, "failed", json_integer((json_int_t)ns.failed));
	json_dumpf(o, stdout, JSON_SORT_KEYS | JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	hs_namer_free(n);
	return 0;
}

int main(int argc, char **argv)
{
	struct sym_options o = { 0 };
	struct symbolizer *sym;
	struct hs_jvm j;
	struct np_err err;
	char why[256];
	uint32_t pid;
	int rc;

	if (argc < 3 || (strcmp(argv[1], "vmstructs") && strcmp(argv[1], "names") && strcmp(argv[1], "method")) ||
	    (!strcmp(argv[1], "method") && argc < 4)) {
		fprintf(stderr, "usage: hotspot_names vmstructs PID | names PID [ROUNDS] | method PID ADDR [CONST_METHOD [BCI]]\n");
		return 2;
	}
	pid = (uint32_t)strtoul(argv[2], NULL, 10);
	if (symbolizer_new(&o, &sym, &err) < 0) {
		fprintf(stderr, "symbolizer_new: %s\n", err.msg);
		return 1;
	}
	double t0 = now_ns();
	rc = hs_detect(sym, pid, 0, &j, why, sizeof(why), &err);
	double detect_ns = now_ns() - t0;
	if (rc < 0) {
		fprintf(stderr, "hs_detect: %s\n", err.msg);
		symbolizer_free(sym);
		return 1;
	}
	if (rc == 0) {
		fprintf(stderr, "not a readable JVM: %s\n", why[0] ? why : "no libjvm.so");
		symbolizer_free(sym);
		return 1;
	}
	if (!strcmp(argv[1], "vmstructs"))
		rc = dump_vmstructs(&j);
	else if (!strcmp(argv[1], "names"))
		rc = dump_names(pid, &j, argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 0, detect_ns);
	else
		rc = name_method(pid, &j, argc, argv);
	hs_jvm_free(&j);
	symbolizer_free(sym);
	return rc;
}
