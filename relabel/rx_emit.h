/* Translation of a parsed Go regexp (rx_parse.h) into an equivalent PCRE2 pattern. */
#ifndef NP_RELABEL_RX_EMIT_H
#define NP_RELABEL_RX_EMIT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/strbuf.h"
#include "relabel/rx_parse.h"

struct rx_emit_out {
	struct np_buf pat;    /* the PCRE2 pattern (ASCII) */
	uint32_t *pcre_to_go; /* [npcre + 1]: PCRE2 group -> Go group, 0 for internal groups */
	size_t npcre;	      /* PCRE2 capture groups */
	size_t cap;
};

/* Beyond this many pattern bytes the translation gives up (see rx_emit.c on duplication). */
#define RX_EMIT_MAX (256u * 1024u)

/* Loops over nullable bodies are rewritten for Go's capture semantics (see rx_emit.c);
 * share_classes: write big classes once and call them (smaller compiled code, a little
 * slower). Returns -1 on allocation failure, -2 when the pattern would exceed RX_EMIT_MAX. */
int rx_emit(const struct rx_ast *ast, int share_classes, struct rx_emit_out *out);
void rx_emit_out_free(struct rx_emit_out *out);

#endif
