/* The Prometheus relabel engine (docs/specs/relabel.md).
 *
 * A rule is described by a relabel_rule_spec (what the user wrote: absent vs
 * present matters, see docs/specs/relabel.md §2), compiled once into relabel_rules, then
 * applied to many label sets. Compilation validates like Prometheus/Alloy and
 * reports the first error of each rule with the rule's index, so the config
 * layer can point at the rule block. */
#ifndef NP_RELABEL_RELABEL_H
#define NP_RELABEL_RELABEL_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/labels.h"

/* One rule as written. Pointers are borrowed for the duration of relabel_compile. */
struct relabel_rule_spec {
	const char *const *source_labels; /* NULL when absent; non-NULL with n == 0 = written as [] */
	size_t n_source_labels;
	const char *separator;	  /* NULL = absent = ";" */
	const char *regex;	  /* NULL = absent = "(.*)"; "" is the empty regex */
	const char *target_label; /* NULL = absent = "" */
	const char *replacement;  /* NULL = absent = "$1" */
	const char *action;	  /* NULL = absent = "replace"; "" is an empty (invalid) action */
	uint64_t modulus;
	int has_modulus;
};

/* Which dialect to validate: Alloy is what our configuration files are (the
 * default), Prometheus (utf8 or legacy name scheme) is what the upstream test
 * vectors check. See the table in docs/specs/relabel.md §12. */
enum relabel_dialect { RELABEL_ALLOY = 0, RELABEL_PROMETHEUS_UTF8, RELABEL_PROMETHEUS_LEGACY };

struct relabel_rules; /* opaque, immutable after compilation, safe to share between threads */

/* On error, err->msg starts with "rule N: " (N counting from 1) and *bad_rule is N-1. */
NP_MUST_CHECK int relabel_compile(const struct relabel_rule_spec *specs, size_t n, enum relabel_dialect dialect,
				  struct relabel_rules **out, size_t *bad_rule, struct np_err *err);
void relabel_rules_free(struct relabel_rules *rules);
size_t relabel_rules_count(const struct relabel_rules *rules);
/* Whether two compiled rule sets do the same thing, rule by rule (what each was compiled from,
 * defaults filled in: an absent regex and an explicit "(.*)" differ only in default_regex). */
int relabel_rules_equal(const struct relabel_rules *a, const struct relabel_rules *b);

/* Applies the rules in order to ls (modified in place; labels with empty values are
 * removed first, since empty means absent). *keep = 0 when a rule dropped the target
 * (ls is then unspecified). Every regexp valid in Go matches every value with Go's
 * answer (PCRE2 first; Go's own algorithm when PCRE2's limits stop it, rx_pike.h). Errors
 * on allocation failure (err->code == ENOMEM), on a PCRE2 failure other than its limits
 * ("rule N: regexp match gave up ...", not expected) and when a non-ASCII value needs ICU
 * and it cannot be loaded ("rule N: Unicode tables (ICU) unavailable: ..."). */
NP_MUST_CHECK int relabel_apply(const struct relabel_rules *rules, struct np_labels *ls, int *keep,
				struct np_err *err);

/* Relabels every target of in, appending the kept ones to out in input order. A target
 * on which a rule failed (above: no Unicode tables) is left out, counted and named in one
 * warning per call; only allocation failure is an error. Thread-safe: rules are shared,
 * each thread uses its own scratch. */
NP_MUST_CHECK int relabel_targets(const struct relabel_rules *rules, const struct np_targets *in,
				  struct np_targets *out, struct np_err *err);

#endif
