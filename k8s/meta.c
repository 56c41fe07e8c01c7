/* Object fields and metadata labels shared by every role: see meta.h. */
#include "k8s/meta.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"
#include "lib/targets_json.h"

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
	if (np_labels_set_json_map(out, json_object_get(md, "labels"), p1, p2, err))
		return -1;
	snprintf(p1, sizeof(p1), K8S_META "%s_annotation_", role);
	snprintf(p2, sizeof(p2), K8S_META "%s_annotationpresent_", role);
	return np_labels_set_json_map(out, json_object_get(md, "annotations"), p1, p2, err);
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
	int rc = np_go_to_lower(&low, value, strlen(value), err);

	if (rc == 0)
		rc = low.failed ? np_errf(err, "out of memory") : np_labels_set(ls, name, low.p ? low.p : "", err);
	np_buf_free(&low);
	return rc;
}
