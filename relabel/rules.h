/* Compiled relabel rules, shared by compile.c (validation) and apply.c. Internal. */
#ifndef NP_RELABEL_RULES_H
#define NP_RELABEL_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "relabel/expand.h"
#include "relabel/relabel.h"
#include "relabel/rx.h"

enum rl_action {
	RL_REPLACE,
	RL_KEEP,
	RL_DROP,
	RL_KEEPEQUAL,
	RL_DROPEQUAL,
	RL_HASHMOD,
	RL_LABELMAP,
	RL_LABELDROP,
	RL_LABELKEEP,
	RL_LOWERCASE,
	RL_UPPERCASE,
};

struct rl_rule {
	enum rl_action action;
	char **source;	/* owned */
	size_t nsource;
	char *separator; /* owned */
	size_t separator_len;
	struct rx *re;	    /* owned; always compiled (Prometheus compiles unused regexes too) */
	char *regex;	    /* owned: its source, to tell two rule sets apart (relabel_rules_equal) */
	int default_regex;  /* the regex key was absent */
	struct tmpl target; /* target_label (used literally except by replace) */
	struct tmpl replacement;
	uint64_t modulus;
	int legacy_names; /* label names checked with the legacy scheme */
	int legacy_templates; /* `$` templates checked with the legacy pattern (legacy scheme, and Alloy always) */
};

struct relabel_rules {
	struct rl_rule *v;
	size_t n;
};

/* The action reads labels only (drop, keep, keepequal, dropequal). */
static inline int rl_action_is_filter(enum rl_action a)
{
	return a == RL_KEEP || a == RL_DROP || a == RL_KEEPEQUAL || a == RL_DROPEQUAL;
}

/* MD5 from OpenSSL, fetched once; NULL when the provider has none (FIPS). */
const void *rl_md5(void);

#endif
