/* Prints what agent/runtime/hotspot knows about a running JVM, for
 * tests/integration/test_hotspot_names.py to hold against the JVM's own view (jcmd):
 *
 *   hotspot_names vmstructs PID   detection and the self-description, as JSON:
 *                                 {"version", "major", "libjvm_start", "fields": {"Type::_f": offset},
 *                                  "statics": {"Type::_f": address}, "types": {"T": size},
 *                                  "stats": {...}}
 *
 * Exit status 1 with a message on stderr when the process is not a JVM we can read. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/hotspot/detect.h"

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

static int dump_vmstructs(const struct hs_jvm *j)
{
	static const char *types[] = { "Method", "ConstMethod", "ConstantPool", "Klass", "InstanceKlass", "Symbol",
				       "nmethod", "CodeBlob", "PcDesc", "CodeHeap", "HeapBlock" };
	json_t *root = json_object(), *objs[2] = { json_object(), json_object() }, *ts = json_object(), *st = json_object();
	struct hs_vm_stats s;

	hs_vm_each_field(j->vm, add_field, objs);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		uint64_t size;
		if (hs_vm_type_size(j->vm, types[i], &size) == 0)
			json_object_set_new(ts, types[i], json_integer((json_int_t)size));
	}
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

int main(int argc, char **argv)
{
	struct sym_options o = { 0 };
	struct symbolizer *sym;
	struct hs_jvm j;
	struct np_err err;
	char why[256];
	uint32_t pid;
	int rc;

	if (argc != 3 || strcmp(argv[1], "vmstructs") != 0) {
		fprintf(stderr, "usage: hotspot_names vmstructs PID\n");
		return 2;
	}
	pid = (uint32_t)strtoul(argv[2], NULL, 10);
	if (symbolizer_new(&o, &sym, &err) < 0) {
		fprintf(stderr, "symbolizer_new: %s\n", err.msg);
		return 1;
	}
	rc = hs_detect(sym, pid, 0, &j, why, sizeof(why), &err);
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
	rc = dump_vmstructs(&j);
	hs_jvm_free(&j);
	symbolizer_free(sym);
	return rc;
}
