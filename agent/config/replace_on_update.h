/* Component runtimes for which new arguments simply mean a new instance (the
 * discoveries): the adapter writes how to open and close one instance, and these
 * functions make the start/update/stop hooks. An update opens the new instance
 * first and closes the old one only when that worked, so a bad update keeps the
 * running instance. */
#ifndef NP_CONFIG_REPLACE_ON_UPDATE_H
#define NP_CONFIG_REPLACE_ON_UPDATE_H

#include "agent/config/component.h"

struct cfg_instance_ops {
	/* Returns the running instance, or NULL with err set. */
	void *(*open)(struct cfg_component *c, const void *args, struct np_err *err);
	void (*close)(void *instance);
};

NP_MUST_CHECK int cfg_replace_start(const struct cfg_instance_ops *ops, struct cfg_component *c,
				    const void *args, void **state, struct np_err *err);
NP_MUST_CHECK int cfg_replace_update(void *state, const void *args, struct np_err *err);
void cfg_replace_stop(void *state);

#endif
