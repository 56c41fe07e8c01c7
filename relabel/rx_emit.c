/* Go regexp syntax tree -> PCRE2 pattern with the same leftmost-first results.
 *
 * Everything Go resolves at parse time is written out explicitly, so the PCRE2
 * pattern needs no flags and no Unicode tables of its own: literals and classes
 * become \x{...} code points and ranges (case folding already applied), `.` is
 * \N or (?s:.), ^ $ become \A \z or their multi-line forms, every quantified
 * operand is a (?:...) group. Surrogates are dropped from classes (a valid UTF-8
 * subject never contains them, and PCRE2 rejects them in UTF mode).
 *
 * One semantic difference needs rewriting: an unbounded loop whose body can match
 * the empty string. Go (like RE2) never completes an iteration that consumed
 * nothing, so e.g. (|a)* on "aa" leaves group 1 = "a"; PCRE2 accepts one such
 * empty iteration and then stops, leaving group 1 = "". With progress checks on,
 * such a body is emitted as (?=(rest))BODY(?!\g{rest}\z): an iteration fails
 * unless it advanced, and backtracking then tries the body's lower-priority
 * choices, which is exactly Go's thread priority order. x+ and x{n,} over such a
 * body become x{n} followed by the checked loop (Go compiles them that way), so
 * the body's groups are emitted twice; rx.c maps every copy back to its Go group
 * and takes the last copy that participated. */
#include "relabel/rx_emit.h"

#include <stdlib.h>
#include <string.h>

struct emitter {
	struct rx_emit_out *out;
	int checks;
};

static int add_group(struct emitter *E, uint32_t go_group)
{
	struct rx_emit_out *o = E->out;

	if (o->npcre + 2 > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		uint32_t *m = realloc(o->pcre_to_go, cap * sizeof(*m));
		if (!m)
			return -1;
		o->pcre_to_go = m;
		o->cap = cap;
	}
	o->pcre_to_go[++o->npcre] = go_group; /* index 0 is the whole match */
	o->pcre_to_go[0] = 0;
	return (int)o->npcre;
}

static void put(struct emitter *E, const char *s)
{
	np_buf_puts(&E->out->pat, s);
}

static void put_cp(struct emitter *E, uint32_t c)
{
	if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
		np_buf_putc(&E->out->pat, (char)c);
	else
		np_buf_printf(&E->out->pat, "\\x{%x}", (unsigned)c);
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
	put(E, "[");
	for (size_t i = 0; i < n; i += 2) {
		int k = clip(r[i], r[i + 1], piece);
		for (int j = 0; j < k; j++) {
			put_cp(E, piece[2 * j]);
			if (piece[2 * j + 1] != piece[2 * j]) {
				put(E, "-");
				put_cp(E, piece[2 * j + 1]);
			}
		}
	}
	put(E, "]");
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

static int emit(struct emitter *E, const struct rx_node *nd);

static int emit_group(struct emitter *E, const struct rx_node *nd)
{
	put(E, "(?:");
	if (emit(E, nd) < 0)
		return -1;
	put(E, ")");
	return 0;
}

/* A star over a nullable body, iterations required to advance. */
static int emit_checked_star(struct emitter *E, const struct rx_node *body, int greedy)
{
	int g;

	put(E, "(?:(?=(");
	if ((g = add_group(E, 0)) < 0)
		return -1;
	put(E, "(?s:.*)))");
	if (emit(E, body) < 0)
		return -1;
	np_buf_printf(&E->out->pat, "(?!\\g{%d}\\z))*", g);
	if (!greedy)
		put(E, "?");
	E->out->has_checks = 1;
	return 0;
}

static int emit_repeat(struct emitter *E, const struct rx_node *nd)
{
	const struct rx_node *body = nd->sub[0];
	const char *lazy = nd->greedy ? "" : "?";
	int checked = E->checks && body->nullable;

	switch (nd->op) {
	case RXO_QUEST:
		if (emit_group(E, body) < 0)
			return -1;
		put(E, "?");
		put(E, lazy);
		return 0;
	case RXO_STAR:
		if (checked)
			return emit_checked_star(E, body, nd->greedy);
		if (emit_group(E, body) < 0)
			return -1;
		put(E, "*");
		put(E, lazy);
		return 0;
	case RXO_PLUS:
		if (checked)
			return emit_group(E, body) < 0 ? -1 : emit_checked_star(E, body, nd->greedy);
		if (emit_group(E, body) < 0)
			return -1;
		put(E, "+");
		put(E, lazy);
		return 0;
	default:
		break;
	}
	if (nd->max == -1 && checked) {
		if (nd->min > 0) {
			if (emit_group(E, body) < 0)
				return -1;
			np_buf_printf(&E->out->pat, "{%d}", nd->min);
		}
		return emit_checked_star(E, body, nd->greedy);
	}
	if (emit_group(E, body) < 0)
		return -1;
	if (nd->max == -1)
		np_buf_printf(&E->out->pat, "{%d,}", nd->min);
	else if (nd->max == nd->min)
		np_buf_printf(&E->out->pat, "{%d}", nd->min);
	else
		np_buf_printf(&E->out->pat, "{%d,%d}", nd->min, nd->max);
	put(E, lazy);
	return 0;
}

static int emit(struct emitter *E, const struct rx_node *nd)
{
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
		if (add_group(E, (uint32_t)nd->cap) < 0 || emit(E, nd->sub[0]) < 0)
			return -1;
		put(E, ")");
		return 0;
	case RXO_STAR:
	case RXO_PLUS:
	case RXO_QUEST:
	case RXO_REPEAT:
		return emit_repeat(E, nd);
	case RXO_CONCAT:
		for (size_t i = 0; i < nd->nsub; i++)
			if (emit(E, nd->sub[i]) < 0)
				return -1;
		return 0;
	case RXO_ALTERNATE:
		put(E, "(?:");
		for (size_t i = 0; i < nd->nsub; i++) {
			if (i)
				put(E, "|");
			if (emit(E, nd->sub[i]) < 0)
				return -1;
		}
		put(E, ")");
		return 0;
	}
	return 0;
}

int rx_emit(const struct rx_ast *ast, int progress_checks, struct rx_emit_out *out)
{
	struct emitter E = { out, progress_checks };

	memset(out, 0, sizeof(*out));
	if (add_group(&E, 0) < 0) /* makes the map non-empty; undone below */
		return -1;
	out->npcre = 0;
	if (emit(&E, ast->root) < 0 || out->pat.failed) {
		rx_emit_out_free(out);
		return -1;
	}
	return 0;
}

void rx_emit_out_free(struct rx_emit_out *out)
{
	np_buf_free(&out->pat);
	free(out->pcre_to_go);
	memset(out, 0, sizeof(*out));
}
