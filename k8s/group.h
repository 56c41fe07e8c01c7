/* A Prometheus target group as discovery builds it for one object: labels shared by
 * every target, and each target's own labels. Published the way Alloy flattens
 * groups: group labels, then the attach_metadata layers, then the target's labels,
 * later ones winning. */
#ifndef NP_K8S_GROUP_H
#define NP_K8S_GROUP_H

#include <stddef.h>

#include "lib/error.h"
#include "lib/labels.h"

struct k8s_group {
	struct np_labels labels;   /* shared by every target */
	struct np_labels *targets; /* owned array */
	size_t n_targets, cap_targets;
};

void k8s_group_free(struct k8s_group *g); /* frees the contents; g stays reusable (empty) */
void k8s_group_destroy(void *group);      /* cache value destructor: contents and the malloc'ed struct */
void k8s_labels_destroy(void *labels);    /* the same for a malloc'ed struct np_labels */

/* Moves *t in as the next target (t is left empty, also on failure it is freed). */
NP_MUST_CHECK int k8s_group_push(struct k8s_group *g, struct np_labels *t, struct np_err *err);

/* Sets every label of src in dst (src wins), except the one named skip (may be NULL). */
NP_MUST_CHECK int k8s_labels_merge(struct np_labels *dst, const struct np_labels *src, const char *skip,
				   struct np_err *err);

/* Appends every target of g flattened: g's labels, then layers[0..n) (NULL entries
 * skipped), then the target's own labels. */
NP_MUST_CHECK int k8s_group_append_targets(const struct k8s_group *g, const struct np_labels *const *layers,
					   size_t n_layers, struct np_targets *out, struct np_err *err);

#endif
