/* Target groups and their flattening: see group.h. */
#include "k8s/group.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"

void k8s_group_free(struct k8s_group *g)
{
	np_labels_free(&g->labels);
	for (size_t i = 0; i < g->n_targets; i++)
		np_labels_free(&g->targets[i]);
	free(g->targets);
	g->targets = NULL;
	g->n_targets = g->cap_targets = 0;
}

void k8s_group_destroy(void *group)
{
	k8s_group_free(group);
	free(group);
}

void k8s_labels_destroy(void *labels)
{
	np_labels_free(labels);
	free(labels);
}

int k8s_group_push(struct k8s_group *g, struct np_labels *t, struct np_err *err)
{
	if (np_grow((void **)&g->targets, &g->cap_targets, g->n_targets + 1, sizeof(*g->targets))) {
		np_labels_free(t);
		return np_errf(err, "out of memory");
	}
	g->targets[g->n_targets++] = *t;
	*t = (struct np_labels)NP_LABELS_INIT;
	return 0;
}

int k8s_labels_merge(struct np_labels *dst, const struct np_labels *src, const char *skip, struct np_err *err)
{
	if (!src)
		return 0;
	for (size_t k = 0; k < src->n; k++) {
		if (skip && strcmp(src->v[k].name, skip) == 0)
			continue;
		if (np_labels_set(dst, src->v[k].name, src->v[k].value, err))
			return -1;
	}
	return 0;
}

int k8s_group_append_targets(const struct k8s_group *g, const struct np_labels *const *layers, size_t n_layers,
			     struct np_targets *out, struct np_err *err)
{
	for (size_t i = 0; i < g->n_targets; i++) {
		struct np_labels t = NP_LABELS_INIT;
		int rc = np_labels_copy(&t, &g->labels, err);

		for (size_t l = 0; l < n_layers && rc == 0; l++)
			rc = k8s_labels_merge(&t, layers[l], NULL, err);
		if (rc == 0)
			rc = k8s_labels_merge(&t, &g->targets[i], NULL, err);
		if (rc == 0)
			rc = np_targets_push(out, &t, err);
		if (rc) {
			np_labels_free(&t);
			return -1;
		}
	}
	return 0;
}
