/* Go's own matching algorithm for a parsed regexp (rx_parse.h): the program Go's
 * regexp/syntax compiler builds from the simplified tree, run by a Pike VM as in
 * regexp's pikevm (leftmost-first threads in priority order, captures per thread).
 *
 * It is the engine of last resort behind PCRE2 (rx.c): it needs no stack, takes time
 * proportional to value length times program size whatever the pattern, and has no
 * compile limits beyond Go's own. So a regexp that is valid in Go but too large for
 * PCRE2, or a long value on which PCRE2's backtracking runs out of its limits, still
 * gets Go's answer, groups included. PCRE2 stays first because it is much faster on
 * the common patterns. */
#ifndef NP_RELABEL_RX_PIKE_H
#define NP_RELABEL_RX_PIKE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "relabel/rx_parse.h"

struct rx_prog;

/* Per-thread state reused between calls (queues, capture arenas, the add stack). */
struct rx_pike_scratch {
	void *q[2];	/* struct queue * */
	size_t ninst;	/* the program size the queues were made for */
	void *stack;	/* struct job * */
	size_t stack_cap;
	ssize_t *work;	/* capture slots of the path being added */
	size_t work_cap;
};

/* Builds the program; -1 on allocation failure (nothing else can fail: the parser
 * has already enforced Go's size limits). */
int rx_prog_compile(const struct rx_ast *ast, struct rx_prog **out);
void rx_prog_free(struct rx_prog *p);

/* Leftmost-first match in s[0..n) (valid UTF-8) starting at byte start (a rune boundary;
 * the text before it is context for ^ and \b). On a match fills caps[0 .. 2*(ncap+1)) with
 * offsets into s (-1 = group did not take part) and returns 1; 0 when there is none; -1 when
 * memory for the threads cannot be had. */
int rx_prog_exec(const struct rx_prog *p, const char *s, size_t n, size_t start, struct rx_pike_scratch *sc,
		 ssize_t *caps);

void rx_pike_scratch_free(struct rx_pike_scratch *sc);

#endif
