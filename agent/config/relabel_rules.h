/* The `rule { }` block of Alloy's relabel components (discovery.relabel and
 * `nodeprof tools relabel`): its schema, and compilation of decoded rule blocks
 * with the relabel engine (relabel/relabel.h, Alloy dialect), with each engine
 * error reported at the rule's offending attribute. */
#ifndef NP_CONFIG_RELABEL_RULES_H
#define NP_CONFIG_RELABEL_RULES_H

#include "agent/config/args.h"
#include "relabel/relabel.h"

extern const struct cfg_schema cfg_relabel_rule_schema;

/* Compiles the `block` blocks of args (in order) into *out (NULL-free: an empty rule
 * set when there are none). Returns -1 after reporting into d. */
int cfg_relabel_compile(const struct cfg_args *args, const char *block, struct relabel_rules **out,
			struct cfg_diags *d);

#endif
