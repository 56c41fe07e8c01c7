/* Go regexp syntax tree -> PCRE2 pattern with the same leftmost-first results.
 *
 * Everything Go resolves at parse time is written out explicitly, so the PCRE2
 * pattern needs no flags and no Unicode tables of its own: literals and classes
 * become \x{...} code points and ranges (case folding already applied), `.` is
 * \N or (?s:.), ^ $ become \A \z or their multi-line forms, every quantified
 * operand is a (?:...) group. Surrogates are dropped from classes (a valid UTF-8
 * subject never contains them, and PCRE2 rejects them in UTF mode).
 *
 * One semantic difference needs rewriting. Go's matchers (backtracker with a visited
 * set, or the Pike VM) never enter the same program state at the same position twice
 * on a path; plain backtracking does not care, and PCRE2 instead accepts one empty
 * loop iteration and stops. Only a loop whose body can match empty lets a path come
 * back to a state without consuming anything, so inside such loops (and only there)
 * every Go program state gets a check: a named group records the position where the
 * state was passed ((?=(?<mN>.*)) captures the rest of the subject) and a negative
 * lookahead (?!\k<mN>\z) fails the path if it is there again. Loops and counted
 * repeats in that region are written in the shapes Go compiles them to (x* over an
 * empty-capable x is (x+)?, x{2,4} is xx(x(x)?)?), so the states are Go's. Examples:
 * (|a)* on "aa" gives group 1 = "a" like Go (PCRE2 alone: ""), ((?:.)*?)* takes one
 * iteration. Copies of a group map back to one Go group in rx.c (last one set wins). */
#include "relabel/rx_emit.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"

struct emitter {
	struct rx_emit_out *out;
	int too_large;
	unsigned marks; /* named mark groups allocated so far */
	int share_classes;
	char **classes; /* shared class texts, by id */
	size_t nclasses, classes_cap;
};

static int add_group(struct emitter *E, uint32_t go_group)
{
	struct rx_emit_out *o = E->out;

	if (np_grow((void **)&o->pcre_to_go, &o->cap, o->npcre + 2, sizeof(o->pcre_to_go[0])) != 0)
		return -1;
	o->pcre_to_go[++o->npcre] = go_group; /* index 0 is the whole match */
	o->pcre_to_go[0] = 0;
	return (int)o->npcre;
}

static void put(struct emitter *E, const char *s)
{
	np_buf_puts(&E->out->pat, s);
}

static void put_cp_to(struct np_buf *b, uint32_t c)
{
	if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
		np_buf_putc(b, (char)c);
	else
		np_buf_printf(b, "\\x{%x}", (unsigned)c);
}

static void put_cp(struct emitter *E, uint32_t c)
{
	put_cp_to(&E->out->pat, c);
}

/* Splits lo-hi around the surrogates; returns the number of pieces (0-2). */
static int clip(uint32_t lo, uint32_t hi, uint32_t piece[4])
{
	int n = 0;

	if (lo <= 0xD7FF) {
		piece[2 * n] = lo;
		piece[2 * n + 1] = hi < 0xD7FF ? hi : 0xD7FF;
		n++;
	}
	if (hi >= 0xE000) {
		piece[2 * n] = lo > 0xE000 ? lo : 0xE000;
		piece[2 * n + 1] = hi;
		n++;
	}
	return n;
}

static void put_class_text(struct np_buf *b, const uint32_t *r, size_t n)
{
	uint32_t piece[4];

	np_buf_putc(b, '[');
	for (size_t i = 0; i < n; i += 2) {
		int k = clip(r[i], r[i + 1], piece);
		for (int j = 0; j < k; j++) {
			put_cp_to(b, piece[2 * j]);
			if (piece[2 * j + 1] != piece[2 * j]) {
				np_buf_putc(b, '-');
				put_cp_to(b, piece[2 * j + 1]);
			}
		}
	}
	np_buf_putc(b, ']');
}

/* A big class written once in a (?(DEFINE)...) block and called as (?&cN): a class
 * matches one character, so the call behaves like the class itself. Only used when
 * the inline pattern exceeds PCRE2's compiled-size limit (repeats replicate classes). */
static void put_shared_class(struct emitter *E, const uint32_t *r, size_t n)
{
	struct np_buf text = NP_BUF_INIT;
	size_t id;

	put_class_text(&text, r, n);
	if (text.failed) {
		E->out->pat.failed = 1;
		np_buf_free(&text);
		return;
	}
	for (id = 0; id < E->nclasses; id++)
		if (strcmp(E->classes[id], text.p) == 0)
			break;
	if (id == E->nclasses) {
		if (np_grow((void **)&E->classes, &E->classes_cap, E->nclasses + 1, sizeof(E->classes[0])) != 0) {
			E->out->pat.failed = 1;
			np_buf_free(&text);
			return;
		}
		E->classes[E->nclasses++] = np_buf_steal(&text, NULL);
	}
	np_buf_free(&text);
	np_buf_printf(&E->out->pat, "(?&c%zu)", id);
}

#define SHARED_CLASS_MIN_RANGES 16

/* A class given as clean ranges, minus the surrogates. */
static void put_ranges(struct emitter *E, const uint32_t *r, size_t n)
{
	uint32_t piece[4], first_lo = 0, first_hi = 0;
	size_t count = 0;

	for (size_t i = 0; i < n; i += 2) {
		int k = clip(r[i], r[i + 1], piece);
		if (k && count == 0) {
			first_lo = piece[0];
			first_hi = piece[1];
		}
		count += (size_t)k;
	}
	if (count == 0) {
		put(E, "(*FAIL)");
		return;
	}
	if (count == 1 && first_lo == first_hi) {
		put_cp(E, first_lo);
		return;
	}
	if (E->share_classes && count >= SHARED_CLASS_MIN_RANGES) {
		put_shared_class(E, r, n);
		return;
	}
	put_class_text(&E->out->pat, r, n);
}

static void put_literal(struct emitter *E, uint32_t r, int fold)
{
	uint32_t orbit[8], ranges[16];
	size_t n;

	if (!fold) {
		put_ranges(E, (uint32_t[]){ r, r }, 2);
		return;
	}
	n = rxc_fold_orbit(r, orbit);
	for (size_t i = 0; i < n; i++)
		ranges[2 * i] = ranges[2 * i + 1] = orbit[i];
	put_ranges(E, ranges, 2 * n);
}

static int emit(struct emitter *E, const struct rx_node *nd, int inst);

/* A fresh mark: a named group that records "the rest of the subject" where a state was
 * passed (a position, comparable by backreference). */
static unsigned new_mark(struct emitter *E)
{
	return E->marks++;
}

/* State check: fail if any of the marks recorded the current position (the state was
 * already passed here on this path), then record the position in marks[0]. */
static int state(struct emitter *E, const unsigned *marks, int n)
{
	for (int i = 0; i < n; i++)
		np_buf_printf(&E->out->pat, "(?!\\k<m%u>\\z)", marks[i]);
	np_buf_printf(&E->out->pat, "(?=(?<m%u>(?s:.*)))", marks[0]);
	return add_group(E, 0) < 0 ? -1 : 0;
}

static int state1(struct emitter *E)
{
	unsigned m = new_mark(E);

	return state(E, &m, 1);
}

static int emit_group(struct emitter *E, const struct rx_node *nd, int inst)
{
	put(E, "(?:");
	if (emit(E, nd, inst) < 0)
		return -1;
	put(E, ")");
	return 0;
}

/* The subtree will contain state marks (a loop over an empty-capable body). */
static int has_marks(const struct rx_node *nd)
{
	if ((nd->op == RXO_STAR || nd->op == RXO_PLUS || (nd->op == RXO_REPEAT && nd->max == -1)) &&
	    nd->sub[0]->nullable)
		return 1;
	for (size_t i = 0; i < nd->nsub; i++)
		if (has_marks(nd->sub[i]))
			return 1;
	return 0;
}

/* x{n,m} written out as copies: PCRE2 would replicate the group with the same mark
 * names in every copy, while Go's copies are distinct states. */
static int emit_copies(struct emitter *E, const struct rx_node *nd)
{
	const struct rx_node *x = nd->sub[0];
	int n = nd->min, m = nd->max;

	if (m == -1) {
		for (int i = 0; i < n - 1; i++)
			if (emit_group(E, x, 0) < 0)
				return -1;
		if (emit_group(E, x, 0) < 0)
			return -1;
		put(E, n == 0 ? "*" : "+");
		if (!nd->greedy)
			put(E, "?");
		return 0;
	}
	for (int i = 0; i < n; i++)
		if (emit_group(E, x, 0) < 0)
			return -1;
	for (int i = n; i < m; i++) {
		put(E, "(?:");
		if (emit_group(E, x, 0) < 0)
			return -1;
	}
	for (int i = n; i < m; i++)
		put(E, nd->greedy ? ")?" : ")??");
	return 0;
}

/* Uninstrumented repeats: PCRE2's own quantifiers (bounded ones replicate the group,
 * as Go's simplifier does). */
static int emit_plain_repeat(struct emitter *E, const struct rx_node *nd)
{
	if (nd->op == RXO_REPEAT && has_marks(nd->sub[0]))
		return emit_copies(E, nd);
	if (emit_group(E, nd->sub[0], 0) < 0)
		return -1;
	switch (nd->op) {
	case RXO_QUEST:
		put(E, "?");
		break;
	case RXO_STAR:
		put(E, "*");
		break;
	case RXO_PLUS:
		put(E, "+");
		break;
	default:
		if (nd->max == -1)
			np_buf_printf(&E->out->pat, "{%d,}", nd->min);
		else if (nd->max == nd->min)
			np_buf_printf(&E->out->pat, "{%d}", nd->min);
		else
			np_buf_printf(&E->out->pat, "{%d,%d}", nd->min, nd->max);
		break;
	}
	if (!nd->greedy)
		put(E, "?");
	return 0;
}

/* Go's loop forms with every program state checked:
 *   x+            P: x; L: split(P, out)            -> (?:[P] x [L])+
 *   x* (x can be empty)  Q: split(P, out), then x+  -> [Q](?:[P] x [L])*
 *   x* (x cannot)  L: split(x, out); x -> L          -> [L](?:x [L'])*, L' checked against L too
 *   x?            Q: split(x, out)                  -> [Q](?:x)? */
static int emit_loop(struct emitter *E, const struct rx_node *body, int plus, int greedy)
{
	const char *q = greedy ? "" : "?";

	if (!plus && !body->nullable) {
		unsigned l[2] = { new_mark(E), new_mark(E) }, l2[2] = { l[1], l[0] };
		if (state(E, l, 2) < 0)
			return -1;
		put(E, "(?:");
		if (emit(E, body, 1) < 0 || state(E, l2, 2) < 0)
			return -1;
		put(E, ")*");
		put(E, q);
		return 0;
	}
	if (!plus && state1(E) < 0)
		return -1;
	put(E, "(?:");
	if (state1(E) < 0 || emit(E, body, 1) < 0 || state1(E) < 0)
		return -1;
	put(E, plus ? ")+" : ")*");
	put(E, q);
	return 0;
}

static int emit_quest(struct emitter *E, const struct rx_node *body, int greedy)
{
	if (state1(E) < 0 || emit_group(E, body, 1) < 0)
		return -1;
	put(E, greedy ? "?" : "??");
	return 0;
}

/* Instrumented x{n,m}: Go's simplifier turns it into copies (xx(x(x)?)? for {2,4},
 * xx+ for {2,}), and each copy has program states of its own. */
static int emit_counted(struct emitter *E, const struct rx_node *nd)
{
	const struct rx_node *x = nd->sub[0];
	int n = nd->min, m = nd->max;

	if (m == -1) {
		if (n == 0)
			return emit_loop(E, x, 0, nd->greedy);
		for (int i = 0; i < n - 1; i++)
			if (emit_group(E, x, 1) < 0)
				return -1;
		return emit_loop(E, x, 1, nd->greedy);
	}
	if (m == 0)
		return state1(E); /* x{0} is an empty match (a no-op state) */
	for (int i = 0; i < n; i++)
		if (emit_group(E, x, 1) < 0)
			return -1;
	for (int i = n; i < m; i++) {
		if (state1(E) < 0)
			return -1;
		put(E, "(?:");
		if (emit_group(E, x, 1) < 0)
			return -1;
	}
	for (int i = n; i < m; i++)
		put(E, nd->greedy ? ")?" : ")??");
	return 0;
}

static int emit_repeat(struct emitter *E, const struct rx_node *nd, int inst)
{
	int unbounded = nd->op == RXO_STAR || nd->op == RXO_PLUS || (nd->op == RXO_REPEAT && nd->max == -1);

	/* Only a loop whose body can match empty can bring a path back to a state at the same
	 * position; everything inside such a loop is instrumented. */
	if (unbounded && nd->sub[0]->nullable)
		inst = 1;
	if (!inst)
		return emit_plain_repeat(E, nd);
	switch (nd->op) {
	case RXO_QUEST:
		return emit_quest(E, nd->sub[0], nd->greedy);
	case RXO_STAR:
		return emit_loop(E, nd->sub[0], 0, nd->greedy);
	case RXO_PLUS:
		return emit_loop(E, nd->sub[0], 1, nd->greedy);
	default:
		return emit_counted(E, nd);
	}
}

static int emit(struct emitter *E, const struct rx_node *nd, int inst)
{
	/* Copies of loop bodies can grow the pattern quickly with nesting. */
	if (E->out->pat.len > RX_EMIT_MAX) {
		E->too_large = 1;
		return -1;
	}
	if (inst && nd->op != RXO_CONCAT && nd->op != RXO_ALTERNATE && nd->op != RXO_STAR &&
	    nd->op != RXO_PLUS && nd->op != RXO_QUEST && nd->op != RXO_REPEAT && state1(E) < 0)
		return -1;
	switch (nd->op) {
	case RXO_NO_MATCH:
		put(E, "(*FAIL)");
		return 0;
	case RXO_EMPTY:
		put(E, "(?:)");
		return 0;
	case RXO_LITERAL:
		put_literal(E, nd->rune, nd->fold);
		return 0;
	case RXO_CLASS:
		put_ranges(E, nd->cls.r, nd->cls.n);
		return 0;
	case RXO_ANY_NOT_NL:
		put(E, "\\N");
		return 0;
	case RXO_ANY:
		put(E, "(?s:.)");
		return 0;
	case RXO_BEGIN_LINE:
		put(E, "(?m:^)");
		return 0;
	case RXO_END_LINE:
		put(E, "(?m:$)");
		return 0;
	case RXO_BEGIN_TEXT:
		put(E, "\\A");
		return 0;
	case RXO_END_TEXT:
		put(E, "\\z");
		return 0;
	case RXO_WORD_BOUNDARY:
		put(E, "\\b");
		return 0;
	case RXO_NO_WORD_BOUNDARY:
		put(E, "\\B");
		return 0;
	case RXO_CAPTURE:
		put(E, "(");
		if (add_group(E, (uint32_t)nd->cap) < 0 || emit(E, nd->sub[0], inst) < 0)
			return -1;
		put(E, ")");
		/* The group's closing instruction is a state of its own. */
		return inst ? state1(E) : 0;
	case RXO_STAR:
	case RXO_PLUS:
	case RXO_QUEST:
	case RXO_REPEAT:
		return emit_repeat(E, nd, inst);
	case RXO_CONCAT:
		for (size_t i = 0; i < nd->nsub; i++)
			if (emit(E, nd->sub[i], inst) < 0)
				return -1;
		return 0;
	case RXO_ALTERNATE:
		/* The alternation's split is a state. */
		if (inst && state1(E) < 0)
			return -1;
		put(E, "(?:");
		for (size_t i = 0; i < nd->nsub; i++) {
			if (i)
				put(E, "|");
			if (emit(E, nd->sub[i], inst) < 0)
				return -1;
		}
		put(E, ")");
		return 0;
	}
	return 0;
}

int rx_emit(const struct rx_ast *ast, int share_classes, struct rx_emit_out *out)
{
	struct emitter E = { out, 0, 0, share_classes, NULL, 0, 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	if (add_group(&E, 0) < 0) /* makes the map non-empty; undone below */
		return -1;
	out->npcre = 0;
	rc = emit(&E, ast->root, 0);
	if (rc == 0 && E.nclasses) {
		put(&E, "(?(DEFINE)");
		for (size_t i = 0; i < E.nclasses && rc == 0; i++) {
			np_buf_printf(&out->pat, "(?<c%zu>", i);
			if (add_group(&E, 0) < 0)
				rc = -1;
			put(&E, E.classes[i]);
			put(&E, ")");
		}
		put(&E, ")");
	}
	for (size_t i = 0; i < E.nclasses; i++)
		free(E.classes[i]);
	free(E.classes);
	if (rc == 0 && out->pat.failed)
		rc = -1;
	if (rc < 0) {
		rx_emit_out_free(out);
		return E.too_large ? -2 : -1;
	}
	return 0;
}

void rx_emit_out_free(struct rx_emit_out *out)
{
	np_buf_free(&out->pat);
	free(out->pcre_to_go);
	memset(out, 0, sizeof(*out));
}
