/* libFuzzer target for the configuration language: any input is parsed and checked
 * like `nodeprof check` does (scanner, parser, evaluator, standard library, every
 * component schema, references, cycles), and, when it parses as one expression,
 * evaluated. No input may crash, hang or leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/graph.h"
#include "agent/config/parser.h"
#include "lib/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg_diags d;

	if (size > 64 * 1024)
		return 0;
	np_log_set_level(NP_ERROR);

	cfg_diags_init(&d, "fuzz");
	cfg_graph_free(cfg_graph_load_source("fuzz", (const char *)data, size, &d));
	cfg_diags_sort(&d);
	free(cfg_diags_text(&d));
	cfg_diags_free(&d);

	struct cfg_arena arena = { 0 };
	struct cfg_eval ev = { 0 };
	cfg_diags_init(&d, "fuzz");
	ev.d = &d;
	ev.warn_deprecated = 1;
	struct cfg_expr *e = cfg_parse_expr(&arena, (const char *)data, size, &d);
	if (e) {
		struct cfg_value *v = cfg_eval(&ev, e);
		if (v) {
			struct np_buf b = NP_BUF_INIT;
			cfg_value_format(v, &b, 0);
			np_buf_free(&b);
			cfg_unref(v);
		}
	}
	cfg_arena_free(&arena);
	cfg_diags_free(&d);
	return 0;
}
