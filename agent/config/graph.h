/* A loaded configuration: the parsed file, its components (nodes) and the
 * references between them (edges), in dependency order, fully validated. This is
 * everything `nodeprof check` does; the controller runs a graph.
 *
 * Validation is static: references to other components' exports evaluate to
 * unknown values of the export's declared type, so every argument is type-checked
 * and every constant argument range-checked without running anything. */
#ifndef NP_CONFIG_GRAPH_H
#define NP_CONFIG_GRAPH_H

#include <stddef.h>

#include "agent/config/args.h"
#include "agent/config/ast.h"
#include "agent/config/component.h"
#include "agent/config/diag.h"
#include "agent/util/strbuf.h"

struct cfg_edge {
	size_t to;	    /* index of the node referenced */
	struct cfg_pos pos; /* of the first reference */
};

struct cfg_node {
	char *id; /* "discovery.relabel.pods", or "logging" */
	const struct cfg_component_type *type;
	const struct cfg_stmt *stmt; /* in the graph's file */
	struct cfg_edge *deps;	     /* unique targets */
	size_t n_deps;
	struct cfg_args *args; /* check-time arguments (with unknown references) */
};

struct cfg_graph {
	struct cfg_file *file;
	struct cfg_node *nodes; /* in file order */
	size_t n;
	size_t *order; /* topological: every node after the nodes it references */
};

/* Parses and validates. Returns NULL when there is any error (all reported in d);
 * warnings alone do not fail. */
struct cfg_graph *cfg_graph_load_file(const char *path, struct cfg_diags *d);
struct cfg_graph *cfg_graph_load_source(const char *name, const char *src, size_t len, struct cfg_diags *d);
void cfg_graph_free(struct cfg_graph *g);

/* Index of the component with this ID, or -1. */
long cfg_graph_find(const struct cfg_graph *g, const char *id);

/* The component a reference names (the node whose ID is a prefix of frags), or -1;
 * *consumed is the number of fragments that form its ID. */
long cfg_graph_match(const struct cfg_graph *g, const char *const *frags, size_t n, size_t *consumed);

/* Marks in[i] = 1 for the node and every node it depends on, transitively. */
void cfg_graph_closure(const struct cfg_graph *g, size_t node, unsigned char *in);

/* Reports every component (among `subset` when not NULL) whose type has no runtime
 * yet: "<type> is not supported by `<command>` yet". Returns the count. */
size_t cfg_graph_check_runnable(const struct cfg_graph *g, const unsigned char *subset, const char *command,
				struct cfg_diags *d);

/* "4 components: a, b, c, d" */
void cfg_graph_summary(const struct cfg_graph *g, struct np_buf *out);

/* The check-time reference resolver, exposed for the controller's messages: reports
 * a reference that names no component or export. */
struct cfg_value *cfg_graph_resolve_static(void *graph, const char *const *frags, const struct cfg_pos *pos, size_t n,
					   size_t *used, struct cfg_diags *d);

#endif
