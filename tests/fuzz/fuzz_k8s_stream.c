/* libFuzzer target: kube-apiserver response parsing. The first byte picks watch-stream
 * or list mode, the chunk size the body is fed in and the object size limit; every
 * value the splitter hands over goes through JSON parsing and pod / metadata target
 * building, as the reflector does. Also checks the selector validators on the input. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/jscan.h"
#include "k8s/pod.h"
#include "k8s/selector.h"

static int on_value(void *ud, enum k8s_jscan_part part, const char *json, size_t len, struct np_err *err)
{
	json_t *v, *obj;
	struct k8s_pod_group g;
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_labels meta = NP_LABELS_INIT;
	char *key;

	(void)ud;
	(void)err;
	if (part == K8S_JSCAN_OVERSIZE)
		return 0;
	v = json_loadb(json, len, JSON_ALLOW_NUL, NULL);
	if (!v)
		return 0;
	obj = json_object_get(v, "object");
	if (!obj)
		obj = v;
	if (k8s_pod_build(obj, &g, &key, err) == 0) {
		if (k8s_pod_append_targets(&g, NULL, NULL, &ts, err) == 0 && k8s_meta_labels(obj, "node", 1, &meta, err) == 0)
			(void)k8s_pod_append_targets(&g, &meta, &meta, &ts, err);
		np_targets_free(&ts);
		np_labels_free(&meta);
		k8s_pod_group_free(&g);
		free(key);
	}
	json_decref(v);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct k8s_jscan s;
	struct np_err err;
	size_t chunk, limit, off = 1;
	char *str;

	if (size < 1)
		return 0;
	chunk = 1 + (data[0] >> 2);          /* 1..64 bytes per read */
	limit = (data[0] & 2) ? 256 : 1 << 20; /* small limits exercise the oversize paths */
	k8s_jscan_init(&s, (data[0] & 1) ? K8S_JSCAN_LIST : K8S_JSCAN_STREAM, limit, on_value, NULL);
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		if (k8s_jscan_feed(&s, (const char *)data + off, n, &err))
			break;
		off += n;
	}
	(void)k8s_jscan_finish(&s, &err);
	k8s_jscan_free(&s);

	str = malloc(size);
	if (str) {
		memcpy(str, data + 1, size - 1);
		str[size - 1] = '\0';
		(void)k8s_label_selector_check(str, &err);
		(void)k8s_field_selector_check(str, &err);
		free(k8s_field_selector_node_name(str));
		free(str);
	}
	return 0;
}
