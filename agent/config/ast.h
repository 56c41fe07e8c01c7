/* The syntax tree of a configuration file (docs/specs/alloy-syntax.md §2) and the
 * arena that owns it: every node and string of a parsed file lives in one arena,
 * freed at once with cfg_file_free(). Nodes are immutable after parsing. */
#ifndef NP_CONFIG_AST_H
#define NP_CONFIG_AST_H

#include <stddef.h>
#include <stdint.h>

#include "agent/config/diag.h"
#include "agent/config/lexer.h"

struct cfg_arena_chunk;
struct cfg_arena {
	struct cfg_arena_chunk *head;
	size_t used_bytes; /* for the size bound */
};

void *cfg_arena_alloc(struct cfg_arena *a, size_t size); /* zeroed; NULL on allocation failure */
char *cfg_arena_strndup(struct cfg_arena *a, const char *s, size_t len);
void cfg_arena_free(struct cfg_arena *a);

/* Alloy numbers: int64, else uint64, else float64 (syntax/internal/value). */
enum cfg_numkind { CFG_NUM_INT = 0, CFG_NUM_UINT, CFG_NUM_FLOAT };
struct cfg_number {
	enum cfg_numkind kind;
	union {
		int64_t i;
		uint64_t u;
		double f;
	} v;
};

enum cfg_expr_kind {
	E_NULL,
	E_BOOL,
	E_NUMBER,
	E_STRING,
	E_IDENT,
	E_ARRAY,
	E_OBJECT,
	E_ACCESS, /* x.name */
	E_INDEX,  /* x[index] */
	E_CALL,   /* fn(args) */
	E_UNARY,
	E_BINARY,
	E_PAREN,
};

struct cfg_expr;

struct cfg_field {
	const char *key; /* decoded; a NUL inside a quoted key ends it */
	struct cfg_pos pos;
	struct cfg_expr *value;
};

struct cfg_expr {
	enum cfg_expr_kind kind;
	struct cfg_pos pos; /* of the first token */
	uint16_t depth;     /* height of this subtree, bounded by CFG_MAX_DEPTH */
	union {
		int b;
		struct cfg_number num;
		struct {
			const char *s; /* decoded value, NUL-terminated, may contain NULs */
			size_t len;
		} str;
		const char *ident;
		struct {
			struct cfg_expr **v;
			size_t n;
		} list; /* E_ARRAY elements, E_CALL arguments (with call.fn) */
		struct {
			struct cfg_field *v;
			size_t n;
		} obj;
		struct {
			struct cfg_expr *x;
			const char *name;
			struct cfg_pos name_pos;
		} access;
		struct {
			struct cfg_expr *x, *index;
		} index;
		struct {
			struct cfg_expr **v; /* arguments */
			size_t n;
			struct cfg_expr *fn;
		} call;
		struct {
			enum cfg_tok op;
			struct cfg_expr *x;
		} unary;
		struct {
			enum cfg_tok op;
			struct cfg_pos op_pos;
			struct cfg_expr *l, *r;
		} binary;
		struct cfg_expr *paren;
	} u;
};

/* Nesting limit of expressions and blocks: deeper input is an error rather than
 * a stack overflow in the recursive parser or evaluator. */
#define CFG_MAX_DEPTH 100

struct cfg_stmt;
struct cfg_body {
	struct cfg_stmt **v;
	size_t n;
};

struct cfg_stmt {
	int is_block;
	struct cfg_pos pos;	  /* of the name */
	const char *name;	  /* "url", "discovery.relabel" */
	const char *label;	  /* block label, NULL when absent */
	struct cfg_pos label_pos; /* of the label's opening quote */
	struct cfg_expr *value;	  /* attributes */
	struct cfg_body body;	  /* blocks */
};

struct cfg_file {
	struct cfg_arena arena;
	struct cfg_body body;
	char *name; /* owned */
};

void cfg_file_free(struct cfg_file *f); /* frees f too */

#endif
