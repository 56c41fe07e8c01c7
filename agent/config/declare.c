/* Custom components and the expansion of a file into graph nodes: see declare.h.
 * Messages about modules use Alloy's words (internal/runtime/internal/controller:
 * node_config.go, loader.go) so that users can search for them. */
#include "agent/config/declare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "lib/grow.h"

#define MAX_TYPES 64

static const struct cfg_attr argument_attrs[] = {
	CFG_A("comment", &cfg_t_string, 0, "\"\""),
	CFG_A("default", &cfg_t_any, 0, NULL),
	CFG_A("optional", &cfg_t_bool, 0, "false"),
	CFG_END,
};
static const struct cfg_schema argument_schema = { .attrs = argument_attrs };

static const struct cfg_attr export_attrs[] = {
	CFG_A("value", &cfg_t_any, CFG_REQUIRED, NULL),
	CFG_END,
};
static const struct cfg_schema export_schema = { .attrs = export_attrs };

static const struct cfg_export argument_exports[] = { { "value", &cfg_t_any }, { NULL, NULL } };
const struct cfg_component_type cfg_type_argument = { .name = "argument", .args = &argument_schema,
						      .exports = argument_exports };

void cfg_scope_free(struct cfg_scope *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_declares; i++) {
		free(s->declares[i].exports);
		free(s->declares[i].export_stmts);
	}
	free(s->declares);
	free(s->prefix);
	free(s);
}

const struct cfg_declare *cfg_scope_find_declare(const struct cfg_scope *s, const char *name)
{
	/* Alloy's registry chain: the instance's own declares, then those of the scope its
	 * declare is defined in, outwards. */
	while (s) {
		for (size_t i = 0; i < s->n_declares; i++)
			if (strcmp(s->declares[i].type.name, name) == 0)
				return &s->declares[i];
		s = s->decl ? s->decl->defined_in : NULL;
	}
	return NULL;
}

/* ---- expansion ---- */

struct expander {
	struct cfg_graph *g;
	struct cfg_diags *d;
	size_t cap_nodes, cap_scopes; /* of g->nodes, g->scopes */
	int too_many;		       /* CFG_MAX_NODES reached (reported once) */
};

static int is_block(const struct cfg_stmt *st, const char *name)
{
	return st->is_block && strcmp(st->name, name) == 0;
}

static const char *file_name(const struct expander *x)
{
	return x->g->file->name;
}

/* "block argument.x already declared at FILE:L:C" when a block with this kind and label
 * came before `st` in body. */
static int declared_before(struct expander *x, const struct cfg_body *body, size_t upto, const struct cfg_stmt *st)
{
	for (size_t i = 0; i < upto; i++) {
		const struct cfg_stmt *o = body->v[i];
		if (o->is_block && o->label && strcmp(o->name, st->name) == 0 && strcmp(o->label, st->label) == 0) {
			cfg_error(x->d, st->label_pos, "block %s.%s already declared at %s:%u:%u", st->name, st->label,
				  file_name(x), o->pos.line, o->pos.col);
			return 1;
		}
	}
	return 0;
}

static int need_label(struct expander *x, const struct cfg_stmt *st)
{
	if (st->label && *st->label)
		return 1;
	cfg_error(x->d, st->label ? st->label_pos : st->pos, "%s block must have a label, e.g. %s \"name\" { ... }",
		  st->name, st->name);
	return 0;
}

static int add_scope(struct expander *x, struct cfg_scope *s)
{
	if (np_grow((void **)&x->g->scopes, &x->cap_scopes, x->g->n_scopes + 1, sizeof(*x->g->scopes))) {
		cfg_scope_free(s);
		cfg_error(x->d, CFG_NOPOS, "out of memory");
		return -1;
	}
	x->g->scopes[x->g->n_scopes++] = s;
	return 0;
}

/* Registers the declare blocks of body in s, with their export lists. */
static void register_declares(struct expander *x, struct cfg_scope *s, const struct cfg_body *body)
{
	size_t n = 0;

	for (size_t i = 0; i < body->n; i++)
		n += is_block(body->v[i], "declare");
	if (!n)
		return;
	s->declares = calloc(n, sizeof(*s->declares));
	if (!s->declares) {
		cfg_error(x->d, CFG_NOPOS, "out of memory");
		return;
	}
	for (size_t i = 0; i < body->n; i++) {
		const struct cfg_stmt *st = body->v[i];
		if (!is_block(st, "declare") || !need_label(x, st) || declared_before(x, body, i, st))
			continue;
		if (strcmp(st->label, "declare") == 0) {
			cfg_error(x->d, st->label_pos, "'declare' is not a valid label for a declare block");
			continue;
		}
		struct cfg_declare *dc = &s->declares[s->n_declares];
		size_t ne = 0;
		for (size_t k = 0; k < st->body.n; k++)
			ne += is_block(st->body.v[k], "export");
		dc->exports = calloc(ne + 1, sizeof(*dc->exports));
		dc->export_stmts = calloc(ne ? ne : 1, sizeof(*dc->export_stmts));
		if (!dc->exports || !dc->export_stmts) {
			free(dc->exports);
			free(dc->export_stmts);
			cfg_error(x->d, st->pos, "out of memory");
			continue;
		}
		ne = 0;
		for (size_t k = 0; k < st->body.n; k++) {
			const struct cfg_stmt *ex = st->body.v[k];
			if (!is_block(ex, "export") || !need_label(x, ex) || declared_before(x, &st->body, k, ex))
				continue;
			dc->exports[ne] = (struct cfg_export){ ex->label, &cfg_t_any };
			dc->export_stmts[ne++] = ex;
		}
		dc->stmt = st;
		dc->defined_in = s;
		dc->type = (struct cfg_component_type){ .name = st->label, .exports = dc->exports };
		s->n_declares++;
	}
}

/* Appends a node; returns its index or -1 (reported). */
static long add_node(struct expander *x, const struct cfg_scope *s, const struct cfg_stmt *st, enum cfg_node_kind kind,
		     const struct cfg_component_type *type, const char *local)
{
	struct cfg_graph *g = x->g;
	char *id;

	if (g->n >= CFG_MAX_NODES) {
		if (!x->too_many)
			cfg_error(x->d, st->pos,
				  "too many components (more than %d once custom components are expanded)", CFG_MAX_NODES);
		x->too_many = 1;
		return -1;
	}
	if (asprintf(&id, "%s%s", s->prefix, local) < 0) {
		cfg_error(x->d, st->pos, "out of memory");
		return -1;
	}
	long prev = cfg_graph_find(g, id);
	if (prev >= 0) {
		const struct cfg_stmt *first = g->nodes[prev].stmt;
		if (kind == CFG_NODE_ARGUMENT)
			cfg_error(x->d, st->label_pos, "block %s already declared at %s:%u:%u", local, file_name(x),
				  first->pos.line, first->pos.col);
		else
			cfg_error(x->d, st->label ? st->label_pos : st->pos, "component \"%s\" is already defined at %s:%u:%u",
				  local, file_name(x), first->pos.line, first->pos.col);
		free(id);
		return -1;
	}
	if (np_grow((void **)&g->nodes, &x->cap_nodes, g->n + 1, sizeof(*g->nodes))) {
		free(id);
		cfg_error(x->d, st->pos, "out of memory");
		return -1;
	}
	g->nodes[g->n] = (struct cfg_node){ .id = id, .local_id = id + strlen(s->prefix), .kind = kind, .type = type,
					    .stmt = st, .scope = s };
	return (long)g->n++;
}

static void unknown_component(struct expander *x, const struct cfg_scope *s, const struct cfg_stmt *st)
{
	const struct cfg_component_type *types[MAX_TYPES];
	const char *names[MAX_TYPES * 2];
	size_t nt = cfg_registry_list(types, MAX_TYPES), nn = 0;
	struct np_buf list = NP_BUF_INIT;

	if (nt > MAX_TYPES)
		nt = MAX_TYPES;
	for (size_t i = 0; i < nt; i++) {
		names[nn++] = types[i]->name;
		np_buf_printf(&list, "%s%s", i ? ", " : "", types[i]->name);
	}
	/* Custom components in view are candidates too. */
	for (const struct cfg_scope *v = s; v && nn < MAX_TYPES * 2; v = v->decl ? v->decl->defined_in : NULL)
		for (size_t i = 0; i < v->n_declares && nn < MAX_TYPES * 2; i++)
			names[nn++] = v->declares[i].type.name;
	const char *hint = cfg_suggest(st->name, names, nn);
	if (hint)
		cfg_error(x->d, st->pos, "unknown component \"%s\"; did you mean \"%s\"?", st->name, hint);
	else
		cfg_error(x->d, st->pos, "component \"%s\" is not supported by nodeprof (supported: %s)", st->name,
			  list.p ? list.p : "");
	np_buf_free(&list);
}

static void expand_body(struct expander *x, struct cfg_scope *s, const struct cfg_body *body, unsigned depth);

/* The argument node of instance scope `inner` named `name`, or -1. */
static long find_argument(const struct cfg_graph *g, const struct cfg_scope *inner, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->nodes[i].scope == inner && g->nodes[i].kind == CFG_NODE_ARGUMENT &&
		    strcmp(g->nodes[i].stmt->label, name) == 0)
			return (long)i;
	return -1;
}

/* Matches the instance's attributes to the declare's arguments. */
static void bind_arguments(struct expander *x, const struct cfg_stmt *st, const struct cfg_scope *inner)
{
	struct cfg_graph *g = x->g;

	for (size_t i = 0; i < st->body.n; i++) {
		const struct cfg_stmt *a = st->body.v[i];
		if (a->is_block) {
			cfg_error(x->d, a->pos, "custom component \"%s\" takes arguments (attributes), not blocks: \"%s\"",
				  st->name, a->name);
			continue;
		}
		long k = find_argument(g, inner, a->name);
		if (k < 0) {
			struct np_buf list = NP_BUF_INIT;
			for (size_t j = 0; j < g->n; j++)
				if (g->nodes[j].scope == inner && g->nodes[j].kind == CFG_NODE_ARGUMENT)
					np_buf_printf(&list, "%s%s", list.len ? ", " : "", g->nodes[j].stmt->label);
			cfg_error(x->d, a->pos, "Provided argument \"%s\" is not defined in the module (declare \"%s\" at %s:%u:%u %s%s)",
				  a->name, st->name, file_name(x), inner->decl->stmt->pos.line, inner->decl->stmt->pos.col,
				  list.len ? "has the arguments " : "has no arguments", list.len ? list.p : "");
			np_buf_free(&list);
			continue;
		}
		if (g->nodes[k].provided) {
			cfg_error(x->d, a->pos, "attribute \"%s\" may only be provided once", a->name);
			continue;
		}
		g->nodes[k].provided = a;
	}
}

static void instantiate(struct expander *x, struct cfg_scope *s, const struct cfg_stmt *st,
			const struct cfg_declare *dc, unsigned depth)
{
	if (!st->label || !*st->label) {
		cfg_error(x->d, st->label ? st->label_pos : st->pos,
			  "component \"%s\" must have a label, e.g. %s \"default\" { ... }", st->name, st->name);
		return;
	}
	for (const struct cfg_scope *p = s; p && p->decl; p = p->parent) {
		if (p->decl->stmt == dc->stmt) {
			cfg_error(x->d, st->pos, "custom component \"%s\" is used inside its own definition (in %s)", st->name,
				  x->g->nodes[s->instance_node].id);
			return;
		}
	}
	if (depth >= CFG_MAX_DEPTH) {
		cfg_error(x->d, st->pos, "custom components are nested too deeply (more than %d levels)", CFG_MAX_DEPTH);
		return;
	}
	char *local;
	if (asprintf(&local, "%s.%s", st->name, st->label) < 0) {
		cfg_error(x->d, st->pos, "out of memory");
		return;
	}
	long idx = add_node(x, s, st, CFG_NODE_INSTANCE, &dc->type, local);
	free(local);
	if (idx < 0)
		return;
	struct cfg_scope *inner = calloc(1, sizeof(*inner));
	if (!inner || asprintf(&inner->prefix, "%s/", x->g->nodes[idx].id) < 0) {
		free(inner);
		cfg_error(x->d, st->pos, "out of memory");
		return;
	}
	inner->parent = s;
	inner->decl = dc;
	inner->instance_node = (size_t)idx;
	if (add_scope(x, inner))
		return;
	x->g->nodes[idx].inner = inner;
	expand_body(x, inner, &dc->stmt->body, depth + 1);
	bind_arguments(x, st, inner);
}

static void expand_body(struct expander *x, struct cfg_scope *s, const struct cfg_body *body, unsigned depth)
{
	int in_module = s->decl != NULL;

	register_declares(x, s, body);
	for (size_t i = 0; i < body->n && !x->too_many; i++) {
		const struct cfg_stmt *st = body->v[i];
		if (!st->is_block) {
			cfg_error(x->d, st->pos,
				  "attributes are not allowed at the top level%s; \"%s\" must be inside a component block",
				  in_module ? " of a declare block" : "", st->name);
			continue;
		}
		if (strcmp(st->name, "declare") == 0)
			continue; /* registered above; its body is expanded where it is used */
		if (strcmp(st->name, "argument") == 0 || strcmp(st->name, "export") == 0) {
			if (!in_module) {
				cfg_error(x->d, st->pos, "%s blocks only allowed inside a module (a declare block)", st->name);
				continue;
			}
			if (st->name[0] == 'e' || !need_label(x, st))
				continue; /* exports belong to the declare's type (checked with it) */
			char *local;
			if (asprintf(&local, "argument.%s", st->label) < 0) {
				cfg_error(x->d, st->pos, "out of memory");
				continue;
			}
			add_node(x, s, st, CFG_NODE_ARGUMENT, &cfg_type_argument, local);
			free(local);
			continue;
		}
		if (strncmp(st->name, "import.", 7) == 0) {
			cfg_error(x->d, st->pos,
				  "%s is not supported by nodeprof: modules are not implemented; write the declare blocks "
				  "into this file instead",
				  st->name);
			continue;
		}
		const struct cfg_declare *dc = cfg_scope_find_declare(s, st->name);
		if (dc) {
			instantiate(x, s, st, dc, depth);
			continue;
		}
		const struct cfg_component_type *type = cfg_registry_find(st->name);
		if (!type) {
			unknown_component(x, s, st);
			continue;
		}
		if (type->unlabeled) {
			if (in_module) {
				cfg_error(x->d, st->pos, "%s block not allowed inside a module", st->name);
				continue;
			}
			if (st->label) {
				cfg_error(x->d, st->label_pos, "block \"%s\" does not support specifying labels", st->name);
				continue;
			}
			add_node(x, s, st, CFG_NODE_COMPONENT, type, st->name);
			continue;
		}
		if (!st->label || !*st->label) {
			cfg_error(x->d, st->label ? st->label_pos : st->pos,
				  "component \"%s\" must have a label, e.g. %s \"default\" { ... }", st->name, st->name);
			continue;
		}
		char *local;
		if (asprintf(&local, "%s.%s", st->name, st->label) < 0) {
			cfg_error(x->d, st->pos, "out of memory");
			continue;
		}
		add_node(x, s, st, CFG_NODE_COMPONENT, type, local);
		free(local);
	}
}

void cfg_declare_expand(struct cfg_graph *g, struct cfg_diags *d)
{
	struct expander x = { .g = g, .d = d };
	struct cfg_scope *top = calloc(1, sizeof(*top));

	if (!top || !(top->prefix = strdup(""))) {
		free(top);
		cfg_error(d, CFG_NOPOS, "out of memory");
		return;
	}
	if (add_scope(&x, top))
		return;
	expand_body(&x, top, &g->file->body, 0);
}

/* ---- value nodes ---- */

struct cfg_value *cfg_value_node_eval(const struct cfg_graph *g, size_t idx, const struct cfg_resolver *tmpl,
				      int warn_deprecated, struct cfg_diags *d)
{
	const struct cfg_node *node = &g->nodes[idx];
	struct cfg_resolver r = *tmpl;
	struct cfg_eval ev = { .d = d, .resolve = cfg_graph_resolve, .ud = &r, .warn_deprecated = warn_deprecated };
	struct cfg_value *v = NULL;

	if (node->kind == CFG_NODE_INSTANCE) {
		const struct cfg_declare *dc = node->inner->decl;
		size_t n = 0, errors = d->n_errors;
		while (dc->exports[n].name)
			n++;
		struct cfg_value *obj = cfg_object_new(n ? n : 1);
		if (!obj) {
			cfg_error(d, node->stmt->pos, "out of memory");
			return NULL;
		}
		r.scope = node->inner;
		for (size_t i = 0; i < n; i++) {
			const struct cfg_stmt *es = dc->export_stmts[i];
			struct cfg_args *args = cfg_decode(&export_schema, &es->body, es->pos, "export", &ev, d);
			if (!args)
				continue;
			if (cfg_object_put(obj, dc->exports[i].name, cfg_ref((struct cfg_value *)cfg_args_get(args, "value"))))
				cfg_error(d, es->pos, "out of memory");
			cfg_args_free(args);
		}
		cfg_object_done(obj);
		if (d->n_errors != errors) {
			cfg_unref(obj);
			return NULL;
		}
		return obj;
	}

	r.scope = node->scope;
	struct cfg_args *args = cfg_decode(&argument_schema, &node->stmt->body, node->stmt->pos, "argument", &ev, d);
	if (!args)
		return NULL;
	if (node->provided) {
		r.scope = node->scope->parent;
		v = cfg_eval(&ev, node->provided->value);
	} else if (cfg_args_is_unknown(args, "optional")) {
		v = cfg_unknown(NULL);
	} else if (!cfg_args_bool(args, "optional")) {
		const struct cfg_node *inst = &g->nodes[node->scope->instance_node];
		cfg_error(d, inst->stmt->pos, "missing required argument \"%s\" to module (%s; declared at %s:%u:%u)",
			  node->stmt->label, inst->id, g->file->name, node->stmt->pos.line, node->stmt->pos.col);
	} else {
		const struct cfg_value *dv = cfg_args_get(args, "default");
		v = dv ? cfg_ref((struct cfg_value *)dv) : cfg_null();
	}
	cfg_args_free(args);
	return v;
}

void cfg_value_node_exprs(const struct cfg_graph *g, size_t idx,
			  void (*cb)(void *ud, const struct cfg_body *body, const struct cfg_expr *e,
				     const struct cfg_scope *scope),
			  void *ud)
{
	const struct cfg_node *node = &g->nodes[idx];

	if (node->kind == CFG_NODE_INSTANCE) {
		const struct cfg_declare *dc = node->inner->decl;
		for (size_t i = 0; dc->exports[i].name; i++)
			cb(ud, &dc->export_stmts[i]->body, NULL, node->inner);
		return;
	}
	cb(ud, &node->stmt->body, NULL, node->scope);
	if (node->provided)
		cb(ud, NULL, node->provided->value, node->scope->parent);
}
