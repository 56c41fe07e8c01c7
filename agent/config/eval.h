/* The expression evaluator: literals, lists, objects, references, field and index
 * access, function calls and every Alloy operator with Alloy's semantics
 * (syntax/vm, syntax/internal/transform; docs/specs/alloy-syntax.md §3).
 *
 * References to components (`discovery.relabel.pods.output`) are resolved through a
 * callback so that the same evaluator serves `check` (which answers with unknown
 * values of the export's type) and the running graph (which answers with the
 * current exports). Errors are reported into the diagnostics at the offending
 * expression and evaluation returns NULL. */
#ifndef NP_CONFIG_EVAL_H
#define NP_CONFIG_EVAL_H

#include "agent/config/ast.h"
#include "agent/config/diag.h"
#include "agent/config/value.h"

struct cfg_eval {
	struct cfg_diags *d;
	/* Resolves a dotted reference frags[0..n) whose first name is not a standard-library
	 * name. Returns a new reference, with *used set to the number of fragments it
	 * consumed (the rest are field accesses on the result), or NULL after reporting
	 * an error at pos[i]. NULL resolve: every such identifier "does not exist". */
	struct cfg_value *(*resolve)(void *ud, const char *const *frags, const struct cfg_pos *pos, size_t n,
				     size_t *used, struct cfg_diags *d);
	void *ud;
	int warn_deprecated; /* report deprecated stdlib aliases as warnings */
};

/* Largest string an expression may build (bytes). */
#define CFG_MAX_STRING (16u << 20)

struct cfg_value *cfg_eval(struct cfg_eval *ev, const struct cfg_expr *e);

/* Calls cb for every reference in e that is not a standard-library name: the
 * longest chain of field accesses on an identifier, as fragments with positions. */
typedef void (*cfg_ref_cb)(void *ud, const char *const *frags, const struct cfg_pos *pos, size_t n);
void cfg_expr_refs(const struct cfg_expr *e, cfg_ref_cb cb, void *ud);

/* Reports an error about value v at pos: "<what>: expected T, got <type>". */
void cfg_type_error(struct cfg_diags *d, struct cfg_pos pos, const char *what, const char *expected,
		    const struct cfg_value *v);

#endif
