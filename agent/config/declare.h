/* Custom components (`declare`, `argument`, `export` and their instances), as Alloy
 * defines them (docs/sources/reference/config-blocks/declare.md; internal/runtime:
 * node_custom_component.go, node_config_argument.go, node_config_export.go,
 * custom_component_registry.go), and the expansion of a file into graph nodes.
 *
 * An instance `profiling "feature" { profiles_destinations = [...] }` of
 * `declare "profiling" { ... }` becomes, in the one flat graph the controller runs:
 *  - an instance node "profiling.feature" in the scope it is written in, whose
 *    exports are the declare's export blocks evaluated inside the instance;
 *  - an argument node "profiling.feature/argument.profiles_destinations" per argument
 *    block, whose one export `value` is the instance's attribute evaluated where the
 *    instance is written (or the argument's default);
 *  - the declare's components, with IDs "profiling.feature/<type>.<label>" as Alloy
 *    names them (its module controller's ID joined with "/"), in the instance's scope.
 * So arguments and exports flow like any other export: a component re-evaluates when
 * an argument it reads changes, and reloads match nodes by ID.
 *
 * Scoping follows Alloy: inside a declare only its own components, its arguments and
 * the standard library are visible (not the file's top-level components); custom
 * components are looked up in the declare's own body, then where the declare is
 * defined, outwards to the file's top level. */
#ifndef NP_CONFIG_DECLARE_H
#define NP_CONFIG_DECLARE_H

#include <stddef.h>

#include "agent/config/component.h"
#include "agent/config/graph.h"

/* One declare block, as defined in one scope. */
struct cfg_declare {
	const struct cfg_stmt *stmt;	      /* the declare block */
	const struct cfg_scope *defined_in;   /* where it is written */
	struct cfg_component_type type;	      /* name: its label; exports: its export blocks (any) */
	struct cfg_export *exports;	      /* owned: type.exports, terminated by a NULL name */
	const struct cfg_stmt **export_stmts; /* owned array: the export block of each export */
};

struct cfg_scope {
	const struct cfg_scope *parent;	 /* where the instance is written; NULL at the top level */
	const struct cfg_declare *decl;	 /* what it instantiates; NULL at the top level */
	size_t instance_node;		 /* index of the instance node (not at the top level) */
	char *prefix;			 /* owned: "" or "profiling.feature/" */
	struct cfg_declare *declares;	 /* owned: the declare blocks of its body */
	size_t n_declares;
};

/* The type of argument nodes: one export, `value`. */
extern const struct cfg_component_type cfg_type_argument;

/* Expands the parsed file of g (g->file) into g's nodes and scopes, reporting every
 * error into d (nodes in error are left out). */
void cfg_declare_expand(struct cfg_graph *g, struct cfg_diags *d);

void cfg_scope_free(struct cfg_scope *s);

/* The custom component `name` as seen from scope s, or NULL. */
const struct cfg_declare *cfg_scope_find_declare(const struct cfg_scope *s, const char *name);

/* Evaluates a value node: an argument's value, or an object of an instance's exports.
 * References resolve through tmpl's export_value (its scope is chosen here);
 * warn_deprecated as in struct cfg_eval. Returns a new reference, or NULL after
 * reporting into d. */
struct cfg_value *cfg_value_node_eval(const struct cfg_graph *g, size_t node, const struct cfg_resolver *tmpl,
				      int warn_deprecated, struct cfg_diags *d);

/* Calls cb for every expression a value node evaluates, with the scope its
 * references resolve in (for the graph's edges). */
void cfg_value_node_exprs(const struct cfg_graph *g, size_t node,
			  void (*cb)(void *ud, const struct cfg_body *body, const struct cfg_expr *e,
				     const struct cfg_scope *scope),
			  void *ud);

#endif
