/* Ingress -> ingress-role target group: see ingress.h. */
#include "k8s/ingress.h"

#include <stdlib.h>
#include <string.h>

#include "k8s/meta.h"

int k8s_ingress_host_matches(const char *pattern, const char *host)
{
	const char *p, *h;

	if (strcmp(pattern, host) == 0)
		return 1;
	/* The first label must be "*"; the rest must match label for label (so as many dots). */
	if (strncmp(pattern, "*", 1) != 0 || (pattern[1] != '.' && pattern[1] != '\0'))
		return 0;
	h = strchr(host, '.');
	p = pattern + 1;
	if (!*p)
		return !h; /* "*" matches a host of one label */
	return h && strcmp(p, h) == 0;
}

/* https when some host of some spec.tls entry matches the rule's host. */
static const char *scheme_of(const json_t *tls, const char *host)
{
	size_t i, k;
	json_t *t, *h;

	json_array_foreach(tls, i, t) {
		json_array_foreach(json_object_get(t, "hosts"), k, h) {
			if (k8s_ingress_host_matches(json_is_string(h) ? json_string_value(h) : "", host))
				return "https";
		}
	}
	return "http";
}

static int path_target(struct k8s_group *g, const char *host, const char *scheme, const char *path,
		       struct np_err *err)
{
	struct np_labels t = NP_LABELS_INIT;

	if (np_labels_set(&t, "__address__", host, err) || np_labels_set(&t, K8S_META "ingress_scheme", scheme, err) ||
	    np_labels_set(&t, K8S_META "ingress_host", host, err) ||
	    np_labels_set(&t, K8S_META "ingress_path", *path ? path : "/", err)) {
		np_labels_free(&t);
		return -1;
	}
	return k8s_group_push(g, &t, err);
}

static int rule_targets(struct k8s_group *g, const json_t *rule, const json_t *tls, struct np_err *err)
{
	const char *host = k8s_str_at(rule, "host"), *scheme = scheme_of(tls, host);
	const json_t *http = json_object_get(rule, "http");
	size_t i;
	json_t *p;

	/* No http block: the whole host, "/". An http block (even without paths): its paths. */
	if (!json_is_object(http))
		return path_target(g, host, scheme, "/", err);
	json_array_foreach(json_object_get(http, "paths"), i, p) {
		if (path_target(g, host, scheme, k8s_str_at(p, "path"), err))
			return -1;
	}
	return 0;
}

int k8s_ingress_build(const json_t *ing, struct k8s_group *g, char **key, struct np_err *err)
{
	const json_t *md = json_object_get(ing, "metadata"), *spec = json_object_get(ing, "spec");
	const char *name = k8s_obj_name(ing), *ns = k8s_str_at(md, "namespace");
	const char *cls = k8s_opt_str_at(spec, "ingressClassName");
	size_t i;
	json_t *rule;

	memset(g, 0, sizeof(*g));
	*key = NULL;
	if (!json_is_object(ing) || !name)
		return np_errf(err, "not an ingress object (no metadata.name)");
	if (!(*key = k8s_namespaced_key(ns, name))) {
		np_errf(err, "out of memory");
		goto fail;
	}
	if (np_labels_set(&g->labels, K8S_META "namespace", ns, err) ||
	    (cls && np_labels_set(&g->labels, K8S_META "ingress_class_name", cls, err)) ||
	    k8s_meta_labels(ing, "ingress", 1, &g->labels, err))
		goto fail;
	json_array_foreach(json_object_get(spec, "rules"), i, rule) {
		if (rule_targets(g, rule, json_object_get(spec, "tls"), err))
			goto fail;
	}
	return 0;
fail:
	np_err_wrap(err, "ingress %s/%s", ns, name);
	k8s_group_free(g);
	free(*key);
	*key = NULL;
	return -1;
}
