/* Demangling modes over libiberty (recipe: docs/specs/symbols.md §6.3; Rust: §7).
 *
 *   none        the symbol as stored
 *   simplified  no parameters, no template arguments      std::vector::push_back
 *   templates   no parameters, template arguments kept    std::vector<int, std::allocator<int> >::push_back
 *   full        parameters kept, clone suffix dropped     std::vector<int, ...>::push_back(int&&)
 *
 * C++: the component tree from cplus_demangle_v3_components is edited (clone node dropped,
 * template nodes replaced by their name) and printed with cplus_demangle_print. Rust legacy
 * and v0 names go to rust_demangle first (it hides the legacy hash); a C++-only path would
 * print the hash as a namespace. */
#include "agent/symbols/demangle.h"

#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"

/* Bounds for the tree walk: demangle trees are DAGs (substitutions share nodes), so a
 * hostile name could make a naive walk exponential. */
#define WALK_MAX_DEPTH 256
#define WALK_MAX_NODES 20000

int sym_demangle_parse(const char *s, enum sym_demangle *out, struct np_err *err)
{
	static const char *const names[] = { "none", "simplified", "templates", "full" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (s && strcmp(s, names[i]) == 0) {
			*out = (enum sym_demangle)i;
			return 0;
		}
	return np_errf(err, "invalid demangle mode \"%s\": use one of none, simplified, templates, full", s ? s : "");
}

const char *sym_demangle_name(enum sym_demangle mode)
{
	switch (mode) {
	case SYM_DEMANGLE_SIMPLIFIED:
		return "simplified";
	case SYM_DEMANGLE_TEMPLATES:
		return "templates";
	case SYM_DEMANGLE_FULL:
		return "full";
	default:
		return "none";
	}
}

int sym_is_mangled(const char *name)
{
	return name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

/* Replaces every template node reachable from *slot by its template name. The union member
 * that holds children differs per component type (libiberty's demangle.h). */
static void strip_templates(struct demangle_component **slot, int depth, int *budget)
{
	struct demangle_component *c = *slot;
	if (!c || depth > WALK_MAX_DEPTH || --*budget < 0)
		return;
	while (c && c->type == DEMANGLE_COMPONENT_TEMPLATE) {
		c = c->u.s_binary.left;
		*slot = c;
	}
	if (!c)
		return;
	switch (c->type) {
	case DEMANGLE_COMPONENT_NAME:
	case DEMANGLE_COMPONENT_OPERATOR:
	case DEMANGLE_COMPONENT_BUILTIN_TYPE:
	case DEMANGLE_COMPONENT_EXTENDED_BUILTIN_TYPE:
	case DEMANGLE_COMPONENT_SUB_STD:
	case DEMANGLE_COMPONENT_TEMPLATE_PARAM:
	case DEMANGLE_COMPONENT_FUNCTION_PARAM:
	case DEMANGLE_COMPONENT_NUMBER:
	case DEMANGLE_COMPONENT_CHARACTER:
	case DEMANGLE_COMPONENT_UNNAMED_TYPE:
		return;
	case DEMANGLE_COMPONENT_CTOR:
		strip_templates(&c->u.s_ctor.name, depth + 1, budget);
		return;
	case DEMANGLE_COMPONENT_DTOR:
		strip_templates(&c->u.s_dtor.name, depth + 1, budget);
		return;
	case DEMANGLE_COMPONENT_EXTENDED_OPERATOR:
		strip_templates(&c->u.s_extended_operator.name, depth + 1, budget);
		return;
	case DEMANGLE_COMPONENT_FIXED_TYPE:
		strip_templates(&c->u.s_fixed.length, depth + 1, budget);
		return;
	case DEMANGLE_COMPONENT_LAMBDA:
	case DEMANGLE_COMPONENT_DEFAULT_ARG:
		strip_templates(&c->u.s_unary_num.sub, depth + 1, budget);
		return;
	default: /* every other type is built by d_make_comp: two children */
		strip_templates(&c->u.s_binary.left, depth + 1, budget);
		strip_templates(&c->u.s_binary.right, depth + 1, budget);
		return;
	}
}

static char *print_tree(int opts, struct demangle_component *t, int *oom)
{
	size_t alloc = 0;
	char *s = cplus_demangle_print(opts, t, 64, &alloc);
	if (!s && alloc == 1)
		*oom = 1;
	return s;
}

static char *demangle_cxx(const char *name, enum sym_demangle mode, int *oom)
{
	int opts = mode == SYM_DEMANGLE_FULL ? DMGL_PARAMS | DMGL_ANSI : DMGL_NO_OPTS;
	void *mem = NULL;
	struct demangle_component *t = cplus_demangle_v3_components(name, opts, &mem);
	if (!t) {
		free(mem);
		return NULL;
	}
	char *s = NULL;
	if (mode == SYM_DEMANGLE_FULL) {
		while (t && t->type == DEMANGLE_COMPONENT_CLONE)
			t = t->u.s_binary.left;
		s = t ? print_tree(opts, t, oom) : NULL;
	} else if (mode == SYM_DEMANGLE_TEMPLATES) {
		s = print_tree(opts, t, oom);
	} else {
		int budget = WALK_MAX_NODES;
		strip_templates(&t, 0, &budget);
		s = t ? print_tree(opts, t, oom) : NULL;
		if (!s && !*oom) {
			/* A template parameter whose template was removed cannot print: fall back to
			 * the templates form rather than the mangled name. */
			free(mem);
			mem = NULL;
			t = cplus_demangle_v3_components(name, opts, &mem);
			s = t ? print_tree(opts, t, oom) : NULL;
		}
	}
	free(mem);
	return s;
}

/* Rust v0 in simplified mode: generic arguments emptied ("::<>"), as pyroscope's demangler
 * prints them with NoTemplateParams. The "->" of fn types inside generics is not a bracket. */
static void empty_rust_generics(char *s)
{
	char *w = s;
	const char *r = s;
	while (*r) {
		if (r[0] == ':' && r[1] == ':' && r[2] == '<') {
			memmove(w, "::<", 3);
			w += 3;
			r += 3;
			int depth = 1;
			while (*r && depth > 0) {
				if (*r == '<')
					depth++;
				else if (*r == '>' && !(r > s && r[-1] == '-'))
					depth--;
				r++;
			}
			*w++ = '>';
			continue;
		}
		*w++ = *r++;
	}
	*w = '\0';
}

char *sym_demangle(const char *name, enum sym_demangle mode, int *oom)
{
	*oom = 0;
	if (mode == SYM_DEMANGLE_NONE || !sym_is_mangled(name))
		return NULL;
	if (name[1] == 'R' || (name[2] == 'N' && strstr(name, "17h"))) {
		char *s = rust_demangle(name, DMGL_NO_OPTS);
		if (s) {
			if (mode == SYM_DEMANGLE_SIMPLIFIED && name[1] == 'R')
				empty_rust_generics(s);
			return s;
		}
		if (name[1] == 'R')
			return NULL;
	}
	return demangle_cxx(name, mode, oom);
}
