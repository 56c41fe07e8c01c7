/* Pod -> target group, exactly as Prometheus v3.13 discovery/kubernetes/pod.go builds it: see pod.h. */
#include "k8s/pod.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META "__meta_kubernetes_"

/* Reads obj[key] as a string; "" when absent or not a string (Go's zero value). */
static const char *str_at(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : "";
}

const char *k8s_obj_name(const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	const json_t *n = json_object_get(md, "name");

	return json_is_string(n) && json_string_length(n) ? json_string_value(n) : NULL;
}

/* Decodes one UTF-8 sequence at s (n bytes left); returns its length, 1 for an invalid byte. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 1;
	}
	if (len > n)
		return 1;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 1;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and out-of-range values are invalid, as in Go. */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 1;
	return len;
}

void k8s_sanitize_label_name(const char *in, struct np_buf *out)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t n = strlen(in);

	while (n) {
		unsigned char c = *p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') {
			np_buf_putc(out, (char)c);
			p++;
			n--;
			continue;
		}
		size_t l = utf8_len(p, n);
		np_buf_putc(out, '_');
		p += l;
		n -= l;
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sets <prefix><sanitized key> = value and <present_prefix><sanitized key> = "true" for every
 * string member of map. Keys are visited in byte order so that when two keys sanitize to
 * the same name (a.b, a_b, a/b) the greatest key wins every time; Prometheus leaves this
 * to Go's random map order. */
static int add_map(struct np_labels *ls, const json_t *map, const char *prefix, const char *present_prefix,
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
	qsort(keys, k, sizeof(*keys), cmp_str);
	for (size_t i = 0; i < k && rc == 0; i++) {
		const json_t *v = json_object_get(map, keys[i]);
		np_buf_reset(&name);
		np_buf_puts(&name, prefix);
		k8s_sanitize_label_name(keys[i], &name);
		if (name.failed) {
			rc = np_errf(err, "out of memory");
			break;
		}
		rc = np_labels_setn(ls, name.p, json_string_value(v), json_string_length(v), err);
		if (rc)
			break;
		np_buf_reset(&name);
		np_buf_puts(&name, present_prefix);
		k8s_sanitize_label_name(keys[i], &name);
		rc = name.failed ? np_errf(err, "out of memory") : np_labels_set(ls, name.p, "true", err);
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
		snprintf(p1, sizeof(p1), META "%s_name", role);
		if (np_labels_set(out, p1, str_at(md, "name"), err))
			return -1;
	}
	snprintf(p1, sizeof(p1), META "%s_label_", role);
	snprintf(p2, sizeof(p2), META "%s_labelpresent_", role);
	if (add_map(out, json_object_get(md, "labels"), p1, p2, err))
		return -1;
	snprintf(p1, sizeof(p1), META "%s_annotation_", role);
	snprintf(p2, sizeof(p2), META "%s_annotationpresent_", role);
	return add_map(out, json_object_get(md, "annotations"), p1, p2, err);
}

void k8s_pod_group_free(struct k8s_pod_group *g)
{
	free(g->node_name);
	np_labels_free(&g->group);
	for (size_t i = 0; i < g->n_targets; i++)
		np_labels_free(&g->targets[i]);
	free(g->targets);
	memset(g, 0, sizeof(*g));
}

void k8s_pod_group_destroy(void *group)
{
	k8s_pod_group_free(group);
	free(group);
}

void k8s_labels_destroy(void *labels)
{
	np_labels_free(labels);
	free(labels);
}

/* "Ready" condition status lower-cased (ASCII: statuses are True/False/Unknown); "unknown" without one. */
static int set_ready(struct np_labels *ls, const json_t *status, struct np_err *err)
{
	const json_t *conds = json_object_get(status, "conditions");
	size_t i;
	json_t *c;

	json_array_foreach(conds, i, c) {
		if (strcmp(str_at(c, "type"), "Ready") != 0)
			continue;
		const char *s = str_at(c, "status");
		size_t n = strlen(s);
		char *low = malloc(n + 1);
		if (!low)
			return np_errf(err, "out of memory");
		for (size_t k = 0; k <= n; k++)
			low[k] = (s[k] >= 'A' && s[k] <= 'Z') ? (char)(s[k] - 'A' + 'a') : s[k];
		int rc = np_labels_set(ls, META "pod_ready", low, err);
		free(low);
		return rc;
	}
	return np_labels_set(ls, META "pod_ready", "unknown", err);
}

static int set_controller(struct np_labels *ls, const json_t *md, struct np_err *err)
{
	const json_t *refs = json_object_get(md, "ownerReferences");
	size_t i;
	json_t *r;

	json_array_foreach(refs, i, r) {
		if (!json_is_true(json_object_get(r, "controller")))
			continue;
		const char *kind = str_at(r, "kind"), *name = str_at(r, "name");
		if (*kind && np_labels_set(ls, META "pod_controller_kind", kind, err))
			return -1;
		if (*name && np_labels_set(ls, META "pod_controller_name", name, err))
			return -1;
		return 0;
	}
	return 0;
}

/* The top-level containerID of the status named name, "" without one (lastState's ID is the previous container's). */
static const char *container_id(const json_t *statuses, const char *name)
{
	size_t i;
	json_t *s;

	json_array_foreach(statuses, i, s) {
		if (strcmp(str_at(s, "name"), name) == 0)
			return str_at(s, "containerID");
	}
	return "";
}

static int push_target(struct k8s_pod_group *g, struct np_labels *t, struct np_err *err)
{
	struct np_labels *nv = realloc(g->targets, (g->n_targets + 1) * sizeof(*nv));

	if (!nv)
		return np_errf(err, "out of memory");
	g->targets = nv;
	g->targets[g->n_targets++] = *t;
	*t = (struct np_labels)NP_LABELS_INIT;
	return 0;
}

/* Go's strconv.FormatUint(uint64(port.ContainerPort), 10) with ContainerPort an int32. */
static void format_port(const json_t *v, char buf[24])
{
	int32_t p = json_is_integer(v) ? (int32_t)json_integer_value(v) : 0;

	snprintf(buf, 24, "%" PRIu64, (uint64_t)(int64_t)p);
}

static int add_container_targets(struct k8s_pod_group *g, const json_t *containers, const json_t *statuses,
				 int is_init, const char *pod_ip, struct np_err *err)
{
	size_t i;
	json_t *c;
	char addr[320];
	int v6 = strchr(pod_ip, ':') != NULL;

	json_array_foreach(containers, i, c) {
		const char *name = str_at(c, "name");
		const char *cid = container_id(statuses, name);
		const json_t *ports = json_object_get(c, "ports");
		struct np_labels t = NP_LABELS_INIT;
		int rc = 0;

		rc |= np_labels_set(&t, META "pod_container_name", name, err);
		rc |= rc ? 0 : np_labels_set(&t, META "pod_container_id", cid, err);
		rc |= rc ? 0 : np_labels_set(&t, META "pod_container_image", str_at(c, "image"), err);
		rc |= rc ? 0 : np_labels_set(&t, META "pod_container_init", is_init ? "true" : "false", err);
		if (rc) {
			np_labels_free(&t);
			return -1;
		}
		if (json_array_size(ports) == 0) {
			/* No ports: one target addressed by the bare pod IP. */
			if (np_labels_set(&t, "__address__", pod_ip, err) || push_target(g, &t, err)) {
				np_labels_free(&t);
				return -1;
			}
			continue;
		}
		size_t k;
		json_t *port;
		json_array_foreach(ports, k, port) {
			struct np_labels pt = NP_LABELS_INIT;
			char num[24];

			format_port(json_object_get(port, "containerPort"), num);
			/* net.JoinHostPort: brackets around IPv6 hosts. */
			snprintf(addr, sizeof(addr), v6 ? "[%s]:%s" : "%s:%s", pod_ip, num);
			if (np_labels_copy(&pt, &t, err) || np_labels_set(&pt, "__address__", addr, err) ||
			    np_labels_set(&pt, META "pod_container_port_number", num, err) ||
			    np_labels_set(&pt, META "pod_container_port_name", str_at(port, "name"), err) ||
			    np_labels_set(&pt, META "pod_container_port_protocol", str_at(port, "protocol"), err) ||
			    push_target(g, &pt, err)) {
				np_labels_free(&pt);
				np_labels_free(&t);
				return -1;
			}
		}
		np_labels_free(&t);
	}
	return 0;
}

int k8s_pod_build(const json_t *pod, struct k8s_pod_group *g, char **key, struct np_err *err)
{
	const json_t *md = json_object_get(pod, "metadata");
	const json_t *spec = json_object_get(pod, "spec");
	const json_t *status = json_object_get(pod, "status");
	const char *name = k8s_obj_name(pod), *ns = str_at(md, "namespace");
	const char *pod_ip = str_at(status, "podIP");

	memset(g, 0, sizeof(*g));
	*key = NULL;
	if (!json_is_object(pod) || !name)
		return np_errf(err, "not a pod object (no metadata.name)");
	if (strlen(pod_ip) > 256)
		return np_errf(err, "pod %s/%s: status.podIP is not an IP address", ns, name);
	if (asprintf(key, "%s/%s", ns, name) < 0) {
		*key = NULL;
		return np_errf(err, "out of memory");
	}
	g->node_name = strdup(str_at(spec, "nodeName"));
	if (!g->node_name)
		goto oom;
	if (!*pod_ip)
		return 0; /* starting or evicted: an empty group, nothing else to keep */
	g->has_ip = 1;
	if (np_labels_set(&g->group, META "pod_ip", pod_ip, err) || set_ready(&g->group, status, err) ||
	    np_labels_set(&g->group, META "pod_phase", str_at(status, "phase"), err) ||
	    np_labels_set(&g->group, META "pod_node_name", g->node_name, err) ||
	    np_labels_set(&g->group, META "pod_host_ip", str_at(status, "hostIP"), err) ||
	    np_labels_set(&g->group, META "pod_uid", str_at(md, "uid"), err) ||
	    k8s_meta_labels(pod, "pod", 1, &g->group, err) || set_controller(&g->group, md, err) ||
	    np_labels_set(&g->group, META "namespace", ns, err))
		goto fail;
	/* Regular containers, then init containers (native sidecars included); ephemeral ones never. */
	if (add_container_targets(g, json_object_get(spec, "containers"), json_object_get(status, "containerStatuses"),
				  0, pod_ip, err) ||
	    add_container_targets(g, json_object_get(spec, "initContainers"),
				  json_object_get(status, "initContainerStatuses"), 1, pod_ip, err))
		goto fail;
	return 0;
oom:
	np_errf(err, "out of memory");
fail:
	np_err_wrap(err, "pod %s", *key);
	k8s_pod_group_free(g);
	free(*key);
	*key = NULL;
	return -1;
}

int k8s_pod_append_targets(const struct k8s_pod_group *g, const struct np_labels *ns_meta,
			   const struct np_labels *node_meta, struct np_targets *out, struct np_err *err)
{
	if (!g->has_ip)
		return 0;
	for (size_t i = 0; i < g->n_targets; i++) {
		struct np_labels t = NP_LABELS_INIT;
		const struct np_labels *layers[] = { node_meta, ns_meta, &g->targets[i] };

		if (np_labels_copy(&t, &g->group, err))
			return -1;
		for (size_t l = 0; l < 3; l++) {
			if (!layers[l])
				continue;
			for (size_t k = 0; k < layers[l]->n; k++)
				if (np_labels_set(&t, layers[l]->v[k].name, layers[l]->v[k].value, err)) {
					np_labels_free(&t);
					return -1;
				}
		}
		if (np_targets_push(out, &t, err)) {
			np_labels_free(&t);
			return -1;
		}
	}
	return 0;
}
