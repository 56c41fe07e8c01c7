/* discovery.relabel: the component adapter around the relabel engine
 * (docs/specs/relabel.md §12). Arguments: targets (required) and rule blocks
 * applied top-down; exports `output` (the kept targets, in input order) and `rules`
 * (the compiled rules as a RelabelRules capsule). Unhealthy only on an invalid
 * configuration, keeping the last good exports. The compiled rules are
 * published again only when they changed (compared compiled, relabel_rules_equal). */
#include "agent/discovery/relabel_component.h"

#include <stdlib.h>
#include <string.h>

#include "agent/config/component.h"
#include "agent/config/relabel_rules.h"
#include "lib/log.h"
#include "lib/strbuf.h"

struct relabel_component {
	struct cfg_component *c;
	struct cfg_value *rules; /* RelabelRules capsule owning the compiled rules */
};

static void validate(const struct cfg_args *a, struct cfg_diags *d)
{
	struct relabel_rules *rules = NULL;

	if (cfg_relabel_compile(a, "rule", &rules, d) == 0)
		relabel_rules_free(rules);
}

/* The rule blocks are compiled from the block itself (raw): the compiler reports
 * problems at the position of the attribute they are about. */
struct relabel_args {
	const struct np_targets *targets;
	const struct cfg_args *raw;
};

static const struct cfg_attr attrs[] = {
	CFG_A("targets", &cfg_t_targets, CFG_REQUIRED, NULL, .field = CFG_FIELD(struct relabel_args, targets)),
	CFG_END,
};

static const struct cfg_block_schema blocks[] = {
	CFG_B("rule", &cfg_relabel_rule_schema, CFG_REPEATABLE, NULL),
	CFG_END,
};

static const struct cfg_schema schema = {
	.attrs = attrs,
	.blocks = blocks,
	.validate = validate,
	CFG_ARGS_STRUCT(struct relabel_args),
	.raw = CFG_FIELD(struct relabel_args, raw),
};

static void release_rules(void *p)
{
	relabel_rules_free(p);
}

/* The rules are compiled on every update (a few regexes: microseconds beside relabelling the
 * targets) and published again only when they differ from the running ones, so that readers
 * of `rules` are not re-evaluated when only the targets changed. */
static int apply(struct relabel_component *rc, const struct relabel_args *a, struct np_err *err)
{
	struct cfg_diags d;
	struct relabel_rules *compiled = NULL;

	cfg_diags_init(&d, cfg_component_id(rc->c));
	if (cfg_relabel_compile(a->raw, "rule", &compiled, &d)) {
		int r = cfg_diags_to_err(&d, err);
		cfg_diags_free(&d);
		return r;
	}
	cfg_diags_free(&d);
	if (!compiled)
		return np_errf(err, "the rules are not known yet");
	if (rc->rules && relabel_rules_equal(rc->rules->u.cap.ptr, compiled)) {
		relabel_rules_free(compiled);
	} else {
		struct cfg_value *cap = cfg_capsule("RelabelRules", compiled, release_rules);
		if (!cap)
			return np_errf(err, "out of memory");
		cfg_unref(rc->rules);
		rc->rules = cap;
		cfg_component_publish(rc->c, "rules", cfg_ref(cap));
	}

	struct np_targets out = NP_TARGETS_INIT;
	if (relabel_targets(rc->rules->u.cap.ptr, a->targets, &out, err)) {
		np_targets_free(&out);
		return -1;
	}
	cfg_component_publish(rc->c, "output", cfg_targets(&out));
	return 0;
}

static int start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
		 struct np_err *err)
{
	(void)host;
	struct relabel_component *rc = calloc(1, sizeof(*rc));

	if (!rc)
		return np_errf(err, "out of memory");
	rc->c = c;
	if (apply(rc, args, err)) {
		cfg_unref(rc->rules);
		free(rc);
		return -1;
	}
	*state = rc;
	return 0;
}

static int update(void *state, const void *args, struct np_err *err)
{
	return apply(state, args, err);
}

static void stop(void *state)
{
	struct relabel_component *rc = state;

	cfg_unref(rc->rules);
	free(rc);
}

static const struct cfg_component_ops ops = { start, update, stop };

static const struct cfg_export exports[] = {
	{ "output", &cfg_t_targets },
	{ "rules", &cfg_t_relabel_rules },
	{ NULL, NULL },
};

const struct cfg_component_type cfg_type_discovery_relabel = {
	.name = "discovery.relabel",
	.args = &schema,
	.exports = exports,
	.ops = &ops,
};
