/* Start/update/stop hooks for components that replace their instance on update:
 * see replace_on_update.h. */
#include "agent/config/replace_on_update.h"

#include <stdlib.h>

struct replace_state {
	const struct cfg_instance_ops *ops;
	struct cfg_component *c;
	void *instance;
};

int cfg_replace_start(const struct cfg_instance_ops *ops, struct cfg_component *c, const void *args,
		      void **state, struct np_err *err)
{
	struct replace_state *st = calloc(1, sizeof(*st));

	if (!st)
		return np_errf(err, "out of memory");
	st->ops = ops;
	st->c = c;
	st->instance = ops->open(c, args, err);
	if (!st->instance) {
		free(st);
		return -1;
	}
	*state = st;
	return 0;
}

int cfg_replace_update(void *state, const void *args, struct np_err *err)
{
	struct replace_state *st = state;
	void *next = st->ops->open(st->c, args, err);

	if (!next)
		return -1;
	st->ops->close(st->instance);
	st->instance = next;
	return 0;
}

void cfg_replace_stop(void *state)
{
	struct replace_state *st = state;

	st->ops->close(st->instance);
	free(st);
}
