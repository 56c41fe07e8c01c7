/* libFuzzer target for the document decoders of the configuration standard library:
 * encoding.from_yaml (stdlib_yaml.c: libyaml events, scalar resolution, anchors,
 * merges) and json_path (stdlib_jsonpath.c: the path and filter parser, evaluation
 * on a jansson document). The first byte picks the function; for json_path the rest
 * is "PATH\nJSON". Results are printed as Alloy text, as `check` would show them.
 * No input may crash, hang, leak or hit undefined behaviour. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib.h"
#include "lib/log.h"

static struct cfg_value *call(const char *ns, const char *name, struct cfg_value **args, size_t n)
{
	struct cfg_value *root = cfg_stdlib_lookup(ns), *fn = name ? cfg_object_get(root, name) : root;
	struct cfg_pos pos[2] = { 0 };
	struct cfg_diags d;
	struct cfg_eval ev = { 0 };
	struct cfg_value *v;

	cfg_diags_init(&d, "fuzz");
	ev.d = &d;
	struct cfg_call c = { .ev = &ev, .fn = fn->u.fn, .args = args, .arg_pos = pos, .n = n };
	v = cfg_builtin_call(&c);
	cfg_diags_free(&d);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg_value *args[2] = { NULL, NULL }, *v;
	const char *s = (const char *)data + 1;
	size_t n = size ? size - 1 : 0;

	if (size == 0 || size > 64 * 1024)
		return 0;
	np_log_set_level(NP_ERROR);
	if (data[0] & 1) {
		const char *nl = memchr(s, '\n', n);
		size_t pn = nl ? (size_t)(nl - s) : n;
		args[1] = cfg_string(s, pn);
		args[0] = nl ? cfg_string(nl + 1, n - pn - 1) : cfg_string("null", 4);
		v = args[0] && args[1] ? call("json_path", NULL, args, 2) : NULL;
	} else {
		args[0] = cfg_string(s, n);
		v = args[0] ? call("encoding", "from_yaml", args, 1) : NULL;
	}
	if (v) {
		struct np_buf b = NP_BUF_INIT;
		cfg_value_format(v, &b, 0);
		np_buf_free(&b);
		cfg_unref(v);
	}
	cfg_unref(args[0]);
	cfg_unref(args[1]);
	return 0;
}
