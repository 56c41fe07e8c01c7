/* The parser of the Alloy configuration syntax: LL(1), the grammar of
 * grafana/alloy syntax/parser (docs/specs/alloy-syntax.md §2), with its error
 * recovery: after an error it skips to the next statement and keeps going, and it
 * reports at most one error per line. */
#ifndef NP_CONFIG_PARSER_H
#define NP_CONFIG_PARSER_H

#include <stddef.h>

#include "agent/config/ast.h"
#include "agent/config/diag.h"

/* Largest configuration file accepted (bytes). */
#define CFG_MAX_FILE_SIZE (4u << 20)

/* Parses a whole file. Returns the tree (partial when there were errors, which are
 * in d), or NULL only when memory ran out (also reported in d). */
struct cfg_file *cfg_parse(const char *name, const char *src, size_t len, struct cfg_diags *d);

/* Parses one expression (the whole of src) into the arena, for defaults and tests.
 * Returns NULL and reports into d on a syntax error. */
struct cfg_expr *cfg_parse_expr(struct cfg_arena *a, const char *src, size_t len, struct cfg_diags *d);

/* Reads and parses a file; an unreadable or oversized file is a diagnostic too. */
struct cfg_file *cfg_parse_file(const char *path, struct cfg_diags *d);

#endif
