/* A loaded configuration: the parsed file, its components (nodes) and the
 * references between them (edges), in dependency order, fully validated. This is
 * everything `nodeprof check` does; the controller runs a graph.
 *
 * Validation is static: references to other components' exports evaluate to
 * unknown values of the export's declared type, so every argument is type-checked
 * and every constant argument range-checked without running anything. Custom
 * components (declare.h) are expanded into nodes; their arguments and exports
 * evaluate to their check-time values, so constants passed in are checked too. */
#ifndef NP_CONFIG_GRAPH_H
#define NP_CONFIG_GRAPH_H

#include <stddef.h>

#include "agent/config/args.h"
#include "agent/config/ast.h"
#include "agent/config/component.h"
#include "agent/config/diag.h"
#include "lib/strbuf.h"

struct cfg_edge {
	size_t to;	    /* index of the node referenced */
	struct cfg_pos pos; /* of the first reference */
};

struct cfg_scope; /* a custom component instance's inside, or the file's top level: declare.h */

enum cfg_node_kind {
	CFG_NODE_COMPONENT = 0, /* a built-in component: started, updated and stopped */
	CFG_NODE_ARGUMENT,	/* `argument "x"` of a custom component instance: its value */
	CFG_NODE_INSTANCE,	/* a custom component instance (`profiling "feature"`): its exports */
};

struct cfg_node {
	char *id;	      /* "discovery.relabel.pods", "logging", "profiling.feature/pyroscope.ebpf.x" */
	const char *local_id; /* the id within its scope (a suffix of id): what references name */
	enum cfg_node_kind kind;
	const struct cfg_component_type *type; /* for an instance: its declare's (exports = export blocks) */
	const struct cfg_stmt *stmt;	       /* component/argument: its block; instance: the instantiating block */
	const struct cfg_scope *scope;	       /* where it is written: its references resolve there */
	const struct cfg_scope *inner;	       /* instance: the scope of its components */
	const struct cfg_stmt *provided;       /* argument: the instance's attribute that sets it, or NULL */
	struct cfg_edge *deps;		       /* unique targets */
	size_t n_deps;
	struct cfg_args *args;		/* component: check-time arguments (with unknown references) */
	struct cfg_value *static_value; /* argument: its check-time value; instance: object of its exports */
};

struct cfg_graph {
	struct cfg_file *file;
	struct cfg_node *nodes; /* in file order, an instance's nodes after it */
	size_t n;
	size_t *order;		  /* topological: every node after the nodes it references */
	struct cfg_scope **scopes; /* owned; [0] is the file's top level */
	size_t n_scopes;
};

/* Largest number of nodes a file may expand to (custom components instantiated inside
 * custom components multiply). */
#define CFG_MAX_NODES 10000

/* How references are resolved, in one scope: `export_value` gives the value of a
 * node's export (check time: unknown values of the export's type and the static
 * values of arguments and instances; run time: the current exports). */
struct cfg_resolver {
	const struct cfg_graph *g;
	const struct cfg_scope *scope;
	/* A new reference to the value of export `k` of node `node`; NULL after reporting at pos. */
	struct cfg_value *(*export_value)(void *ud, size_t node, size_t k, struct cfg_pos pos, struct cfg_diags *d);
	void *ud;
};

/* The cfg_eval.resolve callback for a struct cfg_resolver (ud): reports a reference
 * that names no component, argument or export in the resolver's scope. */
struct cfg_value *cfg_graph_resolve(void *resolver, const char *const *frags, const struct cfg_pos *pos, size_t n,
				    size_t *used, struct cfg_diags *d);

/* The check-time export_value of a resolver (ud unused). */
struct cfg_value *cfg_graph_static_export(void *ud, size_t node, size_t k, struct cfg_pos pos, struct cfg_diags *d);

/* Parses and validates. Returns NULL when there is any error (all reported in d);
 * warnings alone do not fail. */
struct cfg_graph *cfg_graph_load_file(const char *path, struct cfg_diags *d);
struct cfg_graph *cfg_graph_load_source(const char *name, const char *src, size_t len, struct cfg_diags *d);
void cfg_graph_free(struct cfg_graph *g);

/* Index of the component with this ID, or -1. */
long cfg_graph_find(const struct cfg_graph *g, const char *id);

/* The node of `scope` a reference names (the node whose local ID is a prefix of frags),
 * or -1; *consumed is the number of fragments that form its ID. */
long cfg_graph_match(const struct cfg_graph *g, const struct cfg_scope *scope, const char *const *frags, size_t n,
		     size_t *consumed);

/* Marks in[i] = 1 for the node and every node it depends on, transitively. */
void cfg_graph_closure(const struct cfg_graph *g, size_t node, unsigned char *in);

/* Reports every component (among `subset` when not NULL) whose type has no runtime
 * yet: "<type> is not supported by `<command>` yet". Returns the count. */
size_t cfg_graph_check_runnable(const struct cfg_graph *g, const unsigned char *subset, const char *command,
				struct cfg_diags *d);

/* "4 components: a, b, c, d" (argument nodes are not components) */
void cfg_graph_summary(const struct cfg_graph *g, struct np_buf *out);

#endif
