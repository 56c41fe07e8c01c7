/* Loading a configuration into a component graph: see graph.h. */
#include "agent/config/graph.h"

#include <stdlib.h>
#include <string.h>

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
	}
	free(g->nodes);
	free(g->order);
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

long cfg_graph_match(const struct cfg_graph *g, const char *const *frags, size_t n, size_t *consumed)
{
	long best = -1;
	size_t best_k = 0;

	for (size_t i = 0; i < g->n; i++) {
		size_t k = prefix_frags(g->nodes[i].id, frags, n);
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

struct cfg_value *cfg_graph_resolve_static(void *graph, const char *const *frags, const struct cfg_pos *pos, size_t n,
					   size_t *used, struct cfg_diags *d)
{
	const struct cfg_graph *g = graph;
	size_t k;
	long idx = cfg_graph_match(g, frags, n, &k);

	if (idx < 0) {
		const struct cfg_component_type *types[MAX_TYPES];
		size_t nt = cfg_registry_list(types, MAX_TYPES);
		for (size_t i = 0; i < nt && i < MAX_TYPES; i++) {
			size_t tk = prefix_frags(types[i]->name, frags, n);
			if (tk && tk < n && !types[i]->unlabeled) {
				cfg_error(d, pos[0], "component \"%s.%s\" is not defined in this file", types[i]->name, frags[tk]);
				return NULL;
			}
			if (tk && types[i]->unlabeled) {
				cfg_error(d, pos[0], "component \"%s\" is not defined in this file", types[i]->name);
				return NULL;
			}
		}
		for (size_t i = 0; i < nt && i < MAX_TYPES; i++) {
			if (strncmp(types[i]->name, frags[0], strlen(frags[0])) == 0 && types[i]->name[strlen(frags[0])] == '.') {
				cfg_error(d, pos[0], "reference to an unknown component type in \"%s%s%s\"", frags[0],
					  n > 1 ? "." : "", n > 1 ? frags[1] : "");
				return NULL;
			}
		}
		cfg_error(d, pos[0], "identifier \"%s\" does not exist", frags[0]);
		return NULL;
	}
	const struct cfg_node *node = &g->nodes[idx];
	struct np_buf list = NP_BUF_INIT;
	list_exports(node->type, &list);
	if (k == n) {
		if (list.len)
			cfg_error(d, pos[k - 1], "%s is a component, not a value; use one of its exports: %s", node->id, list.p);
		else
			cfg_error(d, pos[k - 1], "%s is a component, not a value (it exports nothing)", node->id);
		np_buf_free(&list);
		return NULL;
	}
	const struct cfg_export *ex = cfg_type_export(node->type, frags[k]);
	if (!ex) {
		if (list.len)
			cfg_error(d, pos[k], "component %s has no export named \"%s\" (its exports: %s)", node->id, frags[k],
				  list.p);
		else
			cfg_error(d, pos[k], "component %s has no export named \"%s\" (it exports nothing)", node->id, frags[k]);
		np_buf_free(&list);
		return NULL;
	}
	np_buf_free(&list);
	*used = k + 1;
	struct cfg_value *v = cfg_unknown(ex->type);
	if (!v)
		cfg_error(d, pos[0], "out of memory");
	return v;
}

/* ---- references -> edges ---- */

struct edge_ctx {
	struct cfg_graph *g;
	size_t from;
	int oom;
};

static void add_edge(void *ud, const char *const *frags, const struct cfg_pos *pos, size_t n)
{
	struct edge_ctx *ec = ud;
	struct cfg_node *node = &ec->g->nodes[ec->from];
	size_t k;
	long to = cfg_graph_match(ec->g, frags, n, &k);

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

/* Kahn's algorithm; nodes left over are on or behind a cycle, which is reported
 * with its path at the reference that closes it. */
static int order_nodes(struct cfg_graph *g, struct cfg_diags *d)
{
	size_t n = g->n, head = 0, tail = 0;
	size_t *pending = calloc(n ? n : 1, sizeof(size_t));
	unsigned char *done = calloc(n ? n : 1, 1), *reported = calloc(n ? n : 1, 1);
	size_t *walk = calloc(n ? n : 1, sizeof(size_t));
	long *seen_at = malloc((n ? n : 1) * sizeof(long));
	size_t n_edges = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		n_edges += g->nodes[i].n_deps;
	size_t *rstart = calloc(n + 1, sizeof(size_t)), *rfill = calloc(n ? n : 1, sizeof(size_t));
	size_t *rdeps = calloc(n_edges ? n_edges : 1, sizeof(size_t));

	g->order = calloc(n ? n : 1, sizeof(size_t));
	if (!pending || !done || !reported || !walk || !seen_at || !g->order || !rstart || !rfill || !rdeps) {
		cfg_error(d, CFG_NOPOS, "out of memory");
		rc = -1;
		goto out;
	}
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
	if (tail == n)
		goto out;
	rc = -1;
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
		if (!already) {
			struct np_buf path = NP_BUF_INIT;
			struct cfg_pos at = CFG_NOPOS;
			for (size_t i = first; i < len; i++) {
				np_buf_printf(&path, "%s -> ", g->nodes[walk[i]].id);
				reported[walk[i]] = 1;
			}
			np_buf_puts(&path, g->nodes[walk[first]].id);
			size_t a = walk[first], b = first + 1 < len ? walk[first + 1] : walk[first];
			for (size_t e = 0; e < g->nodes[a].n_deps; e++)
				if (g->nodes[a].deps[e].to == b)
					at = g->nodes[a].deps[e].pos;
			cfg_error(d, at, "cycle in component references: %s", path.p ? path.p : "");
			np_buf_free(&path);
		}
		for (size_t i = 0; i < len; i++) {
			seen_at[walk[i]] = -1;
			reported[walk[i]] = 1; /* also the nodes that only lead into the cycle */
		}
	}
out:
	free(rstart);
	free(rfill);
	free(rdeps);
	free(pending);
	free(done);
	free(reported);
	free(walk);
	free(seen_at);
	return rc;
}

static void unknown_component(const struct cfg_stmt *st, struct cfg_diags *d)
{
	const struct cfg_component_type *types[MAX_TYPES];
	const char *names[MAX_TYPES];
	size_t nt = cfg_registry_list(types, MAX_TYPES);
	struct np_buf list = NP_BUF_INIT;

	if (nt > MAX_TYPES)
		nt = MAX_TYPES;
	for (size_t i = 0; i < nt; i++) {
		names[i] = types[i]->name;
		np_buf_printf(&list, "%s%s", i ? ", " : "", names[i]);
	}
	const char *hint = cfg_suggest(st->name, names, nt);
	if (hint)
		cfg_error(d, st->pos, "unknown component \"%s\"; did you mean \"%s\"?", st->name, hint);
	else
		cfg_error(d, st->pos, "component \"%s\" is not supported by nodeprof (supported: %s)", st->name,
			  list.p ? list.p : "");
	np_buf_free(&list);
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
	g->nodes = calloc(file->body.n ? file->body.n : 1, sizeof(*g->nodes));
	if (!g->nodes) {
		cfg_error(d, CFG_NOPOS, "out of memory");
		cfg_graph_free(g);
		return NULL;
	}
	for (size_t i = 0; i < file->body.n; i++) {
		const struct cfg_stmt *st = file->body.v[i];
		if (!st->is_block) {
			cfg_error(d, st->pos,
				  "attributes are not allowed at the top level; \"%s\" must be inside a component block",
				  st->name);
			continue;
		}
		const struct cfg_component_type *type = cfg_registry_find(st->name);
		if (!type) {
			unknown_component(st, d);
			continue;
		}
		char *id;
		if (type->unlabeled) {
			if (st->label) {
				cfg_error(d, st->label_pos, "block \"%s\" does not support specifying labels", st->name);
				continue;
			}
			id = strdup(st->name);
		} else {
			if (!st->label || !*st->label) {
				cfg_error(d, st->label ? st->label_pos : st->pos,
					  "component \"%s\" must have a label, e.g. %s \"default\" { ... }", st->name, st->name);
				continue;
			}
			if (asprintf(&id, "%s.%s", st->name, st->label) < 0)
				id = NULL;
		}
		if (!id) {
			cfg_error(d, st->pos, "out of memory");
			continue;
		}
		long prev = cfg_graph_find(g, id);
		if (prev >= 0) {
			const struct cfg_stmt *first = g->nodes[prev].stmt;
			cfg_error(d, st->label ? st->label_pos : st->pos, "component \"%s\" is already defined at %s:%u:%u", id,
				  file->name, first->pos.line, first->pos.col);
			free(id);
			continue;
		}
		g->nodes[g->n++] = (struct cfg_node){ .id = id, .type = type, .stmt = st };
	}

	struct edge_ctx ec = { g, 0, 0 };
	for (size_t i = 0; i < g->n; i++) {
		ec.from = i;
		body_refs(&g->nodes[i].stmt->body, &ec);
	}
	if (ec.oom)
		cfg_error(d, CFG_NOPOS, "out of memory");

	/* Arguments of every component, in file order (references are unknown values). */
	struct cfg_eval ev = { .d = d, .resolve = cfg_graph_resolve_static, .ud = g, .warn_deprecated = 1 };
	for (size_t i = 0; i < g->n; i++) {
		struct cfg_node *node = &g->nodes[i];
		node->args = cfg_decode(node->type->args, &node->stmt->body, node->stmt->pos, node->id, &ev, d);
	}
	if (order_nodes(g, d) || d->n_errors != errors) {
		cfg_graph_free(g);
		return NULL;
	}
	return g;
}

struct cfg_graph *cfg_graph_load_source(const char *name, const char *src, size_t len, struct cfg_diags *d)
{
	size_t errors = d->n_errors;
	struct cfg_file *f = cfg_parse(name, src, len, d);

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

struct cfg_graph *cfg_graph_load_file(const char *path, struct cfg_diags *d)
{
	size_t errors = d->n_errors;
	struct cfg_file *f = cfg_parse_file(path, d);

	if (!f)
		return NULL;
	if (d->n_errors != errors) {
		cfg_file_free(f);
		return NULL;
	}
	return build(f, d);
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
		if ((subset && !subset[i]) || g->nodes[i].type->ops)
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
	np_buf_printf(out, "%zu component%s", g->n, g->n == 1 ? "" : "s");
	for (size_t i = 0; i < g->n; i++)
		np_buf_printf(out, "%s%s", i ? ", " : ": ", g->nodes[i].id);
}
