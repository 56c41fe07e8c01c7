/* The registry of component types: the built-in ones (the program's table,
 * agent/components.c), plus types added at run time
 * (tests). Lookups are lock-free reads of an array that only grows while tests
 * run single-threaded setup; additions take a mutex. */
#include <pthread.h>
#include <string.h>

#include "agent/config/component.h"

#define MAX_EXTRA 16

static const struct cfg_component_type *extra[MAX_EXTRA];
static pthread_mutex_t extra_mu = PTHREAD_MUTEX_INITIALIZER;

const struct cfg_component_type *cfg_registry_find(const char *name)
{
	for (size_t i = 0; i < cfg_builtin_types_count; i++)
		if (strcmp(cfg_builtin_types[i]->name, name) == 0)
			return cfg_builtin_types[i];
	pthread_mutex_lock(&extra_mu);
	const struct cfg_component_type *found = NULL;
	for (size_t i = 0; i < MAX_EXTRA && !found; i++)
		if (extra[i] && strcmp(extra[i]->name, name) == 0)
			found = extra[i];
	pthread_mutex_unlock(&extra_mu);
	return found;
}

size_t cfg_registry_list(const struct cfg_component_type **out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < cfg_builtin_types_count; i++) {
		if (n < max)
			out[n] = cfg_builtin_types[i];
		n++;
	}
	pthread_mutex_lock(&extra_mu);
	for (size_t i = 0; i < MAX_EXTRA; i++) {
		if (!extra[i])
			continue;
		if (n < max)
			out[n] = extra[i];
		n++;
	}
	pthread_mutex_unlock(&extra_mu);
	/* Name order, for messages that list them. */
	size_t m = n < max ? n : max;
	for (size_t i = 1; i < m; i++) {
		const struct cfg_component_type *x = out[i];
		size_t j = i;
		while (j > 0 && strcmp(out[j - 1]->name, x->name) > 0) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = x;
	}
	return n;
}

int cfg_registry_add(const struct cfg_component_type *type)
{
	if (cfg_registry_find(type->name))
		return -1;
	pthread_mutex_lock(&extra_mu);
	for (size_t i = 0; i < MAX_EXTRA; i++) {
		if (!extra[i]) {
			extra[i] = type;
			pthread_mutex_unlock(&extra_mu);
			return 0;
		}
	}
	pthread_mutex_unlock(&extra_mu);
	return -1;
}

void cfg_registry_remove(const struct cfg_component_type *type)
{
	pthread_mutex_lock(&extra_mu);
	for (size_t i = 0; i < MAX_EXTRA; i++)
		if (extra[i] == type)
			extra[i] = NULL;
	pthread_mutex_unlock(&extra_mu);
}

const struct cfg_export cfg_targets_exports[] = {
	{ "targets", &cfg_t_targets },
	{ NULL, NULL },
};

const struct cfg_export *cfg_type_export(const struct cfg_component_type *t, const char *name)
{
	for (size_t i = 0; t->exports && t->exports[i].name; i++)
		if (strcmp(t->exports[i].name, name) == 0)
			return &t->exports[i];
	return NULL;
}

const char *cfg_health_name(enum cfg_health h)
{
	switch (h) {
	case CFG_HEALTH_HEALTHY: return "healthy";
	case CFG_HEALTH_UNHEALTHY: return "unhealthy";
	case CFG_HEALTH_EXITED: return "exited";
	default: return "unknown";
	}
}
