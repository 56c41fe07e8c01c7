/* Object fields and metadata labels shared by every role: see meta.h. */
#include "k8s/meta.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"
#include "lib/sorted.h"

const char *k8s_str_at(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : "";
}

const char *k8s_opt_str_at(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *k8s_obj_name(const json_t *obj)
{
	const json_t *n = json_object_get(json_object_get(obj, "metadata"), "name");

	return json_is_string(n) && json_string_length(n) ? json_string_value(n) : NULL;
}

char *k8s_namespaced_key(const char *ns, const char *name)
{
	char *key;

	return asprintf(&key, "%s/%s", ns, name) < 0 ? NULL : key;
}

int k8s_meta_build(const json_t *obj, const char *role, int with_name, struct np_labels *out, char **key,
		   struct np_err *err)
{
	const char *name = k8s_obj_name(obj);

	*key = NULL;
	if (!name)
		return np_errf(err, "not a %s object (no metadata.name)", role);
	if (!(*key = strdup(name)))
		return np_errf(err, "out of memory");
	if (k8s_meta_labels(obj, role, with_name, out, err)) {
		free(*key);
		*key = NULL;
		np_labels_free(out);
		return np_err_wrap(err, "%s %s", role, name);
	}
	return 0;
}

/* Sets prefix + sanitized key = value. */
static int set_prefixed(struct np_labels *ls, struct np_buf *name, const char *prefix, const char *key,
			const char *value, size_t value_len, struct np_err *err)
{
	np_buf_reset(name);
	np_buf_puts(name, prefix);
	label_name_sanitize(key, name);
	if (name->failed)
		return np_errf(err, "out of memory");
	return np_labels_setn(ls, name->p, value, value_len, err);
}

int k8s_map_labels(struct np_labels *ls, const json_t *map, const char *prefix, const char *present_prefix,
		   struct np_err *err)
{
	size_t n = json_object_size(map), k = 0;
	const char **keys;
	const char *key;
	json_t *val;
	struct np_buf name = NP_BUF_INIT;
	int rc = 0;

	if (!json_is_object(map) || n == 0)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return np_errf(err, "out of memory");
	json_object_foreach((json_t *)map, key, val) {
		if (json_is_string(val))
			keys[k++] = key;
	}
	qsort(keys, k, sizeof(*keys), np_cmp_str);
	for (size_t i = 0; i < k && rc == 0; i++) {
		const json_t *v = json_object_get(map, keys[i]);
		rc = set_prefixed(ls, &name, prefix, keys[i], json_string_value(v), json_string_length(v), err);
		if (rc == 0 && present_prefix)
			rc = set_prefixed(ls, &name, present_prefix, keys[i], "true", 4, err);
	}
	np_buf_free(&name);
	free(keys);
	return rc;
}

int k8s_meta_labels(const json_t *obj, const char *role, int with_name, struct np_labels *out, struct np_err *err)
{
	const json_t *md = json_object_get(obj, "metadata");
	char p1[64], p2[64];

	if (with_name) {
		snprintf(p1, sizeof(p1), K8S_META "%s_name", role);
		if (np_labels_set(out, p1, k8s_str_at(md, "name"), err))
			return -1;
	}
	snprintf(p1, sizeof(p1), K8S_META "%s_label_", role);
	snprintf(p2, sizeof(p2), K8S_META "%s_labelpresent_", role);
	if (k8s_map_labels(out, json_object_get(md, "labels"), p1, p2, err))
		return -1;
	snprintf(p1, sizeof(p1), K8S_META "%s_annotation_", role);
	snprintf(p2, sizeof(p2), K8S_META "%s_annotationpresent_", role);
	return k8s_map_labels(out, json_object_get(md, "annotations"), p1, p2, err);
}

char *k8s_join_host_port(const char *host, const char *port)
{
	char *s;

	return asprintf(&s, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port) < 0 ? NULL : s;
}

void k8s_format_int32(const json_t *v, int go_unsigned, char buf[24])
{
	int32_t p = json_is_integer(v) ? (int32_t)json_integer_value(v) : 0;

	if (go_unsigned)
		snprintf(buf, 24, "%" PRIu64, (uint64_t)(int64_t)p);
	else
		snprintf(buf, 24, "%" PRId32, p);
}

int k8s_set_lower(struct np_labels *ls, const char *name, const char *value, struct np_err *err)
{
	struct np_buf low = NP_BUF_INIT;
	int rc = go_to_lower(&low, value, strlen(value), err);

	if (rc == 0)
		rc = low.failed ? np_errf(err, "out of memory") : np_labels_set(ls, name, low.p ? low.p : "", err);
	np_buf_free(&low);
	return rc;
}
