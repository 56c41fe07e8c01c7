/* Loading a configuration into a component graph: see graph.h. */
#include "agent/config/graph.h"

#include <stdlib.h>
#include <string.h>

#include "agent/config/declare.h"
#include "agent/config/eval.h"
#include "agent/config/parser.h"

#define MAX_TYPES 64

void cfg_graph_free(struct cfg_graph *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++) {
		free(g->nodes[i].id);
		free(g->nodes[i].deps);
		cfg_args_free(g->nodes[i].args);
		cfg_unref(g->nodes[i].static_value);
	}
	free(g->nodes);
	free(g->order);
	for (size_t i = 0; i < g->n_scopes; i++)
		cfg_scope_free(g->scopes[i]);
	free(g->scopes);
	cfg_file_free(g->file);
	free(g);
}

long cfg_graph_find(const struct cfg_graph *g, const char *id)
{
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->nodes[i].id, id) == 0)
			return (long)i;
	return -1;
}

/* Whether frags[0..) starts with the dotted name `id`; returns the fragment count. */
static size_t prefix_frags(const char *id, const char *const *frags, size_t n)
{
	size_t k = 0;
	const char *p = id;

	while (k < n) {
		size_t len = strlen(frags[k]);
		if (strncmp(p, frags[k], len) != 0)
			return 0;
		p += len;
		k++;
		if (*p == '\0')
			return k;
		if (*p != '.')
			return 0;
		p++;
	}
	return 0;
}

long cfg_graph_match(const struct cfg_graph *g, const struct cfg_scope *scope, const char *const *frags, size_t n,
		     size_t *consumed)
{
	long best = -1;
	size_t best_k = 0;

	for (size_t i = 0; i < g->n; i++) {
		if (g->nodes[i].scope != scope)
			continue;
		size_t k = prefix_frags(g->nodes[i].local_id, frags, n);
		if (k > best_k) {
			best_k = k;
			best = (long)i;
		}
	}
	*consumed = best_k;
	return best;
}

static void list_exports(const struct cfg_component_type *t, struct np_buf *b)
{
	for (size_t i = 0; t->exports && t->exports[i].name; i++)
		np_buf_printf(b, "%s%s", i ? ", " : "", t->exports[i].name);
}

/* "in this file" or "in declare \"profiling\"" */
static const char *where(const struct cfg_scope *scope, char *buf, size_t cap)
{
	if (!scope->decl)
		return "in this file";
	snprintf(buf, cap, "in declare \"%s\"", scope->decl->type.name);
	return buf;
}

/* A reference that names nothing in its scope: says what it might have meant. */
static void unresolved(const struct cfg_graph *g, const struct cfg_scope *scope, const char *const *frags,
		       const struct cfg_pos *pos, size_t n, struct cfg_diags *d)
{
	const struct cfg_component_type *types[MAX_TYPES];
	size_t nt = cfg_registry_list(types, MAX_TYPES);
	char wb[160];

	if (strcmp(frags[0], "argument") == 0) {
		if (!scope->decl)
			cfg_error(d, pos[0], "argument.%s: arguments can only be referenced inside a declare block",
				  n > 1 ? frags[1] : "NAME");
		else if (n > 1)
			cfg_error(d, pos[1], "argument \"%s\" is not declared in declare \"%s\"", frags[1],
				  scope->decl->type.name);
		else
			cfg_error(d, pos[0], "use argument.NAME.value to read an argument");
		return;
	}
	if (scope->decl) {
		/* Alloy does not show the file's components inside a declare. */
		for (const struct cfg_scope *p = scope->parent; p; p = p->parent) {
			size_t k;
			long idx = cfg_graph_match(g, p, frags, n, &k);
			if (idx >= 0) {
				cfg_error(d, pos[0],
					  "%s is not visible inside declare \"%s\": a custom component sees only its own "
					  "components and arguments; pass the value in as an argument",
					  g->nodes[idx].local_id, scope->decl->type.name);
				return;
			}
		}
	}
	if (n > 1 && cfg_scope_find_declare(scope, frags[0])) {
		cfg_error(d, pos[0], "component \"%s.%s\" is not defined %s", frags[0], frags[1],
			  where(scope, wb, sizeof(wb)));
		return;
	}
	for (size_t i = 0; i < nt && i < MAX_TYPES; i++) {
		size_t tk = prefix_frags(types[i]->name, frags, n);
		if (tk && tk < n && !types[i]->unlabeled) {
			cfg_error(d, pos[0], "component \"%s.%s\" is not defined %s", types[i]->name, frags[tk],
				  where(scope, wb, sizeof(wb)));
			return;
		}
		if (tk && types[i]->unlabeled) {
			cfg_error(d, pos[0], "component \"%s\" is not defined %s", types[i]->name, where(scope, wb, sizeof(wb)));
			return;
		}
	}
	for (size_t i = 0; i < nt && i < MAX_TYPES; i++) {
		if (strncmp(types[i]->name, frags[0], strlen(frags[0])) == 0 && types[i]->name[strlen(frags[0])] == '.') {
			cfg_error(d, pos[0], "reference to an unknown component type in \"%s%s%s\"", frags[0], n > 1 ? "." : "",
				  n > 1 ? frags[1] : "");
			return;
		}
	}
	cfg_error(d, pos[0], "identifier \"%s\" does not exist", frags[0]);
}

struct cfg_value *cfg_graph_resolve(void *resolver, const char *const *frags, const struct cfg_pos *pos, size_t n,
				    size_t *used, struct cfg_diags *d)
{
	const struct cfg_resolver *r = resolver;
	const struct cfg_graph *g = r->g;
	size_t k;
	long idx = cfg_graph_match(g, r->scope, frags, n, &k);

	if (idx < 0) {
		unresolved(g, r->scope, frags, pos, n, d);
		return NULL;
	}
	const struct cfg_node *node = &g->nodes[idx];
	struct np_buf list = NP_BUF_INIT;
	list_exports(node->type, &list);
	if (k == n) {
		if (node->kind == CFG_NODE_ARGUMENT)
			cfg_error(d, pos[k - 1], "%s is an argument block, not a value; use %s.value", node->local_id,
				  node->local_id);
		else if (list.len)
			cfg_error(d, pos[k - 1], "%s is a component, not a value; use one of its exports: %s", node->local_id,
				  list.p);
		else
			cfg_error(d, pos[k - 1], "%s is a component, not a value (it exports nothing)", node->local_id);
		np_buf_free(&list);
		return NULL;
	}
	const struct cfg_export *ex = cfg_type_export(node->type, frags[k]);
	if (!ex) {
		if (list.len)
			cfg_error(d, pos[k], "component %s has no export named \"%s\" (its exports: %s)", node->local_id,
				  frags[k], list.p);
		else
			cfg_error(d, pos[k], "component %s has no export named \"%s\" (it exports nothing)", node->local_id,
				  frags[k]);
		np_buf_free(&list);
		return NULL;
	}
	np_buf_free(&list);
	struct cfg_value *v = r->export_value(r->ud, (size_t)idx, (size_t)(ex - node->type->exports), pos[0], d);
	if (v)
		*used = k + 1;
	return v;
}

struct cfg_value *cfg_graph_static_export(void *ud, size_t node, size_t k, struct cfg_pos pos, struct cfg_diags *d)
{
	const struct cfg_graph *g = ud;
	const struct cfg_node *nd = &g->nodes[node];
	struct cfg_value *v;

	if (nd->kind == CFG_NODE_COMPONENT || !nd->static_value)
		v = cfg_unknown(nd->type->exports[k].type); /* also a value node that failed or is on a cycle */
	else if (nd->kind == CFG_NODE_ARGUMENT)
		v = cfg_ref(nd->static_value);
	else
		v = cfg_ref(cfg_object_get(nd->static_value, nd->type->exports[k].name));
	if (!v)
		v = cfg_unknown(NULL); /* an export whose value failed to evaluate */
	if (!v)
		cfg_error(d, pos, "out of memory");
	return v;
}

/* ---- references -> edges ---- */

struct edge_ctx {
	struct cfg_graph *g;
	size_t from;
	const struct cfg_scope *scope; /* where the references being walked resolve */
	int oom;
};

static void add_edge(void *ud, const char *const *frags, const struct cfg_pos *pos, size_t n)
{
	struct edge_ctx *ec = ud;
	struct cfg_node *node = &ec->g->nodes[ec->from];
	size_t k;
	long to = cfg_graph_match(ec->g, ec->scope, frags, n, &k);

	if (to < 0)
		return; /* reported when the arguments are evaluated */
	for (size_t i = 0; i < node->n_deps; i++)
		if (node->deps[i].to == (size_t)to)
			return;
	struct cfg_edge *v = realloc(node->deps, (node->n_deps + 1) * sizeof(*v));
	if (!v) {
		ec->oom = 1;
		return;
	}
	node->deps = v;
	node->deps[node->n_deps++] = (struct cfg_edge){ (size_t)to, pos[0] };
}

static void body_refs(const struct cfg_body *body, struct edge_ctx *ec)
{
	for (size_t i = 0; i < body->n; i++) {
		const struct cfg_stmt *st = body->v[i];
		if (st->is_block)
			body_refs(&st->body, ec);
		else
			cfg_expr_refs(st->value, add_edge, ec);
	}
}

static void scoped_refs(void *ud, const struct cfg_body *body, const struct cfg_expr *e, const struct cfg_scope *scope)
{
	struct edge_ctx *ec = ud;

	ec->scope = scope;
	if (body)
		body_refs(body, ec);
	if (e)
		cfg_expr_refs(e, add_edge, ec);
}

/* Kahn's algorithm; nodes left over are on or behind a cycle, which is reported
 * with its path at the reference that closes it. */
/* Kahn's algorithm: g->order gets every node whose dependencies all come before it;
 * done[] marks them. Returns how many, or -1 when out of memory. */
static long topo_order(struct cfg_graph *g, unsigned char *done)
{
	size_t n = g->n, head = 0, tail = 0, n_edges = 0;
	long rc = -1;

	for (size_t i = 0; i < n; i++)
		n_edges += g->nodes[i].n_deps;
	size_t *pending = calloc(n ? n : 1, sizeof(size_t));
	size_t *rstart = calloc(n + 1, sizeof(size_t)), *rfill = calloc(n ? n : 1, sizeof(size_t));
	size_t *rdeps = calloc(n_edges ? n_edges : 1, sizeof(size_t));
	if (!pending || !rstart || !rfill || !rdeps)
		goto out;
	for (size_t i = 0; i < n; i++) {
		pending[i] = g->nodes[i].n_deps;
		if (pending[i] == 0)
			g->order[tail++] = i;
	}
	/* Dependents of each node, as offsets into one array (CSR). */
	for (size_t i = 0; i < n; i++)
		for (size_t e = 0; e < g->nodes[i].n_deps; e++)
			rstart[g->nodes[i].deps[e].to + 1]++;
	for (size_t i = 0; i < n; i++)
		rstart[i + 1] += rstart[i];
	for (size_t i = 0; i < n; i++)
		for (size_t e = 0; e < g->nodes[i].n_deps; e++) {
			size_t to = g->nodes[i].deps[e].to;
			rdeps[rstart[to] + rfill[to]++] = i;
		}
	while (head < tail) {
		size_t u = g->order[head++];
		done[u] = 1;
		for (size_t k = rstart[u]; k < rstart[u + 1]; k++)
			if (--pending[rdeps[k]] == 0)
				g->order[tail++] = rdeps[k];
	}
	rc = (long)tail;
out:
	free(pending);
	free(rstart);
	free(rfill);
	free(rdeps);
	return rc;
}

/* "cycle in component references: a -> b -> a", at a's reference to b. */
static void cycle_error(const struct cfg_graph *g, const size_t *cycle, size_t len, struct cfg_diags *d)
{
	struct np_buf path = NP_BUF_INIT;
	struct cfg_pos at = CFG_NOPOS;

	for (size_t i = 0; i < len; i++)
		np_buf_printf(&path, "%s -> ", g->nodes[cycle[i]].id);
	np_buf_puts(&path, g->nodes[cycle[0]].id);
	size_t a = cycle[0], b = len > 1 ? cycle[1] : cycle[0];
	for (size_t e = 0; e < g->nodes[a].n_deps; e++)
		if (g->nodes[a].deps[e].to == b)
			at = g->nodes[a].deps[e].pos;
	cfg_error(d, at, "cycle in component references: %s", path.p ? path.p : "");
	np_buf_free(&path);
}

/* Every cycle among the nodes topo_order left out, once each. */
static void report_cycles(const struct cfg_graph *g, const unsigned char *done, struct cfg_diags *d)
{
	size_t n = g->n;
	unsigned char *reported = calloc(n ? n : 1, 1);
	size_t *walk = calloc(n ? n : 1, sizeof(size_t));
	long *seen_at = malloc((n ? n : 1) * sizeof(long));

	if (!reported || !walk || !seen_at) {
		cfg_error(d, CFG_NOPOS, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		seen_at[i] = -1;
	for (size_t start = 0; start < n; start++) {
		if (done[start] || reported[start])
			continue;
		/* Follow unfinished dependencies until a node repeats: that is a cycle. */
		size_t len = 0, u = start;
		while (seen_at[u] < 0) {
			seen_at[u] = (long)len;
			walk[len++] = u;
			size_t next = u;
			for (size_t e = 0; e < g->nodes[u].n_deps; e++) {
				if (!done[g->nodes[u].deps[e].to]) {
					next = g->nodes[u].deps[e].to;
					break;
				}
			}
			u = next;
		}
		size_t first = (size_t)seen_at[u];
		int already = 0;
		for (size_t i = first; i < len; i++)
			already |= reported[walk[i]];
		if (!already)
			cycle_error(g, walk + first, len - first, d);
		for (size_t i = 0; i < len; i++) {
			seen_at[walk[i]] = -1;
			reported[walk[i]] = 1; /* the cycle, and the nodes that only lead into it */
		}
	}
out:
	free(reported);
	free(walk);
	free(seen_at);
}

static int order_nodes(struct cfg_graph *g, struct cfg_diags *d)
{
	unsigned char *done = calloc(g->n ? g->n : 1, 1);
	long ordered;

	g->order = calloc(g->n ? g->n : 1, sizeof(size_t));
	if (!done || !g->order || (ordered = topo_order(g, done)) < 0) {
		free(done);
		cfg_error(d, CFG_NOPOS, "out of memory");
		return -1;
	}
	if ((size_t)ordered != g->n)
		report_cycles(g, done, d);
	free(done);
	return (size_t)ordered == g->n ? 0 : -1;
}

static struct cfg_graph *build(struct cfg_file *file, struct cfg_diags *d)
{
	struct cfg_graph *g = calloc(1, sizeof(*g));
	size_t errors = d->n_errors;

	if (!g) {
		cfg_file_free(file);
		cfg_error(d, CFG_NOPOS, "out of memory");
		return NULL;
	}
	g->file = file;
	cfg_declare_expand(g, d);

	struct edge_ctx ec = { g, 0, NULL, 0 };
	for (size_t i = 0; i < g->n; i++) {
		ec.from = i;
		if (g->nodes[i].kind == CFG_NODE_COMPONENT)
			scoped_refs(&ec, &g->nodes[i].stmt->body, NULL, g->nodes[i].scope);
		else
			cfg_value_node_exprs(g, i, scoped_refs, &ec);
	}
	if (ec.oom)
		cfg_error(d, CFG_NOPOS, "out of memory");

	/* Arguments of every component and values of arguments and instances, in
	 * dependency order so that a component inside a declare is checked with the values
	 * its arguments have (references to components are unknown values). */
	int ordered = order_nodes(g, d) == 0;
	struct cfg_resolver r = { .g = g, .export_value = cfg_graph_static_export, .ud = g };
	struct cfg_eval ev = { .d = d, .resolve = cfg_graph_resolve, .ud = &r, .warn_deprecated = 1 };
	for (size_t k = 0; k < g->n; k++) {
		size_t i = ordered ? g->order[k] : k;
		struct cfg_node *node = &g->nodes[i];
		if (node->kind != CFG_NODE_COMPONENT) {
			node->static_value = cfg_value_node_eval(g, i, &r, 1, d);
			continue;
		}
		r.scope = node->scope;
		node->args = cfg_decode(node->type->args, &node->stmt->body, node->stmt->pos, node->id, &ev, d);
	}
	if (!ordered || d->n_errors != errors) {
		cfg_graph_free(g);
		return NULL;
	}
	return g;
}

/* Builds the graph of a parsed file (takes ownership of f; NULL is a failed parse).
 * `errors` is the error count before parsing. */
static struct cfg_graph *build_parsed(struct cfg_file *f, size_t errors, struct cfg_diags *d)
{
	if (!f)
		return NULL;
	if (d->n_errors != errors) {
		/* After syntax errors the tree is partial: semantic errors would mostly be
		 * consequences, so only the syntax errors are reported (as Alloy does). */
		cfg_file_free(f);
		return NULL;
	}
	return build(f, d);
}

struct cfg_graph *cfg_graph_load_source(const char *name, const char *src, size_t len, struct cfg_diags *d)
{
	size_t errors = d->n_errors;

	return build_parsed(cfg_parse(name, src, len, d), errors, d);
}

struct cfg_graph *cfg_graph_load_file(const char *path, struct cfg_diags *d)
{
	size_t errors = d->n_errors;

	return build_parsed(cfg_parse_file(path, d), errors, d);
}

void cfg_graph_closure(const struct cfg_graph *g, size_t node, unsigned char *in)
{
	size_t *stack = malloc((g->n ? g->n : 1) * sizeof(size_t)), top = 0;

	if (!stack)
		return;
	if (!in[node]) {
		in[node] = 1;
		stack[top++] = node;
	}
	while (top) {
		size_t u = stack[--top];
		for (size_t e = 0; e < g->nodes[u].n_deps; e++) {
			size_t v = g->nodes[u].deps[e].to;
			if (!in[v]) {
				in[v] = 1;
				stack[top++] = v;
			}
		}
	}
	free(stack);
}

size_t cfg_graph_check_runnable(const struct cfg_graph *g, const unsigned char *subset, const char *command,
				struct cfg_diags *d)
{
	size_t bad = 0;

	for (size_t i = 0; i < g->n; i++) {
		if ((subset && !subset[i]) || g->nodes[i].kind != CFG_NODE_COMPONENT || g->nodes[i].type->ops)
			continue;
		cfg_error(d, g->nodes[i].stmt->pos,
			  "%s is not supported by `%s` yet (`nodeprof check` validates it, but its runtime is not part of "
			  "this build)",
			  g->nodes[i].type->name, command);
		bad++;
	}
	return bad;
}

void cfg_graph_summary(const struct cfg_graph *g, struct np_buf *out)
{
	size_t n = 0;

	for (size_t i = 0; i < g->n; i++)
		n += g->nodes[i].kind != CFG_NODE_ARGUMENT;
	np_buf_printf(out, "%zu component%s", n, n == 1 ? "" : "s");
	for (size_t i = 0, k = 0; i < g->n; i++)
		if (g->nodes[i].kind != CFG_NODE_ARGUMENT)
			np_buf_printf(out, "%s%s", k++ ? ", " : ": ", g->nodes[i].id);
}
