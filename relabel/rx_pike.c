/* Go's program and Pike VM for a parsed regexp: see rx_pike.h.
 *
 * Written from Go's regexp/syntax/compile.go, simplify.go and regexp/exec.go
 * (read, not copied): the program shapes decide which of several equally long
 * matches leftmost-first reports and which text a group captures, so they follow
 * Go's: x* over a body that can match empty is (x+)?, x{n,m} is n copies followed by
 * nested optional copies, a loop of a loop of the same kind is one loop. */
#include "relabel/rx_pike.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/gostr.h"
#include "lib/sorted.h"

enum { I_FAIL, I_MATCH, I_RUNE, I_ANY, I_ANY_NOT_NL, I_EMPTY, I_CAP, I_ALT, I_NOP };
enum { E_BEGIN_LINE = 1, E_END_LINE = 2, E_BEGIN_TEXT = 4, E_END_TEXT = 8, E_WORD = 16, E_NOT_WORD = 32 };

struct inst {
	uint8_t op;
	uint8_t empty;	 /* I_EMPTY: the E_ condition */
	uint32_t out, arg; /* next instruction; I_ALT: arg is the lower-priority branch; I_CAP: arg is the slot */
	uint32_t roff, rn; /* I_RUNE: ranges[roff .. roff + rn), pairs lo, hi */
};

struct rx_prog {
	struct inst *inst;
	size_t n, cap;
	uint32_t *ranges;
	size_t nranges, ranges_cap;
	uint32_t start;
	size_t nslots; /* 2 * (groups + 1) */
	int anchored;  /* every match starts at offset 0 (Go's EmptyBeginText start condition) */
	int failed;
};

/* Patch lists as in Go's compiler: a chain through the out (even) or arg (odd) fields
 * of instructions still to be pointed at what comes next; 0 ends it (instruction 0 is
 * the Fail every program starts with, never part of a list). */
struct plist {
	uint32_t head, tail;
};

struct frag {
	uint32_t i; /* 0 = cannot match */
	struct plist out;
	int nullable;
};

static uint32_t emit(struct rx_prog *p, uint8_t op)
{
	if (p->failed || np_grow((void **)&p->inst, &p->cap, p->n + 1, sizeof(*p->inst)) < 0) {
		p->failed = 1;
		return 0;
	}
	memset(&p->inst[p->n], 0, sizeof(p->inst[0]));
	p->inst[p->n].op = op;
	return (uint32_t)p->n++;
}

static void patch(struct rx_prog *p, struct plist l, uint32_t val)
{
	uint32_t h = l.head;

	while (h) {
		struct inst *in = &p->inst[h >> 1];
		if (h & 1) {
			h = in->arg;
			in->arg = val;
		} else {
			h = in->out;
			in->out = val;
		}
	}
}

static struct plist append_list(struct rx_prog *p, struct plist a, struct plist b)
{
	if (!a.head)
		return b;
	if (!b.head)
		return a;
	if (a.tail & 1)
		p->inst[a.tail >> 1].arg = b.head;
	else
		p->inst[a.tail >> 1].out = b.head;
	return (struct plist){ a.head, b.tail };
}

static struct frag single(struct rx_prog *p, uint8_t op, int nullable)
{
	uint32_t i = emit(p, op);

	return (struct frag){ i, { i << 1, i << 1 }, nullable };
}

static struct frag fail_frag(void)
{
	return (struct frag){ 0, { 0, 0 }, 0 };
}

static struct frag cat(struct rx_prog *p, struct frag a, struct frag b)
{
	if (!a.i || !b.i)
		return fail_frag();
	patch(p, a.out, b.i);
	return (struct frag){ a.i, b.out, a.nullable && b.nullable };
}

static struct frag alt(struct rx_prog *p, struct frag a, struct frag b)
{
	struct frag f;

	if (!a.i)
		return b;
	if (!b.i)
		return a;
	f = single(p, I_ALT, a.nullable || b.nullable);
	if (p->failed)
		return f;
	p->inst[f.i].out = a.i;
	p->inst[f.i].arg = b.i;
	f.out = append_list(p, a.out, b.out);
	return f;
}

/* Points the alternation at body (first choice when greedy, second otherwise); returns
 * its other branch, still to be patched to what follows. */
static struct plist split_to(struct rx_prog *p, uint32_t alt_i, uint32_t body, int greedy)
{
	if (greedy) {
		p->inst[alt_i].out = body;
		return (struct plist){ alt_i << 1 | 1, alt_i << 1 | 1 };
	}
	p->inst[alt_i].arg = body;
	return (struct plist){ alt_i << 1, alt_i << 1 };
}

static struct frag quest(struct rx_prog *p, struct frag a, int greedy)
{
	struct frag f = single(p, I_ALT, 1);

	if (!p->failed)
		f.out = append_list(p, split_to(p, f.i, a.i, greedy), a.out);
	return f;
}

/* L: alt(a, out) with a looping back to L. Nullable, as every non-rune fragment of Go's
 * compiler is (that is what makes x* over a loop (x+)? below). */
static struct frag loop(struct rx_prog *p, struct frag a, int greedy)
{
	struct frag f = single(p, I_ALT, 1);

	if (p->failed)
		return f;
	f.out = split_to(p, f.i, a.i, greedy);
	patch(p, a.out, f.i);
	return f;
}

static struct frag plus(struct rx_prog *p, struct frag a, int greedy)
{
	return (struct frag){ a.i, loop(p, a, greedy).out, a.nullable };
}

static struct frag star(struct rx_prog *p, struct frag a, int greedy)
{
	/* A body that can match empty: (x+)? gives Go's priorities. */
	if (a.nullable)
		return quest(p, plus(p, a, greedy), greedy);
	return loop(p, a, greedy);
}

static struct frag ranges_frag(struct rx_prog *p, const uint32_t *r, size_t n)
{
	struct frag f = single(p, I_RUNE, 0);

	if (p->failed)
		return f;
	if (np_grow((void **)&p->ranges, &p->ranges_cap, p->nranges + n, sizeof(*p->ranges)) < 0) {
		p->failed = 1;
		return f;
	}
	memcpy(p->ranges + p->nranges, r, n * sizeof(*r));
	p->inst[f.i].roff = (uint32_t)p->nranges;
	p->inst[f.i].rn = (uint32_t)n;
	p->nranges += n;
	return f;
}

static struct frag literal(struct rx_prog *p, const struct rx_node *nd)
{
	uint32_t orbit[8], r[16];
	size_t n = 1;

	orbit[0] = nd->rune;
	if (nd->fold)
		n = rxc_fold_orbit(nd->rune, orbit);
	qsort(orbit, n, sizeof(orbit[0]), np_cmp_u32);
	for (size_t i = 0; i < n; i++)
		r[2 * i] = r[2 * i + 1] = orbit[i];
	return ranges_frag(p, r, 2 * n);
}

static struct frag compile(struct rx_prog *p, const struct rx_node *nd);

/* The operator a node has after Go's Simplify, for simplify1's "a loop of a loop of the
 * same kind and greediness is that loop" (x{0,} is x*, x{1,} is x+, x{0,1} is x?). */
static enum rx_op simple_op(const struct rx_node *nd)
{
	if (nd->op != RXO_REPEAT)
		return nd->op;
	if (nd->min == 0 && nd->max == 0)
		return RXO_EMPTY;
	if (nd->max == -1)
		return nd->min == 0 ? RXO_STAR : nd->min == 1 ? RXO_PLUS : RXO_CONCAT;
	if (nd->min == 1 && nd->max == 1)
		return simple_op(nd->sub[0]);
	if (nd->min == 0 && nd->max == 1)
		return RXO_QUEST;
	return RXO_CONCAT;
}

/* Go's simplify1: op over sub, unless sub is empty or already the same loop. */
static struct frag unary(struct rx_prog *p, enum rx_op op, int greedy, const struct rx_node *sub)
{
	enum rx_op sop = simple_op(sub);

	if (sop == RXO_EMPTY || (sop == op && sub->greedy == greedy))
		return compile(p, sub);
	if (op == RXO_STAR)
		return star(p, compile(p, sub), greedy);
	if (op == RXO_PLUS)
		return plus(p, compile(p, sub), greedy);
	return quest(p, compile(p, sub), greedy);
}

/* x{n,m} as Go's Simplify writes it: n copies, then (x(x(x)?)?)? for the optional ones. */
static struct frag repeat(struct rx_prog *p, const struct rx_node *nd)
{
	const struct rx_node *x = nd->sub[0];
	struct frag f = { 0, { 0, 0 }, 1 };
	int have = 0;

	if (nd->min == 0 && nd->max == 0)
		return single(p, I_NOP, 1);
	if (nd->max == -1) {
		if (nd->min <= 1)
			return unary(p, nd->min == 0 ? RXO_STAR : RXO_PLUS, nd->greedy, x);
		for (int i = 0; i < nd->min - 1; i++) {
			struct frag c = compile(p, x);
			f = have ? cat(p, f, c) : c;
			have = 1;
		}
		return cat(p, f, unary(p, RXO_PLUS, nd->greedy, x));
	}
	if (nd->min == 1 && nd->max == 1)
		return compile(p, x);
	for (int i = 0; i < nd->min; i++) {
		struct frag c = compile(p, x);
		f = have ? cat(p, f, c) : c;
		have = 1;
	}
	if (nd->max > nd->min) {
		/* Built inside out: the innermost optional copy first. */
		struct frag suffix = unary(p, RXO_QUEST, nd->greedy, x);
		for (int i = nd->min + 1; i < nd->max; i++)
			suffix = quest(p, cat(p, compile(p, x), suffix), nd->greedy);
		f = have ? cat(p, f, suffix) : suffix;
		have = 1;
	}
	return have ? f : fail_frag();
}

static struct frag empty_frag(struct rx_prog *p, uint8_t cond)
{
	struct frag f = single(p, I_EMPTY, 1);

	if (!p->failed)
		p->inst[f.i].empty = cond;
	return f;
}

static struct frag cap_frag(struct rx_prog *p, uint32_t slot)
{
	struct frag f = single(p, I_CAP, 1);

	if (!p->failed)
		p->inst[f.i].arg = slot;
	return f;
}

static struct frag compile(struct rx_prog *p, const struct rx_node *nd)
{
	struct frag f;

	if (p->failed)
		return fail_frag();
	switch (nd->op) {
	case RXO_NO_MATCH:
		return fail_frag();
	case RXO_EMPTY:
		return single(p, I_NOP, 1);
	case RXO_LITERAL:
		return literal(p, nd);
	case RXO_CLASS:
		return ranges_frag(p, nd->cls.r, nd->cls.n);
	case RXO_ANY:
		return single(p, I_ANY, 0);
	case RXO_ANY_NOT_NL:
		return single(p, I_ANY_NOT_NL, 0);
	case RXO_BEGIN_LINE:
		return empty_frag(p, E_BEGIN_LINE);
	case RXO_END_LINE:
		return empty_frag(p, E_END_LINE);
	case RXO_BEGIN_TEXT:
		return empty_frag(p, E_BEGIN_TEXT);
	case RXO_END_TEXT:
		return empty_frag(p, E_END_TEXT);
	case RXO_WORD_BOUNDARY:
		return empty_frag(p, E_WORD);
	case RXO_NO_WORD_BOUNDARY:
		return empty_frag(p, E_NOT_WORD);
	case RXO_CAPTURE:
		f = cap_frag(p, (uint32_t)nd->cap * 2);
		f = cat(p, f, compile(p, nd->sub[0]));
		return cat(p, f, cap_frag(p, (uint32_t)nd->cap * 2 + 1));
	case RXO_STAR:
	case RXO_PLUS:
	case RXO_QUEST:
		return unary(p, nd->op, nd->greedy, nd->sub[0]);
	case RXO_REPEAT:
		return repeat(p, nd);
	case RXO_CONCAT:
		f = compile(p, nd->sub[0]);
		for (size_t i = 1; i < nd->nsub; i++)
			f = cat(p, f, compile(p, nd->sub[i]));
		return f;
	case RXO_ALTERNATE:
		f = compile(p, nd->sub[0]);
		for (size_t i = 1; i < nd->nsub; i++)
			f = alt(p, f, compile(p, nd->sub[i]));
		return f;
	}
	return fail_frag();
}

int rx_prog_compile(const struct rx_ast *ast, struct rx_prog **out)
{
	struct rx_prog *p = calloc(1, sizeof(*p));
	struct frag f;
	const struct rx_node *root = ast->root;

	*out = NULL;
	if (!p)
		return -1;
	emit(p, I_FAIL);
	f = compile(p, root);
	if (!p->failed) {
		uint32_t m = emit(p, I_MATCH);
		patch(p, f.out, m);
		p->start = f.i ? f.i : 0;
	}
	if (p->failed) {
		rx_prog_free(p);
		return -1;
	}
	p->nslots = 2 * ((size_t)ast->ncap + 1);
	p->anchored = root->op == RXO_BEGIN_TEXT ||
		      (root->op == RXO_CONCAT && root->nsub && root->sub[0]->op == RXO_BEGIN_TEXT);
	*out = p;
	return 0;
}

void rx_prog_free(struct rx_prog *p)
{
	if (!p)
		return;
	free(p->inst);
	free(p->ranges);
	free(p);
}

/* ---- the Pike VM ---- */

/* A sparse set of instructions in priority order; threads (rune and match instructions)
 * carry their capture slots in an arena that is reset with the queue. */
struct queue {
	uint32_t *sparse; /* [ninst] */
	uint32_t *dense;  /* [ninst] instruction numbers */
	int32_t *thread;  /* [ninst] arena index of the thread at dense[i], or -1 */
	size_t n;
	ssize_t *arena;
	size_t arena_cap, arena_n; /* in slots */
};

struct job {
	uint32_t pc;
	int32_t restore_slot; /* >= 0: put restore_val back into that slot instead of visiting pc */
	ssize_t restore_val;
};

static void queue_free(struct queue *q)
{
	if (!q)
		return;
	free(q->sparse);
	free(q->dense);
	free(q->thread);
	free(q->arena);
	free(q);
}

static int scratch_ready(struct rx_pike_scratch *sc, size_t ninst)
{
	if (sc->ninst >= ninst && sc->q[0])
		return 0;
	for (int k = 0; k < 2; k++) {
		queue_free(sc->q[k]);
		sc->q[k] = NULL;
	}
	sc->ninst = 0;
	for (int k = 0; k < 2; k++) {
		struct queue *q = calloc(1, sizeof(*q));
		if (!q)
			return -1;
		sc->q[k] = q;
		/* Zeroed although the sparse-set test never trusts a stale entry: reading
		 * uninitialised memory is undefined, and Valgrind rightly says so. */
		q->sparse = calloc(ninst, sizeof(*q->sparse));
		q->dense = calloc(ninst, sizeof(*q->dense));
		q->thread = malloc(ninst * sizeof(*q->thread));
		if (!q->sparse || !q->dense || !q->thread)
			return -1;
	}
	sc->ninst = ninst;
	return 0;
}

static int contains(const struct queue *q, uint32_t pc)
{
	uint32_t j = q->sparse[pc];

	return j < q->n && q->dense[j] == pc;
}

static int is_word(int32_t r)
{
	return (r >= '0' && r <= '9') || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || r == '_';
}

/* The empty-width conditions that hold between runes before and after (-1 = text edge). */
static uint8_t conditions(int32_t before, int32_t after)
{
	uint8_t c = 0;

	if (before < 0)
		c |= E_BEGIN_TEXT | E_BEGIN_LINE;
	if (before == '\n')
		c |= E_BEGIN_LINE;
	if (after < 0)
		c |= E_END_TEXT | E_END_LINE;
	if (after == '\n')
		c |= E_END_LINE;
	c |= is_word(before) != is_word(after) ? E_WORD : E_NOT_WORD;
	return c;
}

static int in_ranges(const uint32_t *r, uint32_t n, int32_t c)
{
	uint32_t lo = 0, hi = n / 2;

	if (c < 0)
		return 0;
	while (lo < hi) {
		uint32_t m = lo + (hi - lo) / 2;
		if ((uint32_t)c < r[2 * m])
			hi = m;
		else if ((uint32_t)c > r[2 * m + 1])
			lo = m + 1;
		else
			return 1;
	}
	return 0;
}

static int push_job(struct rx_pike_scratch *sc, size_t *top, struct job j)
{
	if (np_grow(&sc->stack, &sc->stack_cap, *top + 1, sizeof(struct job)) < 0)
		return -1;
	((struct job *)sc->stack)[(*top)++] = j;
	return 0;
}

/* Go's add: follows pc through alternations, empty-width checks and captures (in priority
 * order, depth first, each instruction once per position) and queues the rune and match
 * instructions reached, each with a copy of the capture slots of the path that reached it.
 * Iterative, so that long chains of instructions cannot overflow the C stack. */
static int add(const struct rx_prog *p, struct queue *q, uint32_t pc0, size_t pos, uint8_t cond,
	       struct rx_pike_scratch *sc)
{
	size_t top = 0;
	ssize_t *cap = sc->work;

	if (push_job(sc, &top, (struct job){ pc0, -1, 0 }) < 0)
		return -1;
	while (top) {
		struct job j = ((struct job *)sc->stack)[--top];
		const struct inst *in;

		if (j.restore_slot >= 0) {
			cap[j.restore_slot] = j.restore_val;
			continue;
		}
		if (j.pc == 0 || contains(q, j.pc))
			continue;
		q->sparse[j.pc] = (uint32_t)q->n;
		q->dense[q->n] = j.pc;
		q->thread[q->n] = -1;
		q->n++;
		in = &p->inst[j.pc];
		switch (in->op) {
		case I_ALT:
			/* LIFO: out (higher priority) is taken first. */
			if (push_job(sc, &top, (struct job){ in->arg, -1, 0 }) < 0 ||
			    push_job(sc, &top, (struct job){ in->out, -1, 0 }) < 0)
				return -1;
			break;
		case I_NOP:
			if (push_job(sc, &top, (struct job){ in->out, -1, 0 }) < 0)
				return -1;
			break;
		case I_EMPTY:
			if ((in->empty & cond) == in->empty && push_job(sc, &top, (struct job){ in->out, -1, 0 }) < 0)
				return -1;
			break;
		case I_CAP:
			if (in->arg < p->nslots) {
				if (push_job(sc, &top, (struct job){ 0, (int32_t)in->arg, cap[in->arg] }) < 0)
					return -1;
				cap[in->arg] = (ssize_t)pos;
			}
			if (push_job(sc, &top, (struct job){ in->out, -1, 0 }) < 0)
				return -1;
			break;
		case I_FAIL:
			break;
		default: /* rune and match instructions hold a thread */
			if (np_grow((void **)&q->arena, &q->arena_cap, q->arena_n + p->nslots, sizeof(ssize_t)) < 0)
				return -1;
			memcpy(q->arena + q->arena_n, cap, p->nslots * sizeof(ssize_t));
			q->thread[q->n - 1] = (int32_t)(q->arena_n / p->nslots);
			q->arena_n += p->nslots;
			break;
		}
	}
	return 0;
}

static int32_t rune_at(const char *s, size_t n, size_t pos, size_t *w)
{
	if (pos >= n) {
		*w = 0;
		return -1;
	}
	return (int32_t)np_go_decode_rune(s + pos, n - pos, w);
}

/* Go's m.step: every thread of run, in priority order, consumes r (at pos, w bytes wide)
 * into next; the first to reach Match wins over all threads after it (leftmost-first) and
 * leaves its captures in caps. run is emptied. 1 when a thread matched, 0 when none, -1
 * on allocation failure. */
static int step(const struct rx_prog *p, struct queue *run, struct queue *next, size_t pos, int32_t r, size_t w,
		uint8_t cond_next, ssize_t *caps, struct rx_pike_scratch *sc)
{
	int matched = 0;

	for (size_t j = 0; j < run->n; j++) {
		int32_t t = run->thread[j];
		const struct inst *in;
		int take = 0;

		if (t < 0)
			continue;
		in = &p->inst[run->dense[j]];
		ssize_t *tc = run->arena + (size_t)t * p->nslots;
		switch (in->op) {
		case I_MATCH:
			tc[1] = (ssize_t)pos;
			memcpy(caps, tc, p->nslots * sizeof(ssize_t));
			matched = 1;
			j = run->n; /* cut off lower-priority threads */
			continue;
		case I_RUNE:
			take = in_ranges(p->ranges + in->roff, in->rn, r);
			break;
		case I_ANY:
			take = r >= 0;
			break;
		case I_ANY_NOT_NL:
			take = r >= 0 && r != '\n';
			break;
		}
		if (take) {
			memcpy(sc->work, tc, p->nslots * sizeof(ssize_t));
			if (add(p, next, in->out, pos + w, cond_next, sc) < 0)
				return -1;
		}
	}
	run->n = run->arena_n = 0;
	return matched;
}

int rx_prog_exec(const struct rx_prog *p, const char *s, size_t n, size_t start, struct rx_pike_scratch *sc,
		 ssize_t *caps)
{
	struct queue *run, *next;
	size_t pos = start, w, w1 = 0;
	int32_t r, r1 = -1, before = -1;
	int matched = 0;

	if (scratch_ready(sc, p->n) < 0 ||
	    np_grow((void **)&sc->work, &sc->work_cap, p->nslots, sizeof(*sc->work)) < 0)
		return -1;
	run = sc->q[0];
	next = sc->q[1];
	run->n = next->n = run->arena_n = next->arena_n = 0;
	if (start > 0) {
		/* Go's inputString.context: utf8.DecodeLastRuneInString(s[:start]). */
		before = (int32_t)np_go_decode_last_rune(s, start, &w);
	}
	r = rune_at(s, n, pos, &w);
	if (w)
		r1 = rune_at(s, n, pos + w, &w1);
	for (;;) {
		if (run->n == 0 && (matched || (p->anchored && pos > 0)))
			break;
		if (!matched && (pos == 0 || !p->anchored)) {
			for (size_t i = 0; i < p->nslots; i++)
				sc->work[i] = -1;
			sc->work[0] = (ssize_t)pos;
			if (add(p, run, p->start, pos, conditions(before, r), sc) < 0)
				return -1;
		}
		int rc = step(p, run, next, pos, r, w, conditions(r, r1), caps, sc);
		if (rc < 0)
			return -1;
		matched |= rc;
		if (w == 0)
			break;
		pos += w;
		before = r;
		r = r1;
		w = w1;
		if (w)
			r1 = rune_at(s, n, pos + w, &w1);
		else
			r1 = -1;
		struct queue *tmp = run;
		run = next;
		next = tmp;
	}
	return matched;
}

void rx_pike_scratch_free(struct rx_pike_scratch *sc)
{
	for (int k = 0; k < 2; k++)
		queue_free(sc->q[k]);
	free(sc->stack);
	free(sc->work);
	memset(sc, 0, sizeof(*sc));
}
